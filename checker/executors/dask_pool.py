"""Jobs on a Dask distributed cluster, with the local pool's contract (checker.pool):

- jobs travel in chunks (one Dask task runs up to CHUNK_MAX jobs in turn, fewer as the batch
  runs out so that the workers finish together), placed by us on a worker (`workers=[addr]`),
  DEPTH chunks at a time (the next one waits on the worker, so it never idles for a round trip).
  A chunk costs one submit and one result round trip for all of its jobs: Dask's per-task cost
  (client -> scheduler -> worker and back) is what made a one-job task several times dearer than
  the local pool's pipe message. The outcomes of a chunk come back, and are reported, together;
- a chunk tells the client which job it starts (a Dask event on this run's topic, [chunk,
  position]: msgpack-small, sent without waiting), for its first job and then whenever it has
  said nothing for PROGRESS_SECONDS. So the client knows, for each worker, a job that surely
  started, and since when;
- the scheduler is told never to retry a task whose worker died (`allowed-failures` 0). When a
  worker dies (os._exit, a signal, the OOM killer) or is restarted, the jobs of its chunks that
  had surely finished (before the last one known to have started) go back to the queue, and the
  others are run again one at a time, each alone on a worker; one that kills its worker alone is
  reported Crashed. So a crash costs exactly its job, as in the local pool; Dask's nanny restarts
  the worker and the batch goes on;
- a job still running at the hard time bound (counted from the last start the client heard of
  on that worker) gets its worker restarted (Dask cannot stop a running task any other way), and
  its chunk's unfinished jobs are run alone as above: the one that hangs alone is reported
  TimedOut. A job that ended but ran past the bound is reported TimedOut by the chunk itself, as
  the local pool would have stopped it;
- Ctrl-C (SIGTERM, SIGHUP) raises KeyboardInterrupt out of run_dask after every task of ours is
  cancelled and, for a LocalCluster started here, every worker process is stopped. On a remote
  scheduler a task already running finishes there and its result is dropped.

The jobs travel pickled (the litmus test as data, the model as its text: checker.executors.shipped;
a chunk pickles the model once for all of its jobs), so workers need no shared files, only ptxmc
installed. Each job's value, CheckerError or bug is wrapped in the worker (`_run`) exactly as the
local pool's worker does.

Without a scheduler address a LocalCluster of `workers` single-threaded worker processes is
started here and closed at the end. With one, the scheduler should run with
DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0 (else Dask retries a crashing task on other
workers before reporting it crashed).
"""
from __future__ import annotations

import itertools
import logging
import multiprocessing
import queue as queues
import time
import traceback
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .. import pool
from ..errors import CheckerError, SolverUnknown

CONFIG = {
    "distributed.scheduler.allowed-failures": 0,     # a task whose worker died is not retried
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.worker.daemon": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.admin.low-level-log-length": 1000,  # events (job starts) the scheduler keeps
    "distributed.logging.distributed": "error",
    # A worker's own periodic work takes the GIL from the job's thread (Z3's ctypes calls give it up
    # thousands of times per test): the statistical profiler (every 10 ms, walks the job's stack),
    # the event-loop health tick (20 ms) and the memory monitor (100 ms). Slower or off, they no
    # longer slow the checking (the profile is for Dask's dashboard, which ptxmc does not start).
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "500ms",
    "distributed.worker.memory.monitor-interval": "1s",
    # The nanny's default MALLOC_TRIM_THRESHOLD_=65536 makes glibc hand memory back to the kernel
    # at every free and turns off its adaptive mmap threshold: Z3's many short-lived allocations
    # then cost as much system time as checking (user 8.8 s + sys 4.2 s vs 8.3 s + 0.6 s on the
    # core and async suites; bench/RESULTS.md). The workers keep glibc's defaults.
    "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1,
                                            "OPENBLAS_NUM_THREADS": 1},
}
CONNECT_SECONDS = 10
# Chunks queued per worker: the next one waits on the worker, so no round trip idles it.
DEPTH = 2
# Most jobs per chunk. Chunks shrink as the queue runs out: each worker gets about CHUNKS_AHEAD
# chunks of what is left, so no worker is left with a long chunk while the others are done.
CHUNK_MAX = 32
CHUNKS_AHEAD = 4
# A chunk tells the client that a job starts only if it has said nothing for this long (and for
# its first job): enough for the client's clock, without one message through the scheduler per
# job. The client may then think an earlier job is running than the one that is: that only makes
# more jobs suspects (run alone) when a worker dies or is stopped, never a different outcome.
PROGRESS_SECONDS = 0.5
POLL_SECONDS = 0.5
# How often the list of workers is asked for again (a remote cluster may gain workers); at once
# after a worker died or was restarted.
WORKERS_SECONDS = 5.0
# How long a run waits with no worker at all (every one killed, none restarted) before giving up.
NO_WORKER_SECONDS = 300.0
# How long fetching a finished chunk's outcomes (a few kB) may take before they count as lost.
RESULT_SECONDS = 30.0


