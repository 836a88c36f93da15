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
import re
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
from checker.errors import CheckerError, LimitExceeded, LitmusError, ModelError, SourceLoc  # noqa: F401
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
        assert isinstance(items, list), "load_text returned no list"
        if not items:               # only an empty list of tests is an empty suite (test_frontend pins it)
            assert yaml.safe_load(text) == [], "load_text returned nothing"
            return []
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

def check_instruction(text: str, run: bool = True) -> None:
    """Parse one instruction; then lower (and maybe check) it inside a small test."""
    from tests.fuzz import grammar

    where = SourceLoc("fuzz/instr.yaml", 7, text.strip())
    try:
        parse_instr(text, where, frozenset(grammar.MEMORY) | {"flag", "a"})
    except LitmusError as e:
        assert e.where == where, (e.where, where)
        assert str(e).startswith("fuzz/instr.yaml:7")
    if not run:
        return
    from tests.fuzz import grammar

    doc = {"name": "probe", "memory": {**grammar.MEMORY, "flag": 0, "a": {"alias_of": "x"}},
           "threads": {"P0": {"at": grammar.POSITIONS[0], "code": ["mov r1, 1", text]},
                       "P1": {"at": grammar.POSITIONS[2], "code": ["st.global [x], 2", "ld.global r0, [y]"]}}}
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
        # check: 3 UNKNOWN, 4 a malformed test or condition (docs/cli.md#exit-codes)
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
    from checker.errors import SolverUnknown, Unsupported

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
                observe = es.observables
                expected, _ = brute.outcomes(observe)
            except (LimitExceeded, Unsupported):
                continue
            REACHED["compared"] += 1
            try:
                got, complete = Z3Engine(es, default_model()).outcomes(observe)
            except SolverUnknown as e:
                # The wall-clock timeout depends on the machine's load, not on the input: counted,
                # not a failure. Running out of resource units (deterministic) stays a failure.
                if not str(e).startswith("timeout"):
                    raise
                REACHED["z3 timeout"] += 1
                continue
            if complete:
                assert got == expected, (f"engines disagree on {t.name}: z3 only {sorted(got - expected)}, "
                                         f"brute only {sorted(expected - got)}")


# ============================================================== issue 23: the new properties ==
# Each takes a generated VALID test (tests/fuzz/grammar.py) or a generated case and checks a
# relation that a wrong or flaky checker would break: determinism (two runs, equal JSON; any
# order of a suite's tests and any --jobs, equal results), metamorphic relations (renaming
# threads, registers and locations; reordering threads; adding an independent thread), output
# safety (checker.outsafe's policy, for every writer and every kind of target), and bounds
# (a test over the events limit refused while lowering, the limit named). No property measures
# time: speed lives in bench/, and the campaign bounds each input's CPU time (campaign.py --hang).

def _result_json(r) -> str:
    from checker.results.output import result_dict

    return json.dumps(result_dict(r, timing=False), sort_keys=True)


def load_valid(text: str, path: str = "fuzz/grammar.yaml"):
    """The tests of a generated text that load and lower (with their event structures)."""
    out = []
    with limits.use(FUZZ_LIMITS):
        for it in load_text(text, path):
            if isinstance(it, LitmusError):
                assert_located(it, path)
                continue
            try:
                es = lower(it)
            except LitmusError as e:
                assert_located(e, path)
                continue
            except LimitExceeded:
                continue
            REACHED["valid"] += 1
            out.append((it, es))
    return out


def check_valid_test(text: str, twice: bool = True) -> None:
    """A generated test: lowered; if small, checked (and, with `twice`, checked
    again in a fresh Session: the same JSON, byte for byte)."""
    for t, es in load_valid(text):
        if len(es.events) > MAX_EVENTS:
            continue
        with limits.use(FUZZ_LIMITS):
            r = check_test(t, default_model(), "ptx", frozenset(), "z3", FUZZ_LIMITS.timeout)
            check_result(r)
            REACHED["checked"] += 1
            if twice:
                again = check_test(t, default_model(), "ptx", frozenset(), "z3", FUZZ_LIMITS.timeout)
                assert_same(r, again, f"two runs of {t.name}")


