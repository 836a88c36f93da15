"""The robustness invariant, as checks the fuzzers call on every generated input.

For ANY input, the loaders and `ptxmc run/check/outcomes` either succeed or report a CheckerError
subclass that names a place (file:line) - never another exception, never a hang past the
configured bound, never an UNKNOWN presented as an answer. Each `check_*` function raises
AssertionError (or lets the offending exception through) when the invariant is broken, and
returns quietly otherwise.

Full Z3 runs happen only for well-formed, small inputs, under FUZZ_LIMITS (a small timeout and
resource limit), so that most of the budget goes to the front end.
"""
from __future__ import annotations

import contextlib
import io
from collections import Counter
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import yaml

from checker import AXIOMS_DIR, limits
from checker.model import observables as conditions
from checker.ast import LitmusTest
from checker.cat.interp import Model, parse_model
from checker.resources import resolve_model
from checker.verdict.check import check_test
from checker.front.conditions import parse_cond, show
from checker.errors import CheckerError, LimitExceeded, LitmusError, ModelError, SourceLoc
from checker.front.litmus import load_text
from checker.isa.registry import lower
from checker.results.output import FORMATS
from checker.isa.registry import parse_instr

FUZZ_LIMITS = replace(limits.DEFAULT, timeout=3.0, rlimit=3_000_000, outcomes=256)
MAX_EVENTS = 24           # full runs only for tests this small
STATUSES = {"pass", "fail", "error", "unknown", "undefined", "run"}

_model_cache: dict[str, Model] = {}

# How far inputs got: 'loaded' (a test came out of the front end), 'lowered', 'checked' (a full
# Z3 run), 'model' (a fuzzed model loaded); the campaign reports these.
REACHED: Counter = Counter()


def default_model() -> Model:
    if "ptx" not in _model_cache:
        _model_cache["ptx"] = resolve_model("ptx")
    return _model_cache["ptx"]


def assert_located(e: CheckerError, path: str) -> None:
    """A user-facing error names the file and a 1-based line, and prints as `path:line: ...`."""
    assert isinstance(e, CheckerError), repr(e)
    assert e.where is not None, f"no place in {type(e).__name__}: {e}"
    assert e.where.path == path, f"wrong file {e.where.path!r} in {e}"
    assert e.where.line >= 1, f"line {e.where.line} in {e}"
    text = str(e)
    assert text.startswith(f"{path}:{e.where.line}"), text
    assert e.message and "Traceback" not in text


# ------------------------------------------------------------------------------ litmus text --

def check_litmus_text(text: str, path: str = "fuzz/input.yaml", run: int = 1, near_line: int | None = None,
                      model: Model | None = None) -> list:
    """Load `text`; every item is a test or a located LitmusError; run up to `run` small tests
    (those nearest `near_line`, 1-based, if given) through Z3 and every printer."""
    with limits.use(FUZZ_LIMITS):
        items = load_text(text, path)
        assert isinstance(items, list) and items, "load_text returned nothing"
        tests = []
        for it in items:
            if isinstance(it, LitmusError):
                assert_located(it, path)
            else:
                assert isinstance(it, LitmusTest), repr(it)
                assert it.path == path
                tests.append(it)
        REACHED["loaded"] += bool(tests)
        if near_line is not None:
            tests.sort(key=lambda t: abs(t.where.line - near_line))
        for t in tests[:run]:
            check_small_test(t, model)
        return items


def check_small_test(test: LitmusTest, model: Model | None = None):
    """Lower `test`; if it is small, check it fully and print the result in every format."""
    with limits.use(FUZZ_LIMITS):
        try:
            es = lower(test)
        except LitmusError as e:
            assert_located(e, test.path)
            return None
        except LimitExceeded:
            return None
        REACHED["lowered"] += 1
        if len(es.events) > MAX_EVENTS:
            return None
        REACHED["checked"] += 1
        r = check_test(test, model or default_model(), "ptx", frozenset(), "z3", FUZZ_LIMITS.timeout)
        check_result(r)
        return r


