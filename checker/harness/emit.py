"""Instruction emitters: one entry per PTX opcode turns an `Instr` into one line of CUDA C++
(`asm volatile(...)` with the test's own opcode and qualifiers) and gives the instruction's value
transfer function for the outcome-space analysis (checker.harness.space).

An emitter that cannot express an instruction raises NotExpressible with the reason; codegen
collects those reasons (`unsupported(test)`), nothing is dropped silently. New opcode families
(tensor maps, wgmma, tcgen05) are added by registering an OpSpec in OPS.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..ast import Addr, Imm, Instr, LitmusTest, Reg, Sink, Vec
from .layout import Layout, Slot

TYPES = frozenset(f"{k}{n}" for k in "bus" for n in (8, 16, 32, 64)) | {"f32", "f64", "f16", "bf16", "pred"}
WIDE = frozenset({"b64", "u64", "s64", "f64"})
SCOPES = ("cta", "cluster", "gpu", "sys")
RESERVED_BARRIER = 15            # the harness's own CTA barrier (epilogue)


class NotExpressible(Exception):
    """The harness cannot express this instruction (yet); the message says why."""


@dataclass
class Ctx:
    """What an emitter may consult while emitting one thread's code."""

    test: LitmusTest
    layout: Layout
    slot: Slot
    cell_bytes: int
    tx_factor: int                   # byte counts of bulk copies / tx counts are scaled by this
    shared_index: dict[str, int]     # shared location -> index in the CTA's smem array
    global_index: dict[str, int]     # global location -> index in the global buffer
    owner_cta: dict[str, int]        # shared location -> role CTA that holds it
    wide_regs: frozenset[str]
    addrs: dict[tuple[str, str], str] = field(default_factory=dict)  # (loc, kind) -> C++ variable
    notes: list[str] = field(default_factory=list)

    # -- operands -----------------------------------------------------------------------------
    def reg(self, name: str) -> str:
        return f"R_{name}"

    def address(self, op, kind: str) -> str:
        """C++ variable holding `op`'s address in `kind`: generic | global | cta | cluster."""
        if not isinstance(op, Addr):
            raise NotExpressible("expected an address operand [name]")
        if op.coords:
            raise NotExpressible("tensor coordinates need tensor maps, which the harness does not build yet")
        if op.offset:
            raise NotExpressible("address offsets inside a cell are not expressible (cells are abstract)")
        name = op.base
        if name in self.shared_index:
            here = self.slot.role_cta
            owner = self.owner_cta[name]
            if self.layout.unit(owner) != self.layout.unit(here):
                raise NotExpressible(f"'{name}' is shared memory of a CTA outside this thread's cluster")
            if kind == "global":
                raise NotExpressible(f"'{name}' is shared memory but the instruction says .global")
            if kind == "cta" and owner != here:
                raise NotExpressible(f"'{name}' is in another CTA's shared memory: use .shared::cluster")
        elif kind in ("cta", "cluster"):
            raise NotExpressible(f"'{name}' is global memory but the instruction says .shared")
        var = f"A_{name}_{kind}"
        self.addrs[(name, kind)] = var
        return var


class Asm:
    """Builds `asm volatile("...": outs : ins : "memory")` with operands numbered at the end."""

    def __init__(self):
        self.outs: list[str] = []
        self.ins: list[str] = []
        self.lines: list[str] = []

    def out(self, constraint: str, cexpr: str) -> str:
        self.outs.append(f'"={constraint}"({cexpr})')
        return f"\x00o{len(self.outs) - 1}\x00"

    def inp(self, constraint: str, cexpr: str) -> str:
        self.ins.append(f'"{constraint}"({cexpr})')
        return f"\x00i{len(self.ins) - 1}\x00"

    def render(self, *ptx_lines: str) -> str:
        text = " ".join(ptx_lines)
        for i in range(len(self.outs)):
            text = text.replace(f"\x00o{i}\x00", f"%{i}")
        for i in range(len(self.ins)):
            text = text.replace(f"\x00i{i}\x00", f"%{len(self.outs) + i}")
        text = text.replace('"', '\\"')
        return f'asm volatile("{text}" : {", ".join(self.outs)} : {", ".join(self.ins)} : "memory");'


# -- qualifier helpers ------------------------------------------------------------------------

