"""wgmma (sm_90a): the asynchronous warpgroup matrix multiply-accumulate and its fence, groups
and waits. PTX ISA 9.4, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"
(wgmma.fence, wgmma.mma_async, its Async Proxy section, wgmma.commit_group, wgmma.wait_group);
decisions A8, A9, T1 (docs/model.md). The model that gives these tags meaning is the "Tensor
cores" section of axioms/ptx.cat.

    wgmma.fence.sync.aligned
    wgmma.mma_async.sync.aligned.SHAPE.DTYPE.ATYPE.BTYPE  {d0, ...}, [sA], [sB], scale-d, imm-scale-a, imm-scale-b{, imm-trans-a, imm-trans-b}
    wgmma.mma_async.sync.aligned.SHAPE.DTYPE.ATYPE.BTYPE  {d0, ...}, {a0, ...}, [sB], scale-d, imm-scale-a, imm-scale-b{, imm-trans-b}
    wgmma.mma_async.sync.aligned.SHAPE{.satfinite}.s32.ATYPE.BTYPE  {d0, ...}, [sA] | {a0, ...}, [sB], scale-d
    wgmma.mma_async.sync.aligned.SHAPE.s32.b1.b1.and.popc  {d0, ...}, [sA] | {a0, ...}, [sB], scale-d
    wgmma.commit_group.sync.aligned
    wgmma.wait_group.sync.aligned N

Abstract operands: `[sA]`, `[sB]` name the shared-memory cell a matrix descriptor's start
address points to (a cell stands for a whole matrix); `{d0, ...}` / `{a0, ...}` are real
register vectors (one register per fragment is enough, every register carries the cell's
abstract value); scale-d is a predicate register (`p`, `!p`; a register never set is false).
The sparse wgmma.mma_async.sp is not modelled (rejected with a message).

wgmma (one litmus thread stands for the warpgroup)
- wgmma.mma_async is an issue event (kind "I") in program order; its shared-memory operands are
  weak async-proxy reads (ASYNC) of the named cells, NOT in program order. A8 exception:
  wgmma.mma_async is not ordered after the thread's earlier instructions, so there is no `aso`
  from its issue. Decision (T1): its reads are ordered (`aso`) after the thread's earlier
  wgmma.fence and earlier async proxy fences (PF_ASYNC: fence.proxy.async, the implicit fence of
  a completed bulk copy or wgmma), hence after everything base-causality-before them. That is how
  `fence.proxy.async` before it orders earlier shared-memory writes (the destination-side case
  of A1: the fence is in the CTA of the async read and bc-before it), and how a wgmma.fence after
  an acquiring wait orders it after the producer's writes.
- The accumulator registers {d...} get (scale-d ? d : 0) + (imm-scale-a * A) * (imm-scale-b * B),
  A and B the values read (A: the first register of a register operand); their values are read
  in program order, which is what the registers hold once the covering wait returns.
- wgmma.commit_group closes a per-thread wgmma-group; wgmma.wait_group N is a completion event
  (kind "C") in program order for every group but the N most recent: `acomp` from the completed
  reads to it, and it is the implicit generic-async proxy fence of wgmma completion (A9):
  PF_ASYNC, `pfcover` = the reads it completes.
- Undefined behaviour, decided statically (the code has no branches): REG_HAZARD marks a
  wgmma.mma_async whose accumulator or A registers are accessed by a later instruction before a
  wgmma.wait_group that completes it (accumulating into the same registers with a wgmma.mma_async
  of the same shape is allowed); WG_NOFENCE marks a wgmma.mma_async without the wgmma.fence the
  ISA requires: before the first wgmma.mma_async, and between any other access to its registers
  and it (I17). The issue event's label names the offending instruction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ast import Addr, Instr, Quals, Vec
from ..ast import registers
from ..model.builder import Builder, ThreadCtx
from ..model.values import Const, Expr, Ite, ReadVal, ZERO, binop
from .common import label, pred_value, restrict, smem_matrix
from .table import Family, Group, sig

_SYNC = Group("sync", ("sync",), required=True)
_ALIGNED = Group("aligned", ("aligned",), required=True)


@dataclass
class WgmmaState:
    """Per thread."""

    uncommitted: list[int] = field(default_factory=list)     # reads of uncommitted wgmma
    groups: list[list[int]] = field(default_factory=list)
    fences: list[int] = field(default_factory=list)          # wgmma.fence events


def _state(ctx: ThreadCtx) -> WgmmaState:
    return ctx.ext.setdefault("wgmma", WgmmaState())


def ops_after(b: Builder, sources, ops) -> None:
    b.pairs["aso"].update((s, e) for s in sources for e in ops)


# -- lowering --------------------------------------------------------------------------------

def lower_wgmma(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    what = i.qualifiers[0]
    st = _state(ctx)
    if what == "fence":
        st.fences.append(b.new_event(ctx, "T", set()))
    elif what == "commit_group":
        st.groups.append(st.uncommitted)
        st.uncommitted = []
    elif what == "wait_group":
        n = i.operands[0].value
        done = st.groups[:max(0, len(st.groups) - n)]
        covered = tuple(e for g in done for e in g)
        wait = b.new_event(ctx, "C", {"PF_ASYNC"}, label=label(i, "completion + implicit proxy fence"))
        b.pairs["acomp"].update((e, wait) for e in covered)
        restrict(b, wait, "events", covered)
    else:
        _mma_async(b, ctx, i)


def _mma_async(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    st = _state(ctx)
    d, a, bop, scale = i.operands[:4]
    k = ctx.index
    hazard = _wg_hazard(ctx, k)
    unfenced = _wg_unfenced(ctx, k)
    tags = set()
    notes = []
    if hazard:
        tags.add("REG_HAZARD")
        notes.append(f"its registers are accessed by '{hazard}' before a wgmma.wait_group completes it")
    if unfenced:
        tags.add("WG_NOFENCE")
        notes.append(unfenced)
    b.new_event(ctx, "I", tags, label=label(i, "; ".join(["issue"] + notes)))
    reads = []
    if isinstance(a, Addr):
        smem_matrix(b, ctx, a, "matrix A")
        ra = b.read(ctx, {"ASYNC", "WEAK"}, a, in_po=False, label=label(i, f"async read {a.base}"))
        reads.append(ra)
        av: Expr = ReadVal(ra)
    else:
        av = b.value(ctx, a.items[0])
    smem_matrix(b, ctx, bop, "matrix B")
    rb = b.read(ctx, {"ASYNC", "WEAK"}, bop, in_po=False, label=label(i, f"async read {bop.base}"))
    reads.append(rb)
    prod = binop("mul", av, ReadVal(rb))
    if len(i.operands) > 5:
        sign = i.operands[4].value * i.operands[5].value
        if sign < 0:
            prod = binop("mul", prod, Const(-1))
    on = pred_value(b, ctx, scale)
    for r in d.items:
        old = b.value(ctx, r)
        b.set_reg(ctx, r, prod if on == ZERO else Ite("!=", on, ZERO, binop("add", old, prod), prod))
    # A8 exception and decision T1: ordered after earlier wgmma.fence and async proxy fences only
    pf = [e for e in ctx.events if "PF_ASYNC" in b.events[e].tags]
    ops_after(b, st.fences + pf, reads)
    st.uncommitted.extend(reads)


def _wgmma_regs(ins: Instr) -> tuple[set[str], set[str]]:
    """(accumulator registers, A registers) of a wgmma.mma_async."""
    d, a = ins.operands[0], ins.operands[1]
    acc = {r.name for r in d.items}
    aregs = {r.name for r in a.items} if isinstance(a, Vec) else set()
    return acc, aregs


def _is_wgmma(ins: Instr, what: str) -> bool:
    return ins.op == "wgmma" and ins.qualifiers[:1] == (what,)


def _wg_hazard(ctx: ThreadCtx, k: int) -> str | None:
    """The first later instruction that accesses the registers of wgmma.mma_async k before a
    wgmma.wait_group completes it, or None."""
    code = ctx.thread.code
    me = code[k]
    acc, aregs = _wgmma_regs(me)
    regs = acc | aregs
    committed, later_groups = False, 0
    for ins in code[k + 1:]:
        if _is_wgmma(ins, "commit_group"):
            if committed:
                later_groups += 1
            committed = True
            continue
        if _is_wgmma(ins, "wait_group"):
            if committed and later_groups >= ins.operands[0].value:
                return None
            continue
        used = set(registers(ins)) & regs
        if not used:
            continue
        if _is_wgmma(ins, "mma_async") and wgmma_shape(ins) == wgmma_shape(me):
            acc2, aregs2 = _wgmma_regs(ins)
            if used <= (acc & acc2) and not (used & aregs2):
                continue        # accumulating into the same registers: ordered by default
        return ins.text
    return None


def _wg_unfenced(ctx: ThreadCtx, k: int) -> str | None:
    """Why wgmma.mma_async k lacks the wgmma.fence the ISA requires (I17), or None."""
    code = ctx.thread.code
    me = code[k]
    fences = [j for j in range(k) if _is_wgmma(code[j], "fence")]
    if not fences:
        return "no wgmma.fence before it (required before the first wgmma.mma_async)"
    acc, aregs = _wgmma_regs(me)
    for r in sorted(acc | aregs):
        last = next((j for j in range(k - 1, -1, -1) if r in set(registers(code[j]))), None)
        if last is None or last < fences[-1]:
            continue
        prev = code[last]
        if _is_wgmma(prev, "mma_async") and wgmma_shape(prev) == wgmma_shape(me) \
                and r in acc and r in _wgmma_regs(prev)[0]:
            continue
        return f"no wgmma.fence between '{prev.text}' (register {r}) and it"
    return None


# -- the families ----------------------------------------------------------------------------

N_ALL = tuple(range(8, 257, 8))


N_INT = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)


# (k, dtype, atype, btype, has imm-scale, has imm-trans) of the floating-point variants
WG_FLOAT = ([(16, d, a, a, True, True) for d, a in (("f16", "f16"), ("f32", "f16"), ("f32", "bf16"))]
            + [(8, "f32", "tf32", "tf32", True, False)]
            + [(32, d, a, b, True, False) for d in ("f16", "f32") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")])


WG_INT = [(a, b) for a in ("s8", "u8") for b in ("s8", "u8")]


def _imm_in(slot: int, allowed: tuple[int, ...], what: str):
    def rule(i: Instr, q: Quals):
        if len(i.operands) > slot and i.operands[slot].value not in allowed:
            return f"{what} is {' or '.join(map(str, allowed))}, not {i.operands[slot].value}"
        return None
    return rule


def _trans_count(i: Instr, q: Quals):
    # f16/bf16: imm-trans-a and imm-trans-b with A in shared memory, imm-trans-b only with A in
    # registers (the transpose is for matrices read through a descriptor).
    smem = isinstance(i.operands[1], Addr)
    got = len(i.operands) - 6
    if got != (2 if smem else 1):
        if smem:
            return f"with A in shared memory wgmma.mma_async takes imm-trans-a and imm-trans-b, not {got} transpose operands"
        return f"with A in registers wgmma.mma_async takes imm-trans-b only, not {got} transpose operands"
    return None


def _wgmma_operands(scale: bool, trans: bool):
    """The operand slots and rules of the variants with (scale) imm-scale and (trans) imm-trans
    operands: three kinds, shared by the ~500 shapes and types."""
    if trans:
        slots = sig("d:regvec, a:amat, b:addr, scale_d:pred, imm_scale_a:imm, imm_scale_b:imm, "
                    "imm_trans_a:imm?, imm_trans_b:imm?", b="the shared-memory matrix B [sB]",
                    scale_d="the scale-d predicate")
        rules = (_imm_in(4, (1, -1), "imm-scale-a"), _imm_in(5, (1, -1), "imm-scale-b"),
                 _trans_count, _imm_in(6, (0, 1), "imm-trans"), _imm_in(7, (0, 1), "imm-trans-b"))
    elif scale:
        slots = sig("d:regvec, a:amat, b:addr, scale_d:pred, imm_scale_a:imm, imm_scale_b:imm",
                    b="the shared-memory matrix B [sB]", scale_d="the scale-d predicate")
        rules = (_imm_in(4, (1, -1), "imm-scale-a"), _imm_in(5, (1, -1), "imm-scale-b"))
    else:
        slots = sig("d:regvec, a:amat, b:addr, scale_d:pred", b="the shared-memory matrix B [sB]",
                    scale_d="the scale-d predicate")
        rules = ()
    return slots, rules


def _wgmma_families():
    kinds = {(scale, trans): _wgmma_operands(scale, trans) for scale in (False, True) for trans in (False, True)
             if scale or not trans}

    def family(shape: str, types: str, scale: bool, trans: bool) -> Family:
        slots, rules = kinds[scale, trans]
        return Family(f"wgmma.mma_async.sync.aligned.{shape}.{types}", operands=slots, rules=rules, lower=lower_wgmma)

    out = []
    for n in N_ALL:
        for k, d, a, b, scale, trans in WG_FLOAT:
            out.append(family(f"m64n{n}k{k}", f"{d}.{a}.{b}", scale, trans))
    for n in N_INT:
        for a, b in WG_INT:
            out.append(family(f"m64n{n}k32", f"s32.{a}.{b}", False, False))
            out.append(family(f"m64n{n}k32", f"satfinite.s32.{a}.{b}", False, False))
        out.append(family(f"m64n{n}k256", "s32.b1.b1.and.popc", False, False))
    return out


_WG_SHAPE_HELP = ("wgmma.mma_async needs .sync.aligned, a shape and its types, e.g. "
                  "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 (k16: .f16/.bf16; k8: .tf32; "
                  "k32: .e4m3/.e5m2 or .s8/.u8; k256: .b1)")


# every qualifier a wgmma.mma_async may carry, for a helpful message when the combination is wrong
_WG_QUALS = {q: _WG_SHAPE_HELP for q in
             ["aligned", "satfinite", "and", "popc", "s32", "f16", "f32", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8", "b1"]
             + [f"m64n{n}k{k}" for n in N_ALL for k in (8, 16, 32, 256)]}


def wgmma_shape(i: Instr) -> str:
    """The shape qualifier of a wgmma.mma_async (m64nNkK)."""
    return next(q for q in i.qualifiers if q.startswith("m64n"))


FAMILIES = (
    # wgmma ---------------------------------------------------------------------------------------
    Family("wgmma", rules=(lambda i, q: "wgmma needs an operation: .fence, .mma_async, .commit_group or "
                                        ".wait_group (e.g. wgmma.fence.sync.aligned)",)),
    Family("wgmma.fence", groups=(_SYNC, _ALIGNED), lower=lower_wgmma),
    Family("wgmma.commit_group", groups=(_SYNC, _ALIGNED), lower=lower_wgmma),
    Family("wgmma.wait_group", groups=(_SYNC, _ALIGNED),
           operands=sig("n:imm", n="the number of most recent wgmma-groups that may stay pending"),
           rules=(lambda i, q: "wait_group takes a non-negative count" if i.operands[0].value < 0 else None,),
           lower=lower_wgmma),
    Family("wgmma.mma_async", rules=(lambda i, q: _WG_SHAPE_HELP,),
           rejects={"sp": "the sparse wgmma.mma_async.sp is not modelled yet", **_WG_QUALS}),
    Family("wgmma.mma_async.sync", rules=(lambda i, q: _WG_SHAPE_HELP,), rejects=_WG_QUALS),
    Family("wgmma.mma_async.sync.aligned", rules=(lambda i, q: _WG_SHAPE_HELP,), rejects=_WG_QUALS),
    *_wgmma_families(),
)
