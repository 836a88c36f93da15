"""`ptxmc report` and the explanations behind it: the four formats, byte-for-byte determinism,
JUnit structure, atomic writing, the built-in SVG layout, axiom blame and the synchronization a
forbidden outcome needs, hardware classes, and the page in a real headless Chromium."""
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checker.resources import resolve_model
from checker.cli import main
from checker.front.litmus import load_text

SUITE = r"""
- name: MP+rel+acq
  doc: Message passing with a release store and an acquire load, different CTAs.
  source: "PTX ISA, Memory Consistency Model > Release and Acquire Patterns"
  threads:
    P0:
      at: gpu0.cta0
      code:
        - st.weak.global [x], 1
        - st.release.gpu.global [flag], 1
    P1:
      at: gpu0.cta1
      code:
        - ld.acquire.gpu.global r0, [flag]
        - ld.weak.global r1, [x]
  expect:
    forbidden: ['P1:r0=1 /\ P1:r1=0']
    allowed: ['P1:r0=1 /\ P1:r1=1']

- name: MP+fences+${s}
  doc: Fence-based message passing; ${s} scope.
  source: "PTX ISA, Memory Consistency Model > Release and Acquire Patterns"
  threads:
    P0:
      at: gpu0.cta0
      code:
        - st.weak.global [x], 1
        - fence.acq_rel.${s}
        - st.relaxed.${s}.global [flag], 1
    P1:
      at: gpu0.cta1
      code:
        - ld.relaxed.${s}.global r0, [flag]
        - fence.acq_rel.${s}
        - ld.weak.global r1, [x]
  matrix:
    - {s: gpu, expect: {forbidden: ['P1:r0=1 /\ P1:r1=0']}}
    - {s: cta, expect: {allowed: ['P1:r0=1 /\ P1:r1=0']}}

- name: MP+relaxed-wrong-expectation
  doc: Deliberately wrong expectation, so the report has a failing test.
  source: "ptxmc tests"
  threads:
    P0:
      at: gpu0.cta0
      code:
        - st.weak.global [x], 1
        - st.relaxed.gpu.global [flag], 1
    P1:
      at: gpu0.cta1
      code:
        - ld.relaxed.gpu.global r0, [flag]
        - ld.weak.global r1, [x]
  expect:
    forbidden: ['P1:r0=1 /\ P1:r1=0']
"""

