"""The compact formula of an outcome set holds on exactly those outcomes (within the values the
variables take), for SOPform-sized and merged-cube-sized sets alike; on the small shapes it
computes without sympy it is SOPform's formula."""
from __future__ import annotations

from itertools import product

from hypothesis import given, settings, strategies as st

from checker.front.conditions import parse_cond
from checker.model.observables import holds
from checker.results.formula import compact


@st.composite
def outcome_sets(draw):
    nvars = draw(st.integers(1, 4))
    keys = [f"P{i}:r0" for i in range(nvars)]
    domains = [draw(st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True)) for _ in keys]
    space = list(product(*domains))
    chosen = draw(st.lists(st.sampled_from(space), min_size=1, max_size=len(space), unique=True))
    return keys, [tuple(zip(keys, vals)) for vals in chosen]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(outcome_sets())
def test_formula_is_exact(data):
    keys, outs = data
    formula = compact(sorted(outs))
    cond = parse_cond(formula)
    domains = [sorted({dict(o)[k] for o in outs}) for k in keys]
    for vals in product(*domains):
        o = tuple(zip(keys, vals))
        assert holds(cond, dict(o), {}) == (o in set(outs)), (formula, o)


def _sets_of_shape(keys, values, shape):
    space = list(product(*[values[:n] for n in shape]))
    for mask in range(1, 2 ** len(space)):
        chosen = [space[i] for i in range(len(space)) if mask >> i & 1]
        if all(len({c[i] for c in chosen}) == n for i, n in enumerate(shape)):
            yield sorted(tuple(zip(keys, c)) + (("z", 1),) for c in chosen)


def test_small_sets_get_sympys_formula_without_sympy():
    """On the shapes compact() handles itself (two varying variables, one two-valued, the other
    with at most four values) its formula is SOPform's, for every outcome set of the shape: key
    order against name order and numeric against text order of the values included."""
    for shape, keys, values in [((2, 2), ["y", "x"], (10, 2)), ((2, 3), ["P1:r0", "P0:r0"], (3, 10, 2)),
                                ((3, 2), ["x", "P1:r1"], (0, 1, 2)), ((2, 4), ["b", "a"], (1, 0, 12, 3))]:
        for outs in _sets_of_shape(keys, values, shape):
            assert _core_of(outs) == _sympy_compact(outs), (shape, outs)


def _core_of(outs):
    """The part of compact() over the varying variables (the fixed z=1 is a conjunct beside it)."""
    from checker.results.formula import _core

    keys = [k for k, _ in outs[0]]
    domains = {k: sorted({dict(o)[k] for o in outs}) for k in keys}
    return _core(outs, keys, domains)[0]


def _sympy_compact(outs):
    """compact() with the sympy path forced (the small-shape shortcut and `true` left out)."""
    from sympy import Symbol
    from sympy.logic import SOPform

    from checker.results.formula import _show

    keys = [k for k, _ in outs[0]]
    domains = {k: sorted({dict(o)[k] for o in outs}) for k in keys}
    atoms = [(k, v) for k in keys for v in domains[k] if len(domains[k]) > 1]
    syms = [Symbol(f"a{i}") for i in range(len(atoms))]
    index = {a: i for i, a in enumerate(atoms)}
    varying = [k for k in keys if len(domains[k]) > 1]
    minterms = [[1 if a in o else 0 for a in atoms] for o in outs]
    valid = set()
    for combo in product(*(domains[k] for k in varying)):
        bits = [0] * len(atoms)
        for k, v in zip(varying, combo):
            bits[index[(k, v)]] = 1
        valid.add(tuple(bits))
    dontcares = [list(b) for b in product((0, 1), repeat=len(atoms)) if b not in valid]
    return _show(SOPform(syms, minterms, dontcares), atoms, syms, domains)
