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
    # (a .relaxed wait gates like an .acquire one: the events its thread makes after it depend on
    # its read, dep, whatever its semantics)
    assert got["RelaxedWaitCircle"] == (6, 0) and got["AsyncCircle"][1] == 0
    assert all(bad == 0 for _, bad in got.values()), got


MEMBERS = """
- name: FreeEachOther
  doc: "P0 passes a wait on x (nobody arrives on it) and then arrives twice on a; P1 likewise on y and b.
    Each second arrive reads a phase no wait saw completed (MbarrierSkippedPhase) and frees the other
    thread's wait: each member fires only in the executions where the other does. P2 spins on k."
  arch: sm_90
  memory:
    x: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    y: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    a: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    b: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [x], 0 == 1
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [a]
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [a]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [y], 0 == 1
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [b]
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [b]
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    undefined: true
    hang: allowed

- name: MemberThatCannotFire
  doc: "P0's one arrive on the one-arrival mbarrier a stays in range and completes phase 0: no member of
    it fires, so nothing frees P1's wait on x, on which nobody arrives. P2 spins on k."
  arch: sm_90
  memory:
    x: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    a: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [a]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [x], 0 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    hang: allowed

- name: InvalidatedAfterUse
  doc: "P0 alone initialises q, fills its phase 0 and waits for it, then invalidates it (not quiet); no
    state a fold of its RMWs from the initialisation, the initial write or the inval reaches, its own
    RMW left out of each member's, is out of range or past phase 0: nothing frees P1's wait on x, on
    which nobody arrives. P2 spins on k."
  arch: sm_90
  memory:
    q: {space: shared, owner: gpu0.cta0}
    x: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.init.shared::cta.b64 [q], 1
        - mbarrier.arrive.expect_tx.shared::cta.b64 _, [q], 16
        - mbarrier.complete_tx.shared::cta.b64 [q], 16
        - mbarrier.try_wait.parity.shared::cta.b64 p, [q], 0 == 1
        - mbarrier.inval.shared::cta.b64 [q]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [x], 0 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    hang: allowed

- name: LaterWaitAfterEarlier
  doc: "P1 waits for m's phase 0, which P0's arrive completes, then for parity 1, which m's first state
    passes and no state after phase 0's completion does: the second wait reads a state
    coherence-after-or-equal the first one's (SCPerLocation), so it never passes. P2 spins on k."
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 0 == 1
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 q, [m], 1 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    hang: allowed
"""


def test_only_members_that_may_fire_free_a_gate():
    """Which members of value-dependent undefined behaviour may free a gate is a greatest fixpoint
    (docs/model.md#a18, "Which members may free a gate"); a gate after another of its thread on the
    same mbarrier reads a state at or after the one that gate passed at. Each combination so
    refuted has no execution in the reference. FreeEachOther: its two members each fire only where
    the other frees its thread's wait, an execution the reference has; a least fixpoint from no
    member (or no freeing at all) refutes that combination (6 refuted, one with an execution).
    MemberThatCannotFire: P0's arrive frees P1's wait under the premise read off the lowering
    alone (nothing refuted before); no state it can read is out of range or past phase 0.
    LaterWaitAfterEarlier: P1's second wait passes at m's first state only (nothing refuted
    before). InvalidatedAfterUse: a member on an mbarrier quiet but for its inval (Triton's
    attention's Q barrier) folds from the inval too, without its own RMW (nothing refuted before;
    nothing either with a member's own RMW in the fold: the arrive would read phase 1, after
    itself, and MbarrierSkippedPhase would fire)."""
    got = {t.name: _unreachable_combos(t) for t in load_text(MEMBERS, "members.yaml")
           if not isinstance(t, LitmusError)}
    assert got == {"FreeEachOther": (5, 0), "MemberThatCannotFire": (2, 0), "InvalidatedAfterUse": (5, 0),
                   "LaterWaitAfterEarlier": (3, 0)}


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_members_that_may_fire_keep_the_reference_answer(engine):
    for t in load_text(MEMBERS, "members.yaml"):
        if not isinstance(t, LitmusError):
            assert _hangs(t, engine, True) == _hangs(t, engine, False), t.name


