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
    from ..conftest import bundled_tests

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


def test_fix_repairs_a_control_flow_test_proven_minimal():
    """ptxmc fix refused a test with a loop; it now repairs it over its variants, proven least cost
    (each candidate set judged as a whole), and the repair passes its re-check."""
    from checker.ast import Expectation
    from checker.front.conditions import parse_cond
    from checker.repair.fix import fix
    from checker.repair.target import Target
    from checker.resources import resolve_model

    t = checker.load_test(POLL_RELAXED)
    cond = parse_cond("P1:r1=0")
    r = fix(t, Target((Expectation("forbidden", cond, "P1:r1=0"),), (), True, hang=False), resolve_model("ptx"),
            max_repairs=2, budget=1800)      # (a safety net for a loaded machine, not what ends the search)
    assert r.status == "repaired" and r.proven
    assert [e.text for e in r.repairs[0].edits] == ["ld.acquire.gpu.global r0, [flag]"]
    assert dict(r.repairs[0].test.threads[1].labels) == {"SPIN": 0}


def test_an_insertion_keeps_a_label_before_what_is_inserted_at_its_point():
    from checker.repair.edits import Edit, Insert, apply, instr

    t = checker.load_test(POLL_RELAXED)
    fence = instr("fence.acq_rel.gpu", t)
    e = Edit("f", "insert", ("fence", "P1", 0), (1,), 1, (Insert("P1", 0, 0, (fence,)),))
    edited = apply(t, [e]).test.threads[1]
    assert edited.labels == (("SPIN", 0),) and edited.code[0].text == "fence.acq_rel.gpu"
    # a label after the point moves with its instruction (it stayed at its old index, one early)
    from dataclasses import replace
    moved = replace(t, threads=(t.threads[0], replace(t.threads[1], labels=(("SPIN", 1),))))
    edited = apply(moved, [e]).test.threads[1]
    assert edited.labels == (("SPIN", 2),) and edited.code[2].text == "setp.ne.s32 p, r0, 1"


def test_audit_judges_tests_with_loops_and_hangs():
    """ptxmc audit reported every test with control flow or a hang expectation as an error (its
    policy read one event structure); it now applies the rule per instruction over the variants and
    judges the result like any test."""
    from checker.audit.run import audit_test
    from checker.resources import resolve_model

    for spec in (POLL, POLL_RELAXED, "litmus/liveness/barriers.yaml::ClusterBar+missing-arrive"):
        a = audit_test(checker.load_test(spec), "tilelang", resolve_model("ptx"), readings=("default",))
        assert a.error == "" and all(j.status not in ("error", "unknown") for _, j in a.by_reading), spec