def has_type(i: Instr) -> bool:
    return any(q in TYPES for q in i.qualifiers)


def mnemonic(i: Instr, default_type: str | None = None, drop=()) -> str:
    quals = [q for q in i.qualifiers if q not in drop]
    if default_type and not has_type(i):
        quals.append(default_type)
    return ".".join([i.op, *quals])


def spaces(i: Instr) -> list[str]:
    """Address kinds of the state-space qualifiers, in order (e.g. cp.async: [dst, src])."""
    out = []
    for q in i.qualifiers:
        if q == "global":
            out.append("global")
        elif q in ("shared", "shared::cta"):
            out.append("cta")
        elif q == "shared::cluster":
            out.append("cluster")
        elif q in ("local", "param", "const", "tex", "surf"):
            raise NotExpressible(f"the .{q} state space is not expressible yet")
    return out


def _value(a: Asm, ctx: Ctx, op, wide=False) -> str:
    if isinstance(op, Imm):
        return a.inp("l" if wide else "r", f"{op.value & (2**64 - 1 if wide else 0xFFFFFFFF)}u" + ("ll" if wide else ""))
    if isinstance(op, Reg):
        return a.inp("l" if wide else "r", ctx.reg(op.name) if wide or op.name not in ctx.wide_regs
                     else f"(unsigned){ctx.reg(op.name)}")
    raise NotExpressible("expected a register or an immediate")


def _literal(op) -> str:
    if isinstance(op, Imm):
        return str(op.value)
    raise NotExpressible("expected an immediate operand")


def _dst(a: Asm, ctx: Ctx, op, wide=False) -> str:
    if isinstance(op, Sink):
        return "_"
    if isinstance(op, Reg):
        return a.out("l" if (wide or op.name in ctx.wide_regs) else "r", ctx.reg(op.name))
    raise NotExpressible("expected a destination register")


def _no_vectors(i: Instr) -> None:
    if any(isinstance(o, Vec) for o in i.operands) or any(q.startswith("v") and q[1:].isdigit() for q in i.qualifiers):
        raise NotExpressible("vector accesses are not expressible (cells are single values)")


def _addr(a: Asm, ctx: Ctx, op, kind: str) -> str:
    var = ctx.address(op, kind)
    return "[" + a.inp("r" if kind in ("cta", "cluster") else "l", var) + "]"


def _space(i: Instr, n: int = 0) -> str:
    sp = spaces(i)
    return sp[n] if len(sp) > n else "generic"


# -- emitters -----------------------------------------------------------------------------------

def emit_ld(i: Instr, ctx: Ctx) -> str:
    _no_vectors(i)
    a = Asm()
    wide = bool(set(i.qualifiers) & WIDE)
    d = _dst(a, ctx, i.operands[0], wide)
    return a.render(f"{mnemonic(i, 'b32')} {d}, {_addr(a, ctx, i.operands[1], _space(i))};")


def emit_st(i: Instr, ctx: Ctx) -> str:
    _no_vectors(i)
    a = Asm()
    wide = bool(set(i.qualifiers) & WIDE)
    addr = _addr(a, ctx, i.operands[0], _space(i))
    return a.render(f"{mnemonic(i, 'b32')} {addr}, {_value(a, ctx, i.operands[1], wide)};")


ATOM_OPS = ("exch", "cas", "add", "inc", "dec", "min", "max", "and", "or", "xor")


def _atom_type(i: Instr) -> str:
    op = i.pick(ATOM_OPS)
    if op is None:
        raise NotExpressible(f"'{i.text}': no atomic operation (add, exch, cas, ...)")
    return "u32" if op in ("add", "inc", "dec", "min", "max") else "b32"


def emit_atom(i: Instr, ctx: Ctx) -> str:
    _no_vectors(i)
    a = Asm()
    wide = bool(set(i.qualifiers) & WIDE)
    d = _dst(a, ctx, i.operands[0], wide)
    addr = _addr(a, ctx, i.operands[1], _space(i))
    args = ", ".join(_value(a, ctx, o, wide) for o in i.operands[2:])
    return a.render(f"{mnemonic(i, _atom_type(i))} {d}, {addr}, {args};")


