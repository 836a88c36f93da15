"""Thread placement: the level at which the two threads of each external edge meet, and the
positions (gpu/cluster/cta/warp) that realise a choice of levels.

Levels, from the closest: warp (same warp), cta (same CTA, different warps), cluster (same
cluster, different CTAs), gpu (same GPU, different clusters), sys (different GPUs). Around a
cycle, the levels must be those of one tree: the edges that cross a level must not leave only one
way around the cycle across it (the highest level of the cycle occurs at least twice)."""
from __future__ import annotations

from functools import lru_cache
from itertools import product
from typing import Iterator

from .vocab import PLACEMENTS

LEVEL = {name: i for i, name in enumerate(PLACEMENTS)}
# Tiers from the outermost: two threads share the unit of a tier when their level is below it.
_TIERS = (("gpu", LEVEL["sys"]), ("cluster", LEVEL["gpu"]), ("cta", LEVEL["cluster"]), ("warp", LEVEL["cta"]))


def choices(n_threads: int, levels: tuple[str, ...], mode: str) -> Iterator[tuple[str, ...]]:
    """Level per external edge (edge i from thread i to thread i+1), each realisable."""
    if mode == "uniform":
        for lv in levels:
            yield (lv,) * n_threads
        return
    for combo in product(levels, repeat=n_threads):
        if positions(combo) is not None:
            yield combo


@lru_cache(maxsize=4096)
def positions(levels: tuple[str, ...]) -> tuple[tuple[int, int, int, int], ...] | None:
    """(gpu, cluster, cta, warp) of each thread such that threads i and i+1 meet exactly at
    levels[i]; None if no placement does. Units are numbered in order of first appearance."""
    n = len(levels)
    ids: list[list[int]] = []
    for _, bound in _TIERS:
        parent = list(range(n))

        def find(a):
            while parent[a] != a:
                a = parent[a]
            return a

        for i, lv in enumerate(levels):
            if LEVEL[lv] < bound:
                parent[find(i)] = find((i + 1) % n)
        for i, lv in enumerate(levels):
            if LEVEL[lv] >= bound and find(i) == find((i + 1) % n):
                return None
        roots: dict[int, int] = {}
        ids.append([roots.setdefault(find(i), len(roots)) for i in range(n)])
    # Warps are numbered within their CTA.
    warps, seen = [], {}
    for i in range(n):
        key = (ids[2][i], ids[3][i])
        per_cta = seen.setdefault(ids[2][i], {})
        warps.append(per_cta.setdefault(key, len(per_cta)))
    return tuple((ids[0][i], ids[1][i], ids[2][i], warps[i]) for i in range(n))


@lru_cache(maxsize=4096)
def position_text(pos: tuple[int, int, int, int]) -> str:
    gpu, cluster, cta, warp = pos
    return f"gpu{gpu}.cluster{cluster}.cta{cta}" + (f".warp{warp}" if warp else "")


@lru_cache(maxsize=4096)
def cta_text(pos: tuple[int, int, int, int]) -> str:
    gpu, cluster, cta, _ = pos
    return f"gpu{gpu}.cluster{cluster}.cta{cta}"
