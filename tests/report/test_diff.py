"""`ptxmc diff` (checker/compare): one suite under two sides, every verdict that differs, a
witness under the more permissive side, exit codes 0/1/2/3, text and JSON.

The central property: sequential consistency is stronger than PTX, so over a generated suite
`diff --model ptx --model sc` lists only outcomes PTX allows and SC does not, each with a PTX
witness execution that has exactly that outcome, and never one the other way."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from checker.cli import main
from checker.gen.cli import EXIT_OK as GEN_OK

ROOT = Path(__file__).resolve().parents[2]
CYCLES = ("PodWW Rfe PodRR Fre", "PodWR Fre PodWR Fre", "PodRW Rfe PodRW Rfe", "PodWW Rfe PodRW Coe")


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """A generated suite (ptxmc gen --preset generic --size 3, four cycles, gpu scope): MP, SB,
    LB, and S, with every access/fence annotation of the preset."""
    out = tmp_path_factory.mktemp("gen") / "suite"
    argv = ["gen", "--preset", "generic", "--size", "3", "--scopes", "gpu", "-o", str(out)]
    for c in CYCLES:
        argv += ["--cycle", c]
    assert main(argv) == GEN_OK
    return out


def diff_json(tmp_path, *argv) -> tuple[int, dict]:
    out = tmp_path / "diff.json"
    rc = main(["diff", *argv, "--format", "json", "-o", str(out)])
    return rc, json.loads(out.read_text())


def test_sc_is_stronger_than_ptx_on_a_generated_suite(suite, tmp_path):
    rc, doc = diff_json(tmp_path, str(suite), "--model", "ptx", "--model", "sc", "--jobs", "2")
    s = doc["summary"]
    assert s["tests"] == s["run"] > 100 and s["not_compared"] == 0
    assert s["only_right"] == 0                          # nothing SC allows that PTX forbids
    assert s["differ"] > 50 and rc == 1                  # weak annotations: PTX really is weaker
    by_name = {t["name"]: t for t in doc["tests"]}
    for t in doc["tests"]:
        for d in t["differences"]:
            assert d["allowed_by"] == "left" and d["kind"] == "outcome"
            # the witness is a PTX execution whose outcome is exactly the differing one
            last = d["witness"].strip().splitlines()[-1]
            assert set(last.split("outcome: ")[1].split()) == set(d["text"].split())
    # the classic verdicts: weak MP and SB differ; MP with fence.sc on both sides does not
    assert by_name["MP+sameGPU"]["differences"][0]["text"].startswith("P1:r0=1; P1:r1=0;")
    assert any(n.startswith("SB") and t["differences"] for n, t in by_name.items())
    assert by_name["MP+fence.sc.gpus+sameGPU"]["differences"] == []


def test_option_sides_and_text_output(tmp_path, capsys):
    # strict-cta changes nothing for global-memory message passing: no difference, exit 0
    rc = main(["diff", str(ROOT / "litmus/core/MP.yaml"), "--model", "ptx", "--right-option", "strict-cta",
               "--jobs", "0"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "right: ptx +strict-cta" in out and "0 differ" in out and "DIFF" not in out


def test_text_lists_witness_under_the_permissive_side(tmp_path, capsys):
    rc = main(["diff", str(ROOT / "litmus/core/MP.yaml"), "--model", "sc", "--model", "ptx", "--jobs", "0"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "DIFF  MP+shared+relaxed.cta" in out
    assert "allowed by ptx only; witness under ptx:" in out and "allowed by sc only" not in out
    assert "ld.weak.shared r1, [sx]   reads 0" in out


def test_expectation_condition_difference(tmp_path):
    # an expectation's condition that PTX allows (relaxed flag: no synchronization) and SC forbids
    f = tmp_path / "t.yaml"
    f.write_text(
        "- name: MPweak\n  source: test\n  threads:\n"
        "    P0: {at: gpu0.cta0, code: ['st.weak.global [x], 1', 'st.relaxed.gpu.global [f], 1']}\n"
        "    P1: {at: gpu0.cta1, code: ['ld.relaxed.gpu.global r0, [f]', 'ld.weak.global r1, [x]']}\n"
        "  expect: {forbidden: ['P1:r0=1 /\\ P1:r1=0']}\n")
    rc, doc = diff_json(tmp_path, str(f), "--model", "ptx", "--model", "sc", "--jobs", "0")
    kinds = {d["kind"] for d in doc["tests"][0]["differences"]}
    assert rc == 1 and "condition" in kinds
    cond = next(d for d in doc["tests"][0]["differences"] if d["kind"] == "condition")
    assert cond["text"] == "P1:r0=1 /\\ P1:r1=0" and cond["allowed_by"] == "left"
    assert "reads 0" in cond["witness"]


def test_tests_judged_path_by_path_are_compared_with_the_paths_of_the_witness(tmp_path):
    """Control flow and barrier generations decided at run time are compared too (they were 'not
    compared'): PTX is weaker on the guarded tests, never stronger, and each witness names the
    control paths it takes."""
    rc, doc = diff_json(tmp_path, str(ROOT / "litmus/liveness/predicated.yaml"),
                        str(ROOT / "litmus/liveness/quorums.yaml"), "--model", "ptx", "--model", "sc", "--jobs", "0")
    s = doc["summary"]
    assert rc == 1 and s["not_compared"] == 0 and s["only_right"] == 0 and s["differ"] >= 4
    for t in doc["tests"]:
        for d in t["differences"]:
            assert d["allowed_by"] == "left" and "    paths: " in d["witness"]


def test_malformed_test_is_not_compared(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("- name: B\n  source: test\n  threads:\n    P0: {at: gpu0.cta0, code: ['st.bogus [x], 1']}\n")
    rc, doc = diff_json(tmp_path, str(f), "--model", "ptx", "--model", "sc", "--jobs", "0")
    assert rc == 3 and doc["summary"]["not_compared"] == 1 and not doc["tests"][0]["compared"]


@pytest.mark.parametrize("argv", [
    ["--model", "ptx"],                                        # the same side twice
    ["--model", "ptx", "--model", "sc", "--model", "ptx"],    # three sides
    ["--model", "ptx", "--left-option", "no-such-option"],    # an option the model does not read
    ["--model", "ptx", "--model", "sc", "--scheduler", "tcp://127.0.0.1:1"],   # needs --executor dask
])
def test_usage_errors(argv, capsys):
    assert main(["diff", str(ROOT / "litmus/core/MP.yaml"), *argv]) == 2
    assert "ptxmc:" in capsys.readouterr().err
