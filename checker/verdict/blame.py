"""Every minimal set of named axioms that rules a condition out, found MARCO-style: take the
largest subset of axioms not yet explained; if it still forbids the condition, shrink it to a
minimal set (a MUS); if not, grow it to a maximal allowing set. Each set found rules out all its
supersets (or subsets) as seeds, so a typical forbidden outcome takes n+2 solver calls instead of
the 2^n of trying every subset. Same answer as trying subsets by size (_by_size), in the same order (by size,
then by name)."""
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


def blame(eng, cond) -> list[tuple[str, ...]]:
    """Every minimal set of the engine's axioms that rules out `cond` (checker.engines.base.Engine)."""
    if len(eng.axiom_names) > MAX_AXIOMS:
        return _by_size(eng, cond)
    return minimal_sets(eng.axiom_names, lambda axioms: eng.satisfiable(cond, axioms) is None)


def _by_size(eng, cond) -> list[tuple[str, ...]]:
    """The same sets by trying subsets in order of size (no seed search over 2^n subsets)."""
    names = eng.axiom_names
    minimal: list[tuple[str, ...]] = []
    for k in range(1, len(names) + 1):
        for subset in combinations(names, k):
            if any(set(m) <= set(subset) for m in minimal):
                continue
            if eng.satisfiable(cond, subset) is None:
                minimal.append(subset)
    return minimal
