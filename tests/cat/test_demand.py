"""Demand-driven evaluation (checker/cat/demand.py) gives every check the constraint, and every
flag the value, that the full symbolic evaluation gives it; the bounds algebra (checker/cat/bounds.py)
says which entries the symbolic one has and which are True.

Random models over random graphs (absent, static and dynamic entries: tests/cat/test_symbolic.py's
generators), with lets that several checks read in different ways, so that demands differ per use;
then ptx.cat on the bundled tests large enough for the engine to evaluate them on demand, and on
an extracted skeleton, compared term for term (SMT-LIB text).
"""
from __future__ import annotations

import z3
from hypothesis import given
from hypothesis import strategies as st

from checker import limits
from checker.cat import demand
from checker.cat.bounds import BoundsAlgebra, from_symbolic
from checker.cat.interp import evaluate, parse_model
from checker.cat.symbolic import TRUE, SymbolicAlgebra
from checker.engines import encode as encoding
from checker.front.litmus import load_paths
from checker.isa.registry import lower
from checker.resources import resolve_model
from checker.unfold.variants import one_variant

from .test_symbolic import SETTINGS, _rel_exprs, _set_exprs, graphs

# `a` and `c` are each read in part only (the diagonal of a composition, a domain, what r2 may
# relate), so their values are restricted; `d` is read in full (an acyclic check, a flag)
CHECKS = ("irreflexive (a ; r1) as B\nempty (b & domain(a)) as C\n~empty (a & r2) as D\n"
          "irreflexive (c ; a^-1) as E\nacyclic d as A\nflag ~empty (d \\ r0) as F\n"
          "flag ~empty (range(d) | b) as G\n")


def _texts(ev) -> tuple:
    """Each check's constraint and each check's value, as text (Python True stays True)."""
    def show(t):
        return t if t is TRUE else t.sexpr()
    return ([c.sexpr() for _, c in ev.checks],
            [(kind, {k: show(t) for k, t in v.items()}) for kind, v in ev.check_values])


def _both(text: str, n: int, base: dict):
    model = parse_model(text)
    full = evaluate(model, base, SymbolicAlgebra(range(n), z3.main_ctx()))
    lazy = demand.evaluate(model, base, SymbolicAlgebra(range(n), z3.main_ctx()))
    return full, lazy


@SETTINGS
@given(graphs(rels=3, sets=2), _rel_exprs(3), _rel_exprs(2), _set_exprs(2))
def test_demand_gives_the_same_constraints(g, rel_a, rel_c, set_b):
    n, sym, _, _ = g
    text = f"let a = {rel_a}\nlet b = {set_b}\nlet c = ({rel_c}) ; a\nlet d = c ; r2\n" + CHECKS
    full, lazy = _both(text, n, sym)
    f_checks, f_values = _texts(full)
    l_checks, l_values = _texts(lazy)
    assert l_checks == f_checks
    # a flag's relation is read edge by edge (its least edge): all of it; other checks' values
    # may hold fewer entries
    for (chk, _), fv, lv in zip(full.checks, f_values, l_values):
        if chk.flag or chk.kind in ("acyclic", "empty"):
            assert lv == fv, chk.name


@SETTINGS
@given(graphs(rels=3, sets=1), st.sampled_from(("+", "*")))
def test_demand_through_closures(g, op):
    # closures read in part: the pairs a composition closes into a cycle, or that r1 may relate
    n, sym, _, _ = g
    text = (f"let a = (r0 | r1){op}\nlet e = (r2 ; [s0]){op}\nirreflexive (a ; r2) as B\n"
            f"~empty (a & r1) as D\nempty (e & r0) as C\nirreflexive (e ; a) as E\n")
    full, lazy = _both(text, n, sym)
    assert _texts(lazy)[0] == _texts(full)[0]


@SETTINGS
@given(graphs(rels=3, sets=2), _rel_exprs(3), _set_exprs(2))
def test_bounds_follow_the_symbolic_algebra(g, rel_expr, set_expr):
    """For every let: may = the symbolic value's keys, must = its entries that are True."""
    n, sym, _, _ = g
    model = parse_model(f"let a = {rel_expr}\nlet b = {set_expr}\n")
    sev = evaluate(model, sym, SymbolicAlgebra(range(n), z3.main_ctx()))
    bounds = {name: (kind, from_symbolic(v, n, kind == "rel", TRUE)) for name, (kind, v) in sym.items()}
    bev = evaluate(model, bounds, BoundsAlgebra(n))
    for name, (kind, value) in sev.env.items():
        want = from_symbolic(value, n, kind == "rel", TRUE)
        got = bev.env[name][1]
        assert (got.may, got.must) == (want.may, want.must), name


