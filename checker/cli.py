"""The `ptxmc` command line: run, check, outcomes (and hw, report when installed).

Exit codes (DESIGN §5): 0 every expectation met; 1 some expectation failed or a test was
malformed (each reported, the batch goes on); 2 usage or internal error.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from . import LITMUS_DIR, limits, pool
from .errors import CheckerError, InternalError, LimitExceeded, LitmusError, SolverUnknown, SourceLoc
from .limits import Limits
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
    p.add_argument("--engine", choices=("z3", "brute"), default="z3")


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
    chk = sub.add_parser("check", help="is this outcome allowed? answer and explanation")
    chk.add_argument("test", help="FILE or FILE::NAME")
    chk.add_argument("cond", help="a herd condition, e.g. 'P1:r0=1 /\\ P1:r1=0'")
    chk.add_argument("--dot", help="write the witness / counterexample graph as DOT to this file")
    _common(chk)
    out = sub.add_parser("outcomes", help="every allowed outcome, herd style, and a compact formula")
    out.add_argument("test", help="FILE or FILE::NAME")
    _common(out)
    try:
        from .harness.cli import add_hw_subcommands
        add_hw_subcommands(sub)
    except ImportError:
        pass
    try:
        from .report.cli import add_report_subcommand
        add_report_subcommand(sub)
    except ImportError:
        pass
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    with limits.use(limits.current()):     # a command's --limit/--timeout end with it (main is
        return _main(args)                 # also called in-process, by tests and the fuzzers)


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

class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during run_tests: `results` holds the Result of every test that finished, in input
    order; `total` is the number of items in the batch."""

    def __init__(self, results: list[Result], total: int):
        super().__init__(f"interrupted: {len(results)} of {total} tests run")
        self.results, self.total = results, total


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


def _run_one(job) -> Result:
    from .verdict.check import check_test, resolve_model

    test, model_spec, options, engine, lim = job
    limits.set_current(lim)
    pool.inject_fault(test.name)
    model = resolve_model(model_spec)
    return check_test(test, model, Path(model.path).stem, frozenset(options), engine, lim.timeout)


def run_tests(items, model_spec, options, engine, timeout=None, jobs=1, on_result=None, *,
              lim: Limits | None = None, on_done=None) -> list[Result]:
    """Check a batch (LitmusTest or LitmusError items); return the Results in input order.

    Malformed items become error Results (too large ones: unknown). With jobs >= 1 the tests run
    in that many worker processes (checker.pool): a worker that crashes costs only the test it
    was running ("worker crashed"), a test past the hard time bound is stopped and reported
    UNKNOWN, and the rest of the batch goes on. jobs == 0 runs them in this process.
    `on_result(result)` / `on_done(index, result)` are called as each test finishes. Ctrl-C
    raises RunInterrupted, which carries the Results finished so far."""
    from .verdict.check import resolve_model

    lim = lim or limits.current()
    if timeout is not None:
        lim = replace(lim, timeout=timeout)
    model = resolve_model(model_spec)  # fail early, once, on a bad model
    model_name = Path(model.path).stem
    results: list[Result | None] = [None] * len(items)

    def done(i: int, r: Result) -> None:
        with pool.sigint_deferred():    # a result is recorded everywhere or nowhere
            results[i] = r
            if on_done:
                on_done(i, r)
            if on_result:
                on_result(r)

    def finished(i: int, outcome) -> None:
        done(i, result_of(items[i], outcome, lim, engine, model_name))

    todo = []
    try:
        for i, it in enumerate(items):
            if isinstance(it, LitmusError):
                path = it.where.path if it.where else "?"
                status = "unknown" if isinstance(it, LimitExceeded) else "error"
                done(i, Result(name=_error_name(it), path=path, status=status, message=str(it)))
            else:
                todo.append(i)
        jobs_ = [(items[i], model_spec, tuple(options), engine, lim) for i in todo]
        if jobs >= 1 and not os.environ.get("PTXMC_DEBUG"):
            pool.run_pool(_run_one, jobs_, min(jobs, len(jobs_)), lim.hard_timeout(),
                          lambda k, outcome: finished(todo[k], outcome))
        else:
            for k, job in enumerate(jobs_):
                finished(todo[k], in_process(_run_one, job))
    except KeyboardInterrupt:
        raise RunInterrupted([r for r in results if r is not None], len(items)) from None
    return [r for r in results if r is not None]


