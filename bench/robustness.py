"""How fast ptxmc refuses or stops what it must refuse or stop: the measurements that tests/ used
to assert as wall-clock bounds (issue 37: no test depends on the machine's speed; the tests now
check only that the refusal or the stop happens, and this script measures how long it takes).

    python bench/robustness.py [--repeat 3] [--json FILE]

Each row: the median wall-clock and CPU seconds (this process and its children) of one case:
- alias-bomb: a YAML billion-laughs (9^29 nodes) refused at its first alias;
- events-limit: a 32-thread x 64-instruction test refused while lowering (2,056 events > 128);
- matrix-rows: 2,000 matrix rows of a 128-instruction test refused before any row is built;
- fifo-input: `run` on a FIFO nobody writes, bounded by --timeout 1;
- hung-worker: `run --jobs 2 --timeout 0.5` with one test made to hang: its worker is stopped
  at the hard bound (0.5 + 5 s);
- hard-bound: a Z3 call that runs for hours, stopped by checker.watchdog.hard_bound(1.0).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _grid(threads: int, code: int) -> str:
    lines = ["name: Grid", "threads:"]
    for t in range(threads):
        lines += [f"  P{t}:", f"    at: gpu0.cta{t}", "    code:"]
        lines += [f"      - st.relaxed.gpu.global [x{i % 8}], {i + 1}" for i in range(code)]
    return "\n".join(lines) + "\n"


def _python(code: str, **env) -> None:
    e = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    e.pop("PTXMC_DEBUG", None)
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=e, capture_output=True, timeout=900)


def alias_bomb(tmp: Path) -> None:
    from checker.front.litmus import load_text

    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 30)]
    load_text("\n".join(lines), "bomb.yaml")


def events_limit(tmp: Path) -> None:
    from checker.errors import LimitExceeded
    from checker.front.litmus import load_text
    from checker.isa.registry import lower

    [t] = load_text(_grid(32, 64))
    try:
        lower(t)
    except LimitExceeded:
        return
    raise AssertionError("not refused")


def matrix_rows(tmp: Path) -> None:
    from checker.front.litmus import load_text

    c0 = ", ".join(f"'st.relaxed.gpu.global [x{i % 8}], ${{v}}'" for i in range(64))
    c1 = ", ".join(f"'ld.relaxed.gpu.global r{i}, [x{i % 8}]'" for i in range(64))
    text = (f"name: M${{v}}\nthreads:\n  P0:\n    at: gpu0.cta0\n    code: [{c0}]\n  P1:\n    at: gpu0.cta1\n"
            f"    code: [{c1}]\nmatrix:\n" + "".join(f"  - {{v: {i}}}\n" for i in range(1, 2001)))
    load_text(text, "m.yaml")


def fifo_input(tmp: Path) -> None:
    fifo = tmp / "f.yaml"
    if not fifo.exists():
        os.mkfifo(fifo)
    _python(f"from checker.cli import main; main(['run', {str(fifo)!r}, '--jobs', '0', '--timeout', '1'])")


def hung_worker(tmp: Path) -> None:
    suite = ROOT / "tests" / "fuzz" / "suite.yaml"
    _python(f"from checker.cli import main; main(['run', {str(suite)!r}, '--no-timing', '--jobs', '2', "
            "'--timeout', '0.5'])", PTXMC_TEST_FAULT="hang:MP+weak")


def hard_bound(tmp: Path) -> None:
    from tests.test_instant import _PIGEONS      # the pigeonhole formula the test stops (Z3 needs hours)

    _python(_PIGEONS.format(seconds=1.0))


CASES = {f.__name__.replace("_", "-"): f for f in (alias_bomb, events_limit, matrix_rows, fifo_input, hung_worker,
                                                    hard_bound)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(CASES)
    rows = {}
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            walls, cpus = [], []
            for _ in range(args.repeat):
                w0, c0 = time.perf_counter(), _cpu()
                CASES[name](Path(d))
                walls.append(time.perf_counter() - w0)
                cpus.append(_cpu() - c0)
            rows[name] = {"wall": statistics.median(walls), "cpu": statistics.median(cpus)}
            print(f"{name:14} wall {rows[name]['wall']:7.3f} s   cpu {rows[name]['cpu']:7.3f} s", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
