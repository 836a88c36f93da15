"""Power-of-two slices of read values as digit variables (an exact rewriting for the Z3 engine).

The mbarrier state is one packed integer (checker/isa/mbarrier.py: tx-count, pending count,
expected count and phase at fixed bit positions) and byte-level memory cuts wide values into
byte slices; both read fields as `(v div 2^a) mod 2^b`. Encoded literally, every such term is a
non-linear div/mod that Z3 must solve by integer branching over 2^61-sized coefficients; in the
sanity run of a test (no axioms: a read may read from its own future, so a state may depend on
itself) that is where all the time goes (bench/RESULTS.md, "digits").

Here every read whose value is sliced gets one integer variable per digit between the bit
positions its slices use: `v = sum d_i * 2^p_i` with 0 <= d_i < 2^(p_(i+1) - p_i) and the top
digit unbounded (it carries the sign). That decomposition of an integer is unique (floor
division and remainder by powers of two), so each slice `(v div 2^a) mod 2^b` is exactly the
sum of the digits between a and a + b, a linear term: the rewriting changes no model's answer,
it only hands the solver the division it would otherwise have to discover."""
from __future__ import annotations

from typing import Callable, Iterable

import z3

from ..model.values import Bin, Const, Expr, Ite, ReadVal, int_val

View = tuple      # (read eid, low bit, high bit or None): the value is bits [low, high) of the read's value


def _power(e: Expr) -> int | None:
    """k if `e` is the constant 2^k (k >= 1)."""
    if isinstance(e, Const) and e.value > 1 and e.value & (e.value - 1) == 0:
        return e.value.bit_length() - 1
    return None


class Digits:
    """The digit decomposition of the read values that `exprs` slice. `hook` is to_z3's hook; the
    constraints tie each sliced read's value variable to its digits."""

    def __init__(self, exprs: Iterable[Expr]):
        self._views: dict[int, tuple] = {}     # id(expr) -> (expr, its View or None)
        self.positions: dict[int, set[int]] = {}
        for e in exprs:
            self._collect(e)
        self.positions = {r: ps for r, ps in self.positions.items() if ps - {0}}
        self._digits: dict[int, list] = {}

    def view(self, e: Expr) -> View | None:
        """The slice of a read value that `e` is, if it is one (memoised on identity: the
        expressions share subterms)."""
        k = id(e)
        if k in self._views:
            return self._views[k][1]
        v = None
        if isinstance(e, ReadVal):
            v = (e.eid, 0, None)
        elif isinstance(e, Bin) and e.op in ("div", "mod", "shr", "low"):
            inner = self.view(e.a)
            if inner is not None:
                bits = _power(e.b) if e.op in ("div", "mod") else (e.b.value if isinstance(e.b, Const) else None)
                if bits is not None and bits >= 0:
                    r, lo, hi = inner
                    if e.op in ("div", "shr"):
                        v = (r, lo + bits if hi is None else min(lo + bits, hi), hi)
                    else:
                        v = (r, lo, lo + bits if hi is None else min(lo + bits, hi))
        self._views[k] = (e, v)     # the expression is kept so that its id stays its own
        return v

    def _collect(self, e: Expr) -> None:
        seen: set[int] = set()
        stack = [e]
        while stack:
            x = stack.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if isinstance(x, Bin):
                v = self.view(x)
                if v is not None:
                    r, lo, hi = v
                    ps = self.positions.setdefault(r, {0})
                    ps.add(lo)
                    if hi is not None:
                        ps.add(hi)
                stack += (x.a, x.b)
            elif isinstance(x, Ite):
                stack += (x.a, x.b, x.then, x.other)

    def constraints(self, read_var: Callable[[int], z3.ArithRef], ctx: z3.Context) -> list:
        """v_r = sum d_i * 2^p_i and each lower digit's range, for every sliced read r."""
        out = []
        for r, ps in sorted(self.positions.items()):
            ps = sorted(ps)
            ds = [z3.Int(f"dig|{r}|{p}", ctx) for p in ps]
            self._digits[r] = list(zip(ps, ds))
            for (p, d), q in zip(zip(ps, ds), ps[1:]):
                out += [d >= 0, d < int_val(1 << (q - p), ctx)]
            out.append(read_var(r) == z3.Sum([d if p == 0 else d * int_val(1 << p, ctx) for p, d in zip(ps, ds)]))
        return out

    def hook(self, ctx: z3.Context) -> Callable[[Expr], z3.ArithRef | None]:
        def term(e: Expr):
            if not isinstance(e, Bin):
                return None
            v = self.view(e)
            if v is None or v[0] not in self._digits:
                return None
            r, lo, hi = v
            at = {p for p, _ in self._digits[r]}
            if lo not in at or (hi is not None and hi not in at):
                return None
            parts = [d if p == lo else d * int_val(1 << (p - lo), ctx)
                     for p, d in self._digits[r] if p >= lo and (hi is None or p < hi)]
            return z3.Sum(parts) if len(parts) > 1 else parts[0] if parts else z3.IntVal(0, ctx)
        return term