def emit_red(i: Instr, ctx: Ctx) -> str:
    _no_vectors(i)
    if i.has("async"):
        return emit_red_async(i, ctx)
    a = Asm()
    wide = bool(set(i.qualifiers) & WIDE)
    addr = _addr(a, ctx, i.operands[0], _space(i))
    args = ", ".join(_value(a, ctx, o, wide) for o in i.operands[1:])
    return a.render(f"{mnemonic(i, _atom_type(i))} {addr}, {args};")


def emit_plain(i: Instr, ctx: Ctx) -> str:
    """Instructions without operands, emitted as written (fences, commit/wait groups...)."""
    if i.operands:
        raise NotExpressible(f"'{i.text}': unexpected operands")
    return Asm().render(f"{mnemonic(i)};")


def emit_fence(i: Instr, ctx: Ctx) -> str:
    if any(q.startswith("proxy") for q in i.qualifiers) and any(q in ("texture", "surface", "constant")
                                                               for q in i.qualifiers):
        raise NotExpressible("texture/surface/constant proxy fences belong to the ISCA'22 hypothetical "
                             "proxies, which have no PTX instruction")
    if i.operands:       # fence.proxy.tensormap::generic.acquire [addr], size
        a = Asm()
        addr = _addr(a, ctx, i.operands[0], _space(i))
        rest = ", ".join(_literal(o) for o in i.operands[1:])
        return a.render(f"{mnemonic(i)} {addr}{', ' + rest if rest else ''};")
    return emit_plain(i, ctx)


def _cta_barrier_count(i: Instr, ctx: Ctx, count_op) -> int:
    """Hardware thread count of a CTA barrier: litmus count x instance slots per warp."""
    lay, here = ctx.layout, ctx.slot.role_cta
    ks = {lay.threads_in(here, w) for w in lay.warps_of(here)}
    if any(k * lay.per_warp != 32 for k in ks):
        raise NotExpressible("a CTA barrier in a CTA whose warps hold different numbers of litmus "
                             f"threads ({sorted(ks)}): lanes would be left out of the barrier")
    if count_op is None:
        return 32 * len(lay.warps_of(here))
    n = count_op.value * lay.per_warp
    if n % 32:
        raise NotExpressible(f"barrier count {count_op.value} is not a whole number of warps "
                             f"({lay.per_warp} instances per warp)")
    return n


def emit_bar(i: Instr, ctx: Ctx) -> str:
    if i.has("warp"):
        a = Asm()
        mask = i.operands[0].value if i.operands and isinstance(i.operands[0], Imm) else 0xFFFFFFFF
        return a.render(f"bar.warp.sync {a.inp('r', f'harness_warp_mask({mask & 0xFFFFFFFF}u)')};")
    if i.has("cluster"):
        return emit_plain(i, ctx)
    kind = i.pick(("sync", "arrive", "red"), "sync")
    if kind == "red":
        raise NotExpressible("bar.red's result is not modelled; the harness does not emit it")
    ops = list(i.operands)
    if not ops or not isinstance(ops[0], Imm):
        raise NotExpressible("barrier id must be an immediate")
    if ops[0].value == RESERVED_BARRIER:
        raise NotExpressible(f"barrier {RESERVED_BARRIER} is reserved by the harness")
    count = ops[1] if len(ops) > 1 else None
    if count is not None and not isinstance(count, Imm):
        raise NotExpressible("barrier count must be an immediate")
    n = _cta_barrier_count(i, ctx, count)
    diverged = ctx.layout.threads_in(ctx.slot.role_cta, ctx.slot.warp) > 1
    quals = [q for q in i.qualifiers if not (diverged and q == "aligned")]
    op = i.op
    if diverged and op == "bar":      # bar.sync is barrier.sync.aligned: lanes of one warp diverge here
        op = "barrier"
        ctx.notes.append(f"'{i.text}' emitted as barrier.{kind}: litmus threads share a warp")
    return Asm().render(f"{'.'.join([op, *quals])} {ops[0].value}, {n};")


