"""Safe YAML loading that keeps the source line of every node.

PyYAML's SafeLoader composes the text into nodes (no object is ever constructed from a tag); we
turn those into `Node`s, which keep each scalar's text as written and its 1-based line, and we
refuse what a litmus file has no use for and what would hide mistakes: duplicate keys, aliases,
merge keys and explicit tags. Every refusal, and every YAML syntax error, is a LitmusError that
names the file and the line.

`compose` parses a whole text (a syntax error spoils the whole file); `convert` checks one
subtree, so that the loader can reject one bad test of a file and keep the others.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import yaml

from .. import limits
from ..errors import LitmusError, SourceLoc

_T = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = (_T + t for t in ("str", "int", "float", "bool", "null"))
_SCALAR_TAGS = {STR, INT, FLOAT, BOOL, NULL, _T + "timestamp"}
_ALIAS = "ptxmc:alias"     # marks the place of an alias; `convert` reports it


@dataclass(frozen=True)
class Node:
    """A YAML node with its line. Scalars keep `raw`, the text as written (after unquoting), and
    `tag`, its YAML type; `plain` scalars (unquoted, untagged) take their type from their text.
    A 'seq' holds Nodes in `items`; a 'map' holds (key, value) Node pairs in source order."""

    kind: str                # 'scalar' | 'seq' | 'map'
    line: int
    raw: str = ""
    tag: str = STR
    plain: bool = False
    items: tuple = ()

    @property
    def value(self) -> Any:
        """The scalar's Python value: str, int, float, bool or None (timestamps stay text)."""
        if self.tag in (INT, FLOAT, BOOL, NULL):
            node = yaml.ScalarNode(self.tag, self.raw)
            return getattr(_CONSTRUCTOR, "construct_yaml_" + self.tag[len(_T):])(node)
        return self.raw

    def with_raw(self, raw: str) -> "Node":
        """This scalar with new text; a plain scalar's type is resolved again from the text."""
        tag = _RESOLVER.resolve(yaml.ScalarNode, raw, (True, False)) if self.plain else self.tag
        return replace(self, raw=raw, tag=tag if tag in _SCALAR_TAGS else STR)


_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_RESOLVER = yaml.resolver.Resolver()