# -- the extension lemma (docs/model.md#a18, "Stopping choices and undefined behaviour") ---------

def _flags(t, engine: str, extend: bool):
    u = UnionSession(t, MODEL, engine=engine, loops=True, extend=extend)
    flags = sorted({f.flag for f in u.undefined})
    return u.extension_why is None, flags, len(u._ub_variants)


def _lemma_cases(path, engine: str) -> int:
    n = 0
    for t in load_file(path):
        if isinstance(t, LitmusError):
            continue
        try:
            applies, got, asked = _flags(t, engine, True)
            if not applies:
                continue
            _, want, reference = _flags(t, engine, False)
        except (LimitExceeded, LitmusError, NeverCompletes):
            continue
        assert got == want, t.name
        assert asked <= reference
        n += 1
    return n


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_extension_lemma_keeps_the_reference_flags(path):
    """Where the lemma's conditions hold, the undefined-behaviour search starts from the complete
    choices only, and finds the flags the reference (every runs-once choice) finds."""
    _lemma_cases(path, "z3")


def test_the_extension_lemma_applies_and_agrees_on_both_engines():
    path = ROOT / "litmus" / "async" / "bulk-load.yaml"
    assert _lemma_cases(path, "z3") >= 10
    assert _lemma_cases(path, "brute") >= 10


def test_the_extension_lemma_read_every_flag_and_option():
    """The lemma's argument reads each flag and each option of axioms/ptx.cat; a new one must be
    read against it (and added here and to bundled.READ_OPTIONS) before the lemma applies with it."""
    import re
    from checker.verdict.bundled import READ_OPTIONS
    cat = (ROOT / "axioms" / "ptx.cat").read_text()
    assert sorted(re.findall(r"^flag .* as (\w+)", cat, re.M)) == sorted([
        "InFlight", "MixedSizeRace", "CpAsyncGroupOverlap", "MbarrierUninitialised", "MbarrierRange",
        "MbarrierReinit", "WgmmaFence", "AsyncRegisters", "TensorMemoryDealloc", "TensorMemoryAlloc",
        "MbarrierStaleToken", "MbarrierSkippedPhase", "TensorMemoryWarp", "TensorMemoryColumns", "TensorMemoryLeak"])
    assert set(re.findall(r'if "([\w-]+)"', cat)) | {"rmw-rewrite-effect"} == READ_OPTIONS


LEMMA = """
- name: OneStage
  doc: "P0 initialises m and, after the barrier, arrives; P1 waits for phase 0 after the barrier."
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
        - mbarrier.arrive.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - bar.sync 1, 2
        - mbarrier.try_wait.parity.shared::cta.b64 p, [m], 0 == 1
  expect:
    hang: forbidden
"""


def test_the_extension_lemma_needs_its_conditions():
    """It applies to a one-stage pipeline with no hang; not with an inval (MbarrierUninitialised's
    third clause), an unroll of 1, another model, or the reference's every-choice search."""
    from checker import limits
    from checker.cat.interp import load_model
    (t,) = load_text(LEMMA, "lemma.yaml")
    assert UnionSession(t, MODEL, loops=True)._extension_lemma_fails() is None
    assert UnionSession(t, MODEL, loops=True, quiet=False)._extension_lemma_fails() is not None
    with limits.use(limits.current().override(["unroll=1"])):
        assert UnionSession(t, MODEL, loops=True)._extension_lemma_fails() is not None
    sc = load_model(str(ROOT / "axioms" / "sc.cat"))
    assert UnionSession(t, sc, loops=True)._extension_lemma_fails() is not None
    (t2,) = load_text(LEMMA.replace("0 == 1\n", "0 == 1\n        - mbarrier.inval.shared::cta.b64 [m]\n"), "inval.yaml")
    assert "mbarrier.inval" in str(t2.threads[1].code[-1].text)
    assert UnionSession(t2, MODEL, loops=True)._extension_lemma_fails() is not None
    assert _flags(t, "z3", True)[1:] != () and _flags(t, "z3", True)[1] == _flags(t, "z3", False)[1]


