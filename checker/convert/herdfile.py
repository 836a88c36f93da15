"""herd's litmus file layout, shared by the herd and Dat3M importers: a file split into its
sections, each piece with its 1-based line.

    ARCH NAME                          PTX MP+rel+acq   (or GPU_PTX, herd's own GPU dialect)
    "doc string" ...                   optional, possibly several (Dat3M)
    key=value ...                      optional metadata lines (herd's Hash=, Com=, ...)
    { init; init; ... }                locations, registers, aliases (read by the importer)
     P0 ... | P1 ... ;                 the thread header: one cell per thread
     instr | instr ;                   one row per line, a cell per thread (cells may be empty)
    locations [x; P0:r0;]              optional
    filter C                           optional
    exists C | ~exists C | forall C    (or Dat3M's  final C with default: exists; ...)
    scopeTree (device (cta ...))       optional (herd GPU_PTX), then a memory map `x: global`

Comments `(* ... *)` are blanked out (keeping line numbers); those that start `ptxmc:` are kept
in `pragmas` (`ptxmc export` writes expectations, the verdict source and arch there).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .model import fail

_POST_START = re.compile(r"\s*(?:locations\b|filter\b|exists\b|forall\b|final\b|~\s*exists\b|not\s+exists\b|"
                         r"scopeTree\b|scopes\b)")
_MEMORY_MAP = re.compile(r"(?m)^[ \t]*[A-Za-z_]\w*[ \t]*:[ \t]*(?:global|shared)\b")


@dataclass(frozen=True)
class Piece:
    line: int
    text: str


@dataclass(frozen=True)
class Postlude:
    locations: Piece | None = None
    filter: Piece | None = None
    quantifier: str = ""            # '~exists' | 'exists' | 'forall' | 'final' | ''
    condition: Piece | None = None
    outcomes: tuple[tuple[str, str], ...] = ()   # Dat3M `final ... with MODEL: [~]exists;`
    scope_tree: Piece | None = None
    memory_map: tuple[Piece, ...] = ()


@dataclass(frozen=True)
class HerdFile:
    arch: str
    name: str
    line: int
    docs: tuple[str, ...]
    meta: tuple[Piece, ...]
    init: tuple[Piece, ...]
    header: tuple[Piece, ...]       # the thread header cells
    rows: tuple[tuple[Piece, ...], ...]
    post: Postlude
    pragmas: tuple[Piece, ...]


def _blank_comments(text: str, path: str) -> tuple[str, list[Piece]]:
    out, pragmas, i = [], [], 0
    while True:
        j = text.find("(*", i)
        if j < 0:
            out.append(text[i:])
            break
        k = text.find("*)", j + 2)
        if k < 0:
            fail("unterminated comment '(*'", path, text.count("\n", 0, j) + 1)
        out.append(text[i:j])
        body = text[j + 2:k]
        if body.strip().startswith("ptxmc:"):
            pragmas.append(Piece(text.count("\n", 0, j) + 1, body.strip()[len("ptxmc:"):].strip()))
        out.append(re.sub(r"[^\n]", " ", text[j:k + 2]))
        i = k + 2
    return "".join(out), pragmas


def split(text: str, path: str) -> HerdFile:
    text, pragmas = _blank_comments(text.replace("\r\n", "\n"), path)
    lines = text.split("\n")
    n = 0
    while n < len(lines) and not lines[n].strip():
        n += 1
    if n == len(lines):
        fail("empty file: expected 'ARCH NAME' (e.g. 'PTX MP')", path, 1)
    head = lines[n].split()
    if len(head) < 2:
        fail("the first line must be 'ARCH NAME' (e.g. 'PTX MP')", path, n + 1, lines[n])
    arch, name, header_line = head[0], head[1], n + 1
    rest_of_head = " ".join(head[2:])
    # prelude: doc strings and metadata up to the '{' of the init block
    docs, meta = [], []
    pos = sum(len(x) + 1 for x in lines[:n + 1])
    prelude_end = _outside_strings(text, "{", pos)
    if prelude_end < 0:
        fail("no initial state: expected '{ ... }' after the test name", path, header_line, lines[n])
    prelude = (rest_of_head + "\n" if rest_of_head else "") + text[pos:prelude_end]
    for m in re.finditer(r'"([^"]*)"|([^"\s][^"\n]*)', prelude):
        if m.group(1) is not None:
            docs.append(" ".join(m.group(1).split()))
        elif m.group(2).strip():
            meta.append(Piece(text.count("\n", 0, pos) + 1, m.group(2).strip()))
    close = text.find("}", prelude_end)
    if close < 0:
        fail("the initial state '{' is not closed with '}'", path, text.count("\n", 0, prelude_end) + 1)
    init = []
    line = text.count("\n", 0, prelude_end) + 1
    for chunk in re.split(r"([;\n])", text[prelude_end + 1:close]):
        if chunk == "\n":
            line += 1
        elif chunk != ";" and chunk.strip():
            init.append(Piece(line, chunk.strip()))
    # the thread header and the instruction rows
    after = text[close + 1:]
    first = text.count("\n", 0, close) + 1
    body = after.split("\n")
    k = 0
    header = None
    rows = []
    post_at = len(body)
    for k, raw in enumerate(body):
        lineno = first + k
        s = raw.strip()
        if not s or (k == 0 and s == ";"):
            continue
        if header is not None and _POST_START.match(s):
            post_at = k
            break
        if not s.endswith(";"):
            if header is None:
                fail("expected the thread header ' P0 | P1 ;' after the initial state", path, lineno, s)
            post_at = k
            break
        cells = tuple(Piece(lineno, c.strip()) for c in s[:-1].split("|"))
        if header is None:
            header = cells
        else:
            if len(cells) > len(header):
                fail(f"{len(cells)} cells in a row of a test with {len(header)} threads", path, lineno, s)
            rows.append(cells + tuple(Piece(lineno, "") for _ in range(len(header) - len(cells))))
    if header is None:
        fail("no thread header (' P0 | P1 ;')", path, first)
    post = _postlude("\n".join(body[post_at:]), first + post_at, path)
    return HerdFile(arch, name, header_line, tuple(docs), tuple(meta), tuple(init), header, tuple(rows),
                    post, tuple(pragmas))


def _outside_strings(text: str, char: str, pos: int) -> int:
    """The first `char` at or after `pos` that is not inside a "doc string" (-1: none)."""
    quoted = False
    for i in range(pos, len(text)):
        if text[i] == '"':
            quoted = not quoted
        elif text[i] == char and not quoted:
            return i
    return -1


def _postlude(text: str, first: int, path: str) -> Postlude:
    """The part after the rows: locations, filter, the condition, Dat3M's `with` list, herd's
    scope tree and memory map."""
    fields: dict = {}
    pos = 0

    def line_at(i: int) -> int:
        return first + text.count("\n", 0, i)

    def skip_ws(i: int) -> int:
        while i < len(text) and text[i].isspace():
            i += 1
        return i

    def until_stop(i: int, stops: str) -> int:
        m = re.compile(stops).search(text, i)
        mm = _MEMORY_MAP.search(text, i)
        ends = [x.start() for x in (m, mm) if x]
        return min(ends) if ends else len(text)

    while True:
        pos = skip_ws(pos)
        if pos >= len(text):
            break
        rest = text[pos:]
        if rest.startswith("locations"):
            m = re.match(r"locations\s*\[([^\]]*)\]", rest)
            if not m:
                fail("malformed 'locations [...]'", path, line_at(pos), rest.split("\n")[0])
            fields["locations"] = Piece(line_at(pos), m.group(1).strip())
            pos += m.end()
            continue
        m = re.match(r"(filter|~\s*exists|not\s+exists|exists|forall|final)\b", rest)
        if m:
            word = m.group(1)
            start = pos + m.end()
            stops = r"~\s*exists\b|\bnot\s+exists\b|\b(?:exists|forall|final|scopeTree|scopes)\b" \
                if word == "filter" else r"\b(?:with|scopeTree|scopes)\b"
            end = until_stop(start, stops)
            cond = text[start:end].strip().rstrip(";").strip()
            if not cond:
                fail(f"'{word}' without a condition", path, line_at(pos), word)
            piece = Piece(line_at(start + len(text[start:end]) - len(text[start:end].lstrip())), cond)
            if word == "filter":
                fields["filter"] = piece
            else:
                if "quantifier" in fields:
                    fail("more than one final condition", path, line_at(pos), word)
                fields["quantifier"] = "~exists" if word.startswith(("~", "not")) else word
                fields["condition"] = piece
            pos = end
            if text.startswith("with", pos):
                pos, fields["outcomes"] = _with_list(text, pos + 4, line_at, path)
            continue
        m = re.match(r"(scopeTree|scopes)\s*:?", rest)
        if m:
            start = skip_ws(pos + m.end())
            end = _balanced(text, start, line_at, path)
            fields["scope_tree"] = Piece(line_at(start), text[start:end])
            pos = end
            continue
        if _MEMORY_MAP.match(text, pos) or re.match(r"[A-Za-z_]\w*\s*:", rest):
            items = [Piece(line_at(pos), x.strip()) for x in re.split(r"[,;\n]", rest) if x.strip()]
            fields["memory_map"] = tuple(items)
            break
        fail("unexpected text after the instructions (expected locations, filter, exists, ~exists, "
             "forall or a scope tree)", path, line_at(pos), rest.split("\n")[0])
    return Postlude(**fields)


def _with_list(text: str, pos: int, line_at, path: str):
    """Dat3M `final C with MODEL: exists; MODEL: ~exists;` -> ((MODEL, 'exists' | '~exists'), ...)."""
    out = []
    pat = re.compile(r"\s*(\w+)\s*:\s*(~\s*exists|not\s+exists|exists)\s*;")
    while True:
        m = pat.match(text, pos)
        if not m:
            break
        out.append((m.group(1), "exists" if m.group(2) == "exists" else "~exists"))
        pos = m.end()
    if not out:
        fail("'with' must list expectations, e.g. 'with default: ~exists;'", path, line_at(pos), text[pos:pos + 40])
    return pos, tuple(out)


def _balanced(text: str, start: int, line_at, path: str) -> int:
    """The end of the parenthesised S-expressions starting at `start` (one or more)."""
    depth, i, end = 0, start, start
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
            if depth > 16:
                fail("the scope tree is nested too deeply", path, line_at(i))
        elif c == ")":
            depth -= 1
            if depth < 0:
                fail("unbalanced ')' in the scope tree", path, line_at(i))
            if depth == 0:
                end = i + 1
        elif depth == 0 and not c.isspace():
            break
        i += 1
    if depth:
        fail("unbalanced '(' in the scope tree", path, line_at(start))
    return end
