"""What the decisions of one thread's path imply about the unknown values they were taken on.

A branch of `ptxmc extract` on an unknown predicate is decided (checker.extract.interp). When
that predicate is an integer comparison of one register against a constant (`setp.eq.s32 %p4,
%r9, 0`), the decision is a fact about the register's value (`%r9 == 0` is true); a later
predicate compared against a constant on the same value (the same register, not written in
between: its write generation; or the same kernel parameter, loaded with the same type, in any
register) is evaluated under the facts where they settle it (the
complement of `setp p|q`, the same or the negated comparison, any comparison once `==` holds),
so that one path never takes both sides of one question."""
from __future__ import annotations

from dataclasses import dataclass

# each comparison as (canonical comparison, whether it is the canonical one's negation)
_CANON = {"eq": ("eq", False), "ne": ("eq", True), "lt": ("lt", False), "ge": ("lt", True),
          "le": ("le", False), "gt": ("le", True), "lo": ("lo", False), "hs": ("lo", True),
          "ls": ("ls", False), "hi": ("ls", True)}
_SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le",
         "lo": "hi", "hi": "lo", "ls": "hs", "hs": "ls"}
_INT = ("s", "u", "b")


@dataclass(frozen=True)
class Atom:
    """`VALUE CMP CONST` on the value register `reg` held at its write generation `gen` (a
    parameter's value: `reg` `parameter KEY:LOADTYPE`, `gen` 0); `typ` the setp's type (`s32`),
    `cmp` canonical (eq, lt, le, lo, ls)."""

    reg: str
    gen: int
    cmp: str
    const: int
    typ: str

    def text(self) -> str:
        name = self.reg.split(":")[0] if self.reg.startswith("parameter ") else "%" + self.reg
        return f"{name} {_SHOW[self.cmp]} {self.const} ({self.typ})"


_SHOW = {"eq": "==", "lt": "<", "le": "<=", "lo": "<", "ls": "<="}


@dataclass(frozen=True)
class Cond:
    """An unknown predicate that is `atom` (`true`) or its negation."""

    atom: Atom
    true: bool = True

    def negated(self) -> "Cond":
        return Cond(self.atom, not self.true)


def comparison(q: tuple, srcs: tuple, vals: tuple) -> Cond | None:
    """The Cond of `setp.CMP.TYPE d, a, b` with one side a register holding an unknown value and the
    other a known integer (`srcs`: which value each operand is, (name, generation), or None);
    None otherwise."""
    if len(q) != 2 or q[0] not in _CANON or not q[1][:1] in _INT or not q[1][1:].isdigit():
        return None
    cmp = q[0]
    if srcs[0] is not None and not isinstance(vals[0], int) and isinstance(vals[1], int):
        src, c = srcs[0], vals[1]
    elif srcs[1] is not None and not isinstance(vals[1], int) and isinstance(vals[0], int):
        src, c, cmp = srcs[1], vals[0], _SWAP[cmp]
    else:
        return None
    bits = int(q[1][1:])
    canon, neg = _CANON[cmp]
    typ = f"b{bits}" if canon == "eq" else q[1]
    return Cond(Atom(src[0], src[1], canon, _norm(c, typ), typ), not neg)


def _norm(c: int, typ: str) -> int:
    bits = int(typ[1:])
    c &= (1 << bits) - 1
    return c - (1 << bits) if typ[0] == "s" and c >> (bits - 1) else c


def implied(cond: Cond, facts: dict) -> tuple[int, int] | None:
    """(the predicate's value, the line of the decision it follows from) where the facts (Atom ->
    (truth, line)) settle it, else None."""
    a = cond.atom
    hit = facts.get(a)
    if hit is not None:
        return int(hit[0] == cond.true), hit[1]
    bits = int(a.typ[1:])
    for f, (truth, line) in facts.items():
        if (f.reg, f.gen, f.cmp) == (a.reg, a.gen, "eq") and truth and int(f.typ[1:]) == bits:
            v = _norm(f.const, a.typ)                  # the value is known: compare it
            r = {"eq": v == a.const, "lt": v < a.const, "le": v <= a.const,
                 "lo": v % (1 << bits) < a.const % (1 << bits),
                 "ls": v % (1 << bits) <= a.const % (1 << bits)}[a.cmp]
            return int(r == cond.true), line
    return None


def record(facts: dict, cond: Cond, value: int, line: int) -> None:
    """The decision that the predicate `cond` is `value`, taken at `line`."""
    facts.setdefault(cond.atom, (bool(value) == cond.true, line))
