"""Jobs on a Dask distributed cluster, with the local pool's contract (checker.pool):

- one job per worker at a time, placed by us on an idle worker (`workers=[addr]`), and the
  scheduler told never to retry a job whose worker died (`allowed-failures` 0): a worker that
  crashes (os._exit, a signal, the OOM killer) costs exactly the job it was running, reported
  Crashed; Dask's nanny restarts the worker and the batch goes on;
- a job still running at the hard time bound is reported TimedOut and its worker restarted
  (Dask cannot stop a running task any other way);
- Ctrl-C (SIGTERM, SIGHUP) raises KeyboardInterrupt out of run_dask after every job of ours is
  cancelled and, for a LocalCluster started here, every worker process is stopped. On a remote
  scheduler a job already running finishes there and its result is dropped.

The jobs travel pickled (the litmus test as data, the model as its text: checker.executors.shipped),
so workers need no shared files, only ptxmc installed. Each job's value, CheckerError or bug is
wrapped in the worker (`_task`) exactly as the local pool's worker does.

Without a scheduler address a LocalCluster of `workers` single-threaded worker processes is
started here and closed at the end. With one, the scheduler should run with
DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0 (else Dask retries a crashing job on other
workers before reporting it crashed).
"""
from __future__ import annotations

import logging
import time
import traceback
from typing import Any, Callable, Sequence

from .. import pool
from ..errors import CheckerError

CONFIG = {
    "distributed.scheduler.allowed-failures": 0,     # a job whose worker died is not retried
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.worker.daemon": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.logging.distributed": "error",
}
CONNECT_SECONDS = 10
POLL_SECONDS = 0.5


def _task(fn, job, key: str) -> pool.Outcome:
    """In a Dask worker: fn(job) as the local pool's worker runs it (the test-only fault hook
    included)."""
    pool._in_worker = True
    try:
        return pool.Value(fn(job))
    except CheckerError as e:
        return pool.Raised(e)
    except BaseException as e:                       # noqa: BLE001 - a bug, reported with its trace
        return pool.Bug(f"{type(e).__name__}: {e}", traceback.format_exc())


def run_dask(fn: Callable[[Any], Any], jobs: Sequence, workers: int, hard_timeout: float | None,
             on_done: Callable[[int, pool.Outcome], None], scheduler: str | None = None) -> None:
    if not jobs:
        return
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set(CONFIG):
        cluster = client = None
        try:
            try:
                if scheduler is None:
                    cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.CRITICAL)
                    client = Client(cluster, timeout=CONNECT_SECONDS)
                else:
                    client = Client(scheduler, timeout=CONNECT_SECONDS)
            except (OSError, RuntimeError) as e:
                where = f"the scheduler {scheduler}" if scheduler else "a LocalCluster"
                raise CheckerError(f"--executor dask: cannot start or reach {where}: "
                                   f"{type(e).__name__}: {e}") from None
            _drive(client, fn, jobs, hard_timeout, on_done)
        finally:
            old = pool._defer_sigint()
            try:
                if client is not None:
                    client.close(timeout=10)
                if cluster is not None:
                    cluster.close(timeout=10)
            except Exception:                         # noqa: BLE001 - cleanup must not hide the result
                pass
            finally:
                pool._restore_sigint(old)


def _drive(client, fn, jobs, hard_timeout, on_done) -> None:
    from distributed import wait
    from distributed.client import FIRST_COMPLETED

    queue = list(range(len(jobs)))[::-1]          # pop() takes the next in input order
    busy: dict[str, tuple[Any, int, float]] = {}  # worker address -> (future, job index, deadline)
    known: list[str] = []                         # the workers, asked again after a crash or a restart
    try:
        while queue or busy:
            if not known or len(busy) >= len(known):
                known = _workers(client)
            idle = [w for w in known if w not in busy]
            while queue and idle:
                w = idle.pop()
                i = queue.pop()
                fut = client.submit(_task, fn, jobs[i], f"job-{i}", key=f"ptxmc-{i}-{time.monotonic_ns()}",
                                    workers=[w], allow_other_workers=True, pure=False)
                deadline = time.monotonic() + hard_timeout if hard_timeout else float("inf")
                busy[w] = (fut, i, deadline)
            if not busy:
                client.wait_for_workers(1, timeout=CONNECT_SECONDS)
                continue
            left = min(d for _, _, d in busy.values()) - time.monotonic()
            try:
                wait([f for f, _, _ in busy.values()], timeout=max(0.01, min(POLL_SECONDS, left)),
                     return_when=FIRST_COMPLETED)
            except TimeoutError:                  # none finished yet: look at the deadlines
                pass
            now = time.monotonic()
            for w, (fut, i, deadline) in list(busy.items()):
                if fut.status == "finished":
                    out = fut.result()
                elif fut.status in ("error", "cancelled", "lost"):
                    out, known = _failed(fut), []
                elif now >= deadline:
                    fut.cancel()
                    _restart(client, w)
                    out, known = pool.TimedOut(hard_timeout or 0.0), []
                else:
                    continue
                del busy[w]
                fut.release()
                on_done(i, out)
    except BaseException:
        client.cancel([f for f, _, _ in busy.values()], force=True)
        raise


def _workers(client) -> list[str]:
    """The addresses of the workers connected now (every one of them)."""
    return sorted(client.nthreads())


def _failed(fut) -> pool.Outcome:
    """A job that did not return: its worker died (KilledWorker), or Dask lost it."""
    from distributed.scheduler import KilledWorker

    try:
        exc = fut.exception(timeout=5)
    except Exception as e:                             # noqa: BLE001 - cancelled / lost
        exc = e
    if isinstance(exc, KilledWorker) or exc is None or fut.status in ("cancelled", "lost"):
        return pool.Crashed(None)
    return pool.Bug(f"{type(exc).__name__}: {exc}", "")


def _restart(client, worker: str) -> None:
    """Stop the job running on `worker`: restart the worker (its nanny starts a fresh one)."""
    try:
        client.restart_workers([worker], timeout=60, raise_for_error=False)
    except Exception:                                  # noqa: BLE001 - it may be gone already
        pass
