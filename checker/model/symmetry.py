"""Symmetries of an event structure, as permutations of the observables they act on.

An automorphism maps events to events so that every set, relation, may-set, order class, value
expression and register of the structure maps onto itself. The model (a cat file over those
sets and relations) cannot tell an execution from its image, so the allowed outcomes are closed
under the induced permutation of observables: an enumeration that has found one outcome has found
its whole orbit (IRIW's interchangeable readers, SB's ring). The engines use this to make one
solver call per orbit instead of one per outcome; every candidate permutation is verified against
the whole structure before it is used, and a structure with features this module does not map
(value-dependent sets, guards, composed locations, aliases) has only the identity.

Candidates come from threads of the same shape (the same kinds and tags in program order): every
transposition of two of them and the cyclic shift of all of them, each with the location
bijection that the events' locations force. Compositions of automorphisms are automorphisms, so
an orbit is the closure of an outcome under the generators."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Mapping, Sequence

from .events import EventStructure
from .values import Bin, Const, Ite, ReadVal

MAX_WORK = 4_000_000     # relation pairs mapped in all while verifying candidates
MAX_CLASS = 24           # threads of one shape beyond which only adjacent swaps and the shift are tried

Perm = tuple[int, ...]


@dataclass(frozen=True)
class Symmetry:
    """Generators of a group of permutations of the observables, each as `src`: the image of an
    outcome o has o[src[j]] at position j."""

    generators: tuple[Perm, ...]

    def orbit(self, vals: Sequence[int], cap: int) -> set[tuple[int, ...]]:
        """The images of one outcome (values by observable position) under the group: the
        closure under the generators, breadth first; it stops once it has more than `cap`."""
        start = tuple(vals)
        seen, todo = {start}, [start]
        while todo and len(seen) <= cap:
            t = todo.pop()
            for src in self.generators:
                img = tuple(t[k] for k in src)
                if img not in seen:
                    seen.add(img)
                    todo.append(img)
        return seen

    def leader(self, vals: Sequence[int]) -> bool:
        """Is `vals` no greater (lexicographically) than its image under every generator? The
        least element of each orbit is; an enumeration may look only among such outcomes."""
        t = tuple(vals)
        return all(t <= tuple(t[k] for k in src) for src in self.generators)


def observable_symmetries(es: EventStructure, observe: Sequence[str]) -> Symmetry | None:
    """Permutations of `observe` (positions) induced by automorphisms of `es` that map the set of
    observed names onto itself, or None if none but the identity was found. A function of the
    structure alone."""
    if es.guards or es.compose or any(es.value_sets.values()) or any(k != v for k, v in es.names.items()):
        return None
    if any(e.vloc != e.loc for e in es.events):
        return None
    pos = {k: i for i, k in enumerate(observe)}
    ident = tuple(range(len(observe)))
    gens = set()
    # Verifying a candidate maps every relation: a budget of pairs mapped keeps a structure with
    # many threads of one shape from costing more than its enumeration saves.
    size = sum(len(r) for r in es.relations.values()) + sum(len(s) for s in es.sets.values()) + 1
    by_thread = _thread_events(es)
    for sigma in islice(_candidates(es, by_thread), max(1, MAX_WORK // size)):
        lam = _verified(es, by_thread, sigma)
        if lam is None:
            continue
        src = _on_observables(sigma, lam, observe, pos)
        if src is not None and src != ident:
            gens.add(src)
    return Symmetry(tuple(sorted(gens))) if gens else None


def _shape(es: EventStructure, events: Sequence[int]) -> tuple:
    return tuple((es.events[e].kind, es.events[e].tags, es.events[e].loc is None) for e in events)


def _thread_events(es: EventStructure) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {t: [] for t in es.thread_names}
    for e in es.events:
        if e.thread is not None:
            out.setdefault(e.thread, []).append(e.eid)
    return out


def _candidates(es: EventStructure, by_thread: Mapping[str, list[int]]):
    """Thread permutations to try, as dicts thread -> thread."""
    classes: dict[tuple, list[str]] = {}
    for t in es.thread_names:
        classes.setdefault(_shape(es, by_thread[t]), []).append(t)
    for ts in classes.values():
        if len(ts) < 2:
            continue
        pairs = ([(a, b) for i, a in enumerate(ts) for b in ts[i + 1:]] if len(ts) <= MAX_CLASS
                 else list(zip(ts, ts[1:])))
        for a, b in pairs:
            yield {a: b, b: a}
        if len(ts) > 2:
            yield {a: b for a, b in zip(ts, ts[1:] + ts[:1])}


def _verified(es: EventStructure, by_thread: Mapping[str, list[int]],
              sigma: Mapping[str, str]) -> dict[str, str] | None:
    """The location map of thread permutation `sigma` if the event map it forces is an
    automorphism of `es`, else None."""
    emap: dict[int, int] = {}
    for t, evs in by_thread.items():
        for a, b in zip(evs, by_thread[sigma.get(t, t)]):
            emap[a] = b
    # the location bijection the threads' memory events force
    lam: dict[str, str] = {}
    for a, b in emap.items():
        la, lb = es.events[a].loc, es.events[b].loc
        if (la is None) != (lb is None) or (la is not None and lam.setdefault(la, lb) != lb):
            return None
    locs = {e.loc for e in es.events if e.loc is not None}
    for loc in locs - set(lam):
        lam[loc] = loc
    if len(set(lam.values())) != len(lam):
        return None
    # the events outside threads (initial writes) follow their location
    init: dict[str, list[int]] = {}
    for e in es.events:
        if e.thread is None:
            if e.loc is None:
                return None
            init.setdefault(e.loc, []).append(e.eid)
    for loc, evs in init.items():
        image = init.get(lam[loc], [])
        if len(evs) != 1 or len(image) != 1:
            return None
        emap[evs[0]] = image[0]
    if sorted(emap.values()) != list(range(len(es.events))) or len(emap) != len(es.events):
        return None
    ev = es.events
    if any(ev[a].kind != ev[b].kind or ev[a].tags != ev[b].tags for a, b in emap.items()):
        return None
    if not _same_values(es, emap, lam, sigma):
        return None
    for s in es.sets.values():
        if {emap[e] for e in s} != s:
            return None
    for rel in es.relations.values():
        if {(emap[a], emap[b]) for a, b in rel} != rel:
            return None
    for r, ws in es.rf_may.items():
        if set(es.rf_may.get(emap[r], ())) != {emap[w] for w in ws}:
            return None
    for o in es.orders:
        if {frozenset(emap[e] for e in c) for c in o.classes} != {frozenset(c) for c in o.classes}:
            return None
        if {emap[e] for e in o.first} != o.first:
            return None
    if {(emap[r], v) for r, v in es.awaits} != set(es.awaits):
        return None
    return lam


def _same_values(es: EventStructure, emap, lam, sigma) -> bool:
    def image(x):
        if isinstance(x, Const):
            return x
        if isinstance(x, ReadVal):
            return ReadVal(emap[x.eid])
        if isinstance(x, Bin):
            return Bin(x.op, image(x.a), image(x.b), x.bits)
        if isinstance(x, Ite):
            return Ite(x.cmp, image(x.a), image(x.b), image(x.then), image(x.other))
        raise TypeError(x)

    try:
        if any(es.write_value.get(emap[w]) != image(v) for w, v in es.write_value.items()):
            return False
        for (t, r), v in es.registers.items():
            if es.registers.get((sigma.get(t, t), r)) != image(v):
                return False
    except TypeError:           # an expression kind this module does not map
        return False
    for loc, ws in es.final_writes.items():
        if {emap[w] for w in ws} != set(es.final_writes.get(lam[loc], ())):
            return False
    for k, f in es.formats.items():
        if es.formats.get(_key_image(k, lam, sigma)) != f:
            return False
    return True


def _key_image(k: str, lam, sigma) -> str:
    if ":" in k:
        t, r = k.split(":", 1)
        return f"{sigma.get(t, t)}:{r}"
    return lam.get(k, k)


def _on_observables(sigma, lam, observe, pos) -> Perm | None:
    src: list[int | None] = [None] * len(observe)
    for i, k in enumerate(observe):          # the value observed at i is observed at j in the image
        j = pos.get(_key_image(k, lam, sigma))
        if j is None or src[j] is not None:
            return None
        src[j] = i
    return tuple(src)
