"""ptxmc fix's monotonicity is read from the model (checker.cat.polarity), not from its path: the
bundled model is monotone in the edits of a test, and a user model that uses a strengthened name
negatively gets the exhaustive (safe) search, with the reason."""
from __future__ import annotations

from pathlib import Path

from checker import AXIOMS_DIR
from checker.cat.interp import load_model, parse_model
from checker.cat.polarity import Effects, monotone_failures
from checker.front.litmus import load_text
from checker.repair.candidates import candidates
from checker.repair.costs import DEFAULT
from checker.repair.problem import Problem, effects
from checker.repair.program import build
from checker.repair.target import from_test
from checker.verdict.session import Session

PATTERN = Path("litmus/patterns/P12-handoff-scope.yaml")


def _mp(name="P12-waitscope-buggy"):
    """A test whose repairs widen a scope (a move from one scope set to another) and insert fences."""
    return next(t for t in load_text(PATTERN.read_text(), str(PATTERN)) if t.name == name)


def _problem(model):
    test = _mp()
    es = Session(test, model).es
    return Problem(test, from_test(test), model, frozenset(), "z3", None, candidates(test, es, DEFAULT, frozenset()))


def test_bundled_model_is_monotone_in_the_edits():
    p = _problem(load_model(AXIOMS_DIR / "ptx.cat"))
    assert p.monotone and p.not_monotone == ()


def test_user_model_with_a_negative_use_is_not(tmp_path):
    # the bundled model plus a flag on .cluster-scoped operations: widening a scope (.cta ->
    # .cluster) can make it fire, so adding an edit is not monotone
    user = tmp_path / "mine.cat"
    user.write_text(f'"mine"\ninclude "{AXIOMS_DIR / "ptx.cat"}"\nflag ~empty [CLUSTER] as Odd\n')
    model = load_model(user)
    p = _problem(model)
    assert not p.monotone
    assert any("Odd" in r and "'CLUSTER' grows" in r for r in p.not_monotone), p.not_monotone


def test_the_same_model_text_elsewhere_is_judged_the_same(tmp_path):
    # the decision reads the text, not the path: a copy of the bundled file is monotone too
    copy = tmp_path / "ptx.cat"
    copy.write_text((AXIOMS_DIR / "ptx.cat").read_text())
    assert _problem(load_model(copy)).monotone


def test_difference_rules():
    text = '''"t"
let a = po \\ ([W]; po)
let b = (([R]; po) | (po; [W])) \\ ([F]; po)
acyclic a as A
acyclic b as B
empty ((po; po) \\ rf) \\ (po; po) as C
'''
    m = parse_model(text)
    # po grows: positive in A and B (a guard only narrows it), negative in C
    out = monotone_failures(m, Effects(grows={"po": None}))
    assert [r.split(" ")[0] for r in out] == ["C"]
    # W grows: under a complement in A
    assert any(r.startswith("A") and "'W'" in r for r in monotone_failures(m, Effects(grows={"W": None})))
    # an empty name makes its subtrahend vanish
    assert monotone_failures(m, Effects(grows={"po": None}, empty=frozenset({"po"}))) == ()


def test_a_guarded_form_behind_an_option_narrows_like_one_written_out():
    # b's subtrahend is a guarded form of po chosen by an option: with the option decided it is
    # [F]; po (or [R]; po), which only narrows b's guard, as in test_difference_rules. Read as an
    # opaque name it counted po negatively, and `ptxmc fix` lost its proof of least cost on
    # P9/P14 when ptx.cat's sw_async gained an option (03fb8a4)
    text = '''"t"
let g = if "o" then [R]; po else [F]; po
let b = (([R]; po) | (po; [W])) \\ g
acyclic b as B
'''
    m = parse_model(text)
    assert monotone_failures(m, Effects(grows={"po": None})) == ()
    assert monotone_failures(m, Effects(grows={"po": None}), frozenset({"o"})) == ()
    # F grows: the option does not hide that the guard is subtracted
    assert monotone_failures(m, Effects(grows={"F": None})) != ()


def test_effects_of_a_scope_widening_are_a_move():
    test = _mp()
    base = build(test, ())
    cands = [c for c in candidates(test, base.es, DEFAULT, frozenset()) if c.kind != "insert"]
    fx = effects(base, [build(test, (c,)) for c in cands])
    assert any("CLUSTER" in to for _, to in fx.moves["CTA"]), fx.moves
    # the bundled model writes incl cumulatively, so leaving CTA for CLUSTER loses nothing
    assert monotone_failures(load_model(AXIOMS_DIR / "ptx.cat"), fx) == ()
    # written per scope, the same move is not seen to be monotone
    per_scope = (AXIOMS_DIR / "ptx.cat").read_text().replace(
        "let incl = ([CTA | CLUSTER | GPU | SYS]; pcta) | ([CLUSTER | GPU | SYS]; scluster)\n"
        "         | ([GPU | SYS]; sgpu) | ([SYS]; (_ * _))",
        "let incl = ([CTA]; pcta) | ([CLUSTER]; scluster) | ([GPU]; sgpu) | ([SYS]; (_ * _))")
    assert "let incl = ([CTA]; pcta)" in per_scope
    out = monotone_failures(parse_model(per_scope, str(AXIOMS_DIR / "x.cat")), fx)
    assert any("'CTA' loses events" in r for r in out), out


def test_mbarrier_inval_is_the_bundled_models_exception():
    # mbarrier.inval's reinitialisation rule uses base causality negatively in a flag: the analysis
    # finds it in the model (the exception the search used to hard-code)
    path = Path("litmus/async/mbarrier-lifecycle.yaml")
    test = next(t for t in load_text(path.read_text(), str(path)) if t.name == "MbarrierLife+inval+reuse")
    model = load_model(AXIOMS_DIR / "ptx.cat")
    es = Session(test, model).es
    p = Problem(test, from_test(test), model, frozenset(), "z3", None, candidates(test, es, DEFAULT, frozenset()))
    assert not p.monotone and "MbarrierUninitialised" in p.not_monotone[0]
