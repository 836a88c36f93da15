"""PTX as nvcc prints it -> the statements of one thread (docs/format.md#ptx-as-nvcc-prints-it).

A thread's `code:` items, or its `ptx: |` block of pasted PTX text, are cut into statements
here before each instruction is parsed (checker.isa.syntax):

- `//` comments and `/* ... */` comments are dropped; tabs between words are one space;
- a statement ends at `;` or at the end of its line (a line ending in ',' continues);
- `{` and `}` that open and close a block (nvcc's inline-asm scopes) are dropped, and each
  statement keeps the chain of blocks it stands in (its labels and .reg declarations are the
  block's: checker.front.scopes renames them); braces inside an instruction (`{r0, r1}` vectors,
  tensor coordinates) are kept;
- `.reg .TYPE %r<N>;` / `.reg .pred P1, P2;` declare registers: checked (the type, the names),
  no events; once a thread declares registers, every `%name` it uses must be declared;
- `.shared .align 8 .u64 NAME;` declares a shared variable: checker.front.litmus matches it with
  the location `memory:` declares in the thread's CTA (no events).

Every statement keeps the line it starts on, so errors name file:line:text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import LitmusError, SourceLoc
from ..isa.table import TYPE_BITS

# PTX ISA, "Fundamental Types" and "Predicates": the types a .reg declaration may give
REG_TYPES = ("pred", "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
             "f16", "f16x2", "bf16", "bf16x2", "f32", "f64")
_DECL_NAME = re.compile(r"(%?[A-Za-z_$][\w$]*)(?:<(\d{1,5})>)?")
_PERCENT = re.compile(r"%([A-Za-z_$][\w$]*)")
_TABS = re.compile(r" *\t[ \t]*")     # nvcc's tabs between an opcode and its operands: one space


@dataclass(frozen=True)
class Statement:
    text: str
    line: int
    scope: tuple[int, ...] = (0,)      # the blocks it stands in, outermost (0) first


def comment(text: str, i: int) -> tuple[int, int] | None:
    """A comment starting at text[i]: (the index after it, the line breaks it spans; a `//`
    comment stops before its line break), (-1, 0) for an unterminated `/*`; None if none starts
    there. Shared with the PTX-module reader (checker.extract.module)."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return (len(text) if j < 0 else j), 0
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return (-1, 0) if j < 0 else (j + 2, text.count("\n", i, j))
    return None


def statements(text: str, first_line: int, path: str = "<string>", first_block: int = 1) -> list[Statement]:
    """The statements of `text`, whose first line is `first_line` of file `path`; the blocks it
    opens are numbered from `first_block`."""
    out: list[Statement] = []
    cur, start, line = [], first_line, first_line
    vec = square = 0
    chain, counter = [0], first_block - 1
    last = ""                           # the current statement's last non-blank character ("": none yet)
    i, n = 0, len(text)

    def where(msg: str):
        raise LitmusError(msg, SourceLoc(path, line, text.splitlines()[line - first_line].strip()
                                         if line - first_line < len(text.splitlines()) else ""))

    def emit():
        nonlocal cur, last
        s = _TABS.sub(" ", "".join(cur)).strip()
        if s:
            out.append(Statement(s, start, tuple(chain)))
        cur, last = [], ""

    while i < n:
        c = text[i]
        skip = comment(text, i)
        if skip is not None:
            if skip[0] < 0:
                where("unterminated '/*' comment")
            i, line = skip[0], line + skip[1]
            continue
        if not last:
            start = line
        if c == "\n":
            if last and not vec and not square and last != ",":
                emit()
            else:
                cur.append(" ")
            line += 1
        elif c == "{" and not last:
            counter += 1
            chain.append(counter)
        elif c == "{":
            vec += 1
            cur.append(c)
        elif c == "}" and vec:
            vec -= 1
            cur.append(c)
        elif c == "}":
            if len(chain) == 1:
                where("unbalanced '}'")
            emit()
            chain.pop()
        elif c == "[":
            square += 1
            cur.append(c)
        elif c == "]":
            square = max(0, square - 1)
            cur.append(c)
        elif c == ";" and not vec and not square:
            emit()
        else:
            cur.append(c)
        if c not in " \t\r\n" and cur and cur[-1] == c:
            last = c
        i += 1
    emit()
    if len(chain) > 1:
        where("unclosed '{' block")
    return out


