"""`--limit NAME=VALUE` (with --timeout, --rlimit, --unroll) on `ptxmc audit` and `ptxmc fix`,
from the same helper as `run` and `check` (checker.cliargs.add_limit_options): a test that needs a
raised limit (an extracted skeleton does) is audited and repaired at that limit, and refused with
the limit named without it, as `run` does."""
from __future__ import annotations

import json

from checker.cli import main
from ..audit.test_audit import WS_GEMM

# the WS GEMM shape with 66 instructions in the producer: over the default limit of 64
PAD = "        - st.shared::cta.b32 [b], 119\n"
BIG = WS_GEMM.replace(PAD, PAD + "        - mov.b32 r1, 1\n" * 63)


def test_audit_judges_at_the_raised_limit_in_its_workers(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text(BIG)
    base = ["audit", "tilelang-fence-proxy", str(path), "--reading", "default", "--budget", "60", "--format", "json"]
    assert main(base) == 1
    [t] = json.loads(capsys.readouterr().out)["tests"]
    assert "66 instructions in thread P (limit 64" in t["error"]
    assert main(base + ["--limit", "instructions=128", "--jobs", "1"]) == 0     # judged in a worker process
    [t] = json.loads(capsys.readouterr().out)["tests"]
    [f] = t["findings"]
    assert t["readings"]["default"]["status"] == "findings"
    assert f["kind"] == "under" and "MixedSizeRace" in f["what"] and f["recheck"] == "confirmed"
    assert main(base + ["--limit", "instructions"]) == 2                       # malformed, as run says
    assert "--limit instructions: write NAME=VALUE" in capsys.readouterr().err


def test_fix_repairs_at_the_raised_limit(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text(BIG.replace("        - fence.proxy.async.shared::cta\n", ""))
    assert main(["fix", str(path), "--budget", "60"]) == 1
    assert "66 instructions in thread P (limit 64; raise it with --limit instructions=N)" in capsys.readouterr().err
    assert main(["fix", str(path), "--budget", "60", "--limit", "instructions=128", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "repaired" and "fence.proxy.async" in json.dumps(out["repairs"][0])
    assert main(["fix", str(path), "--limit", "events=0"]) == 2
    assert "--limit events=0" in capsys.readouterr().err
