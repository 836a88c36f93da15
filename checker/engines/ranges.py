"""Value ranges of reads and value expressions (interval analysis for the Z3 engine's encoding).

A read returns the value of one of the writes it may read from (prune.rf_may), so its value lies
in the union of those writes' value ranges. Starting from "any integer" for every read and
narrowing by that rule for a few rounds gives intervals that hold in *every* well-formed
candidate execution, also the cyclic ones of a query without axioms (each round is sound on its
own: it only uses that the previous round's intervals hold). Most values of typed accesses are
wrapped to their width, so one round usually bounds them.

The encoding states each finite bound as a constraint on the read's value variable, and uses the
intervals to encode `x mod 2^k` (wrap-around) exactly by a small case split on the quotient,
instead of a non-linear remainder: under the stated bounds the two terms are equal in every
model, so no answer changes (bench/RESULTS.md, "issue 23: typed RMW chains")."""
from __future__ import annotations

from math import inf
from typing import Mapping

from ..model.values import Bin, Const, Expr, Ite, ReadVal

Interval = tuple      # (low, high): ints, or -inf / inf where unbounded

TOP: Interval = (-inf, inf)
ROUNDS = 4


def _mul(a, b):
    return 0 if a == 0 or b == 0 else a * b


def _floordiv(a, k: int):
    return a if a in (inf, -inf) else a // k


class Ranges:
    """The interval of every read of an event structure, and of any expression over them."""

    def __init__(self, reads: Mapping[int, tuple], write_value: Mapping[int, Expr]):
        """`reads`: read -> the writes it may read from; `write_value`: write -> its value."""
        self.reads: dict[int, Interval] = {r: TOP for r in reads}
        for _ in range(ROUNDS):
            memo: dict = {}
            new = {}
            for r, ws in reads.items():
                if not ws:
                    new[r] = TOP
                    continue
                ivs = [self._of(write_value[w], memo) for w in ws]
                new[r] = (min(i[0] for i in ivs), max(i[1] for i in ivs))
            changed = new != self.reads
            self.reads = new
            if not changed:
                break
        self._memo: dict = {}

    def of(self, e: Expr) -> Interval:
        return self._of(e, self._memo)

    def _of(self, e: Expr, memo: dict) -> Interval:
        k = id(e)
        hit = memo.get(k)
        if hit is not None and hit[0] is e:
            return hit[1]
        iv = self._compute(e, memo)
        memo[k] = (e, iv)       # the expression is kept so that its id stays its own
        return iv

    def _compute(self, e: Expr, memo: dict) -> Interval:
        if isinstance(e, Const):
            return (e.value, e.value)
        if isinstance(e, ReadVal):
            return self.reads.get(e.eid, TOP)
        if isinstance(e, Ite):
            t, o = self._of(e.then, memo), self._of(e.other, memo)
            return (min(t[0], o[0]), max(t[1], o[1]))
        if not isinstance(e, Bin):
            return TOP
        (al, ah), (bl, bh) = self._of(e.a, memo), self._of(e.b, memo)
        op = e.op
        if op in ("add", "join"):
            return (al + bl, ah + bh)
        if op == "sub":
            return (al - bh, ah - bl)
        if op == "mul":
            ps = [_mul(x, y) for x in (al, ah) for y in (bl, bh)]
            return (min(ps), max(ps))
        if op == "min":
            return (min(al, bl), min(ah, bh))
        if op == "max":
            return (max(al, bl), max(ah, bh))
        if op in ("and", "or", "xor"):
            return (0, (1 << e.bits) - 1)
        c = e.b.value if isinstance(e.b, Const) else None
        if c is None:
            return TOP
        if op in ("div", "mod") and c > 0:
            if op == "div":
                return (_floordiv(al, c), _floordiv(ah, c))
            return (al, ah) if 0 <= al and ah < c else (0, c - 1)
        if op in ("shr", "low", "shl") and c >= 0:
            if op == "shr":
                return (_floordiv(al, 1 << c), _floordiv(ah, 1 << c))
            if op == "shl":
                return (al * (1 << c), ah * (1 << c))
            return (al, ah) if 0 <= al and ah < (1 << c) else (0, (1 << c) - 1)
        return TOP

    def quotients(self, e: Expr, radix: int, most: int) -> range | None:
        """The possible values of `e div radix` (radix > 0), if `e` is bounded and they are at
        most `most`."""
        lo, hi = self.of(e)
        if lo == -inf or hi == inf or hi // radix - lo // radix >= most:
            return None
        return range(lo // radix, hi // radix + 1)
