"""`ptxmc fix` on the command line. checker/cli.py calls `add_subcommands(subparsers)`.

    ptxmc fix FILE[::NAME] [COND] [--max N] [--cost FILE] [--search cegis|exhaustive]
              [--budget S] [--apply [-o FILE] | --in-place] [--pick K] [--format text|json]
    ptxmc fix FILE[::NAME] --prune [...]

Exit codes: 0 a repair was found (or there is nothing to fix; --prune: the analysis finished);
1 no repair exists or none was found in the budget, or the test is malformed; 2 usage.
Errors are CheckerErrors, printed by checker/cli.py. See docs/fix.md.
"""
from __future__ import annotations

import sys
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def add_subcommands(subparsers) -> None:
    from ..cliargs import add_limit_options

    p = subparsers.add_parser(
        "fix", help="the cheapest synchronization that meets a test's expectations, proven minimal",
        description="Find every least-cost repair (fences, stronger accesses, completion waits, barriers) that "
                    "makes the test's forbidden conditions (or COND) forbidden, keeps its allowed ones allowed and "
                    "removes undefined behaviour; prove that nothing cheaper exists; print each repair as a diff "
                    "of the YAML. With --prune: the synchronization a passing test can do without. See docs/fix.md.")
    p.add_argument("test", help="FILE or FILE::NAME")
    p.add_argument("cond", nargs="?", help="a condition to make forbidden (herd syntax), instead of the "
                                           "test's own forbidden expectations; `hang`: make a hang impossible")
    p.add_argument("--prune", action="store_true",
                   help="the converse: which fences and strengthenings can be removed or weakened while the "
                        "expectations stay met (least synchronization, proven)")
    p.add_argument("--max", type=int, default=8, help="report at most N repairs of least cost (default 8)")
    p.add_argument("--cost", metavar="FILE", help="a YAML or TOML table overriding edit costs (docs/fix.md)")
    p.add_argument("--search", choices=("cegis", "exhaustive"), default="cegis",
                   help="cegis: an optimizer proposes, counterexamples refute (default); exhaustive: every "
                        "candidate set by increasing cost")
    p.add_argument("--budget", type=float, default=120.0,
                   help="seconds for the search (default 120); past it, what was found is reported unproven")
    p.add_argument("--apply", action="store_true", help="write a fixed copy (FILE.fixed.yaml, or -o)")
    p.add_argument("-o", "--output", metavar="FILE", help="with --apply: where to write the fixed copy")
    p.add_argument("--in-place", action="store_true",
                   help="with --apply: edit FILE itself (atomically, keeping its mode; refused if FILE changed "
                        "during the search, is read-only or has other hard links)")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="with --apply: write through a symbolic link to the file it points to")
    p.add_argument("--pick", type=int, default=1, help="with --apply: which repair to write (default 1)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--model", default=None, help="model name (axioms/NAME.cat) or path; default ptx")
    p.add_argument("--option", action="append", default=[], help="model option (repeatable)")
    p.add_argument("--engine", choices=("z3", "brute"), default="z3")
    add_limit_options(p, engine=False)      # --timeout, --rlimit, --limit NAME=VALUE, --unroll: as `run`
    p.set_defaults(func=cmd_fix)


def select(spec: str):
    """FILE or FILE::NAME -> (test, the file's text). The file is read once (a FIFO or a pipe has
    no second reading), its text kept as written (CRLF stays CRLF)."""
    from .. import limits
    from ..errors import LitmusError, SourceLoc
    from ..front.litmus import load_text

    path, _, name = spec.partition("::")
    if not Path(path).exists():
        raise LitmusError(f"no such file: {path}")
    try:
        text, size = limits.read_text(path, limits.current().yaml_bytes)
    except UnicodeDecodeError as e:
        line = e.object[:e.start].count(b"\n") + 1
        raise LitmusError(f"not a UTF-8 text file (byte 0x{e.object[e.start]:02x} at line {line})",
                          SourceLoc(path, line)) from None
    except OSError as e:
        raise LitmusError(f"cannot read: {e.strerror}", SourceLoc(path, 1)) from None
    if text is None:
        raise limits.too_large(f"too large: a file of more than {size - 1} bytes", "yaml_bytes", SourceLoc(path, 1))
    items = load_text(text, path)
    for it in items:
        if isinstance(it, LitmusError) and (not name or name in str(it)):
            raise it
    tests = [t for t in items if not isinstance(t, LitmusError)]
    if name:
        tests = [t for t in tests if t.name == name]
        if not tests:
            raise LitmusError(f"no test named '{name}' in {path}")
    if len(tests) != 1:
        raise LitmusError(f"{path} holds {len(tests)} tests ({', '.join(t.name for t in tests)}): "
                          f"name one as {path}::NAME")
    return tests[0], text


