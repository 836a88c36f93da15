"""ptxmc beside a peer, herd7, on the same shapes: one `ptxmc outcomes` and one `herd7` run per
test, as a user runs them (a new process each, wall clock and CPU time), and the ratio per size.

    python bench/peer.py                          # mp, sb, lb, iriw at their default sizes
    python bench/peer.py sb lb --n 2,3,4 --repeat 5
    python bench/peer.py --cap 30 --json /tmp/peer.json --markdown

This script builds nothing: it uses the `herd7` on PATH (or --herd7 PATH), and without one it
says so and exits 0. bench/README.md says how to build herd7 from herdtools7's sources.

The shapes: ptxmc's test is bench/families.py's (PTX, checked under axioms/ptx.cat); herd7's
is the same shape in C11 (herd7 has no PTX model), checked under herd's rc11.cat, with the
PTX instructions mapped to C11 atomics:

    st.weak / st.relaxed.gpu / ld.relaxed.gpu   ->  memory_order_relaxed
    st.release.gpu / ld.acquire.gpu             ->  memory_order_release / memory_order_acquire
    fence.sc.gpu                                ->  atomic_thread_fence(memory_order_seq_cst)

(mp's first store is a weak one in PTX and a relaxed atomic in C11, so that neither test has a
data race). Both tools list every reachable final state over the same registers (herd7's
`locations` names every register), and the counts must be equal - the script stops with an
error where they are not: the comparison would not be of the same question.

Times: each tool runs --repeat times (default 3), interleaved (herd7, ptxmc, herd7, ...; with
--grouped each tool's runs back to back instead), after
one warm-up run of each per test (with --before or --before-tree, an older ptxmc too; with --warm,
ptxmc served by a warm server as well, its CPU time counting the server's share); the medians are
printed, wall and CPU (user + system of the
child, from getrusage) - on a shared machine CPU time is the steadier number. A tool is not run
on the larger sizes of a family once one of its runs passes --cap seconds (wall).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from families import FAMILIES  # noqa: E402

SIZES = {"mp": (2, 3, 4, 5, 6, 7, 8, 9), "sb": (2, 3, 4, 5, 6, 7, 8, 9, 10), "lb": (2, 3, 4, 5, 6, 7, 8, 9, 10),
         "iriw": (2, 3, 4)}


# -- the C11 tests ----------------------------------------------------------------------------

def _thread(i: int, locs: list[str], body: list[str]) -> str:
    params = ", ".join(f"atomic_int* {x}" for x in dict.fromkeys(locs))
    return f"P{i} ({params}) {{\n" + "".join(f"  {line}\n" for line in body) + "}\n"


def _st(x: str, order: str) -> str:
    return f"atomic_store_explicit({x}, 1, memory_order_{order});"


def _ld(r: str, x: str, order: str) -> str:
    return f"int {r} = atomic_load_explicit({x}, memory_order_{order});"


_FENCE = "atomic_thread_fence(memory_order_seq_cst);"


def c_test(family: str, n: int) -> tuple[str, list[str]]:
    """The C11 litmus text of bench/families.py's test `family` n (herd's thread numbering:
    thread i of the list is P{i}), and its registers as herd names them (`0:r0`)."""
    threads: list[tuple[list[str], list[str], list[str]]] = []     # (locations, body, registers)
    if family == "mp":
        threads.append((["x", "f1"], [_st("x", "relaxed"), _st("f1", "release")], []))
        for i in range(1, n - 1):
            threads.append(([f"f{i}", f"f{i + 1}"], [_ld("r0", f"f{i}", "acquire"), _st(f"f{i + 1}", "release")],
                            ["r0"]))
        threads.append(([f"f{n - 1}", "x"], [_ld("r0", f"f{n - 1}", "acquire"), _ld("r1", "x", "relaxed")],
                        ["r0", "r1"]))
    elif family == "sb":
        for i in range(n):
            a, b = f"x{i}", f"x{(i + 1) % n}"
            threads.append(([a, b], [_st(a, "relaxed"), _FENCE, _ld("r0", b, "relaxed")], ["r0"]))
    elif family == "lb":
        for i in range(n):
            a, b = f"x{i}", f"x{(i + 1) % n}"
            threads.append(([a, b], [_ld("r0", a, "acquire"), _st(b, "release")], ["r0"]))
    elif family == "iriw":
        threads.append((["x"], [_st("x", "relaxed")], []))
        threads.append((["y"], [_st("y", "relaxed")], []))
        for i in range(n):
            a, b = ("x", "y") if i % 2 == 0 else ("y", "x")
            threads.append(([a, b], [_ld("r0", a, "relaxed"), _FENCE, _ld("r1", b, "relaxed")], ["r0", "r1"]))
    else:
        raise KeyError(family)
    regs = [f"{i}:{r}" for i, (_, _, rs) in enumerate(threads) for r in rs]
    text = f"C {family.upper()}-{n}\n{{}}\n" + "".join(_thread(i, locs, body) for i, (locs, body, _) in enumerate(threads))
    text += f"locations [{'; '.join(regs)};]\n"
    text += "exists (" + " /\\ ".join(f"{r}=0" for r in regs) + ")\n"
    return text, regs


# -- running ----------------------------------------------------------------------------------

def ptxmc_command() -> list[str]:
    script = Path(sys.executable).parent / "ptxmc"
    return [str(script)] if script.exists() else [sys.executable, "-m", "checker"]


def timed(argv: list[str], cwd: str, timeout: float, env: dict | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of one run; RuntimeError if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, r.stdout


class Warm:
    """A warm server (checker.warm) for the ptxmc runs: started in `folder`, its log read after
    each run so that a run's CPU time adds the server's share (the forked command, and the
    server's own CPU since the previous command ended: the request, the staleness check, the
    fork, the answer; an older server's supervisor process too) to the `ptxmc` process's."""

    def __init__(self, folder: Path, env: dict | None = None, python: str | None = None):
        folder.mkdir(mode=0o700)
        self.log = folder / "log.jsonl"
        self.env = {**(env or os.environ), "PTXMC_WARM_DIR": str(folder)}
        self.python = python or sys.executable
        r = subprocess.run([self.python, "-m", "checker.warm.server", "--detach", "--log", str(self.log)],
                           env=self.env, capture_output=True, text=True, cwd=folder)   # (not a checkout's package)
        if r.returncode:
            raise RuntimeError(f"no warm server: {r.stderr.strip()}")
        self.env["PTXMC_WARM"] = "1"
        self.seen = 0

    def served_cpu(self) -> float:
        lines = self.log.read_text().splitlines()
        new, self.seen = lines[self.seen:], len(lines)
        served = [json.loads(x) for x in new if '"served"' in x]
        if len(served) != 1:
            raise RuntimeError(f"the warm server did not serve this run: {new}")
        e = served[0]
        return e["cpu_s"] + e.get("supervisor_cpu_s", 0) + e["server_cpu_s"]

    def stop(self) -> None:
        subprocess.run([self.python, "-m", "checker.warm.server", "--stop"], env=self.env, capture_output=True,
                       cwd=self.log.parent)


def states(out: str) -> int:
    m = re.search(r"^States (\d+)$", out, re.M)
    if m is None:
        raise RuntimeError(f"no 'States N' line in:\n{out[:500]}")
    return int(m.group(1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("families", nargs="*", default=list(SIZES), help=f"of {', '.join(SIZES)}")
    ap.add_argument("--n", help="sizes, e.g. 2,3,4 (default: each family's own)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cap", type=float, default=60.0, help="wall seconds past which a tool stops growing a family")
    ap.add_argument("--herd7", default=None, help="the herd7 binary (default: herd7 on PATH)")
    ap.add_argument("--before", metavar="PTXMC", help="another ptxmc executable (an older install), run "
                    "interleaved with the others and shown in its own columns; with --warm also served by a "
                    "warm server of that install's interpreter (the `python` beside it), 'warm-before'")
    ap.add_argument("--herd-model", default="rc11.cat")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--before-tree", metavar="DIR",
                    help="another ptxmc source tree (a checkout, or `git archive` of an older commit), run by "
                         "this ptxmc's interpreter with PYTHONPATH=DIR, in the 'before' columns; with --warm "
                         "also served by a warm server of its own ('warm-before')")
    ap.add_argument("--grouped", action="store_true",
                    help="run each tool's rounds back to back (its caches stay warm) instead of interleaving the tools")
    ap.add_argument("--warm", action="store_true",
                    help="also run ptxmc with a warm server (checker.warm; its CPU time counted), column 'warm'")
    args = ap.parse_args(argv)
    herd = args.herd7 or shutil.which("herd7")
    if herd is None:
        print("bench/peer.py: no herd7 on PATH (or --herd7): nothing to compare with; "
              "bench/README.md says how to build it")
        return 0
    unknown = [f for f in args.families if f not in SIZES]
    if unknown:
        ap.error(f"unknown family {', '.join(unknown)} (of {', '.join(SIZES)})")
    ptxmc = ptxmc_command()
    env_note = f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs"
    print(f"herd7: {herd} (-model {args.herd_model}); ptxmc: {' '.join(ptxmc)}; {env_note}")
    rows = []
    if args.before and args.before_tree:
        ap.error("--before and --before-tree are two ways to name the 'before' ptxmc: give one")
    before_env = None if args.before_tree is None else \
        {**os.environ, "PYTHONPATH": str(Path(args.before_tree).resolve())}
    warm_before = args.warm and (before_env is not None or args.before is not None)
    tools = ("herd7",) + (("before",) if args.before or before_env else ()) + ("ptxmc",) + \
        (("warm-before",) if warm_before else ()) + (("warm",) if args.warm else ())
    head = ("family", "n", "states", *(f"{t} {k}" for t in tools for k in ("wall", "cpu")),
            *(f"{t}/herd7 {k}" for t in tools[1:] for k in ("wall", "cpu")))
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print("  ".join(f"{h:>10}" for h in head))
    with tempfile.TemporaryDirectory(prefix="ptxmc-peer-") as d:
        warm = Warm(Path(d) / "warm") if args.warm else None
        servers = {"warm": warm}
        try:
            if warm_before:
                python = str(Path(args.before).parent / "python") if args.before else None
                servers["warm-before"] = Warm(Path(d) / "warm-before", before_env, python)
            if before_env is not None:
                servers["before"] = before_env
            _table(args, herd, ptxmc, d, servers, rows, tools)
        finally:
            for server in servers.values():
                if isinstance(server, Warm):
                    server.stop()
    print(f"after: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps({"herd7": herd, "ptxmc": ptxmc, "warm": args.warm, "rows": rows},
                                              indent=2) + "\n")
    return 0


def _table(args, herd: str, ptxmc: list[str], d: str, servers: dict, rows: list, tools: tuple) -> None:
    for family in args.families:
        sizes = [int(x) for x in args.n.split(",")] if args.n else SIZES[family]
        stopped: set[str] = set()
        for n in sizes:
            if set(tools) <= stopped:
                break
            y, c = Path(d) / f"{family}{n}.yaml", Path(d) / f"{family}{n}.litmus"
            y.write_text(FAMILIES[family].make(n))
            c.write_text(c_test(family, n)[0])
            runs = {"herd7": [herd, "-model", args.herd_model, str(c)], "ptxmc": ptxmc + ["outcomes", str(y)]}
            if args.before:
                runs["before"] = [args.before, "outcomes", str(y)]
            for tool in ("before", "warm", "warm-before"):
                if servers.get(tool) is not None and tool not in runs:
                    runs[tool] = runs["before"] if tool == "warm-before" and args.before else runs["ptxmc"]
            runs = {t: runs[t] for t in tools}
            got: dict[str, list[tuple[float, float]]] = {k: [] for k in runs if k not in stopped}
            counts: dict[str, int] = {}
            served: dict[str, list[float]] = {k: [] for k in got}     # a warm run's server-side CPU
            rounds = [(i, tool) for i in range(args.repeat + 1) for tool in list(got)]   # round 0 warms up
            if args.grouped:
                rounds.sort(key=lambda r: list(got).index(r[1]))
            for i, tool in rounds:
                server = servers.get(tool)
                env = server.env if isinstance(server, Warm) else server      # (before: its PYTHONPATH)
                wall, cpu, out = timed(runs[tool], d, timeout=max(args.cap * 10, 600), env=env)
                if isinstance(server, Warm):
                    share = server.served_cpu()
                    cpu += share
                    if i:
                        served[tool].append(share)
                counts[tool] = states(out)
                if i:
                    got[tool].append((wall, cpu))
                if wall > args.cap:
                    stopped.add(tool)
            if len(set(counts.values())) > 1:
                raise SystemExit(f"{family} n={n}: the tools list different numbers of states ({counts}): "
                                 f"not the same question")
            med = {t: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                   for t, v in got.items() if v}
            row = {"family": family, "n": n, "states": next(iter(counts.values())),
                   **{f"{t}_{k}": med[t][j] for t in med for j, k in enumerate(("wall", "cpu"))},
                   **{f"{t}_served_cpu": statistics.median(v) for t, v in served.items() if v}}
            for t in tools[1:]:
                if "herd7" in med and t in med:
                    row[f"{t}_wall_ratio"] = med[t][0] / med["herd7"][0]
                    row[f"{t}_cpu_ratio"] = med[t][1] / max(med["herd7"][1], 1e-3)
            rows.append(row)
            cells = [family, str(n), str(row["states"])]
            for t in tools:
                cells += [f"{row[f'{t}_wall']:.3f}" if f"{t}_wall" in row else "-",
                          f"{row[f'{t}_cpu']:.3f}" if f"{t}_cpu" in row else "-"]
            for t in tools[1:]:
                cells += [f"{row[f'{t}_{k}_ratio']:.2f}" if f"{t}_{k}_ratio" in row else "-" for k in ("wall", "cpu")]
            print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(f"{x:>10}" for x in cells),
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
