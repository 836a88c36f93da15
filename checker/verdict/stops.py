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
asked)."""
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
from ..unfold.variants import Combo
from .quiet import quiet_mbarriers

_MANY = 1 << 30
_STATES = 4096          # past this many states of one mbarrier's fold, no refutation


def refuted(u, c: Combo, fair) -> bool:
    """Does no execution of `c` (u's combination) hang, by the final state of an mbarrier one of
    its cut threads waits on (see the module)? False where that cannot be shown. `fair`: the
    fairness check of checker.verdict.liveness (its _fair), which reads the final state."""
    if u.test.kernels:
        return False
    quiet = u.__dict__.get("_quiet_mb")
    if quiet is None:
        quiet = u._quiet_mb = quiet_mbarriers(u.test)
    for thread, spin in c.cut:
        for w in spin.waits:
            if not w.quals.get("parity") or not isinstance(w.operands[2], Imm) or w.operands[1].base not in quiet:
                continue
            states = _finals(u, c, w.operands[1].base)
            loc = u.names.get(w.operands[1].base, w.operands[1].base)
            if states and not any(fair(("wait", thread, w, loc), {loc: s}) for s in states):
                return True
    return False


def _ops(u, k: int, code) -> dict | None:
    """What thread `k` running `code` alone does to each mbarrier named in it: {declared name:
    {"ops": [(key, update, index)], "inits": [(state, index)], "initial": state}}, index being the
    instruction's position in `code`; None where it cannot be lowered alone."""
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
    for ev in es.events:
        if ev.kind != "W" or ev.loc not in root:
            continue
        x = es.write_value[ev.eid]
        d = out.setdefault(root[ev.loc], {"ops": [], "inits": [], "initial": None, "other": False})
        if ev.thread is None:
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


def _finals(u, c: Combo, name: str) -> set[int] | None:
    """The final states of mbarrier `name` in the executions of `c` (see the module), or None."""
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
        after = _after(c, thread, at)
    else:                               # the initial write (first in coherence) is the start
        s0, after = initial, None
    groups: OrderedDict = OrderedDict()     # (update, forced) -> [forced count, updates]
    for t, d in zip(c.test.threads, mine):
        for key, x, j in (d["ops"] if d else ()):
            forced = after is None or j >= after[t.name]
            g = groups.setdefault((key, forced), [0, x, 0])
            g[2] += 1
            g[0] += forced
    return _fold(list(groups.values()), s0)


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


def _fold(groups: list, s0: int) -> set[int] | None:
    """The states `s0` reaches through every order of the updates of `groups` ([forced count,
    update, count]: the first `forced` of each must be applied, the rest may be), or None past
    _STATES states."""
    counts = [n for _, _, n in groups]
    states = {tuple(0 for _ in groups): {s0}}
    out: set[int] = set()
    for vec in sorted(product(*[range(n + 1) for n in counts]), key=sum):
        here = states.pop(vec, None)
        if here is None:
            continue
        if all(v >= g[0] for v, g in zip(vec, groups)):
            out |= here
        for i, (_, x, n) in enumerate(groups):
            if vec[i] < n:
                nxt = states.setdefault(vec[:i] + (vec[i] + 1,) + vec[i + 1:], set())
                nxt.update(evaluate(x, lambda e, s=s: s) for s in here)
                if len(nxt) > _STATES:
                    return None
    return out
