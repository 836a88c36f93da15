"""The event structure: the events of a litmus test and its static relations.

This is the narrow seam between PTX and the model. checker.isa.registry.lower builds an EventStructure from a
LitmusTest; the cat interpreter and the engines see only what is here: events with tag sets,
static relations as sets of pairs, the may-sets of the dynamic relations (rf, and the orders
co and fsc), and the value expressions that tie reads, writes, registers and awaits together.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .values import Expr

Pair = tuple[int, int]


@dataclass(frozen=True)
class Event:
    eid: int
    thread: str | None          # None for the initial writes
    kind: str                   # 'R', 'W', 'F', 'B' (barrier), or another non-memory kind
    tags: frozenset[str]
    loc: str | None = None      # physical location (the root cell), for memory events
    vloc: str | None = None     # virtual address (the declared name used), for memory events
    label: str = ""             # human text, e.g. "st.release.gpu [flag], 1"
    index: int = -1             # index of the instruction in its thread's code

    @property
    def is_memory(self) -> bool:
        return self.kind in ("R", "W")


@dataclass(frozen=True)
class Order:
    """A dynamic strict partial order chosen by the engine: for each class, an order on its
    events; `first` events (if any) precede every other event of their class."""

    name: str
    classes: tuple[tuple[int, ...], ...]
    first: frozenset[int] = frozenset()


@dataclass(frozen=True)
class EventStructure:
    events: tuple[Event, ...]
    sets: Mapping[str, frozenset[int]]            # base sets, by glossary name
    relations: Mapping[str, frozenset[Pair]]      # static base relations, by glossary name
    rf_may: Mapping[int, tuple[int, ...]]         # read -> writes it may read from
    orders: tuple[Order, ...]                     # co, fsc, ...
    write_value: Mapping[int, Expr]               # write -> value it stores
    registers: Mapping[tuple[str, str], Expr]     # (thread, reg) -> final value
    awaits: tuple[tuple[int, int], ...]           # (read, value): executions where it returns value
    final_writes: Mapping[str, tuple[int, ...]]   # physical location -> writes to it
    names: Mapping[str, str] = field(default_factory=dict)  # declared memory name -> physical root
    thread_names: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()                   # e.g. "ISCA'22 hypothetical proxy used"
    # (value expression, value): executions where a computed result equals value -- an await on
    # a value that is a function of what a read returned (an mbarrier wait's predicate)
    guards: tuple[tuple[Expr, int], ...] = ()
    # a location cut into atoms (checker.model.memory) -> (atom, byte position) of each: its
    # value is the little-endian composition of its atoms' values
    compose: Mapping[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)

    @property
    def reads(self) -> tuple[int, ...]:
        return tuple(sorted(self.rf_may))

    def event(self, eid: int) -> Event:
        return self.events[eid]

    def base(self) -> dict[str, tuple[str, object]]:
        """Base names for the cat interpreter: (kind, concrete value) of every static set/relation."""
        out: dict[str, tuple[str, object]] = {n: ("set", s) for n, s in self.sets.items()}
        out.update({n: ("rel", r) for n, r in self.relations.items()})
        return out

    def order(self, name: str) -> Order:
        for o in self.orders:
            if o.name == name:
                return o
        raise KeyError(name)
