"""PTX syntax of the asynchronous instructions and of the synchronization they complete through:
cp.async and its groups, cp.async.mbarrier.arrive, cp{.reduce}.async.bulk{.tensor} (all
directions), cp.async.bulk.prefetch{.tensor}, the bulk commit/wait_group, mbarrier.*,
fence.mbarrier_init, barrier.cluster, st.async, red.async and clusterlaunchcontrol.*. Registered into
checker.ptx.FAMILIES on import; their meaning is in checker.lower_async.

PTX ISA 9.4, "Data Movement and Conversion Instructions: Asynchronous copy" (cp.async,
cp.async.bulk, cp.reduce.async.bulk, cp.async.bulk.prefetch, cp.async.bulk.tensor,
cp.reduce.async.bulk.tensor, bulk commit/wait_group), "st.async", "red.async",
"Parallel Synchronization and Communication Instructions: mbarrier, barrier.cluster, membar/fence":

    cp.async.{ca,cg}.shared{::cta}.global{.L2::cache_hint}{.L2::64B|128B|256B} [dst], [src], cp-size{, src-size | ignore-src}{, policy}
    cp.async.commit_group        cp.async.wait_group N        cp.async.wait_all
    cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [mbar]
    cp.async.bulk.{shared::cta,shared::cluster}.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]{, policy}
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster{.L2::cache_hint} [dst], [src], size, [mbar], ctaMask{, policy}
    cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
    cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}{.cp_mask} [dst], [src], size{, policy}{, byteMask}
    cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.op.type [dst], [src], size, [mbar]
    cp.reduce.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}.op{.noftz}.type [dst], [src], size{, policy}
    cp.async.bulk.prefetch.L2.global{.L2::cache_hint} [src], size{, policy}
    cp.async.bulk.tensor.Nd.{shared::cta,shared::cluster}.global{.load_mode}.mbarrier::complete_tx::bytes{.multicast::cluster}{.cta_group::1}{.L2::cache_hint}
                                               [dst], [tmap, {c...}], [mbar]{, im2colInfo}{, ctaMask}{, policy}
    cp.async.bulk.tensor.Nd.global.shared::cta{.load_mode}.bulk_group{.L2::cache_hint} [tmap, {c...}], [src]{, policy}
    cp.reduce.async.bulk.tensor.Nd.global.shared::cta.op{.load_mode}.bulk_group{.L2::cache_hint} [tmap, {c...}], [src]{, policy}
    cp.async.bulk.prefetch.tensor.Nd.L2.global{.load_mode}{.L2::cache_hint} [tmap, {c...}]{, im2colInfo}{, policy}
    cp.async.bulk.commit_group   cp.async.bulk.wait_group{.read} N
    mbarrier.init{.shared{::cta}}.b64 [mbar], count          mbarrier.inval{.shared{::cta}}.b64 [mbar]
    mbarrier.arrive{.expect_tx}{.release|.relaxed}{.cta|.cluster}{.shared{::cta}}.b64 state, [mbar]{, count | txCount}
    mbarrier.arrive{.expect_tx}{.sem}{.scope}.shared::cluster.b64 _, [mbar]{, count | txCount}
    mbarrier.arrive_drop{...}    (the same forms)
    mbarrier.expect_tx{.relaxed}{.scope}{.space}.b64 [mbar], txCount      mbarrier.complete_tx{...} (the same)
    mbarrier.test_wait{.parity}{.acquire|.relaxed}{.scope}{.shared{::cta}}.b64 p, [mbar], state | phaseParity
    mbarrier.try_wait{.parity}{.sem}{.scope}{.shared{::cta}}.b64 p, [mbar], state | phaseParity{, suspendTimeHint}
    mbarrier.pending_count.b64 count, state
    fence.mbarrier_init.release.cluster
    barrier.cluster.arrive{.release|.relaxed}{.aligned}      barrier.cluster.wait{.acquire}{.aligned}
    st.async{.weak}{.cluster}.shared::cluster.mbarrier::complete_tx::bytes.type [a], b, [mbar]
    st.async{.mmio}.release.{gpu,sys}{.global}.type [a], b
    red.async.relaxed.cluster{.shared::cluster}.mbarrier::complete_tx::bytes.op.type [a], b, [mbar]
    red.async{.mmio}.release.{gpu,sys}{.global}.add.type [a], b
    clusterlaunchcontrol.try_cancel.async{.shared::cta}.mbarrier::complete_tx::bytes{.multicast::cluster::all}.b128 [addr], [mbar]
    clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, handle
    clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {x, y, z, _}, handle
    clusterlaunchcontrol.query_cancel.get_first_ctaid::{x,y,z}.b32.b128 r, handle

Abstract cells (DESIGN section 2): a size, cp-size or byte mask describes bytes of one cell.
Accepted and ignored, as the ISA says they change no memory-consistency behaviour: cache hints,
cache policies, prefetch sizes, .aligned, suspendTimeHint, im2col offsets, load modes (a tile is
one cell whatever its layout).

.multicast::cluster (global -> .shared::cluster only): ctaMask is an immediate (0b11, 3, 0x3); bit N
names CTA N of the issuer's cluster (the N of gpuG.clusterK.ctaN; in a launch without clusters
every CTA is a cluster of one, rank 0). The destination and mbarrier cells in each CTA of the mask
are the cells declared at the same offset (`offset_of`, DESIGN section 2); checker.lower_async
resolves them.

clusterlaunchcontrol (PTX ISA 8.6, sm_100; "Parallel Synchronization and Communication Instructions:
clusterlaunchcontrol.try_cancel / query_cancel"): [addr] is one abstract cell holding the whole
16-byte response; the handle is a register loaded from it (ld.shared.b128 handle, [addr]).
The abstract response values are in checker.lower_async.

Not modelled (rejected with a message): .cta_group::2, partial .cp_mask byte masks, the 9.3 .sem/.scope forms of the bulk copies,
.noComplete, vector (.v2/.v4) st.async.
"""
from __future__ import annotations

