"""PTX instruction text -> `Instr` (syntax only; checker.isa.registry validates it against the
instruction families).

Syntax accepted, one instruction per string:

    [@p | @!p]  opcode{.qualifier}  operand, operand, ...  [== v]  [;]  [// comment]

Qualifiers are split on '.', so compound ones (`shared::cta`, `mbarrier::complete_tx::bytes`,
`tensormap::generic`) stay whole. Operands: registers (`r0`, `%r1` - the '%' is dropped),
integers (decimal, 0x hex, 0b binary, negative), addresses `[x]`, `[x+4]`, `[tmap, {0, 1}]`,
vectors `{r0, r1}`, the sink `_`, negated predicates `!p` (kept as Reg('!p')). Inside `[...]`
an identifier is always a location; outside, an identifier is a register unless it is a
declared location (then it is a `Name`, which no generic instruction accepts). `== v` makes the
instruction an await (docs/format.md#awaits).
"""
from __future__ import annotations

import re
from typing import Iterator

from ..ast import Addr, Float, Imm, Instr, Name, Operand, Reg, Sink, Vec, registers  # noqa: F401 (registers: API)
from ..errors import LitmusError, SourceLoc

# ---------------------------------------------------------------------------------- parsing --

_IDENT = r"[A-Za-z_$][\w$]*"
_INT = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[1-9][0-9]*|0)")
# PTX's exact floating-point forms: 0f + 8 hex digits (.f32 bits), 0d + 16 hex digits (.f64 bits)
_FBITS = re.compile(r"0[fF]([0-9a-fA-F]{8})|0[dD]([0-9a-fA-F]{16})")
FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?[0-9]+[eE][+-]?[0-9]+")
_QUALIFIER = re.compile(r"[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*")




def int_literal(text: str, fail=None, bits: int = 64) -> int | None:
    """A PTX/herd integer literal's value; None if `text` is not one. Leading zeros are refused
    (PTX reads 010 as octal, herd as decimal). A literal of more than `bits` bits (an
    instruction's: 64) is None too, or, given `fail`, reported through it."""
    text = text.strip()
    m = _FBITS.fullmatch(text)
    if m:
        return int(m.group(1) or m.group(2), 16)
    if not _INT.fullmatch(text):
        return None
    lo, hi = -(1 << (bits - 1)), (1 << bits) - 1
    value = int(text, 0) if len(text) <= 3 + bits else None    # (no literal of `bits` bits is longer)
    if value is None or not lo <= value <= hi:
        if fail is not None:
            fail(f"'{text[:30]}{'...' if len(text) > 30 else ''}': integer out of range "
                 + ("(PTX values have at most 64 bits)" if bits == 64 else f"(at most {bits} bits)"))
        return None
    return value


