"""Explanations for `ptxmc check`: for an allowed outcome a witness execution; for a forbidden
one every minimal set of named axioms that rules it out and the cycle each violated axiom shows
on a candidate execution."""
from __future__ import annotations

from ..model import observables as conditions
from ..ast import Cond, LitmusTest
from .check import resolve_model
from ..engines.smt import Z3Engine
from ..engines.base import concrete_evaluation
from ..isa.registry import lower
from ..results import witness


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
    from .blame import blame as minimal_sets

    blame = minimal_sets(eng, term)     # every minimal set, as eng.blame, in far fewer solver calls
    lines = head + ["Forbidden"]
    for subset in blame:
        lines.append("  ruled out by: " + " + ".join(subset))
    lines += _needed_sync(test, cond, model, options, timeout)
    # A telling candidate: one that satisfies every axiom outside the minimal sets (always exists).
    used = {a for subset in blame for a in subset}
    cand = eng.satisfiable(term, axioms=[a for a in eng.axiom_names if a not in used]) or sane
    ev = concrete_evaluation(es, model, cand, options)
    lines.append("A candidate execution with this outcome, and the axioms it violates:")
    env = {**cand.base(es), **ev.env}
    highlight = None
    for (chk, ok), value in zip(ev.checks, ev.check_values):
        if ok or chk.flag:
            continue
        steps = _steps(chk, value, env, es, options, model)
        highlight = steps if highlight is None else highlight
        lines.append(f"  violates {chk.name} ({chk.kind} at {_shown(chk.where.path)}:{chk.where.line})"
                     + _shape(chk, steps))
        lines += _causality_lines(steps, env, es)
    text = "\n".join(lines) + "\n" + witness.text(es, cand, dict(ev.env))
    positions = {th.name: th.position for th in test.threads}
    return text, witness.dot(es, cand, dict(ev.env), f"{test.name}: forbidden candidate", positions, highlight or ())


def _needed_sync(test, cond, model, options, timeout) -> list[str]:
    """The fences and release/acquire annotations whose removal alone would allow the outcome."""
    from .mutate import effects

    effs = effects(test, cond, model, options, timeout)
    need = [e for e in effs if e.verdict in ("allowed", "undefined")]
    if need:
        return ["Synchronization it needs (each change alone makes it allowed, or the program undefined):"] + \
               [f"  {e.mutation.describe()}" + (" (then undefined)" if e.verdict == "undefined" else "")
                for e in need]
    return ["No single fence or release/acquire annotation is needed: it stays forbidden without any one"] \
        if effs else []


def _steps(chk, value, env, es, options, model):
    from .cycle import violation_path

    return violation_path(model, chk, value, env, {}, len(es.events), options)


def _shape(chk, steps) -> str:
    """What the violated check shows, in the model's names: the cycle (acyclic, irreflexive) or
    the offending path (empty), e.g. `e7 -fr-> e2 -cause-> e7`."""
    from .cycle import note, show

    if not steps:
        return ""
    what = "cycle " if chk.kind in ("acyclic", "irreflexive") else ""
    extra = note(chk)
    return f": {what}{show(steps)}" + (f" ({extra})" if extra else "")


# The clauses of proxy-preserved base causality order in axioms/ptx.cat, in the order tried.
PPBC_CASES = (
    ("ppbc_generic", "same address, generic proxy"),
    ("ppbc_sameproxy", "same address, same proxy, same CTA"),
    ("ppbc_source", "a proxy fence after the non-generic access, in its CTA (source side, A1)"),
    ("ppbc_destination", "a proxy fence before the non-generic access, in its CTA (destination side, A1)"),
    ("ppbc_both", "proxy fences for both proxies, source side then destination side (A1)"),
    ("ppbc_alias", "an alias proxy fence on the path"),
    ("ppbc_source_alias", "a source-side proxy fence, then an alias fence (A1)"),
    ("ppbc_alias_destination", "an alias fence, then a destination-side proxy fence (A1)"),
    ("ppbc_source_alias_destination", "source-side proxy fence, alias fence, destination-side proxy fence (A1)"),
)


def _causality_lines(steps, env, es) -> list[str]:
    """For each causality step of a violation: which clause of proxy-preserved base causality
    order makes it (the proxy fences, A1) and the fences that lie between its two ends in base
    causality -- the fences on the causality path."""
    def rel(name):
        kind, v = env.get(name, ("", None))
        return v if kind == "rel" and v is not None else frozenset()

    bc, obs, ppbc = rel("bc"), rel("obs"), rel("ppbc")
    out = []
    for a, name, b in steps:
        if name != "cause":
            continue
        x, via = a, ""
        if (a, b) not in ppbc:
            mids = sorted(m for (p, m) in obs if p == a and (m, b) in ppbc)
            if not mids:
                continue
            x, via = mids[0], f"e{a} -obs-> e{mids[0]}, then "
        case = next((why for n, why in PPBC_CASES if (x, b) in rel(n)), None)
        fences = [e for e in es.events if e.kind in ("F", "C") and (x, e.eid) in bc and (e.eid, b) in bc]
        line = f"    e{a} -cause-> e{b}: {via}proxy-preserved base causality"
        if case:
            line += f" by {case}"
        out.append(line)
        if fences:
            out.append("      fences on the causality path: " +
                       "; ".join(f"e{e.eid} {e.thread}: {e.label}" for e in fences))
        else:
            out.append("      no fence on the causality path")
    return out


def _shown(path: str) -> str:
    """A model path relative to the working folder when it lies below it."""
    import os

    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel
