"""Time `ptxmc fix` to a proven-minimal repair: every buggy/fixed pair of litmus/patterns and
litmus/tensorcore (tests/fix_cases.py), both searches, one process.

    python bench/fix.py [--search cegis|exhaustive|both] [--repeat N] [--mutants] [--json FILE]

For each case: the wall and CPU seconds of `checker.repair.fix.fix` with `max_repairs=1` (the
first repair is the proven least cost; the full list of equal-cost repairs is extra work) and no
explanations, from the original test to the proven repair, candidate generation and the re-check
included; the best of --repeat runs. Prints per case and the median, 90th percentile and max per
search. --mutants adds the weakening mutants of litmus/async and litmus/tensorcore.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.repair.fix import fix  # noqa: E402
from checker.resources import resolve_model  # noqa: E402
from tests.fix_cases import mutant_cases, pattern_cases  # noqa: E402


def run(cases, method: str, repeat: int, model) -> list[dict]:
    rows = []
    for c in cases:
        best = None
        for _ in range(repeat):
            w, cpu = time.perf_counter(), time.process_time()
            r = fix(c.test, c.target, model, method=method, max_repairs=1, explain=False, budget=300)
            w, cpu = time.perf_counter() - w, time.process_time() - cpu
            if best is None or cpu < best["cpu"]:
                best = {"case": c.id, "status": r.status, "proven": r.proven, "cost": r.cost,
                        "documented": c.cost, "wall": w, "cpu": cpu, "sessions": r.stats.get("sessions", 0),
                        "proposals": r.stats.get("proposals", 0), "candidates": r.candidates}
        rows.append(best)
        print(f"{method:10s} {best['case'][:70]:70s} {best['status']:9s} cost {best['cost']!s:>3s} "
              f"{best['cpu']:6.2f}s cpu {best['wall']:6.2f}s wall  {best['sessions']:3d} sessions "
              f"{best['candidates']:4d} candidates", flush=True)
    return rows


def summary(rows: list[dict], key: str = "cpu") -> dict:
    ts = sorted(r[key] for r in rows)
    return {"n": len(ts), "median": statistics.median(ts), "p90": ts[min(len(ts) - 1, int(0.9 * len(ts)))],
            "max": ts[-1], "slowest": max(rows, key=lambda r: r[key])["case"],
            "proven": sum(1 for r in rows if r["proven"]), "repaired": sum(1 for r in rows if r["status"] == "repaired")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--search", choices=("cegis", "exhaustive", "both"), default="both")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--mutants", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    model = resolve_model("ptx")
    cases = pattern_cases() + (mutant_cases() if args.mutants else [])
    out = {}
    for method in (("cegis", "exhaustive") if args.search == "both" else (args.search,)):
        rows = run(cases, method, args.repeat, model)
        out[method] = {"rows": rows, "cpu": summary(rows, "cpu"), "wall": summary(rows, "wall")}
    print()
    for method, d in out.items():
        for k in ("cpu", "wall"):
            s = d[k]
            print(f"{method:10s} {k:4s}: {s['n']} cases, {s['repaired']} repaired, {s['proven']} proven; "
                  f"median {s['median']:.2f} s, p90 {s['p90']:.2f} s, max {s['max']:.2f} s ({s['slowest']})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
