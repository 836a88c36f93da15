"""`ptxmc gen`: generate litmus tests from cycles of edges (diy style). `add_subcommands` registers
it on the main parser's subparsers; the handler returns the exit code (0 done, 1 some test could
not be judged with --expect-from-model, 2 usage error, 130 interrupted)."""
from __future__ import annotations

import sys
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# The default --max: about 1 GB of YAML (a test is ~1 kB); past it, say so before writing.
MAX_TESTS = 1_000_000


def _list_arg(values: list[str]) -> list[str]:
    return [x for v in values for x in v.replace(",", " ").split()]


def add_subcommands(subparsers) -> None:
    from ..cliargs import add_output_options
    from .vocab import PLACEMENTS, PRESETS, SCOPES

    p = subparsers.add_parser(
        "gen", help="generate litmus tests from cycles of edges (diy style)",
        description="Generate one litmus test per annotated cycle of edges: program order, "
                    "communication (rf/fr/co, external or internal), access strength and scope, fences, "
                    "proxies, asynchronous completion and thread placement. Writes one YAML file per "
                    "family and index.tsv. Vocabulary and naming: docs/gen.md (or --list).")
    p.add_argument("-o", "--out", metavar="DIR", help="output folder (empty, or an earlier ptxmc gen output)")
    p.add_argument("--preset", default="generic", choices=tuple(PRESETS), help="starting selection (default generic)")
    p.add_argument("--size", type=int, default=4,
                   help="most communication edges per cycle (default 4); each may follow one program-order edge")
    p.add_argument("--threads", type=int, default=4, help="most threads per test (default 4)")
    p.add_argument("--edges", action="append", default=[], metavar="LIST",
                   help="edges and annotations (comma-separated, names or families) replacing the preset's "
                        "in each dimension they name")
    p.add_argument("--exclude", action="append", default=[], metavar="LIST", help="edges and annotations to leave out")
    p.add_argument("--scopes", action="append", default=[], metavar="LIST",
                   help=f"keep only scoped annotations of these scopes ({', '.join(SCOPES)})")
    p.add_argument("--scope-mode", choices=("uniform", "mixed"), default="uniform",
                   help="uniform: one scope per test (default); mixed: every combination")
    p.add_argument("--placement", action="append", default=[], metavar="LIST",
                   help=f"placement levels of communicating threads ({', '.join(PLACEMENTS)})")
    p.add_argument("--placement-mode", choices=("uniform", "mixed"), default="uniform",
                   help="uniform: one level for every pair (default); mixed: a level per communication edge")
    p.add_argument("--cycle", action="append", default=[], metavar="EDGES",
                   help="generate this cycle only ('PodWW Rfe PodRR Fre'); repeatable")
    p.add_argument("--expect-from-model", action="store_true",
                   help="check every test and write the model's verdict as its expectation (model-derived)")
    p.add_argument("--model", default=None, help="model for --expect-from-model (name or path; default ptx)")
    p.add_argument("--option", action="append", default=[], help="model option for --expect-from-model")
    p.add_argument("--timeout", type=float, default=60.0, help="per-test time limit for --expect-from-model")
    p.add_argument("--jobs", type=int, default=1, help="worker processes for --expect-from-model")
    p.add_argument("--count", action="store_true", help="print how many tests each family would get; write nothing")
    p.add_argument("--list", action="store_true", help="print the vocabulary, families and presets")
    p.add_argument("--max", type=int, default=MAX_TESTS, metavar="N",
                   help=f"write at most N tests: a larger selection is refused before anything is written "
                        f"(default {MAX_TESTS:,}; --count says how many a selection has)")
    add_output_options(p)
    p.set_defaults(func=handler)