def declaration(s: Statement, path: str) -> dict[str, str] | None:
    """The registers a `.reg` statement declares ('%r<4>' is %r0..%r3), each as ptxmc names it
    (without its '%') with the spelling it is declared with; None if `s` is not a declaration.
    LitmusError for a malformed one."""
    if not s.text.startswith(".reg"):
        return None
    where = SourceLoc(path, s.line, s.text)
    m = re.fullmatch(r"\.reg\s+((?:\.v[248]\s+)?)\.(\w+)\s+(.+?)\s*;?", s.text)
    if m is None:
        raise LitmusError("malformed declaration: write .reg .TYPE name, name<N>, ...", where)
    if m.group(2) not in REG_TYPES:
        raise LitmusError(f"'.{m.group(2)}' is not a register type (PTX types: "
                          f"{', '.join('.' + t for t in REG_TYPES)})", where)
    names: dict[str, str] = {}
    for item in (x.strip() for x in m.group(3).split(",")):
        d = _DECL_NAME.fullmatch(item)
        if d is None:
            raise LitmusError(f"malformed register name '{item}' in a declaration", where)
        pct = "%" if d.group(1).startswith("%") else ""
        base = d.group(1).lstrip("%")
        for name in ([base] if d.group(2) is None else [f"{base}{k}" for k in range(int(d.group(2)))]):
            names[name] = pct + name
    return names


def declared_bits(s: Statement) -> int | None:
    """The width in bits of each register a (valid) `.reg` statement declares (None: .pred, a
    vector or a type without a width)."""
    m = re.fullmatch(r"\.reg\s+\.(\w+)\s+.+", s.text)
    return TYPE_BITS.get(m.group(1)) if m is not None and m.group(1) != "pred" else None


_SHARED = re.compile(r"(?:\.extern\s+)?\.shared\s+(?:\.align\s+\d+\s+)?(?:\.v([248])\s+)?\.(\w+)\s+"
                     r"([A-Za-z_$][\w$]*)\s*(?:\[\s*(\d*)\s*\])?\s*;?")


def shared_variable(s: Statement, path: str) -> tuple[str, int | None] | None:
    """(name, bytes; None for `.extern` `[]`) of a `.shared` variable declaration, None if `s`
    is not one; LitmusError for a malformed one."""
    if not re.match(r"(?:\.extern\s+)?\.shared\b", s.text):
        return None
    m = _SHARED.fullmatch(s.text)
    if m is None or m.group(2) not in TYPE_BITS or m.group(2) == "pred":
        raise LitmusError("malformed .shared declaration: write .shared {.align N} .TYPE NAME{[COUNT]}",
                          SourceLoc(path, s.line, s.text))
    width = TYPE_BITS[m.group(2)] // 8 * int(m.group(1) or 1)
    count = m.group(4)
    return m.group(3), (None if count == "" else width * int(count or 1))


# what stands outside a kernel's body in a .ptx file: the module's header and the kernel's own
MODULE_DIRECTIVES = frozenset({".version", ".target", ".address_size", ".visible", ".entry", ".func", ".extern",
                               ".weak", ".param", ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm",
                               ".explicitcluster", ".reqnctapercluster", ".maxclusterrank", ".maxnreg", ".global",
                               ".const", ".file"})


def directive(s: Statement, path: str) -> None:
    """Other directives (.loc, .pragma, ...) are refused with what to write instead."""
    if s.text.startswith("."):
        word = s.text.split()[0]
        where = SourceLoc(path, s.line, s.text)
        if word in MODULE_DIRECTIVES:
            raise LitmusError(f"'{word}' belongs to the PTX module or the kernel's declaration, not to a thread's code: "
                              "paste the kernel's body (the lines between its braces); its memory goes under memory: "
                              "and its .param arguments under params: "
                              "(docs/format.md#kernel-arguments-and-shared-variables)", where)
        raise LitmusError(f"directive '{word}' is not accepted in a thread's code: ptxmc takes .reg declarations "
                          "and instructions (declare memory under memory:)", where)


def undeclared(text: str, declared: set[str], special: frozenset[str]) -> str | None:
    """The first %register of an instruction's text that is neither declared nor special."""
    for m in _PERCENT.finditer(text):
        name = m.group(1)
        if name not in declared and name not in special:
            return name
    return None
