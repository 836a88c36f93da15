"""Folding threads into one role (checker.extract.skeleton._merge) must not lend a thread the
synchronization of another: hand-edited copies of the committed nvcc TMA pipeline whose
consumer lanes or warps differ in their own ordering, each with the verdict the PTX semantics
gives (a fence, an arrive, a wait orders the executing thread's accesses only; a `bar.warp.sync`
or `bar.sync` of the lanes orders them across lanes)."""
from __future__ import annotations

from pathlib import Path

import pytest

from checker.extract.api import extract_file

ROOT = Path(__file__).resolve().parents[2]
TMA = ROOT / "examples" / "kernels" / "cuda" / "tma_ws_pipeline.sm90a.ptx"
FENCE = "\tfence.proxy.async.shared::cta; // 6.\n"
ARRIVE = "\tmbarrier.arrive.shared.b64                                  %rd4,  [%r32];           // 1. \n"
INIT128 = "\tmov.u32 \t%r22, 128;\n"           # empty[s]'s expected count: 128 consumer threads
WAIT = "$L__BB0_8:\n"
RETRY = "\t@%p5 bra \t$L__BB0_8;\n"
LANE0 = "\tmov.u32 %r100, %laneid;\n\tsetp.eq.u32 %p20, %r100, 0;\n"
NOT_LANE0 = "\tmov.u32 %r104, %laneid;\n\tsetp.ne.u32 %p27, %r104, 0;\n"
LANE0_ARRIVES = [(INIT128, "\tmov.u32 \t%r22, 4;\n"),        # one arrival per consumer warp
                 (ARRIVE, LANE0 + "\t@%p20 mbarrier.arrive.shared.b64 %rd4, [%r32];\n")]


def _variant(tmp_path, name: str, *edits) -> Path:
    text = TMA.read_text().replace(".reg .pred \t%p<12>;", ".reg .pred \t%p<40>;") \
                          .replace(".reg .b32 \t%r<68>;", ".reg .b32 \t%r<140>;")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    f = tmp_path / f"{name}.ptx"
    f.write_text(text)
    return f


def _verdict(path: Path):
    [x] = extract_file(str(path), out_dir=str(path.parent / (path.stem + "-out")))
    return x, x.check()


@pytest.mark.parametrize("name, edits, flag", [
    # lane 0 of each consumer warp fences, lanes 1-31 read the tile and arrive unfenced
    ("fence_lane0", [(FENCE, NOT_LANE0 + "\t@%p27 bra $L__SKIP;\n\tfence.proxy.async.shared::cta;\n$L__SKIP:\n")],
     "MixedSizeRace"),
    # warp 4 fences, warps 5-7 do not
    ("fence_warp4", [(FENCE, "\tsetp.lt.u32 %p21, %r1, 160;\n\t@%p21 fence.proxy.async.shared::cta;\n")],
     "MixedSizeRace"),
    # lane 0 of each warp arrives for its warp, with nothing that orders lanes 1-31's reads first
    ("arrive_lane0", LANE0_ARRIVES, "InFlight"),
    # as arrive_lane0, with a bar.arrive of every consumer thread first: it waits for nothing, so
    # lane 0's arrive still does not publish lanes 1-31's reads (the producers bar.sync at the end)
    ("arrive_lane0_bar_arrive", [LANE0_ARRIVES[0], (ARRIVE, "\tbar.arrive 1, 256;\n" + LANE0_ARRIVES[1][1]),
                                 ("@%p3 bra \t$L__BB0_16;", "@%p3 bra \t$L__PEND;"),
                                 ("@%p9 bra \t$L__BB0_16;", "@%p9 bra \t$L__PEND;"),
                                 ("bra.uni \t$L__BB0_16;", "bra.uni \t$L__PEND;"),
                                 ("$L__BB0_16:\n\tret;\n", "$L__BB0_16:\n\tret;\n$L__PEND:\n\tbar.sync 1, 256;\n\tret;\n")],
     "InFlight"),
    # lane 0 waits for the tile, lanes 1-31 read it without waiting
    ("wait_lane0", [(WAIT, NOT_LANE0 + "\t@%p27 bra $L__NOWAIT;\n" + WAIT), (RETRY, RETRY + "$L__NOWAIT:\n")],
     "InFlight"),
])
def test_synchronization_of_some_threads_is_not_lent_to_the_others(tmp_path, name, edits, flag):
    """The threads that lack the operation race with the TMA copy into the stage (as with no
    such operation at all): they are a role of their own, not folded into the one that has it."""
    x, rep = _verdict(_variant(tmp_path, name, *edits))
    assert not rep.ok and flag in rep.text, rep.text
    assert len(x.skeleton.roles) == 3


