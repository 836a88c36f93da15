"""The `ptxmc` executable's entry point. With PTXMC_WARM=1 in the environment, `ptxmc check` and
`ptxmc outcomes` are handed to a warm server (checker.warm.server) when one with this caller's
key answers and is not stale; in every other case - the default - the command runs here, as
checker.cli does. The server's answer is the command's own: its output went straight to this
process's stdout and stderr, and this process exits with its status (or is ended by its signal).
Signals this process receives (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) are passed on to the command,
unless this process was started with them ignored (then the command ignores them too); its
resource limits are the command's.

Kept small: before it knows whether a server serves it imports nothing but built-in and C modules
(_socket, _signal, resource, zlib), no more of the checker than checker.warm.key, and never `signal`
or `socket` (their enums alone cost more than the rest of this process after Python's start-up).
"""
from __future__ import annotations

import os
import sys

WARM_COMMANDS = ("check", "outcomes")
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")


def entry() -> None:
    if os.environ.get("PTXMC_WARM", "0") not in ("", "0") and sys.argv[1:2] and sys.argv[1] in WARM_COMMANDS:
        status = served(sys.argv[1:])
        if status is not None:
            _exit(status)
    from ..cli import entry as one_shot

    one_shot()


def _exit(status: int) -> None:
    """End this process with the served command's status, as the one-shot command ends its own
    (checker.cli: os._exit once the output is flushed): this process wrote at most a message of
    its own on stderr, and holds nothing that an interpreter's shutdown (~2 ms) would release.
    If that cannot be flushed, the ordinary exit reports it."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status & 0xFF)


def served(argv: list[str]) -> int | None:
    """The exit status of `ptxmc ARGV` run by a warm server, or None if none served it (nothing
    was run, nothing written)."""
    import _socket      # (socket.py's wrappers and its imports would cost more than the rest of this)
    import marshal

    from .key import caller_key, private, socket_dir, socket_path

    folder = socket_dir()
    if not private(folder):
        return None
    key = caller_key()
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            s.connect(socket_path(key, folder))
            request = marshal.dumps({"key": key, "argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ),
                                     "path": list(sys.path), "umask": _umask(), "rlimits": _rlimits(),
                                     "ignored": _ignored()})
            fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))       # three C ints
            s.sendmsg([len(request).to_bytes(8, "big") + request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            f = _Lines(s)
            answer = f.readline().split()
            if answer[:1] != [b"run"]:      # stale, or not this caller's server: run it here
                return None
            pid = int(answer[1])
        except (OSError, ValueError, IndexError):
            return None
        return _wait(f, pid)                # from here on the command runs: never run it twice
    finally:
        s.close()


class _Lines:
    """Lines read from a socket (the server's answers: a few short lines)."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def readline(self) -> bytes:
        while b"\n" not in self.buf:
            more = self.sock.recv(4096)
            if not more:
                line, self.buf = self.buf, b""
                return line
            self.buf += more
        line, _, self.buf = self.buf.partition(b"\n")
        return line + b"\n"


def _rlimits() -> dict[str, tuple[int, int]]:
    import resource

    return {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")}


def _ignored() -> list[int]:
    """The signals this process was started with ignored (nohup, a background job): ignored in
    the command too, and not passed on."""
    import _signal as signal    # (signal.py, made of enums, would cost a third of this process)

    return [int(getattr(signal, n)) for n in FORWARDED + ("SIGPIPE",) if signal.getsignal(getattr(signal, n)) == signal.SIG_IGN]


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _wait(f, pid: int) -> int:
    """Wait for the command's end (passing signals on to it); its exit status."""
    import _signal as signal

    def forward(signum, frame):
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    for name in FORWARDED:
        if signal.getsignal(getattr(signal, name)) != signal.SIG_IGN:
            signal.signal(getattr(signal, name), forward)
    try:
        line = f.readline()
    except OSError:
        line = b""
    word, _, value = line.decode("ascii", "replace").partition(" ")
    if word == "signal":                    # ended by a signal: so is this process
        signum = int(value)
        signal.signal(signum, signal.SIG_DFL)
        sys.stdout.flush()
        os.kill(os.getpid(), signum)
        return 128 + signum
    if word == "exit":
        return int(value)
    sys.stderr.write("ptxmc: internal error: the warm server went away before the command ended "
                     "(run it again without PTXMC_WARM)\n")
    return 2


if __name__ == "__main__":
    entry()
