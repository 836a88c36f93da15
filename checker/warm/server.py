"""The warm server: a resident process that imports the checker once and runs each command it
is handed (`ptxmc check` / `ptxmc outcomes`, from checker.warm.client) in its worker - a fork of
itself that runs one command after another - or, when the worker is busy, in a fresh fork.

    python -m checker.warm.server --detach [--idle SECONDS] [--log FILE]   # start; prints the socket
    python -m checker.warm.server --stop                                   # end it

Per command: the caller's key must equal the server's (checker.warm.key.caller_key), and nothing
the server loaded may have changed on disk (checker.warm.key.Snapshot) - a stale server answers
`stale`, removes its socket and exits, and the caller runs the command itself. Otherwise the
command runs in the worker or a fork: in the caller's folder, environment, umask, sys.path and
resource limits (a caller whose hard limits are above the server's is refused), on the caller's stdin,
stdout and stderr (passed over the socket), with fresh standard streams and signal handlers
(those the caller was started ignoring ignored), it runs checker.cli's entry as the `ptxmc`
executable does. The server sends the command's pid (the caller passes its signals on to it),
then, when the command ends, its exit status or signal; if the caller goes away first, the
command is killed, as it would have died with the caller. One thread does all of it (the
listening socket, the callers' connections and SIGCHLD in one select loop); a stopped, stale or
idle server stops listening at once and answers the commands still running before it exits (a
second SIGTERM ends it at once).

What the server holds is what any ptxmc process keeps once it has run a command, filled before
it serves: its imported modules, the default model as checker.cat.interp.load_model keeps it
(checked against its files at each use, and covered by the snapshot's content check), that
model staged and compiled for brute force (checker.cat.stage and checker.cat.compiled, keyed by
the model object) and the parsers of `check` and `outcomes` (checker.cli.keep_parsers). Not a
Z3 context: one made here saved a command nothing (a fork writing into the context's ~16 MB
copies the pages it touches, which costs what making a fresh one costs) and made every fork
dearer.

The worker (see _worker) runs a command as a fork does, in the caller's process state set for
each command, and keeps what any ptxmc process keeps between the tests of a batch: a command
there costs what it costs in a process that ran one before, where a fresh fork pays ~10-20 ms of
page faults copying the pages the command writes (bench/RESULTS.md, "Issue 38, 11-30, the warm
worker"). It takes a command only when idle (its last caller has exited: a signal that caller
passes on late must not reach the next command), and only from a caller whose resource limits
are the server's own (a lowered hard limit could not be raised again); it retires after an
interrupted command, after WORKER_COMMANDS commands, or past WORKER_MAX_RSS_KB, and the next
request forks another. Each test has Z3 contexts of its own, so its answers do not depend on
what ran before it (checker.engines.smt); tests/cli/test_warm.py compares the bytes.

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
import select
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass

from .key import Snapshot, caller_key, private, socket_dir, socket_path

# What a one-shot check or outcomes imports (their own imports bring the rest); and z3.
PRELOAD = ("checker.cli", "checker.api", "checker.front.litmus", "checker.verdict.check", "checker.verdict.explain",
           "checker.engines.auto", "checker.engines.brute", "checker.engines.smt", "checker.results.formula",
           "checker.results.output", "checker.cat.cache", "checker.cat.compiled", "checker.outsafe", "z3")
MAX_REQUEST = 1 << 24


# What the server answers once, in-process, before it serves (see warm_up): a bundled test and a
# condition of it; brute force only, so no Z3 context or solver thread is made in the server.
WARM_UP = ("litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster", "P1:r0=1 /\\ P1:r1=0")


def preload() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from ..isa import registry

    registry.REGISTRY.families           # every instruction family's module
    from ..resources import resolve_model

    resolve_model(None)     # the default model, parsed (checker.cat.interp keeps it while its files are unchanged)
    from .. import cli

    cli.keep_parsers()      # check's and outcomes' command lines, parsed by each command with these
    warm_up()
    from .. import methodcache

    methodcache.save()      # (now, not by every fork as it ends)
    import gc

    gc.collect()
    gc.freeze()     # the collector of a forked command leaves these objects (and their pages) alone


def warm_up() -> None:
    """Fill this process's caches as a first command would, so that each fork finds them full:
    the default model staged for brute force, its compiled functions (read back from the disk
    cache, or compiled), the partial orders, the modules a check imports as it runs (gettext's
    locale). They are the caches any ptxmc process keeps, keyed by the model object and what was
    compiled, so a command finds in them what it would compute itself. Brute force only: Z3 is
    left untouched (a solver call with a timeout starts a thread, which a fork would not have).
    Any failure here only leaves the caches cold."""
    try:
        from ..api import session
        from ..front.conditions import parse_cond
        from ..verdict.explain import explain_text

        s = session(WARM_UP[0], engine="brute")
        s.outcomes()
        explain_text(session(WARM_UP[0], engine="brute"), parse_cond(WARM_UP[1]))
        from ..cat import stage
        from ..cat.interp import deep_bindings

        for _, staged in list(stage._cache.values()):
            deep_bindings(staged.residual.statements)     # (what the Z3 encoding reads first)
        import locale       # noqa: F401 - argparse's gettext, on a usage error or --help
    except Exception:       # noqa: BLE001 - an optimisation; the command computes what is missing
        pass


class Server:
    def __init__(self, folder: str, idle: float, log: str | None):
        self.folder, self.idle, self.log = folder, idle, log
        preload()
        self.key = caller_key()
        self.snapshot = Snapshot()
        self.path = socket_path(self.key, folder)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.running: dict[int, _Running] = {}      # pid of a command (or of the worker running it) -> its caller
        self.worker: _Worker | None = None
        self.accepting = True
        self.selector: selectors.BaseSelector | None = None

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
        # A Ctrl-C or SIGTERM as the socket file appears is held until the server knows the file as
        # its own (its inode), so that close() removes it: raised here, it left the file behind
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            self.sock.bind(self.path)
            os.chmod(self.path, 0o600)
            self.inode = os.stat(self.path).st_ino
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        self.sock.listen(64)
        return True

    def close(self) -> None:
        """Stop listening (the socket file removed, so that a fresh server may start at once);
        the commands running go on, and are answered, before serve() returns."""
        if not self.accepting:
            return
        self.accepting = False
        if self.selector is not None:
            self.selector.unregister(self.sock)
        try:
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        except (OSError, AttributeError):
            pass
        self.sock.close()

    def note(self, **fields) -> None:
        if self.log:
            with open(self.log, "a") as f:
                f.write(json.dumps({"time": round(time.time(), 3), **fields}) + "\n")

    def serve(self) -> None:
        """Accept commands until stopped, stale or idle, then answer those still running. One
        thread watches the listening socket, each running command's caller (gone: its command
        is killed) and SIGCHLD (a command ended: its status goes to its caller)."""
        wake_r, wake_w = self.wake = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)      # (what wakes the loop is the wake-up fd)
        signal.signal(signal.SIGTERM, self._terminate)
        old_fd = signal.set_wakeup_fd(wake_w)
        self.selector = sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ, "accept")
        sel.register(wake_r, selectors.EVENT_READ, "signal")
        self.cpu = _cpu()
        try:
            while self.accepting or self.running:
                events = sel.select(self.idle if self.accepting and not self.running else None)
                if not events and self.accepting and not self.running:
                    self.note(event="idle")
                    self.close()
                for key, _ in events:
                    if sel.get_map().get(key.fd) is not key:
                        # unregistered by an event handled before it in this round (the worker's
                        # end forgets the watch on its last caller, whose exit came in the same
                        # round; a command's end closes its caller's connection), or its fd reused
                        continue
                    if key.data == "accept":
                        if self.accepting:
                            self._accept()
                    elif key.data == "signal":
                        _drain(wake_r)
                        self._reap()
                    elif key.data == "worker":
                        self._from_worker()
                    elif key.data == "caller exited":
                        self._caller_exited()
                    else:                       # its caller went away (or wrote): the command dies with it
                        sel.unregister(key.fileobj)
                        try:
                            os.kill(key.data, signal.SIGKILL)       # (not reaped: the pid is still its)
                        except OSError:
                            pass
        finally:
            if self.worker is not None:
                self.worker.close()
            signal.set_wakeup_fd(old_fd)
            sel.close()
            self.selector = None
            os.close(wake_r)
            os.close(wake_w)

    def _terminate(self, *_) -> None:
        """SIGTERM: stop listening and end once the running commands have; a second SIGTERM ends
        the server at once (a command still running goes on, and its caller hears that the server
        went away)."""
        if not self.accepting:
            sys.exit(0)
        self.note(event="terminate")
        self.close()

    def _accept(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        try:
            pid = self.handle(conn)
        except (OSError, ValueError, EOFError, TypeError, KeyError) as e:
            self.note(event="bad request", error=f"{type(e).__name__}: {e}")
            pid = None
        if pid is None:
            conn.close()

    def handle(self, conn: socket.socket) -> int | None:
        """Serve one connection: the pid of the command it started (its caller's connection is
        then kept until the command ends), or None."""
        conn.settimeout(60.0)           # (a caller sends its whole request at once)
        pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.getuid():
            return None
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
                self.close()
                return None
            if req["key"] != self.key:
                conn.sendall(b"refused key\n")
                self.note(event="refused", why="another interpreter, sys.path, package or environment")
                return None
            if not _can_limit(req["rlimits"]):
                conn.sendall(b"refused limits\n")
                self.note(event="refused", why="the caller's hard resource limits are above the server's")
                return None
            changed = self.snapshot.stale()
            if changed is not None:
                self.close()                    # a fresh server may start at once
                conn.sendall(b"stale\n")
                self.note(event="stale", changed=changed)
                return None
            if len(fds) != 3:
                raise ValueError("the request carries no standard streams")
            worker = self._worker_for(req, fds)
            if worker is not None:
                child = worker.pid
                _send(worker.sock, req, fds)
                worker.state = "busy"
            else:
                child = _fork()
                if child == 0:
                    self._in_command(conn)
                    _command(fds, req)
            conn.settimeout(None)
            self.running[child] = _Running(conn, req["argv"], time.monotonic(), pid)
            self.selector.register(conn, selectors.EVENT_READ, child)
            try:
                conn.sendall(f"run {child}\n".encode())
            except OSError:
                pass                            # gone already: the selector sees it
            return child
        finally:
            for fd in fds:
                os.close(fd)

    def _in_command(self, conn: socket.socket | None) -> None:
        """In a forked command (or the worker): nothing of the server's sockets, pipe or handlers."""
        signal.set_wakeup_fd(-1)
        for fd in self.wake:
            os.close(fd)
        self.selector.close()
        if self.accepting:
            self.sock.close()
        if conn is not None:
            conn.close()
        for other in self.running.values():
            other.conn.close()
        if self.worker is not None:
            self.worker.close()

    # -- the worker: one process that runs one command after another -----------------------
    def _worker_for(self, req: dict, fds: list[int]) -> "_Worker | None":
        """The worker, if it may run this request now (made for the first one): it is idle, and
        the request needs nothing a process cannot take back - no resource limit other than
        this process's own (a lowered hard limit stays lowered)."""
        if not _same_limits(req["rlimits"]):
            return None
        if self.worker is None:
            self.worker = self._spawn_worker(fds)
        w = self.worker
        if w.state == "draining" and select.select([w.caller], [], [], 0)[0]:
            self._caller_exited()       # (its exit and this request came in one round of the loop)
        return w if w.state == "idle" else None

    def _spawn_worker(self, held: list[int]) -> "_Worker":
        """Fork the worker (`held`: the streams of the request being handled, which it must not
        keep: a reader of that caller's output would never see its end)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = _fork()
        if pid == 0:
            ours.close()
            for fd in held:
                os.close(fd)
            self._in_command(None)
            _worker(theirs)
        theirs.close()
        ours.setblocking(False)     # (its answers are read as they come; a request is a few KB)
        worker = _Worker(pid, ours)
        self.selector.register(ours, selectors.EVENT_READ, "worker")
        return worker

    def _from_worker(self) -> None:
        """The worker says a command ended (`done STATUS CPU`, and `last` if it exits now): its
        caller is answered. The worker takes the next request once that caller has exited (until
        then a signal it passes on could reach the next command, a fresh fork serves others
        meanwhile); one that said `last` takes none (handed one before its end was seen, it would
        exit without running it, and its caller would hear `exit 0` with no output). An end of
        file: the worker ended (reaped with its status by _reap)."""
        w = self.worker
        if w is None or w.state in ("gone", "retired"):
            return
        try:
            data = w.sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(w.sock)
            w.state = "gone"
            return
        w.buf += data
        while b"\n" in w.buf:
            line, _, w.buf = w.buf.partition(b"\n")
            word, code, cpu, *more = line.decode("ascii").split()
            run = self.running.pop(w.pid, None)
            if word != "done" or run is None:
                continue
            w.reported += float(cpu)
            self._answer(run, f"exit {int(code)}", float(cpu), w.pid)
            if more == ["last"]:
                self._retire(w)
                return
            w.state = "draining"
            try:
                w.caller = os.pidfd_open(run.caller)
            except ProcessLookupError:      # gone already
                w.state = "idle"
            except (OSError, AttributeError):
                self._retire(w)             # no way to know: no next command
                return
            else:
                self.selector.register(w.caller, selectors.EVENT_READ, "caller exited")

    def _retire(self, w: "_Worker") -> None:
        """Hand the worker nothing more (its end is reaped by _reap). Its socket is no longer
        watched before it is closed: a file that reuses its number must not find it registered."""
        try:
            self.selector.unregister(w.sock)
        except (KeyError, ValueError):
            pass
        w.close()

    def _caller_exited(self) -> None:
        w = self.worker
        if w is None or w.caller is None:       # (no caller watched any more)
            return
        self.selector.unregister(w.caller)
        os.close(w.caller)
        w.caller = None
        if w.state == "draining":
            w.state = "idle"

    def _reap(self) -> None:
        """Answer the caller of every command that has ended: its exit status or signal (the
        worker's, if it ended while running one)."""
        w = self.worker
        children = list(self.running)
        if w is not None and w.pid not in self.running:
            children.append(w.pid)
        for child in children:
            try:
                pid, status, usage = os.wait4(child, os.WNOHANG)
            except ChildProcessError:
                pid, status, usage = child, 0, None
            if pid == 0:
                continue
            cpu = None if usage is None else usage.ru_utime + usage.ru_stime
            if w is not None and child == w.pid:
                self._from_worker()             # (an end it reported before it exited)
                self._worker_ended()
                if cpu is not None:
                    cpu -= w.reported           # (its CPU before this command was reported with the earlier ones)
            run = self.running.pop(child, None)
            if run is None:
                continue
            answer = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
            self._answer(run, answer, cpu, child)

    def _worker_ended(self) -> None:
        w, self.worker = self.worker, None
        for f in (w.sock, w.caller):
            if f is not None:
                try:
                    self.selector.unregister(f)
                except (KeyError, ValueError):
                    pass
        w.close()

    def _answer(self, run: "_Running", answer: str, cpu: float | None, pid: int) -> None:
        """Tell a command's caller how it ended (`exit N` / `signal N`), and note it."""
        try:
            self.selector.unregister(run.conn)
        except (KeyError, ValueError):
            pass
        now = _cpu()
        # the server's own CPU since the last command ended (this one's request, staleness
        # check, fork and answer; with commands in parallel, shared out as it falls)
        self.note(event="served", argv=run.argv, answer=answer, pid=pid, cpu_s=None if cpu is None else round(cpu, 4),
                  server_cpu_s=round(now - self.cpu, 4), wall_s=round(time.monotonic() - run.start, 4))
        self.cpu = now                          # (noted before the caller hears the end)
        try:
            run.conn.sendall(answer.encode() + b"\n")
        except OSError:
            pass
        run.conn.close()


@dataclass(frozen=True)
class _Running:
    conn: socket.socket
    argv: list
    start: float
    caller: int             # the caller's pid


class _Worker:
    """The server's side of its worker: its pid, the socket that hands it a request (with the
    caller's standard streams) and brings back `done STATUS CPU [last]`, and its state: idle, busy (a
    command runs), draining (answered; its caller has not exited yet: `caller`, a pidfd),
    retired or gone (it takes no more commands)."""

    def __init__(self, pid: int, sock: socket.socket):
        self.pid, self.sock = pid, sock
        self.state = "idle"
        self.caller: int | None = None
        self.buf = b""
        self.reported = 0.0         # its CPU seconds counted in the commands answered so far

    def close(self) -> None:
        """Hand it nothing more: it exits when it reads the end of its socket."""
        self.state = "gone" if self.state == "gone" else "retired"
        self.sock.close()
        if self.caller is not None:
            os.close(self.caller)
            self.caller = None


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _cpu() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _can_limit(rlimits: dict) -> bool:
    """Can a fork of this process take the caller's resource limits (no hard limit above ours)?"""
    import resource

    inf = resource.RLIM_INFINITY
    for name, (_, hard) in rlimits.items():
        ours = resource.getrlimit(getattr(resource, name))[1]
        if ours != inf and (hard == inf or hard > ours):
            return False
    return True


def _stream(fd: int, reading: bool, like) -> io.TextIOWrapper:
    """A standard stream on `fd` made as CPython makes it at start-up (encoding and errors as
    this process's, which the caller's key makes the caller's)."""
    buffered = reading or not like.write_through        # python -u: unbuffered binary layer, write-through
    raw = io.open(fd, "rb" if reading else "wb", buffering=-1 if buffered else 0, closefd=False)
    return io.TextIOWrapper(raw, encoding=like.encoding, errors=like.errors, newline="\n",
                            line_buffering=buffered and (fd == 2 or os.isatty(fd)), write_through=not buffered)


def _fork() -> int:
    """os.fork(), the child starting with the signals a caller passes on blocked (the parent's
    mask as it was): until its command runs (_run), a signal passed on is held, never taken by
    the server's own handlers, which the child still has, nor by set-up code."""
    held = {getattr(signal, n) for n in IDLE_SIGNALS}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    pid = os.fork()
    if pid != 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return pid


def _command(fds: list[int], req: dict) -> None:
    """The forked command (never returns): the caller's process state, then the one-shot entry."""
    os._exit(_run(fds, req))


def _run(fds: list[int], req: dict, goes_on: bool = False) -> int:
    """Run the request's command in the caller's process state, as the one-shot `ptxmc` runs it;
    its exit status. Ctrl-C ends this process as it ends the executable; so does a failure to
    set the caller's state up (status 2, the message on the caller's stderr), unless `goes_on`
    (the worker, which then exits once it has reported it: -1).

    The signals a caller passes on (IDLE_SIGNALS) are blocked from here (in a fork, from _fork
    on) to the command's start and again from its end: one that comes during the set-up is held
    and taken as the command starts (Ctrl-C then ends it as it ends a one-shot command at
    start-up); one that comes as the command ends is held and dropped as the worker ignores
    signals between commands (_idle): the command has ended, its status stands. Unblocked, a Ctrl-C in the
    set-up or after the command raised KeyboardInterrupt in this function's own code, which said
    "internal error" (exit 2), or in the worker's, which ended without its report."""
    code = 1
    held = {getattr(signal, n) for n in IDLE_SIGNALS}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)      # (already, in a fork or the worker)
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
        from ..cli import console, entry

        try:
            try:
                # (pthread_sigmask runs the Python handlers of the signals it unblocks, pending ones
                # included, before it returns: a Ctrl-C held during the set-up is raised here)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
                if goes_on:
                    code = console(fast_exit=True, goes_on=True)
                else:
                    entry()
                    code = 0
            finally:
                signal.pthread_sigmask(signal.SIG_BLOCK, held)
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
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
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
        if not goes_on:
            os._exit(2)
        return -1
    return code


