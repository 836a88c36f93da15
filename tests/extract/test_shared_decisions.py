"""Decisions of `ptxmc extract` on unknown values are one per question for the whole kernel: a
question about kernel parameters decided by one thread is followed by every later thread (one
role cannot take `n < 5` while another takes `n >= 5`); comparisons of two unknowns are facts too;
and `setp.CMP.BOOLOP` / `p|q` / `and/or/xor/not.pred` combine the facts as the PTX ISA defines
setp (p = (a CMP b) BOOLOP c, q = !(a CMP b) BOOLOP c), so a later decision follows from them."""
from __future__ import annotations

import pytest

from checker.errors import LitmusError
from checker.extract.api import extract_file
from checker.extract.render import role_table

# thread 0 waits for thread 32's arrive and reads buf when n < 5; thread 32 stores buf and arrives
# when n >= 5. For n < 5 the kernel hangs (thread 0 waits for an arrive that never comes). Decided
# role by role, each took the side that synchronizes more for itself (thread 0: n < 5, the wait;
# thread 32: n >= 5, the arrive), a path no launch takes, and `check` said PASS
CROSS = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 k_param_0)
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 buf[16];
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
  ld.param.u32 %r9, [k_param_0];
  setp.eq.s32 %p2, %r1, 32;
  @%p2 bra PRODUCER;
  @%p1 bra DONE;
  CONSUMER_SETP
  @%p6 bra DONE;
W: mbarrier.try_wait.parity.shared::cta.b64 %p7, [mb], 0;
  @!%p7 bra W;
  ld.shared.u32 %r4, [buf];
  bra.uni DONE;
PRODUCER:
  PRODUCER_SETP
  @%p4 bra DONE;
  st.shared.u32 [buf], 7;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
DONE:
  ret;
}
"""

CROSS_SETPS = {
    "same parameter": ("setp.ge.s32 %p6, %r9, 5;", "setp.lt.s32 %p4, %r9, 5;"),
    "implied bound": ("setp.gt.s32 %p6, %r9, 4;", "setp.lt.s32 %p4, %r9, 7;"),
    "reloaded as s32": ("setp.ge.s32 %p6, %r9, 5;", "ld.param.u32 %r8, [k_param_0];\n  setp.lt.s32 %p4, %r8, 5;"),
}


@pytest.mark.parametrize("case", sorted(CROSS_SETPS))
def test_the_roles_take_one_side_of_a_question_on_a_parameter(tmp_path, case):
    consumer, producer = CROSS_SETPS[case]
    f = tmp_path / "k.ptx"
    f.write_text(CROSS.replace("CONSUMER_SETP", consumer).replace("PRODUCER_SETP", producer))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    kinds = {t: sorted(e.kind for e in r.trace.events if e.kind.startswith("mb_"))
             for r in x.skeleton.roles for t in r.tids if t in (0, 32)}
    # thread 0 decides first (n < 5 or n <= 4: the wait); thread 32 follows: no arrive
    assert "mb_wait" in kinds[0] and "mb_arrive" not in kinds.get(32, []), kinds
    table = role_table(x.skeleton)
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "@%p6 bra DONE" in ln)
    assert f"follows from the decision at L{line} by thread 0: parameter k_param_0" in table, table
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text         # the kernel's hang for n < 5


# one thread, the DECIDE kernel of test_decisions.py: thread 0 stores buf (first branch not taken)
# then arrives (second branch not taken) or stores buf2 twice; thread 32 waits and reads buf when
# the first question's answer says so. Two questions that are one: decided independently, thread 0
# took the store and then the two stores to buf2 (more than one arrive), a path no thread takes,
# and thread 32's wait hung: FAIL for a correct kernel
ONE = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 k_param_0, .param .u32 k_param_1)
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 buf[16];
  .shared .align 16 .b8 buf2[16];
  .reg .b32 %r<12>;
  .reg .pred %p<12>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [mb], 1;
  fence.mbarrier_init.release.cluster;
INITED:
  bar.sync 0;
  ld.param.u32 %r9, [k_param_0];
  ld.param.u32 %r10, [k_param_1];
  ld.local.u32 %r11, [%rd1+8];
  SETP
  setp.ne.s32 %p2, %r1, 32;
  @%p2 bra PRODUCER;
  WAITIF
  @%p6 bra DONE;
W: mbarrier.try_wait.parity.shared::cta.b64 %p7, [mb], 0;
  @!%p7 bra W;
  ld.shared.u32 %r4, [buf];
  bra.uni DONE;
PRODUCER:
  @%p1 bra DONE;
  @%p4 bra SKIP;
  st.shared.u32 [buf], 7;
SKIP:
  GUARD bra OTHER;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
  bra.uni DONE;
OTHER:
  st.shared.u32 [buf2], 1;
  st.shared.u32 [buf2+4], 2;
DONE:
  ret;
}
"""

