"""What each edit of a repair supplies: the counterexample it blocks and the edge it adds.

For an edit e of repair R: the program without e (R minus e) fails the target (R is a least-cost
repair, and every edit costs something), through some execution X (a stored counterexample, or
a Session's witness). X read in the repaired program (checker.repair.transfer) is inconsistent,
or no longer raises its flag. The violated axiom's path (checker.cat.violation) names the edge:
the steps of the path that X does not have without e are the ones e supplies ("orders e3 before
e7 across the async proxy"); for a flag, the pair of events it flagged and no longer flags.
Events are numbered as in the repaired program (what `ptxmc check` shows on the fixed test).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engines.base import concrete_evaluation
from ..cat.violation import show, violation_path
from .program import Program
from .target import judge
from .transfer import transfer

PROXIES = (("ASYNC", "async"), ("TMAP", "tensormap"), ("TEX", "texture"), ("SUR", "surface"), ("CON", "constant"))


@dataclass(frozen=True)
class Supply:
    edit: str                               # the edit's key
    blocks: str                             # what the program without it allows
    edges: tuple[tuple[int, str, int], ...] = ()    # the new steps (repaired program's eids)
    violation: str = ""                     # "Causality: e6 -fr-> e2 -cause-> e6"
    text: str = ""                          # one sentence


def _proxy(ev) -> str:
    for tag, name in PROXIES:
        if tag in ev.tags:
            return name
    return "generic"


def _event(es, eid: int) -> str:
    e = es.events[eid]
    return f"e{eid} ({e.thread or 'init'}: {e.label})"


def supplies(problem, edits) -> tuple[Supply, ...]:
    out = []
    full = problem.program(edits)
    for e in edits:
        rest = tuple(x for x in edits if x is not e)
        minus = problem.program(rest)
        if full is None or minus is None or any(
                x.needs_barrier and not any(b.kind == "barrier" and x.needs_barrier in b.places for b in rest)
                for x in rest):
            out.append(Supply(e.key, "", text="needed with the acquire-side edits placed after it"))
            continue
        out.append(_supply(problem, e, full, minus))
    return tuple(out)


def _supply(problem, e, full: Program, minus: Program) -> Supply:
    found = next(((f, src) for f, src in problem.counterexamples if problem.survives(f, src, minus)), None)
    if found is None:
        f = judge(problem.session(minus), problem.target)
        if f is None or f.kind != "under":
            return Supply(e.key, "", text="not needed on its own" if f is None else
                          f"without it, {f.what} is forbidden")
        found = (f, minus)
    f, src = found
    blocks = f"undefined behaviour ({f.flag})" if f.flag else f"'{f.what}'"
    y, y0 = transfer(f.execution, src, full, problem.model, problem.options), \
        transfer(f.execution, src, minus, problem.model, problem.options)
    if y is None or y0 is None:
        return Supply(e.key, blocks, text=f"blocks the execution that shows {blocks}")
    es, es0 = full.es, minus.es
    ev = concrete_evaluation(es, problem.model, y, problem.options)
    ev0 = concrete_evaluation(es0, problem.model, y0, problem.options)

    def old(name: str, a: int, b: int) -> bool:
        na, nb = minus.eid.get(full.names[a]), minus.eid.get(full.names[b])
        kind, val = ev0.env.get(name, ("", None))
        if na is None or nb is None or kind != "rel" or val is None:
            return False
        return (na, nb) in val

    if f.flag:
        idx = [i for i, (c, _) in enumerate(ev0.checks) if c.flag and c.name == f.flag]
        pairs0 = set()
        for i in idx:
            kind, val = ev0.check_values[i]
            pairs0 |= set(val) if kind == "rel" else {(x, x) for x in val}
        gone = sorted((full.eid[minus.names[a]], full.eid[minus.names[b]]) for a, b in pairs0
                      if minus.names[a] in full.eid and minus.names[b] in full.eid)
        still = set()
        for i, (c, _) in enumerate(ev.checks):
            if c.flag and c.name == f.flag:
                kind, val = ev.check_values[i]
                still |= set(val) if kind == "rel" else {(x, x) for x in val}
        gone = [p for p in gone if p not in still]
        if not gone:
            return Supply(e.key, blocks, text=f"removes {blocks}")
        a, b = gone[0]
        if a == b:
            return Supply(e.key, blocks, ((a, f.flag, b),), text=f"removes {blocks} at {_event(es, a)}")
        return Supply(e.key, blocks, ((a, f.flag, b),),
                      text=f"orders {_event(es, a)} and {_event(es, b)} in base causality, which removes {blocks}")
    for (chk, holds_), value in zip(ev.checks, ev.check_values):
        if holds_ or chk.flag:
            continue
        steps = violation_path(problem.model, chk, value, y.base(es), dict(ev.env), len(es.events), problem.options)
        new = tuple(s for s in steps if not old(s[1], s[0], s[2]))
        violation = f"{chk.name}: {show(steps)}" if steps else chk.name
        if not new:
            return Supply(e.key, blocks, violation=violation,
                          text=f"makes the execution that shows {blocks} violate {chk.name}")
        a, name, b = new[0]
        pa, pb = _proxy(es.events[a]), _proxy(es.events[b])
        across = f" across the {pb if pa == 'generic' else pa} proxy" if pa != pb else ""
        return Supply(e.key, blocks, new, violation,
                      text=f"orders {_event(es, a)} before {_event(es, b)}{across} ({name}), so the execution "
                           f"that shows {blocks} violates {chk.name}")
    return Supply(e.key, blocks, text=f"blocks the execution that shows {blocks}")
