"""Judging one test (the one judge: every command and the API): its session's undefined-behaviour flags, allowed outcomes and the verdict on
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
from ..unfold import paths
from .awaits import AWAITS_BLOCK, awaits_block
from .open import open_session
from .session import Session
from .union import UnionSession


def check_test(test: LitmusTest, model: Model, model_name_: str | None = None, options=frozenset(),
               engine: str = "z3", timeout: float | None = None) -> Result:
    """Judge `test` under `model` (`timeout` overrides the current limit)."""
    lim = limits.current() if timeout is None else replace(limits.current(), timeout=timeout)
    return judge_test(test, model, model_name_, options, engine, lim)


def judge_test(test: LitmusTest, model: Model, name: str | None, options, engine: str, lim,
               keep: list | None = None) -> Result:
    """`test` asked as checker.verdict.open_session decides, and judged. `keep`: a list the
    session is appended to, for a caller that draws or compares its witnesses."""
    start = time.perf_counter()
    base = base_result(test, engine, name or model_name(model))
    try:
        with limits.use(lim), limits.deadline(time.monotonic() + lim.timeout):
            s = open_session(test, model, options, engine, lim, ub_first=True)
    except (LitmusError, ModelError, Unsupported) as e:
        return replace(base, status="error", message=str(e), time=time.perf_counter() - start)
    except (SolverUnknown, LimitExceeded) as e:
        return replace(base, status="unknown", message=str(e), time=time.perf_counter() - start)
    except Exception as e:                      # Z3 out of the memory limit: UNKNOWN, never a bug
        if limits.memory_exceeded(e) is None:
            raise
        return replace(base, status="unknown", message=str(limits.memory_exceeded(e)),
                       time=time.perf_counter() - start)
    if keep is not None:
        keep.append(s)
    result = judge(s, name)
    return replace(result, time=time.perf_counter() - start)


def judge(s: Session | UnionSession, name: str | None = None) -> Result:
    """The Result of a session's test: flags first, then outcomes and each expectation (over the
    test's variants for a UnionSession: its hang question too)."""
    start = time.perf_counter()
    base = base_result(s.test, s.engine_name, name or s.model_name)
    try:
        if isinstance(s, UnionSession):
            with limits.use(s.lim), limits.deadline(time.monotonic() + s.lim.timeout):
                result = _judge_union(s, base)
        else:
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
        status = "fail" if _expects(test) else "undefined"
        return replace(base, status=status, undefined=undefined, message=msg)
    outs, complete = s.outcomes()
    outcomes = tuple(sorted(outs))
    if not outcomes and complete and awaits_block(s):
        return _awaits_block(s, base, ())
    conds = []
    for exp, cond, v in zip(test.expectations, prepared, s.verdicts(prepared)):
        test_ = predicate(cond, es.names)
        sat = [o for o in outcomes if test_(dict(o))]
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
    elif test.expect_undefined is False:        # its one expectation, met: no undefined behaviour
        status = "pass"
    notes = base.notes
    if not complete:
        notes += (f"outcome list incomplete: the first {len(outcomes)} found (the outcome cap; raise it "
                  f"with {limits.flag('outcomes')}); each condition was decided by its own solver query",)
    return replace(base, status=status, message=message, observe=s.observe, outcomes=outcomes,
                   complete=complete, conditions=tuple(conds), notes=notes)


# a verdict that stands within the loop bound, where undefined behaviour may lie past it (A18)
UB_PAST_THE_BOUND = ("undefined behaviour is searched only within the loop bound ({cut}): a flag past it is not seen "
                     "(state `undefined: false` to have that Unknown, or raise --unroll)")


