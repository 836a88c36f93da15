"""Reading cat-subset text: comments, the glossary, the lark parse into checker.cat.ast, includes.

Comments `(* ... *)` (nestable) are blanked to spaces before lexing, so every position in the
parse tree is a position in the original file. Every problem is a ModelError naming the file,
the line and the offending text; no lark exception escapes.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Iterator

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import PatternStr
from lark.tree import Meta

from .. import limits
from ..errors import ModelError, SourceLoc
from .source import _blank_comments, _line_loc, _line_of, _snippet, _where
from .ast import Binary, Binding, Check, Expr, IfOption, Include, Let, Statement, Unary, Universe, Var, Zero

NAME_RE = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_GLOSSARY_LINE = re.compile(rf"^\s*(set|rel)\s+({NAME_RE})\s*:(.*)$")
_KIND_TEXT = {"set": "a set", "rel": "a relation"}

_OPERAND_START = {"NAME", "ZERO", "UNDERSCORE", "LPAR", "LSQB", "DOMAIN", "RANGE", "TILDE"}
_CHECK_KEYWORDS = {"ACYCLIC", "IRREFLEXIVE", "EMPTY"}
_STATEMENT_START = {"LET", "FLAG", "INCLUDE", "SHOW", "UNSHOW", "TILDE"} | _CHECK_KEYWORDS
_OPERATORS = {"VBAR", "SEMICOLON", "BACKSLASH", "AMPERSAND", "TIMES", "STAR", "PLUS", "QMARK", "INVERSE"}
# Associative operators (parse-tree names): a flat chain `a | b | ...` is one level of nesting, not
# one per term. Chains up to CHAIN terms keep the parser's left-deep tree (every bundled model's
# do); a longer one becomes a balanced tree of such left-deep runs (same value, log depth).
_ASSOCIATIVE = {"union", "seq", "inter"}
CHAIN = 32


@dataclass(frozen=True)
class GlossaryEntry:
    """One `set NAME : description` / `rel NAME : description` line of a Glossary comment."""

    name: str
    kind: str
    description: str
    where: SourceLoc


@dataclass(frozen=True)
class Program:
    """A parsed model file with its includes spliced in."""

    title: str | None
    statements: tuple[Statement, ...]
    glossary: tuple[GlossaryEntry, ...]
    sources: tuple[str, ...]


def parse_glossary(text: str, path: str = "<string>") -> dict[str, tuple[str, str]]:
    """Base sets and relations declared by the text's `(* Glossary ... *)` comment: name -> (kind, description)."""
    return {g.name: (g.kind, g.description) for g in glossary_entries(text, path)}


def glossary_entries(text: str, path: str = "<string>") -> tuple[GlossaryEntry, ...]:
    """The entries of the one comment that begins with `Glossary`, with their lines."""
    _, comments = _blank_comments(text, path)
    glossaries = [(s, e) for s, e in comments if text[s + 2 : e - 2].lstrip().startswith("Glossary")]
    if not glossaries:
        return ()
    if len(glossaries) > 1:
        first = _line_of(text, glossaries[0][0])
        raise ModelError(f"a second Glossary comment (the first is at line {first})", _where(path, text, glossaries[1][0]))
    start, end = glossaries[0]
    entries: dict[str, GlossaryEntry] = {}
    first_line = _line_of(text, start)
    for offset, line in enumerate(text[start + 2 : end - 2].split("\n")):
        m = _GLOSSARY_LINE.match(line)
        if not m:
            continue
        kind, name, desc = m.group(1), m.group(2), m.group(3).strip()
        where = SourceLoc(path, first_line + offset, _snippet(line))
        if name in entries:
            raise ModelError(f"the glossary declares '{name}' twice (first at line {entries[name].where.line})", where)
        entries[name] = GlossaryEntry(name, kind, desc, where)
    return tuple(entries.values())


def read_program(path: str | os.PathLike) -> Program:
    """Parse a model file and, recursively, the files it includes."""
    return _read(str(path), ())


def parse_program(text: str, path: str = "<string>") -> Program:
    """Parse model text; includes are resolved relative to the directory of `path`."""
    return _parse(text, path, ((os.path.realpath(path), path),))