# -- the freeing condition (checker.verdict.extension; docs/model.md#a18) -------------------------

FREEING = """
- name: FreeingRange
  doc: "P3's arrive of 3 on r (count 2) leaves r's pending count below 0 in every execution (MbarrierRange). P1 waits for m's phase 0, stores x as 16 bits, waits for w's phase 0, then arrives on r; P0 stores x as 32 bits and releases m. Where P1 is stopped at its wait on w, its wait on m is outside the undefined arrive's causal past, so the undefined behaviour frees it, and P1's store races with P0's (MixedSizeRace); where P1 runs to its end, its arrive on r puts that wait in the arrive's causal past, and the stores are ordered."
  source: "PTX ISA 9.4, mbarrier (the pending count's range), mbarrier.arrive, mbarrier.try_wait; docs/model.md#a7 (freeing)"
  arch: sm_90
  memory:
    x: {space: shared, owner: gpu0.cta0}
    m: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    w: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    r: {space: shared, owner: gpu0.cta0, mbarrier: {count: 2}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - st.shared.b32 [x], 2
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 0 == 1
        - st.shared.b16 [x], 1
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 q, [w], 0 == 1
        - mbarrier.arrive.shared::cta.b64 _, [r]
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.arrive.shared::cta.b64 _, [w]
    P3:
      at: gpu0.cta0.warp3
      code:
        - mbarrier.arrive.shared::cta.b64 _, [r], 3
  expect:
    undefined: true
    hang: forbidden
"""
# the same with a skipped phase for the undefined behaviour: P3 arrives twice on r (count 1), and
# nobody waits on r
FREEING_SKIP = FREEING.replace("name: FreeingRange", "name: FreeingSkip") \
    .replace("r: {space: shared, owner: gpu0.cta0, mbarrier: {count: 2}}",
             "r: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}") \
    .replace("        - mbarrier.arrive.shared::cta.b64 _, [r], 3\n",
             "        - mbarrier.arrive.shared::cta.b64 _, [r]\n        - mbarrier.arrive.shared::cta.b64 _, [r]\n")


@pytest.mark.parametrize("text, member", [(FREEING, "MbarrierRange"), (FREEING_SKIP, "MbarrierSkippedPhase")],
                         ids=["range", "skip"])
def test_a_member_that_frees_an_await_keeps_every_choice(text, member, monkeypatch):
    """A stopping variant whose value-dependent undefined behaviour frees an await that the complete
    variants keep in its causal past has a flag no complete variant has (MixedSizeRace here): the
    freeing condition fails on it, naming the member, and the search starts from every choice,
    with the reference's flags. With the condition ignored (the lemma as it was on branch
    stops-s20-lemma) the flag is lost: this test fails then."""
    from checker.verdict import union
    (t,) = load_text(text, "freeing.yaml")
    u = UnionSession(t, MODEL, loops=True)
    got = sorted({f.flag for f in u.undefined})
    ref = UnionSession(t, MODEL, loops=True, extend=False)
    assert got == sorted({f.flag for f in ref.undefined}) == sorted([member, "MixedSizeRace"])
    assert u.extension_why is not None and member in u.extension_why
    assert ref.hangs() == ((), True)
    monkeypatch.setattr(union, "members_excluded", lambda *a: None)
    ignored = UnionSession(t, MODEL, loops=True)
    lost = sorted({f.flag for f in ignored.undefined})
    assert ignored.extension_why is None and lost == [member]


