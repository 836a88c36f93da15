"""The cat-subset AST: expressions, `let` groups and checks, each carrying its source location.

Locations never take part in equality, so two parses of equivalent text compare equal;
`format_expr` prints an expression back with the fewest parentheses the grammar needs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from ..errors import SourceLoc

UNARY_PREFIX = ("~",)
UNARY_POSTFIX = ("^-1", "+", "*", "?")
UNARY_CALL = ("domain", "range")
BINARY = ("|", ";", "\\", "&", "*")

# Binding strength of each binary operator (higher binds tighter); herd7's order.
PRECEDENCE = {"|": 1, ";": 2, "\\": 3, "&": 4, "*": 5}
_PREFIX_LEVEL = 6
_POSTFIX_LEVEL = 7
_IF_LEVEL = 0


def _loc() -> SourceLoc | None:
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Var:
    """A name: a let-bound value, a base set/relation of the glossary, or the builtin `id`."""

    name: str
    loc: SourceLoc | None = _loc()


@dataclass(frozen=True)
class Zero:
    """`0`, the empty relation."""

    loc: SourceLoc | None = _loc()


@dataclass(frozen=True)
class Universe:
    """`_`, the set of every event."""

    loc: SourceLoc | None = _loc()


@dataclass(frozen=True)
class Unary:
    """`~e`, `e^-1`, `e+`, `e*`, `e?`, `[e]` (op '[]'), `domain(e)`, `range(e)`."""

    op: str
    arg: "Expr"
    loc: SourceLoc | None = _loc()


@dataclass(frozen=True)
class Binary:
    """`a | b`, `a ; b`, `a \\ b`, `a & b`, and the product of sets `a * b`."""

    op: str
    left: "Expr"
    right: "Expr"
    loc: SourceLoc | None = _loc()


@dataclass(frozen=True)
class IfOption:
    """`if "option" then e1 else e2`, decided statically by the options a run enables."""

    option: str
    then: "Expr"
    orelse: "Expr"
    loc: SourceLoc | None = _loc()


Expr = Union[Var, Zero, Universe, Unary, Binary, IfOption]


@dataclass(frozen=True)
class Binding:
    """One `name = expr` of a `let` group."""

    name: str
    expr: Expr
    loc: SourceLoc | None = _loc()


@dataclass(frozen=True)
class Let:
    """`let a = e1 and b = e2`: simultaneous definitions; with `rec`, their least fixpoint."""

    bindings: tuple[Binding, ...]
    rec: bool = False
    loc: SourceLoc | None = _loc()


@dataclass(frozen=True)
class Check:
    """`[flag] [~] acyclic|irreflexive|empty expr [as name]`.

    An ordinary check rejects the executions where it fails. A flag check rejects nothing: where it
    holds (after the `~`, if `negated`), the execution raises the flag, i.e. has undefined behaviour.
    Unnamed checks are called `check@LINE`.
    """

    kind: str
    expr: Expr
    name: str
    negated: bool
    flag: bool
    where: SourceLoc


@dataclass(frozen=True)
class Include:
    """`include "file.cat"`; only seen by the loader, which splices the file's statements in."""

    path: str
    loc: SourceLoc | None = _loc()


Statement = Union[Let, Check]


def format_expr(e: Expr) -> str:
    """The expression as cat text, parenthesised only where precedence requires it."""
    return _fmt(e, _IF_LEVEL)


def _level(e: Expr) -> int:
    if isinstance(e, Binary):
        return PRECEDENCE[e.op]
    if isinstance(e, IfOption):
        return _IF_LEVEL
    if isinstance(e, Unary) and e.op in UNARY_PREFIX:
        return _PREFIX_LEVEL
    return _POSTFIX_LEVEL


def _fmt(e: Expr, context: int) -> str:
    text = _fmt_bare(e)
    return f"({text})" if _level(e) < context else text


def _fmt_bare(e: Expr) -> str:
    match e:
        case Var(name=name):
            return name
        case Zero():
            return "0"
        case Universe():
            return "_"
        case IfOption(option=o, then=t, orelse=f):
            return f'if "{o}" then {_fmt(t, _IF_LEVEL)} else {_fmt(f, _IF_LEVEL)}'
        case Binary(op=op, left=a, right=b):
            lvl = PRECEDENCE[op]
            return f"{_fmt(a, lvl)} {op} {_fmt(b, lvl + 1)}"
        case Unary(op="[]", arg=a):
            return f"[{_fmt(a, _IF_LEVEL)}]"
        case Unary(op=op, arg=a) if op in UNARY_CALL:
            return f"{op}({_fmt(a, _IF_LEVEL)})"
        case Unary(op="~", arg=a):
            return f"~{_fmt(a, _PREFIX_LEVEL)}"
        case Unary(op=op, arg=a):
            return f"{_fmt(a, _POSTFIX_LEVEL)}{op}"
    raise TypeError(f"not a cat expression: {e!r}")
