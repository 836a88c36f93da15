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
from .problem import Clause, Problem, edit_order, now


def search(problem: Problem, max_repairs: int, deadline: float) -> tuple[list, str]:
    """(repairs: lists of edits, every one of least cost, in the order of `set_order`; status:
    'proven' | 'none' (no repair in the space) | 'budget' (deadline reached; nothing proven) |
    'cut' (deadline reached after a repair: its cost is the least, proven, but more repairs of it
    may exist))."""
    problem.deadline = deadline
    ctx = z3_context()
    opt = z3.Optimize(ctx=ctx)
    # the same constraints without the objective: the first repair in the canonical order is
    # picked with it (`_first`), by satisfiability questions under assumptions
    plain = z3.Solver(ctx=ctx)
    sel = {c.key: z3.Bool(f"e{i}", ctx) for i, c in enumerate(problem.cands)}

    def add(constraint) -> None:
        opt.add(constraint)
        plain.add(constraint)

    for alts in problem.slots.values():
        if len(alts) > 1:
            add(z3.PbLe([(sel[a.key], 1) for a in alts], 1))
    for c in problem.cands:
        if c.needs_barrier is not None:
            bars = [sel[b.key] for b in problem.cands if b.kind == "barrier" and c.needs_barrier in b.places]
            add(z3.Implies(sel[c.key], z3.Or(bars) if bars else z3.BoolVal(False, ctx)))
    cost = z3.Sum([z3.If(sel[c.key], z3.IntVal(c.cost, ctx), z3.IntVal(0, ctx)) for c in problem.cands]) \
        if problem.cands else z3.IntVal(0, ctx)
    opt.minimize(cost)
    order = sorted(problem.cands, key=edit_order(problem.test))
    repairs: list = []
    passed: set = set()         # sets checked and found repairs, not reported yet
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
        # A repair of least cost, but which one the optimizer proposes among sets of equal cost
        # depends on its state (what it learnt, what the process asked before): the one reported
        # is the first in the canonical order of the sets that satisfy every clause. Every repair
        # satisfies every clause, so when that set is a repair, no repair not yet reported
        # precedes it; when it is not, it teaches a clause that excludes it, and the loop goes on.
        for cand in (chosen, None):
            if cand is None:
                cand = _first(plain, sel, order, total, chosen, problem, deadline)
                if cand is None:
                    return repairs, ("cut" if repairs else "budget")
            keys = frozenset(c.key for c in cand)
            if keys not in passed:
                status, failure, src = problem.check(cand)
                if status != "ok":
                    add(_constraint(problem.learn(cand, status, failure, src), sel, problem, ctx))
                    break
                passed.add(keys)
        else:
            passed.discard(keys)
            repairs.append(cand)
            best = total
            add(z3.Or([z3.Not(sel[c.key]) for c in cand]) if cand else z3.BoolVal(False, ctx))
            if len(repairs) >= max_repairs:
                return repairs, "proven"


def _first(solver: z3.Solver, sel: dict, order: list, bound: int, witness: tuple, problem: Problem,
           deadline: float) -> tuple | None:
    """The first set in `set_order` of cost at most `bound` that satisfies the solver's constraints
    (`witness` is one), built edit by edit: the next edit is the first in `edit_order`, after those
    decided, that some set with the edits taken so far (and without those left out) holds. It is
    found by bisection over the undecided edits up to the witness's next one (does some set hold
    one of the first k?), a few questions per edit taken rather than one per candidate (a
    skeleton has hundreds). None when the solver cannot answer before the deadline."""
    solver.push()
    try:
        solver.add(z3.PbLe([(sel[c.key], c.cost) for c in problem.cands], bound) if problem.cands
                   else z3.BoolVal(True, solver.ctx))
        pos = {c.key: i for i, c in enumerate(order)}
        have = {pos[c.key] for c in witness}
        p = 0                               # order[:p] is decided
        asked = 0
        while True:
            later = [i for i in have if i >= p]
            if not later:
                break                       # (the witness takes nothing more: nothing more is taken)
            lo, hi = p, min(later)          # the next edit taken is in order[lo..hi]
            while lo < hi:
                if now() > deadline:
                    return None
                mid = (lo + hi) // 2
                asked += 1
                q = z3.Bool(f"first{asked}", solver.ctx)
                solver.add(z3.Implies(q, z3.Or([sel[order[i].key] for i in range(p, mid + 1)])))
                solver.set("timeout", max(1, int((deadline - now()) * 1000)))
                r = solver.check(q)
                if r == z3.unknown:
                    return None
                if r == z3.sat:
                    m = solver.model()
                    have = {i for i, c in enumerate(order) if z3.is_true(m.eval(sel[c.key], model_completion=True))}
                    hi = min(i for i in have if i >= p)
                else:
                    lo = mid + 1
            for i in range(p, hi):
                solver.add(z3.Not(sel[order[i].key]))
            solver.add(sel[order[hi].key])
            p = hi + 1
        return tuple(c for c in problem.cands if pos[c.key] in have)
    finally:
        solver.pop()


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