from .ast import Imm, Reg, Sink
from .ptx import KINDS, SCOPES, Family, Group, Instr, Quals, register, sig

_NOT_YET = "is not modelled yet"
_MULTICAST = (".multicast::cluster copies global memory into several CTAs' shared memory: it goes with the "
              ".shared::cluster.global direction only")
_BULK_REJECTS = {
    "multicast::cluster": _MULTICAST,
    **dict.fromkeys(("relaxed", "weak"), f"the .sem/.scope forms of the bulk copies (PTX 9.3) {_NOT_YET}"),
    **dict.fromkeys(("cta", "cluster", "gpu", "sys", "b128"),
                    f"the .sem/.scope forms of the bulk copies (PTX 9.3) {_NOT_YET}"),
}
_HINT = Group("hint", ("L2::cache_hint",))
_MCAST = Group("multicast", ("multicast::cluster",))
_MASK_WHAT = "the destination CTAs (bit N = ctaN of the cluster)"
KINDS.setdefault("ctamask", (lambda o: isinstance(o, Imm),
                             "an immediate mask (0b11, 3 or 0x3): a ctaMask in a register is not modelled"))
_MBAR = Group("completion", ("mbarrier::complete_tx::bytes",), required=True)
_BULKG = Group("completion", ("bulk_group",), required=True)

# An operand that is src-size (an integer) or ignore-src (a predicate register).
KINDS.setdefault("srcsz", (lambda o: isinstance(o, (Reg, Imm)), "an integer (src-size) or a predicate (ignore-src)"))

# (dst, src) -> does it complete through an mbarrier?
BULK_DIRECTIONS = {("shared::cta", "global"): True, ("shared::cluster", "global"): True,
                   ("shared::cluster", "shared::cta"): True, ("global", "shared::cta"): False}
