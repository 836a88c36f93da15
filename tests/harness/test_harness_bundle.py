"""`ptxmc hw pack` and the bundle's run.py (issue 36): a bundle built and checked here, run under a
Python with only the standard library (`python3 -I -S`) against the fake device, within a deadline,
its histograms read back by `ptxmc hw compare` / `hw import` (SIMULATED throughout: the fake device
is never an observation). The real executables are also run here, where there is no GPU: each test
must fail cleanly with the CUDA runtime's message.

One small bundle per target is built for the whole module (about 6 programs for sm_90a, 2 for
sm_100a) so the suite stays within CI's budget; needs nvcc, cuobjdump and nvdisasm (the `hw`
extra) and skips without them."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from checker.cli import main
from checker.harness import histogram
from checker.harness.bundle import PROFILES, RUNNER, ordered, value_rank
from checker.harness.controls import controls
from checker.harness.toolchain import missing_reason

why = missing_reason("nvcc", "cuobjdump", "nvdisasm")
needs_toolchain = pytest.mark.skipif(why is not None, reason=str(why))

H100_NAMES = ["CTRL+MP+relaxed", "CTRL+SB+relaxed", "CTRL+LB+relaxed", "MP+rel.gpu+acq.gpu+sameCTA",
              "TileLang-store+nofence", "CoRR+weak", "P19-waitst-fixed", "I17-accumulate+same-shape"]


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    out = tmp_path_factory.mktemp("pack") / "h100"
    args = ["hw", "pack", "--device", "h100", "--profile", "first-run", "--chunk", "3", "-o", str(out)]
    for n in H100_NAMES:
        args += ["--name", n]
    assert main(args) == 0
    return out


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def _run(bundle: Path, *args, timeout=600):
    """run.py under a Python without site-packages: only the standard library is importable."""
    proc = subprocess.run([sys.executable, "-I", "-S", str(bundle / "run.py"), *args], capture_output=True,
                          text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@needs_toolchain
def test_the_bundle_orders_the_work_and_stays_small(h100):
    m = _manifest(h100)
    names = [e["name"] for e in m["tests"]]
    assert names[:3] == ["CTRL+MP+relaxed", "CTRL+SB+relaxed", "CTRL+LB+relaxed"]          # controls first (C3)
    assert names.index("TileLang-store+nofence") < names.index("MP+rel.gpu+acq.gpu+sameCTA")  # async before generic
    assert [e["rank"] for e in m["tests"]] == sorted(e["rank"] for e in m["tests"])
    (tc,) = [x for x in m["not_packed"] if x["name"] == "P19-waitst-fixed"]                  # B3
    assert "needs sm_100a" in tc["reason"]
    assert {e["target"] for e in m["tests"]} == {"sm_90a"} and m["target"] == "sm_90a"
    assert all(e["time_s"] == PROFILES["first-run"]["control_time_s"] for e in m["tests"] if e["control"])
    assert (h100 / "run.py").read_bytes() == RUNNER.read_bytes()
    # C5: one shared CUDA runtime, compressed device code: a few tens of KB per program
    bins = sorted((h100 / "bin").iterdir())
    assert len(bins) == 3 and len(list((h100 / "lib").glob("libcudart.so.*"))) == 1
    # a wgmma program passes the SASS check inside a multi-test executable too (ptxas attributes one
    # of its HGMMAs to the __syncwarp header's lines, which the per-program line filter dropped)
    assert "I17-accumulate+same-shape" in names
    assert sum(b.stat().st_size for b in bins) / len(m["tests"]) < 80_000


def test_run_py_imports_only_the_standard_library():
    tree = ast.parse(RUNNER.read_text())
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))
    assert mods and mods <= set(sys.stdlib_module_names), mods - set(sys.stdlib_module_names)


@needs_toolchain
def test_fake_device_run_under_the_standard_library_is_read_back(h100, tmp_path, capsys):
    out = tmp_path / "r"
    proc = _run(h100, "--deadline", "120", "-o", str(out), "--kill-after", "1", "--context-allowance", "1",
                "--fake-device", "hang:CoRR+weak,spin:MP+rel.gpu+acq.gpu+sameCTA")
    assert proc.returncode == 1, proc.stdout + proc.stderr          # one test hung: the run is not clean
    assert proc.stdout.startswith("SIMULATED")
    status = json.loads((out / "status.json").read_text())
    assert status["simulated"] is True and status["gpu"]["device"] == "ptxmc fake device"
    (hung,) = status["failed"]
    assert hung["test"] == "CoRR+weak" and "killed after" in hung["why"]
    assert set(status["ran"]) == {e["name"] for e in _manifest(h100)["tests"]} - {"CoRR+weak"}
    hists = histogram.load(out / "histograms.jsonl", allow_simulated=True)
    mp = next(h for h in hists if h.test == "MP+rel.gpu+acq.gpu+sameCTA")
    assert mp.hang == mp.total // 4 and mp.simulated                # a hung instance is its own bucket
    with pytest.raises(Exception, match="SIMULATED"):
        histogram.load(out / "histograms.jsonl")                    # never taken for an observation
    capsys.readouterr()
    main(["hw", "compare", str(out / "histograms.jsonl"), "--controls"])
    text = capsys.readouterr().out
    assert "SIMULATED by the fake device" in text and "CTRL+MP+relaxed" in text
    assert main(["hw", "import", str(out / "histograms.jsonl"), "--controls"]) == 0
    assert "SIMULATED by the fake device: not an observation" in capsys.readouterr().out
    # the results folder itself: status.json's failures are part of the comparison
    assert main(["hw", "compare", str(out), "--controls"]) == 1
    text = capsys.readouterr().out
    assert "Incomplete run: 1 test(s) gave no histogram" in text and "failed on the device: CoRR+weak: killed" in text


@needs_toolchain
def test_a_deadline_stops_the_run_cleanly_and_resume_goes_on(h100, tmp_path):
    out = tmp_path / "r"
    everything = {e["name"] for e in _manifest(h100)["tests"]}
    # TileLang-store+nofence hangs (a kernel that never returns) and its limit is far away: the
    # deadline ends the run, and the tests after it are listed as not run
    proc = _run(h100, "--deadline", "10", "-o", str(out), "--fake-device", "hang:TileLang-store+nofence",
                "--kill-after", "500")
    assert proc.returncode == 1
    status = json.loads((out / "status.json").read_text())
    assert status["ran"][:3] == ["CTRL+MP+relaxed", "CTRL+SB+relaxed", "CTRL+LB+relaxed"]
    assert status["not_run"][0] == {"test": "TileLang-store+nofence", "why": "stopped at the deadline"}
    assert not status["failed"] and "deadline" in status["stopped"]
    assert set(status["ran"]) | {x["test"] for x in status["not_run"]} == everything
    assert [h.test for h in histogram.load(out / "histograms.jsonl", allow_simulated=True)] == status["ran"]
    again = _run(h100, "--deadline", "60", "-o", str(out), "--fake-device", "")
    assert again.returncode == 2 and "pass --resume" in again.stderr          # nothing overwritten (C2)
    rest = _run(h100, "--deadline", "120", "-o", str(out), "--fake-device", "", "--resume")
    assert rest.returncode == 0, rest.stdout
    assert {h.test for h in histogram.load(out / "histograms.jsonl", allow_simulated=True)} == everything


@needs_toolchain
def test_the_real_executables_fail_cleanly_without_a_gpu(h100, tmp_path):
    from checker.harness.run import gpu_available
    if gpu_available():
        pytest.skip("a GPU is present: the executables would run")
    out = tmp_path / "r"
    proc = _run(h100, "--deadline", "120", "-o", str(out))
    assert proc.returncode == 1
    status = json.loads((out / "status.json").read_text())
    assert not status["ran"] and len(status["failed"]) == len(_manifest(h100)["tests"])
    assert all("the executable died (exit 3)" in f["why"] and "error " in f["why"] for f in status["failed"])


@needs_toolchain
def test_b200_bundle_builds_tcgen05_for_sm_100a(tmp_path):
    out = tmp_path / "b200"
    assert main(["hw", "pack", "--device", "b200", "--no-controls", "--name", "P19-waitst-fixed",
                 "--name", "TileLang-store+nofence", "-o", str(out)]) == 0
    m = _manifest(out)
    assert {e["name"] for e in m["tests"]} == {"P19-waitst-fixed", "TileLang-store+nofence"}
    assert {e["target"] for e in m["tests"]} == {"sm_100a"} and m["profile"] == "full"
    assert all(e["time_s"] == 10.0 for e in m["tests"])


def test_run_py_refuses_bad_arguments(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "run.py").write_bytes(RUNNER.read_bytes())
    proc = _run(bundle, "--deadline", "10")
    assert proc.returncode == 2 and "manifest" in proc.stderr
    (bundle / "manifest.json").write_text(json.dumps({"format": "ptxmc-bundle", "version": 1, "tests": []}))
    for args, msg in ((["--deadline", "nan"], "positive number"), ([], "--deadline SECONDS is required"),
                      (["--deadline", "5", "--only", "nope"], "no test named nope"),
                      (["--deadline", "5", "--fake-device", "bogus:x"], "expected KIND:TEST")):
        proc = _run(bundle, *args)
        assert proc.returncode == 2 and msg in proc.stderr, (args, proc.stderr)


def test_controls_come_first_then_async_tests():
    from checker.harness.controls import build_test
    generic = build_test("g", {"P0": ("gpu0.cta0", ["st.global [x], 1"])})
    bulk = controls()[1]
    proxy = build_test("p", {"P0": ("gpu0.cta0", ["st.global [x], 1", "fence.proxy.async.global"])})
    mp = next(c for c in controls() if c.name == "CTRL+MP+relaxed")
    assert [t.name for t in ordered([generic, proxy, mp, bulk])] == ["CTRL+MP+relaxed", bulk.name, "p", "g"]
    assert (value_rank(mp), value_rank(proxy), value_rank(generic)) == (0, 1, 2)


def test_the_first_run_profile_fits_eight_minutes_and_gives_controls_their_time():
    """Every bundled test the harness can express for the H100 and every control (an upper bound
    on what its bundle holds: a test `unsupported` refuses is never packed, such as the Tensor
    Memory allocation tests) at the first-run profile's times, with the overheads
    docs/hardware-harness.md assumes, fits 8 minutes; and run.py, given that deadline, keeps each
    control's full planned time (no scaling)."""
    from checker.harness.bundle import estimate_seconds
    from checker.harness.cli import load_tests
    from checker.harness.codegen import unsupported
    from checker.harness.devices import load_device
    h100 = load_device("h100")
    every, _ = load_tests(None, controls=True)
    tests = [t for t in every if not unsupported(t, h100)]
    n_controls = len(controls())
    prof = PROFILES["first-run"]
    total = estimate_seconds(len(tests), n_controls, "first-run", h100)
    assert len(tests) > 700 and total <= prof["deadline_s"] <= 8 * 60
    sys.path.insert(0, str(RUNNER.parent))
    try:
        import bundle_run
    finally:
        sys.path.pop(0)
    from checker.harness.bundle import PER_EXECUTABLE_S, PER_TEST_OVERHEAD_S
    assert (bundle_run.STARTUP, bundle_run.OVERHEAD) == (PER_EXECUTABLE_S, PER_TEST_OVERHEAD_S)   # one assumption
    entries = [{"binary": f"bin/p{k // 24:03d}", "time_s": prof["control_time_s"] if k < n_controls else prof["time_s"]}
               for k in range(len(tests))]
    times = bundle_run.times_for(entries, prof["deadline_s"] - bundle_run.STOP_MARGIN, bundle_run.STARTUP)
    assert times[:n_controls] == [prof["control_time_s"]] * n_controls
    assert prof["control_time_s"] >= 5.0        # ~10^8 instances for MP/SB at the launch rate assumed


