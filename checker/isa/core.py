"""The core PTX instructions: ld, st, atom, red, fence (memory fences and the restricted
fences, A10), membar, bar / barrier (CTA barriers), bar.warp.sync, and the register operations
mov, add, sub, mul, and, or, xor.

PTX ISA 9.4, "Memory Consistency Model" (operation types, morally strong operations, release and
acquire patterns), "ld", "st", "atom", "red", "membar/fence", "bar/barrier", "bar.warp.sync".

Events: ld is a read and st a write, weak by default (.weak), strong with .relaxed/.acquire/
.release and a scope; .volatile and .mmio are relaxed at .sys. atom and red are a read and a
write linked by rmw (default .relaxed.gpu). A fence is an F event (generic proxy, A3); membar is
fence.sc at its level. A CTA barrier use is a B event; the k-th use of barrier b by each thread
of a CTA joins instance k (`syncbar` between its participants), and a count must match the
threads that take part. bar.warp.sync is a B event synchronizing the lanes of its mask
(`syncwarp`). Register operations compute value expressions (no events).
"""
from __future__ import annotations

from ..ast import Addr, Imm, Instr, Name, Quals, Reg, Vec
from ..model.builder import AddressValue, Builder, ThreadCtx, Unmodelled
from ..model.values import Const, Expr, Ite, ReadVal, binop, signed, wrap
from . import barriers, hints
from .common import access_tags, atom_value, note_narrow, restrict, same_width, sized, strength_tags
from .table import (ATOM_OPS, ATOM_TYPES, FLOAT_TYPES, INT_TYPES, LDST_TYPES, SCOPE_TAG, SCOPES, SIGNED_TYPES,
                    SPACES, TYPE_BITS, Family, Group, Slot, drop, sig, swap_qualifier)

_SCOPE = Group("scope", SCOPES)
_SPACE = Group("space", SPACES)
_OTHER_SPACES = dict.fromkeys(("local", "const"), "ptxmc models .global and .shared memory (.local and .const "
                                                  "are not modelled): declare the data under memory:")
_VECTOR = {v: "vector atomics (.v2, .v4, .v8) are not modelled" for v in ("v2", "v4", "v8")}
_VEC = Group("vec", ("v2", "v4", "v8"))


# -- rules (each returns an error message or None) ------------------------------------------

def _mmio_form(i: Instr, q: Quals):
    # PTX ISA, ld/st: `ld.mmio.relaxed.sys{.global}.type` - the only form of an .mmio access.
    if q["mmio"] and (q["sem"] != "relaxed" or q["scope"] != "sys"):
        return f"{i.op}.mmio must be .relaxed.sys ({i.op}.mmio.relaxed.sys)"
    if q["mmio"] and q["space"] not in (None, "global"):
        return ".mmio accesses are to .global memory only"


def _weak_takes_no_scope(i: Instr, q: Quals):
    # Memory Consistency Model > Operation types: .weak accesses are not strong and have no scope;
    # .volatile is relaxed.sys by definition, so it takes no scope qualifier either.
    if q["sem"] in ("weak", "volatile") and q["scope"]:
        note = "" if i.has(q["sem"]) else f" ({i.op} without a semantics qualifier is .weak)"
        return f".{q['sem']} accesses take no scope{note}"


def _strong_needs_scope(i: Instr, q: Quals):
    if q["sem"] in ("relaxed", "acquire", "release") and not q["scope"]:
        return f".{q['sem']} accesses need a scope ({_SCOPE.spelled()})"


_ATOM_TYPES_OF = {  # PTX ISA, atom: which types each operation takes (integer litmus values)
    "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"),
    "exch": ("b32", "b64"), "cas": ("b32", "b64"),
    "add": ("u32", "s32", "u64", "f32", "f64"), "inc": ("u32",), "dec": ("u32",),
    "min": ("u32", "s32", "u64", "s64"), "max": ("u32", "s32", "u64", "s64"),
}


