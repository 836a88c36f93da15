"""The exhaustive search by increasing cost (`ptxmc fix --search exhaustive`): every candidate
set of cost 0, 1, 2, ... is considered, in order, until a level holds a repair; that level is
finished (every repair of least cost) and the search stops.

Pruning, with the clauses of checker.repair.problem (the same ones the optimizer of
checker.repair.cegis learns, so both searches prove the same thing):
- a set must contain an edit of every 'under' clause and must not cover the core of an 'over'
  clause; sets are built by branching on the first 'under' clause the set does not meet yet
  (one edit of it per branch), so only sets in which every edit is needed by some clause are
  built. That loses nothing: a set with an edit no clause needs has a cheaper subset meeting
  every clause, which was checked at its own level and taught a clause the subset misses.
- an acquire-side insertion brings a branch over the barriers at its point.
Without monotonicity (problem.py) the clauses only exclude the sets checked, and every set of
each cost is built.

A level with nothing left to build and no branch cut by the cost bound means the space is
exhausted: no repair exists.
"""
from __future__ import annotations

from .problem import Problem, now, set_order


class _Level:
    def __init__(self, problem: Problem, clauses: list, level: int, deadline: float):
        self.p, self.clauses, self.level, self.deadline = problem, clauses, level, deadline
        self.found: list[tuple] = []
        self.seen: set = set()
        self.next_level: int | None = None      # the least cost above `level` a branch reached
        self.cands = sorted(problem.cands, key=lambda c: (c.cost, c.key))

    def cut(self, cost: int) -> None:
        self.next_level = cost if self.next_level is None else min(self.next_level, cost)

    def ok_over(self, chosen: dict) -> bool:
        keys = frozenset(e.key for e in chosen.values())
        return all(self.p.satisfies(cl, keys, chosen) for cl in self.clauses if cl.kind in ("over", "superset"))

    def leaf(self, chosen: dict, cost: int) -> None:
        keys = frozenset(e.key for e in chosen.values())
        if cost == self.level and keys not in self.seen:
            self.seen.add(keys)
            if all(self.p.satisfies(cl, keys, chosen) for cl in self.clauses):
                self.found.append(tuple(sorted(chosen.values(), key=lambda e: e.key)))

    def branch(self, chosen: dict, cost: int, options) -> None:
        for c in options:
            if c.slot in chosen:
                continue
            if cost + c.cost > self.level:
                self.cut(cost + c.cost)
                continue
            nxt = {**chosen, c.slot: c}
            if self.ok_over(nxt):
                self.run(nxt, cost + c.cost)

    def run(self, chosen: dict, cost: int) -> None:
        if now() > self.deadline:
            raise TimeoutError
        keys = {e.key for e in chosen.values()}
        for e in chosen.values():
            if e.needs_barrier is not None and not any(b.kind == "barrier" and e.needs_barrier in b.places
                                                       for b in chosen.values()):
                self.branch(chosen, cost, [b for b in self.cands if b.kind == "barrier"
                                           and e.needs_barrier in b.places])
                return
        if self.p.monotone:
            unhit = next((cl for cl in self.clauses if cl.kind == "under" and not (cl.keys & keys)), None)
            if unhit is None:
                self.leaf(chosen, cost)
                return
            self.branch(chosen, cost, [c for c in self.cands if c.key in unhit.keys])
            return
        self.leaf(chosen, cost)
        start = max((self.cands.index(e) for e in chosen.values()), default=-1) + 1
        self.branch(chosen, cost, self.cands[start:])


def search(problem: Problem, max_repairs: int, deadline: float) -> tuple[list, str]:
    """Like checker.repair.cegis.search: (repairs, 'proven' | 'none' | 'budget' | 'cut'), the
    repairs the first `max_repairs` of the least level in `set_order`. The sets of a level are
    checked in that order, and the level is finished past `max_repairs` for any set that precedes
    the last one kept: a clause learnt late in the level can open a set built before none of it."""
    problem.deadline = deadline
    order = set_order(problem.test)
    clauses: list = []
    repairs: list = []
    level = 0

    def kept():
        repairs.sort(key=order)
        del repairs[max_repairs:]
        return repairs

    try:
        while True:
            lv = _Level(problem, clauses, level, deadline)
            lv.run({}, 0)
            pending = sorted(lv.found, key=order)
            while pending:
                edits = pending.pop(0)
                if len(repairs) >= max_repairs and order(edits) > order(kept()[-1]):
                    continue        # (it would not be reported)
                keys = frozenset(e.key for e in edits)
                chosen = {e.slot: e for e in edits}
                if not all(problem.satisfies(cl, keys, chosen) for cl in clauses):
                    continue
                status, failure, src = problem.check(edits)
                if status == "ok":
                    repairs.append(edits)
                    clauses.append(_exclude(problem, edits))
                else:
                    clauses.append(problem.learn(edits, status, failure, src))
                if not pending:     # a clause learnt at this level may open sets of this level
                    again = _Level(problem, clauses, level, deadline)
                    again.run({}, 0)
                    pending = sorted((s for s in again.found if frozenset(e.key for e in s) not in lv.seen), key=order)
                    lv.seen |= again.seen
                    if again.next_level is not None:
                        lv.cut(again.next_level)
            if repairs:
                return kept(), "proven"
            if lv.next_level is None:
                return repairs, "none"
            level = lv.next_level
    except TimeoutError:
        # a repair found is at the least level (every lower level was exhausted): its cost is proven
        return kept(), ("cut" if repairs else "budget")


def _exclude(problem: Problem, edits):
    """A found repair is excluded with its supersets (which cost more)."""
    from .problem import Clause
    return Clause("superset", core=tuple(edits))