def timed_out(r) -> bool:
    """Did the wall clock stop this result (the only thing allowed to differ run to run)?"""
    return r.status == "unknown" and r.message.startswith("timeout")


def assert_same(a, b, what: str) -> None:
    """Two results of one test are the same JSON, unless the wall clock stopped one of them: that
    one is then UNKNOWN (a timeout never becomes another verdict)."""
    if timed_out(a) or timed_out(b):
        REACHED["timed-out"] += 1
        return
    assert _result_json(a) == _result_json(b), f"{what} differ:\n{_result_json(a)}\n{_result_json(b)}"
    REACHED["deterministic"] += 1


def _outcome_sets(r, keymap=None, keep=None) -> set:
    keymap = keymap or {}
    out = set()
    for o in r.outcomes:
        items = {keymap.get(k, k): v for k, v in o}
        if keep is not None:
            items = {k: v for k, v in items.items() if k in keep}
        out.add(frozenset(items.items()))
    return out


def _comparable(r) -> bool:
    return r.status not in ("error", "unknown") and r.complete


def check_metamorphic(doc: dict, seed: int) -> None:
    """Renaming threads, registers and locations, reordering threads, and adding a thread that
    shares nothing with the others do not change what a test allows (nor its verdicts, nor
    whether it is undefined)."""
    import random

    from tests.fuzz import grammar

    base = load_valid(grammar.dump(doc))
    if not base or len(base[0][1].events) > MAX_EVENTS - 3:
        return
    with limits.use(FUZZ_LIMITS):
        r0 = check_test(base[0][0], default_model(), "ptx", frozenset(), "z3", FUZZ_LIMITS.timeout)
    if not _comparable(r0):
        return
    rng = random.Random(seed)
    threads = {n: f"T{rng.randrange(1000)}_{k}" for k, n in enumerate(doc["threads"])}
    regs = {f"r{k}": f"q{k}_{rng.randrange(100)}" for k in range(4)}
    regs.update({f"v{k}": f"w{k}" for k in range(128)} | {f"a{k}": f"am{k}" for k in range(4)} | {"p": "pq"})
    locs = {n: f"L{k}_{n}" for k, n in enumerate(grammar.MEMORY)}
    renamed = grammar.rename(doc, threads, regs, locs)
    reordered = dict(doc, threads=dict(reversed(list(doc["threads"].items()))))
    keymap = {}
    for k in r0.observe:
        t, _, reg = k.partition(":")
        keymap[k] = f"{threads.get(t, t)}:{regs.get(reg, reg)}" if reg else locs.get(k, k)
    for what, variant, mapping, keep in (
            ("renaming threads, registers and locations", renamed, keymap, None),
            ("reordering threads", reordered, None, None),
            ("adding an independent thread", grammar.with_independent_thread(doc), None, set(r0.observe))):
        items = load_valid(grammar.dump(variant))
        assert items, f"{what}: the variant does not load"
        with limits.use(FUZZ_LIMITS):
            r1 = check_test(items[0][0], default_model(), "ptx", frozenset(), "z3", FUZZ_LIMITS.timeout)
        if not _comparable(r1):
            assert r1.status != "error", f"{what} made the test an error: {r1.message}"
            continue
        assert bool(r0.undefined) == bool(r1.undefined), f"{what} changed undefinedness: {r0.undefined} {r1.undefined}"
        assert [(c.expected, c.allowed) for c in r0.conditions] == [(c.expected, c.allowed) for c in r1.conditions], \
            f"{what} changed a verdict"
        if not r0.undefined:
            assert _outcome_sets(r0, mapping) == _outcome_sets(r1, keep=keep), f"{what} changed the outcomes"
        REACHED["metamorphic"] += 1