def _run(fn, job) -> pool.Outcome:
    """fn(job) as the local pool's worker runs it."""
    try:
        return pool.Value(fn(job))
    except CheckerError as e:
        return pool.Raised(e)
    except BaseException as e:                       # noqa: BLE001 - a bug, reported with its trace
        return pool.Bug(f"{type(e).__name__}: {e}", traceback.format_exc())


def _chunk(fn, jobs, hard_timeout, topic: str, tag: int) -> list[pool.Outcome]:
    """In a Dask worker: the outcome of each job, in order; before the first, and before any other
    once PROGRESS_SECONDS passed without one, the event [tag, position] on `topic` (the client's
    clock). The test-only fault hook acts here as in the local pool's workers."""
    from distributed import get_worker

    pool._in_worker = True
    worker = get_worker()
    outs: list[pool.Outcome] = []
    said = float("-inf")
    for k, job in enumerate(jobs):
        t0 = time.monotonic()
        if t0 - said >= PROGRESS_SECONDS:
            worker.log_event(topic, [tag, k])
            said = t0
        out = _run(fn, job)
        if hard_timeout and time.monotonic() - t0 > hard_timeout:
            out = pool.TimedOut(hard_timeout)         # the local pool would have stopped it
        outs.append(out)
    return outs


def run_dask(fn: Callable[[Any], Any], jobs: Sequence, workers: int, hard_timeout: float | None,
             on_done: Callable[[int, pool.Outcome], None], scheduler: str | None = None) -> None:
    if not jobs:
        return
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set(CONFIG):
        cluster = client = None
        before = None                                  # our processes before a LocalCluster started here
        try:
            try:
                if scheduler is None:
                    _quiet_resource_tracker()
                    before = set(multiprocessing.active_children())
                    # The scheduler's HTTP server (no dashboard) on a free port: with dashboard_address
                    # None it takes 8787, which two runs at once (or a stuck one) fight over.
                    cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                                           dashboard_address=":0", scheduler_kwargs={"dashboard": False},
                                           silence_logs=logging.CRITICAL)
                    client = Client(cluster, timeout=CONNECT_SECONDS)
                else:
                    client = Client(scheduler, timeout=CONNECT_SECONDS)
            except (OSError, RuntimeError) as e:
                where = f"the scheduler {scheduler}" if scheduler else "a LocalCluster"
                raise CheckerError(f"--executor dask: cannot start or reach {where}: "
                                   f"{type(e).__name__}: {e}") from None
            _quiet_abandoned_gathers(client)
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
                if before is not None:
                    _stop_leftover_workers(before)
                pool._restore_sigint(old)


def _quiet_abandoned_gathers(client) -> None:
    """Drop asyncio's "Task exception was never retrieved ... AllExit" for the client's loop: a
    fetch of a chunk's outcomes given up after RESULT_SECONDS (its worker died) leaves Dask's
    inner per-key task to fail with AllExit once the key goes, and asyncio printed its traceback
    on standard error (review 3's D17). Every other exception keeps the loop's handler."""
    from distributed.client import AllExit

    try:
        loop = client.loop.asyncio_loop
    except AttributeError:
        return
    previous = loop.get_exception_handler()

    def handler(lp, context):
        if isinstance(context.get("exception"), AllExit):
            return
        if previous is not None:
            previous(lp, context)
        else:
            lp.default_exception_handler(context)

    loop.set_exception_handler(handler)


def _stop_leftover_workers(before: set) -> None:
    """Kill the worker processes of our LocalCluster that its close left behind: a worker that a
    nanny was restarting when the run ended (its predecessor killed, its start slow on a busy
    machine) outlived the close, and the interpreter's exit then waited for it forever (review
    3's D12: the results written, the process never ending)."""
    for proc in multiprocessing.active_children():
        if proc not in before and proc.is_alive():
            proc.kill()
            proc.join(5)


