"""The warm server: a resident process that imports the checker once and runs each command it
is handed (`ptxmc check` / `ptxmc outcomes`, from checker.warm.client) in a fresh fork of itself.

    python -m checker.warm.server --detach [--idle SECONDS] [--log FILE]   # start; prints the socket
    python -m checker.warm.server --stop                                   # end it

Per command: the caller's key must equal the server's (checker.warm.key.caller_key), and nothing
the server loaded may have changed on disk (checker.warm.key.Snapshot) - a stale server answers
`stale`, removes its socket and exits, and the caller runs the command itself. Otherwise the
server forks a supervisor, which forks the command: in the caller's folder, environment, umask,
sys.path and resource limits (a caller whose hard limits are above the server's is refused), on
the caller's stdin, stdout and stderr (passed over the socket), with fresh standard streams and
signal handlers (those the caller was started ignoring ignored), it runs checker.cli's entry as
the `ptxmc` executable does.
The supervisor sends the command's pid (the caller passes its signals on to it), then its exit
status or signal; if the caller goes away first, the command is killed, as it would have died
with the caller. What the server holds is its imported modules and the default model as
checker.cat.interp.load_model keeps it in any process (checked against its files' sizes and
times at each use, and covered by the snapshot's content check); nothing of a command is kept,
since each runs in a fork that ends with it.

The socket lives in a folder only this user may enter (checker.warm.key.socket_dir), and the
server serves only peers of its own user id. With no command for --idle seconds (default 1800),
it exits.
"""
from __future__ import annotations

import argparse
import io
import json
import marshal
import os
import signal
import socket
import struct
import sys
import threading
import time

from .key import Snapshot, caller_key, private, socket_dir, socket_path

# What a one-shot check or outcomes imports (their own imports bring the rest); and z3.
PRELOAD = ("checker.cli", "checker.api", "checker.front.litmus", "checker.verdict.check", "checker.verdict.explain",
           "checker.engines.auto", "checker.engines.brute", "checker.engines.smt", "checker.results.formula",
           "checker.results.output", "checker.cat.cache", "checker.cat.compiled", "checker.outsafe", "z3")
MAX_REQUEST = 1 << 24


def preload() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from ..isa import registry

    registry.REGISTRY.families           # every instruction family's module
    from ..resources import resolve_model

    resolve_model(None)     # the default model, parsed (checker.cat.interp keeps it while its files are unchanged)
    import gc

    gc.collect()
    gc.freeze()     # the collector of a forked command leaves these objects (and their pages) alone


class Server:
    def __init__(self, folder: str, idle: float, log: str | None):
        self.folder, self.idle, self.log = folder, idle, log
        preload()
        self.key = caller_key()
        self.snapshot = Snapshot()
        self.path = socket_path(self.key, folder)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def bind(self) -> bool:
        """Listen on the socket; False if another server already answers there."""
        if os.path.exists(self.path):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.path)
                return False
            except OSError:
                os.unlink(self.path)            # left by a server that died
            finally:
                probe.close()
        self.sock.bind(self.path)
        os.chmod(self.path, 0o600)
        self.inode = os.stat(self.path).st_ino
        self.sock.listen(64)
        return True

    def close(self) -> None:
        try:
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        except OSError:
            pass
        self.sock.close()

    def note(self, **fields) -> None:
        if self.log:
            with open(self.log, "a") as f:
                f.write(json.dumps({"time": round(time.time(), 3), **fields}) + "\n")

    def serve(self) -> None:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)       # supervisors are reaped by the system
        self.sock.settimeout(self.idle)
        while True:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                self.note(event="idle")
                return
            conn.settimeout(None)
            try:
                if not self.handle(conn):
                    return
            except (OSError, ValueError, EOFError, TypeError, KeyError) as e:
                self.note(event="bad request", error=f"{type(e).__name__}: {e}")
            finally:
                conn.close()

    def handle(self, conn: socket.socket) -> bool:
        """Serve one connection; False when the server must end."""
        start = time.process_time()
        pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.getuid():
            return True
        data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        try:
            if len(data) < 8:
                raise ValueError("short request")
            size = int.from_bytes(data[:8], "big")
            if size > MAX_REQUEST:
                raise ValueError("request too large")
            data = data[8:]
            while len(data) < size:
                more = conn.recv(size - len(data))
                if not more:
                    raise ValueError("short request")
                data += more
            req = marshal.loads(data)
            if req.get("stop"):
                conn.sendall(b"stopped\n")
                self.note(event="stop")
                return False
            if req["key"] != self.key:
                conn.sendall(b"refused key\n")
                self.note(event="refused", why="another interpreter, sys.path, package or environment")
                return True
            if not _can_limit(req["rlimits"]):
                conn.sendall(b"refused limits\n")
                self.note(event="refused", why="the caller's hard resource limits are above the server's")
                return True
            changed = self.snapshot.stale()
            if changed is not None:
                self.close()                    # a fresh server may start at once
                conn.sendall(b"stale\n")
                self.note(event="stale", changed=changed)
                return False
            if len(fds) != 3:
                raise ValueError("the request carries no standard streams")
            spent = time.process_time() - start         # (in the server: a fork's own clock starts at zero)
            if os.fork() == 0:
                self.sock.close()
                _supervise(conn, fds, req, self.note, server_cpu=spent)
            return True
        finally:
            for fd in fds:
                os.close(fd)


def _can_limit(rlimits: dict) -> bool:
    """Can a fork of this process take the caller's resource limits (no hard limit above ours)?"""
    import resource

    inf = resource.RLIM_INFINITY
    for name, (_, hard) in rlimits.items():
        ours = resource.getrlimit(getattr(resource, name))[1]
        if ours != inf and (hard == inf or hard > ours):
            return False
    return True


