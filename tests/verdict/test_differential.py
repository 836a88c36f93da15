"""`run`, `check FILE::NAME COND`, `check FILE::NAME hang` and the Python API never disagree: every
bundled test is judged the way `ptxmc run` judges it, each of its expected conditions is asked
the way `ptxmc check` asks it, its hang question too, and (where it accepts the test) a Session
the API opens, and the answers must be the same (issue 32: "run and check must never disagree").

The hang question is asked where `run` answers it (a hang expectation, a hang it notes, a test
whose executions all block) and of every test with control flow or run-time barrier schedules; a
straight-line test whose `run` says nothing of hangs is not asked (it would double the cost).
`check` is asked through the route cmd_check takes (a control-flow, schedule or hang question to
checker.verdict.open_session's session, explained by checker.verdict.explain), in-process and
for the verdict only (the text's blame and needed synchronization cost more than the whole suite
and do not change the verdict). A straight-line test's `run` and `check` share one Session, as a
user's own `api.session` would; the API's Session is its own (api.check's explanation adds
blame and mutants, whose cost would dwarf the suite, on top of the same verdict). One parameter per bundled file,
so that `pytest -n 2` shares the work.
"""
from __future__ import annotations

from collections import defaultdict

import pytest

from checker import api
from checker.errors import CheckerError, LitmusError
from checker.front.conditions import show
from checker.unfold.variants import needs_variants
from checker.verdict.check import judge
from checker.verdict.explain import explain
from checker.verdict.explain import explain_text, hang_text
from checker.verdict.open import open_session

from ..conftest import bundled_tests

ENGINE = "auto"       # what `run` and `check` use by default
BY_FILE: dict[str, list] = defaultdict(list)
for _t in bundled_tests():
    BY_FILE[_t.where.path if _t.where else "?"].append(_t)
FILES = sorted(BY_FILE)


def _run_word(cond_result, result) -> set[str]:
    """The `check` verdicts that agree with what `run` said of one condition."""
    if result.undefined:
        return {"undefined"}
    if cond_result.allowed is None:
        return {"unknown", "hang"}
    if cond_result.allowed:
        return {"allowed"}
    return {"forbidden"} if cond_result.sane else {"impossible"}


def _hang_word(result) -> set[str] | None:
    """What `check ... hang` must say, where `run` answered the hang question (None: it did not)."""
    if result.undefined:
        return {"undefined"}
    hang = next((c for c in result.conditions if c.text == "hang"), None)
    if hang is not None:
        return {"unknown"} if hang.allowed is None else {"allowed" if hang.allowed else "forbidden"}
    if any(n.startswith(("a hang is possible", "hang: ")) for n in result.notes):
        return {"allowed"}
    if "every execution blocks" in result.message:
        return {"allowed"}
    return None


@pytest.mark.parametrize("path", FILES, ids=[p.split("litmus/")[-1] for p in FILES])
def test_run_check_and_api_agree(path, ptx_model):
    problems = []
    for test in BY_FILE[path]:
        flow = needs_variants(test)
        session = open_session(test, ptx_model, engine=ENGINE)
        result = judge(session, "ptx")
        if result.status in ("error", "unknown"):
            problems.append(f"{test.name}: run says {result.status}: {result.message}")
            continue
        conds = [c for c in result.conditions if c.text != "hang"]
        try:
            mine = api.session(test, model=ptx_model, engine=ENGINE)       # the API's own session
        except LitmusError as e:
            mine = None
            problems.append(f"{test.name}: the API refuses the test: {e}")
        for exp, cr in zip(test.expectations, conds):
            want = _run_word(cr, result)
            word = explain(session, session.prepare(exp.cond), blame=False, effects=False).status
            if flow:        # and what `ptxmc check` prints for it
                assert explain_text(open_session(test, ptx_model, engine=ENGINE), exp.cond)[0] == word
            if word not in want:
                problems.append(f"{test.name}: run says {sorted(want)}, check says {word}: {show(exp.cond)}")
            if mine is None:
                continue
            v = mine.verdict(exp.cond)
            said = "undefined" if mine.undefined else "allowed" if v.allowed else \
                "forbidden" if v.sane else "impossible"
            if said not in want:
                problems.append(f"{test.name}: run says {sorted(want)}, the API's session says {said}: "
                                f"{show(exp.cond)}")
        want = _hang_word(result)
        if want is None and not flow:
            continue        # `run` does not answer the hang question of a straight-line test
        try:
            word, _, _ = hang_text(open_session(test, ptx_model, engine=ENGINE, hang=True))
        except CheckerError as e:
            problems.append(f"{test.name}: check ... hang fails: {e}")
            continue
        if want is not None and word not in want:
            problems.append(f"{test.name}: run says hang {sorted(want)}, check ... hang says {word}")
    assert problems == []


# an mbarrier arrive on a location no mbarrier.init set up: undefined behaviour
_UB = """  memory: {mb: {space: shared, owner: gpu0.cta0}}
  threads:
    P0: {at: gpu0.cta0, code: ["mbarrier.arrive.shared::cta.b64 _, [mb]"]}
"""
STATUS_CASES = """
- name: DefinedOnly
  source: "docs/format.md#expectations-and-conditions (undefined: false is an expectation)"
  threads:
    P0: {at: gpu0.cta0, code: ["st.global [x], 1"]}
  expect: {undefined: false}
- name: DefinedOnly+UB
  source: "docs/format.md#expectations-and-conditions"
""" + _UB + """  expect: {undefined: false}
- name: HangExpected+UB
  source: "docs/cli.md#ptxmc-run (fail: undefined behaviour it did not expect)"
""" + _UB + """  expect: {hang: forbidden}
- name: NoExpectation+UB
  source: "docs/cli.md#ptxmc-run (undefined: no expectations)"
""" + _UB


def test_run_api_and_report_give_the_documented_status(tmp_path):
    """docs/cli.md: `undefined: false` is an expectation (pass when met, fail on UB), and UB in a
    test with any expectation, a hang expectation included, is a fail; `undefined` is for tests
    without expectations. `run` (text and JSON), the API and the report say the same."""
    import json

    from checker.cli import main

    path = tmp_path / "statuses.yaml"
    path.write_text(STATUS_CASES)
    want = {"DefinedOnly": "pass", "DefinedOnly+UB": "fail", "HangExpected+UB": "fail", "NoExpectation+UB": "undefined"}
    assert {r.name: r.status for r in api.run(str(path))} == want
    out = tmp_path / "run.json"
    assert main(["run", str(path), "--format", "json", "-o", str(out)]) == 1
    assert {t["name"]: t["status"] for t in json.loads(out.read_text())["results"]} == want
    assert main(["report", str(path), "--no-blame", "--out", str(tmp_path / "rep")]) == 1
    assert {t["name"]: t["status"] for t in json.loads((tmp_path / "rep" / "report.json").read_text())["tests"]} == want
