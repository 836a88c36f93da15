"""Lowering of the asynchronous instructions and of what completes them (issues 3 and 4): cp.async
and its groups, cp{.reduce}.async.bulk{.tensor}, the bulk groups, mbarrier objects, the cluster
barrier, restricted fences, st.async, red.async and clusterlaunchcontrol.*. Registers itself into checker.lower's LOWER
and FENCE_VARIANTS on import. The model that gives the tags and relations made here their meaning
is the "Asynchronous operations", "mbarrier", "barrier.cluster", "Restricted fences" and
"Undefined behaviour" parts of axioms/ptx.cat.

PTX ISA 9.4: "Asynchronous Operations" (8.9.1.1), "Asynchronous copy" (completion mechanisms,
async proxy), cp.async*, cp{.reduce}.async.bulk*, mbarrier, barrier.cluster, membar/fence,
st.async, red.async; DESIGN A2, A6-A10 and section 3.

Asynchronous instructions (A8)
- An asynchronous instruction is an issue event (kind "I") in the thread's program order. Its
  memory operations belong to the thread but are NOT in program order; `aso` orders them after
  the issue event (so after every earlier instruction of the thread) and among themselves
  (tensor-map read, source reads, destination writes), and orders the issue before the
  instruction's completion signal (a complete-tx, an async arrive-on). Nothing orders them
  before later instructions of the thread.
- Data accesses: cp.async is a weak generic-proxy read of [src] and write of [dst]; a bulk copy
  a weak async-proxy read and write; a bulk reduction a weak async read of the source and an
  async-proxy RMW on the destination (.relaxed.gpu, atomic: ATOM/RED); st.async a weak generic
  write and red.async a .relaxed.cluster generic RMW into another CTA's shared memory. An
  abstract cell is 16 bytes (DESIGN section 2): a copy moves one cell, whatever its size.
- A tensor copy reads the tensor map (tensormap proxy) and then, for a load, every buffer of
  the map's table (async proxy): the destination receives the data of the buffer whose table
  value the map read returned, or -1 for a value outside the table. A tensor store or reduction
  reads its shared source and writes (reduces into) every buffer: the selected buffer gets the
  data, the others are rewritten with the value they had (a read then a write, an atomic RMW
  for a reduction). `tbuf` goes from the map read to these buffer accesses and `tsel` from each
  write of the map to the buffer accesses its value selects (all of them when the value is not
  a constant), so the model knows which buffer accesses really happen (the "in flight" check
  ignores the others).
- Performing CTA (A2): a write into another CTA's shared memory (a .shared::cluster copy, st.async,
  red.async, and the complete-tx on that CTA's mbarrier) is performed by the CTA that owns it
  (`pscta`); option strict-cta uses the issuing CTA throughout.
- .multicast::cluster (cp.async.bulk and cp.async.bulk.tensor loads into .shared::cluster,
  tcgen05.commit): ctaMask bit N names ctaN of the issuer's cluster (`cta_rank`); each named CTA
  receives the cell at the destination's offset in its shared memory (`offset_of`,
  `multicast_targets`): one async write per destination CTA, performed by that CTA (A2), each
  followed by its own complete-tx on the mbarrier at [mbar]'s offset in that CTA, which completes
  and releases the source (and tensor-map) reads and that write only, with the implicit proxy
  fence for them (A9). The source is read once.

clusterlaunchcontrol (PTX ISA 8.6, sm_100; "clusterlaunchcontrol.try_cancel / query_cancel")
- try_cancel is lowered like a bulk copy without a source: an issue event, a weak async-proxy
  write of the 16-byte response into [addr] (one cell) performed by the cell's CTA (A2) and
  followed by a complete-tx of 16 bytes (.release.cluster, ACOMPL) on [mbar]; with
  .multicast::cluster::all, one write and one complete-tx per CTA of the cluster, at the
  `offset_of` cells of [addr] and [mbar] there (every CTA of the test's cluster must have both).
  It joins no bulk group: only the mbarrier completes it. Reading the response before its
  completion is observed is undefined (ADST).
- Decision (A9 extended): the complete-tx carries the implicit generic-async proxy fence for the
  response write. The ISA states the implicit fence for bulk copies only, but its own try_cancel
  example reads the response with a generic ld.shared right after an .acquire try_wait and no
  proxy fence; without the implicit fence that read could be stale.
- Abstract response: the k-th try_cancel of the test (threads in order, then program order)
  writes the value k; a cell's earlier value (its init, 0 by default) is what a read sees if no
  response reached it. query_cancel is a register operation on a value loaded with
  ld.shared.b128: is_canceled = (value != 0); get_first_ctaid gives x = the value, y = z = 0.
  Not modelled: the undefined behaviour of get_first_ctaid on a failed response, and of a
  try_cancel issued after a failure was observed (success is not a modelled outcome).

Completion
- Groups: `cp.async.commit_group` / `cp.async.bulk.commit_group` close a per-thread group of the
  copies issued since the last commit (separate groups for cp.async and bulk copies);
  `wait_group N` is an event (kind "C") in program order that completes every group but the N
  most recent (groups complete in commit order; nothing orders the copies of one group);
  `acomp` goes from the completed memory operations to it. `cp.async.wait_all` is
  commit_group; wait_group 0. A bulk wait is the implicit generic-async proxy fence (A9): PF_ASYNC,
  PF_TMAP, `pfcover` = exactly what it completes; .read completes (and fences) the tensor-map and
  source reads only, and so does any bulk wait for copies that complete through an mbarrier:
  the cp.async.bulk{.tensor} completion-mechanism tables give mbarrier-based completion for the
  whole operation and say bulk async-group completion "optionally can be used for the completion
  of reading data from the source [and] from the tensormap" (commit_group's own text names only
  .bulk_group copies; the tables are the more specific statement, so an mbarrier copy joins the
  next bulk group for its reads; read the other way, a bulk wait would not cover it and reusing
  its source after that wait would be undefined).
  cp.async is generic, so its waits are no proxy fences.
- mbarrier: see "mbarrier objects" below. A bulk copy's (or st.async's, red.async's) complete-tx is
  an RMW on the mbarrier, not in program order, after the issue (`aso`), tagged ACOMPL: a release
  at .cluster scope of its own instruction's memory operations only (acomp from them to it), not
  of the issuing thread's earlier instructions (8.9.1.1). For a bulk copy it also carries the
  implicit generic-async proxy fence (A9): PF_ASYNC/PF_TMAP with `pfcover` = the instruction's
  operations, in the CTA of the mbarrier (A2: the destination CTA); being implicit, it orders all
  of them, also the source read the issuer's CTA performs (pfo in axioms/ptx.cat). cp.async.mbarrier.arrive
  performs, without .noinc, an increment of the pending count in program order, then an async
  arrive-on (ACOMPL, .release.cta) that acomp orders after every earlier cp.async of the thread.

mbarrier objects (A7)
- An mbarrier is its location; every operation on it is an RMW (a wait: a read) of one abstract
  value that packs the phase, the expected count, the pending count and the tx-count
  (`encode` below, radix 10^4, tx-count offset by 5000). Arrive-on (count), arrive_drop (also
  lowers the expected count), expect-tx, complete-tx and their combinations update it and, when
  the pending count and the tx-count are both 0, complete the phase (phase + 1, pending =
  expected). mbarrier.init writes the initial state (weak); mbarrier.inval writes 0; a
  `memory:` mbarrier starts initialised (its initial write is an init). Tags: MB on every one,
  MB_INIT, MB_INVAL; arrives are strong with their .sem/.scope (default .release.cta), expect_tx
  and complete_tx strong .relaxed, waits strong reads, .acquire (default) or .relaxed.
- A wait returns waitComplete = 1 when the phase it names has completed: with .parity P, when the
  current phase's parity is not P (P names the current phase or the one before it, which counts
  as complete on a fresh mbarrier); with a state token, when the current phase is past the
  token's. A wait must be awaited (`== 1` or `== 0`), as a spin-wait would be used: only an
  awaited `== 1` wait acquires; the await is a guard on its computed result (EventStructure.guards).
- mbarrier.pending_count gives the pending-count field of a state token.

barrier.cluster (A6): arrive and wait are events (kind "B") tagged CLU_ARRIVE / CLU_WAIT, strong
at .cluster scope, .release (default) or .relaxed, and .acquire; `clusterbar` goes from each
thread's k-th arrive to every other thread's k-th wait in its cluster. Every thread of a cluster
that uses barrier.cluster must arrive at each instance.

Restricted fences (A10): fence.{release,acquire}.sync_restrict::... and fence.mbarrier_init are
fences tagged RESTRICT whose `pfcover` is what they cover: the executing CTA's .shared::cta
cells, every .shared::cluster cell, or (fence.mbarrier_init, .op_restrict) the executing
thread's earlier mbarrier.init.

Undefined behaviour: memory operations are tagged ASRC (source and tensor-map reads: modifying
them in flight is undefined) and ADST (destination writes: reading them in flight is undefined);
`sgrp` pairs the destination writes of two cp.async committed in one group.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ptx
from .ast import Addr, Imm, Instr, Reg, Sink
from .lower import FENCE_VARIANTS, LOWER, SCOPES, Builder, ThreadCtx, _atom_value
from .model.values import Const, Expr, Ite, ReadVal, binop


@dataclass
class BulkOp:
    """One issued asynchronous copy: its memory operations, which of them are reads, and whether a
    wait_group completes all of them (group completion) or only its reads (mbarrier)."""

    events: list[int]
    reads: list[int]
    full: bool


@dataclass
class BulkState:
    """Per thread and per kind of group: copies issued since the last commit, and the committed
    groups in order."""

    uncommitted: list[BulkOp] = field(default_factory=list)
    groups: list[list[BulkOp]] = field(default_factory=list)
    every: list[BulkOp] = field(default_factory=list)     # every copy issued so far (cp.async.mbarrier.arrive)


def _state(ctx: ThreadCtx, kind: str = "bulk") -> BulkState:
    return ctx.ext.setdefault(kind, BulkState())


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


def _performed_by_owner(b: Builder, ctx: ThreadCtx, e: int, dst: Addr) -> None:
    """A2: an access to another CTA's shared memory is performed by the CTA owning it."""
    d = _decl(b, dst.base)
    if d.space == "shared" and d.owner.cta_key() != ctx.thread.position.cta_key():
        b.perf_cta[e] = d.owner.cta_key()