def emit_alu(i: Instr, ctx: Ctx) -> str:
    a = Asm()
    d = _dst(a, ctx, i.operands[0])
    srcs = []
    for o in i.operands[1:]:
        if isinstance(o, Imm):
            srcs.append(str(o.value))
        else:
            srcs.append(_value(a, ctx, o))
    default = {"mov": "b32", "add": "s32", "sub": "s32", "mul": "s32", "and": "b32", "or": "b32",
               "xor": "b32"}[i.op]
    name = mnemonic(i, default)
    if i.op == "mul" and not any(q in ("lo", "hi", "wide") for q in i.qualifiers):
        name = ".".join(["mul", "lo", *i.qualifiers] + ([] if has_type(i) else [default]))
    return a.render(f"{name} {d}, {', '.join(srcs)};")


def _bytes(op, ctx: Ctx) -> str:
    if not isinstance(op, Imm):
        raise NotExpressible("byte counts must be immediates")
    return str(op.value * ctx.tx_factor)


def emit_cp(i: Instr, ctx: Ctx) -> str:
    q = i.qualifiers
    if q[:1] == ("reduce",):
        raise NotExpressible("cp.reduce.async.bulk is not expressible yet")
    if "tensor" in q:
        raise NotExpressible("cp.async.bulk.tensor needs a tensor map (cuTensorMapEncodeTiled), "
                             "which the harness does not build yet")
    if any(x.startswith("multicast") for x in q):
        raise NotExpressible("multicast bulk copies are not expressible yet")
    if any(x.startswith("prefetch") for x in q):
        raise NotExpressible("cp.async.bulk.prefetch is not expressible yet")
    if q[:1] != ("async",):
        raise NotExpressible(f"'{i.text}' is not a cp.async form")
    if i.operands == () or any(x in q for x in ("commit_group", "wait_group", "wait_all")):
        if "wait_group" in q:
            a = Asm()
            return a.render(f"{mnemonic(i)} {_literal(i.operands[0])};")
        return emit_plain(i, ctx)
    if "mbarrier" in q and "arrive" in q:      # cp.async.mbarrier.arrive{.noinc}.shared{::cta}.b64 [mb]
        a = Asm()
        return a.render(f"{mnemonic(i)} {_addr(a, ctx, i.operands[0], _space(i))};")
    a = Asm()
    sp = spaces(i)
    if len(sp) < 2:
        raise NotExpressible(f"'{i.text}': expected destination and source state spaces")
    dst = _addr(a, ctx, i.operands[0], sp[0])
    src = _addr(a, ctx, i.operands[1], sp[1])
    if "bulk" in q:
        size = str(ctx.cell_bytes)
        rest = ""
        if any(x.startswith("mbarrier::complete_tx") for x in q):
            if len(i.operands) < 4:
                raise NotExpressible(f"'{i.text}': missing the mbarrier operand")
            rest = ", " + _addr(a, ctx, i.operands[3], sp[0])
        return a.render(f"{mnemonic(i)} {dst}, {src}, {size}{rest};")
    # non-bulk cp.async: cp-size 4, 8 or 16; a cell is 16 bytes and its value is word 0
    size = _literal(i.operands[2]) if len(i.operands) > 2 else "4"
    if size not in ("4", "8", "16"):
        raise NotExpressible("cp.async copies 4, 8 or 16 bytes")
    if "cg" in q and size != "16":
        raise NotExpressible("cp.async.cg copies 16 bytes")
    return a.render(f"{mnemonic(i)} {dst}, {src}, {size};")


