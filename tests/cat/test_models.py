"""Differential checks between the bundled models: sequential consistency is a strengthening of
PTX, so every outcome SC allows, PTX must allow too (on every bundled test)."""
from __future__ import annotations

import pytest

from checker.resources import resolve_model
from checker.engines.smt import Z3Engine
from checker.isa.registry import lower

from ..conftest import straight_line_tests

TESTS = straight_line_tests()


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_sc_outcomes_are_ptx_outcomes(test):
    es = lower(test)
    observe = es.observables
    sc, done_sc = Z3Engine(es, resolve_model("sc")).outcomes(observe)
    ptx, done_ptx = Z3Engine(es, resolve_model("ptx")).outcomes(observe)
    assert done_sc and done_ptx
    assert sc <= ptx, f"SC allows outcomes PTX forbids: {sorted(sc - ptx)}"
