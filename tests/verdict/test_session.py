"""One Session per test x model x options: `ptxmc check` and `ptxmc report` lower and encode the
test once (mutants are other tests, each lowered once), and a Session's answers do not depend on
what ran before it in the process."""
from __future__ import annotations

from collections import Counter

import checker.engines.smt as smt
import checker.verdict.session as session_mod
from checker.front.conditions import parse_cond
from checker.front.litmus import load_file
from checker.report.analyze import analyze
from checker.verdict.explain import explain_text
from checker.verdict.session import Session

from ..conftest import LITMUS_DIR


def _mp():
    return next(t for t in load_file(LITMUS_DIR / "core" / "MP.yaml") if t.name == "MP+rel.gpu+acq.gpu+sameCluster")


def _counting(monkeypatch):
    lowered, encoded = Counter(), Counter()
    real_lower, real_encode = session_mod.lower, smt.encode

    def lower(test):
        lowered[test] += 1
        es = real_lower(test)
        owners[id(es)] = test
        return es

    def encode(es, *args, **kw):
        encoded[owners[id(es)]] += 1
        return real_encode(es, *args, **kw)

    owners: dict = {}
    monkeypatch.setattr(session_mod, "lower", lower)
    monkeypatch.setattr(smt, "encode", encode)
    return lowered, encoded


def test_check_lowers_and_encodes_the_test_once(monkeypatch, ptx_model):
    lowered, encoded = _counting(monkeypatch)
    t = _mp()
    _, text, _ = explain_text(Session(t, ptx_model), parse_cond(r"P1:r0=1 /\ P1:r1=0"))
    assert "Forbidden" in text and "weakening st.release.gpu" in text
    assert lowered[t] == 1 and encoded[t] == 1
    assert len(lowered) > 1 and all(n == 1 for n in lowered.values())     # each mutant once too


def test_report_lowers_and_encodes_the_test_once(monkeypatch, ptx_model):
    lowered, encoded = _counting(monkeypatch)
    t = _mp()
    rep = analyze(t, ptx_model, "ptx")
    assert rep.result.status == "pass" and rep.forbidden and rep.witnesses
    assert lowered[t] == 1 and encoded[t] == 1


def test_answers_do_not_depend_on_what_ran_before(ptx_model):
    t = _mp()
    cond = parse_cond(r"P1:r0=1 /\ P1:r1=0")
    first = explain_text(Session(t, ptx_model), cond)
    for other in load_file(LITMUS_DIR / "core" / "SB.yaml")[:5]:       # fill Z3 with other work
        Session(other, ptx_model).outcomes()
    assert explain_text(Session(t, ptx_model), cond) == first


def test_a_test_s_conditions_have_their_sanity_settled_together(ptx_model, monkeypatch):
    """The judge settles the sanity of every condition the model does not allow at once: the
    same verdicts and sanity as asking each condition's verdict alone, on Z3 and brute force,
    in fewer Z3 queries."""
    from checker import limits
    from checker.front.litmus import load_text
    from checker.verdict.check import judge_test

    from ..engines.test_engines import TWO_MP, TWO_MP_SANE, solver_queries

    (t,) = load_text(TWO_MP, "t.yaml")
    queries = solver_queries(monkeypatch)
    one = Session(t, ptx_model, engine="z3")
    assert not one.undefined and one.outcomes()[1]
    each = tuple(one.verdict(e.cond) for e in t.expectations)
    assert tuple(v.sane for v in each) == TWO_MP_SANE and not any(v.allowed for v in each)
    one_by_one, queries[0] = queries[0], 0
    r = judge_test(t, ptx_model, "ptx", frozenset(), "z3", limits.current())
    assert [(c.allowed, c.sane) for c in r.conditions] == list(each)
    assert r.status == "fail" and r.message.startswith("broken test")
    assert queries[0] < one_by_one
    brute = judge_test(t, ptx_model, "ptx", frozenset(), "brute", limits.current())
    assert [(c.allowed, c.sane) for c in brute.conditions] == list(each)
    assert Session(t, ptx_model, engine="brute").verdicts([e.cond for e in t.expectations]) == each


def test_a_union_s_conditions_have_their_sanity_settled_together(ptx_model, monkeypatch):
    """The same over a test's variants (a UnionSession: here asked the hang question, one
    variant): the verdicts of asking each condition alone, in fewer Z3 queries."""
    from checker.front.litmus import load_text
    from checker.verdict.check import check_test
    from checker.verdict.union import UnionSession

    from ..engines.test_engines import TWO_MP, TWO_MP_SANE, solver_queries

    (t,) = load_text(TWO_MP.replace("expect:\n", "expect:\n  hang: forbidden\n"), "t.yaml")
    queries = solver_queries(monkeypatch)
    one = UnionSession(t, ptx_model, engine="z3", loops=True)
    assert not one.undefined and one.outcomes()[1] and one.hangs() == ((), True)
    each = tuple(one.verdict(e.cond) for e in t.expectations)
    assert tuple(v.sane for v in each) == TWO_MP_SANE and not any(v.allowed for v in each)
    one_by_one, queries[0] = queries[0], 0
    r = check_test(t, ptx_model, "ptx", frozenset(), "z3", 120)
    assert [(c.allowed, c.sane) for c in r.conditions[:-1]] == list(each) and r.conditions[-1].text == "hang"
    assert queries[0] < one_by_one
