"""The bounds algebra: for every cat value, which entries the symbolic algebra gives a term (may)
and which of those terms are the constant True (must), computed on bitsets without a term.

checker.cat.symbolic folds constants as it goes: an entry is absent where the edge cannot exist,
Python True where it must, a Z3 term otherwise. Every operator decides presence and constancy
from its operands' alone (t_and, t_or, t_not on None / True / a term), so this algebra follows
the symbolic one exactly: for every expression, `may` is the key set of its symbolic value and
`must` the keys whose term is True. checker.cat.demand uses the bounds to find which entries of
each value the checks can need before any term is built.

A set is an int (bit e: event e); a relation a list of n such ints, one row per event.
"""
from __future__ import annotations

from typing import Callable, Iterator

from ..errors import InternalError


class Bound:
    """(may, must) of one value: ints for a set, lists of row ints for a relation."""

    __slots__ = ("may", "must")

    def __init__(self, may, must):
        self.may = may
        self.must = must

    def __bool__(self) -> bool:         # (the interpreter skips an operand next to an empty one)
        may = self.may
        return bool(may) if isinstance(may, int) else any(may)


def bits(x: int) -> Iterator[int]:
    """The set bits of x, lowest first."""
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def popcount(v) -> int:
    return v.bit_count() if isinstance(v, int) else sum(r.bit_count() for r in v)


def compose_rows(a: list[int], b: list[int]) -> list[int]:
    out = []
    for row in a:
        acc = 0
        for m in bits(row):
            acc |= b[m]
        out.append(acc)
    return out


def transpose(a: list[int]) -> list[int]:
    out = [0] * len(a)
    for x, row in enumerate(a):
        bit = 1 << x
        for y in bits(row):
            out[y] |= bit
    return out


def closure(a: list[int]) -> list[int]:
    """The transitive closure (Warshall's algorithm on rows)."""
    out = list(a)
    for k in range(len(out)):
        bit, row_k = 1 << k, out[k]
        if not row_k:
            continue
        for i, row in enumerate(out):
            if row & bit:
                out[i] = row | row_k
                if i == k:
                    row_k = out[k]
    return out


def from_keys(keys, n: int, rel: bool):
    """The bitset of a symbolic value's keys (events, or (a, b) pairs)."""
    if not rel:
        acc = 0
        for e in keys:
            acc |= 1 << e
        return acc
    rows = [0] * n
    for a, b in keys:
        rows[a] |= 1 << b
    return rows


def from_symbolic(value: dict, n: int, rel: bool, true) -> Bound:
    """The bound of a symbolic value (`true`: the symbolic algebra's constant True)."""
    return Bound(from_keys(value, n, rel), from_keys([k for k, t in value.items() if t is true], n, rel))


class BoundsAlgebra:
    """Implements checker.cat.algebra.Algebra over Bound values: each operator computes the
    presence and constancy the symbolic one would (checker.cat.symbolic)."""

    def __init__(self, n: int):
        self.n = n
        self.all = (1 << n) - 1

    def _zero(self) -> list[int]:
        return [0] * self.n

    def _diag(self) -> list[int]:
        return [1 << e for e in range(self.n)]

    # constants
    def empty_set(self):
        return Bound(0, 0)

    def universe(self):
        return Bound(self.all, self.all)

    def empty_rel(self):
        return Bound(self._zero(), self._zero())

    def identity(self):
        return Bound(self._diag(), self._diag())

    # boolean operators: symbolic t_or is True with one True operand, t_and with both, a
    # difference keeps an entry unless the right one is True and is True where the left one is
    # and the right one is absent; a complement is present where the operand is not True
    def union(self, a, b):
        return Bound(_pointwise(a.may, b.may, int.__or__), _pointwise(a.must, b.must, int.__or__))

    def inter(self, a, b):
        return Bound(_pointwise(a.may, b.may, int.__and__), _pointwise(a.must, b.must, int.__and__))

    def diff(self, a, b):
        return Bound(_pointwise(a.may, b.must, _minus), _pointwise(a.must, b.may, _minus))

    def set_complement(self, s):
        return Bound(self.all & ~s.must, self.all & ~s.may)

    def rel_complement(self, r):
        return Bound([self.all & ~x for x in r.must], [self.all & ~x for x in r.may])

    # relations
    def compose(self, a, b):
        return Bound(compose_rows(a.may, b.may), compose_rows(a.must, b.must))

    def inverse(self, r):
        return Bound(transpose(r.may), transpose(r.must))

    def plus(self, r):
        return Bound(closure(r.may), closure(r.must))

    def star(self, r):
        return self.union(self.plus(r), self.identity())

    def opt(self, r):
        return self.union(r, self.identity())

    def ident(self, s):
        return Bound([s.may & (1 << e) for e in range(self.n)], [s.must & (1 << e) for e in range(self.n)])

    def product(self, s, t):
        return Bound([t.may if s.may >> e & 1 else 0 for e in range(self.n)],
                     [t.must if s.must >> e & 1 else 0 for e in range(self.n)])

    def domain(self, r):
        return Bound(_rows_set(r.may), _rows_set(r.must))

    def range(self, r):
        return Bound(_union_rows(r.may), _union_rows(r.must))

    def fix(self, step: Callable[[tuple], tuple], start: tuple, label: str) -> tuple:
        # (checker.cat.demand evaluates a model with `let rec` without bounds: the symbolic
        # iteration's rounds and cut-off are its own)
        raise InternalError("the bounds algebra has no fixpoints")

    # checks: their constraints are the symbolic algebra's business
    def acyclic(self, r, label: str):
        return None

    def irreflexive(self, r, label: str):
        return None

    def is_empty(self, v, label: str):
        return None

    def negate(self, c):
        return None


def _minus(a: int, b: int) -> int:
    return a & ~b


def _pointwise(a, b, op):
    if isinstance(a, int):
        return op(a, b)
    return [op(x, y) for x, y in zip(a, b)]


def _rows_set(rows: list[int]) -> int:
    acc = 0
    for e, row in enumerate(rows):
        if row:
            acc |= 1 << e
    return acc


def _union_rows(rows: list[int]) -> int:
    acc = 0
    for row in rows:
        acc |= row
    return acc


