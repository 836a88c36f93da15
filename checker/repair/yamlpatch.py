"""A repair as a change of the YAML file: `patch` edits the text at the instructions' own lines,
keeping everything else as the user wrote it; `render_test` writes one test as a standalone YAML
item (for matrix rows).

- An inserted instruction becomes a new list item `- TEXT` with the indentation of its
  neighbour: before the instruction it precedes, or after the thread's last instruction.
- A strengthened (or, for --prune, weakened) instruction is rewritten on its line: the old
  instruction text is replaced by the new one; a removed one loses its line.
- A test that is a row of a `matrix:` shares its instruction lines with the other rows, so
  editing them would change every row. The edited row is written instead as a new standalone
  test named NAME-fixed (the row's values substituted, the target as its expectations),
  appended to the file when the file is a list of tests, or as the whole fixed copy when the file
  holds a single test.
- A code list written in flow style (`code: [a, b]`) or an instruction spread over several
  lines has no line of its own to edit: the test is then written standalone too.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace

import yaml

from ..ast import LitmusTest, MemoryDecl
from .edits import Delete, Edit, Replace

_ITEM = re.compile(r"^(\s*)-\s+(.*?)\s*$")


@dataclass(frozen=True)
class Patched:
    text: str                   # the whole fixed file
    standalone: bool            # the test was written as a new standalone test
    name: str                   # the fixed test's name in `text`


def _scalar(text: str) -> str:
    """`text` as a YAML list item's value: plain when it reads back the same, else quoted."""
    try:
        if yaml.safe_load(f"- {text}") == [text]:
            return text
    except yaml.YAMLError:
        pass
    return "'" + text.replace("'", "''") + "'"


def patch(original: str, test: LitmusTest, edits: tuple[Edit, ...], fixed: LitmusTest, why: str = "") -> Patched:
    """The file `original` with `edits` made to `test` (`fixed`: the edited test, used when it
    must be written standalone)."""
    if why:
        fixed = replace(fixed, doc=f"{fixed.doc.strip()} [{why}]".strip())
    if test.matrix_row is not None:
        return _standalone(original, fixed, test.name)
    lines = original.splitlines(keepends=True)
    threads = {t.name: t for t in test.threads}
    if _shared_lines(test):
        return _standalone(original, fixed, test.name)
    before: dict[int, list[str]] = {}      # line index -> new lines to put before it
    after: dict[int, list[str]] = {}
    rewrite: dict[int, str] = {}
    for e in sorted(edits, key=lambda e: e.key):
        for c in e.changes:
            th = threads[c.thread]
            if isinstance(c, Delete):
                k = _line_index(lines, th.code[c.index])
                if k is None:
                    return _standalone(original, fixed, test.name)
                rewrite[k] = ""
                continue
            if isinstance(c, Replace):
                ins = th.code[c.index]
                k = _line_index(lines, ins)
                if k is None or ins.text not in lines[k]:
                    return _standalone(original, fixed, test.name)
                rewrite[k] = rewrite.get(k, lines[k]).replace(ins.text, _scalar(c.instr.text)
                                                              if not _quoted(lines[k], ins.text) else c.instr.text, 1)
                continue
            anchor = th.code[c.point] if c.point < len(th.code) else (th.code[-1] if th.code else None)
            k = _line_index(lines, anchor) if anchor is not None else None
            if k is None:
                return _standalone(original, fixed, test.name)
            indent = _ITEM.match(lines[k]).group(1)
            new = [f"{indent}- {_scalar(i.text)}\n" for i in c.instrs]
            target = before if c.point < len(th.code) else after
            target.setdefault(k, []).append((c.phase, e.key, new))
    out = []
    for k, line in enumerate(lines):
        for _, _, new in sorted(before.get(k, []), key=lambda x: (x[0], x[1])):
            out.extend(new)
        line = rewrite.get(k, line)
        if line:
            out.append(line if line.endswith("\n") else line + "\n")
        for _, _, new in sorted(after.get(k, []), key=lambda x: (x[0], x[1])):
            out.extend(new)
    return Patched("".join(out), False, test.name)


