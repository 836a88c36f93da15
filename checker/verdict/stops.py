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
from ..model.values import evaluate, reads_of
from ..unfold.variants import Combo, single
from .bundled import bundled
from .quiet import quiet_mbarriers

_MANY = 1 << 30
_STATES = 4096          # past this many states of one mbarrier's fold, no refutation
# after this many combinations of one test whose every gate value-dependent undefined behaviour
# may free (each cost a lowering), and none with a gate it may not, the test's are not lowered
# for _unreachable (Triton's attention: every gate of every such combination may be freed)
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
            d = out.setdefault(root[ev.loc], {"ops": [], "inits": [], "initial": None, "other": False, "waits": []})
            w = code[kept[ev.index]]
            if w.family in ("mbarrier.try_wait", "mbarrier.test_wait") and w.await_value == 1:
                d["waits"].append((w, kept[ev.index]))
            continue
        if ev.kind != "W" or ev.loc not in root:
            continue
        x = es.write_value[ev.eid]
        d = out.setdefault(root[ev.loc], {"ops": [], "inits": [], "initial": None, "other": False, "waits": []})
        if ev.thread is None:
            # a `memory:` mbarrier's start state only where the lowering made it one (its initial
            # write is an init, tagged MB, only in a lowering with an mbarrier operation: a thread
            # alone with none writes a plain 0, which is no start of the others' fold)
            if "MB" in ev.tags or root[ev.loc] not in declared:
                d["initial"] = evaluate(x, lambda e: 0)
        elif "MB" in ev.tags and ev.eid in rmw and reads_of(x) <= {rmw[ev.eid]} and (rmw[ev.eid], ev.eid) in dep:
            r = rmw[ev.eid]
            d["ops"].append((repr(x).replace(f"ReadVal(eid={r})", "ReadVal(*)"), x, kept[ev.index]))
        elif "MB_INIT" in ev.tags and not reads_of(x):
            d["inits"].append((evaluate(x, lambda e: 0), kept[ev.index]))
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
    if any(d is not None and d["other"] for d in mine):
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
    quiet mbarrier, base-causality-after its initialisation, that no value-dependent undefined
    behaviour may free) reads no state the operations that can precede it make
    (docs/model.md#a18, "Combinations with no execution")?

    Least fixpoint: a gate (such a wait) is open when some state of its mbarrier, folded from the
    start through any sequence of the RMWs that may precede it, completes it; an RMW may precede
    it unless its thread made it after a gate that is not open. Where a gate stays closed, no
    execution exists: in one, take the closed gate first in (rf | dep)+ (acyclic: NoThinAir); it
    reads a state made of the start and the RMWs coherence-before its source, a chain of rf and
    dep into it (each RMW reads its predecessor, its write depends on its read); an RMW a thread
    made after a gate depends on that gate's read (the await is a control dependency, dep), so
    that gate is before the first in (rf | dep)+, hence open; so the state is one the fold
    reaches."""
    gates: list = []                    # (thread, index, wait, mbarrier)
    starts: dict = {}
    for name in sorted(quiet):
        st = _start(u, c, name)
        if st is None:
            continue
        mine, s0, after = st
        waits = [(t.name, j, w, name) for t, d in zip(c.test.threads, mine) if d for w, j in d["waits"]
                 if w.quals.get("parity") and isinstance(w.operands[2], Imm)
                 and (after is None or j >= after[t.name])]
        if waits:
            starts[name] = (mine, s0)
            gates += waits
    if not gates or _opens_all(u, c, gates, starts, fair):
        return False
    # (removing gates only opens more: the combination's lowering, for freeing, only when needed;
    # and not once _GIVE_UP lowerings of the test have found every gate freed, none kept)
    seen = u.__dict__.setdefault("_stop_freed", [0, 0])     # [every gate freed, some gate kept]
    if seen[0] >= _GIVE_UP and not seen[1]:
        return False
    free = _freed(u, c)
    if free is None:
        return False
    gates = [g for g in gates if g[:2] not in free]
    seen[0 if not gates else 1] += 1
    return bool(gates) and not _opens_all(u, c, gates, starts, fair)


def _opens_all(u, c: Combo, gates: list, starts: dict, fair) -> bool:
    """Does the least fixpoint of _unreachable open every gate of `gates`?"""
    cache = u.__dict__.setdefault("_stop_reach", {})
    behind: dict = {}                   # thread -> indices of its gates
    for g in gates:
        behind.setdefault(g[0], []).append(g[1])
    opened: set = set()
    changed = True
    while changed:
        changed = False
        closed = [g for g in gates if g[:2] not in opened]
        for thread, j, w, name in closed:
            mine, s0 = starts[name]
            groups: OrderedDict = OrderedDict()
            for t, d in zip(c.test.threads, mine):
                for key, x, i in (d["ops"] if d else ()):
                    if any(k < i and (t.name, k) not in opened for k in behind.get(t.name, ())):
                        continue
                    g = groups.setdefault(key, [0, x, 0])
                    g[2] += 1
            rk = (name, tuple(sorted(groups)), tuple(g[2] for g in groups.values()), s0)
            if rk not in cache:
                cache[rk] = _fold(list(groups.values()), s0, prefixes=True)
            states = cache[rk]
            if states is None:
                return True             # (past _STATES: no refutation)
            loc = u.names.get(name, name)
            if any(fair(("wait", thread, w, loc), {loc: s}) for s in states):
                opened.add((thread, j))
                changed = True
    return len(opened) == len(gates)


def _freed(u, c: Combo) -> set | None:
    """The (thread, instruction index) of the reads of `c` that value-dependent undefined
    behaviour may free from their await (EventStructure.freeing, A7: an execution in which it
    fires need not satisfy them), from the combination's own lowering; None where it cannot be
    lowered."""
    try:
        with limits.use(u.lim):
            es = lower(c.test if c.stuck else single(c.test))
    except (LitmusError, LimitExceeded, NeverCompletes):
        return None
    return {(ev.thread, ev.index) for ev in es.events if ev.kind == "R" and es.freeing((ev.eid,))}


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


def _fold(groups: list, s0: int, prefixes: bool = False) -> set[int] | None:
    """The states `s0` reaches through every order of the updates of `groups` ([forced count,
    update, count]: the first `forced` of each must be applied, the rest may be; `prefixes`: every
    state on the way), or None past _STATES states."""
    counts = [n for _, _, n in groups]
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
