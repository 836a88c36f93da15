"""A hard bound, and a prompt Ctrl-C, for one-shot work done in this process (`ptxmc check`,
`ptxmc outcomes`): no worker process to start, so a small test answers at once, and still nothing
runs past the bound.

    with hard_bound(seconds, on_timeout=lambda elapsed: "ptxmc: UNKNOWN: ..."):
        work()

A watchdog thread waits for the deadline or for SIGINT. It hears of SIGINT through
signal.set_wakeup_fd: Python runs its own handler (KeyboardInterrupt) only between bytecodes of
the main thread, which a long solver call does not reach until it returns. At the deadline the
watchdog writes `on_timeout(elapsed seconds)` and a newline to stderr and ends the process with
status 1; on SIGINT it writes `interrupted` and ends it with status 130 - with os._exit, since
the main thread may be inside native code, and no child process exists to be left behind. Once
the block is left the watchdog does nothing: the main thread and the watchdog take one lock, so
exactly one of them reports. Signal hearing needs the main thread of a POSIX process; elsewhere
only the deadline holds (and Ctrl-C acts when Python next runs). Native code with a SIGINT handler of its own hides
Ctrl-C from Python and so from the watchdog: Z3's (its `ctrl_c` parameter, on by default, turns
Ctrl-C into an 'unknown' answer) is turned off by checker.cli, through z3_param: a test that
brute force judges never imports z3 (~25 ms), so the parameter waits for the first Z3 context.
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from typing import Callable, Iterator

TIMEOUT_STATUS = 1
INTERRUPT_STATUS = 130
_STOP = b"\0"           # no signal has number 0: the main thread's "done" byte


@contextlib.contextmanager
def hard_bound(seconds: float | None, on_timeout: Callable[[float], str],
               interrupted: str = "ptxmc: interrupted", timeout_status: int = TIMEOUT_STATUS) -> Iterator[None]:
    posix = os.name == "posix"              # select() on a pipe, and a pipe as the wakeup fd
    r, w = os.pipe() if posix else (-1, -1)
    if posix:
        os.set_blocking(w, False)
    stopped = threading.Event()
    lock = threading.Lock()
    done = False
    start = time.monotonic()
    old_fd = -1
    hears_signals = False
    if posix and threading.current_thread() is threading.main_thread():
        try:
            old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
            hears_signals = True
        except (ValueError, OSError):
            pass

    def end(message: str, status: int) -> None:
        nonlocal done
        with lock:
            if done:
                return
            done = True
            try:
                os.write(2, (message + "\n").encode("utf-8", "replace"))
            finally:
                os._exit(status)

    def watch() -> None:
        deadline = None if not seconds else start + seconds
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not posix:
                if not stopped.wait(wait):
                    end(on_timeout(time.monotonic() - start), timeout_status)
                return
            ready, _, _ = select.select([r], [], [], wait)
            if not ready:
                end(on_timeout(time.monotonic() - start), timeout_status)
                return
            data = os.read(r, 512)
            if not data or _STOP in data:
                return
            if signal.SIGINT in data:
                end(interrupted, INTERRUPT_STATUS)
                return

    watcher = threading.Thread(target=watch, name="ptxmc-watchdog", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:              # from here on the watchdog does nothing
            done = True
        stopped.set()
        if hears_signals:
            signal.set_wakeup_fd(old_fd)
        if posix:
            os.write(w, _STOP)
        watcher.join()
        if posix:
            os.close(r)
            os.close(w)


_z3_pending: dict[str, object] = {}
_z3_memory_mb: list[int] = []      # the memory_max_size last given to z3_param (Z3's allocator limit)
# What making one Z3 context allocates, with room to spare (an empty context is about 17 MB)
CONTEXT_MB = 32


def z3_param(name: str, value) -> None:
    """Set Z3's global parameter `name`: now if z3 is loaded, else before the first context that
    z3_context makes (every Z3 context of the checker is made there)."""
    if name == "memory_max_size":
        _z3_memory_mb[:] = [int(value)]
    z3 = sys.modules.get("z3")
    if z3 is None:
        _z3_pending[name] = value
    else:
        _z3_pending.pop(name, None)        # an older value set before z3 loaded must not win later
        z3.set_param(name, value)


def z3_context():
    """A new Z3 context, the parameters given to z3_param set. Z3Exception 'out of memory'
    (which checker.limits.memory_exceeded reads as UNKNOWN) when Z3's allocator is too near its
    memory_max_size to make one: Z3 then returns no context and the z3 module crashes the process
    (SIGSEGV) instead of raising."""
    import z3

    while _z3_pending:
        z3.set_param(*_z3_pending.popitem())
    if _z3_memory_mb and z3.z3core.Z3_get_estimated_alloc_size() + (CONTEXT_MB << 20) > _z3_memory_mb[0] << 20:
        raise z3.Z3Exception("out of memory")
    return z3.Context()
