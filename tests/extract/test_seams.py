"""Control-flow seams of `ptxmc extract`: an early `ret`/`exit` whose guard the thread cannot
evaluate is a decision of the run, said in the role table like a branch's, and refused where
its two sides differ in an mbarrier's lifetime (as a branch is); `elect.sync` elects a lane of
its member mask (two halves of a warp, two leaders); `setp` with two destinations `p|q` gives q
the complement; a register no instruction on the path wrote is unknown, not 0."""
from __future__ import annotations

from pathlib import Path

import pytest

from checker.errors import LitmusError
from checker.extract.api import extract_file
from checker.extract.render import role_table

ROOT = Path(__file__).resolve().parents[2]
TMA = ROOT / "examples" / "kernels" / "cuda" / "tma_ws_pipeline.sm90a.ptx"
CLUSTER = ROOT / "examples" / "kernels" / "cuda" / "cluster_dsmem.sm90a.ptx"

# one CTA: thread 0 initialises an mbarrier, completes its phase, waits for it and (unless a
# parameter says otherwise) invalidates it; then thread 32 writes the bytes as data
EXIT_BEFORE_INVAL = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 k_param_0)
.reqntid 64
{
  .shared .align 16 .b8 buf[64];
  .reg .b32 %r<8>;
  .reg .pred %p<4>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra SKIP;
  mbarrier.init.shared::cta.b64 [buf], 1;
  mbarrier.arrive.shared::cta.b64 %rd1, [buf];
W: mbarrier.try_wait.parity.shared::cta.b64 %p2, [buf], 0;
  @!%p2 bra W;
  ld.param.u32 %r3, [k_param_0];
  setp.eq.s32 %p3, %r3, 0;
  @%p3 OP;
  mbarrier.inval.shared::cta.b64 [buf];
SKIP:
  bar.sync 0;
  setp.ne.s32 %p3, %r1, 32;
  @%p3 bra DONE;
  st.shared.u32 [buf], 7;
DONE:
  ret;
}
"""


def test_an_early_ret_on_a_parameter_is_said_in_the_role_table(tmp_path):
    """The consumers of the TMA pipeline return early when a parameter is large: the run goes on
    (the side that synchronizes more), and the table says so at the `ret`'s line, as for a
    branch (it was taken silently)."""
    text = TMA.read_text().replace(".reg .pred \t%p<12>;", ".reg .pred \t%p<40>;")
    text = text.replace("$L__BB0_6:\n", "$L__BB0_6:\n\tsetp.gt.s32 %p25, %r14, 5;\n\t@%p25 ret;\n")
    f = tmp_path / "k.ptx"
    f.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "@%p25 ret" in ln)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert f"assumed at L{line}: ret not taken (its condition @p25 depends on unknown values" in role_table(x.skeleton)
    assert x.check(jobs=0).ok


@pytest.mark.parametrize("op", ["ret", "exit"])
def test_an_early_exit_that_skips_an_inval_is_refused(tmp_path, op):
    """Leaving before the inval on one side: thread 32's store then writes a live mbarrier's
    bytes (UB); taking the other side silently gave a PASS. Refused like a branch whose sides
    differ in an mbarrier's lifetime, naming the line and the parameter to choose a side with."""
    f = tmp_path / "k.ptx"
    f.write_text(EXIT_BEFORE_INVAL.replace("OP", op))
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if f"@%p3 {op}" in ln)
    with pytest.raises(LitmusError) as e:
        extract_file(str(f), out_dir=str(tmp_path / "out"))
    msg = str(e.value)
    assert f"k.ptx:{line}:" in msg and "differ in an mbarrier's lifetime" in msg, msg
    assert "--param k_param_0=VALUE" in msg
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out1"), params={"k_param_0": 1})
    assert x.check(jobs=0).ok                                     # the inval's side


# two halves of warp 0 each elect a leader (member masks 0x0000ffff and 0xffff0000); each leader
# writes buf and arrives on mb (expected count 2); warp 1 waits on mb and reads buf
HALVES = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 buf[16];
  .reg .b32 %r<10>;
  .reg .pred %p<6>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra INIT_DONE;
  mbarrier.init.shared::cta.b64 [mb], 2;
  fence.mbarrier_init.release.cluster;
INIT_DONE:
  bar.sync 0;
  setp.ge.u32 %p2, %r1, 32;
  @%p2 bra CONSUMER;
  and.b32 %r2, %r1, 31;
  setp.lt.u32 %p3, %r2, 16;
  MASK
  elect.sync _|%p4, %r3;
  @!%p4 bra DONE;
  st.shared.u32 [buf], 7;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
  bra.uni DONE;
