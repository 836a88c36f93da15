"""`ptxmc hw gen|build|run|import|compare`: the hardware harness on the command line.
checker/cli.py calls `add_hw_subcommands(subparsers)`; each handler returns the exit code
(0 fine, 1 a test failed / not expressible / a violation, 2 usage). Errors are HarnessErrors,
printed by checker/cli.py without a traceback.

One command on a GPU machine runs the bundled suites and the positive controls and writes a
report folder (histograms.json, litmus7.log, compare.txt, unsupported.txt):

    ptxmc hw run --controls -o reports/hw
"""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import LITMUS_DIR
from ..errors import HarnessError, LitmusError

EXIT_OK, EXIT_FAIL = 0, 1


def add_hw_subcommands(subparsers) -> None:
    hw = subparsers.add_parser("hw", help="hardware harness: generate, compile, run, import, compare")
    sub = hw.add_subparsers(dest="hw_cmd", required=True)

    def common(p, outdir=True):
        p.add_argument("paths", nargs="*", help="litmus files or folders (default: the bundled litmus/)")
        p.add_argument("--controls", action="store_true", help="add the harness's positive controls")
        p.add_argument("--device", default=None, help="device configuration: a name (default, h100, b200) or a .toml")
        p.add_argument("--name", action="append", default=[], help="only tests with this name (repeatable)")
        if outdir:
            p.add_argument("-o", "--output", default="hw-out", help="output folder (default hw-out)")

    g = sub.add_parser("gen", help="write the CUDA program of each test; list those not expressible")
    common(g)
    g.set_defaults(func=cmd_gen)

    b = sub.add_parser("build", help="compile each program with nvcc for its target")
    common(b)
    b.add_argument("--jobs", type=int, default=2, help="parallel nvcc processes (default 2)")
    b.add_argument("--sass", action="store_true", help="build cubins and check every fence survives into SASS")
    b.set_defaults(func=cmd_build)

    r = sub.add_parser("run", help="build, run on the GPU, write histograms, a litmus7 log and the comparison")
    common(r)
    r.add_argument("--jobs", type=int, default=2, help="parallel nvcc processes (default 2)")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--time", type=float, default=None, help="seconds per test (default: the device configuration's)")
    r.add_argument("--iterations", type=int, default=None, help="at most this many launches per test")
    r.add_argument("--model", default=None, help="model for the comparison (default ptx)")
    r.add_argument("--option", action="append", default=[], help="model option (repeatable)")
    r.set_defaults(func=cmd_run)

    i = sub.add_parser("import", help="read histogram JSON files from elsewhere; print their litmus7 log")
    i.add_argument("files", nargs="+", help="histogram JSON files")
    i.add_argument("--tests", nargs="*", default=None, help="litmus files for the conditions (default: bundled)")
    i.add_argument("--controls", action="store_true", help="also look tests up among the positive controls")
    i.add_argument("-o", "--output", default=None, help="write the log here instead of stdout")
    i.set_defaults(func=cmd_import)

    c = sub.add_parser("compare", help="cross histograms with the model: violations, coverage gaps, controls")
    c.add_argument("files", nargs="+", help="histogram JSON files")
    c.add_argument("--tests", nargs="*", default=None, help="litmus files of the tests (default: bundled)")
    c.add_argument("--controls", action="store_true", help="also look tests up among the positive controls")
    c.add_argument("--model", default=None, help="model name or .cat path (default ptx)")
    c.add_argument("--option", action="append", default=[], help="model option (repeatable)")
    c.set_defaults(func=cmd_compare)


# -- helpers -------------------------------------------------------------------------------------

def load_tests(paths, controls: bool = False, names=()) -> tuple[list, list[LitmusError]]:
    from ..front.litmus import load_paths
    from .controls import controls as bundled_controls
    items = load_paths(paths or [str(LITMUS_DIR)])
    tests = [t for t in items if not isinstance(t, LitmusError)]
    errors = [t for t in items if isinstance(t, LitmusError)]
    if controls:
        tests += bundled_controls()
    if names:
        tests = [t for t in tests if t.name in set(names)]
        if not tests:
            raise HarnessError(f"no test named {', '.join(names)}")
    return tests, errors


def _config(spec):
    from .devices import load_device
    return load_device(spec)


def _programs(tests, config, cuda=None):
    """(expressible programs, [(name, reason)]) — every test is accounted for. `cuda`: the
    toolchain release to build with (PTX forms it cannot assemble are listed as not expressible)."""
    from .codegen import generate, unsupported
    progs, skipped = [], []
    for t in tests:
        why = unsupported(t, config, cuda)
        if why:
            skipped.append((t.name, why))
        else:
            progs.append((t, generate(t, config)))
    return progs, skipped


def _report_skipped(skipped, errors, out) -> None:
    for e in errors:
        print(f"malformed: {e}", file=out)
    for name, why in skipped:
        print(f"not expressible: {name}: {why}", file=out)


def _write_unsupported(outdir: Path, skipped) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "unsupported.txt").write_text("".join(f"{n}: {w}\n" for n, w in skipped))


# -- commands -------------------------------------------------------------------------------------

