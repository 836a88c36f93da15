"""mbarrier objects and the synchronization around them: mbarrier.* (init, inval, arrive,
arrive_drop, expect_tx, complete_tx, test_wait, try_wait, pending_count), fence.mbarrier_init,
and the cluster barrier barrier.cluster.arrive / .wait. The asynchronous instructions complete
through the public helpers here (complete_tx, arrive_on). The model that gives the tags meaning
is the "mbarrier" and "barrier.cluster" parts of axioms/ptx.cat.

PTX ISA 9.4, "Parallel Synchronization and Communication Instructions: mbarrier" and
"barrier.cluster"; "membar/fence" (fence.mbarrier_init); decisions A6, A7, A10 (docs/model.md).

    mbarrier.init{.shared{::cta}}.b64 [mbar], count          mbarrier.inval{.shared{::cta}}.b64 [mbar]
    mbarrier.arrive{.expect_tx}{.release|.relaxed}{.cta|.cluster}{.shared{::cta}}.b64 state, [mbar]{, count | txCount}
    mbarrier.arrive{.expect_tx}{.sem}{.scope}.shared::cluster.b64 _, [mbar]{, count | txCount}
    mbarrier.arrive_drop{...}    (the same forms)
    mbarrier.expect_tx{.relaxed}{.scope}{.space}.b64 [mbar], txCount      mbarrier.complete_tx{...} (the same)
    mbarrier.test_wait{.parity}{.acquire|.relaxed}{.scope}{.shared{::cta}}.b64 p, [mbar], state | phaseParity
    mbarrier.try_wait{.parity}{.sem}{.scope}{.shared{::cta}}.b64 p, [mbar], state | phaseParity{, suspendTimeHint}
    mbarrier.pending_count.b64 count, state
    fence.mbarrier_init.release.cluster
    barrier.cluster.arrive{.release|.relaxed}{.aligned}      barrier.cluster.wait{.acquire}{.aligned}

mbarrier objects (A7)
- An mbarrier is its location; every operation on it is an RMW (a wait: a read) of one abstract
  value that packs the phase, the expected count, the pending count and the tx-count (`pack`
  below: binary fields of 21, 17, 17 and 8 bits). Arrive-on (count), arrive_drop (also lowers
  the expected count), expect-tx, complete-tx and their combinations update it and, when the
  pending count and the tx-count are both 0, complete the phase (phase + 1, pending = expected).
  mbarrier.init writes the initial state (weak); mbarrier.inval writes 0; a `memory:` mbarrier
  starts initialised (its initial write is an init). Tags: MB on every one, MB_INIT, MB_INVAL;
  arrives are strong with their .sem/.scope (default .release.cta), expect_tx and complete_tx
  strong .relaxed, waits strong reads, .acquire (default) or .relaxed.
- A wait returns waitComplete = 1 when the phase it names has completed: with .parity P, when the
  current phase's parity is not P (P names the current phase or the one before it, which counts
  as complete on a fresh mbarrier); with a state token, when the current phase is past the
  token's. A wait must be awaited (`== 1` or `== 0`), as a spin-wait would be used: only an
  awaited `== 1` wait acquires; the await is a guard on its computed result (EventStructure.guards).
- mbarrier.pending_count gives the pending-count field of a state token.
- The complete-tx of an asynchronous instruction (complete_tx below) is an RMW on the mbarrier,
  not in program order, after the issue (`aso`), tagged ACOMPL: a release at .cluster scope of
  its own instruction's memory operations only (acomp from them to it), not of the issuing
  thread's earlier instructions (8.9.1.1). For a bulk copy it also carries the implicit
  generic-async proxy fence (A9): PF_ASYNC/PF_TMAP with `pfcover` = the instruction's
  operations, in the CTA of the mbarrier (A2: the destination CTA); being implicit, it orders all
  of them, also the source read the issuer's CTA performs (pfo in axioms/ptx.cat).

barrier.cluster (A6): arrive and wait are events (kind "B") tagged CLU_ARRIVE / CLU_WAIT, strong
at .cluster scope, .release (default) or .relaxed, and .acquire; `clusterbar` goes from each
thread's k-th arrive to every other thread's k-th wait in its cluster. Every thread of a cluster
that uses barrier.cluster must arrive at each instance.

fence.mbarrier_init.release.cluster (A10): a release fence at .cluster scope tagged RESTRICT whose
`pfcover` is the executing thread's earlier mbarrier.init (.op_restrict).
"""
from __future__ import annotations

