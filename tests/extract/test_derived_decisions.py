"""Values computed from the values the extractor names (a parameter times a constant, shifted,
converted to another width, a constant added at another width), a word loaded from global memory
at an address every thread computes the same, and a warp's vote under a member mask the thread
cannot evaluate: each used to be an unknown of its own in every thread, so two roles decided one
question their own ways (thread 0 the wait, thread 32 the arrive) and `check` said PASS for a
kernel that hangs. They are now one value for the kernel (an expression over the named values,
exact in Z3's bit-vectors), or the branch is refused where no name is exact."""
from __future__ import annotations

import pytest

from checker.errors import LitmusError
from checker.extract.api import extract_file
from checker.extract.render import role_table

from .test_shared_decisions import CROSS

# CROSS with a pointer parameter (k_param_1) every thread loads
PTR = CROSS.replace(".param .u32 k_param_0)", ".param .u32 k_param_0, .param .u64 k_param_1)") \
    .replace(".reg .b64 %rd<2>;", ".reg .b64 %rd<2>;\n  .reg .b64 %rg<8>;\n  .reg .b64 %rw<8>;") \
    .replace("  ld.param.u32 %r9, [k_param_0];", "  ld.param.u32 %r9, [k_param_0];\n  ld.param.u64 %rg1, [k_param_1];\n"
             "  cvta.to.global.u64 %rg2, %rg1;")

# (consumer's setp %p6: skip the wait; producer's setp %p4: skip the arrive); each pair asks one
# question (or two the first decides), so the kernel hangs when the consumer waits
DERIVED = {
    "mul": ("mul.lo.s32 %r8, %r9, 4;\n  setp.ge.s32 %p6, %r8, 20;", "mul.lo.s32 %r7, %r9, 4;\n  setp.lt.s32 %p4, %r7, 20;"),
    "shl": ("shl.b32 %r8, %r9, 3;\n  setp.ge.u32 %p6, %r8, 40;", "shl.b32 %r7, %r9, 3;\n  setp.lt.u32 %p4, %r7, 40;"),
    "mul.wide": ("mul.wide.s32 %rw1, %r9, 8;\n  setp.ge.s64 %p6, %rw1, 40;", "setp.lt.s32 %p4, %r9, 5;"),
    "cvt": ("cvt.s64.s32 %rw1, %r9;\n  setp.ge.s64 %p6, %rw1, 5;", "setp.lt.s32 %p4, %r9, 5;"),
    "cvt.u64.u32 add.s64": ("cvt.u64.u32 %rw1, %r9;\n  add.s64 %rw2, %rw1, 1;\n  setp.ge.u64 %p6, %rw2, 6;",
                            "setp.lt.u32 %p4, %r9, 5;"),
    "add.s32 cvt.s64": ("add.s32 %r8, %r9, 3;\n  cvt.s64.s32 %rw1, %r8;\n  setp.ge.s64 %p6, %rw1, 8;",
                        "add.s32 %r7, %r9, 3;\n  setp.lt.s32 %p4, %r7, 8;"),
    "shr and": ("shr.u32 %r8, %r9, 1;\n  and.b32 %r7, %r8, 7;\n  setp.ne.s32 %p6, %r7, 0;",
                "shr.u32 %r6, %r9, 1;\n  and.b32 %r5, %r6, 7;\n  setp.eq.s32 %p4, %r5, 0;"),
    # repeated doublings: a tree of 127 nodes that shares its subterms (7 distinct nodes, the
    # size of the term Z3 gets); the bound on a tree's size refused it
    "doublings": ("add.s32 %r8, %r9, %r9;\n" + "  add.s32 %r8, %r8, %r8;\n" * 5 + "  setp.ge.s32 %p6, %r8, 320;",
                  "add.s32 %r7, %r9, %r9;\n" + "  add.s32 %r7, %r7, %r7;\n" * 5 + "  setp.lt.s32 %p4, %r7, 320;"),
    # a launch-wide special register: the same value in every thread of the launch
    "nctaid": ("mov.u32 %r8, %nctaid.x;\n  setp.ge.u32 %p6, %r8, 5;", "mov.u32 %r7, %nctaid.x;\n  setp.lt.u32 %p4, %r7, 5;"),
    # the device's SM and warp identifier counts: one value for the launch too (each was a thread's own
    # unknown: two roles decided each its own way, PASS for a kernel that hangs when %nsmid < 5)
    # lane 0's parameter value broadcast by shfl.sync.idx: still the parameter (it was renamed per warp,
    # so two warps decided one parameter each its own way: PASS for a kernel that hangs)
    "shfl.idx": ("shfl.sync.idx.b32 %r8, %r9, 0, 31, -1;\n  setp.ge.u32 %p6, %r8, 5;",
                 "shfl.sync.idx.b32 %r7, %r9, 0, 31, -1;\n  setp.lt.u32 %p4, %r7, 5;"),
    "nsmid": ("mov.u32 %r8, %nsmid;\n  setp.ge.u32 %p6, %r8, 5;", "mov.u32 %r7, %nsmid;\n  setp.lt.u32 %p4, %r7, 5;"),
    "nwarpid": ("mov.u32 %r8, %nwarpid;\n  setp.ge.u32 %p6, %r8, 5;", "mov.u32 %r7, %nwarpid;\n  setp.lt.u32 %p4, %r7, 5;"),
    # a word loaded from global memory at one address (no store of the kernel writes global memory)
    "global load": ("ld.global.u32 %r8, [%rg2+4];\n  setp.ge.s32 %p6, %r8, 5;",
                    "ld.global.u32 %r7, [%rg2+4];\n  setp.lt.s32 %p4, %r7, 5;"),
    "global load widths": ("ld.global.u32 %r8, [%rg2+4];\n  setp.ge.u32 %p6, %r8, 5;",
                           "ld.global.u8 %r7, [%rg2+4];\n  ld.global.u8 %r6, [%rg2+5];\n  ld.global.u16 %r5, [%rg2+6];\n"
                           "  or.b32 %r4, %r6, %r5;\n  setp.eq.s32 %p3, %r4, 0;\n  setp.lt.u32 %p5, %r7, 5;\n"
                           "  and.pred %p4, %p3, %p5;"),
}