@pytest.mark.parametrize("name, edits", [
    ("fence_all", [(FENCE, "\tsetp.lt.u32 %p21, %r1, 256;\n\t@%p21 fence.proxy.async.shared::cta;\n")]),
    # `__syncwarp(); if (lane == 0) arrive`: bar.warp.sync orders the lanes' reads before lane 0's arrive
    ("arrive_lane0_warpsync", [LANE0_ARRIVES[0], (ARRIVE, "\tbar.warp.sync -1;\n" + LANE0_ARRIVES[1][1])]),
    ("arrive_lane0_barsync", [LANE0_ARRIVES[0], (ARRIVE, "\tbar.sync 1, 128;\n" + LANE0_ARRIVES[1][1])]),
    # lane 0 waits, then `__syncwarp()`, then every lane reads
    ("wait_lane0_warpsync", [(WAIT, NOT_LANE0 + "\t@%p27 bra $L__NOWAIT;\n" + WAIT),
                             (RETRY, RETRY + "$L__NOWAIT:\n\tbar.warp.sync -1;\n")]),
])
def test_lanes_that_synchronize_with_the_one_that_waits_or_arrives_pass(tmp_path, name, edits):
    """The same edits made correct (every thread fences; the lanes synchronize with the lane that
    waits or arrives) pass, with the consumers one role."""
    x, rep = _verdict(_variant(tmp_path, name, *edits))
    assert rep.ok, rep.text
    assert len(x.skeleton.roles) == 2


# warp 1: every lane stores its word of buf, then (SYNC) lane 0 arrives for the warp; thread 0
# waits and reads lane 1's word. Lanes 1-31 of warp 1 merge with the idle lanes of warp 0 into a
# role of their own (their synchronization is the same: bar 0 only), so the read's value check
# could not tell lane 0's ordered store from theirs: each covers the piece. Without the
# `bar.warp.sync` (`__syncwarp()`) nothing orders their stores before lane 0's arrive.
LANE_STORES = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 buf[128];
  .reg .b32 %r<10>;
  .reg .pred %p<10>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [mb], 1;
  fence.mbarrier_init.release.cluster;
INITED:
  bar.sync 0;
  setp.lt.u32 %p2, %r1, 32;
  @%p2 bra CONSUMER;
  and.b32 %r2, %r1, 31;
  shl.b32 %r3, %r2, 2;
  mov.u32 %r4, buf;
  add.s32 %r5, %r4, %r3;
  st.shared.u32 [%r5], 5;
SYNC  setp.ne.s32 %p3, %r2, 0;
  @%p3 bra DONE;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
  bra.uni DONE;
CONSUMER:
  @%p1 bra DONE;
W: mbarrier.try_wait.parity.shared::cta.b64 %p7, [mb], 0;
  @!%p7 bra W;
  ld.shared.u32 %r6, [buf+4];
