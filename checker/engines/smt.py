"""The Z3 engine: one solver per test over the pure encoding; axioms are guarded by named
assumption literals so the same solver serves the sanity run (no axioms), outcome enumeration
(blocking the observable projection, never whole executions), undefined-behaviour flags, and
blame (minimal sets of axioms that rule an outcome out). unknown/timeouts raise SolverUnknown."""
from __future__ import annotations

import ctypes
import time
from itertools import combinations
from typing import Sequence

import z3

from .. import limits
from ..cat.interp import Model
from .encode import Encoding, encode
from ..errors import SolverUnknown
from ..model.events import EventStructure
from .base import Execution
from ..cat.symbolic import TRUE


TIMEOUT_SLACK_MS = 100
QUICK_MS = 50               # the short first try at a query under fewer than all axioms
_UNKNOWN = object()


class Z3Engine:
    name = "z3"

    def __init__(self, es: EventStructure, model: Model, options=frozenset(), timeout: float | None = None,
                 max_outcomes: int | None = None, rlimit: int | None = None):
        lim = limits.current()
        limits.check_events(len(es.events))
        self.es = es
        self.timeout = lim.timeout if timeout is None else timeout
        self.deadline = time.monotonic() + self.timeout
        self.max_outcomes = lim.outcomes if max_outcomes is None else max_outcomes
        self.rlimit = lim.rlimit if rlimit is None else rlimit
        self.enc: Encoding = encode(es, model, options)
        self._budget: int | None = None     # the timeout (ms) last given to the solver
        self._stronger: dict = {}           # (condition id, axioms) -> (condition, witness or None)
        self.solver = z3.Solver()
        # No relevancy filtering: every atom of this encoding matters, and the enumeration's many
        # small incremental queries run about twice as fast without it (bench/RESULTS.md).
        self.solver.set("relevancy", 0)
        # The older simplex arithmetic solver: mbarrier states are packed integers (div/mod by a
        # constant radix); it halves the 4-stage TMA pipeline and speeds the suites by ~20%
        # (bench/RESULTS.md).
        self.solver.set("arith.solver", 2)
        if self.rlimit:
            self.solver.set("rlimit", self.rlimit)     # per check() call
        self.solver.add(*self.enc.wellformed)
        self.lits = {}
        for i, (name, ax) in enumerate(sorted(self.enc.axioms.items())):
            lit = z3.Bool(f"axiom|{name}")
            self.lits[name] = lit
            self.solver.add(z3.Implies(lit, ax))

    @property
    def axiom_names(self) -> tuple[str, ...]:
        return tuple(sorted(self.lits))

    def _check(self, *assumptions, quick_ms: int | None = None) -> bool | None:
        """sat? With `quick_ms`, a short try: None if it does not answer within that time (or
        the resource limit); otherwise unknown raises SolverUnknown."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._timeout()
        # Setting a solver parameter costs about as much as a small check, so the budget is
        # renewed only when it has shrunk by TIMEOUT_SLACK_MS: a check may overrun the deadline by
        # at most that much.
        budget = max(1, int(left * 1000))
        if quick_ms is not None and quick_ms < budget:
            self.solver.set("timeout", quick_ms)
            self._budget = None
            r = self.solver.check(*assumptions)
            return None if r == z3.unknown else r == z3.sat
        if self._budget is None or self._budget - budget > TIMEOUT_SLACK_MS:
            self.solver.set("timeout", budget)
            self._budget = budget
        r = self.solver.check(*assumptions)
        if r == z3.unknown:
            reason = self.solver.reason_unknown()
            if "timeout" in reason or time.monotonic() >= self.deadline:
                raise self._timeout()
            if self.rlimit and ("canceled" in reason or "resource" in reason):
                raise SolverUnknown(f"Z3 resource limit exceeded (rlimit {self.rlimit} per solver call; "
                                    f"raise it with {limits.flag('rlimit')})")
            raise SolverUnknown(f"Z3 returned unknown ({reason})")
        return r == z3.sat

    def _timeout(self) -> SolverUnknown:
        return SolverUnknown(f"timeout: no answer within {self.timeout:g} s "
                             f"(raise it with {limits.flag('timeout')})")

    def _axioms(self, names: Sequence[str] | None = None):
        names = self.axiom_names if names is None else names
        return [self.lits[n] for n in names]

    def satisfiable(self, cond=None, axioms: Sequence[str] | None = None, forbidden: bool = False
                    ) -> Execution | None:
        """An execution satisfying `cond` (a z3 term over observables) under the given axioms
        (None: all of them; (): well-formedness alone), or None. `forbidden`: the caller knows
        that no execution satisfies `cond` under all the axioms (that query is skipped).

        A query under fewer axioms can be far harder for the solver than under all of them (the
        sanity run on mbarrier tests: without the axioms, values may depend on themselves, and
        refuting such cycles is integer arithmetic). So such a query first gets a short try of
        QUICK_MS; if that does not answer, the stronger queries - all axioms, then all axioms but
        one - go first, since an execution they allow is allowed by fewer axioms too; only if
        none of them has one does the query itself run with the time left (bench/RESULTS.md)."""
        wanted = frozenset(self.lits if axioms is None else axioms)
        if wanted >= set(self.lits):
            return self._satisfiable(cond, None)
        quick = self._satisfiable(cond, wanted, quick_ms=QUICK_MS)
        if quick is not _UNKNOWN:
            return quick
        every = frozenset(self.lits)
        for stronger in ([] if forbidden else [every]) + [every - {a} for a in sorted(every - wanted)]:
            ex = self._satisfiable_cached(cond, stronger)
            if ex is not None:
                return ex
        return self._satisfiable(cond, wanted)

    def _satisfiable_cached(self, cond, axioms: frozenset) -> Execution | None:
        key = (None if cond is None else cond.get_id(), axioms)
        hit = self._stronger.get(key)
        if hit is None or (cond is not None and not hit[0].eq(cond)):
            hit = self._stronger[key] = (cond, self._satisfiable(cond, axioms))
        return hit[1]

    def _satisfiable(self, cond, axioms, quick_ms: int | None = None):
        self.solver.push()
        try:
            if cond is not None:
                self.solver.add(cond)
            sat = self._check(*self._axioms(None if axioms is None else sorted(axioms)), quick_ms=quick_ms)
            if sat is None:
                return _UNKNOWN
            if not sat:
                return None
            return self._execution(self.solver.model(), tuple(self.enc.observables))
        finally:
            self.solver.pop()

    def outcomes(self, observe: Sequence[str]) -> tuple[frozenset, bool]:
        """Every allowed projection onto `observe`; the bool is False if the cap was reached."""
        obs = [self.enc.observables.get(k, z3.IntVal(0)) for k in observe]
        found = set()
        projection = _Projection(obs)
        self.solver.push()
        try:
            while self._check(*self._axioms()):
                vals = projection.values(self.solver.model())
                found.add(tuple(zip(observe, vals)))
                if len(found) >= self.max_outcomes:
                    return frozenset(found), False
                if not obs:
                    break
                # Block this projection (not the execution): the next model differs somewhere.
                self.solver.add(projection.block(vals))
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


class _Projection:
    """The observable terms of an enumeration: their values in a model, and the clause that
    blocks one tuple of values. Enumeration does this once per outcome, so it goes through the
    C API: the z3py wrappers cost about 4x more per term (bench/RESULTS.md). Every AST the C API
    returns is read at once or wrapped (reference-counted) before the next call."""

    def __init__(self, terms: Sequence[z3.ArithRef]):
        self.terms = list(terms)
        self.ctx = terms[0].ctx if terms else z3.main_ctx()
        self.asts = [t.as_ast() for t in self.terms]
        self.numerals: dict[int, z3.IntNumRef] = {}
        self._out = z3.Ast(0)

    def values(self, m: z3.ModelRef) -> tuple[int, ...]:
        cref, out, vals = self.ctx.ref(), self._out, []
        for t, a in zip(self.terms, self.asts):
            if z3.Z3_model_eval(cref, m.model, a, True, ctypes.byref(out)) and z3.Z3_is_numeral_ast(cref, out):
                vals.append(int(z3.Z3_get_numeral_string(cref, out)))
            else:
                vals.append(m.eval(t, True).as_long())
        return tuple(vals)

    def block(self, vals: Sequence[int]) -> z3.BoolRef:
        cref, ctx = self.ctx.ref(), self.ctx
        eqs = [z3.BoolRef(z3.Z3_mk_eq(cref, a, self._numeral(v).as_ast()), ctx) for a, v in zip(self.asts, vals)]
        args = (z3.Ast * len(eqs))(*(e.as_ast() for e in eqs))
        conj = z3.BoolRef(z3.Z3_mk_and(cref, len(eqs), args), ctx)
        return z3.BoolRef(z3.Z3_mk_not(cref, conj.as_ast()), ctx)

    def _numeral(self, v: int) -> z3.IntNumRef:
        n = self.numerals.get(v)
        if n is None:
            n = self.numerals[v] = z3.IntVal(v, self.ctx)
        return n