CONSUMER:
W: mbarrier.try_wait.parity.shared::cta.b64 %p5, [mb], 0;
  @!%p5 bra W;
  ld.shared.u32 %r4, [buf];
DONE:
  ret;
}
"""


def test_elect_sync_elects_a_lane_of_its_member_mask(tmp_path):
    """Lane 16 leads the upper half: two arrivals complete mb's phase. Taking lane 0 as every
    elect's leader lost lane 16's arrival: a hang reported for a kernel that has none."""
    f = tmp_path / "k.ptx"
    f.write_text(HALVES.replace("MASK", "selp.b32 %r3, 65535, -65536, %p3;"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert sorted(r.name for r in x.skeleton.roles if any(e.kind == "mb_arrive" for e in r.trace.events)) == ["t0", "t16"]
    rep = x.check(jobs=0)
    assert rep.ok, rep.text


@pytest.mark.parametrize("mask, message", [
    ("mov.b32 %r3, 65534;", "lane 0, which its member mask 0x0000fffe leaves out"),
    ("ld.shared.u32 %r3, [buf];", "elect.sync with a member mask the thread cannot evaluate"),
])
def test_elect_sync_outside_its_mask_or_on_an_unknown_mask_is_refused(tmp_path, mask, message):
    f = tmp_path / "k.ptx"
    f.write_text(HALVES.replace("MASK", mask))
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "elect.sync" in ln)
    with pytest.raises(LitmusError) as e:
        extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert f"k.ptx:{line}:" in str(e.value) and message in str(e.value), str(e.value)


# thread 0 initialises mb (guarded by q of a `setp p|q`), writes buf and arrives; warp 1 reads
# buf, waiting on mb unless GUARD skips the wait
SETP_PAIR = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 buf[16];
  .reg .b32 %r<10>;
  .reg .pred %p<10>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1|%p6, %r1, 0;
  @%p6 mbarrier.init.shared::cta.b64 [mb], 1;
  @%p6 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.ge.u32 %p2, %r1, 32;
  setp.lt.u32 %p7|%p3, %r1, 32;
  @%p2 bra CONSUMER;
  @%p1 bra DONE;
  st.shared.u32 [buf], 7;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
  bra.uni DONE;
CONSUMER:
  GUARD
W: mbarrier.try_wait.parity.shared::cta.b64 %p5, [mb], 0;
  @!%p5 bra W;
NOWAIT:
  ld.shared.u32 %r4, [buf];
DONE:
  ret;
}
"""


@pytest.mark.parametrize("guard, ok", [("@%p7 bra NOWAIT;", True), ("@%p3 bra NOWAIT;", False)])
def test_setp_with_two_destinations_gives_the_second_the_complement(tmp_path, guard, ok):
    """`setp.lt p7|p3, tid, 32`: p3 is tid >= 32, true in warp 1, which then skips its wait and
    may read buf before thread 0 writes it. Both destinations used to get the comparison: p3 was
    false there, the wait kept, a PASS; and `setp.ne p1|p6, tid, 0` had every thread but 0
    initialise mb."""
    f = tmp_path / "k.ptx"
    f.write_text(SETP_PAIR.replace("GUARD", guard))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    [init] = [r for r in x.skeleton.roles if any(e.kind == "mb_init" for e in r.trace.events)]
    assert init.tids == [0]
    rep = x.check(jobs=0)
    assert rep.ok == ok, rep.text


def test_a_guard_no_instruction_wrote_is_unknown_not_false(tmp_path):
    """`@%p9 fence.proxy.async` with %p9 written on no path: its value is undefined, and the run
    read it as 0, dropping the fence without a word (here the only fence between the consumers'
    reads and the next TMA copy). Now it is synchronization under a guard the thread cannot
    evaluate: refused at its line."""
    text = TMA.read_text().replace(".reg .pred \t%p<12>;", ".reg .pred \t%p<40>;")
    text = text.replace("\tfence.proxy.async.shared::cta; // 6.\n", "\t@%p39 fence.proxy.async.shared::cta;\n")
    f = tmp_path / "k.ptx"
    f.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "@%p39 fence" in ln)
    with pytest.raises(LitmusError) as e:
        extract_file(str(f), out_dir=str(tmp_path / "out"))
    msg = str(e.value)
    assert f"k.ptx:{line}:" in msg and "predicate the thread cannot evaluate" in msg, msg
    assert "not written on this path" in msg


