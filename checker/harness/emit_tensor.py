"""Emitters of the tensor-core families: wgmma (sm_90a). A litmus thread running wgmma stands for
its warpgroup (checker.harness.layout): all 128 threads execute these instructions together.

The test's abstract operands become real ones: `[sA]` / `[sB]` (a shared cell standing for a
matrix) become matrix descriptors of the cell's slot (`wg_desc` in the program template: no
swizzle, the cell's integer value as the f16 element [0][0], checker.harness.numformat), and the
accumulator `{d0}` becomes the f32 registers of the fragment (4 for m64n8k16, 8 for m64n16k16), the test's register
first (the warpgroup leader's first register holds D[0][0]). Every wgmma instruction names all of
the thread's accumulator registers as read-write operands, so the compiler keeps them in place
while an MMA is in flight.
"""
from __future__ import annotations

from ..ast import Addr, Imm, Instr, Reg, Vec
from .operands import Ctx, NotExpressible

SHAPES = {("m64n8k16", "f32", "f16", "f16"): 4,       # shape and types -> accumulator registers per thread
          ("m64n16k16", "f32", "f16", "f16"): 8}
FRAGMENT = max(SHAPES.values())                         # C variables per accumulator register


def accumulator_vars(reg: str, ctx: Ctx, n: int = FRAGMENT) -> list[str]:
    """The C variables of the fragment whose first register is the test's `reg`."""
    return [ctx.reg(reg)] + [f"X_{reg}_{k}" for k in range(1, n)]


def _f(var: str) -> str:
    return f"reinterpret_cast<float &>({var})"


def _pinned(ctx: Ctx, start: int = 0) -> tuple[str, list[str]]:
    """Read-write operands for every accumulator of the thread: (the outs text, their names)."""
    outs = [f'"+f"({_f(v)})' for v in ctx.accumulators]
    return ", ".join(outs), [f"%{start + k}" for k in range(len(outs))]


def emit_wgmma(i: Instr, ctx: Ctx) -> str:
    if not ctx.warpgroup:
        raise NotExpressible("wgmma needs its litmus thread to stand for a warpgroup")
    what = i.qualifiers[0] if i.qualifiers else ""
    if what in ("fence", "commit_group", "wait_group"):
        outs, _ = _pinned(ctx)
        n = ""
        if what == "wait_group":
            if not i.operands or not isinstance(i.operands[0], Imm):
                raise NotExpressible("wgmma.wait_group needs an immediate")
            n = f" {i.operands[0].value}"
        return (f'__syncwarp(); asm volatile("wgmma.{what}.sync.aligned{n};" : {outs} : : "memory");')
    if what != "mma_async":
        raise NotExpressible(f"wgmma.{what} is not generated")
    quals = [q for q in i.qualifiers if q not in ("mma_async", "sync", "aligned")]
    key = tuple(quals)
    if key not in SHAPES:
        raise NotExpressible(f"wgmma shape and types {'.'.join(quals)}: only "
                             f"{', '.join('.'.join(k) for k in SHAPES)} are generated")
    ops = list(i.operands)
    if len(ops) < 6 or not isinstance(ops[0], Vec) or not isinstance(ops[1], Addr) or not isinstance(ops[2], Addr):
        raise NotExpressible("wgmma.mma_async with A from registers is not generated (both matrices must be "
                             "shared-memory cells)")
    dregs = [r for r in ops[0].items if isinstance(r, Reg)]
    if len(dregs) != 1:
        raise NotExpressible("the accumulator must be written as one register {d} (the harness supplies the fragment)")
    acc = accumulator_vars(dregs[0].name, ctx, SHAPES[key])
    descs = []
    for o in ops[1:3]:
        var = ctx.address(o, "cta")
        descs.append(f'"l"(wg_desc({ctx.opaque(var)}))')
    scale = ops[3]
    if isinstance(scale, Reg):
        neg = scale.name.startswith("!")
        pred = f'"r"({ctx.reg(scale.name.lstrip("!"))})'
        setp = "setp.eq.u32" if neg else "setp.ne.u32"
    elif isinstance(scale, Imm):
        pred, setp = f'"r"({int(scale.value != 0)}u)', "setp.ne.u32"
    else:
        raise NotExpressible("scale-d must be a predicate register or an immediate")
    imms = []
    for o in ops[4:]:
        if not isinstance(o, Imm):
            raise NotExpressible("imm-scale and imm-trans operands must be immediates")
        imms.append(str(o.value))
    others = [v for v in ctx.accumulators if v not in acc]       # pinned too (in flight elsewhere)
    outs = [f'"+f"({_f(v)})' for v in acc + others]
    n = len(outs)
    frag = ", ".join(f"%{k}" for k in range(len(acc)))
    text = (f"{{ .reg .pred P; {setp} P, %{n + 2}, 0; wgmma.mma_async.sync.aligned.{'.'.join(quals)} "
            f"{{{frag}}}, %{n}, %{n + 1}, P, {', '.join(imms)}; }}")
    return f'__syncwarp(); asm volatile("{text}" : {", ".join(outs)} : {", ".join(descs + [pred])} : "memory");'


