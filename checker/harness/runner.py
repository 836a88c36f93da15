"""Run a suite test by test so that a run survives (review D5): each test is built, run and its
histogram appended to histograms.jsonl before the next starts; `--resume` skips tests already
there (same test version, device, target and configuration); a time budget stops starting tests
in time; one failing test (a compiler error, a crash, a malformed output line, any exception) is
reported and the suite goes on; several GPUs each take tests from one queue.

The backend does the device-specific work: `GpuBackend` builds with nvcc (or takes prebuilt
executables from `ptxmc hw build`) and runs on a GPU, optionally under compute-sanitizer;
`checker.harness.fakegpu.FakeBackend` simulates a GPU for the tests of the plumbing.
"""
from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from ..ast import LitmusTest
from ..errors import CheckerError, HarnessError
from .build import build, safe_name
from .codegen import Program
from .histogram import Histogram, append_jsonl, load, parse_output
from .space import fingerprint


class Backend(Protocol):
    simulated: bool

    def prepare(self, program: Program, outdir: Path) -> Path: ...

    def execute(self, test: LitmusTest, program: Program, exe: Path, device: str, seed: int,
                time_s: float | None, iterations: int | None) -> str: ...


@dataclass
class GpuBackend:
    """nvcc + a real GPU. `prebuilt`: a `ptxmc hw build` folder whose executables are used (each
    checked against the program generated now, so a stale build is refused)."""

    prebuilt: Path | None = None
    sanitize: str | None = None          # 'racecheck' | 'synccheck': an extra pass under compute-sanitizer
    nvcc: str = ""
    simulated: bool = False
    kill_after: float = 20.0             # a program still running this + 3x its time after its start is killed (B4)

    def prepare(self, program: Program, outdir: Path) -> Path:
        if self.prebuilt is None:
            return build(program, outdir, "exe").output
        src = self.prebuilt / f"{safe_name(program.test)}.cu"
        exe = src.with_suffix("")
        if not exe.is_file() or not src.is_file():
            raise HarnessError(f"{program.test}: no prebuilt executable {exe} (run `ptxmc hw build` with the same "
                               f"tests and --device)")
        if src.read_text() != program.source:
            raise HarnessError(f"{program.test}: the prebuilt {src} differs from the program generated now (another "
                               f"ptxmc version, test or --device): rebuild it")
        return exe

    def execute(self, test, program, exe, device, seed, time_s, iterations) -> str:
        budget = program.config.time_budget_s if time_s is None else time_s
        cmd = [str(Path(exe).resolve()), "--seed", str(seed), "--time", repr(float(budget))]
        if iterations is not None:
            cmd += ["--iterations", str(iterations)]
        env = dict(os.environ)
        if device:
            env["CUDA_VISIBLE_DEVICES"] = device
        limit = self.kill_after + 3 * budget
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=env)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"{program.test}: the run did not end within {limit:.0f} s (a hang despite bounded spins?)")
        except OSError as e:
            raise HarnessError(f"{program.test}: cannot start {exe}: {e.strerror}")
        if proc.returncode != 0:
            msg = (proc.stdout + proc.stderr).strip().splitlines()
            raise HarnessError(f"{program.test}: the run failed (exit {proc.returncode}): {' / '.join(msg[-5:])}")
        if self.sanitize:
            sanitizer_pass(program, exe, self.sanitize, env)
        return proc.stdout


def sanitizer_pass(program: Program, exe: Path, tool: str, env: dict) -> None:
    """Run a few launches under compute-sanitizer (racecheck: shared-memory races, the research
    note's oracle for mbarrier races; synccheck: barrier misuse); HarnessError with its report."""
    import shutil
    from .toolchain import search_dirs
    sanitizer = shutil.which("compute-sanitizer") or next(
        (str(d / "compute-sanitizer") for d in search_dirs() if (d / "compute-sanitizer").is_file()), None)
    if sanitizer is None:
        raise HarnessError("--sanitize: compute-sanitizer not found (CUDA toolkit, or pip install nvidia-cuda-sanitizer-api)")
    cmd = [sanitizer, "--tool", tool, "--error-exitcode", "97", str(Path(exe).resolve()), "--iterations", "2",
           "--time", "60"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    except (OSError, subprocess.SubprocessError) as e:
        raise HarnessError(f"{program.test}: compute-sanitizer --tool {tool} failed to run: {e}")
    if proc.returncode != 0:
        lines = [l for l in (proc.stdout + proc.stderr).splitlines() if "=====" in l][:8]
        raise HarnessError(f"{program.test}: compute-sanitizer --tool {tool} reports errors:\n" + "\n".join(lines))


@dataclass
class Outcome:
    """What became of one test in a suite run."""

    test: str
    status: str                  # 'ran' | 'skipped' (resumed) | 'failed' | 'not-run' (budget)
    message: str = ""
    histogram: Histogram | None = None


@dataclass
class SuiteRun:
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)