BROKEN = """
name: Broken
threads:
  P0: {at: gpu0.cta0, code: ["st.weak.cta.global [x], 1"]}
expect: {allowed: ['x=1']}
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("suite")
    (d / "mp.yaml").write_text(SUITE)
    (d / "zz_broken.yaml").write_text(BROKEN)
    return d


def _report(suite: Path, out: Path, *extra: str) -> int:
    return main(["report", str(suite), "--out", str(out), "--layout", "builtin", *extra])


@pytest.fixture(scope="module")
def report_dir(suite, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reports") / "r1"
    assert _report(suite, out) == 1          # one failing and one malformed test
    return out


def test_all_four_formats_are_written(report_dir):
    names = sorted(p.name for p in report_dir.iterdir())
    assert names == [".ptxmc-output", "index.html", "junit.xml", "report.json", "report.md"]   # + the marker
    html = (report_dir / "index.html").read_text()
    assert 'id="summary"' in html and "<svg" in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")   # self-contained
    assert "https://" not in html
    md = (report_dir / "report.md").read_text()
    assert md.startswith("# ptxmc conformance report") and "## Summary" in md
    assert "MP+fences+cta" in md and "Forbidden" in md


def test_report_is_byte_identical_twice(suite, report_dir, tmp_path):
    again, parallel = tmp_path / "r2", tmp_path / "r3"
    _report(suite, again)
    _report(suite, parallel, "--jobs", "2")
    for f in report_dir.iterdir():
        assert (again / f.name).read_bytes() == f.read_bytes(), f.name
        assert (parallel / f.name).read_bytes() == f.read_bytes(), f.name


def test_json_schema(report_dir, suite):
    doc = json.loads((report_dir / "report.json").read_text())
    assert doc["format"] == "ptxmc-report" and doc["version"] == 1
    assert set(doc) >= {"model", "engine", "inputs", "summary", "tests", "hardware_files", "hardware_only"}
    assert doc["summary"]["tests"] == 5
    assert doc["summary"]["status"] == {"pass": 3, "fail": 1, "error": 1}
    tests = {t["name"]: t for t in doc["tests"]}
    mp = tests["MP+rel+acq"]
    assert mp["path"].endswith("mp.yaml") and "time" not in mp
    assert mp["formula"] and mp["hash"] and len(mp["witnesses"]) == len(mp["outcomes"])
    (forb,) = mp["forbidden"]
    assert forb["blame"] == [["Causality"]]
    assert forb["violations"][0]["axiom"] == "Causality"
    assert [s["rel"] for s in forb["violations"][0]["path"]] == ["fr", "cause"]
    assert mp["conditions"][0]["blame"] == [["Causality"]]
    assert tests["MP+fences+cta"]["matrix_row"] == {"s": "cta"}


def test_junit_validates(report_dir):
    root = ET.parse(report_dir / "junit.xml").getroot()
    _check_junit_shape(root)
    cases = root.findall("./testsuite/testcase")
    # one testcase per test and per matrix row (MP+fences has two rows), the malformed file included
    assert sorted(c.get("name") for c in cases) == sorted(
        ["MP+rel+acq", "MP+fences+gpu", "MP+fences+cta", "MP+relaxed-wrong-expectation", "zz_broken.yaml:4"])
    by_name = {c.get("name"): c for c in cases}
    assert by_name["MP+relaxed-wrong-expectation"].find("failure") is not None
    assert by_name["zz_broken.yaml:4"].find("error") is not None
    assert by_name["MP+rel+acq"].find("failure") is None
    assert root.get("failures") == "1" and root.get("errors") == "1" and root.get("tests") == "5"


def _check_junit_shape(root):
    """The shape the common JUnit XSD (Ant/Jenkins junit-10) requires."""
    assert root.tag == "testsuites"
    for suite in root:
        assert suite.tag == "testsuite"
        assert suite.get("name") and suite.get("tests") is not None
        for k in ("tests", "failures", "errors", "skipped"):
            if suite.get(k) is not None:
                assert int(suite.get(k)) >= 0
        float(suite.get("time", "0"))
        assert int(suite.get("tests")) == len(suite.findall("testcase"))
        for case in suite:
            assert case.tag in ("testcase", "properties", "system-out", "system-err")
            if case.tag != "testcase":
                continue
            assert case.get("name") and case.get("classname") is not None
            float(case.get("time", "0"))
            for child in case:
                assert child.tag in ("skipped", "error", "failure", "system-out", "system-err")
                if child.tag in ("error", "failure"):
                    assert child.get("message") is not None


def test_html_shows_verdicts_blame_and_needed_sync(report_dir):
    html = (report_dir / "index.html").read_text()
    for word in ("Allowed", "Forbidden", "Ok", "No", "Error", "Positive / Negative", "Formula"):
        assert word in html
    assert "Ruled out by: <b>Causality</b>" in html
    assert "weakening st.release.gpu.global [flag], 1 to st.relaxed.gpu.global [flag], 1" in html
    assert "removing fence.acq_rel.gpu" in html
    ET.fromstring(html.split("<figure>", 1)[1].split("<figcaption>", 1)[0])   # inline SVG is XML


def test_write_is_atomic_on_crash(suite, tmp_path, monkeypatch):
    import checker.report.build as build

    out = tmp_path / "crash"
    real = Path.write_text
    calls = []

    def flaky(self, *a, **k):
        calls.append(self)
        if len(calls) == 2:
            raise KeyboardInterrupt("simulated Ctrl-C mid-write")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", flaky)
    with pytest.raises(KeyboardInterrupt):
        build.write_tree(out, {"a.txt": "1", "b.txt": "2", "c.txt": "3"})
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []                       # no temporary folder left
    monkeypatch.setattr(Path, "write_text", real)
    build.write_tree(out, {"a.txt": "old"})
    calls.clear()
    monkeypatch.setattr(Path, "write_text", flaky)
    with pytest.raises(KeyboardInterrupt):
        build.write_tree(out, {"a.txt": "new", "b.txt": "new"})
    monkeypatch.setattr(Path, "write_text", real)
    assert sorted(p.name for p in out.iterdir()) == [".ptxmc-output", "a.txt"] and (out / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crash"]


def test_report_command_crash_leaves_no_partial_folder(suite, tmp_path, monkeypatch):
    import checker.report.markdown as markdown

    def boom(_report):
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(markdown, "render", boom)
    out = tmp_path / "partial"
    assert _report(suite, out) == 2                             # internal error
    assert list(tmp_path.iterdir()) == []


def _graph(name="MP+rel+acq"):
    from checker.engines.smt import Z3Engine
    from checker.engines.base import concrete_evaluation
    from checker.isa.registry import lower
    from checker.results.witness import graph

    t = next(t for t in load_text(SUITE, "mp.yaml") if t.name == name)
    model = resolve_model(None)
    es = lower(t)
    ex = Z3Engine(es, model).satisfiable()
    ev = concrete_evaluation(es, model, ex)
    return graph(es, ex, dict(ev.env), f"{name}: witness", {th.name: th.position for th in t.threads},
                 highlight=[(2, "cause", 5)])


def test_builtin_svg_is_valid_xml():
    from checker.report.svg import builtin, legend

    g = _graph()
    for svg in (builtin(g), builtin(g, standalone=True), legend()):
        root = ET.fromstring(svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert float(root.get("width")) > 0 and float(root.get("height")) > 0
    root = ET.fromstring(builtin(g))
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}rect")) == len(g.nodes)
    texts = "".join(t.text or "" for t in root.iter(f"{ns}text"))
    assert "P0" in texts and "gpu0.cta1.warp0" in texts and "generic" in texts and ".gpu" in texts
    assert any("hl" in (e.get("class") or "") for e in root.iter(f"{ns}path"))
    assert builtin(g) == builtin(g)


def test_dot_export_has_columns_and_edges():
    from checker.results.witness import graph_dot

    text = graph_dot(_graph())
    assert text.startswith("digraph execution {") and 'subgraph "cluster_P0"' in text
    assert 'label="rf", color="red"' in text and "penwidth=3" in text


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_graphviz_svg_when_installed():
    from checker.report.svg import render

    svg = render(_graph(), "graphviz")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and ' id="' not in svg


def test_blame_lists_the_release_and_the_acquire():
    from checker.verdict.mutate import effects, needed
    from checker.verdict.session import Session

    t = next(t for t in load_text(SUITE, "mp.yaml") if t.name == "MP+rel+acq")
    effs = effects(Session(t, resolve_model(None)), t.expectations[0].cond)
    got = {(e.mutation.thread, e.mutation.original, e.mutation.replacement) for e in needed(effs)}
    assert got == {("P0", "st.release.gpu.global [flag], 1", "st.relaxed.gpu.global [flag], 1"),
                   ("P1", "ld.acquire.gpu.global r0, [flag]", "ld.relaxed.gpu.global r0, [flag]")}
    fences = next(t for t in load_text(SUITE, "mp.yaml") if t.name == "MP+fences+gpu")
    effs = effects(Session(fences, resolve_model(None)), fences.expectations[0].cond)
    dropped = {(e.mutation.thread, e.mutation.original) for e in needed(effs) if e.mutation.action == "drop"}
    assert dropped == {("P0", "fence.acq_rel.gpu"), ("P1", "fence.acq_rel.gpu")}


def test_check_explains_forbidden_with_cycle_and_needed_sync(suite, capsys):
    assert main(["check", f"{suite / 'mp.yaml'}::MP+rel+acq", "P1:r0=1 /\\ P1:r1=0"]) == 0
    out = capsys.readouterr().out
    assert "Forbidden" in out and "ruled out by: Causality" in out
    assert "-fr->" in out and "-cause->" in out
    assert "weakening st.release.gpu.global [flag], 1" in out
    assert "weakening ld.acquire.gpu.global r0, [flag]" in out


def test_undefined_behaviour_gets_a_badge_and_a_picture(tmp_path):
    model = tmp_path / "racy.cat"
    model.write_text('"test model with a flag"\nlet fr = (rf^-1; co) \\ id\n'
                     "flag ~empty (((W * W) & loc) \\ (id | sthd)) as Race\n"
                     "acyclic (po | rf | co | fr) as SC\n")
    (tmp_path / "t.yaml").write_text(
        "name: Racy\nsource: tests\nexpect: {undefined: true}\nthreads:\n"
        "  P0: {at: gpu0.cta0, code: ['st.weak.global [x], 1']}\n"
        "  P1: {at: gpu0.cta1, code: ['st.weak.global [x], 2']}\n")
    out = tmp_path / "rep"
    rc = main(["report", str(tmp_path / "t.yaml"), "--out", str(out), "--layout", "builtin",
               "--model", str(model)])
    assert rc == 0
    html = (out / "index.html").read_text()
    assert "b-undefined" in html and "<svg" in html
    doc = json.loads((out / "report.json").read_text())
    assert doc["tests"][0]["undefined"][0]["flag"] == "Race"
    assert doc["tests"][0]["undefined_witness"]["edges"]


def _histogram(test: str, counts, vars_=("P1:r0", "P1:r1")) -> dict:
    return {"format": "ptxmc-histogram", "version": 1, "test": test, "vars": list(vars_),
            "counts": [{"outcome": dict(zip(vars_, o)), "count": n} for o, n in counts],
            "device": "Fake GPU", "iterations": 1000}


def test_hardware_histograms_give_violation_and_gap_classes(suite, tmp_path):
    hw = tmp_path / "hw.json"
    hw.write_text(json.dumps([
        _histogram("MP+rel+acq", [((0, 0), 500), ((1, 1), 400), ((1, 0), 3)]),    # forbidden seen
        _histogram("MP+fences+cta", [((0, 0), 900), ((1, 1), 100)]),               # (1,0) never seen
    ]))
    out = tmp_path / "rep"
    assert main(["report", str(suite / "mp.yaml"), "--hw", str(hw), "--out", str(out), "--layout", "builtin"]) == 1
    doc = json.loads((out / "report.json").read_text())
    tests = {t["name"]: t for t in doc["tests"]}
    assert tests["MP+rel+acq"]["hardware"]["verdict"] == "violation"
    assert tests["MP+rel+acq"]["hardware"]["violations"] == [{"outcome": {"P1:r0": 1, "P1:r1": 0}, "count": 3}]
    assert tests["MP+fences+cta"]["hardware"]["verdict"] == "gap"
    assert doc["summary"]["hardware"] == {"gap": 1, "violation": 1}
    html = (out / "index.html").read_text()
    assert "b-violation" in html and "coverage gap" in html
    root = ET.parse(out / "junit.xml").getroot()
    _check_junit_shape(root)
    hw_suite = root.find("./testsuite[@name='ptxmc.hardware']")
    assert hw_suite is not None and hw_suite.get("failures") == "1"


def test_chromium_loads_the_report(report_dir, tmp_path):
    from checker.report import browser

    if browser.find() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    dom, log = browser.dump_dom(report_dir / "index.html")
    assert 'data-ready="1"' in dom, log[-2000:]
    html_tag = dom[dom.index("<html"):dom.index(">", dom.index("<html"))]
    assert "data-js-error" not in html_tag, html_tag
    assert 'id="summary"' in dom and "<svg" in dom
    assert "Uncaught" not in log, log[-2000:]
    shot = tmp_path / "report.png"
    browser.screenshot(report_dir / "index.html", shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000


def test_minimal_axiom_sets_match_the_engine():
    from checker.engines.smt import Z3Engine
    from checker.isa.registry import lower
    from checker.verdict.blame import _by_size, blame, minimal_sets

    truth = [("A", "C"), ("B",), ("C", "D", "E")]
    names = ("A", "B", "C", "D", "E", "F")
    asked = []

    def forbids(s):
        asked.append(s)
        return any(set(m) <= set(s) for m in truth)
    assert minimal_sets(names, forbids) == [("B",), ("A", "C"), ("C", "D", "E")]
    assert len(asked) < 2 ** len(names)
    corr = load_text("""
