"""Byte-level memory: a location is a range of bytes, an access covers some of them, and two
accesses overlap when they share a byte (PTX ISA 9.4, Memory Consistency Model > Memory
operations: "a memory location" is the byte range an access starts at with the size of its
type; Overlap; Mixed-size data races).

Each physical location is cut into atoms: the maximal byte ranges that no access starts or ends
inside. An access that covers several atoms becomes one event per atom, in one program-order
unit (unordered among themselves, ordered like the instruction with everything else); its value
is the little-endian composition of its atoms' values, and what a write stores in each atom is
the matching slice of its value. The model sees atoms as locations (`loc`, `vloc`), which
accesses' atoms belong together (`sa`), and which accesses cover the same bytes (`srange`:
complete overlap, what moral strength requires).

A location whose accesses all cover the same bytes -- every location of a test that gives no
sizes, offsets or vector accesses -- has one atom and keeps its name: nothing is split, and the
events are those of an abstract cell.

Sizes: a location's size is its declared `size:`, else the largest end of its sized accesses;
a location with neither is unsized (an abstract cell holding one integer), and an access without
a size (an untyped ld/st, an mbarrier or tensor-map operation, a whole matrix) covers the whole
location.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from ..errors import LitmusError, SourceLoc
from .values import Bin, Const, Expr, Ite, ReadVal, binop


@dataclass(frozen=True)
class Span:
    """Bytes [offset, offset + size) of a location (size None: the whole location) that hold the
    bytes [shift, shift + size) of the access's value."""

    offset: int
    size: int | None
    shift: int = 0


@dataclass(frozen=True)
class Access:
    """A memory event's access: the physical location, the name it was accessed through (its
    virtual address), its spans, and where it was written (for errors)."""

    root: str
    vname: str
    spans: tuple[Span, ...]
    where: SourceLoc | None = None


# Objects whose value is abstract: they cannot be cut into bytes.
WHOLE_OBJECTS = {"MB": "an mbarrier object", "TMEM": "a Tensor Memory cell", "TMAP": "a tensor map"}


@dataclass(frozen=True)
class Layout:
    extent: int | None                      # size in bytes; None: an unsized abstract cell
    atoms: tuple[tuple[int, int], ...]      # [lo, hi) byte ranges; ((0, 0),) for an unsized cell

    def covered(self, span: Span) -> list[tuple[int, int]]:
        if self.extent is None or span.size is None:
            return list(self.atoms)
        return [a for a in self.atoms if span.offset <= a[0] and a[1] <= span.offset + span.size]

    def resolved(self, span: Span) -> tuple[int, int]:
        if self.extent is None:
            return (0, 0)
        return (0, self.extent) if span.size is None else (span.offset, span.offset + span.size)


def plan(sizes: Mapping[str, int | None], accesses: Mapping[int, Access],
         tags: Mapping[int, frozenset]) -> dict[str, Layout]:
    """The layout of every accessed location: its extent and atoms. `sizes`: declared sizes."""
    spans: dict[str, list[tuple[int, Span]]] = {}
    for eid, a in accesses.items():
        for s in a.spans:
            spans.setdefault(a.root, []).append((eid, s))
    out = {}
    for root, items in spans.items():
        sized = [(e, s) for e, s in items if s.size is not None]
        declared = sizes.get(root)
        extent = declared if declared is not None else max((s.offset + s.size for _, s in sized), default=None)
        if extent is None:
            out[root] = Layout(None, ((0, 0),))
            continue
        for e, s in sized:
            if s.offset < 0 or s.offset + s.size > extent:
                raise LitmusError(f"the access covers bytes {s.offset} to {s.offset + s.size - 1} of '{root}', "
                                  f"which has {extent} bytes (size: {declared})", accesses[e].where)
        cuts = sorted({0, extent} | {s.offset for _, s in sized} | {s.offset + s.size for _, s in sized})
        atoms = tuple(zip(cuts, cuts[1:]))
        if len(atoms) > 1:
            for e, _ in items:
                whole = [WHOLE_OBJECTS[t] for t in sorted(tags[e]) if t in WHOLE_OBJECTS]
                if whole:
                    raise LitmusError(f"'{root}' is {whole[0]}, but accesses of other sizes or offsets cut it "
                                      f"into {len(atoms)} parts: mixed-size accesses to it are not modelled",
                                      accesses[e].where)
        out[root] = Layout(extent, atoms)
    return out


def atom_name(name: str, layout: Layout, atom: tuple[int, int]) -> str:
    """The name of an atom: the location's own name when it is its only atom, else name[lo:hi]."""
    return name if len(layout.atoms) == 1 else f"{name}[{atom[0]}:{atom[1]}]"


def slice_value(v: Expr, pos: int, nbytes: int) -> Expr:
    """Bytes [pos, pos + nbytes) of a little-endian value."""
    return binop("low", binop("shr", v, Const(8 * pos)), Const(8 * nbytes))


def compose(parts: list[tuple[Expr, int]]) -> Expr:
    """The little-endian value whose bytes at each position are the given parts' values (each
    part fits its bytes, so the sum is their concatenation)."""
    out: Expr | None = None
    for v, pos in parts:
        term = binop("shl", v, Const(8 * pos))
        out = term if out is None else binop("join", out, term)
    return out if out is not None else Const(0)


def substitute(e: Expr, reads: Mapping[int, Expr]) -> Expr:
    """`e` with ReadVal(r) replaced by reads[r] (r not in reads: kept)."""
    if isinstance(e, ReadVal):
        return reads.get(e.eid, e)
    if isinstance(e, Bin):
        a, b = substitute(e.a, reads), substitute(e.b, reads)
        return binop(e.op, a, b, e.bits) if (a, b) != (e.a, e.b) else e
    if isinstance(e, Ite):
        parts = tuple(substitute(x, reads) for x in (e.a, e.b, e.then, e.other))
        return Ite(e.cmp, *parts) if parts != (e.a, e.b, e.then, e.other) else e
    return e


@dataclass
class Split:
    """What splitting produced: new events and, for each old event, its new events with the
    atom each covers and the byte position of that atom in the access's value."""

    events: list
    new_of: dict[int, list[int]]
    atom_of: dict[int, tuple[str, tuple[int, int], int]]     # new eid -> (root, atom, position)


def split_events(events, accesses: Mapping[int, Access], layouts: Mapping[str, Layout]) -> Split:
    """New events, one per atom of each memory access (eids renumbered in order)."""
    out, new_of, atom_of = [], {}, {}
    for ev in events:
        a = accesses.get(ev.eid)
        parts: list[tuple[tuple[int, int], int]] = []
        if a is not None:
            lay = layouts[a.root]
            for s in a.spans:
                for atom in lay.covered(s):
                    pos = s.shift + (atom[0] - s.offset if s.size is not None else atom[0])
                    parts.append((atom, pos))
        if not parts:
            new_of[ev.eid] = [len(out)]
            out.append(replace(ev, eid=len(out)))
            continue
        lay = layouts[a.root]
        mine = []
        for atom, pos in parts:
            eid = len(out)
            loc = atom_name(ev.loc, lay, atom)
            vloc = atom_name(ev.vloc, lay, atom)
            out.append(replace(ev, eid=eid, loc=loc, vloc=vloc))
            atom_of[eid] = (a.root, atom, pos)
            mine.append(eid)
        new_of[ev.eid] = mine
    return Split(out, new_of, atom_of)
