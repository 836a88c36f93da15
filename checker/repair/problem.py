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
axiom's violation, nor makes a flag fire that did not. It is a property of the model and of what
the edits do, decided per test (`monotone_failures`): each candidate edit's program is compared
with the original on the events both have (`effects`: the base sets and relations that gain or
lose members, the sets an inserted event belongs to), and the model's checks are read for the
polarity of those names (checker.cat.polarity). Where that cannot show monotonicity (a model
that uses a strengthened name negatively, e.g. mbarrier.inval's reinitialisation rule, where more
base causality can make an operation invalid) the clauses block only the sets actually checked,
which keeps the search exhaustive and the minimality proof sound, at the price of checking more
sets. The effects are read when a clause first needs them (`monotone_in`), not up front: an
'under' clause learnt from M relies only on the edits M covers being monotone (P_S' is P_M less
some of them), an 'over' clause on every candidate. Reading an edit builds its program, and a
kernel's skeleton has hundreds of candidates no search reaches (barrier placements, above all).

A grow is complete, bounded only by the search's deadline: a clause from a set grown halfway
excludes little, and on a large test (a kernel's skeleton: a concrete evaluation costs 0.1-0.5 s)
a grow cut at a fixed time learnt clauses that each excluded a handful of sets, so the optimizer
proposed sets one at a time and never reached a repair of three fences.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Iterable

from .. import limits
from ..ast import LitmusTest
from ..cat.interp import Model
from ..cat.polarity import Effects, monotone_failures
from ..errors import LimitExceeded, LitmusError
from ..limits import Limits
from ..verdict.session import Session
from .edits import Edit, Insert
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
    undecided: int = 0          # candidate sets whose hang question could not be decided
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


EVENTS_PER_INSERT = 4      # events an inserted instruction lowers to, at most (a wait: its read and its effects)

# slots whose edits add a read (an inserted await): an execution of a program without it cannot be
# read in a program with it (checker.repair.transfer), so grow never raises them
NEW_READS = frozenset({"mbwait"})


def effects(base: Program, programs: Iterable[Program]) -> Effects:
    """What the edited programs change in the base program's sets and relations, on the events
    they share (by name, checker.repair.program), and which names hold their inserted events."""
    grows: dict = {}
    shrinks, touch = set(), set()
    moves: dict = {}
    bes = base.es
    for prog in programs:
        es, bid = prog.es, base.eid
        old = {i: bid[n] for i, n in enumerate(prog.names) if n in bid}      # eid in prog -> in base
        new = frozenset(i for i in range(len(prog.names)) if i not in old)
        now_in, was_in = _membership(es.sets), _membership(bes.sets)
        for name in set(es.sets) | set(bes.sets):
            now = es.sets.get(name, frozenset())
            if now & new:
                touch.add(name)
            was = bes.sets.get(name, frozenset())
            mapped = {old[i] for i in now if i in old}
            if mapped - was:
                grows[name] = grows.get(name, frozenset()) | (mapped - was)
            for i, e in old.items():
                if e in was and i not in now:
                    joined = now_in.get(i, frozenset()) - was_in.get(e, frozenset())
                    moves[name] = moves.get(name, frozenset()) | {(e, joined)}
        for name in set(es.relations) | set(bes.relations):
            now = es.relations.get(name, frozenset())
            if any(a in new or b in new for a, b in now):
                touch.add(name)
            was = bes.relations.get(name, frozenset())
            mapped = {(old[a], old[b]) for a, b in now if a in old and b in old}
            if mapped - was:
                grows[name] = None
            if any(not _moved_earlier(p, now, new, es.relations.get("po", ()), old) for p in was - mapped):
                shrinks.add(name)
    empty = frozenset(n for n in set(bes.sets) | set(bes.relations)
                      if not bes.sets.get(n) and not bes.relations.get(n) and n not in grows and n not in touch)
    return Effects(grows, moves, frozenset(shrinks), frozenset(touch), empty, dict(bes.sets))


def _moved_earlier(pair, now, new, po, old) -> bool:
    """An existing event's pair (a, b) that the edited program relates to an inserted event c
    program-ordered before b instead: a completion moved earlier (an inserted wait completes
    what a later one did); the order after c still reaches b. Counted as no loss."""
    a, b = pair
    inv = {v: k for k, v in old.items()}
    pa, pb = inv.get(a), inv.get(b)
    return any(x == pa and c in new and (c, pb) in po for x, c in now)


def _membership(sets) -> dict:
    out: dict = {}
    for name, members in sets.items():
        for i in members:
            out.setdefault(i, set()).add(name)
    return {i: frozenset(v) for i, v in out.items()}


def why_not_monotone(model: Model, base: Program, programs: Iterable[Program], options=frozenset()) -> tuple[str, ...]:
    """Why the model might not be monotone in these edits on this test (empty: it is)."""
    return monotone_failures(model, effects(base, programs), options)


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
        self.tops = {slot: _top(alts) for slot, alts in self.slots.items()}
        self.barrier_slots = [s for s, alts in self.slots.items() if alts[0].kind == "barrier"]
        self._programs: dict = {}
        # Monotonicity is read per candidate, when a clause first needs it (`monotone_in`): each
        # read builds the candidate's program, which on a kernel's skeleton (hundreds of
        # candidates, most of them barrier placements no search reaches) costs more than the search.
        self._unread = {c.key for c in self.cands} if monotone is None else set()
        self._effects: Effects | None = None
        self.not_monotone: tuple[str, ...] = () if monotone is not False else ("monotonicity not assumed",)
        self.counterexamples: list[tuple[Failure, Program]] = []
        self.grown: dict = {}           # id(failure) -> the last M grown for it
        self.stats = Stats()
        self.deadline = float("inf")    # the search's (cegis, exhaustive): a grow stops there too
        self.cache_tries = 6            # stored counterexamples tried on a proposal before a Session

    @property
    def monotone(self) -> bool:
        """Is the model monotone in every candidate edit of this test (see the module docstring)?"""
        return self.monotone_in(self.cands)

    def monotone_in(self, cands: Iterable[Edit]) -> bool:
        """Is the model monotone in these candidate edits (with those read before)? A clause that
        relies only on these edits being monotone is sound when this holds, whatever the others do."""
        if not self._unread or self.not_monotone:
            return not self.not_monotone
        todo = [c for c in cands if c.key in self._unread]
        if todo:
            progs = [p for p in (self.program((c,)) for c in todo) if p is not None]
            fx = effects(self.base, progs)
            self._effects = fx if self._effects is None else _merged(self._effects, fx)
            self.not_monotone = monotone_failures(self.model, self._effects, self.options)
        self._unread.difference_update(c.key for c in todo)
        return not self.not_monotone

    def build_base(self) -> Program | None:
        """The original program (the counterexamples' reference), built once."""
        return build(self.test, ())

    # -- programs and checks ---------------------------------------------------------------
    def program(self, edits: Iterable[Edit]) -> Program | None:
        edits = tuple(sorted(edits, key=lambda e: e.key))
        key = frozenset(e.key for e in edits)
        if key not in self._programs:
            # The events limit bounds what is encoded (the engine checks it again on every Session
            # asked): lowering an edited program may exceed it by the events its edits insert. A
            # grown set, which is only evaluated concretely, inserts one or more at every point.
            cur = limits.current()
            inserted = sum(isinstance(c, Insert) for e in edits for c in e.changes)
            try:
                with limits.use(replace(cur, events=cur.events + EVENTS_PER_INSERT * inserted)):
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
        if status == "invalid":
            return Clause("exact", core=tuple(edits))
        if failure.kind == "over":
            # every superset fails too: relies on every candidate
            if not self.monotone:
                return Clause("exact", core=tuple(edits))
            return Clause("over", core=self.shrink(edits, failure))
        # an 'under' clause relies on the edits a grown set covers: at most the failing set's and
        # those grow raises (the barrier alternatives it tries are read after it)
        if not self.monotone_in([c for c in self.cands if c.slot in self.tops and self._growable(c.slot)
                                 or any(c.key == e.key for e in edits)]):
            return Clause("exact", core=tuple(edits))
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
        if not self.monotone_in([c for c in self.cands if c.key not in keys]):
            return Clause("exact", core=tuple(edits))
        return Clause("under", keys=frozenset(keys))

    def _growable(self, slot) -> bool:
        """Does grow raise this slot (to its top)?"""
        top = self.tops.get(slot)
        return top is not None and top.needs_barrier is None and top.kind != "barrier" and slot[0] not in NEW_READS

    @staticmethod
    def covered(c: Edit, m: dict) -> bool:
        d = m.get(c.slot)
        return d is not None and d.dominates(c)

    def grow(self, failure: Failure, src: Program, edits) -> tuple[dict, tuple | None]:
        """A set M >= edits (slot -> edit) of which `failure`'s execution is a counterexample."""
        m = {e.slot: e for e in edits}

        def ok(mm: dict) -> bool:
            try:
                prog = self.program(mm.values())
            except LimitExceeded:
                return False            # (not raised: a smaller clause, still sound)
            return prog is not None and self.survives(failure, src, prog)

        if not ok(m):
            return m, None
        items = [(slot, top) for slot, top in self.tops.items()
                 if self._growable(slot) and not (slot in m and m[slot].key == top.key)]
        items.sort(key=lambda it: (it[1].changes[0].thread, _where(it[1]), it[1].key))
        failed: dict = {}

        def raise_(m: dict, items: list) -> dict:
            if not items or now() > self.deadline:
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
            alts = {b.key for b in self.slots[bslot] if now() < self.deadline and ok({**m, bslot: b})}
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


def _merged(a: Effects, b: Effects) -> Effects:
    """The effects of two groups of edited programs of one base (`effects` over their union)."""
    grows = dict(a.grows)
    for name, evs in b.grows.items():
        grows[name] = None if evs is None or grows.get(name, frozenset()) is None else grows.get(name, frozenset()) | evs
    moves = dict(a.moves)
    for name, mv in b.moves.items():
        moves[name] = moves.get(name, frozenset()) | mv
    return Effects(grows, moves, a.shrinks | b.shrinks, a.touch | b.touch, a.empty & b.empty, a.sets)


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


def edit_order(test: LitmusTest):
    """The order of candidate edits that `fix` reports repairs in (docs/fix.md, Which least repairs
    are reported): by where the edit's first change is in the test's text (the thread, in the
    order the test declares them; then the place in it: an insertion before instruction i comes
    before a change of instruction i), then by the edit's key (the instructions it makes). It
    depends on the test's text alone, never on what a solver found first."""
    index = {th.name: i for i, th in enumerate(test.threads)}

    def key(e: Edit) -> tuple:
        where = min(((index.get(c.thread, len(index)), c.thread,
                      2 * c.point if isinstance(c, Insert) else 2 * c.index + 1) for c in e.changes),
                    default=(-1, "", -1))
        return where + (e.key,)
    return key


def set_order(test: LitmusTest):
    """The order of candidate sets: each set's edits in `edit_order`, compared edit by edit as words
    are (the first edit that differs decides). Among sets of one cost, no set is a prefix of
    another (every edit costs something), so this is a total order on them."""
    key = edit_order(test)
    return lambda edits: tuple(sorted(key(e) for e in edits))
