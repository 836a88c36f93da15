"""The undefined-behaviour question of a hang-question test does not combine failed iterations of
waits on quiet mbarriers (checker.verdict.quiet, docs/model.md#a18, "Failed iterations of an
mbarrier wait"): the variants kept are the reference's variants with an execution in which at
most one such iteration failed, and the flags are the reference's (every unrolled variant built),
on a thread that waits on two mbarriers it may see before their init, on the same test where the
argument does not reach (no variant left out), and on a kernel's extracted skeleton. The
liveness suites are compared with the reference in tests/unfold/test_spin_once*.py."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from checker.front.litmus import load_text
from checker.verdict.check import check_test
from checker.verdict.quiet import quiet_mbarriers
from checker.verdict.union import UnionSession, _cut_once, _quiet_rounds
from tests.unfold.test_ub_variants import MODEL

ROOT = Path(__file__).resolve().parents[2]

BEFORE_INIT = """
- name: WaitBeforeInit
  doc: "P0 initialises m0 and m1 and arrives on each; P1 and P2 wait for phase 0 of m0 and m1 with no order
    after the inits but the waits' own: an iteration that fails may read an mbarrier before its init
    (undefined), the one that exits reads P0's arrive, released after the init."
  source: "PTX ISA 9.4, mbarrier.init (an mbarrier operation other than init on an object that is not an
    initialised mbarrier is undefined); mbarrier.try_wait; Memory Consistency Model (release patterns)"
  arch: sm_90
  memory:
    m0: {space: shared, owner: gpu0.cta0}
    m1: {space: shared, owner: gpu0.cta0}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.init.shared::cta.b64 [m0], 1
        - mbarrier.init.shared::cta.b64 [m1], 1
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m0]
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m1]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m0], 0 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 q, [m1], 0 == 1
EXTRA
  expect:
    undefined: true
    hang: forbidden
"""

# a thread in another CTA: the scopes of the mbarrier operations no longer contain every thread
OTHER_CTA = """    P3:
      at: gpu0.cta1.warp0
      code:
        - st.relaxed.gpu.u32 [g], 1"""


def _test(extra: str = ""):
    text = BEFORE_INIT.replace("EXTRA\n", extra + "\n" if extra else "")
    if extra:
        text = text.replace("  threads:", "    g: {space: global}\n  threads:")
    (t,) = load_text(text, "before-init.yaml")
    return t


def _keys_and_flags(u: UnionSession):
    return [c.key() for c, _ in u._ub_variants], sorted({(f.flag, f.why) for f in u.undefined})


def _waits_where_cut(u: UnionSession) -> set[int]:
    """How many times the wait a thread is cut in is in its code, over the variants kept."""
    return {sum(1 for i in p.code if i.where == p.cut.head.where and i.family == "mbarrier.try_wait")
            for c, _ in u._ub_variants for p in c.paths if p.cut is not None}


def _reference(t, quiet, cut=None):
    """The reference's variants with an execution, each with its failed iterations on the
    mbarriers `quiet` of awaits it goes on past, as it is with the await a thread is cut in cut
    after one failed iteration (its code and barrier generations), and its flags."""
    ref = UnionSession(t, MODEL, loops=True, quiet=False)
    cut = quiet if cut is None else cut
    kept = [((tuple(_cut_once(p, cut).code for p in c.paths),) + c.key()[1:],
             sum(_quiet_rounds(p, quiet) for p in c.paths)) for c, _ in ref._ub_variants]
    return kept, sorted({(f.flag, f.why) for f in ref.undefined})


def test_failed_waits_on_quiet_mbarriers_are_not_combined():
    """Of the reference's variants with an execution, those in which the waits of both threads
    failed are left out, and a thread cut in its wait is cut after one failed iteration; the flags -- each wait's failed iteration before its
    mbarrier's init -- are the reference's."""
    t = _test()
    assert quiet_mbarriers(t) == {"m0", "m1"}
    kept, flags = _reference(t, {"m0", "m1"})
    assert any(n > 1 for _, n in kept)
    keys, got = _keys_and_flags(UnionSession(t, MODEL, loops=True, extend=False))
    assert keys == [k for k, n in kept if n <= 1]
    assert got == flags
    assert {f for f, _ in flags} == {"MbarrierUninitialised"} and len(flags) == 2


NEVER = """
- name: WaitsOnNothing
  doc: "P1 waits on m1, which nothing initialises or arrives on: it spins forever, and each failed wait is
    an operation on an uninitialised mbarrier; P2 gets past its wait on m0 once P0 arrives."
  source: "PTX ISA 9.4, mbarrier.init (an mbarrier operation other than init on an object that is not an
    initialised mbarrier is undefined); mbarrier.try_wait"
  arch: sm_90
  memory:
    m0: {space: shared, owner: gpu0.cta0}
    m1: {space: shared, owner: gpu0.cta0}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.init.shared::cta.b64 [m0], 1
        - bar.sync 0, 3
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m0]
    P1:
      at: gpu0.cta0.warp1
      code:
        - bar.sync 0, 3
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m1], 0 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - bar.sync 0, 3
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 q, [m0], 0 == 1
  expect:
    undefined: true
    hang: allowed
