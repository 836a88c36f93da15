"""What the herd and Dat3M importers share: thread placement, the initial state, conditions and
the assembly of a `TestIR` from a split herd-layout file (checker.convert.herdfile).

Placement. A thread header cell `P0@cta 0,gpu 0` (Dat3M's form) places P0 in CTA 0 of GPU 0;
ptxmc also reads `cluster K` and `warp W` items there (any order, e.g. `P0@cta 1,cluster 0,gpu 0`),
which `ptxmc export` writes when a test names clusters or warps. herd's GPU_PTX `scopeTree`
S-expression (`(device (kernel (cta (warp P0) (warp P1)) (cta (warp P2))))`) is read as well:
device -> GPU, cta -> CTA (numbered in order), warp -> warp (numbered per CTA), kernel is
transparent (a GPU's scopes do not depend on the kernel), a `cluster` level is ptxmc's
extension; a level left out gives each child its own instance of it, as in herd. A file with
neither is refused: ptxmc does not guess where threads run. When no thread names a warp, the
threads of one CTA are put in different warps (warp0, warp1, ... in thread order): the source
formats have no warps, and separate warps are what a hardware run needs.

Initial state (`{ ... }`, entries separated by ';' or line breaks, an optional C type before a
name is ignored): `x=V` or `x` declares a global location (init V or 0); Dat3M's
`y @ generic aliases x` declares y as another virtual address of x (`alias_of`), and
`t @ texture|surface|constant aliases x` a view of x (`texture_of`, ...); `P0:r0=V` / `0:r0=V`
sets a register, written as `mov r0, V` at the start of the thread (ptxmc registers start at
0, so a zero is dropped when the thread uses the register anyway). Values that are addresses
(`x=&y`, `P0:r0=&x`) are the importer's business (herd resolves constant address registers;
Dat3M refuses them).

Conditions (checker.convert.conditions): `~exists C` -> forbidden C, `forall C` -> forbidden
~(C), `exists C` -> no expectation (recorded in the doc); Dat3M's `final C with default:
[~]exists;` states the verdict -> allowed / forbidden C (other models' entries are noted, not
imported). `locations [...]` only selects what herd prints (noted; ptxmc shows every outcome).
`filter C` is refused: it discards executions without adding dependencies, and ptxmc's only
execution filter, the await, adds control dependencies (an exact translation does not exist).
A file may also state expectations in `(* ptxmc: allowed: C *)` / `(* ptxmc: forbidden: C *)`
comments (written by `ptxmc export`); they take precedence over the condition line, and
`(* ptxmc: source: ... *)` / `(* ptxmc: arch: sm_90 *)` carry the verdict source and target.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .conditions import expectation, herd_resolver, registers_in, text_of, translate
from .herdfile import HerdFile, Piece
from .model import Code, Control, Item, TestIR, ThreadIR, fail

_CELL = re.compile(r"P(\d+)\s*(?:@\s*(.*))?")
_PLACE_ITEM = re.compile(r"(cta|gpu|cluster|warp)\s+(\d+)")
_TYPE_PREFIX = re.compile(r"^(?:(?:unsigned|signed|int|long|char|u?int(?:8|16|32|64)_t|uint)\s+)+")
_REG_INIT = re.compile(r"(P?\d+)\s*:\s*%?([A-Za-z_]\w*)\s*=\s*(&?)\s*(\S+)")
_LOC_INIT = re.compile(r"([A-Za-z_]\w*)\s*(?:=\s*(&?)\s*(\S+))?")
_ALIAS = re.compile(r"([A-Za-z_]\w*)\s*@\s*(generic|texture|surface|constant)\s+aliases\s+([A-Za-z_]\w*)")
_VIEW_KEYS = {"texture": "texture_of", "surface": "surface_of", "constant": "constant_of"}


@dataclass(frozen=True)
class Place:
    gpu: int
    cta: int
    cluster: int | None = None
    warp: int | None = None

    def text(self, warp: int) -> str:
        cl = f".cluster{self.cluster}" if self.cluster is not None else ""
        w = f".warp{warp}" if warp else ""
        return f"gpu{self.gpu}{cl}.cta{self.cta}{w}"


def thread_names(hf: HerdFile, path: str) -> list[str]:
    names = []
    for cell in hf.header:
        m = _CELL.fullmatch(cell.text)
        if m is None:
            fail("a thread header cell is P<N> or P<N>@cta <N>,gpu <N>", path, cell.line, cell.text)
        names.append(f"P{m.group(1)}")
    if len(set(names)) != len(names):
        fail("a thread is named twice in the header", path, hf.header[0].line, " | ".join(c.text for c in hf.header))
    return names


def placements(hf: HerdFile, names: list[str], path: str) -> dict[str, str]:
    """thread name -> ptxmc position text."""
    places: dict[str, Place] = {}
    annotated = [c for c in hf.header if "@" in c.text]
    if annotated and hf.post.scope_tree is not None:
        fail("placement given twice: in the thread header and in a scope tree", path, annotated[0].line,
             annotated[0].text)
    if annotated:
        for name, cell in zip(names, hf.header):
            m = _CELL.fullmatch(cell.text)
            if m.group(2) is None:
                fail(f"{name} has no placement (write {name}@cta <N>,gpu <N>)", path, cell.line, cell.text)
            places[name] = _annotation(m.group(2), path, cell)
    elif hf.post.scope_tree is not None:
        places = _scope_tree(hf.post.scope_tree, names, path)
    else:
        fail("no thread placement: give P0@cta <N>,gpu <N> in the thread header or a scopeTree "
             "(ptxmc does not guess where threads run: the answer depends on it)", path, hf.header[0].line,
             " | ".join(c.text for c in hf.header))
    return positions(places)


def positions(places: dict[str, Place]) -> dict[str, str]:
    """Position texts; without any warp given, the threads of a CTA get warps 0, 1, ... in order."""
    if any(p.warp is not None for p in places.values()):
        return {n: p.text(p.warp or 0) for n, p in places.items()}
    seen: dict[tuple, int] = {}
    out = {}
    for n, p in places.items():
        key = (p.gpu, p.cluster, p.cta)
        out[n] = p.text(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
    return out


def _annotation(text: str, path: str, cell: Piece) -> Place:
    items = {}
    for part in text.split(","):
        m = _PLACE_ITEM.fullmatch(part.strip())
        if m is None:
            fail(f"placement item '{part.strip()}': write cta <N>, gpu <N> (and optionally cluster <N>, warp <N>)",
                 path, cell.line, cell.text)
        if m.group(1) in items:
            fail(f"'{m.group(1)}' given twice", path, cell.line, cell.text)
        items[m.group(1)] = int(m.group(2))
    for need in ("cta", "gpu"):
        if need not in items:
            fail(f"the placement names no {need} (write cta <N>,gpu <N>)", path, cell.line, cell.text)
    return Place(items["gpu"], items["cta"], items.get("cluster"), items.get("warp"))


_LEVELS = {"device": "gpu", "gpu": "gpu", "kernel": "kernel", "grid": "kernel", "cluster": "cluster",
           "cta": "cta", "block": "cta", "warp": "warp"}
_ORDER = ("gpu", "kernel", "cluster", "cta", "warp")


def _scope_tree(piece: Piece, names: list[str], path: str) -> dict[str, Place]:
    toks = re.findall(r"\(|\)|[^\s()]+", piece.text)
    pos = 0

    def parse():
        nonlocal pos
        tok = toks[pos]
        pos += 1
        if tok != "(":
            return tok
        if pos >= len(toks) or toks[pos] in "()":
            fail("a scope-tree node starts with its level (device, kernel, cta, warp)", path, piece.line, piece.text)
        level = toks[pos]
        pos += 1
        if level not in _LEVELS:
            fail(f"unknown scope-tree level '{level}' (device, kernel, cluster, cta, warp)", path, piece.line,
                 piece.text)
        kids = []
        while pos < len(toks) and toks[pos] != ")":
            kids.append(parse())
        pos += 1
        return (_LEVELS[level], kids)

    roots = []
    while pos < len(toks):
        roots.append(parse())
    has_cluster = re.search(r"\(\s*cluster\b", piece.text) is not None
    counters = {"gpu": 0, "cluster": 0, "cta": 0}
    places: dict[str, Place] = {}

    def fresh(level: str) -> int:
        counters[level] += 1
        return counters[level] - 1

    def walk(node, ctx: dict, depth: int):
        if isinstance(node, str):
            name = f"P{node}" if node.isdigit() else node
            if name not in names:
                fail(f"the scope tree names '{node}', which is no thread of the test", path, piece.line, piece.text)
            if name in places:
                fail(f"the scope tree places {name} twice", path, piece.line, piece.text)
            c = dict(ctx)
            for level in _ORDER[depth:]:
                c = _enter(c, level, fresh)
            places[name] = Place(c["gpu"], c["cta"], c.get("cluster") if has_cluster else None, c["warp"])
            return
        level, kids = node
        if _ORDER.index(level) < depth:
            fail(f"scope-tree level '{level}' inside a smaller scope", path, piece.line, piece.text)
        c = dict(ctx)
        for skipped in _ORDER[depth:_ORDER.index(level)]:
            c = _enter(c, skipped, fresh)
        c = _enter(c, level, fresh)
        for kid in kids:
            walk(kid, c, _ORDER.index(level) + 1)

    for r in roots:
        walk(r, {}, 0)
    missing = [n for n in names if n not in places]
    if missing:
        fail(f"the scope tree does not place {', '.join(missing)}", path, piece.line, piece.text)
    return {n: places[n] for n in names}


def _enter(ctx: dict, level: str, fresh) -> dict:
    c = dict(ctx)
    if level == "gpu":
        c["gpu"] = fresh("gpu")
    elif level == "cluster":
        c["cluster"] = fresh("cluster")
    elif level == "cta":
        c["cta"] = fresh("cta")
        c["warps"] = [0]
    elif level == "warp":
        c["warp"] = c["warps"][0]
        c["warps"][0] += 1
    return c


# ---------------------------------------------------------------------------- initial state --

@dataclass(frozen=True)
class Init:
    memory: tuple[tuple[str, object], ...]
    registers: tuple[tuple[str, str, int, int], ...]       # (thread, reg, value, line)
    addresses: tuple[tuple[str, str, str, int, str], ...]  # (thread, reg, location, line, text)


def initial_state(hf: HerdFile, names: list[str], path: str) -> Init:
    memory, regs, addrs = [], [], []
    for p in hf.init:
        text = _TYPE_PREFIX.sub("", p.text).strip()
        m = _REG_INIT.fullmatch(text)
        if m:
            thread = f"P{m.group(1)}" if m.group(1).isdigit() else m.group(1)
            if thread not in names:
                fail(f"'{m.group(1)}': there is no thread {m.group(1)}", path, p.line, p.text)
            value = _int(m.group(4))
            if value is not None and not m.group(3):
                regs.append((thread, m.group(2), value, p.line))
            elif re.fullmatch(r"[A-Za-z_]\w*", m.group(4)):
                addrs.append((thread, m.group(2), m.group(4), p.line, p.text))
            else:
                fail(f"cannot read the value '{m.group(4)}'", path, p.line, p.text)
            continue
        m = _LOC_INIT.fullmatch(text)
        if m and (m.group(3) is None or _int(m.group(3)) is not None) and not m.group(2):
            memory.append((m.group(1), _int(m.group(3)) if m.group(3) else 0))
            continue
        if m and m.group(3):
            fail(f"'{m.group(1)}' holds the address of '{m.group(3)}': ptxmc values are integers, not "
                 "pointers", path, p.line, p.text)
        m = _ALIAS.fullmatch(text)
        if m is None:
            fail("unknown entry in the initial state (x=V, P0:r0=V, or Dat3M's y @ generic aliases x)",
                 path, p.line, p.text)
        name, kind, target = m.groups()
        memory.append((name, {"alias_of" if kind == "generic" else _VIEW_KEYS[kind]: target}))
    return Init(tuple(memory), tuple(regs), tuple(addrs))


def _int(text: str) -> int | None:
    try:
        return int(text, 0) if re.fullmatch(r"-?(?:0[xX][0-9a-fA-F]+|\d+)", text) else None
    except ValueError:
        return None


def registers_used(items: list[Item], declared: set[str]) -> set[str]:
    """The registers the thread's instructions name (an instruction ptxmc cannot parse is left to
    the final load, which reports it with its source line)."""
    from ..errors import LitmusError
    from ..isa.syntax import parse, registers

    out = set()
    for it in items:
        if isinstance(it, Code):
            try:
                out |= set(registers(parse(it.text, None, declared)))
            except LitmusError:
                pass
    return out


def register_moves(init: Init, thread: str, used: set[str], wanted: set[str], line: int) -> list[Code]:
    """`mov r, V` for the thread's register initialisations (a 0 the code uses anyway is dropped),
    and `mov r, 0` for a register the conditions name but the code never uses (herd's registers
    start at 0, and ptxmc's conditions name registers of the code)."""
    out = []
    for t, reg, value, at in init.registers:
        if t == thread and (value != 0 or reg not in used):
            out.append(Code(f"mov {reg}, {value}", at, f"{t}:{reg}={value}"))
    given = {reg for t, reg, _, _ in init.registers if t == thread}
    for reg in sorted(wanted - used - given):
        out.append(Code(f"mov {reg}, 0", line, f"{thread}:{reg} (named by the condition)"))
    return out


# ----------------------------------------------------------------------------- conditions --

@dataclass(frozen=True)
class Verdicts:
    allowed: tuple[str, ...]
    forbidden: tuple[str, ...]
    unstated: tuple[str, ...]
    notes: tuple[str, ...]
    cites: str
    arch: str | None
    registers: frozenset[tuple[str, str]] = frozenset()   # (thread, reg) the conditions name


def verdicts(hf: HerdFile, names: list[str], path: str) -> Verdicts:
    post = hf.post
    notes, allowed, forbidden, unstated = [], [], [], []
    if post.filter is not None:
        fail("'filter' is not supported: it discards executions without adding dependencies, and ptxmc's "
             "only execution filter, the await (== v), adds control dependencies", path, post.filter.line,
             "filter " + post.filter.text)
    if post.locations is not None:
        notes.append(f"'locations [{post.locations.text}]' dropped: it only selects what herd prints "
                     "(ptxmc lists every register and location)")
    by_name = {n: n for n in names}
    regs: set[tuple[str, str]] = set()
    cond = None
    if post.condition is not None:
        c = post.condition
        cond = translate(c.text, herd_resolver(by_name, path, c.line, c.text), path, c.line)
        regs |= registers_in(cond)
    pragmas = {"allowed": allowed, "forbidden": forbidden}
    cites, arch = "", None
    for p in hf.pragmas:
        key, _, value = p.text.partition(":")
        key, value = key.strip(), value.strip()
        if key in pragmas:
            pc = translate(value, herd_resolver(by_name, path, p.line, value), path, p.line)
            regs |= registers_in(pc)
            pragmas[key].append(text_of(pc))
        elif key == "source":
            cites = value
        elif key == "arch":
            arch = value
        elif key == "threads":
            notes.append(f"thread names in the exported test: {value}")
        else:
            fail(f"unknown ptxmc comment '{key}:' (allowed, forbidden, source, arch, threads)", path, p.line,
                 p.text)
    if allowed or forbidden:
        if cond is not None:
            unstated_from_line = f"{post.quantifier} ({text_of(cond)})"
            notes.append(f"the expectations come from the file's ptxmc comments; its condition line "
                         f"'{unstated_from_line}' agrees with them when the file was written by ptxmc export")
        return Verdicts(tuple(allowed), tuple(forbidden), (), tuple(notes), cites, arch, frozenset(regs))
    if cond is None:
        return Verdicts((), (), (), tuple(notes), cites, arch, frozenset(regs))
    if post.quantifier == "final":
        stated_default = dict(post.outcomes).get("default")
        others = [f"{m}: {q}" for m, q in post.outcomes if m != "default"]
        if others:
            notes.append("expectations for other models not imported: " + "; ".join(others))
        if stated_default == "exists":
            allowed.append(text_of(cond))
        elif stated_default == "~exists":
            forbidden.append(text_of(cond))
        else:
            unstated.append(text_of(cond))
        return Verdicts(tuple(allowed), tuple(forbidden), tuple(unstated), tuple(notes), cites, arch, frozenset(regs))
    kind, text = expectation(post.quantifier, cond)
    (forbidden if kind == "forbidden" else unstated).append(text)
    return Verdicts(tuple(allowed), tuple(forbidden), tuple(unstated), tuple(notes), cites, arch, frozenset(regs))


def referenced_registers(v: Verdicts) -> set[tuple[str, str]]:
    return set(v.registers)


def assemble(hf: HerdFile, fmt: str, path: str, names: list[str], at: dict[str, str],
             bodies: dict[str, list[Item]], memory, v: Verdicts, notes: list[str]) -> TestIR:
    threads = tuple(ThreadIR(n, at[n], tuple(bodies[n]), cell.line) for n, cell in zip(names, hf.header))
    meta_notes = [f"metadata '{m.text}' not carried over" for m in hf.meta]
    return TestIR(name=hf.name, fmt=fmt, path=path, line=hf.line, doc="\n".join(hf.docs), memory=tuple(memory),
                  threads=threads, allowed=v.allowed, forbidden=v.forbidden, unstated=v.unstated,
                  notes=tuple(notes) + v.notes + tuple(meta_notes), cites=v.cites, arch=v.arch)


def label_prefix(cell: Piece) -> tuple[list[Item], str]:
    """A leading `LABEL:` of a cell becomes a Control item; the rest of the cell is returned."""
    m = re.match(r"([A-Za-z_]\w*)\s*:(?!:)\s*(.*)$", cell.text)
    if m:
        return [Control("label", cell.text, cell.line, m.group(1))], m.group(2)
    return [], cell.text