def parse(text: str, where: SourceLoc | None = None, memory=frozenset()) -> Instr:
    """Parse one instruction's text; `memory` holds the declared location names. Errors are
    LitmusErrors. The result is not validated yet (checker.isa.registry.validate does that)."""
    where = where or SourceLoc("<string>", 1, text.strip())

    def fail(msg: str):
        raise LitmusError(msg, where)

    body = text.split("//", 1)[0].strip()
    body = body[:-1].rstrip() if body.endswith(";") else body
    if not body:
        fail("empty instruction")
    await_value = None
    parts = _split_top(body, "==", fail)
    if len(parts) > 2:
        fail("more than one '== v'")
    if len(parts) == 2:
        body, value = parts[0].strip(), parts[1].strip()
        await_value = int_literal(value, fail)
        if await_value is None:
            fail(f"'== {value}': an await needs an integer value")
    predicate = None
    m = re.match(rf"@(!?)%?({_IDENT})\s+", body)
    if body.startswith("@"):
        if m is None:
            fail("malformed guard: write '@p' or '@!p' before the opcode")
        predicate, body = f"@{m.group(1)}{m.group(2)}", body[m.end():]
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)((?:\.[^\s.\[{]*)*)", body)
    if m is None:
        fail("expected an opcode")
    op, quals = m.group(1), tuple(m.group(2).split(".")[1:])
    for q in quals:
        if not _QUALIFIER.fullmatch(q):
            fail(f"malformed qualifier '.{q}'" if q else "empty qualifier ('..')")
    rest = body[m.end():].strip()
    operands = tuple(_operand(s, memory, fail) for s in _split_top(rest, ",", fail)) if rest else ()
    if op == "bra":      # a branch target is a label, never a register or a location
        operands = tuple(Name(o.name) if isinstance(o, Reg) and not o.name.startswith("!") else o for o in operands)
    return Instr(op, quals, operands, text.strip(), where, await_value, predicate)


def _split_top(text: str, sep: str, fail) -> list[str]:
    """Split at `sep` outside brackets and braces."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth < 0:
                fail(f"unbalanced '{c}'")
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    if depth:
        fail("unclosed '[' or '{'")
    parts.append(text[start:])
    return parts


def _operand(s: str, memory, fail) -> Operand:
    s = s.strip()
    if not s:
        fail("empty operand")
    if s == "_":
        return Sink()
    if s[0] == "[":
        return _address(s, fail)
    if "|" in s:
        return _pair(s, memory, fail)
    if s[0] == "{":
        items = s[1:-1].strip()
        if not s.endswith("}") or not items:
            fail(f"malformed vector '{s}'")
        if any(c in items for c in "[]{}"):   # checked before recursing: no nesting, no deep stack
            fail(f"a vector holds registers and integers only: '{s}'")
        ops = tuple(_operand(x, memory, fail) for x in _split_top(items, ",", fail))
        if any(isinstance(o, (Addr, Vec)) for o in ops):
            fail(f"a vector holds registers and integers only: '{s}'")
        return Vec(ops)
    if re.fullmatch(rf"!%?{_IDENT}", s):
        return Reg("!" + s[1:].lstrip("%"))
    value = int_literal(s, fail)
    if value is not None:
        return Imm(value)
    if FLOAT.fullmatch(s):
        return Float(s)
    if _INT.match(s) and re.fullmatch(r"[+-]?[0-9]+", s):
        fail(f"'{s}': write integers without leading zeros (PTX reads them as octal)")
    special = _special(s, fail)
    if special is not None:
        return Reg(special)
    if re.fullmatch(rf"%?{_IDENT}", s):
        name = s.lstrip("%")
        return Name(name) if name in memory and not s.startswith("%") else Reg(name)
    fail(f"malformed operand '{s}'")


def _pair(s: str, memory, fail) -> Vec:
    """`d|p`: the two destinations of elect.sync (a value and a predicate), as a vector of two."""
    parts = s.split("|")
    if len(parts) != 2:
        fail(f"malformed operand '{s}': write d|p")
    return Vec(tuple(_operand(x, memory, fail) for x in parts))


def _special(s: str, fail) -> str | None:
    """A special register ('%tid.x', '%cluster_ctarank'): kept with its '%', so that it is never
    confused with a register the test writes (checker.isa.special gives its value)."""
    from ..isa.special import NAMES, name_is_vector, operand_name
    name = operand_name(s)
    if name is None and s.startswith("%") and s[1:].split(".")[0] in NAMES:
        base = s[1:].split(".")[0]
        fail(f"'{s}': read special register %{base} one component at a time: %{base}.x, %{base}.y or %{base}.z"
             if name_is_vector(base) else f"'{s}': special register %{base} has no components")
    return name


def _address(s: str, fail) -> Addr:
    if not s.endswith("]"):
        fail(f"malformed address '{s}'")
    parts = _split_top(s[1:-1], ",", fail)
    # nvcc prints a negative offset as `+-4` ([%rd1+-4]): that is [%rd1-4]
    m = re.fullmatch(rf"\s*(%?)({_IDENT})\s*(?:(\+\s*-|[+-])\s*(\w+))?\s*", parts[0])
    if m is None:
        fail(f"malformed address '{s}': write [x], [x+4] or [tmap, {{0, 1}}]")
    offset = 0
    if m.group(3):
        offset = int_literal(m.group(4), fail)
        if offset is None:
            fail(f"malformed offset in '{s}'")
        offset = -offset if m.group(3).endswith("-") else offset
    coords: tuple = ()
    if len(parts) > 2:
        fail(f"malformed address '{s}': write [x], [x+4] or [tmap, {{0, 1}}]")
    if len(parts) == 2:
        vec = _operand(parts[1], frozenset(), fail)
        if not isinstance(vec, Vec):
            fail(f"'{s}': the coordinates of a tensor address are a vector {{c0, c1, ...}}")
        coords = vec.items
    return Addr(m.group(2), offset, coords, register=bool(m.group(1)))


def address_bases(instr: Instr) -> Iterator[str]:
    """The location names the instruction addresses, in operand order."""
    for o in instr.operands:
        if isinstance(o, Addr):
            yield o.base


def render(o: Operand) -> str:
    """An operand back as PTX text."""
    if isinstance(o, Reg):
        return o.name
    if isinstance(o, Imm):
        return str(o.value)
    if isinstance(o, Sink):
        return "_"
    if isinstance(o, (Name, Float)):
        return o.name if isinstance(o, Name) else o.text
    if isinstance(o, Vec):
        return "{" + ", ".join(render(i) for i in o.items) + "}"
    off = f"+{o.offset}" if o.offset > 0 else (f"{o.offset}" if o.offset else "")
    coords = ", {" + ", ".join(render(c) for c in o.coords) + "}" if o.coords else ""
    return f"[{o.base}{off}{coords}]"




def render_instr(i: Instr, qualifiers: tuple[str, ...] | None = None) -> str:
    """An instruction back as canonical PTX text (with other `qualifiers` if given): the text a
    mutation or a repair shows for an instruction it builds."""
    quals = i.qualifiers if qualifiers is None else qualifiers
    head = (f"{i.predicate} " if i.predicate else "") + ".".join((i.op,) + tuple(quals))
    ops = ", ".join(render(o) for o in i.operands)
    tail = f" == {i.await_value}" if i.await_value is not None else ""
    return head + (f" {ops}" if ops else "") + tail
