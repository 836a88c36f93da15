"""The concrete algebra: sets are frozenset[int], relations frozenset[tuple[int, int]].

Used by the brute-force engine once per candidate execution, so closures and cycle tests work on
adjacency maps (O(V·E)) rather than by repeated squaring of pair sets.
"""
from __future__ import annotations

from collections import defaultdict, deque
from typing import Callable, Iterable

from ..errors import InternalError

Set = frozenset  # frozenset[int]
Rel = frozenset  # frozenset[tuple[int, int]]

_FIX_LIMIT = 100_000
_INDEXES = 256


def _successors(r: Rel) -> dict[int, list[int]]:
    succ: dict[int, list[int]] = {}
    for a, b in r:
        targets = succ.get(a)
        if targets is None:
            succ[a] = [b]
        else:
            targets.append(b)
    return succ


def _closure(r: Rel) -> Rel:
    succ = _successors(r)
    out = []
    for start in list(succ):
        seen: set[int] = set()
        todo = list(succ[start])
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo.extend(succ.get(x, ()))
        out.extend((start, x) for x in seen)
    return frozenset(out)


def find_cycle(r: Iterable[tuple[int, int]]) -> list[int] | None:
    """A shortest cycle of `r` as [e0, e1, ..., ek] (ek -> e0 closes it), or None if r is acyclic.

    Deterministic: among the shortest cycles, the one found from the smallest start event, with
    successors explored in increasing order; the cycle is rotated to start at its smallest event.
    """
    succ = {a: sorted(bs) for a, bs in _successors(frozenset(r)).items()}
    best: list[int] | None = None
    for start in sorted(succ):
        parent = {start: start}
        queue = deque([start])
        found = None
        while queue and found is None:
            x = queue.popleft()
            for y in succ.get(x, ()):
                if y == start:
                    found = x
                    break
                if y not in parent:
                    parent[y] = x
                    queue.append(y)
        if found is None:
            continue
        path = [found]
        while path[-1] != start:
            path.append(parent[path[-1]])
        path.reverse()
        if best is None or len(path) < len(best):
            best = path
            if len(best) == 1:
                break
    if best is None:
        return None
    k = best.index(min(best))
    return best[k:] + best[:k]


class ConcreteAlgebra:
    """checker.cat.algebra.Algebra over explicit frozensets of events (ints)."""

    def __init__(self, universe: Iterable[int]):
        self._universe = frozenset(universe)
        self._identity = frozenset((e, e) for e in self._universe)
        self._indexes: dict[int, tuple[Rel, dict]] = {}     # id -> (relation, its successors)

    def empty_set(self) -> Set:
        return frozenset()

    def universe(self) -> Set:
        return self._universe

    def empty_rel(self) -> Rel:
        return frozenset()

    def identity(self) -> Rel:
        return self._identity

    def union(self, a, b):
        return a | b

    def inter(self, a, b):
        return a & b

    def diff(self, a, b):
        return a - b

    def set_complement(self, s: Set) -> Set:
        return self._universe - s

    def rel_complement(self, r: Rel) -> Rel:
        return frozenset((a, b) for a in self._universe for b in self._universe if (a, b) not in r)

    def compose(self, a: Rel, b: Rel) -> Rel:
        if not a or not b:
            return frozenset()
        succ = self._index(b)
        out = []
        for x, y in a:
            targets = succ.get(y)
            if targets is not None:
                for z in targets:
                    out.append((x, z))
        return frozenset(out)

    def _index(self, r: Rel) -> dict[int, list[int]]:
        """r's successor lists, kept for the first _INDEXES relations indexed: brute force composes
        with the same static relations (the same objects) on every candidate. (A kept relation
        stays alive, so no other object can take its id.)"""
        hit = self._indexes.get(id(r))
        if hit is not None and hit[0] is r:
            return hit[1]
        succ = _successors(r)
        if len(self._indexes) < _INDEXES:
            self._indexes[id(r)] = (r, succ)
        return succ

    def inverse(self, r: Rel) -> Rel:
        return frozenset((b, a) for a, b in r)

    def plus(self, r: Rel) -> Rel:
        return _closure(r)

    def star(self, r: Rel) -> Rel:
        return _closure(r) | self._identity

    def opt(self, r: Rel) -> Rel:
        return r | self._identity

    def ident(self, s: Set) -> Rel:
        return frozenset((e, e) for e in s)

    def product(self, s: Set, t: Set) -> Rel:
        return frozenset((a, b) for a in s for b in t)

    def domain(self, r: Rel) -> Set:
        return frozenset(a for a, _ in r)

    def range(self, r: Rel) -> Set:
        return frozenset(b for _, b in r)

    def fix(self, step: Callable[[tuple], tuple], start: tuple, label: str) -> tuple:
        current = start
        for _ in range(_FIX_LIMIT):
            following = step(current)
            if following == current:
                return current
            current = following
        raise InternalError(f"let rec {label}: no fixpoint after {_FIX_LIMIT} iterations")

    def acyclic(self, r: Rel, label: str) -> bool:
        indegree: dict[int, int] = defaultdict(int)
        succ = _successors(r)
        for _, b in r:
            indegree[b] += 1
        ready = [a for a in succ if indegree[a] == 0]
        removed = 0
        while ready:
            x = ready.pop()
            removed += 1
            for y in succ.get(x, ()):
                indegree[y] -= 1
                if indegree[y] == 0:
                    ready.append(y)
        nodes = set(succ) | set(indegree)
        return removed == len(nodes)

    def irreflexive(self, r: Rel, label: str) -> bool:
        return all(a != b for a, b in r)

    def is_empty(self, v, label: str) -> bool:
        return not v

    def negate(self, c: bool) -> bool:
        return not c
