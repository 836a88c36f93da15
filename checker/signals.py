"""The signals that stop a command (Ctrl-C, SIGTERM, SIGHUP) as exceptions, with the signal's
number kept for the exit status. A module of its own, without multiprocessing, so the one-shot
commands (`check`, `outcomes`) and `--help` need not import the worker pool."""
from __future__ import annotations

import contextlib
import signal

# The signals that stop a run: Ctrl-C, `kill` / a CI cancel / `timeout`, a closed terminal.
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, under stop_signals(): handled exactly like Ctrl-C (a KeyboardInterrupt),
    with the signal's number kept for the exit status (128 + signum)."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


def signum_of(exc: BaseException) -> int:
    """The signal behind an interruption (SIGINT for a plain KeyboardInterrupt)."""
    return getattr(exc, "signum", signal.SIGINT)


def raise_stopped(signum, frame):
    raise Stopped(signum)


@contextlib.contextmanager
def stop_signals():
    """Within the block, SIGTERM and SIGHUP raise Stopped, as SIGINT raises KeyboardInterrupt
    (main thread only; elsewhere the block changes nothing)."""
    old = {}
    try:
        for sig in STOP_SIGNALS:
            if sig != signal.SIGINT:
                old[sig] = signal.signal(sig, raise_stopped)
    except ValueError:          # not the main thread
        pass
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