def _supervise(conn: socket.socket, fds: list[int], req: dict, note, server_cpu: float) -> None:
    """The supervisor (never returns): runs the command in a child, reports its pid and status,
    and notes the CPU time of the command, of itself and of the server's part (`server_cpu`)."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        start = time.monotonic()
        child = os.fork()
        if child == 0:
            conn.close()
            _command(fds, req)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"run {child}\n".encode())

        lock, ended = threading.Lock(), threading.Event()

        def caller_gone() -> None:          # the caller closes the socket once the command ends, or dies
            try:
                conn.recv(1)
            except OSError:
                pass
            with lock:
                if not ended.is_set():
                    os.kill(child, signal.SIGKILL)

        threading.Thread(target=caller_gone, daemon=True).start()
        os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)     # ended, not reaped: its pid is not reused
        with lock:
            ended.set()
        _, status, usage = os.wait4(child, 0)
        answer = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
        import resource

        own = resource.getrusage(resource.RUSAGE_SELF)        # (a forked process's usage starts at zero)
        note(event="served", argv=req["argv"], answer=answer, cpu_s=round(usage.ru_utime + usage.ru_stime, 4),
             supervisor_cpu_s=round(own.ru_utime + own.ru_stime, 4), server_cpu_s=round(server_cpu, 4),
             wall_s=round(time.monotonic() - start, 4))        # (noted before the caller hears the end)
        try:
            conn.sendall(answer.encode() + b"\n")
        except OSError:
            pass
    finally:
        os._exit(0)


def _stream(fd: int, reading: bool, like) -> io.TextIOWrapper:
    """A standard stream on `fd` made as CPython makes it at start-up (encoding and errors as
    this process's, which the caller's key makes the caller's)."""
    buffered = reading or not like.write_through        # python -u: unbuffered binary layer, write-through
    raw = io.open(fd, "rb" if reading else "wb", buffering=-1 if buffered else 0, closefd=False)
    return io.TextIOWrapper(raw, encoding=like.encoding, errors=like.errors, newline="\n",
                            line_buffering=buffered and (fd == 2 or os.isatty(fd)), write_through=not buffered)


def _command(fds: list[int], req: dict) -> None:
    """The forked command (never returns): the caller's process state, then the one-shot entry."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            if fd > 2:
                os.close(fd)
        os.chdir(req["cwd"])
        os.umask(req["umask"])
        os.environ.clear()
        os.environ.update(req["env"])
        sys.path[:] = req["path"]
        sys.argv = ["ptxmc", *req["argv"]]
        for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGCHLD", "SIGUSR1", "SIGUSR2", "SIGALRM"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)        # as CPython sets them at start-up
        for signum in req["ignored"]:                        # as the caller was started (nohup, &)
            signal.signal(signum, signal.SIG_IGN)
        import resource

        for name, limit in req["rlimits"].items():
            if resource.getrlimit(getattr(resource, name)) != tuple(limit):
                resource.setrlimit(getattr(resource, name), tuple(limit))
        old = (sys.stdin, sys.stdout, sys.stderr)
        sys.stdin = sys.__stdin__ = _stream(0, True, old[0])
        sys.stdout = sys.__stdout__ = _stream(1, False, old[1])
        sys.stderr = sys.__stderr__ = _stream(2, False, old[2])
        from ..cli import entry

        try:
            entry()
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:               # as CPython ends on an uncaught Ctrl-C
            sys.excepthook(*sys.exc_info())
            _flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        if not _flush():
            code = 120                          # CPython's status when stdout cannot be flushed at exit
    except BaseException:                       # the set-up failed: say so on the caller's stderr
        import traceback

        os.write(2, ("ptxmc: internal error: the warm server could not start the command (run it again "
                     "without PTXMC_WARM):\n" + traceback.format_exc()).encode("utf-8", "replace"))
        code = 2
    finally:
        os._exit(code)


def _flush() -> bool:
    ok = True
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except (OSError, ValueError):
            ok = False
    return ok


def _request_stop(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        body = marshal.dumps({"stop": True})
        socket.send_fds(s, [len(body).to_bytes(8, "big") + body], [])
        return s.makefile("rb").readline().strip() == b"stopped"
    except OSError:
        return False
    finally:
        s.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m checker.warm.server", description=__doc__.split("\n\n")[0])
    ap.add_argument("--detach", action="store_true", help="start in the background, print the socket, and return")
    ap.add_argument("--stop", action="store_true", help="end the server of this interpreter and environment")
    ap.add_argument("--idle", type=float, default=1800.0, help="exit after this many seconds without a command")
    ap.add_argument("--log", help="append one JSON line per event (served, stale, refused, idle) to this file")
    args = ap.parse_args(argv)
    folder = socket_dir()
    path = socket_path(caller_key(), folder)
    if args.stop:
        stopped = _request_stop(path)
        print(f"{'stopped' if stopped else 'no server answered at'} {path}")
        return 0
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if not private(folder):
        print(f"{folder}: not a folder of this user closed to others (mode 700): not serving", file=sys.stderr)
        return 2
    if args.detach:
        import subprocess

        cmd = [sys.executable, "-m", "checker.warm.server", "--idle", str(args.idle)]
        cmd += ["--log", os.path.abspath(args.log)] if args.log else []
        subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)       # (here: `-m` finds the package this process found)
        for _ in range(600):                # the server imports the checker first: up to a minute
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                print(path)
                return 0
            except OSError:
                time.sleep(0.1)
            finally:
                probe.close()
        print(f"no server answered at {path}", file=sys.stderr)
        return 2
    server = Server(folder, args.idle, args.log)
    if not server.bind():
        print(f"a server already answers at {server.path}")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
