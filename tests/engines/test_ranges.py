"""Value ranges (checker/engines/ranges.py) and what the Z3 encoding does with them: every
interval contains every value the expression can take when the reads lie in theirs; the read
bounds hold in every well-formed execution (also without axioms, where values may depend on
themselves); wrap-arounds of bounded values encoded as case splits give brute force's outcomes.
Regression (issue 23's fuzz campaign): chains of typed red/atom on one 32-bit location were
UNKNOWN at the campaign's 3M resource units."""
from __future__ import annotations

import random

from checker.engines.brute import BruteEngine
from checker.engines.ranges import TOP, Ranges
from checker.engines.smt import Z3Engine
from checker.errors import LimitExceeded
from checker.front.litmus import load_text
from checker.isa.registry import lower
from checker.model.values import Bin, Const, Ite, ReadVal, binop, evaluate, wrap

CHAIN = """
- name: TypedRmwChain
  source: "PTX ISA atom, red: typed operations act on .b32/.u32 bit patterns and wrap around"
  threads:
    P0:
      at: gpu0.cta0
      code:
        - red.relaxed.gpu.global.add.u32 [x], 3
        - atom.relaxed.gpu.global.or.b32 r0, [x], 5
    P1:
      at: gpu0.cta1
      code:
        - atom.relaxed.gpu.global.add.u32 r0, [x], 4294967295
"""

CYCLE = """
- name: ValueCycle
  source: "a value that depends on itself when rf is unconstrained (the sanity run: no axioms)"
  threads:
    P0:
      at: gpu0.cta0
      code:
        - ld.relaxed.gpu.global r0, [x]
        - add.u32 r1, r0, 1
        - st.relaxed.gpu.global [y], r1
    P1:
      at: gpu0.cta1
      code:
        - ld.relaxed.gpu.global r0, [y]
        - add r1, r0, 1
        - st.relaxed.gpu.global [x], r1
"""


def _random_expr(rng, depth=3):
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([ReadVal(0), ReadVal(1), Const(rng.randrange(-300, 300)), Const(rng.randrange(1 << 40))])
    a, b = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    op = rng.choice(["add", "sub", "mul", "min", "max", "and", "or", "xor", "div", "mod", "low", "shr", "shl", "ite"])
    if op == "ite":
        return Ite(rng.choice(["<", "=="]), a, b, b, a)
    if op in ("div", "mod"):
        return Bin(op, a, Const(rng.choice([1, 3, 256, 1 << 32])))
    if op in ("low", "shr", "shl"):
        return Bin(op, a, Const(rng.choice([0, 1, 8, 32])))
    return Bin(op, a, b, rng.choice([8, 32, 64]))


def test_intervals_contain_every_value():
    rng = random.Random(23)
    for _ in range(400):
        e = _random_expr(rng)
        bounds = {0: (-5, 70000), 1: (0, (1 << 32) - 1)}
        ranges = Ranges({}, {})
        ranges.reads = dict(bounds)
        lo, hi = ranges.of(e)
        for _ in range(20):
            vals = {r: rng.choice([lo_, hi_, rng.randint(lo_, hi_)]) for r, (lo_, hi_) in bounds.items()}
            try:
                v = evaluate(e, vals.__getitem__)
            except LimitExceeded:      # arithmetic past the 64-bit range: refused, not a value
                continue
            assert lo <= v <= hi, (e, vals, v, (lo, hi))


def test_read_ranges_from_the_writes_they_may_read():
    r = ReadVal(10)
    ranges = Ranges({10: (1, 2), 11: (1, 3), 12: (4,)},
                    {1: Const(0), 2: wrap(binop("add", r, Const(3)), 32), 3: Const(-7), 4: ReadVal(12)})
    assert ranges.reads[10] == (0, (1 << 32) - 1)
    assert ranges.reads[11] == (-7, 0)
    assert ranges.reads[12] == TOP              # reads its own value: no bound
    assert list(ranges.quotients(binop("add", r, Const(3)), 1 << 32, 4)) == [0, 1]
    assert ranges.quotients(binop("mul", r, Const(1 << 200)), 1 << 32, 4) is None    # (too many)
    assert ranges.quotients(ReadVal(12), 2, 4) is None


