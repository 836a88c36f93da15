"""Lowering of the asynchronous bulk copies: the minimal, real part of cp.async.bulk{.tensor} that
the proxy model needs (issue 3), built to be extended by the asynchronous-completion work
(issue 4). Registers itself into checker.lower.LOWER on import.

What is modelled (PTX ISA 9.4, "Asynchronous Operations" 8.9.1.1, "cp.async.bulk",
"cp.async.bulk.tensor", "Bulk and Tensor copy completion instructions"; DESIGN A2, A8, A9):

- Issue. The instruction is an issue event (kind "I") in the thread's program order. Its memory
  operations are events of the issuing thread that are NOT in program order (A8); `aso` orders
  them after the issue event (so after every earlier instruction of the thread) and among
  themselves: the tensor-map read, then the source reads, then the destination write.
  Nothing orders them before later instructions of the thread.
- Memory operations. A bulk copy is a weak async-proxy read of [src] and a weak async-proxy write
  of [dst] with the value read (an abstract cell: one read, one write, whatever the size).
  A tensor copy (load directions) adds a weak tensormap-proxy read of the tensor map, and reads
  (async proxy) every buffer of the map's table (DESIGN section 2, `tensormap:`); the
  destination receives the data of the buffer whose table value the map read returned, or -1
  for a value outside the table. The reads of the buffers that were not selected happen in the
  model too: they are weak reads that constrain nothing, but an "in flight" check (issue 4)
  must ignore them (only the read of buffer k matters when the map read returns k).
- Performing CTA (A2). An async write into another CTA's shared memory (.shared::cluster
  destination) is performed by the CTA that owns that memory (`pscta`); every other event by its
  thread's CTA. Model option strict-cta uses the issuing CTA throughout.
- Completion: the simplest documented form only. `cp.async.bulk.commit_group` closes a per-thread
  bulk async-group of the copies issued since the last commit; `cp.async.bulk.wait_group{.read}
  N` is an event (kind "C") in program order that completes every group but the N most recent.
  `acomp` goes from the completed memory operations to the wait, and the wait is the implicit
  generic-async proxy fence that follows completion (A9): it is tagged PF_ASYNC and PF_TMAP and
  `pfcover`s exactly the operations it completes. A .read wait completes (and fences) only the
  tensor-map and source reads; so does any wait for a copy that completes through an mbarrier
  (PTX: a bulk async-group "optionally can be used for the completion of reading data from the
  source / reading from the tensormap" of those).
- The trap (8.9.1.1): completion is ordered only with the instruction's own memory operations,
  not, transitively, with the instructions issued before it. So `aso` and `acomp` are not
  composed: in axioms/ptx.cat, base causality reaches an async operation only at the end of a
  path (through `aso`) and leaves it only at the start of one (through `acomp`).

Not built here (issue 4): the mbarrier complete-tx (the [mbar] operand is accepted and ignored),
mbarrier waits, multicast, cp.async (non-bulk) and its groups, cp.reduce.async.bulk, the tensor
store direction, the .relaxed.scope forms, and "in flight" undefined behaviour.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ptx
from .ast import Addr, Instr
from .lower import LOWER, Builder, ThreadCtx
from .values import Const, Expr, Ite, ReadVal


@dataclass
class BulkOp:
    """One issued bulk copy: its memory operations, which of them are reads, and whether a bulk
    wait_group completes all of them (bulk_group completion) or only its reads (mbarrier)."""

    events: list[int]
    reads: list[int]
    full: bool


@dataclass
class BulkState:
    """Per thread: copies issued since the last commit, and the committed groups in order."""

    uncommitted: list[BulkOp] = field(default_factory=list)
    groups: list[list[BulkOp]] = field(default_factory=list)


def _state(ctx: ThreadCtx) -> BulkState:
    return ctx.ext.setdefault("bulk", BulkState())


def _issue(b: Builder, ctx: ThreadCtx, i: Instr) -> int:
    return b.new_event(ctx, "I", set(), label=f"{i.text}  [issue]")


def _order(b: Builder, issue: int, *stages: list[int]) -> None:
    """aso: the issue event before every operation; each stage before the later stages."""
    evs = [e for st in stages for e in st]
    b.pairs["aso"].update((issue, e) for e in evs)
    for k, st in enumerate(stages):
        for later in stages[k + 1:]:
            b.pairs["aso"].update((a, c) for a in st for c in later)


def _decl(b: Builder, name: str):
    return b.test.mem(b.roots[name])


def _check_space(b: Builder, ctx: ThreadCtx, op, space: str, role: str) -> None:
    """`op` must lie in `space` as seen from the executing thread: global, its own CTA's shared
    memory (shared::cta), shared memory in its cluster (shared::cluster), or another CTA's
    shared memory in its cluster (remote)."""
    if not isinstance(op, Addr) or op.base not in b.roots:
        raise ctx.error(f"expected an address operand for the {role}")
    d = _decl(b, op.base)
    here = ctx.thread.position
    if space == "global":
        if d.space != "global":
            raise ctx.error(f"the {role} '{op.base}' must be global memory")
        return
    if d.space != "shared":
        raise ctx.error(f"the {role} '{op.base}' must be shared memory")
    if d.owner.cluster_key() != here.cluster_key():
        raise ctx.error(f"the {role} '{op.base}' is shared memory outside the executing cluster")
    own = d.owner.cta_key() == here.cta_key()
    if space == "shared::cta" and not own:
        raise ctx.error(f"the {role} '{op.base}' must be the executing CTA's shared memory (.shared::cta)")
    if space == "remote" and own:
        raise ctx.error(f"the {role} '{op.base}' must be the shared memory of another CTA of the cluster "
                        "(cp.async.bulk.shared::cluster.shared::cta is strictly remote)")


def _performed_by_owner(b: Builder, ctx: ThreadCtx, w: int, dst: Addr) -> None:
    """A2: a write into another CTA's shared memory is performed by the CTA owning it."""
    d = _decl(b, dst.base)
    if d.space == "shared" and d.owner.cta_key() != ctx.thread.position.cta_key():
        b.perf_cta[w] = d.owner.cta_key()


