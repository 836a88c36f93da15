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
  question included. No counterexample is carried from one edited program to another (the
  concrete transfer reads one event structure), so each failed set teaches only itself ('exact'
  clauses): the search stays exhaustive by cost, and "no cheaper repair" stays proven over the
  space.
"""
from __future__ import annotations

from dataclasses import replace

from ..ast import LitmusTest
from ..errors import LitmusError
from ..verdict.open import open_session
from .candidates import candidates
from .costs import CostModel
from .edits import Edit, Insert, apply
from .problem import Problem
from .target import Target, judge


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


class UnionProblem(Problem):
    """A repair problem whose programs are asked over their variants (see the module docstring)."""

    def __init__(self, test: LitmusTest, target: Target, model, options, engine: str, lim, cands):
        super().__init__(test, target, model, options, engine, lim, cands, monotone=False)
        self.cache_tries = 0            # no counterexample is carried between edited programs

    def build_base(self):
        return None                     # (no one event structure: each set is asked over its variants)

    def check(self, edits: tuple[Edit, ...]):
        self.stats.proposals += 1
        try:
            edited = apply(self.test, edits).test
            s = open_session(edited, self.model, self.options, self.engine, self.lim,
                             hang=self.target.hang is not None)
            self.stats.sessions += 1
            failure = judge(s, self.target)
        except LitmusError:
            return "invalid", None, None
        return ("ok", None, None) if failure is None else ("fail", failure, None)


