"""The least index whose query is satisfiable, by bisection over disjunctions of ranges, with the
linear scan (one query per index, in order, stopping at the first yes) as its specification.

The undefined-behaviour report names a flag's least possible edge (Z3Engine.flag_least). Asking
each earlier edge in turn costs one query per edge; asking whether some edge of a range fires
(one disjunction) and halving the range costs about log2 of that. Both give the same index
whenever the solver answers: a range is unsatisfiable exactly when each of its indices is.

An unknown answer (SolverUnknown: timeout, resource limit) is never read as "no". If a range
query is unknown, the search falls back to the linear scan over the indices not yet decided, so
it answers as the linear scan would from there: the first satisfiable index, or the linear
scan's own SolverUnknown. The indices bisection decided already stay decided: where the linear
scan would have met an unknown on one of them, bisection may still answer (never otherwise).
"""
from __future__ import annotations

from typing import Callable, TypeVar

from ..errors import InternalError, SolverUnknown

W = TypeVar("W")

# some(lo, hi): None if no index in [lo, hi) is satisfiable, else (j, witness) with j the least
# index in [lo, hi) that the witness satisfies. one(i): None or the witness of index i alone.
Some = Callable[[int, int], "tuple[int, W] | None"]
One = Callable[[int], "W | None"]


def linear(one: One, lo: int, hi: int) -> tuple[int, W] | None:
    """The first i in [lo, hi) whose query is satisfiable, with its witness; one query per index.
    An unknown answer raises (SolverUnknown), as it stops the scan there."""
    for i in range(lo, hi):
        w = one(i)
        if w is not None:
            return i, w
    return None


def bisect(n: int, some: Some, one: One) -> tuple[int, W] | None:
    """The least i < n whose query is satisfiable (what linear(one, 0, n) answers), with a
    witness: one range query for all n, then halving the undecided range [lo, hi - 1) while the
    index hi - 1 is known satisfiable. A witness's least true index shortens the range at once."""
    lo, hi, found = 0, n, None           # no index < lo is satisfiable; found: hi - 1's witness
    try:
        if n == 0:
            return None
        found = _within(some(0, n), 0, n)
        if found is None:
            return None
        hi = found[0] + 1
        while hi - 1 > lo:
            mid = lo + (hi - lo) // 2    # lo < mid <= hi - 1
            got = _within(some(lo, mid), lo, mid)
            if got is None:
                lo = mid
            else:
                found, hi = got, got[0] + 1
        return found
    except SolverUnknown:
        pass
    # A range query was unknown: the linear scan over the undecided indices, in order.
    got = linear(one, lo, hi - 1 if found is not None else n)
    return got if got is not None else found


def _within(got, lo: int, hi: int):
    """A range query's answer, checked: its index lies in the range asked (else the search
    would not shrink its range)."""
    if got is not None and not lo <= got[0] < hi:
        raise InternalError(f"a witness of edges [{lo}, {hi}) names edge {got[0]}")
    return got