def emit_mbarrier(i: Instr, ctx: Ctx) -> str:
    q = i.qualifiers
    a = Asm()
    kind = q[0] if q else ""
    sp = _space(i)
    if kind == "init":
        return a.render(f"{mnemonic(i, 'b64')} {_addr(a, ctx, i.operands[0], sp)}, {_literal(i.operands[1])};")
    if kind in ("inval",):
        return a.render(f"{mnemonic(i, 'b64')} {_addr(a, ctx, i.operands[0], sp)};")
    if kind in ("expect_tx", "complete_tx"):
        return a.render(f"{mnemonic(i, 'b64')} {_addr(a, ctx, i.operands[0], sp)}, {_bytes(i.operands[1], ctx)};")
    if kind == "arrive" or kind == "arrive_drop":
        d = _dst(a, ctx, i.operands[0], wide=True)
        addr = _addr(a, ctx, i.operands[1], sp)
        rest = ""
        if len(i.operands) > 2:
            rest = ", " + (_bytes(i.operands[2], ctx) if "expect_tx" in q else _value(a, ctx, i.operands[2]))
        if sp == "cluster" and d != "_":
            raise NotExpressible("a remote mbarrier.arrive returns no state: use '_'")
        return a.render(f"{mnemonic(i, 'b64')} {d}, {addr}{rest};")
    if kind in ("try_wait", "test_wait"):
        d = i.operands[0]
        if not isinstance(d, (Reg, Sink)):
            raise NotExpressible("expected a predicate destination")
        out = a.out("r", ctx.reg(d.name)) if isinstance(d, Reg) else None
        addr = _addr(a, ctx, i.operands[1], sp)
        if "parity" in q:
            arg = _value(a, ctx, i.operands[2])
        else:
            arg = _value(a, ctx, i.operands[2], wide=True)
        extra = ""
        if len(i.operands) > 3:
            extra = ", " + _value(a, ctx, i.operands[3])
        sel = f" selp.u32 {out}, 1, 0, P;" if out else ""
        return a.render(f"{{ .reg .pred P; {mnemonic(i, 'b64')} P, {addr}, {arg}{extra};{sel} }}")
    if kind == "pending_count":
        raise NotExpressible("mbarrier.pending_count is not expressible yet")
    raise NotExpressible(f"'{i.text}' is not a known mbarrier form")


def emit_st_async(i: Instr, ctx: Ctx) -> str:
    _no_vectors(i)
    a = Asm()
    addr = _addr(a, ctx, i.operands[0], "cluster")
    val = _value(a, ctx, i.operands[1], bool(set(i.qualifiers) & WIDE))
    mb = _addr(a, ctx, i.operands[2], "cluster")
    return a.render(f"{mnemonic(i, 'b32')} {addr}, {val}, {mb};")


def emit_red_async(i: Instr, ctx: Ctx) -> str:
    a = Asm()
    addr = _addr(a, ctx, i.operands[0], "cluster")
    val = _value(a, ctx, i.operands[1])
    mb = _addr(a, ctx, i.operands[2], "cluster")
    return a.render(f"{mnemonic(i, _atom_type(i))} {addr}, {val}, {mb};")


def emit_st_dispatch(i: Instr, ctx: Ctx) -> str:
    if i.has("async"):
        return emit_st_async(i, ctx)
    if i.has("bulk"):
        raise NotExpressible("st.bulk is not expressible yet")
    return emit_st(i, ctx)


def unsupported_op(reason: str) -> Callable[[Instr, Ctx], str]:
    def emit(i: Instr, ctx: Ctx) -> str:
        raise NotExpressible(reason)
    return emit


# -- value transfer (outcome-space analysis) ---------------------------------------------------

@dataclass
class AbsState:
    """Sets of values each location / register may hold; None = opaque (not a plain number)."""

    mem: dict[str, set | None]
    regs: dict[str, set | None]
    cap: int = 64

    def val(self, op) -> set | None:
        if isinstance(op, Imm):
            return {op.value}
        if isinstance(op, Reg):
            return self.regs.get(op.name, {0})
        return None

    def set_reg(self, op, vals) -> None:
        if isinstance(op, Reg):
            self.regs[op.name] = None if vals is None else set(vals)

    def loc(self, op) -> str | None:
        return op.base if isinstance(op, Addr) else None

    def add_mem(self, name: str | None, vals) -> None:
        if name is None:
            return
        cur = self.mem.setdefault(name, {0})
        if cur is None or vals is None:
            self.mem[name] = None
        else:
            cur |= vals


def _combine(f, xs, ys, cap):
    if xs is None or ys is None:
        return None
    out = {f(x, y) for x in xs for y in ys}
    return out if len(out) <= cap * 4 else None


_BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
        "min": min, "max": max}


def _rmw_new(op: str, old: int, args: list[int]) -> int:
    x = args[0]
    if op == "exch":
        return x
    if op == "cas":
        return args[1] if old == x else old
    if op == "inc":
        return 0 if old >= x else old + 1
    if op == "dec":
        return x if old == 0 or old > x else old - 1
    return _BIN[op](old, x)


def values_ld(i: Instr, s: AbsState) -> None:
    if i.await_value is not None:
        s.set_reg(i.operands[0], {i.await_value})
    else:
        s.set_reg(i.operands[0], s.mem.get(s.loc(i.operands[1]), {0}))


