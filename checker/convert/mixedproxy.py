"""`ptxmc import --from mixedproxy`: NVlabs/mixedproxy `.test` files (the ISCA'22 mixed-proxy
artifact's litmus format).

Accepted subset and how it maps:

  mixedproxy                              ptxmc
  (file name)                             name (the format has none)
  leading // comment lines                doc
  .global x;                              memory: x: 0 (global)
  .shared x;                              x: {space: shared, owner: the CTA of the threads using
                                          x} (refused if threads of several CTAs use it)
  .global y physically aliases x;         y: {alias_of: x}    (another virtual address of x)
  .texref t virtually aliases x;          t: {texture_of: x}  (also .surfref -> surface_of,
                                          .conref -> constant_of: the ISCA'22 views)
  dD.bB.tT { ... }                        thread dDbBtT at gpuD.ctaB (the threads of one CTA in
                                          warps 0, 1, ... in file order)
  ld[.sem][.scope] r, [x]                 ld.weak / ld.volatile / ld.relaxed|acquire.SCOPE r, [x]
                                          (no semantics is .weak, as in PTX)
  st[.sem][.scope] [x], v                 st.weak / st.volatile / st.relaxed|release.SCOPE [x], v
  tld r, [t] / ldc r, [c] / suld r, [s] / sust [s], v   the same (weak only)
  atom.add[.sem][.scope] r, [x], v        atom[.sem][.scope].add r, [x], v (PTX defaults
                                          .relaxed.gpu when left out)
  red.add[.sem][.scope] [x], v            red[.sem][.scope].add [x], v
  fence.sem.scope                         fence.sem.scope
  fence.proxy.P / fence.alias             fence.proxy.P / fence.proxy.alias
  ... == v  (the return value)            an await, `... == v` (ptxmc's await is this
                                          convention; it also gives the later instructions a
                                          control dependency on the read, as a spin loop has)
  permit (C) as n;  check (C) as n;       expect: allowed: [C]
  assert (C) as n;                        expect: forbidden: [~(C)]  (C holds in every execution)
  C: r0 == 1, r0 != 1, &&, ||, not, ()    herd syntax, registers named by their thread
                                          (`d0b0t1:r0=1`)

The file's commands state its expectations, so they are imported as the file's claim. Note on
semantics: the artifact's tool reads .weak, .volatile and unqualified accesses alike as
relaxed.sys; ptxmc imports each as the PTX instruction it spells (`ld [x]` is `ld.weak`), so a
stated verdict about weak accesses is a claim made under the tool's reading, which a ptxmc run
may contradict.

Refused, with the reason: `$N` template files (expand them first), surface atomics (suatom,
sured), fences without a scope (the tool reads them as thread scope, which PTX has no qualifier
for), texture/surface/constant accesses with semantics, a register used by two threads
(registers are global names in the format), comparisons of two registers, and `not C && D`
(ambiguous in the format's grammar; write `not (C) && D`).
"""
from __future__ import annotations

import re

from ..ast import RegRef
from . import herdcommon as hc
from .conditions import negate, text_of, translate
from .model import Code, TestIR, ThreadIR, fail

_DECL = re.compile(r"\.(global|shared)\s+([A-Za-z_]\w*)(?:\s+physically\s+aliases\s+([A-Za-z_]\w*))?\s*;")
_VIEW = re.compile(r"\.(texref|surfref|conref)\s+([A-Za-z_]\w*)\s+virtually\s+aliases\s+([A-Za-z_]\w*)\s*;")
_THREAD = re.compile(r"d(\d+)\s*\.\s*b(\d+)\s*\.\s*t(\d+)\s*\{")
_COMMAND = re.compile(r"(check|permit|assert)\s*\(")
_INSTR = re.compile(r"([a-z]+)((?:\.\w+)*)\s+(.*?)(?:\s*==\s*(-?\d+))?")
_VIEW_KEYS = {"texref": "texture_of", "surfref": "surface_of", "conref": "constant_of"}
_SEMS = ("weak", "relaxed", "acquire", "release", "acq_rel", "sc", "volatile")
_SCOPES = ("cta", "gpu", "sys")


