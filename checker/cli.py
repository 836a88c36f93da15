"""The `ptxmc` command line: run, check, outcomes, report, fix, gen, hw, import, export. The only
module that imports the others to drive them; no library imports it.

Exit codes (docs/cli.md#exit-codes): 0 every expectation met; 1 some expectation failed or a test
was malformed (each reported, the batch goes on); 2 usage error, an output that cannot be written,
or an internal error; 128 + N stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after
writing the results finished so far.

A command imports what it uses when it runs (so `ptxmc --help` and `ptxmc check` start fast):
`check` and `outcomes` answer in this process (checker.api; checker.watchdog holds the hard time
bound and Ctrl-C), batches (`run`, `report`) use worker processes (checker.batch, checker.pool).
"""
from __future__ import annotations

import argparse
import signal
import os
import sys

from typing import TYPE_CHECKING

from . import limits, methodcache, signals
from .cliargs import (add_limit_options, add_output_options, check_options, check_paths, jobs_of, limits_of,
                      model_files)
from .errors import CheckerError, LimitExceeded, LitmusError, SolverUnknown, SourceLoc
from .resources import LITMUS_DIR, bundled, resolve_model
from .textsafe import printable
from .version import __version__

if TYPE_CHECKING:
    from .results.result import Result

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
# `ptxmc check` only: the answer was UNKNOWN (a solver limit or timeout); the test or condition is malformed
EXIT_UNKNOWN, EXIT_MALFORMED = 3, 4

