"""Stopping combinations of the hang question that cannot hang, refuted without a Session: a thread
cut in an await on an mbarrier whose final state, in every consistent execution of the
combination, completes the phase the await waits for (docs/model.md#a18, "Stopping combinations
refuted by the final state").

The final state of a quiet mbarrier M (checker.verdict.quiet: one CTA, only mbarrier operations
and complete-tx name it, whole and under one name, at most one initialisation) is read off the
axioms, whatever else an execution does (undefined behaviour included):
- MbarrierAtomicity orders M's writes totally in coherence, and an RMW reads no write between its
  source and itself; an RMW coherence-after the last write that is not an RMW (the
  initialisation, or the initial write) reads its immediate predecessor, since reading a later
  write would make the chain of its sources run back through itself, a cycle of `rf | dep`
  (NoThinAir; each RMW's write depends on its read). So the final state is the initialisation's
  state folded, in some order, through the RMWs coherence-after it (each update the lowering's own
  expression, evaluated), and an RMW before the initialisation is overwritten.
- An RMW that base causality puts after the initialisation in every execution is coherence-after
  it (Coherence, through ppbc_generic: both generic, same address). Such are, from the
  combination's own text: the initialising thread's later operations, the asynchronous
  complete-tx of its later instructions (aso), and those of any thread after a barrier generation
  whose members include one that is so (syncbar, syncwarp; all in sw, so in bc0). The others may
  be overwritten or not: both are kept.
- Every order is kept, in range or not: no undefined-behaviour premise is needed.
The fairness check of checker.verdict.liveness reads the same final state with the same
expression (_fair): if no final state leaves the await spinning, no execution of the combination
hangs there, and the combination is not built (its Session is not encoded, its outcomes not
asked).

Quiet is read off the combination's own code (an inval past a barrier it never passes is not in
it), asynchronous arrive-ons (tcgen05.commit, cp.async.mbarrier.arrive) admitted. Where no final
state refutes, a combination with no execution is refuted too (_unreachable: a wait its path
passes that no reachable state satisfies; docs/model.md#a18, "Combinations with no
execution")."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from itertools import product

from .. import limits
from ..ast import Imm
from ..errors import LimitExceeded, LitmusError, NeverCompletes
from ..isa import barriers
from ..isa.registry import lower
from ..model.values import _CMPS, Bin, Const, Ite, ReadVal, evaluate, reads_of
from ..unfold.variants import Combo, single
from .bundled import bundled
from .quiet import quiet_mbarriers

_MANY = 1 << 30
_STATES = 4096          # past this many states of one mbarrier's fold, no refutation
# after this many combinations of one test lowered for _may_fire (each cost a lowering) and none
# refuted, the test's are not lowered for it (Triton's attention: every gate of every such
# combination may be freed)
_GIVE_UP = 16


def refuted(u, c: Combo, fair) -> bool:
    """Does no execution of `c` (u's combination) hang, by the final state of an mbarrier one of
    its cut threads waits on (see the module)? False where that cannot be shown. `fair`: the
    fairness check of checker.verdict.liveness (its _fair), which reads the final state."""
    if u.test.kernels or not _bundled(u):
        return False
    # quiet in this combination: its own code (an inval past a barrier it never passes is not in
    # it), asynchronous arrive-ons admitted (RMWs of the whole object like the others)
    quiet = quiet_mbarriers(c.test, arrive_ons=True, cache=u.__dict__.setdefault("_quiet_parts", {}))
    for thread, spin in c.cut:
        for w in spin.waits:
            if not w.quals.get("parity") or not isinstance(w.operands[2], Imm) or w.operands[1].base not in quiet:
                continue
            states = _finals(u, c, w.operands[1].base)
            loc = u.names.get(w.operands[1].base, w.operands[1].base)
            if states and not any(fair(("wait", thread, w, loc), {loc: s}) for s in states):
                return True
    return _unreachable(u, c, quiet, fair)


def _bundled(u) -> bool:
    """Is `u` asked under the bundled axioms/ptx.cat with its own options? The arguments read its
    axioms (MbarrierAtomicity, NoThinAir, Coherence, Causality) and relations (sw, bc0, mbobs)."""
    model = getattr(u, "model", None)
    if model is None:
        return True                     # (a caller that asks for the refuter alone)
    return bundled(model, getattr(u, "options", ()))


def _ops(u, k: int, code) -> dict | None:
    """What thread `k` running `code` alone does to each mbarrier named in it: {declared name:
    {"ops": [(key, update, index)], "inits": [(state, index)], "initial": state,
    "waits": [(instruction, index)]}}, index being the instruction's position in `code` (every RMW
    is gated by the thread's earlier waits, its own instruction's asynchronous completion included:
    each event a thread makes after a wait depends on the wait's read, `dep`); "waits": the awaited
    `== 1` waits. None where it cannot be lowered alone."""
    cache = u.__dict__.setdefault("_stop_ops", {})
    if (k, code) in cache:
        return cache[(k, code)]
    kept = [j for j, i in enumerate(code) if i.family not in barriers.FAMILIES]
    th = replace(u.test.threads[k], code=tuple(code[j] for j in kept), labels=())
    alone = replace(u.test, threads=(th,), expectations=(), expect_undefined=None, locations=(), filter=None,
                    expect_hang=None, unroll=None, barrier_generations=())
    try:
        with limits.use(u.lim):
            es = lower(alone)
    except (LitmusError, LimitExceeded, NeverCompletes):
        cache[(k, code)] = None
        return None
    root = {v: n for n, v in es.names.items()}
    rmw = {w: r for r, w in es.relations.get("rmw", ())}
    dep = es.relations.get("dep", frozenset())
    out: dict = {}
    declared = {m.name for m in u.test.memory if m.mbarrier}
    reads = set(rmw.values())
    for ev in es.events:
        if ev.kind == "R" and ev.loc in root and "MB" in ev.tags and ev.eid not in reads \
                and ev.thread is not None:
            d = out.setdefault(root[ev.loc], {"ops": [], "inits": [], "initial": None, "other": False, "waits": [],
                                              "weak": False, "invals": []})
            d["weak"] |= "STRONG" not in ev.tags
            w = code[kept[ev.index]]
            if w.family in ("mbarrier.try_wait", "mbarrier.test_wait") and w.await_value == 1:
                d["waits"].append((w, kept[ev.index]))
            continue
        if ev.kind != "W" or ev.loc not in root:
            continue
        x = es.write_value[ev.eid]
        d = out.setdefault(root[ev.loc], {"ops": [], "inits": [], "initial": None, "other": False, "waits": [],
                                          "weak": False, "invals": []})
        if ev.thread is None:
            # a `memory:` mbarrier's start state only where the lowering made it one (its initial
            # write is an init, tagged MB, only in a lowering with an mbarrier operation: a thread
            # alone with none writes a plain 0, which is no start of the others' fold)
            if "MB" in ev.tags or root[ev.loc] not in declared:
                d["initial"] = evaluate(x, lambda e: 0)
        elif "MB" in ev.tags and ev.eid in rmw and reads_of(x) <= {rmw[ev.eid]} and (rmw[ev.eid], ev.eid) in dep:
            r = rmw[ev.eid]
            d["ops"].append((repr(x).replace(f"ReadVal(eid={r})", "ReadVal(*)"), x, kept[ev.index]))
            d["weak"] |= "STRONG" not in ev.tags or "STRONG" not in es.events[r].tags
        elif "MB_INIT" in ev.tags and not reads_of(x):
            d["inits"].append((evaluate(x, lambda e: 0), kept[ev.index]))
        elif "MB_INVAL" in ev.tags and not reads_of(x):
            d["invals"].append(evaluate(x, lambda e: 0))     # (only _loose_starts reads them)
        else:
            d["other"] = True           # (nothing a quiet mbarrier has: no refutation)
    cache[(k, code)] = out
    return out


def _start(u, c: Combo, name: str):
    """What the states of mbarrier `name` in `c` start from: (per thread its part of _ops, the
    start state, per thread the position from which its instructions are base-causality-after
    the initialisation (None: no init, the initial write is first in coherence)), or None."""
    per = [_ops(u, k, t.code) for k, t in enumerate(c.test.threads)]
    if any(p is None for p in per):
        return None
    mine = [p.get(name) for p in per]
    if any(d is not None and (d["other"] or d["invals"]) for d in mine):
        return None
    inits = [(t.name, s, j) for t, d in zip(c.test.threads, mine) if d for s, j in d["inits"]]
    initial = next((d["initial"] for d in mine if d and d["initial"] is not None), 0)
    if len(inits) > 1:
        return None
    if inits:
        thread, s0, at = inits[0]
        return mine, s0, _after(c, thread, at)
    return mine, initial, None          # the initial write (first in coherence) is the start


def _finals(u, c: Combo, name: str) -> set[int] | None:
    """The final states of mbarrier `name` in the executions of `c` (see the module), or None."""
    start = _start(u, c, name)
    if start is None:
        return None
    mine, s0, after = start
    groups: OrderedDict = OrderedDict()     # (update, forced) -> [forced count, updates]
    for t, d in zip(c.test.threads, mine):
        for key, x, j in (d["ops"] if d else ()):
            forced = after is None or j >= after[t.name]
            g = groups.setdefault((key, forced), [0, x, 0])
            g[2] += 1
            g[0] += forced
    return _fold(list(groups.values()), s0)


def _unreachable(u, c: Combo, quiet, fair) -> bool:
    """Has `c` no consistent execution, because a wait its path passes (an awaited `== 1` wait on a
    quiet mbarrier, base-causality-after its initialisation) reads no state the operations that can
    precede it make, even where the value-dependent undefined behaviour that may happen frees it
    (docs/model.md#a18, "Combinations with no execution")?

    Least fixpoint: a gate (such a wait) is open when some state of its mbarrier, folded from the
    start through any sequence of the RMWs that may precede it, completes it; an RMW may precede
    it unless its thread made it after a gate that is not open. Where a gate stays closed, no
    execution exists: in one, take the closed gate first in (rf | dep)+ (acyclic: NoThinAir); it
    reads a state made of the start and the RMWs coherence-before its source, a chain of rf and
    dep into it (each RMW reads its predecessor, its write depends on its read); an RMW a thread
    made after a gate depends on that gate's read (the await is a control dependency, dep), so
    that gate is before the first in (rf | dep)+, hence open; so the state is one the fold
    reaches. A gate that a member of value-dependent undefined behaviour which may fire frees is
    open from the start (_may_fire: a greatest fixpoint over the members); where condition (7)
    shows that no execution of any combination has a member (UnionSession.no_member), none is
    freed."""
    gates: list = []                    # (thread, index, wait, mbarrier)
    starts: dict = {}
    for name in sorted(quiet):
        st = _start(u, c, name)
        if st is None:
            continue
        mine, s0, after = st
        starts[name] = (mine, s0, after)
        gates += [(t.name, j, w, name) for t, d in zip(c.test.threads, mine) if d for w, j in d["waits"]
                  if w.quals.get("parity") and isinstance(w.operands[2], Imm)
                  and (after is None or j >= after[t.name])]
    if not gates:
        return False
    opened = _open(u, c, gates, starts, fair, frozenset())
    if opened is None or len(opened) == len(gates):
        return False
    # (freeing gates only opens more: the combination's lowering, for freeing, only when needed;
    # and not once _GIVE_UP lowerings of the test have refuted nothing)
    if getattr(u, "no_member", False):
        return True                     # (no member in any execution: nothing is freed)
    seen = u.__dict__.setdefault("_stop_freed", [0, 0])     # [not refuted, refuted]
    if seen[0] >= _GIVE_UP and not seen[1]:
        return False
    opened = _may_fire(u, c, gates, starts, fair)
    closed = opened is not None and len(opened) < len(gates)
    seen[1 if closed else 0] += 1
    return closed


def _open(u, c: Combo, gates: list, starts: dict, fair, free) -> set | None:
    """The gates of `gates` the least fixpoint of _unreachable opens, those of `free` (a set of
    (thread, index)) open from the start; None past _STATES states of a fold (no refutation).
    A gate after another of its thread on the same mbarrier that no member frees reads a state
    coherence-after-or-equal the one that gate read (SCPerLocation: _since)."""
    behind: dict = {}                   # thread -> indices of its gates
    for g in gates:
        behind.setdefault(g[0], []).append(g[1])
    since = _since(gates, starts, free)
    opened: set = {g[:2] for g in gates if g[:2] in free}
    changed = True
    while changed:
        changed = False
        for thread, j, w, name in [g for g in gates if g[:2] not in opened]:
            loc = u.names.get(name, name)
            before = since.get((thread, j))
            if before is not None and before[:2] not in opened:
                continue                # (it reads past a state the earlier one passed at)
            states = _reached(u, c, name, starts, behind, opened,
                              None if before is None else (before[2], before[0], loc, fair))
            if states is None:
                return None
            if any(fair(("wait", thread, w, loc), {loc: s}) for s in states):
                opened.add((thread, j))
                changed = True
    return opened


def _since(gates: list, starts: dict, free) -> dict:
    """Per gate (thread, index), the gate before it in its thread on the same mbarrier, where
    neither is freed (`free`) and every wait and RMW of the mbarrier is strong (its writes besides
    them are its initialisation and initial write: a quiet mbarrier), or none."""
    out: dict = {}
    last: dict = {}
    strong = {name: not any(d and d["weak"] for d in st[0]) for name, st in starts.items()}
    for g in sorted(gates, key=lambda g: (g[0], g[1])):
        k = (g[0], g[3])
        prev = last.get(k)
        last[k] = g
        if prev is not None and strong[g[3]] and g[:2] not in free and prev[:2] not in free:
            out[g[:2]] = prev
    return out


def _reached(u, c: Combo, name: str, starts: dict, behind: dict, opened: set, since=None,
             minus: str | None = None, s0=None) -> set[int] | None:
    """Every state of mbarrier `name` on the way of a fold from its start (or `s0`) through any
    sequence of its RMWs not gated by a gate (thread -> indices: `behind`) outside `opened`, less
    one RMW of update `minus` (a member's own, which its read's chain does not hold); with `since`
    (wait, thread, location, fair), only those on the way after a state that wait passes at.
    None past _STATES."""
    cache = u.__dict__.setdefault("_stop_reach", {})
    mine = starts[name][0]
    s0 = starts[name][1] if s0 is None else s0
    groups: OrderedDict = OrderedDict()
    for t, d in zip(c.test.threads, mine):
        for key, x, i in (d["ops"] if d else ()):
            if any(k < i and (t.name, k) not in opened for k in behind.get(t.name, ())):
                continue
            g = groups.setdefault(key, [0, x, 0])
            g[2] += 1
    if minus in groups:
        groups[minus][2] -= 1
    rk = (name, tuple(sorted(groups)), tuple(g[2] for g in groups.values()), s0,
          None if since is None else (since[0].operands[2].value % 2, since[0].await_value))
    if rk not in cache:
        if since is None:
            cache[rk] = _fold(list(groups.values()), s0, prefixes=True)
        else:
            w, thread, loc, fair = since
            cache[rk] = _fold(list(groups.values()), s0, prefixes=True,
                              since=lambda s: fair(("wait", thread, w, loc), {loc: s}))
    return cache[rk]


def _may_fire(u, c: Combo, gates: list, starts: dict, fair) -> set | None:
    """The gates _unreachable's fixpoint opens where a gate is also open when a member of a
    value-dependent undefined behaviour (MB_RANGE, MB_STALE, MB_SKIP) that may fire frees it
    (EventStructure.freeing, A7, read off the combination's lowering: a member outside the wait's
    may-causal past); None where the combination cannot be lowered or a fold is too large.

    Which members may fire is a greatest fixpoint (docs/model.md#a18, "Which members may free a
    gate"): from every member, keep those that may fire given the gates open under the members
    kept -- a member whose thread passes every earlier gate of its own that is open (the events
    after a gate exist only if it is passed), and whose expression, the lowering's own, is not 0
    on some state of its quiet mbarrier that the fold of the RMWs that may precede it reaches (its
    own read that state, every other read it names unknown: an expression that an unknown decides
    may fire). A member on an mbarrier with no fold here (not quiet, no start, not after the
    initialisation in every execution) may fire once its thread's earlier gates are open. In an
    execution, the members that fire are kept at every step (the gates it passes are open under
    them: by (rf | dep)+ as in _unreachable, a freed one by a member that fires; each member's
    read state is a fold of the RMWs coherence-before it, which it passes the gates of), so no
    member of any execution is dropped, whichever frees which (a least fixpoint from no member
    would drop two members that may each free the other's gate)."""
    try:
        with limits.use(u.lim):
            es = lower(c.test if c.stuck else single(c.test))
    except (LitmusError, LimitExceeded, NeverCompletes):
        return None
    behind: dict = {}
    for g in gates:
        behind.setdefault(g[0], []).append(g[1])
    root = {v: n for n, v in es.names.items()}
    rmw = {w: r for r, w in es.relations.get("rmw", ())}
    reads = {(ev.thread, ev.index): ev.eid for ev in es.events
             if ev.kind == "R" and "MB" in ev.tags and ev.eid not in rmw.values()}
    # per gate, the members that free it ((event, expression): an event may be in several sets)
    frees = {g[:2]: set(es.freeing((reads[g[:2]],))) if g[:2] in reads else None for g in gates}
    if any(f is None for f in frees.values()):
        return None                     # (a gate with no read of its own here: no refutation)
    # the mbarriers quiet but for their invals, with every state a fold of their RMWs may start from
    loose = {}
    for name in quiet_mbarriers(c.test, arrive_ons=True, cache=u.__dict__.setdefault("_quiet_parts", {}),
                                inval=True):
        if name not in starts:
            st = _loose_start(u, c, name)
            if st is not None:
                loose[name] = st
    members = []                # (event, expression, thread, index, mbarrier or None, own read, own update)
    for name in sorted(es.value_sets):
        for e, x in es.value_sets[name]:
            ev = es.events[e]
            own = rmw.get(e, e if ev.kind == "R" else None)
            mb = root.get(ev.loc)
            if own is None or ev.thread is None or (mb not in starts and mb not in loose) or \
                    (mb in starts and starts[mb][2] is not None and ev.index < starts[mb][2][ev.thread]):
                mb = None
            # its own update, which the chain of sources of its read does not hold (an RMW of its own read)
            key = repr(es.write_value[e]).replace(f"ReadVal(eid={own})", "ReadVal(*)") \
                if e in rmw and reads_of(es.write_value[e]) <= {own} else None
            members.append((e, x, ev.thread, ev.index, mb, own, key))
    fire = {m[:2] for m in members}
    while True:
        free = {g for g, f in frees.items() if f & fire}
        opened = _open(u, c, gates, starts, fair, free)
        if opened is None:
            return None
        kept = set()
        for e, x, thread, index, mb, own, key in members:
            if (e, x) not in fire:
                continue
            if thread is not None and any(k < index and (thread, k) not in opened for k in behind.get(thread, ())):
                continue                # (its thread never gets there)
            if mb is None:
                kept.add((e, x))
                continue
            if mb in starts:
                states = _reached(u, c, mb, starts, behind, opened, minus=key)
            else:
                folds = [_reached(u, c, mb, loose, behind, opened, minus=key, s0=s0) for s0 in loose[mb][1]]
                states = None if any(f is None for f in folds) else set().union(*folds)
            if states is None or any(_may_be_nonzero(x, own, s) for s in states):
                kept.add((e, x))
        if kept == fire:
            return opened
        fire = kept


def _loose_start(u, c: Combo, name: str):
    """For mbarrier `name`, quiet in `c` but for its invals: (per thread its part of _ops, every
    state the chain of sources of an RMW's read may start from: its initial write, its one
    initialisation, each inval), or None."""
    per = [_ops(u, k, t.code) for k, t in enumerate(c.test.threads)]
    if any(p is None for p in per):
        return None
    mine = [p.get(name) for p in per]
    if any(d is not None and d["other"] for d in mine):
        return None
    inits = [s for d in mine if d for s, _ in d["inits"]]
    if len(inits) > 1:
        return None
    values = {0, *inits, *(v for d in mine if d for v in d["invals"]),
              *(d["initial"] for d in mine if d and d["initial"] is not None)}
    return mine, sorted(values)


def _may_be_nonzero(x, own: int, s: int) -> bool:
    """May expression `x` be non-zero where read `own` returns `s` and every other read any value?"""
    v = _partial(x, own, s)
    return v is None or v != 0


def _partial(x, own: int, s: int):
    """`x`'s value where read `own` returns `s`; None where another read decides it."""
    if isinstance(x, ReadVal):
        return s if x.eid == own else None
    if isinstance(x, Ite):
        a, b = _partial(x.a, own, s), _partial(x.b, own, s)
        if a is not None and b is not None:
            return _partial(x.then if _CMPS[x.cmp](a, b) else x.other, own, s)
        t, o = _partial(x.then, own, s), _partial(x.other, own, s)
        return t if t is not None and t == o else None
    if isinstance(x, Bin):
        a, b = _partial(x.a, own, s), _partial(x.b, own, s)
        return None if a is None or b is None else evaluate(Bin(x.op, Const(a), Const(b), x.bits), lambda e: 0)
    return evaluate(x, lambda e: 0)


def _after(c: Combo, thread: str, at: int) -> dict[str, int]:
    """Per thread, the position from which its instructions are after instruction `at` of `thread`
    in base causality in every execution of `c`: program order, and the barrier generations of
    its schedule (syncbar: each member after every other member's arrival, the waiting ones;
    syncwarp: each after each), as checker.isa.barriers.match relates them."""
    start = {t.name: _MANY for t in c.test.threads}
    start[thread] = at + 1
    by = {(x.thread, x.index): x for xs in barriers.uses(c.test).values() for x in xs}
    gens: dict = {}
    for t, i, g in c.test.barrier_generations or ():
        x = by.get((t, i))
        if x is not None and x.key[0] in ("cta", "warp"):
            gens.setdefault((x.key, g), []).append(x)
    changed = True
    while changed:
        changed = False
        for (key, _), members in gens.items():
            for x in members:
                if x.index < start[x.thread]:
                    continue
                for y in members:
                    if y.thread != x.thread and (key[0] == "warp" or y.kind == "sync") and y.index < start[y.thread]:
                        start[y.thread] = y.index
                        changed = True
    return start


def _fold(groups: list, s0: int, prefixes: bool = False, since=None) -> set[int] | None:
    """The states `s0` reaches through every order of the updates of `groups` ([forced count,
    update, count]: the first `forced` of each must be applied, the rest may be; `prefixes`: every
    state on the way; `since`: only the states on the way at or after one it holds of), or None
    past _STATES states."""
    counts = [n for _, _, n in groups]
    if since is None:
        return _fold_all(groups, counts, s0, prefixes)
    states = {tuple(0 for _ in groups): {(s0, since(s0))}}
    out: set[int] = set()
    for vec in sorted(product(*[range(n + 1) for n in counts]), key=sum):
        here = states.pop(vec, None)
        if here is None:
            continue
        if prefixes or all(v >= g[0] for v, g in zip(vec, groups)):
            out |= {s for s, seen in here if seen}
        for i, (_, x, n) in enumerate(groups):
            if vec[i] < n:
                nxt = states.setdefault(vec[:i] + (vec[i] + 1,) + vec[i + 1:], set())
                for s, seen in here:
                    s2 = evaluate(x, lambda e, s=s: s)
                    nxt.add((s2, seen or since(s2)))
                if len(nxt) > _STATES:
                    return None
    return out


def _fold_all(groups: list, counts: list, s0: int, prefixes: bool) -> set[int] | None:
    """_fold without `since`."""
    states = {tuple(0 for _ in groups): {s0}}
    out: set[int] = set()
    for vec in sorted(product(*[range(n + 1) for n in counts]), key=sum):
        here = states.pop(vec, None)
        if here is None:
            continue
        if prefixes or all(v >= g[0] for v, g in zip(vec, groups)):
            out |= here
        for i, (_, x, n) in enumerate(groups):
            if vec[i] < n:
                nxt = states.setdefault(vec[:i] + (vec[i] + 1,) + vec[i + 1:], set())
                nxt.update(evaluate(x, lambda e, s=s: s) for s in here)
                if len(nxt) > _STATES:
                    return None
    return out