def cmd_fix(args) -> int:
    from dataclasses import replace

    from .. import limits, outsafe
    from ..errors import CheckerError, SourceLoc
    from ..front.conditions import parse_cond
    from ..cliargs import check_options, limits_of, seconds_of
    from ..resources import resolve_model
    from ..verdict.open import open_session
    from . import costs, output, target as targets
    from .fix import fix
    from .prune import prune

    if args.max < 1:
        raise CheckerError(f"--max {args.max}: must be at least 1")
    seconds_of("--budget", args.budget)
    if (args.in_place or args.output or args.follow_symlinks) and not args.apply:
        raise CheckerError("--in-place, -o and --follow-symlinks go with --apply")
    if args.in_place and args.output:
        raise CheckerError("--in-place and -o: give one of them")
    lim = limits_of(args)
    limits.set_current(lim)
    cm = costs.load(args.cost) if args.cost else costs.DEFAULT
    test, original = select(args.test)
    model = resolve_model(args.model)
    check_options(model, args.option)              # a typo would silently repair under the default model
    options = frozenset(args.option)
    dest = _destination(args, model) if args.apply else None       # checked before the work
    if args.prune:
        if args.cond:
            raise CheckerError("--prune keeps the test's own expectations: give no condition")
        res = prune(test, targets.from_test(test), model, options, args.engine, lim, args.search, args.max, cm,
                    args.budget)
    else:
        if args.cond and args.cond.strip() == "hang":          # make a hang impossible
            tgt = replace(targets.from_test(test), hang=False)
        elif args.cond:
            cond = parse_cond(args.cond, SourceLoc("<command line>", 1, args.cond))
            tgt = targets.with_condition(open_session(test, model, options, args.engine, lim), cond, args.cond)
        else:
            tgt = targets.from_test(test)
            if not tgt.forbidden and tgt.defined is False:
                raise CheckerError(f"{test.name} expects undefined behaviour and forbids nothing: give a condition "
                                   "to make forbidden")
        res = fix(test, tgt, model, options, args.engine, lim, args.search, args.max, cm, args.budget, recheck=False)
    shown = output.verify(res, original, model, options, args.engine)
    sys.stdout.write(output.as_json(res, shown) if args.format == "json" else output.text(res, shown))
    shown = [sh for sh in shown if sh.recheck == "pass"]
    if args.apply and shown:
        k = args.pick - 1
        if not 0 <= k < len(shown):
            raise CheckerError(f"--pick {args.pick}: there are {len(shown)} repairs")
        if shown[k].patched is None:
            raise CheckerError(f"repair {args.pick} cannot be written into {test.path}: {shown[k].unwritten}")
        if args.in_place:
            outsafe.replace_in_place(dest, shown[k].patched.text, original.encode("utf-8"), dest_policy(args, model))
        else:
            outsafe.write_file(dest, shown[k].patched.text, dest_policy(args, model))
        print(f"wrote {dest}", file=sys.stderr)
    if res.status in ("repaired", "pruned") and not shown:
        return EXIT_FAIL            # every repair failed its re-check (reported above)
    return EXIT_OK if res.status in ("met", "repaired", "pruned") else EXIT_FAIL


def dest_policy(args, model):
    """The output policy of --apply: the test file (unless edited in place), the --cost file and the
    model file are inputs."""
    from .. import outsafe

    inputs = [args.cost] if args.cost else []
    if getattr(model, "path", None) and Path(model.path).is_file():
        inputs.append(model.path)
    if not args.in_place:
        inputs.append(args.test.partition("::")[0])
    return outsafe.Policy(follow_symlinks=args.follow_symlinks, inputs=tuple(inputs))


def _destination(args, model) -> Path:
    """Where --apply writes, checked before the search (docs/cli.md, Output files)."""
    from .. import outsafe

    src = Path(args.test.partition("::")[0])
    if args.in_place:
        outsafe.check_in_place(src, dest_policy(args, model))
        return src
    dest = Path(args.output) if args.output else _fixed_path(src)
    outsafe.check_file(dest, dest_policy(args, model))
    return dest


def _fixed_path(p: Path) -> Path:
    return p.with_name(p.stem + ".fixed" + (p.suffix or ".yaml"))
