"""Scaling families with both engines: events vs wall time, until each engine passes a time cap.

    python bench/scaling.py [FAMILY ...] [--cap-brute 60] [--cap-z3 60] [--max-n N] [--n 4,5]
                            [--engines z3,brute,auto] [--default-limits] [--json FILE] [--markdown]
    python bench/scaling.py ring ring:stages=4,consumer=wgmma --n 4,6 --engines auto --default-limits

Families are in bench/families.py (mp, iriw, sb, lb, co, tma, ring; a family with parameters
takes them after a colon). For each size, each engine checks the
test as `ptxmc run` would (undefined-behaviour flags, outcome enumeration, the sanity run for
every expectation) in a forked child stopped at the engine's cap (CPU seconds, see WALL_FACTOR);
once an engine passes its cap (or is otherwise stopped) it is not run on the larger sizes of
that family. The brute
force engine runs without its candidate limit here: the time cap is the limit.

Columns: n, events (including the initial writes), brute-force candidates (rf choices x order
choices), allowed outcomes, the verdict, each engine's wall and CPU time (CPU is the steadier
number on a shared machine), and brute/z3 in CPU time (a lower bound, cap/z3, where brute force
passed its cap).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from families import FAMILIES, NotSupported, build, family  # noqa: E402

ENGINES = ("brute", "z3", "auto")


# The cap counts CPU seconds of the child (RLIMIT_CPU), so that a busy machine does not stop a
# test early; a wall-clock backstop of WALL_FACTOR x cap (+ WALL_EXTRA s) covers a child that
# stops making progress. On an idle machine CPU time and wall time agree.
WALL_FACTOR, WALL_EXTRA = 6.0, 30.0


def _child(conn, family: str, n: int, engine: str, cap: float, default_limits: bool, overrides=()) -> None:
    from dataclasses import replace

    from checker import limits
    from checker.resources import resolve_model
    from checker.verdict.check import check_test

    # The time cap is the only limit: no candidate, event or Z3 resource limit, and Z3's own
    # (wall-clock) timeout beyond the backstop. With --default-limits, ptxmc's defaults (what a
    # user gets), the wall-clock timeout aside.
    wall = cap * WALL_FACTOR + WALL_EXTRA
    if default_limits:
        limits.set_current(replace(limits.current().override(list(overrides)), timeout=wall))
    else:
        limits.set_current(replace(limits.current(), candidates=10 ** 30, events=10 ** 6, rlimit=0,
                                   outcomes=10 ** 6, timeout=wall))
    import checker.engines.brute  # noqa: F401  (imported before the clock starts: z3 takes ~0.1 s)
    import checker.engines.smt  # noqa: F401

    model = resolve_model("ptx")
    # Warm up on the family's smallest test: the first check in a process pays one-time costs
    # (Z3's context, lazy imports) that a batch run pays once.
    check_test(build(family, FAMILIES[family.partition(":")[0]].sizes[0]), model, engine=engine, timeout=wall)
    test = build(family, n)
    used = time.process_time()
    resource.setrlimit(resource.RLIMIT_CPU, (int(used + cap) + 1, int(used + cap) + 2))
    start, cpu = time.perf_counter(), time.process_time()
    r = check_test(test, model, engine=engine, timeout=wall)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    conn.send({"status": r.status, "message": r.message, "time": elapsed, "cpu": cpu,
               "outcomes": len(r.outcomes), "rss_mib": round(rss, 1)})
    conn.close()


def run_one(family: str, n: int, engine: str, cap: float, default_limits: bool = False, overrides=()) -> dict:
    """Check one generated test with one engine in a child process, stopped at the cap."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(child, family, n, engine, cap, default_limits, tuple(overrides)))
    p.start()
    child.close()
    got = None
    if parent.poll(cap * WALL_FACTOR + WALL_EXTRA + 10.0):
        try:
            got = parent.recv()
        except EOFError:
            got = None
    if got is None:
        if p.is_alive():
            p.kill()
        p.join()
        if p.exitcode in (-signal.SIGXCPU, -signal.SIGKILL):
            return {"status": "cap", "message": f"passed the {cap:g} s cap", "time": None}
        return {"status": "crash", "message": f"child exited with {p.exitcode}", "time": None}
    p.join()
    if got["status"] == "unknown" or got["cpu"] > cap:
        got["status"], got["message"] = "cap", f"passed the {cap:g} s cap ({got['message']})"
    return got


# Strict partial orders on k labelled elements (OEIS A001035): the brute-force engine's choices
# for one coherence (or fence-SC) class of k writes after the initial one.
PARTIAL_ORDERS = (1, 1, 3, 19, 219, 4231, 130023, 6129859, 431723379, 44511042511, 6611065248783)


def candidates(test) -> tuple[int, int]:
    """(brute-force candidate executions, events) of a test: rf choices x order choices."""
    from math import prod

    from checker.isa.registry import lower

    if test.branches:                       # (judged path by path)
        return 0, 0
    es = lower(test)
    n = prod(len(ws) for ws in es.rf_may.values())
    for o in es.orders:
        for cls in o.classes:
            n *= PARTIAL_ORDERS[sum(1 for e in cls if e not in o.first)]
    return n, len(es.events)