def done_keys(path: Path) -> set[tuple[str, str, str, bool, str]]:
    """(test, fingerprint, target, simulated, configuration) of the histograms already in a
    histograms.jsonl (review C10: a run under another configuration of the same target is not done)."""
    if not path.is_file():
        return set()
    return {(h.test, h.fingerprint, h.target, h.simulated, h.config.get("name", "")) for h in load(path, allow_simulated=True)}


def earlier_results(jsonl: Path) -> str:
    """Why a run without --resume must not start on an output folder that holds results (review C2:
    it used to delete them)."""
    return (f"{jsonl} holds the histograms of an earlier run: pass --resume to go on with it, or another "
            f"-o folder (nothing was deleted)")


def run_suite(items: list[tuple[LitmusTest, Program]], outdir: Path, backend: Backend, devices=("",), *,
              seed: int = 1, time_s: float | None = None, iterations: int | None = None,
              budget_s: float | None = None, resume: bool = False, nvcc: str = "",
              say: Callable[[str], None] = print) -> SuiteRun:
    """Build and run each test in turn on one of `devices` (one worker per device), appending each
    histogram to outdir/histograms.jsonl as soon as it is read."""
    outdir.mkdir(parents=True, exist_ok=True)
    jsonl = outdir / "histograms.jsonl"
    done = done_keys(jsonl) if resume else set()
    if not resume and jsonl.exists() and jsonl.stat().st_size:
        raise HarnessError(earlier_results(jsonl))
    start = time.monotonic()
    per_test = (time_s if time_s is not None else (items[0][1].config.time_budget_s if items else 0)) + 5
    todo: queue.Queue = queue.Queue()
    result = SuiteRun()
    lock = threading.Lock()
    for k, item in enumerate(items):
        todo.put((k, item))
    slots: list[Outcome | None] = [None] * len(items)

    def record(k, o: Outcome):
        with lock:
            slots[k] = o
            say({"ran": "ran ", "skipped": "skip", "failed": "FAIL", "not-run": "stop"}[o.status] + f" {o.message}")

    def worker(device: str):
        while True:
            try:
                k, (t, p) = todo.get_nowait()
            except queue.Empty:
                return
            fp = fingerprint(t)
            if (t.name, fp, p.target, backend.simulated, p.config.name) in done:
                record(k, Outcome(t.name, "skipped", f"{t.name}: already in {jsonl.name} (--resume)"))
                continue
            if budget_s is not None and time.monotonic() - start + per_test > budget_s:
                record(k, Outcome(t.name, "not-run", f"{t.name}: not run, the --budget of {budget_s:.0f} s is spent"))
                continue
            try:
                exe = backend.prepare(p, outdir / "build")
                text = backend.execute(t, p, exe, device, seed, time_s, iterations)
                h = parse_output(text, p.space, p.target, p.config.to_dict(), fingerprint=fp, nvcc=nvcc,
                                 device_index=device, simulated=backend.simulated)
                if h.test != t.name:
                    raise HarnessError(f"{t.name}: the program reports test {h.test!r}")
                with lock:
                    append_jsonl(h, jsonl)
                where = f" on GPU {device}" if device else ""
                record(k, Outcome(t.name, "ran", f"{t.name}{where}: {h.total} instances in {h.time_s:.1f} s, "
                                                 f"{len(h.counts)} outcome(s)" + (" [SIMULATED]" if h.simulated else ""), h))
            except CheckerError as e:
                msg = str(e)
                record(k, Outcome(t.name, "failed", msg if msg.startswith(t.name) else f"{t.name}: {msg}"))
            except Exception as e:      # one test's bug never ends the suite
                tb = traceback.extract_tb(e.__traceback__)[-1]
                record(k, Outcome(t.name, "failed", f"{t.name}: internal error {type(e).__name__}: {e} "
                                                    f"({Path(tb.filename).name}:{tb.lineno})"))

    threads = [threading.Thread(target=worker, args=(d,), daemon=True) for d in devices]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    result.outcomes = [o for o in slots if o is not None]
    return result
