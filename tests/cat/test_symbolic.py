"""The symbolic algebra (checker/symbolic.py) agrees with the concrete one (checker/cat/concrete.py).

On small random graphs whose edges are absent, static (TRUE) or dynamic (a fresh Z3 Boolean),
and a random assignment of the dynamic edges: each cat operator's symbolic result, evaluated
under the assignment (with the algebra's definitions of its fresh variables), is exactly the
concrete result on the graph the assignment picks; each check's constraint is satisfiable under
the assignment exactly when the concrete check holds. Then the same for whole random cat
expressions and `let rec` groups through the interpreter, and for the checks of ptx.cat.
"""
from __future__ import annotations

import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.cat.concrete import ConcreteAlgebra
from checker.cat.interp import evaluate, parse_model
from checker.cat.symbolic import TRUE, SymbolicAlgebra

MAX_EVENTS = 4
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ABSENT, STATIC, DYNAMIC = 0, 1, 2


@st.composite
def graphs(draw, rels: int = 2, sets: int = 1):
    """(n, symbolic base, concrete base, assignment): `rels` relations r0.. and `sets` sets s0..,
    each entry absent, static or dynamic; the assignment fixes every dynamic entry."""
    n = draw(st.integers(1, MAX_EVENTS))
    sym, conc, assignment = {}, {}, []
    keyspace = {"rel": [(a, b) for a in range(n) for b in range(n)], "set": list(range(n))}
    names = [(f"r{i}", "rel") for i in range(rels)] + [(f"s{i}", "set") for i in range(sets)]
    for name, kind in names:
        table, picked = {}, set()
        for k in keyspace[kind]:
            how = draw(st.sampled_from((ABSENT, STATIC, DYNAMIC)))
            if how == STATIC:
                table[k], _ = TRUE, picked.add(k)
            elif how == DYNAMIC:
                label = "|".join(map(str, k)) if kind == "rel" else str(k)
                v = z3.Bool(f"{name}|{label}")
                table[k] = v
                on = draw(st.booleans())
                assignment.append(v == on)
                if on:
                    picked.add(k)
        sym[name] = (kind, table)
        conc[name] = (kind, frozenset(picked))
    return n, sym, conc, assignment


def _solver(alg: SymbolicAlgebra, assignment) -> z3.Solver:
    s = z3.Solver()
    s.add(*assignment)
    s.add(*alg.definitions)
    return s


def _concretise(table: dict, model: z3.ModelRef) -> frozenset:
    out = set()
    for k, t in table.items():
        if t is TRUE or z3.is_true(model.eval(t, model_completion=True)):
            out.add(k)
    return frozenset(out)


def _agree(alg: SymbolicAlgebra, assignment, sym_value, conc_value) -> None:
    s = _solver(alg, assignment)
    assert s.check() == z3.sat           # the definitions are equalities: always satisfiable
    assert _concretise(sym_value, s.model()) == conc_value


def _check_agrees(alg: SymbolicAlgebra, assignment, constraint, holds: bool) -> None:
    for c, expect in ((constraint, holds), (alg.negate(constraint), not holds)):
        s = _solver(alg, assignment)
        s.add(c)
        assert (s.check() == z3.sat) == expect


def _algebras(n: int, named: bool = False):
    return SymbolicAlgebra(range(n), z3.main_ctx(), name_lets=named), ConcreteAlgebra(range(n))


# ---- one operator at a time ---------------------------------------------------------------------

BINARY_REL = ("union", "inter", "diff", "compose")
UNARY_REL = ("inverse", "plus", "star", "opt", "rel_complement")


@SETTINGS
@given(graphs(rels=2, sets=0), st.sampled_from(BINARY_REL))
def test_binary_relation_operators(g, op):
    n, sym, conc, assignment = g
    salg, calg = _algebras(n)
    got = getattr(salg, op)(sym["r0"][1], sym["r1"][1])
    want = getattr(calg, op)(conc["r0"][1], conc["r1"][1])
    _agree(salg, assignment, got, want)


@SETTINGS
@given(graphs(rels=1, sets=0), st.sampled_from(UNARY_REL))
def test_unary_relation_operators(g, op):
    n, sym, conc, assignment = g
    salg, calg = _algebras(n)
    _agree(salg, assignment, getattr(salg, op)(sym["r0"][1]), getattr(calg, op)(conc["r0"][1]))


@SETTINGS
@given(graphs(rels=1, sets=2), st.sampled_from(("union", "inter", "diff", "product", "complement",
                                                  "ident", "domain", "range")))
def test_set_operators(g, op):
    n, sym, conc, assignment = g
    salg, calg = _algebras(n)
    (_, s0), (_, s1), (_, r0) = sym["s0"], sym["s1"], sym["r0"]
    (_, c0), (_, c1), (_, q0) = conc["s0"], conc["s1"], conc["r0"]
    if op in ("union", "inter", "diff", "product"):
        got, want = getattr(salg, op)(s0, s1), getattr(calg, op)(c0, c1)
    elif op == "complement":
        got, want = salg.set_complement(s0), calg.set_complement(c0)
    elif op == "ident":
        got, want = salg.ident(s0), calg.ident(c0)
    else:
        got, want = getattr(salg, op)(r0), getattr(calg, op)(q0)
    _agree(salg, assignment, got, want)


@SETTINGS
@given(graphs(rels=1, sets=0), st.sampled_from(("acyclic", "irreflexive", "is_empty")))
def test_checks(g, check):
    n, sym, conc, assignment = g
    salg, calg = _algebras(n)
    constraint = getattr(salg, check)(sym["r0"][1], "Check")
    _check_agrees(salg, assignment, constraint, getattr(calg, check)(conc["r0"][1], "Check"))


