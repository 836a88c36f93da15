"""Warp-level instructions without memory effect: elect.sync, activemask, nanosleep.

PTX ISA 9.4, "Parallel Synchronization and Communication Instructions: elect.sync",
"activemask", "Miscellaneous Instructions: nanosleep".

- `elect.sync d|p, membermask` elects one leader among the lanes of membermask: d gets the
  leader's %laneid and p is true in the leader only ("the same leader thread is elected for the
  same membermask every time", but which one is not specified). Its predicate output is an
  ordinary 0/1 register here (guarded use of it is control flow). The executing lane must be in
  membermask (undefined behaviour otherwise: refused). A litmus thread alone in its warp stands
  for the elected lane: the test writes the leader's code (d is its %laneid, 0; p is 1). With
  several litmus threads in one warp the leader is one of them, unspecified: ptxmc does not
  enumerate that choice and refuses the test (write one test per leader).
- `activemask.b32 d`: which lanes are active is not determined by a test (the other lanes of a
  warp are not part of it): the instruction is accepted, and a use of d is refused.
- `nanosleep.u32 t` suspends the thread for about t ns: no events, no ordering.
"""
from __future__ import annotations

from ..ast import Instr, Quals, Reg, Sink, Vec
from ..model.builder import Builder, ThreadCtx, Unmodelled
from ..model.values import Const
from .special import lane
from .table import Family, Group, sig


def _elect_form(i: Instr, q: Quals):
    d = i.operands[0]
    if not (isinstance(d, Vec) and len(d.items) == 2
            and all(isinstance(x, Sink) or (isinstance(x, Reg) and not x.name.startswith("!")) for x in d.items)):
        return "elect.sync writes d|p: a register (or _) for the leader's lane id, then a predicate register"
    return None


def lower_elect(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    d, p = i.operands[0].items
    mask = b.value(ctx, i.operands[1], 32)
    if not isinstance(mask, Const):
        raise ctx.error("elect.sync: membermask must be a constant (an immediate or a register holding one)")
    here = [t for t in b.test.threads if t.position == ctx.thread.position]
    if len(here) > 1:
        raise ctx.error(f"elect.sync: this warp has {len(here)} litmus threads ({', '.join(t.name for t in here)}); "
                        "which lane is elected is not specified and ptxmc does not enumerate it: write one test "
                        "per leader, with the leader alone in its warp")
    k = lane(b.test, ctx.thread)
    if not mask.value >> k & 1:
        raise ctx.error(f"elect.sync: the executing thread (lane {k}) is not in membermask {mask.value:#x} "
                        "(undefined behaviour in the PTX ISA)")
    b.set_reg(ctx, d, Const(k), 32)
    b.set_reg(ctx, p, Const(1), 1)


def lower_activemask(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    b.set_reg(ctx, i.operands[0], Unmodelled("the result of activemask: which lanes of the warp are active is not "
                                             "determined by the test"))


FAMILIES = (
    Family("elect", groups=(Group("sync", ("sync",), required=True),),
           operands=sig("d:vec, membermask:val", membermask="the lanes to elect from"),
           rules=(_elect_form,), lower=lower_elect),
    Family("activemask", groups=(Group("type", ("b32",), required=True),), operands=sig("d:reg"),
           lower=lower_activemask),
    Family("nanosleep", groups=(Group("type", ("u32",), required=True),), operands=sig("t:val"),
           lower=None),
)
