"""Adversarial cases for the sanity of several conditions asked in one query (Z3Engine.sane_each,
Session/UnionSession.verdicts): conditions that imply one another, duplicates, `true` and
`false`, a condition only the query under well-formedness alone finds (coherence of two reads
needs two axioms left out: Causality and SCPerLocation), a test with no memory operation, a
filter, conditions on a register one control path never writes (UnionSession specializes it to
0), negative values and mixed sizes. Each is answered by the batched verdicts, by a fresh session
per condition, and by brute force; and by what the PTX text gives for each condition."""
from __future__ import annotations

import pytest

from checker.engines.brute import BruteEngine
from checker.engines.smt import Z3Engine
from checker.front.conditions import parse_cond
from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.verdict.session import Session
from checker.verdict.union import UnionSession

MODEL = resolve_model("ptx")

# (allowed, sane) by the PTX memory model, for each condition
MP_CORR = (r"""
name: MP+CoRR
source: "PTX ISA 9.4, Memory Consistency Model (release/acquire patterns; Axioms > Causality, Sequential Consistency Per Location)"
threads:
  P0:
    at: gpu0.cta0
    code: ["st.weak.global [x], 1", "st.release.gpu.global [f], 1"]
  P1:
    at: gpu0.cta1
    code: ["ld.acquire.gpu.global r0, [f]", "ld.weak.global r1, [x]"]
  P2:
    at: gpu0.cta2
    code: ["st.relaxed.gpu.global [z], 1"]
  P3:
    at: gpu0.cta3
    code: ["ld.relaxed.gpu.global r0, [z]", "ld.relaxed.gpu.global r1, [z]"]
""", {
    r"P1:r0=1 /\ P1:r1=0": (False, True),          # MP's stale read: Causality alone forbids it
    r"P1:r1=0 /\ P1:r0=1": (False, True),          # the same, written the other way round
    r"P1:r0=1": (True, True),                       # implied by the two above
    r"P3:r0=1 /\ P3:r1=0": (False, True),          # CoRR: sane only without two axioms
    r"P3:r0=1 /\ P3:r1=0 /\ P1:r0=1 /\ P1:r1=0": (False, True),
    r"P1:r0=2": (False, False),                     # nobody writes 2
    "false": (False, False),
    "true": (True, True),
    r"P3:r0=1 /\ P3:r1=0 \/ P1:r0=2": (False, True),
    r"~(P1:r0=1 /\ P1:r1=0) /\ P3:r0=1 /\ P3:r1=0": (False, True),
    r"P1:r0=P3:r1 /\ P1:r0=1 /\ P3:r1=0": (False, False),
    "x=2": (False, False),
    r"x=1 /\ z=0": (False, False),                 # z's only store is the final value
    r"P3:r0!=P3:r0": (False, False),
}, False)

REGISTERS = (r"""
name: Registers
source: "PTX ISA 9.4, mov, add (no memory operation: no axiom has anything to forbid)"
threads:
  P0:
    at: gpu0.cta0
    code: ["mov.u32 r0, 1", "add.u32 r1, r0, 2"]
""", {
    "P0:r0=1": (True, True), "P0:r1=4": (False, False), r"P0:r1=3 /\ P0:r0=1": (True, True),
    "false": (False, False), "true": (True, True), "P0:r0=P0:r1": (False, False),
}, False)

BRANCH = (r"""
name: Branch
source: "PTX ISA 9.4, bra, setp; Memory Consistency Model (release/acquire patterns)"
threads:
  P0:
    at: gpu0.cta0
    code:
      - ld.acquire.gpu.u32 r0, [x]
      - setp.eq.u32 p, r0, 1
      - "@p bra END"
      - ld.relaxed.gpu.u32 r1, [y]
      - END:
  P1:
    at: gpu0.cta1
    code: ["st.relaxed.gpu.u32 [y], 1", "st.release.gpu.u32 [x], 1"]
""", {
    # r1 is never written on the path that reads x=1: it keeps 0 there
    r"P0:r0=1 /\ P0:r1=1": (False, False),
    r"P0:r0=1 /\ P0:r1=0": (True, True),
    r"P0:r0=0 /\ P0:r1=0": (True, True),
    r"P0:r0=0 /\ P0:r1=1": (True, True),
    "P0:r1=1": (True, True),
    "P0:r1=2": (False, False),
    r"P0:p=1 /\ P0:r1=1": (False, False),
}, True)

FILTER = (r"""
name: MP+filter
source: "PTX ISA 9.4, Memory Consistency Model (release/acquire patterns); docs/format.md (filter)"
threads:
  P0:
    at: gpu0.cta0
    code: ["st.weak.global [x], 1", "st.release.gpu.global [f], 1"]
  P1:
    at: gpu0.cta1
    code: ["ld.acquire.gpu.global r0, [f]", "ld.weak.global r1, [x]"]
filter: 'P1:r0=1'
""", {
    "P1:r1=0": (False, True), "P1:r1=1": (True, True), "P1:r0=0": (False, False),
    r"P1:r0=0 \/ P1:r1=0": (False, True), "true": (True, True), "x=1": (True, True),
}, False)