# (setps, thread 32's skip condition %p6, the guard of thread 0's second branch): each case makes
# the second guard false exactly when the first branch is not taken
ONE_SETPS = {
    # two unknowns: n < m, then n >= m (the negation), m > n (swapped), on a loaded value
    "pair negated": ("setp.lt.s32 %p4, %r9, %r10;\n  setp.ge.s32 %p5, %r9, %r10;", "setp.lt.s32 %p6, %r9, %r10;", "@!%p5"),
    "pair swapped": ("setp.lt.s32 %p4, %r9, %r10;\n  setp.gt.s32 %p5, %r10, %r9;", "setp.lt.s32 %p6, %r9, %r10;", "@%p5"),
    "pair loaded": ("setp.lt.u32 %p4, %r9, %r11;\n  setp.hs.u32 %p5, %r9, %r11;", "setp.lt.u32 %p6, %r9, %r11;", "@!%p5"),
    "pair equal": ("setp.ne.s32 %p4, %r9, %r10;\n  setp.eq.s32 %p5, %r10, %r9;", "setp.ne.s32 %p6, %r9, %r10;", "@!%p5"),
    # setp.CMP.BOOLOP with a known c: xor 1 negates, and 1 / or 0 keep the comparison
    "xor known": ("setp.ne.s32 %p4, %r9, 0;\n  setp.eq.s32 %p8, %r1, %r1;\n  setp.ne.xor.s32 %p5, %r9, 0, %p8;",
                  "setp.ne.s32 %p6, %r9, 0;", "@!%p5"),
    "xor known comparison": ("setp.ne.s32 %p4, %r9, 0;\n  setp.eq.s32 %p8, %r9, 0;\n  setp.eq.xor.s32 %p5, %r1, %r1, %p8;",
                             "setp.ne.s32 %p6, %r9, 0;", "@%p5"),
    "and known": ("setp.ne.s32 %p4, %r9, 0;\n  setp.eq.s32 %p8, %r1, %r1;\n  setp.eq.and.s32 %p5, %r9, 0, %p8;",
                  "setp.ne.s32 %p6, %r9, 0;", "@!%p5"),
    # with an unknown c (a float comparison): n != 0 decided false makes (n != 0) and c false
    "and unknown": ("setp.ne.s32 %p4, %r9, 0;\n  mov.b32 %f1, %r11;\n  setp.gt.f32 %p9, %f1, 0f00000000;\n"
                    "  setp.ne.and.s32 %p5, %r9, 0, %p9;", "setp.ne.s32 %p6, %r9, 0;", "@%p5"),
    # p|q with an unknown c: q = (n == 0 is false) and c
    "and complement": ("setp.ne.s32 %p4, %r9, 0;\n  mov.b32 %f1, %r11;\n  setp.gt.f32 %p9, %f1, 0f00000000;\n"
                       "  setp.eq.and.s32 %p10|%p5, %r9, 0, %p9;", "setp.ne.s32 %p6, %r9, 0;", "@%p5"),
    # or with an unknown c: (n == 0) or c, with n == 0 decided true, is true
    "or unknown": ("setp.ne.s32 %p4, %r9, 0;\n  mov.b32 %f1, %r11;\n  setp.gt.f32 %p9, %f1, 0f00000000;\n"
                   "  setp.eq.or.s32 %p5, %r9, 0, %p9;", "setp.ne.s32 %p6, %r9, 0;", "@!%p5"),
    # and.pred / not.pred of a predicate with no structure (a float comparison) and a comparison
    "and.pred": ("setp.ne.s32 %p4, %r9, 0;\n  mov.b32 %f1, %r11;\n  setp.gt.f32 %p9, %f1, 0f00000000;\n"
                 "  setp.ne.s32 %p8, %r9, 0;\n  and.pred %p5, %p8, %p9;", "setp.ne.s32 %p6, %r9, 0;", "@%p5"),
    # a float setp's p|q are complements, not two unknowns
    "float complement": ("mov.b32 %f1, %r11;\n  setp.gt.f32 %p4|%p5, %f1, 0f00000000;", "setp.ne.s32 %p6, %r1, %r1;", "@!%p5"),
    # a constant added: n + 1 != 1 is n != 0
    "offset": ("setp.ne.s32 %p4, %r9, 0;\n  add.s32 %r8, %r9, 1;\n  setp.ne.s32 %p5, %r8, 1;", "setp.ne.s32 %p6, %r9, 0;", "@%p5"),
    # a predicated mov under the decided predicate: %r7 is 1 exactly when n != 0
    "predicated mov": ("setp.ne.s32 %p4, %r9, 0;\n  mov.u32 %r7, 0;\n  @%p4 mov.u32 %r7, 1;\n  setp.ne.s32 %p5, %r7, 0;",
                       "setp.ne.s32 %p6, %r9, 0;", "@%p5"),
    # nvcc's bool: selp 1, 0 then compared with 0
    "selp": ("setp.ne.s32 %p4, %r9, 0;\n  selp.b32 %r8, 1, 0, %p4;\n  setp.eq.s32 %p5, %r8, 0;", "setp.ne.s32 %p6, %r9, 0;", "@!%p5"),
}


