"""The Builder: what an instruction family's lowering uses to make events, tags, static edges
and register values, and `build`, which freezes them into an EventStructure (with the static
relations every model needs: po, the same-thread/warp/CTA/cluster/GPU relations, the performing
CTA, locations, and the may-sets of rf and co). Families keep their own per-test state in
`ext` and register finalizers that run once every event exists.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from . import relations
from .. import limits
from ..ast import Addr, Imm, Instr, LitmusTest, Reg, Sink, Thread
from ..errors import LitmusError
from .events import Event, EventStructure, Order
from .values import ZERO, Const, Expr, ReadVal, reads_of


class Unmodelled:
    """A register whose value ptxmc does not model (e.g. the result of bar.red)."""

    def __init__(self, why: str):
        self.why = why


@dataclass
class ThreadCtx:
    thread: Thread
    tid: int
    index: int = -1                                        # the current instruction's index in the code
    regs: dict[str, object] = field(default_factory=dict)
    events: list[int] = field(default_factory=list)        # in program order
    awaited: list[int] = field(default_factory=list)       # awaited reads so far (control deps)
    instr: Instr | None = None
    ext: dict = field(default_factory=dict)                # per-thread state of extension lowerings

    def error(self, msg: str) -> LitmusError:
        i = self.instr
        return LitmusError(msg, i.where if i is not None else self.thread.where)


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
        self.notes: list[str] = []
        self.perf_cta: dict[int, tuple] = {}     # event -> the CTA that performs it, where not its thread's (A2)
        self.ext: dict = {}                      # per-test state of the instruction families
        self.finalizers: list[Callable[["Builder"], None]] = []   # run once all events exist
        self.roots: dict[str, str] = {m.name: _root(test, m.name) for m in test.memory}
        self.vlocs: dict[str, str] = {m.name: _vloc(test, m.name) for m in test.memory}
        self.init_of: dict[str, int] = {}
        self.mem_tags: dict[str, frozenset[str]] = {}
        for m in test.memory:
            self.mem_tags[m.name] = frozenset({{"shared": "SHARED", "tensor": "TMEM"}.get(m.space, "GLOBAL")})
        for m in test.memory:
            root = self.roots[m.name]
            if root == m.name:
                self.init_of[root] = self.new_event(None, "W", {"INIT", "GEN"} | self.mem_tags[root],
                                                    loc=root, vloc=root, label=f"init {root}={m.init}")
                self.write_value[self.init_of[root]] = Const(m.init)

    # -- events ------------------------------------------------------------------------------
    def new_event(self, ctx: ThreadCtx | None, kind: str, tags, loc=None, vloc=None, label="",
                  in_po: bool = True) -> int:
        """A new event; with a thread context it belongs to that thread and, unless `in_po` is
        False (the memory operations of an asynchronous instruction, A8), to its program order."""
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

    def value(self, ctx: ThreadCtx, op) -> Expr:
        if isinstance(op, Imm):
            return Const(op.value)
        if isinstance(op, Reg):
            v = ctx.regs.get(op.name, ZERO)
            if isinstance(v, Unmodelled):
                raise ctx.error(f"register '{op.name}' holds {v.why}")
            return v
        raise ctx.error("expected a register or an immediate value")

    def set_reg(self, ctx: ThreadCtx, op, v) -> None:
        if isinstance(op, Sink):
            return
        if not isinstance(op, Reg):
            raise ctx.error("expected a destination register")
        ctx.regs[op.name] = v

    def read(self, ctx: ThreadCtx, tags, op, dst=None, view: str | None = None, in_po: bool = True,
             label: str = "") -> int:
        loc, vloc = self.location(ctx, op, view)
        eid = self.new_event(ctx, "R", set(tags) | self.mem_tags[op.base], loc=loc, vloc=vloc,
                             label=label, in_po=in_po)
        self.rf_reads.append(eid)
        if dst is not None:
            self.set_reg(ctx, dst, ReadVal(eid))
        if ctx.instr is not None and ctx.instr.await_value is not None:
            self.awaits.append((eid, ctx.instr.await_value))
            ctx.awaited.append(eid)
        return eid

    def write(self, ctx: ThreadCtx, tags, op, value: Expr, view: str | None = None, in_po: bool = True,
              label: str = "") -> int:
        loc, vloc = self.location(ctx, op, view)
        eid = self.new_event(ctx, "W", set(tags) | self.mem_tags[op.base], loc=loc, vloc=vloc,
                             label=label, in_po=in_po)
        self.write_value[eid] = value
        for r in reads_of(value):
            self.pairs["dep"].add((r, eid))
        return eid

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
        sets: dict[str, set[int]] = {name: set() for name in relations.SETS}
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
            rels["po"].update((a, b) for i, a in enumerate(evs) for b in evs[i + 1:])
        pos = {c.thread.name: c.thread.position for c in contexts}
        same = {
            "sthd": lambda p, q, a, b: a == b,
            "swarp": lambda p, q, a, b: p.cta_key() == q.cta_key() and p.warp == q.warp,
            "scta": lambda p, q, a, b: p.cta_key() == q.cta_key(),
            "scluster": lambda p, q, a, b: p.cluster_key() == q.cluster_key(),
            "sgpu": lambda p, q, a, b: p.gpu == q.gpu,
        }
        threaded = [e for e in self.events if e.thread is not None]
        for name, f in same.items():
            rels[name] = {(a.eid, b.eid) for a in threaded for b in threaded
                          if f(pos[a.thread], pos[b.thread], a.thread, b.thread)}
        performer = {e.eid: self.perf_cta.get(e.eid, pos[e.thread].cta_key()) for e in threaded}
        rels["pscta"] = {(a.eid, b.eid) for a in threaded for b in threaded
                         if performer[a.eid] == performer[b.eid]}
        mem = [e for e in self.events if e.is_memory]
        rels["loc"] = {(a.eid, b.eid) for a in mem for b in mem if a.loc == b.loc}
        rels["vloc"] = {(a.eid, b.eid) for a in mem for b in mem if a.vloc == b.vloc}
        writes_at: dict[str, list[int]] = defaultdict(list)
        for e in self.events:
            if e.kind == "W":
                writes_at[e.loc].append(e.eid)
        rf_may = {r: tuple(writes_at[self.events[r].loc]) for r in self.rf_reads}
        co = Order("co", tuple(tuple(ws) for _, ws in sorted(writes_at.items()) if len(ws) > 1),
                   frozenset(self.init_of.values()))
        fsc = Order("fsc", (tuple(sorted(sets["F"] & sets["SC"])),) if len(sets["F"] & sets["SC"]) > 1 else ())
        registers = {}
        for ctx in contexts:
            for r, v in sorted(ctx.regs.items()):
                if not isinstance(v, Unmodelled):
                    registers[(ctx.thread.name, r)] = v
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
        )

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
