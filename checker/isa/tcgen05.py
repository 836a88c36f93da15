"""tcgen05 (sm_100a): the 5th-generation tensor-core instructions and Tensor Memory. PTX ISA 9.4,
"TensorCore 5th Generation Family Instructions" (Tensor Memory, tcgen05 Memory Consistency Model:
asynchronous and synchronous instructions, pipelined pairs, completion mechanisms, specialized
inter-thread synchronization, canonical patterns; the instructions); decisions A8, A9, T2-T6
(docs/model.md). The model that gives these tags meaning is the "Tensor cores" section of
axioms/ptx.cat.

    tcgen05.alloc.cta_group::1.sync.aligned{.shared::cta}.b32  [sDst], nCols
    tcgen05.dealloc.cta_group::1.sync.aligned.b32              [tD], nCols
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned
    tcgen05.mma.cta_group::1.KIND  [tD], [sA] | [tA], [sB], idesc, enable-input-d{, scale-input-d}
    tcgen05.cp.cta_group::1.SHAPE{.MULTICAST}{.b8x16.SRC_FMT}  [tD], [sS]
    tcgen05.ld.sync.aligned.SHAPE.NUM{.pack::16b}.b32  {r0, ...}, [tD]{, immHalfSplitoff}
    tcgen05.st.sync.aligned.SHAPE.NUM{.unpack::16b}.b32 [tD]{, immHalfSplitoff}, {r0, ...}
    tcgen05.wait::ld.sync.aligned      tcgen05.wait::st.sync.aligned
    tcgen05.commit.cta_group::1.mbarrier::arrive::one{.shared::cluster}.b64  [mbar]
    tcgen05.commit.cta_group::1.mbarrier::arrive::one{.shared::cluster}.multicast::cluster.b64  [mbar], ctaMask
    tcgen05.fence::before_thread_sync  tcgen05.fence::after_thread_sync

Abstract operands: `[sA]`, `[sB]`, `[sS]` (a-desc, b-desc, s-desc) name the shared-memory cell the
descriptor's matrix start address points to; `[tD]`, `[tA]` (d-tmem, a-tmem, taddr) are Tensor
Memory cells, declared with `space: tensor` and the owning CTA; `{r0, ...}` are real register
vectors; enable-input-d is a predicate register; idesc is a register (its value is not
interpreted: shapes and types are opaque). `.kind::*` of tcgen05.mma is opaque (no type
arithmetic). Not modelled (rejected with a message): `.cta_group::2` (CTA pairs), the
block-scaled kinds and `.block_scale`, tcgen05.mma.ws / .sp, tcgen05.shift. ctaMask
(tcgen05.commit .multicast::cluster) is an immediate as for the bulk copies: the arrive-on
reaches the mbarrier at [mbar]'s offset (`offset_of`) in each CTA of the mask.

tcgen05
- Tensor Memory cells are declared `space: tensor` with an owner CTA; their accesses are
  memory events tagged TMEM and nothing else: no proxy, no strength -- Tensor Memory is outside
  chapter 8 (T2), and only the tcgen05 ordering rules below relate them.
- Asynchronous instructions (mma, cp, ld, st) are an issue event (kind "I") in program order and
  operations not in program order: `tcissue` from the issue to each. tcgen05.mma reads A
  ([sA] async-proxy, or [tA] Tensor Memory), B ([sB], async proxy) and, unless enable-input-d is a
  register never set, D; it writes D = (enable-input-d ? D : 0) + A * B. tcgen05.cp reads [sS]
  (async proxy) and writes [tD]; tcgen05.ld reads [tD] into every register of its vector;
  tcgen05.st writes the first register of its vector. Within an instruction the reads precede
  the write (`aso`).
- Synchronous instructions are events in program order tagged TC_SYNC: the two fences
  (TC_BEFORE, TC_AFTER), wait::ld / wait::st (kind "C"), the issue of tcgen05.commit, alloc,
  dealloc, relinquish_alloc_permit.
- tcgen05.fence::after_thread_sync: `aso` from it to the operations of every later asynchronous
  tcgen05 instruction of its thread (T3), so base causality (and the proxy rules) reach them.
- Completion: `acomp` from the operations of each tcgen05.ld (st) to the next wait::ld
  (wait::st) of the thread; tcgen05.commit issues an arrive-on (count 1) on its mbarrier, an
  mbarrier RMW not in program order, built as cp.async.mbarrier.arrive builds its arrive-on (MB,
  strong, .cluster scope, ACOMPL, .release -- T5): `aso` from the commit's issue to it and
  `acomp` from the operations of every earlier mma / cp of the thread to it. With
  .multicast::cluster, one such arrive-on on the mbarrier at [mbar]'s offset in each CTA of
  ctaMask (performed by that CTA, A2), each with the same aso and acomp.
- tcgen05.dealloc is a Tensor Memory write (TMEM, TC_SYNC) of [tD] in program order; an access to
  a cell that is not tcgen05-ordered before its dealloc is undefined (T6). tcgen05.alloc is a weak
  generic write of the allocation's abstract address to its shared-memory operand ("the store
  operation in tcgen05.alloc is treated as a weak memory operation"): the k-th tcgen05.alloc of
  the test writes k (0 is no address); its write is tagged TC_ALLOC. relinquish_alloc_permit is an
  event tagged TC_RELINQ: an alloc of its CTA that is not base-causality-before it is undefined
  ("it is illegal for a CTA to perform tcgen05.alloc after any of its constituent threads execute
  tcgen05.relinquish_alloc_permit").
- Pipelined pairs (`tcpipe`, between issue events of one CTA): mma -> mma with the same
  accumulator cell and the same shape (T4: the same .kind and the same instruction descriptor:
  the same value when the test gives one - an immediate or a register set by the thread - else
  the same register name, an opaque descriptor), and
  cp -> mma; the model orders them when the first is issued before the second (in program
  order, through a before/after fence chain, or within a warp through a thread synchronization
  and an after fence).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..ast import Instr, Quals, Reg
from ..ast import registers
from ..errors import LitmusError
from ..model.builder import Builder, ThreadCtx
from ..model.values import ZERO, Const, Expr, Ite, ReadVal, binop
from .common import (check_space, cta_mask, cta_mask_rule, label, multicast_targets, performed_by_owner,
                     pred_value, smem_matrix, tmem_cell)
from .mbarrier import arrive_on, mb_location
from .table import Family, Group, sig

_SYNC = Group("sync", ("sync",), required=True)
_ALIGNED = Group("aligned", ("aligned",), required=True)


@dataclass
class Tcgen05State:
    """Per thread."""

    after: list[int] = field(default_factory=list)              # tcgen05.fence::after_thread_sync events
    ld_pending: list[int] = field(default_factory=list)
    st_pending: list[int] = field(default_factory=list)
    tracked: list[int] = field(default_factory=list)            # operations of every mma / cp so far


def _state(ctx: ThreadCtx) -> Tcgen05State:
    return ctx.ext.setdefault("tcgen05", Tcgen05State())


# -- lowering --------------------------------------------------------------------------------

@dataclass
class TcIssue:
    """An asynchronous tcgen05 instruction, for the pipelined pairs."""

    issue: int
    cta: tuple
    kind: str               # 'mma' | 'cp' | 'ld' | 'st'
    acc: str | None = None  # mma: the accumulator's physical cell
    shape: tuple = ()       # mma: (.kind, the descriptor: its value, or an opaque register name)


def lower_tcgen05(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    what = i.qualifiers[0]
    st = _state(ctx)
    if what == "fence::before_thread_sync":
        b.new_event(ctx, "T", {"TC_SYNC", "TC_BEFORE"})
    elif what == "fence::after_thread_sync":
        st.after.append(b.new_event(ctx, "T", {"TC_SYNC", "TC_AFTER"}))
    elif what in ("wait::ld", "wait::st"):
        pending = st.ld_pending if what == "wait::ld" else st.st_pending
        c = b.new_event(ctx, "C", {"TC_SYNC"}, label=label(i, f"completes the thread's earlier tcgen05.{what[6:]}"))
        b.pairs["acomp"].update((e, c) for e in pending)
        pending.clear()
    elif what == "alloc":
        dst = i.operands[0]
        smem_matrix(b, ctx, dst, "address destination")
        _one_warp(b, ctx)
        n = b.ext["tc_allocs"] = b.ext.get("tc_allocs", 0) + 1
        w = b.write(ctx, {"WEAK", "GEN", "TC_ALLOC"}, dst, Const(n),
                    label=label(i, f"writes the allocation's abstract address {n} to {dst.base}"))
        _allocation(b, ctx, i, w)
    elif what == "dealloc":
        t = i.operands[0]
        tmem_cell(b, ctx, t, "deallocated cell")
        _one_warp(b, ctx)
        w = b.write(ctx, {"TC_SYNC", "TC_DEALLOC"}, t, ZERO, label=label(i, f"deallocates {t.base}"))
        _allocation(b, ctx, i, w)
    elif what == "relinquish_alloc_permit":
        b.new_event(ctx, "T", {"TC_SYNC", "TC_RELINQ"}, label=label(i, "relinquishes the CTA's allocation permit"))
    elif what == "commit":
        _commit(b, ctx, i)
    elif what == "mma":
        _mma(b, ctx, i)
    elif what == "cp":
        dst, src = i.operands
        tmem_cell(b, ctx, dst, "destination")
        smem_matrix(b, ctx, src, "source matrix")
        issue = _issue(b, ctx, i)
        r = b.read(ctx, {"ASYNC", "WEAK"}, src, in_po=False, label=label(i, f"async read {src.base}"))
        w = b.write(ctx, set(), dst, ReadVal(r), in_po=False, label=label(i, f"tensor write {dst.base}"))
        _async_ops(b, ctx, issue, [r], [w], TcIssue(issue, ctx.thread.position.cta_key(), "cp"))
        st.tracked += [r, w]
    elif what == "ld":
        regs, t = i.operands[0], i.operands[1]
        tmem_cell(b, ctx, t, "source")
        k = ctx.index
        hazard = _ld_hazard(ctx, k, {r.name for r in regs.items})
        issue = _issue(b, ctx, i, {"REG_HAZARD"} if hazard else set(),
                       f"its registers are accessed by '{hazard}' before a tcgen05.wait::ld" if hazard else "")
        r = b.read(ctx, set(), t, in_po=False, label=label(i, f"tensor read {t.base}"))
        for reg in regs.items:
            b.set_reg(ctx, reg, ReadVal(r))
        _async_ops(b, ctx, issue, [r], [], TcIssue(issue, ctx.thread.position.cta_key(), "ld"))
        st.ld_pending.append(r)
    elif what == "st":
        t, regs = i.operands[0], i.operands[-1]
        tmem_cell(b, ctx, t, "destination")
        issue = _issue(b, ctx, i)
        w = b.write(ctx, set(), t, b.value(ctx, regs.items[0]), in_po=False, label=label(i, f"tensor write {t.base}"))
        _async_ops(b, ctx, issue, [], [w], TcIssue(issue, ctx.thread.position.cta_key(), "st"))
        st.st_pending.append(w)
    else:   # pragma: no cover - ptx_tensor rejects everything else
        raise ctx.error(f"'{i.text}' is not supported by the model yet")


def _issue(b: Builder, ctx: ThreadCtx, i: Instr, tags=(), note: str = "") -> int:
    return b.new_event(ctx, "I", set(tags), label=label(i, "issue" + (f"; {note}" if note else "")))


def _async_ops(b: Builder, ctx: ThreadCtx, issue: int, reads: list[int], writes: list[int], rec: TcIssue) -> None:
    """tcissue from the issue to the operations; reads before writes (aso); after the thread's
    earlier tcgen05.fence::after_thread_sync (aso, T3); recorded for the pipelined pairs."""
    ops = reads + writes
    b.pairs["tcissue"].update((issue, e) for e in ops)
    b.pairs["aso"].update((r, w) for r in reads for w in writes)
    b.pairs["aso"].update((s, e) for s in _state(ctx).after for e in ops)
    b.finalize("tc_issues", _pipelines).setdefault("issued", []).append(rec)


def _descriptor(b: Builder, ctx: ThreadCtx, op):
    """What identifies an instruction descriptor for the pipelined-pair rule (T4): its value when
    the test gives it one (an immediate, or a register the thread has set), else the register's
    name (an opaque descriptor: the same name is the same shape)."""
    if isinstance(op, Reg) and op.name not in ctx.regs:
        return ("opaque", op.name)
    v = b.value(ctx, op)
    return ("value", v.value) if isinstance(v, Const) else ("value", v)


def _mma(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = i.quals
    dop, a, bop, idesc, en = i.operands[:5]
    tmem_cell(b, ctx, dop, "accumulator D")
    reads = []
    issue = _issue(b, ctx, i)
    if b.test.mem(b.roots.get(a.base, a.base)) is not None and b.test.mem(b.roots[a.base]).space == "tensor":
        tmem_cell(b, ctx, a, "matrix A")
        ra = b.read(ctx, set(), a, in_po=False, label=label(i, f"tensor read {a.base}"))
    else:
        smem_matrix(b, ctx, a, "matrix A")
        ra = b.read(ctx, {"ASYNC", "WEAK"}, a, in_po=False, label=label(i, f"async read {a.base}"))
    smem_matrix(b, ctx, bop, "matrix B")
    rb = b.read(ctx, {"ASYNC", "WEAK"}, bop, in_po=False, label=label(i, f"async read {bop.base}"))
    reads += [ra, rb]
    prod = binop("mul", ReadVal(ra), ReadVal(rb))
    on = pred_value(b, ctx, en)
    if on == ZERO:
        value: Expr = prod
    else:
        rd = b.read(ctx, set(), dop, in_po=False, label=label(i, f"tensor read {dop.base} (accumulator)"))
        reads.append(rd)
        value = Ite("!=", on, ZERO, binop("add", ReadVal(rd), prod), prod)
    w = b.write(ctx, set(), dop, value, in_po=False, label=label(i, f"tensor write {dop.base}"))
    shape = (q["kind"], _descriptor(b, ctx, idesc))
    _async_ops(b, ctx, issue, reads, [w],
               TcIssue(issue, ctx.thread.position.cta_key(), "mma", acc=b.roots[dop.base], shape=shape))
    _state(ctx).tracked += reads + [w]


def _commit(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """tcgen05.commit: the issue (synchronous, in program order), then the arrive-on (count 1,
    .cluster scope) on the mbarrier once every earlier mma / cp of the thread has completed,
    built like the asynchronous arrive-on of cp.async.mbarrier.arrive: an mbarrier RMW not in
    program order, after the issue (aso), completing and releasing only the tracked operations
    (acomp, ACOMPL) -- T5."""
    mb = i.operands[0]
    mb_location(b, ctx, mb)
    check_space(b, ctx, mb, "shared::cluster", "mbarrier")
    targets = multicast_targets(b, ctx, cta_mask(i), mb)
    issue = b.new_event(ctx, "I", {"TC_SYNC"}, label=label(i, "issue"))
    tags = {"STRONG", "CLUSTER", "ACOMPL"}
    for (m,) in targets:        # .multicast::cluster: the same arrive-on at [mbar]'s offset in each CTA of the mask
        r, w = arrive_on(b, ctx, m, tags, what="arrive-on when the tracked tcgen05 operations complete"
                         + (f" ({m.base})" if len(targets) > 1 else ""))
        for e in (r, w):
            performed_by_owner(b, ctx, e, m)
        b.pairs["aso"].update({(issue, r), (issue, w)})
        b.pairs["acomp"].update((e, w) for e in _state(ctx).tracked)


@dataclass
class TcAlloc:
    """A tcgen05.alloc or tcgen05.dealloc, for the allocation rules (T6)."""

    event: int              # the alloc's TC_ALLOC write, the dealloc's TC_DEALLOC write
    alloc: bool
    cols: int               # nCols
    thread: str
    warp: tuple             # (CTA, warp): the litmus thread's position
    instr: Instr


def _one_warp(b: Builder, ctx: ThreadCtx) -> None:
    """tcgen05.alloc and dealloc are issued by one warp (.sync.aligned): a litmus thread that
    stands for more than 32 PTX threads (threads_per_litmus_thread) stands for several warps, each
    of which would run it (T6)."""
    n = b.test.threads_per_litmus_thread
    if n > 32:
        raise ctx.error(f"tcgen05.{ctx.instr.qualifiers[0]} is issued by one warp, and this litmus thread stands for "
                        f"{n} PTX threads (threads_per_litmus_thread), more than one warp: which warps allocate "
                        "is not modelled")


def _allocation(b: Builder, ctx: ThreadCtx, i: Instr, event: int) -> None:
    pos = ctx.thread.position
    b.finalize("tc_allocations", _allocation_rules).setdefault("made", []).append(
        TcAlloc(event, i.qualifiers[0] == "alloc", i.operands[1].value, ctx.thread.name, (pos.cta_key(), pos.warp), i))


def _allocation_rules(b: Builder) -> None:
    """The static relations of the allocation rules (T6): `tcgrow`, from an alloc to an alloc of
    the same CTA with more columns, and TC_LEAK, the allocs no dealloc of the CTA frees before the
    kernel exits. A dealloc frees an allocation of its CTA with the same number of columns: in one
    litmus thread, the latest one before it still allocated (none: it frees one the test's
    declared cells stand for, made before the test); over litmus threads of different warps (which
    TensorMemoryWarp makes undefined anyway), any. None leaks in a variant where some thread stops
    before its end (a loop cut by the bound, a barrier it never returns from): the kernel has not
    exited there."""
    made: list[TcAlloc] = b.ext["tc_allocations"]["made"]
    per_cta: dict = {}
    for r in made:
        per_cta.setdefault(r.warp[0], []).append(r)
    for recs in per_cta.values():
        by_warp: dict = {}
        for r in recs:
            by_warp.setdefault(r.warp, set()).add(r.thread)
        shared = next((ts for ts in by_warp.values() if len(ts) > 1), None)
        if shared is not None:
            r = next(r for r in recs if r.thread in shared)
            raise LitmusError(f"tcgen05.alloc/dealloc of one CTA in litmus threads {', '.join(sorted(shared))} of one "
                              "warp: the warp performs each of them once, together (.sync.aligned), and which "
                              "litmus thread's is the warp's is not modelled; put them in one litmus thread",
                              r.instr.where)
        allocs = [r for r in recs if r.alloc]
        b.pairs["tcgrow"].update((x.event, y.event) for x in allocs for y in allocs if y.cols > x.cols)
    if any(t.stops for t in b.test.threads):
        return
    for recs in per_cta.values():
        # in one litmus thread, each dealloc in program order (the order of `made`); over several,
        # the allocs first: which comes first is not known, and TensorMemoryWarp fires anyway
        ordered = recs if len({r.thread for r in recs}) == 1 else \
            [r for r in recs if r.alloc] + [r for r in recs if not r.alloc]
        live: list[TcAlloc] = []
        for r in ordered:
            if r.alloc:
                live.append(r)
                continue
            match = next((x for x in reversed(live) if x.cols == r.cols), None)
            if match is not None:
                live.remove(match)
        for r in live:
            e = b.events[r.event]
            b.events[r.event] = replace(e, tags=e.tags | {"TC_LEAK"})


def _ld_hazard(ctx: ThreadCtx, k: int, regs: set[str]) -> str | None:
    """The first later instruction that accesses the destination registers of tcgen05.ld k before
    a tcgen05.wait::ld, or None."""
    for ins in ctx.thread.code[k + 1:]:
        if ins.op == "tcgen05" and ins.qualifiers[:1] == ("wait::ld",):
            return None
        if set(registers(ins)) & regs:
            return ins.text
    return None


def _pipelines(b: Builder) -> None:
    """tcpipe: the pipelined pairs of one CTA (PTX ISA, Pipelined tcgen05 Instructions): mma -> mma
    with the same accumulator and shape (both orders: the model keeps the one they are issued in),
    cp -> mma."""
    recs = b.ext["tc_issues"]["issued"]
    for x in recs:
        for y in recs:
            if x is y or x.cta != y.cta or y.kind != "mma":
                continue
            if x.kind == "cp" or (x.kind == "mma" and x.acc == y.acc and x.shape == y.shape):
                b.pairs["tcpipe"].add((x.issue, y.issue))


# -- the families ----------------------------------------------------------------------------

_CTA_GROUP = Group("cta_group", ("cta_group::1",), required=True)


_PAIRS = "is not modelled (CTA pairs): use .cta_group::1"


_CTA_REJECTS = {"cta_group::2": f".cta_group::2 {_PAIRS}"}


MMA_KINDS = ("kind::f16", "kind::tf32", "kind::f8f6f4", "kind::i8")


CP_SHAPES = ("128x256b", "4x256b", "128x128b", "64x128b", "32x128b")


LDST_SHAPES = ("16x64b", "16x128b", "16x256b", "32x32b", "16x32bx2")


LDST_NUMS = tuple(f"x{n}" for n in (1, 2, 4, 8, 16, 32, 64, 128))


def _ncols(slot: int):
    def rule(i: Instr, q: Quals):
        n = i.operands[slot].value
        if n < 32 or n > 512 or n & (n - 1):
            return f"nCols is a power of 2 from 32 to 512, not {n}"
        return None
    return rule


def _cp_multicast(i: Instr, q: Quals):
    need = {"64x128b": ("warpx2::02_13", "warpx2::01_23"), "32x128b": ("warpx4",)}.get(q["shape"], ())
    if need and q["multicast"] not in need:
        return f"tcgen05.cp.{q['shape']} needs {' or '.join('.' + m for m in need)}"
    if not need and q["multicast"]:
        return f".{q['multicast']} goes with .64x128b (.warpx2::*) or .32x128b (.warpx4) only"
    if bool(q["dst_fmt"]) != bool(q["src_fmt"]):
        return "the decompression formats come together: .b8x16.b6x16_p32 or .b8x16.b4x16_p64"
    return None


def _ld_operands(q: Quals):
    if q["shape"] == "16x32bx2":
        return sig("r:regvec, taddr:addr, split:imm", taddr="the Tensor Memory cell [tD]")
    return sig("r:regvec, taddr:addr", taddr="the Tensor Memory cell [tD]")


def _st_operands(q: Quals):
    if q["shape"] == "16x32bx2":
        return sig("taddr:addr, split:imm, r:regvec", r="the source registers {r0, ...}")
    return sig("taddr:addr, r:regvec", r="the source registers {r0, ...}")


def _mma_scale_input(i: Instr, q: Quals):
    if len(i.operands) == 6:
        if q["kind"] not in ("kind::f16", "kind::tf32"):
            return f"scale-input-d is for .kind::f16 and .kind::tf32, not .{q['kind']}"
        if not 0 <= i.operands[5].value <= 15:
            return "scale-input-d is 0 to 15"
    return None


_LDST_GROUPS = (_SYNC, _ALIGNED, Group("shape", LDST_SHAPES, required=True), Group("num", LDST_NUMS, required=True))


_MMA_REJECTS = {
    **_CTA_REJECTS,
    **dict.fromkeys(("kind::mxf8f6f4", "kind::mxf4", "kind::mxf4nvf4", "block_scale", "scale_vec::1X",
                     "scale_vec::2X", "scale_vec::4X", "block16", "block32"),
                    "block-scaled tcgen05.mma is not modelled yet"),
    "ws": "tcgen05.mma.ws (weight-stationary) is not modelled yet",
    "sp": "tcgen05.mma.sp (sparse) is not modelled yet",
    **dict.fromkeys(("collector::a::fill", "collector::a::use", "collector::a::lastuse", "collector::a::discard"),
                    "the collector-buffer hints of tcgen05.mma are not modelled yet"),
}


FAMILIES = tuple(
    replace(f, lower=lower_tcgen05, tensor_memory=True)
    for f in (
    Family("tcgen05", rules=(lambda i, q: "tcgen05 needs an operation (.alloc, .dealloc, .mma, .cp, .ld, .st, "
                                          ".wait::ld, .wait::st, .commit, .fence::before_thread_sync, ...)",),
           rejects={"shift": "tcgen05.shift is not modelled yet"}),
    Family("tcgen05.alloc", groups=(_CTA_GROUP, _SYNC, _ALIGNED, Group("space", ("shared::cta",)),
                                    Group("type", ("b32",), required=True)),
           operands=sig("dst:addr, ncols:imm", dst="the shared-memory cell that receives the address",
                        ncols="the number of columns"),
           rules=(_ncols(1),), space="space", rejects=_CTA_REJECTS),
    Family("tcgen05.dealloc", groups=(_CTA_GROUP, _SYNC, _ALIGNED, Group("type", ("b32",), required=True)),
           operands=sig("taddr:addr, ncols:imm", taddr="the Tensor Memory cell [tD] (abstract taddr)",
                        ncols="the number of columns"),
           rules=(_ncols(1),), rejects=_CTA_REJECTS),
    Family("tcgen05.relinquish_alloc_permit", groups=(_CTA_GROUP, _SYNC, _ALIGNED), rejects=_CTA_REJECTS),
    Family("tcgen05.mma", groups=(_CTA_GROUP, Group("kind", MMA_KINDS, required=True)),
           operands=sig("d:addr, a:addr, b:addr, idesc:val, enable_input_d:pred, scale_input_d:imm?",
                        b="the shared-memory matrix B [sB]", idesc="the instruction descriptor (a register)",
                        enable_input_d="the enable-input-d predicate"),
           rules=(_mma_scale_input,), rejects=_MMA_REJECTS),
    Family("tcgen05.cp", groups=(_CTA_GROUP, Group("shape", CP_SHAPES, required=True),
                                 Group("multicast", ("warpx2::02_13", "warpx2::01_23", "warpx4")),
                                 Group("dst_fmt", ("b8x16",)), Group("src_fmt", ("b6x16_p32", "b4x16_p64"))),
           operands=sig("taddr:addr, sdesc:addr", sdesc="the shared-memory source matrix [sS]"),
           rules=(_cp_multicast,), rejects=_CTA_REJECTS),
    Family("tcgen05.ld", groups=_LDST_GROUPS + (Group("pack", ("pack::16b",)), Group("type", ("b32",), required=True)),
           operands=_ld_operands),
    Family("tcgen05.st", groups=_LDST_GROUPS + (Group("unpack", ("unpack::16b",)), Group("type", ("b32",), required=True)),
           operands=_st_operands),
    Family("tcgen05.wait::ld", groups=(_SYNC, _ALIGNED)),
    Family("tcgen05.wait::st", groups=(_SYNC, _ALIGNED)),
    Family("tcgen05.commit", groups=(_CTA_GROUP, Group("completion", ("mbarrier::arrive::one",), required=True),
                                     Group("space", ("shared::cluster",)), Group("multicast", ("multicast::cluster",)),
                                     Group("type", ("b64",), required=True)),
           operands=lambda q: sig("mbar:addr" + (", ctaMask:ctamask" if q["multicast"] else ""), mbar="the mbarrier",
                                  ctaMask="the CTAs whose mbarrier is signalled (bit N = ctaN of the cluster)"),
           rules=(cta_mask_rule,), rejects=_CTA_REJECTS),
    Family("tcgen05.fence::before_thread_sync"),
    Family("tcgen05.fence::after_thread_sync"),
    )
)
