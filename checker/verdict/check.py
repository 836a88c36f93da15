"""Judging one test: its Session's undefined-behaviour flags, allowed outcomes and the verdict on
each expectation, as a Result. Never raises for a bad test: every problem becomes a Result with
status error/unknown."""
from __future__ import annotations

import time
from dataclasses import replace

from .. import limits
from ..ast import LitmusTest
from ..cat.interp import Model
from ..errors import LimitExceeded, LitmusError, ModelError, SolverUnknown, Unsupported
from ..front.conditions import show
from ..model.observables import predicate
from ..results.result import ConditionResult, Result, base_result  # noqa: F401 (base_result: API)
from ..resources import model_name
from ..unfold.variants import needs_variants
from .session import Session


def check_test(test: LitmusTest, model: Model, model_name_: str | None = None, options=frozenset(),
               engine: str = "z3", timeout: float | None = None) -> Result:
    """Judge `test` under `model` (a new Session; `timeout` overrides the current limit)."""
    lim = limits.current() if timeout is None else replace(limits.current(), timeout=timeout)
    if by_paths(test):
        return judge_paths(test, model, model_name_, options, engine, lim)
    return judge(Session(test, model, options, engine, lim), model_name_)


def by_paths(test: LitmusTest) -> bool:
    """Is `test` judged path by path (checker.verdict.paths): control flow, a hang expectation, or
    barriers whose generations are decided at run time (several ways, or one that never completes)?"""
    return needs_variants(test)


def judge_paths(test: LitmusTest, model: Model, name: str | None, options, engine: str, lim,
                keep: list | None = None) -> Result:
    """A test judged path by path and schedule by schedule (checker.verdict.paths). `keep`: a
    list the FlowCheck is appended to, for a caller that draws or compares its witnesses."""
    from .paths import flow_check, judge_flow

    start = time.perf_counter()
    base = base_result(test, engine, name or model_name(model))
    try:
        with limits.use(lim), limits.deadline(time.monotonic() + lim.timeout):
            fc = flow_check(test, model, options, engine, lim)
            if keep is not None:
                keep.append(fc)
            result = judge_flow(test, model, name or model_name(model), options, engine, lim, fc)
    except (LitmusError, ModelError, Unsupported) as e:
        result = replace(base, status="error", message=str(e))
    except (SolverUnknown, LimitExceeded) as e:
        result = replace(base, status="unknown", message=str(e))
    except Exception as e:                      # Z3 out of the memory limit: UNKNOWN, never a bug
        if limits.memory_exceeded(e) is None:
            raise
        result = replace(base, status="unknown", message=str(limits.memory_exceeded(e)))
    return replace(result, time=time.perf_counter() - start)


def judge(s: Session, name: str | None = None) -> Result:
    """The Result of a Session's test: flags first, then outcomes and each expectation."""
    start = time.perf_counter()
    base = base_result(s.test, s.engine_name, name or s.model_name)
    try:
        base = replace(base, notes=s.es.notes)
        result = _judge(s, base)
    except (LitmusError, ModelError, Unsupported) as e:
        result = replace(base, status="error", message=str(e))
    except (SolverUnknown, LimitExceeded) as e:
        result = replace(base, status="unknown", message=str(e))
    except Exception as e:                      # Z3 out of the memory limit: UNKNOWN, never a bug
        if limits.memory_exceeded(e) is None:
            raise
        result = replace(base, status="unknown", message=str(limits.memory_exceeded(e)))
    return replace(result, time=time.perf_counter() - start)


def _judge(s: Session, base: Result) -> Result:
    test, es = s.test, s.es
    prepared = []
    for exp in test.expectations:
        s.check_condition(exp.cond, exp.where)
        prepared.append(s.prepare(exp.cond, exp.where))
    undefined = s.undefined
    if undefined:
        if test.expect_undefined:
            return replace(base, status="pass", undefined=undefined)
        msg = "undefined behaviour: " + "; ".join(f"{u.flag}: {u.why}" for u in undefined)
        status = "fail" if (test.expectations or test.expect_undefined is False) else "undefined"
        return replace(base, status=status, undefined=undefined, message=msg)
    outs, complete = s.outcomes()
    outcomes = tuple(sorted(outs))
    if not outcomes and complete and test.filter is None and \
            any(i.await_value is not None for t in test.threads for i in t.code):
        # Every execution stops at an await that is never satisfied: the program hangs, which
        # must not read as "Forbidden" for every condition (docs/model.md#a18). No verdicts.
        conds = tuple(ConditionResult(show(e.cond), e.kind, None) for e in test.expectations)
        return replace(base, status="fail", observe=s.observe, conditions=conds,
                       message="no execution gets past its awaits: every execution blocks, a hang (ask "
                               "`ptxmc check FILE::NAME hang`, or expect: {hang: allowed})")
    conds = []
    for exp, cond in zip(test.expectations, prepared):
        test_ = predicate(cond, es.names)
        sat = [o for o in outcomes if test_(dict(o))]
        v = s.verdict(cond)
        conds.append(ConditionResult(show(exp.cond), exp.kind, v.allowed, len(sat), len(outcomes) - len(sat), v.sane))
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
    return replace(base, status=status, message=message, observe=s.observe, outcomes=outcomes,
                   complete=complete, conditions=tuple(conds), notes=notes)