from ..ast import Addr, Imm, Instr, Quals, Sink
from ..model.builder import Builder, ThreadCtx
from ..model.values import Const, Expr, Ite, ReadVal, binop
from . import barriers
from .common import decl, label, performed_by_owner, restrict
from .table import SCOPE_TAG, Family, Group, drop, sig

# -- the packed state --------------------------------------------------------------------------

# One value per mbarrier state, fields from the low end: the tx-count (stored offset by TX0), the
# pending count and the expected count, then the phase (unbounded). The fields hold PTX's ranges
# (the mbarrier object's contents): tx-count -(2^20-1)..2^20-1, pending 0..2^20-1, expected
# 1..2^20-1, so every state reached without undefined behaviour decodes exactly. A write whose
# state leaves a range is in the value set MB_RANGE (undefined behaviour, flag MbarrierRange);
# what its packed value then means does not matter. The fields are placed with the layout
# operators (shl, join), which do not bound their results: a state is wider than 64 bits.
TX_BITS, COUNT_BITS = 21, 20
TX0 = 1 << (TX_BITS - 1)
PENDING_AT, EXPECTED_AT = TX_BITS, TX_BITS + COUNT_BITS
PHASE_AT = EXPECTED_AT + COUNT_BITS
PENDING, EXPECTED, PHASE = 1 << PENDING_AT, 1 << EXPECTED_AT, 1 << PHASE_AT     # the fields' units
LIMIT = (1 << 20) - 1                     # PTX's bound on counts and tx-counts
MAX_COUNT = MAX_TX = LIMIT
# The k-th initialisation of one mbarrier (k = 0, 1, ...: a `memory:` mbarrier's is the 0th) starts
# its phase at k * LIFETIME, so that the states of two lifetimes of one object (inval, then init
# again) never have equal phases; LIFETIME is even, so parities are the text's. A test that
# initialises an mbarrier once has the states it always had.
LIFETIME = 1 << 20


def mb_range(ctx: ThreadCtx, what: str, n: int, low: int = 0, limit: int = LIMIT) -> None:
    """A count or byte count an instruction gives as a number is in the range PTX allows."""
    if not low <= n <= limit:
        raise ctx.error(f"{what} {n}: PTX allows {low} to {limit} (2^20-1)")


def pack(phase, expected, pending, tx=0) -> Expr:
    """The abstract value of an mbarrier in this state (fields may be expressions)."""
    def e(x):
        return x if not isinstance(x, int) else Const(x)
    v = binop("join", binop("shl", e(phase), Const(PHASE_AT)), binop("shl", e(expected), Const(EXPECTED_AT)))
    v = binop("join", v, binop("shl", e(pending), Const(PENDING_AT)))
    return binop("join", v, binop("add", e(tx), Const(TX0)))


def fields(v: int) -> tuple[int, int, int, int]:
    """A packed mbarrier state (a concrete value) as (phase, expected, pending, tx); the phase
    counts from the start of the object's lifetime (LIFETIME)."""
    return v // PHASE % LIFETIME, v // EXPECTED % (1 << COUNT_BITS), v // PENDING % (1 << COUNT_BITS), v % PENDING - TX0


def describe(v: int) -> str:
    """A packed mbarrier state as its fields, e.g. `phase=1 expected=1 pending=1 tx=0` (with
    `after init #k` in a lifetime after the first)."""
    if v == 0:
        return "0 (not an mbarrier)"
    phase, expected, pending, tx = fields(v)
    life = v // PHASE // LIFETIME
    return f"phase={phase} expected={expected} pending={pending} tx={tx}" + (f" after init #{life + 1}" if life else "")


