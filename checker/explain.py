"""Explanations for `ptxmc check`: for an allowed outcome a witness execution; for a forbidden
one every minimal set of named axioms that rules it out and the cycle each violated axiom shows
on a candidate execution."""
from __future__ import annotations

from . import conditions
from .ast import Cond, LitmusTest
from .cat.concrete import find_cycle
from .check import resolve_model
from .engine_z3 import Z3Engine
from .execution import concrete_evaluation
from .lower import lower
from . import witness


def explain_condition(test: LitmusTest, cond: Cond, model_spec, options, timeout) -> tuple[str, str | None]:
    model = resolve_model(model_spec)
    es = lower(test)
    eng = Z3Engine(es, model, options, timeout=timeout)
    term = conditions.to_z3(cond, eng.enc.observables, es.names)
    head = [f"Test {test.name}  (model {_shown(model.path)})", f"Condition {conditions.show(cond)}"]
    head += [f"note: {n}" for n in es.notes]
    for name in sorted(eng.enc.flags):
        ex = eng.flag_witness(name)
        if ex is not None:
            head.append(f"Undefined: the program has undefined behaviour ({name}); outcomes are meaningless")
            ev = concrete_evaluation(es, model, ex, options)
            return "\n".join(head) + "\n" + witness.text(es, ex, dict(ev.env)), None
    ex = eng.satisfiable(term)
    if ex is not None:
        ev = concrete_evaluation(es, model, ex, options)
        text = "\n".join(head + ["Allowed", "Witness execution:"]) + "\n" + witness.text(es, ex, dict(ev.env))
        return text, witness.dot(es, ex, dict(ev.env), f"{test.name}: allowed witness")
    sane = eng.satisfiable(term, axioms=())
    if sane is None:
        return "\n".join(head + ["Impossible: no well-formed execution satisfies it, even without axioms "
                                 "(check the condition's values and registers)"]) + "\n", None
    blame = eng.blame(term)
    lines = head + ["Forbidden"]
    for subset in blame:
        lines.append("  ruled out by: " + " + ".join(subset))
    # A telling candidate: one that violates only the first minimal set, if there is one.
    rest = [a for a in eng.axiom_names if a not in (blame[0] if blame else ())]
    cand = eng.satisfiable(term, axioms=rest) or sane
    ev = concrete_evaluation(es, model, cand, options)
    lines.append("A candidate execution with this outcome, and the axioms it violates:")
    env = {**cand.base(es), **ev.env}
    for (chk, ok), value in zip(ev.checks, ev.check_values):
        if ok or chk.flag:
            continue
        lines.append(f"  violates {chk.name} ({chk.kind} at {_shown(chk.where.path)}:{chk.where.line})"
                     + _shape(chk, value, env, es, options))
    text = "\n".join(lines) + "\n" + witness.text(es, cand, dict(ev.env))
    return text, witness.dot(es, cand, dict(ev.env), f"{test.name}: forbidden candidate")


def _shape(chk, value, env, es, options) -> str:
    """What the violated check shows: the cycle, the reflexive event split at its `;`, or the
    offending edge."""
    kind, v = value
    if kind != "rel" or not v:
        return ""
    if chk.kind == "acyclic":
        cyc = find_cycle(v)
        return ": cycle " + " -> ".join(f"e{e}" for e in cyc + cyc[:1]) if cyc else ""
    if chk.kind == "irreflexive":
        loops = sorted(a for a, b in v if a == b)
        if not loops:
            return ""
        e = loops[0]
        return ": " + _split(chk.expr, e, e, env, es, options)
    a, b = min(v)
    return f": edge e{a} -> e{b}"


def _split(expr, a: int, b: int, env, es, options) -> str:
    """`a -[left]-> m -[right]-> b` for a composition, else `a -[expr]-> b`."""
    from .cat.ast import Binary, format_expr
    from .cat.concrete import ConcreteAlgebra
    from .cat.interp import evaluate_expr

    if isinstance(expr, Binary) and expr.op == ";":
        alg = ConcreteAlgebra(range(len(es.events)))
        _, left = evaluate_expr(expr.left, env, alg, options)
        _, right = evaluate_expr(expr.right, env, alg, options)
        for m in range(len(es.events)):
            if (a, m) in left and (m, b) in right:
                return f"e{a} -[{format_expr(expr.left)}]-> {_split(expr.right, m, b, env, es, options)}"
    return f"e{a} -[{format_expr(expr)}]-> e{b}"


def _shown(path: str) -> str:
    """A model path relative to the working folder when it lies below it."""
    import os

    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel
