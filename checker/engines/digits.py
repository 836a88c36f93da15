"""Power-of-two slices and bitwise operators of values as digit variables (an exact rewriting for
the Z3 engine).

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
it only hands the solver the division it would otherwise have to discover.

Bitwise operators (and, or, xor on `bits`-bit two's-complement patterns) go through the same
digits instead of Z3's int2bv/bv2int conversions, which cost seconds per query on chains of
typed RMWs (issue 23's fuzz campaign: UNKNOWN at 3M resource units). With a constant operand c,
the operand's digits are cut where c's bits change, so on each digit c is all ones or all zeros
and the result is linear: `d & 1..1 = d`, `d | 1..1 = 2^n - 1`, `d ^ 1..1 = 2^n - 1 - d`, and
against zeros `and` gives 0 and `or`, `xor` give `d`. An operand that is not a slice of a read value gets an auxiliary
variable equal to it (`aux|n`), decomposed like a read's value. Two variable operands keep
int2bv/bv2int: cut into single bits, a value's decomposition is a subset-sum problem for the
integer solver (tried: far slower than the bit-vector conversion)."""
from __future__ import annotations

from typing import Callable, Iterable

import z3

from ..model.values import Bin, Const, Expr, Ite, ReadVal, int_val

View = tuple      # (source, low bit, high bit or None): the value is bits [low, high) of the source's value
# A source is a read (its event id, >= 0) or an auxiliary variable (-1, -2, ...: `aux|n`).

BITWISE = ("and", "or", "xor")


def _power(e: Expr) -> int | None:
    """k if `e` is the constant 2^k (k >= 1)."""
    if isinstance(e, Const) and e.value > 1 and e.value & (e.value - 1) == 0:
        return e.value.bit_length() - 1
    return None


def _runs(c: int, bits: int) -> list[int]:
    """The bit positions in (0, bits) where the pattern c changes, with 0 and bits."""
    return [0] + [i for i in range(1, bits) if (c >> i) & 1 != (c >> (i - 1)) & 1] + [bits]