def phase_of(v: Expr) -> Expr:
    return binop("div", v, Const(PHASE))


def expected_of(v: Expr) -> Expr:
    return binop("mod", binop("div", v, Const(EXPECTED)), Const(1 << COUNT_BITS))


def pending_of(v: Expr) -> Expr:
    return binop("mod", binop("div", v, Const(PENDING)), Const(1 << COUNT_BITS))


def tx_of(v: Expr) -> Expr:
    return binop("sub", binop("mod", v, Const(PENDING)), Const(TX0))


def _outside(x: Expr, low: int, high: int, then: Expr = Const(1)) -> Expr:
    """1 when x is outside low..high, else `then`."""
    return Ite("<", x, Const(low), Const(1), Ite(">", x, Const(high), Const(1), then))


def mb_update(v: Expr, arrive: Expr = Const(0), expect: Expr = Const(0), complete: Expr = Const(0),
              drop: Expr = Const(0), operands: tuple = ()) -> tuple[Expr, Expr]:
    """(the state after expect-tx(expect), complete-tx(complete), arrive-on(arrive) and, for
    arrive_drop, lowering the expected count by `drop`; whether that is undefined). The phase
    completes when the pending count and the tx-count are both 0 (then phase + 1 and pending =
    expected). Undefined (1): a field of the new state out of PTX's range (the expected count
    1..2^20-1, so an arrive_drop that lowers it to 0 is undefined), or one of `operands`
    ((value, low, high): a count a register gave) out of its range. On no mbarrier state (0:
    uninitialised or invalidated, which is MbarrierUninitialised) the state stays 0 and nothing
    more is flagged."""
    new_tx = binop("sub", binop("add", tx_of(v), expect), complete)
    new_pending = binop("sub", pending_of(v), arrive)
    new_expected = binop("sub", expected_of(v), drop)
    stay = pack(phase_of(v), new_expected, new_pending, new_tx)
    done = pack(binop("add", phase_of(v), Const(1)), new_expected, new_expected, 0)
    new = Ite("==", new_pending, Const(0), Ite("==", new_tx, Const(0), done, stay), stay)
    bad: Expr = Const(0)
    for x, low, high in operands:
        bad = _outside(x, low, high, bad)
    # the expected count stays 1..2^20-1: arrive_drop "causes the expected arrivals count to be zero"
    # is undefined (mbarrier.arrive_drop), as is any field outside the object's contents' range
    bad = _outside(new_tx, -LIMIT, LIMIT, _outside(new_pending, 0, LIMIT, _outside(new_expected, 1, LIMIT, bad)))
    # an operation on no mbarrier state (0: uninitialised or invalidated) leaves it none
    return Ite("==", v, Const(0), Const(0), new), Ite("==", v, Const(0), Const(0), bad)


# -- helpers the asynchronous instructions use ----------------------------------------------

def mb_location(b: Builder, ctx: ThreadCtx, op) -> None:
    if not isinstance(op, Addr) or op.base not in b.roots:
        raise ctx.error("expected the mbarrier's address [mbar]")
    if decl(b, op.base).space != "shared":
        raise ctx.error(f"an mbarrier lives in shared memory: '{op.base}' is global")


def mb_rmw(b: Builder, ctx: ThreadCtx, op: Addr, rtags, wtags, update, in_po: bool = True,
            what: str = "") -> tuple[int, int]:
    """An RMW on the mbarrier at `op`: (read, write), the write storing the state update(value
    read) gives (checker.isa.mbarrier.mb_update), and in MB_RANGE when that is undefined."""
    r = b.read(ctx, set(rtags) | {"MB", "GEN"}, op, in_po=in_po, label=label(ctx.instr, what) if what else "",
               awaited=False)
    new, bad = update(ReadVal(r))
    w = b.write(ctx, set(wtags) | {"MB", "GEN"}, op, new, in_po=in_po,
                label=label(ctx.instr, what) if what else "")
    b.pairs["rmw"].add((r, w))
    if bad != Const(0):
        b.value_sets["MB_RANGE"].append((w, bad))
    return r, w


