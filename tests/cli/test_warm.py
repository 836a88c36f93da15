"""The warm server (checker.warm, off unless PTXMC_WARM is set): a command it serves writes the
same bytes on stdout and stderr and exits with the same status as the one-shot command, and a
server whose code or model changed on disk serves nothing (the caller runs the command itself,
with the new code). Real processes throughout: a server, and `ptxmc` entries as users run them (and
one test of the server's bookkeeping of its worker, in this process)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checker.resources import ROOT

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not sys.platform.startswith("linux"),
                                reason="the warm server forks and passes file descriptors (Linux)")

SB = "litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster"
MP = "litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster"
ENTRY = "from checker.warm.client import entry; entry()"
BAD = """\
name: Bad
source: "tests/cli/test_warm.py"
threads:
  P0:
    at: gpu0.cta0
    code: ['st.frobnicate.global [x], 1']
"""


def _env(root: Path, folder: Path, warm: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PTXMC_", "PYTHON"))}
    env.update(PYTHONPATH=str(root), PTXMC_WARM_DIR=str(folder), PTXMC_CACHE_DIR=str(folder / "cache"))
    if warm:
        env["PTXMC_WARM"] = "1"
    return env


class Server:
    """A server started from `root` (a package tree), serving from `folder`."""

    def __init__(self, root: Path, folder: Path, preexec=None):
        self.root, self.folder, self.log = root, folder, folder / "log.jsonl"
        folder.mkdir(mode=0o700, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-m", "checker.warm.server", "--log", str(self.log),
                                      "--idle", "600"], cwd=root, env=_env(root, folder, False),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=preexec)
        for _ in range(6000):       # polls (a safety net, not a time bound): it imports the checker first
            if list(folder.glob("*.sock")) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        assert list(folder.glob("*.sock")), self.proc.stderr.read().decode() if self.proc.poll() is not None else ""

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def tree(tmp_path):
    """A copy of the package and its models, to change under a running server."""
    root = tmp_path / "tree"
    shutil.copytree(ROOT / "checker", root / "checker", ignore=shutil.ignore_patterns("__pycache__", "axioms", "litmus"))
    shutil.copytree(ROOT / "axioms", root / "axioms")
    shutil.copytree(ROOT / "litmus" / "core", root / "litmus" / "core")
    return root


def ptxmc(root: Path, folder: Path, argv: list[str], warm: bool, cwd: Path | None = None):
    r = subprocess.run([sys.executable, "-c", ENTRY, *argv], cwd=cwd or root, env=_env(root, folder, warm),
                       capture_output=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def test_a_served_command_writes_what_the_one_shot_command_writes(tmp_path):
    folder = tmp_path / "warm"
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    cases = [["outcomes", SB], ["outcomes", MP, "--engine", "z3"], ["check", MP, "P1:r0=1 /\\ P1:r1=0"],
             ["check", MP, "P1:r0=1 /\\ P1:r1=0", "--expect", "allowed"], ["check", SB, "P0:r0=0 /\\ P1:r0=0"],
             ["outcomes", str(bad)], ["outcomes", "no/such/file.yaml"], ["check", MP], ["outcomes", "--help"]]
    server = Server(ROOT, folder)
    try:
        for argv in cases:
            one_shot = ptxmc(ROOT, folder, argv, warm=False, cwd=tmp_path)
            served = ptxmc(ROOT, folder, argv, warm=True, cwd=tmp_path)
            assert served == one_shot, argv
        statuses = {c[0] for c in (ptxmc(ROOT, folder, a, warm=False, cwd=tmp_path) for a in cases)}
        assert statuses >= {0, 1, 2}            # successes, failed expectations, usage errors among them
        served_events = [e for e in server.events() if e["event"] == "served"]
        assert [e["argv"] for e in served_events] == cases      # each was run by the server, not here
    finally:
        server.stop()


def test_a_changed_source_file_is_not_served(tree, tmp_path):
    folder = tmp_path / "warm"
    server = Server(tree, folder)
    try:
        before = ptxmc(tree, folder, ["outcomes", SB], warm=True)
        assert before[0] == 0 and b"\nStates 3\n" in before[1]
        os.utime(tree / "checker" / "cli.py")               # touched, not changed: still current
        assert ptxmc(tree, folder, ["outcomes", SB], warm=True) == before
        assert [e["event"] for e in server.events()] == ["served", "served"]
        cli = tree / "checker" / "cli.py"
        cli.write_text(cli.read_text().replace('f"States {len(r.outcomes)}"', 'f"States: {len(r.outcomes)}"'))
        after = ptxmc(tree, folder, ["outcomes", SB], warm=True)
        assert after[0] == 0 and b"\nStates: 3\n" in after[1]      # the new code's answer
        assert after == ptxmc(tree, folder, ["outcomes", SB], warm=False)
        events = server.events()
        assert events[2]["event"] == "stale" and events[2]["changed"].endswith("cli.py")
        assert server.proc.wait(60) == 0 and not list(folder.glob("*.sock"))   # it ended and left no socket
    finally:
        server.stop()


def test_a_changed_model_is_not_served(tree, tmp_path):
    folder = tmp_path / "warm"
    server = Server(tree, folder)
    try:
        before = ptxmc(tree, folder, ["outcomes", SB], warm=True)
        assert b"\nStates 3\n" in before[1]
        cat = tree / "axioms" / "ptx.cat"
        text = cat.read_text()
        assert "irreflexive (fence_sc ; cause_fence) as FenceSC" in text
        cat.write_text(text.replace("irreflexive (fence_sc ; cause_fence) as FenceSC", "(* dropped *)")
                       .replace("empty ((([F & SC]; ms; [F & SC]) \\ id) \\ (fsc | fsc^-1)) as FenceSC", "(* dropped *)"))
        after = ptxmc(tree, folder, ["outcomes", SB], warm=True)
        assert after[0] == 0 and b"\nStates 4\n" in after[1]       # SB's forbidden outcome, now allowed
        assert after == ptxmc(tree, folder, ["outcomes", SB], warm=False)
        assert [e["event"] for e in server.events()] == ["served", "stale"]
        assert server.events()[1]["changed"].endswith("ptx.cat")
    finally:
        server.stop()


def test_another_environment_is_not_served(tmp_path):
    """A variable the checker reads as it starts (PTXMC_*, PYTHON*, the locale) is part of the key:
    a caller with another value finds no server, and runs the command itself."""
    folder = tmp_path / "warm"
    server = Server(ROOT, folder)
    try:
        env = {**_env(ROOT, folder, True), "PTXMC_DEBUG": "1"}
        r = subprocess.run([sys.executable, "-c", ENTRY, "outcomes", SB], cwd=tmp_path, env=env, capture_output=True,
                           timeout=300)
        assert r.returncode == 0 and b"\nStates 3\n" in r.stdout
        assert server.events() == []
    finally:
        server.stop()


def test_the_key_does_not_depend_on_what_the_process_imported(tmp_path):
    """The key is the same bytes in a process that imported the whole checker (the server) and in
    one that imported almost nothing (the `ptxmc` script): marshal's output shares an object held
    elsewhere by reference, so what else the process held changed the bytes, the socket's name
    with them, and a `ptxmc` that imports no `re` found no server."""
    code = "import sys\n{}\nfrom checker.warm.key import caller_key\nsys.stdout.write(caller_key().hex())"
    env = {**_env(ROOT, tmp_path, True), "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    keys = [subprocess.run([sys.executable, "-S", "-c", code.format(pre)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300).stdout
            for pre in ("", "import checker.warm.server", "import re, checker.cli")]
    assert keys[0] and keys[0] == keys[1] == keys[2]


def test_the_ptxmc_script_is_served(tmp_path):
    """bin/ptxmc, the executable pip installs (run here by this interpreter, as its shebang names
    it once installed), is served warm and writes what it writes one-shot."""
    folder = tmp_path / "warm"
    server = Server(ROOT, folder)
    try:
        out = []
        for warm in (False, True):
            r = subprocess.run([sys.executable, str(ROOT / "bin" / "ptxmc"), "outcomes", SB], cwd=tmp_path,
                               env=_env(ROOT, folder, warm), capture_output=True, timeout=300)
            out.append((r.returncode, r.stdout, r.stderr))
        assert out[0] == out[1] and out[0][0] == 0 and b"\nStates 3\n" in out[0][1]
        assert [e["argv"] for e in server.events() if e["event"] == "served"] == [["outcomes", SB]]
    finally:
        server.stop()


def test_the_client_imports_nothing_of_the_checker_before_it_is_served(tmp_path):
    """Served, the `ptxmc` process itself imports no checker module beyond checker.warm (the
    point of the server), and of the standard library only modules written in C (not `signal`
    or `socket`, whose enums cost ~5 ms); with PTXMC_WARM unset it is the one-shot command."""
    folder = tmp_path / "warm"
    server = Server(ROOT, folder)
    probe = ("import sys\nbefore = set(sys.modules)\nfrom checker.warm.client import served\n"
             "code = served(sys.argv[1:])\nnew = sorted(set(sys.modules) - before)\n"
             "print(code, [m for m in new if m.startswith('checker')], file=sys.stderr)\n"
             "print([m for m in new if not m.startswith('checker') and m != '__future__' and "
             "str(getattr(sys.modules[m], '__file__', '')).endswith('.py')], file=sys.stderr)")
    try:
        r = subprocess.run([sys.executable, "-c", probe, "outcomes", SB], cwd=tmp_path,
                           env=_env(ROOT, folder, True), capture_output=True, text=True, timeout=300)
        code, mods = r.stderr.strip().splitlines()[-2].split(" ", 1)
        assert code == "0" and "States 3" in r.stdout
        assert eval(mods) == ["checker", "checker.version", "checker.warm", "checker.warm.client", "checker.warm.key"]
        assert eval(r.stderr.strip().splitlines()[-1]) == []
    finally:
        server.stop()


def test_resource_limits_the_server_cannot_give_are_not_served(tmp_path):
    """The command runs under the caller's resource limits: a caller whose hard limit is below the
    server's is served (the fork lowers its own), one whose hard limit is above it is not."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 512:
        pytest.skip("the open-files limit is already low here")
    folder = tmp_path / "warm"
    server = Server(ROOT, folder, preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (400, 400)))

    def run(limit):
        return subprocess.run([sys.executable, "-c", ENTRY, "outcomes", SB], cwd=tmp_path, env=_env(ROOT, folder, True),
                              capture_output=True, timeout=300,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
    try:
        lower, higher = run(300), run(500)
        assert lower.returncode == higher.returncode == 0 and lower.stdout == higher.stdout
        assert [e["event"] for e in server.events()] == ["served", "refused"]
    finally:
        server.stop()


def _fifo_test(tmp_path: Path) -> Path:
    """A test file that is a FIFO: a command reading it waits until the test writes the text."""
    fifo = tmp_path / "held.yaml"
    os.mkfifo(fifo)
    return fifo


def _release(fifo: Path) -> None:
    with open(fifo, "w") as f:          # (blocks until the command opens it)
        f.write((ROOT / "litmus" / "core" / "SB.yaml").read_text())


def _client(folder: Path, argv: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", ENTRY, *argv], cwd=cwd, env=_env(ROOT, folder, True),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _served(server: Server, count: int) -> list[dict]:
    for _ in range(6000):               # polls (a safety net): the server notes each command's end
        events = [e for e in server.events() if e["event"] == "served"]
        if len(events) >= count:
            return events
        time.sleep(0.05)
    raise AssertionError(server.events())


def test_commands_run_side_by_side_and_a_stop_waits_for_them(tmp_path):
    """One command waits on its input while another is served; a stop request ends the server's
    listening at once, but the waiting command still runs to its end and its caller hears its
    status (the server answers every command it started)."""
    folder = tmp_path / "warm"
    fifo = _fifo_test(tmp_path)
    server = Server(ROOT, folder)
    try:
        held = _client(folder, ["outcomes", f"{fifo}::SB+fence.sc.gpu+sameCluster"], tmp_path)
        other = ptxmc(ROOT, folder, ["outcomes", MP], warm=True, cwd=tmp_path)
        assert other == ptxmc(ROOT, folder, ["outcomes", MP], warm=False, cwd=tmp_path)
        assert held.poll() is None
        stop = subprocess.run([sys.executable, "-m", "checker.warm.server", "--stop"], cwd=tmp_path,
                              env=_env(ROOT, folder, False), capture_output=True, text=True, timeout=300)
        assert stop.stdout.startswith("stopped")
        assert not list(folder.glob("*.sock"))          # a fresh server could start now
        _release(fifo)
        out, err = held.communicate(timeout=300)
        one_shot = ptxmc(ROOT, folder, ["outcomes", SB], warm=False, cwd=tmp_path)
        assert (held.returncode, out, err) == one_shot         # (the output names the test, not its file)
        assert server.proc.wait(60) == 0
        assert [e["event"] for e in server.events()] == ["served", "stop", "served"]
    finally:
        server.stop()


def test_a_command_whose_caller_went_away_is_killed(tmp_path):
    folder = tmp_path / "warm"
    fifo = _fifo_test(tmp_path)
    server = Server(ROOT, folder)
    try:
        held = _client(folder, ["outcomes", f"{fifo}::SB+fence.sc.gpu+sameCluster"], tmp_path)
        for _ in range(6000):           # polls (a safety net): until the command runs, waiting on the FIFO
            if any(os.path.exists(f"/proc/{p}/fd") and _reads(p, fifo) for p in _children(server.proc.pid)):
                break
            time.sleep(0.05)
        held.kill()
        held.wait(60)
        events = _served(server, 1)
        assert events[0]["answer"] == f"signal {int(signal.SIGKILL)}"
        assert ptxmc(ROOT, folder, ["outcomes", SB], warm=True, cwd=tmp_path)[0] == 0    # it serves on
        assert len(_served(server, 2)) == 2
    finally:
        server.stop()


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _reads(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def test_a_file_added_to_the_package_is_stale_and_others_are_not(tree, tmp_path):
    """A module added to the package (a lazy import could reach it) makes the server stale; a file
    that is no source (a note beside the code, byte code) does not."""
    folder = tmp_path / "warm"
    server = Server(tree, folder)
    try:
        before = ptxmc(tree, folder, ["outcomes", SB], warm=True)
        (tree / "checker" / "engines" / "NOTES.txt").write_text("not code\n")
        (tree / "checker" / "engines" / "__pycache__").mkdir(exist_ok=True)
        assert ptxmc(tree, folder, ["outcomes", SB], warm=True) == before
        (tree / "checker" / "engines" / "extra.py").write_text('"""A new module."""\n')
        assert ptxmc(tree, folder, ["outcomes", SB], warm=True) == before      # run one-shot
        events = server.events()
        assert [e["event"] for e in events] == ["served", "served", "stale"]
        assert events[2]["changed"].startswith(str(tree / "checker" / "engines"))
    finally:
        server.stop()


def test_z3_commands_with_their_own_z3_parameters_are_served_as_one_shot(tmp_path):
    """Commands that use Z3, one with another memory limit (a Z3 global parameter, set in the
    forked command), write what they write one-shot."""
    folder = tmp_path / "warm"
    server = Server(ROOT, folder)
    try:
        for argv in (["outcomes", SB, "--engine", "z3"], ["outcomes", SB, "--engine", "z3", "--limit", "memory=3000"],
                     ["check", SB, "P0:r0=0 /\\ P1:r0=0", "--engine", "z3"]):
            assert ptxmc(ROOT, folder, argv, warm=True, cwd=tmp_path) == \
                ptxmc(ROOT, folder, argv, warm=False, cwd=tmp_path), argv
        assert len(_served(server, 3)) == 3
    finally:
        server.stop()


def test_sigterm_waits_for_a_running_command_and_a_second_one_does_not(tmp_path):
    folder = tmp_path / "warm"
    fifo = _fifo_test(tmp_path)
    server = Server(ROOT, folder)
    try:
        held = _client(folder, ["outcomes", f"{fifo}::SB+fence.sc.gpu+sameCluster"], tmp_path)
        for _ in range(6000):           # polls (a safety net): until the command runs, waiting on the FIFO
            if any(_reads(p, fifo) for p in _children(server.proc.pid)):
                break
            time.sleep(0.05)
        server.proc.send_signal(signal.SIGTERM)
        for _ in range(6000):           # polls (a safety net): the socket goes at once
            if not list(folder.glob("*.sock")):
                break
            time.sleep(0.05)
        assert not list(folder.glob("*.sock")) and server.proc.poll() is None     # still answering its command
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(60) == 0
        _release(fifo)                   # the command (no longer the server's) ends; its caller is told
        out, err = held.communicate(timeout=300)
        assert held.returncode == 2 and b"the warm server went away" in err
        assert [e["event"] for e in server.events()] == ["terminate"]
    finally:
        server.stop()


def test_the_detached_server_keeps_the_callers_glibc_tunables_and_adds_huge_pages():
    from checker.warm.server import _server_env

    assert _server_env({"A": "1"}) == {"A": "1", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    assert _server_env({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})["GLIBC_TUNABLES"] == \
        "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    assert _server_env({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"})["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=0"


def test_commands_one_after_another_run_in_one_worker_and_write_what_one_shot_commands_write(tmp_path):
    """The server hands each command to its worker, one process that runs one after another (a
    fresh fork of the server per command pays ~10-20 ms of page faults: bench/RESULTS.md); what
    each writes, and its status, are the one-shot command's, whatever ran before it in the
    worker - Z3 and brute force, checks with witnesses, errors - and the same command again
    writes the same bytes."""
    folder = tmp_path / "warm"
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    cases = [["outcomes", SB, "--engine", "z3"], ["check", MP, "P1:r0=1 /\\ P1:r1=0"], ["outcomes", str(bad)],
             ["check", SB, "P0:r0=0 /\\ P1:r0=0", "--engine", "z3"], ["outcomes", MP],
             ["outcomes", "litmus/core/IRIW.yaml", "--engine", "z3"], ["outcomes", SB, "--engine", "z3"],
             ["check", MP, "P1:r0=1 /\\ P1:r1=0"], ["outcomes", "no/such/file.yaml"]]
    server = Server(ROOT, folder)
    try:
        one_shot = [ptxmc(ROOT, folder, argv, warm=False) for argv in cases]
        served = [ptxmc(ROOT, folder, argv, warm=True) for argv in cases]
        for argv, a, b in zip(cases, served, one_shot):
            assert a == b, argv
        events = _served(server, len(cases))
        assert [e["argv"] for e in events] == cases
        assert len({e["pid"] for e in events}) == 1           # one worker ran them all
    finally:
        server.stop()


def test_a_reader_of_a_served_commands_output_sees_its_end(tmp_path):
    """The worker holds no caller's streams once its command has ended (nor does it keep those
    of the request it was made for): `ptxmc outcomes ... | reader` ends when ptxmc does."""
    folder = tmp_path / "warm"
    server = Server(ROOT, folder)
    try:
        for _ in range(2):
            reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            client = subprocess.Popen([sys.executable, "-c", ENTRY, "outcomes", SB], cwd=ROOT,
                                      env=_env(ROOT, folder, True), stdout=reader.stdin, stderr=subprocess.PIPE)
            reader.stdin.close()            # (the client and the command hold its input now)
            reader.stdin = None
            assert client.wait(300) == 0
            out, _ = reader.communicate(timeout=60)     # (the pipe's end: nobody holds it any more)
            assert out == ptxmc(ROOT, folder, ["outcomes", SB], warm=False)[1]
        assert len(_served(server, 2)) == 2
    finally:
        server.stop()


def test_ctrl_c_ends_a_command_in_the_worker_and_a_late_signal_is_ignored(tmp_path):
    """Ctrl-C on the caller ends its command as it ends the one-shot command (status 130), and
    the worker with it; the next command gets a fresh worker. A signal the caller passes on after
    its command ended reaches an idle worker, which ignores it and serves the next command."""
    folder = tmp_path / "warm"
    fifo = _fifo_test(tmp_path)
    server = Server(ROOT, folder)
    try:
        held = _client(folder, ["outcomes", f"{fifo}::SB+fence.sc.gpu+sameCluster"], tmp_path)
        for _ in range(6000):           # polls (a safety net): until the command runs, waiting on the FIFO
            if any(_reads(p, fifo) for p in _children(server.proc.pid)):
                break
            time.sleep(0.05)
        held.send_signal(signal.SIGINT)
        _, err = held.communicate(timeout=300)
        assert held.returncode == 130 and err == b"ptxmc: interrupted\n"
        first = _served(server, 1)[0]
        # (The interrupted worker retires as its caller exits; a server that saw both in one round
        # of its loop, the worker's end first, died: every later caller ran its command itself.
        # test_a_worker_that_ends_as_its_last_caller_exits_leaves_the_server_serving makes that
        # order certain.)
        assert ptxmc(ROOT, folder, ["outcomes", SB], warm=True, cwd=tmp_path)[0] == 0
        assert server.proc.poll() is None, server.events()
        second = _served(server, 2)[1]
        assert second["pid"] != first["pid"]
        os.kill(second["pid"], signal.SIGINT)       # late: its command has ended
        assert ptxmc(ROOT, folder, ["outcomes", SB], warm=True, cwd=tmp_path) == \
            ptxmc(ROOT, folder, ["outcomes", SB], warm=False, cwd=tmp_path)
        assert _served(server, 3)[2]["pid"] == second["pid"]
    finally:
        server.stop()


# A caller that holds on: it asks the server to run ARGV (checker.warm.client's request) and
# writes, on the first fd of $HOLD_FDS, `sent` once its request is sent, then the command's pid
# and the server's answer (`gone` if none came); it exits once the second fd is readable.
HOLDING = """\
import os, sys
from checker.warm import client
out, into = (int(x) for x in os.environ["HOLD_FDS"].split())
readline = client._Lines.readline

def first(self):
    os.write(out, b"sent\\n")
    client._Lines.readline = readline
    return readline(self)

def wait(f, pid):
    os.write(out, b"%d\\n" % pid)
    os.write(out, f.readline() or b"gone\\n")
    os.read(into, 1)
    return 0

client._Lines.readline = first
client._wait = wait
sys.exit(0 if client.served(sys.argv[1:]) == 0 else 3)
"""


class _Holding:
    """A caller that holds on (HOLDING): its lines, and its exit when the test says."""

    def __init__(self, folder: Path, argv: list[str], cwd: Path, preexec=None):
        out_r, out_w = os.pipe()
        in_r, self.go = os.pipe()
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDING, *argv], cwd=cwd,
                                     env={**_env(ROOT, folder, True), "HOLD_FDS": f"{out_w} {in_r}"},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(out_w, in_r),
                                     preexec_fn=preexec)
        os.close(out_w)
        os.close(in_r)
        self.lines = os.fdopen(out_r, "rb")

    def line(self) -> bytes:
        return self.lines.readline()

    def served(self) -> int:
        """The command's pid, once the request is sent and the server has answered `run`."""
        assert self.line() == b"sent\n"
        return int(self.line())

    def exit(self) -> int:
        os.write(self.go, b"x")
        return self.proc.wait(300)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.lines.close()
        os.close(self.go)


def _fds(pid: int) -> list[str]:
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return out


def _until(condition, what: str) -> None:
    for _ in range(6000):               # polls (a safety net, not a time bound)
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(what)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def _hold(server: Server) -> socket.socket:
    """A connection that sends nothing, once the server has taken it: until it is closed the
    server waits for its request, and what happens meanwhile reaches the server's loop together,
    in the order it happened (the kernel reports ready files in that order)."""
    before = len(_fds(server.proc.pid))
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    held.connect(str(next(server.folder.glob("*.sock"))))
    _until(lambda: len(_fds(server.proc.pid)) > before, "the server takes the connection")
    return held


def _serves_on(server: Server, tmp_path: Path, count: int) -> None:
    assert ptxmc(ROOT, server.folder, ["outcomes", SB], warm=True, cwd=tmp_path)[0] == 0
    assert server.proc.poll() is None, server.proc.stderr.read().decode()[-2000:]
    assert len(_served(server, count)) == count


def _pidfds() -> None:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        pytest.skip("no pidfd here: the worker retires after each command, watching no caller")


# The server's loop handles the events of one round in turn; an event whose file an earlier one
# in the round stopped watching was handled as if it were still watched, and the server died
# (nothing noted; every later caller ran its command itself). Each test below holds the server
# while two things happen, then checks that it serves on. Each failed before the fix.

def test_a_worker_that_ends_as_its_last_caller_exits_leaves_the_server_serving(tmp_path):
    """The worker's end, then the exit of the caller it served last: the worker is forgotten with
    the watch on its caller, and the caller's exit must not be handled (AttributeError). This is
    the Ctrl-C test under load: an interrupted worker retires as its caller exits."""
    _pidfds()
    folder = tmp_path / "warm"
    server = Server(ROOT, folder)
    caller = _Holding(folder, ["outcomes", SB], tmp_path)
    held = None
    try:
        worker = caller.served()
        assert caller.line() == b"exit 0\n"
        _until(lambda: any("pidfd" in f for f in _fds(server.proc.pid)), "the server watches the caller")
        held = _hold(server)
        os.kill(worker, signal.SIGKILL)             # (as a worker may end)
        _until(lambda: _state(worker) == "Z", "the worker ends")
        assert caller.exit() == 0
        held.close()
        _serves_on(server, tmp_path, 2)
    finally:
        caller.close()
        if held is not None:
            held.close()
        server.stop()


def test_a_request_and_the_exit_of_the_workers_last_caller_leave_the_server_serving(tmp_path):
    """A request, then the exit of the worker's last caller: taking the request, the server finds
    that caller gone and frees the worker for it, and the exit must not be handled again
    (ValueError). No Ctrl-C: two commands one after the other, the server slow to wake."""
    _pidfds()
    folder = tmp_path / "warm"
    server = Server(ROOT, folder)
    first = _Holding(folder, ["outcomes", SB], tmp_path)
    second = None
    held = None
    try:
        worker = first.served()
        assert first.line() == b"exit 0\n"
        _until(lambda: any("pidfd" in f for f in _fds(server.proc.pid)), "the server watches the caller")
        held = _hold(server)
        second = _Holding(folder, ["outcomes", SB], tmp_path)
        assert second.line() == b"sent\n"
        assert first.exit() == 0
        held.close()
        assert int(second.line()) == worker and second.line() == b"exit 0\n"
        assert second.exit() == 0
        _serves_on(server, tmp_path, 3)
    finally:
        for c in (first, second, held):
            if c is not None:
                c.close()
        server.stop()


def test_a_command_that_ends_as_its_caller_dies_leaves_the_server_serving(tmp_path):
    """A forked command's end, then its caller's death: answering the command's end closes the
    caller's connection, whose end must not be handled (ValueError)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lower = 255 if soft == 256 else 256
    if hard != resource.RLIM_INFINITY and hard < 256:
        pytest.skip("the open-files limit is already low here")
    folder = tmp_path / "warm"
    fifo = _fifo_test(tmp_path)
    server = Server(ROOT, folder)
    # (another soft limit than the server's: the command runs in a fork, not in the worker)
    caller = _Holding(folder, ["outcomes", f"{fifo}::SB+fence.sc.gpu+sameCluster"], tmp_path,
                      preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (lower, hard)))
    held = None
    try:
        command = caller.served()
        _until(lambda: _reads(command, fifo), "the command waits on its input")
        held = _hold(server)
        _release(fifo)
        _until(lambda: _state(command) == "Z", "the command ends")
        caller.proc.kill()
        caller.proc.wait(300)
        held.close()
        _serves_on(server, tmp_path, 2)
    finally:
        caller.close()
        if held is not None:
            held.close()
        server.stop()


def test_a_server_interrupted_itself_says_so(tmp_path):
    """Ctrl-C to the server itself (run in a terminal, or a signal to its process group) ends it
    as it ends any Python program; its log says why it stopped serving (it said nothing)."""
    folder = tmp_path / "warm"
    server = Server(ROOT, folder)
    try:
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(60) != 0
        assert [e["event"] for e in server.events()] == ["interrupted"]
        assert not list(folder.glob("*.sock"))          # (a fresh server may start)
    finally:
        server.stop()


# The server, interrupted the moment its socket file exists (argv: the server's own)
SERVER_INTERRUPTED_AT_BIND = """\
import os, signal, socket, sys
from checker.warm import server
bind = socket.socket.bind
def bound(sock, address):
    bind(sock, address)
    if isinstance(address, str) and address.endswith(".sock"):
        os.kill(os.getpid(), signal.SIGINT)
socket.socket.bind = bound
sys.exit(server.main(sys.argv[1:]))
"""


def test_a_server_interrupted_as_its_socket_appears_removes_it(tmp_path):
    """The window test_a_server_interrupted_itself_says_so meets by chance: a Ctrl-C between the
    socket file's creation and the server's knowing it as its own left the file behind."""
    folder = tmp_path / "warm"
    folder.mkdir(mode=0o700)
    log = folder / "log.jsonl"
    r = subprocess.run([sys.executable, "-c", SERVER_INTERRUPTED_AT_BIND, "--log", str(log), "--idle", "600"],
                       cwd=ROOT, env=_env(ROOT, folder, False), capture_output=True, timeout=300)
    assert r.returncode != 0, r.stderr.decode()
    assert [json.loads(line)["event"] for line in log.read_text().splitlines()] == ["interrupted"]
    assert not list(folder.glob("*.sock"))


# The worker alone (checker.warm.server._worker), in a process of its own, handed requests as the
# server hands them; argv: its socket's fd and the number of commands it takes.
WORKER = """\
import socket, sys
from checker.warm import server
server.WORKER_COMMANDS = int(sys.argv[2])
server._worker(socket.socket(fileno=int(sys.argv[1])))
"""


def _request(folder: Path, argv: list[str], cwd: Path) -> dict:
    import resource

    return {"key": b"", "argv": argv, "cwd": str(cwd), "env": _env(ROOT, folder, False),
            "path": [str(ROOT)] + sys.path[1:], "umask": 0o22, "ignored": [],
            "rlimits": {n: resource.getrlimit(getattr(resource, n)) for n in dir(resource) if n.startswith("RLIMIT_")}}


class _Worker:
    def __init__(self, folder: Path, commands: int, script: str = WORKER, *more: str):
        self.folder = folder
        self.ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.ours.settimeout(300)       # (a safety net)
        self.proc = subprocess.Popen([sys.executable, "-c", script, str(theirs.fileno()), str(commands), *more],
                                     cwd=ROOT, env=_env(ROOT, folder, False), pass_fds=(theirs.fileno(),))
        theirs.close()
        self.lines = self.ours.makefile("rb")

    def send(self, argv: list[str], cwd: Path) -> None:
        import marshal

        data = marshal.dumps(_request(self.folder, argv, cwd))
        streams = [os.open(os.devnull, os.O_RDWR) for _ in range(3)]
        try:
            socket.send_fds(self.ours, [len(data).to_bytes(8, "big") + data], streams)
        finally:
            for fd in streams:
                os.close(fd)

    def done(self) -> list[str]:
        return self.lines.readline().decode().split()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.lines.close()
        self.ours.close()


def test_the_worker_says_which_command_is_its_last(tmp_path):
    """The worker exits after an interrupted command, or after its WORKER_COMMANDS-th: it says so
    with the command's end (`done STATUS CPU last`). It did not, so the server took it for idle
    once that command's caller had exited, and a request handed to it before its end was seen
    was never run: its caller heard `exit 0`, with no output."""
    folder = tmp_path / "warm"
    folder.mkdir(mode=0o700)
    w = _Worker(folder, 2)
    try:
        w.send(["outcomes", SB], tmp_path)
        first = w.done()
        assert first[0] == "done" and first[1] == "0" and first[3:] == []
        w.send(["outcomes", SB], tmp_path)
        second = w.done()
        assert second[:2] == ["done", "0"] and second[3:] == ["last"]
        assert w.proc.wait(300) == 0
    finally:
        w.close()
    fifo = _fifo_test(tmp_path)
    w = _Worker(folder, 3)
    try:
        w.send(["outcomes", f"{fifo}::SB+fence.sc.gpu+sameCluster"], tmp_path)
        _until(lambda: _reads(w.proc.pid, fifo), "the command waits on its input")
        os.kill(w.proc.pid, signal.SIGINT)
        interrupted = w.done()
        assert interrupted[:2] == ["done", "130"] and interrupted[3:] == ["last"]
        assert w.proc.wait(300) == 0
    finally:
        w.close()


def test_a_worker_that_said_last_is_handed_nothing(tmp_path):
    """The server's side: a worker whose command's end says `last` is retired at once; one that
    did not say it takes the next request once that command's caller has exited."""
    import selectors

    from checker.warm import server as warm

    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    for said, state in ((b"", "idle"), (b" last", "retired")):
        srv = warm.Server.__new__(warm.Server)
        srv.log, srv.running, srv.cpu, srv.selector = None, {}, 0.0, selectors.DefaultSelector()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        caller_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            ours.setblocking(False)
            srv.worker = w = warm._Worker(dead.pid, ours)
            w.state = "busy"
            srv.selector.register(ours, selectors.EVENT_READ, "worker")
            srv.running[w.pid] = warm._Running(server_end, ["outcomes", SB], time.monotonic(), dead.pid)
            srv.selector.register(server_end, selectors.EVENT_READ, w.pid)
            theirs.sendall(b"done 0 0.01" + said + b"\n")
            srv._from_worker()
            assert caller_end.recv(64) == b"exit 0\n"           # the command's caller is answered
            assert w.state == state                             # (its caller has exited)
            handed = srv._worker_for(_request(tmp_path, ["outcomes", SB], tmp_path), [])
            assert handed is (w if state == "idle" else None), said
        finally:
            srv.selector.close()
            for s in (ours, theirs, caller_end, server_end):
                s.close()


# The worker with a Ctrl-C passed on to it at one moment: as the set-up, the end of the command or
# the hand-off back to idle calls the function named (argv[3], once).
WORKER_INTERRUPTED_AT = """\
import os, signal, socket, sys
from checker.warm import server
server.WORKER_COMMANDS = int(sys.argv[2])
orig = getattr(server, sys.argv[3])
fired = []
def hooked(*args, **kwargs):
    if not fired:
        fired.append(1)
        os.kill(os.getpid(), signal.SIGINT)
    return orig(*args, **kwargs)
setattr(server, sys.argv[3], hooked)
server._worker(socket.socket(fileno=int(sys.argv[1])))
"""


@pytest.mark.parametrize("at", ["_flush", "_release"])
def test_a_ctrl_c_as_a_command_ends_is_dropped(tmp_path, at):
    """A Ctrl-C the caller passes on as its command ends, after the command's last instruction and
    before the worker ignores signals between commands, raised KeyboardInterrupt in the worker's
    own code: in _run's flush of the output it said "internal error: the warm server could not
    start the command" (exit 2), in the hand-off back to idle the worker died without reporting
    the end (the caller: "the warm server went away", exit 2). The signals a caller passes on are
    blocked from the command's end: the command's status stands, and the worker serves on."""
    folder = tmp_path / "warm"
    folder.mkdir(mode=0o700)
    w = _Worker(folder, 3, WORKER_INTERRUPTED_AT, at)
    try:
        w.send(["outcomes", SB], tmp_path)
        first = w.done()
        assert first[:2] == ["done", "0"] and first[3:] == [], first
        w.send(["outcomes", SB], tmp_path)
        assert w.done()[:2] == ["done", "0"]
    finally:
        w.close()


def test_a_ctrl_c_before_a_command_starts_ends_it_as_it_ends_a_starting_ptxmc(tmp_path):
    """A Ctrl-C passed on while the worker sets the caller's state up (a request just handed to
    it) raised KeyboardInterrupt in that set-up: "internal error: the warm server could not start
    the command" (exit 2). It is held until the command starts, and then ends it as Ctrl-C ends a
    one-shot ptxmc that is starting: by SIGINT (the server passes that on to the caller)."""
    folder = tmp_path / "warm"
    folder.mkdir(mode=0o700)
    w = _Worker(folder, 3, WORKER_INTERRUPTED_AT, "_stream")
    try:
        w.send(["outcomes", SB], tmp_path)
        assert w.done() == []               # no report: it ended
        assert w.proc.wait(300) == -signal.SIGINT
    finally:
        w.close()
