"""`ptxmc diff SUITE... --model A --model B [--option O] [--left-option O] [--right-option O]`:
the same suite under two sides; exit 0 no difference (every test compared), 1 some difference,
2 usage, 3 no difference found but some test could not be compared (malformed or UNKNOWN on a
side), 128+N interrupted by signal N (the tests finished so far are printed, marked)."""
from __future__ import annotations

import signal
import sys

from ..cliargs import emit as _emit

EXIT_OK, EXIT_DIFF, EXIT_USAGE, EXIT_NOT_COMPARED = 0, 1, 2, 3


def add_subcommands(subparsers) -> None:
    from ..cliargs import add_jobs_option, add_limit_options, add_output_options
    from ..executors.options import add_executor_options

    p = subparsers.add_parser(
        "diff", help="the same suites under two models or option sets: every verdict that differs",
        description="Check every test under a left and a right side (model + options) and list each "
                    "outcome, expectation condition or undefined-behaviour flag that one side allows and "
                    "the other does not, with a witness execution under the side that allows it. "
                    "See docs/cli.md#ptxmc-diff.")
    p.add_argument("paths", nargs="*", help="files or folders (default: the bundled litmus/)")
    p.add_argument("--model", action="append", default=[],
                   help="the left, then the right model (name or .cat path; one --model: both sides)")
    p.add_argument("--option", action="append", default=[], help="model option on both sides (repeatable)")
    p.add_argument("--left-option", action="append", default=[], help="model option on the left side only")
    p.add_argument("--right-option", action="append", default=[], help="model option on the right side only")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-o", "--output", help="write to this file (atomically) instead of stdout")
    add_jobs_option(p)
    add_executor_options(p)
    add_limit_options(p)
    add_output_options(p)
    p.set_defaults(func=handler)


def sides_of(args):
    from ..cliargs import check_options
    from ..errors import CheckerError
    from ..resources import resolve_model
    from .sides import side_of

    if len(args.model) > 2:
        raise CheckerError(f"--model given {len(args.model)} times: a diff has two sides")
    models = (args.model + [None, None])[:2] if args.model else [None, None]
    if len(args.model) == 1:
        models = [args.model[0], args.model[0]]
    opts = [args.option + args.left_option, args.option + args.right_option]
    for m, o in zip(models, opts):
        check_options(resolve_model(m), o)
    left, right = (side_of(m, o) for m, o in zip(models, opts))
    if (left.text, sorted(left.options)) == (right.text, sorted(right.options)):
        raise CheckerError("both sides are the same model with the same options: give two --model, or "
                           "--left-option / --right-option")
    return left, right


def handler(args) -> int:
    from .. import limits, outsafe, pool
    from ..batch import RunInterrupted
    from ..cliargs import check_paths, jobs_of, limits_of, model_files
    from ..executors.options import executor_of
    from ..front.litmus import load_paths
    from ..resources import LITMUS_DIR
    from .output import FORMATS
    from .run import diff_tests

    lim = limits_of(args)
    limits.set_current(lim)
    jobs = jobs_of(args.jobs)
    executor = executor_of(args)
    paths = args.paths or [str(LITMUS_DIR)]
    check_paths(paths)
    left, right = sides_of(args)
    items = load_paths(paths)
    policy = outsafe.policy_of(args, _inputs(paths, items) + [left.path, right.path]
                               + model_files(*(args.model or [None])))
    if args.output:
        outsafe.check_file(args.output, policy)
    interrupted = 0
    try:
        diffs = diff_tests(items, left, right, args.engine, lim, jobs, executor)
    except RunInterrupted as e:
        diffs, interrupted = e.results, e.signum
    with pool.sigint_deferred():
        text = FORMATS[args.format](diffs, left, right, len(items), bool(interrupted))
        if args.output:
            outsafe.write_file(args.output, text, policy)
        else:
            _emit(text)
    if interrupted:
        how = "" if interrupted == 2 else f" ({signal.Signals(interrupted).name})"
        print(f"ptxmc: interrupted{how}: {len(diffs)} of {len(items)} tests compared", file=sys.stderr)
        return 128 + interrupted
    if any(x.differences for x in diffs):
        return EXIT_DIFF
    return EXIT_NOT_COMPARED if any(not x.compared for x in diffs) else EXIT_OK


def _inputs(paths, items) -> list[str]:
    """Every file read (the paths given and each loaded item's file): never an output."""
    files = {str(p) for p in paths}
    files |= {it.where.path for it in items if getattr(it, "where", None) is not None and it.where.path}
    return sorted(files)