def _mb_count(b: Builder, ctx: ThreadCtx, op, what: str, low: int) -> tuple[Expr, tuple]:
    """The value of a count or byte-count operand (a .b32 value), and the range check it needs at
    run time (none when it is a number, which is checked now)."""
    v = b.value(ctx, op, 32)
    if isinstance(v, Const):
        mb_range(ctx, what, v.value, low)
        return v, ()
    return v, ((v, low, LIMIT),)


def _mb_sem_scope(i: Instr, q, default_sem: str) -> tuple[str, str]:
    return q.get("sem") or default_sem, q.get("scope") or "cta"


def mb_objects(b: Builder) -> set:
    """Locations used as mbarriers (the initial write of a pre-initialised one gets its state)."""
    return b.finalize("mbobjects", _preinitialised).setdefault("cells", set())


def _preinitialised(b: Builder) -> None:
    """A `memory:` mbarrier starts initialised: its initial write is an mbarrier.init."""
    for m in b.test.memory:
        if m.mbarrier and m.name in b.init_of:
            eid = b.init_of[m.name]
            ev = b.events[eid]
            b.events[eid] = type(ev)(ev.eid, ev.thread, ev.kind, ev.tags | {"MB", "MB_INIT"}, ev.loc, ev.vloc,
                                     f"init {m.name}: mbarrier, count {m.mbarrier['count']}", ev.index)
            n = m.mbarrier["count"]
            b.write_value[eid] = pack(0, n, n, 0)


def complete_tx(b: Builder, ctx: ThreadCtx, i: Instr, issue: int, mbar: Addr, nbytes: int, ops: list[int],
                 proxy_fence: bool) -> None:
    """The complete-tx of an asynchronous instruction: an RMW on the mbarrier, after the issue,
    completing (acomp) and releasing (ACOMPL, .release.cluster) the instruction's operations only;
    for a bulk copy also the implicit generic-async proxy fence (A9) covering them."""
    mb_objects(b).add(b.roots[mbar.base])
    tags = {"STRONG", "CLUSTER", "ACOMPL"}
    wtags = tags | {"REL"} | ({"PF_ASYNC", "PF_TMAP"} if proxy_fence else set())
    mb_range(ctx, "tx-count", nbytes)
    r, w = mb_rmw(b, ctx, mbar, tags, wtags, lambda v: mb_update(v, complete=Const(nbytes)), in_po=False,
                   what=f"complete-tx {nbytes} on {mbar.base}" + (" + implicit proxy fence" if proxy_fence else ""))
    for e in (r, w):
        performed_by_owner(b, ctx, e, mbar)
    b.pairs["aso"].update({(issue, r), (issue, w)})
    b.pairs["acomp"].update((e, w) for e in ops)
    if proxy_fence:
        restrict(b, w, "events", tuple(ops))


def arrive_on(b: Builder, ctx: ThreadCtx, mb: Addr, tags, what: str) -> tuple[int, int]:
    """An asynchronous arrive-on (count 1) on the mbarrier at `mb`: an RMW not in program order
    (cp.async.mbarrier.arrive, tcgen05.commit), tagged ACOMPL and releasing (`tags` + REL on its
    write); the caller orders it (aso) and says what it completes (acomp)."""
    mb_objects(b).add(b.roots[mb.base])
    r, w = mb_rmw(b, ctx, mb, tags, set(tags) | {"REL"}, lambda v: mb_update(v, arrive=Const(1)), in_po=False,
                  what=what)
    record_arrive(b, r, w)
    return r, w


def _lifetime(b: Builder, mb: Addr) -> int:
    """Which initialisation of the mbarrier at `mb` this one is (0 for the first; a `memory:`
    mbarrier's declaration is its 0th)."""
    root = b.roots[mb.base]
    seen = b.ext.setdefault("mblifetimes", {})
    declared = any(m.mbarrier and b.roots.get(m.name) == root for m in b.test.memory)
    k = seen.get((root, mb.offset), 1 if declared and mb.offset == 0 else 0)
    seen[(root, mb.offset)] = k + 1
    return k


