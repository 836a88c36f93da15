"""A repair as a change of the YAML file: `patch` edits the text at the instructions' own places,
keeping every other character as the user wrote it (comments, `.reg` lines, register operands,
keys the repair does not touch, line endings); `render_test` writes one test as YAML from the AST.

- An inserted instruction gets a line of its own, shaped like its neighbour's: a `- TEXT` item
  of a `code:` list, or a `TEXT;` line of a `ptx: |` block, with the neighbour's indentation and
  line ending. Where the neighbour shares its line with other statements (`a; b`) the new
  statement goes into that line (`NEW; a; b`); in a flow list (`code: [a, b]`) it becomes a new
  quoted item.
- A strengthened (or, for --prune, weakened) instruction has its opcode rewritten where it is
  written: its operands stay as written (`[%r3]`, not the location the register holds); only
  when the operands change too (`cp.async.wait_group 1` -> `0`) is the statement rewritten whole.
- A removed instruction loses its statement, and its line when nothing else is on it.
- A row of a `matrix:` shares its lines with the other rows, so editing them would change every
  row: the row is copied, from the test's own text (comments, `ptx:` text and every key kept,
  the `matrix:` dropped, the row's values substituted, the row's `expect:` merged), edited, and
  appended to the file as a new test NAME-fixed; a file holding one test becomes a list of two.
  Where that copy cannot be made from the text, the fixed row is rendered from the AST instead.

Lines are cut where YAML cuts them (LF, CRLF, CR, U+0085, U+2028, U+2029), so that line N is the
loader's line N; every line keeps its own ending. Any edit the text does not allow is an
`Unpatchable`; checker.repair.output loads every patched text back and compares it with the
fixed test and the file's other tests, so what is written is what was checked.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace

import yaml

from ..ast import LitmusTest, MemoryDecl
from ..front.yamlsafe import tab_indented_blocks
from .edits import Delete, Edit, Insert, Replace

_ITEM = re.compile(r"^(\s*)-\s+(.*?)\s*$")
_BREAK = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")
_TOKEN_CHARS = r"[\w.:$%]"


@dataclass(frozen=True)
class Patched:
    text: str                   # the whole fixed file
    standalone: bool            # the test was written as a new standalone test
    name: str                   # the fixed test's name in `text`
    how: str = ""               # standalone: why, and how it was made


class Unpatchable(Exception):
    """The edit cannot be made in this text (the reason is the message)."""


# -------------------------------------------------------------------------------- lines ----

def split_lines(text: str) -> list[str]:
    """`text` cut into lines, each with its ending, where YAML breaks lines."""
    out, pos = [], 0
    for m in _BREAK.finditer(text):
        out.append(text[pos:m.end()])
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def _cut(line: str) -> tuple[str, str]:
    """(content, ending) of one line."""
    m = _BREAK.search(line)
    return (line[:m.start()], line[m.start():]) if m and m.end() == len(line) else (line, "")


def _newline(text: str) -> str:
    m = _BREAK.search(text)
    return m.group(0) if m and m.group(0) in ("\n", "\r\n", "\r") else "\n"


def _scalar(text: str) -> str:
    """`text` as a YAML list item's value: plain when it reads back the same, else quoted."""
    try:
        if yaml.safe_load(f"- {text}") == [text]:
            return text
    except yaml.YAMLError:
        pass
    return _q(text)


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


# --------------------------------------------------------------------------- the layout ----

@dataclass
class _Container:
    kind: str                   # block | flow | ptx
    node: yaml.Node
    key: yaml.Node              # `code` / `ptx`


