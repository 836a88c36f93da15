"""The nightly fuzz campaign: the CI fuzz targets (tests/fuzz/targets.py) with a larger budget and
a fresh seed, recording every failure instead of stopping at the first.

    python tests/fuzz/campaign.py --inputs 100000 [--seed N] [--out DIR] [--only NAME,...]

The budget is shared between the targets in proportion to their CI budgets. Every input that
breaks a property (tests/fuzz/props.py: no unlocated exception, determinism, metamorphic
relations, output safety, bounded lowering) - an exception that is not a located CheckerError, a
broken assertion, or a single input using more than --hang CPU seconds - is written to
DIR/failures.jsonl, and the failures are grouped by signature (target, exception type, the
innermost checker/ frame). Exit code: 0 no failure, 1 failures found.

Not collected by pytest (the file name does not start with test_).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings  # noqa: E402

from tests.fuzz import props  # noqa: E402
from tests.fuzz.targets import TARGETS  # noqa: E402


class Hang(Exception):
    """One input used more than --hang CPU seconds, or blocked for ten times that (wall clock)."""


def _on_cpu(signum, frame):
    raise Hang("input ran past the hang bound (CPU time)")


def _on_wall(signum, frame):
    raise Hang("input blocked past ten times the hang bound (wall clock)")


def signature(target: str, exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/checker/" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].name}" if frames else "-"
    return f"{target} | {type(exc).__name__} | {where}"


def run_target(name: str, n: int, seed: int, hang: float, failures: list, out, stop_at: float = float("inf")) -> dict:
    target = TARGETS[name]
    stats = {"inputs": 0, "failures": 0, "slowest": 0.0, "skipped": 0}

    @settings(max_examples=n, database=None, deadline=None, derandomize=False, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @hseed(seed)
    @given(target.strategy())
    def body(x):
        if time.time() >= stop_at:            # past --stop-at: the rest is not run (and not counted)
            stats["skipped"] += 1
            return
        stats["inputs"] += 1
        t0 = time.perf_counter()
        # CPU time bounds the work (a busy machine does not make an input "hang"); a wall-clock
        # bound ten times as long catches an input that blocks without using the CPU (a FIFO)
        signal.setitimer(signal.ITIMER_PROF, hang)
        signal.setitimer(signal.ITIMER_REAL, 10 * hang)
        try:
            target.check(x)
        except (Exception, RecursionError) as e:          # noqa: BLE001 - every failure is recorded
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            stats["failures"] += 1
            rec = {"target": name, "signature": signature(name, e), "error": f"{type(e).__name__}: {e}"[:2000],
                   "input": repr(x)[:20000], "trace": traceback.format_exc()[-4000:]}
            failures.append(rec)
            out.write(json.dumps(rec) + "\n")
            out.flush()
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            stats["slowest"] = max(stats["slowest"], time.perf_counter() - t0)

    start = time.perf_counter()
    before = props.REACHED.copy()
    body()
    stats["seconds"] = time.perf_counter() - start
    stats["reached"] = dict(props.REACHED - before)
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=10_000, help="total inputs, shared by CI budget")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    ap.add_argument("--out", default="fuzz-campaign", help="folder for failures.jsonl and summary.json")
    ap.add_argument("--only", default="", help="comma-separated target names")
    ap.add_argument("--stop-at", default="", metavar="HH:MM",
                    help="UTC time after which no input is run (the rest are counted as skipped): a campaign "
                         "that must end by then still writes its summary with the exact numbers")
    ap.add_argument("--hang", type=float, default=60.0,
                    help="CPU seconds one input may take (and 10x that in wall-clock time, if it blocks)")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(TARGETS)
    stop_at = float("inf")
    if args.stop_at:
        import datetime as dt

        hh, mm = map(int, args.stop_at.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        stop_at = now.replace(hour=hh, minute=mm, second=0, microsecond=0).timestamp()
    weights = {n: TARGETS[n].ci_budget for n in names}
    total_w = sum(weights.values())
    budget = {n: max(1, round(args.inputs * w / total_w)) for n, w in weights.items()}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGPROF, _on_cpu)
    signal.signal(signal.SIGALRM, _on_wall)
    failures: list = []
    rows = {}
    print(f"ptxmc fuzz campaign: {sum(budget.values())} inputs, seed {args.seed}")
    with open(out_dir / "failures.jsonl", "w", encoding="utf-8") as out:
        for n in names:
            if time.time() >= stop_at:
                rows[n] = {"inputs": 0, "failures": 0, "slowest": 0.0, "skipped": budget[n], "seconds": 0.0,
                           "reached": {}}
            else:
                rows[n] = run_target(n, budget[n], args.seed, args.hang, failures, out, stop_at)
            r = rows[n]
            skipped = f"  ({r['skipped']} skipped: past --stop-at)" if r["skipped"] else ""
            print(f"  {n:12} {r['inputs']:6} inputs  {r['seconds']:7.1f} s  slowest {r['slowest']:5.2f} s  "
                  f"{r['failures']} failures  reached {r['reached']}{skipped}", flush=True)
    sigs = Counter(f["signature"] for f in failures)
    first = defaultdict(str)
    for f in failures:
        first[f["signature"]] = first[f["signature"]] or f["error"][:160]
    total_inputs = sum(r["inputs"] for r in rows.values())
    total_time = sum(r["seconds"] for r in rows.values())
    print(f"total: {total_inputs} inputs in {total_time:.1f} s, {len(failures)} failures, "
          f"{len(sigs)} distinct")
    for s, k in sigs.most_common():
        print(f"  {k:5}x  {s}\n         {first[s]}")
    summary = {"seed": args.seed, "inputs": total_inputs, "skipped": sum(r["skipped"] for r in rows.values()), "seconds": round(total_time, 1),
               "failures": len(failures), "distinct": dict(sigs), "targets": rows}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