def _phases(b: Builder) -> dict:
    """For the skipped-phase check (_skipped_phases): the arrive-on operations (read, write, their
    arrival count: a number, or None), the successful (`== 1`) waits, the initial counts of each
    mbarrier (a number, or None) and the pending-count increments of cp.async.mbarrier.arrive
    (write, the error that refuses the test)."""
    state = b.finalize("mbphases", _skipped_phases)
    for k in ("arrives", "waits", "increments"):
        state.setdefault(k, [])
    state.setdefault("counts", {})
    return state


def record_arrive(b: Builder, r: int, w: int, count: Expr = Const(1), paired: bool = False) -> None:
    """An arrive-on operation (the read and write of its RMW) with its arrival count; `paired`: the
    asynchronous arrive-on of a cp.async.mbarrier.arrive whose increment comes before it."""
    _phases(b)["arrives"].append((r, w, count.value if isinstance(count, Const) else None, paired))


def record_increment(b: Builder, ctx: ThreadCtx, w: int) -> None:
    """The pending-count increment of cp.async.mbarrier.arrive (without .noinc): the one update that
    raises the pending count within a phase, which the skipped-phase check cannot order."""
    _phases(b)["increments"].append((w, ctx.error(
        "cp.async.mbarrier.arrive without .noinc raises the mbarrier's pending count within a phase, and "
        "this mbarrier may see an arrive-on past its first phase: ptxmc cannot then check that each phase "
        "was observed by a successful wait before an arrive-on of the next (mbarrier > Phase of the "
        "mbarrier object; docs/model.md#undefined-behaviour): use .noinc with an init count that includes "
        "the cp.async arrivals")))


def _skipped_phases(b: Builder) -> None:
    """mbarrier > Phase of the mbarrier object: "for each phase of the mbarrier object, at least
    one test_wait or try_wait operation must be performed which returns True for waitComplete
    before an arrive-on operation in the subsequent phase". An arrive-on reading a state of phase
    k + 1 >= 1 (of its lifetime) is in MB_SKIP unless a successful wait on the same mbarrier read
    a state of phase k + 1 that is coherence-before the arrive-on's write (decision A7: "before"
    is the object's own order). A successful wait reads a state of phase k + 1 only when it waits
    for phase k (or holds a stale token: MB_STALE). Within a phase the expected and pending counts
    only fall (the increment of cp.async.mbarrier.arrive aside: refused where it matters), and an
    arrive-on lowers the pending count, so a state of the phase is coherence-before the arrive-on
    exactly when its fields above the tx-count are at least those of the state the arrive-on
    reads: as numbers, when it lies in [(v div PENDING) * PENDING, (phase(v) + 1) * PHASE), from
    terms the arrive-on's own update already has (no new division per wait)."""
    state = b.ext["mbphases"]
    where = {e: (a.root, a.spans) for e, a in b.accesses.items()}
    reinit = any(k > 1 for k in b.ext.get("mblifetimes", {}).values())
    for m in b.test.memory:
        if m.mbarrier and m.name in b.roots:
            state["counts"].setdefault((b.roots[m.name], 0), []).append(m.mbarrier["count"])
    for inc, error in state["increments"]:
        # The pending count is exact as an order only while no increment falls after the first
        # phase: that needs arrivals that may come before the increment (not after it in its own
        # thread), other than the net-zero arrive-ons of increments, to reach the initial count.
        thread = b.events[inc].thread
        counts = [c for r, w, c, paired in state["arrives"]
                  if where[r] == where[inc] and not paired and not (b.events[w].thread == thread and w > inc)]
        inits = state["counts"].get((where[inc][0], where[inc][1][0].offset), [None])
        least = min((n if isinstance(n, int) else 1) for n in inits)
        if counts and (None in counts or sum(counts) >= least):
            raise error
    for r, w, _, _ in state["arrives"]:
        # An arrive-on past the first phase needs the others' arrivals to reach an initial count
        # first (the net-zero arrive-ons of increments add none): where they cannot, it has no term.
        counts = [c for r2, _, c, paired in state["arrives"] if where[r2] == where[r] and r2 != r and not paired]
        inits = state["counts"].get((where[r][0], where[r][1][0].offset), [None])
        least = min((n if isinstance(n, int) else 1) for n in inits)
        if None not in counts and sum(counts) < least:
            continue
        v = ReadVal(r)
        low = binop("shl", binop("div", v, Const(PENDING)), Const(PENDING_AT))    # v, its tx field 0
        high = binop("shl", binop("add", phase_of(v), Const(1)), Const(PHASE_AT))    # the next phase
        skipped: Expr = Const(1)
        for wait in state["waits"]:
            if where[wait] != where[r]:
                continue
            s = ReadVal(wait)
            skipped = Ite("<", s, low, skipped, Ite("<", s, high, Const(0), skipped))
        # the lifetime's first phase follows no phase (the one before counts as complete, A7)
        phase = binop("mod", phase_of(v), Const(LIFETIME)) if reinit else phase_of(v)
        b.value_sets["MB_SKIP"].append((w, Ite("==", v, Const(0), Const(0),
                                               Ite("==", phase, Const(0), Const(0), skipped))))