@pytest.mark.parametrize("case", sorted(ONE_SETPS))
def test_later_predicates_follow_from_the_decisions_on_their_values(tmp_path, case):
    setps, waitif, guard = ONE_SETPS[case]
    f = tmp_path / "k.ptx"
    f.write_text(ONE.replace("SETP", setps).replace("WAITIF", waitif).replace("GUARD", guard))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    [t0] = [r for r in x.skeleton.roles if 0 in r.tids]
    stores = sorted(e.get("loc").symbol for e in t0.trace.events if e.kind == "smem" and e.get("write"))
    arrives = [e for e in t0.trace.events if e.kind == "mb_arrive"]
    # a path a thread takes: the store and the arrive, or neither store to buf (then two to buf2)
    assert (stores, len(arrives)) in ((["buf"], 1), (["buf2", "buf2"], 0)), (stores, arrives, role_table(x.skeleton))
    rep = x.check(jobs=0)
    assert rep.ok, rep.text + role_table(x.skeleton)


def test_a_branch_on_a_float_parameter_is_decided_by_one_value_for_every_role(tmp_path):
    """Float comparisons are not facts: each role decided `x < 5.0` its own way (thread 0 the wait,
    thread 32 the arrive) and `check` said PASS for a kernel that hangs when x < 5. The branch is
    now refused and the parameter search sets x (1.0: thread 0 waits, thread 32 does not arrive)."""
    f = tmp_path / "k.ptx"
    text = CROSS.replace(".param .u32 k_param_0", ".param .f32 k_param_0") \
        .replace("ld.param.u32 %r9, [k_param_0];", "ld.param.f32 %f9, [k_param_0];") \
        .replace(".reg .b64 %rd<2>;", ".reg .b64 %rd<2>;\n  .reg .f32 %f<10>;")
    f.write_text(text.replace("CONSUMER_SETP", "setp.ge.f32 %p6, %f9, 0f40A00000;")
                 .replace("PRODUCER_SETP", "setp.lt.f32 %p4, %f9, 0f40A00000;"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert x.skeleton.params == {"k_param_0": 1.0}
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text


def test_a_value_stored_to_shared_memory_is_one_value_for_every_reader(tmp_path):
    """Thread 0 stores a word it loaded from global memory; after the barrier both roles load it
    and ask `w < 5`. Each load was an unknown of its own, decided per role (thread 0 the wait,
    thread 32 the arrive): PASS for a kernel that hangs when w < 5. The loads now read the value
    the store wrote (thread 0's `%r8`), and thread 32 follows thread 0's decision."""
    f = tmp_path / "k.ptx"
    text = CROSS.replace(".shared .align 16 .b8 buf[16];", ".shared .align 16 .b8 buf[16];\n"
                         "  .shared .align 4 .b8 word[4];\n  .reg .b64 %rg<2>;") \
        .replace("  mbarrier.init.shared::cta.b64 [mb], 1;", "  mbarrier.init.shared::cta.b64 [mb], 1;\n"
                 "  ld.param.u64 %rg1, [k_param_1];\n  ld.global.u32 %r8, [%rg1];\n  st.shared.u32 [word], %r8;\n"
                 # a store to global memory: the load is a value of thread 0's own, not one of the kernel
                 "  st.global.u32 [%rg1+64], %r1;") \
        .replace(".param .u32 k_param_0)", ".param .u32 k_param_0, .param .u64 k_param_1)") \
        .replace("  ld.param.u32 %r9, [k_param_0];", "  ld.shared.u32 %r9, [word];")
    f.write_text(text.replace("CONSUMER_SETP", "setp.ge.s32 %p6, %r9, 5;").replace("PRODUCER_SETP", "setp.lt.s32 %p4, %r9, 5;"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    table = role_table(x.skeleton)
    assert "follows from the decision at L30 by thread 0: %r8 of thread 0 < 5 (s32) is true" in table, table
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text


def _warp_kernel(tmp_path, warp: str, consumer: str, producer: str):
    """CROSS with thread 1 as the producer and `warp` (on each lane's word %r8, loaded from
    global memory) before the roles part."""
    f = tmp_path / "k.ptx"
    text = CROSS.replace(".reg .b64 %rd<2>;", ".reg .b64 %rd<2>;\n  .reg .b64 %rg<2>;") \
        .replace(".param .u32 k_param_0)", ".param .u32 k_param_0, .param .u64 k_param_1)") \
        .replace("  ld.param.u32 %r9, [k_param_0];", "  ld.param.u64 %rg1, [k_param_1];\n  ld.global.u32 %r8, [%rg1];\n  "
                 + warp) \
        .replace("setp.eq.s32 %p2, %r1, 32;", "setp.eq.s32 %p2, %r1, 1;")
    f.write_text(text.replace("CONSUMER_SETP", consumer).replace("PRODUCER_SETP", producer))
    return f


def test_a_value_lane_0_broadcasts_is_one_value_for_the_warp(tmp_path):
    """Each lane loads its own word and `shfl.sync.idx` broadcasts lane 0's: thread 0 waits when it
    is below 5, thread 1 (the producer) arrives when it is not. Each lane decided the broadcast
    value its own way: PASS for a kernel that hangs when the word is below 5. The broadcast value
    now has one name for the warp, and lane 1 follows lane 0's decision."""
    f = _warp_kernel(tmp_path, "shfl.sync.idx.b32 %r9, %r8, 0, 31, -1;", "setp.ge.s32 %p6, %r9, 5;",
                     "setp.lt.s32 %p4, %r9, 5;")
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    table = role_table(x.skeleton)
    assert "(thread 1, folded in): branch taken (its condition @p4 follows from the decision at L" in table, table
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text


# thread 0 waits for two phases of mb and reads buf when K < 2; thread 32 stores buf and arrives
# once per trip of a loop of K trips. For K < 2 the second phase never completes: a hang. The
# loop's window (2 trips) ran on although thread 0 had decided K < 2, and `check` said PASS
LOOP = CROSS.replace("""  CONSUMER_SETP
  @%p6 bra DONE;
W: mbarrier.try_wait.parity.shared::cta.b64 %p7, [mb], 0;
  @!%p7 bra W;""", """  setp.ge.s32 %p6, %r9, 2;
  @%p6 bra DONE;
W: mbarrier.try_wait.parity.shared::cta.b64 %p7, [mb], 0;
  @!%p7 bra W;
W1: mbarrier.try_wait.parity.shared::cta.b64 %p8, [mb], 1;
  @!%p8 bra W1;""").replace("""  PRODUCER_SETP
  @%p4 bra DONE;
  st.shared.u32 [buf], 7;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];""", """  mov.u32 %r5, 0;
  st.shared.u32 [buf], 7;
LOOP:
  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb];
  add.s32 %r5, %r5, 1;
  setp.lt.s32 %p3, %r5, %r9;
  @%p3 bra LOOP;""")


def test_a_loop_ends_where_the_decisions_say_it_must(tmp_path):
    f = tmp_path / "k.ptx"
    f.write_text(LOOP)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    [t32] = [r for r in x.skeleton.roles if 32 in r.tids]
    assert sum(e.kind == "mb_arrive" for e in t32.trace.events) == 1
    assert "loop left here (its condition @p3 follows from the decision at L" in role_table(x.skeleton)
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text


def test_each_element_of_a_vector_parameter_load_is_its_own_value(tmp_path):
    """`ld.param.v2.u32 {%r9, %r10}, [k_param_0]` loads two words: a value given for `k_param_0`
    (its first word) was given to both, so the branch on `%r10` was evaluated with a value nobody
    gave; and both were one named value, so a fact on one was taken for the other."""
    f = tmp_path / "k.ptx"
    f.write_text(CROSS.replace(".param .u32 k_param_0)", ".param .align 8 .b8 k_param_0[8])")
                 .replace("  ld.param.u32 %r9, [k_param_0];", "  ld.param.v2.u32 {%r8, %r9}, [k_param_0];")
                 .replace("CONSUMER_SETP", "setp.ne.s32 %p6, %r8, 0;")
                 .replace("PRODUCER_SETP", "setp.ne.s32 %p4, %r9, 0;"))
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "@%p4 bra DONE" in ln)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"), params={"k_param_0": 0})
    assert f"assumed at L{line}: branch not taken (its condition @p4 depends on unknown values" \
        in role_table(x.skeleton), role_table(x.skeleton)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out2"))
    table = role_table(x.skeleton)
    assert "follows" not in table, table        # %r9 is not %r8: thread 32 decides it
    [t32] = [r for r in x.skeleton.roles if 32 in r.tids]
    assert any("parameter k_param_0@4:32" in repr(f) for f, _, _ in t32.trace.decided), t32.trace.decided


def test_a_value_read_after_an_mbarrier_wait_is_the_one_stored_there(tmp_path):
    """Thread 32 loads a word from global memory into %r8, stores it to shared memory, arrives on
    mb2, and arrives on mb (after storing buf) unless %r8 < 5; thread 0 waits on mb2, loads the
    word, and waits on mb unless it is >= 5. For a word below 5 thread 0 waits for an arrive that
    never comes. The load was an unknown of its own (no barrier orders the store before it) and
    the two decided the word their own ways: PASS. The load now reads the one value ever stored
    there, thread 32's %r8, and thread 32 follows thread 0's decision on it."""
    f = tmp_path / "k.ptx"
    f.write_text(CROSS.replace(".shared .align 16 .b8 buf[16];", ".shared .align 16 .b8 buf[16];\n"
                               "  .shared .align 8 .b8 mb2[8];\n  .shared .align 4 .b8 word[4];\n  .reg .b64 %rg<2>;")
                 .replace("  mbarrier.init.shared::cta.b64 [mb], 1;", "  mbarrier.init.shared::cta.b64 [mb], 1;\n"
                          "  mbarrier.init.shared::cta.b64 [mb2], 1;")
                 .replace(".param .u32 k_param_0)", ".param .u32 k_param_0, .param .u64 k_param_1)")
                 .replace("  CONSUMER_SETP", "W0: mbarrier.try_wait.parity.shared::cta.b64 %p5, [mb2], 0;\n  @!%p5 bra W0;\n"
                          "  ld.shared.u32 %r9, [word];\n  setp.ge.s32 %p6, %r9, 5;")
                 .replace("  PRODUCER_SETP", "  ld.param.u64 %rg1, [k_param_1];\n  ld.global.u32 %r8, [%rg1];\n"
                          "  st.shared.u32 [word], %r8;\n  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [mb2];\n"
                          "  setp.lt.s32 %p4, %r8, 5;"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert "follows from the decision at L" in role_table(x.skeleton), role_table(x.skeleton)
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text


def test_a_null_test_on_a_pointer_parameter_is_one_question_for_the_kernel(tmp_path):
    """`setp.eq.s64 %p6, %rd5, 0` on a pointer parameter: thread 0 took `ptr != 0` (its wait),
    thread 32 `ptr == 0` (its arrive): PASS for a kernel that hangs when the pointer is set."""
    f = tmp_path / "k.ptx"
    f.write_text(CROSS.replace(".param .u32 k_param_0)", ".param .u64 k_param_0)")
                 .replace("  ld.param.u32 %r9, [k_param_0];", "  ld.param.u64 %rd5, [k_param_0];")
                 .replace(".reg .b64 %rd<2>;", ".reg .b64 %rd<8>;")
                 .replace("CONSUMER_SETP", "setp.eq.s64 %p6, %rd5, 0;")
                 .replace("PRODUCER_SETP", "setp.ne.s64 %p4, %rd5, 0;"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert "parameter k_param_0 (pointer) == 0 (b64) is false" in role_table(x.skeleton), role_table(x.skeleton)
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text


def test_a_trip_that_ran_is_a_fact_for_the_threads_after(tmp_path):
    """The loop of LOOP run by thread 0 (first), the K < 2 question by thread 32: thread 0's two
    trips of `i < K` recorded nothing, thread 32 took K < 2 (its two waits), and the two arrives
    completed both phases: PASS for a kernel that hangs when K < 2 (one arrive). A trip that ran
    is now a fact (K >= 2): thread 32 follows it and waits for nothing. Nobody then waits for
    phase 0 before the arrive of phase 1, which the PTX text makes undefined (mbarrier > Phase of
    the mbarrier object: MbarrierSkippedPhase, docs/model.md#a7): that, not a hang, is the answer."""
    f = tmp_path / "k.ptx"
    f.write_text(LOOP.replace("setp.eq.s32 %p2, %r1, 32;", "setp.eq.s32 %p2, %r1, 0;")
                 .replace("  @%p1 bra DONE;\n  setp.ge", "  setp.ne.s32 %p9, %r1, 32;\n  @%p9 bra DONE;\n  setp.ge"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    waits = [e for r in x.skeleton.roles for e in r.trace.events if e.kind == "mb_wait"]
    arrives = [e for r in x.skeleton.roles for e in r.trace.events if e.kind == "mb_arrive"]
    assert (len(arrives), waits) == (2, []), role_table(x.skeleton)
    assert "parameter k_param_0 < 2 (s32) is false" in role_table(x.skeleton), role_table(x.skeleton)
    rep = x.check(jobs=0)
    assert not rep.ok and "MbarrierSkippedPhase" in rep.text and "hang" not in rep.text, rep.text


# each lane loads its own word and the warp computes one value of them all with vote.sync /
# redux.sync (the same in every lane of the member mask, PTX ISA); thread 0 waits unless the
# value says so, thread 1 (the producer) arrives only when it does: a hang when it does not
WARP_VALUE = {
    "vote.any": ("setp.lt.s32 %p5, %r8, 5;\n  vote.sync.any.pred %p6, %p5, -1;", "", "not.pred %p4, %p6;"),
    "vote.all": ("setp.lt.s32 %p5, %r8, 5;\n  vote.sync.all.pred %p6, !%p5, -1;", "", "not.pred %p4, %p6;"),
    "vote.uni": ("setp.lt.s32 %p5, %r8, 5;\n  vote.sync.uni.pred %p6, %p5, 0xffffffff;", "", "not.pred %p4, %p6;"),
    "vote.ballot": ("setp.lt.s32 %p5, %r8, 5;\n  vote.sync.ballot.b32 %r9, %p5, -1;",
                    "setp.ne.s32 %p6, %r9, 0;", "setp.eq.s32 %p4, %r9, 0;"),
    "redux.max": ("redux.sync.max.s32 %r9, %r8, -1;", "setp.ge.s32 %p6, %r9, 5;", "setp.lt.s32 %p4, %r9, 5;"),
}


@pytest.mark.parametrize("case", sorted(WARP_VALUE))
def test_a_value_the_warp_computes_together_is_one_value_for_the_warp(tmp_path, case):
    """Each lane decided the result of vote.sync / redux.sync its own way (thread 0 the wait,
    thread 1 the arrive): PASS for a kernel that hangs. The result now has one name for the warp
    and its member mask, and thread 1 follows thread 0's decision."""
    f = _warp_kernel(tmp_path, *WARP_VALUE[case])
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    table = role_table(x.skeleton)
    assert "follows from the decision at L" in table and "of warp 0 mask 0xffffffff in CTA 0 at L" in table, table
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text + table


def test_lanes_of_other_member_masks_compute_other_values(tmp_path):
    """Lane 0 votes with mask 0x1 and lane 1 with mask 0x2: two votes of one lane each, two values;
    lane 1 decides its own rather than following lane 0's."""
    f = _warp_kernel(tmp_path, "setp.lt.s32 %p5, %r8, 5;\n  shl.b32 %r7, 1, %r1;\n  vote.sync.any.pred %p6, %p5, %r7;",
                     "", "not.pred %p4, %p6;")
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    table = role_table(x.skeleton)
    assert "follows" not in table, table
    [t1] = [r for r in x.skeleton.roles if 1 in r.tids]
    assert any("mask 0x2 in CTA 0" in repr(f) for f, _, _ in t1.trace.decided), t1.trace.decided


def test_a_vote_a_lane_settles_is_that_value_for_the_warp(tmp_path):
    """Lane 0's own predicate is true, so `vote.sync.any` is true in every lane (PTX ISA). Each lane
    took it as an unknown of its own: lane 0 took `false` (its wait) on a path no launch takes.
    Lane 0 now skips the wait, and lane 1 follows: it arrives."""
    f = _warp_kernel(tmp_path, "setp.eq.s32 %p5, %r1, 0;\n  vote.sync.any.pred %p6, %p5, -1;", "", "not.pred %p4, %p6;")
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    kinds = {t: sorted(e.kind for e in r.trace.events if e.kind.startswith("mb_"))
             for r in x.skeleton.roles for t in r.tids if t in (0, 1)}
    table = role_table(x.skeleton)
    assert "mb_wait" not in kinds[0] and "mb_arrive" in kinds[1], table
    assert "vote.sync.any.pred of warp 0 mask 0xffffffff in CTA 0 at L23 (1)) is true" in table, table
    assert x.check(jobs=0).ok


def test_a_vote_a_later_lane_settles_otherwise_is_refused(tmp_path):
    """Lane 0's predicate is false and it takes `vote.sync.any` false (its wait); lane 1's is true,
    which makes the vote true in every lane: lane 0's path is one no launch takes. Refused at the
    vote's line (the lanes are decided in order)."""
    f = _warp_kernel(tmp_path, "setp.eq.s32 %p5, %r1, 1;\n  vote.sync.any.pred %p6, %p5, -1;", "", "not.pred %p4, %p6;")
    with pytest.raises(LitmusError, match=r"k.ptx:23.*a lane that ran before it took it false at .*L"):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


def test_a_word_another_thread_stored_after_a_barrier_is_its_value(tmp_path):
    """Thread 0 stores 0 to `word`, then (after a barrier) thread 32 stores 9; after the next
    barrier both load it (9) and thread 0 waits unless it is 9... it is: thread 0 waits, thread 32
    (which arrives only when it is not 9) does not arrive, a hang in every launch. Each thread read
    back its own store (thread 0 took 0 and skipped its wait): PASS. Thread 0 now reads the store
    the barrier orders after its own."""
    f = tmp_path / "k.ptx"
    f.write_text(CROSS.replace(".shared .align 16 .b8 buf[16];", ".shared .align 16 .b8 buf[16];\n"
                               "  .shared .align 4 .b8 word[4];")
                 .replace("INITED:\n  bar.sync 0;", "INITED:\n  setp.eq.s32 %p8, %r1, 0;\n  @%p8 st.shared.u32 [word], 0;\n"
                          "  bar.sync 0;\n  setp.eq.s32 %p8, %r1, 32;\n  @%p8 st.shared.u32 [word], 9;\n  bar.sync 0;\n"
                          "  ld.shared.u32 %r9, [word];")
                 .replace("  ld.param.u32 %r9, [k_param_0];", "")
                 .replace("CONSUMER_SETP", "setp.ne.s32 %p6, %r9, 9;").replace("PRODUCER_SETP", "setp.eq.s32 %p4, %r9, 9;"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    [t0] = [r for r in x.skeleton.roles if 0 in r.tids]
    assert any(e.kind == "mb_wait" for e in t0.trace.events), role_table(x.skeleton)
    rep = x.check(jobs=0)
    assert not rep.ok and "hang" in rep.text, rep.text


# thread 0 stores 1 to `word` and arrives on mbA; thread 32 waits for mbA, stores 2 there and
# arrives on mbB; thread 0 waits for mbB and loads `word` (2 in every launch): it waits for the
# data only where it read 1
OVERWRITTEN = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mbA[8];
  .shared .align 8 .b8 mbB[8];
  .shared .align 8 .b8 mbD[8];
  .shared .align 4 .b8 word[4];
  .shared .align 16 .b8 data[16];
  .reg .b32 %r<10>;
  .reg .pred %p<10>;
  .reg .b64 %rd<6>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [mbA], 1;
  mbarrier.init.shared::cta.b64 [mbB], 1;
  mbarrier.init.shared::cta.b64 [mbD], 1;
  fence.mbarrier_init.release.cluster;
INITED:
  bar.sync 0;
  setp.eq.s32 %p2, %r1, 32;
  @%p2 bra B;
  @%p1 bra DONE;
  st.shared.u32 [word], 1;
  mbarrier.arrive.shared::cta.b64 %rd1, [mbA];
WB: mbarrier.try_wait.parity.shared::cta.b64 %p3, [mbB], 0;
  @!%p3 bra WB;
  ld.shared.u32 %r2, [word];
  setp.ne.s32 %p4, %r2, 1;
  @%p4 bra NOWAIT;
WD: mbarrier.try_wait.parity.shared::cta.b64 %p5, [mbD], 0;
  @!%p5 bra WD;
NOWAIT:
  ld.shared.u32 %r3, [data];
  bra.uni DONE;
B:
WA: mbarrier.try_wait.parity.shared::cta.b64 %p6, [mbA], 0;
  @!%p6 bra WA;
  st.shared.u32 [word], 2;
  mbarrier.arrive.shared::cta.b64 %rd2, [mbB];
  st.shared.u32 [data], 7;
  mbarrier.arrive.shared::cta.b64 %rd3, [mbD];
DONE:
  ret;
}
"""


def test_a_threads_own_store_another_may_overwrite_through_an_mbarrier_is_not_read_back(tmp_path):
    """Thread 0 read back its own 1 (no barrier orders thread 32's store after it: an mbarrier does,
    which the extractor does not follow) and took the side that waits, silently: PASS for a
    kernel whose thread 0 reads the data without waiting in every launch. The load is now unknown
    and the branch a decision the role table states."""
    f = tmp_path / "k.ptx"
    f.write_text(OVERWRITTEN)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    line = next(i for i, ln in enumerate(OVERWRITTEN.splitlines(), 1) if "@%p4 bra NOWAIT" in ln)
    assert f"assumed at L{line}: branch" in role_table(x.skeleton), role_table(x.skeleton)
