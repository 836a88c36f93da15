"""Conditions of herd, Dat3M and mixedproxy files -> ptxmc conditions (herd syntax, as
checker.cond reads them), and quantifiers -> expectations.

Accepted:

    cond  := conj (('\\/' | '||') conj)*
    conj  := unary (('/\\' | '&&') unary)*
    unary := ('~' | 'not') unary | '(' cond ')' | 'true' | 'false' | value CMP value
    CMP   := '=' | '==' | '!='
    value := integer | THREAD ':' REG | LOCATION | '[' LOCATION ']' | REG (mixedproxy)

THREAD is `P0` or herd's `0`; the importer's `resolve` turns a reference into a ptxmc one
(renaming threads, finding the thread of a mixedproxy register). One side of a comparison must
be a register or location and the other an integer (`1 = P0:r0` is turned around). Refused,
with the reason: comparisons of two registers or locations (`P0:r1 != P1:r1`), ordering
comparisons (`<`, `<=`, `>`, `>=`), arrays (`x[1]`), and values that are addresses (`P0:r0=x`).

Quantifiers: `~exists C` -> forbidden C; `forall C` -> forbidden ~(C); `exists C` -> no
expectation (herd and Dat3M files state none), the condition is kept for the doc.
"""
from __future__ import annotations

import re
from typing import Callable

from ..ast import And, Cond, Const, Eq, EqRef, MemRef, Not, Or, RegRef
from .. import limits
from ..front.conditions import show
from .model import fail

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<op>/\\|\\/|&&|\|\||!=|==|<>|<=|>=|=|<|>|~|\(|\)|\[|\]|:)
  | (?P<int>-?(?:0[xX][0-9a-fA-F]+|\d+))
  | (?P<ident>%?[A-Za-z_$][\w$.]*)
