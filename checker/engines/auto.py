"""The `auto` engine: brute force over an event structure with few candidate executions, asking
Z3 only what brute force cannot answer exactly.

On a small structure brute force answers in a fraction of the time Z3 needs to build a context,
an encoding and a solver (bench/RESULTS.md). Its answers are exact except where a candidate's read
values depend on themselves (thin air; the arrive chains of mbarrier phases): brute force has no
values to judge such a candidate by. Those questions go to a Z3 engine over the same structure,
built the first time one is asked:

- a consistent candidate whose values depend on themselves (brute force raises Unsupported):
  Z3 answers that question and every later one;
- a question under well-formedness alone (`sane`, `satisfiable(..., axioms=())`) that brute force
  answers "no", where some candidate's values depend on themselves: such a candidate, skipped by
  brute force, may satisfy the condition at a fixed point of its values.

Everything else brute force answers, so both engines give the same verdicts (tests/engines/test_engines.py
compares whole Results on every bundled test).
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..ast import Cond
from ..errors import Unsupported
from .base import EachSane, Engine, Execution, Pair
from .brute import BruteEngine


class AutoEngine(EachSane):
    name = "auto"

    def __init__(self, brute: BruteEngine, exact: Callable[[], Engine]):
        self.brute = brute
        self._make_exact = exact
        self._exact: Engine | None = None
        self._no_values = False     # a consistent candidate has no values: Z3 answers from now on

    @property
    def axiom_names(self) -> tuple[str, ...]:
        return self.brute.axiom_names

    @property
    def flag_names(self) -> tuple[str, ...]:
        return self.brute.flag_names

    def exact(self) -> Engine:
        """The Z3 engine over the same structure (built once)."""
        if self._exact is None:
            self._exact = self._make_exact()
        return self._exact

    def _ask(self, question: str, *args):
        """Brute force's answer, or Z3's once a consistent candidate turned out to have no values."""
        if not self._no_values:
            try:
                return getattr(self.brute, question)(*args)
            except Unsupported:
                self._no_values = True
        return getattr(self.exact(), question)(*args)

    def outcomes(self, observe: Sequence[str]) -> tuple[frozenset, bool]:
        return self._ask("outcomes", observe)

    def flag_witness(self, name: str) -> Execution | None:
        return self._ask("flag_witness", name)

    def flag_least(self, name: str, below: Pair) -> tuple[Pair, Execution] | None:
        return self._ask("flag_least", name, below)

    def satisfiable(self, cond: Cond | None = None, axioms: Sequence[str] | None = None) -> Execution | None:
        ex = self._ask("satisfiable", cond, axioms)
        if ex is None and not self._no_values and self._wellformed_alone(axioms) and self.brute.has_value_cycle():
            return self.exact().satisfiable(cond, axioms)
        return ex

    def sane(self, cond: Cond) -> bool:
        if not self._no_values:
            try:
                if self.brute.sane_by_values(cond):
                    return True
                if not self.brute.has_value_cycle():
                    return False
            except Unsupported:
                self._no_values = True
        return self.exact().sane(cond)

    def _wellformed_alone(self, axioms: Sequence[str] | None) -> bool:
        # (as BruteEngine.satisfiable reads `axioms`: none of the model's axioms, and it has some)
        return axioms is not None and not axioms and bool(self.axiom_names)
