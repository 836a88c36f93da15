"""Value expressions: what a write stores and what a register holds, in terms of the values that
read events return. Both engines interpret them: the brute-force engine over ints, the Z3 engine
over integer terms."""
from __future__ import annotations

import math
import operator
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
    bits: int = 32   # and/or/xor: the width of the bit patterns they act on


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

_INT_OPS: Mapping[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
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

# Bitwise operators act on `bits`-bit two's-complement patterns and give the unsigned result,
# exactly as to_z3 encodes them (Int2BV / BV2Int): the engines must agree (found by the
# differential fuzzer: -3 | 0 was -3 for the brute-force engine and 4294967293 for Z3).
_BIT_OPS: Mapping[str, Callable[[int, int], int]] = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}


# Byte-level layout and widths (checker.model.memory): shift left/right by `b` bits, keep the
# low `b` bits (two's complement), and join parts at disjoint bit positions. Their results are
# not bounded like arithmetic's: they only move the bits of values that fit their locations.
_LAYOUT_OPS: Mapping[str, Callable[[int, int], int]] = {
    "shl": lambda a, b: a << b,
    "shr": lambda a, b: a >> b,
    "low": lambda a, b: a & ((1 << b) - 1),
    "join": lambda a, b: a + b,      # the sum of parts at disjoint bit positions
}


def _apply(op: str, a: int, b: int, bits: int) -> int:
    if op in _BIT_OPS:
        m = (1 << bits) - 1
        return _BIT_OPS[op](a & m, b & m)
    if op in _LAYOUT_OPS:
        return _LAYOUT_OPS[op](a, b)
    return _fit(_INT_OPS[op](a, b))


BIN_OPS = frozenset(_INT_OPS) | frozenset(_BIT_OPS) | frozenset(_LAYOUT_OPS)

# Litmus values are unbounded integers, but none may leave the 64-bit range: PTX has no wider
# values, and without a bound a chain of `mul r0, r0, r0` grows without limit.
VALUE_MIN, VALUE_MAX = -(2**63), 2**64 - 1


def _fit(v: int) -> int:
    if not VALUE_MIN <= v <= VALUE_MAX:
        from ..errors import LimitExceeded

        raise LimitExceeded("a computed value leaves the 64-bit range (ptxmc does not model wrap-around)")
    return v