@pytest.mark.parametrize("n", [1, 2, 4])
def test_iterations_is_the_number_of_trips_of_the_loop(tmp_path, n):
    """`--iterations 1` ran the K loop twice (its back edge taken once before the count was
    looked at) while the table said "closed after 1 iterations"."""
    [x] = extract_file(str(TMA), iterations=n, out_dir=str(tmp_path / "out"))
    consumer = next(r for r in x.skeleton.roles if r.name == "w4_7")
    assert sum(e.kind == "mb_wait" for e in consumer.trace.events) == n
    assert f"loop closed after {n} iterations" in role_table(x.skeleton)


def test_mbarrier_complete_tx_is_refused_at_its_line(tmp_path):
    """It was refused only when the skeleton was written, as 'no emission for mb_complete_tx'."""
    arrive = "\tmbarrier.arrive.shared.b64                                  %rd4,  [%r32];           // 1. \n"
    text = TMA.read_text().replace(arrive, arrive + "\tmbarrier.complete_tx.shared::cta.b64 [%r32], 16;\n")
    f = tmp_path / "k.ptx"
    f.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "complete_tx.shared" in ln)
    with pytest.raises(LitmusError) as e:
        extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert f"k.ptx:{line}:" in str(e.value) and "'mbarrier.complete_tx'" in str(e.value) and "not modelled" in str(e.value)


def test_a_cta_may_not_exit_while_its_neighbour_reads_its_shared_memory(tmp_path):
    """cluster_dsmem without its second cluster.sync (PTX lines 55-56): each CTA may exit while
    the other still reads its word through distributed shared memory. It passed before the exit
    check (the model has no event for a CTA's exit); now the skeleton's shadow words name it."""
    text = CLUSTER.read_text().splitlines(keepends=True)
    assert [x.strip() for x in text[54:56]] == ["barrier.cluster.arrive;", "barrier.cluster.wait;"]
    ptx = tmp_path / "cluster_nosync.ptx"
    ptx.write_text("".join(text[:54] + text[56:]))
    [x] = extract_file(str(ptx), out_dir=str(tmp_path / "nosync"))
    rep = x.check(jobs=0)
    assert not rep.ok
    assert "CTA 0 (w0_1_c0) may end while w0_1_c1 still accesses its shared memory: the access at PTX L47" in rep.text
    assert "CTA 1 (w0_1_c1) may end while w0_1_c0 still accesses its shared memory" in rep.text
    [ok] = extract_file(str(CLUSTER), out_dir=str(tmp_path / "asis"))
    assert ok.check(jobs=0).ok                       # the kernel as compiled keeps both CTAs running


# every lane of warp 0 reads its own lane id through shfl.sync.idx with segment mask 31
# (c = 0x1f00: the source lane is the reader's own); only lane 0 then writes buf and arrives on
# mb (expected count 1); warp 1 waits on mb and reads buf
SEGMENTS = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 buf[16];
  .reg .b32 %r<10>;
  .reg .pred %p<6>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra INIT_DONE;
  mbarrier.init.shared::cta.b64 [mb], 1;
  fence.mbarrier_init.release.cluster;
INIT_DONE:
  bar.sync 0;
  setp.ge.u32 %p2, %r1, 32;
  @%p2 bra CONSUMER;
  and.b32 %r2, %r1, 31;
  shfl.sync.idx.b32 %r5, %r2, 0, 7936, -1;
  setp.ne.u32 %p4, %r5, 0;
  @%p4 bra DONE;
  st.shared.u32 [buf], 7;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
  bra.uni DONE;
CONSUMER:
W: mbarrier.try_wait.parity.shared::cta.b64 %p5, [mb], 0;
  @!%p5 bra W;
  ld.shared.u32 %r4, [buf];
DONE:
  ret;
}
"""


def test_shfl_idx_takes_its_segment_mask_and_clamp(tmp_path):
    """With segment mask 31 each lane's source lane is its own (PTX ISA, shfl.sync, mode .idx), so
    only lane 0 arrives. Reading `src & 31` (lane 0 for every lane) ignored the clamp operand: the
    32 lanes all arrived on an mbarrier that expects one arrival."""
    f = tmp_path / "k.ptx"
    f.write_text(SEGMENTS)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    arrives = [r for r in x.skeleton.roles if any(e.kind == "mb_arrive" for e in r.trace.events)]
    assert [r.tids for r in arrives] == [[0]]
    rep = x.check(jobs=0)
    assert rep.ok, rep.text