def check_result(r) -> None:
    assert r.status in STATUSES, r.status
    if r.status in ("error", "unknown"):
        assert r.message, "an error or unknown without a message"
        assert not r.message.startswith("internal error"), r.message
    if r.status == "unknown":
        # UNKNOWN is never presented as forbidden
        assert all(c.allowed is not False for c in r.conditions), r.conditions
    if not r.complete:
        # a capped enumeration says so; its conditions were decided by their own queries
        assert any(n.startswith("outcome list incomplete") for n in r.notes), r.notes
    for fmt, printer in FORMATS.items():
        out = printer([r], timing=False)
        assert isinstance(out, str) and out.endswith("\n"), fmt
        out.encode("utf-8")                     # writable: no lone surrogates
        if fmt == "json":
            json.loads(out)
        if fmt == "junit":
            ET.fromstring(out)
        if fmt == "herd":
            for c in r.conditions:
                if c.allowed is None:
                    assert f"({c.text}) is unknown" in out, out


# ------------------------------------------------------------------------------ instructions --

PROBE_MEMORY = {
    "x": 0, "y": 0, "flag": 0, "g": 0, "a": {"alias_of": "x"},
    "s": {"space": "shared", "owner": "gpu0.cta0"},
    "mb": {"space": "shared", "owner": "gpu0.cta0", "mbarrier": {"count": 1}},
    "tmap": {"tensormap": {0: "g", 1: "y"}, "init": 0},
}


def check_instruction(text: str, run: bool = True) -> None:
    """Parse one instruction; then lower (and maybe check) it inside a small test."""
    where = SourceLoc("fuzz/instr.yaml", 7, text.strip())
    try:
        parse_instr(text, where, frozenset(PROBE_MEMORY))
    except LitmusError as e:
        assert e.where == where, (e.where, where)
        assert str(e).startswith("fuzz/instr.yaml:7")
    if not run:
        return
    doc = {"name": "probe", "memory": PROBE_MEMORY,
           "threads": {"P0": {"at": "gpu0.cta0", "code": ["mov r1, 1", text]},
                       "P1": {"at": "gpu0.cta0.warp1", "code": ["st.global [x], 2", "ld.global r0, [y]"]}}}
    check_litmus_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), "fuzz/instr.yaml")


# -------------------------------------------------------------------------------- conditions --

def check_condition(text: str, run: bool = False) -> None:
    """Parse a condition; a parsed one survives printing and parsing again, evaluates on an
    outcome, and converts to Z3."""
    where = SourceLoc("fuzz/cond.yaml", 3, text)
    with limits.use(FUZZ_LIMITS):
        try:
            c = parse_cond(text, where)
        except LitmusError as e:
            assert e.where == where
            return
        shown = show(c)
        again = parse_cond(shown, SourceLoc("fuzz/cond.yaml", 3, shown))
        assert again == c, (text, shown, again, c)
        names = {"x": "x", "y": "y", "flag": "flag"}
        outcome = {"P0:r0": 1, "P1:r1": 0, "x": 2}
        conditions.holds(c, outcome, names)
        conditions.atoms(c, names)
    if run:
        doc = {"name": "probe", "threads": {
            "P0": {"at": "gpu0.cta0", "code": ["st.global [x], 1", "ld.global r0, [y]"]},
            "P1": {"at": "gpu0.cta1", "code": ["st.global [y], 1", "ld.global r0, [x]", "ld.global r1, [flag]"]},
            "P2": {"at": "gpu0.cta1", "code": ["ld.global r2, [x]"]}},
            "expect": {"allowed": [text]}}
        check_litmus_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), "fuzz/cond.yaml")


# ---------------------------------------------------------------------------------------- cat --

CAT_PROBE = """name: probe
threads:
  P0: {at: gpu0.cta0, code: ["st.relaxed.gpu.global [x], 1", "ld.relaxed.gpu.global r0, [y]"]}
  P1: {at: gpu0.cta1, code: ["st.relaxed.gpu.global [y], 1", "ld.relaxed.gpu.global r0, [x]"]}
expect:
  allowed: ['P0:r0=0 /\\ P1:r0=0']
"""


def probe_test() -> LitmusTest:
    if "probe" not in _model_cache:
        [t] = load_text(CAT_PROBE, "fuzz/probe.yaml")
        _model_cache["probe"] = t
    return _model_cache["probe"]


