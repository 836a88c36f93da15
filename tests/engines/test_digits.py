"""The Z3 engine's digit encoding of power-of-two slices and bitwise operators
(checker/engines/digits.py) is exact: for
read values of every sign and width (past 64 bits too), every slice expression the encoding
rewrites takes, in the solver, the value Python's evaluation gives it, and the digits are forced
(the only model); expressions it does not rewrite keep their ordinary encoding."""
from __future__ import annotations

import random

import z3

from checker.engines.digits import Digits
from checker.errors import LimitExceeded
from checker.isa.mbarrier import expected_of, pack, pending_of, phase_of, tx_of
from checker.model.values import Bin, Const, ReadVal, binop, evaluate, int_val, to_z3


def _solve(exprs, values):
    """The value Z3 gives each expression when read i returns values[i] (with the digit rewriting),
    and whether that model is the only one for the digits."""
    ctx = z3.Context()
    reads = {i: z3.Int(f"val|{i}", ctx) for i in values}
    digits = Digits(exprs)
    s = z3.Solver(ctx=ctx)
    s.add(*digits.constraints(reads.__getitem__, ctx))
    s.add(*[reads[i] == int_val(v, ctx) for i, v in values.items()])
    hook = digits.hook(ctx)
    s.add(*digits.aux_constraints(lambda e: to_z3(e, reads.__getitem__, ctx, hook)))
    outs = [z3.Int(f"out|{k}", ctx) for k in range(len(exprs))]
    s.add(*[o == to_z3(e, reads.__getitem__, ctx, hook) for o, e in zip(outs, exprs)])
    assert s.check() == z3.sat
    m = s.model()
    got = [m.eval(o).as_long() for o in outs]
    # the digits are determined by the values: no second model differs in any digit
    ds = [d for r in digits._digits.values() for _, d in r]
    if ds:
        s.add(z3.Or([d != m.eval(d) for d in ds]))
        assert s.check() == z3.unsat
    return got


def _slices(r):
    v = ReadVal(r)
    return [
        binop("div", v, Const(1 << 21)), binop("mod", v, Const(1 << 21)),
        binop("mod", binop("div", v, Const(1 << 21)), Const(1 << 20)),
        binop("mod", binop("div", binop("div", v, Const(1 << 21)), Const(1 << 20)), Const(2)),
        Bin("shr", v, Const(64)), Bin("low", v, Const(8)), Bin("low", Bin("shr", v, Const(8)), Const(8)),
        Bin("low", Bin("shr", v, Const(120)), Const(64)),      # a slice past the top of a 128-bit value
        binop("mod", binop("mod", v, Const(1 << 8)), Const(1 << 16)),   # a wider mod of a narrow slice
        binop("div", binop("mod", v, Const(1 << 8)), Const(1 << 16)),   # a shift past a slice: 0
        binop("mod", v, Const(3)),                              # not a power of two: left alone
        binop("add", binop("div", v, Const(4)), Const(1)),
    ]


def test_slices_of_reads_equal_python_evaluation():
    rng = random.Random(22)
    for _ in range(25):
        values = {0: rng.choice([0, 1, -1, rng.randrange(-(1 << 70), 1 << 70), rng.randrange(1 << 128)]),
                  1: rng.randrange(-(1 << 20), 1 << 130)}
        exprs, want = [], []
        for e in _slices(0) + _slices(1):
            try:
                want.append(evaluate(e, values.__getitem__))
            except LimitExceeded:       # arithmetic (not layout) results stay in the 64-bit range
                continue
            exprs.append(e)
        assert len(exprs) >= 12
        assert _solve(exprs, values) == want, values


def test_mbarrier_fields_of_packed_states():
    """Packed mbarrier states, including a field out of its range (which carries: what the
    rewriting must reproduce, not repair)."""
    v = ReadVal(0)
    exprs = [phase_of(v), expected_of(v), pending_of(v), tx_of(v), binop("mod", phase_of(v), Const(2))]
    for fields in [(0, 1, 1, 0), (3, 2, 1, -16), (5, 7, 0, 1 << 20 - 1), (2, 1, 1, 1 << 21), (1, 0, -1, 0)]:
        state = evaluate(pack(*fields), lambda _: 0)
        values = {0: state}
        assert _solve(exprs, values) == [evaluate(e, values.__getitem__) for e in exprs], fields


def _bitwise(r):
    v, w = ReadVal(r), ReadVal(1 - r)
    out = []
    for op in ("and", "or", "xor"):
        for bits in (8, 32, 64):
            for c in (0, 1, 5, 0xF0, -3, -1, 4294967295, 2147483648, 1 << 40):
                out.append(Bin(op, v, Const(c), bits))
            out.append(Bin(op, Const(6), v, bits))                              # constant first
            out.append(Bin(op, v, w, bits))                                     # two variables
            out.append(Bin(op, binop("add", v, Const(1)), Const(-3), bits))     # an operand that is no slice
            out.append(Bin(op, Bin("low", Bin("shr", v, Const(8)), Const(8)), Const(0x3C), bits))  # a slice
            out.append(Bin(op, Bin(op, v, Const(12), bits), w, bits))           # nested
    return out


def test_bitwise_operators_equal_python_evaluation():
    """and/or/xor on `bits`-bit patterns of negative, narrow and wide values, with constant and
    variable operands; with a constant operand through digits (no int2bv/bv2int left in its terms)."""
    rng = random.Random(23)
    for _ in range(12):
        values = {0: rng.choice([0, 1, -1, -3, 255, rng.randrange(-(1 << 40), 1 << 40), rng.randrange(1 << 64)]),
                  1: rng.choice([0, -2, rng.randrange(-(1 << 70), 1 << 70)])}
        exprs = _bitwise(0)
        want = [evaluate(e, values.__getitem__) for e in exprs]
        assert _solve(exprs, values) == want, values
    ctx = z3.Context()
    reads = {i: z3.Int(f"val|{i}", ctx) for i in (0, 1)}
    with_constant = [e for e in _bitwise(0) if isinstance(e.a, Const) or isinstance(e.b, Const)]
    digits = Digits(with_constant)
    digits.constraints(reads.__getitem__, ctx)
    hook = digits.hook(ctx)
    text = " ".join(str(to_z3(e, reads.__getitem__, ctx, hook)) for e in with_constant)
    assert "int2bv" not in text.lower() and "bv2int" not in text.lower()