def _label(i: Instr, what: str) -> str:
    return f"{i.text}  [{what}]"


# -- mbarrier state --------------------------------------------------------------------------

# One 63-bit value per mbarrier state, fields from the low end: the tx-count (21 bits, stored offset
# by TX0: PTX's range is -(2^20-1)..2^20-1), the pending count and the expected count (17 bits
# each: up to 131071 arrivals), the phase (the top 8 bits: 255 phases). Values a test gives beyond
# these ranges are rejected when lowering (mb_range), so a field never carries into the next.
TX_BITS, COUNT_BITS = 21, 17
TX0 = 1 << (TX_BITS - 1)
PENDING = 1 << TX_BITS                    # the pending count's unit
EXPECTED = PENDING << COUNT_BITS          # the expected count's unit
PHASE = EXPECTED << COUNT_BITS            # the phase's unit
MAX_COUNT, MAX_TX = (1 << COUNT_BITS) - 1, TX0 - 1


def mb_range(ctx: ThreadCtx, what: str, n: int, limit: int) -> None:
    """A count or byte count the mbarrier model can hold, else a clear error."""
    if not 0 <= n <= limit:
        raise ctx.error(f"{what} {n}: ptxmc models mbarrier {what}s from 0 to {limit}")


def encode(phase, expected, pending, tx=0) -> Expr:
    """The abstract value of an mbarrier in this state (fields may be expressions)."""
    def e(x):
        return x if not isinstance(x, int) else Const(x)
    v = binop("mul", e(phase), Const(PHASE))
    v = binop("add", v, binop("mul", e(expected), Const(EXPECTED)))
    v = binop("add", v, binop("mul", e(pending), Const(PENDING)))
    return binop("add", v, binop("add", e(tx), Const(TX0)))


def phase_of(v: Expr) -> Expr:
    return binop("div", v, Const(PHASE))


def expected_of(v: Expr) -> Expr:
    return binop("mod", binop("div", v, Const(EXPECTED)), Const(1 << COUNT_BITS))


def pending_of(v: Expr) -> Expr:
    return binop("mod", binop("div", v, Const(PENDING)), Const(1 << COUNT_BITS))


def tx_of(v: Expr) -> Expr:
    return binop("sub", binop("mod", v, Const(PENDING)), Const(TX0))


