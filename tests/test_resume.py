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

ROOT = Path(__file__).resolve().parent.parent
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
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
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
