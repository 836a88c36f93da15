"""Hardware harness results, on synthetic data: program output parsing, histogram JSON round trip,
the litmus7 printer, `compare` verdict classes, and the `ptxmc hw import|compare|run` commands."""
from __future__ import annotations

import json

import pytest

from checker.cli import main
from checker.errors import HarnessError
from checker.harness import histogram, litmus7
from checker.harness.compare import compare, compare_one, exit_code, render, rule_of_three
from checker.harness.controls import build_test
from checker.harness.histogram import Histogram, make, parse_output
from checker.harness.space import outcome_space

MP = build_test(
    "MP+rel+acq",
    {"P0": ("gpu0.cta0", ["st.weak.global [x], 1", "st.release.gpu.global [flag], 1"]),
     "P1": ("gpu0.cta1", ["ld.acquire.gpu.global r0, [flag]", "ld.weak.global r1, [x]"])},
    forbidden=["P1:r0=1 /\\ P1:r1=0"], allowed=["P1:r0=0 /\\ P1:r1=0"])
VARS = ("P1:r0", "P1:r1")


def o(r0, r1):
    return (("P1:r0", r0), ("P1:r1", r1))


# The model's view of MP: every outcome but the weak one is allowed.
MODEL = {o(0, 0): "allowed", o(0, 1): "allowed", o(1, 1): "allowed", o(1, 0): "forbidden"}

META = dict(device="NVIDIA H100 80GB HBM3", compute_capability="9.0", driver="12080", cuda="13000",
            target="sm_90a", config={"name": "h100", "testing_groups": 528}, seed=7, iterations=10, time_s=2.5)


def hist(counts, **kw) -> Histogram:
    return make("MP+rel+acq", VARS, counts, **{**META, **kw})


OUTPUT = """\
some driver chatter
ptxmc-hw 1
test MP+rel+acq
device NVIDIA H100 80GB HBM3
cc 9.0
sms 132
driver 12080
runtime 13000
seed 7
iterations 10
instances 1000
testing_ctas 1056
time 2.500
bucket 0 600
bucket 3 390
other 0
timeout 10
end
"""


# -- program output and JSON -----------------------------------------------------------------

def test_parse_program_output_decodes_buckets():
    h = parse_output(OUTPUT, outcome_space(MP), "sm_90a", {"name": "h100"})
    assert h.counts == ((o(0, 0), 600), (o(1, 1), 390))
    assert (h.timeout, h.other, h.total, h.valid) == (10, 0, 1000, 990)
    assert (h.device, h.compute_capability, h.driver, h.cuda, h.seed, h.iterations) == \
        ("NVIDIA H100 80GB HBM3", "9.0", "12080", "13000", 7, 10)
    assert h.time_s == 2.5 and h.target == "sm_90a"


@pytest.mark.parametrize("text,msg", [
    ("error kernel.cu:12 out of memory\n", "no result block: error kernel.cu:12 out of memory"),
    ("ptxmc-hw 1\nbucket 0 5\n", "truncated"),
    ("ptxmc-hw 1\nbucket 9 5\nend\n", "outside the outcome space"),
])
def test_parse_program_output_errors(text, msg):
    with pytest.raises(HarnessError, match=msg):
        parse_output(text, outcome_space(MP))


def test_histogram_json_round_trip(tmp_path):
    h = hist([(o(0, 0), 5), (o(1, 1), 3), (o(0, 0), 2), (o(0, 1), 0)], other=1, timeout=4)
    assert h.counts == ((o(0, 0), 7), (o(1, 1), 3))           # merged, zero dropped, sorted
    back = Histogram.from_json(json.loads(json.dumps(h.to_json())))
    assert back == h and back.config == h.config
    path = tmp_path / "h.json"
    histogram.save([h], path)
    assert histogram.load(path) == [h]
    histogram.save([h, h], path)
    assert histogram.load(path) == [h, h]
    assert json.loads(path.read_text())[0]["instances"] == 15


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d.update(format="other"), "not a ptxmc histogram"),
    (lambda d: d.update(version=99), "version 99"),
    (lambda d: d["counts"][0]["outcome"].pop("P1:r1"), "an outcome names"),
    (lambda d: d["counts"][0].update(count="many"), "must be a non-negative integer"),
    (lambda d: d.pop("vars"), "malformed histogram"),
])
def test_histogram_json_errors(mutate, msg):
    data = hist([(o(0, 0), 5)]).to_json()
    mutate(data)
    with pytest.raises(HarnessError, match=msg):
        Histogram.from_json(data, "h.json")