def convert(text: str, path: str) -> TestIR:
    text = text.replace("\r\n", "\n")
    doc = []
    for raw in text.split("\n"):
        if raw.strip().startswith("//"):
            doc.append(raw.strip()[2:].strip())
        elif raw.strip():
            break
    body = re.sub(r"//[^\n]*", lambda m: " " * len(m.group()), text)
    if "$" in body:
        at = body.index("$")
        fail("a template with $N placeholders (and a $$ table): expand it into plain tests first", path,
             _line(body, at), body[at:].split("\n")[0])
    memory: list[tuple[str, object]] = []
    shared: dict[str, int] = {}
    threads: dict[tuple[int, int, int], list[Code]] = {}
    thread_line: dict[tuple[int, int, int], int] = {}
    commands: list[tuple[str, str, str, int]] = []
    pos = 0
    while True:
        while pos < len(body) and body[pos].isspace():
            pos += 1
        if pos >= len(body):
            break
        line = _line(body, pos)
        m = _DECL.match(body, pos)
        if m:
            space, name, target = m.groups()
            if target and space == "shared":
                fail("a physical alias in shared memory: ptxmc's virtual aliases are of global memory",
                     path, line, m.group())
            if target:
                memory.append((name, {"alias_of": target}))
            elif space == "shared":
                shared[name] = line
                memory.append((name, "shared"))
            else:
                memory.append((name, 0))
            pos = m.end()
            continue
        m = _VIEW.match(body, pos)
        if m:
            memory.append((m.group(2), {_VIEW_KEYS[m.group(1)]: m.group(3)}))
            pos = m.end()
            continue
        m = _THREAD.match(body, pos)
        if m:
            key = tuple(int(x) for x in m.groups())
            end = body.find("}", m.end())
            if end < 0:
                fail("a thread's '{' is not closed", path, line, body[pos:].split("\n")[0])
            thread_line.setdefault(key, line)
            threads.setdefault(key, []).extend(_instructions(body, m.end(), end, path))
            pos = end + 1
            continue
        m = _COMMAND.match(body, pos)
        if m:
            close = _close_paren(body, m.end() - 1, path)
            tail = re.compile(r"\s*as\s+(\w+)\s*;").match(body, close + 1)
            if tail is None:
                fail("a command ends with 'as NAME;'", path, line, body[pos:close + 1])
            commands.append((m.group(1), body[m.end():close], tail.group(1), _line(body, m.end())))
            pos = tail.end()
            continue
        fail("expected an address declaration (.global x;), a thread (d0.b0.t0 { ... }) or a command "
             "(permit / check / assert (...) as NAME;)", path, line, body[pos:].split("\n")[0])
    if not threads:
        fail("no threads", path, 1)
    names = {key: f"d{key[0]}b{key[1]}t{key[2]}" for key in threads}
    at = hc.positions({names[k]: hc.Place(k[0], k[1]) for k in threads})
    owner = _register_owners(threads, names, path)
    memory = [(n, _shared(n, threads, names, at, shared[n], path) if v == "shared" else v) for n, v in memory]
    allowed, forbidden, notes = [], [], []
    for kind, cond_text, cname, cline in commands:
        def resolve(thread, name, cline=cline, cond_text=cond_text):
            if thread is not None or name not in owner:
                fail(f"'{name}' is not a register of any thread (conditions name registers)", path, cline, cond_text)
            return RegRef(owner[name], name)
        cond = translate(cond_text, resolve, path, cline, loose_not=True)
        if kind == "assert":
            forbidden.append(text_of(negate(cond)))
        else:
            allowed.append(text_of(cond))
        notes.append(f"{kind} ({' '.join(cond_text.split())}) as {cname}: "
                     f"{'forbidden ' + forbidden[-1] if kind == 'assert' else 'allowed ' + allowed[-1]}")
    stem = re.sub(r"\.test$", "", path.rsplit("/", 1)[-1])
    return TestIR(name=stem, fmt="mixedproxy", path=path, line=1, doc="\n".join(doc).strip(),
                  memory=tuple(memory),
                  threads=tuple(ThreadIR(names[k], at[names[k]], tuple(threads[k]), thread_line[k]) for k in threads),
                  allowed=tuple(allowed), forbidden=tuple(forbidden), notes=tuple(notes))


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _close_paren(text: str, open_at: int, path: str) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    fail("unbalanced '(' in a command", path, _line(text, open_at), text[open_at:].split("\n")[0])


