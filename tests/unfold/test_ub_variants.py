"""The undefined-behaviour question of a hang-question test, asked on its awaits unrolled like any
loop (UnionSession._ub_variants, docs/model.md#a18), builds only the variants that can have an
execution: a variant is skipped when one it gives by removing iterations of its await loops that
went round has none (the variant with all of them removed is a runs-once combination). The
variants kept are exactly the reference's variants that have an execution, and the answers are
the reference's, on Z3 and brute force, on adversarial cases: undefined behaviour visible only
when the awaits of two threads both went round, only through the iteration of an await after a
ring of one slot wraps, a second await on a location whose failing iterations have no execution,
and a hang only when two threads stop at different awaits."""
from __future__ import annotations

import pytest

from checker import limits
from checker.errors import LimitExceeded
from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.verdict import union
from checker.verdict.check import check_test
from checker.verdict.union import UnionSession
from tests.unfold.test_spin_once import _answer

MODEL = resolve_model("ptx")

# (a dict, not module-level strings: test_spin_once's inline scan compares those itself)
CASES = {
    "UB-TwoRounds": """
- name: UB-TwoRounds
  doc: "P1's failing iteration reads P0's release of a=2 (after the inval), P3's reads P1's release of b=2:
    P3's arrive is then after the inval. Each exits on P2's relaxed 1, which orders nothing: undefined only
    on the variant where both awaits went round."
  source: "PTX ISA 9.4, mbarrier.inval (an mbarrier operation other than init on an invalidated object is
    undefined); Memory Consistency Model (release and acquire patterns; base causality order is transitive)"
  arch: sm_90
  memory:
    mb: {space: shared, owner: gpu0.cluster0.cta0, mbarrier: {count: 1}}
    a: {space: global}
    b: {space: global}
  threads:
    P0:
      at: gpu0.cluster0.cta0.warp0
      code:
        - mbarrier.inval.shared::cta.b64 [mb]
        - st.release.gpu.u32 [a], 2
    P1:
      at: gpu0.cluster0.cta0.warp1
      code:
        - ld.acquire.gpu.u32 r0, [a] == 1
        - st.release.gpu.u32 [b], 2
    P2:
      at: gpu0.cluster0.cta0.warp2
      code:
        - st.relaxed.gpu.u32 [a], 1
        - st.relaxed.gpu.u32 [b], 1
    P3:
      at: gpu0.cluster0.cta0.warp3
      code:
        - ld.acquire.gpu.u32 r1, [b] == 1
        - mbarrier.arrive.relaxed.cta.shared::cta.b64 _, [mb]
  expect:
    undefined: true
    hang: allowed
""",
    "UB-AfterWrap": """
- name: UB-AfterWrap
  doc: "A ring of one slot f0: P fills it (1), waits until C empties it (e0), invalidates mb and fills it again
    (3, a release). C's await for the slot's second value (2, Q's relaxed write) may first read 3: that
    iteration synchronizes with P, and C's arrive is after the inval. The first await cannot read 3 and
    then 1 (coherence): undefined only through the wrapped await's iteration."
  source: "PTX ISA 9.4, mbarrier.inval (an mbarrier operation other than init on an invalidated object is
    undefined); Memory Consistency Model (release and acquire patterns, coherence)"
  arch: sm_90
  memory:
    mb: {space: shared, owner: gpu0.cluster0.cta0, mbarrier: {count: 1}}
    f0: {space: global}
    e0: {space: global}
  threads:
    P:
      at: gpu0.cluster0.cta0.warp0
      code:
        - st.release.gpu.u32 [f0], 1
        - ld.acquire.gpu.u32 r0, [e0] == 1
        - mbarrier.inval.shared::cta.b64 [mb]
        - st.release.gpu.u32 [f0], 3
    C:
      at: gpu0.cluster0.cta0.warp1
      code:
        - ld.acquire.gpu.u32 r1, [f0] == 1
        - st.release.gpu.u32 [e0], 1
        - ld.acquire.gpu.u32 r3, [f0] == 2
        - mbarrier.arrive.relaxed.cta.shared::cta.b64 _, [mb]
    Q:
      at: gpu0.cluster0.cta0.warp2
      code:
        - st.relaxed.gpu.u32 [f0], 2
  expect:
    undefined: true
    hang: allowed
""",
    "UB-SameLocTwice": """
- name: UB-SameLocTwice
  doc: "C awaits f == 1 twice: once the first has read 1, the second cannot read 0 (coherence), so every
    variant in which the second went round, or stops there, has no execution."
  source: "PTX ISA 9.4, Memory Consistency Model (coherence)"
  memory:
    f: {space: global}
  threads:
    P:
      at: gpu0.cta0.warp0
      code:
        - st.release.gpu.u32 [f], 1
    C:
      at: gpu0.cta1.warp0
      code:
        - ld.acquire.gpu.u32 r0, [f] == 1
        - ld.acquire.gpu.u32 r1, [f] == 1
  expect:
    undefined: false
    hang: forbidden
""",
    "Hang-TwoStops": """
- name: Hang-TwoStops
  doc: "P1 gets past a (P0 writes it) and waits for b forever; P2 waits for c forever: the only hang has P1
    stopped at its second await and P2 at its first."
  source: docs/model.md#a18 (a fair execution reads the final value); PTX ISA 9.4, Memory Consistency Model
  memory:
    a: {space: global}
    b: {space: global}
    c: {space: global}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - st.release.gpu.u32 [a], 1
    P1:
      at: gpu0.cta1.warp0
      code:
        - ld.acquire.gpu.u32 r0, [a] == 1
        - ld.acquire.gpu.u32 r1, [b] == 1
    P2:
      at: gpu0.cta2.warp0
      code:
        - ld.acquire.gpu.u32 r2, [c] == 1
        - st.release.gpu.u32 [b], 1
  expect:
    hang: allowed
""",
}

