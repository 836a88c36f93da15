"""Time the bundled suites: per-test time with every outcome enumerated, the median and 90th
percentile, the slowest tests, and peak memory; per engine, in one process or over a pool.

    python bench/suite.py [PATHS...] [--engine z3|brute|auto|both] [--jobs N] [--repeat N]
                          [--cli] [--json FILE]

Each test is checked with its expectations removed, so every outcome is enumerated (the worst
case for the enumeration; `ptxmc run` enumerates only what the expectations mention). Times are
wall clock and CPU (CPU is the steadier number on a shared machine). With --jobs N the tests run
in N worker processes and the total is the wall time of the whole batch. Brute force skips the
tests over its candidate limit (counted as "over limit"). --cli also times `python -m checker run`
end to end (interpreter start-up, model and suite loading, judging), with --jobs 1 and 2.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker import LITMUS_DIR  # noqa: E402
from checker.resources import resolve_model
from checker.verdict.check import check_test  # noqa: E402
from checker.errors import LitmusError  # noqa: E402
from checker.front.litmus import load_paths  # noqa: E402

_model = None


def _init_worker() -> None:
    global _model
    _model = resolve_model("ptx")


def _time_one(job) -> dict:
    test, engine, repeat = job
    best = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        r = check_test(test, _model, engine=engine)
        w, c = time.perf_counter() - w, time.process_time() - c
        if best is None or w < best["wall"]:
            best = {"name": test.name, "status": r.status, "wall": w, "cpu": c, "outcomes": len(r.outcomes)}
    best["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return best


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[int(q * (len(xs) - 1))] if xs else float("nan")


def bench_engine(tests, engine: str, jobs: int, repeat: int) -> dict:
    jobs_list = [(replace(t, expectations=()), engine, repeat) for t in tests]
    start = time.perf_counter()
    if jobs <= 1:
        _init_worker()
        rows = [_time_one(j) for j in jobs_list]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    else:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker) as pool:
            rows = list(pool.map(_time_one, jobs_list, chunksize=4))
        peak = max(r["rss_mib"] for r in rows)
    total = time.perf_counter() - start
    ran = [r for r in rows if r["status"] != "unknown" or engine == "z3"]
    over = [r for r in rows if r["status"] == "unknown"]
    walls = [r["wall"] for r in ran]
    cpus = [r["cpu"] for r in ran]
    return {
        "engine": engine, "jobs": jobs, "tests": len(rows), "ran": len(ran),
        "unknown": len(over), "total_wall": total, "sum_wall": sum(walls),
        "median_ms": statistics.median(walls) * 1000 if walls else None,
        "p90_ms": _pct(walls, 0.9) * 1000, "median_cpu_ms": statistics.median(cpus) * 1000 if cpus else None,
        "p90_cpu_ms": _pct(cpus, 0.9) * 1000, "max_ms": max(walls) * 1000 if walls else None,
        "peak_rss_mib": round(peak, 1),
        "slowest": sorted(({"name": r["name"], "ms": round(r["wall"] * 1000, 1), "status": r["status"]}
                           for r in ran), key=lambda r: -r["ms"])[:10],
        "statuses": {s: sum(1 for r in rows if r["status"] == s) for s in sorted({r["status"] for r in rows})},
    }


def bench_cli(paths: list[str], jobs: int) -> dict:
    """`python -m checker run PATHS --jobs N` end to end, output discarded."""
    cmd = [sys.executable, "-m", "checker", "run", *paths, "--jobs", str(jobs), "--no-timing",
           "--format", "json", "-o", os.devnull]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"jobs": jobs, "wall": wall, "exit": proc.returncode,
            "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "peak_rss_mib": round(after.ru_maxrss / 1024, 1), "stderr": proc.stderr.strip()[-300:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--engine", choices=("z3", "brute", "auto", "both"), default="z3",
                    help="both: z3 and brute; auto: ptxmc's default engine")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs per test")
    ap.add_argument("--cli", action="store_true", help="also time `python -m checker run` end to end")
    ap.add_argument("--json", help="write the numbers here")
    args = ap.parse_args()
    t0 = time.perf_counter()
    resolve_model("ptx")
    paths = args.paths or [str(LITMUS_DIR)]
    tests = [t for t in load_paths(paths) if not isinstance(t, LitmusError)]
    startup = time.perf_counter() - t0
    out = {"tests": len(tests), "startup_ms": startup * 1000, "cores": os.cpu_count(),
           "load": os.getloadavg(), "engines": [], "cli": []}
    print(f"tests: {len(tests)}   start-up (model + suite load): {startup * 1000:.0f} ms   "
          f"cores: {os.cpu_count()}   load average: {os.getloadavg()[0]:.2f}")
    for engine in (("z3", "brute") if args.engine == "both" else (args.engine,)):
        r = bench_engine(tests, engine, args.jobs, args.repeat)
        out["engines"].append(r)
        print(f"\n{engine}, --jobs {args.jobs}: {r['ran']} tests run"
              + (f" ({r['unknown']} over the brute-force limit)" if engine == "brute" else "")
              + f"   statuses: {r['statuses']}")
        print(f"  median {r['median_ms']:.1f} ms   p90 {r['p90_ms']:.1f} ms   max {r['max_ms']:.1f} ms   "
              f"(CPU: median {r['median_cpu_ms']:.1f} ms, p90 {r['p90_cpu_ms']:.1f} ms)")
        n = max(1, r["ran"])
        print(f"  batch wall time {r['total_wall']:.2f} s   mean incl. start-up "
              f"{(r['sum_wall'] + startup) / n * 1000:.1f} ms   median + amortised start-up "
              f"{r['median_ms'] + startup * 1000 / n:.1f} ms")
        print(f"  peak RSS: {r['peak_rss_mib']:.0f} MiB" + (" (largest worker)" if args.jobs > 1 else ""))
        print("  slowest:")
        for s in r["slowest"]:
            print(f"    {s['ms']:8.1f} ms  {s['name']}")
    if args.cli:
        for jobs in (1, 2):
            c = bench_cli(args.paths, jobs)
            out["cli"].append(c)
            print(f"\n`python -m checker run --jobs {jobs}`: {c['wall']:.2f} s wall, {c['cpu']:.2f} s CPU, "
                  f"{c['wall'] / max(1, len(tests)) * 1000:.1f} ms per test incl. start-up, "
                  f"exit {c['exit']}, peak RSS {c['peak_rss_mib']:.0f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
