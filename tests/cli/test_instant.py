"""One-shot commands answer in this process and import only what they use (issue 20, item 5):
`ptxmc --help` imports no solver, parser generator or subcommand machinery; `ptxmc check` and
`ptxmc outcomes` start no process (no worker pool, nothing left behind) and do not import sympy
or (with the model cache warm) lark; the in-process hard bound and Ctrl-C stop a long native Z3
call at once (checker.watchdog); the parsed-model cache is used only while every input matches.
Latency itself is measured in bench/latency.py, not here."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from checker.cat import cache
from checker.cat.interp import load_model
from checker.resources import AXIOMS_DIR, ROOT

MP = "litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster"
COND = "P1:r0=1 /\\ P1:r1=0"


def _python(code: str, env: dict | None = None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    e.pop("PTXMC_DEBUG", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=timeout, **kw)


# What a command imported, and which processes it started, read from inside its own process.
_PROBE = """
import json, os, sys
from checker.cli import main
code = None
try:
    code = main({argv!r})
except SystemExit as e:
    code = e.code
kids = []
if os.path.isdir("/proc"):
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{{pid}}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if pid.isdigit() and int(fields[1]) == os.getpid():
            kids.append(int(pid))
sys.stdout.flush()
print("\\n@@" + json.dumps({{"code": code, "modules": sorted(sys.modules), "children": kids}}))
"""


def _probe(argv: list[str], env: dict | None = None) -> dict:
    r = _python(_PROBE.format(argv=argv), env)
    assert "@@" in r.stdout, r.stderr
    return json.loads(r.stdout.rsplit("@@", 1)[1])


HEAVY_FOR_HELP = ("z3", "yaml", "lark", "sympy", "multiprocessing", "checker.pool", "checker.batch",
                  "checker.front.litmus", "checker.isa.registry", "checker.harness.codegen",
                  "checker.convert.driver", "checker.report.build", "checker.results.output")


def test_help_imports_no_solver_and_no_subcommand_machinery():
    got = _probe(["--help"])
    assert got["code"] == 0
    assert [m for m in HEAVY_FOR_HELP if m in got["modules"]] == []


def test_check_runs_in_process_without_pool_sympy_or_lark(tmp_path):
    env = {"PTXMC_CACHE_DIR": str(tmp_path / "cache")}
    first = _probe(["check", MP, COND], env)
    assert first["code"] == 0 and first["children"] == []
    assert "lark" in first["modules"]                   # a cold cache parses the model
    again = _probe(["check", MP, COND], env)
    assert again["code"] == 0 and again["children"] == []
    unused = ("multiprocessing", "checker.pool", "checker.batch", "sympy", "lark", "checker.harness.codegen",
              "checker.convert.driver", "checker.report.build")
    assert [m for m in unused if m in again["modules"]] == []


@pytest.mark.parametrize("spec", ["litmus/core/MP.yaml::MP+rel.cta+acq.cta+diffGPU",    # formula `true`
                                  "litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster"])  # two registers
def test_outcomes_runs_in_process_without_sympy_for_small_sets(tmp_path, spec):
    got = _probe(["outcomes", spec], {"PTXMC_CACHE_DIR": str(tmp_path)})
    assert got["code"] == 0 and got["children"] == []
    assert "sympy" not in got["modules"] and "multiprocessing" not in got["modules"]


SB3 = """\
name: SB3
source: "PTX ISA 9.4, Memory Consistency Model > Axioms > Fence-SC Order"
threads:
  P0:
    at: gpu0.cta0
    code: ['st.relaxed.gpu.global [x], 1', fence.sc.gpu, 'ld.relaxed.gpu.global r0, [y]']
  P1:
    at: gpu0.cta1
    code: ['st.relaxed.gpu.global [y], 1', fence.sc.gpu, 'ld.relaxed.gpu.global r0, [z]']
  P2:
    at: gpu0.cta2
    code: ['st.relaxed.gpu.global [z], 1', fence.sc.gpu, 'ld.relaxed.gpu.global r0, [x]']
"""


def test_small_outcomes_import_no_sympy_z3_or_xml(tmp_path):
    """A test brute force judges needs no solver, and a formula over three registers no sympy
    (its SOPform is carried out in checker.results.formula); JUnit's XML escaping is not loaded."""
    f = tmp_path / "sb3.yaml"
    f.write_text(SB3)
    got = _probe(["outcomes", str(f)], {"PTXMC_CACHE_DIR": str(tmp_path / "cache")})
    assert got["code"] == 0
    assert [m for m in ("sympy", "z3", "xml.sax.saxutils") if m in got["modules"]] == []


