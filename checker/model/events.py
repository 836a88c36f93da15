"""The event structure: the events of a litmus test and its static relations.

This is the narrow seam between PTX and the model. checker.isa.registry.lower builds an EventStructure from a
LitmusTest; the cat interpreter and the engines see only what is here: events with tag sets,
static relations as sets of pairs, the may-sets of the dynamic relations (rf, and the orders
co and fsc), and the value expressions that tie reads, writes, registers and awaits together.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping

from .relations import OBSERVING_SETS, OWN_RESULT_SETS
from .values import Expr, evaluate, reads_of

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


# The static relations from an event to one that happens after it in every execution (the past
# of a value-dependent undefined behaviour, EventStructure._ub_past).
UB_PAST_ORDERS = ("po", "aso", "tcissue", "syncbar", "kbo")


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
    # observable ("P1:r0", or a sized location) -> (bits of its value, int | f32 | f64); bits None:
    # an exact integer (untyped operations, unsized locations)
    formats: Mapping[str, tuple[int | None, str]] = field(default_factory=dict)
    # value-dependent set (relations.VALUE_SETS) -> (write, expression): the write is a member on
    # an execution where the expression over the values read is non-zero
    value_sets: Mapping[str, tuple[tuple[int, Expr], ...]] = field(default_factory=dict)

    @property
    def reads(self) -> tuple[int, ...]:
        return tuple(sorted(self.rf_may))

    @property
    def observables(self) -> tuple[str, ...]:
        """Every name an outcome gives a value: each register ('P1:r0'), then each location a
        thread writes, a location cut into atoms (`compose`) as itself, never its atoms (an atom
        'x[0:2]' has no value of its own in an outcome)."""
        atoms = {atom for parts in self.compose.values() for atom, _ in parts}
        return tuple(sorted(f"{t}:{r}" for t, r in self.registers) +
                     sorted({loc for loc in self.final_writes if loc not in atoms} | set(self.compose)))

    def event(self, eid: int) -> Event:
        return self.events[eid]

    def base(self) -> dict[str, tuple[str, object]]:
        """Base names for the cat interpreter: (kind, concrete value) of every static set/relation."""
        out: dict[str, tuple[str, object]] = {n: ("set", s) for n, s in self.sets.items()}
        out.update({n: ("rel", r) for n, r in self.relations.items()})
        return out

    def value_set(self, name: str, read_value) -> frozenset[int]:
        """The members of value set `name` when read r returns read_value(r)."""
        return frozenset(e for e, x in self.value_sets.get(name, ()) if evaluate(x, read_value) != 0)

    @cached_property
    def _ub_past(self) -> tuple[tuple[int, Expr, frozenset[int], bool], ...]:
        """Each value-set member (event, expression) with its may-causal past: its predecessors
        by program order and may-reads-from, from the event and the reads its value depends on
        (for an observing set, relations.OBSERVING_SETS, the read of its own read-modify-write
        only: the waits whose absence it observes are no cause of it), and by the static orders that put an event after another in every execution: an
        asynchronous operation after its issue (aso, tcissue: the arrive-on of a commit issued
        after a wait happens only once the thread is past that wait), a barrier generation's
        members after its arrivals (syncbar), a later kernel after an earlier one (kbo). The flag
        says the member is a read whose own result is undefined (relations.OWN_RESULT_SETS)."""
        preds: dict[int, set[int]] = {}
        for name in UB_PAST_ORDERS:
            for a, b in self.relations.get(name, ()):
                preds.setdefault(b, set()).add(a)
        for r, ws in self.rf_may.items():
            preds.setdefault(r, set()).update(ws)
        own = {w: r for r, w in self.relations.get("rmw", ())}
        out = []
        for name in sorted(self.value_sets):
            for e, x in self.value_sets[name]:
                # an observing set's other reads are observers, not causes (relations.OBSERVING_SETS)
                if name in OBSERVING_SETS:
                    causes = [own[e]] if e in own else []
                else:
                    causes = list(reads_of(x))
                seen, todo = set(), [e, *causes]
                while todo:
                    n = todo.pop()
                    if n not in seen:
                        seen.add(n)
                        todo.extend(preds.get(n, ()))
                out.append((e, x, frozenset(seen), name in OWN_RESULT_SETS))
        return tuple(out)

    def freeing(self, reads) -> tuple[tuple[int, Expr], ...]:
        """The value-set members (value-dependent undefined behaviour, such as an mbarrier state
        out of range) that free an execution from an await or guard on `reads`: a program with
        undefined behaviour may do anything after it, so the wait need not hold once the UB has
        happened (A7). Not so for a wait that may be in the UB's causal past (_ub_past): there the
        UB happens only if the wait holds (a thread still spinning never reaches it), so an
        execution that fails that wait is no execution at all. A guard on no read (a control
        path's assumption on registers alone: a constant, a special register) is a fact of the
        path: nothing frees it, so a path that contradicts it has no execution (A7, A18)."""
        rs = set(reads)
        if not rs:
            return ()
        # a guard on the result of a read whose result is itself undefined (a wait on a stale
        # token) is freed by it, whatever else the guard reads (the token's own source)
        return tuple((e, x) for e, x, past, own in self._ub_past if not rs & past or (own and e in rs))

    def order(self, name: str) -> Order:
        for o in self.orders:
            if o.name == name:
                return o
        raise KeyError(name)
