"""Every test is one unit of work (issue 33, review 3 section 6): `checker.check`,
`checker.explain` and `checker.session` answer a test with control flow, a hang question or
barrier generations decided at run time as they answer a straight-line test, and `ptxmc fix`
and `ptxmc audit` accept such tests."""
from __future__ import annotations

import checker

POLL = "litmus/liveness/flag-polling.yaml::Poll+rel.gpu+acq.gpu"
POLL_RELAXED = "litmus/liveness/flag-polling.yaml::Poll+rel.gpu+rlx.gpu"


def test_api_check_answers_a_control_flow_test():
    x = checker.check(POLL, "P1:r1=0")
    assert x.status == "forbidden" and ("Causality",) in x.blame
    assert checker.check(POLL_RELAXED, "P1:r1=0").status == "allowed"


def test_every_bundled_test_opens_one_session_and_explain_answers_the_ones_with_variants():
    """checker.session answers every bundled test; checker.explain answers each test that has
    several variants (control flow, hangs, barrier generations) on its first expectation."""
    from checker.unfold.variants import needs_variants
    from .conftest import bundled_tests

    tests = bundled_tests()
    assert len(tests) > 900
    plural = [t for t in tests if needs_variants(t)]
    assert len(plural) > 60
    for t in plural:
        s = checker.session(t)
        assert s.outcomes() is not None
        if t.expectations:
            text = checker.explain(t, t.expectations[0].cond)
            assert text.startswith(f"Test {t.name}  (model ") and "does not support" not in text


def test_explanation_of_a_forbidden_control_flow_outcome_has_the_cycle_the_paths_and_the_needed_sync():
    x = checker.check(POLL, "P1:r1=0")
    assert x.witness is not None and x.paths.startswith("P0: straight through; P1: line 22")
    assert x.violations and x.violations[0].axiom == "Causality"
    assert any(e.mutation.thread == "P1" for e in x.needed)