def _read(path: str, stack: tuple[tuple[str, str], ...], where: SourceLoc | None = None) -> Program:
    try:
        text, size = limits.read_text(path, limits.current().cat_bytes)
        if text is None:
            raise ModelError(f"model file {path} is too large: more than {size - 1} bytes (limit "
                             f"{limits.current().cat_bytes}; raise it with {limits.flag('cat_bytes')})", where)
    except FileNotFoundError:
        raise ModelError(f"no such model file: {path}", where) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(f"cannot read model file {path}: {e}", where) from None
    return _parse(text, path, stack + ((os.path.realpath(path), path),))


def _parse(text: str, path: str, stack: tuple[tuple[str, str], ...]) -> Program:
    """`stack` holds (real path, path as shown) of every file being read, outermost first."""
    title, raw = parse_statements(text, path)
    statements: list[Statement] = []
    glossary = list(glossary_entries(text, path))
    sources = [stack[-1][0]]
    for st in raw:
        if not isinstance(st, Include):
            statements.append(st)
            continue
        target = os.path.normpath(os.path.join(os.path.dirname(path), st.path))
        if any(real == os.path.realpath(target) for real, _ in stack):
            chain = " -> ".join([shown for _, shown in stack] + [target])
            raise ModelError(f"include cycle: {chain}", st.loc)
        sub = _read(target, stack, st.loc)
        statements.extend(sub.statements)
        glossary.extend(sub.glossary)
        sources.extend(s for s in sub.sources if s not in sources)
    return Program(title, tuple(statements), _merge_glossary(glossary), tuple(sources))


def _merge_glossary(entries: list[GlossaryEntry]) -> tuple[GlossaryEntry, ...]:
    merged: dict[str, GlossaryEntry] = {}
    for g in entries:
        old = merged.get(g.name)
        if old is None:
            merged[g.name] = g
        elif old.kind != g.kind:
            raise ModelError(
                f"the glossary declares '{g.name}' as {_KIND_TEXT[old.kind]} at {old.where} and as {_KIND_TEXT[g.kind]} here", g.where
            )
    return tuple(merged.values())


def parse_statements(text: str, path: str = "<string>") -> tuple[str | None, tuple[Statement | Include, ...]]:
    """The title and the statements of one file, includes not yet resolved."""
    if len(text) > limits.current().cat_bytes:
        raise ModelError(f"model text is too large: {len(text)} characters (limit {limits.current().cat_bytes}; "
                         f"raise it with {limits.flag('cat_bytes')})", SourceLoc(path, 1, ""))
    blanked, _ = _blank_comments(text, path)
    try:
        tree = _regroup_chains(_parser().parse(blanked))
        _check_depth(tree, path, blanked)
        title, statements = _ToAst(path, blanked).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, ModelError):
            raise e.orig_exc from None
        raise
    except UnexpectedInput as e:
        raise _syntax_error(e, path, blanked) from None
    except LarkError as e:
        raise ModelError(f"syntax error: {e}", SourceLoc(path, 1, "")) from None
    for st in statements:
        if isinstance(st, Let):
            _check_let(st)
    return title, statements


def _regroup_chains(tree: Tree) -> Tree:
    """The parse tree with every chain of more than CHAIN terms of one associative operator
    (`a | b | ... | z`, which LALR builds left-deep, one level per term) regrouped as a balanced
    tree of left-deep runs of CHAIN terms, in the same left-to-right order. Iterative: a chain of
    any length costs no Python stack here, and the depth check then sees only real nesting."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for i, child in enumerate(node.children):
            if not isinstance(child, Tree):
                continue
            if child.data in _ASSOCIATIVE:
                terms = _chain_terms(child)
                if len(terms) > CHAIN:
                    node.children[i] = _balanced(child.data, terms)
                stack.extend(t for t in terms if isinstance(t, Tree))
            else:
                stack.append(child)
    return tree


def _chain_terms(node: Tree) -> list:
    """The operands of the left-deep chain of node's operator headed by node, left to right."""
    op, terms = node.data, []
    while isinstance(node, Tree) and node.data == op:
        terms.append(node.children[-1])
        node = node.children[0]
    terms.append(node)
    terms.reverse()
    return terms


def _balanced(op: str, terms: list) -> Tree:
    level = []
    for k in range(0, len(terms), CHAIN):
        run = terms[k]
        for t in terms[k + 1 : k + CHAIN]:
            run = _join(op, run, t)
        level.append(run)
    while len(level) > 1:
        level = [_join(op, *level[k : k + 2]) if k + 1 < len(level) else level[k] for k in range(0, len(level), 2)]
    return level[0]