@SETTINGS
@given(graphs(rels=1, sets=0))
def test_bind_names_entries_without_changing_them(g):
    n, sym, conc, assignment = g
    salg, _ = _algebras(n, named=True)
    _agree(salg, assignment, salg.bind(sym["r0"][1], "it"), conc["r0"][1])


# ---- whole expressions through the interpreter ---------------------------------------------------

def _rel_exprs(depth: int):
    leaf = st.sampled_from(("r0", "r1", "r2", "id", "0", "[s0]", "[s1]", "s0 * s1"))
    if depth == 0:
        return leaf
    sub, sets = _rel_exprs(depth - 1), _set_exprs(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(("|", "&", "\\", ";")), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, st.sampled_from(("^-1", "+", "*", "?"))).map(lambda t: f"({t[0]}){t[1]}"),
        sub.map(lambda e: f"~({e})"),
        sets.map(lambda e: f"[{e}]"),
        st.tuples(sets, sets).map(lambda t: f"(({t[0]}) * ({t[1]}))"),
    )


def _set_exprs(depth: int):
    leaf = st.sampled_from(("s0", "s1", "_"))
    if depth == 0:
        return leaf
    sub, rels = _set_exprs(depth - 1), _rel_exprs(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(("|", "&", "\\")), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        sub.map(lambda e: f"~({e})"),
        rels.map(lambda e: f"domain({e})"),
        rels.map(lambda e: f"range({e})"),
    )


def _compare_model(text: str, g, named: bool = False) -> None:
    n, sym, conc, assignment = g
    model = parse_model(text)
    salg, calg = _algebras(n, named)
    sev = evaluate(model, sym, salg)
    cev = evaluate(model, conc, calg)
    s = _solver(salg, assignment)
    assert s.check() == z3.sat
    m = s.model()
    for name, (kind, cval) in cev.env.items():
        skind, sval = sev.env[name]
        assert skind == kind
        assert _concretise(sval, m) == cval, name
    for (chk, sc), (_, cc) in zip(sev.checks, cev.checks):
        t = _solver(salg, assignment)
        t.add(sc)
        assert (t.check() == z3.sat) == cc, chk.name


@SETTINGS
@given(graphs(rels=3, sets=2), _rel_exprs(3), _set_exprs(2), st.booleans())
def test_random_expressions(g, rel_expr, set_expr, named):
    text = (f"let a = {rel_expr}\nlet b = {set_expr}\n"
            "acyclic a as A\nirreflexive a as B\nempty b as C\n~empty a as D\n~acyclic a as E\n")
    _compare_model(text, g, named)


@SETTINGS
@given(graphs(rels=3, sets=2), _rel_exprs(2), st.booleans())
def test_let_rec(g, seed, named):
    # A least fixpoint the interpreter computes by iteration: closure of a random relation, and a
    # mutually recursive pair.
    text = (f"let base = {seed}\n"
            "let rec t = base | (t ; t)\n"
            "let rec u = r0 | (v ; r1) and v = r2 | (u ; r0)\n"
            "acyclic t as T\nempty (u & v) as UV\n")
    _compare_model(text, g, named)


# ---- the checks of the bundled model, on random dynamic rf/co ------------------------------------

PTX_LIKE = """
let fr = (rf^-1 ; co) \\ id
let com = rf | co | fr
let cause = (po | rf)+
acyclic (com | po) as SC
irreflexive ((rf | fr) ; cause) as Causality
empty (rf & co) as Disjoint
"""


@SETTINGS
@given(graphs(rels=3, sets=0))
def test_model_checks(g):
    n, sym, conc, assignment = g
    rename = {"r0": "rf", "r1": "co", "r2": "po"}
    g = (n, {rename[k]: v for k, v in sym.items()}, {rename[k]: v for k, v in conc.items()}, assignment)
    _compare_model(PTX_LIKE, g)


def test_term_constructors_make_z3s_terms_and_raise_z3s_errors():
    """The constructors call Z3's C entry points without z3py's checks: the terms are the ones
    z3py makes (the same AST), they live as long as they are referenced, and arguments Z3
    refuses raise Z3's own error, as z3py does."""
    import gc

    from checker.cat.symbolic import mk_and, mk_exactly_one, mk_implies, mk_not, mk_or

    ctx = z3.Context()
    a, b, c = (z3.Bool(n, ctx) for n in "abc")
    pairs = [(mk_and([a, b, c]), z3.And(a, b, c)), (mk_or([a, b]), z3.Or(a, b)), (mk_not(a), z3.Not(a)),
             (mk_implies(a, b), z3.Implies(a, b)), (mk_exactly_one([a, b]), z3.PbEq([(a, 1), (b, 1)], 1))]
    for ours, theirs in pairs:
        assert isinstance(ours, z3.BoolRef) and ours.eq(theirs) and ours.get_id() == theirs.get_id()
    kept = mk_and([mk_or([a, b]), mk_not(c)])
    gc.collect()
    s = z3.Solver(ctx=ctx)
    s.add(kept, c == False)     # noqa: E712 - a Z3 term
    assert s.check() == z3.sat and z3.is_true(s.model().eval(z3.Or(a, b)))
    for bad in (lambda: mk_and([a, z3.Int("i", ctx)]), lambda: mk_not(z3.Int("j", ctx))):
        try:
            bad()
        except z3.Z3Exception:
            pass
        else:
            raise AssertionError("Z3 refused no argument")