def in_process(fn, job) -> pool.Outcome:
    try:
        return pool.Value(fn(job))
    except CheckerError as e:
        return pool.Raised(e)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:                  # noqa: BLE001 - a bug: reported for its test only
        if os.environ.get("PTXMC_DEBUG"):
            raise
        return pool.Bug(f"{type(e).__name__}: {e}", "")


INTERNAL = "internal error: "


def result_of(test, outcome, lim: Limits, engine: str, model_name: str) -> Result:
    if isinstance(outcome, pool.Value):
        return outcome.value
    base = Result(name=test.name, path=test.path, status="error", expect_undefined=test.expect_undefined,
                  engine=engine, model=model_name, matrix_row=test.matrix_row, source=test.source)
    if isinstance(outcome, pool.Raised):
        e = outcome.error
        status = "unknown" if isinstance(e, (SolverUnknown, LimitExceeded)) else "error"
        return replace(base, status=status, message=str(e))
    if isinstance(outcome, pool.Bug):
        trace = f"\n{outcome.trace}" if os.environ.get("PTXMC_DEBUG") and outcome.trace else ""
        return replace(base, message=f"{INTERNAL}{outcome.text} (a bug in ptxmc; set PTXMC_DEBUG=1 "
                                     f"for a traceback){trace}")
    if isinstance(outcome, pool.Crashed):
        return replace(base, message=f"worker crashed ({outcome.describe()}) while checking this test")
    return replace(base, status="unknown",
                   message=f"timeout: no answer within {lim.timeout:g} s; the worker was stopped after "
                           f"{outcome.seconds:g} s (raise it with {limits.flag('timeout')})")


def _error_name(e: LitmusError) -> str:
    w = e.where
    return f"{Path(w.path).name}:{w.line}" if w else "?"


class ResultStream:
    """`--results-jsonl FILE`: one JSON line per finished test, written and flushed as it
    finishes (in completion order, with its `index` in the batch), and a last line
    {"end": {"run": N, "total": M, "interrupted": bool}} once the run is over. A stream without
    that line was cut short (the process was killed)."""

    def __init__(self, path: str, total: int, timing: bool):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.f = open(path, "w", encoding="utf-8")
        self.total, self.timing, self.count = total, timing, 0

    def add(self, index: int, r: Result) -> None:
        from .results.output import result_dict

        self.f.write(json.dumps({"index": index, **result_dict(r, self.timing)}, sort_keys=True) + "\n")
        self.f.flush()
        self.count += 1

    def close(self, interrupted: bool) -> None:
        end = {"run": self.count, "total": self.total, "interrupted": interrupted}
        self.f.write(json.dumps({"end": end}, sort_keys=True) + "\n")
        self.f.close()


def mark_partial(fmt: str, text: str, run: int, total: int) -> str:
    """Output of an interrupted run, marked as such: complete for the tests it holds."""
    note = f"interrupted: {run} of {total} tests run"
    if fmt == "json":
        doc = json.loads(text)
        doc["interrupted"] = {"run": run, "total": total}
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if fmt == "junit":
        prop = (f'    <properties>\n      <property name="ptxmc.interrupted" value="{run} of {total} tests run"/>'
                f"\n    </properties>")
        lines = text.split("\n")
        at = next((k for k, line in enumerate(lines) if line.lstrip().startswith("<testsuite ")), None)
        if at is not None:
            lines.insert(at + 1, prop)
        return "\n".join(lines) + f"<!-- ptxmc: {note} -->\n"
    if fmt == "herd":
        return text + f"\nInterrupted: {run} of {total} tests run\n"
    return text + f"ptxmc: {note}\n"


def cmd_run(args) -> int:
    from .results import output
    from .verdict.check import resolve_model
    from .front.litmus import load_paths

    lim = limits_of(args)
    limits.set_current(lim)
    if args.jobs < 0:
        raise CheckerError(f"--jobs {args.jobs}: must be 0 (in this process) or positive")
    paths = args.paths or [str(LITMUS_DIR)]
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


def write_atomic(path: str, text: str) -> None:
    """Write via a temporary file in the same folder and rename: never a half-written file."""
    import tempfile

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)      # mkstemp makes 0600; the output is an ordinary file
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- check / outcomes --------------------------------------------------------------------------

