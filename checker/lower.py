"""LitmusTest -> EventStructure: the one place where PTX instructions get their meaning.

Each opcode has a lowering function in LOWER that adds events, tags, static edges and register
values to a Builder. Opcode strings stop here: everything downstream sees tags and relations
named in checker.relations.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from .model import relations
from .ast import Addr, Imm, Instr, LitmusTest, Reg, Sink, Thread
from .errors import LitmusError, SourceLoc
from .model.events import Event, EventStructure, Order
from .model.values import ZERO, Bin, Const, Expr, Ite, ReadVal, binop, reads_of

SCOPES = {"cta": "CTA", "cluster": "CLUSTER", "gpu": "GPU", "sys": "SYS"}


class _Unmodelled:
    """A register whose value ptxmc does not model (e.g. the result of bar.red)."""

    def __init__(self, why: str):
        self.why = why


@dataclass
class ThreadCtx:
    thread: Thread
    tid: int
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
        self.events: list[Event] = []
        self.pairs: dict[str, set] = defaultdict(set)
        self.write_value: dict[int, Expr] = {}
        self.rf_reads: list[int] = []
        self.awaits: list[tuple[int, int]] = []
        self.guards: list[tuple[Expr, int]] = []     # awaits on computed values (EventStructure.guards)
        self.barriers: dict[tuple, dict[str, list[tuple[int, Instr, int | None]]]] = defaultdict(lambda: defaultdict(list))
        self.warp_syncs: dict[tuple, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
        self.notes: list[str] = []
        self.perf_cta: dict[int, tuple] = {}     # event -> the CTA that performs it, where not its thread's (A2)
        self.ext: dict = {}                      # state of extension lowerings (checker.lower_*)
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
        thread = ctx.thread.name if ctx else None
        index = -1
        if ctx is not None and ctx.instr is not None:
            index = ctx.thread.code.index(ctx.instr)
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
            if isinstance(v, _Unmodelled):
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
    def build(self, contexts: list[ThreadCtx]) -> EventStructure:
        self._match_barriers()
        for finish in self.finalizers:
            finish(self)
        sets: dict[str, set[int]] = {name: set() for name in relations.SETS}
        for e in self.events:
            for t in e.tags:
                if t not in sets:
                    raise AssertionError(f"lowering used tag {t!r} missing from checker.relations")
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
                if not isinstance(v, _Unmodelled):
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

    def _match_barriers(self) -> None:
        """Static instance matching: the k-th use of barrier id b by each thread of a CTA joins
        instance k. Counts must agree with the threads that take part, or it could never complete."""
        test = self.test
        for (cta, bid), per_thread in sorted(self.barriers.items(), key=lambda kv: repr(kv[0])):
            ctas_threads = [t.name for t in test.threads if t.position.cta_key() == cta]
            depth = max(len(v) for v in per_thread.values())
            for k in range(depth):
                members = [(t, per_thread[t][k]) for t in per_thread if len(per_thread[t]) > k]
                for t, (eid, instr, count) in members:
                    expected = count if count is not None else len(ctas_threads)
                    who = ", ".join(sorted(m for m, _ in members))
                    if expected > len(members):
                        raise LitmusError(
                            f"barrier {bid} (use {k + 1}) expects {expected} threads but only {who} "
                            f"take part: it would never complete", instr.where)
                    if expected < len(members):
                        raise LitmusError(
                            f"barrier {bid} (use {k + 1}) expects {expected} threads but {len(members)} take "
                            f"part ({who}): which of them complete it together is decided at run time, "
                            f"which ptxmc does not model; give each group its own barrier", instr.where)
                for _, (a, _, _) in members:
                    for _, (b, _, _) in members:
                        if a != b and self.events[b].tags & {"BAR_SYNC", "BAR_RED"}:
                            self.pairs["syncbar"].add((a, b))
        for key, per_thread in sorted(self.warp_syncs.items(), key=lambda kv: repr(kv[0])):
            depth = max(len(v) for v in per_thread.values())
            for k in range(depth):
                members = [per_thread[t][k][0] for t in per_thread if len(per_thread[t]) > k]
                self.pairs["syncwarp"].update((a, b) for a in members for b in members if a != b)


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


# -- the generic PTX subset ------------------------------------------------------------------

def _sem_scope(ctx: ThreadCtx, instr: Instr, sems, default_sem="weak", default_scope=None) -> tuple[str, str | None]:
    sem = instr.pick(sems, default_sem)
    scope = instr.pick(SCOPES, default_scope)
    if sem in ("volatile", "mmio"):
        scope = "sys"
    return sem, scope


def _strength_tags(sem: str, scope: str | None) -> set[str]:
    if sem == "weak":
        return {"WEAK", "GEN"}
    tags = {"STRONG", "GEN", SCOPES[scope or "gpu"]}
    tags |= {"relaxed": {"RLX"}, "volatile": {"RLX", "VOL"}, "mmio": {"RLX", "MMIO"},
             "acquire": {"ACQ"}, "release": {"REL"}, "acq_rel": set()}[sem]
    return tags


def lower_ld(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    sem, scope = _sem_scope(ctx, i, ("weak", "relaxed", "acquire", "volatile", "mmio"))
    dst, addr = i.operands[0], i.operands[1]
    b.read(ctx, _strength_tags(sem, scope), addr, dst)


def lower_st(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    sem, scope = _sem_scope(ctx, i, ("weak", "relaxed", "release", "volatile", "mmio"))
    addr, src = i.operands[0], i.operands[1]
    b.write(ctx, _strength_tags(sem, scope), addr, b.value(ctx, src))


ATOM_OPS = ("exch", "cas", "add", "inc", "dec", "min", "max", "and", "or", "xor")


def _atom_value(op: str, old: Expr, args: list[Expr]) -> Expr:
    x = args[0]
    if op == "exch":
        return x
    if op == "cas":
        # PTX: *a = (*a == b) ? c : *a -- a failed cas still writes (the old value).
        return Ite("==", old, x, args[1], old)
    if op == "inc":
        return Ite(">=", old, x, ZERO, Bin("add", old, Const(1)))
    if op == "dec":
        return Ite("==", old, ZERO, x, Ite(">", old, x, x, Bin("sub", old, Const(1))))
    return binop(op, old, x)


def _lower_rmw(b: Builder, ctx: ThreadCtx, i: Instr, is_red: bool) -> None:
    op = i.pick(ATOM_OPS)
    sem, scope = _sem_scope(ctx, i, ("relaxed", "acquire", "release", "acq_rel"), "relaxed", "gpu")
    ops = list(i.operands)
    dst = None if is_red else ops.pop(0)
    addr, args = ops[0], [b.value(ctx, a) for a in ops[1:]]
    base = _strength_tags("relaxed", scope) - ({"RLX"} if sem != "relaxed" else set())
    kind = {"ATOM"} | ({"RED"} if is_red else set())
    rtags = base | kind | ({"ACQ"} if sem in ("acquire", "acq_rel") else set())
    wtags = base | kind | ({"REL"} if sem in ("release", "acq_rel") else set())
    r = b.read(ctx, rtags, addr, None if is_red else dst)
    w = b.write(ctx, wtags, addr, _atom_value(op, ReadVal(r), args))
    b.pairs["rmw"].add((r, w))


def lower_atom(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _lower_rmw(b, ctx, i, is_red=False)


def lower_red(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _lower_rmw(b, ctx, i, is_red=True)


def _fence(b: Builder, ctx: ThreadCtx, sem: str, scope: str, extra=()) -> int:
    tag = {"sc": "SC", "acq_rel": "ACQ_REL", "acquire": "ACQ", "release": "REL"}[sem]
    return b.new_event(ctx, "F", {tag, "STRONG", "GEN", SCOPES[scope], *extra})


def lower_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    handler = FENCE_VARIANTS.get(_fence_variant(i))
    if handler is None:
        raise ctx.error(f"'{i.text}' is not supported by the model yet")
    handler(b, ctx, i)


def _fence_variant(i: Instr) -> str:
    for q in i.qualifiers:
        if q.startswith("proxy") or q.startswith("mbarrier_init") or q.startswith("sync_restrict") \
                or q.startswith("op_restrict"):
            return q.split("::")[0]
    return "memory"


def _memory_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _fence(b, ctx, i.pick(("sc", "acq_rel", "acquire", "release"), "acq_rel"), i.pick(SCOPES))


# Proxy fences, restricted fences and the like register themselves here (see checker.lower_*).
FENCE_VARIANTS: dict[str, Callable[[Builder, ThreadCtx, Instr], None]] = {"memory": _memory_fence}


def lower_membar(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    scope = {"cta": "cta", "gl": "gpu", "sys": "sys"}.get(i.pick(("cta", "gl", "sys")))
    if scope is None:
        raise ctx.error(f"'{i.text}' is not supported by the model yet")
    _fence(b, ctx, "sc", scope)


def lower_bar(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    if i.has("warp"):
        mask = i.operands[0].value if isinstance(i.operands[0], Imm) else 0xFFFFFFFF
        pos = ctx.thread.position
        lanes = [t.name for t in b.test.threads if t.position == pos]
        lane = lanes.index(ctx.thread.name)
        if not mask >> lane & 1:
            raise ctx.error(f"bar.warp.sync: this thread (lane {lane}) is not in the mask {mask:#x}")
        e = b.new_event(ctx, "B", {"BAR_WARP"})
        key = (pos, mask)
        b.warp_syncs[key][ctx.thread.name].append((e, lane))
        return
    kind = i.pick(("sync", "arrive", "red"), "sync")
    ops = list(i.operands)
    if kind == "red":
        dst = ops.pop(0)
        b.set_reg(ctx, dst, _Unmodelled("the result of bar.red, which is not modelled"))
        ops = ops[:-1]      # the predicate operand
    bid = ops[0].value if isinstance(ops[0], Imm) else 0
    count = ops[1].value if len(ops) > 1 and isinstance(ops[1], Imm) else None
    e = b.new_event(ctx, "B", {"BAR_" + kind.upper()})
    b.barriers[(ctx.thread.position.cta_key(), bid)][ctx.thread.name].append((e, i, count))


def _alu(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    dst, *srcs = i.operands
    vals = [b.value(ctx, s) for s in srcs]
    if i.op == "mov":
        b.set_reg(ctx, dst, vals[0])
    else:
        b.set_reg(ctx, dst, binop(i.op, vals[0], vals[1]))


LOWER: dict[str, Callable[[Builder, ThreadCtx, Instr], None]] = {
    "ld": lower_ld,
    "st": lower_st,
    "atom": lower_atom,
    "red": lower_red,
    "fence": lower_fence,
    "membar": lower_membar,
    "bar": lower_bar,
    "barrier": lower_bar,
    **{op: _alu for op in ("mov", "add", "sub", "mul", "and", "or", "xor")},
}


def lower(test: LitmusTest) -> EventStructure:
    b = Builder(test)
    contexts = []
    for tid, th in enumerate(test.threads):
        ctx = ThreadCtx(th, tid)
        for instr in th.code:
            ctx.instr = instr
            fn = LOWER.get(instr.op)
            if fn is None:
                raise ctx.error(f"'{instr.op}' is not supported by the model yet")
            fn(b, ctx, instr)
        ctx.instr = None
        contexts.append(ctx)
    return b.build(contexts)


# Proxy fences, proxy instructions and the asynchronous bulk copies register themselves into
# LOWER and FENCE_VARIANTS on import.
from . import lower_proxy as _lower_proxy  # noqa: E402,F401
from . import lower_async as _lower_async  # noqa: E402,F401
from . import lower_tensor as _lower_tensor  # noqa: E402, F401  (wgmma, tcgen05
