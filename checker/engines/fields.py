"""Field-wise equalities for values read from layout expressions (an exact, redundant addition to
the Z3 encoding).

A read whose value is sliced is decomposed into digits (engines/digits.py): v = sum d_i * 2^p_i
over its cut points 0 = p_0 < p_1 < ... < p_k, each d_i (i < k) in 0 .. 2^(p_(i+1) - p_i) - 1 and
the top digit unbounded. The value it reads is still tied to the write by one equality,
v == W, where W is the write's value expression: an mbarrier state is `join`s of `shl`ed fields
(checker/isa/mbarrier.py), a byte-level store `join`s of shifted bytes. Its coefficients are up to
2^61, and the solver's simplex and gcd tests must rediscover the decomposition the digits already
name (bench/RESULTS.md, "Issue 35: field-wise mbarrier equalities").

Here W is split, from its operators alone, into terms at the same cut points: F_0, ..., F_k with
W == sum F_i * 2^p_i an identity of integers (for every value of the reads in W):
- a constant c: F_i = bits p_i .. p_(i+1) of c, the top term c >> p_k (floor: also for c < 0);
- `join`, `add`, `sub`: the terms of the operands added (subtracted) term by term;
- `shl x k` and `mul x 2^k`: x placed at bit k, i.e. x * 2^(k - p_j) added to F_j, p_j the
  largest cut <= k (x whole, whatever its own layout);
- `ite`: the terms of both branches under the same condition;
- a slice of a decomposed read whose bounds are among its digits' (engines/digits.py): the
  slice's own digits between each pair of cuts, sums of digit variables;
- anything else: x placed at bit 0.
Each rule keeps the identity, so sum F_i * 2^p_i == W == v = sum d_i * 2^p_i in every model
where the read takes that value. If moreover every non-top term is in its digit's range
(0 <= F_i < 2^(p_(i+1) - p_i): the guard G), both sides are base-2^p decompositions of the same
integer with every lower digit in range, and that decomposition is unique (the top term is
then (v - the lower part) / 2^p_k): d_i == F_i for every i. So the encoding may add, for a read r
that may read a write w,

    rf(w, r) and G  ->  d_i == F_i for every i

(and the same without rf(w, r) where r has one possible write): it holds in every model of the
encoding without it, so no model's answer changes. Where G does not hold (a field out of its
range: an mbarrier state with undefined behaviour, MbarrierRange) only the packed equality
v == W constrains the read, as before. Nothing here knows an mbarrier: the cut points are the
read's (where its value is sliced) and the terms come from the layout operators of any value."""
from __future__ import annotations

import z3

from ..model.values import Bin, Const, Expr, Ite, ReadVal
from .digits import Digits, _power

Terms = tuple      # one Expr per cut point (Const(0) where nothing lands)

_ZERO = Const(0)


def _zero(x: Expr) -> bool:
    return isinstance(x, Const) and x.value == 0


def _same(x: Expr, y: Expr) -> bool:
    """The same term (by identity or as constants: a deep comparison of shared DAGs is exponential)."""
    return x is y or (isinstance(x, Const) and isinstance(y, Const) and x.value == y.value)


def _plus(a: Expr, b: Expr, op: str = "add") -> Expr:
    if _zero(b):
        return a
    if _zero(a) and op == "add":
        return b
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value if op == "add" else a.value - b.value)
    return Bin(op, a, b)


def _scaled(x: Expr, k: int) -> Expr:
    return x if k == 0 else Const(x.value << k) if isinstance(x, Const) else Bin("shl", x, Const(k))


