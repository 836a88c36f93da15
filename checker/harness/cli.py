"""`ptxmc hw gen|build|run|import|compare`: the hardware harness on the command line.
checker/cli.py calls `add_hw_subcommands(subparsers)`; each handler returns the exit code
(0 fine, 1 a test failed / not expressible / a violation, 2 usage). Errors are HarnessErrors,
printed by checker/cli.py without a traceback.

One command on a GPU machine runs the bundled suites and the positive controls and writes a
report folder (histograms.jsonl, appended test by test; histograms.json, litmus7.log,
compare.txt, unsupported.txt):

    ptxmc hw run --controls -o reports/hw

It checks the GPU, target and driver first, builds and runs one test at a time, survives
interruption (--resume goes on where it stopped), fits a lease (--budget SECONDS), spreads tests
over GPUs (--devices 0,1) or machines (--shard i/n), and can run executables built elsewhere
(--prebuilt DIR from `ptxmc hw build`). `--fake-device SPEC` drives the same path with a
simulated GPU (checker.harness.fakegpu): its output is labelled SIMULATED throughout.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..resources import LITMUS_DIR, bundled
from ..errors import HarnessError, LitmusError

EXIT_OK, EXIT_FAIL = 0, 1


def add_hw_subcommands(subparsers) -> None:
    hw = subparsers.add_parser("hw", help="hardware harness: generate, compile, run, import, compare")
    sub = hw.add_subparsers(dest="hw_cmd", required=True)

    from ..cliargs import add_output_options

    def common(p, outdir=True):
        p.add_argument("paths", nargs="*", help="litmus files or folders (default: the bundled litmus/)")
        p.add_argument("--controls", action="store_true", help="add the harness's positive controls")
        p.add_argument("--device", default=None, help="device configuration: a name (default, h100, b200) or a .toml")
        p.add_argument("--name", action="append", default=[], help="only tests with this name (repeatable)")
        if outdir:
            p.add_argument("-o", "--output", default="hw-out",
                           help="output folder (default hw-out): absent, empty, or written by ptxmc hw before")
            add_output_options(p)

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
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--devices", default=None, help="GPU indices to spread the tests over, e.g. 0,1 (default: GPU 0)")
    r.add_argument("--shard", default=None, help="I/N: only the I-th of N equal shares of the tests (1 <= I <= N)")
    r.add_argument("--budget", type=float, default=None, help="stop starting tests after this many seconds")
    r.add_argument("--resume", action="store_true", help="skip tests already in OUTPUT/histograms.jsonl")
    r.add_argument("--prebuilt", default=None, help="run the executables of a `ptxmc hw build` folder")
    r.add_argument("--sanitize", choices=("racecheck", "synccheck"), default=None,
                   help="also run each program under compute-sanitizer (GPU machines with the sanitizer only)")
    r.add_argument("--max-timeouts", type=float, default=None,
                   help="fraction of instances whose awaits may give up before a test fails (default 0.1)")
    r.add_argument("--fake-device", default=None, metavar="SPEC",
                   help="simulate a GPU (plumbing tests; output labelled SIMULATED): '' or KIND:TEST,...")
    r.add_argument("--time", type=float, default=None, help="seconds per test (default: the device configuration's)")
    r.add_argument("--iterations", type=int, default=None, help="at most this many launches per test")
    r.add_argument("--kill-after", type=float, default=20.0,
                   help="kill a program still running this many seconds + 3x its time after it started (default 20)")
    r.add_argument("--model", default=None, help="model for the comparison (default ptx)")
    r.add_argument("--option", action="append", default=[], help="model option (repeatable)")
    r.set_defaults(func=cmd_run)

    k = sub.add_parser("pack", help="build and check every program into a bundle a GPU machine runs with "
                                    "`python3 BUNDLE/run.py --deadline SECONDS` (standard library only)")
    k.add_argument("paths", nargs="*", help="litmus files or folders (default: the bundled litmus/)")
    k.add_argument("--device", required=True, help="device configuration: h100, b200 (or default, or a .toml)")
    k.add_argument("--profile", default="full", help="time per test: full (the configuration's) or first-run "
                                                     "(about 6 minutes for the suite on one H100/H200)")
    k.add_argument("--name", action="append", default=[], help="only tests with this name (repeatable)")
    k.add_argument("--no-controls", action="store_true", help="leave the positive controls out")
    k.add_argument("--jobs", type=int, default=2, help="parallel nvcc processes (default 2)")
    k.add_argument("--chunk", type=int, default=None, help="programs per executable (default 24)")
    k.add_argument("-o", "--output", required=True, help="bundle folder: absent, empty, or written by ptxmc hw before")
    add_output_options(k)
    k.set_defaults(func=cmd_pack)

    i = sub.add_parser("import", help="read histograms (JSON, JSONL, or litmus7 logs); print their litmus7 log")
    i.add_argument("files", nargs="+", help="histogram JSON/JSONL files or litmus7 logs (.log)")
    i.add_argument("--json", default=None, help="also write the histograms as JSON here")
    i.add_argument("--tests", nargs="*", default=None, help="litmus files for the conditions (default: bundled)")
    i.add_argument("--controls", action="store_true", help="also look tests up among the positive controls")
    i.add_argument("-o", "--output", default=None, help="write the log here instead of stdout")
    add_output_options(i)
    i.set_defaults(func=cmd_import)

    c = sub.add_parser("compare", help="cross histograms with the model: violations, coverage gaps, controls")
    c.add_argument("files", nargs="+", help="histogram JSON/JSONL files or litmus7 logs (.log)")
    c.add_argument("--max-timeouts", type=float, default=None,
                   help="fraction of instances whose awaits may give up before a test fails (default 0.1)")
    c.add_argument("--tests", nargs="*", default=None, help="litmus files of the tests (default: bundled)")
    c.add_argument("--controls", action="store_true", help="also look tests up among the positive controls")
    c.add_argument("--model", default=None, help="model name or .cat path (default ptx)")
    c.add_argument("--option", action="append", default=[], help="model option (repeatable)")
    c.set_defaults(func=cmd_compare)


# -- helpers -------------------------------------------------------------------------------------

def _shard(tests: list, spec: str | None) -> list:
    if spec is None:
        return tests
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise HarnessError(f"--shard {spec!r}: expected I/N, e.g. 1/4")
    if not 1 <= i <= n:
        raise HarnessError(f"--shard {spec!r}: I must be between 1 and N")
    return [t for k, t in enumerate(tests) if k % n == i - 1]


def load_tests(paths, controls: bool = False, names=()) -> tuple[list, list[LitmusError]]:
    from ..front.litmus import load_paths
    from .controls import controls as bundled_controls
    items = load_paths([bundled(p) for p in paths or ()] or [str(LITMUS_DIR)])
    tests = [t for t in items if not isinstance(t, LitmusError)]
    errors = [t for t in items if isinstance(t, LitmusError)]
    if controls:          # first: a run cut short by its budget or deadline still has them (review C3)
        tests = bundled_controls() + tests
    if names:
        unknown = sorted(set(names) - {t.name for t in tests})
        if unknown:
            raise HarnessError(f"no test named {', '.join(unknown)}")
        tests = [t for t in tests if t.name in set(names)]
    return tests, errors


def _config(spec):
    from .devices import load_device
    return load_device(spec)


def _programs(tests, config, cuda=None):
    """(programs, [(name, reason)]): checker.harness.static_check.checked_programs."""
    from .static_check import checked_programs
    return checked_programs(tests, config, cuda)


def _report_skipped(skipped, errors, out) -> None:
    for e in errors:
        print(f"malformed: {e}", file=out)
    for name, why in skipped:
        print(f"not expressible: {name}: {why}", file=out)


def _write_unsupported(outdir: Path, skipped) -> None:
    from ..outsafe import write_file
    write_file(outdir / "unsupported.txt", "".join(f"{n}: {w}\n" for n, w in skipped))


def _outdir(args, paths=()) -> Path:
    """The output folder, checked before the work (checker.outsafe: absent, empty or ptxmc hw's;
    never one holding an input) and marked as ptxmc's."""
    from ..outsafe import check_folder, policy_of
    return check_folder(args.output, "hw", policy_of(args, _inputs(args, paths)))


