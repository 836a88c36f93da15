"""flag_least by bisection answers what its specification, the linear scan (one query per earlier
edge, in order), answers: on every bundled undefined-behaviour test and the `uninit` family with
real Z3, and for the search alone on every pattern of satisfiable indices, every witness the
solver may give and an unknown answer at every point."""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from checker.engines.base import concrete_evaluation
from checker.engines.least import bisect, linear
from checker.engines.smt import Z3Engine
from checker.errors import SolverUnknown
from checker.isa.registry import lower

from ..conftest import bundled_tests

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from families import uninit  # noqa: E402

UB_TESTS = [t for t in bundled_tests() if t.expect_undefined and not (t.branches or t.expect_hang is not None)]


def _uninit(n):
    from checker.front.litmus import load_text
    return load_text(uninit(n), "uninit.yaml")[0]


CASES = [(t.name, t) for t in UB_TESTS] + [(f"uninit-{n}", n) for n in range(1, 5)]


@pytest.mark.parametrize("name,test", CASES, ids=[c[0] for c in CASES])
def test_bisection_names_the_linear_scans_edge(name, test, ptx_model):
    """For each flag that fires and each bound (every statically possible edge, and none), the
    same least edge as the linear scan, with an execution the axioms allow on which the flag
    contains that edge."""
    if isinstance(test, int):
        test = _uninit(test)
    es = lower(test)
    eng = Z3Engine(es, ptx_model, timeout=600)
    fired = [n for n in eng.flag_names if eng.flag_witness(n) is not None]
    assert fired, "expected undefined behaviour"
    asked = 0
    for flag in fired:
        edges = [e for e, _ in eng._candidates(flag, (len(es.events), 0))]
        for below in edges + [(len(es.events), 0)]:
            want, got = eng.flag_least_linear(flag, below), eng.flag_least(flag, below)
            assert (want and want[0]) == (got and got[0]), (flag, below)
            asked += 1
            if got is None:
                continue
            ev = concrete_evaluation(es, ptx_model, got[1])
            assert all(v for c, v in ev.checks if not c.flag), "the witness breaks an axiom"
            i = next(i for i, (c, _) in enumerate(ev.checks) if c.name == flag and c.flag)
            kind, value = ev.check_values[i]
            a, b = got[0]
            assert (got[0] if kind == "rel" else a) in value and (kind == "rel" or a == b)
    assert asked


def _oracles(n, sat, pick, unknown_some=None, unknown_one=frozenset()):
    """A solver's answers over n indices of which `sat` are satisfiable: a range query's witness
    names the index `pick` chooses among the satisfiable ones of the range (a model may satisfy
    any of them); the range query numbered `unknown_some` and single queries of `unknown_one`
    answer unknown."""
    calls = [0]

    def some(lo, hi):
        assert 0 <= lo < hi <= n
        calls[0] += 1
        if calls[0] == unknown_some:
            raise SolverUnknown("unknown")
        hits = [i for i in range(lo, hi) if i in sat]
        return (pick(hits), f"w{pick(hits)}") if hits else None

    def one(i):
        assert 0 <= i < n
        if i in unknown_one:
            raise SolverUnknown("unknown")
        return f"w{i}" if i in sat else None

    return some, one, calls


PICKS = {"least": min, "last": max, "middle": lambda h: h[len(h) // 2]}


def _answer(f):
    try:
        return f()
    except SolverUnknown:
        return "unknown"


@pytest.mark.parametrize("pick", sorted(PICKS))
def test_bisection_is_the_linear_scan_on_every_pattern(pick):
    """n = 0..8, every set of satisfiable indices: the linear scan's index and witness, in at most
    1 + ceil(log2 n) range queries; an unknown range query (any of them) falls back to the linear
    scan, so it gives the linear scan's answer, unknown included."""
    for n in range(9):
        for bits in itertools.product((False, True), repeat=n):
            sat = {i for i, b in enumerate(bits) if b}
            some, one, calls = _oracles(n, sat, PICKS[pick])
            want = linear(one, 0, n)
            assert bisect(n, some, one) == want, (n, sat)
            assert calls[0] <= 1 + (n - 1).bit_length(), (n, sat, calls[0])
            for k in range(1, calls[0] + 1):
                some, one, _ = _oracles(n, sat, PICKS[pick], unknown_some=k)
                assert bisect(n, some, one) == want, (n, sat, k)
                # and where single queries are unknown too: never "no" for an unknown
                for u in range(n):
                    some, one, _ = _oracles(n, sat, PICKS[pick], unknown_some=k, unknown_one={u})
                    lin, bis = _answer(lambda: linear(one, 0, n)), _answer(lambda: bisect(n, some, one))
                    assert bis == lin or (lin == "unknown" and bis in ("unknown", want)), (n, sat, k, u)
