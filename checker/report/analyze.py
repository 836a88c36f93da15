"""Everything a report says about one test: the checker's Result, the compact formula of the
allowed set, a witness execution per allowed outcome, and for each forbidden condition every
minimal set of axioms that rules it out, the cycle each violated axiom shows on a candidate
execution, and the synchronization whose removal would allow it. Pure data (picklable), so tests
can be analysed in worker processes."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from ..model import observables as conditions
from ..results import witness
from ..ast import LitmusTest
from ..verdict.check import check_test
from ..errors import CheckerError, LimitExceeded, SolverUnknown
from ..results.result import Outcome, Result
from ..verdict.blame import blame as minimal_sets
from ..verdict.cycle import Step, note, show, violation_path
from ..verdict.mutate import Effect, effects

MAX_WITNESSES = 8


@dataclass(frozen=True)
class Picture:
    caption: str
    graph: witness.Graph
    svg: str


@dataclass(frozen=True)
class Violation:
    axiom: str
    kind: str                   # acyclic | irreflexive | empty
    where: str                  # the check's source line in the model
    steps: tuple[Step, ...]
    note: str = ""              # e.g. "not in co | co^-1" for `empty X \ co`

    @property
    def text(self) -> str:
        return show(list(self.steps)) + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Forbidden:
    condition: str
    expected: str | None
    blame: tuple[tuple[str, ...], ...]
    violations: tuple[Violation, ...]
    effects: tuple[Effect, ...]
    picture: Picture | None
    sane: bool = True

    @property
    def needed(self) -> tuple[Effect, ...]:
        return tuple(e for e in self.effects if e.verdict in ("allowed", "undefined"))


@dataclass(frozen=True)
class TestReport:
    result: Result
    doc: str
    hash: str
    code: tuple[tuple[str, str, tuple[str, ...]], ...]     # (thread, position, instructions)
    formula: str | None
    witnesses: tuple[tuple[Outcome, Picture], ...]
    more_outcomes: int                                      # allowed outcomes without a picture
    forbidden: tuple[Forbidden, ...]
    undefined: Picture | None = None
    note: str = ""                                          # why explanations are missing


def test_hash(t: LitmusTest) -> str:
    """A hash of what the test means (not where it lives): threads, memory, expectations."""
    parts = [t.name, repr(t.expect_undefined)]
    for th in t.threads:
        parts.append(f"T {th.name} {th.position} " + " ; ".join(i.text for i in th.code))
    for m in t.memory:
        parts.append("M " + repr((m.name, m.space, str(m.owner), m.init, m.alias_of, m.view, m.view_of,
                                  sorted((m.mbarrier or {}).items()), sorted((m.tensormap or {}).items()))
                                 + ((m.offset_of,) if m.offset_of else ())))
    for e in t.expectations:
        parts.append(f"E {e.kind} {e.text}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def model_hash(model) -> str:
    h = hashlib.sha256()
    for src in model.sources or (model.path,):
        with open(src, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def analyze(test: LitmusTest, model, model_name: str, options=frozenset(), timeout: float = 60.0,
            layout: str = "auto", max_witnesses: int = MAX_WITNESSES, blame: bool = True,
            path: str | None = None) -> TestReport:
    """Check `test` and explain the verdicts. `path` replaces the test's path in the Result (the
    report shows paths relative to the repository so its bytes do not depend on the checkout)."""
    try:
        r = check_test(test, model, model_name, options, "z3", timeout)
    except Exception as e:      # a checker bug: report it on this test and go on with the batch
        r = Result(name=test.name, path=test.path, status="error", engine="z3", model=model_name,
                   message=f"internal error: {type(e).__name__}: {e}", matrix_row=test.matrix_row,
                   source=test.source, expect_undefined=test.expect_undefined)
    if path is not None:
        r = replace(r, path=path)
    code = tuple((th.name, str(th.position), tuple(i.text for i in th.code)) for th in test.threads)
    base = TestReport(r, test.doc, test_hash(test), code, None, (), 0, ())
    if r.status == "error":
        return base
    formula = _formula(list(r.outcomes)) if r.outcomes and not r.undefined else None
    try:
        return _explain(test, model, options, timeout, layout, max_witnesses, blame,
                        replace(base, formula=formula))
    except (SolverUnknown, LimitExceeded) as e:
        return replace(base, formula=formula, note=f"explanations incomplete: {e}")
    except CheckerError as e:
        return replace(base, formula=formula, note=f"no explanations: {e}")
    except Exception as e:      # a checker bug while explaining: keep the verdicts
        return replace(base, formula=formula, note=f"no explanations: internal error: {type(e).__name__}: {e}")


def _explain(test, model, options, timeout, layout, max_witnesses, blame, rep: TestReport) -> TestReport:
    import z3

    from ..engines.smt import Z3Engine
    from ..engines.base import concrete_evaluation
    from ..isa.registry import lower
    from .svg import render

    es = lower(test)
    eng = Z3Engine(es, model, options, timeout=timeout)
    positions = {th.name: th.position for th in test.threads}
    r = rep.result

    def picture(ex, caption, highlight=()) -> Picture:
        ev = concrete_evaluation(es, model, ex, options)
        g = witness.graph(es, ex, dict(ev.env), f"{test.name}: {caption}", positions, highlight)
        return Picture(caption, g, render(g, layout))

    if r.undefined:
        name = r.undefined[0].flag
        ex = eng.flag_witness(name)
        pic = picture(ex, f"undefined behaviour ({name})") if ex is not None else None
        return replace(rep, undefined=pic)

    witnesses = []
    for o in r.outcomes[:max_witnesses]:
        term = z3.And([eng.enc.observables[k] == v for k, v in o if k in eng.enc.observables])
        ex = eng.satisfiable(term)
        if ex is not None:
            witnesses.append((o, picture(ex, "allowed: " + " ".join(f"{k}={v};" for k, v in o))))
    forbidden = []
    for c, exp in zip(r.conditions, test.expectations):
        if c.allowed is not False:
            continue
        term = conditions.to_z3(exp.cond, eng.enc.observables, es.names)
        if not c.sane:
            forbidden.append(Forbidden(c.text, c.expected, (), (), (), None, sane=False))
            continue
        sets = tuple(minimal_sets(eng, term)) if blame else ()
        used = {a for s in sets for a in s}
        cand = eng.satisfiable(term, axioms=[a for a in eng.axiom_names if a not in used]) \
            or eng.satisfiable(term, axioms=())
        violations, pic = [], None
        if cand is not None:
            ev = concrete_evaluation(es, model, cand, options)
            base = cand.base(es)
            for (chk, ok), value in zip(ev.checks, ev.check_values):
                if ok or chk.flag:
                    continue
                steps = tuple(violation_path(model, chk, value, base, dict(ev.env), len(es.events), options))
                violations.append(Violation(chk.name, chk.kind, f"{_short(chk.where.path)}:{chk.where.line}",
                                            steps, note(chk)))
            hl = violations[0].steps if violations else ()
            pic = picture(cand, f"forbidden: {c.text} (candidate; violates "
                                f"{', '.join(sorted({v.axiom for v in violations})) or 'nothing'})", hl)
        effs = tuple(effects(test, exp.cond, model, options, timeout)) if blame else ()
        forbidden.append(Forbidden(c.text, c.expected, sets, tuple(violations), effs, pic))
        r = replace(r, conditions=tuple(replace(x, blame=sets) if x is c else x for x in r.conditions))
    return replace(rep, result=r, witnesses=tuple(witnesses),
                   more_outcomes=max(0, len(r.outcomes) - len(witnesses)), forbidden=tuple(forbidden))


MAX_FORMULA_ATOMS = 7


def _formula(outcomes) -> str:
    """checker.formula.compact when the minimisation is cheap (its cost grows exponentially with
    the number of (variable, value) atoms: about 2 s at 8 atoms, minutes at 10); otherwise the
    plain disjunction of the outcomes."""
    from ..results.formula import compact

    keys = [k for k, _ in outcomes[0]]
    domains = {k: {dict(o)[k] for o in outcomes} for k in keys}
    atoms = sum(len(d) for d in domains.values() if len(d) > 1)
    if atoms <= MAX_FORMULA_ATOMS:
        return compact(outcomes)
    fixed = [f"{k}={next(iter(d))}" for k, d in domains.items() if len(d) == 1]
    rest = [k for k in keys if len(domains[k]) > 1]
    disj = " \\/ ".join("(" + " /\\ ".join(f"{k}={dict(o)[k]}" for k in rest) + ")" for o in outcomes)
    return " /\\ ".join(fixed + [f"({disj})"]) if fixed else disj


def _short(path: str) -> str:
    from pathlib import Path

    from .. import AXIOMS_DIR

    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path(AXIOMS_DIR).resolve().parent))
    except ValueError:
        return p.name
