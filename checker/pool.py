"""Worker processes that survive their tasks: crash isolation, hard time bounds, Ctrl-C.

`run_pool(fn, jobs, workers, hard_timeout, on_done)` calls `fn(job)` for every job in long-lived
worker processes, one task per worker at a time (and one more sent ahead, while enough jobs are
left, so a worker goes from one to the next without waiting), and reports each job's outcome to
`on_done(index, outcome)` as it finishes:

    Value(value)        fn returned
    Raised(error)       fn raised a CheckerError (it crosses the process boundary intact)
    Bug(text, trace)    fn raised anything else: a bug in ptxmc
    Crashed(exitcode)   the worker process died (os._exit, a signal, the OOM killer, a segfault
                        in native code); only the job it was running is affected
    TimedOut(seconds)   the job ran past the hard timeout; its worker was killed

(A job sent ahead to a worker that crashed or was killed before taking it up runs in another.)

A dead or killed worker is replaced and the remaining jobs go on (concurrent.futures'
ProcessPoolExecutor, by contrast, breaks entirely when one worker dies). Workers ignore SIGINT,
SIGTERM and SIGHUP, so Ctrl-C (or `kill`, a CI cancel, a closed terminal) reaches only the parent,
which raises KeyboardInterrupt (`Stopped` for SIGTERM/SIGHUP, under `stop_signals()`) out of
`run_pool` after stopping every worker: the outcomes already reported are all there is, and
nothing is left running. A worker also watches its pipe to the parent: when the parent dies
without stopping it (SIGKILL, a crash), the pipe hangs up and the worker exits at once, even in
the middle of a job, so no worker outlives ptxmc (with the forkserver, a worker's parent is the
forkserver, not ptxmc, so PR_SET_PDEATHSIG or getppid() would not see ptxmc die; the forkserver
exits by itself once ptxmc and every worker are gone).

Workers start through multiprocessing's forkserver (a clean, single-threaded parent for every
worker, with the checker preloaded) where the platform has it, else spawn.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing as mp
import os
import select
import signal
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, Iterable, Sequence

from .errors import CheckerError

# Test-only fault injection: PTXMC_TEST_FAULT="exit:NAME,kill:NAME,hang:NAME,raise:NAME" makes a
# worker os._exit, SIGKILL itself, sleep forever or raise a plain exception when it is given the
# job whose `fault_key` is NAME. It acts only inside worker processes, never in a parent. A hang
# first adds the line NAME to the file PTXMC_TEST_FAULT_MARK names, if set, so a test knows the
# worker is there (and, with several hangs, how many workers are); `hang1:NAME` hangs only while
# that file does not exist yet (the job's second run goes through).
FAULT_ENV = "PTXMC_TEST_FAULT"
FAULT_MARK_ENV = "PTXMC_TEST_FAULT_MARK"

# A job's hard timeout starts when its worker takes it up; a worker that has not started within
# this many seconds more (still importing, on a loaded machine) is stopped too.
STARTUP_SECONDS = 60.0
# The largest job sent to a busy worker to run next (pickled; a litmus test is ~3.5 KiB, at most
# ~8 KiB in the bundled suites): far below a pipe's buffer (64 KiB or more), so the send never
# waits for the worker.
AHEAD_BYTES = 32 * 1024

_in_worker = False

from .signals import STOP_SIGNALS, Stopped, raise_stopped, signum_of, stop_signals  # noqa: F401 (API)


@dataclass(frozen=True)
class Value:
    value: Any


@dataclass(frozen=True)
class Raised:
    error: CheckerError


@dataclass(frozen=True)
class Bug:
    text: str
    trace: str


@dataclass(frozen=True)
class Crashed:
    exitcode: int | None

    def describe(self) -> str:
        code = self.exitcode
        if code is not None and code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}" if code is not None else "no exit code"


@dataclass(frozen=True)
class TimedOut:
    seconds: float


Outcome = Value | Raised | Bug | Crashed | TimedOut


def in_worker() -> bool:
    """True inside a worker process of this module."""
    return _in_worker


def inject_fault(key: str) -> None:
    """The test-only hook (see FAULT_ENV); does nothing outside worker processes."""
    spec = os.environ.get(FAULT_ENV)
    if not spec or not _in_worker:
        return
    for item in spec.split(","):
        action, _, name = item.partition(":")
        if name != key:
            continue
        if action == "exit":
            os._exit(3)
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "hang1" and os.path.exists(os.environ.get(FAULT_MARK_ENV) or ""):
            continue
        if action in ("hang", "hang1"):
            if os.environ.get(FAULT_MARK_ENV):
                with open(os.environ[FAULT_MARK_ENV], "a") as f:
                    f.write(key + "\n")
            while True:
                time.sleep(3600)
        if action == "raise":
            raise RuntimeError(f"injected fault for {key}")


def prestart() -> None:
    """Start the forkserver now, so that it imports the checker while the caller loads its tests:
    run_pool's first worker then forks from a ready server (`ptxmc run` over the bundled suites:
    0.25 s less before the first test, bench/RESULTS.md)."""
    if not os.environ.get("PTXMC_DEBUG"):
        _context()


def _context():
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["checker.cli", "checker.verdict.check", "checker.verdict.explain"])
        try:
            from multiprocessing import forkserver

            forkserver.ensure_running()
            return ctx
        except OSError:     # e.g. "AF_UNIX path too long" under a deep TMPDIR: spawn instead
            pass
    return mp.get_context("spawn")


def _watch_parent(conn) -> None:
    """In a worker: exit at once when the parent's end of the pipe closes (the parent died)."""
    hangup = select.POLLHUP | select.POLLERR | select.POLLNVAL | getattr(select, "POLLRDHUP", 0)
    poller = select.poll()
    poller.register(conn.fileno(), getattr(select, "POLLRDHUP", 0))
    while True:
        try:
            events = poller.poll()
        except InterruptedError:
            continue
        if any(ev & hangup for _, ev in events):
            os._exit(4)


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _keep_freed_memory() -> None:
    """In a worker (glibc only): let freed memory be reused instead of handed back to the system.
    Every Z3 context allocates ~17 MiB (two tables of 8.5 MiB) that glibc would map afresh and
    unmap again at each test, or trim from the heap's top after it: ~4,000 page faults a
    context, 230,000 over the bundled suites (0.3 s of system time). With large blocks from the
    heap and the heap kept, a context reuses the last one's pages (bench/RESULTS.md). Elsewhere
    (musl, macOS) nothing is changed."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)        # (glibc's largest: 32 MiB on 64-bit systems)
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)


def _worker_main(conn, fn) -> None:
    global _in_worker
    _in_worker = True
    # The modules a worker starts with (the forkserver preloads them) live as long as it does, so
    # full collections need not walk them; and a test's encoding allocates many short-lived
    # objects with few cycles among them, so young collections can wait longer. Garbage
    # collection was 0.57 s of the bundled suites' 15 s (bench/RESULTS.md).
    gc.freeze()
    gc.set_threshold(10_000)
    _keep_freed_memory()
    for sig in STOP_SIGNALS:                          # stopping the run is the parent's business
        signal.signal(sig, signal.SIG_IGN)
    if hasattr(select, "poll"):
        threading.Thread(target=_watch_parent, args=(conn,), daemon=True, name="ptxmc-parent-watch").start()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return                                     # the parent is gone
        if msg is None:
            return
        index, job = msg
        try:
            conn.send(("started", index))
        except (BrokenPipeError, OSError):
            return
        try:
            out: Outcome = Value(fn(job))
        except CheckerError as e:
            out = Raised(e)
        except BaseException as e:                     # noqa: BLE001 - a bug, reported with its trace
            out = Bug(f"{type(e).__name__}: {e}", traceback.format_exc())
        try:
            conn.send(("done", index, out))
        except (BrokenPipeError, OSError):
            return
        except Exception as e:                         # noqa: BLE001 - e.g. an unpicklable value
            conn.send(("done", index, Bug(f"cannot send the result back: {type(e).__name__}: {e}", "")))


class _Worker:
    """A worker process and the jobs it holds: `index`, the one it runs (or was given last, idle),
    and `ahead`, one more sent while that runs, which it takes up as soon as it is done: no round
    trip to this process between its jobs (0.5 ms each, 0.5 s over the bundled suites)."""

    def __init__(self, ctx, fn):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, fn), daemon=True)
        self.proc.start()
        child.close()
        self.index: int | None = None
        self.ahead: int | None = None
        self.hard_timeout: float | None = None
        self.deadline = float("inf")

    def give(self, index: int, job, hard_timeout: float | None) -> bool:
        """Send a job to an idle worker (False if it is gone)."""
        try:
            self.conn.send((index, job))
        except (BrokenPipeError, OSError):
            return False
        self.index = index
        self.hard_timeout = hard_timeout
        self._not_started()
        return True

    def give_ahead(self, index: int, data: bytes) -> bool:
        """Send a busy worker the job to run next, pickled (`_small`), False if it is gone. A
        message this small fits the pipe's buffer, so sending it cannot block this process (which
        keeps the time bounds) while the worker is busy."""
        try:
            self.conn.send_bytes(data)
        except (BrokenPipeError, OSError):
            return False            # (it died: the loop finds out and reports its job)
        self.ahead = index
        return True

    def finished(self) -> None:
        """Its job is done: the job sent ahead, if any, is the one it runs now."""
        self.index, self.ahead = self.ahead, None
        if self.index is not None:
            self._not_started()

    def _not_started(self) -> None:
        # (a job's hard timeout runs from when the worker takes it up; until then, the start-up margin)
        hard = self.hard_timeout
        self.deadline = time.monotonic() + hard + STARTUP_SECONDS if hard else float("inf")

    def started(self) -> None:
        """The worker has taken the job up: its hard timeout runs from now."""
        if self.hard_timeout:
            self.deadline = time.monotonic() + self.hard_timeout

    def stop(self, kill: bool = False) -> None:
        if self.proc.is_alive() and not kill:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self.proc.join(2.0)
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()


def run_pool(fn: Callable[[Any], Any], jobs: Iterable, workers: int, hard_timeout: float | None,
             on_done: Callable[[int, Outcome], None]) -> None:
    """Run fn(job) for every job (see the module docstring). KeyboardInterrupt propagates, after
    every worker has been stopped. `jobs` may be lazy (an iterator): it is drawn from one job at
    each turn of the loop while the workers run, so a caller that makes its jobs as it goes
    (`ptxmc run`, loading its files) does that while the first ones are judged. (A draw holds the
    loop: a hard timeout that passes meanwhile is acted on when it returns, so a source must not
    block long; `run`'s reads are bounded by --timeout.)"""
    held: list = list(jobs) if isinstance(jobs, Sequence) else []     # by index; None once reported
    source = None if isinstance(jobs, Sequence) else iter(jobs)
    queue = deque(range(len(held)))

    def draw() -> None:
        """One more job from a lazy source (source = None once it is exhausted)."""
        nonlocal source
        job = next(source, _END)
        if job is _END:
            source = None
        else:
            held.append(job)
            queue.append(len(held) - 1)

    if source is not None:
        draw()
    if not queue:
        return
    ctx = _context()
    big: set[int] = set()               # jobs too large to send ahead
    pool: list[_Worker] = []

    def report(i: int, out: Outcome) -> None:
        held[i] = None                  # (a long batch need not keep what is done)
        on_done(i, out)

    try:
        while queue or source is not None or any(w.index is not None for w in pool):
            # Hand out work, starting workers as needed and replacing dead ones.
            for k, w in enumerate(pool):
                if w.index is None and queue and not w.proc.is_alive():
                    w.stop(kill=True)
                    pool[k] = _Worker(ctx, fn)
            while queue and len(pool) < max(1, workers):
                pool.append(_Worker(ctx, fn))
            for k, w in enumerate(pool):
                while w.index is None and queue:
                    i = queue.popleft()
                    if w.give(i, held[i], hard_timeout):
                        break
                    queue.appendleft(i)           # it died idle: a fresh worker takes the job
                    w.stop(kill=True)
                    w = pool[k] = _Worker(ctx, fn)
            # One job ahead for each busy worker, while more jobs wait (or may come) than there are
            # workers (at the end, a job sent ahead would wait behind a long one while another
            # worker idles).
            for w in pool:
                if w.index is not None and w.ahead is None and queue and queue[0] not in big and \
                        (len(queue) > len(pool) or source is not None):
                    i = queue.popleft()
                    data = _small((i, held[i]))
                    if data is None:
                        big.add(i)          # (given when a worker is idle; not pickled here again)
                    if data is None or not w.give_ahead(i, data):
                        queue.appendleft(i)
            if source is not None:
                draw()                  # (after handing out: the workers have their jobs meanwhile)
            busy = [w for w in pool if w.index is not None]
            if not busy:
                continue
            left = min(w.deadline for w in busy) - time.monotonic()
            if source is not None:
                left = 0.0              # (only a look: the next job is to be drawn)
            wait([w.conn for w in busy] + [w.proc.sentinel for w in busy],
                 timeout=None if left == float("inf") else max(0.0, left))
            now = time.monotonic()
            for k, w in enumerate(pool):
                if w.index is None:
                    continue
                i, out = w.index, None
                if w.conn.poll():
                    try:
                        msg = w.conn.recv()
                    except (EOFError, OSError):          # it died: its end of the pipe closed
                        w.proc.join(1.0)
                    else:
                        if msg[0] == "started":
                            w.started()
                            continue
                        _, i, out = msg
                elif w.proc.is_alive() and now < w.deadline:
                    continue
                if out is not None:
                    w.finished()
                    report(i, out)
                    continue
                timed_out = w.proc.is_alive() and now >= w.deadline
                if not timed_out:
                    w.proc.join(1.0)
                code = w.proc.exitcode
                w.stop(kill=True)
                if w.ahead is not None:           # sent ahead, never started: it runs elsewhere
                    queue.appendleft(w.ahead)
                pool[k] = _Worker(ctx, fn) if queue else _Idle()
                report(i, TimedOut(hard_timeout or 0.0) if timed_out else Crashed(code))
    finally:
        _stop_all(pool)


_END = object()      # (a lazy source is exhausted)


def _small(message) -> bytes | None:
    """The message pickled, if it is at most AHEAD_BYTES."""
    data = ForkingPickler.dumps(message)
    return bytes(data) if len(data) <= AHEAD_BYTES else None


class _Idle:
    """A pool slot whose worker is gone and that no job needs any more."""

    index = None
    ahead = None

    class proc:                                        # noqa: N801 - mimics a dead Process
        @staticmethod
        def is_alive() -> bool:
            return False

    def stop(self, kill: bool = False) -> None:
        pass


def _stop_all(pool: list) -> None:
    """Stop every worker: idle ones politely, busy ones (Ctrl-C, an error) at once."""
    old = _defer_sigint()
    try:
        for w in pool:
            w.stop(kill=w.index is not None)
    finally:
        _restore_sigint(old)


def _defer_sigint():
    """Ignore the stop signals for a moment (cleanup); None where that is impossible."""
    try:
        return {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    except ValueError:          # not the main thread
        return None


def _restore_sigint(old) -> None:
    for sig, handler in (old or {}).items():
        signal.signal(sig, handler)


class sigint_deferred:
    """`with sigint_deferred(): ...` - Ctrl-C (or SIGTERM, SIGHUP) cannot cut the block short
    (recording a finished result in every place it goes, writing the output): the signal is
    held, and raised when the block ends (KeyboardInterrupt, or Stopped where SIGTERM/SIGHUP
    stop the run)."""

    def __enter__(self):
        self.got: int | None = None
        self.old: dict = {}
        try:
            for sig in STOP_SIGNALS:
                self.old[sig] = signal.signal(sig, self._hold)
        except ValueError:      # not the main thread: nothing to hold
            pass
        return self

    def _hold(self, signum, frame):
        if self.got is None:
            self.got = signum

    def __exit__(self, exc_type, exc, tb):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        if self.got is not None and exc_type is None:
            if self.got == signal.SIGINT:
                raise KeyboardInterrupt
            if self.old.get(self.got) is raise_stopped:
                raise Stopped(self.got)
            signal.raise_signal(self.got)       # its handler outside the block: let it act
        return False


def shutdown(wait: float = 2.0) -> None:
    """Stop multiprocessing's helper processes (the forkserver, the resource tracker) and reap
    them, as the `ptxmc` command ends. Left to themselves they exit once ptxmc is gone, but as
    orphans: where PID 1 does not reap (many containers) each run would leave two defunct
    processes behind. Call it only when no worker is left (run_pool stops its workers)."""
    try:
        from multiprocessing import forkserver, resource_tracker
    except ImportError:                 # pragma: no cover - platforms without them
        return
    fs = getattr(forkserver, "_forkserver", None)
    if fs is not None and getattr(fs, "_forkserver_pid", None):
        pid, fd, address = fs._forkserver_pid, fs._forkserver_alive_fd, getattr(fs, "_forkserver_address", None)
        fs._forkserver_pid = fs._forkserver_alive_fd = fs._forkserver_address = None
        _close(fd)
        _reap(pid, wait)
        if isinstance(address, str) and not address.startswith("\0"):
            with contextlib.suppress(OSError):
                os.unlink(address)
    rt = getattr(resource_tracker, "_resource_tracker", None)
    if rt is not None and getattr(rt, "_pid", None):
        pid, fd = rt._pid, rt._fd
        rt._pid = rt._fd = None
        _close(fd)
        _reap(pid, wait)


def _close(fd) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _reap(pid: int, wait: float) -> None:
    """Wait up to `wait` seconds for child `pid` to exit (its pipe closed), then kill it; reap it."""
    end = time.monotonic() + wait
    try:
        while time.monotonic() < end:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except ChildProcessError:           # already reaped
        pass
    except OSError:
        pass
