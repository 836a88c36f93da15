"""Decisions of `ptxmc extract` on unknown values are consistent on one thread's path: a branch
decided on `%r9 == 0` (a parameter) records that fact, and a later predicate compared against the
same constant on the same value (`setp p|q`'s complement, the same or the negated comparison)
follows from it instead of being decided again, independently (a path no thread takes)."""
from __future__ import annotations

import pytest

from checker.extract.api import extract_file
from checker.extract.render import role_table

# a correct kernel: when k_param_0 == 0 thread 0 writes buf and arrives on mb, and thread 32 waits
# on mb and reads buf; otherwise thread 0 writes buf2 twice and thread 32 does nothing. Decided
# independently, thread 0's first branch took the n == 0 side (the write) and its second the
# n != 0 side (two stores, more than one arrive): no arrive, thread 32's wait hung, and `check`
# said FAIL (a hang) for a correct kernel
DECIDE = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 k_param_0)
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 buf[16];
  .shared .align 16 .b8 buf2[16];
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
  SETP
  setp.ne.s32 %p2, %r1, 32;
  @%p2 bra PRODUCER;
  setp.ne.s32 %p6, %r9, 0;
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

# the setps of %p4 and %p5 (both `%r9 != 0` in effect) and the guard of the second branch
SETPS = {
    "complement": ("setp.eq.s32 %p5|%p4, %r9, 0;", "@!%p5"),            # setp p|q: %p4 is %p5's complement
    "negated": ("setp.ne.s32 %p4, %r9, 0;\n  setp.eq.s32 %p5, %r9, 0;", "@!%p5"),
    "same": ("setp.ne.s32 %p4, %r9, 0;\n  setp.ne.u32 %p5, %r9, 0;", "@%p5"),
    "not": ("setp.ne.s32 %p4, %r9, 0;\n  setp.eq.s32 %p8, %r9, 0;\n  not.pred %p5, %p8;", "@%p5"),
    "swapped": ("setp.ne.s32 %p4, %r9, 0;\n  setp.ne.s32 %p5, 0, %r9;", "@%p5"),
    "reloaded": ("setp.ne.s32 %p4, %r9, 0;\n  ld.param.u32 %r7, [k_param_0];\n  setp.ne.s32 %p5, %r7, 0;", "@%p5"),
    "known value": ("setp.ne.s32 %p4, %r9, 0;\n  setp.gt.u32 %p5, %r9, 0;", "@%p5"),
}


@pytest.mark.parametrize("setp", sorted(SETPS))
def test_a_second_predicate_on_the_same_unknown_follows_the_first_decision(tmp_path, setp):
    f = tmp_path / "k.ptx"
    text, guard = SETPS[setp]
    f.write_text(DECIDE.replace("SETP", text).replace("GUARD", guard))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    [t0] = [r for r in x.skeleton.roles if 0 in r.tids]
    stores = sorted(e.get("loc").symbol for e in t0.trace.events if e.kind == "smem")
    arrives = [e for e in t0.trace.events if e.kind == "mb_arrive"]
    assert (stores, len(arrives)) in ((["buf"], 1), (["buf2", "buf2"], 0)), (stores, arrives)
    rep = x.check(jobs=0)
    assert rep.ok, rep.text
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "bra OTHER" in ln)
    first = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "bra SKIP" in ln)
    assert f"assumed at L{line}: branch taken (its condition {guard.replace('%', '')} follows from the " \
           f"decision at L{first}:" in role_table(x.skeleton).replace("not taken", "taken"), role_table(x.skeleton)


def test_a_constant_added_to_the_value_is_followed_too(tmp_path):
    """`%r9 + 1 != 1` is `%r9 != 0`: it follows from the decision on `%r9 != 0` (it used to be
    decided on its own: the two stores to buf2 after the store to buf, a path no thread takes)."""
    f = tmp_path / "k.ptx"
    f.write_text(DECIDE.replace("SETP", "setp.ne.s32 %p4, %r9, 0;\n  add.s32 %r8, %r9, 1;\n"
                                        "  setp.ne.s32 %p5, %r8, 1;").replace("GUARD", "@%p5"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert "its condition @p5 follows from the decision" in role_table(x.skeleton), role_table(x.skeleton)
    assert "parameter k_param_0 + 1 == 1 (b32) is true" in role_table(x.skeleton), role_table(x.skeleton)
    assert x.check(jobs=0).ok


def test_a_register_written_again_is_another_value(tmp_path):
    """%r9 reloaded from memory between the two setps: the first decision says nothing about it.
    (From local memory: a shared word no store names, which thread 32 decides on too, is refused
    where a side of the branch synchronizes otherwise, test_derived_decisions.py.)"""
    f = tmp_path / "k.ptx"
    f.write_text(DECIDE.replace("SETP", "setp.ne.s32 %p4, %r9, 0;\n  ld.local.u32 %r9, [%rd1];\n"
                                        "  setp.ne.s32 %p5, %r9, 0;").replace("GUARD", "@%p5"))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    assert "follows from the decision" not in role_table(x.skeleton)