def check_suite_permutation(docs: list, order: list[int], jobs: int) -> None:
    """A suite's results do not depend on the order of its tests or on --jobs (issue 14): each
    test's JSON is the same when the suite runs in another order, in worker processes."""
    from checker.batch import run_tests
    from tests.fuzz import grammar

    named = [dict(d, name=f"G{k}") for k, d in enumerate(docs)]
    first = "".join(grammar.dump([d]) for d in named)
    second = "".join(grammar.dump([named[k]]) for k in order)
    results = []
    for text, j in ((first, 0), (second, jobs)):
        with limits.use(FUZZ_LIMITS):
            items = load_text(text, "fuzz/suite.yaml")
            small = [it for it in items if isinstance(it, LitmusError) or _small(it)]
            rs = run_tests(small, None, (), "z3", jobs=j, lim=FUZZ_LIMITS)
        results.append({r.name: r for r in rs})
    def line_free(text: str) -> str:
        return re.sub(r"suite\.yaml:\d+", "suite.yaml:N", text)

    # a test that does not load is named by its file and line, which move with it: compare those
    # by their messages, the others by name
    unnamed = [sorted(line_free(r.message) for n, r in rs.items() if not n.startswith("G")) for rs in results]
    assert unnamed[0] == unnamed[1], unnamed
    results = [{n: r for n, r in rs.items() if n.startswith("G")} for rs in results]
    assert sorted(results[0]) == sorted(results[1]), (sorted(results[0]), sorted(results[1]))
    for name, r in results[0].items():
        # a message may name the line of the test's condition, which moves with the test
        a, b = (replace(x, message=line_free(x.message))
                for x in (r, results[1][name]))
        assert_same(a, b, f"{name} in another order / with --jobs {jobs}:")
    REACHED["permutation"] += 1


def _small(test) -> bool:
    try:
        return len(lower(test).events) <= MAX_EVENTS
    except CheckerError:
        return True


def check_lowering_refused_fast(doc: dict) -> None:
    """A test grown past the events limit (its threads multiplied to 32, their code repeated to
    64 instructions: the front end's own limits) is refused while lowering, with the
    limit named."""

    from tests.fuzz import grammar

    valid = load_valid(grammar.dump(doc))
    if not valid:
        return
    t = valid[0][0]
    threads = tuple(replace(th, name=f"{th.name}x{k}", code=(th.code * 64)[:64])
                    for k, th in ((k, t.threads[k % len(t.threads)]) for k in range(32)))
    grown = replace(t, threads=threads, expectations=())
    with limits.use(FUZZ_LIMITS):
        try:
            es = lower(grown)
        except LimitExceeded as e:
            assert "--limit events=N" in str(e), str(e)
            REACHED["refused-fast"] += 1
            return
        except LitmusError:
            return
        assert len(es.events) <= FUZZ_LIMITS.events


# ----------------------------------------------------------------------------- output safety --

OUTPUT_WRITERS = ("run -o", "run --results-jsonl", "check --dot", "report --out", "export -o")
TARGET_KINDS = ("absent", "regular", "input", "folder-empty", "folder-user", "folder-ptxmc", "symlink-file",
                "symlink-dangling", "fifo", "device", "under-a-file", "dot", "cwd")


def _snapshot(p: Path):
    """What is at `p` (without following a link), deep enough to see any change."""
    import hashlib
    import stat as st_

    try:
        s = os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if st_.S_ISLNK(s.st_mode):
        return ("link", os.readlink(p))
    if st_.S_ISDIR(s.st_mode):
        return ("dir", tuple(sorted((str(q.relative_to(p)), _snapshot(q)) for q in p.iterdir())))
    if st_.S_ISREG(s.st_mode):
        return ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return ("node", st_.S_IFMT(s.st_mode), s.st_rdev)


