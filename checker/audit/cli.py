"""`ptxmc audit` on the command line. checker/cli.py calls `add_subcommands(subparsers)`.

    ptxmc audit tilelang-fence-proxy SUITE... [--policy tilelang|corrected] [--option NAME]
                [--reading NAME] [--format text|json|markdown] [--jobs N] [--budget S]
                [--timeout S] [--rlimit N] [--limit NAME=VALUE] [--unroll N]

Exit codes: 0 the audit ran and every finding was confirmed by its re-check (findings are the
audit's answer, not a failure); 1 a test could not be judged (malformed, unknown, error) or a
finding was not confirmed; 2 usage. See docs/audit.md.
"""
from __future__ import annotations

import sys

from . import DEFAULT_READINGS

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
PASSES = ("tilelang-fence-proxy",)


def add_subcommands(subparsers) -> None:
    from ..cliargs import add_limit_options

    p = subparsers.add_parser(
        "audit", help="judge a compiler's fence insertion with the model (under- and over-fencing)",
        description="Apply a compiler pass's fence-insertion rule to every thread of every test (after removing "
                    "the test's own async proxy fences), then judge the result with the model: under-fencing (a "
                    "forbidden outcome or undefined behaviour comes back; witness and least-cost repair) and "
                    "over-fencing (an inserted fence can be removed), each re-checked from scratch, under each "
                    "reading of the model. See docs/audit.md.")
    p.add_argument("pass_name", metavar="PASS", choices=PASSES, help="the pass: tilelang-fence-proxy")
    p.add_argument("paths", nargs="+", metavar="SUITE", help="litmus files or folders")
    p.add_argument("--policy", choices=("tilelang", "corrected"), default="tilelang",
                   help="tilelang: the pass as documented (default); corrected: the rule docs/audit.md proposes")
    p.add_argument("--option", action="append", default=[], help="model option for every reading (repeatable)")
    p.add_argument("--reading", action="append", default=None, metavar="NAME",
                   help="a reading: 'default' or a model option added to --option (repeatable; default: "
                        + ", ".join(DEFAULT_READINGS) + ")")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--verbose", action="store_true", help="text: list every test, not only those with findings")
    p.add_argument("--jobs", type=int, default=1,
                   help="tests audited at once, each in a fresh worker process (default 1; 0: in this process)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds for each repair or prune search (default 60)")
    p.add_argument("--model", default=None, help="model name (axioms/NAME.cat) or path; default ptx")
    p.add_argument("--engine", choices=("z3", "brute"), default="z3")
    add_limit_options(p, engine=False)      # --timeout, --rlimit, --limit NAME=VALUE, --unroll: as `run`
    p.set_defaults(func=cmd_audit)


def cmd_audit(args) -> int:
    from pathlib import Path

    from .. import limits
    from ..errors import CheckerError
    from ..cliargs import limits_of, seconds_of
    from ..resources import resolve_model
    from . import output
    from .run import audit_paths

    seconds_of("--budget", args.budget)
    for p in args.paths:
        if not Path(p).exists():
            raise CheckerError(f"no such file or folder: {p}")
    limits.set_current(limits_of(args))     # the workers judge under these (checker.audit.run)
    model = resolve_model(args.model)
    readings = tuple(dict.fromkeys(args.reading or DEFAULT_READINGS))
    known = _options(model)
    for r in readings + tuple(args.option):
        if r != "default" and known is not None and r not in known:
            raise CheckerError(f"unknown model option '{r}' (this model has: {', '.join(sorted(known)) or 'none'})")
    progress = (lambda ta: print(f"\r{ta.name[:70]:<70}", end="", file=sys.stderr, flush=True)) \
        if sys.stderr.isatty() and args.format == "text" else None
    if args.jobs < 0:
        raise CheckerError(f"--jobs {args.jobs}: must be 0 (in this process) or positive")
    audit = audit_paths(args.paths, args.policy, args.model, tuple(args.option), readings, args.engine, args.budget,
                        progress, args.jobs)
    if progress:
        print("\r" + " " * 70 + "\r", end="", file=sys.stderr)
    render = {"text": lambda a: output.text(a, args.verbose), "json": output.as_json, "markdown": output.markdown}
    sys.stdout.write(render[args.format](audit))
    bad = any(ta.error for ta in audit.tests) or any(
        j.status in ("unknown", "error") for ta in audit.tests for _, j in ta.by_reading) or any(
        not f.recheck.startswith("confirmed") for ta in audit.tests for _, f in ta.findings())
    return EXIT_FAIL if bad else EXIT_OK


def _options(model) -> set | None:
    """The option names the model tests and those the control-flow layer reads
    (checker.isa.flow.OPTIONS: `rmw-rewrite-effect`, docs/model.md A18), as `run` accepts them;
    None if the model cannot say."""
    from ..isa.flow import OPTIONS

    names = getattr(model, "options_used", None)
    return set(names) | set(OPTIONS) if names is not None else None