def test_load_errors(tmp_path):
    with pytest.raises(HarnessError, match="cannot read"):
        histogram.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(HarnessError, match="not JSON"):
        histogram.load(tmp_path / "bad.json")


# -- litmus7 printer -----------------------------------------------------------------------------

def test_litmus7_log_one_block_per_test_like_the_herd_log():
    """D15: one block per test under the test's own name (the herd log's pairing), registers named
    1:r0 as litmus7 does, a Hash= line; the conditions repeat their lines as in the herd log."""
    h = hist([(o(0, 0), 96), (o(1, 0), 4), (o(1, 1), 900)], timeout=2)
    text = litmus7.log([h], {MP.name: MP})
    assert text.count("Test ") == 1 and "#2" not in text
    lines = text.splitlines()
    assert lines[:5] == [
        "Test MP+rel+acq Allowed",           # the first condition's kind, as in the herd log
        "Histogram (3 states)",
        "96    *>1:r0=0; 1:r1=0;",           # '*': satisfies the first condition
        "4     :>1:r0=1; 1:r1=0;",
        "900   :>1:r0=1; 1:r1=1;",
    ]
    assert "\nNo\n\nWitnesses\nPositive: 996, Negative: 4\n" in text
    assert "Condition ~exists (1:r0=1 /\\ 1:r1=0) is NOT validated" in text
    assert "Observation MP+rel+acq Sometimes 4 996" in text
    assert "\nOk\n\nWitnesses\nPositive: 96, Negative: 904\n" in text
    assert "Condition exists (1:r0=0 /\\ 1:r1=0) is validated" in text
    assert "Time MP+rel+acq 2.50" in text and "Other 0, Timeout 2, Epilogue 0" in text
    from checker.harness.space import fingerprint
    assert f"Hash={fingerprint(MP)}" in text
    # the same test names and block order as the model's herd log
    from checker.resources import resolve_model
    from checker.verdict.check import check_test
    from checker.results.output import herd
    herd_log = herd([check_test(MP, resolve_model(None))])
    assert [l.split()[1] for l in herd_log.splitlines() if l.startswith("Test ")] == ["MP+rel+acq"]
    assert herd_log.splitlines()[0] == lines[0]


def test_litmus7_never_and_always():
    h = hist([(o(1, 1), 10)])
    text = litmus7.log([h], {MP.name: MP})
    assert "Observation MP+rel+acq Never 0 10" in text
    assert "\nOk\n" in text and "~exists (1:r0=1 /\\ 1:r1=0) is validated" in text
    only = make("X", ("x",), [((("x", 1),), 5)])
    assert "Observation X Never 0 5" in litmus7.log([only])      # no test known: no condition lines


def test_litmus7_log_reads_back():
    """D15: litmus7 logs (ours, or litmus7's own naming) import as histograms."""
    from checker.harness.space import fingerprint
    h = hist([(o(0, 0), 96), (o(1, 1), 900)], timeout=2, fingerprint=fingerprint(MP))
    (back,) = litmus7.parse_log(litmus7.log([h], {MP.name: MP}), {MP.name: MP})
    assert back.counts == h.counts and back.timeout == 2 and back.fingerprint == h.fingerprint
    assert (back.device, back.target, back.time_s, back.iterations, back.seed) == (h.device, "sm_90a", 2.5, 10, 7)
    theirs = ("Test MP+rel+acq Allowed\nHistogram (2 states)\n5     *>1:r0=1; 1:r1=0; [x]=1; flag=1;\n"
              "995   :>1:r0=1; 1:r1=1; [x]=1; flag=1;\nOk\nHash=d41d8cd98f00b204e9800998ecf8427e\n"
              "Observation MP+rel+acq Sometimes 5 995\nTime MP+rel+acq 0.11\n")
    (lt,) = litmus7.parse_log(theirs, {MP.name: MP})
    assert lt.counts == ((o(1, 0), 5), (o(1, 1), 995)) and lt.fingerprint == "" and lt.time_s == 0.11
    assert compare_one(lt, MODEL, MP).verdict == "violation"
    with pytest.raises(HarnessError, match="missing"):
        litmus7.parse_log("Test MP+rel+acq Allowed\n5 *>1:r0=1;\n", {MP.name: MP})
    with pytest.raises(HarnessError, match="not a litmus7 log"):
        litmus7.parse_log("hello\n")