def binop(op: str, a: Expr, b: Expr, bits: int = 32) -> Expr:
    """`a op b` (`bits`: the width of a bitwise operator's patterns), folded where no value of a
    read can flow through: constants, `x & 0`, `x * 0`, `x ^ x`, `x - x`. Such false dependencies
    are not dependencies (ptxas erases them too)."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(_apply(op, a.value, b.value, bits))
    if op in ("and", "mul") and ZERO in (a, b):
        return ZERO
    if op in ("xor", "sub") and a == b:
        return ZERO
    if op in ("shl", "shr") and b == ZERO:
        return a
    return Bin(op, a, b, bits if op in _BIT_OPS else 32)


def wrap(v: Expr, bits: int) -> Expr:
    """`v` as an unsigned `bits`-bit pattern (two's complement for a negative value): what an
    access of that width stores, and what an ALU operation of that type gives."""
    if isinstance(v, Const) and 0 <= v.value < (1 << bits):
        return v
    return binop("low", v, Const(bits))


def signed(v: Expr, bits: int) -> Expr:
    """The signed value of a `bits`-bit pattern."""
    half = Const(1 << (bits - 1))
    return v if isinstance(v, Const) and v.value < half.value else \
        Ite(">=", v, half, binop("sub", v, Const(1 << bits)), v)


FLOAT_FORMATS = ("f32", "f64")


def float_bits(text: str, fmt: str) -> int:
    """The IEEE-754 bit pattern of a decimal literal as .f32 or .f64 (round to nearest)."""
    import struct

    x = float(text)
    return struct.unpack("<I", struct.pack("<f", x))[0] if fmt == "f32" else \
        struct.unpack("<Q", struct.pack("<d", x))[0]


def reads_of(e: Expr) -> frozenset[int]:
    """The read events whose values `e` depends on."""
    if isinstance(e, ReadVal):
        return frozenset((e.eid,))
    if isinstance(e, Bin):
        return reads_of(e.a) | reads_of(e.b)
    if isinstance(e, Ite):
        return reads_of(e.a) | reads_of(e.b) | reads_of(e.then) | reads_of(e.other)
    return frozenset()


def bounds(e: Expr, read_bounds: Callable[[int], "tuple | None"]) -> "tuple | None":
    """The least and greatest value `e` can have, given those of each read (`read_bounds(eid)`:
    (lo, hi), math.inf for no bound on a side; None: an abstract integer without a width, which
    makes the whole of `e` None). An over-approximation: the exact values lie within."""
    if isinstance(e, Const):
        return e.value, e.value
    if isinstance(e, ReadVal):
        return read_bounds(e.eid)
    if isinstance(e, Ite):
        t, o = bounds(e.then, read_bounds), bounds(e.other, read_bounds)
        if t is None or o is None:
            return None
        return min(t[0], o[0]), max(t[1], o[1])
    if not isinstance(e, Bin):
        raise TypeError(e)
    a, b = bounds(e.a, read_bounds), bounds(e.b, read_bounds)
    if a is None or b is None:
        return None
    full = (-math.inf, math.inf)
    op = e.op
    if op in ("add", "join"):
        return a[0] + b[0], a[1] + b[1]
    if op == "sub":
        return a[0] - b[1], a[1] - b[0]
    if op == "mul":
        if math.inf in (abs(a[0]), abs(a[1]), abs(b[0]), abs(b[1])):
            return (0, math.inf) if a[0] >= 0 and b[0] >= 0 else full
        corners = [x * y for x in a for y in b]
        return min(corners), max(corners)
    if op in ("min", "max"):
        f = min if op == "min" else max
        return f(a[0], b[0]), f(a[1], b[1])
    if op in _BIT_OPS:
        top = (1 << e.bits) - 1
        if op == "and" and a[0] >= 0 and b[0] >= 0:
            return 0, min(a[1], b[1], top)
        return 0, top
    if op in _LAYOUT_OPS and op != "join":        # e.b is a constant number of bits
        k = e.b.value
        if op == "low":
            return a if 0 <= a[0] and a[1] < (1 << k) else (0, (1 << k) - 1)
        if op == "shl":
            return a[0] * (1 << k), a[1] * (1 << k)
        return (a[0] // (1 << k) if a[0] != -math.inf else a[0]), (a[1] // (1 << k) if a[1] != math.inf else a[1])
    if op in ("div", "mod") and b[0] == b[1] and b[0] > 0:      # by a positive constant (mbarrier fields)
        if op == "mod":
            return 0, b[0] - 1
        return tuple(x // b[0] if abs(x) != math.inf else x for x in a)
    return full


def evaluate(e: Expr, read_value: Callable[[int], int]) -> int:
    if isinstance(e, Const):
        return e.value
    if isinstance(e, ReadVal):
        return read_value(e.eid)
    if isinstance(e, Bin):
        return _apply(e.op, evaluate(e.a, read_value), evaluate(e.b, read_value), e.bits)
    if isinstance(e, Ite):
        if _CMPS[e.cmp](evaluate(e.a, read_value), evaluate(e.b, read_value)):
            return evaluate(e.then, read_value)
        return evaluate(e.other, read_value)
    raise TypeError(e)


def _decimal(n: int) -> str:
    """n in decimal, also past Python's limit on int -> str conversion (the values of large
    accesses: a 8192-byte bulk copy is a 65536-bit number)."""
    if n < 0:
        return "-" + _decimal(-n)
    if n < _CHUNK:
        return str(n)
    high, low = divmod(n, _CHUNK)
    return _decimal(high) + str(low).zfill(_CHUNK_DIGITS)


_CHUNK_DIGITS = 4000
_CHUNK = 10 ** _CHUNK_DIGITS


def from_z3(v) -> int:
    """The Python integer of a Z3 integer numeral."""
    return int_of(v.as_string())


def int_of(text: str) -> int:
    """The integer a decimal numeral spells, also past Python's limit on str -> int."""
    if len(text) < 4000:
        return int(text)
    sign, digits = (-1, text[1:]) if text.startswith("-") else (1, text)
    out = 0
    for i in range(0, len(digits), _CHUNK_DIGITS):
        part = digits[i:i + _CHUNK_DIGITS]
        out = out * 10 ** len(part) + int(part)
    return sign * out


