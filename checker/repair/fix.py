"""`fix`: every least-cost repair of a test, proven minimal and re-checked (the library entry
point of `ptxmc fix`; the command line is checker.repair.cli).

1. The original program is judged against the target (checker.repair.target); if it meets it,
   there is nothing to fix.
2. The candidate edits are generated and pruned (checker.repair.candidates).
3. A search (checker.repair.cegis, the default, or checker.repair.exhaustive) finds every
   repair of least cost, up to `max_repairs`, and proves that nothing cheaper exists in the
   candidate space, or that no repair exists there; at the deadline it stops with what it has,
   unproven.
4. Each repair is re-checked from scratch: the edited test, with the target as its
   expectations, goes through checker.verdict.check.check_test like any test; a repair that does
   not pass is dropped with a note (it would be a bug of the search).
5. Each edit of a repair is explained by the counterexample it blocks (checker.repair.supplies).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .. import limits
from ..ast import LitmusTest
from ..cat.interp import Model
from ..limits import Limits
from ..verdict.awaits import never_ends
from ..verdict.check import check_test
from ..verdict.open import open_session
from ..verdict.union import UnionSession
from . import cegis, exhaustive
from .candidates import candidates, withheld_warp_barriers
from .costs import DEFAULT, CostModel
from .edits import Edit, apply
from .hangs import hang_candidates
from .problem import Problem, edit_order
from .supplies import Supply, supplies
from .target import Target, judge, target_test, unknown_why
from .variants import UnionProblem, union_candidates, why_not_sync_monotone

METHODS = {"cegis": cegis.search, "exhaustive": exhaustive.search}
DEFAULT_METHOD = "cegis"


@dataclass(frozen=True)
class Repair:
    edits: tuple[Edit, ...]
    cost: int
    test: LitmusTest                        # the edited test, the target as its expectations
    supplies: tuple[Supply, ...] = ()


@dataclass(frozen=True)
class FixResult:
    test: LitmusTest
    target: Target
    status: str             # met | repaired | none | budget | unknown (the target is not decided) | error
    repairs: tuple[Repair, ...] = ()
    proven: bool = False    # least cost proven (repaired), or no repair in the space (none)
    method: str = DEFAULT_METHOD
    candidates: int = 0
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0
    notes: tuple[str, ...] = ()
    failure: str = ""       # what the original program fails (met: "")

    @property
    def cost(self) -> int | None:
        return self.repairs[0].cost if self.repairs else None


def fix(test: LitmusTest, target: Target, model: Model, options=frozenset(), engine: str = "z3",
        lim: Limits | None = None, method: str = DEFAULT_METHOD, max_repairs: int = 8,
        costs: CostModel = DEFAULT, budget: float = 120.0, explain: bool = True,
        cands: tuple[Edit, ...] | None = None, recheck: bool = True) -> FixResult:
    """See the module docstring. `recheck=False` leaves step 4 to the caller (the command line
    re-checks the patched YAML text instead: checker.repair.output.verify). SolverUnknown (a Z3
    timeout) propagates: no answer is given."""
    start = time.perf_counter()
    lim = lim or limits.current()
    options = frozenset(options)
    # (asked with the target as its expectations, as each candidate and the re-check are: a test
    # over variants observes what its expectations name)
    base = open_session(target_test(test, target), model, options, engine, lim, hang=target.hang is not None)
    union = isinstance(base, UnionSession)      # asked over its variants: checker.repair.variants
    if union and target.hang is True and not base.hangs()[0]:
        return FixResult(test, target, "error", method=method, seconds=time.perf_counter() - start,
                         failure="expect: {hang: allowed} is not met: no fair execution hangs",
                         notes=target.notes + ("ptxmc fix makes no edit that adds a hang: see docs/fix.md",))
    never = None if target.hang is not None or cands is not None else never_ends(base)
    if never:
        # no execution terminates: no condition has a verdict (as `run` and `check` say), and
        # synchronization only removes executions; the hang edits are asked for with `hang`
        return FixResult(test, target, "error", method=method, seconds=time.perf_counter() - start,
                         failure=f"no execution terminates, a hang ({never})", notes=target.notes + (
                             "no execution terminates: no condition has a verdict, and synchronization only removes "
                             f"executions; for a repair that removes the hang: ptxmc fix '{test.path}::{test.name}' hang",))
    failure = judge(base, target)
    if failure is None and target.hang is not None and not union:
        # a Session does not see hangs (checker.repair.target): the path-by-path judge decides
        r = check_test(target_test(test, target), model, None, options, engine)
        if not r.ok:
            now_ = r.message or f"expect: {{hang: {'allowed' if target.hang else 'forbidden'}}} is not met"
            return FixResult(test, target, "error", method=method, seconds=time.perf_counter() - start,
                             failure=now_, notes=target.notes + (
                                 "ptxmc fix makes no edit for a hang expectation (none that adds or removes a "
                                 "hang): see docs/fix.md",))
    if failure is not None and failure.undecided:
        # nothing to repair that can be judged: the answer is Unknown, never "met" or a repair
        why = unknown_why(base, failure)
        return FixResult(test, target, "unknown", method=method, seconds=time.perf_counter() - start,
                         failure=_failure_text(failure), notes=target.notes + (why,))
    if failure is None:
        hangs = union and target.hang is True and base.hangs()[0]
        return FixResult(test, target, "met", method=method, seconds=time.perf_counter() - start,
                         notes=target.notes + ((
                             f"the program hangs ({hangs[0].thread} at {hangs[0].blocked}), which its expectations "
                             f"allow (hang: allowed); to make a hang impossible: ptxmc fix "
                             f"'{test.path}::{test.name}' hang",) if hangs else ()))
    why = _failure_text(failure)
    for e in target.expectations():
        if not (base.verdict(e.cond).sane if union else base.engine.sane(e.cond)):
            return FixResult(test, target, "error", method=method, seconds=time.perf_counter() - start,
                             failure=why, notes=target.notes + (
                                 f"{e.kind}: '{e.text}' is impossible in this test even without axioms: "
                                 f"{'nothing to forbid' if e.kind == 'forbidden' else 'it cannot be made allowed'}",))
    hang_notes: list[str] = []
    if cands is None:
        # a skeleton's litmus thread is a role: a bar.warp.sync no launch can make is not offered
        hang_notes += withheld_warp_barriers(test)
        cands = union_candidates(test, base, costs, options) if union else candidates(test, base.es, costs, options)
        # (the test may hang whichever failure judge names first: a forbidden outcome is asked
        # before the hang, and a cheap hang edit may remove both)
        if union and target.hang is False and base.hangs()[0]:
            more = hang_candidates(test, base, costs)
            cands = cands + more
            h = base.hangs()[0][0]
            hang_notes.append(f"the hang: {h.thread} at {h.blocked}: {h.state}")
            if not more:
                hang_notes.append("no hang edit applies: the hang needs a change ptxmc fix does not make (docs/fix.md, "
                                  "Edits), so only synchronization is tried")
    not_monotone = why_not_sync_monotone(base, model, costs, options) if union else ()
    problem = UnionProblem(test, target, model, options, engine, lim, cands, not not_monotone) if union else \
        Problem(test, target, model, options, engine, lim, cands)
    found, status = METHODS[method](problem, max_repairs, start + budget)
    notes = list(target.notes) + hang_notes
    if union:
        notes.append(f"asked over its {base.total} straight-line variants (control paths, barrier schedules): "
                     "each candidate set was judged as a whole, through the test's one session")
        if not_monotone:
            notes.append(f"the model is not known to be monotone for this test ({not_monotone[0]}): "
                         "each failed candidate set excluded only itself")
    elif problem.not_monotone:            # (read as far as the search needed it)
        notes.append(f"the model is not known to be monotone for this test ({problem.not_monotone[0]}): "
                     "the search checked candidate sets one by one")
    repairs = []
    order = edit_order(test)
    for edits in found:
        edits = tuple(sorted(edits, key=order))
        edited = target_test(apply(test, edits).test, target)
        r = check_test(edited, model, None, options, engine) if recheck else None
        if r is not None and not r.ok:        # ok: pass, or run (a target of "no UB" alone)
            notes.append(f"a repair was dropped: its re-check says {r.status} ({r.message or 'expectations not met'}): "
                         + "; ".join(e.text for e in edits))
            continue
        sup = supplies(problem, edits) if explain and not union else ()
        repairs.append(Repair(edits, sum(e.cost for e in edits), edited, sup))
    # a set that could not be judged may be a repair: nothing from its cost up is proven
    undecided = getattr(problem, "undecided_min", None)
    unproven = undecided is not None and (not found or undecided < sum(e.cost for e in found[0]))
    if problem.stats.undecided:
        notes.append(f"{problem.stats.undecided} candidate set(s) could not be judged (the hang search could not "
                     "decide a loop, or the loop bound left a verdict Unknown)"
                     + (f": nothing from cost {undecided} up is proven" if unproven else
                        ": at the least cost, so the least cost stands, but a repair of it may be missing"))
    problem.stats.seconds = round(time.perf_counter() - start, 3)
    stats = problem.stats.as_dict()
    if repairs:
        res_status = "repaired"
    elif status == "budget" or found:
        res_status = "budget" if status == "budget" else "error"
    else:
        res_status = "none"
    if status == "cut" and repairs:
        notes.append("the budget ended the search after the least cost was proven: other repairs of that cost may "
                     "exist (a larger --budget lists them)")
    return FixResult(test, target, res_status, tuple(repairs), proven=status in ("proven", "none", "cut") and
                     len(repairs) == len(found) and not unproven, method=method, candidates=len(cands), stats=stats,
                     seconds=time.perf_counter() - start, notes=tuple(notes), failure=why)


def _failure_text(f) -> str:
    if f.undecided and f.what == "hang" and f.cond is None:
        return "whether it can hang is undecided: the hang search cannot judge one of its loops"
    if f.undecided and f.cond is None:
        return "whether it has undefined behaviour is Unknown: the loop bound cut executions off"
    if f.undecided:
        return f"whether '{f.what}' is allowed is Unknown: the loop bound cut executions off"
    if f.kind == "under":
        return f"undefined behaviour ({f.flag})" if f.flag else f"'{f.what}' is allowed"
    if f.what == "deadlock":
        return "the program has no execution"
    return f"'{f.what}' is forbidden"
