"""Repairs of a test asked over its straight-line variants (control flow, barriers that meet in
several ways, a hang question: checker.verdict.union), for `ptxmc fix` and `ptxmc audit`.

- The candidate edits are each complete variant's (checker.repair.candidates), mapped back to
  the instructions of the test as written: a variant's instruction keeps its source place
  (`where`), so an insertion before it is an insertion before the instruction it came from, and
  a strengthening of it strengthens that instruction on every path. Edits that land on the same
  place and make the same change are one. An edit that cannot be mapped (a guarded instruction
  rewritten, an await a path added) is left out of the space.
- A candidate set is judged by asking the edited test over its variants
  (checker.verdict.open_session) against the target (checker.repair.target.judge), its hang
  question included. No execution is carried from one edited program to another (the concrete
  transfer reads one event structure). A failed set of synchronization edits alone (fences,
  strengthenings, tightened waits: they change no path, no barrier schedule, no value) that
  allows what the target rules out is grown as for a straight-line test, each raise judged by
  the session, and teaches the same clause (UnionProblem.learn); any other failed set teaches only
  itself ('exact'). Either way "no cheaper repair" stays proven over the space.
"""
from __future__ import annotations

from dataclasses import replace

from ..ast import LitmusTest
from ..errors import LitmusError
from ..verdict.open import open_session
from .candidates import candidates
from .costs import CostModel
from .edits import Edit, Insert, apply
from .problem import NEW_READS, Clause, Problem, why_not_monotone
from .program import build
from .target import Target, judge, target_test


def union_candidates(test: LitmusTest, asked, costs: CostModel, options=frozenset()) -> tuple[Edit, ...]:
    """The candidate edits of `test` from each complete variant of `asked` (its UnionSession)."""
    out: dict = {}
    for c, s in zip(asked.combos, asked.sessions):
        if c.cut:
            continue
        try:
            cands = candidates(c.test, s.es, costs, options)
        except LitmusError:
            continue
        for e in cands:
            m = _mapped(e, c.test, test)
            if m is not None:
                out.setdefault((m.kind, m.cost, m.changes), m)
    keys: dict = {}
    edits = []
    for e in out.values():
        n = keys.get(e.key, 0)
        keys[e.key] = n + 1
        edits.append(replace(e, key=e.key if n == 0 else f"{e.key}#{n}"))
    return tuple(sorted(edits, key=lambda e: e.key))


def _mapped(e: Edit, variant: LitmusTest, test: LitmusTest) -> Edit | None:
    """`e` (an edit of a straight-line variant) as an edit of `test`, or None."""
    code = {t.name: t.code for t in test.threads}
    vcode = {t.name: t.code for t in variant.threads}
    index = {t.name: {id(i.where): k for k, i in enumerate(t.code) if i.where is not None} for t in test.threads}

    def original(thread: str, k: int) -> int | None:
        w = vcode[thread][k].where
        return None if w is None else index[thread].get(id(w))

    changes, places = [], {}
    for ch in e.changes:
        if isinstance(ch, Insert):
            k = len(code[ch.thread]) if ch.point >= len(vcode[ch.thread]) else original(ch.thread, ch.point)
            if k is None:
                return None
            places[(ch.thread, ch.point)] = (ch.thread, k)
            changes.append(replace(ch, point=k))
            continue
        k = original(ch.thread, ch.index)
        if k is None:
            return None
        o, v = code[ch.thread][k], vcode[ch.thread][ch.index]
        if o.predicate or o.op != v.op or o.await_value != v.await_value:
            return None                 # a guarded instruction, or an await only this path adds
        changes.append(replace(ch, index=k))
    slot = (e.slot[0] if e.slot else e.kind,) + tuple(
        (c.thread, c.point if isinstance(c, Insert) else c.index) for c in changes)
    needs = places.get(e.needs_barrier) if e.needs_barrier is not None else None
    if e.needs_barrier is not None and needs is None:
        return None
    return replace(e, slot=slot, changes=tuple(changes), needs_barrier=needs)


EXACT_FIRST = 6         # failures that teach only themselves before sets are grown
GROW_SESSIONS = 48      # Sessions one grow may ask


