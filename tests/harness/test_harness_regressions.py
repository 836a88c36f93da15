"""Regressions of the hardware harness (issue 36; the rules are in docs/hardware-harness.md) and of
issue 37's harness defects (D10, D11, D13): each test failed before its fix. No GPU needed; the
build test needs nvcc (the `hw` extra) and skips without it."""
from __future__ import annotations

import json
import re

import pytest

from checker import LITMUS_DIR
from checker.cli import main
from checker.errors import HarnessError, LitmusError
from checker.harness import histogram
from checker.harness.codegen import Program, generate, unsupported
from checker.harness.compare import BAD, compare_one
from checker.harness.controls import build_test, controls
from checker.harness.devices import load_device
from checker.harness.litmus7 import parse_log
from checker.harness.static_check import (bulk_group_problems, check_program, prefetch_problems, target_problems,
                                          time_bound_problems)
from checker.harness.toolchain import missing_reason


def _bundled(*names):
    from checker.front.litmus import load_paths
    tests = {t.name: t for t in load_paths([str(LITMUS_DIR)]) if not isinstance(t, LitmusError)}
    return [tests[n] for n in names]


def _with_source(p: Program, source: str) -> Program:
    return Program(p.test, source, p.target, p.space, p.layout, p.config, p.notes)


# -- A1: uncommitted bulk_group copies -------------------------------------------------------------

def test_a1_the_epilogue_commits_bulk_groups_before_waiting_and_the_check_refuses_otherwise():
    (t,) = _bundled("TileLang-store+nofence")
    p = generate(t)
    epi = p.source[p.source.index("// Epilogue"):]
    assert epi.index('"cp.async.bulk.commit_group;"') < epi.index('"cp.async.bulk.wait_group 0;"')
    assert check_program(p) == []
    old = p.source.replace('    asm volatile("cp.async.bulk.commit_group;" ::: "memory");\n', "", 1)
    found = bulk_group_problems(_with_source(p, old))
    assert found and "does not commit bulk groups before it waits" in found[0], found


# -- A2: the harness's tensormap prefetch ----------------------------------------------------------

def test_a2_no_harness_prefetch_where_the_test_acquires_a_tensor_map():
    (acq,) = _bundled("TM-LC+replace.global+release+acquire")       # forbids the stale descriptor
    p = generate(acq)
    assert "prefetch.tensormap" not in p.source and prefetch_problems(p) == []
    assert "fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" in p.source    # the initial maps still acquired
    old = p.source.replace('fence.proxy.tensormap::generic.acquire.gpu [%0], 128;"',
                           'fence.proxy.tensormap::generic.acquire.gpu [%0], 128; prefetch.tensormap [%0];"')
    assert "stale descriptor" in " ".join(prefetch_problems(_with_source(p, old)))
    # a test that never acquires keeps the prefetch, so its stale outcome stays observable (D16)
    (no_acq,) = _bundled("TM-LC+replace.global+release+plain-acquire")     # allows d=10
    assert "prefetch.tensormap" in generate(no_acq).source


# -- B1: the program does not depend on where the test was loaded from ----------------------------

def test_b1_the_source_does_not_embed_the_test_path(tmp_path):
    from dataclasses import replace
    (t,) = _bundled("MP+rel.gpu+acq.gpu+sameCTA")
    a = generate(replace(t, path="/one/checkout/litmus/core/MP.yaml")).source
    b = generate(replace(t, path="litmus/core/MP.yaml")).source
    assert a == b and "/one/checkout" not in a


# -- B3: programs for another target than the device's ---------------------------------------------

def test_b3_tcgen05_programs_are_not_expressible_under_h100_and_the_check_refuses_them():
    from checker.front.litmus import load_paths
    tc = next(t for t in load_paths([str(LITMUS_DIR)]) if not isinstance(t, LitmusError)
              and t.name == "P19-waitst-fixed")
    why = unsupported(tc, load_device("h100"))
    assert why and "needs sm_100a, but the device configuration 'h100' targets sm_90a" in why
    p = generate(tc, load_device("b200"))
    assert p.target == "sm_100a" and target_problems(p) == []
    wrong = Program(p.test, p.source, p.target, p.space, p.layout, load_device("h100"), p.notes)
    assert "would not load" in target_problems(wrong)[0]


# -- B4: spins bounded in time ---------------------------------------------------------------------