def _join(op: str, left, right) -> Tree:
    """The parse-tree node `left op right`, its position spanning both operands."""
    meta = Meta()
    first, last = left.meta, right.meta
    meta.empty = False
    meta.line, meta.column, meta.start_pos = first.line, first.column, first.start_pos
    meta.end_line, meta.end_column, meta.end_pos = last.end_line, last.end_column, last.end_pos
    return Tree(op, [left, right], meta)


def _check_depth(tree: Tree, path: str, text: str) -> None:
    """Refuse expressions nested deeper than the `nesting` limit (parentheses, operators, long
    chains of a left-associative operator) before any recursive walk can exhaust the stack."""
    lim = limits.current().nesting
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > lim:
            line = getattr(node.meta, "line", 1) if not node.meta.empty else 1
            raise ModelError(f"too deeply nested: an expression more than {lim} levels deep "
                             f"(limit {lim}; raise it with {limits.flag('nesting')})", _line_loc(path, text, line))
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, Tree))


# ---- comments ---------------------------------------------------------------------------------

# ---- lark -------------------------------------------------------------------------------------

class _ProductOrStar:
    """Post-lexer: a `*` followed by the start of an operand is the product (TIMES), else the star."""

    always_accept = ()

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        tokens = list(stream)
        for i, tok in enumerate(tokens):
            if tok.type == "STAR" and self._operand_follows(tokens, i + 1):
                tok = Token.new_borrow_pos("TIMES", tok.value, tok)
            yield tok

    @staticmethod
    def _operand_follows(tokens: list[Token], j: int) -> bool:
        if j >= len(tokens) or tokens[j].type not in _OPERAND_START:
            return False
        if tokens[j].type == "TILDE":  # `r* ~empty x` ends an expression; `S * ~T` does not
            return j + 1 < len(tokens) and tokens[j + 1].type not in _CHECK_KEYWORDS
        return True


@cache
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, postlex=_ProductOrStar())


def _syntax_error(e: UnexpectedInput, path: str, text: str) -> ModelError:
    if isinstance(e, UnexpectedCharacters):
        char = text[e.pos_in_stream]
        what = "an unterminated string" if char == '"' else f"unexpected character '{char}'"
        return ModelError(f"syntax error: {what}", _line_loc(path, text, e.line))
    expected = _describe_expected(_acceptable(e))
    if isinstance(e, UnexpectedToken) and e.token.type != "$END":
        return ModelError(f"syntax error: unexpected '{e.token.value}'{expected}", _line_loc(path, text, e.line))
    lines = text.rstrip().split("\n")
    return ModelError(f"syntax error: unexpected end of file{expected}", _line_loc(path, text, len(lines)))


def _acceptable(e: UnexpectedInput) -> set[str]:
    """Terminals the parser could take here: exact when lark can replay the parse, else LALR's guess."""
    if isinstance(e, UnexpectedToken) and e.interactive_parser is not None:
        try:
            return set(e.accepts)
        except LarkError:
            pass
    return set(getattr(e, "expected", None) or ())


def _describe_expected(names: set[str]) -> str:
    parts = []
    if names & (_OPERAND_START - {"TILDE", "NAME"}):
        parts.append("an expression")
        names -= _OPERAND_START | {"IF"}
    if "LET" in names:
        parts.append("a statement")
        names -= _STATEMENT_START
    if names & _OPERATORS:
        parts.append("an operator")
        names -= _OPERATORS
    end = "$END" in names
    names.discard("$END")
    parts.extend(sorted(_terminal_text(n) for n in names))
    if end:
        parts.append("end of file")
    if not parts:
        return ""
    if len(parts) == 1:
        return f", expected {parts[0]}"
    return f", expected {', '.join(parts[:-1])} or {parts[-1]}"


def _terminal_text(name: str) -> str:
    term = next((t for t in _parser().terminals if t.name == name), None)
    if name == "NAME":
        return "a name"
    if name == "STRING":
        return "a quoted string"
    if term is not None and isinstance(term.pattern, PatternStr):
        return f"'{term.pattern.value}'"
    return name


# ---- tree -> AST --------------------------------------------------------------------------------

def _binary_node(op: str):
    return lambda self, meta, items: Binary(op, items[0], items[-1], self._loc(meta))