def _vector(i: Instr, q: Quals):
    # PTX ISA, ld / st: .v2 / .v4 (and .v8 of 32-bit types) move that many elements of the type;
    # a scalar access takes a register, a vector access a vector of that many.
    operand = i.operands[0 if i.op == "ld" else 1]
    n = int(q["vec"][1:]) if q["vec"] else None
    if n is None:
        return "a vector operand goes with .v2, .v4 or .v8" if isinstance(operand, Vec) else None
    if not q["type"]:
        return f"{i.op}.{q['vec']} needs a type (e.g. .{q['vec']}.b32)"
    if n == 8 and TYPE_BITS[q["type"]] != 32:
        return ".v8 moves 32-bit elements"
    if TYPE_BITS[q["type"]] * n > 256:
        return f".{q['vec']}.{q['type']} is more than 32 bytes"
    if not isinstance(operand, Vec) or len(operand.items) != n:
        return f"{i.op}.{q['vec']} takes a vector of {n} elements {{a, b, ...}}"
    if i.await_value is not None:
        return "an await (== v) on a vector load is not modelled"
    return None


def _atomic_type(i: Instr, q: Quals):
    ok = _ATOM_TYPES_OF[q["op"]]
    if q["type"] and q["type"] not in ok:
        return f"{i.op}.{q['op']} does not take .{q['type']} (it takes {Group('', ok).spelled()})"


def _barrier_form(i: Instr, q: Quals):
    # PTX ISA, bar/barrier: bar.red.popc.u32 d, a{, b}, {!}c;  bar.red.{and,or}.pred p, a{, b}, {!}c
    if q["mode"] == "red" and not q["redop"]:
        return f"{i.op}.red needs .popc, .and or .or"
    if q["mode"] != "red" and (q["redop"] or q["type"]):
        return f"'.{q['redop'] or q['type']}' belongs to {i.op}.red only"
    if q["redop"] == "popc" and q["type"] == "pred" or q["redop"] in ("and", "or") and q["type"] == "u32":
        return f"{i.op}.red.{q['redop']} is {'.u32' if q['redop'] == 'popc' else '.pred'}"
    a, *rest = i.operands[1:] if q["mode"] == "red" else i.operands
    if not 0 <= a.value <= 15:
        return f"barrier {a.value} does not exist: a CTA has barriers 0 to 15"
    if rest and isinstance(rest[0], Imm) and rest[0].value <= 0:
        return "the thread count must be positive"


def _bar_operands(q: Quals) -> tuple[Slot, ...]:
    if q["mode"] == "arrive":
        return sig("a:imm, b:imm", b="the thread count")   # ISA: required for .arrive
    if q["mode"] == "red":
        return sig("d:reg, a:imm, b:imm?, c:pred")
    return sig("a:imm, b:imm?")


def _restricted_fence(i: Instr, q: Quals):
    # PTX ISA 9.4, membar/fence: fence.release.sync_restrict::shared::cta.cluster and
    # fence.acquire.sync_restrict::shared::cluster.cluster are the two restricted forms.
    r = q["restrict"]
    if r is None:
        return None
    want = {"sync_restrict::shared::cta": "release", "sync_restrict::shared::cluster": "acquire"}[r]
    if q["sem"] != want or q["scope"] != "cluster":
        return (f"a fence with .{r} is fence.{want}.{r}.cluster "
                "(fence.release.sync_restrict::shared::cta.cluster or "
                "fence.acquire.sync_restrict::shared::cluster.cluster)")
    return None


_BAR_GROUPS = (Group("cta", ("cta",)), Group("mode", ("sync", "arrive", "red"), required=True),
               Group("redop", ("popc", "and", "or")), Group("type", ("u32", "pred")))



# -- lowering ---------------------------------------------------------------------------------

def value_type(t: str | None) -> tuple[int | None, bool, str]:
    """(bits, signed, format) of the values of type `t` (None: untyped, an exact integer)."""
    if t is None:
        return None, False, "int"
    fmt = t if t in ("f32", "f64") else ("float" if t in FLOAT_TYPES else "int")
    return TYPE_BITS[t], t in SIGNED_TYPES, fmt


def register_of(v, t: str):
    """What a typed load puts in its register: the value, widened to 32 bits for a narrower
    type (sign-extended for .s8 / .s16, zero-extended otherwise); (value, register bits)."""
    bits, is_signed, _ = value_type(t)
    if bits >= 32:
        return v, bits
    return (wrap(signed(v, bits), 32) if is_signed else v), 32


