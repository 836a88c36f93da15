"""One repair problem: a test, a target, the candidate edits, and the counterexample machinery
both searches share (checker.repair.cegis, checker.repair.enumerate).

Checking a candidate set S of edits: the edited program P_S is judged by a normal Session
(checker.repair.target.judge); before that, every counterexample found so far is tried on P_S
concretely (checker.repair.transfer.survives: exact when it says yes), which often answers
without a solver call.

Learning from a failure, when the model is monotone (`monotone`):
- 'under' (P_S allows an execution X the target rules out): `grow` finds a set M of edits,
  each slot at the strongest alternative for which X survives (divide and conquer over the
  slots: raise many at once, split where X dies), so that X is a counterexample of P_M. Every
  set S' whose edits are each dominated by M's edit of the same slot (S' <= M) then fails too:
  P_S' has at most the synchronization of P_M, so X (minus the fences P_S' lacks) stays
  consistent and still shows the failure. The clause learnt: S' must contain an edit that M
  does not cover. Where the test has exactly one barrier slot, each of its alternatives is
  tried in M too, and the ones X survives count as covered.
- 'over' (an allowed condition became impossible, or no execution is left): adding edits only
  removes executions, so every S' >= S fails the same way; S is shrunk to a smaller core that
  still fails (one edit at a time, with Sessions), and the clause learnt is "S' does not cover
  the whole core".
Monotone means: adding an edit never makes an execution consistent that was not, nor clears an
axiom or a flag's witness. Every edit of checker.repair.candidates adds tags, events or static
edges that the bundled model (axioms/ptx.cat) uses only positively, except mbarrier.inval's
reinitialisation rule (mb_between), where more base causality can make an operation invalid. So
`monotone` holds for the bundled ptx model on tests without mbarrier.inval; otherwise (another
model, or mbarrier.inval) the clauses block only the sets actually checked, which keeps the
search exhaustive and the minimality proof sound, at the price of checking more sets.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..ast import LitmusTest
from ..cat.interp import Model
from ..errors import LitmusError
from ..limits import Limits
from ..resources import AXIOMS_DIR
from ..verdict.session import Session
from .edits import Edit
from .program import Program, build
from .target import Failure, Target, judge
from .transfer import survives


@dataclass
class Stats:
    sessions: int = 0           # programs judged by a Session
    cached: int = 0             # candidate sets refuted by a stored counterexample
    evaluations: int = 0        # concrete evaluations (survives)
    proposals: int = 0          # candidate sets considered
    clauses: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(vars(self))


@dataclass(frozen=True)
class Clause:
    """A learnt constraint on candidate sets. 'under': the set must contain one of `keys`;
    'over': the set must not cover every edit of `core`; 'exact': the set must differ from
    `core`; 'superset': the set must not contain every edit of `core` (a repair found)."""

    kind: str
    keys: frozenset = frozenset()
    core: tuple[Edit, ...] = ()


# slots whose edits add a read (an inserted await): an execution of a program without it cannot be
# read in a program with it (checker.repair.transfer), so grow never raises them
NEW_READS = frozenset({"mbwait"})


def is_monotone(model: Model, es) -> bool:
    try:
        bundled = Path(model.path).resolve() == (AXIOMS_DIR / "ptx.cat").resolve()
    except OSError:
        bundled = False
    return bundled and not es.sets.get("MB_INVAL")


class Problem:
    def __init__(self, test: LitmusTest, target: Target, model: Model, options, engine: str, lim: Limits,
                 cands: Iterable[Edit], monotone: bool | None = None):
        self.test, self.target, self.model = test, target, model
        self.options, self.engine, self.lim = frozenset(options), engine, lim
        self.cands = tuple(cands)
        self.by_key = {c.key: c for c in self.cands}
        self.slots: dict = {}
        for c in self.cands:
            self.slots.setdefault(c.slot, []).append(c)
        self.base = self.build_base()
        self.monotone = is_monotone(model, self.base.es) if monotone is None else monotone
        self.tops = {slot: _top(alts) for slot, alts in self.slots.items()}
        self.barrier_slots = [s for s, alts in self.slots.items() if alts[0].kind == "barrier"]
        self._programs: dict = {}
        self.counterexamples: list[tuple[Failure, Program]] = []
        self.grown: dict = {}           # id(failure) -> the last M grown for it
        self.stats = Stats()
        self.grow_budget = 2.0          # seconds of concrete evaluations per counterexample
        self.cache_tries = 6            # stored counterexamples tried on a proposal before a Session

    def build_base(self) -> Program | None:
        """The original program (the counterexamples' reference), built once."""
        return build(self.test, ())

    # -- programs and checks ---------------------------------------------------------------
    def program(self, edits: Iterable[Edit]) -> Program | None:
        edits = tuple(sorted(edits, key=lambda e: e.key))
        key = frozenset(e.key for e in edits)
        if key not in self._programs:
            try:
                self._programs[key] = build(self.test, edits)
            except LitmusError:
                self._programs[key] = None
            if len(self._programs) > 4096:
                self._programs.clear()
        return self._programs[key]

    def session(self, prog: Program) -> Session:
        s = Session(prog.test, self.model, self.options, self.engine, self.lim)
        s.__dict__["es"] = prog.es          # lowered already
        return s

    def check(self, edits: tuple[Edit, ...]) -> tuple[str, Failure | None, Program | None]:
        """('ok', None, P) | ('fail', failure, program the failure's execution belongs to) |
        ('invalid', None, None) for a set of edits."""
        self.stats.proposals += 1
        prog = self.program(edits)
        if prog is None:
            return "invalid", None, None
        for k, (failure, src) in enumerate(self.counterexamples[:self.cache_tries]):
            if self.survives(failure, src, prog):
                self.stats.cached += 1
                self.counterexamples.insert(0, self.counterexamples.pop(k))    # most useful first
                return "fail", failure, src
        self.stats.sessions += 1
        failure = judge(self.session(prog), self.target)
        if failure is None:
            return "ok", None, prog
        if failure.kind == "under":
            self.counterexamples.insert(0, (failure, prog))
        return "fail", failure, prog

    def survives(self, failure: Failure, src: Program, dst: Program) -> bool:
        if failure.kind != "under":
            return False
        self.stats.evaluations += 1
        return survives(failure.execution, failure, src, dst, self.model, self.options)

    # -- learning --------------------------------------------------------------------------
    def learn(self, edits: tuple[Edit, ...], status: str, failure: Failure | None, src: Program | None) -> Clause:
        """The clause a failed (or invalid) candidate set teaches."""
        self.stats.clauses += 1
        if status == "invalid" or not self.monotone:
            return Clause("exact", core=tuple(edits))
        if failure.kind == "over":
            return Clause("over", core=self.shrink(edits, failure))
        m, good = None, None
        prev = self.grown.get(id(failure))
        if prev is not None:
            # a stored counterexample again: try its last M with this set's edits swapped in
            trial = dict(prev)
            for e in edits:
                if not self.covered(e, trial):
                    trial[e.slot] = e
            prog = self.program(trial.values())
            if prog is not None and self.survives(failure, src, prog):
                m = trial
        if m is None:
            m, good = self.grow(failure, src, edits)
        self.grown[id(failure)] = m
        keys = {c.key for c in self.cands if not self.covered(c, m)}
        if good is not None:
            bslot, alts = good
            keys = {k for k in keys if self.by_key[k].slot != bslot} | \
                   {b.key for b in self.slots[bslot] if b.key not in alts}
        return Clause("under", keys=frozenset(keys))

    @staticmethod
    def covered(c: Edit, m: dict) -> bool:
        d = m.get(c.slot)
        return d is not None and d.dominates(c)

    def grow(self, failure: Failure, src: Program, edits) -> tuple[dict, tuple | None]:
        """A set M >= edits (slot -> edit) of which `failure`'s execution is a counterexample."""
        m = {e.slot: e for e in edits}

        def ok(mm: dict) -> bool:
            prog = self.program(mm.values())
            return prog is not None and self.survives(failure, src, prog)

        if not ok(m):
            return m, None
        items = [(slot, top) for slot, top in self.tops.items()
                 if top is not None and top.needs_barrier is None and top.kind != "barrier"
                 and slot[0] not in NEW_READS and not (slot in m and m[slot].key == top.key)]
        items.sort(key=lambda it: (it[1].changes[0].thread, _where(it[1]), it[1].key))
        failed: dict = {}
        stop = now() + self.grow_budget

        def raise_(m: dict, items: list) -> dict:
            if not items or now() > stop:
                return m
            trial = {**m, **dict(items)}
            if ok(trial):
                return trial
            if len(items) == 1:
                slot, top = items[0]
                bad = failed.setdefault(slot, [top])
                for alt in sorted(self.slots[slot], key=lambda a: (-a.cost, a.key)):
                    if alt.key == top.key or (slot in m and not alt.dominates(m[slot])) \
                            or (slot in m and alt.key == m[slot].key) or any(alt.dominates(b) for b in bad):
                        continue
                    t = {**m, slot: alt}
                    if ok(t):
                        return t
                    bad.append(alt)
                return m
            half = len(items) // 2
            return raise_(raise_(m, items[:half]), items[half:])

        m = raise_(m, items)
        good = None
        # The barrier alternatives are tried once barriers are being proposed (a barrier in the
        # failing set): before that, cheaper edits are still open and the extra work is wasted.
        if len(self.barrier_slots) == 1 and any(e.kind == "barrier" for e in edits):
            bslot = self.barrier_slots[0]
            alts = {b.key for b in self.slots[bslot] if now() < stop + self.grow_budget and ok({**m, bslot: b})}
            if bslot in m:
                alts.add(m[bslot].key)
            good = (bslot, alts)
        return m, good

    def shrink(self, edits, failure: Failure) -> tuple[Edit, ...]:
        """A smaller set of edits whose program still fails the allowed condition (or deadlocks)."""
        core = list(edits)
        for e in list(core):
            if len(core) == 1:
                break
            trial = [x for x in core if x is not e]
            if any(x.needs_barrier and not any(b.kind == "barrier" and x.needs_barrier in b.places for b in trial)
                   for x in trial):
                continue
            prog = self.program(trial)
            if prog is None:
                continue
            self.stats.sessions += 1
            f = judge(self.session(prog), self.target)
            if f is not None and f.kind == "over" and f.what == failure.what:
                core = trial
        return tuple(core)

    # -- constraints as predicates (for the enumeration) -----------------------------------
    def satisfies(self, clause: Clause, keys: frozenset, chosen: dict) -> bool:
        if clause.kind == "under":
            return bool(clause.keys & keys)
        if clause.kind == "exact":
            return keys != frozenset(e.key for e in clause.core)
        if clause.kind == "superset":
            return not frozenset(e.key for e in clause.core) <= keys
        return not all(self.covered(e, chosen) for e in clause.core)


def _where(e: Edit) -> int:
    c = e.changes[0]
    return getattr(c, "point", None) if hasattr(c, "point") else c.index


def _top(alts: list[Edit]) -> Edit | None:
    """The alternative that dominates every other one of its slot, if there is one."""
    for a in alts:
        if all(a.dominates(b) for b in alts):
            return a
    return None


def now() -> float:
    return time.perf_counter()
