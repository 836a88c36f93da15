"""The compact formula of an outcome set holds on exactly those outcomes (within the values the
variables take), for SOPform-sized and merged-cube-sized sets alike."""
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