MIXED = (r"""
name: Mixed+negative
source: "PTX ISA 9.4, Memory Consistency Model (program order, coherence); docs/model.md#a15, #a16 (bytes, two's complement)"
threads:
  P0:
    at: gpu0.cta0
    code: ["st.relaxed.gpu.s32 [x], -1", "st.relaxed.gpu.u8 [x], 5", "st.relaxed.gpu.u32 [f], 1"]
  P1:
    at: gpu0.cta1
    code: ["ld.relaxed.gpu.u32 r9, [f]"]
""", {
    "x=-251": (True, True),             # 0xffffff05: the byte store after the word store
    "x=-1": (False, True),              # the byte store coherence-before the word store
    "x=5": (False, False),              # byte 1 is 0xff whichever store wins
    "x=0xffffff05": (True, True),
    r"x=-251 /\ P1:r9=1": (True, True),
}, False)

CASES = {"mp-corr": MP_CORR, "registers": REGISTERS, "branch": BRANCH, "filter": FILTER, "mixed": MIXED}


def _case(name):
    src, expected, union = CASES[name]
    (t,) = load_text(src, f"{name}.yaml")
    conds = [parse_cond(c) for c in expected]
    return t, conds, list(expected.values()), union


def _session(t, union, engine):
    return UnionSession(t, MODEL, engine=engine) if union else Session(t, MODEL, engine=engine)


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_batched_sanity_answers_as_each_condition_alone(name, engine):
    """verdicts(all) = a fresh session's verdict(each) = what the PTX text gives; asked again on
    the session that batched them, each verdict is unchanged (what it kept answers it)."""
    t, conds, expected, union = _case(name)
    s = _session(t, union, engine)
    batched = [(v.allowed, v.sane) for v in s.verdicts(conds)]
    alone = [(v.allowed, v.sane) for v in (_session(t, union, engine).verdict(c) for c in conds)]
    assert batched == alone == expected
    assert [(v.allowed, v.sane) for v in (s.verdict(c) for c in conds)] == expected
    # in reverse order and twice over on a fresh session: the same answers per condition
    again = _session(t, union, engine).verdicts(conds[::-1] + conds)
    assert [(v.allowed, v.sane) for v in again] == expected[::-1] + expected


def test_coherence_of_two_reads_is_sane_only_under_well_formedness_alone():
    """The premise of the CoRR case: every query with all axioms but one refutes it (Causality
    and SCPerLocation both forbid it), so only the query without axioms finds its execution; after
    sane_each, every set of axioms is answered as by an engine that never batched."""
    t, conds, expected, _ = _case("mp-corr")
    corr = parse_cond(r"P3:r0=1 /\ P3:r1=0")
    fresh = Session(t, MODEL, engine="z3").engine
    every = frozenset(fresh.lits)
    assert {"Causality", "SCPerLocation"} <= every
    assert all(fresh.satisfiable(corr, every - {a}) is None for a in every)
    es = Session(t, MODEL, engine="z3").es
    batched = Z3Engine(es, MODEL)
    assert batched.sane_each(conds) == tuple(s for _, s in expected)
    brute = BruteEngine(es, MODEL)
    assert brute.sane_each(conds) == tuple(s for _, s in expected)
    one = Z3Engine(es, MODEL)
    for c in (corr, parse_cond(r"P1:r0=1 /\ P1:r1=0"), parse_cond("P1:r0=1"), parse_cond("P1:r0=2")):
        for axioms in [(), None, *([a] for a in sorted(every)), *(sorted(every - {a}) for a in sorted(every))]:
            assert (batched.satisfiable(c, axioms) is None) == (one.satisfiable(c, axioms) is None), (c, axioms)


@pytest.mark.parametrize("conds", [["true", "P0:r0=1"], ["P0:r0=1", "P0:r1=3"], ["true", "false"],
                                   ["P0:r0=1", "false", "P0:r1=4"], ["true", "P0:r0=1", "P0:r1=3", "false"],
                                   ["false", "P0:r1=4", "P0:r0=P0:r1"]])
def test_conditions_that_fold_to_constants_are_batched_like_any(conds):
    """Conditions whose terms are constants (registers that only mov and add write): the
    conjunction asked first may have no term left, or be false; the answers are sane's."""
    t, _, _, _ = _case("registers")
    want = {"true": True, "false": False, "P0:r0=1": True, "P0:r1=3": True, "P0:r1=4": False,
            "P0:r0=P0:r1": False}
    es = Session(t, MODEL, engine="z3").es
    got = Z3Engine(es, MODEL).sane_each([parse_cond(c) for c in conds])
    assert got == tuple(want[c] for c in conds)
    assert got == tuple(Z3Engine(es, MODEL).sane(parse_cond(c)) for c in conds)
