"""The `ptxmc` command line: run, check, outcomes, report, hw, import, export. The only module that
imports the others to drive them; no library imports it.

Exit codes (docs/cli.md#exit-codes): 0 every expectation met; 1 some expectation failed or a test
was malformed (each reported, the batch goes on); 2 usage or internal error.

A command imports what it uses when it runs (so `ptxmc --help` and `ptxmc check` start fast):
`check` and `outcomes` answer in this process (checker.api; checker.watchdog holds the hard time
bound and Ctrl-C), batches (`run`, `report`) use worker processes (checker.batch, checker.pool).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from . import limits
from .engines.registry import ENGINES
from .errors import CheckerError, LimitExceeded, LitmusError, SolverUnknown, SourceLoc
from .limits import Limits
from .resources import LITMUS_DIR, bundled, resolve_model
from .version import __version__

if TYPE_CHECKING:
    from .results.result import Result

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model name (axioms/NAME.cat) or path; default ptx")
    p.add_argument("--option", action="append", default=[], help="model option (repeatable), e.g. strict-cta")
    p.add_argument("--timeout", type=float, default=None,
                   help=f"per-test wall-clock limit in seconds (default {limits.DEFAULT.timeout:g})")
    p.add_argument("--rlimit", type=int, default=None,
                   help=f"Z3 resource limit per solver call, 0 for none (default {limits.DEFAULT.rlimit})")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                   help="raise or lower a limit (repeatable): " + ", ".join(
                       f"{k}={v}" for k, v in vars(limits.DEFAULT).items() if k not in ("timeout", "rlimit")))
    p.add_argument("--engine", choices=tuple(ENGINES), default="z3")


class _Version(argparse.Action):
    """`--version`: the version and the hash of the default model, computed only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            text = version_text()
        except CheckerError as e:
            print(f"ptxmc {__version__}")
            parser.exit(EXIT_USAGE, f"ptxmc: {e}\n")
        print(text)
        parser.exit(EXIT_OK)


def version_text() -> str:
    """`ptxmc 0.1.0 (model ptx 1a2b3c4d5e6f7a8b)`: the model hash is checker.resources.model_hash
    of the default model, as reports print it."""
    from .resources import DEFAULT_MODEL, model_hash

    return f"ptxmc {__version__} (model {DEFAULT_MODEL} {model_hash(resolve_model(None))})"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ptxmc", description="Model checker for the PTX memory consistency model.")
    ap.add_argument("--version", action=_Version, help="print the version and the default model's hash, and exit")
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run suites and judge their expectations")
    run.add_argument("paths", nargs="*", help="files or folders (default: the bundled litmus/)")
    run.add_argument("--format", choices=("text", "herd", "json", "junit"), default="text")
    run.add_argument("--jobs", type=int, default=1, help="worker processes (default 1; 0 runs in this process)")
    run.add_argument("--no-timing", action="store_true", help="leave timing fields out (byte-identical output)")
    run.add_argument("-o", "--output", help="write to this file (atomically) instead of stdout")
    run.add_argument("--results-jsonl", metavar="FILE",
                     help="write each finished test to FILE as a JSON line, flushed at once "
                          "(kept on Ctrl-C; the last line says whether the run was complete)")
    _common(run)
    chk = sub.add_parser("check", help="is this outcome allowed? answer and explanation")
    chk.add_argument("test", help="FILE or FILE::NAME")
    chk.add_argument("cond", help="a herd condition, e.g. 'P1:r0=1 /\\ P1:r1=0'")
    chk.add_argument("--dot", help="write the witness / counterexample graph as DOT to this file")
    _common(chk)
    out = sub.add_parser("outcomes", help="every allowed outcome, herd style, and a compact formula")
    out.add_argument("test", help="FILE or FILE::NAME")
    _common(out)
    from .convert.cli import add_subcommands as add_convert_subcommands
    from .harness.cli import add_hw_subcommands
    from .report.cli import add_report_subcommand

    add_hw_subcommands(sub)
    add_report_subcommand(sub)
    add_convert_subcommands(sub)
    return ap


ONE_SHOT = ("check", "outcomes")          # commands that run in this process, start no other


