"""Staging (checker/cat/stage.py) changes no check: evaluating the static part once and the
residual per execution gives every check the value the whole model gives, on random models
(shadowing, `let rec`, options) over random graphs, and on the bundled tests with ptx.cat."""
from __future__ import annotations

from dataclasses import replace
from itertools import islice

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.cat.concrete import ConcreteAlgebra
from checker.cat.interp import evaluate, parse_model
from checker.cat.stage import stage, static_values
from checker.resources import resolve_model
from checker.engines.brute import BruteEngine
from checker.errors import LimitExceeded, ModelError, Unsupported
from checker.isa.registry import lower
from checker.model import relations

from ..conftest import straight_line_tests

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DYNAMIC = {"rf", "co"}
STATIC_RELS = ("po", "loc")
SETS = ("W", "R")


def _both(model, base, n, options=frozenset()):
    alg = ConcreteAlgebra(range(n))
    whole = evaluate(model, base, alg, options)
    staged = stage(model, set(base), DYNAMIC & set(base) | {"rf", "co"})
    static_base = {k: v for k, v in base.items() if k not in DYNAMIC}
    values = static_values(staged, static_base, alg, options)
    part = evaluate(staged.residual, {**base, **values}, alg, options)
    return whole, part


def _same_checks(whole, part):
    assert [(c.name, v) for c, v in whole.checks] == [(c.name, v) for c, v in part.checks]


@st.composite
def _graph(draw):
    n = draw(st.integers(1, 4))
    pairs = [(a, b) for a in range(n) for b in range(n)]
    rel = st.frozensets(st.sampled_from(pairs), max_size=len(pairs))
    sets = st.frozensets(st.integers(0, n - 1), max_size=n)
    base = {name: ("rel", draw(rel)) for name in STATIC_RELS + tuple(DYNAMIC)}
    base.update({name: ("set", draw(sets)) for name in SETS})
    return n, base


def _expr(draw, names, depth=3):
    """A random relation expression over `names` (relations) and the sets."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(list(names) + [f"[{s}]" for s in SETS] + ["(W * R)", "id"]))
    op = draw(st.sampled_from(("|", "&", "\\", ";", "+", "*", "^-1", "~", "if")))
    a = _expr(draw, names, depth - 1)
    if op in ("+", "*", "^-1"):
        return f"({a}){op}"
    if op == "~":
        return f"~({a})"
    b = _expr(draw, names, depth - 1)
    if op == "if":
        return f'(if "opt" then {a} else {b})'
    return f"({a} {op} {b})"


@st.composite
def _model_text(draw):
    names = list(STATIC_RELS) + sorted(DYNAMIC)
    lines = []
    for i in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(("let", "let", "shadow", "rec", "check")))
        if kind == "let":
            name = f"d{i}"
            lines.append(f"let {name} = {_expr(draw, names)}")
            names.append(name)
        elif kind == "shadow" and len(names) > 4:
            name = draw(st.sampled_from(names))           # rebinding a base or let name
            lines.append(f"let {name} = {_expr(draw, names)}")
        elif kind == "rec":
            name = f"t{i}"
            lines.append(f"let rec {name} = {_expr(draw, names, 2)} | ({name} ; {_expr(draw, names, 1)})")
            names.append(name)
        else:
            lines.append(f"acyclic {_expr(draw, names)} as C{i}")
    lines.append(f"irreflexive {_expr(draw, names)} as Last")
    lines.append(f"empty {_expr(draw, names)} as Empty")
    return "\n".join(lines) + "\n"


@SETTINGS
@given(_graph(), _model_text(), st.booleans())
def test_staging_keeps_every_check(g, text, opt):
    n, base = g
    whole, part = _both(parse_model(text), base, n, frozenset({"opt"}) if opt else frozenset())
    _same_checks(whole, part)


@st.composite
def _sparse_graph(draw):
    """A graph whose base relations and sets are often empty (as most of a test's are)."""
    n, base = draw(_graph())
    for name, (kind, value) in list(base.items()):
        if draw(st.booleans()):
            base[name] = (kind, frozenset())
    return n, base


@SETTINGS
@given(_sparse_graph(), _model_text(), st.booleans())
def test_skipping_absorbed_operands_changes_no_value(g, text, opt):
    # A checked model leaves an operand unevaluated when the other one makes the result empty
    # (interp._Evaluator.absorbing): every let and every check keeps the full evaluation's value.
    n, base = g
    model = parse_model(text)
    options = frozenset({"opt"}) if opt else frozenset()
    alg = ConcreteAlgebra(range(n))
    full = evaluate(model, base, alg, options)
    skipping = evaluate(replace(model, checked=True), base, alg, options)
    assert skipping.env == full.env
    assert [v for _, v in skipping.checks] == [v for _, v in full.checks]


def test_an_unchecked_model_reports_errors_in_absorbed_operands():
    # Without a glossary nothing checked the names when the model was loaded: an empty operand
    # must not hide the unknown name beside it.
    model = parse_model("let a = [W] ; (po | nowhere)\n")
    assert not model.checked
    with pytest.raises(ModelError, match="unknown name 'nowhere'"):
        evaluate(model, {"W": ("set", frozenset()), "po": ("rel", frozenset())}, ConcreteAlgebra(range(2)))


def test_static_subexpressions_are_hoisted():
    model = parse_model("let a = rf & (po ; [W])\nacyclic (a | (loc \\ po)) as A\n")
    staged = stage(model, {"rf", "co", "po", "loc", "W", "R"}, {"rf", "co"})
    (let,) = [s for s in staged.residual.statements if hasattr(s, "bindings")]
    # `po ; [W]` and `loc \ po` are static: both left the residual under hoisted names.
    assert "po" not in repr(let.bindings[0].expr) and len(staged.static.statements) == 2


TESTS = straight_line_tests()


@pytest.mark.parametrize("options", [(), ("strict-cta",)], ids=["default", "strict-cta"])
@pytest.mark.parametrize("test", TESTS[::7], ids=[t.name for t in TESTS[::7]])
def test_staging_on_bundled_tests(test, options):
    model = resolve_model("ptx")
    options = frozenset(options) & model.options_used
    es = lower(test)
    try:
        eng = BruteEngine(es, model, options, limit=5_000)
    except LimitExceeded as e:
        pytest.skip(str(e))
    alg = ConcreteAlgebra(range(len(es.events)))
    try:
        executions = list(islice(eng.executions(with_axioms=False), 40))
    except Unsupported as e:
        pytest.skip(str(e))
    for ex, _ in executions:
        base = ex.base(es)
        whole = evaluate(model, base, alg, options)
        dynamic = ("rf", *ex.orders, *relations.VALUE_SETS)
        part = evaluate(eng.residual, {**eng.base, **{k: base[k] for k in dynamic}}, alg, options)
        _same_checks(whole, part)