def test_a_small_check_imports_no_hash_pickle_json_or_archive_modules(tmp_path):
    """With the model cache warm, a small `outcomes` or `check` reads the cache with the C
    unpickler and the built-in SHA-256 (not pickle, nor hashlib, which loads OpenSSL), writes no
    JSON, and builds its command line without shutil (argparse imports it, and with it zlib, bz2
    and lzma, for the terminal's width) or the `run` command's executor options."""
    f = tmp_path / "sb3.yaml"
    f.write_text(SB3)
    env = {"PTXMC_CACHE_DIR": str(tmp_path / "cache")}
    assert _probe(["outcomes", str(f)], env)["code"] == 0           # (a cold cache stores the model)
    unneeded = ("hashlib", "_hashlib", "pickle", "json", "shutil", "bz2", "lzma", "checker.executors.options")
    probe = ("import sys\nfrom checker.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
             "print('@@', sorted(sys.modules))")          # (_probe's own json is imported first)
    for argv in (["outcomes", str(f)], ["check", str(f), "P0:r0=0 /\\ P1:r0=0"]):
        r = _python(probe.format(argv=argv), env)
        modules = eval(r.stdout.rsplit("@@", 1)[1])
        assert [m for m in unneeded if m in modules] == [], argv


def test_the_front_end_imports_no_solver_harness_or_unused_family(tmp_path):
    """Loading a test imports the instruction families it uses and nothing of the solver, the
    harness, the output safety layer or the other families (checker.isa.registry loads a family
    module when an instruction needs it); a tensor-core test then loads wgmma's."""
    f = tmp_path / "sb3.yaml"
    f.write_text(SB3)
    r = _python(f"""
        import json, sys
        from checker.front.litmus import load_file
        load_file({str(f)!r})
        before = sorted(sys.modules)
        load_file({str(ROOT / "litmus" / "tensorcore" / "wgmma.yaml")!r})
        print(json.dumps([before, sorted(sys.modules)]))
        """)
    assert r.returncode == 0, r.stderr
    before, after = json.loads(r.stdout)
    unused = ("z3", "sympy", "lark", "checker.harness", "checker.outsafe", "checker.pool", "checker.isa.wgmma",
              "checker.isa.tcgen05", "checker.isa.async_copy", "checker.isa.mbarrier", "checker.isa.proxy")
    assert [m for m in before if m.startswith(unused)] == []
    assert "checker.isa.core" in before and "checker.isa.wgmma" in after


def test_outcomes_of_a_small_test_loads_no_output_safety_layer(tmp_path):
    """`outcomes` writes nothing but stdout: checker.outsafe (json, shutil, tempfile) stays out."""
    f = tmp_path / "sb3.yaml"
    f.write_text(SB3)
    got = _probe(["outcomes", str(f)], {"PTXMC_CACHE_DIR": str(tmp_path / "cache")})
    assert got["code"] == 0
    assert [m for m in ("checker.outsafe", "checker.isa.wgmma", "checker.isa.tcgen05") if m in got["modules"]] == []