def check_cat_text(text: str, name: str = "fuzz.cat", run: bool = True) -> None:
    """Parse model text (includes resolve next to the bundled models); a model that loads is
    used to check a small test: any problem is a ModelError or an error/unknown Result."""
    path = str(AXIOMS_DIR / name)
    with limits.use(FUZZ_LIMITS):
        try:
            model = parse_model(text, path)
        except ModelError as e:
            if e.where is not None:
                assert e.where.line >= 1, str(e)
            assert "Traceback" not in str(e)
            return
        REACHED["model"] += 1
        if run:
            r = check_test(probe_test(), model, "fuzz", frozenset(), "z3", FUZZ_LIMITS.timeout)
            assert r.status in STATUSES
            if r.status in ("error", "unknown"):
                assert not r.message.startswith("internal error"), r.message
            check_result(r)


# ---------------------------------------------------------------------------------- the CLI --

@contextlib.contextmanager
def _debug_env():
    """PTXMC_DEBUG=1: everything runs in this process and a bug raises instead of being
    reported, so the fuzzer sees it."""
    old = os.environ.get("PTXMC_DEBUG")
    os.environ["PTXMC_DEBUG"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["PTXMC_DEBUG"]
        else:
            os.environ["PTXMC_DEBUG"] = old


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """`ptxmc ARGV` in this process: (exit code, stdout, stderr). A bug raises."""
    from checker.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _debug_env(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:            # argparse usage errors
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def check_cli_file(tmp: Path, text: str, cond: str = "P0:r0=0") -> None:
    """Run `ptxmc run`, `outcomes` and `check` on a file holding `text`."""
    path = tmp / "fuzzed.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    limits_args = ["--timeout", "3", "--rlimit", "3000000", "--limit", f"events={MAX_EVENTS}"]
    code, out, err = run_cli(["run", str(path), "--no-timing", "--jobs", "0", "--format", "json", *limits_args])
    assert code in (0, 1), (code, err)
    doc = json.loads(out)
    assert "Traceback" not in err and "internal error" not in out + err, err
    names = [r["name"] for r in doc["results"] if r["status"] not in ("error",)]
    spec = f"{path}::{names[0]}" if names else str(path)
    for argv in (["outcomes", spec, *limits_args], ["check", spec, cond, *limits_args]):
        code, out, err = run_cli(argv)
        # check: 3 is UNKNOWN, 4 a malformed test or condition (docs/cli.md, Exit codes)
        assert code in ((0, 1, 3, 4) if argv[0] == "check" else (0, 1)), (argv, code, err)
        assert "Traceback" not in err and "internal error" not in out + err, (argv, err)
        if code:
            assert err.startswith("ptxmc: "), (argv, err)
            assert str(path) in err or "<command line>" in err or "UNKNOWN" in err, (argv, err)


# ------------------------------------------------------------------------------- differential --

def check_engines_agree(text: str, path: str = "fuzz/diff.yaml", limit: int = 3000) -> None:
    """On a small well-formed test, the Z3 engine and the brute-force engine allow the same
    outcomes (over every register and final value) - a differential oracle for fuzzed tests."""
    from checker.engines.brute import BruteEngine
    from checker.engines.smt import Z3Engine
    from checker.errors import Unsupported

    with limits.use(FUZZ_LIMITS):
        items = load_text(text, path)
        for t in items:
            if isinstance(t, LitmusError):
                assert_located(t, path)
                continue
            es = lower(t)
            if len(es.events) > MAX_EVENTS:
                continue
            try:
                brute = BruteEngine(es, default_model(), limit=limit)
                observe = tuple(sorted(f"{th}:{r}" for th, r in es.registers) + sorted(es.final_writes))
                expected, _ = brute.outcomes(observe)
            except (LimitExceeded, Unsupported):
                continue
            REACHED["compared"] += 1
            got, complete = Z3Engine(es, default_model()).outcomes(observe)
            if complete:
                assert got == expected, (f"engines disagree on {t.name}: z3 only {sorted(got - expected)}, "
                                         f"brute only {sorted(expected - got)}")