def _judge_union(fc: UnionSession, base: Result) -> Result:
    """The Result of a test asked over its variants (control paths, barrier schedules, the hang
    question: checker.verdict.union)."""
    test = fc.test
    prepared = []
    for exp in test.expectations:
        fc.check_condition(exp.cond, exp.where)
        prepared.append(fc.sessions[0].prepare(exp.cond, exp.where) if fc.sessions else exp.cond)
    notes = fc.notes
    # (undefined behaviour first: on the way to a hang it is still undefined behaviour)
    settled = fc.hang_settles
    if settled:
        notes += (HANG_SETTLES,)
    try:
        undefined = fc.undefined_once if settled else fc.undefined
    except (SolverUnknown, LimitExceeded) as e:
        failed = _hang_fails_anyway(fc, base, notes, e)
        if failed is None:
            raise
        return failed
    if undefined:
        if test.expect_undefined:
            return replace(base, status="pass", undefined=undefined, notes=notes)
        msg = "undefined behaviour: " + "; ".join(f"{u.flag}: {u.why}" for u in undefined)
        status = "fail" if _expects(test) else "undefined"
        return replace(base, status=status, undefined=undefined, message=msg, notes=notes)
    if fc.never_terminates():
        return _never_terminates(fc, base, notes)
    if awaits_block(fc):
        return _awaits_block(fc, base, notes)
    # asked "undefined:", none found: no answer where the bound cut a variant with an execution off
    ub_cut = fc.undefined_cut if test.expect_undefined is not None and not settled else ()
    ub_unknown = (f"no undefined behaviour within the loop bound, but the bound cut executions off ({ub_cut[0]}): "
                  f"raise --unroll") if ub_cut else ""
    outs, complete = fc.outcomes()
    outcomes = tuple(sorted(outs))
    conds = []
    verdicts = fc.verdicts([e.cond for e in test.expectations])
    for exp, cond, (allowed, sane) in zip(test.expectations, prepared, verdicts):
        test_ = predicate(cond, fc.names)
        sat = [o for o in outcomes if test_(dict(o))]
        conds.append(ConditionResult(show(exp.cond), exp.kind, allowed, len(sat), len(outcomes) - len(sat), sane))
    if fc.bounded:
        unknown = any(c.allowed is None for c in conds)
        notes += (f"loop bound reached: executions continue past unroll {test.unroll or fc.lim.unroll} "
                  f"({fc.bounded[0]}); a condition no bounded execution satisfies is Unknown" +
                  (f" ({fc.advice})" if unknown else ""),)
        if test.expect_undefined is None and not settled and fc.undefined_cut:
            # (stated `undefined:`, that is Unknown above; unstated, the verdicts stand, but say it)
            notes += (UB_PAST_THE_BOUND.format(cut=fc.undefined_cut[0]),)
    if not complete:
        notes += (f"outcome list incomplete: the outcome cap ({limits.flag('outcomes')})",)
    status, message = "run", ""
    if test.expect_hang is None and fc.stuck():
        h = fc.stuck()[0]
        notes += (f"a hang is possible: {h.thread} waits forever at {h.blocked}: {h.state} [{h.combo}]; the "
                  "verdicts are over the executions that terminate (ask `ptxmc check FILE::NAME hang`)",)
    if test.expect_hang is not None:
        hangs, hang_complete = fc.hangs()
        conds.append(_hang_result(hangs, hang_complete, test.expect_hang))
        left = [i for t in test.threads for i in paths.unconverted_waits(t)]
        if not hangs and left:
            notes += (f"hang not searched at the await '{left[0].text}' (line {left[0].where.line if left[0].where else '?'}):"
                      " write that wait as a loop (L: ...; setp; @p bra L) to ask whether it may spin forever",)
        if hangs:
            h = hangs[0]
            notes += (f"hang: {h.thread} blocks forever at {h.blocked}: {h.state} [{h.combo}]",)
    if test.expect_undefined:
        status, message = ("unknown", "a verdict is Unknown: " + ub_unknown) if ub_unknown else \
            ("fail", "expected undefined behaviour, but the program is well defined")
    elif conds:
        broken = [c for c in conds if not c.sane]
        if broken:
            status = "fail"
            message = "broken test: no execution satisfies " + ", ".join(c.text for c in broken) + \
                      " even without axioms"
        elif any(c.met is None for c in conds):
            # say why each Unknown is (the advice to raise --unroll only where a higher bound can decide)
            hang = conds[-1] if test.expect_hang is not None else None
            why = []
            if any(c.met is None for c in conds if c is not hang):
                why.append(f"the loop bound cut executions off ({fc.advice})")
            if hang is not None and hang.met is None:
                why.append(f"the hang question is Unknown: {fc.hang_unknown_why()}")
            status, message = "unknown", "a verdict is Unknown: " + "; ".join(why)
        else:
            status = "pass" if all(c.met for c in conds) else "fail"
        if status == "pass" and ub_unknown:
            status, message = "unknown", "a verdict is Unknown: " + ub_unknown
    elif test.expect_undefined is False:
        status, message = ("unknown", "a verdict is Unknown: " + ub_unknown) if ub_unknown else ("pass", "")
    return replace(base, status=status, message=message, observe=fc.observe, outcomes=outcomes,
                   complete=complete and not fc.bounded, conditions=tuple(conds), notes=notes)


