"""Everything a report says about one test: the checker's Result, the compact formula of the
allowed set, a witness execution per allowed outcome, and for each forbidden condition every
minimal set of axioms that rules it out, the cycle each violated axiom shows on a candidate
execution, and the synchronization whose removal would allow it. Pure data (picklable), so tests
can be analysed in worker processes."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from .. import limits
from ..ast import LitmusTest
from ..engines.base import outcome_cond
from ..errors import CheckerError, LimitExceeded, SolverUnknown
from ..results import witness
from ..results.formula import compact
from ..resources import model_hash  # noqa: F401 - reports import it from here
from ..results.result import Outcome, Result, outcome_text
from ..verdict.check import base_result, judge_test
from ..verdict.union import UnionSession
from ..verdict.explain import Violation, explain
from ..verdict.mutate import NEEDED, Effect
from ..verdict.session import Session

MAX_WITNESSES = 8


@dataclass(frozen=True)
class Picture:
    caption: str
    graph: witness.Graph
    svg: str


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
        return tuple(e for e in self.effects if e.verdict in NEEDED)


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
    hang: Picture | None = None                             # a hanging execution (control flow, barriers)
    advice: object = None                                   # checker.repair.advice.Advice (report --fix)


def test_hash(t: LitmusTest) -> str:
    """A hash of what the test means (not where it lives): threads, memory, expectations."""
    parts = [t.name, repr(t.expect_undefined)]
    for th in t.threads:
        parts.append(f"T {th.name} {th.position} " + " ; ".join(i.text for i in th.code))
        if th.labels:
            parts.append(f"L {th.labels!r}")
    for m in t.memory:
        parts.append("M " + repr((m.name, m.space, str(m.owner), m.init, m.alias_of, m.view, m.view_of,
                                  sorted((m.mbarrier or {}).items()), sorted((m.tensormap or {}).items()))
                                 + ((m.offset_of,) if m.offset_of else ())))
    for e in t.expectations:
        parts.append(f"E {e.kind} {e.text}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def analyze(test: LitmusTest, model, model_name: str, options=frozenset(), timeout: float = 60.0,
            layout: str = "auto", max_witnesses: int = MAX_WITNESSES, blame: bool = True,
            path: str | None = None, engine: str = "z3", fix: bool = False) -> TestReport:
    """Check `test` and explain the verdicts, with one Session (lowered and encoded once).
    `path` replaces the test's path in the Result (the report shows paths relative to the
    repository so its bytes do not depend on the checkout)."""
    kept: list = []
    try:
        r = judge_test(test, model, model_name, options, engine, replace(limits.current(), timeout=timeout), kept)
    except Exception as e:      # a checker bug: report it on this test and go on with the batch
        r = replace(base_result(test, engine, model_name), message=f"internal error: {type(e).__name__}: {e}")
    s = kept[0] if kept else None
    if isinstance(s, UnionSession) or s is None and test.branches:
        return _analyze_union(test, r, s, path, layout, max_witnesses, blame)
    if path is not None:
        r = replace(r, path=path)
    code = tuple((th.name, str(th.position), tuple(i.text for i in th.code)) for th in test.threads)
    base = TestReport(r, test.doc, test_hash(test), code, None, (), 0, ())
    if r.status == "error":
        return base
    formula = compact(list(r.outcomes)) if r.outcomes and not r.undefined else None
    if fix:
        from ..repair.advice import advise
        base = replace(base, advice=advise(test, r.status, model, options))
    try:
        return _explain(s, layout, max_witnesses, blame, replace(base, formula=formula))
    except (SolverUnknown, LimitExceeded) as e:
        return replace(base, formula=formula, note=f"explanations incomplete: {e}")
    except CheckerError as e:
        return replace(base, formula=formula, note=f"no explanations: {e}")
    except Exception as e:      # a checker bug while explaining: keep the verdicts
        return replace(base, formula=formula, note=f"no explanations: internal error: {type(e).__name__}: {e}")


def _listing(th) -> tuple[str, ...]:
    """A thread's code as written: instructions, with its labels (`L1:`) where they stand."""
    out = []
    for k in range(len(th.code) + 1):
        out += [f"{name}:" for name, at in th.labels if at == k]
        if k < len(th.code):
            out.append(th.code[k].text)
    return tuple(out)