TENSOR_LOADS = (("shared::cta", "global"), ("shared::cluster", "global"))
REDUCE_DIRECTIONS = {("shared::cluster", "shared::cta"): True, ("global", "shared::cta"): False}
RED_OPS = ("add", "inc", "dec", "min", "max", "and", "or", "xor")
LOAD_MODES = ("tile", "tile::gather4", "im2col", "im2col::w", "im2col::w::128")
STORE_MODES = ("tile", "tile::scatter4", "im2col_no_offs")
IM2COL = ("im2col", "im2col::w", "im2col::w::128")

# bytes of one element of each type (st.async / red.async complete-tx counts, DESIGN section 2)
TYPE_BYTES = {"b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8,
              "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2}


def _size(slot: int = 2):
    def rule(i: Instr, q: Quals):
        size = i.operands[slot].value
        if size <= 0 or size % 16:
            return f"the size of a bulk operation is a positive multiple of 16 bytes, not {size}"
        return None
    return rule


def _policy(slot: int):
    def rule(i: Instr, q: Quals):
        has = len(i.operands) > slot
        if has != bool(q.get("hint")):
            return "a cache-policy operand goes with .L2::cache_hint, and only with it"
        return None
    return rule


# -- cp.async (non-bulk) ----------------------------------------------------------------------

def _cp_async_operands(q: Quals):
    extra = "dst:addr, src:addr, size:imm, extra:srcsz?"
    return sig(extra + (", policy:val" if q["hint"] else ""), size="the copy size (cp-size)")


def _cp_async_form(i: Instr, q: Quals):
    size = i.operands[2].value
    if size not in (4, 8, 16):
        return f"cp-size is 4, 8 or 16, not {size}"
    if q["cache"] == "cg" and size != 16:
        return "cp.async.cg copies 16 bytes"
    n = 4 + bool(q["hint"])
    if len(i.operands) == n and isinstance(i.operands[3], Imm) and not 0 <= i.operands[3].value <= size:
        return f"src-size must be at most cp-size ({size}): larger is undefined behaviour"
    return None


# -- bulk copies ----------------------------------------------------------------------------

def _bulk_operands(dst: str, src: str, mbar: bool):
    def slots(q: Quals):
        ops = "dst:addr, src:addr, size:imm" + (", mbar:addr" if mbar else "")
        if q.get("multicast"):
            ops += ", ctaMask:ctamask"
        if q.get("hint"):
            ops += ", policy:val"
        if q.get("mask"):
            ops += ", mask:imm"
        return sig(ops, size="the size in bytes", mbar="the mbarrier", mask="the byte mask", ctaMask=_MASK_WHAT)
    return slots


def cta_mask(i: Instr, q: Quals) -> int | None:
    """The ctaMask immediate of a .multicast::cluster instruction (None without .multicast)."""
    if not q.get("multicast"):
        return None
    slot = {"cp": 4, "tcgen05": 1}.get(i.op, 4)
    if i.op == "cp" and "tensor" in i.qualifiers:
        slot = 3 + (q.get("load_mode") in IM2COL)
    return i.operands[slot].value


def _cta_mask(i: Instr, q: Quals):
    mask = cta_mask(i, q)
    if mask is not None and not 0 < mask <= 0xFFFF:
        return f"ctaMask is a 16-bit mask naming at least one CTA of the cluster, not {mask}"
    return None


def _cp_mask(i: Instr, q: Quals):
    if q.get("mask") and i.operands[-1].value & 0xFFFF != 0xFFFF:
        return ("a .cp_mask byte mask other than 0xffff writes part of a cell: partial writes are not "
                "modelled (abstract cells are whole)")
    return None


def _bulk(dst: str, src: str, mbar: bool) -> Family:
    groups = [_MBAR if mbar else _BULKG, _HINT]
    multicast = (dst, src) == ("shared::cluster", "global")
    if multicast:
        groups.append(_MCAST)
    if not mbar:
        groups.append(Group("mask", ("cp_mask",)))
    remote = ()
    if (dst, src) == ("shared::cluster", "shared::cta"):
        remote = (lambda i, q: "cp.async.bulk.shared::cluster.shared::cta takes no cache policy"
                  if q["hint"] else None,)
    return Family(f"cp.async.bulk.{dst}.{src}", groups=tuple(groups), operands=_bulk_operands(dst, src, mbar),
                  rules=(_size(), _cp_mask, _cta_mask) + remote,
                  rejects={k: v for k, v in _BULK_REJECTS.items() if not (multicast and k == "multicast::cluster")})


def _reduce(dst: str, src: str, mbar: bool) -> Family:
    types = ("b32", "u32", "s32", "b64", "u64") if mbar else \
        ("f16", "bf16", "b32", "u32", "s32", "b64", "u64", "s64", "f32", "f64")
    groups = (_MBAR if mbar else _BULKG, _HINT, Group("op", RED_OPS, required=True),
              Group("noftz", ("noftz",)), Group("type", types, required=True))
    return Family(f"cp.reduce.async.bulk.{dst}.{src}", groups=groups,
                  operands=_bulk_operands(dst, src, mbar), rules=(_size(), _reduce_types),
                  rejects={k: v for k, v in _BULK_REJECTS.items() if not k.startswith("multicast")})


def _reduce_types(i: Instr, q: Quals):
    ok = {"and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"), "inc": ("u32",), "dec": ("u32",)}
    if q["op"] in ok and q["type"] not in ok[q["op"]]:
        return f"cp.reduce.async.bulk.{q['op']} takes {Group('', ok[q['op']]).spelled()}"
    if q["op"] not in ok and q["type"] in ("b32", "b64"):
        return f"cp.reduce.async.bulk.{q['op']} takes an integer or floating-point type, not .{q['type']}"
    return None