class Digits:
    """The digit decomposition of the values that `exprs` slice or combine bitwise. `hook` is
    to_z3's hook; `constraints` tie each decomposed value to its digits."""

    def __init__(self, exprs: Iterable[Expr]):
        self._views: dict[int, tuple] = {}     # id(expr) -> (expr, its View or None)
        self._aux: dict[int, Expr] = {}        # auxiliary source -> the expression it equals
        self.operands: list[Expr] = []         # the variable operands of bitwise operators
        self.positions: dict[int, set[int]] = {}
        for e in exprs:
            self._collect(e)
        self.positions = {r: ps for r, ps in self.positions.items() if ps - {0}}
        self._digits: dict[int, list] = {}
        self._aux_vars: dict[int, z3.ArithRef] = {}

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

    def _operand(self, e: Expr) -> View:
        """The view of a bitwise operand, through an auxiliary variable if it is no slice."""
        v = self.view(e)
        if v is None:
            key = -1 - len(self._aux)
            self._aux[key] = e
            v = (key, 0, None)
            self._views[id(e)] = (e, v)
        return v

    def _add(self, src: int, *ps: int | None) -> None:
        self.positions.setdefault(src, {0}).update(p for p in ps if p is not None)

    def _collect(self, e: Expr) -> None:
        seen: set[int] = set()
        stack = [e]
        while stack:
            x = stack.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if isinstance(x, Bin):
                if x.op in BITWISE:
                    self._collect_bitwise(x)
                else:
                    v = self.view(x)
                    if v is not None:
                        self._add(*v)
                stack += (x.a, x.b)
            elif isinstance(x, Ite):
                stack += (x.a, x.b, x.then, x.other)

    def _collect_bitwise(self, x: Bin) -> None:
        if isinstance(x.a, Const) == isinstance(x.b, Const):
            return      # constants (folded already) or two variables (left to int2bv)
        c, other = (x.a, x.b) if isinstance(x.a, Const) else (x.b, x.a)
        self.operands.append(other)
        src, lo, hi = self._operand(other)
        cuts = _runs(c.value & ((1 << x.bits) - 1), x.bits)
        self._add(src, hi, *(lo + p for p in cuts if hi is None or lo + p <= hi))

    def constraints(self, read_var: Callable[[int], z3.ArithRef], ctx: z3.Context) -> list:
        """v_r = sum d_i * 2^p_i and each lower digit's range, for every decomposed value r.
        Auxiliary values are tied to their expressions by `aux_constraints` (which needs the hook)."""
        out = []
        for r, ps in sorted(self.positions.items()):
            ps = sorted(ps)
            ds = [z3.Int(f"dig|{r}|{p}", ctx) for p in ps]
            self._digits[r] = list(zip(ps, ds))
            for (p, d), q in zip(zip(ps, ds), ps[1:]):
                out += [d >= 0, d < int_val(1 << (q - p), ctx)]
            var = read_var(r) if r >= 0 else self._aux_vars.setdefault(r, z3.Int(f"aux|{-1 - r}", ctx))
            out.append(var == z3.Sum([d if p == 0 else d * int_val(1 << p, ctx) for p, d in zip(ps, ds)]))
        return out

    def digits_of(self, src: int) -> list | None:
        """[(bit position, digit variable)] of a decomposed source (after `constraints`), else None."""
        return self._digits.get(src)

    def aux_constraints(self, term: Callable[[Expr], z3.ArithRef]) -> list:
        """aux_n == the expression it stands for (encoded by `term`, with the hook)."""
        return [v == term(self._aux[k]) for k, v in sorted(self._aux_vars.items())]

    def _slice(self, src: int, lo: int, hi: int | None, ctx):
        """The value of bits [lo, hi) of a decomposed source, or None if lo/hi are no digit bounds."""
        digits = self._digits.get(src)
        if digits is None:
            return None
        at = {p for p, _ in digits}
        if lo not in at or (hi is not None and hi not in at):
            return None
        parts = [d if p == lo else d * int_val(1 << (p - lo), ctx)
                 for p, d in digits if p >= lo and (hi is None or p < hi)]
        return z3.Sum(parts) if len(parts) > 1 else parts[0] if parts else z3.IntVal(0, ctx)

    def _bits_of(self, o: Expr, start: int, end: int, ctx):
        """Bits [start, end) of a bitwise operand's pattern, as a term (None if not decomposed)."""
        src, lo, hi = self.view(o)
        if hi is not None and lo + start >= hi:
            return z3.IntVal(0, ctx)
        top = lo + end if hi is None else min(lo + end, hi)
        return self._slice(src, lo + start, top, ctx)

    def _bitwise(self, e: Bin, ctx):
        if isinstance(e.a, Const) == isinstance(e.b, Const):
            return None
        c, other = (e.a, e.b) if isinstance(e.a, Const) else (e.b, e.a)
        pattern = c.value & ((1 << e.bits) - 1)
        cuts = _runs(pattern, e.bits)
        out = []
        for p, q in zip(cuts, cuts[1:]):
            d = self._bits_of(other, p, q, ctx)
            if d is None:
                return None
            ones = (pattern >> p) & 1
            full = int_val((1 << (q - p)) - 1, ctx)
            seg = {"and": d if ones else None, "or": full if ones else d, "xor": full - d if ones else d}[e.op]
            if seg is not None:
                out.append(seg if p == 0 else seg * int_val(1 << p, ctx))
        return z3.Sum(out) if len(out) > 1 else out[0] if out else z3.IntVal(0, ctx)

    def hook(self, ctx: z3.Context) -> Callable[[Expr], z3.ArithRef | None]:
        def term(e: Expr):
            if not isinstance(e, Bin):
                return None
            if e.op in BITWISE:
                return self._bitwise(e, ctx)
            v = self.view(e)
            if v is None or v[0] not in self._digits:
                return None
            r, lo, hi = v
            if r < 0 and lo == 0 and hi is None:
                return None      # an auxiliary's whole value: its own expression's term
            return self._slice(r, lo, hi, ctx)
        return term