""", re.VERBOSE)

AND, OR = ("/\\", "&&"), ("\\/", "||")

# resolve(thread or None, name, column) -> RegRef | MemRef; thread None for a bare name
Resolve = Callable[[str | None, str], "RegRef | MemRef"]


def translate(text: str, resolve: Resolve, path: str, line: int, *, loose_not: bool = False) -> Cond:
    """Parse a source condition into ptxmc's condition AST. `loose_not`: the source grammar lets
    `not` take a whole condition (mixedproxy), so `not a == 1 && ...` is refused as ambiguous."""
    return _Parser(text, resolve, path, line, loose_not).parse()


def text_of(cond: Cond) -> str:
    return show(cond)


def registers_in(cond: Cond) -> set[tuple[str, str]]:
    """(thread, register) of every register the condition names."""
    if isinstance(cond, (Eq, EqRef)):
        sides = (cond.lhs, cond.rhs) if isinstance(cond, EqRef) else (cond.lhs,)
        return {(r.thread, r.reg) for r in sides if isinstance(r, RegRef)}
    if isinstance(cond, Not):
        return registers_in(cond.arg)
    if isinstance(cond, (And, Or)):
        return set().union(*(registers_in(a) for a in cond.args))
    return set()


def negate(cond: Cond) -> Cond:
    """~cond, without a double negation."""
    return cond.arg if isinstance(cond, Not) else Not(cond)


def expectation(quantifier: str, cond: Cond) -> tuple[str, str | None]:
    """(kind, ptxmc condition) for a herd quantifier: kind 'forbidden' or 'unstated'."""
    if quantifier == "~exists":
        return "forbidden", show(cond)
    if quantifier == "forall":
        return "forbidden", show(negate(cond))
    return "unstated", show(cond)


class _Parser:
    def __init__(self, text, resolve, path, line, loose_not):
        self.text, self.resolve, self.path, self.line, self.loose_not = text, resolve, path, line, loose_not
        self.toks: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                self.fail(f"unexpected character '{text[pos]}' in the condition")
            if m.lastgroup != "ws":
                self.toks.append((m.lastgroup, m.group()))
            pos = m.end()
        self.i = 0
        self.depth = 0

    def fail(self, msg: str):
        fail(msg, self.path, self.line, self.text)

    def peek(self, k: int = 0) -> tuple[str, str]:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.i += 1
        return tok

    def parse(self) -> Cond:
        if not self.toks:
            self.fail("empty condition")
        c = self.disj()
        if self.peek()[0] != "end":
            self.fail(f"unexpected '{self.peek()[1]}' in the condition")
        return c

    def disj(self) -> Cond:
        args = [self.conj()]
        while self.peek()[1] in OR:
            self.take()
            args.append(self.conj())
        return args[0] if len(args) == 1 else Or(tuple(args))

    def conj(self) -> Cond:
        args = [self.unary()]
        while self.peek()[1] in AND:
            self.take()
            args.append(self.unary())
        return args[0] if len(args) == 1 else And(tuple(args))

    def unary(self) -> Cond:
        kind, tok = self.peek()
        self.depth += 1
        if self.depth > limits.current().nesting:
            self.fail(f"condition nested more than {limits.current().nesting} deep (ptxmc's nesting limit)")
        try:
            if tok in ("~", "not"):
                self.take()
                arg = self.unary()
                if self.loose_not and tok == "not" and self.peek()[1] in AND + OR:
                    self.fail("'not' followed by a comparison and '&&'/'||' is ambiguous in this format: "
                              "write not (...)")
                return Not(arg)
            if tok == "(":
                self.take()
                c = self.disj()
                if self.take()[1] != ")":
                    self.fail("unbalanced '(' in the condition")
                return c
            if kind == "ident" and tok in ("true", "false"):
                self.take()
                return Const(tok == "true")
            return self.compare()
        finally:
            self.depth -= 1

    def value(self):
        """An integer, or a reference (RegRef / MemRef)."""
        kind, tok = self.take()
        if kind == "int":
            return int(tok, 0)
        if tok == "[":
            k, name = self.take()
            if k != "ident" or self.take()[1] != "]":
                self.fail("expected [LOCATION] in the condition")
            return self.resolve(None, name)
        if kind != "ident":
            self.fail(f"expected a register, a location or an integer, found '{tok or 'the end'}'")
        if self.peek()[1] == ":":
            self.take()
            k, reg = self.take()
            if k != "ident":
                self.fail(f"expected a register after '{tok}:'")
            return self.resolve(tok, reg.lstrip("%"))
        if self.peek()[1] == "[":
            self.fail(f"'{tok}[...]': arrays are not ptxmc locations")
        return self.resolve(None, tok)

    def compare(self) -> Cond:
        # a thread number (herd's 0:r0) lexes as an integer: look ahead for ':'
        if self.peek()[0] == "int" and self.peek(1)[1] == ":":
            self.toks[self.i] = ("ident", self.peek()[1])
        lhs = self.value()
        _, op = self.take()
        if op in ("<", "<=", ">", ">="):
            self.fail(f"ordering comparison '{op}': ptxmc conditions compare with = and != only")
        if op not in ("=", "==", "!=", "<>"):
            self.fail(f"expected '=' or '!=' in the condition, found '{op or 'the end'}'")
        if self.peek()[0] == "int" and self.peek(1)[1] == ":":
            self.toks[self.i] = ("ident", self.peek()[1])
        rhs = self.value()
        if isinstance(lhs, int) and not isinstance(rhs, int):
            lhs, rhs = rhs, lhs
        if isinstance(lhs, int):
            self.fail("a comparison of two integers")
        eq = EqRef(lhs, rhs) if not isinstance(rhs, int) else Eq(lhs, rhs)
        return Not(eq) if op in ("!=", "<>") else eq


def herd_resolver(thread_names: dict[str, str], path: str, line: int, text: str) -> Resolve:
    """References of herd/Dat3M conditions: THREAD:REG, THREAD being `P0` or herd's `0` (mapped
    to ptxmc thread names through `thread_names`, keyed `P0`), and locations (ptxmc's loader
    then checks that the test has them)."""
    def resolve(thread, name):
        if thread is None:
            return MemRef(name)
        key = f"P{thread}" if thread.isdigit() else thread
        if key not in thread_names:
            fail(f"'{thread}:{name}': there is no thread {thread}", path, line, text)
        return RegRef(thread_names[key], name)
    return resolve