# -- tensor copies ---------------------------------------------------------------------------

def _coords(dim: int, slot: int):
    def rule(i: Instr, q: Quals):
        n = len(i.operands[slot].coords)
        mode = q.get("load_mode") or "tile"
        if mode in ("tile::gather4", "tile::scatter4"):
            if dim != 2 or n != 5:
                return f".{mode} is a 2d mode with 5 coordinates (a column and four rows)"
            return None
        if mode in IM2COL + ("im2col_no_offs",) and dim < 3:
            return f"the .{mode} mode needs a tensor of at least 3 dimensions"
        if n != dim:
            return f"a {dim}d tensor copy takes {dim} coordinate{'s' if dim > 1 else ''}, not {n}"
        return None
    return rule


def _tensor_load_operands(q: Quals):
    ops = "dst:addr, tmap:taddr, mbar:addr"
    if q["load_mode"] in IM2COL:
        ops += ", info:vec"
    if q.get("multicast"):
        ops += ", ctaMask:ctamask"
    if q["hint"]:
        ops += ", policy:val"
    return sig(ops, tmap="the tensor map and coordinates", mbar="the mbarrier", info="the im2col offsets",
               ctaMask=_MASK_WHAT)


def _tensor(dim: int, dst: str, src: str) -> Family:
    multicast = dst == "shared::cluster"
    rejects = {**_BULK_REJECTS, "cta_group::2": f".cta_group::2 (CTA pairs) {_NOT_YET}"}
    if multicast:
        del rejects["multicast::cluster"]
    return Family(
        f"cp.async.bulk.tensor.{dim}d.{dst}.{src}",
        groups=(Group("load_mode", LOAD_MODES, default="tile"), _MBAR, Group("cta_group", ("cta_group::1",)), _HINT)
        + ((_MCAST,) if multicast else ()),
        operands=_tensor_load_operands, rules=(_coords(dim, 1), _cta_mask), rejects=rejects)


