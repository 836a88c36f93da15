"""Emitters of the generic PTX subset: ld/st, atom/red, fence/membar, CTA and warp barriers,
register arithmetic. Each returns one line of CUDA C++ or raises NotExpressible."""
from __future__ import annotations

from ..ast import Imm, Instr
from .operands import (RESERVED_BARRIER, WIDE, Asm, Ctx, NotExpressible, _addr, _dst, _literal, _no_vectors,
                       _space, _value, has_type, mnemonic)


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
    """Hardware thread count of a CTA barrier: the litmus threads it counts x instance slots per warp."""
    lay, here = ctx.layout, ctx.slot.role_cta
    ks = {lay.threads_in(here, w) for w in lay.warps_of(here)}
    if any(k * lay.per_warp != 32 for k in ks):
        raise NotExpressible("a CTA barrier in a CTA whose warps hold different numbers of litmus "
                             f"threads ({sorted(ks)}): lanes would be left out of the barrier")
    if count_op is None:
        return 32 * len(lay.warps_of(here))
    litmus = count_op.value // ctx.test.threads_per_litmus_thread   # the count is in PTX threads (format.md)
    n = litmus * lay.per_warp
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
        # .aligned: every thread of the warp executes the same barrier.cluster instruction. Where
        # the warp holds more than one litmus thread (each its own switch case) or idle lanes
        # (which pad with the non-aligned form), that does not hold: emit the non-aligned form.
        lay = ctx.layout
        shared_warp = lay.threads_in(ctx.slot.role_cta, ctx.slot.warp) * lay.per_warp != 32 or \
            lay.threads_in(ctx.slot.role_cta, ctx.slot.warp) > 1
        if shared_warp and i.has("aligned"):
            ctx.notes.append(f"'{i.text}' emitted without .aligned: its warp also runs other litmus threads or idle lanes")
            return emit_plain(Instr(i.op, tuple(q for q in i.qualifiers if q != "aligned"), i.operands, i.text), ctx)
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
    if i.op == "mov" and i.has("pred"):       # a predicate is kept as 0/1 in a 32-bit register
        if len(i.operands) != 2 or not isinstance(i.operands[1], Imm):
            raise NotExpressible("mov.pred from a register is not generated")
        d = _dst(a, ctx, i.operands[0])
        return a.render(f"mov.u32 {d}, {int(i.operands[1].value != 0)};")
    if i.op == "mul" and ("wide" in i.qualifiers or "hi" in i.qualifiers):
        return _emit_mul_half(i, ctx)
    default = {"mov": "b32", "add": "s32", "sub": "s32", "mul": "s32", "and": "b32", "or": "b32",
               "xor": "b32"}[i.op]
    name = mnemonic(i, default)
    if i.op == "mul" and not any(q in ("lo", "hi", "wide") for q in i.qualifiers):
        name = ".".join(["mul", "lo", *i.qualifiers] + ([] if has_type(i) else [default]))
    bits = 1 if i.has("pred") else _bits(i)
    if bits == 16:               # 16-bit operands in .b16 registers, the result zero-extended
        narrow = Narrow(a, ctx)
        srcs = [narrow.source(o) for o in i.operands[1:]]
        d = _dst(a, ctx, i.operands[0])
        return a.render(narrow.block(f"{name} {narrow.result}, {', '.join(srcs)};", d))
    wide = bits == 64            # a typed 64-bit operation takes 64-bit registers ("l")
    d = _dst(a, ctx, i.operands[0], wide)
    srcs = []
    for o in i.operands[1:]:
        if isinstance(o, Imm):
            srcs.append(str(int(o.value != 0) if i.has("pred") else o.value))
        else:
            srcs.append(_value(a, ctx, o, wide))
    if i.has("pred"):            # and/or/xor.pred on predicates kept as 0/1: the same bits in .b32
        return a.render(f"{i.op}.b32 {d}, {', '.join(srcs)};")
    return a.render(f"{name} {d}, {', '.join(srcs)};")


class Narrow:
    """The harness keeps every value in a 32- or 64-bit register, and PTX gives an instruction of
    a 16-bit type 16-bit registers only (ptxas: 'Arguments mismatch'): each source is cut to a
    .b16 register first (its low 16 bits, what ptxmc reads, docs/model.md#a16), and a result
    is zero-extended back into its 32-bit register."""

    def __init__(self, a: Asm, ctx: Ctx):
        self.a, self.ctx, self.regs, self.moves = a, ctx, [], []
        self.result = "N0"

    def source(self, op) -> str:
        name = f"N{len(self.regs) + 1}"
        self.regs.append(name)
        self.moves.append(f"cvt.u16.u32 {name}, {_value(self.a, self.ctx, op)};")
        return name

    def block(self, body: str, dst: str | None = None, extra: str = "") -> str:
        regs = ", ".join(["N0", *self.regs])
        tail = f" cvt.u32.u16 {dst}, N0;" if dst is not None else ""
        return f"{{ .reg .b16 {regs};{extra} {' '.join(self.moves)} {body}{tail} }}"




