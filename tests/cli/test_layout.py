"""The package's layout holds: no import cycle inside checker/, every module imports on its own in
a fresh interpreter, no library module imports the command line, and the instruction families
are listed in exactly one place."""
from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import checker

PKG = Path(checker.__file__).resolve().parent
ROOT = PKG.parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """The checker modules `name` imports, anywhere in its text (function-local imports too)."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("checker")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("checker"):
                continue
            for a in node.names:                 # `from . import x` imports the module x
                out.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod)
    return {m for m in out if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_inside_checker():
    assert _cycles(GRAPH) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_library_module_imports_the_command_line():
    """Only the command line's own entries import it: `python -m checker` and the `ptxmc`
    executable (checker.warm.client, which runs it here or hands it to a warm server)."""
    importers = sorted(m for m, deps in GRAPH.items() if "checker.cli" in deps)
    assert importers == ["checker.__main__", "checker.warm.client", "checker.warm.server"]


def _import_alone(name: str) -> tuple[str, str]:
    r = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, cwd=ROOT)
    return name, r.stderr.strip().splitlines()[-1] if r.returncode else ""


def test_every_module_imports_first_in_a_fresh_interpreter():
    with ThreadPoolExecutor(4) as pool:
        failed = [(n, e) for n, e in pool.map(_import_alone, sorted(MODULES)) if e]
    assert failed == []


def test_the_registry_is_the_only_place_that_lists_the_families():
    """checker.isa.registry names the family modules (it imports them when an instruction needs
    one); no other module imports them all."""
    from checker.isa import registry

    assert {"core", "tcgen05", "wgmma", "async_copy"} <= set(registry.FAMILY_MODULES)
    listing = sorted(m for m, deps in GRAPH.items()
                     if {"checker.isa.core", "checker.isa.tcgen05"} <= deps)
    assert listing == []


# The floors of the package, bottom to top (README "Layout"): a module imports only from its own
# package or from a lower floor, so data flows one way (text -> LitmusTest -> variants ->
# EventStructure -> cat -> engine -> Result -> output) and nothing runs back up.
FLOORS = (
    ("cachedir",),
    ("methodcache",),
    ("errors", "textsafe", "signals", "watchdog", "version"),
    ("ast", "limits", "outsafe", "pool"),
    ("model", "cat"),
    ("isa", "engines", "resources"),
    ("unfold", "executors", "cliargs"),
    ("front", "results"),
    ("verdict", "resume"),
    ("batch", "gen", "harness", "convert"),
    ("repair", "compare", "api"),
    ("report", "audit", "extract", "checker"),
    ("cli",),
    ("__main__", "warm"),
)


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "checker"


def _floor_of() -> dict[str, int]:
    return {p: k for k, floor in enumerate(FLOORS) for p in floor}


def test_every_package_has_a_floor():
    floor = _floor_of()
    assert sorted({_package(m) for m in MODULES} - set(floor)) == []


def test_no_import_runs_from_a_lower_floor_to_a_higher_one():
    floor = _floor_of()
    up = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
                if _package(m) != _package(d) and floor[_package(d)] >= floor[_package(m)])
    assert up == []


def test_unfold_knows_nothing_of_verdicts_engines_or_the_front_end():
    bad = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() if _package(m) == "unfold"
                 for d in deps if _package(d) in ("verdict", "engines", "front", "results"))
    assert bad == []
