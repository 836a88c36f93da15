"""The `ptxmc` command line: run, check, outcomes (and hw, report when installed).

Exit codes (DESIGN §5): 0 every expectation met; 1 some expectation failed or a test was
malformed (each reported, the batch goes on); 2 usage or internal error.
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import LITMUS_DIR
from .errors import CheckerError, LitmusError, SourceLoc
from .result import Result

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model name (axioms/NAME.cat) or path; default ptx")
    p.add_argument("--option", action="append", default=[], help="model option (repeatable), e.g. strict-cta")
    p.add_argument("--timeout", type=float, default=60.0, help="per-test time limit in seconds")
    p.add_argument("--engine", choices=("z3", "brute"), default="z3")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ptxmc", description="Model checker for the PTX memory consistency model.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run suites and judge their expectations")
    run.add_argument("paths", nargs="*", help="files or folders (default: the bundled litmus/)")
    run.add_argument("--format", choices=("text", "herd", "json", "junit"), default="text")
    run.add_argument("--jobs", type=int, default=1)
    run.add_argument("--no-timing", action="store_true", help="leave timing fields out (byte-identical output)")
    run.add_argument("-o", "--output", help="write to this file (atomically) instead of stdout")
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
    try:
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "check":
            return cmd_check(args)
        if args.cmd == "outcomes":
            return cmd_outcomes(args)
        return args.func(args)
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

def _run_one(job) -> Result:
    from .check import check_test, resolve_model

    test, model_spec, options, engine, timeout = job
    model = resolve_model(model_spec)
    return check_test(test, model, Path(model.path).stem, frozenset(options), engine, timeout)


def run_tests(items, model_spec, options, engine, timeout, jobs=1, on_result=None) -> list[Result]:
    """Check a batch (LitmusTest or LitmusError items) in order; errors become error Results."""
    from .check import resolve_model

    resolve_model(model_spec)  # fail early, once, on a bad model
    results: list[Result | None] = [None] * len(items)
    todo = []
    for i, it in enumerate(items):
        if isinstance(it, LitmusError):
            path = it.where.path if it.where else "?"
            results[i] = Result(name=_error_name(it), path=path, status="error", message=str(it))
        else:
            todo.append((i, (it, model_spec, tuple(options), engine, timeout)))
    if jobs > 1 and len(todo) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for (i, _), res in zip(todo, pool.map(_run_one, [j for _, j in todo], chunksize=1)):
                results[i] = res
                if on_result:
                    on_result(res)
    else:
        for i, job in todo:
            results[i] = _run_one(job)
            if on_result:
                on_result(results[i])
    return [r for r in results if r is not None]


def _error_name(e: LitmusError) -> str:
    w = e.where
    return f"{Path(w.path).name}:{w.line}" if w else "?"


def cmd_run(args) -> int:
    from . import output
    from .litmus import load_paths

    paths = args.paths or [str(LITMUS_DIR)]
    for p in paths:
        if not Path(p).exists():
            print(f"ptxmc: no such file or folder: {p}", file=sys.stderr)
            return EXIT_USAGE
    items = load_paths(paths)
    progress = None
    if sys.stderr.isatty() and args.format == "text" and not args.output:
        done = [0]

        def progress(_r):
            done[0] += 1
            print(f"\r{done[0]}/{len(items)}", end="", file=sys.stderr, flush=True)
    results = run_tests(items, args.model, args.option, args.engine, args.timeout, args.jobs, progress)
    if progress:
        print("\r", end="", file=sys.stderr)
    text = output.FORMATS[args.format](results, timing=not args.no_timing)
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
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
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- check / outcomes --------------------------------------------------------------------------

def select_test(spec: str):
    """FILE or FILE::NAME -> the one LitmusTest it names (LitmusError otherwise)."""
    from .litmus import load_file

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


def cmd_check(args) -> int:
    from .explain import explain_condition

    test = select_test(args.test)
    from .cond import parse_cond

    cond = parse_cond(args.cond, SourceLoc("<command line>", 1, args.cond))
    text, dot = explain_condition(test, cond, args.model, frozenset(args.option), args.timeout)
    sys.stdout.write(text)
    if args.dot and dot:
        write_atomic(args.dot, dot)
    return EXIT_OK


def cmd_outcomes(args) -> int:
    from .check import check_test, resolve_model
    from .formula import compact
    from .output import herd
    from dataclasses import replace

    test = select_test(args.test)
    model = resolve_model(args.model)
    bare = replace(test, expectations=(), expect_undefined=None)
    r = check_test(bare, model, Path(model.path).stem, frozenset(args.option), args.engine, args.timeout)
    if r.status in ("error", "unknown"):
        print(f"ptxmc: {r.name}: {r.message}", file=sys.stderr)
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