def _compose(text: str) -> yaml.Node | None:
    """The nodes of `text`; a text whose `ptx: |` blocks a tab indents is read as the loader
    reads it (tab_indented_blocks: same lines, the block's lines given its indentation first),
    while the edits are made to the text as written (a ptx block is edited line by line)."""
    for t in (text, tab_indented_blocks(text)):
        if t is None:
            break
        try:
            return yaml.compose(t, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            pass
    return None


def _items(root: yaml.Node | None) -> list[yaml.Node]:
    if isinstance(root, yaml.SequenceNode):
        return list(root.value)
    return [root] if root is not None else []


def _key(m: yaml.Node, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    if isinstance(m, yaml.MappingNode):
        for k, v in m.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return k, v
    return None


def _last_line(node: yaml.Node) -> int:
    """The 0-based line of a node's last character."""
    e = node.end_mark
    return e.line if e.column > 0 else e.line - 1


def _test_node(root, test: LitmusTest) -> yaml.Node:
    line = (test.where.line if test.where else 0) - 1
    for item in _items(root):
        if isinstance(item, yaml.MappingNode) and item.start_mark.line <= line <= _last_line(item):
            return item
    raise Unpatchable("the test is not found in the file's text")


def _containers(item: yaml.Node) -> dict[str, _Container]:
    out = {}
    threads = _key(item, "threads")
    if threads is None or not isinstance(threads[1], yaml.MappingNode):
        return out
    for k, v in threads[1].value:
        for key in ("code", "ptx"):
            kv = _key(v, key)
            if kv is None:
                continue
            node = kv[1]
            if key == "ptx":
                if isinstance(node, yaml.ScalarNode) and node.style == "|":
                    out[k.value] = _Container("ptx", node, kv[0])
            elif isinstance(node, yaml.SequenceNode):
                out[k.value] = _Container("flow" if node.flow_style else "block", node, kv[0])
    return out


# ------------------------------------------------------------------------- the editing ----

class _Text:
    """The lines of a text being edited: line k's content, and lines to put before/after it."""

    def __init__(self, text: str):
        self.lines = split_lines(text)
        self.body = [_cut(ln)[0] for ln in self.lines]
        self.ends = [_cut(ln)[1] for ln in self.lines]
        self.gone: set[int] = set()
        self.before: dict[int, list] = {}
        self.after: dict[int, list] = {}
        self.nl = _newline(text)

    def ending(self, k: int) -> str:
        return self.ends[k] or self.nl

    def render(self, keep=None) -> str:
        out = []
        for k in range(len(self.lines)):
            if keep is not None and not keep(k):
                continue
            out += [s for _, s in sorted(self.before.get(k, []), key=lambda x: x[0])]
            if k not in self.gone:
                out.append(self.body[k] + self.ends[k] if self.ends[k] or not self.after.get(k)
                           else self.body[k] + self.nl)
            out += [s for _, s in sorted(self.after.get(k, []), key=lambda x: x[0])]
        return "".join(out)


def _opcode(text: str) -> str:
    return next((t for t in text.split() if not t.startswith("@")), "")


def respelled(old: str, new: str) -> str:
    """The statement `old` with the opcode of `new` (same operands: they stay as `old` writes them)."""
    op = _opcode(old)
    i = old.find(op)
    return old[:i] + _opcode(new) + old[i + len(op):] if op and i >= 0 else new


def _code(body: str) -> str:
    """A line's text before its `//` comment: a comment may repeat the statement (a skeleton of
    `ptxmc extract` ends each line with the PTX it came from, `// L694: wgmma.fence.sync.aligned`)."""
    return body.split("//", 1)[0]


def _find(body: str, text: str) -> tuple[int, int] | None:
    """The span of the one occurrence of `text` in `body`'s code (None: none, or several)."""
    code = _code(body)
    i = code.find(text)
    if i < 0 or code.find(text, i + 1) >= 0:
        return None
    return i, i + len(text)


def _find_token(body: str, token: str) -> tuple[int, int] | None:
    spans = [m.span() for m in re.finditer(rf"(?<!{_TOKEN_CHARS}){re.escape(token)}(?!{_TOKEN_CHARS})", _code(body))]
    return spans[0] if len(spans) == 1 else None


class _Patcher:
    def __init__(self, text: _Text, test: LitmusTest, containers: dict[str, _Container], subst=None):
        self.t, self.test, self.containers = text, test, containers
        self.threads = {th.name: th for th in test.threads}
        self.subst = subst or (lambda s: s)         # a matrix row's values, put into a template's text

    def line_of(self, ins) -> int:
        if ins is None or ins.where is None or not 0 < ins.where.line <= len(self.t.lines):
            raise Unpatchable("an instruction without a line of its own")
        return ins.where.line - 1

    def container(self, thread: str) -> _Container:
        c = self.containers.get(thread)
        if c is None:
            raise Unpatchable(f"thread {thread}'s code is written in a form ptxmc does not edit")
        return c

    def span(self, ins) -> tuple[int, int, int]:
        """(line, start, end) of the instruction's statement text."""
        k = self.line_of(ins)
        s = _find(self.t.body[k], ins.text)
        if s is None:
            raise Unpatchable(f"the statement '{ins.text}' is not written once on line {k + 1}")
        return k, s[0], s[1]

    def item(self, c: _Container, k: int, at: int | None = None) -> yaml.ScalarNode:
        """The code item on line k (the whole item on that line; in a flow list, the one that
        spans column `at`)."""
        for node in c.node.value:
            if node.start_mark.line == k and (at is None or node.start_mark.column <= at < node.end_mark.column):
                if not isinstance(node, yaml.ScalarNode) or node.end_mark.line != k:
                    raise Unpatchable(f"the code item on line {k + 1} is not one line of text")
                return node
        raise Unpatchable(f"no code item starts on line {k + 1}")

    def whole(self, c: _Container, k: int, ins, at: int | None = None) -> yaml.ScalarNode | None:
        """The code item on line k when it holds the one statement `ins` (else None)."""
        node = self.item(c, k, at)
        return node if self.subst(node.value).strip().rstrip(";").strip() == ins.text else None

    def columns(self, k: int) -> None:
        if "${" in self.t.lines[k]:
            raise Unpatchable(f"line {k + 1} holds a matrix placeholder")

    # -- replace ------------------------------------------------------------------------------
    def replace(self, c: Replace) -> None:
        cont = self.container(c.thread)
        ins = self.threads[c.thread].code[c.index]
        k = self.line_of(ins)
        body = self.t.body[k]
        if c.instr.operands == ins.operands and c.instr.predicate == ins.predicate:
            s = _find_token(body, _opcode(ins.text))
            if s is None:
                raise Unpatchable(f"the opcode of '{ins.text}' is not written once on line {k + 1}")
            self.t.body[k] = body[:s[0]] + _opcode(c.instr.text) + body[s[1]:]
            return
        k, a, b = self.span(ins)
        new = c.instr.text
        node = self.whole(cont, k, ins) if cont.kind == "block" else None
        if node is not None and node.style is None and _scalar(new) != new:
            m = _ITEM.match(body)
            self.t.body[k] = f"{m.group(1)}- {_scalar(new)}"
            return
        if not re.fullmatch(r"[^'\"#\\]*", new):
            raise Unpatchable(f"'{new}' cannot be written into line {k + 1} as it stands")
        self.t.body[k] = body[:a] + new + body[b:]

    # -- delete -------------------------------------------------------------------------------
    def delete(self, c: Delete) -> None:
        cont = self.container(c.thread)
        ins = self.threads[c.thread].code[c.index]
        k, a, b = self.span(ins)
        body = self.t.body[k]
        if cont.kind == "flow":
            self.columns(k)
            node = self.whole(cont, k, ins, a)
            if node is None:
                return self.inline_delete(k, a, b)
            items = list(cont.node.value)
            j = items.index(node)
            lo, hi = node.start_mark.column, node.end_mark.column
            if j + 1 < len(items) and items[j + 1].start_mark.line == k:
                hi = items[j + 1].start_mark.column
            elif j > 0 and items[j - 1].end_mark.line == k:
                lo = items[j - 1].end_mark.column
            self.t.body[k] = body[:lo] + body[hi:]
            return
        if cont.kind == "block":
            if self.whole(cont, k, ins) is not None:
                self.t.gone.add(k)
                return
        elif re.fullmatch(r"\s*;?\s*(//.*)?", body[:a] + body[b:]):
            self.t.gone.add(k)
            return
        self.inline_delete(k, a, b)

    def inline_delete(self, k: int, a: int, b: int) -> None:
        body = self.t.body[k]
        m = re.match(r"\s*;\s*", body[b:])
        if m:
            b += m.end()
        else:
            m = re.search(r"\s*;\s*$", body[:a])
            if m is None:
                raise Unpatchable(f"the statement on line {k + 1} cannot be removed alone")
            a = m.start()
        self.t.body[k] = body[:a] + body[b:]

    # -- insert -------------------------------------------------------------------------------
    def insert(self, c: Insert, order) -> None:
        cont = self.container(c.thread)
        code = self.threads[c.thread].code
        at_end = c.point >= len(code)
        if not code:
            raise Unpatchable(f"thread {c.thread} has no instruction to place the new one by")
        anchor = code[-1] if at_end else code[c.point]
        k, a, b = self.span(anchor)
        body = self.t.body[k]
        texts = [i.text for i in c.instrs]
        if cont.kind == "flow":
            self.columns(k)
            node = self.whole(cont, k, anchor, a)
            if node is None:
                return self.inline_insert(k, a, b, texts, at_end)
            if at_end:
                col = node.end_mark.column
                self.t.body[k] = body[:col] + "".join(f", {_q(x)}" for x in texts) + body[col:]
            else:
                col = node.start_mark.column
                self.t.body[k] = body[:col] + "".join(f"{_q(x)}, " for x in texts) + body[col:]
            return
        if cont.kind == "block":
            if self.whole(cont, k, anchor) is None:
                return self.inline_insert(k, a, b, texts, at_end)
            lead = _ITEM.match(body).group(1)
            lines = [f"{lead}- {_scalar(x)}{self.t.ending(k)}" for x in texts]
        else:                   # a ptx: | block: a line of its own when the anchor has one
            lead = re.match(r"\s*", body).group(0)
            tail = body[b:]
            if a != len(lead) or not re.fullmatch(r"\s*;?\s*(//.*)?", tail):
                return self.inline_insert(k, a, b, texts, at_end)
            semi = ";" if tail.lstrip().startswith(";") else ""
            lines = [f"{lead}{x}{semi}{self.t.ending(k)}" for x in texts]
        (self.t.after if at_end else self.t.before).setdefault(k, []).extend((order, ln) for ln in lines)

    def inline_insert(self, k: int, a: int, b: int, texts: list[str], at_end: bool) -> None:
        body = self.t.body[k]
        if any(re.search(r"['\"#\\]", x) for x in texts):
            raise Unpatchable(f"the new instruction cannot be written into line {k + 1}")
        if at_end:
            m = re.match(r"\s*;", body[b:])
            if m:
                b += m.end()
                self.t.body[k] = body[:b] + "".join(f" {x};" for x in texts) + body[b:]
            else:
                self.t.body[k] = body[:b] + "".join(f"; {x}" for x in texts) + body[b:]
        else:
            self.t.body[k] = body[:a] + "".join(f"{x}; " for x in texts) + body[a:]


def _edit(text: _Text, test: LitmusTest, containers, edits: tuple[Edit, ...], subst=None) -> None:
    p = _Patcher(text, test, containers, subst)
    for e in sorted(edits, key=lambda e: e.key):
        for c in e.changes:
            if isinstance(c, Delete):
                p.delete(c)
            elif isinstance(c, Replace):
                p.replace(c)
            else:
                p.insert(c, (c.phase, e.key))
    for c in containers.values():                   # a block list left without items: `code: []`
        lines = {n.start_mark.line for n in c.node.value} if c.kind == "block" else set()
        if lines and lines <= text.gone and not any(
                k in text.before or k in text.after for k in lines):
            k = c.key.start_mark.line
            end = c.key.end_mark.column
            if c.key.end_mark.line != k or not re.fullmatch(r"\s*:\s*(#.*)?", text.body[k][end:]):
                raise Unpatchable(f"thread code on line {k + 1} cannot be emptied")
            text.body[k] = text.body[k][:end] + ": []" + text.body[k][end:].split(":", 1)[1].rstrip()


# ------------------------------------------------------------------------------- patch ----

def patch(original: str, test: LitmusTest, edits: tuple[Edit, ...], fixed: LitmusTest, why: str = "") -> Patched:
    """The file `original` with `edits` made to `test` (`fixed`: the edited test, rendered when
    a matrix row cannot be copied from the text). Unpatchable when the text cannot take them."""
    root = _compose(original)
    if root is None:
        raise Unpatchable("the file's text does not parse as YAML")
    if test.matrix_row is not None:
        try:
            return _row_copy(original, root, test, edits, why)
        except Unpatchable as e:
            new_name = _fresh(original, test.name)
            own = replace(fixed, expectations=test.expectations, expect_undefined=test.expect_undefined,
                          expect_hang=test.expect_hang)
            nl = _newline(original)
            body = render_test(_with_doc(own, why), new_name).replace("\n", nl)
            return _append(original, root, new_name, _as_item(body, nl),
                           f"a row of a matrix, rendered from the fixed test (its text could not be copied: {e})")
    item = _test_node(root, test)
    t = _Text(original)
    _edit(t, test, _containers(item), edits)
    return Patched(t.render(), False, test.name)


def _with_doc(fixed: LitmusTest, why: str) -> LitmusTest:
    return replace(fixed, doc=f"{fixed.doc.strip()} [{why}]".strip()) if why else fixed


def _fresh(original: str, name: str) -> str:
    names = set(re.findall(r"name:\s*['\"]?([^\s'\"]+)", original))
    new, n = f"{name}-fixed", 2
    while new in names:
        new, n = f"{name}-fixed{n}", n + 1
    return new


def _row_copy(original: str, root, test: LitmusTest, edits, why: str) -> Patched:
    """The matrix row `test`, copied from its test's text, edited, appended as a new test."""
    item = _test_node(root, test)
    first, last = item.start_mark.line, _last_line(item)
    t = _Text(original)
    values = dict(test.matrix_row or ())

    def subst(s: str) -> str:
        return re.sub(r"\$\{([^}]*)\}", lambda m: values.get(m.group(1), m.group(0)), s)

    for k in range(first, last + 1):                # the row's values, as the loader substitutes them
        t.body[k] = subst(t.body[k])
    containers = _containers(item)
    for c in containers.values():                   # an item whose value was a placeholder for nothing
        if c.kind == "block":
            for node in c.node.value:
                k = node.start_mark.line
                if "${" in t.lines[k] and re.fullmatch(r"\s*-\s*(''|\"\")?\s*(#.*)?", t.body[k]):
                    t.gone.add(k)
    _edit(t, test, containers, edits, subst)
    drop = set()
    matrix = _key(item, "matrix")
    if matrix is not None:
        drop |= set(range(matrix[0].start_mark.line, _last_line(matrix[1]) + 1))
    name = _key(item, "name")
    if name is None or name[1].start_mark.line != name[1].end_mark.line:
        raise Unpatchable("the test's name is not one line of text")
    new_name = _fresh(original, test.name)
    k = name[1].start_mark.line
    body = _cut(t.lines[k])[0]
    t.body[k] = body[:name[1].start_mark.column] + _scalar(new_name) + subst(body[name[1].end_mark.column:])
    rows = [r for r in matrix[1].value if isinstance(r, yaml.MappingNode)] if matrix is not None else []
    if any(_key(r, "expect") is not None for r in rows):
        # the row's expect: merged into the test's, written out
        exp = _key(item, "expect")
        if exp is not None:
            drop |= set(range(exp[0].start_mark.line, _last_line(exp[1]) + 1))
        extra = render_expect(test)
    else:
        extra = []
    if any(k in drop for k in (*t.before, *t.after, *t.gone)):
        raise Unpatchable("an edit falls among the matrix's lines")
    col = item.start_mark.column
    t.body[first] = " " * col + t.body[first][col:]         # `- name: ...` of a list: the dash goes

    def keep(k: int) -> bool:
        return first <= k <= last and k not in drop

    lines = split_lines(t.render(keep))
    if extra:
        if lines and not _cut(lines[-1])[1]:
            lines[-1] += t.nl
        lines += [" " * col + ln + t.nl for ln in extra]
    if why:
        lines.insert(0, " " * max(col - 2, 0) + f"# {why}{t.nl}")
    if col == 0:                                    # the file's one test: indented as a list item
        return _append(original, root, new_name, _as_item("".join(lines), t.nl), _ROW)
    for n, line in enumerate(lines):                # a list's item: the dash back before its first key
        content, end = _cut(line)
        if content.strip() and not content.lstrip().startswith("#"):
            if col < 2 or content[col - 2:col] != "  ":
                raise Unpatchable("the test's first key is not where a list item's dash can go")
            lines[n] = content[:col - 2] + "- " + content[col:] + end
            break
    return _append(original, root, new_name, "".join(lines), _ROW)


_ROW = "a row of a matrix: its lines are shared with the other rows, so the fixed row is a copy of its test"


def _append(original: str, root, new_name: str, item: str, how: str) -> Patched:
    """`original` with `item` (a list item's text) appended to its list; a file holding one test
    becomes a list of two."""
    nl = _newline(original)
    text = original if not original or _cut(split_lines(original)[-1])[1] else original + nl
    if not isinstance(root, yaml.SequenceNode):
        text = _as_list(text)
    return Patched(text + item, True, new_name, how)


def _as_item(body: str, nl: str) -> str:
    out, dashed = [], False
    for line in split_lines(body if body.endswith(("\n", "\r")) else body + nl):
        content, end = _cut(line)
        if not dashed and content.strip() and not content.lstrip().startswith("#"):
            out.append("- " + content + end)
            dashed = True
        else:
            out.append(("  " + content if content else content) + end)
    return "".join(out)


def _as_list(text: str) -> str:
    """A file holding one test (a mapping at the top) as a list holding that test."""
    for line in split_lines(text):
        content = _cut(line)[0]
        if re.match(r"(---|\.\.\.)(\s|$)|%", content):
            raise Unpatchable("the file has YAML document markers or directives")
    return _as_item(text, _newline(text))


# ------------------------------------------------------------------------------ render ----

def _decl(m: MemoryDecl) -> str:
    fields = []
    if m.alias_of:
        return f"{{alias_of: {m.alias_of}}}"
    if m.view_of:
        return f"{{{m.view}_of: {m.view_of}}}"
    if m.space != "global":
        fields.append(f"space: {m.space}")
    if m.owner is not None:
        fields.append(f"owner: {m.owner.cta_text()}")
    if m.mbarrier:
        fields.append("mbarrier: {" + ", ".join(f"{k}: {v}" for k, v in m.mbarrier.items()) + "}")
    elif m.init or not fields:
        fields.append(f"init: {m.init}")
    if m.tensormap:
        fields.append("tensormap: {" + ", ".join(f"{k}: {v}" for k, v in m.tensormap.items()) + "}")
    if m.offset_of:
        fields.append(f"offset_of: {m.offset_of}")
    if m.size is not None:
        fields.append(f"size: {m.size}")
    if m.box is not None:
        fields.append(f"box: {m.box}")
    if m.strides is not None:
        fields.append("strides: [" + ", ".join(str(x) for x in m.strides) + "]")
    return "{" + ", ".join(fields) + "}" if len(fields) > 1 or not fields[0].startswith("init") else str(m.init)


def render_expect(t: LitmusTest) -> list[str]:
    """The `expect:` lines of a test (none when it expects nothing)."""
    exp = []
    for kind in ("forbidden", "allowed"):
        conds = [e.text for e in t.expectations if e.kind == kind]
        if conds:
            exp.append(f"  {kind}: [" + ", ".join(_q(c) for c in conds) + "]")
    if t.expect_undefined is not None:
        exp.append(f"  undefined: {'true' if t.expect_undefined else 'false'}")
    if t.expect_hang is not None:
        exp.append(f"  hang: {'allowed' if t.expect_hang else 'forbidden'}")
    return ["expect:"] + exp if exp else []


def render_test(t: LitmusTest, name: str) -> str:
    """One test as YAML (a mapping), its memory, threads and expectations written out."""
    from ..front.conditions import show

    out = [f"name: {_scalar(name)}"]
    if t.doc:
        out.append(f"doc: {_q(' '.join(t.doc.split()))}")
    if t.source:
        out.append(f"source: {_q(t.source)}")
    if t.arch:
        out.append(f"arch: {t.arch}")
    used = {m.name for m in t.memory if m.where is not None and m.where.text == m.name}
    decls = [m for m in t.memory if m.name in used or m.space != "global" or m.init or m.alias_of
             or m.view_of or m.tensormap or m.mbarrier or m.offset_of or m.size is not None]
    if decls:
        out.append("memory:")
        out += [f"  {m.name}: {_decl(m)}" for m in decls]
    out.append("threads:")
    for th in t.threads:
        p = th.position
        at = p.cta_text() + (f".warp{p.warp}" if p.warp else "")
        out += [f"  {th.name}:", f"    at: {at}", "    code:"]
        at_index: dict[int, list[str]] = {}
        for label, k in th.labels:          # each `L:` before the instruction it precedes
            at_index.setdefault(k, []).append(label)
        for k in range(len(th.code) + 1):
            out += [f"      - {_scalar(label + ':')}" for label in at_index.get(k, ())]
            if k < len(th.code):
                out.append(f"      - {_scalar(th.code[k].text)}")
    if len(t.kernels) > 1:
        out.append("kernels:")
        out += [f"  - {{name: {_q(k.name)}, launch: {k.launch}, threads: [{', '.join(k.threads)}]}}" for k in t.kernels]
    if t.threads_per_litmus_thread != 1:
        out.append(f"threads_per_litmus_thread: {t.threads_per_litmus_thread}")
    if t.filter is not None:
        out.append(f"filter: {_q(show(t.filter))}")
    if t.locations:
        out.append("locations: [" + ", ".join(_q(str(x)) for x in t.locations) + "]")
    if t.rlimit is not None:
        out.append(f"rlimit: {t.rlimit}")
    if t.unroll is not None:
        out.append(f"unroll: {t.unroll}")
    out += render_expect(t)
    return "\n".join(out) + "\n"


def diff(original: str, patched: str, path: str, new_path: str | None = None) -> str:
    """A unified diff of the two texts."""
    return "".join(difflib.unified_diff(split_lines(original), split_lines(patched),
                                        fromfile=_side("a", path), tofile=_side("b", new_path or path)))


def _side(prefix: str, path: str) -> str:
    return path if path.startswith("/") else f"{prefix}/{path}"
