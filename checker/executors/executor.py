"""`run_jobs` (for `--executor local|dask`, options in checker.executors.options), which
runs fn(job) for every job on the chosen executor and reports each outcome to on_done(index,
outcome) as it finishes, with the local pool's contract (checker.pool): crash isolation, a hard
time bound per job, KeyboardInterrupt after everything is stopped."""
from __future__ import annotations

import os
from typing import Iterable, Sequence

from .. import pool
from ..errors import CheckerError

from .options import KINDS, LOCAL, Executor, add_executor_options, executor_of  # noqa: F401 (API)


def run_jobs(fn, jobs: Iterable, workers: int, hard_timeout, on_done, executor: Executor = LOCAL) -> None:
    """fn(job) for every job: in `workers` local processes (0, or PTXMC_DEBUG: in this process),
    or on Dask. A lazy `jobs` is drawn from while the local workers run (checker.pool.run_pool);
    Dask gets the whole list."""
    if executor.kind == "dask":
        from .dask_pool import run_dask

        run_dask(fn, list(jobs), workers, hard_timeout, on_done, executor.scheduler)
    elif workers >= 1 and not os.environ.get("PTXMC_DEBUG"):
        # (a lazy `jobs` starts a worker only for a job there is: no more workers than jobs)
        pool.run_pool(fn, jobs, min(workers, len(jobs)) if isinstance(jobs, Sequence) else workers,
                      hard_timeout, on_done)
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

