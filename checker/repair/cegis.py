"""The counterexample-guided search (the default): an optimizer proposes, a Session refutes.

One Boolean selector per candidate edit; hard constraints: at most one edit per slot, an
acquire-side insertion only with a barrier at its point, and every clause learnt so far
(checker.repair.problem); objective: the least total cost (z3.Optimize). Each proposal is
checked (stored counterexamples first, then a Session); a failure becomes a clause, a success a
repair, which is then excluded with all its supersets so the next least-cost proposal is another
repair. The loop ends when the optimizer's least cost exceeds the repairs' cost (every repair of
least cost is found), when it has no model (no repair exists in the candidate space), when `max`
repairs are found, or at the deadline (then nothing is proven).

Why it is a proof: every clause is satisfied by every repair (problem.py says why for each
kind), so a proposal of cost k means no set cheaper than k satisfies the clauses, hence none is a
repair.
"""
from __future__ import annotations

import z3

from ..watchdog import z3_context
from .problem import Clause, Problem, now


def search(problem: Problem, max_repairs: int, deadline: float) -> tuple[list, str]:
    """(repairs: lists of edits, every one of least cost, in the order found; status: 'proven' |
    'none' (no repair in the space) | 'budget' (deadline reached; nothing proven) | 'cut' (deadline
    reached after a repair: its cost is the least, proven, but more repairs of it may exist))."""
    problem.deadline = deadline
    ctx = z3_context()
    opt = z3.Optimize(ctx=ctx)
    sel = {c.key: z3.Bool(f"e{i}", ctx) for i, c in enumerate(problem.cands)}
    for alts in problem.slots.values():
        if len(alts) > 1:
            opt.add(z3.PbLe([(sel[a.key], 1) for a in alts], 1))
    for c in problem.cands:
        if c.needs_barrier is not None:
            bars = [sel[b.key] for b in problem.cands if b.kind == "barrier" and c.needs_barrier in b.places]
            opt.add(z3.Implies(sel[c.key], z3.Or(bars) if bars else z3.BoolVal(False, ctx)))
    cost = z3.Sum([z3.If(sel[c.key], z3.IntVal(c.cost, ctx), z3.IntVal(0, ctx)) for c in problem.cands]) \
        if problem.cands else z3.IntVal(0, ctx)
    opt.minimize(cost)
    repairs: list = []
    best = None
    while True:
        if now() > deadline:
            return repairs, ("cut" if repairs else "budget")
        opt.set("timeout", max(1, int((deadline - now()) * 1000)))
        r = opt.check()
        if r == z3.unknown:
            return repairs, ("cut" if repairs else "budget")
        if r == z3.unsat:
            return repairs, ("proven" if repairs else "none")
        m = opt.model()
        chosen = tuple(c for c in problem.cands if z3.is_true(m.eval(sel[c.key], model_completion=True)))
        total = sum(c.cost for c in chosen)
        if best is not None and total > best:
            return repairs, "proven"
        status, failure, src = problem.check(chosen)
        if status == "ok":
            repairs.append(chosen)
            best = total
            opt.add(z3.Or([z3.Not(sel[c.key]) for c in chosen]) if chosen else z3.BoolVal(False, ctx))
            if len(repairs) >= max_repairs:
                return repairs, "proven"
            continue
        opt.add(_constraint(problem.learn(chosen, status, failure, src), sel, problem, ctx))


def _constraint(clause: Clause, sel: dict, problem: Problem, ctx) -> z3.BoolRef:
    if clause.kind == "under":
        return _or([sel[k] for k in sorted(clause.keys)], ctx)
    if clause.kind == "exact":
        keys = {e.key for e in clause.core}
        return _or([z3.Not(sel[k]) if k in keys else sel[k] for k in sel], ctx)
    # 'over': not every edit of the core covered. An empty core (the unedited program already
    # fails this way, and edits only remove executions) is a clause no set satisfies: no repair.
    return _or([z3.Not(_or([sel[c.key] for c in problem.slots[e.slot] if c.dominates(e)], ctx))
                for e in clause.core], ctx)


def _or(terms: list, ctx) -> z3.BoolRef:
    """The disjunction of `terms` in `ctx` (z3.Or of no terms would be built in another context)."""
    return z3.Or(terms) if terms else z3.BoolVal(False, ctx)