DONE:
  ret;
}
"""


@pytest.mark.parametrize("sync, ok", [("", False), ("  bar.warp.sync -1;\n", True)])
def test_stores_of_lanes_beside_the_one_that_arrives_must_be_ordered_before_it(tmp_path, sync, ok):
    """The stores of another role to a piece a reader checks get a shadow word each
    (skeleton._store_shadows): without `__syncwarp()` the read may miss lanes 1-31's stores (it
    used to PASS: lane 0's ordered store of the same value hid them); with it, the order the
    dropped `bar.warp.sync` gives is not lost to the check."""
    f = tmp_path / "k.ptx"
    f.write_text(LANE_STORES.replace("SYNC", sync))
    x, rep = _verdict(f)
    assert rep.ok == ok, rep.text
    if not ok:
        assert "may miss w0_1_62t's store at PTX L25: nothing orders that store before the read" in rep.text, rep.text
        # the shadow word after the store and before the read: what orders the shadow words orders
        # the accesses (before the store, `fix` found a bar.warp.sync between the two that passed)
        roles = {r.name: [ln.text for ln in r.lines] for r in x.skeleton.roles}
        w, t0 = roles["w0_1_62t"], roles["t0"]
        at = lambda lines, text: next(k for k, ln in enumerate(lines) if text in ln)    # noqa: E731
        assert at(w, "[buf0], 5") < at(w, "[buf0_by_w0_1_62t], 1"), w
        assert at(t0, "[buf0_by_w0_1_62t]") < at(t0, "[buf0]"), t0


# each warp stores its own half of buf; warp 0 reads its half after its own named barrier (32
# threads: program order in the skeleton), then both meet at barrier 2 and warp 1 reads
OWN_HALVES = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 16 .b8 buf[256];
  .reg .b32 %r<10>;
  .reg .pred %p<10>;
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, buf;
  add.s32 %r4, %r3, %r2;
  st.shared.u32 [%r4], 7;
  setp.ge.u32 %p1, %r1, 32;
  @%p1 bra LATER;
  bar.sync 1, 32;
  xor.b32 %r5, %r2, 4;
  add.s32 %r6, %r3, %r5;
  ld.shared.u32 %r7, [%r6];
LATER:
  bar.sync 2, 64;
  @!%p1 bra DONE;
  ld.shared.u32 %r8, [%r4];
DONE:
  ret;
}
"""


def test_stores_of_roles_that_no_elected_lane_publishes_are_not_shadowed(tmp_path):
    """A warp's (warpgroup's) own part of a buffer behind its own named barrier: the other warp's
    stores to the same piece are other bytes, which the read does not need. Shadowing every writing
    role of a piece reported this correct kernel (a first version of skeleton._store_shadows); only
    a writer beside an arriving writer in its warp is shadowed."""
    f = tmp_path / "k.ptx"
    f.write_text(OWN_HALVES)
    x, rep = _verdict(f)
    assert rep.ok, rep.text
    assert len(x.skeleton.roles) == 2 and not any("_by_" in m for m in x.skeleton.memory)


