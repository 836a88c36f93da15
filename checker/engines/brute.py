"""The brute-force engine: enumerate candidate executions explicitly, as herd does, and evaluate
the same cat model on each with concrete sets. It exists to cross-check the Z3 engine on tests
small enough for it; a test whose candidate count passes `limit` raises LimitExceeded."""
from __future__ import annotations

import time
from functools import lru_cache
from itertools import combinations, product
from math import prod
from typing import Iterator, Sequence

from .. import limits
from ..ast import Cond
from ..model import prune, relations
from ..model.observables import predicate
from ..cat.compiled import compile_checks, compile_consistent
from ..cat.concrete import ConcreteAlgebra
from ..cat.interp import Model, evaluate
from ..cat.stage import stage, static_values
from ..errors import LimitExceeded, Unsupported
from ..model.events import EventStructure, Order
from .base import EachSane, Execution, Pair
from .fixpoint import fixed_points
from ..model.values import evaluate as eval_expr, reads_of

DEFAULT_LIMIT = 50_000


# Number of strict partial orders on k labelled elements (OEIS A001035).
PARTIAL_ORDER_COUNTS = (1, 1, 3, 19, 219, 4231, 130023, 6129859, 431723379, 44511042511)


@lru_cache(maxsize=None)
def partial_orders(k: int) -> tuple[frozenset, ...]:
    """Every strict partial order on range(k), as sets of pairs. Built by adding one element at a
    time: the new element goes above a down-set D and below an up-set U of an order on the others,
    where everything in D already precedes everything in U (transitivity)."""
    if k == 0:
        return (frozenset(),)
    out = []
    new = k - 1
    subsets = [frozenset(c) for n in range(k) for c in combinations(range(new), n)]
    for po in partial_orders(k - 1):
        below = {e: {a for a, b in po if b == e} for e in range(new)}
        above = {e: {b for a, b in po if a == e} for e in range(new)}
        downs = [d for d in subsets if all(below[e] <= d for e in d)]
        ups = [u for u in subsets if all(above[e] <= u for e in u)]
        for d in downs:
            for u in ups:
                if d & u or any((a, b) not in po for a in d for b in u):
                    continue
                out.append(po | {(a, new) for a in d} | {(new, b) for b in u})
    return tuple(out)


def _order_choices(o: Order) -> list[list[frozenset]]:
    per_class = []
    for cls in o.classes:
        first = [e for e in cls if e in o.first]
        free = [e for e in cls if e not in o.first]
        base = frozenset((a, b) for a in first for b in free)
        per_class.append([base | frozenset((free[a], free[b]) for a, b in po)
                          for po in partial_orders(len(free))])
    return per_class


def _order_count(o: Order) -> int:
    n = 1
    for cls in o.classes:
        free = sum(1 for e in cls if e not in o.first)
        n *= PARTIAL_ORDER_COUNTS[free] if free < len(PARTIAL_ORDER_COUNTS) else 10 ** 30
    return n


def candidate_count(es: EventStructure, rf_may: dict | None = None) -> int:
    """The number of candidate executions brute force enumerates: a write for every read to
    read from, times a partial order per class of every order (co, fsc)."""
    rf_may = prune.rf_may(es) if rf_may is None else rf_may
    return prod(len(ws) for ws in rf_may.values()) * prod(_order_count(o) for o in es.orders)