def int_val(n: int, ctx):
    """The Z3 integer numeral n (kept per context: a large one costs Z3 time to parse)."""
    import z3

    if -_SMALL < n < _SMALL:
        return z3.IntVal(n, ctx)
    # The cache lives on the context itself and holds bare AST pointers, each with a reference
    # released when the context is deleted: a weak-keyed table would keep every context alive (its
    # numerals refer to it, ~17 MiB per test with wide values in a batch), and numeral objects
    # in the context's own dict made a cycle that only a full collection freed (a fifth of the
    # bundled suites' contexts lived on that way, and a new context then cost fresh memory).
    numerals = ctx.__dict__.setdefault("_ptxmc_numerals", {})
    ast = numerals.get(n)
    if ast is None:
        if n & (n - 1) == 0:        # 2^k, the unit of a byte position: by squaring (Z3 parses decimals slowly)
            k, square, out = n.bit_length() - 1, z3.IntVal(2, ctx), z3.IntVal(1, ctx)
            while k:
                if k & 1:
                    out = z3.simplify(out * square)
                square, k = z3.simplify(square * square), k >> 1
        else:
            out = z3.IntVal(_decimal(n), ctx)
        ast = numerals[n] = out.as_ast()
        z3.Z3_inc_ref(ctx.ref(), ast)
    return z3.IntNumRef(ast, ctx)


_SMALL = 1 << 64


# Each node builds the one term it needs (building every operator's term and picking one cost a
# fifth of the value terms' time). Z3's `/` on integers is integer division.
_ARITH = {"add": operator.add, "join": operator.add, "sub": operator.sub, "mul": operator.mul,
          "div": operator.truediv, "mod": operator.mod}
_SHIFTS = {"shl": "mul", "shr": "div", "low": "mod"}
_BITWISE = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}


def to_z3(e: Expr, read_var: Callable[[int], object], ctx, hook: Callable | None = None):
    """The Z3 integer term of `e` in context `ctx`; `read_var(eid)` gives the term of a read's value.
    `hook(e)`, if given, is asked first at every node: a term, or None for the default encoding
    (the Z3 engine encodes power-of-two slices of read values through digits, engines/digits.py)."""
    import z3

    if hook is not None:
        t = hook(e)
        if t is not None:
            return t
    if isinstance(e, Const):
        return int_val(e.value, ctx)
    if isinstance(e, ReadVal):
        return read_var(e.eid)
    if isinstance(e, Bin):
        a = to_z3(e.a, read_var, ctx, hook)
        if e.op in _SHIFTS:     # e.b is a constant number of bits
            return _ARITH[_SHIFTS[e.op]](a, int_val(1 << e.b.value, ctx))
        b = to_z3(e.b, read_var, ctx, hook)
        if e.op in _BITWISE:
            # Bitwise operators on `bits`-bit patterns, through bit-vectors.
            return z3.BV2Int(_BITWISE[e.op](z3.Int2BV(a, e.bits), z3.Int2BV(b, e.bits)))
        if e.op == "min":
            return z3.If(a <= b, a, b, ctx)
        if e.op == "max":
            return z3.If(a >= b, a, b, ctx)
        return _ARITH[e.op](a, b)
    if isinstance(e, Ite):
        a, b = to_z3(e.a, read_var, ctx, hook), to_z3(e.b, read_var, ctx, hook)
        return z3.If(_COMPARE[e.cmp](a, b), to_z3(e.then, read_var, ctx, hook), to_z3(e.other, read_var, ctx, hook), ctx)
    raise TypeError(e)
