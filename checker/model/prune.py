"""Static pruning of the dynamic relations' may-sets, by well-formedness facts only.

Sound for every cat model: a pruned edge belongs to no well-formed candidate execution, so no
model could accept an execution with it. Both engines use the same may-sets.

- rf: an awaited read (`ld ... == v`) reads only writes that can store v; a write whose value is
  a constant other than v is dropped.
"""
from __future__ import annotations

from .events import EventStructure
from .values import Const


def rf_may(es: EventStructure) -> dict[int, tuple[int, ...]]:
    """read -> the writes it may read from in some well-formed execution."""
    awaited: dict[int, set[int]] = {}
    for r, v in es.awaits:
        awaited.setdefault(r, set()).add(v)
    out = {}
    for r, ws in es.rf_may.items():
        if r in awaited:
            ws = tuple(w for w in ws if not _constant_other_than(es.write_value[w], awaited[r]))
        out[r] = tuple(ws)
    return out


def _constant_other_than(expr, allowed: set[int]) -> bool:
    return isinstance(expr, Const) and any(expr.value != v for v in allowed)