def select_test(spec: str):
    """FILE or FILE::NAME -> the one LitmusTest it names (LitmusError otherwise)."""
    from .front.litmus import load_file

    path, _, name = spec.partition("::")
    if not Path(path).exists():
        raise LitmusError(f"no such file: {path}")
    items = load_file(path)
    for it in items:
        if isinstance(it, LitmusError) and (not name or name in str(it)):
            raise it
    tests = [t for t in items if not isinstance(t, LitmusError)]
    if name:
        tests = [t for t in tests if t.name == name]
        if not tests:
            raise LitmusError(f"no test named '{name}' in {path}")
    if len(tests) != 1:
        names = ", ".join(t.name for t in tests)
        raise LitmusError(f"{path} holds {len(tests)} tests ({names}): name one as {path}::NAME")
    return tests[0]


def bounded(fn, job, lim: Limits):
    """fn(job) in a worker process, stopped at the hard time bound: its value, or its
    CheckerError; a crash, a timeout or a bug become CheckerErrors too."""
    if os.environ.get("PTXMC_DEBUG"):
        return fn(job)
    box: list = []
    pool.run_pool(fn, [job], 1, lim.hard_timeout(), lambda _i, outcome: box.append(outcome))
    out = box[0]
    if isinstance(out, pool.Value):
        return out.value
    if isinstance(out, pool.Raised):
        raise out.error
    if isinstance(out, pool.Bug):
        raise InternalError(f"{INTERNAL}{out.text} (a bug in ptxmc; set PTXMC_DEBUG=1 for a traceback)")
    if isinstance(out, pool.Crashed):
        raise InternalError(f"worker crashed ({out.describe()})")
    raise SolverUnknown(f"timeout: no answer within {lim.timeout:g} s; the worker was stopped after "
                        f"{out.seconds:g} s (raise it with {limits.flag('timeout')})")


def _located(e: CheckerError, spec: str) -> CheckerError:
    """`e`, naming the test when it names no place itself."""
    return e if e.where is not None else type(e)(f"{spec}: {e.message}")


def _explain_job(job):
    from .verdict.explain import explain_condition

    test, cond, model_spec, options, lim = job
    limits.set_current(lim)
    pool.inject_fault(test.name)
    return explain_condition(test, cond, model_spec, frozenset(options), lim.timeout)


def _outcomes_job(job) -> Result:
    return _run_one(job)       # the same work; a separate name keeps pool job kinds apart


def cmd_check(args) -> int:
    from .verdict.check import resolve_model
    from .front.conditions import parse_cond

    lim = limits_of(args)
    limits.set_current(lim)
    test = select_test(args.test)
    cond = parse_cond(args.cond, SourceLoc("<command line>", 1, args.cond))
    resolve_model(args.model)
    try:
        text, dot = bounded(_explain_job, (test, cond, args.model, tuple(args.option), lim), lim)
    except CheckerError as e:
        raise _located(e, args.test) from None
    sys.stdout.write(text)
    if args.dot and dot:
        write_atomic(args.dot, dot)
    return EXIT_OK


def cmd_outcomes(args) -> int:
    from .verdict.check import resolve_model
    from .results.formula import compact
    from .results.output import herd

    lim = limits_of(args)
    limits.set_current(lim)
    test = select_test(args.test)
    resolve_model(args.model)
    bare = replace(test, expectations=(), expect_undefined=None)
    try:
        r = bounded(_outcomes_job, (bare, args.model, tuple(args.option), args.engine, lim), lim)
    except CheckerError as e:
        raise _located(e, args.test) from None
    if r.status in ("error", "unknown"):
        unknown = "UNKNOWN: " if r.status == "unknown" else ""
        print(f"ptxmc: {unknown}{r.path}::{r.name}: {r.message}", file=sys.stderr)
        return EXIT_FAIL
    if r.undefined:
        sys.stdout.write(herd([r]))
        return EXIT_OK
    lines = [f"Test {r.name}", f"States {len(r.outcomes)}"]
    lines += [" ".join(f"{k}={v};" for k, v in o) for o in r.outcomes]
    lines.append(f"Formula {compact(list(r.outcomes))}")
    if not r.complete:
        lines.append("(enumeration stopped at the outcome cap)")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
