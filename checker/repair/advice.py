"""What a conformance report says about synchronization (`ptxmc report --fix`): for a test that
fails its expectations, the least-cost repair ("Suggested fix"); for one that meets them, the
synchronization it can do without ("Unneeded synchronization"). Plain data, picklable, so report
workers can return it."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CheckerError, LimitExceeded, SolverUnknown
from .fix import fix
from .output import where, written
from .prune import prune
from .target import from_test

BUDGET = 30.0           # seconds per test: a report must finish


@dataclass(frozen=True)
class Advice:
    title: str                      # Suggested fix | Unneeded synchronization
    summary: str
    lines: tuple[str, ...] = ()


def _place(p: dict) -> str:
    if p["at"] in ("replaces", "removes"):
        return f"{p['thread']}, line {p['line']} '{p['instruction']}'"
    return f"{p['thread']}, {p['at']} line {p['line']} '{p['instruction']}'"


def _edit_line(test, e, pruning: bool) -> str:
    places = "; ".join(_place(p) for p in where(test, e))
    if pruning:
        return f"{'remove' if not e.text else 'weaken to ' + written(test, e)} ({places})"
    return f"{e.kind} {written(test, e)} ({places}), cost {e.cost}"


def advise(test, status: str, model, options=frozenset(), budget: float = BUDGET) -> Advice | None:
    """The advice for a test whose check ended with `status` (pass / fail); None for the others."""
    try:
        if status == "fail":
            r = fix(test, from_test(test), model, options, max_repairs=1, budget=budget, explain=False)
            if r.status == "repaired":
                rep = r.repairs[0]
                proof = "proven least cost" if r.proven else "not proven least: the search stopped at its budget"
                return Advice("Suggested fix", f"cost {rep.cost} ({proof}; re-checked)",
                              tuple(_edit_line(test, e, False) for e in rep.edits))
            if r.status == "none":
                return Advice("Suggested fix", "no repair exists among the edits ptxmc fix makes (proven)")
            if r.status == "budget":
                return Advice("Suggested fix", "none found within the budget")
            return None
        if status == "pass":
            r = prune(test, from_test(test), model, options, max_repairs=1, budget=budget)
            if r.status == "pruned":
                rep = r.repairs[0]
                proof = "proven least" if r.proven else "not proven least"
                return Advice("Unneeded synchronization", f"saves {rep.cost} ({proof}; re-checked)",
                              tuple(_edit_line(test, e, True) for e in rep.edits))
            return None
    except (SolverUnknown, LimitExceeded) as e:
        return Advice("Suggested fix" if status == "fail" else "Unneeded synchronization", f"unknown: {e}")
    except CheckerError as e:
        return Advice("Suggested fix" if status == "fail" else "Unneeded synchronization", f"not available: {e}")
    return None
