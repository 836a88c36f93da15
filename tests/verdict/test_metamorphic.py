"""Metamorphic checks of the default model on every bundled core test: strengthening a program
never adds outcomes, and a program whose accesses are all strong at .sys scope with fence.sc.sys
between every two of them has exactly the sequentially consistent outcomes."""
from __future__ import annotations

from dataclasses import replace

import pytest

from checker.ast import Instr
from checker.resources import resolve_model
from checker.engines.smt import Z3Engine
from checker.isa.registry import lower
from checker.isa.registry import parse_instr, with_qualifiers

from ..conftest import bundled_tests

TESTS = [t for t in bundled_tests() if "/core/" in t.path.replace("\\", "/")]
MEMORY_OPS = ("ld", "st")


def _outcomes(test, model):
    es = lower(test)
    observe = es.observables
    outs, complete = Z3Engine(es, resolve_model(model)).outcomes(observe)
    assert complete
    return outs


def _strong_sys(i: Instr) -> Instr:
    """ld/st at .relaxed.sys (acquire/release kept, scope widened); other scopes widened to .sys."""
    if i.op in MEMORY_OPS:
        sem = i.pick(("acquire", "release"), "relaxed")
        rest = [q for q in i.qualifiers if q not in ("weak", "relaxed", "acquire", "release", "volatile",
                                                     "mmio", "cta", "cluster", "gpu", "sys")]
        return with_qualifiers(i, (sem, "sys", *rest))
    scope = i.quals.get("scope")          # (bar.cta's .cta is no scope)
    return with_qualifiers(i, tuple("sys" if q == scope else q for q in i.qualifiers)) if scope else i


def _fenced(test, transform=lambda i: i):
    fence = parse_instr("fence.sc.sys")
    threads = []
    for th in test.threads:
        code = []
        for k, i in enumerate(th.code):
            if k:
                code.append(fence)
            code.append(transform(i))
        threads.append(replace(th, code=tuple(code)))
    return replace(test, threads=tuple(threads))


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_fence_sc_everywhere_never_adds_outcomes(test):
    assert _outcomes(_fenced(test), "ptx") <= _outcomes(test, "ptx")


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_strong_sys_and_fenced_is_sequentially_consistent(test):
    if any(i.op not in ("ld", "st", "atom", "red", "fence", "membar", "bar", "barrier", "mov", "add",
                        "sub", "mul", "and", "or", "xor") for th in test.threads for i in th.code):
        pytest.skip("only the generic subset")
    if any(m.alias_of or m.view_of for m in test.memory):
        pytest.skip("aliases are not sequentially consistent without proxy fences")
    strong = _fenced(test, _strong_sys)
    assert _outcomes(strong, "ptx") == _outcomes(strong, "sc")


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_strengthening_accesses_and_scopes_never_adds_outcomes(test):
    """Weak -> relaxed, every scope -> .sys: more moral strength can only rule outcomes out."""
    strong = replace(test, threads=tuple(replace(th, code=tuple(_strong_sys(i) for i in th.code))
                                         for th in test.threads))
    assert _outcomes(strong, "ptx") <= _outcomes(test, "ptx")
