"""Annotated cycles: every combination of the selected annotations on one Shape -- an Access per
event, a separator (completion, fence) per program-order edge, a placement level per external
edge -- once each up to the rotations that map the cycle onto itself."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Iterator

from . import placement
from .cycles import Shape
from .vocab import FENCES, SCOPES, TOKEN_SEM, Access, Selection, scope_of


@dataclass(frozen=True)
class Sep:
    """What separates the two accesses of a program-order edge: the completion of the first (an
    asynchronous copy) and a fence."""

    completion: str = "nowait"
    fence: str = "nofence"


@dataclass(frozen=True)
class Variant:
    shape: Shape
    access: tuple[Access, ...]          # per event
    sep: tuple[Sep | None, ...]         # per edge: a Sep for program-order edges, else None
    levels: tuple[str, ...]             # per external edge, in thread order


def access_options(sel: Selection, kind: str) -> list[Access]:
    """The accesses an event of `kind` may be, in vocabulary order."""
    out = []
    for proxy in ("gen", "alias", "async", "tmap"):
        if proxy not in sel.proxy or (proxy == "tmap" and kind == "W"):
            continue
        for tok in sorted(sel.access, key=_strength_order):
            if tok == "weak":
                out.append(Access(proxy))
                continue
            if proxy in ("async", "tmap"):
                continue                  # copies access memory weakly
            sem = TOKEN_SEM[tok.split(".")[0]]
            if (sem == "release" and kind == "R") or (sem == "acquire" and kind == "W"):
                continue
            out.append(Access(proxy, sem, scope_of(tok)))
    return out


def _strength_order(tok: str) -> tuple:
    if tok == "weak":
        return (0, 0, 0)
    sem, scope = tok.split(".")
    return (1, ("rlx", "rel", "acq").index(sem), SCOPES.index(scope))


def variants(shape: Shape, sel: Selection) -> Iterator[Variant]:
    """Every annotated version of `shape`, in a deterministic order, once per symmetry class."""
    ev_opts = [access_options(sel, k) for k in shape.kinds]
    po = shape.po_edges
    ext = shape.ext_edges
    n = len(shape.edges)
    scopes = sel.scopes if sel.scope_mode == "uniform" else (None,)
    for levels in placement.choices(len(ext), sel.placements, sel.placement_mode):
        for si, scope in enumerate(scopes):
            opts = [[a for a in o if _fits(a.scope, scope)] for o in ev_opts]
            for acc in product(*opts):
                if not _locations_ok(shape, acc):
                    continue
                sep_opts = [[s for s in sep_options(sel, acc[i], shape.kinds[i], acc[(i + 1) % n])
                             if _fits(scope_of(s.fence), scope)] for i in po]
                for seps in product(*sep_opts):
                    if scope is not None and si > 0 and not _scoped(acc, seps):
                        continue          # already made under the first scope
                    sep_full: list[Sep | None] = [None] * n
                    for i, s in zip(po, seps):
                        sep_full[i] = s
                    v = Variant(shape, acc, tuple(sep_full), levels)
                    if shape.automorphisms and not _canonical(v):
                        continue
                    yield v


def sep_options(sel: Selection, src: Access, src_kind: str, dst: Access) -> list[Sep]:
    """What may separate `src` (of kind `src_kind`) from the next access `dst` of its thread:
    a completion after a copy (wait_group after a bulk write, an mbarrier wait after a bulk or
    tensor-map read), and a fence (a tensormap acquire only before a tensor-map read)."""
    if src.proxy == "async":
        waits = ["nowait", "wait_group" if src_kind == "W" else "mbar_wait"]
    elif src.proxy == "tmap":
        waits = ["nowait", "mbar_wait"]
    else:
        waits = ["nowait"]
    if len(waits) > 1:
        waits = [w for w in waits if w in sel.completion]
    fences = [f for f in FENCES if f in sel.fence
              and (not f.startswith("fence.tmap.acq") or dst.proxy == "tmap")]
    return [Sep(w, f) for w in waits for f in fences]


def _fits(scope: str | None, uniform: str | None) -> bool:
    return scope is None or uniform is None or scope == uniform


def _scoped(acc, seps) -> bool:
    return any(a.scope for a in acc) or any(scope_of(s.fence) for s in seps)


def _locations_ok(shape: Shape, acc) -> bool:
    """A location read through the tensormap proxy is a tensor map: no alias and no bulk copy of it."""
    tmap = {shape.loc[i] for i, a in enumerate(acc) if a.proxy == "tmap"}
    return not tmap or not any(shape.loc[i] in tmap and a.proxy in ("alias", "async") for i, a in enumerate(acc))


def _code(v: Variant, i: int) -> tuple:
    a, s = v.access[i], v.sep[i]
    return (a.proxy, a.sem, a.scope or "", s.completion if s else "", s.fence if s else "")


def _canonical(v: Variant) -> bool:
    """The least of its rotations by the cycle's automorphisms (so a symmetric cycle's annotated
    versions appear once each)."""
    n = len(v.shape.edges)
    ext = v.shape.ext_edges
    enc = [_code(v, i) for i in range(n)]
    lv = list(v.levels)
    base = (enc, lv)
    for k in v.shape.automorphisms:
        t = sum(1 for i in ext if i < k)          # threads (external edges) skipped by the rotation
        rot = (enc[k:] + enc[:k], lv[t:] + lv[:t])
        if rot < base:
            return False
    return True
