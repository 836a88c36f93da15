"""A whole PTX module as a compiler prints it (`.ptx` file) -> its kernels' statements.

What is read (PTX ISA, *PTX Module Directives*, *Kernel and Function Directives*):

- `.version`, `.target`, `.address_size` (kept), `.file`/`.loc`/`.pragma` and `@@DWARF` lines
  (skipped: no semantics for synchronization), `.section` debug blocks (skipped whole);
- module-scope variables (`.global`, `.const`, `.shared`, `.extern .shared`): their names and
  sizes, so that an address can be traced to them;
- `.entry` / `.func` with their `.param` lists and performance directives (`.reqntid`,
  `.maxntid`, `.reqnctapercluster`, `.explicitcluster`, `.maxnreg`, ...);
- a function body: `.reg` declarations, `.shared`/`.local` variables declared in it, labels,
  instructions, and `{ }` scopes. A scope (nvcc prints one per inline-asm block) has its own
  labels and registers: they are renamed per scope (`waitLoop` -> `waitLoop@3`) so that the
  same inline-asm loop pasted twice does not clash.

Every statement keeps its line, so every later error names the PTX line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ast import Instr
from ..errors import LitmusError, SourceLoc
from ..isa.syntax import parse as parse_instr
from ..front.ptx_text import comment
from ..front.scopes import renamed as _renamed

_IDENT = r"[A-Za-z_$%][\w$]*"


@dataclass(frozen=True)
class Symbol:
    """A variable of the module or of a kernel: its state space, byte size (None: unsized, as an
    `.extern .shared` array) and alignment."""

    name: str
    space: str
    size: int | None
    align: int
    line: int


@dataclass(frozen=True)
class Stmt:
    """One statement of a function body: an instruction (`instr`) or a label (`label`)."""

    line: int
    text: str
    instr: Instr | None = None
    label: str | None = None


@dataclass
class Function:
    name: str
    entry: bool
    line: int
    params: list[tuple[str, str, int | None]] = field(default_factory=list)   # (name, type, array bytes)
    attrs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    body: list[Stmt] = field(default_factory=list)
    symbols: dict[str, Symbol] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)      # renamed label -> index in body
    tables: dict[str, list[str]] = field(default_factory=dict)  # .branchtargets label -> labels (brx.idx)

    def block(self) -> tuple[int, int, int] | None:
        for key in ("reqntid", "maxntid"):
            if key in self.attrs:
                dims = tuple(self.attrs[key]) + (1, 1)
                return dims[0], dims[1], dims[2]
        return None

    def cluster(self) -> tuple[int, int, int] | None:
        if "reqnctapercluster" in self.attrs:
            dims = tuple(self.attrs["reqnctapercluster"]) + (1, 1)
            return dims[0], dims[1], dims[2]
        return None


@dataclass
class Module:
    path: str
    version: str = ""
    target: str = ""
    address_size: int = 64
    symbols: dict[str, Symbol] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)

    def kernels(self) -> list[Function]:
        return [f for f in self.functions.values() if f.entry]


# ------------------------------------------------------------------------------- scanning --

@dataclass(frozen=True)
class _Tok:
    kind: str          # 'stmt' | 'open' | 'close'
    text: str
    line: int


def _tokens(text: str, path: str) -> list[_Tok]:
    """Statements (ending at ';'), labels (ending at ':'), and block braces, with their lines.
    Comments are dropped; a `.section` debug block and `@@DWARF` lines are dropped whole."""
    out: list[_Tok] = []
    cur: list[str] = []
    start = line = 1
    depth_vec = depth_sq = depth_paren = 0
    i, n = 0, len(text)
    lines = text.splitlines()

    def fail(msg: str, at: int):
        raise LitmusError(msg, SourceLoc(path, at, lines[at - 1].strip() if 0 < at <= len(lines) else ""))

    def emit(kind: str = "stmt"):
        nonlocal cur
        s = " ".join("".join(cur).split())
        if s:
            out.append(_Tok(kind, s, start))
        cur = []

    while i < n:
        c = text[i]
        skip = comment(text, i)
        if skip is not None:
            if skip[0] < 0:
                fail("unterminated '/*' comment", line)
            i, line = skip[0], line + skip[1]
            continue
        if not "".join(cur).strip():
            start = line
            if text.startswith("@@DWARF", i) or (text.startswith(".section", i) and not depth_paren):
                # a debug section: skip to its closing brace (or the line, for @@DWARF)
                if text.startswith("@@DWARF", i):
                    j = text.find("\n", i)
                    i = n if j < 0 else j
                    continue
                j = text.find("{", i)
                k = text.find("}", j) if j >= 0 else -1
                if k < 0:
                    fail("unclosed '.section' block", line)
                line += text.count("\n", i, k)
                i = k + 1
                continue
        if c == "\n":
            if "".join(cur).lstrip().startswith(_LINE_DIRECTIVES) and not depth_paren:
                emit()          # these directives end at the end of their line (no ';')
            line += 1
            cur.append(" ")
        elif c == "(":
            depth_paren += 1
            cur.append(c)
        elif c == ")":
            depth_paren -= 1
            cur.append(c)
        elif c == "[":
            depth_sq += 1
            cur.append(c)
        elif c == "]":
            depth_sq -= 1
            cur.append(c)
        elif c == "{" and not "".join(cur).strip():
            out.append(_Tok("open", "{", line))
        elif c == "{" and depth_paren == 0 and _header(cur):
            emit()
            out.append(_Tok("open", "{", line))
        elif c == "{":
            depth_vec += 1
            cur.append(c)
        elif c == "}" and depth_vec:
            depth_vec -= 1
            cur.append(c)
        elif c == "}":
            if "".join(cur).strip():
                fail("a statement before '}' has no ';'", start)
            out.append(_Tok("close", "}", line))
        elif c == ";" and not depth_vec and not depth_sq and not depth_paren:
            emit()
        elif c == ":" and not depth_vec and not depth_sq and not depth_paren and text[i + 1:i + 2] != ":" \
                and text[i - 1:i] != ":" and re.fullmatch(r"\s*[$A-Za-z_][\w$]*", "".join(cur)):
            cur.append(":")
            emit()
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        fail("the file ends inside a statement (missing ';')", start)
    return out


_LINE_DIRECTIVES = (".version", ".target", ".address_size", ".file", ".loc")


def _header(cur: list[str]) -> bool:
    """Does the text before a '{' end a function header (`.entry f(...) .maxntid 128`)?"""
    s = "".join(cur)
    return bool(re.search(r"\.(entry|func)\b", s))


# -------------------------------------------------------------------------------- parsing --

_VAR = re.compile(r"(?:\.(?:extern|visible|weak|common)\s+)*\.(global|const|shared|local)\s+(.*)")
_ALIGN = re.compile(r"\.align\s+(\d+)")
_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
               "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8,
               "b128": 16, "pred": 1}


def _variable(text: str, line: int, path: str) -> Symbol | None:
    m = _VAR.fullmatch(text)
    if m is None:
        return None
    space, rest = m.group(1), m.group(2)
    align_m = _ALIGN.search(rest)
    align = int(align_m.group(1)) if align_m else 1
    rest = _ALIGN.sub("", rest).split("=")[0].strip()
    tm = re.fullmatch(r"(?:\.v(\d)\s+)?\.(\w+)\s+([\w$]+)\s*((?:\[\s*\d*\s*\])*)", rest)
    if tm is None:
        raise LitmusError(f"malformed .{space} variable declaration", SourceLoc(path, line, text))
    elem = _TYPE_BYTES.get(tm.group(2))
    if elem is None:
        raise LitmusError(f"'.{tm.group(2)}': unknown variable type", SourceLoc(path, line, text))
    elem *= int(tm.group(1) or 1)
    size: int | None = elem
    for d in re.findall(r"\[\s*(\d*)\s*\]", tm.group(4)):
        size = None if (d == "" or size is None) else size * int(d)
    return Symbol(tm.group(3), space, size, max(align, 1), line)


def _signature(text: str, line: int, path: str) -> Function:
    where = SourceLoc(path, line, text[:120])
    m = re.fullmatch(r"((?:\.\w+\s+)*)\.(entry|func)\s+(?:\((.*?)\)\s*)?([\w$]+)\s*(?:\((.*?)\))?\s*(.*)", text)
    if m is None:
        raise LitmusError("malformed function header", where)
    fn = Function(m.group(4), m.group(2) == "entry", line)
    for p in (x.strip() for x in (m.group(5) or "").split(",")):
        if not p:
            continue
        pm = re.fullmatch(r"\.(?:param|reg)((?:\s+\.\w+(?:\s+\d+)?)+)\s+([\w$]+)\s*(?:\[(\d+)\])?", p)
        types = [t for t in re.findall(r"\.(\w+)", pm.group(1)) if t in _TYPE_BYTES] if pm else []
        if pm is None or not types:
            raise LitmusError(f"malformed parameter '{p}'", where)
        fn.params.append((pm.group(2), types[0], int(pm.group(3)) if pm.group(3) else None))
    for dm in re.finditer(r"\.(\w+)((?:\s*\d+\s*,?)*)", m.group(6) or ""):
        fn.attrs[dm.group(1)] = tuple(int(x) for x in re.findall(r"\d+", dm.group(2)))
    return fn


_SKIP = (".file", ".loc", ".pragma", ".maxnreg", ".minnctapersm", ".maxnctapersm", ".noreturn")


def load(text: str, path: str = "<string>") -> Module:
    """Parse a PTX module. LitmusError (with the line) for anything malformed; a file that is not
    PTX at all (no `.version`/`.target`) is refused up front."""
    if "\x00" in text:
        raise LitmusError("not a PTX file (binary data)", SourceLoc(path, 1, ""))
    head = re.sub(r"//[^\n]*|/\*.*?\*/", "", text[:20000], flags=re.S).lstrip()
    if not head.startswith(".version"):
        first = head.splitlines()[0][:80] if head else ""
        line = text[:text.find(first)].count("\n") + 1 if first and first in text else 1
        raise LitmusError("not a PTX file: a PTX module starts with '.version'", SourceLoc(path, line, first))
    mod = Module(path)
    toks = _tokens(text, path)
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "close":
            raise LitmusError("unbalanced '}'", SourceLoc(path, t.line, "}"))
        if t.kind == "open":
            raise LitmusError("a '{' block outside a function", SourceLoc(path, t.line, "{"))
        word = t.text.split()[0]
        if word == ".version":
            mod.version = t.text.split()[1] if len(t.text.split()) > 1 else ""
        elif word == ".target":
            mod.target = t.text.split(None, 1)[1] if len(t.text.split()) > 1 else ""
        elif word == ".address_size":
            mod.address_size = int(t.text.split()[1])
        elif word.startswith(_SKIP) or word == ".section":
            pass
        elif re.search(r"\.(entry|func)\b", t.text):
            fn = _signature(t.text, t.line, path)
            if i + 1 < len(toks) and toks[i + 1].kind == "open":
                i = _body(fn, toks, i + 2, mod, path)
            mod.functions[fn.name] = fn
        else:
            sym = _variable(t.text, t.line, path)
            if sym is None:
                raise LitmusError(f"'{word}': not a PTX module directive" + (
                    " (is this a PTX file?)" if not mod.version else ""), SourceLoc(path, t.line, t.text[:120]))
            mod.symbols[sym.name] = sym
        if not mod.version and word not in (".version",):
            raise LitmusError("not a PTX file: it must start with '.version'", SourceLoc(path, t.line, t.text[:120]))
        i += 1
    if not mod.target:
        raise LitmusError("not a PTX file: no '.target' directive", SourceLoc(path, 1, ""))
    return mod


def _body(fn: Function, toks: list[_Tok], i: int, mod: Module, path: str) -> int:
    """Read a function body from toks[i] to its closing brace; the index after it."""
    raw: list[tuple[_Tok, tuple[int, ...]]] = []
    scopes = [0]
    counter = 0
    while True:
        if i >= len(toks):
            raise LitmusError(f"function '{fn.name}' has no closing '}}'", SourceLoc(path, fn.line, fn.name))
        t = toks[i]
        if t.kind == "open":
            counter += 1
            scopes.append(counter)
        elif t.kind == "close":
            scopes.pop()
            if not scopes:
                break
        else:
            raw.append((t, tuple(scopes)))
        i += 1
    # pass 1: labels and registers declared per scope
    labels: dict[tuple[int, str], int] = {}
    regs: dict[tuple[int, str], str] = {}
    stmts: list[tuple[_Tok, tuple[int, ...]]] = []
    pending: list[tuple[str, tuple]] = []       # a label just read (a .branchtargets table's name)
    for t, chain in raw:
        word = t.text.split()[0]
        if word == ".branchtargets":
            if not stmts or not stmts[-1][0].text.endswith(":"):
                raise LitmusError(".branchtargets without a label", SourceLoc(path, t.line, t.text))
            lab_tok, lab_chain = stmts.pop()
            del labels[(lab_chain[-1], lab_tok.text[:-1])]
            pending.append((lab_tok.text[:-1], chain, [x.strip() for x in t.text.split(None, 1)[1].split(",")], t))
            continue
        if t.text.endswith(":") and " " not in t.text:
            labels[(chain[-1], t.text[:-1])] = len(stmts)
            stmts.append((t, chain))
        elif word == ".reg":
            for name in _declared(t.text, t.line, path):
                regs[(chain[-1], name)] = name if chain[-1] == 0 else f"{name}@{chain[-1]}"
        elif word.startswith(_SKIP):
            continue
        elif word.startswith("."):
            sym = _variable(t.text, t.line, path)
            if sym is None:
                raise LitmusError(f"directive '{word}' is not read inside a function", SourceLoc(path, t.line, t.text))
            fn.symbols[sym.name] = sym
        else:
            stmts.append((t, chain))
    known = frozenset(mod.symbols) | frozenset(fn.symbols) | frozenset(p[0] for p in fn.params)

    def resolve_label(name: str, chain) -> str:
        for sid in reversed(chain):
            if (sid, name) in labels:
                return name if sid == 0 else f"{name}@{sid}"
        raise LitmusError(f"branch to undefined label '{name}'", SourceLoc(path, t.line, t.text))

    def rename(name: str, chain) -> str:
        for sid in reversed(chain):
            if (sid, name) in regs:
                return regs[(sid, name)]
        return name

    for name, chain, targets, t in pending:
        fn.tables[name] = [resolve_label(x, chain) for x in targets if x]
    for t, chain in stmts:
        if t.text.endswith(":") and " " not in t.text:
            lab = resolve_label(t.text[:-1], chain)
            fn.labels[lab] = len(fn.body)
            fn.body.append(Stmt(t.line, t.text, label=lab))
            continue
        where = SourceLoc(path, t.line, t.text)
        text = re.sub(r"\+\s*-(?=\s*\d)", "-", t.text)        # nvcc prints [%rd2+-16]
        ins = parse_instr(text, where, known)
        ins = _renamed(ins, chain, rename, resolve_label, regs)
        fn.body.append(Stmt(t.line, t.text, instr=ins))
    return i


def _declared(text: str, line: int, path: str) -> list[str]:
    m = re.fullmatch(r"\.reg\s+(?:\.v[248]\s+)?\.(\w+)\s+(.+)", text)
    if m is None:
        raise LitmusError("malformed .reg declaration", SourceLoc(path, line, text))
    out = []
    for item in (x.strip() for x in m.group(2).split(",")):
        d = re.fullmatch(r"%?([\w$]+)(?:<(\d+)>)?", item)
        if d is None:
            raise LitmusError(f"malformed register name '{item}'", SourceLoc(path, line, text))
        out += [d.group(1)] if d.group(2) is None else [f"{d.group(1)}{k}" for k in range(int(d.group(2)))]
    return out
