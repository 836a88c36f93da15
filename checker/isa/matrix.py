"""ldmatrix and stmatrix: warp-collective matrix loads and stores of shared memory (PTX ISA 9.4,
"Warp Level Matrix Multiply-Accumulate Instructions: ldmatrix, stmatrix").

Both are ordinary generic-proxy accesses of the executing CTA's shared memory (the ISA gives
them no .sem/.scope: they are weak), which is what makes them feed wgmma and TMA stores only
through a proxy fence. The data a lane moves depends on the row addresses the other lanes give,
which a litmus test does not hold; ptxmc models the part lane 0 determines alone:

    ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.shared{::cta}}.b16 {r0, ...}, [s]
    stmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.shared{::cta}}.b16 [s], {r0, ...}

The litmus thread is lane 0 of its warp, and [s] is the row address it gives, that of row 0 of
the first matrix (16 bytes: 8 elements of .b16, 16-byte aligned). In the m8n8 .b16 fragment
layout lane 0 holds elements 0 and 1 of row 0 of each matrix, so ldmatrix is a weak read of the
16-byte row at [s] whose bytes 0..3 go to r0, and stmatrix a weak write of r0 to bytes 0..3 of
that row (its other bytes come from lanes 1 to 3, which the test does not hold). The other registers (rows of the second to fourth matrices, addressed by
lanes 8, 16 and 24) are not modelled: ldmatrix leaves them unmodelled (a use is refused) and
stmatrix's other rows are not written. An unsynchronized race between stmatrix (4 bytes here) and an access
of more of the row is reported as a mixed-size race (A15), where the hardware has a full-row
race. Refused: .trans (lane 0's elements then come from the row
lane 1 addresses), other shapes and types (.m16n16, .m8n16, .b8 and the sub-byte forms), a
litmus thread that is not lane 0.
"""
from __future__ import annotations

from ..ast import Addr, Instr, Quals, Vec
from ..model.builder import Builder, ThreadCtx, Unmodelled
from ..model.values import ReadVal, wrap
from .common import strength_tags
from .special import lane
from .table import Family, Group, sig

ROW_BYTES = 16          # a row of an .m8n8 .b16 matrix: 8 elements of 2 bytes, 16-byte aligned
_WHY = "ldmatrix and stmatrix access the executing CTA's shared memory"
_REJECTS = {"trans": ".trans is not modelled: lane 0's elements then come from the row that lane 1 addresses",
            **dict.fromkeys(("m16n16", "m8n16"), "ptxmc models the .m8n8 shape only (lane 0's part of it)"),
            **dict.fromkeys(("b8", "b8x16", "b6x16_p32", "b4x16_p64"), "ptxmc models .b16 matrices only")}


def _groups():
    return (Group("sync", ("sync",), required=True), Group("aligned", ("aligned",), required=True),
            Group("shape", ("m8n8",), required=True), Group("num", ("x1", "x2", "x4"), required=True),
            Group("space", ("shared", "shared::cta"), default="shared::cta"), Group("type", ("b16",), required=True))


def _count(i: Instr, q: Quals):
    regs = i.operands[0 if i.op == "ldmatrix" else 1]
    n = int(q["num"][1:])
    if len(regs.items if isinstance(regs, Vec) else (regs,)) != n:
        return f"{i.op}.{q['num']} moves {n} register{'s' if n > 1 else ''} per lane: write {{r0{', ...' if n > 1 else ''}}}"
    return None


def _lane0(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    if b.test.threads_per_litmus_thread != 1 or lane(b.test, ctx.thread) != 0:
        raise ctx.error(f"{i.op}: ptxmc models the part of the matrix that lane 0 moves, and this litmus thread is "
                        "not lane 0 of its warp (place it first in its warp)")


def lower_ldmatrix(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _lane0(b, ctx, i)
    dst, addr = i.operands
    regs = dst.items if isinstance(dst, Vec) else (dst,)
    r = b.read(ctx, strength_tags("weak", None), Addr(addr.base, addr.offset), size=ROW_BYTES)
    b.set_reg(ctx, regs[0], wrap(ReadVal(r), 32), 32)          # elements 0 and 1: the row's bytes 0..3
    for r in regs[1:]:
        b.set_reg(ctx, r, Unmodelled("a row of a matrix another lane addresses (ldmatrix: only lane 0's part of "
                                     "the first matrix is modelled)"))


def lower_stmatrix(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _lane0(b, ctx, i)
    addr, src = i.operands
    regs = src.items if isinstance(src, Vec) else (src,)
    b.write(ctx, strength_tags("weak", None), Addr(addr.base, addr.offset), b.value(ctx, regs[0], 32), size=4)


FAMILIES = (
    Family("ldmatrix", groups=_groups(), operands=sig("d:dvec, a:addr"), rules=(_count,), rejects=_REJECTS,
           space="space", lower=lower_ldmatrix, own_shared_only=_WHY),
    Family("stmatrix", groups=_groups(), operands=sig("a:addr, b:vvec"), rules=(_count,), rejects=_REJECTS,
           space="space", lower=lower_stmatrix, own_shared_only=_WHY),
)
