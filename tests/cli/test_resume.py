"""`ptxmc run --resume FILE.jsonl` (checker/resume.py): a real run interrupted by Ctrl-C is
continued without checking its finished tests again (a fault planted in every finished test would
show it), the stream is continued in place, and the output is byte for byte the uninterrupted
run's; a different model or option reuses nothing; a crashed test is checked again; a cut-off
last line (a killed run) is ignored; a file that is not a stream is refused."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MP = ROOT / "litmus" / "core" / "MP.yaml"
HANG = "MP+rel.gpu+acq.gpu+diffGPU"            # a test late in MP.yaml


def env_with(**extra) -> dict:
    e = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    e.pop("PTXMC_DEBUG", None)
    return e


def ptxmc(*args, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "checker", *args], cwd=ROOT, env=env_with(**extra),
                          capture_output=True, text=True, timeout=300)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def interrupted_run(tmp_path) -> Path:
    """`ptxmc run MP.yaml --jobs 1 --results-jsonl` stopped by Ctrl-C while HANG hangs."""
    stream, mark = tmp_path / "run.jsonl", tmp_path / "hanging"
    p = subprocess.Popen([sys.executable, "-m", "checker", "run", str(MP), "--jobs", "1", "--no-timing",
                          "--results-jsonl", str(stream)], cwd=ROOT,
                         env=env_with(PTXMC_TEST_FAULT=f"hang:{HANG}", PTXMC_TEST_FAULT_MARK=str(mark)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for _ in range(int(300 / 0.05)):   # a poll count, not a clock, is the safety net
            if mark.exists():
                break
            assert p.poll() is None, p.communicate()
            time.sleep(0.05)
        assert mark.exists(), "the run never got there"
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=600)
    finally:
        p.kill()
    assert p.returncode == 130, err
    return stream


def test_resume_skips_the_finished_tests_and_gives_the_same_output(tmp_path):
    stream = interrupted_run(tmp_path)
    recs = records(stream)
    assert recs[-1]["end"]["interrupted"] is True
    finished = [r["name"] for r in recs[:-1]]
    assert 10 < len(finished) < 78 and HANG not in finished
    # every finished test would now fail loudly if it were checked again
    fault = ",".join(f"raise:{n}" for n in finished)
    out = tmp_path / "resumed.json"
    r = ptxmc("run", str(MP), "--jobs", "2", "--no-timing", "--format", "json", "-o", str(out),
              "--resume", str(stream), PTXMC_TEST_FAULT=fault)
    assert r.returncode == 0, r.stderr + out.read_text()[:2000]
    full = tmp_path / "full.json"
    assert ptxmc("run", str(MP), "--jobs", "2", "--no-timing", "--format", "json", "-o", str(full),
                 "--results-jsonl", str(tmp_path / "full.jsonl")).returncode == 0
    assert out.read_bytes() == full.read_bytes()
    # the stream was continued in place: the same lines as an uninterrupted run's, by index
    resumed, whole = records(stream), records(tmp_path / "full.jsonl")
    assert resumed[-1] == whole[-1] == {"end": {"interrupted": False, "run": 78, "total": 78}}
    assert sorted(resumed[:-1], key=lambda x: x["index"]) == sorted(whole[:-1], key=lambda x: x["index"])
    assert [x["name"] for x in resumed[:len(finished)]] == finished      # reused first, as they were


def test_another_model_or_option_reuses_nothing(tmp_path):
    stream = tmp_path / "run.jsonl"
    assert ptxmc("run", str(MP), "--jobs", "2", "--no-timing", "--results-jsonl", str(stream)).returncode == 0
    for extra in (["--model", "sc"], ["--option", "strict-cta"], ["--rlimit", "30000000"]):
        first = sorted(r["name"] for r in records(stream)[:-1])
        r = ptxmc("run", str(MP), "--jobs", "2", "--no-timing", "--resume", str(stream), *extra,
                  PTXMC_TEST_FAULT=f"raise:{first[0]}")
        # the planted fault fires: that test was checked again under the new settings
        assert "internal error: RuntimeError: injected fault" in r.stdout, (extra, r.stdout[-500:])
        stream.write_text("".join(line + "\n" for line in stream.read_text().splitlines()
                                  if first[0] not in line))                   # drop the bad result


def test_crashed_results_and_a_cut_line_are_checked_again(tmp_path):
    stream = tmp_path / "run.jsonl"
    r = ptxmc("run", str(MP), "--jobs", "2", "--no-timing", "--results-jsonl", str(stream),
              PTXMC_TEST_FAULT=f"exit:{HANG}")
    assert r.returncode == 1 and "worker crashed" in r.stdout
    lines = stream.read_text().splitlines()
    cut = lines[:-1]                                        # a run killed mid-line: no end, half a line
    last = next(i for i, line in enumerate(cut) if HANG not in line)
    stream.write_text("\n".join(cut[:last] + cut[last + 1:] + [cut[last][:40]]))
    r = ptxmc("run", str(MP), "--jobs", "2", "--no-timing", "--resume", str(stream))
    assert r.returncode == 0, r.stdout[-2000:]                # the crashed test passes this time
    recs = records(stream)
    assert len(recs) == 79 and recs[-1]["end"]["run"] == 78


def test_not_a_stream_is_refused(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"index": 0, "name": "a", "status": "pass"}\n{"end": {}}\n')
    r = ptxmc("run", str(MP), "--resume", str(f))
    assert r.returncode == 2 and "a result without a key" in r.stderr
    r = ptxmc("run", str(MP), "--resume", str(f), "--results-jsonl", str(tmp_path / "other.jsonl"))
    assert r.returncode == 2 and "--resume FILE continues FILE" in r.stderr


# ---------------------------------------------------------------------- issue 37: D8, D13 --

SB = ROOT / "litmus" / "core" / "SB.yaml"


def test_a_stream_of_another_ptxmc_build_is_not_reused(tmp_path):
    # D8: the key hashed the test, the model, options, engine and limits, not ptxmc's code: a
    # stream written by another build (an older version, a local patch) was reused as if this
    # ptxmc had computed it. The "other build" here is a copy of the package with one comment added.
    import shutil

    other = tmp_path / "other"
    shutil.copytree(ROOT / "checker", other / "checker", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("axioms", "litmus"):
        (other / name).symlink_to(ROOT / name)
    core = other / "checker" / "isa" / "core.py"
    core.write_text(core.read_text() + "\n# a local patch\n")
    stream = tmp_path / "s.jsonl"
    r = subprocess.run([sys.executable, "-m", "checker", "run", str(SB), "--jobs", "0", "--no-timing",
                        "--results-jsonl", str(stream)], cwd=other,
                       env={**env_with(PTXMC_CACHE_DIR="off"), "PYTHONPATH": str(other)},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    first = records(stream)[0]["name"]
    r = ptxmc("run", str(SB), "--jobs", "1", "--no-timing", "--resume", str(stream), PTXMC_TEST_FAULT=f"raise:{first}")
    assert "internal error: RuntimeError: injected fault" in r.stdout, r.stdout[-800:]   # checked again


def _corrupt(tmp_path, change) -> Path:
    stream = tmp_path / "good.jsonl"
    if not stream.exists():
        assert ptxmc("run", str(SB), "--jobs", "0", "--no-timing", "--results-jsonl", str(stream)).returncode == 0
    recs = records(stream)
    change(recs[0])
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return bad


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("observe"), "bad.jsonl:1: not a result ptxmc wrote (no 'observe')"),
    (lambda r: r["conditions"].append({"text": "x", "expected": "allowed", "model": "maybe", "positive": 1,
                                       "negative": 0, "sane": True, "blame": []}), "bad.jsonl:1: not a result ptxmc wrote ('conditions'"),
    (lambda r: r.update(status="error", message=5), "('message' is 5)"),
    (lambda r: r.update(key=["a"]), "('key' is [\"a\"])"),
    (lambda r: r.update(status="bogus"), "('status' is \"bogus\")"),
    (lambda r: r.update(outcomes=[{"x": "nope"}]), "('outcomes' is"),
    (lambda r: r.update(notes="a"), "('notes' is \"a\")"),
    (lambda r: r.update(complete=1), "('complete' is 1)"),
    (lambda r: r.update(observe=[1]), "('observe' is [1])"),
    (lambda r: r.update(undefined=[{"flag": "F", "events": [1], "why": ""}]), "('undefined' is"),
])
def test_a_damaged_stream_line_is_a_located_error(tmp_path, change, message):
    # D13: a record whose key matches but whose fields are missing or mistyped was an internal
    # error (KeyError, AttributeError, TypeError) or was printed as it was (a status BOGUS)
    bad = _corrupt(tmp_path, change)
    before = bad.read_bytes()
    r = ptxmc("run", str(SB), "--jobs", "0", "--no-timing", "--resume", str(bad))
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "internal error" not in r.stderr and "BOGUS" not in r.stdout
    assert bad.read_bytes() == before                       # refused before anything is written


def test_a_deeply_nested_line_is_not_an_internal_error(tmp_path):
    stream = tmp_path / "s.jsonl"
    assert ptxmc("run", str(SB), "--jobs", "0", "--no-timing", "--results-jsonl", str(stream)).returncode == 0
    good = stream.read_text()
    stream.write_text(good + "[" * 200_000 + "\n")           # the last line: cut short by a kill, ignored
    r = ptxmc("run", str(SB), "--jobs", "0", "--no-timing", "--resume", str(stream))
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr
    stream.write_text("[" * 200_000 + "\n" + good)           # not the last line: refused, located
    r = ptxmc("run", str(SB), "--jobs", "0", "--no-timing", "--resume", str(stream))
    assert r.returncode == 2 and "s.jsonl:1: not a ptxmc --results-jsonl line" in r.stderr, r.stderr
