"""Conditions over a test's final state, in herd's syntax -> `Cond`.

    cond  := conj ('\\/' conj)*
    conj  := unary ('/\\' unary)*
    unary := '~' unary | '(' cond ')' | 'true' | 'false' | ref ('=' | '==' | '!=') (value | ref)
    ref   := THREAD ':' REG          final value of a register (a '%' before REG is dropped)
           | LOCATION                final value of a memory location
    value := integer (decimal or 0x hex, optionally negative; 0f / 0d + hex digits: a floating-point
             bit pattern) | decimal floating-point number (compared as the .f32 / .f64 bit
             pattern of the register it is compared with)

`ref = ref` compares two final values (`P0:r1=P0:r2`, `P1:r0=x`): equal bit patterns, as the
outcomes list them (EqRef).

`~` binds tightest, then `/\\`, then `\\/`, as in herd; `a != v` is `~(a = v)`. A chain of one
connective becomes one flat And/Or. Errors give the 1-based column and the offending token.
"""
from __future__ import annotations

import re
from typing import Mapping

from ..ast import And, Cond, Const, Eq, EqRef, MemRef, Not, Or, RegRef, value_text
from .. import limits
from ..errors import LitmusError, SourceLoc
from . import yamlsafe
from ..isa.syntax import int_literal

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<op>/\\|\\/|!=|==|=|~|\(|\)|:)
  | (?P<float>-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<int>-?(?:0[xX][0-9a-fA-F]+|0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|\d+))
  | (?P<ident>%?[A-Za-z_$][\w$]*)