def _emit_mul_half(i: Instr, ctx: Ctx) -> str:
    """mul.wide.{u32,s32} (a 64-bit product of 32-bit operands) and mul.hi.{u32,s32} as written;
    16-bit operands are not generated (the harness keeps them in 32-bit registers)."""
    bits = _bits(i)
    if bits != 32 or len(i.operands) != 3:
        raise NotExpressible(f"'{i.text}': mul.wide / mul.hi of {bits}-bit values is not generated")
    a = Asm()
    d = _dst(a, ctx, i.operands[0], "wide" in i.qualifiers)
    x, y = (_value(a, ctx, o) for o in i.operands[1:])
    return a.render(f"{mnemonic(i)} {d}, {x}, {y};")


def _bits(i: Instr) -> int:
    """The width of an ALU instruction's type qualifier (.b16/.u32/.f64...; 32 without one)."""
    for q in i.qualifiers:
        if q[:1] in "bsuf" and q[1:].isdigit():
            return int(q[1:])
    return 32


def emit_not(i: Instr, ctx: Ctx) -> str:
    """not.pred q, p on a predicate kept as 0/1 in a 32-bit register (xor with 1); not.bN d, a as
    written (.b16 on a 32-bit register, its upper half cleared)."""
    if len(i.operands) != 2:
        raise NotExpressible("not takes a destination and a source")
    a = Asm()
    src = i.operands[1]
    if i.has("pred"):
        d = _dst(a, ctx, i.operands[0])
        x = str(int(src.value != 0)) if isinstance(src, Imm) else _value(a, ctx, src)
        return a.render(f"xor.b32 {d}, {x}, 1;")
    bits = _bits(i)
    wide = bits == 64
    d = _dst(a, ctx, i.operands[0], wide)
    x = _value(a, ctx, src, wide)
    if bits == 16:
        return a.render(f"not.b32 {d}, {x}; and.b32 {d}, {d}, 65535;")
    return a.render(f"not.b{bits} {d}, {x};")


def emit_selp(i: Instr, ctx: Ctx) -> str:
    """selp.T d, a, b, c with the predicate c kept as 0/1 in a register: a setp turns it back into
    a predicate; the selection is bitwise (.b32 or .b64 whatever T is; a 16-bit T selects the
    sources' low 16 bits, which a .s16 load's register holds sign-extended)."""
    if len(i.operands) != 4:
        raise NotExpressible("selp takes a destination, two sources and a predicate")
    bits = _bits(i)
    if bits not in (16, 32, 64):
        raise NotExpressible(f"'{i.text}': selp of {bits}-bit values is not generated")
    a = Asm()
    c = i.operands[3]
    if bits == 16 and not isinstance(c, Imm):   # its 16-bit sources' low bits (Narrow), as ptxmc reads them
        narrow = Narrow(a, ctx)
        x, y = (narrow.source(o) for o in i.operands[1:3])
        p = _value(a, ctx, c)
        d = _dst(a, ctx, i.operands[0])
        return a.render(narrow.block(f"setp.ne.u32 P, {p}, 0; selp.b16 N0, {x}, {y}, P;", d, extra=" .reg .pred P;"))
    wide = bits == 64
    d = _dst(a, ctx, i.operands[0], wide)
    x, y = (_value(a, ctx, o, wide) for o in i.operands[1:3])
    if isinstance(c, Imm):
        if bits == 16:              # the chosen source's low 16 bits
            return a.render(f"and.b32 {d}, {x if c.value else y}, 65535;")
        return a.render(f"mov.b{64 if wide else 32} {d}, {x if c.value else y};")
    p = _value(a, ctx, c)
    return a.render(f"{{ .reg .pred P; setp.ne.u32 P, {p}, 0; selp.b{64 if wide else 32} {d}, {x}, {y}, P; }}")


def emit_setp(i: Instr, ctx: Ctx) -> str:
    """setp.CMP.TYPE p, a, b as real PTX; the predicate is kept as 0/1 in the register p (a guard
    `@p` tests it, and a condition may observe it)."""
    if len(i.operands) != 3:
        raise NotExpressible("setp needs a predicate destination and two sources")
    a = Asm()
    if _bits(i) == 16:          # sources in .b16 registers (Narrow)
        narrow = Narrow(a, ctx)
        x, y = (narrow.source(o) for o in i.operands[1:])
        d = _dst(a, ctx, i.operands[0])
        return a.render(narrow.block(f"{mnemonic(i)} P, {x}, {y}; selp.u32 {d}, 1, 0, P;", extra=" .reg .pred P;"))
    wide = bool(set(i.qualifiers) & WIDE)
    d = _dst(a, ctx, i.operands[0])
    x, y = (_value(a, ctx, o, wide) for o in i.operands[1:])
    return a.render(f"{{ .reg .pred P; {mnemonic(i)} P, {x}, {y}; selp.u32 {d}, 1, 0, P; }}")


def emit_nanosleep(i: Instr, ctx: Ctx) -> str:
    """nanosleep.u32 t: a delay, no memory effect (emitted as written)."""
    if len(i.operands) != 1:
        raise NotExpressible("nanosleep takes one operand")
    a = Asm()
    return a.render(f"{mnemonic(i, 'u32')} {_value(a, ctx, i.operands[0])};")


def emit_prefetch(i: Instr, ctx: Ctx) -> str:
    """prefetch{.space}{.level} [a]: a cache hint, no memory effect (emitted as written; a tensor
    map prefetch names the map)."""
    if len(i.operands) != 1:
        raise NotExpressible("prefetch takes one address")
    a = Asm()
    return a.render(f"{mnemonic(i)} {_addr(a, ctx, i.operands[0], _space(i))};")