def _tensor_store_operands(q: Quals):
    return sig("tmap:taddr, src:addr" + (", policy:val" if q["hint"] else ""), tmap="the tensor map and coordinates")


def _tensor_store(dim: int) -> Family:
    return Family(f"cp.async.bulk.tensor.{dim}d.global.shared::cta",
                  groups=(Group("load_mode", STORE_MODES, default="tile"), _BULKG, _HINT),
                  operands=_tensor_store_operands, rules=(_coords(dim, 0),), rejects=_BULK_REJECTS)


def _tensor_reduce(dim: int) -> Family:
    return Family(f"cp.reduce.async.bulk.tensor.{dim}d.global.shared::cta",
                  groups=(Group("op", RED_OPS, required=True), Group("load_mode", ("tile", "im2col_no_offs"),
                                                                     default="tile"), _BULKG, _HINT),
                  operands=_tensor_store_operands, rules=(_coords(dim, 0),))


def _tensor_prefetch_operands(q: Quals):
    ops = "tmap:taddr"
    if q["load_mode"] in IM2COL:
        ops += ", info:vec"
    if q["hint"]:
        ops += ", policy:val"
    return sig(ops, tmap="the tensor map and coordinates")


# -- mbarrier ----------------------------------------------------------------------------------

_MB_SPACE = Group("space", ("shared", "shared::cta", "shared::cluster"))
_MB_LOCAL = Group("space", ("shared", "shared::cta"))
_B64 = Group("type", ("b64",), required=True)
_MB_SCOPE = Group("scope", ("cta", "cluster"))
_MB_REJECTS = {**dict.fromkeys(("gpu", "sys"), "mbarrier operations take .cta or .cluster scope"),
               "noComplete": f"mbarrier.arrive.noComplete {_NOT_YET}"}


def _arrive_operands(q: Quals):
    if q["expect_tx"]:
        return sig("state:dst, mbar:addr, tx:val", mbar="the mbarrier", tx="the tx-count")
    return sig("state:dst, mbar:addr, count:val?", mbar="the mbarrier")


def _arrive_form(i: Instr, q: Quals):
    if q["space"] == "shared::cluster" and not isinstance(i.operands[0], Sink):
        return ("an arrive on a .shared::cluster mbarrier returns no state: write _ as the destination "
                f"({i.op}.{'.'.join(i.qualifiers[:1])} ... _, [mbar])")
    if q["sem"] == "acquire":
        return "mbarrier arrives are .release or .relaxed"
    if len(i.operands) > 2 and isinstance(i.operands[2], Imm) and i.operands[2].value < (0 if q["expect_tx"] else 1):
        return "the count of an arrive is positive" if not q["expect_tx"] else "the tx-count is not negative"
    return None


def _arrive(kind: str) -> Family:
    return Family(f"mbarrier.{kind}",
                  groups=(Group("expect_tx", ("expect_tx",)), Group("sem", ("release", "relaxed", "acquire")),
                          _MB_SCOPE, _MB_SPACE, _B64),
                  operands=_arrive_operands, rules=(_arrive_form,), rejects=_MB_REJECTS, space="space")


def _tx(kind: str) -> Family:
    return Family(f"mbarrier.{kind}",
                  groups=(Group("sem", ("relaxed",)), _MB_SCOPE, _MB_SPACE, _B64),
                  operands=sig("mbar:addr, tx:val", mbar="the mbarrier", tx="the tx-count"),
                  rejects={**_MB_REJECTS, **dict.fromkeys(("release", "acquire"),
                                                          f"mbarrier.{kind} is .relaxed only (no ordering)")},
                  space="space")


def _wait_operands(q: Quals):
    what = "the phase parity" if q["parity"] else "the state from an arrive"
    return sig("p:dst, mbar:addr, phase:val" + (", hint:val?" if q["kind"] == "try_wait" else ""),
               mbar="the mbarrier", phase=what)