def _agree(text, rlimit, axioms=True):
    (test,) = load_text(text, "t.yaml")
    es = lower(test)
    from checker.resources import resolve_model

    model = resolve_model("ptx")
    observe = es.observables
    expected, _ = BruteEngine(es, model, limit=200_000).outcomes(observe)
    z3 = Z3Engine(es, model, rlimit=rlimit)
    got, complete = z3.outcomes(observe)
    assert complete and got == expected
    return es, z3, expected


def test_typed_rmw_chain_answers_within_the_fuzz_budget():
    es, z3, outcomes = _agree(CHAIN, rlimit=3_000_000)
    assert len(outcomes) > 1
    # the typed add of 2^32 - 1 wraps: after P0's add and or (3 | 5 = 7) it leaves 6; between them
    # it leaves 2 for P0's or to read
    assert (("P0:r0", 3), ("P1:r0", 7), ("x", 6)) in outcomes
    assert any(dict(o)["P0:r0"] == 2 for o in outcomes)
    # without axioms too (the sanity run)
    assert z3.satisfiable(None, axioms=()) is not None


def test_cyclic_values_keep_their_outcomes():
    es, z3, outcomes = _agree(CYCLE, rlimit=20_000_000)
    assert z3.satisfiable(None, axioms=()) is not None


def test_a_test_context_is_freed_without_a_garbage_collection():
    """The encoding's closures form no reference cycle: a test's Z3 context (and its numerals)
    is freed when its engine goes, not at the next full collection (a cycle cost ~17 MiB per
    mbarrier test in a batch, bench/RESULTS.md)."""
    import gc
    import weakref

    from checker.resources import resolve_model

    (test,) = load_text(CHAIN, "t.yaml")
    es = lower(test)
    model = resolve_model("ptx")
    gc.disable()
    try:
        engine = Z3Engine(es, model)
        engine.outcomes(("x",))
        ctx = weakref.ref(engine.ctx)
        del engine
        assert ctx() is None
    finally:
        gc.enable()


def test_wrap_arounds_of_small_values_at_every_width():
    """low/shr/mod/div of a bounded value, for widths past 64 bits too (left to the ordinary
    encoding there), equal Python's evaluation in the solver."""
    import z3

    from checker.engines.encode import _bounded_division
    from checker.model.values import int_val, to_z3

    ctx = z3.Context()
    x = z3.Int("val|0", ctx)
    ranges = Ranges({}, {})
    ranges.reads = {0: (0, 300)}
    v = ReadVal(0)
    exprs = [Bin(op, binop("add", v, Const(k)), Const(b)) for op in ("low", "shr") for b in (0, 1, 8, 64, 65, 66, 128)
             for k in (0, 200)]
    exprs += [Bin(op, binop("add", v, Const(k)), Const(c)) for op in ("mod", "div") for c in (1, 3, 128, 1 << 70)
              for k in (0, 200)]
    split: set = set()

    def term(e):
        return to_z3(e, lambda r: x, ctx, hook)

    def hook(e):
        return _bounded_division(e, ranges, term, ctx, split)

    terms = [term(e) for e in exprs]
    for value in (0, 1, 55, 127, 128, 255, 256, 300):
        s = z3.Solver(ctx=ctx)
        s.add(x == int_val(value, ctx))
        outs = [z3.Int(f"o{i}", ctx) for i in range(len(terms))]
        s.add(*[o == t for o, t in zip(outs, terms)])
        assert s.check() == z3.sat
        m = s.model()
        assert [m.eval(o).as_long() for o in outs] == [evaluate(e, {0: value}.__getitem__) for e in exprs], value
    assert split == {0}
