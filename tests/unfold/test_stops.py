"""Stopping combinations refuted by the final state of an mbarrier (checker.verdict.stops,
docs/model.md#a18): a refuted combination has no hang -- its Session, asked as the reference asks
every combination, finds none -- and the hang question's answer is the reference's, on every
test of litmus/ with awaits, loops or a hang expectation, on both engines, and on a kernel's
skeleton whose hangs the refuter would hide if it counted a wait's completion it cannot rely on."""
from __future__ import annotations

from pathlib import Path

import pytest

from checker.errors import LimitExceeded, LitmusError, NeverCompletes
from checker.front.litmus import load_file, load_text
from checker.verdict import liveness
from checker.verdict.stops import refuted
from checker.verdict.union import UnionSession
from tests.unfold.test_ub_variants import MODEL

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for p in (ROOT / "litmus").rglob("*.yaml")
               if any(k in p.read_text() for k in ("hang:", "== 1", "== 0", "bra ")))


def _hangs(t, engine: str, refute: bool):
    try:
        u = UnionSession(t, MODEL, engine=engine, loops=True, refute=refute)
        found, complete = u.hangs()
        return sorted((h.thread, h.blocked, h.combo) for h in found), complete, u.never_terminates() is not None
    except (LimitExceeded, LitmusError, NeverCompletes) as e:
        return type(e).__name__


def _refuted_have_no_hang(t, engine: str) -> int:
    """Each combination the refuter discards, asked as the reference does: no hang. How many."""
    try:
        u = UnionSession(t, MODEL, engine=engine, loops=True, refute=False)
    except (LimitExceeded, LitmusError, NeverCompletes):
        return 0
    n = 0
    for c, s in zip(u.combos, u.sessions):
        if c.cut and all(spin.fair_checkable for _, spin in c.cut) and refuted(u, c, liveness._fair):
            assert liveness._fair_hang(u, c, s) is None, (t.name, c.describe())
            n += 1
    for c, _ in u.blocked:
        if c.cut and all(spin.fair_checkable for _, spin in c.cut) and refuted(u, c, liveness._fair):
            assert liveness._cut_and_blocked(u, c)[0] is None, (t.name, c.describe())
            n += 1
    return n


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_refuter_keeps_the_reference_answer(path, engine):
    tests = [t for t in load_file(path) if not isinstance(t, LitmusError)]
    for t in tests:
        assert _hangs(t, engine, True) == _hangs(t, engine, False), t.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_refuted_combination_has_no_hang(path):
    for t in load_file(path):
        if not isinstance(t, LitmusError):
            _refuted_have_no_hang(t, "z3")


def test_the_refuter_refutes_on_a_pipeline():
    """(164 refuted combinations over litmus/, each asked above; here a TMA pipeline's 3.)"""
    (path,) = [p for p in FILES if p.name == "tma-pipeline.yaml"]
    assert sum(_refuted_have_no_hang(t, "z3") for t in load_file(path) if not isinstance(t, LitmusError)) == 3


SKELETONS = ["cuda/tma_ws_pipeline.sm90a.ptx", "triton/gluon_ws_matmul.sm90a.ptx", "cuda/cluster_dsmem.sm90a.ptx"]


@pytest.fixture(scope="module")
def skeletons(tmp_path_factory):
    from checker.extract.api import extract_file
    out = {}
    for k in SKELETONS:
        folder = tmp_path_factory.mktemp("sk")
        (x,) = extract_file(str(ROOT / "examples" / "kernels" / k), out_dir=str(folder), hang=True)
        (t,) = [t for t in load_file(x.path) if not isinstance(t, LitmusError)][:1]
        out[k] = t
    return out


@pytest.mark.parametrize("k", SKELETONS)
def test_skeletons_answer_as_the_reference(skeletons, k):
    from checker import limits
    from checker.extract.api import EVENTS, INSTRUCTIONS
    lim = limits.current().override([f"events={EVENTS}", f"instructions={INSTRUCTIONS}", "timeout=900"])
    t = skeletons[k]
    with limits.use(lim):
        got = _hangs(t, "z3", True)
        want = _hangs(t, "z3", False)
    assert got == want


# A producer that arrives twice on a one-arrival mbarrier, the second time with nothing ordering
# it after the consumer's wait: the consumer's second wait (parity 1) completes in the
# executions where both arrives come before it... and in the others too: the refuter folds every
# order, so where some order leaves the phase short (an arrive before the init, overwritten) it
# must not refute.
BEFORE_INIT = """
- name: ArriveMayPrecedeInit
  doc: "P1 arrives on m with nothing ordering it after P0's init: where the arrive is coherence-before the
    init it is overwritten and P2's wait never completes (a hang, with undefined behaviour); the refuter
    must keep that combination."
  source: "PTX ISA 9.4, mbarrier.init, mbarrier.arrive, mbarrier.try_wait"
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.init.shared::cta.b64 [m], 1
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.arrive.shared::cta.b64 _, [m]
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.shared::cta.b64 p, [m], 0 == 1
  expect:
    hang: allowed
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_an_arrive_that_may_precede_the_init_is_not_counted(engine):
    (t,) = load_text(BEFORE_INIT, "before-init.yaml")
    got = _hangs(t, engine, True)
    assert got == _hangs(t, engine, False)
    assert got[0], "the hang where the arrive is overwritten by the init"
    # ordered after the init by a barrier, the arrive counts: no hang
    ordered = BEFORE_INIT.replace("        - mbarrier.init.shared::cta.b64 [m], 1\n",
                                  "        - mbarrier.init.shared::cta.b64 [m], 1\n        - bar.sync 1, 2\n") \
        .replace("        - mbarrier.arrive.shared::cta.b64 _, [m]\n",
                 "        - bar.sync 1, 2\n        - mbarrier.arrive.shared::cta.b64 _, [m]\n")
    (t2,) = load_text(ordered, "ordered.yaml")
    got2 = _hangs(t2, engine, True)
    assert got2 == _hangs(t2, engine, False)
    assert not got2[0]


COPY_BEFORE_INIT = """
- name: CopyIssuedBeforeInit
  doc: "P0 issues a bulk copy completing on m before it initialises m: the complete-tx may come before the
    init and be overwritten, leaving P1's wait short of 16 bytes (a hang, with undefined behaviour)."
  source: "PTX ISA 9.4, cp.async.bulk (mbarrier::complete_tx::bytes), mbarrier.init, mbarrier.try_wait"
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0}
    s: {space: shared, owner: gpu0.cta0, size: 16}
    g: {space: global, size: 16}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 16, [m]
        - mbarrier.init.shared::cta.b64 [m], 1
        - mbarrier.arrive.expect_tx.shared::cta.b64 _, [m], 16
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.shared::cta.b64 p, [m], 0 == 1
  expect:
    hang: allowed