# -- lowering --------------------------------------------------------------------------------

def lower_mbarrier(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = i.quals
    kind = i.family.split(".", 1)[1]
    ops = i.operands
    if kind == "pending_count":
        state = b.value(ctx, ops[1])
        b.set_reg(ctx, ops[0], pending_of(state))
        return
    mb = ops[1] if kind in ("arrive", "arrive_drop", "test_wait", "try_wait") else ops[0]
    mb_location(b, ctx, mb)
    if kind == "init":
        n, check = _mb_count(b, ctx, ops[1], "arrival count", 1)
        w = b.write(ctx, {"WEAK", "GEN", "MB", "MB_INIT"}, mb, pack(_lifetime(b, mb) * LIFETIME, n, n, 0))
        _phases(b)["counts"].setdefault((b.roots[mb.base], mb.offset), []).append(
            n.value if isinstance(n, Const) else None)
        if check:
            b.value_sets["MB_RANGE"].append((w, _outside(n, 1, LIMIT, Const(0))))
        ctx.ext.setdefault("mbinit", []).append(w)
        mb_objects(b).add(b.roots[mb.base])
        return
    mb_objects(b).add(b.roots[mb.base])
    if kind == "inval":
        b.write(ctx, {"WEAK", "GEN", "MB", "MB_INVAL"}, mb, Const(0))
        return
    if kind in ("arrive", "arrive_drop"):
        sem, scope = _mb_sem_scope(i, q, "release")
        strong = {"STRONG", SCOPE_TAG[scope]}
        rtags = strong | ({"RLX"} if sem == "relaxed" else set())
        wtags = strong | ({"RLX"} if sem == "relaxed" else {"REL"})
        check: tuple = ()
        tx, count = Const(0), Const(1)
        if q["expect_tx"]:
            tx, check = _mb_count(b, ctx, ops[2], "tx-count", 0)
        elif len(ops) > 2:
            count, check = _mb_count(b, ctx, ops[2], "arrival count", 1)
        drop = count if kind == "arrive_drop" else Const(0)
        r, w = mb_rmw(b, ctx, mb, rtags, wtags,
                      lambda v: mb_update(v, arrive=count, expect=tx, drop=drop, operands=check))
        record_arrive(b, r, w, count)
        if not isinstance(ops[0], Sink):
            b.set_reg(ctx, ops[0], ReadVal(r))
        return
    if kind in ("expect_tx", "complete_tx"):
        _, scope = _mb_sem_scope(i, q, "relaxed")
        tags = {"STRONG", "RLX", SCOPE_TAG[scope]}
        n, check = _mb_count(b, ctx, ops[1], "tx-count", 0)
        upd = (lambda v: mb_update(v, expect=n, operands=check)) if kind == "expect_tx" else \
            (lambda v: mb_update(v, complete=n, operands=check))
        mb_rmw(b, ctx, mb, tags, tags, upd)
        return
    # test_wait / try_wait
    sem, scope = _mb_sem_scope(i, q, "acquire")
    if i.await_value is None:
        raise ctx.error(f"ptxmc models an mbarrier wait as a spin-wait: end it with '== 1' (until the phase "
                        f"completes) or '== 0' (an observation that it has not), e.g. '{i.text} == 1'")
    acquires = sem == "acquire" and i.await_value == 1
    tags = {"STRONG", SCOPE_TAG[scope], "MB", "GEN"} | ({"ACQ"} if acquires else {"RLX"})
    r = b.read(ctx, tags, mb, awaited=False)
    v = ReadVal(r)
    target = b.value(ctx, ops[2])
    if q["parity"]:
        done: Expr = Ite("!=", binop("mod", phase_of(v), Const(2)), binop("mod", target, Const(2)), Const(1), Const(0))
    else:
        done = Ite(">", phase_of(v), phase_of(target), Const(1), Const(0))
        # valid only for the token's phase while it is incomplete and once it is the immediately
        # preceding phase: a state one phase or more past that is undefined (MB_STALE), as is a
        # token of a later phase or of another lifetime of the object (docs/model.md#a7)
        ahead = binop("sub", phase_of(v), phase_of(target))
        b.value_sets["MB_STALE"].append((r, Ite("==", v, Const(0), Const(0), _outside(ahead, 0, 1, Const(0)))))
    if i.await_value == 1:
        _phases(b)["waits"].append(r)
    b.set_reg(ctx, ops[0], done)
    b.guards.append((done, i.await_value))
    ctx.awaited.append(r)


def lower_cluster_barrier(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = i.quals
    base = {"STRONG", "GEN", "CLUSTER"}
    if q["mode"] == "arrive":
        e = b.new_event(ctx, "B", base | {"CLU_ARRIVE"} | ({"RLX"} if q["sem"] == "relaxed" else {"REL"}))
    else:
        e = b.new_event(ctx, "B", base | {"CLU_WAIT", "ACQ"})
    barriers.record(b, ctx, e)       # joined with its generation's members (checker.isa.barriers)


def lower_mbarrier_init_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """fence.mbarrier_init.release.cluster: a release fence at .cluster scope restricted
    (.op_restrict) to the executing thread's earlier mbarrier.init operations."""
    f = b.new_event(ctx, "F", {"STRONG", "GEN", "CLUSTER", "RESTRICT", "REL"})
    restrict(b, f, "events", tuple(ctx.ext.get("mbinit", ())))


# -- the families ----------------------------------------------------------------------------

_MB_SPACE = Group("space", ("shared", "shared::cta", "shared::cluster"))


MB_LOCAL = Group("space", ("shared", "shared::cta"))


B64 = Group("type", ("b64",), required=True)


_MB_SCOPE = Group("scope", ("cta", "cluster"))


_MB_REJECTS = {"multicast::cluster": "mbarrier.arrive has no .multicast::cluster form in the PTX ISA: a multicast "
                                      "arrive-on is tcgen05.commit...multicast::cluster, or the completion of a "
                                      "cp.async.bulk{.tensor}...multicast::cluster; to arrive on several CTAs' "
                                      "mbarriers, arrive on each (mapa + .shared::cluster)",
               **dict.fromkeys(("gpu", "sys"), "mbarrier operations take .cta or .cluster scope"),
               "noComplete": "mbarrier.arrive.noComplete is not modelled yet"}


def _arrive_operands(q: Quals):
    if q["expect_tx"]:
        return sig("state:dst, mbar:addr, tx:val", mbar="the mbarrier", tx="the tx-count")
    return sig("state:dst, mbar:addr, count:val?", mbar="the mbarrier")


def _arrive_form(i: Instr, q: Quals):
    if q["space"] == "shared::cluster" and not isinstance(i.operands[0], Sink):
        return ("an arrive on a .shared::cluster mbarrier returns no state: write _ as the destination "
                f"({i.op}.{'.'.join(i.qualifiers[:1])} ... _, [mbar])")
    if q["sem"] == "acquire":
        return "mbarrier arrives are .release or .relaxed"
    if len(i.operands) > 2 and isinstance(i.operands[2], Imm) and i.operands[2].value < (0 if q["expect_tx"] else 1):
        return "the count of an arrive is positive" if not q["expect_tx"] else "the tx-count is not negative"
    return None


def _arrive(kind: str) -> Family:
    return Family(f"mbarrier.{kind}",
                  groups=(Group("expect_tx", ("expect_tx",)), Group("sem", ("release", "relaxed", "acquire")),
                          _MB_SCOPE, _MB_SPACE, B64),
                  operands=_arrive_operands, rules=(_arrive_form,), rejects=_MB_REJECTS, space="space",
                  lower=lower_mbarrier)


def _tx(kind: str) -> Family:
    return Family(f"mbarrier.{kind}",
                  groups=(Group("sem", ("relaxed",)), _MB_SCOPE, _MB_SPACE, B64),
                  operands=sig("mbar:addr, tx:val", mbar="the mbarrier", tx="the tx-count"),
                  rejects={**_MB_REJECTS, **dict.fromkeys(("release", "acquire"),
                                                          f"mbarrier.{kind} is .relaxed only (no ordering)")},
                  space="space", lower=lower_mbarrier)


def _wait_operands(q: Quals):
    what = "the phase parity" if q["parity"] else "the state from an arrive"
    return sig("p:dst, mbar:addr, phase:val" + (", hint:val?" if q["kind"] == "try_wait" else ""),
               mbar="the mbarrier", phase=what)


def _wait(kind: str) -> Family:
    return Family(f"mbarrier.{kind}",
                  groups=(Group("kind", (kind,), default=kind), Group("parity", ("parity",)),
                          Group("sem", ("acquire", "relaxed")), _MB_SCOPE, MB_LOCAL, B64),
                  operands=_wait_operands, space="space", lower=lower_mbarrier,
                  rejects={**_MB_REJECTS, "release": "mbarrier waits are .acquire or .relaxed",
                           "shared::cluster": "an mbarrier wait reads the executing CTA's own mbarrier "
                                              "(.shared::cta)"})


FAMILIES = (
    Family("mbarrier.init", groups=(MB_LOCAL, B64), operands=sig("mbar:addr, count:val", count="the expected count"),
           rules=(lambda i, q: "the count of mbarrier.init is positive"
                  if isinstance(i.operands[1], Imm) and i.operands[1].value < 1 else None,),
           space="space", lower=lower_mbarrier),
    Family("mbarrier.inval", groups=(MB_LOCAL, B64), operands=sig("mbar:addr"), space="space", lower=lower_mbarrier),
    _arrive("arrive"),
    _arrive("arrive_drop"),
    _tx("expect_tx"),
    _tx("complete_tx"),
    _wait("test_wait"),
    _wait("try_wait"),
    Family("mbarrier.pending_count", groups=(B64,), operands=sig("count:reg, state:val"), lower=lower_mbarrier),
    Family("fence.mbarrier_init", groups=(Group("sem", ("release",), required=True),
                                          Group("scope", ("cluster",), required=True)),
           lower=lower_mbarrier_init_fence, weaken=drop),
    Family("barrier.cluster",
           groups=(Group("mode", ("arrive", "wait"), required=True), Group("sem", ("release", "relaxed", "acquire")),
                   Group("aligned", ("aligned",))),
           rules=(lambda i, q: (f"barrier.cluster.{q['mode']} takes no .{q['sem']}"
                                if q["sem"] and (q["mode"] == "wait") != (q["sem"] == "acquire") else None),),
           lower=lower_cluster_barrier, weaken=drop),
)