# -- compare ---------------------------------------------------------------------------------------

def test_rule_of_three():
    assert rule_of_three(0) is None
    assert rule_of_three(3000) == pytest.approx(0.001)


def test_compare_ok_when_every_allowed_outcome_is_seen_and_nothing_forbidden():
    c = compare_one(hist([(o(0, 0), 1), (o(0, 1), 2), (o(1, 1), 3)]), MODEL, MP)
    assert c.verdict == "ok" and not c.violations and not c.gaps
    assert [(e.kind, e.status) for e in c.expectations] == [("allowed", "ok"), ("forbidden", "ok")]


def test_compare_violation_when_a_forbidden_outcome_is_observed():
    c = compare_one(hist([(o(0, 0), 10), (o(1, 0), 2), (o(0, 1), 1), (o(1, 1), 7)]), MODEL, MP)
    assert c.verdict == "violation"
    assert c.violations == ((o(1, 0), 2),)
    assert [(e.kind, e.observed, e.status) for e in c.expectations] == [("allowed", 10, "ok"), ("forbidden", 2, "violation")]


def test_compare_gap_reports_n_and_bound():
    c = compare_one(hist([(o(0, 0), 1000), (o(1, 1), 2000)]), MODEL, MP)
    assert c.verdict == "gap"
    assert c.gaps == (o(0, 1),) and c.n == 3000 and c.bound == pytest.approx(0.001)
    assert "1 allowed outcome(s) unseen (each < 0.001 at 95%)" in c.summary()


def test_compare_unlisted_outcome_is_forbidden_when_the_model_is_complete():
    model = {o(0, 0): "allowed", o(1, 1): "allowed"}
    c = compare_one(hist([(o(0, 0), 5), (o(0, 1), 1), (o(1, 1), 5)]), model)
    assert c.verdict == "violation" and c.violations == ((o(0, 1), 1),)
    c = compare_one(hist([(o(0, 0), 5), (o(0, 1), 1), (o(1, 1), 5)]), model, complete=False)
    assert c.verdict == "ok"


def test_compare_harness_error_when_other_is_not_zero():
    c = compare_one(hist([(o(0, 0), 1), (o(0, 1), 1), (o(1, 1), 1)], other=1), MODEL, MP)
    assert c.verdict == "harness-error"


def test_compare_no_data():
    assert compare_one(hist([], timeout=50), MODEL, MP).verdict == "no-data"


def test_compare_projects_a_wider_model_outcome_onto_the_histogram():
    wide = {tuple(list(k) + [("x", 1)]): v for k, v in MODEL.items()}
    assert compare_one(hist([(o(1, 0), 1)]), wide).verdict == "violation"


def test_compare_without_model_uses_expectations():
    assert compare_one(hist([(o(1, 0), 1), (o(0, 0), 1)]), None, MP).verdict == "violation"
    assert compare_one(hist([(o(1, 1), 1)]), None, MP).verdict == "gap"
    assert compare_one(hist([(o(1, 1), 1), (o(0, 0), 1)]), None, MP).verdict == "ok"


def test_compare_positive_controls():
    ctrl = build_test("CTRL+x", {"P0": ("gpu0.cta0", ["ld.global r0, [x]"])}, allowed=["P0:r0=0"],
                      doc="Positive control: ...")
    seen = make("CTRL+x", ("P0:r0",), [((("P0:r0", 0),), 3), ((("P0:r0", 1),), 97)])
    unseen = make("CTRL+x", ("P0:r0",), [((("P0:r0", 1),), 100)])
    assert compare_one(seen, None, ctrl).verdict == "control-seen"
    assert compare_one(unseen, None, ctrl).verdict == "control-unseen"
    assert exit_code([compare_one(unseen, None, ctrl)]) == 1


