"""Jobs on a Dask distributed cluster, with the local pool's contract (checker.pool):

- jobs placed by us on a worker (`workers=[addr]`), DEPTH at a time (the next one waits on the
  worker, so it never idles for a round trip), and the scheduler told never to retry a job whose
  worker died (`allowed-failures` 0). When a worker dies (os._exit, a signal, the OOM killer),
  the jobs it held are run again one at a time, each alone on a worker; one that kills its worker
  alone is reported Crashed. So a crash costs exactly its job, as in the local pool; Dask's nanny
  restarts the worker and the batch goes on;
- a job still running at the hard time bound (counted from when it heads its worker's queue) is
  reported TimedOut and its worker restarted (Dask cannot stop a running task any other way);
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
from collections import deque
from dataclasses import dataclass
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
# Jobs queued per worker: the next one waits on the worker, so no round trip idles it between jobs.
DEPTH = 2
POLL_SECONDS = 0.5


def _task(fn, job) -> pool.Outcome:
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
    """Hand out the jobs, DEPTH per worker, and collect their outcomes (see the module docstring)."""
    from distributed import wait
    from distributed.client import FIRST_COMPLETED

    queue = deque(range(len(jobs)))
    suspects: deque[int] = deque()                # jobs whose worker died under them: run alone
    slots: dict[str, list[_Slot]] = {}            # worker address -> its jobs, in the order given
    alone: set[str] = set()                       # workers running a suspect (nothing else)
    known: list[str] = []                         # the workers, asked again after a crash or a restart

    def give(w: str, i: int, suspect: bool) -> None:
        fut = client.submit(_task, fn, jobs[i], key=f"ptxmc-{i}-{time.monotonic_ns()}", workers=[w],
                            allow_other_workers=True, pure=False)
        slots.setdefault(w, []).append(_Slot(fut, i, suspect))

    try:
        while queue or suspects or any(slots.values()):
            if not known or all(len(slots.get(w, ())) >= DEPTH or w in alone for w in known):
                known = _workers(client)
            for w in known:
                mine = slots.setdefault(w, [])
                if w in alone:
                    continue
                if suspects and not mine:
                    give(w, suspects.popleft(), True)
                    alone.add(w)
                    continue
                while queue and len(mine) < DEPTH and not suspects:
                    give(w, queue.popleft(), False)
            running = [s for ss in slots.values() for s in ss]
            if not running:
                client.wait_for_workers(1, timeout=CONNECT_SECONDS)
                known = []
                continue
            now = time.monotonic()
            for ss in slots.values():                  # a job's clock starts when it heads its worker
                if ss and ss[0].deadline is None:
                    ss[0].deadline = now + hard_timeout if hard_timeout else float("inf")
            left = min(ss[0].deadline for ss in slots.values() if ss) - now
            try:
                wait([s.fut for s in running], timeout=max(0.01, min(POLL_SECONDS, left)),
                     return_when=FIRST_COMPLETED)
            except TimeoutError:                      # none finished yet: look at the deadlines
                pass
            now = time.monotonic()
            for w, ss in list(slots.items()):
                for s in list(ss):
                    status = s.fut.status
                    if status == "finished":
                        out = s.fut.result()
                    elif status in ("error", "cancelled", "lost"):
                        known = []
                        out = _failed(s.fut)
                        if not s.suspect and isinstance(out, pool.Crashed):
                            ss.remove(s)               # its worker died: maybe another job's doing
                            s.fut.release()
                            suspects.append(s.index)
                            continue
                    elif s is ss[0] and now >= (s.deadline or float("inf")):
                        s.fut.cancel()
                        _restart(client, w)            # the jobs queued behind it come back as suspects
                        known = []
                        out = pool.TimedOut(hard_timeout or 0.0)
                    else:
                        continue
                    ss.remove(s)
                    s.fut.release()
                    if s.suspect:
                        alone.discard(w)
                    on_done(s.index, out)
                if not ss and w not in known:
                    del slots[w]
                    alone.discard(w)
    except BaseException:
        client.cancel([s.fut for ss in slots.values() for s in ss], force=True)
        raise


@dataclass
class _Slot:
    fut: Any
    index: int
    suspect: bool                       # its earlier worker died while it was queued or running
    deadline: float | None = None       # set when it heads its worker's queue


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