def run_family(name: str, caps: dict[str, float], engines, max_n: int | None, out=print,
               sizes: set[int] | None = None, default_limits: bool = False, overrides=()) -> dict:
    fam = family(name)
    rows, stopped, skipped = [], {}, None
    for n in fam.sizes:
        if max_n is not None and n > max_n:
            break
        if sizes is not None and n not in sizes:
            continue
        try:
            test = build(name, n)
        except NotSupported as e:
            skipped = str(e)
            break
        cands, events = candidates(test)
        row = {"n": n, "events": events, "candidates": cands}
        for eng in engines:
            if eng in stopped:
                row[eng] = {"status": "skip", "message": stopped[eng], "time": None}
                continue
            res = run_one(name, n, eng, caps[eng], default_limits, overrides)
            row[eng] = res
            if res["status"] in ("cap", "crash", "unknown", "error"):
                stopped[eng] = f"{res['status']} at n={n}"
        rows.append(row)
        out(_line(row, engines, caps))
        if all(e in stopped for e in engines):
            break
    return {"family": name, "what": fam.what, "rows": rows, "skipped": skipped}


def _fmt_time(r: dict | None, key: str = "time") -> str:
    if r is None or r["status"] == "skip":
        return "-"
    if r["status"] == "cap":
        return "> cap"
    if r.get(key) is None:
        return r["status"]
    return f"{r[key]:.3f}"


def _done(row, engines) -> list[dict]:
    return [row[e] for e in engines if row.get(e) and row[e]["status"] not in ("cap", "skip", "crash")]


def _verdict(row, engines) -> str:
    done = _done(row, engines)
    text = "/".join(sorted({r["status"] for r in done})) or "-"
    if len({r["outcomes"] for r in done}) > 1:
        text += " (OUTCOME COUNTS DIFFER)"
    return text


def _outcomes(row, engines) -> str:
    done = _done(row, engines)
    return str(done[0]["outcomes"]) if done else "-"


def _ratio(row, caps) -> str:
    """brute / z3, in CPU time; a lower bound when brute force passed its cap."""
    b, z = row.get("brute"), row.get("z3")
    if not b or not z or z["status"] in ("cap", "skip", "crash"):
        return "-"
    if b["status"] == "cap":
        return f"> {caps['brute'] / max(z['cpu'], 1e-6):.0f}x"
    if b["status"] in ("skip", "crash"):
        return "-"
    return f"{b['cpu'] / max(z['cpu'], 1e-6):.1f}x"


HEADER = ("n", "events", "candidates", "outcomes", "verdict", "brute s", "brute cpu s", "z3 s", "z3 cpu s",
          "brute/z3", "auto s", "auto cpu s")


def _cells(row, engines, caps) -> list[str]:
    return [str(row["n"]), str(row["events"]), f"{row['candidates']:,}", _outcomes(row, engines),
            _verdict(row, engines), _fmt_time(row.get("brute")), _fmt_time(row.get("brute"), "cpu"),
            _fmt_time(row.get("z3")), _fmt_time(row.get("z3"), "cpu"), _ratio(row, caps),
            _fmt_time(row.get("auto")), _fmt_time(row.get("auto"), "cpu")]


def _line(row, engines, caps) -> str:
    return "  ".join(f"{c:>11}" for c in _cells(row, engines, caps))


def markdown(results: list[dict], engines, caps) -> str:
    out = []
    for fam in results:
        out.append(f"### {fam['family']} (n = {fam['what']})\n")
        if fam["skipped"]:
            out.append(f"Skipped: {fam['skipped']}\n")
            continue
        out.append("| " + " | ".join(HEADER) + " |")
        out.append("|" + "---:|" * len(HEADER))
        for row in fam["rows"]:
            out.append("| " + " | ".join(_cells(row, engines, caps)) + " |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("families", nargs="*", help=f"default: all ({', '.join(FAMILIES)})")
    ap.add_argument("--cap-brute", type=float, default=60.0, help="per-test cap for brute force (s)")
    ap.add_argument("--cap-z3", type=float, default=60.0, help="per-test cap for Z3 and auto (s)")
    ap.add_argument("--max-n", type=int, default=None)
    ap.add_argument("--n", help="only these sizes, e.g. 4,5,6 (an engine still stops at its first cap)")
    ap.add_argument("--engines", default="brute,z3", help="of brute, z3, auto (ptxmc's default)")
    ap.add_argument("--default-limits", action="store_true",
                    help="ptxmc's default limits (events, candidates, rlimit, outcomes) instead of none")
    ap.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                    help="with --default-limits: this one changed, as ptxmc's --limit")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables at the end")
    args = ap.parse_args()
    engines = tuple(e for e in ENGINES if e in args.engines.split(","))
    caps = {"brute": args.cap_brute, "z3": args.cap_z3, "auto": args.cap_z3}
    results = []
    for name in args.families or list(FAMILIES):
        if name.partition(":")[0] not in FAMILIES:
            ap.error(f"unknown family {name!r} (families: {', '.join(FAMILIES)})")
        print(f"== {name} (n = {family(name).what}; caps: " +
              ", ".join(f"{e} {caps[e]:g} s" for e in engines) + ")")
        print("  ".join(f"{h:>11}" for h in HEADER))
        fam = run_family(name, caps, engines, args.max_n,
                         sizes=None if args.n is None else {int(x) for x in args.n.split(",")},
                         default_limits=args.default_limits, overrides=args.limit)
        if fam["skipped"]:
            print(f"skipped: {fam['skipped']}")
        results.append(fam)
        sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps({"caps": caps, "results": results}, indent=1) + "\n")
    if args.markdown:
        print()
        print(markdown(results, engines, caps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