def cmd_gen(args) -> int:
    from .build import write_source
    cfg = _config(args.device)
    tests, errors = load_tests(args.paths, args.controls, args.name)
    progs, skipped = _programs(tests, cfg)
    outdir = Path(args.output)
    for _, p in progs:
        write_source(p, outdir)
    _write_unsupported(outdir, skipped)
    _report_skipped(skipped, errors, sys.stdout)
    print(f"generated {len(progs)} program(s) in {outdir}; {len(skipped)} not expressible; {len(errors)} malformed")
    return EXIT_FAIL if errors else EXIT_OK


def _build_all(progs, outdir: Path, kind: str, jobs: int):
    from .build import build

    def one(item):
        t, p = item
        try:
            return t, p, build(p, outdir, kind), None
        except HarnessError as e:
            return t, p, None, e
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        return list(ex.map(one, progs))


def cmd_build(args) -> int:
    from .toolchain import find_toolchain
    cfg = _config(args.device)
    tests, errors = load_tests(args.paths, args.controls, args.name)
    progs, skipped = _programs(tests, cfg, find_toolchain().version)
    outdir = Path(args.output)
    _write_unsupported(outdir, skipped)
    failed = 0
    if args.sass:
        from .build import build_cubins
        from .sass import check_built
        built = build_cubins([p for _, p in progs], outdir, jobs=args.jobs)
        for (t, p), checks in zip(progs, check_built([t for t, _ in progs], built, jobs=args.jobs)):
            if isinstance(checks, HarnessError):
                failed += 1
                print(f"FAIL {checks}")
                continue
            missing = [c for c in checks if not c.ok]
            failed += bool(missing)
            print(f"{'ok  ' if not missing else 'FAIL'} {t.name} ({p.target}), fences in SASS: "
                  f"{len(checks) - len(missing)}/{len(checks)}" + "".join(f"\n     {c}" for c in missing))
    else:
        for t, p, res, err in _build_all(progs, outdir, "exe", args.jobs):
            failed += err is not None
            print(f"FAIL {err}" if err is not None else f"ok   {t.name} ({p.target}, {res.seconds:.1f} s)")
    _report_skipped(skipped, errors, sys.stdout)
    print(f"built {len(progs) - failed}/{len(progs)}; {len(skipped)} not expressible; {len(errors)} malformed")
    return EXIT_FAIL if failed or errors else EXIT_OK


def _model_verdicts(tests, model_spec, options):
    from ..resources import resolve_model
    from ..verdict.check import check_test
    from .compare import verdicts_from_result
    model = resolve_model(model_spec)
    out = {}
    for t in tests:
        res = check_test(t, model, options=frozenset(options))
        if res.outcomes and res.complete:
            out[t.name] = verdicts_from_result(res)
    return out


def cmd_run(args) -> int:
    from . import histogram, litmus7
    from .compare import compare, exit_code, render
    from .run import no_gpu_reason, run
    reason = no_gpu_reason()
    if reason:
        raise HarnessError(f"hw run: {reason}; use `ptxmc hw build` here and `ptxmc hw import` the results")
    from .toolchain import find_toolchain
    cfg = _config(args.device)
    tests, errors = load_tests(args.paths, args.controls, args.name)
    progs, skipped = _programs(tests, cfg, find_toolchain().version)
    outdir = Path(args.output)
    _write_unsupported(outdir, skipped)
    hists, failed = [], 0
    for t, p, res, err in _build_all(progs, outdir / "build", "exe", args.jobs):
        if err is not None:
            failed += 1
            print(f"FAIL {err}")
            continue
        try:
            h = run(p, res.output, seed=args.seed, time_s=args.time, iterations=args.iterations)
        except HarnessError as e:
            failed += 1
            print(f"FAIL {e}")
            continue
        hists.append(h)
        print(f"ran  {t.name}: {h.total} instances in {h.time_s:.1f} s, {len(h.counts)} outcome(s)")
    if hists:
        histogram.save(hists, outdir / "histograms.json")
        by_name = {t.name: t for t in tests}
        (outdir / "litmus7.log").write_text(litmus7.log(hists, by_name))
        comps = compare(hists, _model_verdicts([by_name[h.test] for h in hists], args.model, args.option), by_name)
        text = render(comps)
        (outdir / "compare.txt").write_text(text + "\n")
        print(text)
    _report_skipped(skipped, errors, sys.stdout)
    print(f"wrote {outdir}/histograms.json, litmus7.log, compare.txt, unsupported.txt")
    return EXIT_FAIL if failed or errors else (exit_code(comps) if hists else EXIT_OK)


def _tests_by_name(paths, controls) -> dict:
    tests, _ = load_tests(paths, controls)
    return {t.name: t for t in tests}


def cmd_import(args) -> int:
    from . import histogram, litmus7
    hists = [h for f in args.files for h in histogram.load(f)]
    text = litmus7.log(hists, _tests_by_name(args.tests, args.controls))
    if args.output:
        Path(args.output).write_text(text)
        print(f"imported {len(hists)} histogram(s) into {args.output}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_compare(args) -> int:
    from . import histogram
    from .compare import compare, exit_code, render
    hists = [h for f in args.files for h in histogram.load(f)]
    tests = _tests_by_name(args.tests, args.controls)
    unknown = sorted({h.test for h in hists} - set(tests))
    if unknown:
        print(f"warning: no litmus test for {', '.join(unknown)}: compared without expectations or model",
              file=sys.stderr)
    model = _model_verdicts([tests[h.test] for h in hists if h.test in tests], args.model, args.option)
    comps = compare(hists, model, tests)
    print(render(comps))
    return exit_code(comps)
