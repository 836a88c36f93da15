"""Control flow of imported tests: the one place that decides what labels, jumps, conditional
branches, guards (`@p`) and `setp` become.

ptxmc has no branches yet: a thread is straight-line code (a spin-wait is an await, `== v`).
`straight_line` therefore refuses a thread with any `Control` item, naming the first one, and
the importer reports the test as skipped with that reason. No importer looks at control flow
anywhere else: Dat3M's `LC00:` / `goto` / `beq a, b, L` and herd's `L:` / `bra` / `@p` /
`setp` all arrive here as `Control(kind, text, line, target)`.

When ptxmc gains labels, `bra`, `@p` predicates and `setp` (planned), enabling them is a change
to this function only: translate `label` to `L:`, `jump` to `bra L`, `branch` (a comparison
and a target) to `setp.<cmp>.s32 p, a, b` followed by `@p bra L`, and pass `guard`/`setp`
through, instead of refusing.
"""
from __future__ import annotations

from .model import Code, Control, Item, fail

_WHAT = {
    "label": "a label",
    "jump": "an unconditional jump",
    "branch": "a conditional branch",
    "guard": "a guarded (@p) instruction",
    "setp": "a predicate computation (setp)",
}


def straight_line(body: tuple[Item, ...], path: str) -> tuple[Code, ...]:
    """The thread's instructions, or Unconvertible at the first control-flow construct."""
    for item in body:
        if isinstance(item, Control):
            fail(f"control flow ({_WHAT[item.kind]}): ptxmc has no branches yet, so a thread must be "
                 "straight-line code (a spin-wait can be written as an await, 'ld ... r, [x] == v')",
                 path, item.line, item.text)
    return tuple(body)