def handler(args) -> int:
    from .. import outsafe
    from ..cliargs import check_options, model_files, seconds_of
    from ..errors import CheckerError
    from ..resources import resolve_model
    from .count import count_shape
    from .generate import family_shapes
    from .vocab import select
    from .writer import ModelSpec, write

    if args.list:
        print(vocabulary_text())
        return EXIT_OK
    try:
        sel = select(args.preset, _list_arg(args.edges), _list_arg(args.exclude), _list_arg(args.scopes),
                     _list_arg(args.placement), args.scope_mode, args.placement_mode, args.size, args.threads,
                     tuple(tuple(c.split()) for c in args.cycle))
        groups = family_shapes(sel)
    except CheckerError as e:
        print(f"ptxmc gen: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.count:
        total = 0
        for family, shapes_ in groups:
            n = sum(count_shape(s, sel) for s in shapes_)
            total += n
            print(f"{family}\t{n}")
        print(f"total\t{total}")
        return EXIT_OK
    if not args.out:
        print("ptxmc gen: give an output folder with -o DIR (or --count)", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs < 1:
        print("ptxmc gen: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    spec = None
    if args.expect_from_model:
        try:
            seconds_of("--timeout", args.timeout)
            model = resolve_model(args.model)
            check_options(model, args.option)
        except CheckerError as e:
            print(f"ptxmc gen: {e}", file=sys.stderr)
            return EXIT_USAGE
        spec = ModelSpec(args.model, tuple(args.option), args.timeout, args.jobs)
    elif args.model or args.option:
        print("ptxmc gen: --model and --option only apply with --expect-from-model", file=sys.stderr)
        return EXIT_USAGE
    if args.max < 1:
        print(f"ptxmc gen: --max {args.max}: must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if _over(groups, sel, args.max):
        print(f"ptxmc gen: the selection has more than --max {args.max:,} tests: narrow it (--cycle, "
              "--edges, --scopes, --placement, a smaller --size) or raise --max; nothing was written",
              file=sys.stderr)
        return EXIT_USAGE
    progress = _progress() if sys.stderr.isatty() else None
    inputs = model_files(args.model) if args.expect_from_model else []
    try:
        summary = write(sel, Path(args.out), spec, progress, outsafe.policy_of(args, inputs))
    except CheckerError as e:                  # the output folder, a model that does not load
        print(f"ptxmc gen: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"ptxmc gen: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"\nptxmc gen: interrupted: {args.out} holds an incomplete output", file=sys.stderr)
        return EXIT_INTERRUPTED
    if progress:
        print("\r", end="", file=sys.stderr)
    nf = len(summary.families)
    line = f"{summary.total} tests in {nf} {'family' if nf == 1 else 'families'} written to {args.out}"
    if spec is not None:
        line += " (" + ", ".join(f"{k} {v}" for k, v in sorted(summary.verdicts.items())) + ")"
    print(line)
    for name, msg in summary.problems:
        print(f"ptxmc gen: no expectation for {name}: {msg}", file=sys.stderr)
    return EXIT_FAIL if summary.problems else EXIT_OK


def _over(groups, sel, most: int) -> bool:
    """Has the selection more than `most` tests? Counted from its shapes (checker.gen.count: no
    test is enumerated), stopping as soon as the answer is yes."""
    from .count import count_shape

    total = 0
    for _family, shapes_ in groups:
        for s in shapes_:
            total += count_shape(s, sel)
            if total > most:
                return True
    return False


def _progress():
    done = [0]

    def tick(k: int) -> None:
        done[0] += k
        if done[0] % 1000 == 0:
            print(f"\r{done[0]} tests", end="", file=sys.stderr, flush=True)
    return tick


def vocabulary_text() -> str:
    from .vocab import DIMENSIONS, FAMILIES, PLACEMENTS, PRESETS

    lines = ["Edges and annotations (--edges / --exclude):"]
    for dim, toks in DIMENSIONS.items():
        lines.append(f"  {dim}: {' '.join(toks)}")
    lines.append("Families of names:")
    for name, toks in FAMILIES.items():
        lines.append(f"  {name}: {' '.join(toks)}")
    lines.append(f"Placements (--placement): {' '.join(PLACEMENTS)}")
    lines.append("Presets (--preset):")
    for name, p in PRESETS.items():
        lines.append(f"  {name}: " + "; ".join(f"{k} {' '.join(v)}" for k, v in p.items()))
    return "\n".join(lines)