""", re.VERBOSE)

_HERD_QUANTIFIERS = ("exists", "forall")


def parse_cond(text: str, where: SourceLoc | None = None) -> Cond:
    """Parse one condition; LitmusError (with the column and token) if it is malformed."""
    return _Parser(text, where or SourceLoc("<string>", 1, text)).parse()


def refs(cond: Cond) -> list[RegRef | MemRef]:
    """Every register and location the condition names, in order of appearance."""
    if isinstance(cond, Eq):
        return [cond.lhs]
    if isinstance(cond, EqRef):
        return [cond.lhs, cond.rhs]
    if isinstance(cond, Not):
        return refs(cond.arg)
    if isinstance(cond, (And, Or)):
        return [r for a in cond.args for r in refs(a)]
    return []


class _Parser:
    def __init__(self, text: str, where: SourceLoc):
        self.text, self.where = text, where
        self.toks: list[tuple[str, str, int]] = []      # (kind, text, column)
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                self.fail(f"unexpected character '{text[pos]}' at column {pos + 1}")
            if m.lastgroup != "ws":
                self.toks.append((m.lastgroup, m.group(), pos + 1))
            pos = m.end()
        self.i = 0
        self.depth = 0

    def fail(self, msg: str):
        raise LitmusError(msg, self.where)

    def peek(self) -> tuple[str, str, int]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "", len(self.text) + 1)

    def take(self) -> tuple[str, str, int]:
        tok = self.peek()
        self.i += 1
        return tok

    def unexpected(self, expected: str):
        kind, tok, col = self.peek()
        found = "the end of the condition" if kind == "end" else f"'{tok}'"
        self.fail(f"expected {expected} at column {col}, found {found}")

    def parse(self) -> Cond:
        if not self.toks:
            self.fail("empty condition")
        kind, tok, col = self.peek()
        if tok in _HERD_QUANTIFIERS:
            self.fail(f"'{tok}' at column {col}: write the bare condition and list it under "
                      "expect: allowed or forbidden")
        cond = self.disj()
        if self.peek()[0] != "end":
            self.unexpected("'/\\', '\\/' or the end of the condition")
        return cond

    def disj(self) -> Cond:
        args = [self.conj()]
        while self.peek()[1] == "\\/":
            self.take()
            args.append(self.conj())
        return args[0] if len(args) == 1 else Or(tuple(args))

    def conj(self) -> Cond:
        args = [self.unary()]
        while self.peek()[1] == "/\\":
            self.take()
            args.append(self.unary())
        return args[0] if len(args) == 1 else And(tuple(args))

    def nest(self, col: int) -> None:
        """One more '(' or '~': bounded, so that no condition can exhaust the stack."""
        self.depth += 1
        if self.depth > limits.current().nesting:
            raise limits.too_large(f"too deeply nested at column {col} ('(', '~' and '!=' count)", "nesting",
                                   self.where)

    def unary(self) -> Cond:
        kind, tok, col = self.peek()
        if tok == "~":
            self.take()
            self.nest(col)
            arg = self.unary()
            self.depth -= 1
            return Not(arg)
        if tok == "(":
            self.take()
            self.nest(col)
            cond = self.disj()
            if self.peek()[1] != ")":
                self.unexpected(f"')' (to close the '(' of column {col})")
            self.take()
            self.depth -= 1
            return cond
        if kind == "ident" and tok in ("true", "false"):
            self.take()
            return Const(tok == "true")
        if kind != "ident":
            self.unexpected("a register (P0:r0), a location, 'true', 'false', '~' or '('")
        return self.compare(self.ref())

    def ref(self) -> RegRef | MemRef:
        _, name, col = self.take()
        if self.peek()[1] != ":":
            if name.startswith("%"):
                self.fail(f"'{name}' at column {col} looks like a register: write THREAD:{name[1:]}")
            return MemRef(name)
        if name.startswith("%"):
            self.fail(f"'{name}' at column {col} is not a thread name")
        self.take()
        kind, reg, _ = self.peek()
        if kind != "ident":
            self.unexpected(f"a register after '{name}:'")
        self.take()
        return RegRef(name, reg.lstrip("%"))

    def compare(self, lhs: RegRef | MemRef) -> Cond:
        _, op, op_col = self.peek()
        if op not in ("=", "==", "!="):
            self.unexpected(f"'=' or '!=' after '{lhs}'")
        self.take()
        if op == "!=":          # it becomes ~(a = v): one more level, as `show` prints it
            self.nest(op_col)
            self.depth -= 1
        kind, tok, col = self.peek()
        if kind == "float":
            self.take()
            eq = Eq(lhs, float(tok))
            return Not(eq) if op == "!=" else eq
        if kind == "ident" and tok not in ("true", "false"):
            same = EqRef(lhs, self.ref())
            return Not(same) if op == "!=" else same
        if kind != "int":
            self.unexpected(f"an integer, a register or a location after '{op}'")
        value = int_literal(tok, lambda msg: self.fail(f"{msg} at column {col}"), yamlsafe.INT_BITS)
        if value is None:
            self.fail(f"'{tok}' at column {col}: write integers without leading zeros")
        self.take()
        eq = Eq(lhs, value)
        return Not(eq) if op == "!=" else eq


def show(c: Cond) -> str:
    """A condition in herd syntax (the canonical text of a parsed condition)."""
    if isinstance(c, Eq):
        return f"{c.lhs}={value_text(c.value)}"
    if isinstance(c, EqRef):
        return f"{c.lhs}={c.rhs}"
    if isinstance(c, Not):
        return f"~{_paren(c.arg)}"
    if isinstance(c, And):
        return " /\\ ".join(_paren(a) for a in c.args) if c.args else "true"
    if isinstance(c, Or):
        return " \\/ ".join(_paren(a) for a in c.args) if c.args else "false"
    return "true" if c.value else "false"


def _paren(c: Cond) -> str:
    return f"({show(c)})" if isinstance(c, (And, Or)) and len(c.args) > 1 else show(c)


def check_refs(cond: Cond, where: SourceLoc | None, registers: Mapping[str, set[str]], locations) -> None:
    """Every register and location `cond` names exists: `registers` maps each thread to the
    registers it may be asked about, `locations` holds the location names. LitmusError with a
    "did you mean" suggestion otherwise (a typo must never be answered)."""
    known = sorted([f"{t}:{r}" for t, rs in registers.items() for r in rs] + list(locations))

    def fail(msg: str, wrong: str):
        import difflib

        close = difflib.get_close_matches(wrong, known, n=1, cutoff=0.6) or \
            [k for k in known if k.lower() == wrong.lower() or k.split(":")[-1] == wrong]
        raise LitmusError(msg + (f"; did you mean {close[0]}?" if close else ""), where)

    for r in refs(cond):
        if isinstance(r, RegRef):
            if r.thread not in registers:
                fail(f"'{r}': there is no thread {r.thread} (threads: {', '.join(registers)})", str(r))
            if r.reg not in registers[r.thread]:
                have = ", ".join(sorted(registers[r.thread])) or "none"
                fail(f"'{r}': {r.thread} has no register {r.reg} (its registers: {have})", str(r))
        elif r.name not in locations:
            fail(f"'{r.name}' is not a location of this test (locations: {', '.join(sorted(locations)) or 'none'})",
                 r.name)