def check_output_safety(tmp: Path, writer: str, kind: str, force: bool, follow: bool) -> None:
    """Whatever is at an output path, ptxmc either writes its output there - only where the policy
    allows: nothing, a regular file for a file output, an empty folder or ptxmc's own for a folder
    output - or refuses with `ptxmc: cannot write PATH: ...` (exit 2) and leaves it exactly as
    it was. Nothing else on disk changes either way (the input, the folders around)."""
    import shutil
    import stat as st_

    case = tmp / f"case-{writer.replace(' ', '_')}-{kind}"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    test = case / "in.yaml"
    test.write_text(CAT_PROBE)
    other = case / "other.txt"
    other.write_text("user data\n")
    folder_out = writer in ("report --out", "export -o")
    target = case / "target"
    if kind == "regular":
        target.write_text("old\n")
    elif kind == "input":
        target = test
    elif kind == "folder-empty":
        target.mkdir()
    elif kind == "folder-user":
        target.mkdir()
        (target / "thesis.txt").write_text("precious\n")
    elif kind == "folder-ptxmc":
        target.mkdir()
        (target / ".ptxmc-output").write_text(json.dumps({"tool": "ptxmc", "kind": writer.split()[0] if
                                                          writer.startswith("export") else "report",
                                                          "files": ["report.json"]}))
        (target / "report.json").write_text("{}")
    elif kind == "symlink-file":
        target.symlink_to(other)
    elif kind == "symlink-dangling":
        target.symlink_to(case / "nowhere")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        try:
            os.mknod(target, st_.S_IFCHR | 0o666, os.makedev(1, 3))
        except (PermissionError, OSError):
            return
    elif kind == "under-a-file":
        target = other / "out"
    elif kind == "dot":
        target = Path(".")
    elif kind == "cwd":
        target = case
    before = {p: _snapshot(p) for p in (case, test, other)}
    at_target = _snapshot(target) if kind not in ("dot", "cwd") else None
    argv = {"run -o": ["run", str(test), "--jobs", "0", "--no-timing", "-o", str(target)],
            "run --results-jsonl": ["run", str(test), "--jobs", "0", "--results-jsonl", str(target)],
            "check --dot": ["check", str(test), "P0:r0=0", "--dot", str(target)],
            "report --out": ["report", str(test), "--jobs", "0", "--no-blame", "--out", str(target)],
            "export -o": ["export", str(test), "--to", "herd", "-o", str(target)]}[writer]
    argv += ["--force"] * force + ["--follow-symlinks"] * follow
    old_cwd = os.getcwd()
    os.chdir(case)
    try:
        code, out, err = run_cli(argv)
    finally:
        os.chdir(old_cwd)
    allowed = {"absent": True, "regular": not folder_out, "input": False,
               "folder-empty": folder_out, "folder-ptxmc": folder_out, "folder-user": folder_out and force,
               "symlink-file": follow and not folder_out, "symlink-dangling": follow,
               "fifo": False, "device": False, "under-a-file": False, "dot": False, "cwd": False}[kind]
    if kind == "folder-user" and writer == "export -o" and force:
        allowed = True
    assert "Traceback" not in err and "internal error" not in err, err
    if not allowed:
        assert code == 2 and "cannot write" in err, (writer, kind, code, err)
        assert _snapshot(test) == before[test] and _snapshot(other) == before[other], (writer, kind)
        if kind not in ("dot", "cwd"):
            assert _snapshot(target) == at_target, (writer, kind, "the target changed")
        REACHED["output-refused"] += 1
        return
    assert code in (0, 1), (writer, kind, code, err)
    assert _snapshot(test) == before[test], (writer, kind, "the input changed")
    if kind == "folder-user":
        assert (target / "thesis.txt").read_text() == "precious\n", "a user's file was touched"
    if kind == "symlink-file":
        assert target.is_symlink() and _snapshot(other) != before[other]
    elif kind != "symlink-dangling":
        assert _snapshot(other) == before[other]
    REACHED["output-written"] += 1
