"""Compare one test under two sides, in a worker: check it under each (the same judging as `ptxmc
run`), then list every difference in what the two allow, each with a witness execution from the
side that allows it.

A difference is one of:
  undefined   an undefined-behaviour flag fires on one side only (its offending operations are the
              witness);
  outcome     a final outcome allowed on one side only (both outcome lists complete);
  condition   one of the test's `expect:` conditions, allowed on one side and forbidden on the other.
A test that is malformed or UNKNOWN on either side is not compared (reported, never "no difference").
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import limits
from ..errors import CheckerError
from ..results.result import Result
from .sides import Side, model_of


@dataclass(frozen=True)
class Difference:
    kind: str                   # undefined | outcome | condition
    text: str                   # the flag, the outcome (herd), or the condition
    allowed_by: str             # "left" | "right": the more permissive side
    witness: str                # an execution of that side showing it (text), or why there is none


@dataclass(frozen=True)
class TestDiff:
    name: str
    path: str
    matrix_row: tuple[tuple[str, str], ...] | None
    left: str                   # status under each side (pass, fail, run, undefined, error, unknown)
    right: str
    message: str = ""           # why the test was not compared, if it was not
    differences: tuple[Difference, ...] = ()

    @property
    def compared(self) -> bool:
        return not self.message


def diff_one(job) -> TestDiff:
    """(test, left Side, right Side, engine, limits) -> TestDiff."""
    from ..pool import inject_fault
    from ..verdict.check import judge_test

    test, left, right, engine, lim = job
    limits.set_current(lim)
    inject_fault(test.name)
    sessions, results = {}, {}
    for key, side in (("left", left), ("right", right)):
        model, options = model_of(side), frozenset(side.options)
        kept: list = []
        results[key] = judge_test(test, model, side.name, options, engine, lim, kept)
        sessions[key] = kept[0] if kept else None      # (none: the result is an error)
    lr, rr = results["left"], results["right"]
    base = TestDiff(test.name, test.path, test.matrix_row, lr.status, rr.status)
    bad = [(k, r) for k, r in results.items() if r.status in ("error", "unknown")]
    if bad:
        return _replace(base, message="; ".join(f"{k}: {r.status}: {r.message}" for k, r in bad))
    diffs = _undefined(lr, rr)
    if not lr.undefined and not rr.undefined:
        diffs += _conditions(test, lr, rr, sessions)
        if lr.complete and rr.complete:
            diffs += _outcomes(lr, rr, sessions)
        else:
            return _replace(base, message="outcome list incomplete (the outcome cap); outcomes not compared",
                            differences=tuple(diffs))
    return _replace(base, differences=tuple(diffs))


def _replace(d: TestDiff, **kw) -> TestDiff:
    from dataclasses import replace

    return replace(d, **kw)


def _undefined(lr: Result, rr: Result) -> list[Difference]:
    out = []
    lf, rf = {u.flag: u for u in lr.undefined}, {u.flag: u for u in rr.undefined}
    for side, mine, other in (("left", lf, rf), ("right", rf, lf)):
        for flag in sorted(set(mine) - set(other)):
            u = mine[flag]
            out.append(Difference("undefined", flag, side, "".join(f"    {e}\n" for e in u.events) + f"    why: {u.why}\n"))
    return out


def _conditions(test, lr: Result, rr: Result, sessions) -> list[Difference]:
    out = []
    for exp, lc, rc in zip(test.expectations, lr.conditions, rr.conditions):
        if lc.allowed is None or rc.allowed is None or lc.allowed == rc.allowed:
            continue
        side = "left" if lc.allowed else "right"
        out.append(Difference("condition", lc.text, side, _witness(sessions[side], exp.cond)))
    hang = {k: next((c.allowed for c in r.conditions if c.text == "hang"), None) for k, r in (("left", lr), ("right", rr))}
    if None not in hang.values() and hang["left"] != hang["right"]:       # the liveness question
        side = "left" if hang["left"] else "right"
        found = sessions[side].hangs()[0]
        text = "".join(f"    {h.thread} blocks forever at {h.blocked}: {h.state}\n      paths: {h.combo}\n"
                       for h in found[:1])
        out.append(Difference("condition", "hang", side, text))
    return out


def _outcomes(lr: Result, rr: Result, sessions) -> list[Difference]:
    from ..front.conditions import parse_cond
    from ..results.result import outcome_text

    out = []
    ls, rs = set(lr.outcomes), set(rr.outcomes)
    for side, mine, other in (("left", ls, rs), ("right", rs, ls)):
        for o in sorted(mine - other):
            cond_text = " /\\ ".join(f"{k}={v}" for k, v in o) or "true"
            try:
                cond = parse_cond(cond_text)
            except CheckerError as e:
                witness = f"    (no witness: {e})\n"
            else:
                witness = _witness(sessions[side], cond)
            out.append(Difference("outcome", outcome_text(o), side, witness))
    return out


def _witness(s, cond) -> str:
    """An execution satisfying `cond`, as text (the `ptxmc check` layout), with the paths it
    takes where the test has several variants."""
    from ..results import witness

    w = s.witnessed(cond)
    if w is None:                                    # cannot happen for an allowed verdict
        return "    (no witness execution found)\n"
    head = f"    paths: {w.paths}\n" if w.paths else ""
    s, ex = w.session, w.execution
    env = dict(s.evaluation(ex).env)
    return head + "\n".join("  " + line for line in witness.text(s.es, ex, env).splitlines()) + "\n"
