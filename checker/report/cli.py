"""`ptxmc report [PATHS] [--hw RESULTS...] [--out reports/NAME]`: a conformance report folder
with index.html, report.md, report.json and junit.xml (see reports/README.md)."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def add_report_subcommand(subparsers) -> None:
    p = subparsers.add_parser("report", help="conformance report: HTML, Markdown, JSON, JUnit",
                              description="Check suites, explain every verdict, compare with hardware "
                                          "histograms, and write a report folder (atomically).")
    p.add_argument("paths", nargs="*", help="files or folders (default: the bundled litmus/)")
    p.add_argument("--hw", nargs="+", action="extend", default=[], metavar="RESULTS",
                   help="hardware histogram JSON files (ptxmc hw run)")
    p.add_argument("--out", default="reports/latest", help="the report folder (default reports/latest)")
    p.add_argument("--model", default=None, help="model name (axioms/NAME.cat) or path; default ptx")
    p.add_argument("--option", action="append", default=[], help="model option (repeatable)")
    p.add_argument("--timeout", type=float, default=60.0, help="per-test time limit in seconds")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--layout", choices=("auto", "builtin", "graphviz"), default="auto",
                   help="pictures: Graphviz when installed (auto), the built-in layout, or Graphviz only")
    p.add_argument("--max-witnesses", type=int, default=8, help="witness pictures per test (default 8)")
    p.add_argument("--no-blame", action="store_true", help="skip axiom blame and synchronization mutations")
    p.add_argument("--timing", action="store_true", help="include timings (the bytes then vary run to run)")
    p.add_argument("--dot", action="store_true", help="also write every picture as DOT under dot/")
    p.add_argument("--screenshot", action="store_true",
                   help="also save screenshot.png of the page, taken with headless Chromium if installed")
    p.set_defaults(func=handler)


def handler(args) -> int:
    from ..resources import LITMUS_DIR, bundled
    from .build import build

    paths = [bundled(p) for p in args.paths] or [str(LITMUS_DIR)]
    for p in list(paths) + list(args.hw):
        if not Path(p).exists():
            print(f"ptxmc: no such file or folder: {p}", file=sys.stderr)
            return EXIT_USAGE
    progress = None
    if sys.stderr.isatty():
        done = [0]

        def tick(_r):
            done[0] += 1
            print(f"\r{done[0]} tests", end="", file=sys.stderr, flush=True)
        progress = tick
    report = build(paths, args.model, args.option, args.timeout, max(1, args.jobs), args.layout, args.hw,
                   args.max_witnesses, not args.no_blame, args.timing, progress)
    from ..pool import sigint_deferred

    with sigint_deferred():             # a second Ctrl-C must not cut the report short
        return _write(args, report, progress)


def _write(args, report, progress) -> int:
    from . import browser
    from .build import render, write_tree
    from .html import slug

    if progress:
        print("\r", end="", file=sys.stderr)
    files: dict[str, str | bytes] = dict(render(report))
    if args.dot:
        from ..results.witness import graph_dot

        for t in report.tests:
            pics = [p for _, p in t.witnesses] + [f.picture for f in t.forbidden if f.picture] \
                + ([t.undefined] if t.undefined else [])
            for k, pic in enumerate(pics):
                files[f"dot/{slug(t.result.name)[2:]}/{k}.dot"] = graph_dot(pic.graph)
    if args.screenshot:
        if browser.find() is None:
            print("ptxmc: no Chromium found: no screenshot", file=sys.stderr)
        else:
            with tempfile.TemporaryDirectory(prefix="ptxmc-report-") as d:
                page = Path(d) / "index.html"
                page.write_text(files["index.html"], encoding="utf-8")
                browser.screenshot(page, Path(d) / "screenshot.png")
                files["screenshot.png"] = (Path(d) / "screenshot.png").read_bytes()
    out = write_tree(args.out, files)
    s = [t.result for t in report.tests]
    from ..harness.compare import BAD
    from ..results.output import summary

    bad_hw = any(c.verdict in BAD for c in report.hardware)

    print(f"{summary(s)}; report in {out}/ (" + ", ".join(f for f in sorted(files) if "/" not in f) + ")")
    if report.interrupted:
        print(f"ptxmc: interrupted: {report.interrupted[0]} of {report.interrupted[1]} tests run; "
              "the report holds those and says so", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if all(r.ok for r in s) and not bad_hw else EXIT_FAIL
