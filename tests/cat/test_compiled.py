"""A checked model compiled to Python (checker/cat/compiled.py) gives every check and every
let-bound name the value the interpreter gives: on random models (shadowing, `let rec`, options, absorbing operands) over
random sparse graphs, and on every candidate brute force enumerates for the bundled tests."""
from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checker.cat import compiled
from checker.cat.concrete import ConcreteAlgebra
from checker.cat.interp import evaluate, parse_model
from checker.engines.brute import BruteEngine
from checker.errors import LimitExceeded, Unsupported
from checker.isa.registry import lower

from ..conftest import straight_line_tests
from .test_stage import SETTINGS, _model_text, _sparse_graph


@SETTINGS
@given(_sparse_graph(), _model_text(), st.booleans())
def test_compiled_checks_are_the_interpreters(g, text, opt):
    n, base = g
    model = replace(parse_model(text), checked=True)        # (the generator's models are well-formed)
    options = frozenset({"opt"}) if opt else frozenset()
    alg = ConcreteAlgebra(range(n))
    run = compiled.compile_checks(model, {k: kind for k, (kind, _) in base.items()}, alg, options)
    want = evaluate(model, base, alg, options)
    assert [(c, v) for c, v in run(base)] == [(c, v) for c, v in want.checks]
    # the early-stopping variant: the same checks where every axiom holds, else None
    consistent = compiled.compile_consistent(model, {k: kind for k, (kind, _) in base.items()}, alg, options)
    holds = all(v for c, v in want.checks if not c.flag)
    got = consistent(base)
    assert (got is not None) == holds
    assert got is None or [(c, v) for c, v in got] == [(c, v) for c, v in want.checks]
    env = compiled.compile_env(model, {k: kind for k, (kind, _) in base.items()}, alg, options)
    assert env(base) == dict(want.env)


def test_only_checked_models_are_compiled():
    model = parse_model("let a = po ; rf\nacyclic a as A\n")
    kinds = {"po": "rel", "rf": "rel"}
    assert compiled.compile_checks(model, kinds, ConcreteAlgebra(range(2))) is None
    assert compiled.compile_checks(replace(model, checked=True), kinds, ConcreteAlgebra(range(2))) is not None


TESTS = straight_line_tests()


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_brute_force_enumerates_the_same_with_the_compiled_model(test, ptx_model, monkeypatch):
    """Every consistent candidate, with the flags that fire on it, and every answer under subsets
    of the axioms, compiled and interpreted."""
    es = lower(test)
    try:
        fast = BruteEngine(es, ptx_model, limit=2_000)
    except LimitExceeded as e:
        pytest.skip(str(e))
    assert fast._checks is not None and fast._consistent_checks is not None
    monkeypatch.setattr("checker.engines.brute.compile_checks", lambda *a: None)
    monkeypatch.setattr("checker.engines.brute.compile_consistent", lambda *a: None)
    slow = BruteEngine(es, ptx_model, limit=2_000)
    assert slow._checks is None and slow._consistent_checks is None
    try:
        want = list(slow.executions())
    except Unsupported:
        with pytest.raises(Unsupported):
            list(fast.executions())
        return
    assert list(fast.executions()) == want
    for name in fast.axiom_names:
        assert _answer(fast.satisfiable, None, [name]) == _answer(slow.satisfiable, None, [name])


def _answer(question, *args):
    try:
        return question(*args)
    except Unsupported as e:
        return str(e)


def test_a_let_binds_its_names_together():
    """`let a = rf and b = a`: b is the `a` bound before, as the interpreter has it."""
    model = replace(parse_model("let a = po\nlet a = rf and b = a\nempty b \\ po as SamePo\nempty a \\ rf as A\n"),
                    checked=True)
    base = {"po": ("rel", frozenset({(0, 1)})), "rf": ("rel", frozenset({(1, 0)}))}
    alg = ConcreteAlgebra(range(2))
    run = compiled.compile_checks(model, {"po": "rel", "rf": "rel"}, alg)
    assert [v for _, v in run(base)] == [v for _, v in evaluate(model, base, alg).checks] == [True, True]


def test_a_model_nested_past_what_python_compiles_is_interpreted():
    """120 nested compositions would be 120 nested blocks of generated code (Python stops at 100):
    such a model is left to the interpreter, which gives its value."""
    from checker import limits

    expr = "po"
    for _ in range(120):
        expr = f"(rf ; {expr})"
    with limits.use(replace(limits.current(), nesting=1000)):     # (a raised --limit nesting)
        model = replace(parse_model(f"let a = {expr}\nempty a as A\n"), checked=True)
    kinds = {"po": "rel", "rf": "rel"}
    alg = ConcreteAlgebra(range(2))
    assert compiled.compile_checks(model, kinds, alg) is None
    shallow = replace(parse_model("let a = rf ; (rf ; po)\nempty a as A\n"), checked=True)
    assert compiled.compile_checks(shallow, kinds, alg) is not None