UNDEFINED = {"UB-TwoRounds": True, "UB-AfterWrap": True, "UB-SameLocTwice": False, "Hang-TwoStops": False}


def _test(name: str):
    (t,) = load_text(CASES[name], f"{name}.yaml")
    return t


def _full(t, engine: str, once: bool):
    """Everything _answer compares, and each flag's reason (brute force's candidate limit raised
    for UB-AfterWrap's variants)."""
    with limits.use(limits.current().override(["candidates=200000"])):
        u = UnionSession(t, MODEL, engine=engine, loops=True, spin_once=once)
        return _answer(t, engine, once), sorted({(f.flag, f.why) for f in u.undefined})


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_answers_are_the_reference_s(name, engine):
    """Hangs, outcomes, undefined-behaviour flags and their reasons: the same with the variants
    built as the reference builds them; and what the PTX text gives."""
    t = _test(name)
    once, ref = _full(t, engine, True), _full(t, engine, False)
    assert once == ref
    assert bool(once[1]) == UNDEFINED[name]
    assert once[0][0] == t.expect_hang


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_variants_kept_are_the_reference_s_with_an_execution(name):
    u = UnionSession(_test(name), MODEL, loops=True)
    ref = UnionSession(_test(name), MODEL, loops=True, spin_once=False)
    want = [c.key() for c, s in zip(ref.combos, ref.sessions) if s.witness(None) is not None]
    assert [c.key() for c, _ in u._ub_variants] == want


def test_variants_without_an_execution_are_not_lowered(monkeypatch):
    """The second await's failing iterations have no execution: of the reference's seven variants
    (three with an execution), the two in which it stops are not lowered (their runs-once
    combination has none), and of the two in which it went round only the one whose first await
    did not is (the other gives it by removing the first await's iteration)."""
    lowered = []
    real = union.lower

    def counted(test):
        lowered.append(test)
        return real(test)
    u = UnionSession(_test("UB-SameLocTwice"), MODEL, loops=True)
    assert len(UnionSession(_test("UB-SameLocTwice"), MODEL, loops=True, spin_once=False).combos) == 7
    monkeypatch.setattr(union, "lower", counted)
    assert len(u._ub_variants) == 3
    assert len(lowered) == 4


@pytest.mark.parametrize("name", sorted(CASES))
def test_run_meets_each_case_s_expectations(name):
    r = check_test(_test(name), MODEL)
    assert r.status == "pass", r.message


