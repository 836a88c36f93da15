"""Cycles of structural edges: enumeration up to rotation, and what each cycle means for a test
(the `Shape`): threads, locations, the value of every write, what every read must return and
which final values pin coherence, so that the condition implies that the cycle is in the
execution.

Rules (docs/gen.md, "Cycles"):
- a cycle is a sequence of edges, each from the access the previous one reached; external
  communication edges (Rfe, Fre, Coe) change thread, every other edge stays in the thread and
  goes forward in program order; so a cycle with n external edges has n threads;
- the size of a cycle is its number of communication edges (external and internal); between two
  of them there is at most one program-order edge (two in a row compose into one);
- Pod changes location, every other edge keeps it: a cycle with exactly one Pod is impossible, and
  one without program order at all would need a cyclic coherence order;
- values: the accesses between two program-order edges form a run on one location; walking each
  run, writes take the values 1, 2, ... of their location, an Rf target reads its source, an Fr
  source reads the write before its target in the run (the initial 0 when there is none), and a Co
  edge -- or an Fr edge whose source reads an earlier write -- must put its target last in
  coherence: the test's final value of the location says so. A location whose coherence edges
  point to two different writes cannot be observed by its final value alone; such cycles are
  skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

from ..errors import CheckerError
from . import families
from .vocab import EDGE_ORDER, EDGES, Edge

LOCATION_NAMES = ("x", "y", "z", "w", "u", "v", "a", "b", "c", "e", "f", "g", "h", "k", "m", "n", "q")


@dataclass(frozen=True)
class Shape:
    """A structural cycle, rotated so that event 0 starts thread P0; edge i goes from event i to
    event i+1 (mod n)."""

    edges: tuple[Edge, ...]
    family: str
    kinds: tuple[str, ...]                 # per event: 'R' | 'W'
    thread: tuple[int, ...]                # per event
    threads: tuple[tuple[int, ...], ...]   # events of each thread, in program order
    loc: tuple[int, ...]                   # per event: location index (names: LOCATION_NAMES)
    value: tuple[int, ...]                 # per event: the value a write writes (0 for reads)
    reads: tuple[int | None, ...]          # per event: the value a read must return, None if free
    final: tuple[tuple[int, int], ...]     # (location, event whose value must be final)
    automorphisms: tuple[int, ...]         # edge offsets k > 0 rotating the cycle onto itself

    @property
    def cycle(self) -> str:
        return " ".join(e.name for e in self.edges)

    @property
    def n_locations(self) -> int:
        return max(self.loc) + 1

    @property
    def po_edges(self) -> tuple[int, ...]:
        return tuple(i for i, e in enumerate(self.edges) if e.kind == "po")

    @property
    def ext_edges(self) -> tuple[int, ...]:
        return tuple(i for i, e in enumerate(self.edges) if e.ext)


class CycleError(CheckerError):
    """An explicit --cycle that is not a valid cycle (the user's command line), with the reason."""


# ------------------------------------------------------------------------------ enumeration --

def shapes(edge_names: frozenset[str], size: int, max_threads: int) -> Iterator[Shape]:
    """Every valid cycle over `edge_names` with 2..size communication edges and at most
    `max_threads` threads, once each up to rotation, in a deterministic order. Each cycle is
    built once, in its least rotation (threads compared by their edges), and only then analysed."""
    index: dict[tuple[str, int, str], list[tuple[tuple[int, ...], tuple[Edge, ...]]]] = {}
    for code in _thread_codes(edge_names, size - 1):
        index.setdefault((code[0].src, _coms(code), code[-1].dst), []).append((_key(code), code))
    for v in index.values():
        v.sort()
    for n in range(2, max_threads + 1):
        for (start, c, end), codes in sorted(index.items()):
            for key, code in codes:
                yield from _extend([code], [key], c, n, size, index)


def _extend(threads, keys, coms, n, size, index) -> Iterator[Shape]:
    if len(threads) == n:
        if all(keys <= keys[j:] + keys[:j] for j in range(1, n)):
            shape = analyse(tuple(e for t in threads for e in t))
            if shape is not None:
                yield shape
        return
    need = n - len(threads)
    kind, first = threads[-1][-1].dst, threads[0][0].src
    for c in range(1, size - coms - (need - 1) + 1):
        for end in ((first,) if need == 1 else ("R", "W")):
            for key, t in index.get((kind, c, end), ()):
                if key < keys[0]:
                    continue
                threads.append(t)
                keys.append(key)
                yield from _extend(threads, keys, coms + c, n, size, index)
                threads.pop()
                keys.pop()


def _key(code: tuple[Edge, ...]) -> tuple[int, ...]:
    return tuple(EDGE_ORDER[e.name] for e in code)


def _coms(code: tuple[Edge, ...]) -> int:
    return sum(e.com for e in code)


def _thread_codes(edge_names: frozenset[str], max_internal_com: int) -> list[tuple[Edge, ...]]:
    """Every thread: internal edges (no two program-order edges in a row, at most
    `max_internal_com` internal communication edges), then the external edge that leaves it."""
    internal = [EDGES[n] for n in sorted(edge_names, key=EDGE_ORDER.get) if not EDGES[n].ext]
    external = [EDGES[n] for n in sorted(edge_names, key=EDGE_ORDER.get) if EDGES[n].ext]
    out = []

    def grow(path: list[Edge], kind: str, com: int, last_po: bool):
        for x in external:
            if x.src == kind:
                out.append(tuple(path) + (x,))
        for e in internal:
            if e.src != kind or (e.kind == "po" and last_po) or com + e.com > max_internal_com:
                continue
            path.append(e)
            grow(path, e.dst, com + e.com, e.kind == "po")
            path.pop()

    for start in ("W", "R"):
        grow([], start, 0, False)
    return out


# ------------------------------------------------------------------------------- analysis --

def parse_cycle(text: str | tuple[str, ...]) -> Shape:
    """An explicit cycle ('PodWW Rfe PodRR Fre'), in any rotation; CycleError if it is not one."""
    names = text.split() if isinstance(text, str) else list(text)

    def fail(why: str):
        raise CycleError(f"cycle '{' '.join(names)}': {why}")

    for n in names:
        if n not in EDGES:
            fail(f"unknown edge '{n}'")
    edges = tuple(EDGES[n] for n in names)
    for i, e in enumerate(edges):
        nxt = edges[(i + 1) % len(edges)]
        if e.dst != nxt.src:
            fail(f"{e.name} ends at a {_kind(e.dst)} but {nxt.name} starts at a {_kind(nxt.src)}")
    ext = [i for i, e in enumerate(edges) if e.ext]
    if len(ext) < 2:
        fail("a cycle needs at least two external communication edges (Rfe, Fre, Coe)")
    start = (ext[-1] + 1) % len(edges)
    r = _analysis(edges[start:] + edges[:start])
    if isinstance(r, str):
        fail(r)
    return r


def _kind(k: str) -> str:
    return "read" if k == "R" else "write"


def analyse(edges: tuple[Edge, ...]) -> Shape | None:
    """The Shape of a cycle whose edge 0 starts a thread, in its canonical rotation; None if the
    cycle is not valid (parse_cycle says why)."""
    r = _analysis(edges)
    return None if isinstance(r, str) else r


def _analysis(edges: tuple[Edge, ...]) -> Shape | str:
    edges = _canonical_rotation(edges)
    n = len(edges)
    if not any(e.kind == "po" for e in edges):
        return "no program-order edge: the coherence order it needs would be cyclic"
    for i in range(n):
        if edges[i].kind == "po" and edges[i - 1].kind == "po":
            return "two program-order edges in a row (they compose into one)"
    # Locations: every edge but Pod keeps the location.
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i, e in enumerate(edges):
        if e.same_loc:
            parent[find(i)] = find((i + 1) % n)
    for i, e in enumerate(edges):
        if not e.same_loc and find(i) == find((i + 1) % n):
            return "a Pod edge joins accesses that the other edges put on one location"
    names: dict[int, int] = {}
    loc = tuple(names.setdefault(find(i), len(names)) for i in range(n))
    if len(names) > len(LOCATION_NAMES):
        return "too many locations"
    # Threads.
    thread, t = [], 0
    for i, e in enumerate(edges):
        thread.append(t)
        if e.ext:
            t += 1
    threads = tuple(tuple(i for i in range(n) if thread[i] == k) for k in range(t))
    kinds = tuple(e.src for e in edges)
    # Values and read constraints, walking runs (cut at program-order edges).
    start = next(i for i, e in enumerate(edges) if e.kind == "po") + 1
    value = [0] * n
    counters: dict[int, int] = {}
    for j in range(n):
        i = (start + j) % n
        if kinds[i] == "W":
            counters[loc[i]] = counters.get(loc[i], 0) + 1
            value[i] = counters[loc[i]]
    reads: list[int | None] = [None] * n
    last_target: dict[int, int] = {}
    last_write: int | None = None
    for j in range(n):
        i = (start + j) % n
        if edges[i - 1].kind == "po":
            last_write = None
        e = edges[i]
        nxt = (i + 1) % n
        if kinds[i] == "W":
            last_write = i
        if e.kind == "rf":
            reads[nxt] = value[i]
        elif e.kind == "fr":
            got = value[last_write] if last_write is not None else 0
            if reads[i] is not None and reads[i] != got:
                return "a read would have to return two values"
            reads[i] = got
            if last_write is not None and _pin(last_target, loc[i], nxt):
                return "two coherence edges into different writes of one location"
        elif e.kind == "co" and _pin(last_target, loc[i], nxt):
            return "two coherence edges into different writes of one location"
    final = tuple(sorted(last_target.items()))
    family, _ = families.family_of(_skeleton(edges, threads, kinds))
    return Shape(edges, family, kinds, tuple(thread), threads, loc, tuple(value), tuple(reads), final,
                 _automorphisms(edges))


def _pin(targets: dict[int, int], location: int, write: int) -> bool:
    """Record that `write` must be coherence-last; True when another write already must be."""
    return targets.setdefault(location, write) != write


def _skeleton(edges, threads, kinds) -> families.Skeleton:
    return tuple(("".join(kinds[i] for i in evs), edges[evs[-1]].name) for evs in threads)


def _thread_starts(edges: tuple[Edge, ...]) -> list[int]:
    return [i for i in range(len(edges)) if edges[i - 1].ext]


def _canonical_rotation(edges: tuple[Edge, ...]) -> tuple[Edge, ...]:
    """The rotation the test is written in: among rotations starting a thread whose skeleton is
    the family's conventional one (P0 first), the least by edge order."""
    return _canonical_rotation_cached(tuple(e.name for e in edges))


@lru_cache(maxsize=65536)
def _canonical_rotation_cached(names: tuple[str, ...]) -> tuple[Edge, ...]:
    edges = tuple(EDGES[n] for n in names)
    rots = [edges[i:] + edges[:i] for i in _thread_starts(edges)]
    kinds_threads = []
    for r in rots:
        threads, cur = [], []
        for i, e in enumerate(r):
            cur.append(i)
            if e.ext:
                threads.append(tuple(cur))
                cur = []
        kinds_threads.append(_skeleton(r, threads, tuple(e.src for e in r)))
    _, conventional = families.family_of(kinds_threads[0])
    ok = [r for r, sk in zip(rots, kinds_threads) if sk == conventional]
    return min(ok, key=_key)


def _automorphisms(edges: tuple[Edge, ...]) -> tuple[int, ...]:
    names = tuple(e.name for e in edges)
    return tuple(k for k in _thread_starts(edges) if k and names[k:] + names[:k] == names)