def _quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (the LocalCluster's worker processes would start
    it) with its standard error on /dev/null: when a worker is killed its semaphores are
    unregistered twice, and the tracker prints a KeyError traceback for each (review 3's D17),
    noise about a cleanup that has no effect on the run."""
    import os
    from multiprocessing import resource_tracker

    if getattr(resource_tracker._resource_tracker, "_fd", None) is not None:
        return                                        # already running (its error stream is given)
    saved = os.dup(2)
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
            resource_tracker.ensure_running()
        finally:
            os.dup2(saved, 2)
            os.close(null)
    except OSError:
        pass
    finally:
        os.close(saved)


@dataclass
class _Slot:
    """One chunk given to a worker."""
    fut: Any
    tag: int
    indices: list[int]                  # the jobs, in the order the chunk runs them
    suspect: bool                       # a single job whose earlier worker died under it
    started: int = -1                   # the last position the client heard started
    deadline: float | None = None       # set when it heads its worker's queue; moved at each start
    done: bool = field(default=False)


def _drive(client, fn, jobs, hard_timeout, on_done) -> None:
    """Hand out the jobs in chunks, DEPTH per worker, and collect their outcomes (see the module
    docstring)."""
    run = uuid.uuid4().hex
    topic = f"ptxmc-{run}"
    inbox: queues.SimpleQueue = queues.SimpleQueue()   # ("start", [tag, k]) and ("done", tag), from Dask's thread
    tags = itertools.count()
    queue = deque(range(len(jobs)))
    suspects: deque[int] = deque()                # jobs whose worker died under them: run alone
    slots: dict[str, list[_Slot]] = {}            # worker address -> its chunks, in the order given
    by_tag: dict[int, _Slot] = {}
    alone: set[str] = set()                       # workers running a suspect (nothing else)
    known: list[str] = []                         # the workers, asked again after a crash or a restart
    known_at = 0.0
    bound = hard_timeout if hard_timeout else float("inf")

    def give(w: str, indices: list[int], suspect: bool) -> None:
        tag = next(tags)
        fut = client.submit(_chunk, fn, [jobs[i] for i in indices], hard_timeout, topic, tag,
                            key=f"ptxmc-{run}-{tag}", workers=[w], allow_other_workers=True, pure=False)
        slot = _Slot(fut, tag, indices, suspect)
        slots.setdefault(w, []).append(slot)
        by_tag[tag] = slot
        fut.add_done_callback(lambda _f, tag=tag: inbox.put(("done", tag)))

    def chunk_size() -> int:
        return max(1, min(CHUNK_MAX, len(queue) // (CHUNKS_AHEAD * max(1, len(known)))))

    def lost(s: _Slot, crashed: bool) -> None:
        """s's outcomes will not come: if its worker died or was stopped, the jobs before the last
        one heard to start had finished (they are run again as usual) and the others are suspects;
        if it failed otherwise (say an outcome that cannot be sent back), all of them are."""
        cut = max(s.started, 0) if crashed else 0
        queue.extendleft(reversed(s.indices[:cut]))
        suspects.extend(s.indices[cut:])

    def departed(w: str) -> None:
        """w left the cluster (killed, restarted: a restarted worker has a new address): its
        unfinished chunks are lost now. Dask does not move a chunk queued on a dead worker to the
        others; waiting for its hard bound stalled the run for minutes (review 3, D12)."""
        ss = slots.get(w, [])
        head = True                                # the first unfinished chunk: it may have run
        for s in list(ss):
            if s.done or s.fut.status == "finished":
                s.done = True                      # its outcome is in: collected as usual
                continue
            s.fut.cancel()
            _drop(ss, s, by_tag)
            if s.suspect:
                alone.discard(w)
                if s.started >= 0:                 # it ran alone: its worker died under it
                    on_done(s.indices[0], pool.Crashed(None))
                else:                              # never started: it runs elsewhere
                    suspects.appendleft(s.indices[0])
            elif head:
                lost(s, True)
            else:                                  # queued behind the head (one thread): never started
                queue.extendleft(reversed(s.indices))
            head = False

    def wait_for_a_worker() -> None:
        try:
            client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        except Exception as e:                     # noqa: BLE001 - Dask's TimeoutError and the like
            if time.monotonic() - idle_since[0] > NO_WORKER_SECONDS:
                # every worker gone and none back (a nanny that failed to restart one): the tests
                # not run are answered UNKNOWN, the finished ones kept
                why = SolverUnknown(f"--executor dask: not run: no worker for {NO_WORKER_SECONDS:g} s "
                                    f"({type(e).__name__}: {e})")
                for i in [*suspects, *queue]:
                    on_done(i, pool.Raised(why))
                suspects.clear()
                queue.clear()

    idle_since = [time.monotonic()]
    client.subscribe_topic(topic, lambda ev: inbox.put(("start", ev[1])))
    try:
        while queue or suspects or any(slots.values()):
            if not known or time.monotonic() - known_at > WORKERS_SECONDS:
                known, known_at = _workers(client), time.monotonic()
                for w in [w for w in slots if w not in known]:
                    departed(w)
            if known:
                idle_since[0] = time.monotonic()
            for w in known:
                mine = slots.setdefault(w, [])
                if w in alone:
                    continue
                if suspects and not mine:
                    give(w, [suspects.popleft()], True)
                    alone.add(w)
                    continue
                while queue and len(mine) < DEPTH and not suspects:
                    give(w, [queue.popleft() for _ in range(min(chunk_size(), len(queue)))], False)
            if not any(slots.values()):
                wait_for_a_worker()
                known = []
                continue
            now = time.monotonic()
            for ss in slots.values():                  # a chunk's clock starts when it heads its worker
                if ss and ss[0].deadline is None:
                    ss[0].deadline = now + bound
            left = min(ss[0].deadline for ss in slots.values() if ss) - now
            try:
                msgs = [inbox.get(timeout=max(0.01, min(POLL_SECONDS, left)))]
            except queues.Empty:                      # nothing yet: look at the deadlines
                msgs = []
            while True:
                try:
                    msgs.append(inbox.get_nowait())
                except queues.Empty:
                    break
            now = time.monotonic()
            for kind, what in msgs:
                if kind == "done":
                    if what in by_tag:
                        by_tag[what].done = True
                    continue
                tag, k = what
                s = by_tag.get(tag)
                if s is not None and k > s.started:
                    s.started, s.deadline = k, now + bound
            for w, ss in list(slots.items()):
                for s in list(ss):
                    if s.done:
                        status = s.fut.status
                        outs = _outcomes(s.fut) if status == "finished" else None
                        if outs is None and status == "finished":
                            # finished, but its outcomes died with its worker before they came
                            # back: every job had run without a crash, so all go back to the queue
                            known = []
                            s.fut.cancel()
                            queue.extendleft(reversed(s.indices))
                            _drop(ss, s, by_tag)
                            if s.suspect:
                                alone.discard(w)
                            continue
                        if outs is None:               # error, cancelled, lost: its worker died
                            known = []
                            out = _failed(s.fut)
                            if not s.suspect:
                                lost(s, isinstance(out, pool.Crashed))
                                _drop(ss, s, by_tag)
                                continue
                            outs = [out]
                    elif s is ss[0] and now >= (s.deadline or float("inf")):
                        s.fut.cancel()
                        _restart(client, w)            # the chunks queued behind it come back lost
                        known = []
                        if not s.suspect:
                            lost(s, True)
                            _drop(ss, s, by_tag)
                            continue
                        outs = [pool.TimedOut(hard_timeout or 0.0)]
                    else:
                        continue
                    _drop(ss, s, by_tag)
                    if s.suspect:
                        alone.discard(w)
                    for i, out in zip(s.indices, outs):
                        on_done(i, out)
                if not ss and w not in known:
                    del slots[w]
                    alone.discard(w)
    except BaseException:
        client.cancel([s.fut for ss in slots.values() for s in ss], force=True)
        raise
    finally:
        try:
            client.unsubscribe_topic(topic)
        except Exception:                              # noqa: BLE001 - the client may be gone
            pass


def _drop(ss: list[_Slot], s: _Slot, by_tag: dict[int, _Slot]) -> None:
    ss.remove(s)
    by_tag.pop(s.tag, None)
    s.fut.release()


def _workers(client) -> list[str]:
    """The addresses of the workers connected now (every one of them)."""
    return sorted(client.nthreads())


def _outcomes(fut) -> list | None:
    """A finished chunk's outcomes, or None if they cannot be fetched: the worker that held them
    died before they came back (Dask then says KilledWorker, or would run the chunk again)."""
    try:
        return fut.result(timeout=RESULT_SECONDS)
    except Exception:                                  # noqa: BLE001 - KilledWorker, TimeoutError, lost
        return None


def _failed(fut) -> pool.Outcome:
    """A task that did not return: its worker died (KilledWorker), or Dask lost it."""
    from distributed.scheduler import KilledWorker

    try:
        exc = fut.exception(timeout=5)
    except Exception as e:                             # noqa: BLE001 - cancelled / lost
        exc = e
    if isinstance(exc, KilledWorker) or exc is None or fut.status in ("cancelled", "lost"):
        return pool.Crashed(None)
    return pool.Bug(f"{type(exc).__name__}: {exc}", "")


def _restart(client, worker: str) -> None:
    """Stop the task running on `worker`: restart the worker (its nanny starts a fresh one)."""
    try:
        client.restart_workers([worker], timeout=60, raise_for_error=False)
    except Exception:                                  # noqa: BLE001 - it may be gone already
        pass
