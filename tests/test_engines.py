"""The brute-force engine and the Z3 engine return identical allowed-outcome sets (over every
observable) on every bundled test small enough for brute force, for the default and SC models."""
from __future__ import annotations

import pytest

from checker.check import resolve_model
from checker.engine_brute import BruteEngine
from checker.engine_z3 import Z3Engine
from checker.errors import LimitExceeded, LitmusError, Unsupported
from checker.lower import lower

from .conftest import bundled_tests

TESTS = bundled_tests()
LIMIT = 20_000


def _all_observables(es):
    return tuple(sorted(f"{t}:{r}" for t, r in es.registers) + sorted(es.final_writes))


@pytest.mark.parametrize("model_name", ["ptx", "sc"])
@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_engines_agree(test, model_name):
    model = resolve_model(model_name)
    try:
        es = lower(test)
    except LitmusError as e:
        pytest.fail(str(e))
    try:
        brute = BruteEngine(es, model, limit=LIMIT)
    except LimitExceeded as e:
        pytest.skip(str(e))
    observe = _all_observables(es)
    try:
        expected, _ = brute.outcomes(observe)
    except Unsupported as e:
        pytest.skip(str(e))
    got, complete = Z3Engine(es, model).outcomes(observe)
    assert complete
    assert got == expected