def test_the_freeing_gap_is_the_engines_not_one_engine_s(monkeypatch):
    """Brute force finds FreeingRange's MixedSizeRace as Z3 does, and loses it likewise where the
    freeing condition is ignored: the gap is the freeing rule's (EventStructure.freeing), which
    both engines apply."""
    from checker.verdict import union
    (t,) = load_text(FREEING, "freeing.yaml")
    u = UnionSession(t, MODEL, engine="brute", loops=True)
    assert sorted({f.flag for f in u.undefined}) == ["MbarrierRange", "MixedSizeRace"] and u.extension_why
    monkeypatch.setattr(union, "members_excluded", lambda *a: None)
    ignored = UnionSession(t, MODEL, engine="brute", loops=True)
    assert sorted({f.flag for f in ignored.undefined}) == ["MbarrierRange"] and ignored.extension_why is None


# -- condition (7) in the orders the awaits keep (checker.verdict.extension._ordered) --------------

MUTUAL = """
- name: MutualFreeing
  doc: "P2's arrive on a may read a's state after P0's arrive.expect_tx and before its bytes (pending 0, tx-count 32) and leave its pending count at -1 (MbarrierRange), but only where its wait for a's phase 0 is freed; P3's arrive on b likewise. Where P2 and P3 both stop at their waits on c and d, neither's later expect_tx puts the other's first wait in its arrive's causal past: each arrive frees the other's wait, and both are undefined. Where either runs on, its expect_tx 0 on the other's mbarrier puts its wait in the other's past, and neither arrive can be undefined. An ordered fold that took every await as holding would miss it."
  source: "PTX ISA 9.4, mbarrier (the pending count's range), mbarrier.arrive.expect_tx, mbarrier.complete_tx, mbarrier.try_wait; docs/model.md#a7 (freeing), #a18 (condition (7))"
  arch: sm_90
  memory:
    a: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    b: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    c: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    d: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.arrive.expect_tx.shared::cta.b64 _, [a], 32
        - mbarrier.complete_tx.shared::cta.b64 [a], 32
        - mbarrier.arrive.shared::cta.b64 _, [c]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.arrive.expect_tx.shared::cta.b64 _, [b], 32
        - mbarrier.complete_tx.shared::cta.b64 [b], 32
        - mbarrier.arrive.shared::cta.b64 _, [d]
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.shared::cta.b64 p, [a], 0 == 1
        - mbarrier.arrive.shared::cta.b64 _, [a]
        - mbarrier.try_wait.parity.shared::cta.b64 q, [c], 0 == 1
        - mbarrier.expect_tx.shared::cta.b64 [b], 0
    P3:
      at: gpu0.cta0.warp3
      code:
        - mbarrier.try_wait.parity.shared::cta.b64 p, [b], 0 == 1
        - mbarrier.arrive.shared::cta.b64 _, [b]
        - mbarrier.try_wait.parity.shared::cta.b64 q, [d], 0 == 1
        - mbarrier.expect_tx.shared::cta.b64 [a], 0
  expect:
    undefined: true
    hang: forbidden
"""
PIPELINE = """
- name: TwoRoundPipeline
  doc: "A two-round pipeline: P0 fills f (count 1) with arrive.expect_tx 16, P2 completes the bytes, P1 waits for f and releases e; P0 and P2 wait for e before their second round. In an order that ignores the waits, P0's second arrive.expect_tx may read f's first phase before its bytes and leave the pending count at -1; in the orders the waits keep (none of which a possible undefined behaviour can free) it reads the second phase, after P1's successful wait read it."
  source: "PTX ISA 9.4, mbarrier.arrive.expect_tx, mbarrier.complete_tx, mbarrier.try_wait; docs/model.md#a18 (condition (7))"
  arch: sm_90
  memory:
    f: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    e: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.try_wait.parity.shared::cta.b64 p, [e], 1 == 1
        - mbarrier.arrive.expect_tx.shared::cta.b64 _, [f], 16
        - mbarrier.try_wait.parity.shared::cta.b64 q, [e], 0 == 1
        - mbarrier.arrive.expect_tx.shared::cta.b64 _, [f], 16
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.shared::cta.b64 p, [f], 0 == 1
        - mbarrier.arrive.shared::cta.b64 _, [e]
        - mbarrier.try_wait.parity.shared::cta.b64 q, [f], 1 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.complete_tx.shared::cta.b64 [f], 16
        - mbarrier.try_wait.parity.shared::cta.b64 p, [e], 0 == 1
        - mbarrier.complete_tx.shared::cta.b64 [f], 16
  expect:
    undefined: false
    hang: forbidden
"""


