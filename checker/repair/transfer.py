"""Reading an execution of one edited program in another, and asking whether it is still a
counterexample there (`survives`): the concrete test behind the counterexample-guided search.

An execution (checker.engines.base.Execution) fixes reads-from, coherence and the Fence-SC
order. Edits never add or remove a write, and inserted instructions read only when they are
waits, so the memory events of two edited programs correspond one to one through their names
(checker.repair.program), except for the reads of inserted waits. `transfer` renames rf and co,
keeps the Fence-SC pairs of the fences both programs have, and orders every fence.sc the source
program lacks by a linear extension of the kept pairs and base causality (or program order, for
a model without `bc`); it gives up (None) where the programs differ in a read or a write, or
where no such order exists.

`survives` then evaluates the model concretely on the transferred execution: it is a
counterexample of the destination program when every axiom holds and the failure still shows
(the forbidden condition's outcome is unchanged, since values are; a flag must fire again). A
True answer is exact. A False answer may be an artefact of the chosen Fence-SC extension; the
search only ever uses True answers to conclude anything (checker.repair.search).
"""
from __future__ import annotations

from ..cat.interp import Model
from ..engines.base import Execution, concrete_evaluation
from ..model.observables import holds
from .program import Program
from .target import Failure


def transfer(x: Execution, src: Program, dst: Program, model: Model, options=frozenset()) -> Execution | None:
    s_names, d_eid = src.names, dst.eid
    ses, des = src.es, dst.es

    def mem_names(p: Program) -> set:
        return {p.names[e.eid] for e in p.es.events if e.is_memory}

    if mem_names(src) != mem_names(dst):
        return None
    for e in ses.events:
        if e.is_memory:
            d = des.events[d_eid[s_names[e.eid]]]
            if d.kind != e.kind or d.loc != e.loc:
                return None

    def rename(pairs):
        out = set()
        for a, b in pairs:
            na, nb = d_eid.get(s_names[a]), d_eid.get(s_names[b])
            if na is not None and nb is not None:
                out.add((na, nb))
        return frozenset(out)

    rf = rename(x.rf)
    orders = {name: rename(rel) for name, rel in x.orders.items() if name != "fsc"}
    fsc = rename(x.orders.get("fsc", ()))
    scs = sorted(des.sets.get("F", frozenset()) & des.sets.get("SC", frozenset()))
    values = {d_eid[s_names[r]]: v for r, v in x.read_values.items() if s_names[r] in d_eid}
    missing = [f for f in scs if not any(f in p for p in fsc)] if len(scs) > 1 else []
    if missing:
        partial = Execution(rf, {**orders, "fsc": fsc}, values, x.outcome)
        ev = concrete_evaluation(des, model, partial, options, until="bc")
        kind, bc = ev.env.get("bc", ("rel", None))
        base = bc if kind == "rel" and bc is not None else des.relations.get("po", frozenset())
        order = _linear(scs, set(fsc) | {(a, b) for a, b in base if a in scs and b in scs and a != b})
        if order is None:
            return None
        fsc = frozenset((a, b) for i, a in enumerate(order) for b in order[i + 1:])
    if len(scs) > 1 or fsc:
        orders["fsc"] = fsc
    return Execution(rf, orders, values, x.outcome)


def _linear(nodes, edges) -> list | None:
    """A linear extension of `edges` over `nodes` (None if they are cyclic)."""
    succ = {n: set() for n in nodes}
    indeg = {n: 0 for n in nodes}
    for a, b in edges:
        if b not in succ[a]:
            succ[a].add(b)
            indeg[b] += 1
    ready = sorted(n for n in nodes if indeg[n] == 0)
    out = []
    while ready:
        n = ready.pop(0)
        out.append(n)
        for m in sorted(succ[n]):
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
        ready.sort()
    return out if len(out) == len(nodes) else None


def survives(x: Execution, failure: Failure, src: Program, dst: Program, model: Model,
             options=frozenset()) -> bool:
    """Is `x` (an execution of `src` showing `failure`) a consistent execution of `dst` that
    still shows it? (Exact when True; see the module docstring.)"""
    y = transfer(x, src, dst, model, options)
    if y is None:
        return False
    ev = concrete_evaluation(dst.es, model, y, options)
    fired = False
    for check, value in ev.checks:
        if check.flag:
            if check.name == failure.flag and value:
                fired = True
        elif not value:
            return False
    if failure.flag is not None:
        return fired
    return failure.cond is None or holds(failure.cond, dict(y.outcome), dst.es.names)