def _wait(kind: str) -> Family:
    return Family(f"mbarrier.{kind}",
                  groups=(Group("kind", (kind,), default=kind), Group("parity", ("parity",)),
                          Group("sem", ("acquire", "relaxed")), _MB_SCOPE, _MB_LOCAL, _B64),
                  operands=_wait_operands, space="space",
                  rejects={**_MB_REJECTS, "release": "mbarrier waits are .acquire or .relaxed",
                           "shared::cluster": "an mbarrier wait reads the executing CTA's own mbarrier "
                                              "(.shared::cta)"})


# -- st.async / red.async ---------------------------------------------------------------------

def _async_store_operands(q: Quals):
    if q["completion"]:
        return sig("a:addr, b:val, mbar:addr", mbar="the mbarrier")
    return sig("a:addr, b:val")


def _async_store_form(what: str, relaxed: str):
    def rule(i: Instr, q: Quals):
        if q["completion"]:
            if (q["sem"] or relaxed) != relaxed or (q["scope"] or "cluster") != "cluster" or q["mmio"] \
                    or (q["ss"] or "shared::cluster") != "shared::cluster":
                return (f"{what} with an mbarrier is .{relaxed}.cluster.shared::cluster"
                        f"{'' if relaxed == 'weak' else ' (the .sem and .scope are required)'}")
            if relaxed == "relaxed" and not (q["sem"] and q["scope"]):
                return f"{what} with an mbarrier needs .relaxed.cluster"
            return None
        if q["sem"] != "release" or q["scope"] not in ("gpu", "sys") or (q["ss"] or "global") != "global":
            return (f"{what} without an mbarrier is the .release.gpu / .release.sys form on .global memory "
                    f"(or add .mbarrier::complete_tx::bytes)")
        if q["mmio"] and q["scope"] != "sys":
            return f"{what}.mmio is .release.sys"
        return None
    return rule


def _red_async_op(i: Instr, q: Quals):
    if not q["completion"] and q["op"] != "add":
        return "red.async without an mbarrier is .add only"
    ok = {"and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"), "inc": ("u32",), "dec": ("u32",),
          "min": ("u32", "s32"), "max": ("u32", "s32"), "add": ("u32", "s32", "u64")}[q["op"]]
    if q["type"] not in ok:
        return f"red.async.{q['op']} takes {Group('', ok).spelled()}"
    return None


# -- clusterlaunchcontrol ------------------------------------------------------------------------

_CLC_SPACE = ("the operands of clusterlaunchcontrol.try_cancel are in the executing CTA's shared memory: "
              "write .shared::cta or no state space (generic addressing)")
_CLC_REJECTS = {
    **dict.fromkeys(("shared", "shared::cluster", "global"), _CLC_SPACE),
    "multicast::cluster": ("clusterlaunchcontrol.try_cancel multicasts with .multicast::cluster::all (every CTA of "
                           "the cluster, no ctaMask)"),
    **dict.fromkeys(("b8", "b16", "b32", "b64"), "the response of clusterlaunchcontrol.try_cancel is 16 bytes: .b128"),
    "bulk_group": "clusterlaunchcontrol.try_cancel completes through an mbarrier only (.mbarrier::complete_tx::bytes)",
}


def _query_form(i: Instr, q: Quals):
    what = q["query"]
    if what == "is_canceled":
        if q["rtype"] != "pred" or q["vec"]:
            return "clusterlaunchcontrol.query_cancel.is_canceled is .pred.b128 (a predicate from the 16-byte response)"
        return None
    if q["rtype"] != "b32":
        return f"clusterlaunchcontrol.query_cancel.{what} returns .b32 values (.{what}{'.v4' if what == 'get_first_ctaid' else ''}.b32.b128)"
    if what == "get_first_ctaid" and not q["vec"]:
        return ("clusterlaunchcontrol.query_cancel.get_first_ctaid returns a .v4 vector {x, y, z, _}: write "
                ".get_first_ctaid.v4.b32.b128, or .get_first_ctaid::x (::y, ::z) for one coordinate")
    if what != "get_first_ctaid" and q["vec"]:
        return f"clusterlaunchcontrol.query_cancel.{what} returns one coordinate: no .v4"
    if q["vec"] and len(i.operands[0].items) != 4:
        return "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4 writes a vector of four: {x, y, z, _}"
    return None