def _instructions(body: str, start: int, end: int, path: str) -> list[Code]:
    out = []
    pos = start
    for stmt in body[start:end].split(";"):
        line = _line(body, pos + len(stmt) - len(stmt.lstrip()))
        pos += len(stmt) + 1
        s = " ".join(stmt.split())
        if s:
            out.append(Code(_translate(s, path, line), line, s))
    if body[start:end].strip() and not body[start:end].rstrip().endswith(";"):
        fail("an instruction ends with ';'", path, _line(body, end), body[start:end].strip().split("\n")[-1])
    return out


def _translate(s: str, path: str, line: int) -> str:
    m = _INSTR.fullmatch(s)
    if m is None:
        m0 = re.fullmatch(r"fence((?:\.\w+)*)", s)
        if m0 is None:
            fail("cannot read this instruction", path, line, s)
        return _fence([q for q in m0.group(1).split(".") if q], path, line, s)
    op, quals, args, ret = m.group(1), [q for q in m.group(2).split(".") if q], m.group(3), m.group(4)
    await_ = f" == {ret}" if ret is not None else ""
    ops = [a.strip() for a in args.split(",")]
    sem = [q for q in quals if q in _SEMS]
    scope = [q for q in quals if q in _SCOPES]
    other = [q for q in quals if q not in _SEMS + _SCOPES]
    qs = "".join("." + q for q in sem + scope)
    if op in ("suatom", "sured"):
        fail(f"{op}: surface atomics are not modelled by ptxmc", path, line, s)
    if op in ("tld", "ldc", "suld", "sust"):
        if quals not in ([], ["weak"]):
            fail(f"{op}.{'.'.join(quals)}: ptxmc models texture/surface/constant accesses (ISCA'22 hypothetical "
                 "proxies) as weak only", path, line, s)
        return f"{op} {', '.join(ops)}{await_}"
    if op in ("ld", "st"):
        if other:
            fail(f"unknown qualifier '.{other[0]}'", path, line, s)
        return f"{op}{qs or '.weak'} {', '.join(ops)}{await_}"
    if op in ("atom", "red"):
        if other[:1] != ["add"] or len(other) > 1:
            fail(f"{op}: the format's atomic operation is .add, written first ({op}.add.sem.scope)", path, line, s)
        if "volatile" in sem:
            fail(f"{op}.volatile does not exist", path, line, s)
        return f"{op}{qs}.add {', '.join(ops)}{await_}"
    fail(f"unknown instruction '{op}'", path, line, s)


def _fence(quals: list[str], path: str, line: int, s: str) -> str:
    if quals == ["alias"]:
        return "fence.proxy.alias"
    if quals[:1] == ["proxy"]:
        return "fence." + ".".join(quals)
    if not any(q in _SCOPES for q in quals):
        fail("a fence without a scope: the format reads it as thread scope, which PTX has no qualifier for",
             path, line, s)
    return "fence." + ".".join(quals)


def _register_owners(threads, names, path) -> dict[str, str]:
    owner: dict[str, str] = {}
    for key, code in threads.items():
        for c in code:
            for reg in re.findall(r"(?<![\w\[])r\d+\b", re.sub(r"\[[^\]]*\]", "", c.text)):
                if owner.setdefault(reg, names[key]) != names[key]:
                    fail(f"register {reg} is used by {owner[reg]} and {names[key]}: the format names registers "
                         "globally, so each belongs to one thread", path, c.line, c.original)
    return owner


def _shared(name, threads, names, at, line, path):
    ctas = sorted({at[names[k]].split(".warp")[0] for k, code in threads.items()
                   if any(f"[{name}]" in c.text.replace(" ", "") for c in code)})
    if len(ctas) != 1:
        fail(f"shared location '{name}' is used by threads of {len(ctas)} CTAs: ptxmc needs the one CTA whose "
             "shared memory holds it", path, line, f".shared {name};")
    return {"space": "shared", "owner": ctas[0], "init": 0}