@needs_toolchain
def test_run_py_refuses_a_gpu_of_another_architecture(h100, tmp_path):
    import os
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA B200, 10.0, 580.65.06'\n")
    (stub / "nvidia-smi").chmod(0o755)
    proc = subprocess.run([sys.executable, "-I", "-S", str(h100 / "run.py"), "--deadline", "60", "-o",
                           str(tmp_path / "r")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": f"{stub}:{os.environ['PATH']}"})
    assert proc.returncode == 2 and "built for sm_90a, but NVIDIA B200 is compute capability 10.0" in proc.stderr
    assert "--device b200" in proc.stderr


def _compilers_for(path: Path) -> list[int]:
    """Processes whose command line names `path` (the pack's nvcc and its children)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(path) in cmd and "nvcc" in cmd:
                out.append(int(d.name))
    return out


@needs_toolchain
def test_an_interrupted_pack_leaves_no_compiler_running(tmp_path):
    import signal
    import time
    out = tmp_path / "b"
    proc = subprocess.Popen([sys.executable, "-m", "checker", "hw", "pack", "--device", "h100", "--no-controls",
                             "--name", "CoRR+weak", "--name", "MP+rel.gpu+acq.gpu+sameCTA", "--chunk", "1",
                             "--jobs", "1", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for _ in range(1200):                        # until the first nvcc runs (a safety net, not a measure)
        if _compilers_for(out) or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert proc.poll() is None, proc.stdout.read()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=600) == 143
    assert _compilers_for(out) == []
    # the compile in progress was killed whole (nvcc's process group: an orphaned host linker would
    # still write bin/p000), not waited for (a chunk takes minutes); none started after, and no
    # half-linked executable is left
    assert sorted(p.name for p in (out / "bin").iterdir()) == []


def test_pack_refuses_an_unknown_profile_before_any_work(tmp_path, capsys):
    assert main(["hw", "pack", "--device", "h100", "--profile", "fast", "-o", str(tmp_path / "b")]) == 2
    assert "--profile fast: unknown (known: first-run, full)" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()
