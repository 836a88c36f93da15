"""Lowering of the tensor-core instructions (issue 5): wgmma (sm_90a) and tcgen05 (sm_100a).
Registers itself into checker.lower.LOWER on import. The model that gives these tags and
relations their meaning is the "Tensor cores" section at the end of axioms/ptx.cat; the syntax
(and the abstract operands) is in checker.ptx_tensor.

PTX ISA 9.4: "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (wgmma.fence,
wgmma.mma_async, its Async Proxy section, wgmma.commit_group, wgmma.wait_group) and "TensorCore
5th Generation Family Instructions" (Tensor Memory, tcgen05 Memory Consistency Model: asynchronous
and synchronous instructions, pipelined pairs, completion mechanisms, specialized inter-thread
synchronization, canonical patterns; the instructions); DESIGN A8, A9.

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
  mbarrier RMW not in program order built as issue 4 builds an asynchronous arrive-on (MB,
  strong, .cluster scope, ACOMPL, .release -- T5): `aso` from the commit's issue to it and
  `acomp` from the operations of every earlier mma / cp of the thread to it. With
  .multicast::cluster, one such arrive-on on the mbarrier at [mbar]'s offset in each CTA of
  ctaMask (performed by that CTA, A2), each with the same aso and acomp.
- tcgen05.dealloc is a Tensor Memory write (TMEM, TC_SYNC) of [tD] in program order; an access to
  a cell that is not tcgen05-ordered before its dealloc is undefined (T6). tcgen05.alloc is a weak
  generic write of the allocation's abstract address to its shared-memory operand ("the store
  operation in tcgen05.alloc is treated as a weak memory operation"): the k-th tcgen05.alloc of
  the test writes k (0 is no address).
- Pipelined pairs (`tcpipe`, between issue events of one CTA): mma -> mma with the same
  accumulator cell and the same shape (T4: the same .kind and the same instruction descriptor:
  the same value when the test gives one - an immediate or a register set by the thread - else
  the same register name, an opaque descriptor), and
  cp -> mma; the model orders them when the first is issued before the second (in program
  order, through a before/after fence chain, or within a warp through a thread synchronization
  and an after fence).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ptx
from .ast import Addr, Instr, Reg, Vec
from .lower import LOWER, Builder, ThreadCtx
from .model.values import ZERO, Const, Expr, Ite, ReadVal, binop


@dataclass
class TcIssue:
    """An asynchronous tcgen05 instruction, for the pipelined pairs."""

    issue: int
    cta: tuple
    kind: str               # 'mma' | 'cp' | 'ld' | 'st'
    acc: str | None = None  # mma: the accumulator's physical cell
    shape: tuple = ()       # mma: (.kind, the descriptor: its value, or an opaque register name)


@dataclass
class TensorState:
    """Per thread."""

    wg_uncommitted: list[int] = field(default_factory=list)     # reads of uncommitted wgmma
    wg_groups: list[list[int]] = field(default_factory=list)
    wg_fences: list[int] = field(default_factory=list)          # wgmma.fence events
    after: list[int] = field(default_factory=list)              # tcgen05.fence::after_thread_sync events
    ld_pending: list[int] = field(default_factory=list)
    st_pending: list[int] = field(default_factory=list)
    tracked: list[int] = field(default_factory=list)            # operations of every mma / cp so far


def _state(ctx: ThreadCtx) -> TensorState:
    return ctx.ext.setdefault("tensor", TensorState())


def _label(i: Instr, what: str) -> str:
    return f"{i.text}  [{what}]"


def _position(ctx: ThreadCtx) -> int:
    return next(k for k, ins in enumerate(ctx.thread.code) if ins is ctx.instr)


# -- operands --------------------------------------------------------------------------------

def _decl(b: Builder, ctx: ThreadCtx, op, role: str):
    if not isinstance(op, Addr) or op.base not in b.roots:
        raise ctx.error(f"expected a declared location for the {role}")
    return b.test.mem(b.roots[op.base])


def _own_cell(b: Builder, ctx: ThreadCtx, op, role: str, space: str, kind: str, hint: str, why: str) -> None:
    """`op` must be a cell of `space` (`kind`, in messages) owned by the executing CTA."""
    d = _decl(b, ctx, op, role)
    if d is None or d.space != space:
        raise ctx.error(f"the {role} '{op.base}' must be {kind}{hint}")
    if d.owner.cta_key() != ctx.thread.position.cta_key():
        raise ctx.error(f"the {role} '{op.base}' is {kind} of another CTA: {why}")


def _tmem(b: Builder, ctx: ThreadCtx, op, role: str) -> None:
    """`op` must be a Tensor Memory cell of the executing CTA (.cta_group::1)."""
    _own_cell(b, ctx, op, role, "tensor", "Tensor Memory",
              f": declare it {op.base}: {{space: tensor, owner: {_cta(ctx)}}}",
              "with .cta_group::1 a tcgen05 instruction accesses its own CTA's Tensor Memory")


def _smem(b: Builder, ctx: ThreadCtx, op, role: str) -> None:
    """`op` must be a shared-memory cell of the executing CTA (a matrix descriptor's start address)."""
    _own_cell(b, ctx, op, role, "shared", "shared memory",
              " (a matrix descriptor names a cell of the executing CTA's shared memory)",
              "a matrix descriptor addresses the executing CTA's shared memory")


def _cta(ctx: ThreadCtx) -> str:
    p = ctx.thread.position
    cl = f".cluster{p.cluster}" if p.cluster is not None else ""
    return f"gpu{p.gpu}{cl}.cta{p.cta}"


def _pred(b: Builder, ctx: ThreadCtx, op) -> Expr:
    """A predicate operand's truth as 0/1 (`!p` negated; a register never set is false)."""
    name = op.name
    v = b.value(ctx, Reg(name.lstrip("!")))
    if name.startswith("!"):
        return Ite("==", v, ZERO, Const(1), ZERO)
    return v if v == ZERO else Ite("!=", v, ZERO, Const(1), ZERO)


def _ops_after(b: Builder, ctx: ThreadCtx, sources, ops) -> None:
    b.pairs["aso"].update((s, e) for s in sources for e in ops)


# -- wgmma -----------------------------------------------------------------------------------

def lower_wgmma(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    ptx.validate(i)
    what = i.qualifiers[0]
    st = _state(ctx)
    if what == "fence":
        st.wg_fences.append(b.new_event(ctx, "T", set()))
    elif what == "commit_group":
        st.wg_groups.append(st.wg_uncommitted)
        st.wg_uncommitted = []
    elif what == "wait_group":
        n = i.operands[0].value
        done = st.wg_groups[:max(0, len(st.wg_groups) - n)]
        covered = tuple(e for g in done for e in g)
        wait = b.new_event(ctx, "C", {"PF_ASYNC"}, label=_label(i, "completion + implicit proxy fence"))
        b.pairs["acomp"].update((e, wait) for e in covered)
        from .lower_proxy import restrict
        restrict(b, wait, "events", covered)
    else:
        _mma_async(b, ctx, i)


def _mma_async(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    st = _state(ctx)
    d, a, bop, scale = i.operands[:4]
    k = _position(ctx)
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
    b.new_event(ctx, "I", tags, label=_label(i, "; ".join(["issue"] + notes)))
    reads = []
    if isinstance(a, Addr):
        _smem(b, ctx, a, "matrix A")
        ra = b.read(ctx, {"ASYNC", "WEAK"}, a, in_po=False, label=_label(i, f"async read {a.base}"))
        reads.append(ra)
        av: Expr = ReadVal(ra)
    else:
        av = b.value(ctx, a.items[0])
    _smem(b, ctx, bop, "matrix B")
    rb = b.read(ctx, {"ASYNC", "WEAK"}, bop, in_po=False, label=_label(i, f"async read {bop.base}"))
    reads.append(rb)
    prod = binop("mul", av, ReadVal(rb))
    if len(i.operands) > 5:
        sign = i.operands[4].value * i.operands[5].value
        if sign < 0:
            prod = binop("mul", prod, Const(-1))
    on = _pred(b, ctx, scale)
    for r in d.items:
        old = b.value(ctx, r)
        b.set_reg(ctx, r, prod if on == ZERO else Ite("!=", on, ZERO, binop("add", old, prod), prod))
    # A8 exception and decision T1: ordered after earlier wgmma.fence and async proxy fences only
    pf = [e for e in ctx.events if "PF_ASYNC" in b.events[e].tags]
    _ops_after(b, ctx, st.wg_fences + pf, reads)
    st.wg_uncommitted.extend(reads)


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
    from .ptx_tensor import wgmma_shape

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
        used = set(ptx.registers(ins)) & regs
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
    from .ptx_tensor import wgmma_shape

    code = ctx.thread.code
    me = code[k]
    fences = [j for j in range(k) if _is_wgmma(code[j], "fence")]
    if not fences:
        return "no wgmma.fence before it (required before the first wgmma.mma_async)"
    acc, aregs = _wgmma_regs(me)
    for r in sorted(acc | aregs):
        last = next((j for j in range(k - 1, -1, -1) if r in set(ptx.registers(code[j]))), None)
        if last is None or last < fences[-1]:
            continue
        prev = code[last]
        if _is_wgmma(prev, "mma_async") and wgmma_shape(prev) == wgmma_shape(me) \
                and r in acc and r in _wgmma_regs(prev)[0]:
            continue
        return f"no wgmma.fence between '{prev.text}' (register {r}) and it"
    return None


# -- tcgen05 ---------------------------------------------------------------------------------

def lower_tcgen05(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    ptx.validate(i)
    what = i.qualifiers[0]
    st = _state(ctx)
    if what == "fence::before_thread_sync":
        b.new_event(ctx, "T", {"TC_SYNC", "TC_BEFORE"})
    elif what == "fence::after_thread_sync":
        st.after.append(b.new_event(ctx, "T", {"TC_SYNC", "TC_AFTER"}))
    elif what in ("wait::ld", "wait::st"):
        pending = st.ld_pending if what == "wait::ld" else st.st_pending
        c = b.new_event(ctx, "C", {"TC_SYNC"}, label=_label(i, f"completes the thread's earlier tcgen05.{what[6:]}"))
        b.pairs["acomp"].update((e, c) for e in pending)
        pending.clear()
    elif what == "alloc":
        dst = i.operands[0]
        _smem(b, ctx, dst, "address destination")
        n = b.ext["tc_allocs"] = b.ext.get("tc_allocs", 0) + 1
        b.write(ctx, {"WEAK", "GEN"}, dst, Const(n),
                label=_label(i, f"writes the allocation's abstract address {n} to {dst.base}"))
    elif what == "dealloc":
        t = i.operands[0]
        _tmem(b, ctx, t, "deallocated cell")
        b.write(ctx, {"TC_SYNC"}, t, ZERO, label=_label(i, f"deallocates {t.base}"))
    elif what == "relinquish_alloc_permit":
        b.new_event(ctx, "T", {"TC_SYNC"})
    elif what == "commit":
        _commit(b, ctx, i)
    elif what == "mma":
        _mma(b, ctx, i)
    elif what == "cp":
        dst, src = i.operands
        _tmem(b, ctx, dst, "destination")
        _smem(b, ctx, src, "source matrix")
        issue = _issue(b, ctx, i)
        r = b.read(ctx, {"ASYNC", "WEAK"}, src, in_po=False, label=_label(i, f"async read {src.base}"))
        w = b.write(ctx, set(), dst, ReadVal(r), in_po=False, label=_label(i, f"tensor write {dst.base}"))
        _async_ops(b, ctx, issue, [r], [w], TcIssue(issue, ctx.thread.position.cta_key(), "cp"))
        st.tracked += [r, w]
    elif what == "ld":
        regs, t = i.operands[0], i.operands[1]
        _tmem(b, ctx, t, "source")
        k = _position(ctx)
        hazard = _ld_hazard(ctx, k, {r.name for r in regs.items})
        issue = _issue(b, ctx, i, {"REG_HAZARD"} if hazard else set(),
                       f"its registers are accessed by '{hazard}' before a tcgen05.wait::ld" if hazard else "")
        r = b.read(ctx, set(), t, in_po=False, label=_label(i, f"tensor read {t.base}"))
        for reg in regs.items:
            b.set_reg(ctx, reg, ReadVal(r))
        _async_ops(b, ctx, issue, [r], [], TcIssue(issue, ctx.thread.position.cta_key(), "ld"))
        st.ld_pending.append(r)
    elif what == "st":
        t, regs = i.operands[0], i.operands[-1]
        _tmem(b, ctx, t, "destination")
        issue = _issue(b, ctx, i)
        w = b.write(ctx, set(), t, b.value(ctx, regs.items[0]), in_po=False, label=_label(i, f"tensor write {t.base}"))
        _async_ops(b, ctx, issue, [], [w], TcIssue(issue, ctx.thread.position.cta_key(), "st"))
        st.st_pending.append(w)
    else:   # pragma: no cover - ptx_tensor rejects everything else
        raise ctx.error(f"'{i.text}' is not supported by the model yet")


def _issue(b: Builder, ctx: ThreadCtx, i: Instr, tags=(), note: str = "") -> int:
    return b.new_event(ctx, "I", set(tags), label=_label(i, "issue" + (f"; {note}" if note else "")))


def _async_ops(b: Builder, ctx: ThreadCtx, issue: int, reads: list[int], writes: list[int], rec: TcIssue) -> None:
    """tcissue from the issue to the operations; reads before writes (aso); after the thread's
    earlier tcgen05.fence::after_thread_sync (aso, T3); recorded for the pipelined pairs."""
    ops = reads + writes
    b.pairs["tcissue"].update((issue, e) for e in ops)
    b.pairs["aso"].update((r, w) for r in reads for w in writes)
    _ops_after(b, ctx, _state(ctx).after, ops)
    issues = b.ext.setdefault("tc_issues", [])
    if not issues:
        b.finalizers.append(_pipelines)
    issues.append(rec)


def _descriptor(b: Builder, ctx: ThreadCtx, op):
    """What identifies an instruction descriptor for the pipelined-pair rule (T4): its value when
    the test gives it one (an immediate, or a register the thread has set), else the register's
    name (an opaque descriptor: the same name is the same shape)."""
    if isinstance(op, Reg) and op.name not in ctx.regs:
        return ("opaque", op.name)
    v = b.value(ctx, op)
    return ("value", v.value) if isinstance(v, Const) else ("value", v)


def _mma(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = ptx.validate(i)
    dop, a, bop, idesc, en = i.operands[:5]
    _tmem(b, ctx, dop, "accumulator D")
    reads = []
    issue = _issue(b, ctx, i)
    if b.test.mem(b.roots.get(a.base, a.base)) is not None and b.test.mem(b.roots[a.base]).space == "tensor":
        _tmem(b, ctx, a, "matrix A")
        ra = b.read(ctx, set(), a, in_po=False, label=_label(i, f"tensor read {a.base}"))
    else:
        _smem(b, ctx, a, "matrix A")
        ra = b.read(ctx, {"ASYNC", "WEAK"}, a, in_po=False, label=_label(i, f"async read {a.base}"))
    _smem(b, ctx, bop, "matrix B")
    rb = b.read(ctx, {"ASYNC", "WEAK"}, bop, in_po=False, label=_label(i, f"async read {bop.base}"))
    reads += [ra, rb]
    prod = binop("mul", ReadVal(ra), ReadVal(rb))
    on = _pred(b, ctx, en)
    if on == ZERO:
        value: Expr = prod
    else:
        rd = b.read(ctx, set(), dop, in_po=False, label=_label(i, f"tensor read {dop.base} (accumulator)"))
        reads.append(rd)
        value = Ite("!=", on, ZERO, binop("add", ReadVal(rd), prod), prod)
    w = b.write(ctx, set(), dop, value, in_po=False, label=_label(i, f"tensor write {dop.base}"))
    shape = (q["kind"], _descriptor(b, ctx, idesc))
    _async_ops(b, ctx, issue, reads, [w],
               TcIssue(issue, ctx.thread.position.cta_key(), "mma", acc=b.roots[dop.base], shape=shape))
    _state(ctx).tracked += reads + [w]


def _commit(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """tcgen05.commit: the issue (synchronous, in program order), then the arrive-on (count 1,
    .cluster scope) on the mbarrier once every earlier mma / cp of the thread has completed,
    built like issue 4's asynchronous arrive-on (cp.async.mbarrier.arrive): an mbarrier RMW not in
    program order, after the issue (aso), completing and releasing only the tracked operations
    (acomp, ACOMPL) -- T5."""
    from .lower_async import _check_space, _mb_location, _mb_objects, _mb_rmw, _performed_by_owner, mb_update, multicast_targets
    from .ptx_async import cta_mask

    mb = i.operands[0]
    _mb_location(b, ctx, mb)
    _check_space(b, ctx, mb, "shared::cluster", "mbarrier")
    targets = multicast_targets(b, ctx, cta_mask(i, ptx.validate(i)), mb)
    issue = b.new_event(ctx, "I", {"TC_SYNC"}, label=_label(i, "issue"))
    tags = {"STRONG", "CLUSTER", "ACOMPL"}
    for (m,) in targets:        # .multicast::cluster: the same arrive-on at [mbar]'s offset in each CTA of the mask
        _mb_objects(b).add(b.roots[m.base])
        r, w = _mb_rmw(b, ctx, m, tags, tags | {"REL"}, lambda v: mb_update(v, arrive=Const(1)), in_po=False,
                       what="arrive-on when the tracked tcgen05 operations complete"
                       + (f" ({m.base})" if len(targets) > 1 else ""))
        for e in (r, w):
            _performed_by_owner(b, ctx, e, m)
        b.pairs["aso"].update({(issue, r), (issue, w)})
        b.pairs["acomp"].update((e, w) for e in _state(ctx).tracked)


def _ld_hazard(ctx: ThreadCtx, k: int, regs: set[str]) -> str | None:
    """The first later instruction that accesses the destination registers of tcgen05.ld k before
    a tcgen05.wait::ld, or None."""
    for ins in ctx.thread.code[k + 1:]:
        if ins.op == "tcgen05" and ins.qualifiers[:1] == ("wait::ld",):
            return None
        if set(ptx.registers(ins)) & regs:
            return ins.text
    return None


def _pipelines(b: Builder) -> None:
    """tcpipe: the pipelined pairs of one CTA (PTX ISA, Pipelined tcgen05 Instructions): mma -> mma
    with the same accumulator and shape (both orders: the model keeps the one they are issued in),
    cp -> mma."""
    recs = b.ext["tc_issues"]
    for x in recs:
        for y in recs:
            if x is y or x.cta != y.cta or y.kind != "mma":
                continue
            if x.kind == "cp" or (x.kind == "mma" and x.acc == y.acc and x.shape == y.shape):
                b.pairs["tcpipe"].add((x.issue, y.issue))


LOWER["wgmma"] = lower_wgmma
LOWER["tcgen05"] = lower_tcgen05

__all__ = ["lower_tcgen05", "lower_wgmma"]