def _analyze_union(test: LitmusTest, r, fc, path: str | None, layout: str = "auto",
                   max_witnesses: int = MAX_WITNESSES, blame: bool = True) -> TestReport:
    """A test asked over its variants (checker.verdict.union): its verdicts, a witness execution
    of each allowed outcome (captioned with the paths and barrier generations it takes), each
    forbidden condition explained as `ptxmc check` explains it (the one explainer,
    checker.verdict.explain), and a picture of the hang found, if any."""
    if path is not None:
        r = replace(r, path=path)
    code = tuple((th.name, str(th.position), _listing(th)) for th in test.threads)
    formula = compact(list(r.outcomes)) if r.outcomes and not r.undefined else None
    found = [n for n in r.notes if n.startswith(("hang", "loop bound"))]
    rep = TestReport(r, test.doc, test_hash(test), code, formula, (), 0, (),
                     note="control flow or barrier generations: judged as the union of its control paths and "
                          "barrier schedules (docs/model.md#a18, #a19)"
                          + "".join(f". {n}" for n in found))
    if r.status in ("error", "unknown") or r.undefined or fc is None:
        return rep
    try:
        return _flow_pictures(fc, layout, max_witnesses, rep, blame)
    except (SolverUnknown, LimitExceeded) as e:
        return replace(rep, note=f"{rep.note}. Pictures incomplete: {e}")
    except CheckerError as e:
        return replace(rep, note=f"{rep.note}. No pictures: {e}")
    except Exception as e:      # a checker bug while drawing: keep the verdicts
        return replace(rep, note=f"{rep.note}. No pictures: internal error: {type(e).__name__}: {e}")


def _flow_pictures(fc, layout, max_witnesses, rep: TestReport, blame: bool = True) -> TestReport:
    """The pictures and explanations of a test asked over its variants, from the UnionSession
    that judged it."""
    from ..verdict.union import hang_condition
    from .svg import render

    test = fc.test
    positions = {th.name: th.position for th in test.threads}

    def picture(s, ex, caption, highlight=()) -> Picture:
        g = witness.graph(s.es, ex, dict(s.evaluation(ex).env), f"{test.name}: {caption}", positions, highlight)
        return Picture(caption, g, render(g, layout))

    witnesses = []
    for o in rep.result.outcomes[:max_witnesses]:
        got = fc.witness(outcome_cond(o))
        if got is not None:
            combo, s, ex = got
            witnesses.append((o, picture(s, ex, f"allowed: {outcome_text(o)} [{combo.describe()}]")))
    hang = None
    if test.expect_hang is not None:
        hangs, _ = fc.hangs()
        h = next((h for h in hangs if h.probe is not None), None)
        if h is not None:
            ex = h.probe.witness(hang_condition(h))
            if ex is not None:
                what = "spins at" if h.outcome else "blocks at"
                hang = picture(h.probe, ex, f"hang: {h.thread} {what} {h.blocked} [{h.combo}]")
    r, forbidden = _forbidden(fc, rep.result, picture, blame)
    return replace(rep, result=r, witnesses=tuple(witnesses),
                   more_outcomes=max(0, len(rep.result.outcomes) - len(witnesses)), hang=hang,
                   forbidden=forbidden)


def _forbidden(asked, r: Result, picture, blame: bool) -> tuple[Result, tuple[Forbidden, ...]]:
    """Each condition the model forbids, explained by the one explainer (checker.verdict.explain)
    for a Session or a UnionSession alike: its minimal axiom sets, violations, the synchronization
    it needs, and a picture of the candidate (`picture(session, execution, caption, highlight)`),
    captioned with the paths it takes when there are several; `r` gains the blame."""
    out = []
    for c, exp in zip(r.conditions, asked.test.expectations):
        if c.allowed is not False:
            continue
        if not c.sane:
            out.append(Forbidden(c.text, c.expected, (), (), (), None, sane=False))
            continue
        x = explain(asked, exp.cond, blame=blame, effects=blame, undefined=False)
        if x.status != "forbidden":
            continue
        pic = None
        if x.witness is not None:
            hl = x.violations[0].steps if x.violations else ()
            paths = f" [{x.paths}]" if x.paths else ""
            pic = picture(x.witness.session, x.execution,
                          f"forbidden: {c.text} (candidate; violates "
                          f"{', '.join(sorted({v.axiom for v in x.violations})) or 'nothing'}){paths}", hl)
        out.append(Forbidden(c.text, c.expected, x.blame, x.violations, x.effects, pic))
        r = replace(r, conditions=tuple(replace(y, blame=x.blame) if y is c else y for y in r.conditions))
    return r, tuple(out)


def _explain(s: Session, layout, max_witnesses, blame, rep: TestReport) -> TestReport:
    from .svg import render

    test = s.test
    positions = {th.name: th.position for th in test.threads}
    r = rep.result

    def picture(session, ex, caption, highlight=()) -> Picture:
        g = witness.graph(session.es, ex, dict(session.evaluation(ex).env), f"{test.name}: {caption}", positions,
                          highlight)
        return Picture(caption, g, render(g, layout))

    if r.undefined:
        name = r.undefined[0].flag
        ex = s.engine.flag_witness(name)
        pic = picture(s, ex, f"undefined behaviour ({name})") if ex is not None else None
        return replace(rep, undefined=pic)

    witnesses = []
    for o in r.outcomes[:max_witnesses]:
        ex = s.witness(outcome_cond(o))
        if ex is not None:
            witnesses.append((o, picture(s, ex, "allowed: " + outcome_text(o))))
    r, forbidden = _forbidden(s, r, picture, blame)
    return replace(rep, result=r, witnesses=tuple(witnesses),
                   more_outcomes=max(0, len(r.outcomes) - len(witnesses)), forbidden=forbidden)