def main(argv=None, fast_exit: bool = False) -> int:
    """Run one command; its exit code. `fast_exit` says that this process is the `ptxmc`
    executable, which a one-shot command may end: at its hard time bound or on Ctrl-C (see
    `_bounded`; called in-process, by tests and the fuzzers, it never ends the caller's process),
    and as soon as its output is flushed (see `_exit_now`)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    args.own_process = fast_exit
    with limits.use(limits.current()):     # a command's --limit/--timeout end with it (main is
        code = _main(args)                 # also called in-process, by tests and the fuzzers)
    if fast_exit and args.cmd in ONE_SHOT:
        _exit_now(code)
    return code


def entry() -> None:
    """The `ptxmc` executable (and `python -m checker`)."""
    sys.exit(main(fast_exit=True))


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown, which after a check costs ~50 ms (every
    Z3 context and module freed one by one) and has nothing left to do: the output is flushed
    here, the command started no process and its watchdog thread has ended. If the output cannot
    be flushed, the ordinary exit reports it."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _main(args) -> int:
    try:
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "check":
            return cmd_check(args)
        if args.cmd == "outcomes":
            return cmd_outcomes(args)
        return args.func(args)
    except (SolverUnknown, LimitExceeded) as e:   # no answer is not an answer: say UNKNOWN
        print(f"ptxmc: UNKNOWN: {e}", file=sys.stderr)
        return EXIT_FAIL
    except CheckerError as e:
        print(f"ptxmc: {e}", file=sys.stderr)
        return EXIT_FAIL if isinstance(e, LitmusError) else EXIT_USAGE
    except KeyboardInterrupt:
        print("ptxmc: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # our bug: say so, without a traceback unless asked
        if os.environ.get("PTXMC_DEBUG"):
            raise
        print(f"ptxmc: internal error: {type(e).__name__}: {e} (set PTXMC_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return EXIT_USAGE


# -- run ---------------------------------------------------------------------------------------

def limits_of(args) -> Limits:
    """The limits in force for a command: the defaults, then --limit, --timeout and --rlimit."""
    lim = limits.DEFAULT.override(getattr(args, "limit", None) or [])
    if getattr(args, "timeout", None) is not None:
        if not args.timeout > 0:
            raise CheckerError(f"--timeout {args.timeout:g}: must be positive")
        lim = replace(lim, timeout=args.timeout)
    if getattr(args, "rlimit", None) is not None:
        if args.rlimit < 0:
            raise CheckerError(f"--rlimit {args.rlimit}: must be 0 (none) or positive")
        lim = replace(lim, rlimit=args.rlimit)
    return lim


def cmd_run(args) -> int:
    from . import pool
    from .batch import INTERNAL, ResultStream, RunInterrupted, run_tests, write_atomic
    from .front.litmus import load_paths
    from .results import output
    from .results.output import mark_partial

    lim = limits_of(args)
    limits.set_current(lim)
    if args.jobs < 0:
        raise CheckerError(f"--jobs {args.jobs}: must be 0 (in this process) or positive")
    paths = [bundled(p) for p in args.paths] or [str(LITMUS_DIR)]
    for p in paths:
        if not Path(p).exists():
            print(f"ptxmc: no such file or folder: {p}", file=sys.stderr)
            return EXIT_USAGE
    resolve_model(args.model)
    items = load_paths(paths)
    timing = not args.no_timing
    stream = ResultStream(args.results_jsonl, len(items), timing) if args.results_jsonl else None
    tty = sys.stderr.isatty() and args.format == "text" and not args.output
    count = [0]

    def on_done(i: int, r: Result) -> None:
        if stream:
            stream.add(i, r)
        if tty:
            count[0] += 1
            print(f"\r{count[0]}/{len(items)}", end="", file=sys.stderr, flush=True)

    interrupted = False
    try:
        results = run_tests(items, args.model, args.option, args.engine, jobs=args.jobs, lim=lim, on_done=on_done)
    except RunInterrupted as e:
        results, interrupted = e.results, True
    except BaseException:
        if stream:
            stream.f.close()
        raise
    with pool.sigint_deferred():        # a (second) Ctrl-C must not cut the output short
        if tty:
            print("\r", end="", file=sys.stderr)
        text = output.FORMATS[args.format](results, timing=timing)
        if interrupted:
            text = mark_partial(args.format, text, len(results), len(items))
        if stream:
            stream.close(interrupted)
        if args.output:
            write_atomic(args.output, text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    if interrupted:
        print(f"ptxmc: interrupted: {len(results)} of {len(items)} tests run", file=sys.stderr)
        return 130
    if any(r.status == "error" and r.message.startswith(INTERNAL) for r in results):
        return EXIT_USAGE
    return EXIT_OK if all(r.ok for r in results) else EXIT_FAIL


# -- check / outcomes --------------------------------------------------------------------------
# In this process (no worker to start): Z3's own timeout and rlimit bound each query, and
# checker.watchdog stops the process at the hard bound (--timeout plus grace, as a worker is
# stopped in a batch) or at once on Ctrl-C.

def select_test(spec: str):
    """FILE or FILE::NAME -> the one LitmusTest it names (LitmusError otherwise)."""
    from .api import load_test

    return load_test(spec)


def _located(e: CheckerError, spec: str) -> CheckerError:
    """`e`, naming the test when it names no place itself."""
    return e if e.where is not None else type(e)(f"{spec}: {e.message}")


def _bounded(args, lim: Limits):
    """The hard bound of a one-shot command run by the executable: past it, UNKNOWN (exit 1), as a
    batch reports a stuck test. Ctrl-C ends the command at once (exit 130): Z3's own SIGINT
    handler, which would turn Ctrl-C into an 'unknown' answer to the query it is solving and go
    on, is turned off. In-process callers of main() get no bound beyond Z3's and the engine's."""
    import contextlib

    if not getattr(args, "own_process", False):
        return contextlib.nullcontext()
    import z3

    from .watchdog import hard_bound

    z3.set_param("ctrl_c", False)

    def message(elapsed: float) -> str:
        return (f"ptxmc: UNKNOWN: {args.test}: timeout: no answer within {lim.timeout:g} s; stopped after "
                f"{elapsed:.1f} s (raise it with {limits.flag('timeout')})")

    return hard_bound(None if os.environ.get("PTXMC_DEBUG") else lim.hard_timeout(), message)


def cmd_check(args) -> int:
    from . import api
    from .front.conditions import parse_cond

    lim = limits_of(args)
    limits.set_current(lim)
    test = select_test(args.test)
    cond = parse_cond(args.cond, SourceLoc("<command line>", 1, args.cond))
    resolve_model(args.model)
    with _bounded(args, lim):
        try:
            text, dot = api.explain(test, cond, model=args.model, options=args.option, engine=args.engine,
                                    limits=lim, dot=True)
        except CheckerError as e:
            raise _located(e, args.test) from None
    sys.stdout.write(text)
    if args.dot and dot:
        from .batch import write_atomic

        write_atomic(args.dot, dot)
    return EXIT_OK


def cmd_outcomes(args) -> int:
    from . import api
    from .results.result import outcome_text

    lim = limits_of(args)
    limits.set_current(lim)
    test = select_test(args.test)
    resolve_model(args.model)
    with _bounded(args, lim):
        try:
            r = api.outcomes(test, model=args.model, options=args.option, engine=args.engine, limits=lim)
        except CheckerError as e:
            raise _located(e, args.test) from None
    if r.status in ("error", "unknown"):
        unknown = "UNKNOWN: " if r.status == "unknown" else ""
        print(f"ptxmc: {unknown}{r.path}::{r.name}: {r.message}", file=sys.stderr)
        return EXIT_FAIL
    if r.undefined:
        from .results.output import herd

        sys.stdout.write(herd([r]))
        return EXIT_OK
    from .results.formula import compact

    lines = [f"Test {r.name}", f"States {len(r.outcomes)}"]
    lines += [outcome_text(o) for o in r.outcomes]
    lines.append(f"Formula {compact(list(r.outcomes))}")
    if not r.complete:
        lines.append("(enumeration stopped at the outcome cap)")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


if __name__ == "__main__":
    entry()