def test_b4_every_spin_is_bounded_by_globaltimer():
    (t,) = _bundled("MP+rel.gpu+acq.gpu+sameCTA")
    p = generate(t)
    assert "%%globaltimer" in p.source and re.search(r"#define SPIN_NS 2000000ull", p.source)
    assert time_bound_problems(p) == []
    old_barrier = p.source.replace("if (spin_give_up(n, since))", "if (n >= SPIN_CAP)")
    assert time_bound_problems(_with_source(p, old_barrier))
    cfg = load_device("h100").replace(spin_time_us=50)
    assert "#define SPIN_NS 50000ull" in generate(t, cfg).source
    with pytest.raises(HarnessError, match="spin_time_us"):
        load_device().replace(spin_time_us=0)


# -- C2, C3, C6 -------------------------------------------------------------------------------------

def test_c2_a_run_without_resume_refuses_an_output_folder_with_results(tmp_path, capsys):
    out = tmp_path / "o"
    args = ["hw", "run", "--fake-device", "", "-o", str(out), "--controls", "--name", "CTRL+MP+relaxed"]
    assert main(args) == 0
    before = (out / "histograms.jsonl").read_text()
    assert main([*args[:-1], "CTRL+SB+relaxed"]) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert (out / "histograms.jsonl").read_text() == before           # nothing deleted


def test_c3_controls_come_first():
    from checker.harness.cli import load_tests
    tests, _ = load_tests([str(LITMUS_DIR / "core" / "MP.yaml")], controls=True)
    n = len(controls())
    assert [t.name for t in tests[:n]] == [c.name for c in controls()]


def test_c6_an_unseen_lb_control_does_not_fail_the_run():
    lb = next(c for c in controls() if c.name == "CTRL+LB+relaxed")
    mp = next(c for c in controls() if c.name == "CTRL+MP+relaxed")
    for test, want in ((lb, "control-rare"), (mp, "control-unseen")):
        names = tuple(str(v) for v in __import__("checker.harness.space", fromlist=["x"]).observed_vars(test))
        h = histogram.make(test.name, names, [(tuple((n, 0) for n in names), 100)], time_s=1.0)
        assert compare_one(h, None, test).verdict == want
    assert "control-rare" not in BAD and "control-unseen" in BAD


# -- D10, D13: counts read from files --------------------------------------------------------------

def _record():
    (t,) = _bundled("MP+rel.gpu+acq.gpu+sameCTA")
    names = tuple(str(v) for v in __import__("checker.harness.space", fromlist=["x"]).observed_vars(t))
    return histogram.make(t.name, names, [(tuple((n, 0) for n in names), 5)], time_s=1.0).to_json()


@pytest.mark.parametrize("mutate,msg", [
    (lambda r: r["counts"][0].__setitem__("count", 1.5), "must be a non-negative integer"),
    (lambda r: r["counts"][0].__setitem__("count", "5"), "must be a non-negative integer"),
    (lambda r: r["counts"][0].__setitem__("count", -5), "between 0 and 2\\*\\*63-1"),
    (lambda r: r["counts"][0].__setitem__("count", 10**400), "401-digit"),
    (lambda r: r["counts"][0].__setitem__("count", True), "must be a non-negative integer"),
    (lambda r: r.__setitem__("instances", "many"), "'instances'"),
    (lambda r: r.__setitem__("instances", 6), "the counts add up to 5"),
    (lambda r: r.__setitem__("test", ["x"]), "not a name"),
    (lambda r: r.__setitem__("timeout", -1), "'timeout'"),
])
def test_d10_malformed_counts_in_json_are_refused(tmp_path, mutate, msg):
    r = _record()
    mutate(r)
    f = tmp_path / "h.json"
    f.write_text(json.dumps(r))
    with pytest.raises(HarnessError, match=msg):
        histogram.load(f)