class UnionProblem(Problem):
    """A repair problem whose programs are asked over their variants (see the module docstring)."""

    def __init__(self, test: LitmusTest, target: Target, model, options, engine: str, lim, cands,
                 sync_monotone: bool = False):
        super().__init__(test, target, model, options, engine, lim, cands, monotone=False)
        self.cache_tries = 0            # no counterexample is carried between edited programs
        self.sync_monotone = sync_monotone      # (see why_not_sync_monotone)
        # grow (checker.repair.problem) raises only synchronization edits, judged by Sessions here
        self.tops = {slot: t if t is not None and _sync(t) else None for slot, t in self.tops.items()}
        self._grow_left = 0
        self._failed = 0
        self.undecided_min: int | None = None     # the least cost of a set that could not be judged
        self._under: dict = {}          # frozenset of keys -> does that set fail 'under', kept by less sync?

    def learn(self, edits, status, failure, src) -> Clause:
        """A failed set of synchronization edits only (fences, strengthenings, tightened waits)
        that allows what the target rules out teaches more than itself where the model is
        monotone: such edits change no control path, no barrier schedule and no value, so every
        set each of whose edits is dominated by the set's has less synchronization on the same
        variants, and the failing execution (a forbidden outcome's, a flag's, a fair hang's)
        stays. As for a straight-line test, the set is first grown (each slot raised while the
        edited test still fails so, judged by Sessions), and the clause covers the grown set.
        Any other failure teaches only itself, and so do the first EXACT_FIRST failures: growing
        costs Sessions, which a search that ends at a low cost (a hang edit) does not repay."""
        if failure is not None and failure.undecided:
            self.stats.undecided += 1
            cost = sum(e.cost for e in edits)
            self.undecided_min = cost if self.undecided_min is None else min(self.undecided_min, cost)
        self._failed += 1
        if status == "invalid" or not self.sync_monotone or not all(_sync(e) for e in edits) \
                or not self._under.get(frozenset(e.key for e in edits)) or self._failed <= EXACT_FIRST:
            return super().learn(edits, status, failure, src)
        self.stats.clauses += 1
        self._grow_left = GROW_SESSIONS
        m, _ = self.grow(failure, None, edits)
        return Clause("under", keys=frozenset(c.key for c in self.cands if not self.covered(c, m)))

    # grow's two questions, for a test asked over its variants: the edited program is the set of
    # edits itself, and "the counterexample survives" is "the edited test still fails 'under'"
    def program(self, edits):
        return tuple(sorted(edits, key=lambda e: e.key))

    def survives(self, failure, src, prog) -> bool:
        key = frozenset(e.key for e in prog)
        if key not in self._under:
            if self._grow_left <= 0:
                return False            # (not raised: a smaller clause, still sound)
            self._grow_left -= 1
            self.stats.evaluations += 1
            self.check(prog)
        return self._under[key]

    def build_base(self):
        return None                     # (no one event structure: each set is asked over its variants)

    def check(self, edits: tuple[Edit, ...]):
        self.stats.proposals += 1
        try:
            edited = target_test(apply(self.test, edits).test, self.target)
            s = open_session(edited, self.model, self.options, self.engine, self.lim,
                             hang=self.target.hang is not None)
            self.stats.sessions += 1
            failure = judge(s, self.target)
        except LitmusError:
            return "invalid", None, None
        # A failure that less synchronization keeps: an execution shows it (a forbidden outcome's,
        # a flag's, a fair hang's, a barrier hang's as far as the test runs), not an undecided
        # question nor only "no execution terminates" (more executions may end that)
        self._under[frozenset(e.key for e in edits)] = failure is not None and failure.kind == "under" and \
            not failure.undecided and (failure.what != "hang" or any(h.probe is not None for h in s.hangs()[0]))
        return ("ok", None, None) if failure is None else ("fail", failure, None)


def why_not_sync_monotone(asked, model, costs: CostModel, options=frozenset()) -> tuple[str, ...]:
    """Why the model might not be monotone in the synchronization edits (`_sync`) of some variant
    of `asked` (a UnionSession), read from the model per variant as for a straight-line test
    (checker.repair.problem.why_not_monotone); empty: it is, on every variant an execution of
    which can show a failure (those the sessions hold, complete or cut, and the prefixes of the
    barrier-stuck ones)."""
    variants = [c.test for c in asked.combos] + [c.test for c, _ in asked.blocked if c.stuck]
    for v in variants:
        try:
            base = build(v, ())
            progs = [build(v, (e,)) for e in candidates(v, base.es, costs, options) if _sync(e)]
        except LitmusError as e:
            return (f"a variant's edits could not be built ({e.message})",)
        why = why_not_monotone(model, base, progs, options)
        if why:
            return why
    return ()


def _sync(e: Edit) -> bool:
    """Is `e` an edit that only adds synchronization on the same variants (no barrier, no await,
    no hang edit: those change the paths, the schedules or the values)?"""
    return e.kind in ("insert", "strengthen", "tighten") and e.needs_barrier is None and e.slot[0] not in NEW_READS

