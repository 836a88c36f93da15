"""Emitters of the asynchronous families: cp.async (and its mbarrier arrive), bulk copies,
tensor copies through tensor maps, tensormap.replace / cp_fenceproxy, mbarrier, st/red.async."""
from __future__ import annotations

from typing import Callable

from ..ast import Addr, Imm, Instr, Reg, Sink
from .emit_generic import _atom_type, emit_plain, emit_red, emit_st
from .operands import (WIDE, Asm, Ctx, NotExpressible, _addr, _dst, _literal, _no_vectors, _space, _value,
                       mnemonic, spaces)


def _bytes(op, ctx: Ctx) -> str:
    if not isinstance(op, Imm):
        raise NotExpressible("byte counts must be immediates")
    return str(op.value * ctx.tx_factor)


def emit_cp(i: Instr, ctx: Ctx) -> str:
    q = i.qualifiers
    if any(x.startswith("multicast") for x in q) and "multicast::cluster" not in q:
        raise NotExpressible(f"'{i.text}': only .multicast::cluster is expressible")
    if "tensor" in q:
        return emit_cp_tensor(i, ctx)
    if q[:1] == ("reduce",):
        if "bulk" not in q or "tensor" in q:
            raise NotExpressible("only the non-tensor cp.reduce.async.bulk is expressible")
    elif any(x.startswith("prefetch") for x in q):
        a = Asm()
        return a.render(f"{mnemonic(i)} {_addr(a, ctx, i.operands[0], _space(i))}, {ctx.cell_bytes};")
    elif q[:1] != ("async",):
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
        extra = list(i.operands[3:])
        rest = ""
        if any(x.startswith("mbarrier::complete_tx") for x in q):
            if not extra:
                raise NotExpressible(f"'{i.text}': missing the mbarrier operand")
            rest = ", " + _addr(a, ctx, extra.pop(0), sp[0])
        if "multicast::cluster" in q:
            if not extra:
                raise NotExpressible(f"'{i.text}': missing the ctaMask operand")
            rest += ", " + cta_mask(a, ctx, extra.pop(0))
        if any(x.startswith("L2::cache_hint") for x in q):
            if not extra:
                raise NotExpressible(f"'{i.text}': missing the cache-policy operand")
            rest += ", " + _value(a, ctx, extra.pop(0), wide=True)
        if extra:
            raise NotExpressible(f"'{i.text}': unexpected operands for the harness")
        return a.render(f"{mnemonic(i)} {dst}, {src}, {size}{rest};")
    # non-bulk cp.async: cp-size 4, 8 or 16; a cell is 16 bytes and its value is word 0
    size = _literal(i.operands[2]) if len(i.operands) > 2 else "4"
    if size not in ("4", "8", "16"):
        raise NotExpressible("cp.async copies 4, 8 or 16 bytes")
    if "cg" in q and size != "16":
        raise NotExpressible("cp.async.cg copies 16 bytes")
    return a.render(f"{mnemonic(i)} {dst}, {src}, {size};")


def tensor_rank(i: Instr) -> int | None:
    """The .Nd of a tensor copy (1..5), or None."""
    for q in i.qualifiers:
        if len(q) == 2 and q[1] == "d" and q[0] in "12345":
            return int(q[0])
    return None


def _tensor_operand(a: Asm, ctx: Ctx, op) -> str:
    """`[tmap, {0}]`: the map's generic address and its coordinates (one cell: all 0)."""
    if not isinstance(op, Addr) or not op.coords:
        raise NotExpressible("expected a tensor operand [tmap, {coords}]")
    if op.base not in ctx.maps:
        raise NotExpressible(f"'{op.base}' is not a tensor map")
    if any(not isinstance(c, Imm) or c.value != 0 for c in op.coords):
        raise NotExpressible("tensor coordinates other than 0 (a map describes one cell)")
    coords = ", ".join(a.inp("r", "0") for _ in op.coords)
    return f"[{a.inp('l', ctx.opaque(ctx.address(Addr(op.base), 'generic')))}, {{{coords}}}]"


