"""The Z3 engine: one solver per test over the pure encoding; axioms are guarded by named
assumption literals so the same solver serves the sanity run (no axioms), outcome enumeration
(blocking the observable projection, never whole executions), undefined-behaviour flags, and
blame (minimal sets of axioms that rule an outcome out). unknown/timeouts raise SolverUnknown."""
from __future__ import annotations

import time
from itertools import combinations
from typing import Sequence

import z3

from .cat.interp import Model
from .encode import Encoding, encode
from .errors import SolverUnknown
from .events import EventStructure
from .execution import Execution
from .symbolic import TRUE


class Z3Engine:
    name = "z3"

    def __init__(self, es: EventStructure, model: Model, options=frozenset(), timeout: float = 60.0,
                 max_outcomes: int = 4096):
        self.es = es
        self.deadline = time.monotonic() + timeout
        self.max_outcomes = max_outcomes
        self.enc: Encoding = encode(es, model, options)
        self.solver = z3.Solver()
        self.solver.add(*self.enc.wellformed)
        self.lits = {}
        for i, (name, ax) in enumerate(sorted(self.enc.axioms.items())):
            lit = z3.Bool(f"axiom|{name}")
            self.lits[name] = lit
            self.solver.add(z3.Implies(lit, ax))

    @property
    def axiom_names(self) -> tuple[str, ...]:
        return tuple(sorted(self.lits))

    def _check(self, *assumptions) -> bool:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SolverUnknown("timeout")
        self.solver.set("timeout", max(1, int(left * 1000)))
        r = self.solver.check(*assumptions)
        if r == z3.unknown:
            raise SolverUnknown(f"Z3 returned unknown ({self.solver.reason_unknown()})")
        return r == z3.sat

    def _axioms(self, names: Sequence[str] | None = None):
        names = self.axiom_names if names is None else names
        return [self.lits[n] for n in names]

    def satisfiable(self, cond=None, axioms: Sequence[str] | None = None) -> Execution | None:
        """An execution satisfying `cond` (a z3 term over observables) under the given axioms
        (None: all of them; (): well-formedness alone), or None."""
        self.solver.push()
        try:
            if cond is not None:
                self.solver.add(cond)
            if not self._check(*self._axioms(axioms)):
                return None
            return self._execution(self.solver.model(), tuple(self.enc.observables))
        finally:
            self.solver.pop()

    def outcomes(self, observe: Sequence[str]) -> tuple[frozenset, bool]:
        """Every allowed projection onto `observe`; the bool is False if the cap was reached."""
        obs = [self.enc.observables.get(k, z3.IntVal(0)) for k in observe]
        found = set()
        self.solver.push()
        try:
            while self._check(*self._axioms()):
                m = self.solver.model()
                vals = tuple(m.eval(t, model_completion=True).as_long() for t in obs)
                found.add(tuple(zip(observe, vals)))
                if len(found) >= self.max_outcomes:
                    return frozenset(found), False
                if not obs:
                    break
                self.solver.add(z3.Or([t != v for t, v in zip(obs, vals)]))
        finally:
            self.solver.pop()
        return frozenset(found), True

    def flag_witness(self, name: str) -> Execution | None:
        fires, _check = self.enc.flags[name]
        return self.satisfiable(fires)

    def blame(self, cond) -> list[tuple[str, ...]]:
        """Every minimal set of axioms that, with well-formedness, rules out `cond`."""
        names = self.axiom_names
        minimal: list[tuple[str, ...]] = []
        for k in range(1, len(names) + 1):
            for subset in combinations(names, k):
                if any(set(m) <= set(subset) for m in minimal):
                    continue
                if self.satisfiable(cond, subset) is None:
                    minimal.append(subset)
        return minimal

    def _execution(self, m: z3.ModelRef, observe) -> Execution:
        def true(t) -> bool:
            return t is TRUE or z3.is_true(m.eval(t, model_completion=True))

        rf = frozenset(k for k, t in self.enc.rf.items() if true(t))
        orders = {n: frozenset(k for k, t in rel.items() if true(t)) for n, rel in self.enc.orders.items()}
        vals = {r: m.eval(v, model_completion=True).as_long() for r, v in self.enc.values.items()}
        outcome = tuple((k, m.eval(self.enc.observables[k], model_completion=True).as_long()) for k in observe)
        return Execution(rf, orders, vals, outcome)
