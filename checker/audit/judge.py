"""Judging one audited program with the model, under one reading (a set of model options).

The requirement is the original test's: its forbidden conditions, and no undefined behaviour
unless it expects some (`Target` of checker.repair.target, without the allowed conditions: they
describe what an unfenced program may do, and a fence may take such an outcome away).

- under-fencing: the audited program allows a forbidden outcome, or has undefined behaviour the
  test does not expect. Reported with the witness execution's outcome and the least-cost repair
  checker.repair.fix finds for the audited program.
- over-fencing: a fence the policy inserted can be removed with the requirement still met
  (checker.repair.prune, limited to the inserted fences; judged only for tests that forbid
  something).
Each finding is re-checked from scratch by checker.verdict.check.check_test: the audited (or
pruned) test is written out as YAML, loaded back and judged with the requirement as its
expectations; under-fencing must fail, the pruned program must pass.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ..ast import LitmusTest
from ..errors import CheckerError, LitmusError
from ..front.litmus import load_text
from ..repair.fix import fix, target_test
from ..repair.output import place, source_lines, where
from ..repair.prune import prune
from ..repair.target import Target, judge as meets, unknown_why
from ..repair.yamlpatch import render_test
from ..verdict.check import check_test
from ..verdict.open import open_session
from ..verdict.union import UnionSession
from .policy import Applied


@dataclass(frozen=True)
class Finding:
    kind: str                   # under | over
    what: str                   # under: the condition or flag; over: the removable fences, '; '-joined
    detail: str = ""            # under: the witness outcome
    repair: tuple[str, ...] = ()    # under: the edits of the least-cost repair (with places)
    repair_cost: int | None = None
    fences: tuple[tuple[str, int, str], ...] = ()   # over: (thread, index in the audited test, text)
    recheck: str = ""           # confirmed | NOT confirmed: ...

    @property
    def key(self) -> tuple:
        return (self.kind, self.what)


@dataclass(frozen=True)
class Judged:
    test: LitmusTest
    policy: str
    reading: tuple[str, ...]    # the model options
    status: str                 # unchanged | ok | findings | no-requirement | error | unknown
    applied: Applied | None = None
    findings: tuple[Finding, ...] = ()
    message: str = ""
    seconds: float = 0.0


def requirement(test: LitmusTest) -> Target:
    return Target(tuple(e for e in test.expectations if e.kind == "forbidden"), (), test.expect_undefined is not True)


def judge_applied(a: Applied, model, options=frozenset(), engine: str = "z3", budget: float = 60.0) -> Judged:
    """See the module docstring. SolverUnknown and limit errors give status 'unknown'."""
    from ..errors import LimitExceeded, SolverUnknown

    start = time.perf_counter()
    reading = tuple(sorted(options))
    base = Judged(a.test, a.policy, reading, "ok", a)
    target = requirement(a.test)
    if not a.changed:
        return replace(base, status="unchanged", seconds=time.perf_counter() - start)
    if not target.forbidden and not target.defined:
        return replace(base, status="no-requirement", message="the test expects undefined behaviour and forbids nothing",
                       seconds=time.perf_counter() - start)
    audited = a.audited.test
    try:
        findings = []
        asked = open_session(audited, model, frozenset(options), engine)
        failure = meets(asked, target)
        if failure is not None and failure.undecided:       # Unknown: no finding, no "ok"
            why = unknown_why(asked, failure)
            return replace(base, status="unknown", message=why, seconds=time.perf_counter() - start)
        if failure is not None and failure.kind == "under":
            findings.append(_under(audited, target, failure, model, options, engine, budget))
        elif failure is not None:
            return replace(base, status="error", message=f"the audited program has no execution ({failure.what})",
                           seconds=time.perf_counter() - start)
        elif target.forbidden and a.fences and not isinstance(asked, UnionSession):     # (--prune: one structure)
            over = _over(audited, target, set(a.fences), model, options, engine, budget)
            if over is not None:
                findings.append(over)
    except (SolverUnknown, LimitExceeded) as e:
        return replace(base, status="unknown", message=str(e), seconds=time.perf_counter() - start)
    except CheckerError as e:
        return replace(base, status="error", message=str(e), seconds=time.perf_counter() - start)
    return replace(base, status="findings" if findings else "ok", findings=tuple(findings),
                   seconds=time.perf_counter() - start)


def _under(audited: LitmusTest, target: Target, failure, model, options, engine, budget) -> Finding:
    what = f"undefined behaviour ({failure.flag})" if failure.flag else f"forbidden '{failure.what}' is allowed"
    mbars = {m.name for m in audited.memory if m.mbarrier}
    outcome = ", ".join(f"{k}={v}" for k, v in failure.execution.outcome
                        if k not in mbars) if failure.execution else ""
    res = fix(audited, target, model, frozenset(options), engine, method="cegis", max_repairs=1, budget=budget,
              explain=False)
    if res.repairs:
        rep = res.repairs[0]
        src = source_lines(audited.path)
        edits = tuple(f"{e.text} ({'; '.join(place(p) for p in where(audited, e, src))})" for e in rep.edits)
        cost = rep.cost
    else:
        edits, cost = (f"no repair found ({res.status})",), None
    status, msg = recheck(audited, target, model, options, engine)
    ok = status == "fail"
    return Finding("under", what, f"witness outcome: {outcome}" if outcome else "", edits, cost,
                   recheck="confirmed" if ok else f"NOT confirmed: the re-check says {status} {msg}".strip())


def _over(audited: LitmusTest, target: Target, fences: set, model, options, engine, budget) -> Finding | None:
    res = prune(audited, target, model, frozenset(options), engine, None, "cegis", 1, budget=budget,
                only=lambda th, k: (th, k) in fences)
    if res.status != "pruned" or not res.repairs:
        return None
    rep = res.repairs[0]
    code = {t.name: t.code for t in audited.threads}
    gone = tuple(sorted((c.thread, c.index, code[c.thread][c.index].text) for e in rep.edits for c in e.changes))
    status, msg = recheck(rep.test, target, model, options, engine)
    ok = status == "pass"
    what = "; ".join(f"{t}: {txt} (before '{code[t][k + 1].text if k + 1 < len(code[t]) else 'end'}')"
                     for t, k, txt in gone)
    return Finding("over", what, f"{len(gone)} of {len(fences)} inserted fences removable", fences=gone,
                   recheck="confirmed" if ok else f"NOT confirmed: the re-check says {status} {msg}".strip())


def recheck(test: LitmusTest, target: Target, model, options, engine: str) -> tuple[str, str]:
    """('pass' | 'fail' | another status, message): `test` judged from scratch with the
    requirement as its expectations, from YAML text where the test can be written out exactly (no
    filter, locations or per-thread counts that the writer leaves out), else from the AST. A test
    that expects undefined behaviour is judged condition by condition by a new Session (check_test
    stops at the expected undefined behaviour)."""
    t = target_test(test, target)
    if t.filter is None and not t.locations and t.threads_per_litmus_thread == 1 and t.rlimit is None:
        try:
            loaded = [x for x in load_text(render_test(t, t.name), t.path) if isinstance(x, LitmusTest)]
            if len(loaded) == 1:
                t = loaded[0]
        except LitmusError:
            pass
    if not target.defined:
        s = open_session(t, model, frozenset(options), engine)
        bad = [e.text for e in t.expectations if e.kind == "forbidden" and s.verdict(e.cond).allowed]
        return ("fail", "allowed: " + ", ".join(bad)) if bad else ("pass", "")
    r = check_test(t, model, None, frozenset(options), engine)
    return r.status, r.message or ""