def test_an_ordered_fold_keeps_only_the_orders_of_awaits_no_member_can_free(monkeypatch):
    """MutualFreeing: each arrive is undefined only where its wait is freed, and each frees the
    other's wait only in the variants where P2 and P3 stop at their second waits: the reference's
    flags come from those variants alone. The ordered fold lets each wait be freed (the other
    arrive may fire, and leaves it outside its past there), so condition (7) fails and the search
    starts from every choice. With every await taken as holding (no member may free one: the
    order premise unconditional) the condition holds, the lemma applies, and both flags are lost:
    this test fails then."""
    from checker.verdict import extension
    (t,) = load_text(MUTUAL, "mutual.yaml")
    u = UnionSession(t, MODEL, loops=True)
    ref = UnionSession(t, MODEL, loops=True, extend=False)
    got = sorted({f.flag for f in u.undefined})
    assert got == sorted({f.flag for f in ref.undefined}) == ["MbarrierRange", "MbarrierSkippedPhase"]
    assert u.extension_why is not None and "MbarrierRange" in u.extension_why
    assert ref.hangs() == ((), True)
    monkeypatch.setattr(extension, "_outside", lambda *a: False)
    ignored = UnionSession(t, MODEL, loops=True)
    lost = ignored.undefined
    assert ignored.extension_why is None and lost == ()


def test_a_pipeline_meets_condition_7_in_the_orders_its_waits_keep():
    """TwoRoundPipeline: in an order that ignores the waits, P0's second arrive.expect_tx may read
    f's first phase before its bytes (the order-free fold fails); in the orders the waits keep,
    none of which a possible member can free, no member fires, the lemma applies, and the flags
    (none) and the hang answer are the reference's (Z3: brute force's reference is past its
    limit). Before the ordered fold, the condition failed here."""
    from checker.verdict import extension
    from checker.verdict.quiet import quiet_mbarriers
    from checker.unfold.variants import thread_paths
    from checker import limits
    (t,) = load_text(PIPELINE, "pipeline.yaml")
    per = thread_paths(t, limits.current(), True, spin_once=False, quiet=quiet_mbarriers(t))
    assert extension._ordered(t, limits.current(), {"f"}) is None
    assert extension.members_excluded(t, limits.current(), per) is None
    u = UnionSession(t, MODEL, loops=True)
    ref = UnionSession(t, MODEL, loops=True, extend=False)
    assert u.undefined == ref.undefined == () and u.extension_why is None
    assert u.hangs() == ref.hangs() == ((), True)