# The worker retires (exits; the next request makes another) after this many commands, or once
# it has grown past this size: what a long series of commands leaves behind stays bounded.
WORKER_COMMANDS = 500
WORKER_MAX_RSS_KB = 1 << 20
IDLE_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")


def _worker(sock: socket.socket) -> None:
    """The worker (never returns): a fork of the server that runs the commands it is handed one
    after another, in this one process, each exactly as a forked command runs it (_run): the
    caller's standard streams, folder, environment, umask, sys.path and signal handlers, set
    for each command. What a command leaves in the process is what any ptxmc process keeps
    between the tests of a batch (its imports, the caches keyed by what they hold); each test
    has Z3 contexts of its own, so its answers do not depend on what ran before it (the
    determinism note of checker.engines.smt). A command here costs what it costs in a process
    that ran one before - a fresh fork of the server copies, page by page, the memory that the
    command writes (~10 ms of page faults for the smallest test, ~20 ms for one that uses Z3:
    bench/RESULTS.md). The worker reports each command's end as `done STATUS CPU` (its CPU
    seconds since the previous report; then `last` if it exits after this command) and, between
    commands, ignores the signals a caller passes on (a late one is for a command that has
    ended). It exits at the end of its socket, when a command ends the process (Ctrl-C, the hard
    time bound), or when it retires."""
    import gc
    import resource

    from .. import methodcache

    code = 0
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {getattr(signal, n) for n in IDLE_SIGNALS})   # (already: _fork)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _idle()
        reported = _cpu()
        for served in range(1, WORKER_COMMANDS + 1):
            got = _receive(sock)
            if got is None:
                break
            req, fds = got
            status = _run(fds, req, goes_on=True)       # (it closes the streams it was handed)
            _release()
            now = _cpu()
            # (an interrupted command - Ctrl-C, status 128 + signal - may have stopped anywhere,
            # a cache half filled: its worker takes no other; the server hears that it exits)
            last = served == WORKER_COMMANDS or not 0 <= status < 128 or \
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > WORKER_MAX_RSS_KB
            sock.sendall(f"done {2 if status < 0 else status} {now - reported:.6f}{' last' if last else ''}\n".encode())
            reported = now
            if last:
                break
            gc.collect()        # (the test's Z3 context, if a cycle holds it)
            methodcache.save()  # (what the command compiled, as a forked command saves it as it ends)
    except BaseException:       # noqa: BLE001 - the worker ends; a fresh fork serves the next request
        code = 1
    finally:
        os._exit(code)