def lower_ld(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = i.quals
    dst, addr = i.operands[:2]                  # (a third operand is a cache policy: a hint)
    t = q["type"]
    if q.get("nc"):
        hints.noncoherent(b, ctx, i)
    if t is None:                               # untyped: the whole location, an exact integer
        b.untyped_loads.add(b.read(ctx, access_tags(q), addr, dst))
        return
    bits, _, fmt = value_type(t)
    size = bits // 8
    items = dst.items if isinstance(dst, Vec) else (dst,)
    for k, d in enumerate(items):
        r = b.read(ctx, access_tags(q), Addr(addr.base, addr.offset + k * size), size=size,
                   align=size * len(items) if k == 0 else size, join=k > 0)
        value, reg_bits = register_of(ReadVal(r), t)
        b.set_reg(ctx, d, value, reg_bits, fmt)
        if reg_bits != bits:
            note_narrow(ctx, d, bits)


def lower_st(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = i.quals
    addr, src = i.operands[:2]
    t = q["type"]
    if t is None:                               # the whole location: sized once known (A16)
        e = b.write(ctx, access_tags(q), addr, b.value(ctx, src))
        b.untyped_stores[e] = isinstance(src, Imm)
        return
    bits, _, fmt = value_type(t)
    size = bits // 8
    items = src.items if isinstance(src, Vec) else (src,)
    for k, x in enumerate(items):
        b.write(ctx, access_tags(q), Addr(addr.base, addr.offset + k * size), b.value(ctx, x, bits, fmt),
                size=size, align=size * len(items) if k == 0 else size, join=k > 0)


def _lower_rmw(b: Builder, ctx: ThreadCtx, i: Instr, is_red: bool) -> None:
    same_width(b, ctx, i)
    q = i.quals
    sem = q["sem"]
    ops = list(i.operands)
    dst = None if is_red else ops.pop(0)
    bits, is_signed, fmt = value_type(q["type"])
    if fmt != "int":
        raise ctx.error(f"{i.op}.{q['op']}.{q['type']}: floating-point read-modify-writes are not modelled")
    addr, args = ops[0], [sized(b, ctx, a, bits) for a in ops[1:]]
    base = strength_tags("relaxed", q["scope"]) - ({"RLX"} if sem != "relaxed" else set())
    kind = {"ATOM"} | ({"RED"} if is_red else set())
    rtags = base | kind | ({"ACQ"} if sem in ("acquire", "acq_rel") else set())
    wtags = base | kind | ({"REL"} if sem in ("release", "acq_rel") else set())
    size = None if bits is None else bits // 8
    r = b.read(ctx, rtags, addr, size=size)
    if dst is not None:
        b.set_reg(ctx, dst, ReadVal(r), bits)
    w = b.write(ctx, wtags, addr, atom_value(q["op"], ReadVal(r), args, bits, is_signed), size=size)
    b.pairs["rmw"].add((r, w))


def lower_atom(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _lower_rmw(b, ctx, i, is_red=False)


def lower_red(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _lower_rmw(b, ctx, i, is_red=True)


FENCE_TAG = {"sc": "SC", "acq_rel": "ACQ_REL", "acquire": "ACQ", "release": "REL"}


def lower_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """A memory fence; with .sync_restrict (A10), a release (acquire) fence at .cluster scope
    whose effect is restricted to the operations on the executing CTA's .shared::cta cells (every
    .shared::cluster cell)."""
    q = i.quals
    if q["restrict"]:
        f = b.new_event(ctx, "F", {"STRONG", "GEN", "CLUSTER", "RESTRICT", FENCE_TAG[q["sem"]]})
        restrict(b, f, "space", q["restrict"].split("::", 1)[1])
        return
    b.new_event(ctx, "F", {FENCE_TAG[q["sem"]], "STRONG", "GEN", SCOPE_TAG[q["scope"]]})


def lower_membar(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """membar.{cta,gl,sys} is fence.sc.{cta,gpu,sys}."""
    scope = {"cta": "cta", "gl": "gpu", "sys": "sys"}[i.quals["level"]]
    b.new_event(ctx, "F", {"SC", "STRONG", "GEN", SCOPE_TAG[scope]})


def lower_bar(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """A use of a CTA barrier: a B event (BAR_SYNC / BAR_ARRIVE / BAR_RED), joined with the other
    threads' uses of its generation once every thread is lowered (checker.isa.barriers)."""
    kind = i.quals["mode"]
    if kind == "red":
        b.set_reg(ctx, i.operands[0], Unmodelled("the result of bar.red, which is not modelled"))
    barriers.record(b, ctx, b.new_event(ctx, "B", {"BAR_" + kind.upper()}))


def lower_bar_warp(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """bar.warp.sync: a B event joining the lanes of its mask (the litmus threads placed in this
    warp, in order) that have not exited."""
    mask = i.operands[0].value if isinstance(i.operands[0], Imm) else 0xFFFFFFFF
    pos = ctx.thread.position
    lanes = [t.name for t in b.test.threads if t.position == pos]
    lane = lanes.index(ctx.thread.name)
    if not mask >> lane & 1:
        raise ctx.error(f"bar.warp.sync: this thread (lane {lane}) is not in the mask {mask:#x}")
    barriers.record(b, ctx, b.new_event(ctx, "B", {"BAR_WARP"}))


def lower_alu(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """mov, add, sub, mul.lo, and, or, xor. Typed: on `bits`-bit patterns (the result wraps
    around; .pred is one bit); untyped: exact integers (a result that leaves the 64-bit range is
    refused), bitwise operators on 32-bit patterns."""
    dst, *srcs = i.operands
    if i.op in ("mov", "add", "sub") and any(isinstance(x, Name) or isinstance(ctx.regs.get(getattr(x, "name", None)),
                                                                                AddressValue) for x in srcs):
        b.set_reg(ctx, dst, AddressValue(f"an address ({i.text})"))   # resolved by checker.isa.address
        return
    bits, _, fmt = value_type(i.quals["type"])
    if fmt != "int" and i.op != "mov":
        raise ctx.error(f"{i.op}.{i.quals['type']}: floating-point arithmetic is not modelled (mov, ld and st "
                        "move floating-point bit patterns)")
    vals = [b.value(ctx, s, bits, fmt) for s in srcs]
    if i.op == "mov" and bits is None and isinstance(srcs[0], Reg) and srcs[0].name in ctx.formats:
        # an untyped copy holds what its source holds: the size ptxmc keeps it at and the
        # narrower type of the load or cvt that filled it (same_width, sized read it as the source)
        held, narrow = ctx.formats[srcs[0].name], ctx.ext.get("narrow", {}).get(srcs[0].name)
        narrow = narrow[0] if narrow is not None and narrow[1] is ctx.regs.get(srcs[0].name) else None
        b.set_reg(ctx, dst, vals[0], *held)
        if narrow is not None:
            note_narrow(ctx, dst, narrow)
        return
    if i.op == "mov":
        v = vals[0] if bits is None else wrap(vals[0], bits)
    elif i.op in ("and", "or", "xor"):
        v = binop(i.op, vals[0], vals[1], bits or 32)
    else:
        if bits is not None:
            vals = [_nearest(v, bits) for v in vals]
        v = binop(i.op, vals[0], vals[1])
        v = v if bits is None else wrap(v, bits)
    b.set_reg(ctx, dst, v, bits, fmt)


def _nearest(v: Expr, bits: int) -> Expr:
    """A constant operand of a typed add, sub or mul.lo as its signed `bits`-bit value, which is
    the same modulo 2**bits, so the wrapped result is the same: `add.u64 %rd2, %rd1, -1` adds -1,
    not 2**64 - 1, and its exact sum stays in the 64-bit range that untyped values are held to
    (values._fit) where 5 + 2**64 - 1 did not. A value read from memory is left as it is: a sum
    that leaves the 64-bit range before the wrap is still refused (docs/model.md#a16)."""
    if not isinstance(v, Const):
        return v
    c = v.value & ((1 << bits) - 1)
    return Const(c - (1 << bits) if c >> (bits - 1) else c)


def _mul_form(i: Instr, q: Quals):
    # PTX ISA, mul: .hi and .wide are integer modes; .wide takes 16- and 32-bit types only
    if q["mode"] in ("hi", "wide") and q["type"] not in INT_TYPES:
        return f"mul.{q['mode']} needs an integer type (.u16, .u32, .u64, .s16, .s32, .s64)"
    if q["mode"] == "wide" and q["type"] in ("u64", "s64"):
        return "mul.wide takes .u16, .u32, .s16 or .s32 (its result is twice as wide)"
    if q["mode"] == "hi" and q["type"] in ("u64", "s64"):
        return "mul.hi of 64-bit values is not modelled (its 128-bit product leaves ptxmc's 64-bit values)"
    return None


def lower_mul(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """mul{.lo}.type as lower_alu; mul.wide.type d, a, b: the whole 2n-bit product of the n-bit
    operands (signed for .s16/.s32); mul.hi.type: its upper n bits (PTX ISA, mul)."""
    mode = i.quals["mode"]
    if mode not in ("hi", "wide"):
        return lower_alu(b, ctx, i)
    dst, x, y = i.operands
    bits, _, _ = value_type(i.quals["type"])
    value = mul_half(mode, i.quals["type"], b.value(ctx, x, bits), b.value(ctx, y, bits))
    b.set_reg(ctx, dst, value, 2 * bits if mode == "wide" else bits)


def mul_half(mode: str, type_: str, x: Expr, y: Expr) -> Expr:
    """The value mul.wide / mul.hi of integer type `type_` gives for operands x and y (the
    harness evaluates it too, checker.harness.transfer)."""
    bits, is_signed, _ = value_type(type_)
    vals = [wrap(v, bits) for v in (x, y)]
    if is_signed:
        vals = [signed(v, bits) for v in vals]
    product = wrap(binop("mul", vals[0], vals[1]), 2 * bits)
    return product if mode == "wide" else binop("shr", product, Const(bits))


def lower_shift(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """shl.bN / shr.{bN,uN,sN} d, a, n (PTX ISA, shl and shr): a's N-bit pattern shifted by n bits
    (a shift amount of N or more gives 0, or the sign for shr.sN, which fills with the sign bit).
    The amount must be a known constant (nvcc's `threadIdx.x >> 7`); one that depends on a read
    is refused."""
    dst, x, amount = i.operands
    bits, _, _ = value_type(i.quals["type"])
    n = b.value(ctx, amount, 32)
    if not isinstance(n, Const):
        raise ctx.error(f"{i.op}: a shift amount that is not a constant (it depends on a read) is not modelled")
    a = wrap(b.value(ctx, x, bits), bits)
    k = n.value
    if i.op == "shl":
        v = wrap(binop("shl", a, Const(k)), bits) if k < bits else Const(0)
    elif i.quals["type"] in SIGNED_TYPES:
        v = wrap(binop("shr", signed(a, bits), Const(min(k, bits - 1))), bits)
    else:
        v = binop("shr", a, Const(k)) if k < bits else Const(0)
    b.set_reg(ctx, dst, v, bits)


def lower_selp(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """selp.type d, a, b, c: d is a when predicate c is true, else b (a bit pattern of the type)."""
    same_width(b, ctx, i)
    dst, x, y, c = i.operands
    bits, _, fmt = value_type(i.quals["type"])
    a, v, cond = sized(b, ctx, x, bits, fmt), sized(b, ctx, y, bits, fmt), b.value(ctx, c, 1)
    out = Ite("!=", cond, Const(0), a, v)
    if isinstance(cond, Const):
        out = a if cond.value != 0 else v
    b.set_reg(ctx, dst, out, bits, fmt)


_CVT_TYPES = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")


_CVT_REJECTS = {**dict.fromkeys(("f16", "bf16", "f32", "f64", "tf32", "e4m3x2", "e5m2x2"),
                                "cvt to or from a floating-point type is not modelled (ptxmc converts integers)"),
                **dict.fromkeys(("sat", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "relu"),
                                "cvt's rounding, saturation and .ftz modifiers are not modelled (ptxmc converts "
                                "integers: cvt.dtype.atype d, a)")}


def _cvt_types(i: Instr, q: Quals):
    # PTX ISA, cvt: cvt{.frnd}{.ftz}{.sat}.dtype.atype d, a: the destination's type comes first
    return "cvt needs two integer types, the destination's then the source's (cvt.u64.u32 d, a)"


def lower_cvt(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cvt.dtype.atype d, a between integer types (PTX ISA, cvt): a's value in atype (its low bits),
    sign-extended when atype is signed, as a dtype bit pattern (a narrower dtype keeps the low
    bits, extended to the 32-bit register as a load's value is: sign-extended for .s8/.s16). An
    address stays an address (nvcc widens a shared address: cvt.u64.u32)."""
    dst, x = i.operands
    if isinstance(x, Name) or isinstance(ctx.regs.get(getattr(x, "name", None)), AddressValue):
        b.set_reg(ctx, dst, AddressValue(f"an address ({i.text})"))    # resolved by checker.isa.address
        return
    dtype = i.family.split(".")[1]                             # the family's key is cvt.DTYPE
    dbits, _, _ = value_type(dtype)
    abits, is_signed, _ = value_type(i.quals["atype"])
    v = wrap(b.value(ctx, x, abits), abits)
    # PTX ISA, "Operand Size Exceeding Instruction-Type Size": a destination register wider than
    # dtype gets the result sign-extended for a signed dtype (cvt.s8.s32 of 255 is 0xffffffff in a
    # .b32 register); a narrower dtype's register is 32 bits, as a typed load's (docs/model.md)
    b.set_reg(ctx, dst, *register_of(wrap(signed(v, abits) if is_signed else v, dbits), dtype))
    if dbits < 32:
        note_narrow(ctx, dst, dbits)


def lower_not(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """not.type d, a: the bitwise complement in the type's width (.pred: 1 - a)."""
    dst, x = i.operands
    bits, _, _ = value_type(i.quals["type"])
    b.set_reg(ctx, dst, binop("xor", b.value(ctx, x, bits), Const((1 << bits) - 1), bits), bits)


def weaken_fence(i: Instr, fresh=None):
    """A fence is removed, and fence.sc also weakened to fence.acq_rel."""
    yield ()
    if "sc" in i.qualifiers:
        yield (swap_qualifier(i, "sc", "acq_rel"),)


# -- the families ----------------------------------------------------------------------------

_LD_ST_RULES = (_mmio_form, _weak_takes_no_scope, _strong_needs_scope)

FAMILIES = (
    Family("ld",
           groups=(Group("sem", ("weak", "relaxed", "acquire", "volatile"), default="weak"),
                   Group("mmio", ("mmio",)), _SCOPE, _SPACE, _VEC, Group("type", LDST_TYPES)) + hints.LD_HINTS,
           operands=sig("d:dvec, a:addr, policy:val?"), rules=_LD_ST_RULES + (_vector, hints.hint_rule),
           space="space", lower=lower_ld,
           rejects={**dict.fromkeys(("release", "acq_rel", "sc"),
                                    "ld.release does not exist: a load is .weak, .relaxed, .acquire, .volatile or .mmio"),
                    **_OTHER_SPACES,
                    "param": "ld.param reads a kernel argument: give its value under params: (e.g. params: "
                             "{_Z4ringPi_param_0: out}, with out the location declared under memory: that a pointer "
                             "argument points to; or a number) (docs/format.md#kernel-arguments-and-shared-variables)"}),
    Family("st",
           groups=(Group("sem", ("weak", "relaxed", "release", "volatile"), default="weak"),
                   Group("mmio", ("mmio",)), _SCOPE, _SPACE, _VEC, Group("type", LDST_TYPES)) + hints.ST_HINTS,
           operands=sig("a:addr, b:vvec, policy:val?"), rules=_LD_ST_RULES + (_vector, hints.hint_rule),
           space="space", lower=lower_st,
           rejects={**dict.fromkeys(("acquire", "acq_rel", "sc"),
                                    "st.acquire does not exist: a store is .weak, .relaxed, .release, .volatile or .mmio"),
                    **_OTHER_SPACES}),
    Family("atom",
           groups=(Group("sem", ("relaxed", "acquire", "release", "acq_rel"), default="relaxed"),
                   Group("scope", SCOPES, default="gpu"), _SPACE,
                   Group("op", ATOM_OPS, required=True), Group("type", ATOM_TYPES)),
           operands=lambda q: sig("d:reg, a:addr, b:val" + (", c:val" if q["op"] == "cas" else "")),
           rules=(_atomic_type,), space="space", lower=lower_atom,
           rejects={**_VECTOR, **dict.fromkeys(("weak", "volatile", "mmio", "sc"),
                    "atom takes only .relaxed, .acquire, .release or .acq_rel")}),
    Family("red",
           groups=(Group("sem", ("relaxed", "release"), default="relaxed"),
                   Group("scope", SCOPES, default="gpu"), _SPACE,
                   Group("op", tuple(o for o in ATOM_OPS if o not in ("exch", "cas")), required=True),
                   Group("type", ATOM_TYPES)),
           operands=sig("a:addr, b:val"), rules=(_atomic_type,), space="space", lower=lower_red,
           rejects={**_VECTOR,
                    **dict.fromkeys(("acquire", "acq_rel", "weak", "volatile", "mmio", "sc"),
                                    "red takes only .relaxed or .release"),
                    **dict.fromkeys(("exch", "cas"), "red has no .exch or .cas: use atom")}),
    Family("fence",
           groups=(Group("sem", ("sc", "acq_rel", "acquire", "release"), default="acq_rel"),
                   # restricted fences (PTX 8.6): the effect is limited to one state space (docs/model.md#a10)
                   Group("restrict", ("sync_restrict::shared::cta", "sync_restrict::shared::cluster")),
                   Group("scope", SCOPES, required=True)),
           rules=(_restricted_fence,), lower=lower_fence, weaken=weaken_fence,
           rejects={**dict.fromkeys(("relaxed", "weak"), "fence takes .sc, .acq_rel, .acquire or .release"),
                    "gl": "fence scopes are .cta, .cluster, .gpu and .sys (.gl is membar's)",
                    "proxy": "a proxy fence is written fence.proxy.KIND (.proxy comes first)",
                    "mbarrier_init": "write fence.mbarrier_init.release.cluster (.mbarrier_init comes first)"}),
    Family("membar",
           groups=(Group("level", ("cta", "gl", "sys"), required=True),), lower=lower_membar, weaken=drop,
           rejects={"gpu": "membar levels are .cta, .gl and .sys (membar.gl is fence.sc.gpu)",
                    "cluster": "membar has no .cluster level: use fence.sc.cluster",
                    "proxy": "a proxy fence is written membar.proxy.KIND (.proxy comes first)"}),
    Family("bar", groups=_BAR_GROUPS, operands=_bar_operands, rules=(_barrier_form,), lower=lower_bar, weaken=drop,
           rejects={"aligned": "bar takes no .aligned (bar.sync is barrier.sync.aligned)"}),
    Family("barrier", groups=_BAR_GROUPS + (Group("aligned", ("aligned",)),),
           operands=_bar_operands, rules=(_barrier_form,), lower=lower_bar, weaken=drop,
           rejects={"cluster": "a cluster barrier is written barrier.cluster.arrive / barrier.cluster.wait"}),
    Family("bar.warp", groups=(Group("mode", ("sync",), required=True),), operands=sig("membermask:val"),
           lower=lower_bar_warp, weaken=drop),
    Family("mov", groups=(Group("type", ("pred", "b16", "b32", "b64") + INT_TYPES + ("f32", "f64")),),
           operands=sig("d:reg, a:movsrc"), lower=lower_alu),
    *(Family(op, groups=(Group("type", INT_TYPES + ("f32", "f64")),), operands=sig("d:reg, a:movsrc, b:movsrc"),
             lower=lower_alu)
      for op in ("add", "sub")),
    Family("mul", groups=(Group("mode", ("lo", "hi", "wide")), Group("type", INT_TYPES + ("f32", "f64"))),
           operands=sig("d:reg, a:val, b:val"), rules=(_mul_form,), lower=lower_mul),
    *(Family(op, groups=(Group("type", ("pred", "b16", "b32", "b64")),), operands=sig("d:reg, a:val, b:val"),
             lower=lower_alu)
      for op in ("and", "or", "xor")),
    Family("shl", groups=(Group("type", ("b16", "b32", "b64"), required=True),), operands=sig("d:reg, a:val, b:val"),
           lower=lower_shift),
    Family("shr", groups=(Group("type", ("b16", "b32", "b64") + INT_TYPES, required=True),),
           operands=sig("d:reg, a:val, b:val"), lower=lower_shift),
    # cvt.DTYPE.ATYPE: one family per destination type (the two type groups share their names)
    Family("cvt", rules=(_cvt_types,), rejects=_CVT_REJECTS),
    *(Family(f"cvt.{t}", groups=(Group("atype", _CVT_TYPES, required=True),), operands=sig("d:reg, a:movsrc"),
             lower=lower_cvt, rejects=_CVT_REJECTS) for t in _CVT_TYPES),
    Family("not", groups=(Group("type", ("pred", "b16", "b32", "b64"), required=True),), operands=sig("d:reg, a:val"),
           lower=lower_not),
    Family("selp", groups=(Group("type", ("b16", "b32", "b64") + INT_TYPES + ("f32", "f64"), required=True),),
           operands=sig("d:reg, a:val, b:val, c:val", c="the predicate that selects a"), lower=lower_selp),
)