def _own_writes(n: int) -> str:
    """Two threads, each awaiting n flags it has just written itself (no await can fail: its
    thread's own write is coherence-before any read of it), the second then invalidating an
    mbarrier and arriving on it (undefined)."""
    def thread(name: str, warp: int, tail: str) -> str:
        code = "".join(f"        - st.relaxed.gpu.u32 [{name}{k}], 1\n        - ld.acquire.gpu.u32 r{k}, [{name}{k}] == 1\n"
                       for k in range(n))
        return f"    {name.upper()}:\n      at: gpu0.cluster0.cta0.warp{warp}\n      code:\n{code}{tail}"
    memory = "".join(f"    {t}{k}: {{space: global}}\n" for t in "pq" for k in range(n))
    inval = "        - mbarrier.inval.shared::cta.b64 [mb]\n        - mbarrier.arrive.shared::cta.b64 _, [mb]\n"
    return f"""
- name: OwnWrites{n}
  source: "PTX ISA 9.4, Memory Consistency Model (coherence); mbarrier.inval (an mbarrier operation other than
    init on an invalidated object is undefined)"
  arch: sm_90
  memory:
    mb: {{space: shared, owner: gpu0.cluster0.cta0, mbarrier: {{count: 1}}}}
{memory}  threads:
{thread("p", 0, "")}{thread("q", 1, inval)}  expect:
    undefined: true
    hang: forbidden
"""


def test_more_unrolled_variants_than_the_limit_but_few_with_an_execution():
    """With 4 awaits a thread, unrolled twice each, the two threads have 31 x 31 variants, more
    than the limit of 256 (the reference refuses); the search visits the 25 runs-once choices and
    those one iteration away from the one with an execution, and answers: undefined behaviour,
    no hang."""
    (t,) = load_text(_own_writes(4), "own.yaml")
    with pytest.raises(LimitExceeded):
        UnionSession(t, MODEL, loops=True, spin_once=False)
    u = UnionSession(t, MODEL, loops=True)
    assert [f.flag for f in u.undefined] == ["MbarrierUninitialised"]
    assert len(u._ub_variants) == 1
    r = check_test(t, MODEL)
    assert r.status == "pass", r.message


def test_the_variants_kept_let_go_of_their_engines():
    """Each variant kept has its flags asked at once and its engine (a Z3 context) let go, so that a
    pipeline's hundreds of variants do not hold hundreds of contexts; the witness of a flag is
    found again on its variant."""
    u = UnionSession(_test("UB-TwoRounds"), MODEL, loops=True)
    assert u._ub_variants and all("engine" not in s.__dict__ for _, s in u._ub_variants)
    flag, w = u.undefined_witness()
    assert flag == "MbarrierUninitialised" and w.paths == next(c.describe() for c, s in u._ub_variants if s.undefined)
    assert [f.flag for f in u.undefined] == ["MbarrierUninitialised"]


THREE_WAITS = """
- name: ThreeWaits
  doc: "P1 waits three times for m's phase 0, which P0 completes after the barrier."
  source: "PTX ISA 9.4, mbarrier.init, mbarrier.arrive, mbarrier.try_wait, bar.sync"
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.init.shared::cta.b64 [m], 1
        - bar.sync 1, 2
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - bar.sync 1, 2
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 0 == 1
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 0 == 1
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 0 == 1
  expect:
    hang: forbidden
"""


def test_a_verdict_refuses_the_unrolled_paths_before_the_refuter_s_work(monkeypatch):
    """P1's awaits run once have 4 paths, unrolled 13: with a limit of 10 the hang question alone
    is answered, the undefined-behaviour question is refused, and a verdict (which asks it first)
    is refused before the stopping combinations are refuted (ub_first: Triton's attention, 60 s
    of refuting to the timeout before it), with the refusal the question gives."""
    (t,) = load_text(THREE_WAITS, "three.yaml")
    lim = limits.current().override(["paths=10"])
    with limits.use(lim):
        u = UnionSession(t, MODEL, loops=True, lim=lim)
        assert u.hangs() == ((), True)
        with pytest.raises(LimitExceeded) as asked:
            u.undefined
        monkeypatch.setattr(UnionSession, "_refuted", lambda self, c: pytest.fail("refuter reached"))
        with pytest.raises(LimitExceeded) as first:
            UnionSession(t, MODEL, loops=True, lim=lim, ub_first=True)
        r = check_test(t, MODEL)
    assert str(first.value) == str(asked.value) == r.message and r.status == "unknown"
    assert "thread P1 has more than 10 control paths" in r.message