def _query_operands(q: Quals):
    if q["vec"]:
        return sig("d:vec, handle:reg", handle="the 16-byte response register")
    return sig("d:reg, handle:reg", handle="the 16-byte response register (ld.shared.b128 handle, [addr])")


_VEC = {v: "vector st.async (.v2, .v4) is not supported: use one access per location" for v in ("v2", "v4", "v8")}

register(
    # -- non-bulk copies and their groups
    Family("cp.async",
           groups=(Group("cache", ("ca", "cg"), required=True), Group("dst", ("shared", "shared::cta"), required=True),
                   Group("src", ("global",), required=True), _HINT,
                   Group("prefetch", ("L2::64B", "L2::128B", "L2::256B"))),
           operands=_cp_async_operands, rules=(_cp_async_form,),
           rejects={"shared::cluster": "cp.async copies into the executing CTA's shared memory (.shared or .shared::cta)",
                    "bulk_group": "a bulk copy is written cp.async.bulk.DST.SRC..."}),
    Family("cp.async.commit_group"),
    Family("cp.async.wait_group", operands=sig("n:imm", n="the number of most recent groups that may stay pending")),
    Family("cp.async.wait_all"),
    Family("cp.async.mbarrier.arrive", groups=(Group("noinc", ("noinc",)), _MB_LOCAL, _B64),
           operands=sig("mbar:addr", mbar="the mbarrier"), space="space"),
    # -- bulk copies
    Family("cp.async.bulk",
           rejects={**_BULK_REJECTS,
                    **dict.fromkeys(("shared::cta", "shared::cluster", "global", "shared"),
                                    "cp.async.bulk directions are .shared::cta.global, .shared::cluster.global, "
                                    ".shared::cluster.shared::cta and .global.shared::cta")},
           # the bare prefix names no instruction (found by fuzzing: it used to pass validation)
           rules=(lambda i, q: "cp.async.bulk needs a direction: .shared::cta.global, .shared::cluster.global, "
                               ".shared::cluster.shared::cta or .global.shared::cta",)),
    *(_bulk(dst, src, mbar) for (dst, src), mbar in BULK_DIRECTIONS.items()),
    Family("cp.reduce.async.bulk",
           rules=(lambda i, q: "cp.reduce.async.bulk directions are .shared::cluster.shared::cta and "
                               ".global.shared::cta",)),
    *(_reduce(dst, src, mbar) for (dst, src), mbar in REDUCE_DIRECTIONS.items()),
    Family("cp.async.bulk.prefetch.L2.global", groups=(_HINT,),
           operands=lambda q: sig("src:addr, size:imm" + (", policy:val" if q["hint"] else ""),
                                  size="the size in bytes"),
           rules=(_size(1),)),
    # -- tensor copies
    Family("cp.async.bulk.tensor",
           rejects={f"{d}d": "tensor copy directions are .shared::cta.global, .shared::cluster.global "
                             "and .global.shared::cta" for d in range(1, 6)},
           rules=(lambda i, q: "cp.async.bulk.tensor needs a dimension and a direction, "
                               "e.g. cp.async.bulk.tensor.1d.shared::cluster.global",)),
    *(_tensor(d, dst, src) for d in range(1, 6) for dst, src in TENSOR_LOADS),
    *(_tensor_store(d) for d in range(1, 6)),
    *(_tensor_reduce(d) for d in range(1, 6)),
    *(Family(f"cp.async.bulk.prefetch.tensor.{d}d.L2.global",
             groups=(Group("load_mode", LOAD_MODES, default="tile"), _HINT),
             operands=_tensor_prefetch_operands, rules=(_coords(d, 0),)) for d in range(1, 6)),
    Family("cp.async.bulk.commit_group"),
    Family("cp.async.bulk.wait_group", groups=(Group("read", ("read",)),),
           operands=sig("n:imm", n="the number of most recent groups that may stay pending")),
    # -- mbarrier
    Family("mbarrier.init", groups=(_MB_LOCAL, _B64), operands=sig("mbar:addr, count:val", count="the expected count"),
           rules=(lambda i, q: "the count of mbarrier.init is positive"
                  if isinstance(i.operands[1], Imm) and i.operands[1].value < 1 else None,),
           space="space"),
    Family("mbarrier.inval", groups=(_MB_LOCAL, _B64), operands=sig("mbar:addr"), space="space"),
    _arrive("arrive"),
    _arrive("arrive_drop"),
    _tx("expect_tx"),
    _tx("complete_tx"),
    _wait("test_wait"),
    _wait("try_wait"),
    Family("mbarrier.pending_count", groups=(_B64,), operands=sig("count:reg, state:val")),
    Family("fence.mbarrier_init", groups=(Group("sem", ("release",), required=True),
                                          Group("scope", ("cluster",), required=True))),
    # -- cluster barrier
    Family("barrier.cluster",
           groups=(Group("mode", ("arrive", "wait"), required=True), Group("sem", ("release", "relaxed", "acquire")),
                   Group("aligned", ("aligned",))),
           rules=(lambda i, q: (f"barrier.cluster.{q['mode']} takes no .{q['sem']}"
                                if q["sem"] and (q["mode"] == "wait") != (q["sem"] == "acquire") else None),)),
    # -- st.async / red.async
    Family("st.async",
           groups=(Group("mmio", ("mmio",)), Group("sem", ("weak", "release")), Group("scope", SCOPES),
                   Group("ss", ("shared::cluster", "global")), Group("completion", ("mbarrier::complete_tx::bytes",)),
                   Group("type", tuple(TYPE_BYTES), required=True)),
           operands=_async_store_operands, rules=(_async_store_form("st.async", "weak"),), rejects=_VEC, space="ss"),
    Family("red.async",
           groups=(Group("mmio", ("mmio",)), Group("sem", ("relaxed", "release")), Group("scope", SCOPES),
                   Group("ss", ("shared::cluster", "global")), Group("completion", ("mbarrier::complete_tx::bytes",)),
                   Group("op", RED_OPS, required=True), Group("type", ("u32", "s32", "u64", "b32", "b64"), required=True)),
           operands=_async_store_operands, rules=(_async_store_form("red.async", "relaxed"), _red_async_op),
           space="ss"),
    # -- clusterlaunchcontrol (PTX ISA 8.6, sm_100)
    Family("clusterlaunchcontrol",
           rules=(lambda i, q: "clusterlaunchcontrol is .try_cancel or .query_cancel",)),
    Family("clusterlaunchcontrol.try_cancel",
           groups=(Group("async", ("async",), required=True), Group("space", ("shared::cta",)), _MBAR,
                   Group("multicast", ("multicast::cluster::all",)), Group("type", ("b128",), required=True)),
           operands=sig("addr:addr, mbar:addr", addr="the response's address", mbar="the mbarrier"),
           rejects=_CLC_REJECTS, space="space"),
    Family("clusterlaunchcontrol.query_cancel",
           groups=(Group("query", ("is_canceled", "get_first_ctaid", "get_first_ctaid::x", "get_first_ctaid::y",
                                   "get_first_ctaid::z"), required=True),
                   Group("vec", ("v4",)), Group("rtype", ("pred", "b32"), required=True),
                   Group("type", ("b128",), required=True)),
           operands=_query_operands, rules=(_query_form,)),
)
