"""Latency of one-shot commands: `ptxmc --help`, `ptxmc --version`, `ptxmc check` and `ptxmc
outcomes` on small tests, each run as a user runs it (a fresh process, interpreter start-up
included), wall clock, median of N runs after warm-up runs.

    python bench/latency.py                 # 21 runs each (after 3 warm-up runs)
    python bench/latency.py --runs 41 --json /tmp/latency.json
    python bench/latency.py --no-model-cache        # every run parses the cat model again
    python bench/latency.py --checkout DIR          # `python -m checker` of another checkout (before/after)

Wall clock is what the targets are about; the CPU time of the command (user + system, from
getrusage) is printed beside it, as the steadier number on a shared machine (with other work
running, wall time stretches while CPU time does not), and so is the load average.

The commands run from a temporary folder (not the checkout) with byte-code caching on (the
warm-up runs write __pycache__, as any installed package has it); PYTHONDONTWRITEBYTECODE is
removed from their environment. Results: bench/RESULTS.md, "One-shot latency".
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MP = "litmus/core/MP.yaml"

# A single-test file (6 events), so that the YAML of the other tests of a suite file is not timed.
SMALL = """\
name: MP+rel+acq
source: "PTX ISA 9.4, Memory Consistency Model > Axioms > Causality"
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
  forbidden: ['P1:r0=1 /\\ P1:r1=0']
"""


def command() -> list[str]:
    """The installed `ptxmc` script next to this interpreter, else `python -m checker`."""
    script = Path(sys.executable).parent / "ptxmc"
    return [str(script)] if script.exists() else [sys.executable, "-m", "checker"]


def cases(small: Path, root: Path) -> dict[str, list[str]]:
    mp = root / MP
    cond = "P1:r0=1 /\\ P1:r1=0"
    return {
        "--help": ["--help"],
        "--version": ["--version"],
        "check MP.yaml::MP+rel.gpu+acq.gpu+sameCluster (README example, 6 events, 36-test file)":
            ["check", f"{mp}::MP+rel.gpu+acq.gpu+sameCluster", cond],
        "check small.yaml (one 6-event test, forbidden)": ["check", str(small), cond],
        "check small.yaml, allowed outcome": ["check", str(small), "P1:r0=1 /\\ P1:r1=1"],
        "outcomes small.yaml": ["outcomes", str(small)],
    }


def time_runs(argv: list[str], runs: int, warmup: int, env: dict, cwd: str):
    """(wall seconds, CPU seconds) of each run after the warm-up runs, or the error text."""
    walls, cpus = [], []
    for i in range(warmup + runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        r = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        dt = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode not in (0, 1):
            return f"exit {r.returncode}: {r.stderr.strip()[:200]}"
        if i >= warmup:
            walls.append(dt)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return walls, cpus


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", action="append", default=[], help="cases whose name contains this")
    ap.add_argument("--no-model-cache", action="store_true", help="PTXMC_CACHE_DIR=off: parse the model every time")
    ap.add_argument("--checkout", help="run `python -m checker` with this checkout first on PYTHONPATH "
                                       "(e.g. an older commit, for a before/after comparison)")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PTXMC_DEBUG")}
    if args.no_model_cache:
        env["PTXMC_CACHE_DIR"] = "off"
    cwd = tempfile.mkdtemp(prefix="ptxmc-latency-")
    small = Path(cwd) / "small.yaml"
    small.write_text(SMALL)
    base = command()
    if args.checkout:
        base = [sys.executable, "-m", "checker"]
        env["PYTHONPATH"] = str(Path(args.checkout).resolve())
    rows = {}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} CPUs)")
    try:
        for name, extra in cases(small, Path(args.checkout).resolve() if args.checkout else ROOT).items():
            if args.only and not any(o in name for o in args.only):
                continue
            got = time_runs(base + extra, args.runs, args.warmup, env, cwd)
            if isinstance(got, str):
                print(f"{name:90s} {got}")
                rows[name] = got
                continue
            walls, cpus = sorted(got[0]), got[1]
            row = {"median": statistics.median(walls), "p90": walls[int(0.9 * (len(walls) - 1))], "min": walls[0],
                   "cpu_median": statistics.median(cpus), "runs": len(walls)}
            rows[name] = row
            print(f"{name:90s} median {row['median'] * 1000:5.0f} ms  p90 {row['p90'] * 1000:5.0f} ms  "
                  f"min {row['min'] * 1000:5.0f} ms  cpu {row['cpu_median'] * 1000:5.0f} ms", flush=True)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps({"command": base, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
