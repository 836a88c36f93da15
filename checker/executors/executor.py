"""`--executor local|dask [--scheduler ADDR]`: the options, their checks, and `run_jobs`, which
runs fn(job) for every job on the chosen executor and reports each outcome to on_done(index,
outcome) as it finishes, with the local pool's contract (checker.pool): crash isolation, a hard
time bound per job, KeyboardInterrupt after everything is stopped."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import pool
from ..errors import CheckerError

KINDS = ("local", "dask")


@dataclass(frozen=True)
class Executor:
    kind: str = "local"
    scheduler: str | None = None        # dask: a scheduler address; None: a LocalCluster here


LOCAL = Executor()


def add_executor_options(p) -> None:
    p.add_argument("--executor", choices=KINDS, default="local",
                   help="where tests run: local worker processes (default) or a Dask distributed cluster "
                        "(pip install 'ptxmc[dist]')")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="--executor dask: the scheduler's address (tcp://HOST:PORT); without it a "
                        "LocalCluster of --jobs workers is started here")


def executor_of(args) -> Executor:
    """The executor the options name, checked before any work (dask importable, a scheduler only
    with --executor dask)."""
    kind, scheduler = getattr(args, "executor", "local"), getattr(args, "scheduler", None)
    if scheduler is not None and kind != "dask":
        raise CheckerError("--scheduler needs --executor dask")
    if kind == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise CheckerError("--executor dask needs Dask distributed: pip install 'ptxmc[dist]'") from None
        return Executor("dask", scheduler)
    return LOCAL


def run_jobs(fn, jobs, workers: int, hard_timeout, on_done, executor: Executor = LOCAL) -> None:
    """fn(job) for every job: in `workers` local processes (0, or PTXMC_DEBUG: in this process),
    or on Dask."""
    if executor.kind == "dask":
        from .dask_pool import run_dask

        run_dask(fn, jobs, workers, hard_timeout, on_done, executor.scheduler)
    elif workers >= 1 and not os.environ.get("PTXMC_DEBUG"):
        pool.run_pool(fn, jobs, min(workers, len(jobs)), hard_timeout, on_done)
    else:
        for k, job in enumerate(jobs):
            on_done(k, in_process(fn, job))


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

