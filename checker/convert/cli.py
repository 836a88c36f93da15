"""`ptxmc import` and `ptxmc export` on the command line. checker/cli.py calls
`add_subcommands(subparsers)`; each handler returns the exit code: 0 everything converted,
1 some test was skipped (each listed with its reason, in the report file and on stderr),
2 usage (no such path). Errors are CheckerErrors, printed by checker/cli.py.

    ptxmc import FILE|DIR... --from herd|dat3m|mixedproxy -o DIR   (writes DIR/import-report.txt)
    ptxmc export FILE|DIR... --to herd -o DIR                      (writes DIR/export-report.txt)
"""
from __future__ import annotations

import sys
from pathlib import Path

EXIT_OK, EXIT_SKIPPED, EXIT_USAGE = 0, 1, 2


def add_subcommands(subparsers) -> None:
    from ..cliargs import add_output_options

    imp = subparsers.add_parser(
        "import", help="convert herd / Dat3M / mixedproxy PTX litmus tests into ptxmc YAML",
        description="Convert PTX litmus tests into ptxmc YAML suites, one file per test. A test that ptxmc "
                    "cannot express is skipped with the reason and its source line; the report lists every "
                    "converted and skipped test. See docs/import-export.md.")
    imp.add_argument("paths", nargs="+", metavar="FILE|DIR", help="source files or folders (searched recursively)")
    imp.add_argument("--from", dest="fmt", required=True, choices=("herd", "dat3m", "mixedproxy"),
                     help="the source format: herd (.litmus, real PTX instructions), dat3m (.litmus, Dat3M's "
                          "PTX dialect), mixedproxy (.test)")
    imp.add_argument("-o", "--output", required=True, metavar="DIR",
                     help="the output folder: absent, empty, or written by ptxmc import before")
    add_output_options(imp)
    imp.set_defaults(func=cmd_import)
    exp = subparsers.add_parser(
        "export", help="write herd-layout PTX litmus files for tests in the generic subset",
        description="Write one herd-layout PTX litmus file per test in the generic subset (ld/st/atom/red/"
                    "fence/membar/bar on global memory); other tests are listed with the reason.")
    exp.add_argument("paths", nargs="+", metavar="FILE|DIR", help="ptxmc YAML files or folders")
    exp.add_argument("--to", dest="fmt", required=True, choices=("herd",), help="the target format")
    exp.add_argument("-o", "--output", required=True, metavar="DIR",
                     help="the output folder: absent, empty, or written by ptxmc export before")
    add_output_options(exp)
    exp.set_defaults(func=cmd_export)


def _missing(paths) -> bool:
    bad = [p for p in paths if not Path(p).exists()]
    for p in bad:
        print(f"ptxmc: no such file or folder: {p}", file=sys.stderr)
    return bool(bad)


def _outdir(args, kind: str):
    """The output folder, checked before the work (checker.outsafe) and marked as ptxmc's."""
    from ..outsafe import check_folder, policy_of

    return check_folder(args.output, kind, policy_of(args, args.paths))


def cmd_import(args) -> int:
    from .driver import import_paths, write

    if _missing(args.paths):
        return EXIT_USAGE
    _outdir(args, "import")
    run = import_paths(args.paths, args.fmt)
    report = write(run, args.output)
    for s in run.skipped:
        print(f"ptxmc: skipped: {s.line()}", file=sys.stderr)
    print(f"{len(run.converted)} converted, {len(run.skipped)} skipped ({run.files} files); "
          f"tests and the report in {args.output}/ ({report.name})")
    return EXIT_SKIPPED if run.skipped else EXIT_OK


def cmd_export(args) -> int:
    from .export import REPORT, export_paths, write

    if _missing(args.paths):
        return EXIT_USAGE
    _outdir(args, "export")
    run = export_paths(args.paths)
    write(run, args.output)
    for s in run.skipped:
        print(f"ptxmc: not exported: {s.line()}", file=sys.stderr)
    print(f"{len(run.exported)} exported, {len(run.skipped)} not in the generic subset or malformed; "
          f"files and the report in {args.output}/ ({REPORT})")
    return EXIT_SKIPPED if run.skipped else EXIT_OK