def _inputs(args, paths) -> list[str]:
    """Every file the command reads: the tests (default: the bundled ones), the model given with
    --model and the files it includes (hw run) and a device configuration file (--device FILE.toml)."""
    from ..cliargs import model_files
    found = [str(p) for p in paths] or [str(LITMUS_DIR)]
    if getattr(args, "model", None):          # (the default model is loaded only after the runs: B2)
        found += model_files(args.model)
    device = getattr(args, "device", None)
    if device and (device.endswith(".toml") or Path(device).is_file()):
        found.append(device)
    return found


def _check_numbers(args) -> None:
    """hw run's numbers, checked up front like every command's (finite, positive; a fraction)."""
    import math

    from ..errors import CheckerError
    for flag, v in (("--budget", args.budget), ("--time", args.time), ("--kill-after", args.kill_after)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise CheckerError(f"{flag} {v:g}: must be a positive number of seconds")
    if args.iterations is not None and args.iterations <= 0:
        raise CheckerError(f"--iterations {args.iterations}: must be positive")
    if args.max_timeouts is not None and not 0 <= args.max_timeouts <= 1:
        raise CheckerError(f"--max-timeouts {args.max_timeouts:g}: must be a fraction from 0 to 1")


def _unique_files(progs) -> None:
    """Distinct tests must get distinct files (safe_filename keeps names apart; this is the
    guard that a build can never credit one test's binary to another)."""
    from .build import safe_name
    seen: dict[str, str] = {}
    for t, _ in progs:
        f = safe_name(t.name)
        if f in seen and seen[f] != t.name:
            raise HarnessError(f"tests {seen[f]!r} and {t.name!r} would share the file {f}.cu: rename one")
        seen[f] = t.name


# -- commands -------------------------------------------------------------------------------------

def cmd_gen(args) -> int:
    from .build import write_source
    cfg = _config(args.device)
    outdir = _outdir(args, args.paths)
    tests, errors = load_tests(args.paths, args.controls, args.name)
    progs, skipped = _programs(tests, cfg)
    _unique_files(progs)
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
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        return list(ex.map(one, progs))


def cmd_build(args) -> int:
    from ..cliargs import jobs_of
    from .toolchain import find_toolchain
    args.jobs = jobs_of(args.jobs, zero=None)
    cfg = _config(args.device)
    outdir = _outdir(args, args.paths)
    tests, errors = load_tests(args.paths, args.controls, args.name)
    progs, skipped = _programs(tests, cfg, find_toolchain().version)
    _unique_files(progs)
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
            print(f"{'ok  ' if not missing else 'FAIL'} {t.name} ({p.target}), fences and accesses in SASS: "
                  f"{len(checks) - len(missing)}/{len(checks)}" + "".join(f"\n     {c}" for c in missing))
    else:
        for t, p, res, err in _build_all(progs, outdir, "exe", args.jobs):
            failed += err is not None
            print(f"FAIL {err}" if err is not None else f"ok   {t.name} ({p.target}, {res.seconds:.1f} s)")
    _report_skipped(skipped, errors, sys.stdout)
    print(f"built {len(progs) - failed}/{len(progs)}; {len(skipped)} not expressible; {len(errors)} malformed")
    return EXIT_FAIL if failed or errors else EXIT_OK


def _model_verdicts(tests, model_spec, options, say=None, hangs=None, unavailable=None):
    """test name -> {outcome: 'allowed'} for the tests whose outcome list the model gives; with
    `hangs` (a dict), also test name -> the model's hang verdict, for the tests that ask for one.
    When the model cannot run here at all (lark or z3 not installed: a GPU machine's Python), the
    reason is appended to `unavailable` and nothing is returned (review C4: the comparison must say
    it judged the expectations only, never pass silently)."""
    from .compare import hang_from_result, verdicts_from_result
    try:
        from ..resources import resolve_model
        from ..verdict.check import check_test
        model = resolve_model(model_spec)
    except ImportError as e:
        if unavailable is None:
            raise
        unavailable.append(f"{type(e).__name__}: {e}")
        return {}
    out = {}
    for t in tests:
        try:
            res = check_test(t, model, options=frozenset(options))
        except ImportError as e:
            if unavailable is None:
                raise
            unavailable.append(f"{type(e).__name__}: {e}")
            return {}
        except Exception as e:             # the comparison goes on without this test's model side
            if say:
                say(f"model: {t.name}: {type(e).__name__}: {e}")
            continue
        if hangs is not None and not res.undefined:
            hangs[t.name] = hang_from_result(res)
        if res.outcomes and res.complete and not res.undefined:
            out[t.name] = verdicts_from_result(res)
    return out


def cmd_run(args) -> int:
    from . import histogram, litmus7
    from .compare import MAX_TIMEOUT_FRACTION, compare, exit_code, render
    from .runner import GpuBackend, run_suite
    from .toolchain import find_toolchain
    if args.model or args.option:        # the default model is loaded after the runs, if it can be (B2)
        from ..cliargs import check_options
        from ..resources import resolve_model
        check_options(resolve_model(args.model), args.option)
    _check_numbers(args)
    outdir = _outdir(args, args.paths)
    _shard([], args.shard)
    from .runner import earlier_results
    if not args.resume and (outdir / "histograms.jsonl").is_file() and (outdir / "histograms.jsonl").stat().st_size:
        raise HarnessError(earlier_results(outdir / "histograms.jsonl"))
    tests, errors = load_tests(args.paths, args.controls, args.name)
    tests = _shard(tests, args.shard)
    if args.fake_device is not None:
        from .fakegpu import FakeBackend, parse_spec
        spec = parse_spec(args.fake_device)
        cfg = _config(args.device)
        cuda = None
        devices = tuple(args.devices.split(",")) if args.devices else ("",)
        print("SIMULATED: --fake-device: no GPU is used; nothing below is an observation")
    else:
        from .devicecheck import plan
        from .devices import load_device
        from .run import gpus
        tc = find_toolchain()
        given = load_device(args.device).target if args.device else None
        pl = plan(gpus(), args.devices, args.device, given, tc.version)
        for n in pl.notes:
            print(f"note: {n}")
        cfg = _config(pl.config)
        cuda = tc.version
        devices = pl.devices
        if args.prebuilt is None:
            tc.require("nvcc")
    progs, skipped = _programs(tests, cfg, cuda)
    _unique_files(progs)
    _write_unsupported(outdir, skipped)
    by_name = {t.name: t for t in tests}
    model: dict = {}
    hangs: dict = {}
    if args.fake_device is not None:      # the fake device samples the model's outcomes: needed first
        model = _model_verdicts([t for t, _ in progs], args.model, args.option, say=print, hangs=hangs)
        backend = FakeBackend({n: list(v) for n, v in model.items()}, spec, hangs=dict(hangs))
    else:
        backend = GpuBackend(Path(args.prebuilt) if args.prebuilt else None, args.sanitize, tc.version or "",
                             kill_after=args.kill_after)
    run = run_suite(progs, outdir, backend, devices, seed=args.seed, time_s=args.time, iterations=args.iterations,
                    budget_s=args.budget, resume=args.resume, nvcc=cuda or "")
    jsonl = outdir / "histograms.jsonl"
    hists = histogram.load(jsonl, allow_simulated=True) if jsonl.exists() else []
    comps = []
    if hists:
        from ..outsafe import write_file
        histogram.save(hists, outdir / "histograms.json")
        known = {**by_name, **_tests_by_name(None, True)} if args.resume else by_name
        write_file(outdir / "litmus7.log", litmus7.log(hists, known))
        missing = [t for t in {h.test for h in hists} if t not in model and t in known]
        unavailable: list[str] = []
        if missing:
            model.update(_model_verdicts([known[t] for t in missing], args.model, args.option, say=print, hangs=hangs,
                                         unavailable=unavailable))
        comps = compare([h for h in hists if h.test in known], model, known,
                        max_timeout_fraction=args.max_timeouts if args.max_timeouts is not None else MAX_TIMEOUT_FRACTION,
                        hangs=hangs)
        text = _expectations_only(unavailable) + render(comps)
        write_file(outdir / "compare.txt", text + "\n")
        print(text)
    _report_skipped(skipped, errors, sys.stdout)
    failed, not_run = run.count("failed"), run.count("not-run")
    print(f"ran {run.count('ran')}, resumed {run.count('skipped')}, failed {failed}, not run {not_run} (budget); "
          f"wrote {outdir}/histograms.jsonl, histograms.json, litmus7.log, compare.txt, unsupported.txt")
    if not_run:
        print(f"incomplete: {not_run} test(s) not run; `ptxmc hw run ... --resume -o {outdir}` goes on")
    if hists and unavailable:
        return EXIT_FAIL
    return EXIT_FAIL if failed or errors or not_run else exit_code(comps)


def _expectations_only(unavailable: list[str]) -> str:
    if not unavailable:
        return ""
    return (f"EXPECTATIONS ONLY: the model could not run here ({unavailable[0]}): each test is judged by its own "
            f"expectations, and an observed outcome the model forbids but no expectation names is NOT reported; "
            f"compare these histograms with `ptxmc hw compare` where ptxmc's dependencies are installed\n")


def cmd_pack(args) -> int:
    from ..cliargs import jobs_of
    from .bundle import CHUNK, PROFILES, bundle_size, pack
    args.jobs = jobs_of(args.jobs, zero=None)
    if args.profile not in PROFILES:
        raise HarnessError(f"--profile {args.profile}: unknown (known: {', '.join(PROFILES)})")
    if args.chunk is not None and args.chunk < 1:
        raise HarnessError(f"--chunk {args.chunk}: must be at least 1")
    cfg = _config(args.device)
    outdir = _outdir(args, args.paths)
    tests, errors = load_tests(args.paths, not args.no_controls, args.name)
    manifest = pack(tests, cfg, outdir, args.profile, chunk=args.chunk or CHUNK, jobs=args.jobs)
    for e in errors:
        print(f"malformed: {e}")
    for x in manifest["not_packed"]:
        print(f"not packed: {x['name']}: {x['reason']}")
    tests_n = len(manifest["tests"])
    planned = sum(e["time_s"] for e in manifest["tests"])
    print(f"packed {tests_n} test(s) for '{cfg.name}' ({cfg.target}), profile {args.profile} (planned {planned:.0f} s "
          f"of test time); {len(manifest['not_packed'])} not packed; {len(errors)} malformed; "
          f"{bundle_size(outdir) / 1e6:.1f} MB in {outdir}")
    print(f"on the GPU machine: python3 {outdir}/run.py --deadline {manifest['deadline_s'] or int(planned * 1.3) + 60}")
    return EXIT_FAIL if errors or not tests_n else EXIT_OK


def _tests_by_name(paths, controls) -> dict:
    tests, _ = load_tests(paths, controls)
    return {t.name: t for t in tests}


def _run_status(folder: Path) -> list[str]:
    """What a bundle run's status.json says did not give a histogram: one line per test."""
    import json
    try:
        status = json.loads((folder / "status.json").read_text(encoding="utf-8"))
        lines = [f"failed on the device: {x['test']}: {x['why']}" for x in status.get("failed", [])]
        lines += [f"not run: {x['test']}: {x['why']}" for x in status.get("not_run", [])]
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise HarnessError(f"{folder / 'status.json'}: not a bundle run's status ({type(e).__name__}: {e})")
    return [str(line) for line in lines]


def _load_any(files, tests, incomplete: list | None = None) -> list:
    """Histograms from ptxmc JSON/JSONL files, litmus7 logs (.log / 'Test ' first line) and the
    results folders of a bundle's run.py (histograms.jsonl; what status.json says failed or was
    not run is appended to `incomplete`)."""
    from .litmus7 import load_any
    out = []
    for f in files:
        p = Path(f)
        out += load_any(p, tests, allow_simulated=True)
        if p.is_dir() and (p / "status.json").is_file() and incomplete is not None:
            incomplete += _run_status(p)
    return out


def cmd_import(args) -> int:
    from ..outsafe import check_file, policy_of, write_file
    from . import histogram, litmus7
    policy = policy_of(args, list(args.files) + list(args.tests or []))
    for target in (args.json, args.output):          # checked before the work
        if target:
            check_file(target, policy)
    tests = _tests_by_name(args.tests, args.controls)
    hists = _load_any(args.files, tests)
    if args.json:
        histogram.save(hists, args.json, policy)
    text = litmus7.log(hists, tests)
    if args.output:
        write_file(args.output, text, policy)
        print(f"imported {len(hists)} histogram(s) into {args.output}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_compare(args) -> int:
    from .compare import MAX_TIMEOUT_FRACTION, compare, exit_code, render
    if args.model or args.option:
        from ..cliargs import check_options
        from ..resources import resolve_model
        check_options(resolve_model(args.model), args.option)
    tests = _tests_by_name(args.tests, args.controls)
    incomplete: list[str] = []
    hists = _load_any(args.files, tests, incomplete)
    unknown = sorted({h.test for h in hists} - set(tests))
    if unknown:
        print(f"warning: no litmus test for {', '.join(unknown)}: compared without expectations or model",
              file=sys.stderr)
    hangs: dict = {}
    unavailable: list[str] = []
    model = _model_verdicts([tests[h.test] for h in hists if h.test in tests], args.model, args.option, hangs=hangs,
                            unavailable=unavailable)
    comps = compare(hists, model, tests,
                    max_timeout_fraction=args.max_timeouts if args.max_timeouts is not None else MAX_TIMEOUT_FRACTION,
                    hangs=hangs)
    print(_expectations_only(unavailable) + render(comps))
    if incomplete:
        print(f"Incomplete run: {len(incomplete)} test(s) gave no histogram\n" + "\n".join("    " + x for x in incomplete))
    return EXIT_FAIL if unavailable or incomplete else exit_code(comps)
