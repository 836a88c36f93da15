"""Conditions over outcomes: their observable names, and their value on a concrete outcome or as a
Z3 term over the encoding's observables."""
from __future__ import annotations

from typing import Mapping

from ..ast import And, Cond, Const, Eq, MemRef, Not, Or, RegRef


def key(ref, names: Mapping[str, str]) -> str:
    """The observable name of a condition atom: 'P1:r0', or the physical location of a memory name."""
    if isinstance(ref, RegRef):
        return f"{ref.thread}:{ref.reg}"
    return names.get(ref.name, ref.name)


def atoms(c: Cond, names: Mapping[str, str]) -> set[str]:
    if isinstance(c, Eq):
        return {key(c.lhs, names)}
    if isinstance(c, Not):
        return atoms(c.arg, names)
    if isinstance(c, (And, Or)):
        return set().union(*(atoms(a, names) for a in c.args)) if c.args else set()
    return set()


def holds(c: Cond, outcome: Mapping[str, int], names: Mapping[str, str]) -> bool:
    if isinstance(c, Eq):
        return outcome.get(key(c.lhs, names), 0) == c.value
    if isinstance(c, Not):
        return not holds(c.arg, outcome, names)
    if isinstance(c, And):
        return all(holds(a, outcome, names) for a in c.args)
    if isinstance(c, Or):
        return any(holds(a, outcome, names) for a in c.args)
    if isinstance(c, Const):
        return c.value
    raise TypeError(c)


def to_z3(c: Cond, observables: Mapping[str, object], names: Mapping[str, str]):
    import z3

    if isinstance(c, Eq):
        t = observables.get(key(c.lhs, names))
        return (t if t is not None else z3.IntVal(0)) == c.value
    if isinstance(c, Not):
        return z3.Not(to_z3(c.arg, observables, names))
    if isinstance(c, And):
        return z3.And([to_z3(a, observables, names) for a in c.args])
    if isinstance(c, Or):
        return z3.Or([to_z3(a, observables, names) for a in c.args])
    if isinstance(c, Const):
        return z3.BoolVal(c.value)
    raise TypeError(c)


def show(c: Cond) -> str:
    """herd syntax."""
    if isinstance(c, Eq):
        return f"{c.lhs}={c.value}"
    if isinstance(c, Not):
        return f"~{_paren(c.arg)}"
    if isinstance(c, And):
        return " /\\ ".join(_paren(a) for a in c.args) if c.args else "true"
    if isinstance(c, Or):
        return " \\/ ".join(_paren(a) for a in c.args) if c.args else "false"
    return "true" if c.value else "false"


def _paren(c: Cond) -> str:
    return f"({show(c)})" if isinstance(c, (And, Or)) and len(c.args) > 1 else show(c)
