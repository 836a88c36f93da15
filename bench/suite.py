"""Time the bundled suites: per-test wall time with every outcome enumerated (Z3 engine, one
process), the median and 90th percentile, the slowest tests, and peak memory.

    python bench/suite.py [PATHS...] [--engine z3|brute] [--repeat N]
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checker import LITMUS_DIR  # noqa: E402
from checker.check import check_test, resolve_model  # noqa: E402
from checker.errors import LitmusError  # noqa: E402
from checker.litmus import load_paths  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--engine", default="z3")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    t0 = time.perf_counter()
    model = resolve_model("ptx")
    items = [t for t in load_paths(args.paths or [str(LITMUS_DIR)]) if not isinstance(t, LitmusError)]
    startup = time.perf_counter() - t0
    times = []
    for t in items:
        bare = replace(t, expectations=())   # enumerate every outcome, not just the conditions' atoms
        best = min(_time(bare, model, args.engine) for _ in range(args.repeat))
        times.append((best, t.name))
    total = sum(s for s, _ in times) + startup
    secs = sorted(s for s, _ in times)
    p90 = secs[int(0.9 * (len(secs) - 1))]
    print(f"tests: {len(times)}  engine: {args.engine}")
    print(f"start-up (model + suite load): {startup * 1000:.0f} ms")
    print(f"median: {statistics.median(secs) * 1000:.1f} ms   p90: {p90 * 1000:.1f} ms   "
          f"mean incl. start-up: {total / max(1, len(secs)) * 1000:.1f} ms   total: {total:.2f} s")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print("slowest:")
    for s, n in sorted(times, reverse=True)[:10]:
        print(f"  {s * 1000:8.1f} ms  {n}")
    return 0


def _time(test, model, engine) -> float:
    start = time.perf_counter()
    check_test(test, model, engine=engine)
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
