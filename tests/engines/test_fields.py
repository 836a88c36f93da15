"""The field-wise equalities of checker/engines/fields.py are exact: the terms a value expression
splits into sum to it (an identity, also with fields out of their ranges), the equalities are
implied by the packed one wherever the guard holds and the guard is needed where it does not,
and on mbarrier tests whose verdicts rest on an out-of-range field or on a wait's phase the Z3
engine judges like brute force."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest
import z3

from checker import limits
from checker.engines import encode
from checker.engines.brute import BruteEngine
from checker.engines.digits import Digits
from checker.engines.smt import Z3Engine
from checker.isa.registry import lower
from checker.engines.fields import Fields, equalities
from checker.front.litmus import load_text
from checker.isa.mbarrier import LIMIT, expected_of, mb_update, pack, pending_of, phase_of, tx_of
from checker.model.values import Bin, Const, Ite, ReadVal, evaluate, int_val, to_z3
from checker.verdict.check import check_test

MB_CUTS = (0, 21, 41, 61)


def _mb_slices(r):
    v = ReadVal(r)
    return [phase_of(v), expected_of(v), pending_of(v), tx_of(v)]


def _values():
    """Values of reads 0..2: packed states with fields in and out of range, bytes, negatives."""
    rng = random.Random(35)
    states = [(0, 1, 1, 0), (3, 2, 1, -16), (1, 5, 0, LIMIT), (2, 1, 0, 0), (1, 0, -1, 0), (0, 1, 1, 1 << 21)]
    out = []
    for _ in range(40):
        s = evaluate(pack(*rng.choice(states)), lambda _: 0)
        out.append({0: s, 1: rng.choice([0, 1, 2, LIMIT, LIMIT + 2, -3]), 2: rng.randrange(-(1 << 9), 1 << 18)})
    return out


def _writes():
    """Write values as the lowering builds them: mbarrier updates of read 0's state (arrive,
    expect-tx and complete-tx by constants and by read 1's value), a state packed from fields,
    bytes joined from reads 1 and 2, a copy of read 0, constants."""
    v, x = ReadVal(0), ReadVal(1)
    return [
        mb_update(v, arrive=Const(1))[0],
        mb_update(v, arrive=Const(2), expect=Const(16))[0],
        mb_update(v, arrive=x, complete=Const(16))[0],
        mb_update(v, drop=Const(1), arrive=Const(1))[0],
        pack(Bin("add", phase_of(v), Const(1)), x, x, 0),
        Bin("join", Bin("shl", Bin("low", x, Const(8)), Const(8)), Bin("low", ReadVal(2), Const(8))),
        Ite("==", x, Const(0), Bin("mul", x, Const(1 << 21)), Bin("sub", v, Const(5))),
        v, Const(evaluate(pack(1, 3, 2, -5), lambda _: 0)), Const(-7),
    ]


@pytest.mark.parametrize("cuts", [MB_CUTS, (0, 8, 16), (0,)])
def test_terms_sum_to_the_value(cuts):
    """sum F_i * 2^p_i == W for every write expression and every value of its reads."""
    digits = Digits(_mb_slices(0) + [Bin("low", ReadVal(2), Const(8))])
    fields = Fields(digits)
    for w in _writes():
        fs = fields.terms(w, cuts)
        assert len(fs) == len(cuts)
        for values in _values():
            got = sum(evaluate(f, values.__getitem__) << p for f, p in zip(fs, cuts))
            assert got == evaluate(w, values.__getitem__), (w, values)


def _bytes(r):
    return [Bin("low", ReadVal(r), Const(8)), Bin("low", Bin("shr", ReadVal(r), Const(8)), Const(8))]


def _encoding(w, slices=_mb_slices):
    """A solver holding read 3's digits where `slices` cut it (the mbarrier fields by default),
    the digits of reads 0 and 2, and val_3 == w; the term function and (guard, equalities) for
    read 3 reading w."""
    ctx = z3.Context()
    reads = {i: z3.Int(f"val|{i}", ctx) for i in range(4)}
    digits = Digits(slices(3) + _mb_slices(0) + [Bin("low", ReadVal(2), Const(8))])
    s = z3.Solver(ctx=ctx)
    s.add(*digits.constraints(reads.__getitem__, ctx))
    hook = digits.hook(ctx)

    def term(e):
        return to_z3(e, reads.__getitem__, ctx, hook)

    s.add(*digits.aux_constraints(term))
    s.add(reads[3] == term(w))
    return s, reads, ctx, equalities(Fields(digits), 3, w, term, ctx)


@pytest.mark.parametrize("k", range(len(_writes())))
def test_equalities_are_implied_by_the_packed_one(k):
    """Under the guard, no model of the packed equality violates a field-wise one."""
    w = _writes()[k]
    s, _, ctx, parts = _encoding(w, _bytes if k == 5 else _mb_slices)   # (5: bytes)
    assert parts is not None
    guard, eqs = parts
    s.add(z3.And(guard + [z3.BoolVal(True, ctx)]), z3.Not(z3.And(eqs)))
    assert s.check() == z3.unsat


def test_the_guard_is_needed_for_a_field_out_of_range():
    """An arrive on a state with no pending arrival: the pending field goes to -1 (undefined
    behaviour, MbarrierRange), the packed value borrows from the expected count, and the read's
    digits differ from the write's fields: only the packed equality may constrain them."""
    w = mb_update(ReadVal(0), arrive=Const(1))[0]
    s, reads, ctx, (guard, eqs) = _encoding(w)
    s.add(reads[0] == int_val(evaluate(pack(0, 2, 0, 0), lambda _: 0), ctx))
    assert guard
    s.push()
    s.add(z3.And(eqs))
    assert s.check() == z3.unsat        # the field-wise equalities alone would lose this execution
    s.pop()
    assert s.check() == z3.sat
    assert z3.is_false(s.model().eval(z3.And(guard)))