def emit_cp_tensor(i: Instr, ctx: Ctx) -> str:
    """cp.async.bulk.tensor.{1..5}d, global<->shared through a tensor map: a tensor of one cell
    (the cell along dimension 0, extent 1 along the others; codegen gives every map the test's
    rank), so every coordinate is 0."""
    q = i.qualifiers
    rank = tensor_rank(i)
    if rank is None:
        raise NotExpressible("a tensor copy needs .1d ... .5d")
    if not ("tile" in q):
        raise NotExpressible("only .tile tensor copies")
    a = Asm()
    sp = spaces(i)
    if sp and sp[0] == "global":                      # shared -> global, bulk_group completion
        return a.render(f"{mnemonic(i)} {_tensor_operand(a, ctx, i.operands[0])}, "
                        f"{_addr(a, ctx, i.operands[1], sp[1] if len(sp) > 1 else 'cta')};")
    dst = _addr(a, ctx, i.operands[0], sp[0] if sp else "cluster")
    src = _tensor_operand(a, ctx, i.operands[1])
    rest = ""
    if any(x.startswith("mbarrier::complete_tx") for x in q):
        rest = ", " + _addr(a, ctx, i.operands[2], sp[0] if sp else "cluster")
    if "multicast::cluster" in q:
        if len(i.operands) < 4:
            raise NotExpressible(f"'{i.text}': missing the ctaMask operand")
        rest += ", " + cta_mask(a, ctx, i.operands[3])
    return a.render(f"{mnemonic(i)} {dst}, {src}{rest};")


def cta_mask(a: Asm, ctx: Ctx, op) -> str:
    """A test ctaMask (bit N = ctaN of the issuer's cluster) as the hardware's (bit = %cluster_ctarank),
    a 16-bit operand."""
    if not isinstance(op, Imm):
        raise NotExpressible("the ctaMask must be an immediate")
    mask = 0
    for n in range(16):
        if op.value >> n & 1:
            mask |= 1 << ctx.peer_rank(n)
    return a.inp("h", f"(unsigned short){mask}")


def emit_tensormap(i: Instr, ctx: Ctx) -> str:
    q = i.qualifiers
    a = Asm()
    if q[:1] == ("replace",):
        if "global_address" not in q:
            raise NotExpressible("only the global_address field of a tensor map can be replaced (a map "
                                 "describes one cell)")
        sp = _space(i)
        if sp not in ("global", "cta"):
            raise NotExpressible("tensormap.replace works on .global or .shared::cta maps")
        m = i.operands[0]
        if not isinstance(m, Addr) or m.base not in ctx.maps:
            raise NotExpressible("tensormap.replace needs a tensor map operand")
        addr = _addr(a, ctx, m, sp)
        return a.render(f"{mnemonic(i)} {addr}, {a.inp('l', ctx.buffer(m.base, i.operands[1]))};")
    if q[:1] == ("cp_fenceproxy",):
        ctx.warp_is_one_role()
        g, s_ = i.operands[0], i.operands[1]
        for o in (g, s_):
            if not isinstance(o, Addr) or o.base not in ctx.maps:
                raise NotExpressible("tensormap.cp_fenceproxy copies a tensor map")
        gv, sv = ctx.address(g, "global"), ctx.address(s_, "cta")
        size = _literal(i.operands[2]) if len(i.operands) > 2 else "128"
        # Warp-collective: the 32 lanes (32 instances) copy each instance's map in turn.
        inner = a.render(f"{mnemonic(i)} [{a.inp('l', 'g_')}], [{a.inp('r', 's_')}], {size};")
        return (f"for (int j_ = 0; j_ < 32; j_++) {{ unsigned long long g_ = __shfl_sync(0xffffffffu, {gv}, j_); "
                f"unsigned s_ = __shfl_sync(0xffffffffu, {sv}, j_); {inner} }}")
    raise NotExpressible(f"'{i.text}': only tensormap.replace and tensormap.cp_fenceproxy are expressible")


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


def emit_red_dispatch(i: Instr, ctx: Ctx) -> str:
    return emit_red_async(i, ctx) if i.has("async") else emit_red(i, ctx)


def unsupported_op(reason: str) -> Callable[[Instr, Ctx], str]:
    def emit(i: Instr, ctx: Ctx) -> str:
        raise NotExpressible(reason)
    return emit


