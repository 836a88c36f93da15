"""Throughput of the two executors on a generated suite: the local worker pool and Dask
distributed on a LocalCluster (`--executor dask`), the same number of worker processes each.

    python bench/dist.py                          # ptxmc gen --preset generic --size 3: 6,460 tests
    python bench/dist.py --every 3 --json /tmp/dist.json   # a third of it, every family

For each executor: wall time of run_tests over the whole suite (worker / cluster start-up
included), tests per second per worker core, and the mean per-test cost per worker split into
checking (the Result's own time, measured in the worker) and executor overhead (the rest: hand-out,
pickling, result transport, start-up amortised). The Dask cluster's start-up and shutdown alone are
measured with a one-test run. The results of both executors are compared (timing fields aside):
they must be identical.

Then the executors' own cost, without checking: the same jobs echoed back (`copy.copy` as the job
function: each job - test, model, options, limits - goes to a worker and comes back, as a checked
test's job and Result do), per job per worker, the Dask cluster's start-up taken out. Loads suites
whose files exceed the default yaml_bytes limit (`ptxmc gen --size 4` writes files of 4 MB).
Needs the dist extra (pip install -e '.[dist]')."""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checker import limits  # noqa: E402
from checker.batch import run_tests  # noqa: E402
from checker.cli import main  # noqa: E402
from checker.executors.executor import LOCAL, Executor, run_jobs  # noqa: E402
from checker.executors.shipped import model_text  # noqa: E402
from checker.front.litmus import load_paths  # noqa: E402
from checker.results.output import result_dict  # noqa: E402

DASK = Executor("dask")


def timed(items, jobs: int, executor) -> tuple[float, list]:
    t0 = time.perf_counter()
    results = run_tests(items, None, (), "z3", jobs=jobs, executor=executor)
    return time.perf_counter() - t0, results


def echo(items, jobs: int, executor, start_s: float) -> dict:
    """Per-job cost of the executor alone: every job travels to a worker and back unchanged."""
    spec = model_text(None) if executor.kind == "dask" else None
    work = [(t, spec, (), "z3", limits.current()) for t in items]
    back: list = []
    t0 = time.perf_counter()
    run_jobs(copy.copy, work, jobs, None, lambda _i, out: back.append(out), executor)
    wall = time.perf_counter() - t0
    assert len(back) == len(work)
    net = max(wall - start_s, 1e-9)
    return {"executor": executor.kind, "jobs": len(work), "wall_s": round(wall, 2),
            "start_s_taken_out": round(start_s, 2), "ms_per_job_per_worker": round(net * jobs / len(work) * 1000, 3)}


def summary(name: str, wall: float, results: list, jobs: int) -> dict:
    n = len(results)
    per_test = wall * jobs / n                         # worker-seconds per test
    check = sum(r.time for r in results) / n
    return {"executor": name, "tests": n, "workers": jobs, "wall_s": round(wall, 2),
            "tests_per_s": round(n / wall, 1), "tests_per_s_per_core": round(n / wall / jobs, 1),
            "ms_per_test_per_worker": round(per_test * 1000, 2), "check_ms": round(check * 1000, 2),
            "overhead_ms": round((per_test - check) * 1000, 2)}


def main_(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="generic")
    ap.add_argument("--size", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only the first N tests (0: all)")
    ap.add_argument("--every", type=int, default=1, help="only every K-th test (a sample of every family)")
    ap.add_argument("--dask-first", action="store_true", help="run Dask before the local pool (order effects)")
    ap.add_argument("--suite", help="an earlier `ptxmc gen` output folder (else generated here)")
    ap.add_argument("--echo-only", action="store_true", help="only the executors' own cost (no checking)")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args(argv)
    limits.set_current(replace(limits.current(), yaml_bytes=64_000_000))
    if args.suite:
        items = load_paths([Path(args.suite)])
    else:
        with tempfile.TemporaryDirectory(prefix="ptxmc-bench-") as tmp:
            out = Path(tmp) / "suite"
            assert main(["gen", "--preset", args.preset, "--size", str(args.size), "-o", str(out)]) == 0
            items = load_paths([out])
    items = items[::args.every]
    if args.limit:
        items = items[:args.limit]
    t_start, _ = timed(items[:1], args.jobs, DASK)
    echoes = [echo(items, args.jobs, LOCAL, 0.0), echo(items, args.jobs, DASK, t_start)]
    if args.echo_only:
        print(json.dumps({"tests": len(items), "echo": echoes}, indent=1))
        return 0
    rows, results = [], {}
    order = (("local", LOCAL), ("dask", DASK))
    for name, ex in (order[::-1] if args.dask_first else order):
        wall, res = timed(items, args.jobs, ex)
        results[name] = [result_dict(r, timing=False) for r in res]
        rows.append(summary(name, wall, res, args.jobs))
    same = results["local"] == results["dask"]
    local, dask = sorted(rows, key=lambda r: r["executor"] != "local")
    doc = {"machine": f"{os.cpu_count()} cpus, {platform.processor() or platform.machine()}, "
                      f"load average {os.getloadavg()[0]:.1f}",
           "suite": (args.suite if args.suite else f"ptxmc gen --preset {args.preset} --size {args.size}") +
                    (f", every {args.every}th test" if args.every > 1 else "") +
                    (f", first {args.limit}" if args.limit else "") + f": {len(items)} tests",
           "rows": rows, "identical_results": same, "echo": echoes,
           "dask_cluster_start_and_stop_s": round(t_start, 2),
           "dask_overhead_vs_local_per_test": round(dask["ms_per_test_per_worker"] /
                                                    local["ms_per_test_per_worker"] - 1, 3)}
    print(json.dumps(doc, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main_())
