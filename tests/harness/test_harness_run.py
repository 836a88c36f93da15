"""Hardware harness runs: GPU detection (always), and real runs on a GPU (skipped without one,
with the reason). PTXMC_GPU=0 forces the no-GPU path."""
from __future__ import annotations

import subprocess

import pytest

from checker.errors import HarnessError
from checker.harness import run as hwrun
from checker.harness.build import build
from checker.harness.codegen import generate
from checker.harness.controls import build_test, controls
from checker.harness.devices import load_device
from checker.harness.toolchain import missing_reason


@pytest.fixture
def fresh_gpu_cache():
    hwrun.gpus.cache_clear()
    yield
    hwrun.gpus.cache_clear()


def test_gpu_detection_reads_nvidia_smi(monkeypatch, fresh_gpu_cache):
    monkeypatch.delenv("PTXMC_GPU", raising=False)
    monkeypatch.setattr(hwrun.shutil, "which", lambda name: "/usr/bin/nvidia-smi")

    def fake_run(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 0, "NVIDIA H100 80GB HBM3, 9.0, 570.86\n", "")
    monkeypatch.setattr(hwrun.subprocess, "run", fake_run)
    assert hwrun.gpus() == (hwrun.Gpu("NVIDIA H100 80GB HBM3", "9.0", "570.86"),)
    assert hwrun.gpu_available() and hwrun.no_gpu_reason() is None


def test_no_gpu_is_a_clean_error(monkeypatch, fresh_gpu_cache, tmp_path):
    monkeypatch.setenv("PTXMC_GPU", "0")
    assert not hwrun.gpu_available()
    prog = generate(controls()[3])
    with pytest.raises(HarnessError, match="cannot run: no GPU"):
        hwrun.run(prog, tmp_path / "does-not-matter")


needs_gpu = pytest.mark.skipif(not hwrun.gpu_available() or missing_reason("nvcc") is not None,
                               reason=str(hwrun.no_gpu_reason() or missing_reason("nvcc")))

MP = build_test(
    "MP+rel+acq",
    {"P0": ("gpu0.cta0", ["st.weak.global [x], 1", "st.release.gpu.global [flag], 1"]),
     "P1": ("gpu0.cta1", ["ld.acquire.gpu.global r0, [flag]", "ld.weak.global r1, [x]"])},
    forbidden=["P1:r0=1 /\\ P1:r1=0"], allowed=["P1:r0=0 /\\ P1:r1=0"])


@needs_gpu
@pytest.mark.parametrize("test", [MP, *controls()], ids=lambda t: t.name)
def test_run_on_the_gpu(test, tmp_path):
    cfg = load_device("default").replace(testing_groups=64, testing_fraction=0.5)
    prog = generate(test, cfg)
    exe = build(prog, tmp_path, "exe")
    hist = hwrun.run(prog, exe.output, seed=3, time_s=1.0, iterations=50)
    assert hist.other == 0, "values outside the outcome space: a harness bug"
    assert hist.total == hist.iterations * 64 * prog.layout.per_warp
    assert hist.valid > 0 and hist.device
    if test is MP:
        assert hist.count((("P1:r0", 1), ("P1:r1", 0))) == 0