PING_PONG_FORBIDDEN = """
- name: PingPongForbidden
  doc: "P0 and P1 pass their waits in turn; P2 waits on n, on which nobody arrives: a hang, which the
    test forbids."
  source: "PTX ISA 9.4, mbarrier.arrive, mbarrier.try_wait (.parity: the phase with that parity has completed)"
  arch: sm_90
  memory:
    m0: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    m1: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    n: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m0]
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m1], 0 == 1
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m0], 0 == 1
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m1]
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [n], 0 == 1
  expect:
    undefined: false
    hang: forbidden
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_a_hang_the_test_forbids_settles_it_before_the_unrolled_search(engine):
    """The extension lemma's premises hold and the hang question finds P2's hang: the lemma fails, and
    the undefined-behaviour search would start from every runs-once choice. The test fails whichever
    way that search goes, so a verdict asks the flags of the runs-once combinations only and fails on
    the hang: with a limit of 8 that search is refused (UNKNOWN before; a CUTLASS mutant built 258
    sessions in 139 s, then was refused), at the default limit it finds no flag, and the status is
    the same. `check ... hang` still asks the whole question (its answer is not a status)."""
    (t,) = load_text(PING_PONG_FORBIDDEN, "pp.yaml")
    lim = limits.current().override(["paths=8"])
    with limits.use(lim):
        u = UnionSession(t, MODEL, engine=engine, loops=True, lim=lim)
        assert u.hang_settles and not u.undefined_once
        with pytest.raises(LimitExceeded):
            u.undefined
        small = check_test(t, MODEL, engine=engine)
    whole = UnionSession(t, MODEL, engine=engine, loops=True)
    assert whole.undefined == () and whole.hangs()[0]      # the whole question: no flag, a hang
    full = check_test(t, MODEL, engine=engine)
    assert small.status == full.status == "fail", (small.message, full.message)
    assert [c.allowed for c in small.conditions] == [c.allowed for c in full.conditions] == [True]
    assert any(n.startswith("undefined behaviour asked only where each await's loop runs once") for n in small.notes)
    assert "P2" in next(n for n in small.notes if n.startswith("hang:"))
    # the reference (no extension lemma) and a test that allows the hang ask the whole question
    assert not UnionSession(t, MODEL, engine=engine, loops=True, extend=False).hang_settles
    (allowed,) = load_text(PING_PONG_FORBIDDEN.replace("hang: forbidden", "hang: allowed"), "pp.yaml")
    assert not UnionSession(allowed, MODEL, engine=engine, loops=True).hang_settles


def test_a_hang_the_test_forbids_fails_it_where_the_undefined_behaviour_search_is_refused():
    """With an mbarrier.inval the lemma's premises fail (the hang is not what settles it first): the
    whole undefined-behaviour search runs, and at a limit of 8 it is refused. The hang question
    still finds P2's hang, and the test fails either way: FAIL, naming the refusal (UNKNOWN
    before); at the default limit the search answers (no flag) and the status is the same."""
    (t,) = load_text(PING_PONG_FORBIDDEN.replace(
        "[m1], 0 == 1\n", "[m1], 0 == 1\n        - mbarrier.inval.shared::cta.b64 [m0]\n", 1), "pp.yaml")
    lim = limits.current().override(["paths=8"])
    with limits.use(lim):
        assert not UnionSession(t, MODEL, loops=True, lim=lim).hang_settles
        small = check_test(t, MODEL)
    full = check_test(t, MODEL)
    assert small.status == full.status == "fail", (small.message, full.message)
    assert small.message.startswith("a hang, which the test forbids: P2 blocks forever"), small.message
    assert "the undefined-behaviour question has no answer (too large" in small.message
    assert [c.allowed for c in small.conditions] == [True]