@pytest.mark.parametrize("case", sorted(DERIVED))
def test_a_value_computed_from_named_values_is_one_value_for_the_kernel(tmp_path, case):
    consumer, producer = DERIVED[case]
    f = tmp_path / "k.ptx"
    f.write_text(PTR.replace("CONSUMER_SETP", consumer).replace("PRODUCER_SETP", producer))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    table = role_table(x.skeleton)
    kinds = {t: sorted(e.kind for e in r.trace.events if e.kind.startswith("mb_"))
             for r in x.skeleton.roles for t in r.tids if t in (0, 32)}
    # thread 0 decides first (the wait); thread 32 follows: no arrive
    assert "mb_wait" in kinds[0] and "mb_arrive" not in kinds.get(32, []), table
    assert "follows from the decision at L" in table and "by thread 0" in table, table
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text


# no name is exact: the branch whose sides differ in synchronization is refused, naming its line
REFUSED = {
    # popc is not followed
    "popc": ("popc.b32 %r8, %r9;\n  setp.ge.s32 %p6, %r8, 2;", "popc.b32 %r7, %r9;\n  setp.lt.s32 %p4, %r7, 2;",
             r"depends on popc"),
    # a store of the kernel may write the word (through the same or another pointer parameter)
    "global stored": ("ld.global.u32 %r8, [%rg2+4];\n  setp.ge.s32 %p6, %r8, 5;",
                      "st.global.u32 [%rg2+64], %r1;\n  ld.global.u32 %r7, [%rg2+4];\n  setp.lt.s32 %p4, %r7, 5;",
                      r"global memory"),
    # a computation longer than a term's bound (doublings: 71 distinct nodes, a tree of 2^71)
    "deep": ("add.s32 %r8, %r9, %r9;\n" + "  add.s32 %r8, %r8, %r8;\n" * 70 + "  setp.ge.s32 %p6, %r8, 5;",
             "add.s32 %r7, %r9, %r9;\n" + "  add.s32 %r7, %r7, %r7;\n" * 70 + "  setp.lt.s32 %p4, %r7, 5;",
             r"depends on add.s32"),
    # another lane's value (bfly, up, down) was each thread's own unknown: PASS for a kernel that hangs
    "shfl.bfly": ("shfl.sync.bfly.b32 %r8, %r9, 1, 31, -1;\n  setp.ge.u32 %p6, %r8, 5;",
                  "shfl.sync.bfly.b32 %r7, %r9, 1, 31, -1;\n  setp.lt.u32 %p4, %r7, 5;", r"depends on shfl"),
    "shfl.down": ("shfl.sync.down.b32 %r8, %r9, 1, 31, -1;\n  setp.ge.u32 %p6, %r8, 5;",
                  "shfl.sync.down.b32 %r7, %r9, 1, 31, -1;\n  setp.lt.u32 %p4, %r7, 5;", r"depends on shfl"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_question_on_a_value_with_no_exact_name_is_refused(tmp_path, case):
    consumer, producer, why = REFUSED[case]
    f = tmp_path / "k.ptx"
    f.write_text(PTR.replace("CONSUMER_SETP", consumer).replace("PRODUCER_SETP", producer))
    with pytest.raises(LitmusError, match=r"k\.ptx:\d+.*" + why):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


def test_a_question_only_one_thread_decides_is_decided(tmp_path):
    """popc of the parameter, asked by thread 32 only: no other thread can take the other side."""
    f = tmp_path / "k.ptx"
    f.write_text(PTR.replace("CONSUMER_SETP", "setp.ge.s32 %p6, %r1, 0;")
                 .replace("PRODUCER_SETP", "popc.b32 %r7, %r9;\n  setp.lt.s32 %p4, %r7, 2;"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert x.check(jobs=0).ok


def test_a_float_computed_from_a_parameter_is_refused(tmp_path):
    """`(float)n >= 5.0` and `(float)n < 5.0`: float values are not followed; each role decided its
    own way (PASS for a kernel that hangs when n < 5)."""
    f = tmp_path / "k.ptx"
    f.write_text(PTR.replace(".reg .b64 %rd<2>;", ".reg .b64 %rd<2>;\n  .reg .f32 %f<4>;")
                 .replace("CONSUMER_SETP", "cvt.rn.f32.s32 %f1, %r9;\n  setp.ge.f32 %p6, %f1, 0f40A00000;")
                 .replace("PRODUCER_SETP", "cvt.rn.f32.s32 %f2, %r9;\n  setp.lt.f32 %p4, %f2, 0f40A00000;"))
    with pytest.raises(LitmusError, match=r"k\.ptx:\d+.*depends on .*parameter k_param_0"):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


def _warp(tmp_path, warp: str):
    """CROSS with thread 1 as the producer; `warp` computes %p6 in every thread before the roles
    part: thread 0 waits unless %p6, thread 1 arrives only when %p6."""
    f = tmp_path / "k.ptx"
    f.write_text(PTR.replace("setp.eq.s32 %p2, %r1, 32;", warp + "\n  setp.eq.s32 %p2, %r1, 1;")
                 .replace("CONSUMER_SETP", "").replace("PRODUCER_SETP", "not.pred %p4, %p6;"))
    return f


def test_a_vote_under_a_mask_computed_from_a_parameter_is_one_value_for_the_warp(tmp_path):
    """The member mask is the parameter: every lane computes the same one, so the vote is one value
    for the lanes of that mask (each lane decided it its own way: PASS for a kernel that hangs)."""
    f = _warp(tmp_path, "ld.global.u32 %r8, [%rg2];\n  setp.lt.s32 %p5, %r8, 5;\n  vote.sync.any.pred %p6, %p5, %r9;")
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    table = role_table(x.skeleton)
    assert "follows from the decision at L" in table and "of warp 0 mask parameter k_param_0 in CTA 0" in table, table
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text + table


VOTES = {
    # under a guard the lanes cannot evaluate (which lanes vote is unknown)
    "guarded": "ld.global.u32 %r8, [%rg2];\n  setp.lt.s32 %p5, %r8, 5;\n  setp.ne.s32 %p3, %r9, 0;\n"
               "  @%p3 vote.sync.any.pred %p6, %p5, -1;",
    # a mask of each lane's own (loaded from global memory a store of the kernel may write)
    "lane's mask": "st.global.u32 [%rg2+64], %r1;\n  ld.global.u32 %r8, [%rg2];\n"
                   "  setp.lt.s32 %p5, %r8, 5;\n  vote.sync.any.pred %p6, %p5, %r8;",
}


@pytest.mark.parametrize("case", sorted(VOTES))
def test_a_vote_no_name_is_exact_for_is_refused(tmp_path, case):
    f = _warp(tmp_path, VOTES[case])
    with pytest.raises(LitmusError, match=r"k\.ptx:\d+.*depends on .*vote"):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


def test_a_shared_word_several_stores_wrote_is_refused(tmp_path):
    """Thread 1 stores 1 to `word`, then (after a barrier) thread 2 stores 2; after the next barrier
    both roles load `word` (the extractor names no one store: two are visible) and decided `w < 5`
    each its own way: PASS for a kernel that hangs in every launch (w is 2)."""
    f = tmp_path / "k.ptx"
    f.write_text(PTR.replace(".shared .align 16 .b8 buf[16];", ".shared .align 16 .b8 buf[16];\n"
                             "  .shared .align 4 .b8 word[4];")
                 .replace("INITED:\n  bar.sync 0;", "INITED:\n  setp.eq.s32 %p8, %r1, 1;\n  @%p8 st.shared.u32 [word], 1;\n"
                          "  bar.sync 0;\n  setp.eq.s32 %p8, %r1, 2;\n  @%p8 st.shared.u32 [word], 2;\n  bar.sync 0;")
                 .replace("CONSUMER_SETP", "ld.shared.u32 %r8, [word];\n  setp.ge.u32 %p6, %r8, 5;")
                 .replace("PRODUCER_SETP", "ld.shared.u32 %r7, [word];\n  setp.lt.u32 %p4, %r7, 5;"))
    with pytest.raises(LitmusError, match=r"k\.ptx:\d+.*depends on shared memory"):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


# thread 0 arrives once in every launch: on mb if popc(n) < 2, else after its second test, which
# computes popc(n) again into another register; thread 32 waits for phase 0. The two popc values
# were two unknowns of thread 0's own: it took `< 2` at the first branch and `>= 2` at the second,
# two arrives no launch makes, and the check said FAIL (MbarrierSkippedPhase) for a correct kernel
TWICE = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 k_param_0)
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .reg .b32 %r<12>;
  .reg .pred %p<10>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [mb], 1;
  fence.mbarrier_init.release.cluster;
INITED:
  bar.sync 0;
  ld.param.u32 %r9, [k_param_0];
  setp.eq.s32 %p2, %r1, 32;
  @%p2 bra CONSUMER;
  @%p1 bra DONE;
  FIRST
  @%p3 bra ONE;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
ONE:
  SECOND
  @%p4 bra DONE;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd2, [mb];
  bra.uni DONE;
CONSUMER:
W0:
  mbarrier.try_wait.parity.shared::cta.b64 %p7, [mb], 0;
  @!%p7 bra W0;
DONE:
  ret;
}
"""

ONE_THREAD = {
    # popc of one parameter computed twice: two values the facts cannot relate
    "popc twice": ("popc.b32 %r8, %r9;\n  setp.ge.u32 %p3, %r8, 2;", "popc.b32 %r7, %r9;\n  setp.lt.u32 %p4, %r7, 2;",
                   r":29: '@%p4 bra DONE': .*popc.b32 \(computed from parameter k_param_0\).*this thread also decides a "
                   r"question on parameter k_param_0 \(at L24\)"),
    # popc of the thread's own unknown (%clock) computed twice: no named value at all
    "own value twice": ("mov.u32 %r9, %clock;\n  popc.b32 %r8, %r9;\n  setp.ge.u32 %p3, %r8, 2;",
                        "popc.b32 %r7, %r9;\n  setp.lt.u32 %p4, %r7, 2;",
                        r":30: '@%p4 bra DONE': .*popc.b32 \(computed from %r9 of thread 0\).*this thread also decides a "
                        r"question on %r9 of thread 0 \(at L25\)"),
    # the thread's own unknown (%clock) itself, then its popc (v == 0, then popc(v) >= 1): one arrive
    # in every launch; each decided on its own took both (FAIL, MbarrierSkippedPhase), in either order
    "own value then popc": ("mov.u32 %r9, %clock;\n  setp.ne.u32 %p3, %r9, 0;",
                            "popc.b32 %r7, %r9;\n  setp.ge.u32 %p4, %r7, 1;",
                            r":29: '@%p4 bra DONE': .*popc.b32 \(computed from %r9 of thread 0\).*this thread also "
                            r"decides a question on %r9 of thread 0 \(at L24\)"),
    "popc then own value": ("mov.u32 %r9, %clock;\n  popc.b32 %r7, %r9;\n  setp.ge.u32 %p3, %r7, 1;",
                            "setp.eq.u32 %p4, %r9, 0;",
                            r":25: '@%p3 bra ONE': .*popc.b32 \(computed from %r9 of thread 0\).*this thread also "
                            r"decides a question on %r9 of thread 0 \(at L29\)"),
    # a question on the parameter itself, then on its popc (n == 0, then popc(n) >= 1)
    "n then popc": ("setp.ne.u32 %p3, %r9, 0;", "popc.b32 %r7, %r9;\n  setp.ge.u32 %p4, %r7, 1;",
                    r":28: '@%p4 bra DONE': .*this thread also decides a question on parameter k_param_0 \(at L23\)"),
}


@pytest.mark.parametrize("case", sorted(ONE_THREAD))
def test_one_thread_deciding_two_questions_the_facts_cannot_relate_is_refused(tmp_path, case):
    first, second, message = ONE_THREAD[case]
    f = tmp_path / "k.ptx"
    f.write_text(TWICE.replace("FIRST", first).replace("SECOND", second))
    with pytest.raises(LitmusError, match=message):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


def test_one_thread_deciding_one_opaque_value_twice_follows_its_facts(tmp_path):
    """The same popc register tested twice is one value: the second test follows the first (one
    arrive), not refused."""
    f = tmp_path / "k.ptx"
    f.write_text(TWICE.replace("FIRST", "popc.b32 %r8, %r9;\n  setp.ge.u32 %p3, %r8, 2;")
                 .replace("SECOND", "setp.lt.u32 %p4, %r8, 2;"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    [r0] = [r for r in x.skeleton.roles if 0 in r.tids]
    assert sum(e.kind == "mb_arrive" for e in r0.trace.events) == 1
    assert "follows from the decision at L24" in role_table(x.skeleton)
    assert x.check(jobs=0).ok


# thread 32 waits for the data only in CTA 0 of the grid (SETP on the CTA's place); thread 0 stores
# it and arrives. The skeleton is the grid's first cluster: %ctaid.x was 0 there, and the other
# CTAs, which read without waiting, were never asked: PASS
GRID = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 data[16];
  .reg .b32 %r<10>;
  .reg .pred %p<10>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [mb], 1;
  fence.mbarrier_init.release.cluster;
INITED:
  bar.sync 0;
  setp.eq.s32 %p2, %r1, 32;
  @%p2 bra CONSUMER;
  @%p1 bra DONE;
  st.shared.u32 [data], 5;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
  bra.uni DONE;
CONSUMER:
  SETP
  @%p3 bra READ;
W: mbarrier.try_wait.parity.shared::cta.b64 %p7, [mb], 0;
  @!%p7 bra W;
READ:
  ld.shared.u32 %r6, [data];
DONE:
  ret;
}
"""


@pytest.mark.parametrize("setp", ["mov.u32 %r3, %ctaid.x;\n  setp.ne.s32 %p3, %r3, 0;",
                                  "mov.u32 %r3, %clusterid.x;\n  add.s32 %r4, %r3, 1;\n  setp.gt.u32 %p3, %r4, 1;",
                                  # the warp's hardware slot: not %tid / 32 (PTX ISA, %warpid), taken as it
                                  "mov.u32 %r3, %warpid;\n  setp.ne.s32 %p3, %r3, 1;"],
                         ids=["ctaid", "clusterid", "warpid"])
def test_a_branch_on_the_ctas_place_in_the_grid_whose_sides_differ_is_refused(tmp_path, setp):
    f = tmp_path / "k.ptx"
    f.write_text(GRID.replace("SETP", setp))
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "@%p3 bra READ" in ln)
    with pytest.raises(LitmusError, match=rf"k\.ptx:{line}: .*depends on the CTA's place in the grid.*differ in "
                                          r"synchronization"):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


def test_a_branch_on_the_ctas_place_in_the_grid_whose_sides_synchronize_alike_is_taken(tmp_path):
    """Both sides wait: the branch is CTA 0's, and the other CTAs' side synchronizes the same."""
    f = tmp_path / "k.ptx"
    f.write_text(GRID.replace("SETP", "mov.u32 %r3, %ctaid.x;\n  setp.ne.s32 %p3, %r3, 0;")
                 .replace("  @%p3 bra READ;\n", "  @%p3 bra W;\n"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert x.check(jobs=0).ok


# a cluster of two CTAs: thread 0 of the CTA of rank 0 stores word, and after a cluster barrier
# thread 0 of the CTA of rank 1 reads it through mapa. RANK: how %r1, the rank, is computed
CLUSTER_RANK = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 k_param_0)
.maxntid 64, 1, 1
.explicitcluster
.reqnctapercluster 2, 1, 1
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<5>;
  .shared .align 4 .u32 word;
  ld.param.u64 %rd1, [k_param_0];
RANK
  mov.u32 %r2, %tid.x;
  setp.ne.s32 %p1, %r2, 0;
  setp.ne.u32 %p2, %r1, 0;
  @%p1 bra L2;
  @%p2 bra L2;
  st.shared.u32 [word], 7;
L2:
  barrier.cluster.arrive;
  barrier.cluster.wait;
  @%p1 bra L4;
  @!%p2 bra L4;
  mov.u32 %r5, word;
  mapa.shared::cluster.u32 %r6, %r5, 0;
  ld.shared::cluster.u32 %r7, [%r6];
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r7;
L4:
  barrier.cluster.arrive;
  barrier.cluster.wait;
  ret;
}
"""


def _skeleton_code(x) -> list[list[str]]:
    return [[ln.text for ln in r.lines] for r in x.skeleton.roles]


@pytest.mark.parametrize("rank", ["  mov.u32 %r9, %ctaid.x;\n  rem.u32 %r1, %r9, 2;\n",
                                  "  mov.u32 %r9, %ctaid.x;\n  and.b32 %r1, %r9, 1;\n",
                                  "  rem.u32 %r1, %ctaid.x, 2;\n"], ids=["rem", "and", "rem-direct"])
def test_the_cluster_rank_computed_from_ctaid_is_the_rank(tmp_path, rank):
    """`%ctaid.x % N` with N the cluster's size (.reqnctapercluster N,1,1) is the CTA's rank in its
    cluster in every cluster of the grid (clusters tile the grid along x): a branch on it is the
    rank's, as with %cluster_ctarank (it was refused as a branch on the CTA's place in the grid)."""
    want = tmp_path / "want.ptx"
    want.write_text(CLUSTER_RANK.replace("RANK\n", "  mov.u32 %r1, %cluster_ctarank;\n"))
    f = tmp_path / "k.ptx"
    f.write_text(CLUSTER_RANK.replace("RANK\n", rank))
    [w] = extract_file(str(want), out_dir=str(tmp_path / "want"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert _skeleton_code(x) == _skeleton_code(w)
    assert x.check(jobs=0).ok


@pytest.mark.parametrize("rank", ["  mov.u32 %r9, %ctaid.x;\n  rem.u32 %r1, %r9, 4;\n",
                                  "  mov.u32 %r9, %ctaid.x;\n  add.u32 %r9, %r9, 1;\n  rem.u32 %r1, %r9, 2;\n",
                                  "  mov.u32 %r9, %ctaid.y;\n  rem.u32 %r1, %r9, 2;\n"],
                         ids=["not-the-cluster-size", "not-ctaid-itself", "ctaid-y"])
def test_a_remainder_of_ctaid_that_is_not_the_cluster_rank_is_refused(tmp_path, rank):
    f = tmp_path / "k.ptx"
    f.write_text(CLUSTER_RANK.replace("RANK\n", rank))
    with pytest.raises(LitmusError, match=r"depends on the CTA's place in the grid.*differ in synchronization"):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


def test_a_cluster_with_more_than_one_cta_along_y_is_refused(tmp_path):
    """The skeleton's CTAs are ranks along x (%ctaid = (rank, 0, 0)); .reqnctapercluster 2, 2, 1 was
    taken as 2 CTAs, the other two silently dropped (a PASS that covered half the cluster)."""
    f = tmp_path / "k.ptx"
    f.write_text(CLUSTER_RANK.replace("RANK\n", "  mov.u32 %r1, %cluster_ctarank;\n")
                 .replace(".reqnctapercluster 2, 1, 1", ".reqnctapercluster 2, 2, 1"))
    with pytest.raises(LitmusError, match=r"k\.ptx:4: .*a cluster of 2x2x1 CTAs.*along x only"):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


def test_a_cluster_size_the_kernel_does_not_allow_is_refused(tmp_path):
    """`--cluster 4` for a kernel that requires clusters of 2 (.reqnctapercluster 2, 1, 1) was
    extracted as a cluster of 4, a launch that cannot happen (%cluster_nctarank 4 where every
    launch has 2); the value agreeing with the kernel's is accepted."""
    f = tmp_path / "k.ptx"
    f.write_text(CLUSTER_RANK.replace("RANK\n", "  mov.u32 %r1, %cluster_ctarank;\n"))
    with pytest.raises(LitmusError, match=r"k\.ptx:4: .*--cluster 4, but the kernel requires clusters of 2 CTAs"):
        extract_file(str(f), out_dir=str(tmp_path / "out"), cluster=4)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "ok"), cluster=2)
    assert x.skeleton.cluster == 2