def test_compare_merges_runs_and_renders():
    a = hist([(o(0, 0), 1), (o(1, 1), 1)], iterations=1, time_s=1.0)
    b = hist([(o(0, 1), 2), (o(1, 1), 1)], iterations=2, time_s=2.0)
    (c,) = compare([a, b], {"MP+rel+acq": MODEL}, {"MP+rel+acq": MP})
    assert c.verdict == "ok" and c.n == 5
    text = render([c, compare_one(hist([(o(1, 0), 1)]), MODEL, MP)])
    assert "MP+rel+acq: OK, N=5" in text
    assert "forbidden but observed 1x: P1:r0=1 /\\ P1:r1=0" in text
    assert text.splitlines()[-1] == "Summary: ok 1, violation 1"
    with pytest.raises(HarnessError, match="cannot merge"):
        compare([a, make("MP+rel+acq", ("P1:r0",), [], **META)], {})


def test_compare_rejects_bad_model_verdicts():
    with pytest.raises(HarnessError, match="model verdict"):
        compare_one(hist([(o(0, 0), 1)]), {o(0, 0): "maybe"})


# -- command line ------------------------------------------------------------------------------

MP_YAML = """\
name: MP+rel+acq
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
  forbidden:
    - P1:r0=1 /\\ P1:r1=0
  allowed:
    - P1:r0=0 /\\ P1:r1=0
"""


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "MP.yaml"
    path.write_text(MP_YAML)
    return str(path)


def test_cli_import_prints_litmus7(tmp_path, suite, capsys):
    path = tmp_path / "h.json"
    histogram.save([hist([(o(1, 1), 5)])], path)
    assert main(["hw", "import", str(path), "--tests", suite]) == 0
    out = capsys.readouterr().out
    assert "Test MP+rel+acq Forbidden" in out and "Observation MP+rel+acq Never 0 5" in out


def test_cli_compare_uses_the_model(tmp_path, suite, capsys):
    good = tmp_path / "good.json"
    histogram.save([hist([(o(0, 0), 5), (o(0, 1), 5), (o(1, 1), 5)])], good)
    assert main(["hw", "compare", str(good), "--tests", suite]) == 0
    assert "MP+rel+acq: OK, N=15" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    histogram.save([hist([(o(1, 0), 1), (o(1, 1), 5)])], bad)
    assert main(["hw", "compare", str(bad), "--tests", suite]) == 1
    out = capsys.readouterr().out
    assert "MP+rel+acq: VIOLATION" in out and "forbidden but observed 1x: P1:r0=1 /\\ P1:r1=0" in out


def test_cli_errors_are_clean(tmp_path, suite, capsys, monkeypatch):
    (tmp_path / "bad.json").write_text("[")
    assert main(["hw", "compare", str(tmp_path / "bad.json"), "--tests", suite]) == 2
    assert "not JSON" in capsys.readouterr().err
    monkeypatch.setenv("PTXMC_GPU", "0")
    from checker.harness import run
    run.gpus.cache_clear()
    try:
        assert main(["hw", "run", suite, "-o", str(tmp_path / "o")]) == 2
        assert "no GPU on this machine" in capsys.readouterr().err
    finally:
        run.gpus.cache_clear()


