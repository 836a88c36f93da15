"""setmaxnreg: a warpgroup's register reallocation (PTX ISA 9.4, "Miscellaneous Instructions:
setmaxnreg"; sm_90a and later). Warp-specialized kernels (CUTLASS, FlashAttention-3, Triton/Gluon)
start their producer warpgroup with `.dec` and their consumer warpgroups with `.inc`.

    setmaxnreg.inc.sync.aligned.u32 N       setmaxnreg.dec.sync.aligned.u32 N

- The ISA's text: it hints to set the executing warp's maximum number of per-thread registers to
  N, taking registers from (`.inc`) or returning them to (`.dec`) a per-CTA pool; N is an
  integer constant in 24..256, a multiple of 8 (checked: anything else is refused).
- No memory semantics: the ISA lists no ordering for it and it accesses no memory, so it has no
  events and orders nothing. `.sync.aligned`: every thread of the warp executes the same
  instruction.
- "The same setmaxnreg instruction must be executed by all warps in a warpgroup" (undefined
  otherwise), and the warps must synchronize between two of them. A litmus thread that executes
  setmaxnreg stands for its warpgroup (as for wgmma): the other warps of the warpgroup are
  taken to execute the same code. Another litmus thread in the same warpgroup (four contiguous
  warps, the first a multiple of 4) is refused: whether it executes the same setmaxnreg is not
  checked.
- `.inc` "blocks the execution until enough registers are available in the CTA's register pool".
  Whether they are depends on the launch (the kernel's register count and its warpgroups'
  requests), which no litmus test describes: ptxmc takes the request to be granted
  (docs/model.md#a13). A kernel whose warpgroups ask the pool for more than it holds deadlocks
  for a reason outside the memory model; ptxmc does not report that hang.
"""
from __future__ import annotations

from ..ast import Imm, Instr, Quals
from ..model.builder import Builder, ThreadCtx
from .table import Family, Group, sig


def _count(i: Instr, q: Quals):
    n = i.operands[0]
    if isinstance(n, Imm) and not (24 <= n.value <= 256 and n.value % 8 == 0):
        return f"setmaxnreg: the register count must be a multiple of 8 from 24 to 256, not {n.value}"
    return None


def warpgroup(thread) -> tuple:
    """The CTA and warpgroup index of a litmus thread's position."""
    return thread.position.cta_key() + (thread.position.warp // 4,)


def lower_setmaxnreg(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """No events; refused when another litmus thread shares the warpgroup (see the docstring)."""
    mine = warpgroup(ctx.thread)
    others = [t.name for t in b.test.threads if t.name != ctx.thread.name and warpgroup(t) == mine]
    if others:
        raise ctx.error(f"setmaxnreg must be executed by every warp of the warpgroup, and {', '.join(others)} "
                        f"{'is' if len(others) == 1 else 'are'} in {ctx.thread.name}'s warpgroup: ptxmc does not "
                        "check that they execute the same setmaxnreg; place each warpgroup's code in one litmus "
                        "thread (warps 0-3, 4-7, ... form the warpgroups)")


FAMILIES = (
    Family("setmaxnreg", groups=(Group("action", ("inc", "dec"), required=True),
                                 Group("sync", ("sync",), required=True),
                                 Group("aligned", ("aligned",), required=True),
                                 Group("type", ("u32",), required=True)),
           operands=sig("n:imm", n="the per-thread register count"), rules=(_count,), lower=lower_setmaxnreg),
)
