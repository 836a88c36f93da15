"""The brute-force engine: enumerate candidate executions explicitly, as herd does, and evaluate
the same cat model on each with concrete sets. It exists to cross-check the Z3 engine on tests
small enough for it; a test whose candidate count passes `limit` raises LimitExceeded."""
from __future__ import annotations

from functools import lru_cache
from itertools import permutations, product
from math import prod
from typing import Iterator, Sequence

from .cat.concrete import ConcreteAlgebra
from .cat.interp import Model, evaluate
from .errors import LimitExceeded, Unsupported
from .events import EventStructure, Order
from .execution import Execution
from .values import evaluate as eval_expr

DEFAULT_LIMIT = 50_000


@lru_cache(maxsize=None)
def partial_orders(k: int) -> tuple[frozenset, ...]:
    """Every strict partial order on range(k), as sets of pairs."""
    pairs = [(a, b) for a, b in permutations(range(k), 2)]
    out = []
    for bits in product((0, 1), repeat=len(pairs)):
        rel = {p for p, bit in zip(pairs, bits) if bit}
        if any((b, a) in rel for a, b in rel):
            continue
        if any((a, c) not in rel for a, b in rel for b2, c in rel if b == b2 and a != c):
            continue
        out.append(frozenset(rel))
    return tuple(out)


_COUNTS = {0: 1, 1: 1, 2: 3, 3: 19, 4: 219}


def _order_choices(o: Order) -> list[list[frozenset]]:
    per_class = []
    for cls in o.classes:
        first = [e for e in cls if e in o.first]
        free = [e for e in cls if e not in o.first]
        if len(free) > 4:
            raise LimitExceeded(f"brute force: {len(free)} events in one {o.name} class (at most 4)")
        base = frozenset((a, b) for a in first for b in free)
        per_class.append([base | frozenset((free[a], free[b]) for a, b in po)
                          for po in partial_orders(len(free))])
    return per_class


class BruteEngine:
    name = "brute"

    def __init__(self, es: EventStructure, model: Model, options=frozenset(), limit: int = DEFAULT_LIMIT):
        self.es, self.model, self.options = es, model, options
        self.reads = es.reads
        self.order_choices = {o.name: _order_choices(o) for o in es.orders}
        n = prod(len(ws) for ws in es.rf_may.values())
        n *= prod(len(c) for cs in self.order_choices.values() for c in cs)
        if n > limit:
            raise LimitExceeded(f"brute force: {n} candidate executions (limit {limit})")
        self.candidates = n
        self.alg = ConcreteAlgebra(range(len(es.events)))

    def executions(self, with_axioms: bool = True) -> Iterator[tuple[Execution, dict]]:
        """Each consistent candidate (every non-flag check holds, if with_axioms) with the names of
        the flags that fire on it, once per choice of final writes."""
        es = self.es
        names = [o.name for o in es.orders]
        order_space = [list(product(*self.order_choices[n])) for n in names]
        for rf_choice in product(*(es.rf_may[r] for r in self.reads)):
            source = dict(zip(self.reads, rf_choice))
            try:
                values = self._values(source)
            except Unsupported:
                values = None       # a value cycle: fine only if the model rejects it
            if values is not None and any(values[r] != v for r, v in es.awaits):
                continue
            rf = frozenset((w, r) for r, w in source.items())
            for ords in product(*order_space):
                orders = {n: frozenset().union(*cls) if cls else frozenset() for n, cls in zip(names, ords)}
                base = es.base()
                base["rf"] = ("rel", rf)
                for n, rel in orders.items():
                    base[n] = ("rel", rel)
                ev = evaluate(self.model, base, self.alg, self.options)
                if with_axioms and not all(c for chk, c in ev.checks if not chk.flag):
                    continue
                if values is None:
                    raise Unsupported("brute force: a consistent execution has values that depend "
                                      "on themselves (thin air)")
                fired = {chk.name for chk, c in ev.checks if chk.flag and c}
                for outcome in self._outcomes(values, orders.get("co", frozenset())):
                    yield Execution(rf, orders, dict(values), outcome), fired

    def _values(self, source: dict[int, int]) -> dict[int, int]:
        es, values, busy = self.es, {}, set()

        def val(r: int) -> int:
            if r in values:
                return values[r]
            if r in busy:
                raise Unsupported("brute force: values depend on themselves (thin air)")
            busy.add(r)
            values[r] = eval_expr(es.write_value[source[r]], val)
            busy.discard(r)
            return values[r]

        for r in self.reads:
            val(r)
        return values

    def _outcomes(self, values, co) -> Iterator[tuple]:
        es = self.es
        regs = [(f"{t}:{r}", eval_expr(e, values.__getitem__)) for (t, r), e in es.registers.items()]
        finals = []
        for loc, ws in es.final_writes.items():
            maximal = [w for w in ws if not any((w, w2) in co for w2 in ws)]
            finals.append([(loc, eval_expr(es.write_value[w], values.__getitem__)) for w in maximal])
        for pick in product(*finals):
            yield tuple(sorted(regs + list(pick)))

    def outcomes(self, observe: Sequence[str]) -> tuple[frozenset, bool]:
        found = set()
        for ex, _ in self.executions():
            full = dict(ex.outcome)
            found.add(tuple((k, full.get(k, 0)) for k in observe))
        return frozenset(found), True