def test_the_freeing_condition_fails_on_each_kind_of_member():
    """A state token (MbarrierStaleToken frees the await on its own result), an arrive that may
    over-arrive, an arrive-on that may read a later phase, a Tensor Memory allocation: the
    condition (or the lemma's conditions) name each; the one-stage pipeline meets them all."""
    from checker.verdict.extension import members_excluded
    from checker.verdict.quiet import quiet_mbarriers
    from checker.unfold.variants import thread_paths
    from checker import limits

    def why(text):
        (t,) = load_text(text, "w.yaml")
        per = thread_paths(t, limits.current(), True, spin_once=False, quiet=quiet_mbarriers(t))
        return members_excluded(t, limits.current(), per)
    assert why(LEMMA) is None
    assert "state token" in why(LEMMA.replace("try_wait.parity.shared::cta.b64 p, [m], 0 == 1",
                                              "try_wait.shared::cta.b64 p, [m], 0 == 1"))
    assert "MbarrierRange" in why(LEMMA.replace("arrive.shared::cta.b64 _, [m]", "arrive.shared::cta.b64 _, [m], 2"))
    two = LEMMA.replace("arrive.shared::cta.b64 _, [m]\n", "arrive.shared::cta.b64 _, [m]\n"
                        "        - mbarrier.arrive.shared::cta.b64 _, [m]\n")
    assert "MbarrierSkippedPhase" in why(two)
    stored = LEMMA.replace("        - bar.sync 1, 2\n        - mbarrier.arrive",
                           "        - bar.sync 1, 2\n        - st.shared.b64 [m], 0\n        - mbarrier.arrive")
    assert "not an RMW" in why(stored)          # (a state the fold cannot know)
    (t,) = load_text(LEMMA.replace("        - bar.sync 1, 2\n        - mbarrier.arrive",
                                   "        - bar.sync 1, 2\n        - tcgen05.alloc.cta_group::1.sync.aligned"
                                   ".shared::cta.b32 [a], 32\n        - mbarrier.arrive")
                     .replace("  memory:\n", "  memory:\n    a: {space: shared, owner: gpu0.cta0}\n"), "tmem.yaml")
    u = UnionSession(t, MODEL, loops=True)
    u.undefined
    assert "tcgen05.alloc" in u.extension_why


def test_quiet_in_the_combination_and_commit_arrive_ons():
    """An inval past a barrier the combination never passes is not in it (InvalPastBarrier: P1 cut
    in its wait, P0 stuck before the inval: refuted), one in it is (InvalAfterArrive: kept, it
    hangs), and tcgen05.commit's arrive-on is folded (CommitArrive: refuted). Before quiet was
    read per combination and arrive-ons admitted, neither was refuted (0)."""
    (path,) = [p for p in FILES if p.name == "unreachable-waits.yaml"]
    got = {t.name: _refutable(t) for t in load_file(path) if not isinstance(t, LitmusError)
           if t.name in ("InvalPastBarrier", "InvalAfterArrive", "CommitArrive")}
    assert got == {"InvalPastBarrier": (2, 1), "InvalAfterArrive": (2, 0), "CommitArrive": (2, 1)}


def test_the_refuter_reads_the_bundled_model_only(tmp_path):
    """Its arguments cite axioms/ptx.cat's axioms: under another model file (here a copy) nothing
    is refuted, and the answer is the reference's."""
    from checker.resources import resolve_model
    copy = tmp_path / "mine.cat"
    copy.write_text((ROOT / "axioms" / "ptx.cat").read_text())
    (path,) = [p for p in FILES if p.name == "unreachable-waits.yaml"]
    (t,) = [t for t in load_file(path) if not isinstance(t, LitmusError) and t.name == "UnreachableCircle"]
    assert len(UnionSession(t, MODEL, loops=True).refuted) == 6
    other = UnionSession(t, resolve_model(str(copy)), loops=True)
    assert not other.refuted and not any(refuted(other, c, liveness._fair) for c, _ in other.blocked)


# -- failed iterations no flag can name (docs/model.md#a18, "Failed iterations with no flag to name them")

