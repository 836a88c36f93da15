"""Value expressions: what a write stores and what a register holds, in terms of the values that
read events return. Both engines interpret them: the brute-force engine over ints, the Z3 engine
over integer terms."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Union


@dataclass(frozen=True)
class Const:
    value: int


@dataclass(frozen=True)
class ReadVal:
    """The value returned by read event `eid`."""

    eid: int


@dataclass(frozen=True)
class Bin:
    op: str          # add sub mul and or xor min max div mod (div/mod: by a positive constant)
    a: "Expr"
    b: "Expr"


@dataclass(frozen=True)
class Ite:
    """`a cmp b ? then : other`, cmp one of == != < <= > >=."""

    cmp: str
    a: "Expr"
    b: "Expr"
    then: "Expr"
    other: "Expr"


Expr = Union[Const, ReadVal, Bin, Ite]

ZERO = Const(0)

_M32 = 2**32 - 1

_INT_OPS: Mapping[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    # Bitwise operators act on 32-bit two's-complement patterns and give the unsigned result,
    # exactly as to_z3 encodes them (Int2BV 32 / BV2Int): the engines must agree (found by the
    # differential fuzzer: -3 | 0 was -3 for the brute-force engine and 4294967293 for Z3).
    "and": lambda a, b: (a & _M32) & (b & _M32),
    "or": lambda a, b: (a & _M32) | (b & _M32),
    "xor": lambda a, b: (a & _M32) ^ (b & _M32),
    "min": min,
    "max": max,
    # Floor division and remainder, used only with a positive constant divisor (the fields of an
    # mbarrier's abstract state, checker.isa.mbarrier): Python's // and % and Z3's div and mod agree
    # there (Euclidean division with a positive divisor is floor division).
    "div": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
}

_CMPS: Mapping[str, Callable] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}

BIN_OPS = frozenset(_INT_OPS)

# Litmus values are unbounded integers, but none may leave the 64-bit range: PTX has no wider
# values, and without a bound a chain of `mul r0, r0, r0` grows without limit.
VALUE_MIN, VALUE_MAX = -(2**63), 2**64 - 1


def _fit(v: int) -> int:
    if not VALUE_MIN <= v <= VALUE_MAX:
        from ..errors import LimitExceeded

        raise LimitExceeded("a computed value leaves the 64-bit range (ptxmc does not model wrap-around)")
    return v


def binop(op: str, a: Expr, b: Expr) -> Expr:
    """`a op b`, folded where no value of a read can flow through: constants, `x & 0`, `x * 0`,
    `x ^ x`, `x - x`. Such false dependencies are not dependencies (ptxas erases them too)."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(_fit(_INT_OPS[op](a.value, b.value)))
    if op in ("and", "mul") and ZERO in (a, b):
        return ZERO
    if op in ("xor", "sub") and a == b:
        return ZERO
    return Bin(op, a, b)


def reads_of(e: Expr) -> frozenset[int]:
    """The read events whose values `e` depends on."""
    if isinstance(e, ReadVal):
        return frozenset((e.eid,))
    if isinstance(e, Bin):
        return reads_of(e.a) | reads_of(e.b)
    if isinstance(e, Ite):
        return reads_of(e.a) | reads_of(e.b) | reads_of(e.then) | reads_of(e.other)
    return frozenset()


def evaluate(e: Expr, read_value: Callable[[int], int]) -> int:
    if isinstance(e, Const):
        return e.value
    if isinstance(e, ReadVal):
        return read_value(e.eid)
    if isinstance(e, Bin):
        return _fit(_INT_OPS[e.op](evaluate(e.a, read_value), evaluate(e.b, read_value)))
    if isinstance(e, Ite):
        if _CMPS[e.cmp](evaluate(e.a, read_value), evaluate(e.b, read_value)):
            return evaluate(e.then, read_value)
        return evaluate(e.other, read_value)
    raise TypeError(e)


def to_z3(e: Expr, read_var: Callable[[int], object], ctx):
    """The Z3 integer term of `e` in context `ctx`; `read_var(eid)` gives the term of a read's value."""
    import z3

    if isinstance(e, Const):
        return z3.IntVal(e.value, ctx)
    if isinstance(e, ReadVal):
        return read_var(e.eid)
    if isinstance(e, Bin):
        a, b = to_z3(e.a, read_var, ctx), to_z3(e.b, read_var, ctx)
        if e.op in ("and", "or", "xor"):
            # Bitwise operators on non-negative litmus values, through 32-bit vectors.
            ba, bb = z3.Int2BV(a, 32), z3.Int2BV(b, 32)
            r = {"and": ba & bb, "or": ba | bb, "xor": ba ^ bb}[e.op]
            return z3.BV2Int(r)
        if e.op == "min":
            return z3.If(a <= b, a, b, ctx)
        if e.op == "max":
            return z3.If(a >= b, a, b, ctx)
        if e.op == "div":
            return a / b
        if e.op == "mod":
            return a % b
        return {"add": a + b, "sub": a - b, "mul": a * b}[e.op]
    if isinstance(e, Ite):
        a, b = to_z3(e.a, read_var, ctx), to_z3(e.b, read_var, ctx)
        c = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[e.cmp]
        return z3.If(c, to_z3(e.then, read_var, ctx), to_z3(e.other, read_var, ctx), ctx)
    raise TypeError(e)
