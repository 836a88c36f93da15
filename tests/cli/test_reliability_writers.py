"""Review 3 of reliability (issue 37): the defects outside `fix --apply` and the hardware
harness, each as a regression test with its input (the output policy and limits are in
docs/cli.md). D5, D19 and gen's D9/D14 are in tests/gen/test_gen.py; D8 and D13 in
tests/cli/test_resume.py."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import checker
from checker import LITMUS_DIR, ROOT
from checker.errors import CheckerError

from .test_reliability import ptxmc

MP = LITMUS_DIR / "core" / "MP.yaml"
SB = LITMUS_DIR / "core" / "SB.yaml"
SB_ONE = f"{SB}::SB+fence.sc.cta+sameCTA"


@pytest.fixture
def cat(tmp_path) -> Path:
    m = tmp_path / "my.cat"
    m.write_text((ROOT / "axioms" / "ptx.cat").read_text())
    return m


# ===================================================== D4: the model file is an input ==

@pytest.mark.parametrize("flag", ["-o", "--results-jsonl"])
def test_run_never_writes_onto_its_model_file(tmp_path, cat, flag):
    # -o replaced the cat file with the results; --results-jsonl truncated it before the workers
    # read it (every test judged with an empty model, the stream keyed to the original hash)
    before = cat.read_bytes()
    code, out, err = ptxmc("run", "--jobs", "1", MP, "--model", cat, flag, cat)
    assert code == 2 and f"cannot write {cat}: it is one of the inputs" in err, err
    assert cat.read_bytes() == before and out == ""


def test_diff_check_and_report_never_write_onto_the_model(tmp_path, cat):
    before = cat.read_bytes()
    code, _, err = ptxmc("diff", "--jobs", "0", f"{MP}", "--model", cat, "--model", "sc", "-o", cat)
    assert code == 2 and "it is one of the inputs" in err, err
    code, _, err = ptxmc("check", SB_ONE, "P0:r0=0 /\\ P1:r0=0", "--model", cat, "--dot", cat)
    assert code == 2 and "it is one of the inputs" in err, err
    code, _, err = ptxmc("report", f"{SB}", "--model", cat, "--out", tmp_path, "--force")
    assert code == 2 and "it holds an input" in err, err
    assert cat.read_bytes() == before


def test_an_included_cat_file_is_an_input_too(tmp_path):
    (tmp_path / "lib.cat").write_text('let fr = (rf^-1; co) \\ id\n')
    (tmp_path / "top.cat").write_text('"top"\ninclude "lib.cat"\nacyclic po | rf | co | fr as sc\n')
    before = (tmp_path / "lib.cat").read_bytes()
    code, _, err = ptxmc("run", "--jobs", "0", SB, "--model", tmp_path / "top.cat", "-o", tmp_path / "lib.cat")
    assert code == 2 and "it is one of the inputs" in err, err
    assert (tmp_path / "lib.cat").read_bytes() == before


# ================================= D7: a full disk under --results-jsonl loses nothing else ==

def _file_size_limit(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)        # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_failed_stream_write_still_writes_the_other_outputs(tmp_path):
    # The stream's disk "fills" after ~3 kB (RLIMIT_FSIZE: the file's writes fail as on a full
    # disk); standard output is a pipe, which the limit does not bound. Before: exit 2 and no
    # output at all, the results only in the cut stream.
    stream = tmp_path / "s.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PTXMC_CACHE_DIR": "off"}
    env.pop("PTXMC_DEBUG", None)
    r = subprocess.run([sys.executable, "-m", "checker", "run", "--jobs", "1", "--no-timing", str(SB),
                        "--results-jsonl", str(stream)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600, preexec_fn=_file_size_limit(3000))
    assert r.returncode == 2, (r.stdout[-500:], r.stderr)
    assert r.stdout.endswith("ptxmc: 31 tests: 31 pass\n"), r.stdout[-500:]       # every result written
    assert f"ptxmc: cannot write {stream}: File too large; the stream stops after" in r.stderr, r.stderr
    assert "internal error" not in r.stderr and 0 < stream.stat().st_size <= 3000


# ======================================= D9: option names, engines and limits in the API ==

TEST = "litmus/patterns/P11-cross-cta-war.yaml::P11-remoteempty-fixed"


@pytest.mark.parametrize("kw, message", [
    ({"options": "strict-cta"}, "options='strict-cta': give a list of option names"),
    ({"options": ["strict_cta"]}, "'strict_cta': the model ptx.cat has no such option"),
    ({"options": None}, "options=None: give a list of option names"),
    ({"options": [3]}, "3 is not an option name"),
    ({"engine": "cvc5"}, "engine='cvc5': no such engine"),
    ({"limits": {"events": 4}}, "limits={'events': 4}: give a checker.limits.Limits"),
])
def test_the_api_checks_its_arguments(kw, message):
    # a string was iterated as characters and a typo ignored: both silently checked the default
    # model (forbidden instead of allowed); the others were ValueError/AttributeError/TypeError
    t = checker.load_test(TEST)
    assert checker.check(t, "P0:r0=2", options=["strict-cta"]).status == "allowed"
    for fn in (lambda: checker.check(t, "P0:r0=2", **kw), lambda: checker.outcomes(t, **kw),
               lambda: checker.session(t, **kw), lambda: checker.explain(t, "P0:r0=2", **kw)):
        with pytest.raises(CheckerError, match=message.replace("(", r"\(").replace("[", r"\[")):
            fn()
    with pytest.raises(CheckerError, match="no such engine|no such option|give a|not an option name"):
        checker.run(str(LITMUS_DIR / "core" / "CoWW.yaml"), jobs=0, **kw)


def test_the_api_refuses_other_bad_arguments():
    t = checker.load_test(TEST)
    with pytest.raises(CheckerError, match="condition=None: give a herd condition"):
        checker.check(t, None)                               # was 'allowed': None read as true
    with pytest.raises(CheckerError, match="jobs='2': must be 0"):
        checker.run(str(LITMUS_DIR / "core" / "CoWW.yaml"), jobs="2")
    with pytest.raises(CheckerError, match="give a path or YAML text as a str"):
        checker.load(b"name: x\n")                          # was "a bytes-like object is required, not 'str'"
    with pytest.raises(CheckerError, match="give a path or YAML text as a str"):
        checker.load_test(b"x.yaml")


def test_fix_checks_its_option_names(tmp_path):
    code, out, err = ptxmc("fix", SB_ONE, "--option", "bogus")
    assert code == 2 and "--option 'bogus': the model ptx.cat has no such option" in err, (out, err)


# ===================================================== D14: budgets that bound nothing ==

@pytest.mark.parametrize("argv, message", [
    (("fix", SB_ONE, "--budget", "nan"), "--budget nan: must be a finite number"),
    (("fix", SB_ONE, "--budget", "inf"), "--budget inf: must be a finite number"),
    (("fix", SB_ONE, "--budget", "1e308"), "--budget 1e+308: at most 1e+06 seconds"),
    (("fix", SB_ONE, "--budget", "-1"), "--budget -1: must be positive"),
    (("audit", "tilelang-fence-proxy", "litmus/audit/kernels.yaml", "--budget", "nan"),
     "--budget nan: must be a finite number"),
    (("audit", "tilelang-fence-proxy", "litmus/audit/kernels.yaml", "--budget", "inf"),
     "--budget inf: must be a finite number"),
    (("audit", "tilelang-fence-proxy", "litmus/audit/kernels.yaml", "--timeout", "nan"),
     "--timeout nan: must be a finite number"),
])
def test_non_finite_or_negative_budgets_are_refused(argv, message):
    code, out, err = ptxmc(*argv)
    assert code == 2 and message in err and "internal error" not in err, (out, err)


# ========================================== D15, D24, D25: import and export, hostile input ==

def test_import_of_a_very_deep_folder(deep_root):
    # Path.rglob and Path.mkdir(parents=True) recurse once per level: RecursionError.
    # deep_root (tests/conftest.py) is outside pytest's tree and removed without recursion.
    p = deep_root / "in"
    p.mkdir()
    for _ in range(1200):                  # level by level: mkdir(parents=True) recurses too
        p = p / "d"
        p.mkdir()
    (p / "t.litmus").write_text("PTX MP\n{\nx=0;\n}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n"
                                " st.weak x, 1 | ld.weak r0, x ;\nexists (P1:r0 == 1)\n")
    code, out, err = ptxmc("import", "--from", "dat3m", deep_root / "in", "-o", deep_root / "out")
    assert code == 0 and "1 converted, 0 skipped" in out, (out, err)


def test_import_escapes_control_characters_of_skipped_names(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "t.litmus").write_text(
        'PTX MP\x1b]0;pwned\x07\x1b[31mred\u202e\n"x"\n{\ndata=0;\nflag=0;\n}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n'
        ' st.weak data, 1 | ld.acquire.gpu r0, flag ;\n st.release.gpu flag, 1 | ld.weak r1, data ;\n'
        '~exists (P1:r0 == 1 /\\ P1:r1 == 0)\n')
    code, out, err = ptxmc("import", "--from", "dat3m", tmp_path / "in", "-o", tmp_path / "out")
    report = (tmp_path / "out" / "import-report.txt").read_text()
    assert code == 1 and "MP\\x1b]0;pwned\\x07" in err and "MP\\x1b]0;pwned\\x07" in report
    for text in (err, report):
        assert not any(c in text for c in "\x1b\x07\u202e"), text


def test_export_never_writes_a_hidden_file(tmp_path):
    src = tmp_path / "t.yaml"
    body = ("  threads:\n    P0: {at: gpu0.cta0, code: ['st.relaxed.gpu.global [x], 1']}\n"
            "    P1: {at: gpu0.cta1, code: ['ld.relaxed.gpu.global r0, [x]']}\n"
            "  expect: {allowed: ['P1:r0=1']}\n")
    src.write_text("".join(f"- name: '{n}'\n{body}" for n in ("..", ".x", "x")))
    code, out, err = ptxmc("export", "--to", "herd", src, "-o", tmp_path / "out")
    assert code == 0, (out, err)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert not [n for n in names if n.startswith(".") and n != ".ptxmc-output"], names
    assert len([n for n in names if n.endswith(".litmus")]) == 3, names


def test_report_out_that_is_a_regular_file(tmp_path):
    f = tmp_path / "r.txt"
    f.write_text("mine")
    code, out, err = ptxmc("report", SB, "--out", f)
    assert code == 2 and f"cannot write {f}: it is a regular file, not a folder" in err, err
    assert f.read_text() == "mine"


# ======================================== D18: a matrix multiplies the file-size bound ==

def test_a_matrix_counts_its_rows_against_the_file_size_bound(tmp_path):
    # 2,000 rows of a 2 x 64-instruction test in a 31 kB file: every row is a whole test, and
    # loading them took 533 MB and 32 s before the first test ran (8,000 rows: > 2 GB)
    c0 = ", ".join(f"'st.relaxed.gpu.global [x{i % 8}], ${{v}}'" for i in range(64))
    c1 = ", ".join(f"'ld.relaxed.gpu.global r{i}, [x{i % 8}]'" for i in range(64))
    text = (f"name: M${{v}}\nthreads:\n  P0:\n    at: gpu0.cta0\n    code: [{c0}]\n  P1:\n    at: gpu0.cta1\n"
            f"    code: [{c1}]\nmatrix:\n" + "".join(f"  - {{v: {i}}}\n" for i in range(1, 2001)))
    f = tmp_path / "m.yaml"
    f.write_text(text)
    assert len(text) < 40_000
    code, out, _ = ptxmc("run", "--jobs", "0", f)
    assert code == 1 and "UNKNOWN" in out and out.endswith("ptxmc: 1 tests: 1 unknown\n"), out[-600:]
    assert "too large: 2000 matrix rows of a" in out and "raise it with --limit yaml_bytes=N" in out, out
    from checker.front.litmus import load_text

    small = load_text(text.split("matrix:")[0] + "matrix:\n  - {v: 1}\n  - {v: 2}\n", "m.yaml")
    assert [t.name for t in small] == ["M1", "M2"]                     # a few rows: as before


# ============================== D20: a costly cat model is bounded by memory, not only time ==

def _doubling_model(path: Path, n: int = 200) -> Path:
    """200 lets, each (r;r)|r of the one before: 6 kB of cat that made one check of a 2-thread
    test take 42-59 s and ~700 MB under the Z3 engine."""
    text = '"doubling"\nlet fr = (rf^-1; co) \\ id\nlet r0 = po | rf | co | fr\n'
    text += "".join(f"let r{i} = (r{i - 1} ; r{i - 1}) | r{i - 1}\n" for i in range(1, n + 1))
    path.write_text(text + f"acyclic r{n} as A\n")
    return path


def test_a_chain_of_doubling_lets_is_answered_within_a_modest_memory(tmp_path):
    # Each let built on the one before made Z3 terms hundreds of levels deep: the check needed
    # more than 450 MB of Z3 memory (and a minute; bounded only by the timeout). A let-bound value
    # nesting more than DEEP operators is now named (exact): the same verdict as brute force.
    from checker.cat.interp import deep_bindings
    from checker.resources import resolve_model

    model = _doubling_model(tmp_path / "dbl.cat")
    answers = []
    for engine in ("z3", "brute"):
        code, out, err = ptxmc("check", "--engine", engine, "--model", model, "--limit", "memory=450",
                               "--timeout", "600", SB_ONE, "P0:r0=0 /\\ P1:r0=0")
        assert code == 0, (engine, out, err)
        answers.append(out.splitlines()[2])
    assert answers == ["Forbidden", "Forbidden"]
    # the bundled models nest less: their encodings are not changed by the naming
    assert not deep_bindings(resolve_model("ptx").statements) and not deep_bindings(resolve_model("sc").statements)


def test_a_costly_model_stops_at_the_memory_limit(tmp_path):
    model = _doubling_model(tmp_path / "dbl.cat")
    # --timeout 600: on a busy machine the default 60 s could stop it first (the memory limit is
    # what must stop it; it does in seconds)
    code, out, err = ptxmc("check", "--engine", "z3", "--model", model, "--limit", "memory=100", "--timeout", "600",
                           SB_ONE, "P0:r0=0 /\\ P1:r0=0")
    assert code == 3, (out, err)
    assert "memory: Z3 needed more than 100 MB (limit 100; raise it with --limit memory=N)" in err, err