def _idle() -> None:
    """Between commands: the signals a caller passes on ignored, and those held since the last
    command ended dropped (ignoring a pending signal discards it), then unblocked, so that one
    passed on late is dropped as it comes (a blocked one would be held, even ignored, and reach
    the next command)."""
    for name in IDLE_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {getattr(signal, n) for n in IDLE_SIGNALS})


def _release() -> None:
    """After a command in the worker: nothing of its caller held (standard streams on /dev/null:
    a reader of the caller's output sees its end when the caller exits), signals as between
    commands."""
    _flush()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for name in ("SIGALRM", "SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _idle()


def _send(sock: socket.socket, req: dict, fds: list[int]) -> None:
    """Hand the idle worker a request and its caller's standard streams (it is reading)."""
    data = marshal.dumps(req)
    data = len(data).to_bytes(8, "big") + data
    sock.setblocking(True)
    try:
        sent = socket.send_fds(sock, [data], fds)
        sock.sendall(data[sent:])
    finally:
        sock.setblocking(False)


def _receive(sock: socket.socket) -> tuple[dict, list[int]] | None:
    """A request and its three standard streams from the server, or None at the end."""
    data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
    if len(data) < 8:
        for fd in fds:
            os.close(fd)
        return None
    size = int.from_bytes(data[:8], "big")
    data = data[8:]
    while len(data) < size:
        more = sock.recv(size - len(data))
        if not more:
            return None
        data += more
    return marshal.loads(data), fds


def _same_limits(rlimits: dict) -> bool:
    """Are the caller's resource limits this process's own (nothing for the worker to set)?"""
    import resource

    return all(resource.getrlimit(getattr(resource, name)) == tuple(limit) for name, limit in rlimits.items())


def _flush() -> bool:
    ok = True
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except (OSError, ValueError):
            ok = False
    return ok


def _server_env(environ) -> dict:
    """The detached server's environment: the caller's, with glibc's malloc asked to back its
    heap with transparent huge pages (glibc 2.35+; ignored elsewhere). A command that builds a
    Z3 context fills ~16 MB of fresh memory in its fork, one page fault per 4 KB page otherwise
    (half the faults, ~10 ms less CPU for a 4-thread SB test on this project's virtual machine,
    bench/RESULTS.md). Not part of the key: it changes no output, and the forked command runs in
    the caller's own environment."""
    env = dict(environ)
    tunables = env.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb" not in tunables:
        env["GLIBC_TUNABLES"] = ":".join(filter(None, (tunables, "glibc.malloc.hugetlb=1")))
    return env


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
    ap.add_argument("--log", help="append one JSON line per event (served, stale, refused, idle, stop, "
                    "terminate, interrupted, failed) to this file")
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
                         start_new_session=True, env=_server_env(os.environ))    # (`-m` finds this package)
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
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:                                # (from the bind: a signal once the socket is there is noted)
        if not server.bind():
            print(f"a server already answers at {server.path}")
            return 0
        server.serve()
    except KeyboardInterrupt:           # Ctrl-C to the server itself (its terminal or process group)
        server.note(event="interrupted")
        raise
    except Exception:                   # a defect: the log says why the server stopped serving
        import traceback

        server.note(event="failed", error=traceback.format_exc())
        raise
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
