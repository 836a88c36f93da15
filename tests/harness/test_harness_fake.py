"""The whole `ptxmc hw run` -> histograms.jsonl -> litmus7 log -> compare path, end to end, with the
fake device (checker.harness.fakegpu) instead of a GPU: outcomes sampled from the model's allowed
set, plus injected timeouts, malformed output, crashes and forbidden outcomes, each of which must
be reported as such. Everything here is SIMULATED and labelled so; none of it is an observation.
Also the run-survival options (--resume, --budget, --shard, --prebuilt) and the device check."""
from __future__ import annotations

import json

import pytest

from checker import LITMUS_DIR
from checker.cli import main
from checker.errors import HarnessError, LitmusError
from checker.harness import histogram
from checker.harness import run as hwrun
from checker.harness.codegen import generate, unsupported
from checker.harness.controls import MODEL_ALLOWED, controls
from checker.harness.devicecheck import plan, target_for_cc
from checker.harness.run import Gpu
from checker.harness.runner import GpuBackend

NAMES = ["CTRL+MP+relaxed", "CTRL+SB+relaxed", "MP+rel.gpu+acq.gpu+sameCTA", "CoRR+weak",
         "TM-LC+replace.global+release+acquire", "BulkLoad+expect_tx+shared_cta", "SB+fence.acq_rel+relaxed"]


def _run(tmp_path, *extra, names=NAMES, out="o"):
    args = ["hw", "run", "--controls", "-o", str(tmp_path / out), "--fake-device", *extra]
    for n in names:
        args += ["--name", n]
    return main(args)


def test_clean_simulated_run_sees_every_allowed_outcome(tmp_path, capsys):
    assert _run(tmp_path, "seed:3") == 0
    out = capsys.readouterr().out
    assert out.startswith("SIMULATED: --fake-device")
    hists = histogram.load(tmp_path / "o" / "histograms.jsonl", allow_simulated=True)
    assert {h.test for h in hists} == set(NAMES) and all(h.simulated and h.other == 0 for h in hists)
    text = (tmp_path / "o" / "compare.txt").read_text()
    assert "== SIMULATED by the fake device" in text and "VIOLATION" not in text
    assert "CTRL+MP+relaxed: CONTROL-SEEN" in text
    log = (tmp_path / "o" / "litmus7.log").read_text()
    assert log.count("SIMULATED by the fake device: not an observation") == len(NAMES)
    # a simulated file never enters a report as an observation
    with pytest.raises(HarnessError, match="SIMULATED"):
        histogram.load(tmp_path / "o" / "histograms.json")


def test_injected_faults_are_reported_and_the_suite_goes_on(tmp_path, capsys):
    spec = "timeout:CoRR+weak,forbidden:MP+rel.gpu+acq.gpu+sameCTA,malformed:CTRL+SB+relaxed,crash:SB+fence.acq_rel+relaxed"
    assert _run(tmp_path, spec) == 1
    out = capsys.readouterr().out
    assert "FAIL CTRL+SB+relaxed: malformed result line 'bucket 3'" in out
    assert "FAIL SB+fence.acq_rel+relaxed: the run failed (exit 3)" in out
    text = (tmp_path / "o" / "compare.txt").read_text()
    assert "CoRR+weak: NO-DATA, N=0" in text and "timeout=4096" in text
    assert "MP+rel.gpu+acq.gpu+sameCTA: VIOLATION" in text and "forbidden but observed 7x: P1:r0=1 /\\ P1:r1=0" in text
    assert "ran 5, resumed 0, failed 2, not run 0" in out
    ran = {json.loads(l)["test"] for l in (tmp_path / "o" / "histograms.jsonl").read_text().splitlines()}
    assert ran == set(NAMES) - {"CTRL+SB+relaxed", "SB+fence.acq_rel+relaxed"}


def test_resume_budget_and_shards(tmp_path, capsys):
    assert _run(tmp_path, "", names=NAMES[:3]) == 0
    capsys.readouterr()
    assert _run(tmp_path, "", "--resume", names=NAMES[:4]) == 0
    out = capsys.readouterr().out
    assert out.count("skip ") == 3 and "ran  CoRR+weak" in out and "ran 1, resumed 3" in out
    assert len(histogram.load(tmp_path / "o" / "histograms.jsonl", allow_simulated=True)) == 4
    assert _run(tmp_path, "", "--budget", "1e-9", out="b") == 1
    out = capsys.readouterr().out
    assert "not run 7 (budget)" in out and "--resume" in out
    shards = []
    for i in (1, 2):
        assert _run(tmp_path, "", "--shard", f"{i}/2", out=f"s{i}") == 0
        shards.append({h.test for h in histogram.load(tmp_path / f"s{i}" / "histograms.jsonl", allow_simulated=True)})
    assert shards[0] | shards[1] == set(NAMES) and not shards[0] & shards[1]
    assert _run(tmp_path, "", "--shard", "3/2") == 2
    assert "--shard" in capsys.readouterr().err


