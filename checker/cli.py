"""The `ptxmc` command line: run, check, outcomes, report, hw. The only module that imports
the others to drive them; no library imports it.

Exit codes (docs/cli.md#exit-codes): 0 every expectation met; 1 some expectation failed or a test
was malformed (each reported, the batch goes on); 2 usage error, an output that cannot be written,
or an internal error; 128 + N stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after
writing the results finished so far.
"""
from __future__ import annotations

import argparse
import signal
import os
import sys
from dataclasses import replace
from pathlib import Path

from . import limits, outsafe, pool
from .batch import INTERNAL, ResultStream, RunInterrupted, bounded, run_one, run_tests
from .cliargs import add_limit_options, add_output_options, check_options, check_paths, jobs_of, limits_of
from .errors import CheckerError, LimitExceeded, LitmusError, SolverUnknown, SourceLoc
from .resources import LITMUS_DIR, resolve_model
from .results.output import mark_partial
from .results.result import Result, outcome_text
from .textsafe import printable

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
# `ptxmc check` only: the answer was UNKNOWN (a solver limit or timeout); the test or condition is malformed
EXIT_UNKNOWN, EXIT_MALFORMED = 3, 4

__all__ = ["console", "main", "build_parser", "limits_of", "select_test"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model name (axioms/NAME.cat) or path; default ptx")
    p.add_argument("--option", action="append", default=[],
                   help="model option (repeatable), one the model reads, e.g. strict-cta")
    add_limit_options(p)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ptxmc", description="Model checker for the PTX memory consistency model.")
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
    add_output_options(run)
    chk = sub.add_parser("check", help="is this outcome allowed? answer and explanation")
    chk.add_argument("test", help="FILE or FILE::NAME")
    chk.add_argument("cond", help="a herd condition, e.g. 'P1:r0=1 /\\ P1:r1=0', or 'hang' (may some fair "
                                  "execution never terminate?)")
    chk.add_argument("--dot", help="write the witness / counterexample graph as DOT to this file")
    chk.add_argument("--expect", choices=("allowed", "forbidden", "undefined"),
                     help="exit 0 if this is the verdict, 1 if not (herd's ~exists / exists)")
    _common(chk)
    add_output_options(chk)
    out = sub.add_parser("outcomes", help="every allowed outcome, herd style, and a compact formula")
    out.add_argument("test", help="FILE or FILE::NAME")
    _common(out)
    from .convert.cli import add_subcommands as add_convert_subcommands
    from .gen.cli import add_subcommands as add_gen_subcommands
    from .harness.cli import add_hw_subcommands
    from .repair.cli import add_subcommands as add_repair_subcommands
    from .report.cli import add_report_subcommand

    add_hw_subcommands(sub)
    add_report_subcommand(sub)
    add_convert_subcommands(sub)
    add_repair_subcommands(sub)
    add_gen_subcommands(sub)
    return ap


def console() -> int:
    """The `ptxmc` command: main(), then multiprocessing's helper processes stopped and reaped
    (checker.pool.shutdown), so that no process, not even a defunct one, outlives ptxmc."""
    try:
        return main()
    finally:
        pool.shutdown()


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    with limits.use(limits.current()), pool.stop_signals():   # a command's --limit/--timeout end with
        return _main(args)         # it (main is also called in-process, by tests and the fuzzers)


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
        signum = pool.signum_of(e)
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
            raise outsafe.fail("<stdout>", e.strerror or str(e)) from None


# -- run ---------------------------------------------------------------------------------------

def inputs_of(paths, items) -> list[str]:
    """Every file a command read: the paths given and the file of each loaded item."""
    files = {str(p) for p in paths}
    for it in items:
        where = getattr(it, "where", None)
        if where is not None and where.path:
            files.add(where.path)
    return sorted(files)


def cmd_run(args) -> int:
    from .front.litmus import load_paths
    from .results import output

    lim = limits_of(args)
    limits.set_current(lim)
    jobs = jobs_of(args.jobs)
    paths = args.paths or [str(LITMUS_DIR)]
    check_paths(paths)
    check_options(resolve_model(args.model), args.option)
    items = load_paths(paths)
    policy = outsafe.policy_of(args, inputs_of(paths, items))
    for target in (args.output, args.results_jsonl):    # every output checked before the work
        if target is not None:
            outsafe.check_file(target, policy)
    if args.output and args.results_jsonl and outsafe.check_file(args.output, policy, probe=False) == \
            outsafe.check_file(args.results_jsonl, policy, probe=False):
        raise outsafe.fail(args.output, "it is also the --results-jsonl file")
    timing = not args.no_timing
    stream = ResultStream(args.results_jsonl, len(items), timing, policy) if args.results_jsonl else None
    tty = sys.stderr.isatty() and args.format == "text" and not args.output
    count = [0]

    def on_done(i: int, r: Result) -> None:
        if stream:
            stream.add(i, r)
        if tty:
            count[0] += 1
            print(f"\r{count[0]}/{len(items)}", end="", file=sys.stderr, flush=True)

    interrupted = 0
    try:
        results = run_tests(items, args.model, args.option, args.engine, jobs=jobs, lim=lim, on_done=on_done)
    except RunInterrupted as e:
        results, interrupted = e.results, e.signum
    except BaseException:
        if stream:
            stream.abandon()
        raise
    with pool.sigint_deferred():        # a (second) Ctrl-C must not cut the output short
        if tty:
            print("\r", end="", file=sys.stderr)
        text = output.FORMATS[args.format](results, timing=timing)
        if interrupted:
            text = mark_partial(args.format, text, len(results), len(items))
        try:
            if stream:
                stream.close(bool(interrupted))
        finally:
            if args.output:
                outsafe.write_file(args.output, text, policy)
            else:
                emit(text)
    if interrupted:
        how = "" if interrupted == 2 else f" ({signal.Signals(interrupted).name})"
        _say(f"ptxmc: interrupted{how}: {len(results)} of {len(items)} tests run")
        return 128 + interrupted
    if any(r.status == "error" and r.message.startswith(INTERNAL) for r in results):
        return EXIT_USAGE
    return EXIT_OK if all(r.ok for r in results) else EXIT_FAIL


# -- check / outcomes --------------------------------------------------------------------------

def select_test(spec: str):
    """FILE or FILE::NAME -> the one LitmusTest it names (LitmusError otherwise). Without a name
    the file must hold one test and no malformed one. With a name, only that test matters: the
    errors of other tests in the file are not its business (a malformed test of that name is
    reported with its own error)."""
    from .front.litmus import load_file

    path, _, name = spec.partition("::")
    if not path or not Path(path).exists():
        raise LitmusError(f"no such file: {path}")
    items = load_file(path)
    errors = [it for it in items if isinstance(it, LitmusError)]
    tests = [t for t in items if not isinstance(t, LitmusError)]
    if name:
        named = [t for t in tests if t.name == name]
        if named:
            return named[0]
        mine = _errors_of(path, name, errors)
        if mine:
            raise mine[0]
        if errors and not tests:
            raise errors[0]                         # the whole file is unreadable
        also = f" ({len(errors)} malformed test(s) in the file: `ptxmc run {path}` lists them)" if errors else ""
        raise LitmusError(f"no test named '{name}' in {path}{also}")
    if errors:
        raise errors[0]
    if len(tests) != 1:
        names = ", ".join(t.name for t in tests)
        raise LitmusError(f"{path} holds {len(tests)} tests ({names}): name one as {path}::NAME")
    return tests[0]


def _errors_of(path: str, name: str, errors: list) -> list:
    """The errors located inside the YAML item whose `name:` is `name` (a matrix test's name
    template, ${...} standing for anything, counts too), or that name it as a duplicate."""
    import re

    from .front import yamlsafe

    try:
        text = Path(path).read_text(encoding="utf-8")
        root = yamlsafe.compose(text, path)
    except (OSError, UnicodeError, CheckerError, RecursionError):
        return []
    if root is None:
        return []
    items = root.value if root.tag.endswith(":seq") else [root]
    spans = []
    for it in items:
        if not it.tag.endswith(":map"):
            continue
        raw = next((v.value for k, v in it.value if getattr(k, "value", None) == "name"
                    and isinstance(v.value, str)), None)
        if raw is None:
            continue
        pattern = ".*".join(re.escape(part) for part in re.split(r"\$\{[^{}]*\}", raw.strip()))
        if re.fullmatch(pattern, name):
            spans.append((it.start_mark.line + 1, it.end_mark.line + 1))
    return [e for e in errors if e.where is not None and any(a <= e.where.line <= b for a, b in spans)]


def _located(e: CheckerError, spec: str) -> CheckerError:
    """`e`, naming the test when it names no place itself."""
    return e if e.where is not None else type(e)(f"{spec}: {e.message}")


def _explain_job(job):
    from .verdict.explain import explain_text
    from .verdict.session import Session

    test, cond, model_spec, options, engine, lim = job
    limits.set_current(lim)
    pool.inject_fault(test.name)
    if cond == "hang" or test.branches:       # control paths and liveness (checker.verdict.paths)
        from .verdict.paths import explain_flow
        return explain_flow(test, cond, resolve_model(model_spec), frozenset(options), engine, lim)
    return explain_text(Session(test, resolve_model(model_spec), frozenset(options), engine, lim), cond)


def _outcomes_job(job) -> Result:
    return run_one(job)       # the same work; a separate name keeps pool job kinds apart


def cmd_check(args) -> int:
    from .front.conditions import parse_cond

    lim = limits_of(args)
    limits.set_current(lim)
    check_options(resolve_model(args.model), args.option)
    policy = outsafe.policy_of(args, [args.test.partition("::")[0]])
    if args.dot:
        outsafe.check_file(args.dot, policy)          # before the work, not after
    try:
        test = select_test(args.test)
        where = SourceLoc("<command line>", 1, args.cond)
        try:
            cond = "hang" if args.cond.strip() == "hang" else parse_cond(args.cond, where)
        except RecursionError:
            raise LitmusError("too deeply nested for this machine (Python's stack)", where) from None
        verdict, text, dot = bounded(_explain_job, (test, cond, args.model, tuple(args.option), args.engine, lim),
                                     lim)
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
    from .results.formula import compact
    from .results.output import herd

    lim = limits_of(args)
    limits.set_current(lim)
    test = select_test(args.test)
    check_options(resolve_model(args.model), args.option)
    bare = replace(test, expectations=(), expect_undefined=None)
    try:
        r = bounded(_outcomes_job, (bare, args.model, tuple(args.option), args.engine, lim), lim)
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
    if not r.complete:
        lines.append(f"(enumeration stopped at the outcome cap of {lim.outcomes}: the list is incomplete; "
                     f"raise it with {limits.flag('outcomes')})")
    emit("\n".join(lines) + "\n")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(console())
