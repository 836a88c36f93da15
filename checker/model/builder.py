"""The Builder: what an instruction family's lowering uses to make events, tags, static edges
and register values, and `build`, which freezes them into an EventStructure (with the static
relations every model needs: po, the same-thread/warp/CTA/cluster/GPU relations, the performing
CTA, locations, and the may-sets of rf and co). Families keep their own per-test state in
`ext` and register finalizers that run once every event exists.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from . import relations
from .. import limits
from ..ast import Addr, Float, Imm, Instr, LitmusTest, Name, Reg, Sink, Thread
from ..errors import LitmusError
from .events import Event, EventStructure, Order
from .memory import MAX_BYTES, Access, Layout, Span, compose, plan, slice_value, split_events, substitute
from .values import FLOAT_FORMATS, ZERO, Const, Expr, ReadVal, bounds, float_bits, reads_of, wrap


class Unmodelled:
    """A register whose value ptxmc does not model (e.g. the result of bar.red)."""

    def __init__(self, why: str):
        self.why = why


class AddressValue(Unmodelled):
    """A register holding an address (checker.isa.address resolves accesses through it when the
    test is loaded; as a value it is not modelled: ptxmc does not model pointers in memory)."""


@dataclass
class ThreadCtx:
    thread: Thread
    tid: int
    index: int = -1                                        # the current instruction's index in the code
    regs: dict[str, object] = field(default_factory=dict)
    formats: dict[str, tuple[int | None, str]] = field(default_factory=dict)  # register -> (bits, int|f32|f64)
    events: list[int] = field(default_factory=list)        # in program order (Builder.unit: which are unordered)
    awaited: list[int] = field(default_factory=list)       # awaited reads so far (control deps)
    instr: Instr | None = None
    ext: dict = field(default_factory=dict)                # per-thread state of extension lowerings

    def error(self, msg: str) -> LitmusError:
        i = self.instr
        return LitmusError(msg, i.where if i is not None else self.thread.where)


NEGATIVE_AWAIT = ("the awaited value {v} is negative and the untyped ld reads a location with a size: give the "
                  "load a signed type (ld.s32 ... == {v}) or await the bit pattern")


@dataclass(frozen=True)
class UntypedUse:
    """Register `reg`, holding untyped (exact) value `value`, read by instruction `text` as a
    `bits`-bit value (`negative`: a signed type, for which a negative value is its own)."""

    reg: str
    value: Expr
    bits: int
    negative: bool
    text: str
    where: object
    # the hang question's compare of an untyped await with a negative value (UnfoldedAwait)
    await_value: int | None = None

    def message(self, span) -> str:
        lo, hi = ("-inf" if x == -math.inf else "inf" if x == math.inf else x for x in span)
        return (f"{self.reg} holds an untyped value that may not fit {self.bits} bits (it lies between {lo} and {hi}: "
                f"an untyped ld has the size of its location, untyped arithmetic is "
                f"exact); give the load or the arithmetic a {self.bits}-bit type, or convert with cvt")


class Builder:
    """Accumulates events and edges; `build()` freezes them into an EventStructure."""

    def __init__(self, test: LitmusTest):
        self.test = test
        self.max_events = limits.current().events
        self.events: list[Event] = []
        self.pairs: dict[str, set] = defaultdict(set)
        self.write_value: dict[int, Expr] = {}
        self.rf_reads: list[int] = []
        self.awaits: list[tuple[int, int]] = []
        self.guards: list[tuple[Expr, int]] = []     # awaits on computed values (EventStructure.guards)
        self.value_sets: dict[str, list[tuple[int, Expr]]] = defaultdict(list)   # EventStructure.value_sets
        self.notes: list[str] = []
        self.perf_cta: dict[int, tuple] = {}     # event -> the CTA that performs it, where not its thread's (A2)
        self.ext: dict = {}                      # per-test state of the instruction families
        self.finalizers: list[Callable[["Builder"], None]] = []   # run once all events exist
        self.roots: dict[str, str] = {m.name: _root(test, m.name) for m in test.memory}
        self.vlocs: dict[str, str] = {m.name: _vloc(test, m.name) for m in test.memory}
        self.init_of: dict[str, int] = {}
        self.mem_tags: dict[str, frozenset[str]] = {}
        self.accesses: dict[int, Access] = {}    # memory event -> the bytes it accesses
        self.location_bits: dict[str, int] = {}  # sized location -> bits of its value
        # untyped accesses take the size of their location, known once every access is (_split):
        # an untyped st's event -> whether it stores an immediate (which must fit, as a typed one)
        self.untyped_stores: dict[int, bool] = {}
        self.untyped_loads: set[int] = set()
        # untyped values read as an instruction type's bits (checker.isa.common.same_width)
        self.untyped_uses: list[UntypedUse] = []
        self.unit: dict[int, int] = {}           # event in po -> its program-order unit
        for m in test.memory:
            self.mem_tags[m.name] = frozenset({{"shared": "SHARED", "tensor": "TMEM"}.get(m.space, "GLOBAL")})
        for m in test.memory:
            root = self.roots[m.name]
            if root == m.name:
                self.init_of[root] = self.new_event(None, "W", {"INIT", "GEN"} | self.mem_tags[root],
                                                    loc=root, vloc=root, label=f"init {root}={m.init}")
                self.write_value[self.init_of[root]] = Const(m.init)
                self.accesses[self.init_of[root]] = Access(root, root, (Span(0, None),), m.where)

    # -- events ------------------------------------------------------------------------------
    def new_event(self, ctx: ThreadCtx | None, kind: str, tags, loc=None, vloc=None, label="",
                  in_po: bool = True, join: bool = False) -> int:
        """A new event; with a thread context it belongs to that thread and, unless `in_po` is
        False (the memory operations of an asynchronous instruction, A8), to its program order.
        `join`: in the program-order unit of the thread's previous event (unordered with it: the
        element accesses of one vector instruction, "in unspecified order")."""
        eid = len(self.events)
        if eid >= self.max_events or not eid & 255:     # bounds first: before build()'s quadratic
            limits.check_events(eid + 1, counting=True)  # relations; the test's time includes lowering
            limits.check_deadline()
        thread = ctx.thread.name if ctx else None
        index = -1
        if ctx is not None and ctx.instr is not None:
            index = ctx.index
            label = label or ctx.instr.text
        self.events.append(Event(eid, thread, kind, frozenset(tags), loc, vloc, label, index))
        if ctx is not None:
            if in_po:
                self.unit[eid] = self.unit[ctx.events[-1]] if join and ctx.events else eid
                ctx.events.append(eid)
            for r in ctx.awaited:
                self.pairs["dep"].add((r, eid))
        return eid

    def location(self, ctx: ThreadCtx, op, view: str | None = None) -> tuple[str, str]:
        """(physical root, virtual address) of an address operand. A location declared as a view
        (texture_of / surface_of / constant_of) is accessed only by the instructions of that
        proxy (`view`); its virtual address is that of the location it views."""
        if not isinstance(op, Addr):
            raise ctx.error("expected an address operand [name]")
        if op.base not in self.roots:
            raise ctx.error(f"unknown location '{op.base}'")
        decl = self.test.mem(op.base)
        has = decl.view if decl is not None else None
        if has != view:
            if has is None:
                raise ctx.error(f"'{op.base}' is not a {view} view: declare one, e.g. "
                                f"t: {{{view}_of: {op.base}}}, and access that")
            raise ctx.error(f"'{op.base}' is the {has} view of '{decl.view_of}': access it only with "
                            f"{VIEW_ACCESSES[has]}, or access '{decl.view_of}' itself")
        return self.roots[op.base], self.vlocs[op.base]

    def value(self, ctx: ThreadCtx, op, bits: int | None = None, fmt: str = "int") -> Expr:
        """The value of a register or immediate operand used as a `bits`-bit value of format `fmt`
        (int, f32, f64): an immediate must fit (a negative one is its two's complement), a
        decimal floating-point literal needs an f32/f64 format."""
        if isinstance(op, Imm):
            return Const(self.fit(ctx, op.value, bits, "the value"))
        if isinstance(op, Float):
            if fmt not in FLOAT_FORMATS:
                raise ctx.error(f"'{op.text}': a floating-point literal needs a .f32 or .f64 instruction")
            try:
                return Const(float_bits(op.text, fmt))
            except OverflowError:
                raise ctx.error(f"'{op.text}' does not fit in .{fmt}") from None
        if isinstance(op, Reg):
            v = ctx.regs.get(op.name, ZERO)
            if isinstance(v, Unmodelled):
                raise ctx.error(f"register '{op.name}' holds {v.why}")
            return v
        if isinstance(op, Name):
            raise ctx.error(f"'{op.name}' is the address of a location: ptxmc does not model addresses as values "
                            "(access it with [{op.name}])")
        raise ctx.error("expected a register or an immediate value")

    def set_reg(self, ctx: ThreadCtx, op, v, bits: int | None = None, fmt: str = "int") -> None:
        """Register `op` gets value `v`, a `bits`-bit value of format `fmt` (bits None: an exact
        integer, the value of an untyped operation)."""
        if isinstance(op, Sink):
            return
        if not isinstance(op, Reg):
            raise ctx.error("expected a destination register")
        ctx.regs[op.name] = v
        ctx.formats[op.name] = (bits, fmt)

    def _access(self, ctx: ThreadCtx, op, view: str | None, size: int | None, align: int | None,
                spans: tuple[Span, ...] | None) -> tuple[str, str, tuple[Span, ...]]:
        """(physical root, virtual address, spans) of an access through address operand `op`:
        `size` bytes at op's offset (None: the whole location), aligned to `align` (default: the
        size, PTX's natural alignment), or the given spans."""
        loc, vloc = self.location(ctx, op, view)
        if spans is None:
            if size is None and op.offset:
                raise ctx.error(f"'{op.base}{op.offset:+d}': an access at an offset needs a size: give the "
                                f"instruction a type (e.g. .b32) or a size")
            if op.offset < 0:
                raise ctx.error(f"'{op.base}{op.offset:+d}': a negative offset is before the location")
            spans = (Span(op.offset, size),)
        if any(sp.offset + (sp.size or 0) > MAX_BYTES for sp in spans):
            raise ctx.error(f"'{op.base}': an access past byte {MAX_BYTES}: ptxmc models locations of up to 1 MiB")
        align = size if align is None else align
        for sp in spans:
            if align and sp.offset % align:
                raise ctx.error(f"'[{op.base}+{sp.offset}]' is not aligned to {align} bytes: PTX requires "
                                f"{'natural alignment' if align == size else f'{align}-byte alignment'} here")
        return loc, vloc, spans

    def read(self, ctx: ThreadCtx, tags, op, dst=None, view: str | None = None, in_po: bool = True,
             label: str = "", size: int | None = None, align: int | None = None,
             spans: tuple[Span, ...] | None = None, join: bool = False, awaited: bool = True) -> int:
        """A read of `size` bytes at address operand `op` (None: the whole location); its value
        goes to register `dst`. An await on the instruction (`== v`) makes it awaited, unless
        `awaited` is False (the await is on a value computed from it: EventStructure.guards)."""
        loc, vloc, spans = self._access(ctx, op, view, size, align, spans)
        eid = self.new_event(ctx, "R", set(tags) | self.mem_tags[op.base], loc=loc, vloc=vloc,
                             label=label, in_po=in_po, join=join)
        self.accesses[eid] = Access(loc, vloc, spans, ctx.instr.where if ctx.instr else None)
        self.rf_reads.append(eid)
        if dst is not None:
            self.set_reg(ctx, dst, ReadVal(eid))
        if awaited and ctx.instr is not None and ctx.instr.await_value is not None:
            bits = 8 * sum(sp.size for sp in spans) if all(sp.size for sp in spans) else None
            self.awaits.append((eid, self.fit(ctx, ctx.instr.await_value, bits, "the awaited value")))
            ctx.awaited.append(eid)
        return eid

    def write(self, ctx: ThreadCtx, tags, op, value: Expr, view: str | None = None, in_po: bool = True,
              label: str = "", size: int | None = None, align: int | None = None,
              spans: tuple[Span, ...] | None = None, join: bool = False) -> int:
        """A write of `value` to `size` bytes at address operand `op` (None: the whole location):
        a sized write stores the value's low 8 * size bits (two's complement)."""
        loc, vloc, spans = self._access(ctx, op, view, size, align, spans)
        eid = self.new_event(ctx, "W", set(tags) | self.mem_tags[op.base], loc=loc, vloc=vloc,
                             label=label, in_po=in_po, join=join)
        self.accesses[eid] = Access(loc, vloc, spans, ctx.instr.where if ctx.instr else None)
        if all(sp.size for sp in spans):
            value = wrap(value, 8 * sum(sp.size for sp in spans))
        self.write_value[eid] = value
        for r in reads_of(value):
            self.pairs["dep"].add((r, eid))
        return eid

    @staticmethod
    def fit(ctx: ThreadCtx, v: int, bits: int | None, what: str) -> int:
        """An integer the test gives for a `bits`-bit value, as its bit pattern (two's complement
        for a negative one); LitmusError if it does not fit."""
        if bits is None or 0 <= v < (1 << bits):
            return v
        if -(1 << (bits - 1)) <= v < 0:
            return v + (1 << bits)
        raise ctx.error(f"{what} {v} does not fit in {bits} bits")

    # -- freezing ----------------------------------------------------------------------------
    def finalize(self, key: str, finish: Callable[["Builder"], None]) -> dict:
        """The per-test state `key` of a family (a dict), registering `finish` to run once every
        event exists the first time it is asked for."""
        if key not in self.ext:
            self.ext[key] = {}
            self.finalizers.append(finish)
        return self.ext[key]

    def build(self, contexts: list[ThreadCtx]) -> EventStructure:
        for finish in self.finalizers:
            finish(self)
        compose_of, groups, ranges = self._split(contexts)
        sets: dict[str, set[int]] = {name: set() for name in relations.SETS}
        for name in self.value_sets:
            if name not in relations.VALUE_SETS:
                raise AssertionError(f"lowering used value set {name!r} missing from checker.model.relations")
        for e in self.events:
            for t in e.tags:
                if t not in sets:
                    raise AssertionError(f"lowering used tag {t!r} missing from checker.model.relations")
                sets[t].add(e.eid)
            if e.kind in ("R", "W", "F", "B"):
                sets[e.kind].add(e.eid)
        rels = {name: set(self.pairs.get(name, ())) for name in relations.RELATIONS if name not in relations.DYNAMIC}
        for ctx in contexts:
            evs = ctx.events
            rels["po"].update((a, b) for i, a in enumerate(evs) for b in evs[i + 1:]
                              if self.unit[a] != self.unit[b])
        pos = {c.thread.name: c.thread.position for c in contexts}
        # Relations "same X": every pair of events whose X is equal (themselves included).
        same = {
            "sthd": lambda p, t: t,
            "swarp": lambda p, t: (p.cta_key(), p.warp),
            "scta": lambda p, t: p.cta_key(),
            "scluster": lambda p, t: p.cluster_key(),
            "sgpu": lambda p, t: p.gpu,
        }
        threaded = [e for e in self.events if e.thread is not None]
        for name, key in same.items():
            rels[name] = _same(threaded, lambda e, key=key: key(pos[e.thread], e.thread))
        performer = {e.eid: self.perf_cta.get(e.eid, pos[e.thread].cta_key()) for e in threaded}
        rels["pscta"] = _same(threaded, lambda e: performer[e.eid])
        mem = [e for e in self.events if e.is_memory]
        rels["loc"] = _same(mem, lambda e: e.loc)
        rels["vloc"] = _same(mem, lambda e: e.vloc)
        rels["sa"] = _same(mem, lambda e: groups[e.eid])
        rels["srange"] = _same(mem, lambda e: ranges[e.eid])
        writes_at: dict[str, list[int]] = defaultdict(list)
        for e in self.events:
            if e.kind == "W":
                writes_at[e.loc].append(e.eid)
        rf_may = {r: tuple(writes_at[self.events[r].loc]) for r in self.rf_reads}
        co = Order("co", tuple(tuple(ws) for _, ws in sorted(writes_at.items()) if len(ws) > 1),
                   frozenset(e.eid for e in self.events if "INIT" in e.tags))
        fsc = Order("fsc", (tuple(sorted(sets["F"] & sets["SC"])),) if len(sets["F"] & sets["SC"]) > 1 else ())
        registers, formats = {}, {}
        for ctx in contexts:
            for r, v in sorted(ctx.regs.items()):
                if not isinstance(v, Unmodelled):
                    registers[(ctx.thread.name, r)] = v
                    formats[f"{ctx.thread.name}:{r}"] = ctx.formats.get(r, (None, "int"))
        for root, bits in self.location_bits.items():
            formats[root] = (bits, "int")
        return EventStructure(
            events=tuple(self.events),
            sets={k: frozenset(v) for k, v in sets.items()},
            relations={k: frozenset(v) for k, v in rels.items()},
            rf_may=rf_may,
            orders=(co, fsc),
            write_value=dict(self.write_value),
            registers=registers,
            awaits=tuple(self.awaits),
            final_writes={loc: tuple(ws) for loc, ws in sorted(writes_at.items())},
            names=dict(self.roots),
            thread_names=tuple(c.thread.name for c in contexts),
            notes=tuple(self.notes),
            guards=tuple(self.guards),
            value_sets={k: tuple(v) for k, v in sorted(self.value_sets.items())},
            compose=compose_of,
            formats=formats,
        )

    # -- bytes -------------------------------------------------------------------------------
    def _split(self, contexts: list[ThreadCtx]):
        """Cut every location into atoms and each access into one event per atom it covers
        (checker.model.memory), renumbering events; return the composition of each cut
        location's value from its atoms, and for each memory event its access (for sa) and its
        bytes (for srange)."""
        sizes = {m.name: m.size for m in self.test.memory}
        layouts = plan(sizes, self.accesses, {e: self.events[e].tags for e in self.accesses})
        self._check_inits(layouts)
        self.location_bits = {r: 8 * lay.extent for r, lay in layouts.items() if lay.extent is not None}
        self._size_untyped(layouts, contexts)
        if all(len(lay.atoms) == 1 for lay in layouts.values()):
            groups = {e: e for e in self.accesses}
            ranges = {e: (a.root, frozenset(layouts[a.root].resolved(sp) for sp in a.spans))
                      for e, a in self.accesses.items()}
            return {}, groups, ranges
        sp = split_events(self.events, self.accesses, layouts)
        new_of = sp.new_of
        old_accesses = self.accesses

        # the value of each read: its atoms' values composed (one atom: the atom's read)
        reads = {}
        for old, news in new_of.items():
            if self.events[old].kind == "R" and old in old_accesses:
                reads[old] = compose([(ReadVal(n), sp.atom_of[n][2]) for n in news]) if len(news) > 1 \
                    else ReadVal(news[0])
        groups, ranges = {}, {}
        for old, a in old_accesses.items():
            rng = (a.root, frozenset(layouts[a.root].resolved(s) for s in a.spans))
            for n in new_of[old]:
                groups[n], ranges[n] = old, rng
        write_value = {}
        for old, v in self.write_value.items():
            v = substitute(v, reads)
            for n in new_of[old]:
                if n in sp.atom_of and len(new_of[old]) > 1:
                    _, (lo, hi), pos = sp.atom_of[n]
                    write_value[n] = slice_value(v, pos, hi - lo)
                else:
                    write_value[n] = v
        pairs = defaultdict(set)
        for name, ps in self.pairs.items():
            for a, b in ps:
                if name == "rmw":       # read and write of one RMW: atom by atom
                    atoms = {sp.atom_of[n][1]: n for n in new_of[b] if n in sp.atom_of}
                    for n in new_of[a]:
                        m = atoms.get(sp.atom_of[n][1]) if n in sp.atom_of else new_of[b][0]
                        if m is not None:
                            pairs[name].add((n, m))
                else:
                    pairs[name].update((x, y) for x in new_of[a] for y in new_of[b])
        awaits, guards = [], [(substitute(e, reads), v) for e, v in self.guards]
        for r, v in self.awaits:
            if len(new_of[r]) == 1:
                awaits.append((new_of[r][0], v))
            else:
                guards.append((reads[r], v))
        for ctx in contexts:
            ctx.events = [n for e in ctx.events for n in new_of[e]]
            ctx.regs = {r: v if isinstance(v, Unmodelled) else substitute(v, reads) for r, v in ctx.regs.items()}
        self.unit = {n: self.unit[old] for old, news in new_of.items() if old in self.unit for n in news}
        self.perf_cta = {n: cta for old, cta in self.perf_cta.items() for n in new_of[old]}
        self.rf_reads = [n for r in self.rf_reads for n in new_of[r]]
        self.events, self.write_value, self.pairs = sp.events, write_value, pairs
        self.awaits, self.guards = awaits, guards
        self.value_sets = defaultdict(list, {name: [(n, substitute(x, reads)) for e, x in members for n in new_of[e]]
                                             for name, members in self.value_sets.items()})
        self.accesses = {n: old_accesses[old] for old in old_accesses for n in new_of[old]}
        compose_of = {}
        for root, lay in layouts.items():
            if len(lay.atoms) > 1:
                compose_of[root] = tuple((f"{root}[{lo}:{hi}]", lo) for lo, hi in lay.atoms)
        return compose_of, groups, ranges

    def _size_untyped(self, layouts: dict[str, Layout], contexts: list[ThreadCtx]) -> None:
        """An untyped access of a sized location has its size (docs/model.md#a16): an untyped st
        stores its value's low bits (an immediate must fit, as for a typed st), so an untyped ld
        returns a value of that many bits, in a register of at least 32 (as a typed load's: a
        condition's negative number is its two's complement there); each untyped value an
        instruction reads as its type (UntypedUse) must fit that type; and a negative awaited
        value of such a load is refused (its hang question compares the exact value, A18)."""
        def sized_read(eid: int) -> int | None:
            return layouts[self.accesses[eid].root].extent if eid in self.untyped_loads else None

        for eid, v in self.awaits:
            if v < 0 and sized_read(eid) is not None:
                raise LitmusError(NEGATIVE_AWAIT.format(v=v), self.accesses[eid].where)
        for ctx in contexts:
            for r, v in ctx.regs.items():
                if isinstance(v, ReadVal) and ctx.formats.get(r, (0,))[0] is None:
                    extent = sized_read(v.eid)
                    if extent is not None:
                        ctx.formats[r] = (max(32, 8 * extent), "int")
        for eid, imm in self.untyped_stores.items():
            acc = self.accesses[eid]
            extent = layouts[acc.root].extent
            if extent is None:
                continue
            v = self.write_value[eid]
            if imm and isinstance(v, Const) and not -(1 << (8 * extent - 1)) <= v.value < (1 << 8 * extent):
                raise LitmusError(f"the value {v.value} does not fit in the {extent} bytes of '{acc.vname}'", acc.where)
            self.write_value[eid] = wrap(v, 8 * extent)

        def read_bounds(eid: int):
            acc = self.accesses.get(eid)
            if acc is None:
                return -math.inf, math.inf
            if all(sp.size for sp in acc.spans):
                return 0, (1 << 8 * sum(sp.size for sp in acc.spans)) - 1
            extent = layouts[acc.root].extent
            return None if extent is None else (0, (1 << 8 * extent) - 1)

        for use in self.untyped_uses:
            span = bounds(use.value, read_bounds)
            if span is None:        # read from a location without a size: an abstract integer
                continue
            if use.await_value is not None:
                raise LitmusError(NEGATIVE_AWAIT.format(v=use.await_value), use.where)
            lo = -(1 << (use.bits - 1)) if use.negative else 0
            if not (lo <= span[0] and span[1] < (1 << use.bits)):
                raise LitmusError(use.message(span), use.where)

    def _check_inits(self, layouts: dict[str, Layout]) -> None:
        """A sized location's initial value fits its bytes (a negative one as two's complement)."""
        for m in self.test.memory:
            lay = layouts.get(m.name)
            if lay is None or lay.extent is None or m.name not in self.init_of:
                continue
            bits = 8 * lay.extent
            if not -(1 << (bits - 1)) <= m.init < (1 << bits):
                how = "" if m.size is not None else \
                    f" (the bytes its accesses reach; declare more with {m.name}: {{size: N, init: ...}})"
                raise LitmusError(f"the initial value {m.init} of '{m.name}' does not fit its {lay.extent} bytes{how}",
                                  m.where)
            if m.init < 0:
                self.write_value[self.init_of[m.name]] = Const(m.init + (1 << bits))

VIEW_ACCESSES = {"texture": "tld", "surface": "suld / sust", "constant": "ldc"}


def _vloc(test: LitmusTest, name: str) -> str:
    """The virtual address a name stands for: a view (texture_of/surface_of/constant_of) has the
    address of the location it views; an alias is its own virtual address (A4)."""
    seen = set()
    m = test.mem(name)
    while m is not None and m.view_of and m.name not in seen:
        seen.add(m.name)
        name = m.view_of
        m = test.mem(name)
    return name


def _root(test: LitmusTest, name: str) -> str:
    seen = set()
    m = test.mem(name)
    while m is not None and (m.alias_of or m.view_of):
        if m.name in seen:
            raise LitmusError(f"'{name}' is an alias of itself", m.where)
        seen.add(m.name)
        m = test.mem(m.alias_of or m.view_of)
    return m.name if m is not None else name


def _same(events, key) -> set[tuple[int, int]]:
    """Every pair (a, b) of `events` with equal keys, found by key rather than by comparing every
    pair (lowering: 0.2 s of the bundled suites). The pairs go in in the order of a comparison of
    every pair, so the set iterates as that one did (the encoding follows that order)."""
    keys = [(e.eid, key(e)) for e in events]
    groups: dict = defaultdict(list)
    for eid, k in keys:
        groups[k].append(eid)
    return {(a, b) for a, k in keys for b in groups[k]}