__all__ = ["entry", "console", "main", "build_parser", "limits_of", "select_test"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model name (axioms/NAME.cat) or path; default ptx")
    p.add_argument("--option", action="append", default=[],
                   help="model option (repeatable), one the model reads, e.g. strict-cta")
    add_limit_options(p)


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


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, its width found as argparse finds it (shutil.get_terminal_size's
    columns, less 2) without importing shutil, which imports zlib, bz2 and lzma (~2.5 ms of a
    one-shot check): argparse makes a formatter for every add_argument, to check its nargs."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


def _columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS if a positive number, else the width of the
    terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


# check's and outcomes' parsers, built ahead by keep_parsers (the warm server, whose forked commands
# then parse with them); empty in a one-shot process, which builds the one it needs
_kept: dict[str, argparse.ArgumentParser] = {}


def keep_parsers() -> None:
    """Build the parsers of `check` and `outcomes` now, for every later main() of this process
    (and of its forks) to parse with: building one is ~4 ms of argparse and gettext. A parser is
    only read by parsing, and what it says (help texts, translations) is fixed once the checker
    is imported in this environment (the warm server's key holds the locale variables)."""
    for only in ("check", "outcomes"):
        _kept[only] = build_parser(only)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (`only`: "check" or "outcomes") the parser of that subcommand
    alone under `ptxmc`, which parses such a command line as the whole one does (building every
    subcommand's parser is ~25 ms of a ~100 ms check)."""
    ap = argparse.ArgumentParser(prog="ptxmc", description="Model checker for the PTX memory consistency model.",
                                 formatter_class=_Formatter)
    ap.add_argument("--version", action=_Version, help="print the version and the default model's hash, and exit")
    sub = ap.add_subparsers(dest="cmd", required=True)
    if only is None:
        _add_run(sub)
    if only in (None, "check"):
        _add_check(sub)
    if only in (None, "outcomes"):
        _add_outcomes(sub)
    if only is not None:
        return ap
    from .audit.cli import add_subcommands as add_audit_subcommands
    from .compare.cli import add_subcommands as add_compare_subcommands
    from .convert.cli import add_subcommands as add_convert_subcommands
    from .extract.cli import add_subcommands as add_extract_subcommands
    from .gen.cli import add_subcommands as add_gen_subcommands
    from .harness.cli import add_hw_subcommands
    from .repair.cli import add_subcommands as add_repair_subcommands
    from .report.cli import add_report_subcommand

    add_hw_subcommands(sub)
    add_report_subcommand(sub)
    add_convert_subcommands(sub)
    add_repair_subcommands(sub)
    add_gen_subcommands(sub)
    add_compare_subcommands(sub)
    add_audit_subcommands(sub)
    add_extract_subcommands(sub)
    return ap


def _add_run(sub) -> None:
    run = sub.add_parser("run", help="run suites and judge their expectations", formatter_class=_Formatter)
    run.add_argument("paths", nargs="*", help="files or folders (default: the bundled litmus/)")
    run.add_argument("--format", choices=("text", "herd", "json", "junit"), default="text")
    run.add_argument("--jobs", type=int, default=1, help="worker processes (default 1; 0 runs in this process)")
    run.add_argument("--no-timing", action="store_true", help="leave timing fields out (byte-identical output)")
    run.add_argument("-o", "--output", help="write to this file (atomically) instead of stdout")
    run.add_argument("--results-jsonl", metavar="FILE",
                     help="write each finished test to FILE as a JSON line, flushed at once "
                          "(kept on Ctrl-C; the last line says whether the run was complete)")
    run.add_argument("--resume", metavar="FILE",
                     help="go on with the interrupted run whose --results-jsonl FILE this is: its finished "
                          "tests (same test, model, options, engine, limits) are not checked again; FILE "
                          "is continued")
    from .executors.options import add_executor_options      # (`run` only: check and outcomes start faster)

    _common(run)
    add_output_options(run)
    add_executor_options(run)


def _add_check(sub) -> None:
    chk = sub.add_parser("check", help="is this outcome allowed? answer and explanation", formatter_class=_Formatter)
    chk.add_argument("test", help="FILE or FILE::NAME")
    chk.add_argument("cond", help="a herd condition, e.g. 'P1:r0=1 /\\ P1:r1=0', or 'hang' (may some fair "
                                  "execution never terminate?)")
    chk.add_argument("--dot", help="write the witness / counterexample graph as DOT to this file")
    chk.add_argument("--expect", choices=("allowed", "forbidden", "undefined"),
                     help="exit 0 if this is the verdict, 1 if not (herd's ~exists / exists)")
    _common(chk)
    add_output_options(chk)


def _add_outcomes(sub) -> None:
    out = sub.add_parser("outcomes", help="every allowed outcome, herd style, and a compact formula",
                         formatter_class=_Formatter)
    out.add_argument("test", help="FILE or FILE::NAME")
    _common(out)


ONE_SHOT = ("check", "outcomes", "fix")   # commands that run in this process, start no other


def entry() -> None:
    """The `ptxmc` executable (and `python -m checker`)."""
    sys.exit(console(fast_exit=True))


def console(fast_exit: bool = False, goes_on: bool = False) -> int:
    """The `ptxmc` command: main(), then multiprocessing's helper processes stopped and reaped
    (checker.pool.shutdown), so that no process, not even a defunct one, outlives ptxmc."""
    try:
        return main(fast_exit=fast_exit, goes_on=goes_on)
    finally:
        if "checker.pool" in sys.modules:       # only a batch starts helper processes
            sys.modules["checker.pool"].shutdown()


def main(argv=None, fast_exit: bool = False, goes_on: bool = False) -> int:
    """Run one command; its exit code. `fast_exit` says that this process is the `ptxmc`
    executable, which a one-shot command may end: at its hard time bound or on Ctrl-C (see
    `_bounded`; called in-process, by tests and the fuzzers, it never ends the caller's process),
    and as soon as its output is flushed (see `_exit_now`) - unless `goes_on`: the warm server's
    worker, which runs one command after another as the executable would (checker.warm.server)."""
    words = sys.argv[1:] if argv is None else list(argv)
    only = words[0] if words and words[0] in ("check", "outcomes") else None
    ap = _kept.get(only) or build_parser(only)
    args = ap.parse_args(words)
    args.own_process = fast_exit
    with limits.use(limits.current()), signals.stop_signals():   # a command's --limit/--timeout end with
        code = _main(args)         # it (main is also called in-process, by tests and the fuzzers)
    if fast_exit and args.cmd in ONE_SHOT and not goes_on:
        _exit_now(code)
    return code


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
    methodcache.save()          # (what this process compiled, which no exit handler will write)
    os._exit(code)


def _say(text: str) -> None:
    """A message on stderr, control characters escaped (it may quote file or test names)."""
    print(printable(text, newlines=True), file=sys.stderr)


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
        _say(f"ptxmc: UNKNOWN: {e}")
        return EXIT_FAIL
    except CheckerError as e:
        _say(f"ptxmc: {e}")
        return EXIT_FAIL if isinstance(e, LitmusError) else EXIT_USAGE
    except KeyboardInterrupt as e:
        signum = signals.signum_of(e)
        _say("ptxmc: interrupted" + ("" if signum == 2 else f" ({signal.Signals(signum).name})"))
        return 128 + signum
    except Exception as e:  # our bug: say so, without a traceback unless asked
        if os.environ.get("PTXMC_DEBUG"):
            raise
        _say(f"ptxmc: internal error: {type(e).__name__}: {e} (set PTXMC_DEBUG=1 for a traceback)")
        return EXIT_USAGE


def emit(text: str) -> None:
    """`text` on stdout. A reader that went away (`| head`) is no error; any other failure to
    write it (a full disk) is an OutputError."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as e:
        try:                       # nothing more can reach it: no second error at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        if not isinstance(e, BrokenPipeError):
            from . import outsafe

            raise outsafe.fail("<stdout>", e.strerror or str(e)) from None


# -- run ---------------------------------------------------------------------------------------

def inputs_of(paths, files) -> list[str]:
    """Every file a command reads: the paths given and the files found in them
    (checker.front.litmus.path_files)."""
    return sorted({str(p) for p in paths} | {str(f) for f in files if not isinstance(f, CheckerError)})


def cmd_run(args) -> int:
    from . import outsafe, pool
    from .executors.options import executor_of

    lim = limits_of(args)
    limits.set_current(lim)
    jobs = jobs_of(args.jobs)
    executor = executor_of(args)
    if jobs and executor.kind == "local":
        pool.prestart()     # the workers' server imports the checker while this process loads the tests
    from .batch import INTERNAL, ResultStream, RunInterrupted, run_tests
    from .front.litmus import load_sources, path_files
    from .results import output
    from .results.output import mark_partial

    paths = [bundled(p) for p in args.paths] or [str(LITMUS_DIR)]
    check_paths(paths)
    check_options(resolve_model(args.model), args.option)
    files = path_files(paths)
    policy = outsafe.policy_of(args, inputs_of(paths, files) + model_files(args.model))
    if args.resume is not None:
        if args.results_jsonl is not None and args.results_jsonl != args.resume:
            raise CheckerError("--resume FILE continues FILE: leave --results-jsonl out, or give the same file")
        args.results_jsonl = args.resume
    for target in (args.output, args.results_jsonl):    # every output checked before the work
        if target is not None:
            outsafe.check_file(target, policy)
    if args.output and args.results_jsonl and outsafe.check_file(args.output, policy, probe=False) == \
            outsafe.check_file(args.results_jsonl, policy, probe=False):
        raise outsafe.fail(args.output, "it is also the --results-jsonl file")
    timing = not args.no_timing
    key_of = _key_function(args, lim) if args.results_jsonl else (lambda item: None)
    items: list = []                    # every item, by index, as it is loaded
    keys: list[str | None] = []
    done: dict[int, Result] = {}
    todo: list[int] = []                # the index of each test run
    reused = None
    if args.resume is None and executor.kind == "local":
        def loading():                  # the tests load while the first ones are judged
            for it in load_sources(files):
                items.append(it)
                keys.append(key_of(it))
                todo.append(len(items) - 1)
                yield it

        batch = loading()
    else:                               # loaded first: --resume reads which were run before
        items = list(load_sources(files))
        keys = [key_of(it) for it in items]
        if args.resume is not None:
            from .resume import read_previous, result_of_record

            previous = read_previous(args.resume).records
            done = {i: result_of_record(previous[k], items[i]) for i, k in enumerate(keys) if k in previous}
            reused = [(i, r, keys[i]) for i, r in sorted(done.items())]
        todo = [i for i in range(len(items)) if i not in done]
        batch = [items[i] for i in todo]
    stream = ResultStream(args.results_jsonl, timing, policy, reused) if args.results_jsonl else None
    tty = sys.stderr.isatty() and args.format == "text" and not args.output
    count = [len(done)]

    def on_done(k: int, r: Result) -> None:
        i = todo[k]
        done[i] = r
        if stream:
            stream.add(i, r, keys[i])
        if tty:
            count[0] += 1
            print(f"\r{count[0]}/{len(items)}", end="", file=sys.stderr, flush=True)

    interrupted = 0
    try:
        run_tests(batch, args.model, args.option, args.engine, jobs=jobs, lim=lim, on_done=on_done,
                  executor=executor)
    except RunInterrupted as e:
        interrupted = e.signum
    except BaseException:
        if stream:
            stream.abandon()
        raise
    results = [done[i] for i in sorted(done)]
    with pool.sigint_deferred():        # a (second) Ctrl-C must not cut the output short
        if tty:
            print("\r", end="", file=sys.stderr)
        text = output.FORMATS[args.format](results, timing=timing)
        if interrupted:
            text = mark_partial(args.format, text, len(results), len(items))
        try:
            if stream:
                stream.close(bool(interrupted), len(items))
        finally:
            if args.output:
                outsafe.write_file(args.output, text, policy)
            else:
                emit(text)
    if stream and stream.error is not None:   # every other output is written; the stream is cut
        _say(f"ptxmc: {stream.error}")
    if interrupted:
        how = "" if interrupted == 2 else f" ({signal.Signals(interrupted).name})"
        _say(f"ptxmc: interrupted{how}: {len(results)} of {len(items)} tests run")
        return 128 + interrupted
    if stream and stream.error is not None:
        return EXIT_USAGE
    if any(r.status == "error" and r.message.startswith(INTERNAL) for r in results):
        return EXIT_USAGE
    return EXIT_OK if all(r.ok for r in results) else EXIT_FAIL


def _key_function(args, lim):
    """Each test's identity for --resume (checker.resume.test_key); None for a malformed item."""
    from .resume import model_digest, test_key

    digest = model_digest(resolve_model(args.model))
    return lambda it: None if isinstance(it, LitmusError) else test_key(it, digest, args.option, args.engine, lim)


# -- check / outcomes --------------------------------------------------------------------------

def select_test(spec: str):
    """FILE or FILE::NAME -> the one LitmusTest it names (LitmusError otherwise): checker.api.load_test."""
    from .api import load_test

    return load_test(spec)


def _located(e: CheckerError, spec: str) -> CheckerError:
    """`e`, naming the test when it names no place itself."""
    return e if e.where is not None else type(e)(f"{spec}: {e.message}")


def _bounded(args, lim, status: int):
    """The hard bound of a one-shot command run by the executable: past it, UNKNOWN (exit
    `status`), as a batch reports a stuck test. Ctrl-C ends the command at once (exit 130): Z3's
    own SIGINT handler, which would turn Ctrl-C into an 'unknown' answer to the query it is
    solving and go on, is turned off. In-process callers of main() get no bound beyond Z3's and
    the engine's."""
    import contextlib

    if not getattr(args, "own_process", False):
        return contextlib.nullcontext()
    from .watchdog import hard_bound, z3_param

    z3_param("ctrl_c", False)

    def message(elapsed: float) -> str:
        return printable(f"ptxmc: UNKNOWN: {args.test}: timeout: no answer within {lim.timeout:g} s; stopped "
                         f"after {elapsed:.1f} s (raise it with {limits.flag('timeout')})")

    return hard_bound(None if os.environ.get("PTXMC_DEBUG") else lim.hard_timeout(), message,
                      timeout_status=status)


def cmd_check(args) -> int:
    from . import api, outsafe
    from .front.conditions import parse_cond
    from .verdict.explain import explain_text, hang_text

    lim = limits_of(args)
    limits.set_current(lim)
    check_options(resolve_model(args.model), args.option)
    policy = outsafe.policy_of(args, [bundled(args.test.partition("::")[0])] + model_files(args.model))
    if args.dot:
        outsafe.check_file(args.dot, policy)          # before the work, not after
    try:
        test = select_test(args.test)
        where = SourceLoc("<command line>", 1, args.cond)
        try:
            cond = "hang" if args.cond.strip() == "hang" else parse_cond(args.cond, where)
        except RecursionError:
            raise LitmusError("too deeply nested for this machine (Python's stack)", where) from None
        with _bounded(args, lim, EXIT_UNKNOWN), limits.use(lim):
            with limits.memory_as_unknown():
                s = api.session(test, model=args.model, options=args.option, engine=args.engine, limits=lim,
                                hang=cond == "hang")
                verdict, text, dot = hang_text(s) if cond == "hang" else explain_text(s, cond)
    except (SolverUnknown, LimitExceeded) as e:
        _say(f"ptxmc: UNKNOWN: {_located(e, args.test)}")
        return EXIT_UNKNOWN
    except LitmusError as e:
        _say(f"ptxmc: {_located(e, args.test)}")
        return EXIT_MALFORMED
    except CheckerError as e:
        raise _located(e, args.test) from None
    emit(text)
    if args.dot and dot:
        outsafe.write_file(args.dot, dot, policy)
    if verdict == "unknown":      # (control flow: the loop bound cut executions off)
        return EXIT_UNKNOWN
    if args.expect is None:
        return EXIT_OK
    if verdict == args.expect:
        return EXIT_OK
    _say(f"ptxmc: expected {args.expect}, the model says {verdict}")
    return EXIT_FAIL


def cmd_outcomes(args) -> int:
    from . import api
    from .results.formula import compact
    from .results.output import herd
    from .results.result import outcome_text

    lim = limits_of(args)
    limits.set_current(lim)
    test = select_test(args.test)
    check_options(resolve_model(args.model), args.option)
    with _bounded(args, lim, EXIT_FAIL):
        try:
            r = api.outcomes(test, model=args.model, options=args.option, engine=args.engine, limits=lim)
        except CheckerError as e:
            raise _located(e, args.test) from None
    if r.status in ("error", "unknown"):
        unknown = "UNKNOWN: " if r.status == "unknown" else ""
        _say(f"ptxmc: {unknown}{r.path}::{r.name}: {r.message}")
        return EXIT_FAIL
    if r.undefined:
        emit(herd([r]))
        return EXIT_OK
    lines = [f"Test {r.name}", f"States {len(r.outcomes)}"]
    lines += [outcome_text(o) for o in r.outcomes]
    lines.append(f"Formula {compact(list(r.outcomes))}")
    hang = next((n for n in r.notes if n.startswith("hang: ")), None)
    lines += [f"note: {n}" for n in r.notes if n.startswith("a hang is possible")]
    if hang is not None and not r.outcomes:        # every execution blocks: no outcome is not "safe"
        lines.append(f"Hang: no execution terminates; {hang[len('hang: '):]}")
    if not r.complete:
        # why the list is incomplete: the outcome cap, or a loop the bound cut (raising the cap
        # cannot help then); the run's own note says which, as `ptxmc run` prints it
        bound = next((n for n in r.notes if n.startswith("loop bound reached")), None)
        if bound is None or any(n.startswith("outcome list incomplete") for n in r.notes):
            lines.append(f"(enumeration stopped at the outcome cap of {lim.outcomes}: the list is incomplete; "
                         f"raise it with {limits.flag('outcomes')})")
        if bound is not None:
            lines.append(f"(the list is incomplete: {bound})")
    emit("\n".join(lines) + "\n")
    if hang is not None and not r.outcomes:
        _say(f"ptxmc: {r.path}::{r.name}: no execution terminates (a hang)")    # every failing exit says why
        return EXIT_FAIL
    return EXIT_OK


if __name__ == "__main__":
    entry()
