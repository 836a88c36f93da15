"""Exact reductions of an emitted skeleton: instructions that provably change no verdict of the
skeleton's checks -- undefined behaviour, the data checks, a hang where every execution blocks,
and so every mutant's -- removed after emission, so that every check runs on fewer events. Each
is argued from axioms/ptx.cat in docs/extract.md ("What is abstracted, and why"), and each
removal is named in the skeleton's notes (its header and the role table).

1. An mbarrier that no instruction but its `mbarrier.init` names (CUTLASS initialises one its
   tile loop uses only from a second tile on): the init and the location go. The init is a weak
   write to a location nothing else accesses; every relation the model builds from it is either
   restricted to its location (rf, co, fr, loc, the flags' pairs) or starts at it, and none of
   those reaches another event.
2. A `fence.mbarrier_init` that orders nothing. It is a release fence restricted (.op_restrict,
   A10: RESTRICT, pfcover = the executing thread's earlier mbarrier.init) to the thread's earlier
   inits: the model's base causality reaches through it only from the fence itself or from an
   init it covers (`pre` in axioms/ptx.cat), and nothing uses an edge that starts at a fence
   (every caller starts at a memory operation or a proxy fence). So it orders nothing in a role
   with no mbarrier.init before it (CUTLASS's warps that do not initialise pass the same fence),
   and nothing more than a later `fence.mbarrier_init` of the same role when only
   `mbarrier.init` (weak writes) lies between them: the later one covers every init the earlier
   one covers, and both release patterns end at the same strong writes (those after the later
   one). `fence.mbarrier_init` is no mutation target (checker.extract.render.mutants), so the
   mutants are the same ones.
"""
from __future__ import annotations

import re

INIT_FENCE = "fence.mbarrier_init"


def reduce(sk) -> None:
    """Apply the reductions above to the checker.extract.skeleton.Skeleton `sk`, in place (unused
    mbarriers first: an init it drops may leave a fence with nothing to order)."""
    _unused_mbarriers(sk)
    _idle_init_fences(sk)


def _unused_mbarriers(sk) -> None:
    named: dict[str, list[tuple[str, int]]] = {}
    for r in sk.roles:
        for i, ln in enumerate(r.lines):
            for name in re.findall(r"\[([\w.]+)[\],]", ln.text):
                named.setdefault(name, []).append((r.name, i))
    checked = " ".join(sk.checks)
    gone: dict[str, set[int]] = {}
    for name, uses in named.items():
        if len(uses) != 1 or name not in sk.memory or re.search(rf"\b{re.escape(name)}\b", checked):
            continue
        role, i = uses[0]
        ln = next(r for r in sk.roles if r.name == role).lines[i]
        if ln.kind != "mb_init" or any(o != name and name in str(d) for o, d in sk.memory.items()):
            continue
        gone.setdefault(role, set()).add(i)
        del sk.memory[name]
        sk.regions = {k: v for k, v in sk.regions.items() if v != name}
        sk.notes.append(f"mbarrier {name} (init L{ln.src_line}) not emitted: no other instruction of the skeleton "
                        "uses it (docs/extract.md#what-is-abstracted-and-why)")
    for r in sk.roles:
        if r.name in gone:
            r.lines = [ln for i, ln in enumerate(r.lines) if i not in gone[r.name]]


def _idle_init_fences(sk) -> None:
    no_init: dict[str, list[int]] = {}
    covered: dict[str, list[int]] = {}
    for r in sk.roles:
        drop = set()
        seen_init = False
        for i, ln in enumerate(r.lines):
            if ln.kind == "mb_init":
                seen_init = True
            if not ln.text.startswith(INIT_FENCE):
                continue
            if not seen_init:
                drop.add(i)
                no_init.setdefault(r.name, []).append(ln.src_line)
                continue
            j = next((j for j in range(i + 1, len(r.lines)) if r.lines[j].kind != "mb_init"), None)
            if j is not None and r.lines[j].text.startswith(INIT_FENCE):
                drop.add(i)
                covered.setdefault(r.name, []).append(ln.src_line)
        if drop:
            r.lines = [ln for i, ln in enumerate(r.lines) if i not in drop]
    for role, lines in no_init.items():
        sk.notes.append(f"{role}: {INIT_FENCE} at {_lines(lines)} not emitted: the role initialises no mbarrier "
                        "before it, so it orders nothing (docs/extract.md#what-is-abstracted-and-why)")
    for role, lines in covered.items():
        sk.notes.append(f"{role}: {INIT_FENCE} at {_lines(lines)} not emitted: the role's next {INIT_FENCE}, with only "
                        "mbarrier.init between, orders the same (docs/extract.md#what-is-abstracted-and-why)")


def _lines(lines: list[int]) -> str:
    return ", ".join(f"L{n}" for n in lines)