HANG_SETTLES = ("undefined behaviour asked only where each await's loop runs once: a hang, which the test forbids, "
                "fails it whatever the awaits unrolled would add (ask `ptxmc check FILE::NAME hang` for the question alone)")


def _hang_fails_anyway(fc: UnionSession, base: Result, notes: tuple[str, ...], why: Exception) -> Result | None:
    """The test forbids a hang, its undefined-behaviour question has no answer (`why`), and the hang
    question finds one: the test fails whichever way that question goes (undefined behaviour in a
    test that states an expectation is a fail too: `_expects`), so say so, with the hang, rather
    than Unknown. None where that is not so (the hang question is asked only where the test
    forbids a hang, and its own Unknown leaves `why` standing)."""
    if fc.test.expect_hang is not False:
        return None
    try:
        hangs, _ = fc.hangs()
    except (SolverUnknown, LimitExceeded):
        return None
    if not hangs:
        return None
    h = hangs[0]
    conds = tuple(ConditionResult(show(e.cond), e.kind, None) for e in fc.test.expectations) + \
        (_hang_result(hangs, True, False),)
    return replace(base, status="fail", observe=fc.observe, conditions=conds,
                   notes=notes + (f"hang: {h.thread} blocks forever at {h.blocked}: {h.state} [{h.combo}]",),
                   message=f"a hang, which the test forbids: {h.thread} blocks forever at {h.blocked}; the "
                           f"undefined-behaviour question has no answer ({why}), and the test fails either way")


def _awaits_block(s: Session | UnionSession, base: Result, notes: tuple[str, ...]) -> Result:
    conds = tuple(ConditionResult(show(e.cond), e.kind, None) for e in s.test.expectations)
    return replace(base, status="fail", observe=s.observe, conditions=conds, notes=base.notes + notes,
                   message=AWAITS_BLOCK + " (ask `ptxmc check FILE::NAME hang`, or expect: {hang: allowed})")


def _never_terminates(fc: UnionSession, base: Result, notes: tuple[str, ...]) -> Result:
    """No execution terminates (every one blocks at a barrier or spins in a loop it never
    leaves): no outcome, no verdict on any condition (a deadlocked program must not read as
    "Forbidden" or "Impossible" for every condition), the hang expectation judged."""
    test = fc.test
    why = fc.never_terminates()
    conds = [ConditionResult(show(e.cond), e.kind, None) for e in test.expectations]
    if test.expect_hang is not None:
        conds.append(ConditionResult("hang", "allowed" if test.expect_hang else "forbidden", True))
    notes += (f"hang: {why}",)
    if not test.expectations and test.expect_hang is not None and not test.expect_undefined:
        status, msg = ("pass" if test.expect_hang else "fail"), ("" if test.expect_hang else "a hang: " + why)
    else:
        status, msg = "fail", (f"no execution terminates, a hang ({why}); no condition has a verdict (ask `ptxmc "
                               "check FILE::NAME hang`, or expect: {hang: allowed})")
    return replace(base, status=status, message=msg, observe=fc.observe, outcomes=(), complete=True,
                   conditions=tuple(conds), notes=notes)


def _expects(test) -> bool:
    """Does the test state any expectation (docs/format.md#expectations-and-conditions)? Undefined
    behaviour in a test that does is a fail (it was not expected); in one that does not, the
    status `undefined` (docs/cli.md#ptxmc-run)."""
    return bool(test.expectations) or test.expect_undefined is not None or test.expect_hang is not None


def _hang_result(hangs, complete: bool, expect: bool | None) -> ConditionResult:
    allowed = True if hangs else (None if not complete else False)
    return ConditionResult("hang", None if expect is None else ("allowed" if expect else "forbidden"), allowed)