def test_cli_gen_writes_programs_and_the_unsupported_list(tmp_path, suite, capsys):
    out = tmp_path / "gen"
    assert main(["hw", "gen", suite, "--controls", "--name", "MP+rel+acq", "--name", "CTRL+cp.async+no-wait",
                 "-o", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.cu")) == ["CTRL+cp.async+no-wait.cu", "MP+rel+acq.cu"]
    assert (out / "unsupported.txt").read_text() == ""
    assert "generated 2 program(s)" in capsys.readouterr().out
    multi = tmp_path / "multi.yaml"
    multi.write_text(MP_YAML.replace("at: gpu0.cta1", "at: gpu1.cta1"))
    assert main(["hw", "gen", str(multi), "-o", str(out)]) == 0
    assert "multi-GPU" in (out / "unsupported.txt").read_text()


# -- review defects D2, D9, D14 ------------------------------------------------------------------

def test_no_valid_instance_renders_and_fails_the_run():
    """D2: a test whose instances all timed out (N=0) with model gaps crashed render()."""
    c = compare_one(hist([], timeout=81920), MODEL, MP)
    assert c.verdict == "no-data" and c.bound is None
    text = render([c])
    assert "MP+rel+acq: NO-DATA, N=0, 3 allowed outcome(s) unseen (no valid instance), timeout=81920" in text
    assert exit_code([c]) == 1


def test_timeouts_over_the_threshold_fail_the_run():
    """D9: a test with 99.99% timeouts and a few valid instances was 'ok'."""
    few = compare_one(hist([(o(0, 0), 1), (o(0, 1), 1), (o(1, 1), 1)], timeout=30000), MODEL, MP)
    assert few.verdict == "timeouts" and exit_code([few]) == 1
    some = compare_one(hist([(o(0, 0), 100), (o(0, 1), 100), (o(1, 1), 100)], timeout=3), MODEL, MP)
    assert some.verdict == "ok"
    assert compare_one(hist([(o(0, 0), 1), (o(0, 1), 1), (o(1, 1), 1)], timeout=1), MODEL, MP,
                       max_timeout_fraction=0.1).verdict == "timeouts"


def test_epilogue_give_ups_are_a_harness_error():
    c = compare_one(hist([(o(0, 0), 1), (o(0, 1), 1), (o(1, 1), 1)], epilogue=1), MODEL, MP)
    assert c.verdict == "harness-error" and "epilogue=1" in c.summary()


def test_counts_must_add_up_to_the_instances_run():
    """D9: the program's `instances` line was ignored."""
    with pytest.raises(HarnessError, match="add up to 1000 instances, the program ran 2000"):
        parse_output(OUTPUT.replace("instances 1000", "instances 2000"), outcome_space(MP))
    h = parse_output(OUTPUT.replace("timeout 10", "timeout 5\nepilogue 5\nunsynced 7"), outcome_space(MP))
    assert (h.timeout, h.epilogue, h.unsynced, h.total) == (5, 5, 7, 1000)


@pytest.mark.parametrize("line", ["bucket 3", "bucket x 5", "bucket 1 2 3"])
def test_malformed_bucket_line_is_a_harness_error(line):
    """D5: 'bucket 3' raised a bare ValueError that aborted the whole suite run."""
    with pytest.raises(HarnessError, match="malformed result line"):
        parse_output(OUTPUT.replace("bucket 3 390", line), outcome_space(MP))


def test_stale_or_foreign_histograms_are_refused():
    """D14: a histogram observing only P1:r0 was compared as if P1:r1 were 0 (a false violation)."""
    partial = make("MP+rel+acq", ("P1:r0",), [((("P1:r0", 1),), 10)], **META)
    with pytest.raises(HarnessError, match="stale or foreign"):
        compare_one(partial, MODEL, MP)
    from checker.harness.space import fingerprint
    good = hist([(o(0, 0), 1)], fingerprint=fingerprint(MP))
    assert compare_one(good, MODEL, MP).n == 1
    with pytest.raises(HarnessError, match="another version of the test"):
        compare_one(hist([(o(0, 0), 1)], fingerprint="0123456789abcdef"), MODEL, MP)


def test_runs_on_different_devices_are_not_added_up():
    """D14: merge added up histograms of different devices, keeping the first one's metadata."""
    h100 = hist([(o(0, 0), 1), (o(0, 1), 1), (o(1, 1), 1)])
    b200 = hist([(o(1, 0), 1)], device="NVIDIA B200", compute_capability="10.0", target="sm_100a",
                config={"name": "b200"})
    comps = compare([h100, b200], {"MP+rel+acq": MODEL}, {"MP+rel+acq": MP})
    assert [c.verdict for c in comps] == ["ok", "violation"]
    text = render(comps)
    assert "== Device NVIDIA H100 80GB HBM3 (cc 9.0, sm_90a, config h100): 1 test(s)" in text
    assert "== Device NVIDIA B200 (cc 10.0, sm_100a, config b200): 1 test(s)" in text
    assert text.count("Device summary:") == 2 and text.splitlines()[-1] == "Summary: ok 1, violation 1"


def test_non_utf8_and_jsonl_files(tmp_path):
    bad = tmp_path / "bin.json"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(HarnessError, match="not UTF-8"):
        histogram.load(bad)
    lines = tmp_path / "histograms.jsonl"
    a, b = hist([(o(0, 0), 1)]), hist([(o(1, 1), 2)])
    histogram.append_jsonl(a, lines)
    histogram.append_jsonl(b, lines)
    with open(lines, "a") as f:
        f.write('{"format": "ptxmc-hist')           # a run killed while writing
    assert histogram.load(lines) == [a, b]