def mb_update(v: Expr, arrive: Expr = Const(0), expect: Expr = Const(0), complete: Expr = Const(0),
              drop: Expr = Const(0)) -> Expr:
    """The state after expect-tx(expect), complete-tx(complete), arrive-on(arrive) and, for
    arrive_drop, lowering the expected count by `drop`; the phase completes when the pending
    count and the tx-count are both 0 (then phase + 1 and pending = expected)."""
    new_tx = binop("sub", binop("add", tx_of(v), expect), complete)
    new_pending = binop("sub", pending_of(v), arrive)
    new_expected = binop("sub", expected_of(v), drop)
    stay = binop("sub", binop("add", binop("add", v, expect), binop("mul", drop, Const(-EXPECTED))), complete)
    stay = binop("sub", stay, binop("mul", arrive, Const(PENDING)))
    done = encode(binop("add", phase_of(v), Const(1)), new_expected, new_expected, 0)
    return Ite("==", new_pending, Const(0), Ite("==", new_tx, Const(0), done, stay), stay)


def _mb_location(b: Builder, ctx: ThreadCtx, op) -> None:
    if not isinstance(op, Addr) or op.base not in b.roots:
        raise ctx.error("expected the mbarrier's address [mbar]")
    if _decl(b, op.base).space != "shared":
        raise ctx.error(f"an mbarrier lives in shared memory: '{op.base}' is global")


def _mb_rmw(b: Builder, ctx: ThreadCtx, op: Addr, rtags, wtags, update, in_po: bool = True,
            what: str = "") -> tuple[int, int]:
    """An RMW on the mbarrier at `op`: (read, write), the write storing update(value read)."""
    r = _read(b, ctx, set(rtags) | {"MB", "GEN"}, op, in_po=in_po, label=_label(ctx.instr, what) if what else "")
    w = b.write(ctx, set(wtags) | {"MB", "GEN"}, op, update(ReadVal(r)), in_po=in_po,
                label=_label(ctx.instr, what) if what else "")
    b.pairs["rmw"].add((r, w))
    return r, w


def _read(b: Builder, ctx: ThreadCtx, tags, op, in_po: bool = True, label: str = "") -> int:
    """A read event that is not itself awaited (an mbarrier's waits await a computed result)."""
    loc, vloc = b.location(ctx, op)
    eid = b.new_event(ctx, "R", set(tags) | b.mem_tags[op.base], loc=loc, vloc=vloc, label=label, in_po=in_po)
    b.rf_reads.append(eid)
    return eid


def _mb_count(b: Builder, ctx: ThreadCtx, op, what: str, limit: int) -> Expr:
    """The value of a count or byte-count operand, range-checked when it is known."""
    v = b.value(ctx, op)
    if isinstance(v, Const):
        mb_range(ctx, what, v.value, limit)
    return v


def _mb_sem_scope(i: Instr, q, default_sem: str) -> tuple[str, str]:
    return q.get("sem") or default_sem, q.get("scope") or "cta"