def emit_tcgen05(i: Instr, ctx: Ctx) -> str:
    """tcgen05 on Tensor Memory (checker.harness.tmem says which forms): the warp-collective
    ld/st/wait run in all 32 lanes of the thread's warp; the commit by lane 0 alone (the leader
    guard is added by the code generator, as for every write)."""
    if not ctx.whole_warp:
        raise NotExpressible("tcgen05 needs its litmus thread to take a whole warp")
    what = i.qualifiers[0] if i.qualifiers else ""
    if what in ("fence::before_thread_sync", "fence::after_thread_sync"):
        return f'asm volatile("tcgen05.{what};" : : : "memory");'
    if what in ("wait::ld", "wait::st"):
        pins = ", ".join(f'"+r"({r})' for r in dict.fromkeys(ctx.tmem_regs)) if what == "wait::ld" else ""
        return f'__syncwarp(); asm volatile("tcgen05.{what}.sync.aligned;" : {pins} : : "memory");'
    ops = list(i.operands)
    if what == "ld":
        vec, addr = ops[0], ops[1]
        regs = [r for r in (vec.items if isinstance(vec, Vec) else (vec,)) if isinstance(r, Reg)]
        if len(regs) != 1 or not isinstance(addr, Addr):
            raise NotExpressible("tcgen05.ld .x1 takes one register and a Tensor Memory cell")
        var = ctx.address(addr, "tmem")
        dst = ctx.reg(regs[0].name)
        ctx.tmem_regs.append(dst)
        return (f'__syncwarp(); asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {{%0}}, [%1];" : "=r"({dst}) '
                f': "r"({var}) : "memory");')
    if what == "st":
        addr, vec = ops[0], ops[-1]
        regs = [r for r in (vec.items if isinstance(vec, Vec) else (vec,)) if isinstance(r, (Reg, Imm))]
        if len(regs) != 1 or not isinstance(addr, Addr) or len(ops) != 2:
            raise NotExpressible("tcgen05.st .x1 takes a Tensor Memory cell and one register")
        var = ctx.address(addr, "tmem")
        src = ctx.reg(regs[0].name) if isinstance(regs[0], Reg) else f"{regs[0].value & 0xFFFFFFFF}u"
        return (f'__syncwarp(); asm volatile("tcgen05.st.sync.aligned.32x32b.x1.b32 [%0], {{%1}};" : '
                f': "r"({var}), "r"({src}) : "memory");')
    if what == "commit":
        if not ops or not isinstance(ops[0], Addr):
            raise NotExpressible("tcgen05.commit takes an mbarrier")
        cluster = "shared::cluster" in i.qualifiers
        var = ctx.opaque(ctx.address(ops[0], "cluster" if cluster else "generic"))
        return (f'asm volatile("{".".join(["tcgen05", *i.qualifiers])} [%0];" : : '
                f'"{"r" if cluster else "l"}"({var}) : "memory");')
    raise NotExpressible(f"tcgen05.{what} is not generated")