class Fields:
    """The terms of value expressions at the cut points of decomposed reads (`digits`)."""

    def __init__(self, digits: Digits):
        self.digits = digits
        self._memo: dict[tuple, tuple] = {}     # (id(expr), cuts) -> (expr, its Terms)
        self._split: dict[tuple, tuple] = {}    # (id(value), cuts) -> (value, `split`'s answer)

    def terms(self, e: Expr, cuts: tuple[int, ...]) -> Terms:
        """F_0..F_k with e == sum F_i * 2^cuts[i] (cuts sorted, cuts[0] == 0)."""
        key = (id(e), cuts)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is e:
            return hit[1]
        out = self._terms(e, cuts)
        self._memo[key] = (e, out)      # the expression is kept so that its id stays its own
        return out

    def _placed(self, x: Expr, k: int, cuts: tuple[int, ...]) -> Terms:
        j = max(i for i, p in enumerate(cuts) if p <= k)
        return tuple(_scaled(x, k - p) if i == j else _ZERO for i, p in enumerate(cuts))

    def _terms(self, e: Expr, cuts: tuple[int, ...]) -> Terms:
        if isinstance(e, Const):
            return tuple(Const(e.value >> p if q is None else (e.value >> p) & ((1 << (q - p)) - 1))
                         for p, q in zip(cuts, cuts[1:] + (None,)))
        if isinstance(e, Ite):
            a, b = self.terms(e.then, cuts), self.terms(e.other, cuts)
            return tuple(x if _same(x, y) else Ite(e.cmp, e.a, e.b, x, y) for x, y in zip(a, b))
        if isinstance(e, Bin):
            if e.op in ("join", "add", "sub"):
                a, b = self.terms(e.a, cuts), self.terms(e.b, cuts)
                return tuple(_plus(x, y, "sub" if e.op == "sub" else "add") for x, y in zip(a, b))
            k = e.b.value if e.op == "shl" and isinstance(e.b, Const) else _power(e.b) if e.op == "mul" else None
            if k is not None and k >= 0:
                return self._placed(e.a, k, cuts)
        sliced = self._slices(e, cuts)
        return sliced if sliced is not None else self._placed(e, 0, cuts)

    def _slices(self, e: Expr, cuts: tuple[int, ...]) -> Terms | None:
        """The digits of a slice of a decomposed read between the cuts, if its digits have them."""
        view = self.digits.view(e)
        if view is None or view[0] < 0:
            return None
        src, lo, hi = view
        at = self.digits.positions.get(src)
        if at is None:
            return None
        out = []
        for p, q in zip(cuts, cuts[1:] + (None,)):
            a = lo + p
            b = None if q is None else lo + q
            if hi is not None:
                if a >= hi:
                    out.append(_ZERO)
                    continue
                b = hi if b is None else min(b, hi)
            if a not in at or (b is not None and b not in at):
                return None
            x: Expr = ReadVal(src) if a == 0 else Bin("shr", ReadVal(src), Const(a))
            out.append(x if b is None else Bin("low", x, Const(b - a)))
        return tuple(out)

    def split(self, value: Expr, cuts: tuple[int, ...], term, ctx) -> tuple | None:
        """(G as a list of terms, the terms of F_0..F_k) of a value at the cuts, or None where it
        has no layout to split (a single term at bit 0 that is no constant). Kept per value: a
        write's terms serve every read that may read it."""
        key = (id(value), cuts)
        hit = self._split.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        fs = self.terms(value, cuts)
        out = None
        if isinstance(value, Const) or not all(_zero(f) for f in fs[1:]):
            guard, ts = [], []
            for p, q, f in zip(cuts, cuts[1:] + (None,), fs):
                t = term(f)
                if q is not None and not self.bounded(f, q - p):
                    guard += [t >= 0, t < z3.IntVal(1 << (q - p), ctx)]
                ts.append(t)
            out = (guard, ts)
        self._split[key] = (value, out)
        return out

    def bounded(self, x: Expr, width: int) -> bool:
        """Whether 0 <= x < 2^width holds of itself (a constant, or a slice no wider)."""
        if isinstance(x, Const):
            return 0 <= x.value < 1 << width
        if isinstance(x, Ite):
            return self.bounded(x.then, width) and self.bounded(x.other, width)
        v = self.digits.view(x)
        return v is not None and v[2] is not None and v[2] - v[1] <= width and v[0] in self.digits.positions


def equalities(fields: Fields, r: int, value: Expr, term, ctx) -> tuple | None:
    """(G, the conjunction of d_i == F_i) for read r reading `value`, or None where r is not
    decomposed or `value` has no layout to split (a single term at bit 0 that is no constant)."""
    digits = fields.digits.digits_of(r)
    if digits is None:
        return None
    cuts = tuple(p for p, _ in digits)
    split = fields.split(value, cuts, term, ctx)
    if split is None:
        return None
    guard, ts = split
    return guard, [d == t for (_, d), t in zip(digits, ts)]