"""


def test_a_completion_issued_before_the_init_is_not_counted():
    (t,) = load_text(COPY_BEFORE_INIT, "copy-before-init.yaml")
    got = _hangs(t, "z3", True)
    assert got == _hangs(t, "z3", False) and got[0]
    _refuted_have_no_hang(t, "z3")


def _refutable(t) -> tuple[int, int]:
    """(combinations the reference asks, how many of them the refuter discards)."""
    u = UnionSession(t, MODEL, loops=True, refute=False)
    n = sum(1 for c, _ in list(zip(u.combos, u.sessions)) + u.blocked
            if c.cut and all(spin.fair_checkable and spin.pure(None) for _, spin in c.cut)
            and refuted(u, c, liveness._fair))
    return u.total, n


def test_refuted_combinations_do_not_count_against_the_limit():
    """The combinations refuted without a Session are discarded before any is lowered, and only
    those left count against the paths limit: with the limit at exactly what is left, the answer
    is the reference's (before: "too large", the product counted first)."""
    from checker import limits
    (path,) = [p for p in FILES if p.name == "i16-canonical.yaml"]
    asked = 0
    for t in load_file(path):
        if isinstance(t, LitmusError):
            continue
        total, n = _refutable(t)
        from checker.unfold.variants import thread_paths
        # (the limit bounds each thread's paths too: where fewer are left than a thread has --
        # I16e-composed since tcgen05.commit's arrive-on is folded, 3 of its 4 refuted -- it is
        # that many, still under the product)
        limit = max(total - n, max(map(len, thread_paths(t, limits.current(), True))))
        if not n or limit >= total:
            continue
        want = _hangs(t, "z3", False)
        with limits.use(limits.current().override([f"paths={limit}"])):
            assert _hangs(t, "z3", True) == want, t.name
            u = UnionSession(t, MODEL, loops=True)
            assert len(u.refuted) == n and u.total == total
        asked += 1
    assert asked


BARRIERS = sorted(p for p in (ROOT / "litmus").rglob("*.yaml") if any(k in p.read_text() for k in ("bar.", "barrier")))


@pytest.mark.parametrize("path", BARRIERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_memoized_schedules_are_the_schedules(path):
    """of_choice's memo explores each thread's barrier operations once (on them alone) and maps
    them back: the same combinations as exploring every choice's own test."""
    import itertools
    from checker import limits
    from checker.unfold.variants import of_choice, thread_paths
    lim = limits.current()
    for t in load_file(path):
        if isinstance(t, LitmusError):
            continue
        try:
            per = thread_paths(t, lim, True)
        except (LimitExceeded, LitmusError, NeverCompletes):
            continue
        memo: dict = {}
        for choice in itertools.islice(itertools.product(*per), 512):
            got, want = [], []
            for out, m in ((got, memo), (want, None)):
                try:
                    out.append(repr(of_choice(t, lim, choice, m)))
                except (LimitExceeded, LitmusError) as e:
                    out.append(str(e))
            assert got == want, t.name


def _unreachable_combos(t) -> tuple[int, int]:
    """(combinations refuted as having no execution -- stops._unreachable --, of them those the
    reference finds an execution of: must be 0)."""
    from checker.verdict import stops
    u = UnionSession(t, MODEL, loops=True, refute=False)
    n = bad = 0
    pairs = list(zip(u.combos, u.sessions)) + [(c, liveness._as_far_as_it_runs(u, c)) for c, _ in u.blocked]
    for c, s in pairs:
        if c.cut and stops._unreachable(u, c, stops.quiet_mbarriers(c.test, arrive_ons=True), liveness._fair):
            n += 1
            bad += s.witness(None) is not None
    return n, bad


def test_a_combination_without_execution_has_none():
    """A wait a combination passes that no state the operations able to precede it make can
    satisfy (docs/model.md#a18, "Combinations with no execution"): the combinations so refuted
    have no execution in the reference; where an undefined behaviour may free the wait
    (LappedWait: P2's wait on an mbarrier nobody arrives on passes in the executions where P0's
    second arrive skips a phase), the rule must not apply (it did before the freeing check: its
    refuted combination hangs)."""
    (path,) = [p for p in FILES if p.name == "unreachable-waits.yaml"]
    got = {t.name: _unreachable_combos(t) for t in load_file(path) if not isinstance(t, LitmusError)}
    assert got["UnreachableCircle"] == (6, 0)
    assert got["RelaxedWaitCircle"][0] < 6 and got["AsyncCircle"][1] == 0
    assert all(bad == 0 for _, bad in got.values()), got
