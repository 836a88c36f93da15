"""The sanity of a condition (does some execution satisfy it under well-formedness alone?) on
tests with candidates whose values depend on themselves (load buffering with data dependencies,
cycles of read-modify-writes): brute force decides it on the fixed points of those values
(checker.engines.fixpoint) and gives the Z3 engine's answer, or says it cannot; it used to answer
`sane` for every condition of such a test, so a test whose condition no execution satisfies
passed under `--engine brute` and was a broken test under `--engine z3`."""
from __future__ import annotations

import itertools

import pytest

from checker.engines.brute import BruteEngine
from checker.engines.smt import Z3Engine
from checker.errors import Unsupported
from checker.front.litmus import load_text
from checker.isa.registry import lower
from checker.verdict.check import check_test

LB = r"""
name: LB-deps
source: "PTX ISA 9.4, Memory Consistency Model > Axioms > No Thin Air (load buffering with true dependencies), with conditions of this test's own"
threads:
  P0:
    at: gpu0.cta0
    code: ["ld.global.u32 r0, [x]", "st.global.u32 [y], r0"]
  P1:
    at: gpu0.cta1
    code: ["ld.global.u32 r1, [y]", "st.global.u32 [x], r1"]
expect:
  forbidden:
    - '{cond}'
"""


@pytest.mark.parametrize("cond,sane", [
    (r"P0:r0=1 /\ P1:r1=2", False),     # a copy cycle has r0 = r1 at every fixed point
    (r"P0:r0=1 /\ P1:r1=1", True),      # the thin-air 1s (D3)
    (r"~(x=0 /\ y=0)", True),
    (r"P0:r0=2 /\ y=3", False),          # y is a copy of r0
    (r"P0:r0=4294967295 /\ y=4294967295", True),
])
def test_every_engine_gives_the_same_sanity_on_a_copy_cycle(cond, sane, ptx_model):
    (t,) = load_text(LB.format(cond=cond), "lb.yaml")
    got = {e: check_test(t, ptx_model, "ptx", frozenset(), e, 120) for e in ("z3", "brute", "auto")}
    assert [c.sane for c in got["z3"].conditions] == [sane]
    for e in ("brute", "auto"):
        assert (got[e].status, got[e].message) == (got["z3"].status, got["z3"].message), e
        assert [(c.allowed, c.sane) for c in got[e].conditions] == [(c.allowed, c.sane) for c in got["z3"].conditions]
    assert got["brute"].status == ("fail" if not sane else "pass")


# Each thread reads one location and writes the other something computed from what it read.
READS = ["ld.global.u32 {r}, [{loc}]", "ld.global.u16 {r}, [{loc}]", "ld.global {r}, [{loc}]",
         "atom.global.add.u32 {r}, [{loc}], 1", "ld.global.u32 {r}, [{loc}] == 1"]
WRITES = ["st.global.u32 [{loc}], {r}", "st.global.u16 [{loc}], {r}", "st.global [{loc}], {r}",
          "add.u32 {t}, {r}, 3\n      - st.global.u32 [{loc}], {t}",
          "sub.u32 {t}, {r}, 1\n      - st.global.u32 [{loc}], {t}",
          "add.u32 {t}, {r}, 4294967295\n      - st.global.u32 [{loc}], {t}",
          "add {t}, {r}, 2\n      - st.global [{loc}], {t}",
          "mul.lo.u32 {t}, {r}, 2\n      - st.global.u32 [{loc}], {t}",
          "atom.global.add.u32 {t}, [{loc}], {r}"]
CONDS = [r"P0:r0=1 /\ P1:r1=2", r"P0:r0=1 /\ P1:r1=1", r"~(P0:r0=0)", r"x=4 /\ y=1", r"P0:r0=65536 \/ y=3",
         r"P0:r0=4294967295", r"P1:r1=5 /\ ~(x=0)", r"P0:r0=P1:r1 /\ ~(P0:r0=0)"]


def cycle_text(r0: str, w0: str, r1: str, w1: str, conds=CONDS) -> str:
    """P0 reads x with r0 and writes y with w0, P1 reads y and writes x: a cycle when each read
    reads the other's write; `conds` forbidden."""
    code = lambda rd, wr, r, t, a, b: "\n      - ".join(  # noqa: E731
        [rd.format(r=r, loc=a), wr.format(r=r, t=t, loc=b)])
    conds = "\n".join(f"    - '{c}'" for c in conds)
    return (f"name: cycle\nsource: test\nthreads:\n  P0:\n    at: gpu0.cta0\n    code:\n      - "
            f"{code(r0, w0, 'r0', 'r2', 'x', 'y')}\n  P1:\n    at: gpu0.cta1\n    code:\n      - "
            f"{code(r1, w1, 'r1', 'r3', 'y', 'x')}\nexpect:\n  forbidden:\n{conds}\n")


def test_brute_force_sanity_on_value_cycles_is_z3s_or_refused(ptx_model):
    """Over a family of value cycles (copies, sized stores, offsets that do or do not sum to 0
    modulo the width, read-modify-write cycles, awaits) and conditions: where brute force
    answers, it answers as Z3 does, under well-formedness alone, both `sane` and whether a
    witness exists; where it cannot solve a cycle (a multiplication), it says so. Enough cases
    are decided on fixed points, both ways, that the comparison means something."""
    decided, refused = sanity_agrees((cycle_text(*x) for x in itertools.product(READS, WRITES, READS[:3], WRITES[:7])),
                                     ptx_model)
    assert decided[True] >= 20 and decided[False] >= 100 and refused >= 10, (decided, refused)


def sanity_agrees(texts, model) -> tuple[dict[bool, int], int]:
    """For each test text, each condition's `sane` and witness under no axioms from brute force
    equal Z3's `sane`, or brute force refuses, naming why; how many were decided on fixed points
    (by answer) and how many refused."""
    decided = {True: 0, False: 0}
    refused = 0
    for text in texts:
        (t,) = load_text(text, "cycle.yaml")
        es = lower(t)
        z3, brute = Z3Engine(es, model), BruteEngine(es, model)
        for e in t.expectations:
            want = z3.sane(e.cond)
            try:
                by_values = brute.sane_by_values(e.cond)
                got = brute.sane(e.cond)
                witness = brute.satisfiable(e.cond, axioms=())
            except Unsupported as err:
                assert "depend on themselves" in str(err) and "--engine z3" in str(err)
                refused += 1
                continue
            assert got == want == (witness is not None), (text, e.cond)
            if not by_values:
                decided[got] += 1
    return decided, refused


def test_a_read_modify_write_cycle_has_no_fixed_point(ptx_model):
    """Two atom.add of 1 reading each other's write: v = v + 2 (mod 2^32) has no solution, so
    no execution returns 5 to both, even without axioms."""
    text = ("name: rmw\nsource: test\nthreads:\n"
            "  P0:\n    at: gpu0.cta0\n    code: ['atom.global.add.u32 r0, [x], 1']\n"
            "  P1:\n    at: gpu0.cta1\n    code: ['atom.global.add.u32 r0, [x], 1']\n"
            "expect:\n  forbidden: ['P0:r0=5 /\\ P1:r0=5']\n")
    (t,) = load_text(text, "rmw.yaml")
    got = {e: check_test(t, ptx_model, "ptx", frozenset(), e, 120) for e in ("z3", "brute")}
    assert [c.sane for c in got["z3"].conditions] == [c.sane for c in got["brute"].conditions] == [False]
    assert got["z3"].message == got["brute"].message