def _shared_lines(test: LitmusTest) -> bool:
    """Whether two instructions share a line (`a; b` in one code item): an edit at one of them
    cannot be placed by lines, so the test is written standalone."""
    seen = set()
    for th in test.threads:
        for i in th.code:
            if i.where is not None:
                if i.where.line in seen:
                    return True
                seen.add(i.where.line)
    return False


def _quoted(line: str, text: str) -> bool:
    i = line.find(text)
    return i > 0 and line[i - 1] in "'\""


def _line_index(lines: list[str], ins) -> int | None:
    """The 0-based line of an instruction written as a block list item of its own, or None."""
    if ins is None or ins.where is None or not 0 < ins.where.line <= len(lines):
        return None
    k = ins.where.line - 1
    m = _ITEM.match(lines[k])
    if m is None or ins.text not in m.group(2):
        return None
    return k


def _standalone(original: str, fixed: LitmusTest, name: str) -> Patched:
    names = set(re.findall(r"name:\s*['\"]?([^\s'\"]+)", original))
    new_name = f"{name}-fixed"
    n = 2
    while new_name in names:
        new_name = f"{name}-fixed{n}"
        n += 1
    body = render_test(fixed, new_name)
    try:
        root = yaml.safe_load(original)
    except yaml.YAMLError:
        root = None
    if isinstance(root, list):
        text = original if original.endswith("\n") else original + "\n"
        item = "".join(("- " if k == 0 else "  ") + line + "\n" for k, line in enumerate(body.splitlines()))
        return Patched(text + item, True, new_name)
    return Patched(body, True, new_name)


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


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
    return "{" + ", ".join(fields) + "}" if len(fields) > 1 or not fields[0].startswith("init") else str(m.init)


def render_test(t: LitmusTest, name: str) -> str:
    """One test as YAML (a mapping), its memory, threads and expectations written out."""
    out = [f"name: {name}"]
    if t.doc:
        out.append(f"doc: {_q(' '.join(t.doc.split()))}")
    if t.source:
        out.append(f"source: {_q(t.source)}")
    if t.arch:
        out.append(f"arch: {t.arch}")
    used = {m.name for m in t.memory if m.where is not None and m.where.text == m.name}
    decls = [m for m in t.memory if m.name in used or m.space != "global" or m.init or m.alias_of
             or m.view_of or m.tensormap or m.mbarrier or m.offset_of]
    if decls:
        out.append("memory:")
        out += [f"  {m.name}: {_decl(m)}" for m in decls]
    out.append("threads:")
    for th in t.threads:
        p = th.position
        at = p.cta_text() + (f".warp{p.warp}" if p.warp else "")
        out += [f"  {th.name}:", f"    at: {at}", "    code:"]
        out += [f"      - {_scalar(i.text)}" for i in th.code]
    if len(t.kernels) > 1:
        out.append("kernels:")
        out += [f"  - {{name: {_q(k.name)}, launch: {k.launch}, threads: [{', '.join(k.threads)}]}}" for k in t.kernels]
    if t.threads_per_litmus_thread != 1:
        out.append(f"threads_per_litmus_thread: {t.threads_per_litmus_thread}")
    exp = []
    for kind in ("forbidden", "allowed"):
        conds = [e.text for e in t.expectations if e.kind == kind]
        if conds:
            exp.append(f"  {kind}: [" + ", ".join(_q(c) for c in conds) + "]")
    if t.expect_undefined is not None:
        exp.append(f"  undefined: {'true' if t.expect_undefined else 'false'}")
    if exp:
        out += ["expect:"] + exp
    return "\n".join(out) + "\n"


def diff(original: str, patched: str, path: str, new_path: str | None = None) -> str:
    """A unified diff of the two texts."""
    return "".join(difflib.unified_diff(original.splitlines(keepends=True), patched.splitlines(keepends=True),
                                        fromfile=_side("a", path), tofile=_side("b", new_path or path)))


def _side(prefix: str, path: str) -> str:
    return path if path.startswith("/") else f"{prefix}/{path}"