def values_st(i: Instr, s: AbsState) -> None:
    if i.has("async"):
        s.add_mem(s.loc(i.operands[0]), s.val(i.operands[1]))
    else:
        s.add_mem(s.loc(i.operands[0]), s.val(i.operands[1]))


def _values_rmw(i: Instr, s: AbsState, ops: list) -> None:
    op = i.pick(ATOM_OPS) or "add"
    loc = s.loc(ops[0])
    old = s.mem.get(loc, {0})
    argsets = [s.val(o) for o in ops[1:]]
    if old is None or any(a is None for a in argsets):
        s.add_mem(loc, None)
        return old
    new = set()
    import itertools
    for o in old:
        for args in itertools.product(*argsets):
            new.add(_rmw_new(op, o, list(args)))
    s.add_mem(loc, new)
    return old


def values_atom(i: Instr, s: AbsState) -> None:
    old = _values_rmw(i, s, list(i.operands[1:]))
    s.set_reg(i.operands[0], old if i.await_value is None else {i.await_value})


def values_red(i: Instr, s: AbsState) -> None:
    _values_rmw(i, s, list(i.operands))


def values_alu(i: Instr, s: AbsState) -> None:
    srcs = [s.val(o) for o in i.operands[1:]]
    if i.op == "mov":
        s.set_reg(i.operands[0], srcs[0] if srcs else None)
    else:
        s.set_reg(i.operands[0], _combine(_BIN[i.op], srcs[0], srcs[1], s.cap))


def values_cp(i: Instr, s: AbsState) -> None:
    ops = [o for o in i.operands if isinstance(o, Addr)]
    if len(ops) >= 2 and "arrive" not in i.qualifiers:
        s.add_mem(s.loc(ops[0]), s.mem.get(s.loc(ops[1]), {0}))


def values_mbarrier(i: Instr, s: AbsState) -> None:
    q = i.qualifiers
    if q and q[0] in ("try_wait", "test_wait"):
        s.set_reg(i.operands[0], {0, 1} if i.await_value is None else {i.await_value})
    elif q and q[0].startswith("arrive") and i.operands:
        s.set_reg(i.operands[0], None)      # an opaque phase state


def values_none(i: Instr, s: AbsState) -> None:
    pass


@dataclass(frozen=True)
class OpSpec:
    emit: Callable[[Instr, Ctx], str]
    values: Callable[[Instr, AbsState], None] = values_none


_TEXTURE = ("ISCA'22 hypothetical proxy instruction: no real PTX instruction reads a plain "
            "location through this proxy, so the harness cannot run it")

OPS: dict[str, OpSpec] = {
    "ld": OpSpec(emit_ld, values_ld),
    "st": OpSpec(emit_st_dispatch, values_st),
    "atom": OpSpec(emit_atom, values_atom),
    "red": OpSpec(emit_red, values_red),
    "fence": OpSpec(emit_fence),
    "membar": OpSpec(emit_plain),
    "bar": OpSpec(emit_bar),
    "barrier": OpSpec(emit_bar),
    **{op: OpSpec(emit_alu, values_alu) for op in ("mov", "add", "sub", "mul", "and", "or", "xor")},
    "cp": OpSpec(emit_cp, values_cp),
    "mbarrier": OpSpec(emit_mbarrier, values_mbarrier),
    "tld": OpSpec(unsupported_op(_TEXTURE)),
    "suld": OpSpec(unsupported_op(_TEXTURE)),
    "sust": OpSpec(unsupported_op(_TEXTURE)),
    "ldc": OpSpec(unsupported_op(_TEXTURE)),
    "tensormap": OpSpec(unsupported_op("tensormap.replace / cp_fenceproxy need tensor maps built with "
                                       "the driver API, which the harness does not do yet")),
    "wgmma": OpSpec(unsupported_op("wgmma needs matrix descriptors and fragments; not expressible yet")),
    "tcgen05": OpSpec(unsupported_op("tcgen05 needs TMEM allocation and descriptors; not expressible yet")),
}


def opspec(i: Instr) -> OpSpec:
    spec = OPS.get(i.op)
    if spec is None:
        return OpSpec(unsupported_op(f"no harness emitter for '{i.op}' yet"))
    return spec