class _Loader(yaml.SafeLoader):
    """SafeLoader that leaves a marker where an alias was instead of sharing the anchored node,
    and records whether a scalar's tag was written out."""

    depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.get_event()
            return yaml.ScalarNode(_ALIAS, event.anchor, event.start_mark, event.end_mark)
        # PyYAML composes recursively: bound the nesting before it can exhaust the stack.
        self.depth += 1
        try:
            if self.depth > limits.current().yaml_depth:
                raise _TooDeep(self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def compose_scalar_node(self, anchor):
        explicit = self.peek_event().tag not in (None, "!")
        node = super().compose_scalar_node(anchor)
        node.explicit_tag = explicit
        return node


try:
    from yaml.cyaml import CParser as _CParser      # libyaml's parser, when PyYAML has it
except ImportError:                                  # pragma: no cover - a PyYAML without libyaml
    _CParser = None


class _FastLoader(_Loader):
    """_Loader's composer over libyaml's event parser (C): the same nodes, several times faster
    on a suite file. `compose` turns to _Loader on any error, so that every message, and every
    decision on malformed input, is the pure-Python parser's."""

    def __init__(self, stream):
        super().__init__(stream)
        self._events = _CParser(stream)
        self.check_event = self._events.check_event
        self.peek_event = self._events.peek_event
        self.get_event = self._events.get_event

    def compose_scalar_node(self, anchor):
        node = super().compose_scalar_node(anchor)
        if node.style == "":            # libyaml's name for the plain style; PyYAML's is None
            node.style = None
        return node

    def dispose(self):
        super().dispose()
        self._events.dispose()


class _TooDeep(Exception):
    def __init__(self, mark):
        self.mark = mark


def _line_text(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


# a block scalar's header line: `key: |`, `- key: >-`, `key: |2  # comment`
_BLOCK_HEADER = re.compile(r"^( *)(?:- +)*[^\s#][^#]*?:[ \t]+[|>][-+0-9]*[ \t]*(?:#.*)?$")
# what nvcc prints at column 0 inside a kernel's body: its labels and the body's braces
_PTX_COLUMN0 = re.compile(r" *(?:\$[\w$]*[ \t]*:|[{}])[ \t]*(?://.*)?")
TAB_HINT = ("YAML does not allow a tab as indentation: indent with spaces; in a `ptx: |` block, a line that "
            "starts with a tab is read as the block's text")


def tab_indented_blocks(text: str) -> str | None:
    """`text` with each line of a block scalar (`ptx: |`) that a tab indents given the block's
    indentation in spaces first (the tab then belongs to the line's text, as YAML allows), or None
    if no such line. In a block that holds such lines, the lines nvcc prints at column 0 in a
    kernel's body (its labels `$L__BB0_2:`, the body's `{` and `}`) are the block's too. Lines
    keep their numbers; no other line changes. Only used on a text YAML refuses: a line that
    starts with a tab inside a block is a syntax error otherwise."""
    lines = text.split("\n")
    changed = False
    k = 0
    while k < len(lines):
        m = _BLOCK_HEADER.match(lines[k])
        k += 1
        if m is None:
            continue
        key = len(lines[k - 1]) - len(lines[k - 1].lstrip(" -"))     # the key's column
        indent = None
        pasted = False                  # has the block a tab-indented line so far?
        while k < len(lines):
            line = lines[k]
            spaces = len(line) - len(line.lstrip(" "))
            if line.strip() == "":
                k += 1
                continue
            tabbed = line[spaces:spaces + 1] == "\t"
            column0 = not tabbed and spaces <= key and _PTX_COLUMN0.fullmatch(line) is not None
            if indent is None:
                pasted = tabbed or column0
                indent = key + 2 if pasted else spaces
            pasted = pasted or tabbed
            if not tabbed and spaces <= key and not (column0 and (pasted or _tab_follows(lines, k + 1))):
                break                   # the block ends here
            if spaces < indent:
                lines[k] = " " * indent + line[spaces:]
                changed = True
            k += 1
    return "\n".join(lines) if changed else None


def _tab_follows(lines: list[str], k: int) -> bool:
    """Is the next line that is neither blank nor a column-0 PTX line one a tab indents?"""
    for line in lines[k:]:
        if line.strip() and not _PTX_COLUMN0.fullmatch(line):
            return line.lstrip(" ").startswith("\t")
    return False


def compose(text: str, path: str) -> yaml.Node | None:
    """Parse `text` into PyYAML nodes (None for an empty document); syntax errors -> LitmusError.
    A text that YAML refuses for a tab where it wants indentation is read again with the tabs of
    its block scalars after their indentation (tab_indented_blocks); if it still is refused, the
    error says how to write it."""
    try:
        return _compose(text, path)
    except LitmusError as e:
        if not _tab_error(e):
            raise
        error = e
    fixed = tab_indented_blocks(text)
    if fixed is not None:
        try:
            return _compose(fixed, path)
        except LitmusError as e:
            if not _tab_error(e):
                raise               # the tabs are read; this is what else is wrong (same lines)
            error = e
    raise LitmusError(f"{error.message} ({TAB_HINT})", error.where) from None


def _tab_error(e: LitmusError) -> bool:
    return "'\\t'" in e.message or "tab character" in e.message


def _compose(text: str, path: str) -> yaml.Node | None:
    if _CParser is not None:
        try:
            return yaml.compose(text, Loader=_FastLoader)
        except Exception:               # noqa: BLE001 - the pure-Python parser says what is wrong
            pass
    try:
        return yaml.compose(text, Loader=_Loader)
    except _TooDeep as e:
        line = e.mark.line + 1
        raise limits.too_large("too deeply nested: YAML lists and mappings", "yaml_depth",
                               SourceLoc(path, line, _line_text(text, line)[:80])) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 1
        what = ": ".join(m for m in (e.context, e.problem) if m) or "malformed YAML"
        where = SourceLoc(path, line, _line_text(text, line))
        raise LitmusError(f"YAML syntax error: {what}", where) from None
    except yaml.reader.ReaderError as e:   # a character YAML does not allow
        line = text.count("\n", 0, e.position) + 1
        char = e.character if isinstance(e.character, int) else ord(e.character[:1] or "\0")
        what = f"character #x{char:04x}: {e.reason}"
        raise LitmusError(f"YAML syntax error: {what}", SourceLoc(path, line, "")) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def convert(node: yaml.Node, path: str) -> Node:
    """Check and convert one composed subtree: no aliases, no merge keys, no explicit tags beyond
    the plain YAML types, no duplicate keys."""
    line = node.start_mark.line + 1
    shown = node.tag.replace(_T, "!!")
    if node.tag == _ALIAS:
        raise LitmusError("YAML aliases are not supported", SourceLoc(path, line, "*" + node.value))
    if isinstance(node, yaml.ScalarNode):
        if node.tag not in _SCALAR_TAGS:
            raise LitmusError(f"YAML tag '{shown}' is not supported", SourceLoc(path, line, node.value))
        bad = _SURROGATE.search(node.value)
        if bad:     # a "\ud800" escape: not a character, and no output could be written with it
            raise LitmusError(f"'\\u{ord(bad.group()):04x}' is a lone surrogate, not a character",
                              SourceLoc(path, line, ""))
        plain = node.style is None and not getattr(node, "explicit_tag", False)
        tag = STR if node.tag == _T + "timestamp" else node.tag
        return check_int(Node("scalar", line, raw=node.value, tag=tag, plain=plain), path)
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _T + "seq":
            raise LitmusError(f"YAML tag '{shown}' is not supported", SourceLoc(path, line, ""))
        return Node("seq", line, items=tuple(convert(n, path) for n in node.value))
    if node.tag != _T + "map":
        raise LitmusError(f"YAML tag '{shown}' is not supported", SourceLoc(path, line, ""))
    pairs = []
    for k, v in node.value:
        if k.tag == _T + "merge":
            raise LitmusError("YAML merge keys (<<) are not supported",
                              SourceLoc(path, k.start_mark.line + 1, "<<"))
        key = convert(k, path)
        if key.kind != "scalar":
            raise LitmusError("a mapping key must be a plain value, not a list or mapping",
                              SourceLoc(path, key.line, ""))
        pairs.append((key, convert(v, path)))
    check_unique(pairs, path)
    return Node("map", line, items=tuple(pairs))


# The widest integer a test may write: a location's initial value (checker.front.litmus limits
# every other integer to 64 bits).
INT_BITS = 1024
_INT_RANGE = (-(2 ** (INT_BITS - 1)), 2 ** INT_BITS - 1)


def check_int(node: Node, path: str) -> Node:
    """`node`, if it is no integer or an integer of at most INT_BITS bits; else a LitmusError
    (also keeps Python's integer-string limit and YAML's sexagesimal ints from blowing up later)."""
    if node.tag != INT:
        return node
    bare = node.raw.strip().lstrip("+-")
    if ":" in bare or (len(bare) > 1 and bare[0] == "0" and bare[1] not in "xXbB"):
        shown = node.raw if len(node.raw) <= 30 else node.raw[:27] + "..."
        form = "a base-60 number (190:20:30 is 685230)" if ":" in bare else "an octal number (010 is 8)"
        raise LitmusError(f"YAML reads this as {form}; write integers in decimal without leading "
                          "zeros, or in hex (0x...)", SourceLoc(path, node.line, shown))
    digits = node.raw.replace("_", "")
    try:
        value = node.value if len(digits) <= 2 + INT_BITS else None
    except ValueError:
        value = None
    lo, hi = _INT_RANGE
    if value is None or not lo <= value <= hi:
        shown = node.raw if len(node.raw) <= 30 else node.raw[:27] + "..."
        raise LitmusError(f"integer out of range: {shown} (at most {INT_BITS} bits)",
                          SourceLoc(path, node.line, shown))
    return node


def check_unique(pairs, path: str) -> None:
    """Reject two keys with the same value in one mapping, naming the key and both lines."""
    seen: dict = {}
    for key, _ in pairs:
        k = key.value
        if k in seen:
            raise LitmusError(f"duplicate key '{key.raw}' (lines {seen[k]} and {key.line})",
                              SourceLoc(path, key.line, key.raw))
        seen[k] = key.line


def load(text: str, path: str) -> Node | None:
    """compose + convert the whole text."""
    node = compose(text, path)
    return None if node is None else convert(node, path)
