"""A concrete candidate execution (the dynamic choices an engine made) and the concrete
evaluation of a cat model on it: used for witnesses, cycles and blame in explanations."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..cat.concrete import ConcreteAlgebra
from ..cat.interp import Model, evaluate
from ..model.events import EventStructure

Pair = tuple[int, int]


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
        return base


def concrete_evaluation(es: EventStructure, model: Model, ex: Execution, options=frozenset()):
    """The model evaluated on one execution: env of every relation, and each check's truth."""
    return evaluate(model, ex.base(es), ConcreteAlgebra(range(len(es.events))), options)