# warp 1 reads buf, fences, `__syncwarp()`s and arrives on `empty` (32 arrivals); lanes 16-31 of
# warp 0 read buf, fence and `__syncwarp()` with lanes 0-15 of warp 0, and never arrive; thread 96
# waits for `empty` and copies a tile into buf. Nothing orders warp 0's reads before the copy.
WARP_OF_ITS_OWN = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[128])
.reqntid 128
{
  .shared .align 8 .b8 empty[8];
  .shared .align 8 .b8 full[8];
  .shared .align 128 .b8 buf[128];
  .reg .b32 %r<12>;
  .reg .pred %p<12>;
  .reg .b64 %rd<6>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 96;
  @%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [empty], 32;
  mbarrier.init.shared::cta.b64 [full], 1;
  fence.mbarrier_init.release.cluster;
INITED:
  bar.sync 0;
  setp.eq.s32 %p2, %r1, 96;
  @%p2 bra PRODUCER;
  setp.ge.u32 %p3, %r1, 96;
  @%p3 bra IDLE;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  setp.eq.s32 %p4, %r2, 1;
  @%p4 bra READER;
  setp.ne.s32 %p5, %r2, 0;
  @%p5 bra IDLE;
  setp.lt.u32 %p6, %r3, 16;
  @%p6 bra IDLE;
READER:
  ld.shared.u32 %r4, [buf];
  fence.proxy.async.shared::cta;
  bar.warp.sync -1;
  @!%p4 bra DONE;
  mbarrier.arrive.shared::cta.b64 %rd1, [empty];
  bra.uni DONE;
IDLE:
  bar.warp.sync -1;
  bra.uni DONE;
PRODUCER:
W: mbarrier.try_wait.parity.shared::cta.b64 %p7, [empty], 0;
  @!%p7 bra W;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd2, [full], 16;
  mov.b64 %rd3, k_param_0;
  cvta.param.u64 %rd4, %rd3;
  mov.u32 %r5, 0;
  cp.async.bulk.tensor.1d.shared::cta.global.mbarrier::complete_tx::bytes [buf], [%rd4, {%r5}], [full];
F: mbarrier.try_wait.parity.shared::cta.b64 %p8, [full], 0;
  @!%p8 bra F;
DONE:
  ret;
}
"""


def test_a_warp_barrier_orders_a_fold_only_in_the_warps_that_perform_the_release(tmp_path):
    """The idle threads (lanes 0-15 of warp 0, warps 2-3) fold into warp 1's role first, which then
    spans warps 0-3; warp 0's readers used to fold into it too, as if their `bar.warp.sync` (warp
    0's) ordered their reads before warp 1's arrive (after warp 1's own): PASS for a kernel whose
    copy may overwrite buf while warp 0 still reads it."""
    f = tmp_path / "k.ptx"
    f.write_text(WARP_OF_ITS_OWN)
    x, rep = _verdict(f)
    assert not rep.ok and "InFlight" in rep.text, rep.text
    assert "w0_16t" in {r.name for r in x.skeleton.roles}


# warp 1: every lane stores its word of buf (SYNC), then lane 0 fences and copies buf out with a
# TMA store; warp 0 only passes bar 0
LANES_TMA_STORE = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[128])
.reqntid 64
{
  .shared .align 128 .b8 buf[128];
  .reg .b32 %r<10>;
  .reg .pred %p<10>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  bar.sync 0;
  setp.lt.u32 %p2, %r1, 32;
  @%p2 bra DONE;
  and.b32 %r2, %r1, 31;
  shl.b32 %r3, %r2, 2;
  mov.u32 %r4, buf;
  add.s32 %r5, %r4, %r3;
  st.shared.u32 [%r5], 5;
SYNC  setp.ne.s32 %p3, %r2, 0;
  @%p3 bra DONE;
  fence.proxy.async.shared::cta;
  mov.b64 %rd1, k_param_0;
  cvta.param.u64 %rd3, %rd1;
  mov.u32 %r6, 0;
  cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%rd3, {%r6}], [buf];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
DONE:
  ret;
}
"""


@pytest.mark.parametrize("sync, ok", [("  fence.proxy.async.shared::cta;\n  bar.warp.sync -1;\n", True),
                                      ("  bar.warp.sync -1;\n", False), ("", False)],
                         ids=["fence-then-syncwarp", "syncwarp-only", "nothing"])
def test_lanes_that_fence_then_syncwarp_before_the_elected_copy_fold_into_it(tmp_path, sync, ok):
    """Each lane's own proxy fence, then `__syncwarp()`, then lane 0's fence and copy (CUTLASS's
    fence_view_async_shared before the elected TMA store, within one warp): lane 0's second fence,
    which the lanes lack, kept them a role of their own, the dropped bar.warp.sync left their
    stores unordered before the copy, and a correct kernel FAILED (InFlight, MixedSizeRace).
    Without the lanes' fences (a proxy fence orders its own thread's accesses), or without both,
    it fails."""
    f = tmp_path / "k.ptx"
    f.write_text(LANES_TMA_STORE.replace("SYNC", sync))
    x, rep = _verdict(f)
    assert rep.ok == ok, rep.text
    if ok:
        assert len(x.skeleton.roles) == 1
    else:
        assert "MixedSizeRace" in rep.text, rep.text
