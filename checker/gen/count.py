"""How many tests a selection makes, without making them: per cycle, the annotated versions are
counted with transfer matrices around the cycle (an access per event, the separators a
program-order edge allows between two accesses), once per symmetry class by Burnside's lemma over
the rotations that map the cycle onto itself, and the tensor-map rule (no alias or bulk copy of a
location read through the tensormap proxy) by inclusion-exclusion over locations. The tests
compare it with the enumeration."""
from __future__ import annotations

from functools import lru_cache
from itertools import product
from math import gcd

from . import placement
from .annotate import access_options, sep_options
from .cycles import Shape
from .vocab import Selection, scope_of


def count_shape(shape: Shape, sel: Selection) -> int:
    group = (0,) + shape.automorphisms
    n = len(shape.edges)
    ext = shape.ext_edges
    level_choices = list(placement.choices(len(ext), sel.placements, sel.placement_mode))
    total = 0
    for k in group:
        t = sum(1 for i in ext if i < k)
        fixed_levels = sum(1 for lv in level_choices if lv[t:] + lv[:t] == lv)
        if not fixed_levels:
            continue
        period = gcd(k, n) if k else n      # a rotation fixes exactly the assignments of this period
        if sel.scope_mode == "uniform":
            fix = sum(_fixed(shape, sel, period, s) for s in sel.scopes) \
                - (len(sel.scopes) - 1) * _fixed(shape, sel, period, "")
        else:
            fix = _fixed(shape, sel, period, None)
        total += fixed_levels * fix
    assert total % len(group) == 0
    return total // len(group)


def _fixed(shape: Shape, sel: Selection, period: int, scope: str | None) -> int:
    """Assignments of accesses and separators repeating every `period` edges, with every scoped
    token of scope `scope` ('' : none at all; None: any)."""
    n = len(shape.edges)
    opts = [[a for a in access_options(sel, shape.kinds[p]) if _fits(a.scope, scope)] for p in range(period)]
    # Inclusion-exclusion over the locations that some read could access through the tensormap proxy.
    clash = "tmap" in sel.proxy and ({"alias", "async"} & sel.proxy)
    tmap_locs = sorted({shape.loc[i] for i in range(n) if shape.kinds[i] == "R"}) if clash else []
    total = 0
    for classes in product((0, 1, 2), repeat=len(tmap_locs)):
        cls = dict(zip(tmap_locs, classes))
        allowed = []
        for p in range(period):
            keep = opts[p]
            for m in range(p, n, period):
                c = cls.get(shape.loc[m])
                if c == 0 or c == 2:
                    keep = [a for a in keep if a.proxy != "tmap"]
                if c == 1 or c == 2:
                    keep = [a for a in keep if a.proxy not in ("alias", "async")]
            allowed.append(keep)
        sign = -1 if sum(1 for c in classes if c == 2) % 2 else 1
        total += sign * _trace(shape, sel, allowed, scope)
    return total


def _trace(shape: Shape, sel: Selection, allowed, scope) -> int:
    period = len(allowed)
    if not all(allowed):
        return 0
    # Rows: the access of event 0; vector over the access of the current event.
    size0 = len(allowed[0])
    result = 0
    for start in range(size0):
        vec = {start: 1}
        for p in range(period):
            e = shape.edges[p]
            nxt = allowed[(p + 1) % period]
            new: dict[int, int] = {}
            for ai, w in vec.items():
                a = allowed[p][ai]
                for bi, b in enumerate(nxt):
                    m = _seps(sel, a, shape.kinds[p], b, scope) if e.kind == "po" else 1
                    if m:
                        new[bi] = new.get(bi, 0) + w * m
            vec = new
        result += vec.get(start, 0)
    return result


@lru_cache(maxsize=None)
def _seps(sel: Selection, a, kind: str, b, scope: str | None) -> int:
    return sum(1 for s in sep_options(sel, a, kind, b) if _fits(scope_of(s.fence), scope))


def _fits(s: str | None, scope: str | None) -> bool:
    if scope is None or s is None:
        return True
    return s == scope and scope != ""
