"""One edited program: the edited test, its event structure, and a name for every event that
stays the same across edits (so an execution of one edited program can be read in another).

An event's name is ('init', location) for an initial write, else (thread, provenance of its
instruction, ordinal among that instruction's events) with the provenance of checker.repair.edits
(('o', i) for original instruction i, ('e', edit key, k) for an inserted one). A strengthened
instruction keeps its provenance: its events keep their names.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

from ..ast import LitmusTest
from ..isa.registry import lower
from ..model.events import EventStructure
from .edits import Edit, Edited, apply


@dataclass(frozen=True)
class Program:
    edits: frozenset                # the keys of the edits made
    edited: Edited
    es: EventStructure

    @property
    def test(self) -> LitmusTest:
        return self.edited.test

    @cached_property
    def names(self) -> tuple:
        """The name of each event, by eid."""
        out, seen = [], {}
        for e in self.es.events:
            if e.thread is None:
                out.append(("init", e.loc))
                continue
            prov = self.edited.provenance[e.thread][e.index] if e.index >= 0 else ("?", e.index)
            k = seen.get((e.thread, prov), 0)
            seen[(e.thread, prov)] = k + 1
            out.append((e.thread, prov, k))
        return tuple(out)

    @cached_property
    def eid(self) -> dict:
        """Event name -> eid."""
        return {n: i for i, n in enumerate(self.names)}


def build(test: LitmusTest, edits: Iterable[Edit]) -> Program:
    """The program with `edits` made (LitmusError if the edited test does not lower)."""
    edits = tuple(edits)
    edited = apply(test, edits)
    return Program(frozenset(e.key for e in edits), edited, lower(edited.test))
