"""PTX syntax of the tensor-core instructions (issue 5): wgmma (sm_90a) and tcgen05 (sm_100a).
Registered into checker.ptx.FAMILIES on import (checker.ptx imports this module); their meaning
is in checker.lower_tensor.

Opcodes and qualifiers are real PTX (PTX ISA 9.4, "Asynchronous Warpgroup Level Matrix
Multiply-Accumulate Instructions" and "TensorCore 5th Generation Family Instructions"). The
operands a litmus test cannot express -- matrix descriptors, Tensor Memory addresses held in
registers -- are written as abstract operands naming the memory cells (DESIGN section 2):

    wgmma.fence.sync.aligned
    wgmma.mma_async.sync.aligned.SHAPE.DTYPE.ATYPE.BTYPE  {d0, ...}, [sA], [sB], scale-d, imm-scale-a, imm-scale-b{, imm-trans-a, imm-trans-b}
    wgmma.mma_async.sync.aligned.SHAPE.DTYPE.ATYPE.BTYPE  {d0, ...}, {a0, ...}, [sB], scale-d, imm-scale-a, imm-scale-b{, imm-trans-b}
    wgmma.mma_async.sync.aligned.SHAPE{.satfinite}.s32.ATYPE.BTYPE  {d0, ...}, [sA] | {a0, ...}, [sB], scale-d
    wgmma.mma_async.sync.aligned.SHAPE.s32.b1.b1.and.popc  {d0, ...}, [sA] | {a0, ...}, [sB], scale-d
    wgmma.commit_group.sync.aligned
    wgmma.wait_group.sync.aligned N

    tcgen05.alloc.cta_group::1.sync.aligned{.shared::cta}.b32  [sDst], nCols
    tcgen05.dealloc.cta_group::1.sync.aligned.b32              [tD], nCols
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned
    tcgen05.mma.cta_group::1.KIND  [tD], [sA] | [tA], [sB], idesc, enable-input-d{, scale-input-d}
    tcgen05.cp.cta_group::1.SHAPE{.MULTICAST}{.b8x16.SRC_FMT}  [tD], [sS]
    tcgen05.ld.sync.aligned.SHAPE.NUM{.pack::16b}.b32  {r0, ...}, [tD]{, immHalfSplitoff}
    tcgen05.st.sync.aligned.SHAPE.NUM{.unpack::16b}.b32 [tD]{, immHalfSplitoff}, {r0, ...}
    tcgen05.wait::ld.sync.aligned      tcgen05.wait::st.sync.aligned
    tcgen05.commit.cta_group::1.mbarrier::arrive::one{.shared::cluster}.b64  [mbar]
    tcgen05.commit.cta_group::1.mbarrier::arrive::one{.shared::cluster}.multicast::cluster.b64  [mbar], ctaMask
    tcgen05.fence::before_thread_sync  tcgen05.fence::after_thread_sync

- `[sA]`, `[sB]`, `[sS]` (for a-desc, b-desc, s-desc): the shared-memory cell the descriptor's
  matrix start address points to; a cell stands for a whole matrix.
- `[tD]`, `[tA]` (for d-tmem, a-tmem, taddr): a Tensor Memory cell, declared in `memory:` with
  `space: tensor` and the owning CTA (`tD: {space: tensor, owner: gpu0.cta0}`).
- `{d0, ...}` / `{a0, ...}` / `{r0, ...}`: real register vectors; one register per fragment is
  enough, every register of the vector carries the cell's abstract value.
- scale-d, enable-input-d: predicate registers (`p`, `!p`; a register never set is false);
  idesc: a register (its value is not interpreted: shapes and types are opaque here).

Qualifier values are checked against the PTX ISA lists; `.kind::*` of tcgen05.mma is opaque (no
type arithmetic). Not modelled (rejected with a message): `.cta_group::2` (CTA pairs), the
block-scaled kinds and `.block_scale`, tcgen05.mma.ws / .sp, tcgen05.shift, and the sparse
wgmma.mma_async.sp. ctaMask (tcgen05.commit .multicast::cluster) is an immediate as for the bulk
copies (checker.ptx_async): the arrive-on reaches the mbarrier at [mbar]'s offset (`offset_of`) in
each CTA of the mask.
"""
from __future__ import annotations

from .ast import Addr, Reg, Vec
from .ptx import KINDS, Family, Group, Instr, Quals, register, sig
from .ptx_async import _cta_mask

# -- operand kinds -----------------------------------------------------------------------------