"""


def test_a_thread_cut_in_its_wait_keeps_one_failed_iteration():
    """The only flag is P1's failed wait on m1, on the variants in which it is cut: found with
    one failed iteration where the reference has two; and the run answers as expected."""
    (t,) = load_text(NEVER, "never.yaml")
    assert quiet_mbarriers(t) == {"m0", "m1"}
    kept, flags = _reference(t, {"m0", "m1"})
    u = UnionSession(t, MODEL, loops=True, extend=False)
    keys, got = _keys_and_flags(u)
    assert keys == [k for k, n in kept if n <= 1] and got == flags
    assert [f for f, _ in flags] == ["MbarrierUninitialised"]
    assert _waits_where_cut(u) == {1}
    assert _waits_where_cut(UnionSession(t, MODEL, loops=True, quiet=False)) == {2}
    r = check_test(t, MODEL)
    assert r.status == "pass", r.message


def test_where_the_argument_does_not_reach_every_variant_is_kept():
    """A thread in another CTA: no mbarrier is quiet, and the variants are the reference's."""
    t = _test(OTHER_CTA)
    assert quiet_mbarriers(t) == frozenset()
    kept, flags = _reference(t, {"m0", "m1"}, frozenset())
    assert any(n > 1 for _, n in kept)          # (counted as if they were quiet)
    keys, got = _keys_and_flags(UnionSession(t, MODEL, loops=True, extend=False))
    assert keys == [k for k, _ in kept] and got == flags


def test_run_answers_the_expectations():
    r = check_test(_test(), MODEL)
    assert r.status == "pass", r.message


@pytest.mark.parametrize("change, why", [
    ("        - st.relaxed.gpu.u32 [g], 1", "another CTA"),
    ("        - st.shared::cta.u64 [m0], 0", "a plain store"),
    ("        - mbarrier.inval.shared::cta.b64 [m0]", "an inval"),
    ("        - mbarrier.init.shared::cta.b64 [m0], 2", "a second init"),
])
def test_what_makes_an_mbarrier_not_quiet(change, why):
    text = BEFORE_INIT.replace("EXTRA\n", "")
    if why == "another CTA":
        text = text.replace("  threads:", "    g: {space: global}\n  threads:").replace(
            "  expect:", OTHER_CTA + "\n  expect:")
    else:
        text = text.replace("        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m0]\n",
                            "        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m0]\n" + change + "\n")
    (t,) = load_text(text, "x.yaml")
    assert "m0" not in quiet_mbarriers(t), why


def test_an_mbarrier_declared_initialised_and_initialised_again_is_not_quiet():
    (t,) = load_text(BEFORE_INIT.replace("EXTRA\n", "").replace(
        "    m1: {space: shared, owner: gpu0.cta0}",
        "    m1: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}"), "x.yaml")
    assert quiet_mbarriers(t) == {"m0"}


def test_the_flags_are_those_the_argument_reads():
    """docs/model.md#a18 lists, for each flag of the model, that it relates at most one failed
    wait; a new flag must be read against that argument before this list grows."""
    cat = (ROOT / "axioms" / "ptx.cat").read_text()
    assert sorted(re.findall(r"^flag .* as (\w+)", cat, re.M)) == sorted([
        "InFlight", "MixedSizeRace", "CpAsyncGroupOverlap", "MbarrierUninitialised", "MbarrierRange",
        "MbarrierReinit", "WgmmaFence", "AsyncRegisters", "TensorMemoryDealloc", "TensorMemoryAlloc",
        "TensorMemoryWarp", "TensorMemoryColumns", "TensorMemoryLeak", "MbarrierStaleToken",
        "MbarrierSkippedPhase"])


def test_a_kernel_skeleton_gets_the_reference_s_answer(tmp_path):
    """The hand-written TMA pipeline's extracted skeleton (two roles, three waits each, on quiet
    mbarriers): fewer variants, each one of the reference's, and the reference's flags (none)."""
    from checker.extract.api import extract_file
    from checker.front.litmus import load_file
    (x,) = extract_file(str(ROOT / "examples" / "kernels" / "cuda" / "tma_ws_pipeline.sm90a.ptx"),
                        out_dir=str(tmp_path / "out"), hang=True)
    (t,) = load_file(x.path)
    assert quiet_mbarriers(t)
    kept, flags = _reference(t, quiet_mbarriers(t))
    keys, got = _keys_and_flags(UnionSession(t, MODEL, loops=True, extend=False))
    assert keys == [k for k, n in kept if n <= 1] and len(keys) < len(kept)
    assert got == flags == []


QUIET_SUITE = ROOT / "litmus" / "liveness" / "quiet-mbarriers.yaml"


@pytest.mark.parametrize("unroll", [2, 3])
@pytest.mark.parametrize("name", ["QuietOneThreadTwoMbarriers", "QuietInvalElsewhere", "QuietDropAfterWaits",
                                  "QuietTxInFlight"])
def test_the_adversarial_suite_gets_the_reference_s_answer(name, unroll):
    """litmus/liveness/quiet-mbarriers.yaml: each test puts one premise of the argument under
    strain (two mbarriers in one thread with .relaxed.cluster test_wait and fence.acquire, an
    inval of another mbarrier, arrive_drop to zero, expect_tx and a bulk copy's complete-tx).
    At unroll 2 and 3 the default builds fewer variants than the reference at unroll 3 and
    reports the reference's flags; `run` answers the expectations."""
    import dataclasses

    from checker import limits
    from checker.front.litmus import load_file

    (t,) = [x for x in load_file(str(QUIET_SUITE)) if x.name == name]
    assert quiet_mbarriers(t)
    lim = dataclasses.replace(limits.current(), unroll=unroll)
    ref = UnionSession(t, MODEL, loops=True, quiet=False, lim=lim)
    got = UnionSession(t, MODEL, loops=True, lim=lim, extend=False)
    assert sorted({f.flag for f in got.undefined}) == sorted({f.flag for f in ref.undefined}) != []
    if unroll == 3:
        assert len(got._ub_variants) < len(ref._ub_variants)
    assert check_test(t, MODEL).status == "pass"