def lower_mbarrier(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = ptx.validate(i)
    kind = i.qualifiers[0]
    ops = i.operands
    if kind == "pending_count":
        state = b.value(ctx, ops[1])
        b.set_reg(ctx, ops[0], pending_of(state))
        return
    mb = ops[1] if kind in ("arrive", "arrive_drop", "test_wait", "try_wait") else ops[0]
    _mb_location(b, ctx, mb)
    if kind == "init":
        n = _mb_count(b, ctx, ops[1], "arrival count", MAX_COUNT)
        w = b.write(ctx, {"WEAK", "GEN", "MB", "MB_INIT"}, mb, encode(0, n, n, 0))
        ctx.ext.setdefault("mbinit", []).append(w)
        _mb_objects(b).add(b.roots[mb.base])
        return
    _mb_objects(b).add(b.roots[mb.base])
    if kind == "inval":
        b.write(ctx, {"WEAK", "GEN", "MB", "MB_INVAL"}, mb, Const(0))
        return
    if kind in ("arrive", "arrive_drop"):
        sem, scope = _mb_sem_scope(i, q, "release")
        strong = {"STRONG", SCOPES[scope]}
        rtags = strong | ({"RLX"} if sem == "relaxed" else set())
        wtags = strong | ({"RLX"} if sem == "relaxed" else {"REL"})
        if q["expect_tx"]:
            tx, count = _mb_count(b, ctx, ops[2], "tx-count", MAX_TX), Const(1)
        else:
            tx, count = Const(0), (_mb_count(b, ctx, ops[2], "arrival count", MAX_COUNT) if len(ops) > 2 else Const(1))
        drop = count if kind == "arrive_drop" else Const(0)
        r, _ = _mb_rmw(b, ctx, mb, rtags, wtags, lambda v: mb_update(v, arrive=count, expect=tx, drop=drop))
        if not isinstance(ops[0], Sink):
            b.set_reg(ctx, ops[0], ReadVal(r))
        return
    if kind in ("expect_tx", "complete_tx"):
        _, scope = _mb_sem_scope(i, q, "relaxed")
        tags = {"STRONG", "RLX", SCOPES[scope]}
        n = _mb_count(b, ctx, ops[1], "tx-count", MAX_TX)
        upd = (lambda v: mb_update(v, expect=n)) if kind == "expect_tx" else (lambda v: mb_update(v, complete=n))
        _mb_rmw(b, ctx, mb, tags, tags, upd)
        return
    # test_wait / try_wait
    sem, scope = _mb_sem_scope(i, q, "acquire")
    if i.await_value is None:
        raise ctx.error(f"ptxmc models an mbarrier wait as a spin-wait: end it with '== 1' (until the phase "
                        f"completes) or '== 0' (an observation that it has not), e.g. '{i.text} == 1'")
    acquires = sem == "acquire" and i.await_value == 1
    tags = {"STRONG", SCOPES[scope], "MB", "GEN"} | ({"ACQ"} if acquires else {"RLX"})
    r = _read(b, ctx, tags, mb)
    v = ReadVal(r)
    target = b.value(ctx, ops[2])
    if q["parity"]:
        done: Expr = Ite("!=", binop("mod", phase_of(v), Const(2)), binop("mod", target, Const(2)), Const(1), Const(0))
    else:
        done = Ite(">", phase_of(v), phase_of(target), Const(1), Const(0))
    b.set_reg(ctx, ops[0], done)
    b.guards.append((done, i.await_value))
    ctx.awaited.append(r)


def _mb_objects(b: Builder) -> set:
    """Locations used as mbarriers (the initial write of a pre-initialised one gets its state)."""
    objs = b.ext.get("mbobjects")
    if objs is None:
        objs = b.ext["mbobjects"] = set()
        b.finalizers.append(_preinitialised)
    return objs


def _preinitialised(b: Builder) -> None:
    """A `memory:` mbarrier starts initialised: its initial write is an mbarrier.init."""
    for m in b.test.memory:
        if m.mbarrier and m.name in b.init_of:
            eid = b.init_of[m.name]
            ev = b.events[eid]
            b.events[eid] = type(ev)(ev.eid, ev.thread, ev.kind, ev.tags | {"MB", "MB_INIT"}, ev.loc, ev.vloc,
                                     f"init {m.name}: mbarrier, count {m.mbarrier['count']}", ev.index)
            n = m.mbarrier["count"]
            b.write_value[eid] = encode(0, n, n, 0)


def _complete_tx(b: Builder, ctx: ThreadCtx, i: Instr, issue: int, mbar: Addr, nbytes: int, ops: list[int],
                 proxy_fence: bool) -> None:
    """The complete-tx of an asynchronous instruction: an RMW on the mbarrier, after the issue,
    completing (acomp) and releasing (ACOMPL, .release.cluster) the instruction's operations only;
    for a bulk copy also the implicit generic-async proxy fence (A9) covering them."""
    _mb_objects(b).add(b.roots[mbar.base])
    tags = {"STRONG", "CLUSTER", "ACOMPL"}
    wtags = tags | {"REL"} | ({"PF_ASYNC", "PF_TMAP"} if proxy_fence else set())
    mb_range(ctx, "tx-count", nbytes, MAX_TX)
    r, w = _mb_rmw(b, ctx, mbar, tags, wtags, lambda v: mb_update(v, complete=Const(nbytes)), in_po=False,
                   what=f"complete-tx {nbytes} on {mbar.base}" + (" + implicit proxy fence" if proxy_fence else ""))
    for e in (r, w):
        _performed_by_owner(b, ctx, e, mbar)
    b.pairs["aso"].update({(issue, r), (issue, w)})
    b.pairs["acomp"].update((e, w) for e in ops)
    if proxy_fence:
        from .lower_proxy import restrict
        restrict(b, w, "events", tuple(ops))


# -- bulk copies --------------------------------------------------------------------------------

CELL = 16       # bytes in an abstract cell (DESIGN section 2)


def lower_bulk(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cp.async.bulk: a weak async read of [src] (once), then a weak async write of the copied
    value into [dst] -- with .multicast::cluster into the cell at [dst]'s offset in each CTA of
    ctaMask -- each write followed by its own complete-tx (the copy's size) on the mbarrier at
    [mbar]'s offset in the write's CTA, which completes and releases the source read and that write
    and carries the implicit proxy fence for them (A9); each write and complete-tx is performed by
    its destination CTA (A2)."""
    from .ptx_async import BULK_DIRECTIONS, cta_mask

    dst_space, src_space = i.qualifiers[2], i.qualifiers[3]
    mbar = BULK_DIRECTIONS[(dst_space, src_space)]
    dst, src = i.operands[0], i.operands[1]
    remote = (dst_space, src_space) == ("shared::cluster", "shared::cta")
    _check_space(b, ctx, dst, "remote" if remote else dst_space, "destination")
    _check_space(b, ctx, src, src_space, "source")
    if mbar:
        _check_space(b, ctx, i.operands[3], "shared::cluster", "mbarrier")
    targets = multicast_targets(b, ctx, cta_mask(i, ptx.validate(i)), dst, *i.operands[3:4 if mbar else 3])
    issue = _issue(b, ctx, i)
    r = b.read(ctx, {"ASYNC", "WEAK", "ASRC"}, src, in_po=False, label=_label(i, f"async read {src.base}"))
    writes = []
    for d, *mb in targets:
        w = b.write(ctx, {"ASYNC", "WEAK", "ADST"}, d, ReadVal(r), in_po=False, label=_label(i, f"async write {d.base}"))
        _performed_by_owner(b, ctx, w, d)
        writes.append(w)
        if mbar:
            _complete_tx(b, ctx, i, issue, mb[0], i.operands[2].value, [r, w], proxy_fence=True)
    _order(b, issue, [r], writes)
    _state(ctx).uncommitted.append(BulkOp([r, *writes], [r], full=not mbar))


# -- .multicast::cluster ---------------------------------------------------------------------------

def cta_rank(pos) -> int:
    """A CTA's rank in its cluster (%cluster_ctarank, the bit of a ctaMask that names it): the N of
    gpuG.clusterK.ctaN; 0 in a launch without clusters (every CTA is a cluster of one)."""
    return pos.cta if pos.cluster is not None else 0


def _cta_text(key: tuple) -> str:
    g, cl, cta = key
    return f"gpu{g}" + (f".cluster{cl}" if cl is not None else "") + f".cta{cta}"


def cell_at_offset(b: Builder, name: str, cta: tuple) -> str | None:
    """The shared cell at the same CTA-relative offset as `name` in CTA `cta` (DESIGN section 2,
    offset_of), or None."""
    d = _decl(b, name)
    first = d.offset_of or d.name
    for m in b.test.memory:
        if (m.name == first or m.offset_of == first) and m.owner is not None and m.owner.cta_key() == cta:
            return m.name
    return None


def _cluster_ctas(b: Builder, here) -> list[tuple]:
    """The CTAs of `here`'s cluster that the test names (threads and shared-memory owners)."""
    ctas = {t.position.cta_key() for t in b.test.threads} | \
        {m.owner.cta_key() for m in b.test.memory if m.owner is not None}
    return sorted(k for k in ctas if k[:2] == here.cluster_key()[:2])


def _cells_in(b: Builder, ctx: ThreadCtx, cta: tuple, ops, who: str) -> tuple[Addr, ...]:
    """The cells at the offsets of `ops` in CTA `cta`; for a missing one the error "`who` has no
    cell at the offset of ..." (`who` names the CTA and why it is reached)."""
    cells = []
    for op in ops:
        cell = cell_at_offset(b, op.base, cta)
        if cell is None:
            first = _decl(b, op.base).offset_of or op.base
            raise ctx.error(f"{who} has no cell at the offset of '{op.base}': declare one, e.g. NAME: "
                            f"{{space: shared, owner: {_cta_text(cta)}, offset_of: {first}}}")
        cells.append(Addr(cell, op.offset))
    return tuple(cells)


def multicast_targets(b: Builder, ctx: ThreadCtx, mask: int | None, *ops: Addr) -> list[tuple[Addr, ...]]:
    """For each CTA that ctaMask names (by rank), the cells at the offsets of `ops` in that CTA;
    without a mask (no .multicast::cluster), [ops]. Bit N names ctaN of the issuer's cluster."""
    if mask is None:
        return [tuple(ops)]
    here = ctx.thread.position
    spelled = f"0b{mask:b}"
    ours = _cluster_ctas(b, here) if here.cluster is not None else []
    named = []
    for rank in (n for n in range(16) if mask >> n & 1):
        if here.cluster is None:
            if rank:
                raise ctx.error(f"ctaMask {spelled} names CTA {rank} of the cluster, but in a launch without "
                                "clusters every CTA is a cluster of one: only bit 0 (the executing CTA) names a CTA")
            named.append((rank, here.cta_key()))
            continue
        cta = (here.gpu, here.cluster, rank)
        if cta not in ours:
            raise ctx.error(f"ctaMask {spelled} names {_cta_text(cta)} (bit {rank}), which is not a CTA of "
                            f"this test's cluster (its CTAs: {', '.join(f'cta{k[2]}' for k in ours)})")
        named.append((rank, cta))
    return [_cells_in(b, ctx, cta, ops, f"ctaMask {spelled} names {_cta_text(cta)} (bit {rank}), which")
            for rank, cta in named]


def lower_reduce(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cp.reduce.async.bulk: a weak async read of the source, then an element-wise .relaxed.gpu
    reduction into the destination: an atomic async-proxy RMW on the cell."""
    from .ptx_async import REDUCE_DIRECTIONS

    q = ptx.validate(i)
    dst_space, src_space = i.qualifiers[3], i.qualifiers[4]
    mbar = REDUCE_DIRECTIONS[(dst_space, src_space)]
    dst, src = i.operands[0], i.operands[1]
    _check_space(b, ctx, dst, "remote" if mbar else "global", "destination")
    _check_space(b, ctx, src, "shared::cta", "source")
    if mbar:
        _check_space(b, ctx, i.operands[3], "shared::cluster", "mbarrier")
    issue = _issue(b, ctx, i)
    rs = b.read(ctx, {"ASYNC", "WEAK", "ASRC"}, src, in_po=False, label=_label(i, f"async read {src.base}"))
    rd, wd = _reduction(b, ctx, i, q["op"], dst, ReadVal(rs))
    _order(b, issue, [rs], [rd], [wd])
    _state(ctx).uncommitted.append(BulkOp([rs, rd, wd], [rs], full=not mbar))
    if mbar:
        _complete_tx(b, ctx, i, issue, i.operands[3], i.operands[2].value, [rs, rd, wd], proxy_fence=True)


def _reduction(b: Builder, ctx: ThreadCtx, i: Instr, op: str, dst: Addr, x: Expr, keep=None) -> tuple[int, int]:
    """The async-proxy .relaxed.gpu RMW of a bulk reduction on `dst` with operand x (`keep`: a
    condition (a, b) under which the cell is reduced; otherwise it keeps its value)."""
    tags = {"ASYNC", "STRONG", "RLX", "GPU", "ATOM", "RED"}
    rd = b.read(ctx, tags, dst, in_po=False, label=_label(i, f"async reduce {dst.base}: read"))
    new = _atom_value(op, ReadVal(rd), [x])
    if keep is not None:
        new = Ite("==", keep[0], keep[1], new, ReadVal(rd))
    wd = b.write(ctx, tags | {"ADST"}, dst, new, in_po=False, label=_label(i, f"async reduce {dst.base}: write"))
    b.pairs["rmw"].add((rd, wd))
    for e in (rd, wd):
        _performed_by_owner(b, ctx, e, dst)
    return rd, wd


def _tensor_map(b: Builder, ctx: ThreadCtx, taddr: Addr):
    if taddr.base not in b.roots:
        raise ctx.error(f"unknown location '{taddr.base}'")
    decl = _decl(b, taddr.base)
    if not decl.tensormap:
        raise ctx.error(f"'{taddr.base}' is not a tensor map: declare it with the buffers its values "
                        f"select, e.g. {taddr.base}: {{tensormap: {{0: gA, 1: gB}}, init: 0}}")
    return decl


def _buffers(b: Builder, t: int, per_index: dict[int, list[int]], decl) -> None:
    """tbuf from the map read t to the buffer accesses; tsel is computed once every write of the
    map exists (_select)."""
    todo = b.ext.setdefault("tensor", [])
    if not todo:
        b.finalizers.append(_select)
    for evs in per_index.values():
        b.pairs["tbuf"].update((t, e) for e in evs)
    todo.append((b.events[t].loc, per_index))


def _select(b: Builder) -> None:
    """tsel: from each write of a tensor map to the buffer accesses its value selects; a value that
    is not a constant may select any buffer."""
    for loc, per_index in b.ext["tensor"]:
        for w in b.events:
            if w.kind != "W" or w.loc != loc:
                continue
            v = b.write_value[w.eid]
            picked = [per_index.get(v.value, [])] if isinstance(v, Const) else list(per_index.values())
            b.pairs["tsel"].update((w.eid, e) for evs in picked for e in evs)


def lower_tensor(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    dst_space = i.qualifiers[4]          # cp.async.bulk.tensor.Nd.dst.src...
    from .ptx_async import cta_mask

    dst, taddr, mb = i.operands[0], i.operands[1], i.operands[2]
    _check_space(b, ctx, dst, dst_space, "destination")
    _check_space(b, ctx, mb, "shared::cluster", "mbarrier")
    decl = _tensor_map(b, ctx, taddr)
    targets = multicast_targets(b, ctx, cta_mask(i, ptx.validate(i)), dst, mb)
    issue = _issue(b, ctx, i)
    t = b.read(ctx, {"TMAP", "WEAK", "ASRC"}, Addr(taddr.base), in_po=False,
               label=_label(i, f"tensormap read {taddr.base}"))
    reads = {}
    for k, buf in sorted(decl.tensormap.items()):
        reads[k] = b.read(ctx, {"ASYNC", "WEAK", "ASRC"}, Addr(buf), in_po=False,
                          label=_label(i, f"async read {buf} (if {taddr.base}={k})"))
    value: Expr = Const(-1)
    for k, r in sorted(reads.items(), reverse=True):
        value = Ite("==", ReadVal(t), Const(k), ReadVal(r), value)
    writes = []
    for d, m in targets:        # .multicast::cluster: one write and complete-tx per destination CTA
        w = b.write(ctx, {"ASYNC", "WEAK", "ADST"}, d, value, in_po=False, label=_label(i, f"async write {d.base}"))
        _performed_by_owner(b, ctx, w, d)
        writes.append(w)
        _complete_tx(b, ctx, i, issue, m, CELL, [t, *reads.values(), w], proxy_fence=True)
    _order(b, issue, [t], list(reads.values()), writes)
    _buffers(b, t, {k: [r] for k, r in reads.items()}, decl)
    _state(ctx).uncommitted.append(BulkOp([t, *reads.values(), *writes], [t, *reads.values()], full=False))


def lower_tensor_store(b: Builder, ctx: ThreadCtx, i: Instr, op: str | None = None) -> None:
    """A tensor store (op None) or reduction (op: the .redOp) from [src] through the tensor map:
    every buffer of the map's table is accessed, and only the one the map's value selects changes."""
    taddr, src = i.operands[0], i.operands[1]
    _check_space(b, ctx, src, "shared::cta", "source")
    decl = _tensor_map(b, ctx, taddr)
    issue = _issue(b, ctx, i)
    t = b.read(ctx, {"TMAP", "WEAK", "ASRC"}, Addr(taddr.base), in_po=False,
               label=_label(i, f"tensormap read {taddr.base}"))
    rs = b.read(ctx, {"ASYNC", "WEAK", "ASRC"}, src, in_po=False, label=_label(i, f"async read {src.base}"))
    per_index, firsts, lasts = {}, [], []
    for k, buf in sorted(decl.tensormap.items()):
        if op is None:
            old = b.read(ctx, {"ASYNC", "WEAK"}, Addr(buf), in_po=False,
                         label=_label(i, f"async read {buf} (kept unless {taddr.base}={k})"))
            new = Ite("==", ReadVal(t), Const(k), ReadVal(rs), ReadVal(old))
            w = b.write(ctx, {"ASYNC", "WEAK", "ADST"}, Addr(buf), new, in_po=False,
                        label=_label(i, f"async write {buf} (if {taddr.base}={k})"))
        else:
            old, w = _reduction(b, ctx, i, op, Addr(buf), ReadVal(rs), keep=(ReadVal(t), Const(k)))
        per_index[k] = [old, w]
        firsts.append(old)
        lasts.append(w)
    _order(b, issue, [t], [rs], firsts, lasts)
    _buffers(b, t, per_index, decl)
    ops = [t, rs, *firsts, *lasts]
    _state(ctx).uncommitted.append(BulkOp(ops, [t, rs], full=True))


def lower_commit(b: Builder, ctx: ThreadCtx, i: Instr, kind: str = "bulk") -> None:
    st = _state(ctx, kind)
    st.groups.append(st.uncommitted)
    if kind == "cpasync":
        writes = [e for op in st.uncommitted for e in op.events if b.events[e].kind == "W"]
        b.pairs["sgrp"].update((a, c) for a in writes for c in writes if a != c)
    st.uncommitted = []


def lower_wait(b: Builder, ctx: ThreadCtx, i: Instr, kind: str = "bulk") -> None:
    st = _state(ctx, kind)
    n = i.operands[0].value if i.operands else 0
    if n < 0:
        raise ctx.error("wait_group takes a non-negative count")
    read_only = i.has("read")
    done = st.groups[:max(0, len(st.groups) - n)]
    covered = [e for group in done for op in group
               for e in (op.reads if read_only or not op.full else op.events)]
    if kind == "cpasync":
        # cp.async is a generic-proxy copy: its wait is no proxy fence
        wait = b.new_event(ctx, "C", set(), label=_label(i, "completion"))
        b.pairs["acomp"].update((e, wait) for e in covered)
        return
    # The wait: the implicit generic-async proxy fence that follows completion (A9), for
    # exactly the operations it completes.
    wait = b.new_event(ctx, "C", {"PF_ASYNC", "PF_TMAP"}, label=_label(i, "completion + implicit proxy fence"))
    b.pairs["acomp"].update((e, wait) for e in covered)
    b.pairs["mbgroup"].update((e, wait) for group in done for op in group if not op.full for e in op.reads)
    from .lower_proxy import restrict
    restrict(b, wait, "events", tuple(covered))


# -- cp.async (non-bulk) -------------------------------------------------------------------------

def lower_cp_async(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cp.async: a weak generic read of [src] and write of [dst], after the issue, in the thread's
    current cp.async group. src-size (an integer): 0 writes zeros without reading (another value
    copies the cell: cells do not split); ignore-src (a predicate): zeros when it is true."""
    q = ptx.validate(i)
    dst, src = i.operands[0], i.operands[1]
    _check_space(b, ctx, dst, "shared::cta", "destination")
    _check_space(b, ctx, src, "global", "source")
    extra = i.operands[3] if len(i.operands) > 3 + bool(q["hint"]) else None
    issue = _issue(b, ctx, i)
    if isinstance(extra, Imm) and extra.value == 0:
        ops = []
        value: Expr = Const(0)
    else:
        r = b.read(ctx, {"GEN", "WEAK", "ASRC"}, src, in_po=False, label=_label(i, f"async read {src.base}"))
        ops, value = [r], ReadVal(r)
        if isinstance(extra, Reg):
            cond = b.value(ctx, Reg(extra.name.lstrip("!")))
            value = Ite("==", cond, Const(0), value, Const(0)) if not extra.name.startswith("!") else \
                Ite("==", cond, Const(0), Const(0), value)
    w = b.write(ctx, {"GEN", "WEAK", "ADST"}, dst, value, in_po=False, label=_label(i, f"async write {dst.base}"))
    _order(b, issue, ops, [w])
    op = BulkOp(ops + [w], ops, full=True)
    st = _state(ctx, "cpasync")
    st.uncommitted.append(op)
    st.every.append(op)


def lower_cp_async_arrive(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cp.async.mbarrier.arrive{.noinc}: without .noinc, the pending count is raised by one now (an
    RMW in program order); then an async arrive-on, ordered after every earlier cp.async of the
    thread and after nothing else, releases them (ACOMPL, .release.cta)."""
    ptx.validate(i)
    mb = i.operands[0]
    _mb_location(b, ctx, mb)
    _check_space(b, ctx, mb, "shared::cta", "mbarrier")
    _mb_objects(b).add(b.roots[mb.base])
    if i.has("noinc"):
        first = _issue(b, ctx, i)
        after = [first]
    else:
        r0, w0 = _mb_rmw(b, ctx, mb, {"STRONG", "RLX", "CTA"}, {"STRONG", "RLX", "CTA"},
                         lambda v: mb_update(v, arrive=Const(-1)), what="pending count + 1")
        after = [r0, w0]
    tags = {"STRONG", "CTA", "ACOMPL"}
    r, w = _mb_rmw(b, ctx, mb, tags, tags | {"REL"}, lambda v: mb_update(v, arrive=Const(1)), in_po=False,
                   what="async arrive-on")
    b.pairs["aso"].update((a, e) for a in after for e in (r, w))
    b.pairs["acomp"].update((e, w) for op in _state(ctx, "cpasync").every for e in op.events)


def lower_cp(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = i.qualifiers
    if q[:1] == ("reduce",):
        if "tensor" in q:
            ptx.validate(i)
            return lower_tensor_store(b, ctx, i, op=i.pick(("add", "inc", "dec", "min", "max", "and", "or", "xor")))
        return lower_reduce(b, ctx, i)
    if q[:1] != ("async",) or len(q) < 2:
        raise ctx.error(f"'{i.text}' is not supported by the model yet")
    if q[1] != "bulk":
        ptx.validate(i)
        if q[1] == "commit_group":
            return lower_commit(b, ctx, i, "cpasync")
        if q[1] == "wait_group":
            return lower_wait(b, ctx, i, "cpasync")
        if q[1] == "wait_all":
            lower_commit(b, ctx, i, "cpasync")
            return lower_wait(b, ctx, i, "cpasync")
        if q[1] == "mbarrier":
            return lower_cp_async_arrive(b, ctx, i)
        return lower_cp_async(b, ctx, i)
    if len(q) < 3:
        raise ctx.error(f"'{i.text}' is not supported by the model yet")
    ptx.validate(i)
    if q[2] == "commit_group":
        return lower_commit(b, ctx, i)
    if q[2] == "wait_group":
        return lower_wait(b, ctx, i)
    if q[2] == "prefetch":
        return None          # a cache hint: no memory effect (DESIGN: prefetches are not accesses)
    if q[2] == "tensor":
        if q[4] == "global":
            return lower_tensor_store(b, ctx, i)
        return lower_tensor(b, ctx, i)
    return lower_bulk(b, ctx, i)


# -- st.async / red.async ------------------------------------------------------------------------

def lower_async_store(b: Builder, ctx: ThreadCtx, i: Instr, rmw: bool) -> None:
    """st.async / red.async: an asynchronous generic write (red.async: an atomic RMW) that is not in
    program order, after its issue; with an mbarrier, into another CTA's shared memory with a
    complete-tx of the bytes written (.release.cluster for its own write only, A7); without, a
    .release store / reduction to global memory at .gpu or .sys."""
    from .ptx_async import TYPE_BYTES

    q = ptx.validate(i)
    dst, val = i.operands[0], b.value(ctx, i.operands[1])
    mbar = i.operands[2] if q["completion"] else None
    if mbar is not None:
        _check_space(b, ctx, dst, "remote", "destination")
        _check_space(b, ctx, mbar, "shared::cluster", "mbarrier")
        if _decl(b, mbar.base).owner.cta_key() != _decl(b, dst.base).owner.cta_key():
            raise ctx.error(f"the mbarrier '{mbar.base}' must be in the CTA of the destination '{dst.base}'")
        strength = {"STRONG", "RLX", "CLUSTER"} if rmw else {"WEAK"}
    else:
        _check_space(b, ctx, dst, "global", "destination")
        strength = {"STRONG", "REL", SCOPES[q["scope"]]} | ({"MMIO", "RLX"} if q["mmio"] else set())
    issue = _issue(b, ctx, i)
    ops = []
    if rmw:
        base = (strength - {"REL"}) | {"GEN", "ATOM", "RED"}
        r = b.read(ctx, base, dst, in_po=False, label=_label(i, f"async reduce {dst.base}: read"))
        w = b.write(ctx, base | strength | ({"ADST"} if mbar is not None else set()), dst,
                    _atom_value(q["op"], ReadVal(r), [val]), in_po=False,
                    label=_label(i, f"async reduce {dst.base}: write"))
        b.pairs["rmw"].add((r, w))
        ops = [r, w]
    else:
        w = b.write(ctx, strength | {"GEN"} | ({"ADST"} if mbar is not None else set()), dst, val, in_po=False,
                    label=_label(i, f"async write {dst.base}"))
        ops = [w]
    for e in ops:
        _performed_by_owner(b, ctx, e, dst)
    _order(b, issue, *([e] for e in ops))
    if mbar is not None:
        _complete_tx(b, ctx, i, issue, mbar, TYPE_BYTES[q["type"]], ops, proxy_fence=False)


# -- clusterlaunchcontrol (PTX ISA 8.6, sm_100) --------------------------------------------------

def lower_try_cancel(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """clusterlaunchcontrol.try_cancel: an issue event, then a weak async-proxy write of the
    response into [addr] -- with .multicast::cluster::all into the cell at [addr]'s offset in every
    CTA of the cluster -- each performed by its CTA (A2) and followed by its own complete-tx (16
    bytes, .release.cluster) on the mbarrier at [mbar]'s offset there, which completes that write
    and carries the implicit generic-async proxy fence for it (see the module docstring). The k-th
    try_cancel of the test (threads in order, then program order) writes the response value k."""
    q = ptx.validate(i)
    addr, mbar = i.operands
    _check_space(b, ctx, addr, "shared::cta", "response")
    _check_space(b, ctx, mbar, "shared::cta", "mbarrier")
    k = b.ext["clc"] = b.ext.get("clc", 0) + 1
    targets = _cluster_targets(b, ctx, addr, mbar) if q["multicast"] else [(addr, mbar)]
    issue = _issue(b, ctx, i)
    writes = []
    for d, mb in targets:
        w = b.write(ctx, {"ASYNC", "WEAK", "ADST"}, d, Const(k), in_po=False,
                    label=_label(i, f"async write {d.base} (response {k})"))
        _performed_by_owner(b, ctx, w, d)
        writes.append(w)
        _complete_tx(b, ctx, i, issue, mb, CELL, [w], proxy_fence=True)
    _order(b, issue, writes)


def _cluster_targets(b: Builder, ctx: ThreadCtx, *ops: Addr) -> list[tuple[Addr, ...]]:
    """.multicast::cluster::all: the cells at the offsets of `ops` in every CTA of the executing
    thread's cluster (the CTAs the test names: threads and shared-memory owners); a CTA without
    one is an error. In a launch without clusters the cluster is the executing CTA alone."""
    here = ctx.thread.position
    ours = [here.cta_key()] if here.cluster is None else _cluster_ctas(b, here)
    return [_cells_in(b, ctx, cta, ops, f".multicast::cluster::all reaches every CTA of the cluster, but "
                                        f"{_cta_text(cta)}") for cta in ours]


def lower_query_cancel(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """clusterlaunchcontrol.query_cancel: a register operation on the response value (no memory
    access). is_canceled: 1 when the value is a response (non-zero), else 0. get_first_ctaid: the
    response value k is the x coordinate of the canceled cluster's first CTA, y and z are 0 (and
    the unspecified 4th element of .v4 too)."""
    q = ptx.validate(i)
    dst, handle = i.operands
    v = b.value(ctx, handle)
    what = q["query"]
    if what == "is_canceled":
        b.set_reg(ctx, dst, Ite("==", v, Const(0), Const(0), Const(1)))
    elif what == "get_first_ctaid":
        for n, item in enumerate(dst.items):
            b.set_reg(ctx, item, v if n == 0 else Const(0))
    else:
        b.set_reg(ctx, dst, v if what.endswith("::x") else Const(0))


def lower_clusterlaunchcontrol(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    ptx.validate(i)
    if i.qualifiers[0] == "try_cancel":
        return lower_try_cancel(b, ctx, i)
    return lower_query_cancel(b, ctx, i)


def _wrap(op: str, pred, fn) -> None:
    plain = LOWER[op]

    def lower(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
        return fn(b, ctx, i) if pred(i) else plain(b, ctx, i)
    LOWER[op] = lower


# -- barrier.cluster (A6) --------------------------------------------------------------------------

def lower_cluster_barrier(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = ptx.validate(i)
    base = {"STRONG", "GEN", "CLUSTER"}
    if q["mode"] == "arrive":
        e = b.new_event(ctx, "B", base | {"CLU_ARRIVE"} | ({"RLX"} if q["sem"] == "relaxed" else {"REL"}))
    else:
        e = b.new_event(ctx, "B", base | {"CLU_WAIT", "ACQ"})
    todo = b.ext.setdefault("cluster_barriers", {})
    if not todo:
        b.finalizers.append(_match_cluster_barriers)
    todo.setdefault(ctx.thread.name, []).append((q["mode"], e, i))


def _match_cluster_barriers(b: Builder) -> None:
    """The k-th arrive of every participating thread of a cluster meets the k-th waits."""
    from .errors import LitmusError

    per_thread = b.ext["cluster_barriers"]
    clusters: dict[tuple, list[str]] = {}
    for t in b.test.threads:
        if t.name in per_thread:
            clusters.setdefault(t.position.cluster_key(), []).append(t.name)
    for key, names in clusters.items():
        arrives = {t: [e for m, e, _ in per_thread[t] if m == "arrive"] for t in names}
        waits = {t: [e for m, e, _ in per_thread[t] if m == "wait"] for t in names}
        counts = {t: len(a) for t, a in arrives.items()}
        if len(set(counts.values())) > 1:
            who = ", ".join(f"{t} {n}" for t, n in counts.items())
            raise LitmusError(f"barrier.cluster: every thread of the cluster that takes part arrives at each "
                              f"cluster barrier, but the arrivals differ ({who}): it would never complete",
                              per_thread[names[0]][0][2].where)
        for t in names:
            seen = 0
            for m, e, instr in per_thread[t]:
                seen += m == "arrive"
                if m == "wait" and seen <= waits[t].index(e):
                    raise LitmusError("barrier.cluster.wait without an earlier barrier.cluster.arrive of this "
                                      "thread: it would never complete", instr.where)
        for t in names:
            for u in names:
                if t != u:
                    for k, a in enumerate(arrives[t]):
                        if k < len(waits[u]):
                            b.pairs["clusterbar"].add((a, waits[u][k]))


# -- restricted fences (A10) -----------------------------------------------------------------------

def lower_restricted_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """fence.release.sync_restrict::shared::cta.cluster / fence.acquire.sync_restrict::shared::cluster
    .cluster: a release (acquire) fence whose effect is restricted to the operations on the
    executing CTA's .shared::cta cells (every .shared::cluster cell)."""
    from .lower_proxy import restrict

    q = ptx.validate(i)
    f = b.new_event(ctx, "F", {"STRONG", "GEN", "CLUSTER", "RESTRICT", "REL" if q["sem"] == "release" else "ACQ"})
    restrict(b, f, "space", q["restrict"].split("::", 1)[1])


def lower_mbarrier_init_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """fence.mbarrier_init.release.cluster: a release fence at .cluster scope restricted
    (.op_restrict) to the executing thread's earlier mbarrier.init operations."""
    from .lower_proxy import restrict

    ptx.validate(i)
    f = b.new_event(ctx, "F", {"STRONG", "GEN", "CLUSTER", "RESTRICT", "REL"})
    restrict(b, f, "events", tuple(ctx.ext.get("mbinit", ())))


LOWER["cp"] = lower_cp
LOWER["mbarrier"] = lower_mbarrier
LOWER["clusterlaunchcontrol"] = lower_clusterlaunchcontrol
_wrap("st", lambda i: i.has("async"), lambda b, ctx, i: lower_async_store(b, ctx, i, rmw=False))
_wrap("red", lambda i: i.has("async"), lambda b, ctx, i: lower_async_store(b, ctx, i, rmw=True))
_wrap("barrier", lambda i: i.qualifiers[:1] == ("cluster",), lower_cluster_barrier)
FENCE_VARIANTS["sync_restrict"] = lower_restricted_fence
FENCE_VARIANTS["mbarrier_init"] = lower_mbarrier_init_fence

__all__ = ["BulkOp", "BulkState", "encode", "lower_cp", "lower_mbarrier", "mb_update"]