class BruteEngine(EachSane):
    name = "brute"

    def __init__(self, es: EventStructure, model: Model, options=frozenset(), limit: int | None = None,
                 filter: Cond | None = None, max_outcomes: int | None = None):
        self.es, self.model, self.options = es, model, options
        self.filter = filter
        self._passes = None if filter is None else predicate(filter, es.names)
        self.reads = es.reads
        limits.check_events(len(es.events))
        lim = limits.current()
        limit = lim.candidates if limit is None else limit
        self.max_outcomes = lim.outcomes if max_outcomes is None else max_outcomes
        # Within a Session, the test's deadline (its time includes lowering): checked per candidate.
        self.deadline, self.timeout = limits.current_deadline(), lim.timeout
        self.rf_may = prune.rf_may(es)
        n = candidate_count(es, self.rf_may)
        if n > limit:
            raise LimitExceeded(f"brute force: {n} candidate executions (limit {limit}; "
                                f"raise it with {limits.flag('candidates')})")
        self.candidates = n
        # n = 0: some read has no write to read from, so there is no candidate, and the orders are
        # not enumerated (9 writes to one location have 4.5e10 partial orders)
        self.order_choices = {o.name: _order_choices(o) if n else [] for o in es.orders}
        self.alg = ConcreteAlgebra(range(len(es.events)))
        # The static part of the model is evaluated once; each candidate evaluates the rest.
        base = es.base()
        dynamic = {"rf", *relations.VALUE_SETS} | {o.name for o in es.orders}
        staged = stage(model, set(base) | dynamic, dynamic)
        self.residual = staged.residual
        self.base = {**base, **static_values(staged, base, self.alg, options)}
        # ... compiled once for these names and kinds (None: the interpreter evaluates it)
        kinds = {name: kind for name, (kind, _) in self.base.items()}
        kinds.update({"rf": "rel", **dict.fromkeys(relations.VALUE_SETS, "set"), **{o.name: "rel" for o in es.orders}})
        self._checks = compile_checks(self.residual, kinds, self.alg, options)
        self._consistent_checks = compile_consistent(self.residual, kinds, self.alg, options)
        self.axiom_names = tuple(sorted({c.name for c in model.checks if not c.flag}))
        self.flag_names = model.flag_names
        self._consistent: list | None = None
        self._cycle: bool | None = None         # has_value_cycle, once asked
        atoms = {atom for parts in es.compose.values() for atom, _ in parts}
        self._memory_order = [loc for loc in sorted(es.final_writes) if loc not in atoms] + sorted(es.compose)

    def executions(self, with_axioms: bool = True) -> Iterator[tuple[Execution, dict]]:
        """Each consistent candidate with the names of the flags that fire on it, once per choice
        of final writes; without axioms, each well-formed candidate that has values (flags are
        not asked). The consistent ones are computed once and kept: the flags, the outcomes and
        explanations all walk them."""
        if not with_axioms:
            return self._candidates(frozenset())
        if self._consistent is None:
            self._consistent = list(self._candidates(None))
        return iter(self._consistent)

    def satisfiable(self, cond: Cond | None = None, axioms=None) -> Execution | None:
        """The first candidate (in enumeration order) satisfying `cond` under the named axioms."""
        wanted = None if axioms is None or set(axioms) >= set(self.axiom_names) else frozenset(axioms)
        found = self.executions() if wanted is None else self._candidates(wanted)
        test = None if cond is None else predicate(cond, self.es.names)
        for ex, _ in found:
            if test is None or test(dict(ex.outcome)):
                return ex
        if wanted is not None and not wanted and self.has_value_cycle():
            # (well-formedness alone: a candidate whose values depend on themselves is an
            # execution at each fixed point of its values, as for `sane`)
            return next(self._fixed_point_candidates(cond), None)
        return None

    def sane(self, cond: Cond) -> bool:
        """Some execution satisfies `cond` without the axioms: a candidate whose values can be
        computed (consistent ones first, as the Z3 engine asks), else a fixed point of the values
        of a candidate whose values depend on themselves (LB with data dependencies: Z3 finds
        D3's out-of-thin-air 1s, and no fixed point of a cycle that copies values satisfies
        `r0=1 /\\ r1=2`). Unsupported where those fixed points are not of a shape brute force
        solves exactly (checker.engines.fixpoint)."""
        return self.sane_by_values(cond) or (self.has_value_cycle() and
                                             next(self._fixed_point_candidates(cond), None) is not None)

    def sane_by_values(self, cond: Cond) -> bool:
        """Some candidate whose values can be computed (consistent or not) satisfies `cond`."""
        test = predicate(cond, self.es.names)
        return any(test(dict(ex.outcome))
                   for consistent in (True, False) for ex, _ in self.executions(with_axioms=consistent))

    def flag_witness(self, name: str) -> Execution | None:
        return next((ex for ex, fired in self.executions() if name in fired), None)

    def flag_least(self, name: str, below: Pair) -> tuple[Pair, Execution] | None:
        """The least edge before `below` (a set's element e as (e, e)) that flag `name`'s relation
        contains on some consistent execution, with the first such execution; None if there is none
        (the same question the Z3 engine answers: each execution on which the flag fires is
        evaluated)."""
        best: tuple[Pair, Execution] | None = None
        for ex, fired in self.executions():
            if name not in fired:
                continue
            ev = evaluate(self.residual, {**self.base, **ex.base(self.es)}, self.alg, self.options)
            i = next(i for i, (c, _) in enumerate(ev.checks) if c.name == name and c.flag)
            kind, value = ev.check_values[i]
            edges = [e if kind == "rel" else (e, e) for e in value]
            least = min((e for e in edges if e < (below if best is None else best[0])), default=None)
            if least is not None:
                best = least, ex
        return best

    def _candidates(self, axioms: frozenset | None) -> Iterator[tuple[Execution, dict]]:
        """Candidates on which the named axioms hold (None: every axiom)."""
        with_axioms = axioms is None or bool(axioms)
        order_space = self._order_space()
        for rf_choice in product(*(self.rf_may[r] for r in self.reads)):
            self._in_time()
            source = dict(zip(self.reads, rf_choice))
            try:
                values = self._values(source)
            except Unsupported:
                if not with_axioms:
                    continue        # no values to judge by; the sanity check needs none of these
                values = None       # a value cycle: fine only if the model rejects it
            yield from self._executions_of(source, values, axioms, order_space)

    def _order_space(self) -> list[list[frozenset]]:
        """Per order (co, fsc, ...), each choice of it: a union of one partial order per class."""
        return [[frozenset().union(*cls) if cls else frozenset() for cls in product(*self.order_choices[o.name])]
                for o in self.es.orders]

    def _fixed_point_candidates(self, cond: Cond | None) -> Iterator[Execution]:
        """Well-formed candidates (no axioms) whose values depend on themselves, at fixed points
        of their values (checker.engines.fixpoint: enough of them to decide `cond` exactly),
        that satisfy `cond`."""
        test = None if cond is None else predicate(cond, self.es.names)
        order_space = self._order_space()
        for rf_choice in product(*(self.rf_may[r] for r in self.reads)):
            self._in_time()
            source = dict(zip(self.reads, rf_choice))
            try:
                self._values(source)
                continue
            except Unsupported:
                pass
            for values in fixed_points(self.es, source, (cond, self.filter)):
                for ex, _ in self._executions_of(source, values, frozenset(), order_space):
                    if test is None or test(dict(ex.outcome)):
                        yield ex

    def _executions_of(self, source: dict[int, int], values: dict[int, int] | None, axioms: frozenset | None,
                       order_space: list) -> Iterator[tuple[Execution, dict]]:
        """The executions of one choice of rf (`source`) with these read values (None: they
        depend on themselves), under the named axioms (None: every axiom; empty: none)."""
        with_axioms = axioms is None or bool(axioms)
        es, names = self.es, [o.name for o in self.es.orders]
        # an await need not hold where value-dependent undefined behaviour frees it (A7)
        if values is not None:
            def freed(reads) -> bool:
                return any(eval_expr(x, values.__getitem__) != 0 for _, x in es.freeing(reads))

            if any(values[r] != v and not freed((r,)) for r, v in es.awaits):
                return
            if any(eval_expr(e, values.__getitem__) != v and not freed(reads_of(e)) for e, v in es.guards):
                return
        rf = frozenset((w, r) for r, w in source.items())
        # (one base per rf choice, its orders set in place: the model only reads it)
        base = dict(self.base)
        base["rf"] = ("rel", rf)
        for n in relations.VALUE_SETS:
            base[n] = ("set", es.value_set(n, values.__getitem__) if values is not None else frozenset())
        for ords in product(*order_space):
            self._in_time()
            orders = dict(zip(names, ords))
            for n, rel in orders.items():
                base[n] = ("rel", rel)
            if with_axioms:
                if axioms is None and self._consistent_checks:
                    checks = self._consistent_checks(base)      # (None: some axiom fails)
                    if checks is None:
                        continue
                else:
                    checks = self._checks(base) if self._checks else evaluate(self.residual, base, self.alg,
                                                                              self.options).checks
                if not all(c for chk, c in checks if not chk.flag and (axioms is None or chk.name in axioms)):
                    continue
                fired = {chk.name for chk, c in checks if chk.flag and c}
            else:
                fired = set()       # no axioms to check: nothing to evaluate (flags are asked of consistent ones)
            if values is None:
                raise Unsupported("brute force: a consistent execution has values that depend "
                                  "on themselves (thin air)")
            for outcome in self._outcomes(values, orders.get("co", frozenset())):
                if self._passes is None or self._passes(dict(outcome)):
                    yield Execution(rf, orders, dict(values), outcome), fired

    def _in_time(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise limits.timeout_error(self.timeout)

    def has_value_cycle(self) -> bool:
        """Some choice of rf makes values depend on themselves (such a candidate has no values
        brute force can compute: the model's axioms must reject it, see _candidates; without
        the axioms, its fixed points are asked, _fixed_point_candidates)."""
        if self._cycle is None:
            self._cycle = False
            for rf_choice in product(*(self.rf_may[r] for r in self.reads)):
                self._in_time()
                try:
                    self._values(dict(zip(self.reads, rf_choice)))
                except Unsupported:
                    self._cycle = True
                    break
        return self._cycle

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
        """The outcomes of a candidate, one per choice of coherence-last writes: final memory, then
        registers, in the Z3 engine's order (a witness prints the same either way)."""
        es = self.es
        regs = [(f"{t}:{r}", eval_expr(e, values.__getitem__)) for (t, r), e in sorted(es.registers.items())]
        finals = []
        for loc, ws in es.final_writes.items():
            maximal = [w for w in ws if not any((w, w2) in co for w2 in ws)]
            finals.append([(loc, eval_expr(es.write_value[w], values.__getitem__)) for w in maximal])
        for pick in product(*finals):
            mem = dict(pick)
            for root, parts in es.compose.items():      # a location cut into atoms (A15)
                mem[root] = sum(mem.pop(atom) << (8 * pos) for atom, pos in parts)
            yield tuple((k, mem[k]) for k in self._memory_order) + tuple(regs)

    def outcomes(self, observe: Sequence[str]) -> tuple[frozenset, bool]:
        """Every allowed projection onto `observe`; the bool is False if there are at least
        `max_outcomes` (the outcomes limit), and then the first that many in order are listed,
        as the Z3 engine lists them."""
        found = set()
        for ex, _ in self.executions():
            full = dict(ex.outcome)
            found.add(tuple((k, full.get(k, 0)) for k in observe))
        if len(found) >= self.max_outcomes:
            return frozenset(sorted(found)[:self.max_outcomes]), False
        return frozenset(found), True
