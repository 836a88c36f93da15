"""`ptxmc report [PATHS] [--hw RESULTS...] [--out reports/NAME]`: a conformance report folder
with index.html, report.md, report.json and junit.xml (see reports/README.md)."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130     # 128 + the signal: 143 SIGTERM


def add_report_subcommand(subparsers) -> None:
    from ..cliargs import add_limit_options, add_output_options

    p = subparsers.add_parser("report", help="conformance report: HTML, Markdown, JSON, JUnit",
                              description="Check suites, explain every verdict, compare with hardware "
                                          "histograms, and write a report folder (atomically).")
    p.add_argument("paths", nargs="*", help="files or folders (default: the bundled litmus/)")
    p.add_argument("--hw", nargs="+", action="extend", default=[], metavar="RESULTS",
                   help="hardware histogram files (ptxmc hw run: .json, .jsonl, litmus7 .log); a folder or a "
                        ".yaml/.yml file after --hw is a test path, not a histogram")
    p.add_argument("--out", default="reports/latest",
                   help="the report folder (default reports/latest): absent, empty, or an earlier report")
    p.add_argument("--model", default=None, help="model name (axioms/NAME.cat) or path; default ptx")
    p.add_argument("--option", action="append", default=[], help="model option (repeatable)")
    add_limit_options(p)
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1; 0 runs in this process)")
    p.add_argument("--layout", choices=("auto", "builtin", "graphviz"), default="auto",
                   help="pictures: Graphviz when installed (auto), the built-in layout, or Graphviz only")
    p.add_argument("--max-witnesses", type=int, default=8, help="witness pictures per test (default 8)")
    p.add_argument("--no-blame", action="store_true", help="skip axiom blame and synchronization mutations")
    p.add_argument("--timing", action="store_true", help="include timings (the bytes then vary run to run)")
    p.add_argument("--fix", action="store_true",
                   help="add a suggested fix (ptxmc fix) to failing tests and unneeded synchronization "
                        "(ptxmc fix --prune) to passing ones (slower; docs/fix.md)")
    p.add_argument("--dot", action="store_true", help="also write every picture as DOT under dot/")
    p.add_argument("--screenshot", action="store_true",
                   help="also save screenshot.png of the page, taken with headless Chromium if installed")
    add_output_options(p)
    p.set_defaults(func=handler)


def _split_hw(paths: list[str], hw: list[str]) -> tuple[list[str], list[str]]:
    """`--hw a.json suite/`: --hw takes one or more values, so it would swallow the test paths
    after it. A folder or a litmus file (.yaml/.yml) is a test path, never a histogram."""
    tests = [h for h in hw if Path(h).is_dir() or Path(h).suffix in (".yaml", ".yml")]
    return list(paths) + tests, [h for h in hw if h not in tests]


def handler(args) -> int:
    from .. import limits, outsafe
    from ..cliargs import check_options, check_paths, jobs_of, limits_of, model_files
    from ..errors import CheckerError
    from ..harness.litmus7 import load_any as load_histograms
    from ..resources import LITMUS_DIR, bundled, resolve_model
    from .build import build

    lim = limits_of(args)
    limits.set_current(lim)
    jobs = jobs_of(args.jobs)
    if args.max_witnesses < 0:
        raise CheckerError(f"--max-witnesses {args.max_witnesses}: must be 0 or positive")
    paths, hw = _split_hw(args.paths, args.hw)
    paths = [bundled(p) for p in paths] or [str(LITMUS_DIR)]
    check_paths(list(paths) + hw)
    check_options(resolve_model(args.model), args.option)
    for h in hw:                                   # a bad histogram file is found before the work
        load_histograms(h)
    policy = outsafe.policy_of(args, list(paths) + hw + model_files(args.model))
    outsafe.check_folder(args.out, "report", policy, replaces=True)
    progress = None
    if sys.stderr.isatty():
        done = [0]

        def tick(_r):
            done[0] += 1
            print(f"\r{done[0]} tests", end="", file=sys.stderr, flush=True)
        progress = tick
    report = build(paths, args.model, args.option, lim.timeout, jobs, args.layout, hw,
                   args.max_witnesses, not args.no_blame, args.timing, progress, fix=args.fix, lim=lim,
                   engine=args.engine)
    from ..pool import sigint_deferred

    with sigint_deferred():             # a second Ctrl-C must not cut the report short
        return _write(args, report, progress, policy)


def _write(args, report, progress, policy) -> int:
    from .. import outsafe
    from ..textsafe import printable
    from . import browser
    from .build import render

    if progress:
        print("\r", end="", file=sys.stderr)
    files: dict[str, str | bytes] = dict(render(report))
    if args.dot:
        from ..results.witness import graph_dot

        for t in report.tests:
            pics = [p for _, p in t.witnesses] + [f.picture for f in t.forbidden if f.picture] \
                + ([t.undefined] if t.undefined else []) + ([t.hang] if t.hang else [])
            for k, pic in enumerate(pics):
                files[f"dot/{outsafe.safe_filename(t.result.name)}/{k}.dot"] = graph_dot(pic.graph)
    if args.screenshot:
        if browser.find() is None:
            print("ptxmc: no Chromium found: no screenshot", file=sys.stderr)
        else:
            with tempfile.TemporaryDirectory(prefix="ptxmc-report-") as d:
                page = Path(d) / "index.html"
                page.write_text(files["index.html"], encoding="utf-8")
                browser.screenshot(page, Path(d) / "screenshot.png")
                files["screenshot.png"] = (Path(d) / "screenshot.png").read_bytes()
    out = outsafe.write_tree(args.out, files, policy)
    s = [t.result for t in report.tests]
    from ..harness.compare import BAD
    from ..results.output import summary

    bad_hw = any(c.verdict in BAD for c in report.hardware)

    print(printable(f"{summary(s)}; report in {out}/ (" + ", ".join(f for f in sorted(files) if "/" not in f) + ")"))
    if report.interrupted:
        print(f"ptxmc: interrupted: {report.interrupted[0]} of {report.interrupted[1]} tests run; "
              "the report holds those and says so", file=sys.stderr)
        return 128 + report.stopped_by
    return EXIT_OK if all(r.ok for r in s) and not bad_hw else EXIT_FAIL