def test_no_equalities_without_a_layout():
    """A value that is one term at bit 0 (no constant) gives nothing to add."""
    _, _, _, parts = _encoding(Bin("add", ReadVal(1), Const(3)))
    assert parts is None


MB_TEST = """
name: {name}
source: "PTX ISA 9.4, mbarrier (phase completion, count ranges; undefined behaviour past them)"
arch: sm_90a
memory:
  mb: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: {count}}}}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.global [x], 1
      - mbarrier.arrive.shared::cta.b64 _, [mb], {arrive}
  P1:
    at: gpu0.cta0.warp1
    code:
{p1}
      - mbarrier.try_wait.parity.shared::cta.b64 p, [mb], {parity} == 1
      - ld.global r0, [x]
"""

CASES = {
    # pending 1 - 2 = -1: MbarrierRange; the wait may be freed by it and see x = 0
    "over-arrive": dict(count=1, arrive=2, p1="", parity=0),
    # the same over-arrival after a complete phase: the wait on phase 1 reads the bad state
    "over-arrive+phase1": dict(count=1, arrive=2, p1="      - mbarrier.arrive.shared::cta.b64 _, [mb]", parity=1),
    # a phase of two arrivals: the wait on phase 0 sees P0's store
    "phase0": dict(count=2, arrive=1, p1="      - mbarrier.arrive.shared::cta.b64 _, [mb]", parity=0),
    # parity 1 names the phase before the current one: complete at once, x may be 0
    "phase1": dict(count=2, arrive=1, p1="      - mbarrier.arrive.shared::cta.b64 _, [mb]", parity=1),
    # tx-count: expect 2^20-1 bytes twice overflows the tx range (MbarrierRange)
    "tx-overflow": dict(count=2, arrive=1, parity=0,
                        p1="      - mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [mb], 1048575\n"
                           "      - mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 1048575"),
}
WANT = {   # (P1:r0=0 allowed; None: not judged, the test has undefined behaviour), flags
    "over-arrive": (None, {"MbarrierRange"}),
    # P0's arrive may also come after P1's completed phase 0 with no wait for it: skipped (A7)
    "over-arrive+phase1": (None, {"MbarrierRange", "MbarrierSkippedPhase"}),
    "phase0": (False, set()),
    "phase1": (True, set()),
    "tx-overflow": (None, {"MbarrierRange"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_mbarrier_verdicts_agree_with_brute_force(name, ptx_model, monkeypatch):
    """Verdicts resting on an out-of-range field or on the phase a wait names: Z3 (with the
    field-wise equalities, here on tests of every size) and brute force give the same outcomes
    and undefined behaviour."""
    monkeypatch.setattr(encode, "FIELDWISE_EVENTS", 0)
    text = MB_TEST.format(name=name, **CASES[name]) + "expect:\n  allowed: ['P1:r0=0']\n"
    (t,) = load_text(text, "t.yaml")
    with limits.use(replace(limits.current(), candidates=20_000)):
        brute = check_test(t, ptx_model, "ptx", frozenset(), "brute", 120)
    z3r = check_test(t, ptx_model, "ptx", frozenset(), "z3", 120)
    assert brute.status != "unknown" and z3r.status != "unknown"
    assert (z3r.status, z3r.message) == (brute.status, brute.message)
    assert [c.allowed for c in z3r.conditions] == [c.allowed for c in brute.conditions]
    assert z3r.undefined == brute.undefined
    allowed, flags = WANT[name]
    assert [c.allowed for c in z3r.conditions] == ([] if allowed is None else [allowed])
    assert {u.flag for u in z3r.undefined} == flags
    # every execution, those past the undefined behaviour too: the same outcomes
    es = lower(t)
    observe = es.observables
    want, _ = BruteEngine(es, ptx_model, limit=20_000).outcomes(observe)
    got, complete = Z3Engine(es, ptx_model).outcomes(observe)
    assert complete and got == want
