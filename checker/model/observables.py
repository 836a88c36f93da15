"""Conditions over outcomes: the observable names they mention (a register 'P1:r0', or the
physical location a memory name stands for) and their value on a concrete outcome."""
from __future__ import annotations

from typing import Callable, Mapping

from ..ast import And, Cond, Const, Eq, EqRef, Not, Or, RegRef


def key(ref, names: Mapping[str, str]) -> str:
    """The observable name of a condition atom: 'P1:r0', or the physical location of a memory name."""
    if isinstance(ref, RegRef):
        return f"{ref.thread}:{ref.reg}"
    return names.get(ref.name, ref.name)


def atoms(c: Cond, names: Mapping[str, str]) -> set[str]:
    """The observable names `c` mentions."""
    return {key(r, names) for r in refs(c)}


def refs(c: Cond) -> list:
    """The registers and memory names `c` mentions, in the order it mentions them."""
    if isinstance(c, Eq):
        return [c.lhs]
    if isinstance(c, EqRef):
        return [c.lhs, c.rhs]
    if isinstance(c, Not):
        return refs(c.arg)
    if isinstance(c, (And, Or)):
        return [r for a in c.args for r in refs(a)]
    return []


def holds(c: Cond, outcome: Mapping[str, int], names: Mapping[str, str]) -> bool:
    return predicate(c, names)(outcome)


def predicate(c: Cond, names: Mapping[str, str]) -> Callable[[Mapping[str, int]], bool]:
    """The condition as a test of outcomes, walked once (for a condition asked of many outcomes;
    `holds` asks one)."""
    if isinstance(c, Eq):
        k, v = key(c.lhs, names), c.value
        return lambda outcome: outcome.get(k, 0) == v
    if isinstance(c, EqRef):
        a, b = key(c.lhs, names), key(c.rhs, names)
        return lambda outcome: outcome.get(a, 0) == outcome.get(b, 0)
    if isinstance(c, Not):
        p = predicate(c.arg, names)
        return lambda outcome: not p(outcome)
    if isinstance(c, (And, Or)):
        ps = [predicate(a, names) for a in c.args]
        if isinstance(c, And):
            return lambda outcome: all(p(outcome) for p in ps)
        return lambda outcome: any(p(outcome) for p in ps)
    if isinstance(c, Const):
        return lambda outcome: c.value
    raise TypeError(c)
