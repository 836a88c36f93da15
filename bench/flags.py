"""The undefined-behaviour questions of a Z3 check, phase by phase: encoding, the flag query (does
any flag fire on a consistent execution?), and the report's least edge (the engine's flag_least:
by bisection over the statically possible edges before the witness's, a query per range; beside
it flag_least_linear, its specification: one query per edge, stopping at the first yes).

    python bench/flags.py                      # the `uninit` family (bench/families.py), n = 1..5
    python bench/flags.py --n 2,4 --family uninit --repeat 5

One process; CPU seconds per phase (time.process_time), each size after a warm-up of the
smallest. The columns: n, events, the flag reported, the statically possible edges of its
relation before the witness's (= the linear scan's queries at most), encoding, flag query, then
flag_least and the linear scan: CPU seconds and queries (Z3 checks) each.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from families import FAMILIES  # noqa: E402


def phases(text: str, linear_first: bool = False) -> dict:
    from checker.front.litmus import load_text
    from checker.resources import resolve_model
    from checker.verdict.open import open_session

    test = load_text(text, "<bench>")[0]
    s = open_session(test, resolve_model(None), engine="z3")
    t0 = time.process_time()
    eng = s.engine                      # lowering and encoding
    t1 = time.process_time()
    fired = {n: eng.flag_witness(n) for n in eng.flag_names}
    t2 = time.process_time()
    row = {"events": len(s.es.events), "encode": t1 - t0, "flags": t2 - t1, "flag": "-", "before": 0,
           "least": 0.0, "linear": 0.0, "q_least": 0, "q_linear": 0}
    checks = [0]
    check = eng._check_array

    def counted(*a):
        checks[0] += 1
        return check(*a)
    eng._check_array = counted
    for name, ex in fired.items():
        if ex is None:
            continue
        ev = s.evaluation(ex)
        i = next(i for i, (c, on) in enumerate(ev.checks) if c.name == name and c.flag and on)
        kind, value = ev.check_values[i]
        edges = sorted(value) if kind == "rel" else [(e, e) for e in sorted(value)]
        keys = eng.enc.flags[name][2]
        below = edges[0]
        row["before"] = sum(1 for k in keys if (k if isinstance(k, tuple) else (k, k)) < below)
        order = (("least", eng.flag_least), ("linear", eng.flag_least_linear))
        for key, f in reversed(order) if linear_first else order:   # the second runs on a warmer solver
            checks[0] = 0
            t3 = time.process_time()
            f(name, below)
            row[key] = time.process_time() - t3
            row["q_" + key] = checks[0]
        row["flag"] = name
        break
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="uninit")
    ap.add_argument("--n", default="1,2,3,4,5")
    ap.add_argument("--repeat", type=int, default=1, help="medians of this many runs (each a new session), "
                    "alternating which of the two searches runs first")
    args = ap.parse_args(argv)
    fam = FAMILIES[args.family]
    sizes = [int(x) for x in args.n.split(",")]
    phases(fam.make(sizes[0]))          # warm-up: imports, the model
    print("| n | events | flag | edges before the witness's | encode s | flag query s | flag_least s (queries) "
          "| linear scan s (queries) |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        runs = [phases(fam.make(n), linear_first=bool(i % 2)) for i in range(args.repeat)]
        r = {k: statistics.median(x[k] for x in runs) if isinstance(runs[0][k], float) else runs[0][k]
             for k in runs[0]}
        print(f"| {n} | {r['events']} | {r['flag']} | {r['before']} | {r['encode']:.3f} | {r['flags']:.3f} | "
              f"{r['least']:.4f} ({r['q_least']}) | {r['linear']:.4f} ({r['q_linear']}) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