def test_compiled_model_is_read_back_from_the_cache(tmp_path):
    """The brute-force functions compiled from the model are kept beside the parsed model: a
    second process compiles nothing, and answers the same."""
    env = {"PTXMC_CACHE_DIR": str(tmp_path)}
    spec = "litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster"
    first = _python(f"from checker.cli import main; main(['outcomes', {spec!r}])", env)
    assert first.returncode == 0, first.stderr
    assert list(tmp_path.glob("*.code"))
    no_compiler = f"""
        from checker.cat import compiled
        def refuse(self, mode):
            raise AssertionError("compiled again")
        compiled._Compiler.code = refuse
        from checker.cli import main
        main(['outcomes', {spec!r}])
    """
    again = _python(no_compiler, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    off = _python(no_compiler, {"PTXMC_CACHE_DIR": "off"})      # (the probe does stop a compilation)
    assert "compiled again" in off.stdout + off.stderr


def test_check_exits_at_once_and_leaves_nothing_behind(tmp_path):
    """The executable's fast exit: output complete, status right, no process left."""
    r = subprocess.run([sys.executable, "-m", "checker", "check", MP, COND], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[2] == "Forbidden" and r.stdout.endswith("\n")
    r = subprocess.run([sys.executable, "-m", "checker", "check", MP, "P1:r0=7"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0 and "Impossible" in r.stdout


def test_soft_timeout_of_check_is_unknown():
    r = subprocess.run([sys.executable, "-m", "checker", "check", MP, COND, "--timeout", "0.001"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 3          # check: UNKNOWN (docs/cli.md#exit-codes)
    assert r.stderr.startswith(f"ptxmc: UNKNOWN: {MP}: timeout: no answer within 0.001 s")


# -- checker.watchdog: a long native call (a pigeonhole formula Z3 needs minutes for) ------------

_PIGEONS = """
import sys, time, z3
from checker.watchdog import hard_bound
z3.set_param("ctrl_c", False)          # as checker.cli does: Z3 would answer 'unknown' to Ctrl-C
n = 13
s = z3.Solver()
p = [[z3.Bool(f"p{{i}}_{{j}}") for j in range(n - 1)] for i in range(n)]
for i in range(n):
    s.add(z3.Or(p[i]))
for j in range(n - 1):
    for a in range(n):
        for b in range(a + 1, n):
            s.add(z3.Or(z3.Not(p[a][j]), z3.Not(p[b][j])))
with hard_bound({seconds}, lambda t: f"ptxmc: UNKNOWN: stopped after {{t:.1f}} s"):
    print("solving", flush=True)        # (inside the bound: a Ctrl-C from now on is the watchdog's)
    s.check()
print("finished", flush=True)
"""


def test_hard_bound_stops_a_native_call_at_the_deadline():
    # pigeonhole 13 into 12 runs for hours in Z3: that the process ends, with the bound's message
    # and not "finished", shows the bound stopped the native call (the 600 s are a safety net, not
    # a measurement: a busy machine starts Python and imports z3 slowly; the seconds printed are
    # measured, so only their presence is checked)
    r = _python(_PIGEONS.format(seconds=1.0), timeout=600)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout == "solving\n"
    assert re.match(r"ptxmc: UNKNOWN: stopped after \d+\.\d s\n", r.stderr), r.stderr


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_ctrl_c_stops_a_native_call_at_once():
    e = {**os.environ, "PYTHONPATH": str(ROOT)}
    # (Ctrl-C's default action in the child: started with SIGINT ignored - pytest as a background
    # job or under nohup - Python installs no handler, the watchdog hears nothing, and the bound's
    # 60 s end the process with status 1)
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_PIGEONS.format(seconds=60))], cwd=ROOT, env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline() == "solving\n"
        time.sleep(0.5)                                  # inside s.check(), a native call
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=600)          # a safety net: without the handler, hours
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130 and err == "ptxmc: interrupted\n" and out == ""


def test_hard_bound_is_silent_when_the_work_finishes():
    # the block ends long before its bound (2 s: a 0.3 s bound raced a loaded machine, where the
    # process may not run for that long), and the process lives past the bound
    r = _python("""
        import time
        from checker.watchdog import hard_bound
        with hard_bound(2.0, lambda t: "too late"):
            pass
        time.sleep(2.5)
        print("done")
    """)
    assert r.returncode == 0 and r.stdout == "done\n" and r.stderr == ""


# -- checker.cat.cache -----------------------------------------------------------------------------

def _copy_model(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for f in AXIOMS_DIR.glob("*.cat"):
        (d / f.name).write_bytes(f.read_bytes())
    return d / "ptx.cat"


def test_model_cache_round_trip_and_invalidation(tmp_path, monkeypatch):
    from checker.cat import interp

    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    path = str(_copy_model(tmp_path / "m"))
    parsed = load_model(path, persist=True)
    assert cache.load(path) == parsed                      # stored, and equal to a fresh parse
    interp._cache.clear()
    assert load_model(path, persist=True) == parsed        # read back
    # A changed model is parsed again, never served from the cache.
    text = Path(path).read_text()
    Path(path).write_text(text.replace("(* Glossary", "(* an edit *)\n(* Glossary", 1))
    assert cache.load(path) is None
    interp._cache.clear()
    edited = load_model(path, persist=True)
    assert [c.where.line for c in edited.checks] == [c.where.line + 1 for c in parsed.checks]
    assert cache.load(path) == edited
    # A corrupt entry is ignored.
    for f in (tmp_path / "cache").glob("*.pickle"):
        f.write_bytes(b"not a pickle")
    assert cache.load(path) is None
    # Other limits are another key: a model over a smaller limit is not served from the cache.
    from checker import limits

    load_model(path, persist=True)
    with limits.use(limits.DEFAULT.override(["nesting=3"])):
        assert cache.load(path) is None


def test_model_cache_off_and_not_private(tmp_path, monkeypatch):
    path = str(_copy_model(tmp_path / "m"))
    monkeypatch.setenv(cache.ENV, "off")
    assert cache.folder() is None
    model = load_model(path)
    cache.store(path, model, cache.digest(path))
    assert cache.load(path) is None
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    monkeypatch.setenv(cache.ENV, str(shared))
    cache.store(path, model, cache.digest(path))
    assert list(shared.iterdir()) == [] and cache.load(path) is None


def test_only_bundled_models_are_cached(tmp_path, monkeypatch):
    from checker.cat import interp
    from checker.resources import resolve_model

    interp._cache.clear()
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    resolve_model(str(_copy_model(tmp_path / "m")))
    assert not (tmp_path / "cache").exists()
    resolve_model(None)
    assert len(list((tmp_path / "cache").glob("*.pickle"))) == 1


# -- checker.methodcache -----------------------------------------------------------------------------

_METHODS = """
import inspect, marshal, sys
import checker.cli, checker.api, checker.front.litmus, checker.verdict.check, checker.engines.brute
from checker import methodcache
out = {}
for name, mod in sorted(sys.modules.items()):
    if not name.startswith("checker.") or mod is None:
        continue
    for cls in list(vars(mod).values()):
        if isinstance(cls, type) and cls.__module__ == name and "__dataclass_fields__" in vars(cls):
            for m in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
                f = vars(cls).get(m)
                if f is not None:
                    out[f"{cls.__qualname__}.{m}"] = inspect.unwrap(f).__code__
sys.stdout.buffer.write(marshal.dumps((methodcache.compiled, out)))
"""


def _methods(env: dict, plain: bool = False) -> tuple[int, dict]:
    """(texts compiled, {method: code}); `plain`: dataclasses left alone (the cache not installed)."""
    import marshal

    e = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    code = ("import checker.methodcache\ncheckermethodcache = checker.methodcache\n"
            "checkermethodcache.install = lambda: None\n" if plain else "") + _METHODS
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=e, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    return marshal.loads(r.stdout)


def test_dataclass_methods_are_compiled_once_and_equal_to_what_dataclasses_compiles(tmp_path):
    """The first process compiles the dataclasses' methods and keeps their code (checker.methodcache);
    the next one compiles none, and every method's code is the code dataclasses compiles itself
    (the cache off)."""
    env = {"PTXMC_CACHE_DIR": str(tmp_path / "cache")}
    first_compiled, first = _methods(env)
    again_compiled, again = _methods(env)
    off_compiled, off = _methods({"PTXMC_CACHE_DIR": "off"})
    plain_compiled, plain = _methods(env, plain=True)
    assert first_compiled > 100 and again_compiled == 0 and off_compiled == first_compiled and plain_compiled == 0
    assert len(plain) > 200 and again.keys() == off.keys() == first.keys() == plain.keys()
    assert [k for k in plain if again[k] != plain[k] or first[k] != plain[k] or off[k] != plain[k]] == []


def test_dataclass_method_cache_is_not_used_from_a_shared_or_broken_file(tmp_path):
    cache_dir = tmp_path / "cache"
    env = {"PTXMC_CACHE_DIR": str(cache_dir)}
    _methods(env)
    stored = list(cache_dir.glob("dataclasses-*.marshal"))
    assert len(stored) == 1
    # one file per exact interpreter: a pre-release and the release share a cache tag, not their bytecode
    assert f"-{sys.hexversion:x}-" in stored[0].name
    cache_dir.chmod(0o777)                  # others may write there: not read, not written
    try:
        assert _methods(env)[0] > 100
    finally:
        cache_dir.chmod(0o700)
    stored[0].write_bytes(stored[0].read_bytes()[:1000])       # truncated: compiled, and written again
    assert _methods(env)[0] > 100
    assert _methods(env)[0] == 0


def test_other_dataclasses_are_left_to_dataclasses(tmp_path):
    """A dataclass of the user's, made after ptxmc is imported, is made by dataclasses as ever:
    not through the cache, and compiled without ptxmc's compiler flags (its __init__'s
    annotations are the types, not strings)."""
    code = ("import dataclasses, checker.ast\nfrom checker import methodcache\nseen = len(methodcache._used)\n"
            "@dataclasses.dataclass(frozen=True)\nclass Mine:\n    x: int = 0\n"
            "print(len(methodcache._used) - seen, Mine(1), Mine(1) == Mine(1), Mine.__init__.__annotations__['x'])")
    r = _python(code, {"PTXMC_CACHE_DIR": str(tmp_path / "cache")})
    assert r.stdout.split() == ["0", "Mine(x=1)", "True", "<class", "'int'>"], r.stderr