name: CoRR
threads:
  P0: {at: gpu0.cta0, code: ["st.relaxed.gpu.global [x], 1"]}
  P1: {at: gpu0.cta1, code: ["ld.relaxed.gpu.global r0, [x]", "ld.relaxed.gpu.global r1, [x]"]}
expect: {forbidden: ['P1:r0=1 /\\ P1:r1=0']}
""")[0]
    es = lower(corr)
    eng = Z3Engine(es, resolve_model(None))
    cond = corr.expectations[0].cond
    assert blame(eng, cond) == _by_size(eng, cond) and len(blame(eng, cond)) >= 2


def test_hangs_on_hardware_fail_the_report_only_where_the_model_forbids_them(tmp_path):
    """A spin that gave up (the harness's `hang` bucket) is a witness where the model allows a
    hang, and a failure ('hangs', red, a JUnit failure) where it forbids one; the report passes the
    model's hang verdicts to the comparison as `ptxmc hw compare` does."""
    src = tmp_path / "spin.yaml"
    text = ("- name: Spin+${n}\n  source: tests\n  threads:\n"
            "    P0: {at: gpu0.cta0, code: ['${st}']}\n"
            "    P1: {at: gpu0.cta1, code: ['L:', 'ld.relaxed.gpu.global r0, [x]', 'setp.ne.s32 p, r0, 1',"
            " '@p bra L']}\n"
            "  matrix:\n"
            "    - {n: never-set, st: 'st.relaxed.gpu.global [y], 1', expect: {hang: allowed}}\n"
            "    - {n: set, st: 'st.relaxed.gpu.global [x], 1', expect: {hang: forbidden}}\n")
    src.write_text(text)
    hw = tmp_path / "hw.json"
    hists = [dict(_histogram("Spin+never-set", [], ("P1:p", "P1:r0", "x", "y")), hang=1000),   # every one gave up
             dict(_histogram("Spin+set", [((0, 1, 1), 400)], ("P1:p", "P1:r0", "x")), hang=600)]
    hw.write_text(json.dumps(hists))
    out = tmp_path / "rep"
    assert main(["report", str(src), "--hw", str(hw), "--out", str(out), "--layout", "builtin"]) == 1
    doc = json.loads((out / "report.json").read_text())
    verdicts = {t["name"]: t["hardware"]["verdict"] for t in doc["tests"]}
    assert verdicts == {"Spin+never-set": "ok", "Spin+set": "hangs"}
    assert "b-hangs" in (out / "index.html").read_text()
    hw_suite = ET.parse(out / "junit.xml").getroot().find("./testsuite[@name='ptxmc.hardware']")
    assert hw_suite.get("failures") == "1"


def test_report_explains_forbidden_conditions_of_control_flow_tests():
    # a spin loop is asked over its variants (a UnionSession): the report explains its forbidden
    # condition with the same explainer as `ptxmc check` (was: "forbidden conditions are not explained")
    from checker.report.analyze import analyze

    path = "litmus/liveness/flag-polling.yaml"
    t = next(t for t in load_text(Path(path).read_text(), path) if t.name == "Poll+rel.gpu+acq.gpu")
    rep = analyze(t, resolve_model(None), "ptx", layout="builtin", path=path)
    (f,) = rep.forbidden
    assert f.condition == "P1:r1=0" and f.blame == (("Causality",),)
    assert {v.axiom for v in f.violations} == {"Causality"}
    assert any("weakening ld.acquire.gpu.global r0, [flag]" in e.mutation.describe() for e in f.needed)
    assert f.picture is not None and "[P0: straight through; P1: line 22" in f.picture.caption, f.picture.caption
    assert "not explained" not in rep.note