def test_a_let_read_two_ways_keeps_every_entry_each_reader_needs():
    # a = r0+ is read by `a ; r1` on the diagonal only and by an empty check in full
    r0 = {(0, 1): z3.Bool("x01"), (1, 2): TRUE, (2, 0): z3.Bool("x20"), (2, 3): TRUE}
    r1 = {(3, 0): TRUE, (2, 2): z3.Bool("y")}
    base = {"r0": ("rel", r0), "r1": ("rel", r1)}
    text = "let a = r0+\nirreflexive (a ; r1) as B\nempty (a & r1) as C\n"
    full, lazy = _both(text, 4, base)
    assert _texts(lazy)[0] == _texts(full)[0]
    # nothing reads the pairs of a that end in 3 but through r1 (3, 0): only (0, 3) is read
    assert set(lazy.env["a"][1]) < set(full.env["a"][1])


def _encodings(es):
    model = resolve_model("ptx")
    out = []
    for how in (evaluate, demand.evaluate):
        real = encoding.demand.evaluate
        encoding.demand.evaluate = how
        saved = encoding.DEMAND_EVENTS
        encoding.DEMAND_EVENTS = 0
        try:
            enc = encoding.encode(es, model)
        finally:
            encoding.demand.evaluate, encoding.DEMAND_EVENTS = real, saved
        out.append(([w.sexpr() for w in enc.wellformed], {k: v.sexpr() for k, v in enc.axioms.items()},
                    {k: (c.sexpr(), {e: (t if t is TRUE else t.sexpr()) for e, t in val.items()})
                     for k, (c, _, val) in enc.flags.items()}))
    return out


def test_ptx_cat_on_the_larger_bundled_tests():
    from checker import LITMUS_DIR
    seen = 0
    for test in load_paths([str(LITMUS_DIR / "async"), str(LITMUS_DIR / "tensorcore")]):
        variant = one_variant(test) if hasattr(test, "threads") else None
        if variant is None:
            continue
        es = lower(variant)
        if len(es.events) < 24:
            continue
        full, lazy = _encodings(es)
        assert lazy == full, test.name
        seen += 1
    assert seen >= 3


def test_ptx_cat_on_an_extracted_skeleton(tmp_path):
    from checker.extract.api import extract_file
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    out = extract_file(str(root / "examples/kernels/triton/gluon_bw_ws_matmul.sm100a.ptx"), out_dir=str(tmp_path))[0]
    with limits.use(limits.current().override(["events=1000", "instructions=256"])):
        test = next(iter(load_paths([out.path])))
        es = lower(one_variant(test))
        full, lazy = _encodings(es)
    assert len(es.events) > 100        # (tcgen05: it reads the cumulative orders)
    assert lazy == full


def test_closure_stops_updating_entries_nothing_reads(monkeypatch):
    """plus_within with the demanded pairs: each of them gets plus's very term, and the entries
    no later Warshall step and no demanded pair reads are not updated (fewer Or terms built)."""
    from checker.cat import symbolic
    n = 8
    ctx = z3.main_ctx()
    alg = SymbolicAlgebra(range(n), ctx)
    r = {(a, b): z3.Bool(f"e{a}_{b}", ctx) for a in range(n) for b in range(n) if a != b and (a + b) % 3}
    full = alg.plus(r)
    every = (1 << n) - 1
    want = [0] * n
    want[0] = 1 << 5            # one demanded pair, (0, 5)
    ends = [1 << 5] * n         # every node reaches every other: each lies on a path from 0 to 5
    reach = [every] * n
    built = []

    def counted(c, k, args):
        built.append(1)
        return real(c, k, args)
    real = symbolic._C_OR
    monkeypatch.setattr(symbolic, "_C_OR", counted)
    part = alg.plus_within(r, ends, reach, want)
    fewer = len(built)
    built.clear()
    whole = alg.plus_within(r, ends, reach)
    assert list(part) == [(0, 5)] and part[(0, 5)].eq(full[(0, 5)]) and whole[(0, 5)].eq(full[(0, 5)])
    assert fewer < len(built)
