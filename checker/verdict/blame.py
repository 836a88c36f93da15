"""Every minimal set of named axioms that rules a condition out, found MARCO-style: take the
largest subset of axioms not yet explained; if it still forbids the condition, shrink it to a
minimal set (a MUS); if not, grow it to a maximal allowing set. Each set found rules out all its
supersets (or subsets) as seeds, so a typical forbidden outcome takes n+2 solver calls instead of
the 2^n of trying every subset. Same answer as Z3Engine.blame, in the same order (by size, then
by name)."""
from __future__ import annotations

from itertools import combinations
from typing import Callable, Sequence

MAX_AXIOMS = 14          # beyond this the seed search over subsets is itself too costly


def minimal_sets(names: Sequence[str], forbids: Callable[[tuple[str, ...]], bool]) -> list[tuple[str, ...]]:
    """`forbids(subset)`: is the condition unsatisfiable under these axioms (with well-formedness)?"""
    names = tuple(sorted(names))
    muses: list[frozenset] = []
    msses: list[frozenset] = []

    def seed():
        for k in range(len(names), -1, -1):
            for s in combinations(names, k):
                fs = frozenset(s)
                if not any(m <= fs for m in muses) and not any(fs <= x for x in msses):
                    return fs
        return None

    while (s := seed()) is not None:
        if forbids(tuple(sorted(s))):
            core = set(s)
            for a in sorted(s):
                if forbids(tuple(sorted(core - {a}))):
                    core.discard(a)
            muses.append(frozenset(core))
        else:
            grown = set(s)
            for a in names:
                if a in grown:
                    continue
                bigger = frozenset(grown | {a})
                if any(m <= bigger for m in muses):
                    continue
                if not forbids(tuple(sorted(bigger))):
                    grown.add(a)
            msses.append(frozenset(grown))
    return sorted((tuple(sorted(m)) for m in muses), key=lambda m: (len(m), m))


def blame(eng, term) -> list[tuple[str, ...]]:
    """Every minimal set of the engine's axioms that rules out `term` (a Z3Engine)."""
    if len(eng.axiom_names) > MAX_AXIOMS:
        return eng.blame(term)
    return minimal_sets(eng.axiom_names, lambda axioms: eng.satisfiable(term, axioms) is None)
