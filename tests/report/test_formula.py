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


def test_small_sets_get_sympys_formula():
    """Every outcome set of the common small shapes (two varying variables, one two-valued, the
    other with at most four values): key order against name order and numeric against text order
    of the values included."""
    for shape, keys, values in [((2, 2), ["y", "x"], (10, 2)), ((2, 3), ["P1:r0", "P0:r0"], (3, 10, 2)),
                                ((3, 2), ["x", "P1:r1"], (0, 1, 2)), ((2, 4), ["b", "a"], (1, 0, 12, 3))]:
        for outs in _sets_of_shape(keys, values, shape):
            assert _core_of(outs) == _sympy_compact(outs), (shape, outs)


@st.composite
def bit_tables(draw):
    """Minterms and don't-cares over 1-7 variables, as compact() builds them (disjoint)."""
    n = draw(st.integers(1, 7))
    points = list(product((0, 1), repeat=n))
    kind = draw(st.lists(st.sampled_from("10-"), min_size=len(points), max_size=len(points)))
    minterms = [list(p) for p, k in zip(points, kind) if k == "1"]
    dontcares = [list(p) for p, k in zip(points, kind) if k == "-"]
    return n, minterms, dontcares


@settings(max_examples=400, deadline=None, derandomize=True)
@given(bit_tables())
def test_sop_form_is_sympys(table):
    """sop_form gives SOPform's very terms, in its order."""
    from sympy import And, Not, Or, Symbol, false, true
    from sympy.logic import SOPform

    from checker.results.formula import DASH, sop_form

    n, minterms, dontcares = table
    syms = [Symbol(f"a{i}") for i in range(n)]
    ours = sop_form(minterms, dontcares)

    def term(cube):
        return And(*[s if x == 1 else Not(s) for s, x in zip(syms, cube) if x != DASH])

    theirs = SOPform(syms, minterms, dontcares)
    assert Or(*[term(c) for c in ours]) == theirs, (ours, theirs)
    if theirs not in (true, false):
        args = theirs.args if isinstance(theirs, Or) else (theirs,)
        assert len(ours) == len(args)


def _core_of(outs):
    """The part of compact() over the varying variables (the fixed z=1 is a conjunct beside it)."""
    from checker.results.formula import _core

    keys = [k for k, _ in outs[0]]
    domains = {k: sorted({dict(o)[k] for o in outs}) for k in keys}
    return _core(outs, keys, domains)[0]


def _sympy_compact(outs):
    """The core formula of compact() as sympy's SOPform gives it (`true` left out), printed as
    compact() printed sympy's expressions when it called sympy."""
    from sympy import Symbol
    from sympy.logic import SOPform

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


def _show(expr, atoms, syms, domains) -> str:
    """(compact()'s printer of sympy expressions before it stopped importing sympy.)"""
    from sympy import And, Not, Or

    from checker.ast import value_text

    name = {s: f"{k}={value_text(v)}" for s, (k, v) in zip(syms, atoms)}
    negated = {s: f"{k}={value_text([d for d in domains[k] if d != v][0])}" if len(domains[k]) == 2
               else f"~{k}={value_text(v)}"
               for s, (k, v) in zip(syms, atoms)}

    def go(e, top=False) -> str:
        if e is True or str(e) == "True":
            return "true"
        if e in name:
            return name[e]
        if isinstance(e, Not) and e.args[0] in negated:
            return negated[e.args[0]]
        if isinstance(e, Not):
            return "~" + go(e.args[0])
        if isinstance(e, And):
            s = " /\\ ".join(sorted(go(a) for a in e.args))
            return s if top else f"({s})"
        if isinstance(e, Or):
            return " \\/ ".join(sorted(go(a) for a in e.args))
        return str(e)

    return go(expr, top=not isinstance(expr, Or)) if not isinstance(expr, Or) else go(expr)


@st.composite
def wide_sets(draw):
    """Sets over 2-4 variables with 2-3 values each (up to 7 atoms: the SOPform path)."""
    nvars = draw(st.integers(2, 4))
    keys = [f"P{i}:r0" for i in range(nvars)]
    domains = [draw(st.lists(st.integers(0, 3), min_size=2, max_size=3, unique=True)) for _ in keys]
    space = list(product(*domains))
    chosen = draw(st.lists(st.sampled_from(space), min_size=1, max_size=len(space), unique=True))
    return [tuple(zip(keys, vals)) + (("z", 1),) for vals in chosen]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(wide_sets())
def test_formula_is_sympys(outs):
    """compact() prints what it printed when it called sympy, on sets up to SOPform's bound."""
    from checker.results.formula import MAX_ATOMS

    outs = sorted(outs)
    keys = [k for k, _ in outs[0]]
    domains = {k: sorted({dict(o)[k] for o in outs}) for k in keys}
    atoms = sum(len(domains[k]) for k in keys if len(domains[k]) > 1)
    combos = 1
    for k in keys:
        combos *= len(domains[k])
    if atoms > MAX_ATOMS or len(outs) == combos:
        return
    assert _core_of(outs) == _sympy_compact(outs), outs
