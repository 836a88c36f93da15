"""What every engine answers, and the execution it answers with.

An engine decides a cat model over one event structure (checker.model.events). Conditions cross
the boundary as the `Cond` AST (checker.ast), judged over the outcome of an execution; each
engine translates them its own way (Z3: terms over its observables; brute force: filtering its
enumerated executions). `Execution` is a concrete candidate (the dynamic choices an engine made),
and `concrete_evaluation` evaluates a model on it (for witnesses, cycles and blame)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from ..ast import And, Cond, Eq, MemRef, RegRef
from ..cat.concrete import ConcreteAlgebra
from ..cat.interp import Model, evaluate
from ..model import relations
from ..model.events import EventStructure

Pair = tuple[int, int]
Outcome = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Execution:
    rf: frozenset[Pair]
    orders: Mapping[str, frozenset[Pair]]
    read_values: Mapping[int, int]
    outcome: tuple[tuple[str, int], ...]

    def base(self, es: EventStructure) -> dict[str, tuple[str, object]]:
        base = es.base()
        base["rf"] = ("rel", self.rf)
        for name, rel in self.orders.items():
            base[name] = ("rel", rel)
        for o in es.orders:
            base.setdefault(o.name, ("rel", frozenset()))
        for name in relations.VALUE_SETS:
            base[name] = ("set", es.value_set(name, self.read_values.__getitem__))
        return base


def concrete_evaluation(es: EventStructure, model: Model, ex: Execution, options=frozenset(),
                        until: str | None = None):
    """The model evaluated on one execution: env of every relation, and each check's truth (with
    `until`: only as far as that name's `let`)."""
    return evaluate(model, ex.base(es), ConcreteAlgebra(range(len(es.events))), options, until)


def outcome_cond(o: Outcome) -> Cond:
    """The condition that an execution has exactly this outcome (register and location values)."""
    def ref(k: str):
        if ":" in k:
            t, r = k.split(":", 1)
            return RegRef(t, r)
        return MemRef(k)
    return And(tuple(Eq(ref(k), v) for k, v in o))


class Engine(Protocol):
    """An engine over one event structure, model and option set."""

    name: str

    @property
    def axiom_names(self) -> tuple[str, ...]: ...

    @property
    def flag_names(self) -> tuple[str, ...]: ...

    def outcomes(self, observe: Sequence[str]) -> tuple[frozenset[Outcome], bool]:
        """Every allowed outcome projected onto `observe`, and whether the list is complete
        (False when the outcome cap stopped it)."""

    def satisfiable(self, cond: Cond | None = None, axioms: Sequence[str] | None = None) -> Execution | None:
        """An execution satisfying `cond` under the named axioms (None: all; (): well-formedness
        alone), or None."""

    def sane(self, cond: Cond) -> bool:
        """Does some execution satisfy `cond` under well-formedness alone?"""

    def sane_each(self, conds: Sequence[Cond]) -> tuple[bool, ...]:
        """`sane` of each condition (an engine may answer several with one query; the default,
        `EachSane`, asks one at a time)."""

    def flag_witness(self, name: str) -> Execution | None:
        """A consistent execution on which the undefined-behaviour flag `name` fires, or None."""

    def flag_least(self, name: str, below: Pair) -> tuple[Pair, Execution] | None:
        """The least edge before `below` (a set's element e as (e, e)) that flag `name`'s relation
        contains on some consistent execution, with such an execution; None if there is none. (The
        undefined-behaviour report names this edge, whichever witness an engine found first.)"""


class EachSane:
    """The default `Engine.sane_each`: one `sane` per condition."""

    def sane_each(self, conds: Sequence[Cond]) -> tuple[bool, ...]:
        return tuple(self.sane(c) for c in conds)
