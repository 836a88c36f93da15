"""`ptxmc extract` on the command line. checker/cli.py calls `add_subcommands(subparsers)`.

    ptxmc extract FILE.ptx [--kernel NAME] [--iterations N] [--tiles N] [--block X,Y,Z] [--cluster N]
                  [--param NAME=VALUE] -o DIR [--mutants] [--no-check] [--hang] [--jobs N]

Writes DIR/KERNEL.yaml per kernel (the skeleton, then its mutants), prints the role table and,
unless --no-check, the verdict of the skeleton and of each mutant, with the PTX lines of the
instructions a finding names. Exit codes: 0 every skeleton passes its checks; 1 a finding (or a
kernel that cannot be extracted); 2 usage. See docs/extract.md.
"""
from __future__ import annotations

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def add_subcommands(subparsers) -> None:
    p = subparsers.add_parser(
        "extract", help="a compiler's .ptx in, a checked synchronization skeleton (litmus test) out",
        description="Discover the warp roles of each kernel of a PTX module, unroll its loops, keep its "
                    "synchronization (mbarriers, tensor copies, fences, barriers, wgmma), drop its data path, and "
                    "write one litmus test per kernel whose every line names the PTX line it came from; then "
                    "check it (undefined behaviour, the data each consumer must see, optionally hangs) and, "
                    "with --mutants, which synchronization is load-bearing. See docs/extract.md.")
    p.add_argument("file", help="a .ptx file as a compiler prints it")
    p.add_argument("--kernel", help="only this .entry (default: every kernel of the module)")
    p.add_argument("--iterations", type=int, default=None,
                   help="how many times to unroll each loop whose trip count is a parameter "
                        "(default: the pipeline's stages + 1, so that the ring wraps around)")
    p.add_argument("--tiles", type=_tiles, default=None,
                   help="how many trips to take an outer loop whose exit is unknown and that runs an inner loop "
                        "(a persistent kernel's tile loop around its K loop), and every loop that ends on the same "
                        "unknown (default: 2, so that the ring's phase and the epilogue's buffers carry over to a "
                        "second tile)")
    p.add_argument("--block", help="the CTA shape X,Y,Z (default: the kernel's .reqntid/.maxntid)")
    p.add_argument("--cluster", type=int, help="CTAs per cluster (default: the kernel's .reqnctapercluster, else 1)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="take a kernel parameter (NAME, or NAME@OFFSET for a field of a struct parameter, as "
                        "the skeleton's header names it) as VALUE, an integer or a float (repeatable): "
                        "e.g. CUTLASS's beta as 0 instead of the default 1.0")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the skeletons (created)")
    p.add_argument("--mutants", action="store_true",
                   help="also write and check one mutant per synchronization operation (drop each proxy fence, "
                        "flip each parity, shorten each expect_tx, drop each arrive)")
    p.add_argument("--hang", action="store_true",
                   help="also ask whether the skeleton can hang (expect: hang: forbidden); slower")
    p.add_argument("--no-check", action="store_true", help="write the skeletons only")
    from ..cliargs import add_jobs_option, add_limit_options, add_output_options
    add_jobs_option(p, "worker processes for the checks")
    add_limit_options(p, engine=False)
    add_output_options(p)
    p.set_defaults(func=cmd_extract)


def _tiles(text: str) -> int:
    import argparse
    if not text.strip().isdigit() or not 1 <= int(text) <= 8:
        raise argparse.ArgumentTypeError(f"--tiles {text}: between 1 and 8")
    return int(text)


def _block(text: str | None):
    from ..errors import LitmusError
    if text is None:
        return None
    parts = [x for x in text.split(",") if x.strip()]
    if not 1 <= len(parts) <= 3 or not all(x.strip().isdigit() and int(x) > 0 for x in parts):
        raise LitmusError(f"--block {text!r}: write X,Y,Z with positive integers")
    dims = [int(x) for x in parts] + [1, 1]
    return dims[0], dims[1], dims[2]


def _params(items: list[str]) -> dict:
    from ..errors import LitmusError
    out: dict = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise LitmusError(f"--param {item!r}: write NAME=VALUE")
        try:
            v = int(value, 0)
        except ValueError:
            try:
                v = float(value)
            except ValueError:
                raise LitmusError(f"--param {item!r}: the value must be an integer or a float") from None
        out[name.strip()] = v
    return out


def cmd_extract(args) -> int:
    from ..cliargs import emit, jobs_of, limits_of
    from ..errors import LitmusError
    from ..outsafe import policy_of
    from .api import TILES, extract_file

    if args.iterations is not None and not 1 <= args.iterations <= 16:
        raise LitmusError(f"--iterations {args.iterations}: between 1 and 16")
    if args.cluster is not None and not 1 <= args.cluster <= 16:
        raise LitmusError(f"--cluster {args.cluster}: between 1 and 16")
    jobs = jobs_of(args.jobs)
    outs = extract_file(args.file, kernel=args.kernel, iterations=args.iterations, block=_block(args.block),
                        cluster=args.cluster, out_dir=args.output, mutants=args.mutants, hang=args.hang,
                        params=_params(args.param), tiles=args.tiles if args.tiles is not None else TILES,
                        policy=policy_of(args, [args.file]))
    code = EXIT_OK
    for out in outs:
        emit(out.table + "\n")
        emit(f"wrote {out.path}\n")
        if args.no_check:
            continue
        report = out.check(jobs=jobs, lim=limits_of(args))
        emit(report.text + "\n")
        if not report.ok:
            code = EXIT_FAIL
    return code

