"""Reliability (issue 23): output safety, signals, bounds checked first, and the small defects of
the adversarial review, each with the review's reproduction as a regression test.

Most tests drive the real command line in this process (`main([...])`, `--jobs 0`), so that they
are quick; what needs a real process (signals, a full disk, determinism across processes) starts
`python -m checker`. A refusal that must come *before the work* is checked by making the work
itself fail the test (monkeypatched run_tests / report build).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from checker import ROOT
from checker.cli import main

SUITE = Path(__file__).parents[1] / "fuzz" / "suite.yaml"      # six quick tests with settled verdicts

ONE = """name: One
threads:
  P0: {at: gpu0.cta0, code: ["st.global [x], 1"]}
  P1: {at: gpu0.cta1, code: ["ld.global r0, [x]"]}
expect:
  allowed: ['P1:r0=1']
"""


def ptxmc(*args, cwd: Path | None = None) -> tuple[int, str, str]:
    """`ptxmc ARGS` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    env = os.environ.pop("PTXMC_DEBUG", None)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as e:
                code = e.code
    finally:
        os.chdir(old)
        if env is not None:
            os.environ["PTXMC_DEBUG"] = env
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def one(tmp_path) -> Path:
    p = tmp_path / "one.yaml"
    p.write_text(ONE)
    return p


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the checking starts: a refusal must come before the work."""
    import checker.api
    import checker.batch
    import checker.report.build

    def work(*a, **k):
        raise AssertionError("the work started before the output was checked")

    monkeypatch.setattr(checker.batch, "run_tests", work)        # run (imported when it runs)
    monkeypatch.setattr(checker.api, "session", work)            # check, outcomes (in process)
    monkeypatch.setattr(checker.report.build, "build", work)


def refused(code: int, err: str, path, *words: str) -> None:
    assert code == 2, err
    assert err.startswith(f"ptxmc: cannot write {path}: "), err
    assert "internal error" not in err and "Traceback" not in err
    for w in words:
        assert w in err, err


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


# ================================================================= 1. report --out data loss ==

def test_report_out_refuses_a_folder_of_user_files(one, tmp_path, no_work):
    mine = tmp_path / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "thesis.txt").write_text("precious\n")
    (mine / "sub" / "data.csv").write_text("x\n")
    before = tree(mine)
    code, _, err = ptxmc("report", one, "--jobs", "0", "--out", mine)
    refused(code, err, mine, "thesis.txt", "--force")
    assert tree(mine) == before


def test_report_out_refuses_the_input_folder_and_the_current_folder(tmp_path, no_work):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "one.yaml").write_text(ONE)
    code, _, err = ptxmc("report", suite, "--jobs", "0", "--out", suite)
    refused(code, err, suite, "input")
    code, _, err = ptxmc("report", suite / "one.yaml", "--jobs", "0", "--out", tmp_path, "--force")
    refused(code, err, tmp_path)                         # it holds the input (and --force changes nothing)
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("mine\n")
    for out in (work, Path(".")):
        code, _, err = ptxmc("report", suite, "--jobs", "0", "--out", out, "--force", cwd=work)
        refused(code, err, out, "current folder")
    assert (suite / "one.yaml").read_text() == ONE and (work / "notes.txt").read_text() == "mine\n"


def test_report_out_refuses_a_file_and_a_symlink(one, tmp_path, no_work):
    f = tmp_path / "afile"
    f.write_text("keep\n")
    code, _, err = ptxmc("report", one, "--jobs", "0", "--out", f)
    refused(code, err, f, "not a folder")
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    code, _, err = ptxmc("report", one, "--jobs", "0", "--out", link)
    refused(code, err, link, "symbolic link", "--follow-symlinks")
    assert f.read_text() == "keep\n" and link.is_symlink() and sorted(tmp_path.iterdir()) == sorted(
        [f, target, link, one])


def test_report_replaces_an_earlier_report_and_force_writes_beside_user_files(one, tmp_path):
    out = tmp_path / "rep"
    assert ptxmc("report", one, "--jobs", "0", "--no-blame", "--out", out)[0] == 0
    marker = json.loads((out / ".ptxmc-output").read_text())
    assert marker["tool"] == "ptxmc" and marker["kind"] == "report" and "report.json" in marker["files"]
    code, _, err = ptxmc("report", one, "--jobs", "0", "--no-blame", "--out", out)     # ours: replaced
    assert code == 0, err
    (out / "notes.txt").write_text("mine\n")                   # a user file inside the report
    code, _, err = ptxmc("report", one, "--jobs", "0", "--no-blame", "--out", out)
    refused(code, err, out, "notes.txt")
    code, _, err = ptxmc("report", one, "--jobs", "0", "--no-blame", "--out", out, "--force")
    assert code == 0, err
    assert (out / "notes.txt").read_text() == "mine\n" and (out / "report.json").exists()
    # A report written before the marker existed (a ptxmc report.json, nothing else) is ptxmc's too.
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "report.json").write_text(json.dumps({"format": "ptxmc-report", "version": 1}))
    (legacy / "index.html").write_text("old")
    assert ptxmc("report", one, "--jobs", "0", "--no-blame", "--out", legacy)[0] == 0
    assert "One" in (legacy / "index.html").read_text()


# ============================================================ 2. special files and symlinks ==

def _char_device(path: Path) -> bool:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))      # a replica of /dev/null
        return True
    except (PermissionError, OSError):
        return False


def test_outputs_never_replace_a_device_node(one, tmp_path, no_work):
    node = tmp_path / "fakenull"
    if not _char_device(node):
        pytest.skip("mknod needs root")
    for args in (("run", one, "-o", node), ("run", one, "--results-jsonl", node),
                 ("check", one, "P1:r0=1", "--dot", node), ("report", one, "--out", node)):
        code, _, err = ptxmc(*args, "--follow-symlinks")
        refused(code, err, node, "character device")
        assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_outputs_never_write_into_a_fifo(one, tmp_path, no_work):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args in (("run", one, "-o", fifo), ("run", one, "--results-jsonl", fifo)):
        code, _, err = ptxmc(*args)
        refused(code, err, fifo, "FIFO")
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_symlink_outputs_are_refused_unless_followed(one, tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    code, _, err = ptxmc("run", one, "--jobs", "0", "--no-timing", "-o", link)
    refused(code, err, link, "symbolic link")
    assert link.is_symlink() and target.read_text() == "old\n"
    code, _, err = ptxmc("run", one, "--jobs", "0", "--no-timing", "-o", link, "--follow-symlinks")
    assert code == 0, err
    assert link.is_symlink() and "PASS" in target.read_text()       # the link's file, not the link
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    to_fifo = tmp_path / "fakestdout"           # like /dev/stdout -> /proc/self/fd/1 -> a pipe
    to_fifo.symlink_to(fifo)
    code, _, err = ptxmc("run", one, "--jobs", "0", "-o", to_fifo, "--follow-symlinks")
    refused(code, err, to_fifo, "FIFO")
    assert to_fifo.is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ======================================= 9. outputs checked before the work, never "internal" ==

def test_unwritable_outputs_are_refused_before_the_work(one, tmp_path, no_work):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for args, path, why in (
            (("run", one, "-o", afile / "out.txt"), afile / "out.txt", "Not a directory"),
            (("run", one, "-o", tmp_path), tmp_path, "folder"),
            (("run", one, "-o", "/proc/results.txt"), "/proc/results.txt", ""),
            (("run", one, "--results-jsonl", afile / "r.jsonl"), afile / "r.jsonl", ""),
            (("check", one, "P1:r0=1", "--dot", afile / "g.dot"), afile / "g.dot", ""),
            (("report", one, "--out", afile / "rep"), afile / "rep", ""),
            (("report", one, "--out", "/proc/rep"), "/proc/rep", ""),
            (("hw", "gen", one, "-o", afile / "hw"), afile / "hw", ""),
            (("import", tmp_path / "in.litmus", "--from", "herd", "-o", afile / "imp"), afile / "imp", ""),
            (("export", one, "--to", "herd", "-o", afile / "exp"), afile / "exp", "")):
        if args[0] == "import":
            (tmp_path / "in.litmus").write_text("PTX t\n")
        code, out, err = ptxmc(*args)
        refused(code, err, path, why)


def test_a_bad_hardware_file_is_found_before_the_tests_run(one, no_work):
    code, _, err = ptxmc("report", one, "--hw", "/etc/hostname", "--out", "unused")
    assert code == 2 and "internal error" not in err, err


def test_a_full_stdout_is_a_clear_error():
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "checker", "run", "--jobs", "0", str(SUITE)], cwd=ROOT,
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("ptxmc: cannot write <stdout>: No space left on device"), r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr


def test_a_reader_that_goes_away_is_no_error():
    p = subprocess.Popen([sys.executable, "-m", "checker", "run", "--jobs", "0", "--no-timing", str(SUITE)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    p.stdout.close()                          # like `| head -0`: every write meets a closed pipe
    err = p.communicate(timeout=300)[1].decode()
    assert p.returncode == 0, err
    assert "Traceback" not in err and "cannot write" not in err and "internal error" not in err, err


# ====================================================================== 10. inputs as outputs ==

def test_an_output_is_never_an_input(one, tmp_path, no_work):
    for flag in ("-o", "--results-jsonl"):
        code, _, err = ptxmc("run", one, flag, one)
        refused(code, err, one, "one of the inputs")
        assert one.read_text() == ONE
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "t.yaml").write_text(ONE.replace("One", "Two"))
    code, _, err = ptxmc("run", folder, "-o", folder / "t.yaml")       # a file found in an input folder
    refused(code, err, folder / "t.yaml", "one of the inputs")


# ====================================================================== 4. --rlimit determinism ==

def test_rlimit_results_are_identical_run_to_run():
    # The review's reproduction: near an rlimit, three runs of litmus/async gave three JSON files
    # (a 50 ms wall-clock "quick try" chose the solver's path; Multicast+bulk+wait.cta came out
    # pass, pass, UNKNOWN). Now the quick try is an rlimit too: three processes, three hash
    # seeds, one answer. (The two tests of the review that flipped, at its --rlimit 400000.)
    driver = ("import sys\n"
              "from dataclasses import replace\n"
              "from checker import LITMUS_DIR, limits\n"
              "from checker.batch import run_tests\n"
              "from checker.front.litmus import load_file\n"
              "from checker.results.output import to_json\n"
              "names = ('Multicast+bulk+wait.cta', 'RedAsync+two-CTAs')\n"
              "items = [t for f in ('async/multicast.yaml', 'async/st-red-async.yaml')\n"
              "         for t in load_file(LITMUS_DIR / f) if getattr(t, 'name', '') in names]\n"
              "assert len(items) == 2, items\n"
              "lim = replace(limits.DEFAULT, rlimit=400_000)\n"
              "sys.stdout.write(to_json(run_tests(items, None, (), 'z3', jobs=0, lim=lim), timing=False))\n")
    outs = []
    for seed in ("0", "1", "2"):
        r = subprocess.run([sys.executable, "-c", driver], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1] == outs[2]
    assert [x["status"] for x in json.loads(outs[0])["results"]] in (["unknown"] * 2, ["pass"] * 2,
                                                                    ["pass", "unknown"], ["unknown", "pass"])


# =========================================================================== 5. signals ==

def _start(args, tmpdir: Path, env=None) -> subprocess.Popen:
    e = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmpdir), **(env or {})}
    e.pop("PTXMC_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "checker", *map(str, args)], cwd=ROOT, env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _group(pgid: int) -> list[str]:
    """The live (not defunct) processes of a process group."""
    out = []
    for st in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = st.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(st.parent.name)
    return out


def _gone(pgid: int, within: float = 120.0) -> bool:        # a safety net, generous for a busy machine
    end = time.monotonic() + within
    while _group(pgid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _wait_for(path: Path, p: subprocess.Popen, polls: int = 6000) -> None:
    """Poll until `path` exists; the poll count is only a safety net: what is asserted is that
    the file is written."""
    for _ in range(polls):
        if path.exists():
            return
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    assert path.exists(), f"{path} never appeared"


# The hanging test is the suite's last (CoWW): a worker is given it only after this process has
# recorded the test before it, so when the mark appears the five others are in the output. A test
# in the middle was sent ahead to the worker, which started it (and wrote the mark) as soon as it
# had sent the result before, maybe before ptxmc read that result: 3 of 6, or on a loaded
# machine 2 of 6, run.
LAST = "CoWW"


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_act_like_ctrl_c(tmp_path, sig, code):
    # The review: SIGTERM wrote nothing and left a worker at 100% CPU plus the forkserver.
    tmpdir = Path(tempfile.mkdtemp(prefix="ptxmc-"))
    mark, out, stream = tmp_path / "hanging", tmp_path / "out.json", tmp_path / "out.jsonl"
    p = _start(["run", SUITE, "--jobs", "1", "--no-timing", "--format", "json", "-o", out, "--results-jsonl", stream],
               tmpdir, {"PTXMC_TEST_FAULT": f"hang:{LAST}", "PTXMC_TEST_FAULT_MARK": str(mark)})
    try:
        _wait_for(mark, p)
        p.send_signal(sig)                       # to ptxmc only, as `kill` or a CI cancel does
        stdout, stderr = p.communicate(timeout=600)
        assert _gone(p.pid), "a process outlived ptxmc"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == code, stderr
    name = signal.Signals(sig).name
    assert f"ptxmc: interrupted ({name}): 5 of 6 tests run" in stderr and "Traceback" not in stderr
    assert json.loads(out.read_text())["interrupted"] == {"run": 5, "total": 6}
    assert json.loads(stream.read_text().splitlines()[-1])["end"] == {"interrupted": True, "run": 5, "total": 6}
    assert list(tmpdir.iterdir()) == []


def test_sigterm_during_report_writes_the_finished_part(tmp_path):
    tmpdir = Path(tempfile.mkdtemp(prefix="ptxmc-"))
    mark, out = tmp_path / "hanging", tmp_path / "rep"
    p = _start(["report", SUITE, "--jobs", "1", "--no-blame", "--out", out], tmpdir,
               {"PTXMC_TEST_FAULT": f"hang:{LAST}", "PTXMC_TEST_FAULT_MARK": str(mark)})
    try:
        _wait_for(mark, p)
        p.send_signal(signal.SIGTERM)
        _, stderr = p.communicate(timeout=600)
        assert _gone(p.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 143, stderr
    assert json.loads((out / "report.json").read_text())["interrupted"] == {"run": 5, "total": 6}


def test_no_worker_outlives_a_killed_ptxmc(tmp_path):
    # SIGKILL cannot be handled: the worker notices that its parent died and exits by itself.
    tmpdir = Path(tempfile.mkdtemp(prefix="ptxmc-"))
    mark = tmp_path / "hanging"
    p = _start(["run", SUITE, "--jobs", "2"], tmpdir,
               {"PTXMC_TEST_FAULT": "hang:MP+weak", "PTXMC_TEST_FAULT_MARK": str(mark)})
    try:
        _wait_for(mark, p)
        assert len(_group(p.pid)) >= 3                 # ptxmc, the forkserver, workers
        p.kill()
        p.communicate(timeout=600)
        assert _gone(p.pid), "a worker or the forkserver outlived ptxmc"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)


def test_ptxmc_check_leaves_no_defunct_children(tmp_path):
    # The forkserver and the resource tracker were left to exit as orphans: where PID 1 does not
    # reap, every `ptxmc check` left two defunct processes. ptxmc now stops and reaps them.
    script = ("import glob, os, sys\n"
              "from checker.cli import console\n"
              "if __name__ == '__main__':\n"
              "    sys.argv = ['ptxmc', 'check', sys.argv[1], 'P1:r0=1']\n"
              "    try:\n"
              "        console()\n"
              "    finally:\n"
              "        kids = [s for s in glob.glob('/proc/[0-9]*/stat')\n"
              "                if open(s).read().rsplit(')', 1)[1].split()[1] == str(os.getpid())]\n"
              "        print('children', len(kids), file=sys.stderr)\n")
    f = tmp_path / "probe.py"
    f.write_text(script)
    one = tmp_path / "one.yaml"
    one.write_text(ONE)
    tmpdir = Path(tempfile.mkdtemp(prefix="ptxmc-"))
    r = subprocess.run([sys.executable, str(f), str(one)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmpdir)})
    assert r.returncode == 0 and "Allowed" in r.stdout, r.stderr
    assert "children 0" in r.stderr, r.stderr
    assert list(tmpdir.iterdir()) == []


# =============================================================== 6. bounds checked first ==

def _grid(n_threads: int, n_instr: int) -> str:
    lines = ["name: Big", "threads:"]
    for t in range(n_threads):
        lines += [f"  P{t}:", f"    at: gpu0.cta{t}", "    code:"]
        lines += [f"      - st.relaxed.gpu.global [x{t % 8}], {i + 1}" if i % 2 == 0 else
                  f"      - ld.relaxed.gpu.global r{i}, [x{(t + 1) % 8}]" for i in range(n_instr)]
    return "\n".join(lines) + "\n"


def test_the_events_limit_is_checked_while_lowering(tmp_path):
    # 32 threads x 64 instructions: every front-end limit holds, 2056 events. It cost 9 s and
    # 1 GB before the refusal (the O(n^2) relations were built first); with --timeout 1 it was
    # even reported as "timeout". Now it is refused while lowering, with the limit named.
    from checker import limits
    from checker.errors import LimitExceeded
    from checker.front.litmus import load_text
    from checker.isa.registry import lower

    [t] = load_text(_grid(32, 64))
    with pytest.raises(LimitExceeded, match=r"too large: more than 192 events \(limit 192; raise it with "
                                            r"--limit events=N\)"):
        lower(t)                # (how fast it refuses is measured in bench/robustness.py)
    f = tmp_path / "big.yaml"
    f.write_text(_grid(32, 64))
    # --timeout 30, not 1: on a busy machine loading and refusing may take more than a second of
    # wall clock (the refusal while lowering is what lower() above shows)
    code, out, _ = ptxmc("run", f, "--jobs", "0", "--timeout", "30")
    assert code == 1 and "too large: more than 192 events" in out and "timeout" not in out
    with limits.use(limits.DEFAULT):
        pass


def test_the_timeout_counts_lowering_in_this_process(tmp_path, monkeypatch):
    # --jobs 0 has no hard bound: the test's own deadline must cover lowering too.
    from checker.model import builder

    real = builder.Builder.new_event

    def slow(self, *a, **k):
        time.sleep(0.002)
        return real(self, *a, **k)

    monkeypatch.setattr(builder.Builder, "new_event", slow)
    f = tmp_path / "big.yaml"
    f.write_text(_grid(32, 64))
    code, out, _ = ptxmc("run", f, "--jobs", "0", "--timeout", "0.5", "--limit", "events=100000")
    assert code == 1 and "timeout: no answer within 0.5 s" in out, out


# ======================================================== 7, 8, 12. limits raised or abused ==

@pytest.mark.parametrize("args, message", [
    (("--timeout", "inf"), "--timeout inf: must be a finite number"),
    (("--timeout", "nan"), "--timeout nan: must be a finite number"),
    (("--timeout", "1e300"), "--timeout 1e+300: at most 1e+06 seconds"),
    (("--timeout", "0"), "--timeout 0: must be positive"),
    (("--timeout", "-1"), "--timeout -1: must be positive"),
    (("--limit", "timeout=nan"), "--limit timeout=nan: must be a finite number"),
    (("--limit", "timeout=inf"), "--limit timeout=inf: must be a finite number"),
    (("--limit", "yaml_depth=500"), "--limit yaml_depth=500: at most 200"),
    (("--limit", "nesting=1000"), "--limit nesting=1000: at most 200"),
    (("--rlimit", "-1"), "--rlimit -1: must be 0 (none) or positive"),
    (("--jobs", "-3"), "--jobs -3: must be 0 (in this process) or positive"),
])
@pytest.mark.parametrize("command", ["run", "check", "outcomes", "report"])
def test_bad_limits_are_refused_up_front_the_same_way_everywhere(one, command, args, message, no_work):
    if args[0] == "--jobs" and command in ("check", "outcomes"):
        return
    extra = ("P1:r0=1",) if command == "check" else ()
    code, out, err = ptxmc(command, one, *extra, *args)
    assert code == 2 and err.startswith(f"ptxmc: {message}"), (command, err)
    assert "internal error" not in err


def test_jobs_is_capped_and_says_so(one):
    code, out, err = ptxmc("run", one, "--jobs", "99999999999999999999", "--no-timing")
    cap = 2 * (os.cpu_count() or 1)
    assert code == 0, err
    assert f"ptxmc: --jobs 99999999999999999999: using {cap} worker processes" in err


def test_raised_nesting_limits_cannot_crash_a_batch(tmp_path):
    # --limit yaml_depth=1000 on a 100 000-bracket file was an internal RecursionError that lost
    # the good test beside it; now the limit is capped and the deep file alone is "too deep".
    (tmp_path / "base.yaml").write_text(ONE)
    (tmp_path / "deep.yaml").write_text("name: " + "[" * 100_000 + "\n")
    code, out, err = ptxmc("run", tmp_path, "--jobs", "0", "--no-timing", "--limit", "yaml_depth=200")
    assert code == 1 and "PASS      One" in out and "too deeply nested" in out, out + err
    cond = "~" * 200 + "P1:r0=1"
    code, out, err = ptxmc("check", tmp_path / "base.yaml", cond, "--limit", "nesting=200")
    assert code == 0 and "Allowed" in out, err


def test_load_text_turns_a_recursion_error_into_too_deep(monkeypatch):
    from checker.errors import TooLarge
    from checker.front import litmus

    def deep(*a, **k):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(litmus, "_load_text", deep)
    [e] = litmus.load_text(ONE, "t.yaml")
    assert isinstance(e, TooLarge) and str(e).startswith("t.yaml:1: too deeply nested for this machine")


def test_a_deep_suite_folder_is_walked(deep_root):
    # deep_root (tests/conftest.py) is outside pytest's temporary tree, which pytest removes
    # recursively (it failed on 1,100 levels left there), and is removed without recursion.
    p = deep_root
    for _ in range(1100):                     # Path.rglob recursed once per level: RecursionError
        p = p / "d"
        os.mkdir(p)
    (p / "one.yaml").write_text(ONE)
    code, out, err = ptxmc("run", deep_root, "--jobs", "0", "--no-timing")
    assert code == 0 and "PASS      One" in out, err


def test_an_empty_path_is_no_path(tmp_path):
    code, _, err = ptxmc("run", "", cwd=tmp_path)
    assert code == 2 and err.startswith("ptxmc: no such file or folder: ''"), err


# =================================================================== 11. check FILE::NAME ==

def test_check_name_ignores_other_tests_errors(tmp_path):
    text = ONE.replace("One", "A") + "---\n"
    body = ("- " + ONE.replace("One", "A").replace("\n", "\n  ").rstrip() + "\n"
            "- " + ONE.replace("One", "B").replace("st.global", "st.weak.gpu.global").replace("\n", "\n  ").rstrip()
            + "\n")
    f = tmp_path / "A.yaml"                 # the file is named like the test: its errors contain 'A'
    f.write_text(body)
    code, out, err = ptxmc("check", f"{f}::A", "P1:r0=1")
    assert code == 0 and "Allowed" in out, err
    code, out, err = ptxmc("check", f"{f}::B", "P1:r0=1")     # the broken test's own error
    assert code == 4 and ".weak accesses take no scope" in err, err      # 4: malformed (issue 14)
    code, out, err = ptxmc("check", f"{f}::C", "P1:r0=1")
    assert code == 4 and "no test named 'C'" in err and "1 malformed" in err, err
    assert text


def test_check_refuses_conditions_on_unknown_threads_registers_locations(one):
    for cond, why in (("P9:r1=1", "there is no thread P9"), ("P1:r7=1", "P1 has no register r7"),
                      ("zz=1", "'zz' is not a location")):
        code, out, err = ptxmc("check", one, cond)
        assert code == 4 and why in err and out == "", (cond, err)


# ======================================================================= 14. YAML numbers ==

@pytest.mark.parametrize("value, form", [("010", "octal"), ("-007", "octal"), ("190:20:30", "base-60")])
def test_octal_and_sexagesimal_yaml_integers_are_refused(value, form):
    from checker.front.litmus import load_text

    [e] = load_text(ONE.replace("threads:", f"memory: {{x: {value}}}\nthreads:"), "t.yaml")
    assert isinstance(e, Exception) and form in str(e) and str(e).startswith(f"t.yaml:2: '{value}':"), e


# ====================================================================== 15. --option names ==

def test_unknown_options_are_refused_with_the_models_options(one, no_work):
    for command, extra in (("run", ()), ("check", ("P1:r0=1",)), ("outcomes", ()), ("report", ())):
        code, _, err = ptxmc(command, one, *extra, "--option", "strict_cta")
        assert code == 2, err
        assert "--option 'strict_cta': the model ptx.cat has no such option (its options: bulk-group-only, " \
               "commit-cumulative, inval-no-proxy, proxy-fence-any-cta, rmw-rewrite-effect, strict-cta, tensormap-pair)" in err, err


# ========================================================================= 16. FIFO inputs ==

def test_a_fifo_input_does_not_hang_past_the_timeout(tmp_path):
    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)
    code, out, _ = ptxmc("run", fifo, "--jobs", "0", "--timeout", "1")     # returns at all: no hang
    assert code == 1 and "cannot read: no end of input within 1 s" in out, out


# ============================================================== 17. names that forge output ==

@pytest.mark.parametrize("name", ["MP\\u202egnp.exe", "MP\\u200b", "A\\e[41mB", "A\\x07", "A\\x7f", "A\\x85B", "A\\u2028B"])
def test_control_and_bidi_characters_in_names_are_refused(name):
    from checker.errors import LitmusError
    from checker.front.litmus import load_text

    [e] = load_text(ONE.replace("name: One", f'name: "{name}"'), "t.yaml")
    assert isinstance(e, LitmusError) and "control or formatting character" in str(e)
    assert all(ord(c) >= 0x20 and c != "\x7f" for c in str(e)), str(e)


def test_file_names_and_messages_are_escaped_in_text_and_herd_output(tmp_path):
    f = tmp_path / "x\nPASS      forged  (fake.yaml)\n.yaml"
    f.write_text(ONE.replace("st.global", "st.weak.gpu.global"))
    for fmt in ("text", "herd"):
        code, out, _ = ptxmc("run", f, "--jobs", "0", "--no-timing", "--format", fmt)
        assert code == 1
        assert not any(line.startswith("PASS") for line in out.splitlines()), out
        assert "\\x0aPASS" in out


def test_report_md_escapes_html(tmp_path):
    f = tmp_path / "h.yaml"
    f.write_text("- " + ONE.replace("name: One", "name: <script>alert(1)</script>").replace("\n", "\n  ").rstrip()
                 + "\n- " + ONE.replace("st.global [x], 1", "st.global [x], 1 <img src=x onerror=alert(2)>")
                 .replace("\n", "\n  ").rstrip() + "\n")
    out = tmp_path / "rep"
    ptxmc("report", f, "--jobs", "0", "--no-blame", "--out", out)
    md = (out / "report.md").read_text()
    assert "<script>" not in md and "<img" not in md, md
    assert "### &lt;script&gt;alert(1)&lt;/script&gt;" in md and "&lt;img" in md


# ============================================================= 18. hw gen name collisions ==

def test_hw_gen_gives_distinct_tests_distinct_files(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("".join("- " + ONE.replace("One", n).replace("\n", "\n  ").rstrip() + "\n" for n in ("X/Y", "X_Y")))
    out = tmp_path / "hw"
    code, stdout, err = ptxmc("hw", "gen", f, "-o", out)
    assert code == 0, err
    assert "generated 2 program(s)" in stdout
    assert len(list(out.glob("*.cu"))) == 2
    from checker.outsafe import safe_filename

    assert safe_filename("X_Y") == "X_Y" != safe_filename("X/Y")
    assert safe_filename("..") not in ("", ".", "..") and "/" not in safe_filename("../../etc/x")


# ================================================================ 13, 19. report options ==

def test_report_takes_rlimit_limit_and_engine(one, tmp_path):
    out = tmp_path / "rep"
    code, _, err = ptxmc("report", one, "--jobs", "0", "--no-blame", "--out", out, "--rlimit", "0",
                         "--limit", "events=64", "--engine", "brute", "--timeout", "30")
    assert code == 0, err
    doc = json.loads((out / "report.json").read_text())
    assert doc["engine"] == "brute" and doc["tests"][0]["status"] == "pass"


def test_report_hw_does_not_swallow_the_suite_path(one, tmp_path):
    from checker.report.cli import _split_hw

    h = tmp_path / "h.json"
    h.write_text("{}")
    paths, hw = _split_hw([], [str(h), str(tmp_path), str(one)])
    assert paths == [str(tmp_path), str(one)] and hw == [str(h)]


def test_report_dot_names_stay_inside_dot(tmp_path):
    from checker.outsafe import safe_filename

    for name in ("..", ".", "a/b", "../../x"):
        s = safe_filename(name)
        assert "/" not in s and s not in (".", "..") and not s.startswith(".")


def test_outcomes_at_the_cap_names_the_flag(one):
    code, out, _ = ptxmc("outcomes", one, "--limit", "outcomes=1")
    assert code == 0 and "raise it with --limit outcomes=N" in out, out


# ====================================================================================== docs ==

def test_every_command_line_option_is_documented():
    import argparse

    from checker.cli import build_parser

    docs = "".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))

    def options(p, path):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from options(sub, path + [name])
            else:
                yield from ((" ".join(path), o) for o in a.option_strings if o.startswith("--") and o != "--help")

    assert [(c, o) for c, o in options(build_parser(), []) if o not in docs] == []
    for flag in ("--force", "--follow-symlinks", "cannot write", "143", "129", ".ptxmc-output"):
        assert flag in (ROOT / "docs" / "cli.md").read_text(), flag
