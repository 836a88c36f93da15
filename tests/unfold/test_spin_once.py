"""The hang question with each spin-wait await run once (docs/model.md#a18, "An await's loop runs
once"): the same answers as the reference, which unrolls the await loops like any loop, on every
liveness test where the reference runs, on both engines; and a thread with many awaits, which the
reference refuses (more than 256 control paths), answered both ways (issue 35/38)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from checker.errors import LimitExceeded, LitmusError, NeverCompletes
from checker.front.litmus import load_file, load_text
from checker.resources import resolve_model
from checker.verdict.check import check_test
from checker.verdict.union import UnionSession

MODEL = resolve_model("ptx")
ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "litmus" / "liveness").glob("*.yaml")) + \
    sorted(p for p in (ROOT / "litmus").rglob("*.yaml") if "liveness" not in p.parts and "hang:" in p.read_text())


def _answer(test, engine: str, once: bool):
    """Everything the hang question and the outcomes depend on, or the error that stopped it."""
    try:
        u = UnionSession(test, MODEL, engine=engine, loops=True, spin_once=once)
        found, complete = u.hangs()
        outs, whole = u.outcomes()
        return (bool(found), complete, u.never_terminates() is not None, bool(u.stuck()),
                bool(u.bounded), outs, whole, sorted({(h.thread, h.blocked) for h in found}),
                sorted({(f.flag, f.why) for f in u.undefined}))
    except (LimitExceeded, LitmusError, NeverCompletes) as e:
        return type(e).__name__


def _tests(path: Path):
    return [t for t in load_file(path) if not isinstance(t, LitmusError)]


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_spin_once_answers_as_the_unrolled_reference(path, engine):
    """Hang found or not, complete or not, never-terminating, stuck at a barrier, cut off by the
    bound, the outcomes, which waits hang and the undefined-behaviour flags: the same with await
    loops run once as unrolled."""
    compared = 0
    for t in _tests(path):
        ref = _answer(t, engine, False)
        if isinstance(ref, str):
            continue                       # the reference does not run here (e.g. brute's limits)
        assert _answer(t, engine, True) == ref, t.name
        compared += 1
    assert compared or engine == "brute"     # brute's candidate limit may refuse a whole file


def _inline_tests():
    """The litmus tests written as module-level strings in tests/ that await or expect a hang
    (read from the source, not imported)."""
    out = []
    for f in sorted((ROOT / "tests").rglob("test_*.py")):
        src = f.read_text()
        if "hang" not in src or f.name == Path(__file__).name:
            continue
        for node in ast.parse(src).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) and "threads:" in node.value.value:
                try:
                    loaded = load_text(node.value.value, f"{f.name}:{node.targets[0].id}")
                except Exception:              # a template with placeholders, not a test
                    continue
                out += [t for t in loaded if not isinstance(t, LitmusError) and (
                    t.expect_hang is not None or any(i.await_value is not None for th in t.threads for i in th.code))]
    return out


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_spin_once_answers_as_the_reference_on_the_hang_tests_in_tests(engine):
    """The same comparison on the tests tests/ writes inline (fix, audit, soundness, ...)."""
    tests = _inline_tests()
    assert len(tests) >= 5
    compared = 0
    for t in tests:
        ref = _answer(t, engine, False)
        if not isinstance(ref, str):
            assert _answer(t, engine, True) == ref, t.name
            compared += 1
    assert compared


CHAIN = """
name: chain{n}
source: "PTX ISA 9.4, Memory Consistency Model (release/acquire patterns): a flag per step"
memory:
{memory}
threads:
  P0:
    at: gpu0.cta0.warp0
    code:
{stores}
  P1:
    at: gpu0.cta1.warp0
    code:
{loads}
expect:
  hang: {hang}
"""


def _chain(n: int, missing: bool) -> str:
    """P1 awaits n flags in turn, each set by P0 (the last one never, when `missing`)."""
    memory = "".join(f"  f{k}: {{space: global}}\n" for k in range(n))
    stores = "".join(f"      - st.release.gpu.u32 [f{k}], 1\n" for k in range(n - 1 if missing else n))
    loads = "".join(f"      - ld.acquire.gpu.u32 r{k}, [f{k}] == 1\n" for k in range(n))
    return CHAIN.format(n=n, memory=memory, stores=stores, loads=loads,
                        hang="allowed" if missing else "forbidden")


@pytest.mark.parametrize("missing", [False, True])
def test_nine_awaits_in_a_thread_are_answered(missing):
    """Nine awaits in one thread: unrolled twice each they are more than 256 control paths (the
    reference refuses), run once they are ten; the missing last flag is the hang, and is named.
    The undefined-behaviour question is asked on the unrolled awaits (an earlier iteration may
    synchronize: docs/model.md#a18), so `run` refuses it at the path limit, never guessing, also
    where no execution terminates (undefined behaviour on the way to a hang is undefined: it is
    asked first)."""
    (t,) = load_text(_chain(9, missing), "chain.yaml")
    with pytest.raises(LimitExceeded):
        UnionSession(t, MODEL, loops=True, spin_once=False)
    r = check_test(t, MODEL)
    assert r.status == "unknown" and "control paths" in r.message, r.message
    u = UnionSession(t, MODEL, loops=True)
    found, complete = u.hangs()
    assert complete and bool(found) == missing
    if missing:
        assert found[0].thread == "P1" and "f8" in found[0].blocked


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("missing", [False, True])
def test_a_short_chain_agrees_with_the_reference(missing, engine):
    """Where the reference runs (four awaits), both answer alike on both engines."""
    (t,) = load_text(_chain(4, missing), "chain.yaml")
    assert _answer(t, engine, True) == _answer(t, engine, False)
    assert _answer(t, engine, True)[0] == missing