@pytest.mark.parametrize("text,msg", [
    ('{"a": Infinity}', "not a JSON number"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ("[1, 2]", "not a histogram"),
])
def test_d13_pathological_json_is_a_clean_error(tmp_path, text, msg):
    for name in ("h.json", "h.jsonl"):
        f = tmp_path / name
        f.write_text(text + "\n")
        with pytest.raises(HarnessError, match=msg):
            histogram.load(f)


def test_d10_d13_litmus7_counts(tmp_path, capsys):
    log = ("Test MP+rel.gpu+acq.gpu+sameCTA Allowed\nHistogram (1 states)\n"
           "COUNT :>1:r0=0; 1:r1=0;\nTime MP+rel.gpu+acq.gpu+sameCTA 0.10\n")
    (t,) = _bundled("MP+rel.gpu+acq.gpu+sameCTA")
    assert parse_log(log.replace("COUNT", "7"), {t.name: t})[0].valid == 7
    for bad, msg in (("-1351", "a count must be a non-negative integer"), ("9" * 5000, "a count must be")):
        with pytest.raises(HarnessError, match=msg):
            parse_log(log.replace("COUNT", bad), {t.name: t})
        f = tmp_path / "x.log"
        f.write_text(log.replace("COUNT", bad))
        assert main(["hw", "import", str(f), "--tests", str(LITMUS_DIR / "core")]) == 2
        err = capsys.readouterr().err
        assert "x.log:3" in err and "internal error" not in err


# -- D11: hw build with a relative output folder ---------------------------------------------------

@pytest.mark.skipif(missing_reason("nvcc") is not None, reason=str(missing_reason("nvcc")))
def test_d11_build_into_a_relative_folder(tmp_path, monkeypatch):
    from checker.harness.build import build
    monkeypatch.chdir(tmp_path)
    res = build(generate(build_test("rel", {"P0": ("gpu0.cta0", ["st.global [x], 1"])})), "hw-out", "cubin")
    assert res.output.is_file() and res.output.parent == tmp_path / "hw-out"


# -- B2, C4: `hw run` on a GPU machine's Python (no lark, no z3) -----------------------------------

BLOCK = """ptxmc-hw 1
test CTRL+MP+relaxed
device stand-in GPU
cc 9.0
iterations 1
instances 10
time 0.010
bucket 0 10
other 0
timeout 0
epilogue 0
unsynced 0
hang 0
end
"""

NO_DEPS = """import sys
sys.modules['lark'] = None          # neither is importable: what the GPU machine's Python has
sys.modules['z3'] = None
from checker.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_b2_c4_hw_run_needs_neither_lark_nor_z3_and_says_expectations_only(tmp_path):
    import os
    import subprocess
    import sys
    from checker.harness.build import write_source
    prebuilt = tmp_path / "pre"
    (mp,) = [c for c in controls() if c.name == "CTRL+MP+relaxed"]
    write_source(generate(mp, load_device("h100")), prebuilt)
    exe = prebuilt / "CTRL+MP+relaxed"
    exe.write_text("#!/bin/sh\ncat <<'EOF'\n" + BLOCK + "EOF\n")
    exe.chmod(0o755)
    env = {**os.environ, "PTXMC_GPU": "1", "PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", NO_DEPS, "hw", "run", "--controls", "--name", "CTRL+MP+relaxed",
                           "--device", "h100", "--prebuilt", str(prebuilt), "-o", str(tmp_path / "o")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "ran  CTRL+MP+relaxed" in proc.stdout, proc.stdout + proc.stderr
    compare_txt = (tmp_path / "o" / "compare.txt").read_text()
    assert compare_txt.startswith("EXPECTATIONS ONLY: the model could not run here")
    assert proc.returncode == 1                     # never a silent pass without the model


def test_c10_resume_under_another_configuration_runs_again(tmp_path, capsys):
    out = str(tmp_path / "o")
    base = ["hw", "run", "--fake-device", "", "-o", out, "--controls", "--name", "CTRL+MP+relaxed"]
    assert main(base) == 0
    assert main([*base, "--resume"]) == 0
    assert "ran 0, resumed 1" in capsys.readouterr().out
    assert main([*base, "--resume", "--device", "h100"]) == 0        # same target, another configuration
    assert "ran 1, resumed 0" in capsys.readouterr().out


def test_c8_report_reads_a_litmus7_log(tmp_path):
    from checker.harness import litmus7
    (t,) = _bundled("MP+rel.gpu+acq.gpu+sameCTA")
    names = tuple(str(v) for v in __import__("checker.harness.space", fromlist=["x"]).observed_vars(t))
    h = histogram.make(t.name, names, [(tuple((n, 0) for n in names), 50)], time_s=1.0, device="stand-in GPU")
    log = tmp_path / "hw.log"
    log.write_text(litmus7.log([h], {t.name: t}))
    out = tmp_path / "rep"
    assert main(["report", str(LITMUS_DIR / "core" / "MP.yaml"), "--hw", str(log), "--out", str(out),
                 "--layout", "builtin"]) in (0, 1)
    doc = json.loads((out / "report.json").read_text())
    (hw,) = [x["hardware"] for x in doc["tests"] if x["name"] == t.name]
    assert hw["verdict"] == "gap" and hw["instances"] == 50


# -- paths the thread's own registers rule out (a %tid dispatch) -----------------------------------

def test_reachable_follows_guards_the_registers_decide():
    from checker.harness.flow import reachable
    (t,) = _bundled("LoopShape+tid-dispatch+exits")
    t0, t1 = t.threads
    assert reachable(t, t0) == {0, 1, 2, 3, 4, 5}                   # tid 0: the producer side only
    assert reachable(t, t1) == {0, 1, 2, 6, 7, 8, 9, 10}            # tid 32: the consumer side only
    from checker.front.litmus import load_text
    (free,) = load_text("name: free\nsource: tests\nthreads:\n  P0:\n    at: gpu0.cta0\n    code:\n"
                        "      - ld.global r0, [x]\n      - setp.eq.s32 p, r0, 1\n      - '@p bra L'\n"
                        "      - st.global [y], 1\n      - 'L:'\n      - st.global [z], 1\n")
    assert not isinstance(free, LitmusError), free
    assert reachable(free, free.threads[0]) == {0, 1, 2, 3, 4}       # a loaded value decides nothing


@pytest.mark.skipif(missing_reason("nvcc", "nvdisasm") is not None, reason=str(missing_reason("nvcc", "nvdisasm")))
def test_the_sass_check_asks_nothing_of_a_path_ptxas_may_delete(tmp_path):
    from checker.harness.build import build
    from checker.harness.sass import check_fences, disassemble
    (t,) = _bundled("LoopShape+tid-dispatch+exits")
    p = generate(t)
    checks = check_fences(t, p, disassemble(build(p, tmp_path, "cubin").output))
    assert all(c.ok for c in checks), "\n".join(map(str, checks))
    dead = {(c.thread, c.index) for c in checks if "unreachable" in c.expected}
    assert dead == {("T0", 6), ("T0", 10), ("T1", 3), ("T1", 4)}
    assert {(c.thread, c.index) for c in checks if c.kind == "access" and c.found} >= {("T0", 3), ("T1", 10)}


def test_predicate_logic_is_emitted_on_the_0_1_registers():
    """and/or.pred of the liveness suite: ptxas refused `or.pred` on the 32-bit registers that hold
    predicates ("Arguments mismatch for instruction 'or'")."""
    (t,) = _bundled("LoopShape+or-pred+exits")
    src = generate(t).source
    assert re.search(r'"or\.b32 %0, %1, %2;"', src) and '"or.pred' not in src


@pytest.mark.skipif(missing_reason("nvcc") is not None, reason=str(missing_reason("nvcc")))
def test_predicate_logic_programs_compile(tmp_path):
    from checker.harness.build import build_cubins
    progs = [generate(t) for t in _bundled("LoopShape+or-pred+exits", "LoopShape+and-pred+hangs")]
    assert not [b for b in build_cubins(progs, tmp_path, jobs=1) if isinstance(b, HarnessError)]


# -- issue 37: the model and a device file are inputs of hw commands too ----------------------------

def test_hw_output_folders_never_hold_the_model_or_the_device_file(tmp_path, capsys):
    # `hw run --model out/my.cat -o out` (and a --device .toml there) passed the output policy:
    # only the tests were its inputs, as the model file was for run/diff before D4.
    from checker.harness.devices import DEVICES_DIR

    out = tmp_path / "out"
    out.mkdir()
    cat = out / "my.cat"
    cat.write_text((LITMUS_DIR.parent / "axioms" / "ptx.cat").read_text())
    dev = out / "d.toml"
    dev.write_text((DEVICES_DIR / "default.toml").read_text())
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    runs = (["hw", "run", "--fake-device", "", "--model", str(cat), "--controls", "--name", "CTRL+MP+relaxed"],
            ["hw", "run", "--fake-device", "", "--device", str(dev), "--controls", "--name", "CTRL+MP+relaxed"],
            ["hw", "gen", "--device", str(dev), str(LITMUS_DIR / "core" / "MP.yaml")])
    for argv in runs:
        assert main([*argv, "-o", str(out), "--force"]) == 2, argv
        err = capsys.readouterr().err
        assert "it holds an input" in err, (argv, err)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
