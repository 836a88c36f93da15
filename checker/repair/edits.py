"""Edits of a litmus test, as data, and applying a set of them to the AST.

An `Edit` is one repair step: inserting instructions (a fence, a wait; a barrier inserts one
instruction in each participating thread) or replacing one instruction by a stronger form. It
belongs to a `slot` (at most one edit per slot: one memory fence per place, one strength per
access, one inserted barrier per CTA, warp or cluster) and carries a `rank`: within a slot,
edit a dominates edit b (a's effect includes b's) when a's rank is at least b's in every
component; a rank of None dominates only itself.

Places: point p of a thread is before its original instruction p (p = len(code): at the end).
Instructions inserted at one point are ordered by `phase` (PHASES): completion waits, then the
release side (tcgen05.fence::before_thread_sync, proxy fences, memory fences, the mbarrier_init
fence), then an inserted barrier, then the acquire side (memory fences, proxy fences,
tcgen05.fence::after_thread_sync, wgmma.fence). The acquire-side phases exist only where a barrier
is inserted at the same point (`needs_barrier`); without one they would repeat the release side.

`Delete` removes an instruction (what `ptxmc fix --prune` reports). `apply` builds the edited test (instructions validated through checker.isa.registry) and, per
thread, the provenance of each instruction: ('o', i) for original instruction i, ('e', key, k) for
the k-th instruction of edit `key`. Provenance names events across edited programs
(checker.repair.transfer).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Union

from ..ast import Instr, LitmusTest
from ..errors import SourceLoc
from ..isa.registry import parse_instr

PHASES = {"wait": 0, "tc_before": 1, "proxy_pre": 2, "fence_pre": 3, "mbinit": 4, "barrier": 5,
          "fence_post": 6, "proxy_post": 7, "tc_after": 8, "wgmma_fence": 9}
BARRIER_PHASE = PHASES["barrier"]


@dataclass(frozen=True)
class Insert:
    thread: str
    point: int
    phase: int
    instrs: tuple[Instr, ...]


@dataclass(frozen=True)
class Replace:
    thread: str
    index: int
    instr: Instr


@dataclass(frozen=True)
class Delete:
    thread: str
    index: int


Change = Union[Insert, Replace, Delete]


@dataclass(frozen=True)
class Edit:
    key: str                        # unique within a problem, stable (sorts the output)
    kind: str                       # insert | strengthen | tighten | barrier | restore (--prune) | a hang
                                    # edit's kind (checker.repair.hangs)
    slot: tuple
    rank: tuple[int, ...] | None
    cost: int
    changes: tuple[Change, ...]
    cost_key: str = ""              # the cost-table entry it is priced by
    needs_barrier: tuple[str, int] | None = None    # (thread, point): an acquire-side insertion
    why: str = ""                   # what the edit does, where no counterexample explains it (a hang edit)

    def dominates(self, other: "Edit") -> bool:
        """Does this edit's effect include `other`'s (same slot, rank at least as high)?"""
        if self.slot != other.slot:
            return False
        if self.rank is None or other.rank is None:
            return self.key == other.key
        return len(self.rank) == len(other.rank) and all(a >= b for a, b in zip(self.rank, other.rank))

    @property
    def places(self) -> tuple[tuple[str, int], ...]:
        """The (thread, point) of each insertion."""
        return tuple((c.thread, c.point) for c in self.changes if isinstance(c, Insert))

    @property
    def text(self) -> str:
        """The new instructions, '; '-joined (a barrier: the one it inserts in every thread)."""
        seen = []
        for c in self.changes:
            for i in (c.instrs if isinstance(c, Insert) else (c.instr,) if isinstance(c, Replace) else ()):
                if i.text not in seen:
                    seen.append(i.text)
        return "; ".join(seen)


@dataclass(frozen=True)
class Edited:
    test: LitmusTest
    provenance: dict                # thread name -> tuple of provenance keys, one per instruction


def instr(text: str, test: LitmusTest, line: int | None = None) -> Instr:
    """A new instruction for `test`, parsed and validated (LitmusError if the registry rejects it)."""
    where = SourceLoc(test.path, line or 0, text)
    return parse_instr(text, where, frozenset(m.name for m in test.memory))


def apply(test: LitmusTest, edits: Iterable[Edit]) -> Edited:
    """The test with the edits made (see the module docstring for the order at one point)."""
    inserts: dict[str, dict[int, list]] = {}
    replaces: dict[tuple[str, int], Instr | None] = {}
    for e in edits:
        for c in e.changes:
            if isinstance(c, Delete):
                replaces[(c.thread, c.index)] = None
            elif isinstance(c, Insert):
                inserts.setdefault(c.thread, {}).setdefault(c.point, []).append((c.phase, e.key, c.instrs))
            else:
                if (c.thread, c.index) in replaces:
                    raise ValueError(f"two edits replace {c.thread}:{c.index}")
                replaces[(c.thread, c.index)] = c.instr
    threads, prov = [], {}
    for th in test.threads:
        code, keys, at = [], [], {}
        here = inserts.get(th.name, {})
        for p in range(len(th.code) + 1):
            at[p] = len(code)           # a label of point p stays before what is inserted there
            for _, key, instrs in sorted(here.get(p, ()), key=lambda x: (x[0], x[1])):
                for k, ins in enumerate(instrs):
                    code.append(ins)
                    keys.append(("e", key, k))
            if p < len(th.code):
                new = replaces.get((th.name, p), th.code[p])
                if new is not None:
                    code.append(new)
                    keys.append(("o", p))
        threads.append(replace(th, code=tuple(code), labels=tuple((name, at[k]) for name, k in th.labels)))
        prov[th.name] = tuple(keys)
    return Edited(replace(test, threads=tuple(threads)), prov)