def _reg_vec(o) -> bool:
    return isinstance(o, Vec) and all(isinstance(x, Reg) and not x.name.startswith("!") for x in o.items)


KINDS.setdefault("regvec", (_reg_vec, "a vector of registers {r0, ...}"))
KINDS.setdefault("amat", (lambda o: (isinstance(o, Addr) and not o.coords) or _reg_vec(o),
                          "a shared-memory matrix [sA] or a register vector {a0, ...}"))

_SYNC = Group("sync", ("sync",), required=True)
_ALIGNED = Group("aligned", ("aligned",), required=True)
_CTA_GROUP = Group("cta_group", ("cta_group::1",), required=True)
_PAIRS = "is not modelled (CTA pairs): use .cta_group::1"
_CTA_REJECTS = {"cta_group::2": f".cta_group::2 {_PAIRS}"}


# -- wgmma ---------------------------------------------------------------------------------------

N_ALL = tuple(range(8, 257, 8))
N_INT = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)
# (k, dtype, atype, btype, has imm-scale, has imm-trans) of the floating-point variants
WG_FLOAT = ([(16, d, a, a, True, True) for d, a in (("f16", "f16"), ("f32", "f16"), ("f32", "bf16"))]
            + [(8, "f32", "tf32", "tf32", True, False)]
            + [(32, d, a, b, True, False) for d in ("f16", "f32") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")])
WG_INT = [(a, b) for a in ("s8", "u8") for b in ("s8", "u8")]


def _imm_in(slot: int, allowed: tuple[int, ...], what: str):
    def rule(i: Instr, q: Quals):
        if len(i.operands) > slot and i.operands[slot].value not in allowed:
            return f"{what} is {' or '.join(map(str, allowed))}, not {i.operands[slot].value}"
        return None
    return rule


def _trans_count(i: Instr, q: Quals):
    # f16/bf16: imm-trans-a and imm-trans-b with A in shared memory, imm-trans-b only with A in
    # registers (the transpose is for matrices read through a descriptor).
    smem = isinstance(i.operands[1], Addr)
    got = len(i.operands) - 6
    if got != (2 if smem else 1):
        if smem:
            return f"with A in shared memory wgmma.mma_async takes imm-trans-a and imm-trans-b, not {got} transpose operands"
        return f"with A in registers wgmma.mma_async takes imm-trans-b only, not {got} transpose operands"
    return None


def _wgmma(shape: str, types: str, scale: bool, trans: bool) -> Family:
    if trans:
        slots = sig("d:regvec, a:amat, b:addr, scale_d:pred, imm_scale_a:imm, imm_scale_b:imm, "
                    "imm_trans_a:imm?, imm_trans_b:imm?", b="the shared-memory matrix B [sB]",
                    scale_d="the scale-d predicate")
        rules = (_imm_in(4, (1, -1), "imm-scale-a"), _imm_in(5, (1, -1), "imm-scale-b"),
                 _trans_count, _imm_in(6, (0, 1), "imm-trans"), _imm_in(7, (0, 1), "imm-trans-b"))
    elif scale:
        slots = sig("d:regvec, a:amat, b:addr, scale_d:pred, imm_scale_a:imm, imm_scale_b:imm",
                    b="the shared-memory matrix B [sB]", scale_d="the scale-d predicate")
        rules = (_imm_in(4, (1, -1), "imm-scale-a"), _imm_in(5, (1, -1), "imm-scale-b"))
    else:
        slots = sig("d:regvec, a:amat, b:addr, scale_d:pred", b="the shared-memory matrix B [sB]",
                    scale_d="the scale-d predicate")
        rules = ()
    return Family(f"wgmma.mma_async.sync.aligned.{shape}.{types}", operands=slots, rules=rules)


def _wgmma_families():
    out = []
    for n in N_ALL:
        for k, d, a, b, scale, trans in WG_FLOAT:
            out.append(_wgmma(f"m64n{n}k{k}", f"{d}.{a}.{b}", scale, trans))
    for n in N_INT:
        for a, b in WG_INT:
            out.append(_wgmma(f"m64n{n}k32", f"s32.{a}.{b}", False, False))
            out.append(_wgmma(f"m64n{n}k32", f"satfinite.s32.{a}.{b}", False, False))
        out.append(_wgmma(f"m64n{n}k256", "s32.b1.b1.and.popc", False, False))
    return out


_WG_SHAPE_HELP = ("wgmma.mma_async needs .sync.aligned, a shape and its types, e.g. "
                  "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 (k16: .f16/.bf16; k8: .tf32; "
                  "k32: .e4m3/.e5m2 or .s8/.u8; k256: .b1)")


# every qualifier a wgmma.mma_async may carry, for a helpful message when the combination is wrong
_WG_QUALS = {q: _WG_SHAPE_HELP for q in
             ["aligned", "satfinite", "and", "popc", "s32", "f16", "f32", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8", "b1"]
             + [f"m64n{n}k{k}" for n in N_ALL for k in (8, 16, 32, 256)]}


def wgmma_shape(i: Instr) -> str:
    """The shape qualifier of a wgmma.mma_async (m64nNkK)."""
    return next(q for q in i.qualifiers if q.startswith("m64n"))


# -- tcgen05 -------------------------------------------------------------------------------------

MMA_KINDS = ("kind::f16", "kind::tf32", "kind::f8f6f4", "kind::i8")
CP_SHAPES = ("128x256b", "4x256b", "128x128b", "64x128b", "32x128b")
LDST_SHAPES = ("16x64b", "16x128b", "16x256b", "32x32b", "16x32bx2")
LDST_NUMS = tuple(f"x{n}" for n in (1, 2, 4, 8, 16, 32, 64, 128))


def _ncols(slot: int):
    def rule(i: Instr, q: Quals):
        n = i.operands[slot].value
        if n < 32 or n > 512 or n & (n - 1):
            return f"nCols is a power of 2 from 32 to 512, not {n}"
        return None
    return rule


def _cp_multicast(i: Instr, q: Quals):
    need = {"64x128b": ("warpx2::02_13", "warpx2::01_23"), "32x128b": ("warpx4",)}.get(q["shape"], ())
    if need and q["multicast"] not in need:
        return f"tcgen05.cp.{q['shape']} needs {' or '.join('.' + m for m in need)}"
    if not need and q["multicast"]:
        return f".{q['multicast']} goes with .64x128b (.warpx2::*) or .32x128b (.warpx4) only"
    if bool(q["dst_fmt"]) != bool(q["src_fmt"]):
        return "the decompression formats come together: .b8x16.b6x16_p32 or .b8x16.b4x16_p64"
    return None


def _ld_operands(q: Quals):
    if q["shape"] == "16x32bx2":
        return sig("r:regvec, taddr:addr, split:imm", taddr="the Tensor Memory cell [tD]")
    return sig("r:regvec, taddr:addr", taddr="the Tensor Memory cell [tD]")


def _st_operands(q: Quals):
    if q["shape"] == "16x32bx2":
        return sig("taddr:addr, split:imm, r:regvec", r="the source registers {r0, ...}")
    return sig("taddr:addr, r:regvec", r="the source registers {r0, ...}")


def _mma_scale_input(i: Instr, q: Quals):
    if len(i.operands) == 6:
        if q["kind"] not in ("kind::f16", "kind::tf32"):
            return f"scale-input-d is for .kind::f16 and .kind::tf32, not .{q['kind']}"
        if not 0 <= i.operands[5].value <= 15:
            return "scale-input-d is 0 to 15"
    return None


_LDST_GROUPS = (_SYNC, _ALIGNED, Group("shape", LDST_SHAPES, required=True), Group("num", LDST_NUMS, required=True))
_MMA_REJECTS = {
    **_CTA_REJECTS,
    **dict.fromkeys(("kind::mxf8f6f4", "kind::mxf4", "kind::mxf4nvf4", "block_scale", "scale_vec::1X",
                     "scale_vec::2X", "scale_vec::4X", "block16", "block32"),
                    "block-scaled tcgen05.mma is not modelled yet"),
    "ws": "tcgen05.mma.ws (weight-stationary) is not modelled yet",
    "sp": "tcgen05.mma.sp (sparse) is not modelled yet",
    **dict.fromkeys(("collector::a::fill", "collector::a::use", "collector::a::lastuse", "collector::a::discard"),
                    "the collector-buffer hints of tcgen05.mma are not modelled yet"),
}

register(
    # wgmma ---------------------------------------------------------------------------------------
    Family("wgmma", rules=(lambda i, q: "wgmma needs an operation: .fence, .mma_async, .commit_group or "
                                        ".wait_group (e.g. wgmma.fence.sync.aligned)",)),
    Family("wgmma.fence", groups=(_SYNC, _ALIGNED)),
    Family("wgmma.commit_group", groups=(_SYNC, _ALIGNED)),
    Family("wgmma.wait_group", groups=(_SYNC, _ALIGNED),
           operands=sig("n:imm", n="the number of most recent wgmma-groups that may stay pending"),
           rules=(lambda i, q: "wait_group takes a non-negative count" if i.operands[0].value < 0 else None,)),
    Family("wgmma.mma_async", rules=(lambda i, q: _WG_SHAPE_HELP,),
           rejects={"sp": "the sparse wgmma.mma_async.sp is not modelled yet", **_WG_QUALS}),
    Family("wgmma.mma_async.sync", rules=(lambda i, q: _WG_SHAPE_HELP,), rejects=_WG_QUALS),
    Family("wgmma.mma_async.sync.aligned", rules=(lambda i, q: _WG_SHAPE_HELP,), rejects=_WG_QUALS),
    *_wgmma_families(),
    # tcgen05 -------------------------------------------------------------------------------------
    Family("tcgen05", rules=(lambda i, q: "tcgen05 needs an operation (.alloc, .dealloc, .mma, .cp, .ld, .st, "
                                          ".wait::ld, .wait::st, .commit, .fence::before_thread_sync, ...)",),
           rejects={"shift": "tcgen05.shift is not modelled yet"}),
    Family("tcgen05.alloc", groups=(_CTA_GROUP, _SYNC, _ALIGNED, Group("space", ("shared::cta",)),
                                    Group("type", ("b32",), required=True)),
           operands=sig("dst:addr, ncols:imm", dst="the shared-memory cell that receives the address",
                        ncols="the number of columns"),
           rules=(_ncols(1),), space="space", rejects=_CTA_REJECTS),
    Family("tcgen05.dealloc", groups=(_CTA_GROUP, _SYNC, _ALIGNED, Group("type", ("b32",), required=True)),
           operands=sig("taddr:addr, ncols:imm", taddr="the Tensor Memory cell [tD] (abstract taddr)",
                        ncols="the number of columns"),
           rules=(_ncols(1),), rejects=_CTA_REJECTS),
    Family("tcgen05.relinquish_alloc_permit", groups=(_CTA_GROUP, _SYNC, _ALIGNED), rejects=_CTA_REJECTS),
    Family("tcgen05.mma", groups=(_CTA_GROUP, Group("kind", MMA_KINDS, required=True)),
           operands=sig("d:addr, a:addr, b:addr, idesc:val, enable_input_d:pred, scale_input_d:imm?",
                        b="the shared-memory matrix B [sB]", idesc="the instruction descriptor (a register)",
                        enable_input_d="the enable-input-d predicate"),
           rules=(_mma_scale_input,), rejects=_MMA_REJECTS),
    Family("tcgen05.cp", groups=(_CTA_GROUP, Group("shape", CP_SHAPES, required=True),
                                 Group("multicast", ("warpx2::02_13", "warpx2::01_23", "warpx4")),
                                 Group("dst_fmt", ("b8x16",)), Group("src_fmt", ("b6x16_p32", "b4x16_p64"))),
           operands=sig("taddr:addr, sdesc:addr", sdesc="the shared-memory source matrix [sS]"),
           rules=(_cp_multicast,), rejects=_CTA_REJECTS),
    Family("tcgen05.ld", groups=_LDST_GROUPS + (Group("pack", ("pack::16b",)), Group("type", ("b32",), required=True)),
           operands=_ld_operands),
    Family("tcgen05.st", groups=_LDST_GROUPS + (Group("unpack", ("unpack::16b",)), Group("type", ("b32",), required=True)),
           operands=_st_operands),
    Family("tcgen05.wait::ld", groups=(_SYNC, _ALIGNED)),
    Family("tcgen05.wait::st", groups=(_SYNC, _ALIGNED)),
    Family("tcgen05.commit", groups=(_CTA_GROUP, Group("completion", ("mbarrier::arrive::one",), required=True),
                                     Group("space", ("shared::cluster",)), Group("multicast", ("multicast::cluster",)),
                                     Group("type", ("b64",), required=True)),
           operands=lambda q: sig("mbar:addr" + (", ctaMask:ctamask" if q["multicast"] else ""), mbar="the mbarrier",
                                  ctaMask="the CTAs whose mbarrier is signalled (bit N = ctaN of the cluster)"),
           rules=(_cta_mask,), rejects=_CTA_REJECTS),
    Family("tcgen05.fence::before_thread_sync"),
    Family("tcgen05.fence::after_thread_sync"),
)
