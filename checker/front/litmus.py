"""The front end: YAML litmus files -> validated `LitmusTest`s (docs/format.md).

`load_paths` / `load_file` / `load_text` return one entry per test, in file order: the test, or
the LitmusError that explains why it is malformed. One bad test never hides the others, not
even in the same file (a YAML syntax error, which spoils the file, is one error for the file).
Errors name the file, the line of the offending node and its text.

A `matrix:` table turns one test into one test per row: every `${key}` in the test's text
(keys and values) is replaced by the row's value; a list item that a substitution leaves empty
is dropped (a row can remove an instruction); a row's `expect:` mapping replaces the test's
`expect` entries key by key (allowed / forbidden / undefined).
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from .. import limits
from ..isa import address, registry, special
from ..isa.common import same_width_sources, width_mismatch
from ..model.memory import MAX_BYTES
from ..isa import syntax as ptx
from ..unfold import constants, paths
from . import ptx_text, yamlsafe
from .scopes import Scopes
from ..ast import Addr, Eq, Expectation, Imm, Kernel, LitmusTest, MemoryDecl, Name, Position, Reg, Thread
from .conditions import check_refs, parse_cond
from .files import suite_files
from ..textsafe import escape_char, first_unsafe, printable
from ..errors import LitmusError, SourceLoc
from .yamlsafe import BOOL, INT, Node

TEST_KEYS = ("name", "doc", "source", "arch", "memory", "threads", "expect", "matrix", "locations", "filter",
             "rlimit", "threads_per_litmus_thread", "kernels", "unroll", "params")
THREAD_KEYS = ("at", "code", "ptx")
KERNEL_KEYS = ("name", "launch", "threads")
MEMORY_KEYS = ("space", "owner", "init", "size", "alias_of", "texture_of", "surface_of", "constant_of",
               "mbarrier", "tensormap", "box", "strides", "offset_of")
EXPECT_KEYS = ("allowed", "forbidden", "undefined", "hang")
MBARRIER_KEYS = ("count",)
VIEWS = {"texture_of": "texture", "surface_of": "surface", "constant_of": "constant"}

_POSITION = re.compile(r"gpu(\d{1,9})(?:\.cluster(\d{1,9}))?\.cta(\d{1,9})(?:\.warp(\d{1,9}))?")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
_POSITION_FORM = "gpu<N>[.cluster<N>].cta<N>[.warp<N>]"


# ------------------------------------------------------------------------------ entry points --

def load_paths(paths: Iterable[str | Path]) -> list[LitmusTest | LitmusError]:
    """Load files and directories (recursively: *.yaml, *.yml, sorted; hidden entries skipped).
    A test name used twice in the batch is an error at the second use."""
    return list(load_sources(path_files(paths)))


def load_sources(sources: Iterable[Path | LitmusError]) -> Iterator[LitmusTest | LitmusError]:
    """The items of path_files' list, loaded one file at a time as they are wanted (`ptxmc run`
    judges the first tests while it loads the rest); a name used twice is an error at the
    second use, as in load_paths."""
    seen: dict[str, SourceLoc] = {}
    for source in sources:
        items = [source] if isinstance(source, LitmusError) else load_file(source)
        yield from _unique_names(items, lambda first: f"also in {first}", seen)


def path_files(paths: Iterable[str | Path]) -> list[Path | LitmusError]:
    """The files load_paths reads, in order, each once (an error for a path that is not there)."""
    out: list[Path | LitmusError] = []
    seen_files: set[Path] = set()
    for p in paths:
        p = Path(p) if str(p) else None          # '' is no path (Path('') would mean '.')
        if p is not None and p.is_dir():
            files = suite_files(p)
        elif p is not None and p.exists():
            files = [p]
        else:
            out.append(LitmusError("no such file or directory", SourceLoc(str(p or "''"), 1)))
            continue
        for f in files:
            if f.resolve() not in seen_files:
                seen_files.add(f.resolve())
                out.append(f)
    return out


def load_file(path: str | Path, name: str | None = None) -> list[LitmusTest | LitmusError]:
    """Load every test of one file (with `name`: see load_text)."""
    try:
        text, size = limits.read_text(path, limits.current().yaml_bytes)
        if text is None:
            return [limits.too_large(f"too large: a file of more than {size - 1} bytes", "yaml_bytes",
                                     SourceLoc(str(path), 1))]
    except UnicodeDecodeError as e:
        line = e.object[:e.start].count(b"\n") + 1
        return [LitmusError(f"not a UTF-8 text file (byte 0x{e.object[e.start]:02x} at line {line})",
                            SourceLoc(str(path), line))]
    except OSError as e:
        return [LitmusError(f"cannot read: {e.strerror}", SourceLoc(str(path), 1))]
    return load_text(text, str(path), name)


def load_text(text: str, path: str = "<string>", name: str | None = None) -> list[LitmusTest | LitmusError]:
    """Load every test of a YAML text (one mapping, or a list of mappings). With `name`, only the
    entries that can yield a test of that name are built (`ptxmc check FILE::NAME` need not
    build, nor judge, the other tests of a suite file)."""
    try:
        return _load_text(text, path, name)
    except RecursionError:      # nesting within every limit, yet too deep for Python's stack
        return [limits.too_large("too deeply nested for this machine (Python's stack)", "yaml_depth",
                                 SourceLoc(path, 1))]


def _load_text(text: str, path: str, name: str | None) -> list[LitmusTest | LitmusError]:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.current().yaml_bytes:
        return [limits.too_large(f"too large: a file of {size} bytes", "yaml_bytes", SourceLoc(path, 1))]
    try:
        root = yamlsafe.compose(text, path)
    except LitmusError as e:
        return [e]
    if root is None:
        return [LitmusError("empty file: expected a test (a mapping) or a list of tests", SourceLoc(path, 1))]
    items = root.value if isinstance(root, yaml.SequenceNode) and root.tag.endswith(":seq") else [root]
    out: list[LitmusTest | LitmusError] = []
    for item in items:
        if name is not None and not _may_yield(item, name):
            continue
        try:
            out.extend(_expand(yamlsafe.convert(item, path), path))
        except LitmusError as e:
            out.append(e)
    return _unique_names(out, lambda first: f"first at line {first.line}")


def _may_yield(item: yaml.Node, name: str) -> bool:
    """Can this entry be a test called `name`? Its `name:` as written, every ${...} standing for
    any text (a matrix row's value); an entry without a plain `name:` is kept (it is an error)."""
    if not isinstance(item, yaml.MappingNode):
        return True
    written = next((v for k, v in item.value if isinstance(k, yaml.ScalarNode) and k.value == "name"), None)
    if not isinstance(written, yaml.ScalarNode):
        return True
    pattern = ".*".join(re.escape(part) for part in _PLACEHOLDER.split(written.value)[::2])
    return re.fullmatch(rf"\s*{pattern}\s*", name, re.S) is not None


def _unique_names(results, where_first, seen: dict[str, SourceLoc] | None = None):
    """`results` with each test whose name is in `seen` (the names so far) made an error."""
    seen = {} if seen is None else seen
    out = []
    for r in results:
        if isinstance(r, LitmusTest):
            if r.name in seen:
                r = LitmusError(f"duplicate test name '{r.name}' ({where_first(seen[r.name])})", r.where)
            else:
                seen[r.name] = r.where
        out.append(r)
    return out


# ------------------------------------------------------------------------------ node helpers --

def _fail(path: str, node: Node, msg: str, text: str | None = None):
    raise LitmusError(msg, SourceLoc(path, node.line, node.raw if text is None else text))


class _Map:
    """A mapping node whose keys must come from `keys`."""

    def __init__(self, node: Node, path: str, keys: tuple[str, ...], what: str):
        if node.kind != "map":
            _fail(path, node, f"{what} must be a mapping")
        self.node, self.path = node, path
        for k, _ in node.items:
            if k.raw not in keys:
                import difflib

                close = difflib.get_close_matches(k.raw, keys, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                _fail(path, k, f"unknown key '{k.raw}' in {what} (valid keys: {', '.join(keys)}){hint}")
        self.pairs = {k.raw: v for k, v in node.items}
        self.keys = {k.raw: k for k, _ in node.items}

    def get(self, key: str) -> Node | None:
        return self.pairs.get(key)

    def need(self, key: str, what: str) -> Node:
        if key not in self.pairs:
            _fail(self.path, self.node, f"{what} needs '{key}:'", "")
        return self.pairs[key]


def _text(node: Node, path: str, what: str) -> str:
    if node.kind != "scalar":
        _fail(path, node, f"{what} must be text, not a {'list' if node.kind == 'seq' else 'mapping'}")
    return node.raw


def _int(node: Node, path: str, what: str, bits: int = 64) -> int:
    """An integer of at most `bits` bits (a location's init may be wider than 64)."""
    if node.kind != "scalar" or node.tag != INT:
        _fail(path, node, f"{what} must be an integer")
    if not -(1 << (bits - 1)) <= node.value < (1 << bits):
        _fail(path, node, f"{what}: integer out of range (at most {bits} bits)")
    return node.value


def _seq(node: Node, path: str, what: str) -> tuple[Node, ...]:
    if node.kind != "seq":
        _fail(path, node, f"{what} must be a list")
    return node.items


def _position(node: Node, path: str, what: str, cta_only: bool = False) -> Position:
    text = _text(node, path, what).strip()
    m = _POSITION.fullmatch(text)
    if m is None:
        _fail(path, node, f"bad position '{text}': write {_POSITION_FORM}")
    if cta_only and m.group(4) is not None:
        _fail(path, node, f"{what} must name a CTA (gpu<N>[.cluster<N>].cta<N>), not a warp")
    g, cl, cta, w = m.groups()
    return Position(int(g), None if cl is None else int(cl), int(cta), int(w or 0))


# ---------------------------------------------------------------------------------- matrix --

def _expand(node: Node, path: str) -> list[LitmusTest | LitmusError]:
    """One test, or one per matrix row (a bad row is its own error)."""
    top = _Map(node, path, TEST_KEYS, "a test")
    body = Node("map", node.line, items=tuple((k, v) for k, v in node.items if k.raw != "matrix"))
    matrix = top.get("matrix")
    if matrix is None:
        return [_build(_subst(body, None, path), path, None, node.line)]
    rows = _seq(matrix, path, "matrix")
    if not rows:
        _fail(path, matrix, "matrix needs at least one row")
    name = top.need("name", "a test")
    if "${" not in name.raw:
        _fail(path, name, "a test with a matrix needs a ${...} placeholder in its name, "
                          "so that each row's test has its own name")
    used = set(_placeholders(body))
    # Every row is a whole test: the rows times the test's text count against the file-size
    # bound, as if the file held each test written out (2,000 rows of a 128-instruction test, a
    # 31 kB file, took 533 MB and 32 s to load before its first test ran).
    size, budget = _text_size(body), limits.current().yaml_bytes
    if size * len(rows) > budget:
        return [limits.too_large(f"too large: {len(rows)} matrix rows of a {size}-byte test expand to about "
                                 f"{size * len(rows)} bytes of tests", "yaml_bytes", SourceLoc(path, matrix.line))]
    out: list[LitmusTest | LitmusError] = []
    for n, row in enumerate(rows, 1):
        values: dict[str, str] = {}
        try:
            values, row_expect = _row(row, path, used)
            test = _with_expect(_subst(body, values, path), _subst(row_expect, values, path))
            out.append(_build(test, path, tuple(values.items()), row.line))
        except LitmusError as e:
            label = ", ".join(f"{k}={v}" for k, v in values.items()) if row.kind == "map" else ""
            out.append(type(e)(f"{e.message} (matrix row {n}{': ' + label if label else ''})", e.where))
    return out


def _text_size(node: Node) -> int:
    """About the bytes of a test's text: its keys and scalars, walked with a loop."""
    total, stack = 0, [node]
    while stack:
        n = stack.pop()
        if n.kind == "scalar":
            total += len(n.raw) + 2
        elif n.kind == "seq":
            stack.extend(n.items)
        else:
            for k, v in n.items:
                total += len(k.raw) + 2
                stack.append(v)
    return total


def _row(row: Node, path: str, used: set[str]) -> tuple[dict[str, str], Node | None]:
    if row.kind != "map":
        _fail(path, row, "a matrix row must be a mapping (placeholder: value, ...)")
    values, expect = {}, None
    for k, v in row.items:
        if k.raw == "expect":
            expect = v
        elif k.raw not in used:
            _fail(path, k, f"matrix key '{k.raw}' is not used: the test has no ${{{k.raw}}}")
        else:
            values[k.raw] = _text(v, path, f"matrix value '{k.raw}'") if v.tag != yamlsafe.NULL else ""
    return values, expect


def _placeholders(node: Node):
    if node.kind == "scalar":
        yield from _PLACEHOLDER.findall(node.raw)
    for item in node.items:
        for sub in (item if isinstance(item, tuple) else (item,)):
            yield from _placeholders(sub)


def _subst(node: Node | None, values: dict[str, str] | None, path: str) -> Node | None:
    """`node` with every ${key} replaced (values None: the test has no matrix)."""
    if node is None:
        return None
    if node.kind == "scalar":
        if "${" not in node.raw:
            return node

        def value(m):
            key = m.group(1)
            if values is None:
                _fail(path, node, f"'${{{key}}}': placeholders need a matrix: table")
            if key not in values:
                _fail(path, node, f"unknown matrix placeholder '${{{key}}}' "
                                  f"(this row has: {', '.join(values) or 'nothing'})")
            return values[key]
        raw = _PLACEHOLDER.sub(value, node.raw)
        if "${" in _PLACEHOLDER.sub("", node.raw):
            _fail(path, node, "unterminated placeholder: write ${name}")
        return yamlsafe.check_int(node.with_raw(raw), path)
    if node.kind == "seq":
        items = [(_subst(i, values, path), i) for i in node.items]
        kept = tuple(new for new, old in items
                     if not (new.kind == "scalar" and new.raw.strip() == "" and "${" in old.raw))
        return Node("seq", node.line, items=kept)
    pairs = tuple((_subst(k, values, path), _subst(v, values, path)) for k, v in node.items)
    yamlsafe.check_unique(pairs, path)
    return Node("map", node.line, items=pairs)


def _with_expect(test: Node, row_expect: Node | None) -> Node:
    if row_expect is None:
        return test
    old = next((v for k, v in test.items if k.raw == "expect"), None)
    if old is None or old.kind != "map" or row_expect.kind != "map":
        merged = row_expect
    else:
        mine = {k.raw for k, _ in row_expect.items}
        merged = Node("map", row_expect.line,
                      items=tuple(p for p in old.items if p[0].raw not in mine) + row_expect.items)
    key = Node("scalar", row_expect.line, raw="expect", plain=True)
    rest = tuple(p for p in test.items if p[0].raw != "expect")
    return Node("map", test.line, items=rest + ((key, merged),))


# ---------------------------------------------------------------------------------- a test --

def _build(node: Node, path: str, row, line: int) -> LitmusTest:
    m = _Map(node, path, TEST_KEYS, "a test")
    name_node = m.need("name", "a test")
    name = _text(name_node, path, "name").strip()
    bad = first_unsafe(name)
    if bad is not None:
        _fail(path, name_node, f"a test name cannot hold the control or formatting character "
                               f"U+{ord(bad):04X} ({escape_char(bad)})", printable(name))
    if not name or re.search(r"\s", name):
        _fail(path, name_node, "a test name is one word, without spaces")
    arch = None
    if m.get("arch") is not None:
        arch = _text(m.get("arch"), path, "arch")
        if not re.fullmatch(r"sm_\d+[a-z]?", arch):
            _fail(path, m.get("arch"), "arch must look like sm_90 or sm_90a")
    doc = _text(m.get("doc"), path, "doc") if m.get("doc") is not None else ""
    source = _text(m.get("source"), path, "source") if m.get("source") is not None else ""

    decls, targets = _memory(m.get("memory"), path)
    declared = {d.name for d in decls}
    params = _params(m.get("params"), path, declared)
    threads = _threads(m.need("threads", "a test"), path, {d.name: d for d in decls}, params)
    _check_cluster_styles(threads, decls, path)
    dests = {t.name: {r for i in t.code for r in address.destinations(i, registry.family(i))} for t in threads}
    threads = [_register_addresses(t, declared, dests[t.name]) for t in threads]
    implicit: dict[str, MemoryDecl] = {}
    for t in threads:
        for i in t.code:
            for o in i.operands:
                if isinstance(o, Addr) and not o.register and o.base not in declared and o.base not in implicit:
                    implicit[o.base] = MemoryDecl(o.base, where=i.where)
    memory = {d.name: d for d in decls} | implicit
    per_thread = _per_thread(m, path)
    threads = [_location_names(t, memory, dests[t.name]) for t in threads]
    # registers that stand for numbers (a bulk size, a barrier id, a mapa rank, an address offset)
    # read as the constants they hold on the thread's control paths (checker.unfold.constants)
    placed = LitmusTest(name=name, threads=tuple(threads), memory=tuple(memory.values()), path=path,
                        threads_per_litmus_thread=per_thread)
    threads = [_resolved(constants.Constants(placed, t).substituted(), placed, memory, dests) for t in threads]
    regs = {t.name: {r for i in t.code for r in ptx.registers(i)} for t in threads}
    for t in threads:                   # one name, two meanings: refuse rather than guess
        for i in t.code:
            for r in ptx.registers(i):
                if r in memory:
                    where = memory[r].where if r in implicit else i.where
                    raise LitmusError(f"'{r}' is used both as a register and as a location", where)
    if len(memory) > limits.current().locations:
        raise limits.too_large(f"too large: {len(memory)} memory locations", "locations",
                               SourceLoc(path, line, name))
    _check_memory(memory, targets, path)
    _check_accesses(threads, memory)
    expectations, undefined = _expect(m.get("expect"), path, threads, regs, memory)
    known = {t.name: regs[t.name] for t in threads}
    locations = _locations(m.get("locations"), path, known, memory)
    filt = None
    if m.get("filter") is not None:
        text = _text(m.get("filter"), path, "filter").strip()
        where = SourceLoc(path, m.get("filter").line, text)
        filt = parse_cond(text, where)
        check_refs(filt, where, known, memory)
    rlimit = None
    if m.get("rlimit") is not None:
        rlimit = _int(m.get("rlimit"), path, "rlimit")
        if rlimit < 0:
            _fail(path, m.get("rlimit"), "rlimit is 0 (none) or a positive number of Z3 resource units")
    unroll = None
    if m.get("unroll") is not None:
        unroll = _int(m.get("unroll"), path, "unroll")
        if unroll <= 0:
            _fail(path, m.get("unroll"), "unroll is the positive number of times a loop body may run on a path")
    hang = _hang(m.get("expect"), path)
    if unroll is not None and not any(t.branches for t in threads):
        _fail(path, m.get("unroll"), "unroll: applies to tests with loops (labels and bra), and this test has none")
    return LitmusTest(name=name, threads=tuple(threads), memory=tuple(memory.values()), unroll=unroll, expect_hang=hang,
                      expectations=expectations, expect_undefined=undefined, doc=doc, source=source,
                      arch=arch, path=path, where=SourceLoc(path, line, name), matrix_row=row,
                      locations=locations, filter=filt, rlimit=rlimit, threads_per_litmus_thread=per_thread,
                      kernels=_kernels(m.get("kernels"), path, threads))


def _resolved(t: Thread, placed: LitmusTest, memory: dict[str, MemoryDecl], dests: dict[str, set[str]]) -> Thread:
    """`t` with its register-held addresses resolved (checker.isa.address), an offset added in a
    register read as the constant it holds (checker.unfold.constants); where a line no control
    path runs holds an address ptxmc cannot follow (another role's code of a pasted kernel), the
    lines no path runs are dropped first."""
    c = constants.Constants(placed, t)
    try:
        [out] = address.resolve([t], memory, dests, {t.name: c.at}, {t.name: lambda k: k in c.ran()})
    except address.NotRun:
        [out] = address.resolve([c.pruned()], memory, dests, {t.name: constants.Constants(placed, c.pruned()).at})
    return out


def _per_thread(m: _Map, path: str) -> int:
    """`threads_per_litmus_thread:` (1 when not given)."""
    node = m.get("threads_per_litmus_thread")
    if node is None:
        return 1
    per_thread = _int(node, path, "threads_per_litmus_thread")
    if per_thread <= 0:
        _fail(path, node, "threads_per_litmus_thread is the positive number of PTX threads one litmus thread stands for")
    return per_thread


def _register_addresses(t: Thread, declared: set[str], dests: set[str]) -> Thread:
    """Mark `[r]` as a register-held address when r is a register the thread writes (and no
    declared location); `[%r]` is one already."""
    def mark(i):
        ops = tuple(replace(o, register=True) if isinstance(o, Addr) and not o.register and o.base in dests
                    and o.base not in declared else o for o in i.operands)
        for o in ops:
            if isinstance(o, Addr) and not o.register and o.base in declared and o.base in dests:
                raise LitmusError(f"'{o.base}' is a declared location and a register {t.name} writes", i.where)
        return replace(i, operands=ops) if ops != i.operands else i
    return replace(t, code=tuple(mark(i) for i in t.code))


def _location_names(t: Thread, memory: dict[str, MemoryDecl], dests: set[str]) -> Thread:
    """A register operand named like a location the thread never writes is that location's
    address (`mov.u64 rd, x` with x used as [x] elsewhere, not declared)."""
    def fix(i):
        ops = tuple(Name(o.name) if isinstance(o, Reg) and o.name in memory and o.name not in dests else o
                    for o in i.operands)
        return replace(i, operands=ops) if ops != i.operands else i
    return replace(t, code=tuple(fix(i) for i in t.code))


def _locations(node: Node | None, path: str, known, memory) -> tuple:
    """`locations: [x, P1:r0]`: registers and locations `ptxmc outcomes` shows (herd's locations)."""
    if node is None:
        return ()
    out = []
    for item in _seq(node, path, "locations"):
        text = _text(item, path, "a location or register").strip()
        where = SourceLoc(path, item.line, text)
        cond = parse_cond(f"{text}=0", where)
        if not isinstance(cond, Eq):
            _fail(path, item, f"'{text}': write a location (x) or a register (P1:r0)")
        check_refs(cond, where, known, memory)
        out.append(cond.lhs)
    return tuple(out)


def _memory(node: Node | None, path: str):
    """Declared locations, and for each the (key, target name, node) of its *_of / tensormap
    references, checked once every location (declared or used) is known."""
    decls: list[MemoryDecl] = []
    targets: dict[str, list[tuple[str, str, Node]]] = {}
    if node is None or node.kind == "scalar" and node.tag == yamlsafe.NULL:
        return decls, targets
    if node.kind != "map":
        _fail(path, node, "memory must be a mapping of locations (x: 0, or x: {space: ..., init: ...})")
    for k, v in node.items:
        name = k.raw
        if not _IDENT.fullmatch(name) or name in ("true", "false"):
            _fail(path, k, f"'{name}' cannot name a location: use an identifier")
        if v.kind == "scalar" and v.tag != INT:
            _fail(path, v, f"location '{name}': write its initial value ({name}: 0) "
                           "or a mapping ({space: ..., init: ...})")
        fields = {"init": v.value} if v.kind == "scalar" else _location(name, v, path, targets)
        decls.append(MemoryDecl(name, where=SourceLoc(path, k.line, name), **fields))
    return decls, targets


def _location(name: str, node: Node, path: str, targets) -> dict:
    """The MemoryDecl fields of a long-form declaration."""
    f = _Map(node, path, MEMORY_KEYS, f"location '{name}'")
    space = _text(f.get("space"), path, "space") if f.get("space") is not None else "global"
    if space not in ("global", "shared", "tensor"):
        _fail(path, f.get("space"), "space must be global, shared or tensor")
    owner = None
    if f.get("owner") is not None:
        owner = _position(f.get("owner"), path, "owner", cta_only=True)
        if space == "global":
            _fail(path, f.keys["owner"], f"owner is for shared memory: add 'space: shared' to '{name}'")
    elif space in ("shared", "tensor"):
        _fail(path, f.keys["space"], f"{space} location '{name}' needs an owner: the CTA whose "
                                     f"{space} memory holds it (owner: gpu0.cta0)")
    fields: dict = {"space": space, "owner": owner}
    if f.get("init") is not None:
        fields["init"] = _int(f.get("init"), path, "init", yamlsafe.INT_BITS)
    if f.get("size") is not None:
        fields["size"] = _int(f.get("size"), path, "size")
        if not 0 < fields["size"] <= MAX_BYTES:
            _fail(path, f.get("size"), f"size is a positive number of bytes, at most {MAX_BYTES} (1 MiB)")
    refs_ = [key for key in ("alias_of", *VIEWS) if f.get(key) is not None]
    if len(refs_) > 1:
        _fail(path, f.keys[refs_[1]], f"'{name}' can be only one of {', '.join(refs_)}")
    for key in refs_:
        target = _text(f.get(key), path, key)
        own = [x for x in ("space", "owner", "init", "size", "mbarrier", "tensormap") if f.get(x) is not None]
        if own:
            _fail(path, f.keys[own[0]], f"'{name}' is {key} '{target}': its {own[0]} is that of '{target}'")
        if key == "alias_of":
            fields["alias_of"] = target
        else:
            fields.update(view=VIEWS[key], view_of=target)
        targets.setdefault(name, []).append((key, target, f.get(key)))
    if f.get("mbarrier") is not None:
        if space != "shared":
            _fail(path, f.keys["mbarrier"], "an mbarrier lives in shared memory: add space: shared and an owner")
        if "init" in fields:
            _fail(path, f.keys["init"], "an mbarrier's initial state comes from its count: drop init")
        from ..isa.mbarrier import MAX_COUNT     # (the mbarrier families load only for a test that uses one)

        mb = _Map(f.get("mbarrier"), path, MBARRIER_KEYS, "mbarrier")
        count = _int(mb.need("count", "mbarrier"), path, "mbarrier count")
        if count <= 0:
            _fail(path, mb.get("count"), "mbarrier count must be positive")
        if count > MAX_COUNT:
            _fail(path, mb.get("count"), f"mbarrier count {count}: PTX allows expected arrival counts "
                                         f"from 1 to {MAX_COUNT} (2^20-1)")
        fields["mbarrier"] = {"count": count}
    if f.get("offset_of") is not None:
        target = _text(f.get("offset_of"), path, "offset_of")
        if space != "shared":
            _fail(path, f.keys["offset_of"], f"offset_of is for shared memory (the same CTA-relative offset in "
                                             f"another CTA): '{name}' is {space} memory")
        fields["offset_of"] = target
        targets.setdefault(name, []).append(("offset_of", target, f.get("offset_of")))
    if f.get("tensormap") is not None:
        if space != "global":
            _fail(path, f.keys["tensormap"], "a tensor map lives in global memory")
        fields["tensormap"] = _tensormap(name, f.get("tensormap"), fields.get("init", 0), path, targets)
    for key in ("box", "strides"):
        if f.get(key) is not None and f.get("tensormap") is None:
            _fail(path, f.keys[key], f"{key} describes a tensor map's box: '{name}' declares no tensormap")
    if f.get("box") is not None:
        fields["box"] = _int(f.get("box"), path, "box")
        if not 0 < fields["box"] <= MAX_BYTES or fields["box"] % 16:
            _fail(path, f.get("box"), f"box is the bytes a tensor copy moves: a positive multiple of 16, at most "
                                      f"{MAX_BYTES} (1 MiB)")
    if f.get("strides") is not None:
        if f.get("box") is None:
            _fail(path, f.keys["strides"], "strides place boxes of a declared size: add box: BYTES")
        items = _seq(f.get("strides"), path, "strides")
        if not 1 <= len(items) <= 5:
            _fail(path, f.get("strides"), "strides: one to five byte strides, one per coordinate")
        fields["strides"] = tuple(_int(x, path, "a stride") for x in items)
        if any(not 0 <= x <= MAX_BYTES for x in fields["strides"]):
            _fail(path, f.get("strides"), f"strides are byte counts from 0 to {MAX_BYTES} (1 MiB)")
    return fields


def _tensormap(name: str, node: Node, init: int, path: str, targets) -> dict[int, str]:
    if node.kind != "map" or not node.items:
        _fail(path, node, "tensormap maps values to global buffers: {0: gA, 1: gB}")
    table = {}
    for k, v in node.items:
        table[_int(k, path, "a tensormap value")] = _text(v, path, "a tensormap buffer")
        targets.setdefault(name, []).append(("tensormap", v.raw, v))
    if init not in table:
        _fail(path, node, f"the initial value {init} of tensor map '{name}' is none of its values "
                          f"({', '.join(map(str, table))})", "")
    return table


def _threads(node: Node, path: str, declared: dict[str, MemoryDecl], params: dict[str, str | int]) -> list[Thread]:
    if node.kind != "map" or not node.items:
        _fail(path, node, "threads must map thread names to {at: POSITION, code: [...]}")
    if len(node.items) > limits.current().threads:
        extra = node.items[limits.current().threads][0]         # the first thread over the limit
        raise limits.too_large(f"too large: {len(node.items)} threads", "threads",
                               SourceLoc(path, extra.line, extra.raw))
    threads = []
    for k, v in node.items:
        if not _IDENT.fullmatch(k.raw):
            _fail(path, k, f"thread name '{k.raw}' must be an identifier (P0, P1, ...)")
        t = _Map(v, path, THREAD_KEYS, f"thread '{k.raw}'")
        pos = _position(t.need("at", f"thread '{k.raw}'"), path, "at")
        code, labels, declares = _thread_code(t, k, path, declared, pos, params)
        thread = Thread(k.raw, pos, tuple(code), SourceLoc(path, k.line, k.raw), tuple(labels), declares)
        paths.check_thread(thread)
        threads.append(thread)
    return threads


def _thread_code(t: _Map, k: Node, path: str, declared: dict[str, MemoryDecl], pos: Position,
                 params: dict[str, str | int]) -> tuple[list, list, bool]:
    """A thread's instructions and labels (name, index of the instruction it stands before), from
    `code:` (a list of PTX texts and labels) or `ptx:` (one block of pasted PTX text): statements
    cut by checker.front.ptx_text, .reg declarations checked and dropped, .shared variables
    matched with the locations `memory:` declares in the thread's CTA (`pos`) and dropped, kernel
    arguments read as the values `params:` gives them."""
    if t.get("ptx") is None:
        t.need("code", f"thread '{k.raw}'")
    elif t.get("code") is not None:
        _fail(path, t.keys["ptx"], f"thread '{k.raw}' has both 'code:' and 'ptx:': give one of them")
    if t.get("ptx") is not None:
        node = t.get("ptx")
        text = _text(node, path, "ptx")
        stmts = ptx_text.statements(text, node.line + 1 if "\n" in text else node.line, path)
    else:
        stmts = []
        for item in _seq(t.get("code"), path, "code"):
            label, item = _label(item, path)
            if label is not None:
                stmts.append(ptx_text.Statement(label + ":", item.line if item is not None else 0))
            if item is not None:
                blocks = max((sid for st in stmts for sid in st.scope), default=0)
                stmts += ptx_text.statements(_text(item, path, "an instruction"), item.line, path, blocks + 1)
    # labels and .reg declarations belong to the { } block they stand in (checker.front.scopes)
    scopes = Scopes(sep="$")
    widths: dict[tuple[int, str], int | None] = {}      # (block, register) -> its declared bits
    spellings: dict[str, str] = {}          # a declared register -> how it is spelt (with or without '%')
    instrs = []
    copies: dict[str, str] = {}             # a .shared variable -> this CTA's copy of it
    for st in stmts:
        m = _LABEL_STMT.fullmatch(st.text)
        if m is not None:                       # `L1:` (before the instruction that follows, if any)
            scopes.labels.setdefault((st.scope[-1], m.group(1)), len(instrs))
            instrs.append((m.group(1), st))
            if not m.group(2):
                continue
            st = ptx_text.Statement(m.group(2), st.line, st.scope)
        names = ptx_text.declaration(st, path)
        if names is not None:
            for name, spelt in names.items():
                # PTX's `%r1` and `r1` are two registers; ptxmc drops the '%' (one register)
                other = spellings.setdefault(name, spelt)
                if other != spelt:
                    raise LitmusError(f"this thread declares both {other} and {spelt}: PTX reads them as two "
                                      "registers, ptxmc as one (it drops the '%'); rename one of them",
                                      SourceLoc(path, st.line, st.text))
                scopes.declare_reg(name, st.scope)
                widths[(st.scope[-1], name)] = ptx_text.declared_bits(st)
            continue
        var = ptx_text.shared_variable(st, path)
        if var is not None:
            copies[var[0]] = _shared_variable(*var, SourceLoc(path, st.line, st.text), declared, pos)
            continue
        ptx_text.directive(st, path)
        instrs.append((None, st))
    count = sum(1 for label, _ in instrs if label is None)
    if count > limits.current().instructions:
        raise limits.too_large(f"too large: {count} instructions in thread {k.raw}", "instructions",
                               SourceLoc(path, k.line, k.raw))
    code, labels = [], []
    exits = False
    label_names = {label for label, _ in instrs if label is not None}
    for label, st in instrs:
        if label is not None:                   # a label defined twice in one block stays twice: paths reports it
            labels.append((scopes.named(label, st.scope[-1]), len(code)))
            continue
        where = SourceLoc(path, st.line, st.text)
        for name, spelt in _register_spellings(st.text, declared, label_names):
            other = spellings.setdefault(name, spelt)
            if other != spelt:
                raise LitmusError(f"this thread writes both {other} and {spelt}: PTX reads them as two registers, "
                                  "ptxmc as one (it drops the '%'); rename one of them", where)
        visible = scopes.visible_regs(st.scope)
        bad = ptx_text.undeclared(st.text, visible, special.NAMES) if scopes.regs else None
        if bad is not None:
            raise LitmusError(f"register %{bad} is not declared (this thread declares its registers with .reg)",
                              where)
        end = _END.fullmatch(st.text)
        if end is not None:                     # ret / exit: a branch to the end of the thread
            i = registry.parse_instr(f"{end.group(1) or ''}bra{end.group(3) or ''} {END_LABEL}", where, declared)
            i = replace(i, text=st.text)
            exits = True
        else:
            arg = _argument_read(st.text, params, where)
            i = registry.parse_instr(arg or st.text, where, declared, constant_registers=True)
            i = _with_arguments(replace(i, text=st.text) if arg else i, params)
        _check_extension(i, st.scope, widths)
        _check_widths(i, st.scope, widths)
        if len(st.scope) > 1 or (i.op == "bra" and end is None):
            i = scopes.renamed(i, st.scope, where)
        written = [r for r in address.destinations(i, registry.family(i)) if r.startswith("%")]
        if written:
            raise LitmusError(f"{written[0]} is a special register: it is read-only", where)
        code.append(i)
    if exits:
        labels.append((END_LABEL, len(code)))
    if any(k != v for k, v in copies.items()):
        code = [_renamed(i, copies) for i in code]
    return code, labels, bool(scopes.regs)


# An operand token that may name a register: `%r1` or `r1`, not inside a longer name or number,
# nor a special register's component (`%tid.x`).
_REG_TOKEN = re.compile(r"(?<![\w$%.])(%?)([A-Za-z_$][\w$]*)(?![\w$])(?!\.[xyz]\b)")
_OPCODE = re.compile(r"\s*(@!?(%?[A-Za-z_$][\w$]*)\s+)?\S+")


def _register_spellings(text: str, declared, labels) -> list[tuple[str, str]]:
    """(name without '%', as written) of each token of an instruction that names a register: its
    guard and its operands, less memory names, labels, special registers and `_`."""
    m = _OPCODE.match(text)
    if m is None:
        return []
    out = []
    if m.group(2):
        out.append((m.group(2).lstrip("%"), m.group(2)))
    for t in _REG_TOKEN.finditer(text, m.end()):
        pct, name = t.group(1), t.group(2)
        if name == "_" or (not pct and (name in declared or name in labels)) or (pct and name in special.NAMES):
            continue
        out.append((name, pct + name))
    return out


def _check_extension(i, chain: tuple[int, ...], widths: dict[tuple[int, str], int | None]) -> None:
    """A signed ld or cvt whose destination register is declared 64 bits wide: the PTX ISA
    (Operand Size Exceeding Instruction-Type Size) sign-extends the value to the register's 64
    bits, and ptxmc keeps a narrower signed value in a 32-bit register (docs/model.md): refused
    rather than read as a different number."""
    if i.family == "ld":
        t = i.quals.get("type")
    elif i.family.startswith("cvt."):
        t = i.family.split(".")[1]
    else:
        return
    if t not in ("s8", "s16", "s32"):
        return
    for r in sorted(address.destinations(i, registry.family(i))):
        bits = next((widths[(sid, r)] for sid in reversed(chain) if (sid, r) in widths), None)
        if bits is not None and bits > 32:
            raise LitmusError(f"the .{t} value goes to %{r}, a {bits}-bit register, which PTX "
                              f"sign-extends it to fill; ptxmc keeps .{t} values in 32-bit registers: "
                              f"write it to a 32-bit register and widen it with cvt.s64.{t}", i.where)


def _check_widths(i, chain: tuple[int, ...], widths: dict[tuple[int, str], int | None]) -> None:
    """A source register of setp, selp, atom or red declared wider or narrower than its type:
    the PTX ISA (Operand Type Information; Fundamental Types: compatible types have the same
    size; Restricted Use of Sub-Word Sizes: only ld, st and cvt take wider registers) makes this
    no PTX, and its value is not one the type gives (ptxmc would compare, select or combine the
    register's whole value)."""
    bits, ops = same_width_sources(i)
    if bits is None:
        return
    for op in ops:
        if not isinstance(op, Reg):
            continue
        have = next((widths[(sid, op.name)] for sid in reversed(chain) if (sid, op.name) in widths), None)
        if have is not None and have != bits:
            raise LitmusError(width_mismatch(i, op.name, have, bits), i.where)


_LD_PARAM = re.compile(r"ld\.param((?:\.\w+)*)\s+(\S+?)\s*,\s*\[\s*([A-Za-z_$][\w$]*)\s*(?:\+\s*(\w+)\s*)?\]\s*")
_CVTA_PARAM = re.compile(r"cvta(?:\.to)?\.param((?:\.\w+)*)\s+(.*)", re.S)


def _params(node: Node | None, path: str, declared: set[str]) -> dict[str, str | int]:
    """`params:` maps a kernel's argument names (as nvcc spells them: _Z4ringPi_param_0) to their
    values: a location (a pointer to it, or a __grid_constant__ argument that is it) or a number
    (docs/format.md#kernel-arguments-and-shared-variables)."""
    if node is None:
        return {}
    if node.kind != "map":
        _fail(path, node, "params must map kernel argument names to a location or a number")
    out: dict[str, str | int] = {}
    for k, v in node.items:
        if not _IDENT.fullmatch(k.raw):
            _fail(path, k, f"'{k.raw}' cannot name a kernel argument: use its name in the PTX (_Z4ringPi_param_0)")
        if k.raw in declared:
            _fail(path, k, f"'{k.raw}' is a location under memory: and a kernel argument")
        if v.kind == "scalar" and v.tag == INT:
            out[k.raw] = _int(v, path, f"params: {k.raw}")
        elif v.kind == "scalar" and v.raw in declared:
            out[k.raw] = v.raw
        else:
            _fail(path, v, f"params: {k.raw} is a location declared under memory: (the one a pointer argument "
                           "points to, or a __grid_constant__ argument such as a tensor map) or a number")
    return out


def _argument_read(text: str, params: dict[str, str | int], where: SourceLoc) -> str | None:
    """`ld.param.T d, [P]` as `mov.T d, P`, and `cvta.param.T d, a` as `mov.T d, a`, when `params:`
    gives argument P (ld.param / cvta.param are refused otherwise, saying so); None for another
    statement."""
    m = _LD_PARAM.fullmatch(text)
    if m is not None and params:
        name = m.group(3)
        if name not in params:
            raise LitmusError(f"'{name}' is a kernel argument that params: does not give (it gives "
                              f"{', '.join(sorted(params))})", where)
        if m.group(4) not in (None, "0"):
            raise LitmusError(f"a field of kernel argument '{name}' (at byte {m.group(4)}) is not modelled: "
                              "params: gives whole arguments", where)
        return f"mov{m.group(1)} {m.group(2)}, {name}"
    m = _CVTA_PARAM.fullmatch(text)
    if m is not None and params:
        return f"mov{m.group(1)} {m.group(2)}"
    return None


def _with_arguments(i, params: dict[str, str | int]):
    """`i` with each kernel argument it names (`mov.b64 %rd2, P`) replaced by its value in
    `params:` (a location's address, or a number)."""
    if not params:
        return i
    def value(o):
        name = o.name if isinstance(o, (Reg, Name)) else None
        if name not in params:
            return o
        v = params[name]
        return Imm(v) if isinstance(v, int) else Name(v)
    ops = tuple(value(o) for o in i.operands)
    return registry.validate(replace(i, operands=ops), constant_registers=True) if ops != i.operands else i


def _renamed(i, names: dict[str, str]):
    """`i` with the locations it names (`[x]`, `x`) renamed by `names`."""
    ops = tuple(replace(o, base=names.get(o.base, o.base)) if isinstance(o, Addr) and not o.register else
                Name(names.get(o.name, o.name)) if isinstance(o, Name) else o for o in i.operands)
    return replace(i, operands=ops) if ops != i.operands else i


def _shared_variable(name: str, size: int | None, where: SourceLoc, declared: dict[str, MemoryDecl],
                     pos: Position) -> str:
    """`.shared .align 8 .u64 NAME;` in a thread's code (nvcc declares a kernel's static shared
    variables in its body): each CTA has its own NAME, so in this thread NAME is the location
    `memory:` declares in the thread's CTA at NAME's offset (NAME itself, or the cell declared
    with `offset_of: NAME`); its name is returned (docs/format.md#kernel-arguments-and-shared-variables)."""
    d = declared.get(name)
    cta = pos.cta_text()
    bytes_ = f", size: {size}" if size is not None else ""
    if d is None:
        raise LitmusError(f"'.shared' declares {name} in {cta}'s shared memory: declare it under memory: "
                          f"({name}: {{space: shared, owner: {cta}{bytes_}}}), where ptxmc places a test's memory",
                          where)
    if d.space != "shared" or d.owner is None:
        raise LitmusError(f"'.shared' declares {name} in {cta}'s shared memory, and memory: declares it as "
                          f"{d.space} memory{'' if d.owner is None else ' of ' + d.owner.cta_text()}", where)
    first = d.offset_of or d.name
    mine = [m for m in declared.values() if (m.name == first or m.offset_of == first) and m.space == "shared"
            and m.owner is not None and m.owner.cta_key() == pos.cta_key()]
    if len(mine) != 1:
        why = "declares none in" if not mine else f"declares {len(mine)} ({', '.join(m.name for m in mine)}) in"
        raise LitmusError(f"'.shared' declares {name} in {cta}'s shared memory, and memory: {why} that CTA at "
                          f"{first}'s offset: each CTA has its own copy of a .shared variable; declare this CTA's "
                          f"(COPY: {{space: shared, owner: {cta}, offset_of: {first}}})", where)
    copy = mine[0]
    if size is not None and copy.size is not None and copy.size != size:
        raise LitmusError(f"'.shared' declares {name} of {size} bytes, and memory: declares {copy.name} of "
                          f"{copy.size}", where)
    return copy.name


def _kernels(node: Node | None, path: str, threads: list[Thread]) -> tuple[Kernel, ...]:
    """`kernels:` in stream order, each {name, launch: stream | pdl, threads: [...]}: every thread in
    exactly one kernel, and no CTA (no cluster) in two kernels (a CTA and its shared memory belong
    to one kernel's launch)."""
    if node is None:
        return ()
    items = _seq(node, path, "kernels")
    if not items:
        _fail(path, node, "kernels needs at least one kernel")
    names = {t.name: t for t in threads}
    owner: dict[str, str] = {}
    place: dict[tuple, str] = {}
    out = []
    for n, item in enumerate(items):
        k = _Map(item, path, KERNEL_KEYS, "a kernel")
        name = _text(k.get("name"), path, "name").strip() if k.get("name") is not None else f"K{n}"
        launch = _text(k.get("launch"), path, "launch").strip() if k.get("launch") is not None else "stream"
        if launch not in ("stream", "pdl"):
            _fail(path, k.get("launch"), "launch is stream (after the earlier kernels complete) or pdl "
                                         "(programmatic dependent launch)")
        if launch == "pdl" and n == 0:
            _fail(path, k.get("launch"), "the first kernel has no primary to depend on: launch: pdl goes on a later kernel")
        members = []
        for t in _seq(k.need("threads", "a kernel"), path, "threads"):
            tname = _text(t, path, "a thread name").strip()
            if tname not in names:
                _fail(path, t, f"no thread '{tname}' in this test")
            if tname in owner:
                _fail(path, t, f"thread '{tname}' is already in kernel '{owner[tname]}'")
            owner[tname] = name
            pos = names[tname].position
            first_gpu = names[next(iter(owner))].position.gpu
            if pos.gpu != first_gpu:
                _fail(path, t, f"{tname} runs on gpu{pos.gpu}, but the stream's kernels run on gpu{first_gpu}: "
                               "kernels: describes one stream of one GPU")
            for key in (pos.cta_key(),) + ((pos.cluster_key(),) if pos.cluster is not None else ()):
                if place.setdefault(key, name) != name:
                    _fail(path, t, f"{tname} runs in {pos.cta_text()}, a CTA or cluster of kernel '{place[key]}': "
                                   "each kernel's threads run in their own CTAs (and clusters)")
            members.append(tname)
        out.append(Kernel(name, tuple(members), launch, SourceLoc(path, item.line, name)))
    missing = [t.name for t in threads if t.name not in owner]
    if missing:
        _fail(path, node, f"thread '{missing[0]}' is in no kernel: with kernels:, list every thread in one", "")
    return tuple(out)


# `ret;` / `exit;` (PTX ISA, Control Flow Instructions) end the thread: they become a branch to
# END_LABEL, an implicit label after the thread's last instruction (no memory semantics).
_END = re.compile(r"(@!?%?[A-Za-z_$][\w$]*\s+)?(ret(\.uni)?|exit)")
END_LABEL = "$exit"
_LABEL = re.compile(r"\s*([A-Za-z_$][\w$]*)\s*:\s*(?://.*)?")
# a statement that is a label, alone or before an instruction (`::` belongs to qualifiers, not labels)
_LABEL_STMT = re.compile(r"([A-Za-z_$][\w$]*)\s*:(?!:)\s*(.*)", re.S)


def _label(item: Node, path: str) -> tuple[str | None, Node | None]:
    """A code entry's label and instruction: `L1:` (in YAML, a mapping {L1: null} unless quoted)
    is a label alone, `L1: ld ...` a label and an instruction; other entries are instructions."""
    if item.kind == "map":
        if len(item.items) != 1 or item.items[0][1].kind != "scalar":
            _fail(path, item, "a code entry is an instruction, or a label 'L1:' (optionally followed by an instruction)")
        key, value = item.items[0]
        if not _IDENT.fullmatch(key.raw):
            _fail(path, key, f"'{key.raw}' is not a label name (an identifier)")
        return key.raw, (None if value.tag.endswith(":null") and not value.raw.strip() else value)
    if item.kind == "scalar":
        m = _LABEL.fullmatch(item.raw)
        if m is not None:
            return m.group(1), None
    return None, item


def _check_cluster_styles(threads: list[Thread], decls: list[MemoryDecl], path: str) -> None:
    """Either every position names a cluster, or none does."""
    places = [(t.position, t.where) for t in threads] + [(d.owner, d.where) for d in decls if d.owner]
    first_pos, first_where = places[0]
    for pos, where in places[1:]:
        if (pos.cluster is None) != (first_pos.cluster is None):
            this, other = ("names no", "does") if pos.cluster is None else ("names a", "does not")
            raise LitmusError(f"'{pos.cta_text()}' {this} cluster, but '{first_pos.cta_text()}' (line {first_where.line}) "
                              f"{other}: name a cluster in every position or in none", where)


def _root(memory: dict[str, MemoryDecl], name: str) -> MemoryDecl:
    d = memory[name]
    while (d.alias_of or d.view_of) in memory:
        d = memory[d.alias_of or d.view_of]
    return d


def _check_memory(memory: dict[str, MemoryDecl], targets, path: str) -> None:
    for name, refs_ in targets.items():
        for key, target, node in refs_:
            if target not in memory:
                _fail(path, node, f"{key} '{target}': no such location (declared or used)")
            if key == "tensormap" and _root(memory, target).space != "global":
                _fail(path, node, f"tensor map buffer '{target}' must be global memory")
            if key == "offset_of":
                _check_offset_of(memory, memory[name], memory[target], path, node)
    for name, d in memory.items():
        chain, cur = [name], d
        while cur.alias_of or cur.view_of:
            nxt = cur.alias_of or cur.view_of
            if nxt in chain:
                raise LitmusError(f"{' -> '.join(chain + [nxt])} is a cycle of aliases/views", d.where)
            chain.append(nxt)
            cur = memory[nxt]
        if len(chain) > 1 and cur.space != "global":
            raise LitmusError(f"'{name}' is an alias or view of {cur.space} memory '{cur.name}': "
                              "only global memory has those", d.where)


def _check_offset_of(memory: dict[str, MemoryDecl], d: MemoryDecl, t: MemoryDecl, path: str, node: Node) -> None:
    """`d: {offset_of: t}`: t is the first cell of its offset (no chains, no cycles), a shared
    cell of another CTA, and d's CTA has no other cell at that offset."""
    chain, cur = [d.name], t
    while cur.offset_of and cur.name not in chain:
        chain.append(cur.name)
        cur = memory.get(cur.offset_of) or cur
    if cur.name in chain:
        _fail(path, node, f"{' -> '.join(chain + [cur.name])} is a cycle of offset_of")
    if t.offset_of:
        _fail(path, node, f"'{t.name}' is itself offset_of '{t.offset_of}': name the first cell "
                          f"(offset_of: {t.offset_of})")
    if t.space != "shared":
        _fail(path, node, f"offset_of '{t.name}': '{t.name}' is {t.space} memory, but '{d.name}' is shared "
                          "memory (offset_of names a shared cell of another CTA)")
    if t.owner.cta_key() == d.owner.cta_key():
        _fail(path, node, f"offset_of '{t.name}': '{d.name}' and '{t.name}' are both shared memory of "
                          f"{d.owner.cta_text()}: offset_of names the same offset in another CTA")
    for other in memory.values():
        if other.name == d.name:
            break
        if other.offset_of == t.name and other.owner.cta_key() == d.owner.cta_key():
            _fail(path, node, f"'{other.name}' and '{d.name}' are both at the offset of '{t.name}' in "
                              f"{d.owner.cta_text()}: one cell per CTA")


# the families whose generic-address access may reach another CTA's shared memory (an mbarrier
# operation's generic address must lie in .shared::cta: PTX ISA, mbarrier)
GENERIC_REMOTE = ("ld", "st", "atom", "red")


def _check_accesses(threads: list[Thread], memory: dict[str, MemoryDecl]) -> None:
    """State-space qualifiers must fit the location; another CTA's shared memory is reachable
    only from the same cluster, through .shared::cluster; Tensor Memory only by the families that
    access it."""
    for t in threads:
        for i in t.code:
            fam = registry.family(i)
            space = registry.address_space(i)
            for base in ptx.address_bases(i):
                d = _root(memory, base)
                if d.space == "tensor" and not fam.tensor_memory:
                    raise LitmusError(f"'{base}' is Tensor Memory: only tcgen05 instructions access it "
                                      "(tcgen05.ld / .st / .cp / .mma)", i.where)
                if d.space == "global" and space and space.startswith("shared"):
                    raise LitmusError(f"'{base}' is global memory, but the access is .{space}", i.where)
                if d.space != "shared":
                    if d.space == "tensor" and space:
                        raise LitmusError(f"'{base}' is Tensor Memory, but the access is .{space}", i.where)
                    continue
                if space == "global":
                    raise LitmusError(f"'{base}' is shared memory of {d.owner.cta_text()}, "
                                      "but the access is .global", i.where)
                if d.owner.cta_key() == t.position.cta_key():
                    continue
                if d.owner.cluster_key() != t.position.cluster_key():
                    raise LitmusError(f"'{base}' is shared memory of {d.owner.cta_text()}, outside the cluster of "
                                      f"{t.name} ({t.position.cta_text()}): no access is possible", i.where)
                if fam.own_shared_only:
                    raise LitmusError(f"'{base}' is shared memory of another CTA ({d.owner.cta_text()}): "
                                      f"{fam.own_shared_only}", i.where)
                # a generic address reaches the shared::cluster window (PTX ISA, Generic Addressing;
                # CUDA's cluster.map_shared_rank pointers: mapa.u64 then a generic st)
                if not i.has("shared::cluster") and not (space is None and i.family in GENERIC_REMOTE):
                    raise LitmusError(f"'{base}' is shared memory of another CTA ({d.owner.cta_text()}): "
                                      "access it with .shared::cluster", i.where)


def _hang(node: Node | None, path: str) -> bool | None:
    """`expect: {hang: allowed | forbidden}`: may some fair execution never terminate?"""
    if node is None or node.kind != "map":
        return None
    for k, v in node.items:
        if k.raw == "hang":
            if v.kind != "scalar" or v.raw not in ("allowed", "forbidden"):
                _fail(path, v, "hang must be allowed or forbidden")
            return v.raw == "allowed"
    return None


def _expect(node: Node | None, path: str, threads, regs, memory):
    if node is None:
        return (), None
    e = _Map(node, path, EXPECT_KEYS, "expect")
    out, undefined = [], None
    names = [t.name for t in threads]
    for key, v in e.pairs.items():
        if key == "hang":
            continue                       # _hang reads it
        if key == "undefined":
            if v.kind != "scalar" or v.tag != BOOL:
                _fail(path, v, "undefined must be true or false")
            undefined = v.value
            continue
        for item in _seq(v, path, key):
            text = _text(item, path, "a condition").strip()
            where = SourceLoc(path, item.line, text)
            cond = parse_cond(text, where)
            check_refs(cond, where, {t: regs[t] for t in names}, memory)
            out.append(Expectation(key, cond, text, where))
    return tuple(out), undefined

