"""Command-line options shared by the commands, and their checks, so that `run`, `check`,
`outcomes`, `report` and `hw` accept and refuse the same values the same way, before any work:
limits (--timeout, --rlimit, --limit), --engine, --jobs, --option, input paths, and the output
safety flags (--force, --follow-symlinks; checker.outsafe). A refused value is a CheckerError
(exit 2) that names the flag as the user wrote it."""
from __future__ import annotations

import os
import sys
from dataclasses import replace

from . import limits
from .errors import CheckerError

# Worker processes per CPU core at most: more only add memory (about 55 MB each), not speed.
JOBS_PER_CPU = 2


def add_limit_options(p, engine: bool = True) -> None:
    """--timeout, --rlimit, --limit NAME=VALUE (and --engine)."""
    from .engines.registry import AUTO_BRUTE_MAX, DEFAULT as DEFAULT_ENGINE, ENGINES

    p.add_argument("--timeout", type=float, default=None,
                   help=f"per-test wall-clock limit in seconds, lowering included (default "
                        f"{limits.DEFAULT.timeout:g}, at most {limits.MAX_TIMEOUT:g})")
    p.add_argument("--rlimit", type=int, default=None,
                   help=f"Z3 resource limit per solver call, 0 for none (default {limits.DEFAULT.rlimit})")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                   help="raise or lower a limit (repeatable): " + ", ".join(
                       f"{k}={v}" for k, v in vars(limits.DEFAULT).items() if k not in ("timeout", "rlimit")))
    p.add_argument("--unroll", type=int, default=None, metavar="N",
                   help=f"run each loop body at most N times on a control path (default {limits.DEFAULT.unroll}; "
                        "a test's unroll: key takes precedence); executions the bound cuts off are reported")
    if engine:
        p.add_argument("--engine", choices=tuple(ENGINES), default=DEFAULT_ENGINE,
                       help="auto (default): brute force for a test with at most "
                            f"{AUTO_BRUTE_MAX} candidate executions, Z3 otherwise; z3; brute")


def add_output_options(p) -> None:
    """--force and --follow-symlinks (checker.outsafe)."""
    p.add_argument("--force", action="store_true",
                   help="write into an output folder that ptxmc did not create (only ptxmc's files are "
                        "written; nothing else in it is touched)")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="an output that is a symbolic link is written to the file it points to "
                        "(default: refused)")


def limits_of(args) -> limits.Limits:
    """The limits in force for a command: the defaults, then --limit, --timeout and --rlimit."""
    lim = limits.DEFAULT.override(getattr(args, "limit", None) or [])
    if getattr(args, "timeout", None) is not None:
        lim = replace(lim, timeout=limits.check_value("timeout", args.timeout, f"--timeout {args.timeout:g}"))
    if getattr(args, "rlimit", None) is not None:
        lim = replace(lim, rlimit=limits.check_value("rlimit", args.rlimit, f"--rlimit {args.rlimit}"))
    if getattr(args, "unroll", None) is not None:
        lim = replace(lim, unroll=limits.check_value("unroll", args.unroll, f"--unroll {args.unroll}"))
    return lim


def seconds_of(flag: str, v: float) -> float:
    """A time in seconds given by `flag` (--budget, --timeout): finite, positive and at most
    limits.MAX_TIMEOUT (NaN, infinity, 0 or a negative time would not bound the work, or make
    every test UNKNOWN)."""
    return limits.check_value("timeout", v, f"{flag} {v:g}")


def jobs_of(jobs: int, zero: str | None = "in this process", say=None) -> int:
    """A --jobs value, checked (negative refused; 0 allowed when `zero` says what it means) and
    capped at JOBS_PER_CPU worker processes per CPU core, saying so."""
    if jobs < 0 or (jobs == 0 and zero is None):
        allowed = f"0 ({zero}) or positive" if zero else "positive"
        raise CheckerError(f"--jobs {jobs}: must be {allowed}")
    cap = JOBS_PER_CPU * (os.cpu_count() or 1)
    if jobs > cap:
        (say or _note)(f"ptxmc: --jobs {jobs}: using {cap} worker processes ({JOBS_PER_CPU} per CPU core; "
                       "more would only add memory)")
        return cap
    return jobs


def add_jobs_option(p, what: str = "worker processes") -> None:
    p.add_argument("--jobs", type=int, default=1, help=f"{what} (default 1; 0 runs in this process)")


def emit(text: str) -> None:
    """`text` on stdout; a reader that went away (`| head`) is no error, a full disk is."""
    from . import outsafe

    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as e:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        if not isinstance(e, BrokenPipeError):
            raise outsafe.fail("<stdout>", e.strerror or str(e)) from None


def _note(text: str) -> None:
    print(text, file=sys.stderr)


def check_paths(paths) -> None:
    """Every input path exists (an empty one is no path, not the current folder)."""
    from .textsafe import printable

    for p in paths:
        if not str(p) or not os.path.exists(p):
            raise CheckerError(f"no such file or folder: {printable(str(p)) or repr(str(p))}")


def model_files(*specs) -> list[str]:
    """The files the models named by `specs` (--model values; None: the default) read: the model
    file and every file it includes. They are inputs: no output may be one of them
    (checker.outsafe.Policy.inputs)."""
    from .resources import resolve_model

    files: list[str] = []
    for spec in specs:
        m = resolve_model(spec)
        files += [str(f) for f in (m.sources or (m.path,))]
    return files


def check_options(model, options) -> None:
    """Every --option is one the model reads (its cat `if "NAME"` branches) or one the control-flow
    layer reads (checker.isa.flow.OPTIONS): a typo would otherwise silently check another model."""
    from .isa.flow import OPTIONS

    known = sorted(model.options_used | OPTIONS)
    for o in options:
        if o not in known:
            have = ", ".join(known) if known else "none"
            raise CheckerError(f"--option {o!r}: the model {os.path.basename(model.path)} has no such option "
                               f"(its options: {have})")
