"""The Python API (checker.api, docs/api.md): the examples of docs/api.md and of the module's
docstrings run as doctests; the API gives the answers the command line prints (the same text,
the same JSON); `import checker` imports nothing heavy; bad input raises typed errors."""
from __future__ import annotations

import doctest
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import checker
from checker import api, limits
from checker.errors import LimitExceeded, LitmusError, ModelError

ROOT = Path(__file__).resolve().parents[2]
MP = "litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster"
COND = "P1:r0=1 /\\ P1:r1=0"


def _cli(*argv: str) -> tuple[int, str]:
    from checker.cli import main

    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(list(argv))
    return code, buf.getvalue()


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Run from an unrelated folder: bundled `litmus/...` paths must still resolve."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_docs_api_examples_run(elsewhere):
    failed, attempted = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False,
                                         optionflags=doctest.NORMALIZE_WHITESPACE)
    assert attempted > 30 and failed == 0


def test_module_docstring_examples_run(elsewhere):
    failed, attempted = doctest.testmod(api, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert attempted > 10 and failed == 0


def test_package_reexports_the_api_lazily():
    assert checker.check is api.check and checker.run is api.run and checker.load_test is api.load_test
    assert {"load", "check", "explain", "outcomes", "run"} <= set(dir(checker))
    with pytest.raises(AttributeError):
        checker.no_such_thing  # noqa: B018
    code = ("import sys, checker; print(sorted(m for m in sys.modules if m.startswith('checker'))); "
            "print(sorted(m for m in ('z3', 'yaml', 'lark', 'sympy', 'multiprocessing') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.splitlines() == ["['checker', 'checker.version']", "[]"], r.stderr


def test_explain_is_what_check_prints():
    code, out = _cli("check", MP, COND)
    assert code == 0 and out == api.explain(MP, COND)
    golden = (ROOT / "tests" / "golden" / "check-mp-forbidden.expected").read_text()
    assert golden == out + "[exit 0]\n"


def test_check_asks_the_hang_question_the_cli_asks(tmp_path):
    """`checker.check(test, "hang")` answers what `ptxmc check FILE::NAME hang` and `explain`
    answer (it raised a parse error: 'hang' is not a condition)."""
    bar = "litmus/liveness/barriers.yaml::BarCount+count"
    ub = tmp_path / "ub.yaml"
    ub.write_text('name: UB\nsource: "docs/cli.md"\nmemory: {mb: {space: shared, owner: gpu0.cta0}}\n'
                  'threads:\n  P0: {at: gpu0.cta0, code: ["mbarrier.arrive.shared::cta.b64 _, [mb]"]}\n')
    for spec, status in [(bar + "3", "allowed"), (bar + "2", "forbidden"), (str(ub), "undefined")]:
        x = checker.check(spec, "hang")
        code, out = _cli("check", spec, "hang")
        assert (x.status, x.cond) == (status, None), spec
        assert out == api.explain(spec, "hang") and out.splitlines()[3].lower().startswith(status), out
    x = checker.check(bar + "3", "hang")
    assert [h.thread for h in x.hangs] == ["P0"] and x.hang is x.hangs[0] and x.execution is not None
    assert checker.check(str(ub), "hang").flag == "MbarrierUninitialised"


@pytest.mark.parametrize("name", ["Multicast+mask-excludes-cta1", "Multicast+mask-excludes-named-cta"])
def test_outcomes_shows_every_observable_run_shows(name):
    # `outcomes` left out s1 (declared, named by the test's condition, never written) while `run`
    # listed it: each outcome `run` shows must be an outcome `outcomes` shows, projected
    spec = f"litmus/async/multicast.yaml::{name}"
    ran = checker.run([str(ROOT / "litmus/async/multicast.yaml")], jobs=0)
    [r] = [x for x in ran if x.name == name]
    o = api.outcomes(spec)
    assert set(r.observe) <= set(o.observe), (r.observe, o.observe)
    assert {tuple((k, v) for k, v in out if k in r.observe) for out in o.outcomes} == set(r.outcomes)


@pytest.mark.parametrize("spec", ["litmus/async/multicast.yaml::Multicast+mask-excludes-cta1", MP])
def test_outcomes_lowers_a_test_with_conditions_once(spec, monkeypatch):
    # showing a condition's names beside the default observables opened the test twice (two
    # lowerings) where one answers both: the default observables are the lowering's own
    import checker.verdict.session as session

    calls = []
    real = session.lower
    monkeypatch.setattr(session, "lower", lambda v: calls.append(v) or real(v))
    o = api.outcomes(spec)
    assert o.status == "run" and len(calls) == 1, (o.status, len(calls))


def test_outcomes_is_the_result_outcomes_prints():
    r = api.outcomes("litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster")
    from checker.results.result import outcome_text

    code, out = _cli("outcomes", "litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster")
    assert code == 0 and out.splitlines()[2:2 + len(r.outcomes)] == [outcome_text(o) for o in r.outcomes]
    assert r.conditions == () and r.status == "run"


def test_run_gives_the_results_the_json_output_serializes():
    from checker.results.output import FORMATS

    results = api.run("litmus/core/CoWR.yaml", jobs=0)
    code, out = _cli("run", "--format", "json", "--no-timing", "--jobs", "0", "litmus/core/CoWR.yaml")
    assert code == 0 and json.loads(out) == json.loads(FORMATS["json"](results, timing=False))


def test_run_reports_malformed_tests_as_error_results(tmp_path):
    good = (ROOT / "litmus" / "core" / "CoWW.yaml").read_text()
    (tmp_path / "a.yaml").write_text(good)
    (tmp_path / "b.yaml").write_text("name: B\nsource: x\nthreads:\n  P0: {at: gpu0.cta0, code: ['frob [x]']}\n")
    results = api.run([tmp_path], jobs=0)
    errors = [r for r in results if r.status == "error"]
    assert len(errors) == 1 and "b.yaml" in errors[0].path and "frob" in errors[0].message
    assert all(r.status == "pass" for r in results if r not in errors)


def test_load_forms_and_errors(elsewhere):
    one = api.load(MP)
    assert [t.name for t in one] == ["MP+rel.gpu+acq.gpu+sameCluster"]
    assert api.load_test(one[0]) is one[0]
    assert len(api.load("litmus/core")) > 100
    with pytest.raises(LitmusError, match="no such file or folder: nowhere.yaml"):
        api.load("nowhere.yaml")
    with pytest.raises(LitmusError, match="no test named 'Nope'"):
        api.load_test("litmus/core/MP.yaml::Nope")
    with pytest.raises(LitmusError, match="holds .* tests"):
        api.load_test("litmus/core/MP.yaml")
    with pytest.raises(LitmusError) as e:
        api.load("name: X\nsource: y\nthreads:\n  P0: {at: nowhere, code: []}\n")
    assert e.value.where is not None and e.value.where.line == 4


def test_model_engine_options_and_limits_are_honoured(elsewhere):
    test = api.load_test(MP)
    relaxed = api.load_test("litmus/core/MP.yaml::MP+rel.cta+acq.cta+sameCluster")
    assert api.check(relaxed, COND).status == "allowed"
    assert api.check(relaxed, COND, model="sc").status == "forbidden"
    from checker.resources import resolve_model

    assert api.check(relaxed, COND, model=resolve_model("sc")).status == "forbidden"
    assert api.check(test, COND, engine="brute").status == "forbidden"
    with pytest.raises(ModelError):
        api.check(test, COND, model="no-such-model")
    before = limits.current()
    with pytest.raises(LimitExceeded):
        api.check(test, COND, limits=limits.DEFAULT.override(["events=4"]))
    assert limits.current() == before                      # the limits were restored
    r = api.outcomes(test, limits=limits.DEFAULT.override(["events=4"]))
    assert r.status == "unknown" and "events" in r.message


def test_load_test_by_name_builds_only_what_can_match(tmp_path):
    """FILE::NAME builds only the entries whose `name:` (placeholders standing for any text) can
    be NAME; the test it returns is the one a full load gives, matrix rows included."""
    from checker.front.litmus import load_file

    for f in sorted((ROOT / "litmus").rglob("*.yaml")):
        tests = [t for t in load_file(f) if not isinstance(t, LitmusError)]
        for t in {tests[0].name: tests[0], tests[-1].name: tests[-1]}.values():
            assert api.load_test(f"{f}::{t.name}") == t
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "- name: Good\n  source: x\n  threads:\n    P0: {at: gpu0.cta0, code: ['st.weak.global [x], 1']}\n"
        "- name: Bad\n  source: x\n  threads:\n    P0: {at: gpu0.cta0, code: ['frob [x]']}\n"
        "- name: M+${v}\n  source: x\n  threads:\n    P0: {at: gpu0.cta0, code: ['st.weak.global [x], ${v}']}\n"
        "  matrix: [{v: 1}, {v: 2}]\n")
    assert len(load_file(suite, "Good")) == 1                  # Bad and the matrix are not built
    assert api.load_test(f"{suite}::Good").name == "Good"
    assert api.load_test(f"{suite}::M+2").threads[0].code[0].text == "st.weak.global [x], 2"
    with pytest.raises(LitmusError, match="frob"):
        api.load_test(f"{suite}::Bad")


def test_the_json_document_is_made_one_result_at_a_time_with_the_same_text():
    """output.to_json joins per-result texts (a campaign's results never all held as dictionaries):
    byte for byte what json.dumps of the whole document gives, for messages with newlines,
    quotes and non-ASCII text too."""
    from checker import LITMUS_DIR
    from checker.batch import run_tests
    from checker.front.litmus import load_paths
    from checker.results.output import JSON_SCHEMA_VERSION, result_dict, to_json
    from checker.results.result import Result

    items = load_paths([str(Path(LITMUS_DIR) / "core" / "MP.yaml")])
    results = run_tests(items, None, (), "z3", jobs=0)
    results.append(Result(name='odd "name"\nline', path="x.yaml", status="error", message="é\t\\ ✓"))
    for some in (results, results[:1], []):
        for timing in (True, False):
            doc = {"schema": JSON_SCHEMA_VERSION, "tool": "ptxmc",
                   "results": [result_dict(r, timing) for r in some]}
            assert to_json(some, timing) == json.dumps(doc, indent=2, sort_keys=True) + "\n"