def _unary_node(op: str):
    return lambda self, meta, items: Unary(op, next(i for i in items if not isinstance(i, Token)), self._loc(meta))


@v_args(meta=True)
class _ToAst(Transformer):
    """Builds checker.cat.ast nodes; each node's location is its own (comment-free) source text."""

    def __init__(self, path: str, text: str):
        super().__init__()
        self.path, self.text = path, text
        self.lines = text.split("\n")

    def _loc(self, meta) -> SourceLoc:
        return SourceLoc(self.path, meta.line, _snippet(self.text[meta.start_pos : meta.end_pos]))

    def start(self, meta, items):
        title = items[0] if items and isinstance(items[0], _Title) else None
        statements = tuple(i for i in items if i is not None and not isinstance(i, _Title))
        return (title.text if title else None), statements

    def title(self, meta, items):
        return _Title(" ".join(_unquote(t) if t.type == "STRING" else str(t) for t in items))

    def let(self, meta, items):
        return Let(tuple(items), False, self._loc(meta))

    def letrec(self, meta, items):
        return Let(tuple(items), True, self._loc(meta))

    def binding(self, meta, items):
        name, expr = items
        return Binding(str(name), expr, self._loc(meta))

    def check(self, meta, items):
        flag = any(isinstance(t, Token) and t.type == "FLAG" for t in items)
        negated = any(isinstance(t, Token) and t.type == "TILDE" for t in items)
        kind = next(t for t in items if isinstance(t, Token) and t.type in _CHECK_KEYWORDS)
        expr = next(t for t in items if not isinstance(t, Token))
        named = items[-1] if isinstance(items[-1], Token) and items[-1].type == "NAME" else None
        where = self._loc(meta)
        return Check(str(kind), expr, str(named) if named else f"check@{meta.line}", negated, flag, where)

    def include(self, meta, items):
        return Include(_unquote(items[0]), self._loc(meta))

    def show(self, meta, items):
        return None

    def shown(self, meta, items):
        return None

    def unshow(self, meta, items):
        return None

    def if_option(self, meta, items):
        option, then, orelse = items
        return IfOption(_unquote(option), then, orelse, self._loc(meta))

    union, seq, diff, inter, product = (_binary_node(op) for op in ("|", ";", "\\", "&", "*"))
    complement, inverse, plus, star, opt, ident, domain, range = (
        _unary_node(op) for op in ("~", "^-1", "+", "*", "?", "[]", "domain", "range")
    )

    def atom(self, meta, items):
        return next(i for i in items if not isinstance(i, Token))

    def var(self, meta, items):
        return Var(str(items[0]), SourceLoc(self.path, meta.line, _snippet(self.lines[meta.line - 1])))

    def zero(self, meta, items):
        return Zero(self._loc(meta))

    def universe(self, meta, items):
        return Universe(self._loc(meta))


@dataclass(frozen=True)
class _Title:
    text: str


def _unquote(tok: Token) -> str:
    return str(tok)[1:-1]


# ---- static checks that need no glossary ------------------------------------------------------

def _check_let(st: Let) -> None:
    seen: dict[str, Binding] = {}
    for b in st.bindings:
        if b.name in seen:
            raise ModelError(f"'{b.name}' is defined twice in one let", b.loc)
        seen[b.name] = b
    if st.rec:
        for b in st.bindings:
            _check_positive(b.expr, set(seen), True, b)


def _check_positive(e: Expr, names: set[str], positive: bool, binding: Binding) -> None:
    """`let rec` needs a monotone body: no recursive name under `~` or right of `\\`."""
    match e:
        case Var(name=name) if name in names and not positive:
            raise ModelError(
                f"'{name}' occurs under a complement or on the right of '\\' in let rec; "
                "the least fixpoint needs a monotone definition",
                binding.loc,
            )
        case Unary(op="~", arg=a):
            _check_positive(a, names, not positive, binding)
        case Unary(arg=a):
            _check_positive(a, names, positive, binding)
        case Binary(op="\\", left=a, right=b):
            _check_positive(a, names, positive, binding)
            _check_positive(b, names, not positive, binding)
        case Binary(left=a, right=b):
            _check_positive(a, names, positive, binding)
            _check_positive(b, names, positive, binding)
        case IfOption(then=t, orelse=f):
            _check_positive(t, names, positive, binding)
            _check_positive(f, names, positive, binding)