FAILED_BEFORE_INIT = """
- name: FailedBeforeInit
  doc: "P0 initialises m and releases it with an arrive; P1 waits for m's phase 0 with no barrier after the init. A failed iteration of P1's wait may read m before its init (MbarrierUninitialised); the iteration that exits reads P0's arrive, which the init is ordered before, so the wait that runs once is never flagged."
  source: "PTX ISA 9.4, mbarrier.init, mbarrier.arrive, mbarrier.try_wait (an operation on an object that is not a valid mbarrier is undefined)"
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.init.shared::cta.b64 [m], 1
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 0 == 1
  expect:
    undefined: true
    hang: forbidden
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_a_failed_iteration_a_flag_may_name_is_combined(monkeypatch, engine):
    """Where a failed wait may come before the init in base causality, it is combined (one
    failed iteration, as before) and its MbarrierUninitialised is the reference's, on both
    engines, and the test's expectations are met; with the condition ignored the flag is lost:
    this test fails then."""
    from checker.verdict import union
    from checker.verdict.check import check_test
    (t,) = load_text(FAILED_BEFORE_INIT, "failed.yaml")
    assert check_test(t, MODEL, engine=engine).status == "pass"
    u = UnionSession(t, MODEL, engine=engine, loops=True)
    ref = UnionSession(t, MODEL, engine=engine, loops=True, extend=False, quiet=False)
    assert sorted({f.flag for f in u.undefined}) == sorted({f.flag for f in ref.undefined}) \
        == ["MbarrierUninitialised"]
    assert u.extension_why is None and "before its init" in u.failed_why   # (set by the search)
    monkeypatch.setattr(union, "failed_waits_unnamed", lambda *a: None)
    ignored = UnionSession(t, MODEL, engine=engine, loops=True)
    assert ignored.undefined == () and ignored.failed_why is None


@pytest.mark.parametrize("text, engine", [(LEMMA, "z3"), (LEMMA, "brute"), (PIPELINE, "z3")],
                         ids=["one-stage", "one-stage-brute", "two-round-pipeline"])
def test_failed_iterations_no_flag_names_are_not_combined(text, engine):
    """With every wait after the init's barrier, no failed iteration is combined: the variants
    asked are the complete runs-once ones, fewer than the reference's, with its flags."""
    (t,) = load_text(text, "t.yaml")
    u = UnionSession(t, MODEL, engine=engine, loops=True)
    ref = UnionSession(t, MODEL, engine=engine, loops=True, extend=False, quiet=False)
    assert sorted({f.flag for f in u.undefined}) == sorted({f.flag for f in ref.undefined})
    assert u.extension_why is None and u.failed_why is None     # (set by the search)
    assert all(not c.cut and not any(p.rounds for p in c.paths) for c, _ in u._ub_variants)
    assert len(u._ub_variants) < len(ref._ub_variants)


# -- the refuter where condition (7) holds (docs/model.md#a18, "Combinations with no execution") --

def _no_member_combos(t) -> tuple[int, int]:
    """(combinations _unreachable refutes when no member can fire, of them those the reference
    finds an execution of: must be 0), where condition (7) holds; (0, 0) elsewhere."""
    try:
        u = UnionSession(t, MODEL, loops=True, refute=False)
        if not u.no_member:
            return 0, 0
    except (LimitExceeded, LitmusError, NeverCompletes):
        return 0, 0
    return _unreachable_combos(t)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_with_no_member_a_refuted_combination_has_no_execution(path):
    """Where condition (7) shows that no member of a value-dependent undefined behaviour fires in
    any execution, the refuter takes no gate as freed: each combination it then refutes has no
    execution in the reference."""
    for t in load_file(path):
        if not isinstance(t, LitmusError):
            n, bad = _no_member_combos(t)
            assert bad == 0, t.name


def test_with_no_member_the_refuter_refutes_more(monkeypatch):
    """TwoRoundPipeline: condition (7) holds (in the orders its waits keep), and the refuter,
    taking no gate as freed, refutes a combination that the per-combination fold of the members
    that may fire (stops._may_fire: f's order-free fold lets the second arrive.expect_tx fire)
    keeps; it has no execution in the reference. (CUTLASS's skeleton: 3839 of 3840 combinations
    refuted, where 16 were left.)"""
    (t,) = load_text(PIPELINE, "pipeline.yaml")
    assert UnionSession(t, MODEL, loops=True, refute=False).no_member
    assert _unreachable_combos(t) == (11, 0)
    monkeypatch.setattr(UnionSession, "no_member", False)
    assert _unreachable_combos(t) == (10, 0)