def test_simulated_histograms_import_and_compare_with_labels(tmp_path, capsys):
    assert _run(tmp_path, "", names=NAMES[:3]) == 0
    capsys.readouterr()
    jsonl = str(tmp_path / "o" / "histograms.jsonl")
    assert main(["hw", "import", jsonl, "--controls", "-o", str(tmp_path / "l.log")]) == 0
    assert main(["hw", "compare", str(tmp_path / "l.log"), "--controls"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "MP+rel.gpu+acq.gpu+sameCTA: OK" in out


def test_every_model_allowed_outcome_has_a_bucket():
    """The fake device maps each outcome the model allows into the program's outcome space; one
    missing from the space would land in `other` (a harness bug). Over a sample of the suites."""
    from checker.resources import resolve_model
    from checker.verdict.check import check_test
    from checker.front.litmus import load_paths
    model = resolve_model(None)
    tests = [t for t in load_paths([str(LITMUS_DIR)]) if not isinstance(t, LitmusError)]
    sample = [t for t in tests if not unsupported(t, cuda="13.0")][::15] + controls()
    missing = []
    for t in sample:
        res = check_test(t, model)
        if not res.outcomes or not res.complete or res.undefined:
            continue
        space = generate(t).space
        for o in res.outcomes:
            if space.index(space.values_of(o)) is None:
                missing.append(f"{t.name}: {dict(o)}")
    assert len(sample) >= 40 and not missing, missing


def test_model_allowed_controls_are_allowed_by_the_model():
    """D8: every generic positive control's weak outcome is allowed by the model (the old MP control
    could not even be checked: its locations were undeclared)."""
    from checker.resources import resolve_model
    from checker.verdict.check import check_test
    model = resolve_model(None)
    by = {c.name: c for c in controls()}
    for name in MODEL_ALLOWED:
        res = check_test(by[name], model)
        assert res.status == "pass" and not res.undefined and all(c.allowed for c in res.conditions), name
        assert by[name].threads[0].position.cta != by[name].threads[1].position.cta     # across CTAs


def test_prebuilt_executables_must_match(tmp_path):
    prog = generate(controls()[3])
    backend = GpuBackend(prebuilt=tmp_path)
    with pytest.raises(HarnessError, match="no prebuilt executable"):
        backend.prepare(prog, tmp_path / "b")
    (tmp_path / "CTRL+MP+relaxed.cu").write_text(prog.source.replace("SPIN_CAP 4096u", "SPIN_CAP 1u"))
    (tmp_path / "CTRL+MP+relaxed").write_text("")
    with pytest.raises(HarnessError, match="differs from the program generated now"):
        backend.prepare(prog, tmp_path / "b")
    (tmp_path / "CTRL+MP+relaxed.cu").write_text(prog.source)
    assert backend.prepare(prog, tmp_path / "b") == tmp_path / "CTRL+MP+relaxed"


# -- device check (D6) -----------------------------------------------------------------------------

H100 = Gpu("NVIDIA H100 80GB HBM3", "9.0", "580.65.06")
B200 = Gpu("NVIDIA B200", "10.0", "580.65.06")


def test_device_check_picks_the_target_and_configuration():
    assert target_for_cc("9.0") == "sm_90a" and target_for_cc("10.0") == "sm_100a" and target_for_cc("8.0") is None
    p = plan([B200], None, None, None, "13.0")
    assert (p.target, p.config, p.devices) == ("sm_100a", "b200", ("",))
    p = plan([H100, H100], "0,1", None, None, "13.0")
    assert (p.target, p.config, p.devices) == ("sm_90a", "h100", ("0", "1"))


@pytest.mark.parametrize("gpus,devices,config,target,cuda,msg", [
    ([B200], None, "h100", "sm_90a", "13.0", "targets sm_90a but NVIDIA B200 is cc 10.0"),
    ([Gpu("NVIDIA H100", "9.0", "570.86.15")], None, None, None, "13.0", "driver 570.86.15 is older than CUDA 13.0"),
    ([Gpu("NVIDIA A100", "8.0", "580.1")], None, None, None, "13.0", "needs sm_90 or newer"),
    ([H100, B200], "0,1", None, None, "13.0", "different architectures"),
    ([H100], "1", None, None, "13.0", "GPU 1 does not exist"),
    ([H100], "0,x", None, None, "13.0", "expected GPU indices"),
    ([], None, None, None, "13.0", "no GPU"),
])
def test_device_check_refuses_clearly(gpus, devices, config, target, cuda, msg):
    with pytest.raises(HarnessError, match=msg):
        plan(gpus, devices, config, target, cuda)


def test_forced_gpu_without_nvidia_smi(monkeypatch):
    """D16: PTXMC_GPU=1 was ignored when nothing detected a GPU."""
    hwrun.gpus.cache_clear()
    try:
        monkeypatch.setenv("PTXMC_GPU", "1")
        monkeypatch.setattr(hwrun, "_detect", lambda: ())
        assert hwrun.gpu_available() and hwrun.gpus()[0].compute_capability == ""
        p = plan(hwrun.gpus(), None, "b200", "sm_100a", "13.0")
        assert p.target == "sm_100a" and any("unknown" in n for n in p.notes)
    finally:
        hwrun.gpus.cache_clear()


def test_sanitizer_pass_reports_errors_and_a_missing_tool(tmp_path, monkeypatch):
    """--sanitize runs each program under compute-sanitizer on a GPU machine; here the tool is a
    script that prints a racecheck report, and then none at all."""
    import shutil
    from checker.harness import runner, toolchain
    prog = generate(controls()[3])
    tool = tmp_path / "compute-sanitizer"
    tool.write_text("#!/bin/sh\necho '========= Error: Race reported between Write access at 0x80'\nexit 97\n")
    tool.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: str(tool) if name == "compute-sanitizer" else None)
    with pytest.raises(HarnessError, match="racecheck reports errors:\n========= Error: Race reported"):
        runner.sanitizer_pass(prog, tmp_path / "exe", "racecheck", {})
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(toolchain, "search_dirs", lambda: [])
    with pytest.raises(HarnessError, match="compute-sanitizer not found"):
        runner.sanitizer_pass(prog, tmp_path / "exe", "synccheck", {})
