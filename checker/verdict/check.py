"""Checking one test: lower it, build an engine, run the sanity checks, the undefined-behaviour
flags and outcome enumeration, and judge the expectations. Never raises for a bad test: every
problem becomes a Result with status error/unknown."""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from .. import AXIOMS_DIR, limits
from ..model import observables as conditions
from ..ast import LitmusTest
from ..cat.interp import Model, load_model
from ..errors import CheckerError, LimitExceeded, LitmusError, ModelError, SolverUnknown, Unsupported
from ..model.events import EventStructure
from ..isa.registry import lower
from ..results.result import ConditionResult, Result, UndefinedReport

DEFAULT_MODEL = "ptx"


def resolve_model(spec: str | None) -> Model:
    """A model by name (axioms/NAME.cat) or by path."""
    spec = spec or DEFAULT_MODEL
    p = Path(spec)
    if not p.suffix and not p.exists():
        p = AXIOMS_DIR / f"{spec}.cat"
    if not p.exists():
        raise ModelError(f"no model '{spec}' (looked for {p})")
    return load_model(str(p))


def observables_of(test: LitmusTest, es: EventStructure) -> tuple[str, ...]:
    """The outcome projection: what the expectations mention, else every register and location."""
    keys = set()
    for e in test.expectations:
        keys |= conditions.atoms(e.cond, es.names)
    if not keys:
        keys = {f"{t}:{r}" for t, r in es.registers} | set(es.final_writes)
    order = {t: i for i, t in enumerate(es.thread_names)}

    def sort_key(k: str):
        if ":" in k:
            t, r = k.split(":", 1)
            return (0, order.get(t, 99), r)
        return (1, 0, k)

    return tuple(sorted(keys, key=sort_key))


def make_engine(name: str, es: EventStructure, model: Model, options, timeout: float | None):
    if name == "brute":
        from ..engines.brute import BruteEngine
        return BruteEngine(es, model, options)
    from ..engines.smt import Z3Engine
    return Z3Engine(es, model, options, timeout=timeout)


def check_test(test: LitmusTest, model: Model, model_name: str = DEFAULT_MODEL, options=frozenset(),
               engine: str = "z3", timeout: float | None = None) -> Result:
    start = time.perf_counter()
    base = Result(name=test.name, path=test.path, status="error", expect_undefined=test.expect_undefined,
                  engine=engine, model=model_name, matrix_row=test.matrix_row, source=test.source)
    try:
        es = lower(test)
        base = replace(base, notes=es.notes)
        result = _judge(test, es, model, options, make_engine(engine, es, model, options, timeout), base)
    except (LitmusError, ModelError, Unsupported) as e:
        result = replace(base, status="error", message=str(e))
    except (SolverUnknown, LimitExceeded) as e:
        result = replace(base, status="unknown", message=str(e))
    return replace(result, time=time.perf_counter() - start)


def _judge(test: LitmusTest, es: EventStructure, model: Model, options, eng, base: Result) -> Result:
    undefined = tuple(_undefined(es, model, options, eng))
    if undefined:
        if test.expect_undefined:
            return replace(base, status="pass", undefined=undefined)
        msg = "undefined behaviour: " + "; ".join(f"{u.flag}: {u.why}" for u in undefined)
        status = "fail" if (test.expectations or test.expect_undefined is False) else "undefined"
        return replace(base, status=status, undefined=undefined, message=msg)
    observe = observables_of(test, es)
    outs, complete = eng.outcomes(observe)
    outcomes = tuple(sorted(outs))
    conds = []
    for exp in test.expectations:
        sat = [o for o in outcomes if conditions.holds(exp.cond, dict(o), es.names)]
        allowed, sane = _verdict(eng, exp.cond, es, bool(sat), complete)
        conds.append(ConditionResult(conditions.show(exp.cond), exp.kind, allowed,
                                     len(sat), len(outcomes) - len(sat), sane))
    status = "run"
    message = ""
    if test.expect_undefined:
        status, message = "fail", "expected undefined behaviour, but the program is well defined"
    elif test.expectations:
        broken = [c for c in conds if not c.sane]
        if broken:
            status = "fail"
            message = "broken test: no execution satisfies " + ", ".join(c.text for c in broken) + \
                      " even without axioms"
        else:
            status = "pass" if all(c.met for c in conds) else "fail"
    notes = base.notes
    if not complete:
        notes += (f"outcome list incomplete: the first {len(outcomes)} found (the outcome cap; raise it "
                  f"with {limits.flag('outcomes')}); each condition was decided by its own solver query",)
    return replace(base, status=status, message=message, observe=observe, outcomes=outcomes,
                   complete=complete, conditions=tuple(conds), notes=notes)


def _verdict(eng, cond, es, seen: bool, complete: bool) -> tuple[bool, bool]:
    """(allowed, sane) for a condition some enumerated outcome satisfies (`seen`) or none does.
    Past the outcome cap the condition is its own query. Sane: some execution satisfies it without
    the axioms -- an allowed outcome is one; otherwise the solver is asked, told that the model
    rules the condition out (brute force: the candidates, _brute_sane)."""
    if not hasattr(eng, "enc"):                     # brute force always enumerates completely
        return seen, seen or _brute_sane(eng, cond, es)
    if seen:
        return True, True
    term = _cond_for(eng, cond, es)
    allowed = False if complete else eng.satisfiable(term) is not None
    return allowed, allowed or eng.satisfiable(term, axioms=(), forbidden=not allowed) is not None


def _cond_for(eng, cond, es):
    return conditions.to_z3(cond, eng.enc.observables, es.names)


def _brute_sane(eng, cond, es) -> bool:
    """Some execution satisfies `cond` without the axioms: a consistent one first (as the Z3
    engine does), then every candidate whose values do not depend on themselves. A candidate whose
    values do (LB with data dependencies) has no values to evaluate `cond` on, and some fixed point
    of its values may satisfy it (Z3 finds D3's out-of-thin-air 1s): it counts as satisfying."""
    return any(conditions.holds(cond, dict(ex.outcome), es.names)
               for consistent in (True, False) for ex, _ in eng.executions(with_axioms=consistent)) \
        or eng.has_value_cycle()


def _undefined(es: EventStructure, model: Model, options, eng):
    from ..engines.base import concrete_evaluation

    if hasattr(eng, "enc"):
        for name in sorted(eng.enc.flags):
            ex = eng.flag_witness(name)
            if ex is not None:
                yield _ub_report(es, model, options, ex, name, concrete_evaluation)
    else:
        seen = set()
        for ex, fired in eng.executions():
            for name in sorted(fired - seen):
                seen.add(name)
                yield _ub_report(es, model, options, ex, name, concrete_evaluation)


def _ub_report(es, model, options, ex, name, concrete_evaluation) -> UndefinedReport:
    ev = concrete_evaluation(es, model, ex, options)
    i = next(i for i, (c, fired) in enumerate(ev.checks) if c.name == name and c.flag and fired)
    kind, value = ev.check_values[i]
    edges = sorted(value) if kind == "rel" else [(e, e) for e in sorted(value)]
    events = []
    for a, b in edges[:1]:
        for e in dict.fromkeys((a, b)):
            ev_ = es.events[e]
            events.append(f"{ev_.thread or 'init'}: {ev_.label}")
    return UndefinedReport(name, tuple(events), f"{name} between " + " and ".join(events))
