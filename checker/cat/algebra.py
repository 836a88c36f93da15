"""The operations a cat interpreter needs, abstracted over how relations are represented.

The interpreter (checker.cat.interp) is written once against this protocol; the brute-force
engine evaluates it over concrete frozensets (checker.cat.concrete), the Z3 engine over
symbolic edge tables (checker.cat.symbolic). Values are opaque to the interpreter except for their
kind ('set' or 'rel'), which the interpreter tracks itself.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

Value = Any       # a set value or a relation value of the algebra in use
Constraint = Any  # what a check evaluates to: a bool (concrete) or a Z3 BoolRef (symbolic)


class Algebra(Protocol):
    # constants
    def empty_set(self) -> Value: ...
    def universe(self) -> Value: ...             # `_` : every event
    def empty_rel(self) -> Value: ...            # `0`
    def identity(self) -> Value: ...             # `id`

    # operators valid on sets and on relations (both operands of one kind)
    def union(self, a: Value, b: Value) -> Value: ...
    def inter(self, a: Value, b: Value) -> Value: ...
    def diff(self, a: Value, b: Value) -> Value: ...
    def set_complement(self, s: Value) -> Value: ...   # ~S
    def rel_complement(self, r: Value) -> Value: ...   # ~R (w.r.t. _*_)

    # relations
    def compose(self, a: Value, b: Value) -> Value: ...  # a ; b
    def inverse(self, r: Value) -> Value: ...            # r^-1
    def plus(self, r: Value) -> Value: ...               # r+
    def star(self, r: Value) -> Value: ...               # r*  (includes id on every event)
    def opt(self, r: Value) -> Value: ...                # r?  (r | id)
    def ident(self, s: Value) -> Value: ...              # [S]
    def product(self, s: Value, t: Value) -> Value: ...  # S * T
    def domain(self, r: Value) -> Value: ...
    def range(self, r: Value) -> Value: ...

    # `let rec` : least fixpoint of `step` starting from `start` (a tuple of values)
    def fix(self, step: Callable[[tuple], tuple], start: tuple, label: str) -> tuple: ...

    # checks: the constraint "the check holds" (before any `~` negation, which the interpreter applies
    # with negate())
    def acyclic(self, r: Value, label: str) -> Constraint: ...
    def irreflexive(self, r: Value, label: str) -> Constraint: ...
    def is_empty(self, v: Value, label: str) -> Constraint: ...
    def negate(self, c: Constraint) -> Constraint: ...

    # `label` arguments are stable, human-readable names (the cat name being defined, or
    # "Axiom@line") that a symbolic algebra may use to name fresh variables deterministically.