def _label(i: Instr, what: str) -> str:
    return f"{i.text}  [{what}]"


def lower_bulk(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    from .ptx_async import BULK_DIRECTIONS

    dst_space, src_space = i.qualifiers[2], i.qualifiers[3]
    mbar = BULK_DIRECTIONS[(dst_space, src_space)]
    dst, src = i.operands[0], i.operands[1]
    remote = (dst_space, src_space) == ("shared::cluster", "shared::cta")
    _check_space(b, ctx, dst, "remote" if remote else dst_space, "destination")
    _check_space(b, ctx, src, src_space, "source")
    if mbar:
        _check_space(b, ctx, i.operands[3], "shared::cluster", "mbarrier")
    issue = _issue(b, ctx, i)
    r = b.read(ctx, {"ASYNC", "WEAK"}, src, in_po=False, label=_label(i, f"async read {src.base}"))
    w = b.write(ctx, {"ASYNC", "WEAK"}, dst, ReadVal(r), in_po=False, label=_label(i, f"async write {dst.base}"))
    _performed_by_owner(b, ctx, w, dst)
    _order(b, issue, [r], [w])
    _state(ctx).uncommitted.append(BulkOp([r, w], [r], full=not mbar))


def lower_tensor(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    dst_space = i.qualifiers[4]          # cp.async.bulk.tensor.Nd.dst.src...
    dst, taddr, mb = i.operands[0], i.operands[1], i.operands[2]
    _check_space(b, ctx, dst, dst_space, "destination")
    _check_space(b, ctx, mb, "shared::cluster", "mbarrier")
    if taddr.base not in b.roots:
        raise ctx.error(f"unknown location '{taddr.base}'")
    decl = _decl(b, taddr.base)
    if not decl.tensormap:
        raise ctx.error(f"'{taddr.base}' is not a tensor map: declare it with the buffers its values "
                        f"select, e.g. {taddr.base}: {{tensormap: {{0: gA, 1: gB}}, init: 0}}")
    issue = _issue(b, ctx, i)
    t = b.read(ctx, {"TMAP", "WEAK"}, Addr(taddr.base), in_po=False,
               label=_label(i, f"tensormap read {taddr.base}"))
    reads = {}
    for k, buf in sorted(decl.tensormap.items()):
        reads[k] = b.read(ctx, {"ASYNC", "WEAK"}, Addr(buf), in_po=False,
                          label=_label(i, f"async read {buf} (if {taddr.base}={k})"))
    value: Expr = Const(-1)
    for k, r in sorted(reads.items(), reverse=True):
        value = Ite("==", ReadVal(t), Const(k), ReadVal(r), value)
    w = b.write(ctx, {"ASYNC", "WEAK"}, dst, value, in_po=False, label=_label(i, f"async write {dst.base}"))
    _performed_by_owner(b, ctx, w, dst)
    _order(b, issue, [t], list(reads.values()), [w])
    _state(ctx).uncommitted.append(BulkOp([t, *reads.values(), w], [t, *reads.values()], full=False))


def lower_commit(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    st = _state(ctx)
    st.groups.append(st.uncommitted)
    st.uncommitted = []


def lower_wait(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    st = _state(ctx)
    n = i.operands[0].value
    if n < 0:
        raise ctx.error("wait_group takes a non-negative count")
    read_only = i.has("read")
    done = st.groups[:max(0, len(st.groups) - n)]
    # The wait: the implicit generic-async proxy fence that follows completion (A9), for
    # exactly the operations it completes.
    wait = b.new_event(ctx, "C", {"PF_ASYNC", "PF_TMAP"}, label=_label(i, "completion + implicit proxy fence"))
    covered = [e for group in done for op in group
               for e in (op.reads if read_only or not op.full else op.events)]
    b.pairs["acomp"].update((e, wait) for e in covered)
    from .lower_proxy import restrict
    restrict(b, wait, "events", tuple(covered))


def lower_cp(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = i.qualifiers
    if q[:2] != ("async", "bulk") or len(q) < 3:
        raise ctx.error(f"'{i.text}' is not supported by the model yet")
    ptx.validate(i)
    if q[2] == "commit_group":
        return lower_commit(b, ctx, i)
    if q[2] == "wait_group":
        return lower_wait(b, ctx, i)
    if q[2] == "tensor":
        return lower_tensor(b, ctx, i)
    return lower_bulk(b, ctx, i)


LOWER["cp"] = lower_cp

__all__ = ["BulkOp", "BulkState", "lower_cp"]
