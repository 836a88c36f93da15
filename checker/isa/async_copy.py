"""The asynchronous copies and stores: cp.async with its groups and cp.async.mbarrier.arrive,
cp{.reduce}.async.bulk{.tensor} in every direction, cp.async.bulk.prefetch{.tensor}, the bulk
commit_group / wait_group, st.async and red.async. They complete through mbarriers
(checker.isa.mbarrier) or groups. The model that gives the tags and relations made here their
meaning is the "Asynchronous operations" and "Undefined behaviour" parts of axioms/ptx.cat.

PTX ISA 9.4: "Asynchronous Operations" (8.9.1.1), "Data Movement and Conversion Instructions:
Asynchronous copy" (completion mechanisms, async proxy), cp.async*, cp{.reduce}.async.bulk*,
st.async, red.async; decisions A2, A8, A9 (docs/model.md).

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
    st.async{.weak}{.cluster}.shared::cluster.mbarrier::complete_tx::bytes.type [a], b, [mbar]
    st.async{.mmio}.release.{gpu,sys}{.global}.type [a], b
    red.async.relaxed.cluster{.shared::cluster}.mbarrier::complete_tx::bytes.op.type [a], b, [mbar]
    red.async{.mmio}.release.{gpu,sys}{.global}.add.type [a], b

Bytes (A15): a copy moves the bytes its size (cp-size, src-size, a tensor map's box) names,
and its complete-tx counts them; a tensor box sits at sum(coordinate * stride) bytes into the
buffer (tile mode only; without a declared box, the whole buffer at coordinates 0, counting 16
bytes). Accepted and ignored, as the ISA says they change no memory-consistency behaviour: cache
hints, cache policies, prefetch sizes, .aligned, im2col offsets. .multicast::cluster (global -> .shared::cluster only): ctaMask is an
immediate; bit N names CTA N of the issuer's cluster (checker.isa.common.multicast_targets).
Not modelled (rejected with a message): .cta_group::2, partial .cp_mask byte masks, the 9.3
.sem/.scope forms of the bulk copies, vector (.v2/.v4) st.async, boxes of the im2col and
gather/scatter modes, floating-point reductions.

Asynchronous instructions (A8)
- An asynchronous instruction is an issue event (kind "I") in the thread's program order. Its
  memory operations belong to the thread but are NOT in program order; `aso` orders them after
  the issue event (so after every earlier instruction of the thread) and among themselves
  (tensor-map read, source reads, destination writes), and orders the issue before the
  instruction's completion signal (a complete-tx, an async arrive-on). Nothing orders them
  before later instructions of the thread.
- Data accesses: cp.async is a weak generic-proxy read of [src] and write of [dst]; a bulk copy
  a weak async-proxy read and write; a bulk reduction a weak async read of the source and an
  async-proxy RMW on the destination (.relaxed.gpu, atomic: ATOM/RED); st.async a weak generic
  write and red.async a .relaxed.cluster generic RMW into another CTA's shared memory. A bulk
  reduction combines element by element, each element wrapping in its type.
- A tensor copy reads the tensor map (tensormap proxy) and then, for a load, every buffer of
  the map's table (async proxy): the destination receives the data of the buffer whose table
  value the map read returned, or -1 for a value outside the table. A tensor store or reduction
  reads its shared source and writes (reduces into) every buffer: the selected buffer gets the
  data, the others are rewritten with the value they had (a read then a write, an atomic RMW
  for a reduction). `tbuf` goes from the map read to these buffer accesses and `tsel` from each
  write of the map to the buffer accesses its value selects (all of them when the value is not
  a constant), so the model knows which buffer accesses really happen (the "in flight" check
  ignores the others).
- Performing CTA (A2): a write into another CTA's shared memory (a .shared::cluster copy, st.async,
  red.async, and the complete-tx on that CTA's mbarrier) is performed by the CTA that owns it
  (`pscta`); option strict-cta uses the issuing CTA throughout.
- .multicast::cluster: each CTA named by ctaMask receives the bytes at the destination's offset in
  its shared memory (`offset_of`): one async write per destination CTA, performed by that CTA
  (A2), each followed by its own complete-tx on the mbarrier at [mbar]'s offset in that CTA,
  which completes and releases the source (and tensor-map) reads and that write only, with the
  implicit proxy fence for them (A9). The source is read once.

Completion
- Groups: `cp.async.commit_group` / `cp.async.bulk.commit_group` close a per-thread group of the
  copies issued since the last commit (separate groups for cp.async and bulk copies);
  `wait_group N` is an event (kind "C") in program order that completes every group but the N
  most recent (groups complete in commit order; nothing orders the copies of one group);
  `acomp` goes from the completed memory operations to it. `cp.async.wait_all` is
  commit_group; wait_group 0. A bulk wait is the implicit generic-async proxy fence (A9): PF_ASYNC,
  PF_TMAP, `pfcover` = exactly what it completes; .read completes (and fences) the tensor-map and
  source reads only, and so does any bulk wait for copies that complete through an mbarrier:
  the cp.async.bulk{.tensor} completion-mechanism tables give mbarrier-based completion for the
  whole operation and say bulk async-group completion "optionally can be used for the completion
  of reading data from the source [and] from the tensormap" (commit_group's own text names only
  .bulk_group copies; the tables are the more specific statement, so an mbarrier copy joins the
  next bulk group for its reads; option bulk-group-only reads it the other way: A14).
  cp.async is generic, so its waits are no proxy fences.
- The complete-tx of a copy (and of st.async, red.async) is checker.isa.mbarrier.complete_tx.
  cp.async.mbarrier.arrive performs, without .noinc, an increment of the pending count in program
  order, then an async arrive-on (ACOMPL, .release.cta) that acomp orders after every earlier
  cp.async of the thread.

Undefined behaviour: memory operations are tagged ASRC (source and tensor-map reads: modifying
them in flight is undefined) and ADST (destination writes: reading them in flight is undefined);
`sgrp` pairs the destination writes of two cp.async committed in one group.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from ..ast import Addr, Imm, Instr, Quals, Reg
from ..model.builder import Builder, ThreadCtx
from ..model.memory import MAX_BYTES, slice_value
from ..model.values import Const, Expr, Ite, ReadVal
from .common import (IM2COL, atom_value, check_space, cta_mask, cta_mask_rule, decl, issue, label,
                     multicast_targets, order, performed_by_owner, restrict)
from .mbarrier import (B64, MB_LOCAL, complete_tx, mb_location, mb_objects, mb_rmw, mb_update, record_arrive,
                       record_increment)
from .table import FLOAT_TYPES, SCOPE_TAG, SCOPES, SIGNED_TYPES, TYPE_BITS, Family, Group, sig

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


_MBAR = Group("completion", ("mbarrier::complete_tx::bytes",), required=True)


_BULKG = Group("completion", ("bulk_group",), required=True)


# (dst, src) -> does it complete through an mbarrier?
BULK_DIRECTIONS = {("shared::cta", "global"): True, ("shared::cluster", "global"): True,
                   ("shared::cluster", "shared::cta"): True, ("global", "shared::cta"): False}


TENSOR_LOADS = (("shared::cta", "global"), ("shared::cluster", "global"))


REDUCE_DIRECTIONS = {("shared::cluster", "shared::cta"): True, ("global", "shared::cta"): False}


RED_OPS = ("add", "inc", "dec", "min", "max", "and", "or", "xor")


LOAD_MODES = ("tile", "tile::gather4", "im2col", "im2col::w", "im2col::w::128")


STORE_MODES = ("tile", "tile::scatter4", "im2col_no_offs")


# bytes of one element of each type (st.async / red.async complete-tx counts, docs/format.md)
TYPE_BYTES = {"b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8,
              "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2}


def _size(slot: int = 2):
    def rule(i: Instr, q: Quals):
        size = i.operands[slot].value
        if size <= 0 or size % 16:
            return f"the size of a bulk operation is a positive multiple of 16 bytes, not {size}"
        if size > MAX_BYTES:
            return f"a bulk operation of {size} bytes: ptxmc models up to {MAX_BYTES} (1 MiB)"
        return None
    return rule


def _policy(slot: int):
    def rule(i: Instr, q: Quals):
        has = len(i.operands) > slot
        if has != bool(q.get("hint")):
            return "a cache-policy operand goes with .L2::cache_hint, and only with it"
        return None
    return rule


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


def _cp_mask(i: Instr, q: Quals):
    if q.get("mask") and i.operands[-1].value & 0xFFFF != 0xFFFF:
        return ("a .cp_mask byte mask other than 0xffff writes some bytes of each 16 and skips the others: "
                "byte-masked writes are not modelled")
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
                  lower=partial(lower_bulk, dst=dst, src=src, mbar=mbar),
                  rules=(_size(), _cp_mask, cta_mask_rule) + remote,
                  rejects={k: v for k, v in _BULK_REJECTS.items() if not (multicast and k == "multicast::cluster")})


def _reduce(dst: str, src: str, mbar: bool) -> Family:
    types = ("b32", "u32", "s32", "b64", "u64") if mbar else \
        ("f16", "bf16", "b32", "u32", "s32", "b64", "u64", "s64", "f32", "f64")
    groups = (_MBAR if mbar else _BULKG, _HINT, Group("op", RED_OPS, required=True),
              Group("noftz", ("noftz",)), Group("type", types, required=True))
    return Family(f"cp.reduce.async.bulk.{dst}.{src}", groups=groups,
                  operands=_bulk_operands(dst, src, mbar), rules=(_size(), _reduce_types),
                  lower=partial(lower_reduce, dst=dst, src=src, mbar=mbar),
                  rejects={k: v for k, v in _BULK_REJECTS.items() if not k.startswith("multicast")})


def _reduce_types(i: Instr, q: Quals):
    ok = {"and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"), "inc": ("u32",), "dec": ("u32",)}
    if q["op"] in ok and q["type"] not in ok[q["op"]]:
        return f"cp.reduce.async.bulk.{q['op']} takes {Group('', ok[q['op']]).spelled()}"
    if q["op"] not in ok and q["type"] in ("b32", "b64"):
        return f"cp.reduce.async.bulk.{q['op']} takes an integer or floating-point type, not .{q['type']}"
    return None


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
    rejects = {**_BULK_REJECTS, "cta_group::2": ".cta_group::2 (CTA pairs) is not modelled yet: the mbarrier it "
                                                "signals may be the peer CTA's of the pair (the ISA's CTA-pair rules), "
                                                "which ptxmc does not model; write .cta_group::1 copies per CTA"}
    if multicast:
        del rejects["multicast::cluster"]
    return Family(
        f"cp.async.bulk.tensor.{dim}d.{dst}.{src}",
        groups=(Group("load_mode", LOAD_MODES, default="tile"), _MBAR, Group("cta_group", ("cta_group::1",)), _HINT)
        + ((_MCAST,) if multicast else ()),
        operands=_tensor_load_operands, rules=(_coords(dim, 1), cta_mask_rule), rejects=rejects,
        lower=partial(lower_tensor_load, dst=dst))


def _tensor_store_operands(q: Quals):
    return sig("tmap:taddr, src:addr" + (", policy:val" if q["hint"] else ""), tmap="the tensor map and coordinates")


def _tensor_store(dim: int) -> Family:
    return Family(f"cp.async.bulk.tensor.{dim}d.global.shared::cta",
                  groups=(Group("load_mode", STORE_MODES, default="tile"), _BULKG, _HINT),
                  operands=_tensor_store_operands, rules=(_coords(dim, 0),), rejects=_BULK_REJECTS,
                  lower=lower_tensor_store)


def _tensor_reduce(dim: int) -> Family:
    return Family(f"cp.reduce.async.bulk.tensor.{dim}d.global.shared::cta",
                  groups=(Group("op", RED_OPS, required=True), Group("load_mode", ("tile", "im2col_no_offs"),
                                                                     default="tile"), _BULKG, _HINT),
                  operands=_tensor_store_operands, rules=(_coords(dim, 0),), lower=lower_tensor_store)


def _tensor_prefetch_operands(q: Quals):
    ops = "tmap:taddr"
    if q["load_mode"] in IM2COL:
        ops += ", info:vec"
    if q["hint"]:
        ops += ", policy:val"
    return sig(ops, tmap="the tensor map and coordinates")


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


_VEC = {v: "vector st.async (.v2, .v4) is not supported: use one access per location" for v in ("v2", "v4", "v8")}


# -- lowering --------------------------------------------------------------------------------

@dataclass
class BulkOp:
    """One issued asynchronous copy: its memory operations, which of them are reads, and whether a
    wait_group completes all of them (group completion) or only its reads (mbarrier)."""

    events: list[int]
    reads: list[int]
    full: bool


@dataclass
class BulkState:
    """Per thread and per kind of group: copies issued since the last commit, and the committed
    groups in order."""

    uncommitted: list[BulkOp] = field(default_factory=list)
    groups: list[list[BulkOp]] = field(default_factory=list)
    every: list[BulkOp] = field(default_factory=list)     # every copy issued so far (cp.async.mbarrier.arrive)


def _state(ctx: ThreadCtx, kind: str = "bulk") -> BulkState:
    return ctx.ext.setdefault(kind, BulkState())


CELL = 16       # bytes in an abstract cell (docs/format.md)


def lower_bulk(b: Builder, ctx: ThreadCtx, i: Instr, dst: str, src: str, mbar: bool) -> None:
    """cp.async.bulk: a weak async read of [src] (once), then a weak async write of the copied
    value into [dst] -- with .multicast::cluster into the location at [dst]'s offset in each CTA of
    ctaMask -- each write followed by its own complete-tx (the copy's size) on the mbarrier at
    [mbar]'s offset in the write's CTA, which completes and releases the source read and that write
    and carries the implicit proxy fence for them (A9); each write and complete-tx is performed by
    its destination CTA (A2)."""
    remote = (dst, src) == ("shared::cluster", "shared::cta")
    dst_space, src_space = dst, src
    dst, src = i.operands[0], i.operands[1]
    check_space(b, ctx, dst, "remote" if remote else dst_space, "destination")
    check_space(b, ctx, src, src_space, "source")
    if mbar:
        check_space(b, ctx, i.operands[3], "shared::cluster", "mbarrier")
    targets = multicast_targets(b, ctx, cta_mask(i), dst, *i.operands[3:4 if mbar else 3])
    size = i.operands[2].value
    start = issue(b, ctx, i)
    r = b.read(ctx, {"ASYNC", "WEAK", "ASRC"}, src, in_po=False, label=label(i, f"async read {src.base}"),
               size=size, align=16)
    writes = []
    for d, *mb in targets:
        w = b.write(ctx, {"ASYNC", "WEAK", "ADST"}, d, ReadVal(r), in_po=False, label=label(i, f"async write {d.base}"),
                    size=size, align=16)
        performed_by_owner(b, ctx, w, d)
        writes.append(w)
        if mbar:
            complete_tx(b, ctx, i, start, mb[0], size, [r, w], proxy_fence=True)
    order(b, start, [r], writes)
    _state(ctx).uncommitted.append(BulkOp([r, *writes], [r], full=not mbar))


def lower_reduce(b: Builder, ctx: ThreadCtx, i: Instr, dst: str, src: str, mbar: bool) -> None:
    """cp.reduce.async.bulk: a weak async read of the source, then an element-wise .relaxed.gpu
    reduction into the destination: an atomic async-proxy RMW on its bytes."""
    q = i.quals
    dst, src = i.operands[0], i.operands[1]
    check_space(b, ctx, dst, "remote" if mbar else "global", "destination")
    check_space(b, ctx, src, "shared::cta", "source")
    if mbar:
        check_space(b, ctx, i.operands[3], "shared::cluster", "mbarrier")
    size = i.operands[2].value
    start = issue(b, ctx, i)
    rs = b.read(ctx, {"ASYNC", "WEAK", "ASRC"}, src, in_po=False, label=label(i, f"async read {src.base}"),
                size=size, align=16)
    rds, wds = _reduction(b, ctx, i, q["op"], dst, ReadVal(rs), size=size, elem=q["type"])
    order(b, start, [rs], rds, wds)
    _state(ctx).uncommitted.append(BulkOp([rs, *rds, *wds], [rs], full=not mbar))
    if mbar:
        complete_tx(b, ctx, i, start, i.operands[3], size, [rs, *rds, *wds], proxy_fence=True)


MAX_REDUCE_ELEMENTS = 64


def _reduction(b: Builder, ctx: ThreadCtx, i: Instr, op: str, dst: Addr, x: Expr, keep=None,
               size: int | None = None, elem: str | None = None) -> tuple[list[int], list[int]]:
    """The async-proxy .relaxed.gpu RMWs of a bulk reduction on `dst` with operand x (`keep`: a
    condition (a, b) under which the bytes are reduced; otherwise they keep their value): the
    reads and the writes. Sized: the reduction is element-wise, as the ISA describes it -- one RMW
    per `elem`-typed element of the `size` bytes, each wrapping around in its element -- so a
    generic atomic on one element overlaps exactly that element's RMW (not a wider access: no
    mixed-size race). Unsized: one RMW on the whole cell."""
    tags = {"ASYNC", "STRONG", "RLX", "GPU", "ATOM", "RED"}
    if size is None or elem is None:
        parts = [(dst, x, None, None, 16)]
    else:
        bits, is_signed = TYPE_BITS[elem], elem in SIGNED_TYPES
        if elem in FLOAT_TYPES:
            raise ctx.error(f"{i.op} .{op}.{elem}: floating-point reductions are not modelled")
        eb = bits // 8
        n = size // eb
        if n > MAX_REDUCE_ELEMENTS:
            raise ctx.error(f"a bulk reduction of {n} elements: ptxmc models at most {MAX_REDUCE_ELEMENTS}")
        parts = [(Addr(dst.base, dst.offset + k * eb), slice_value(x, k * eb, eb), eb, (bits, is_signed),
                  16 if k == 0 else eb) for k in range(n)]
    reads, writes = [], []
    for k, (at, operand, nbytes, typed, align) in enumerate(parts):
        what = f"async reduce {dst.base}" + (f" element {k}" if len(parts) > 1 else "")
        rd = b.read(ctx, tags, at, in_po=False, label=label(i, f"{what}: read"), size=nbytes, align=align)
        new = atom_value(op, ReadVal(rd), [operand], *(typed or ()))
        if keep is not None:
            new = Ite("==", keep[0], keep[1], new, ReadVal(rd))
        wd = b.write(ctx, tags | {"ADST"}, at, new, in_po=False, label=label(i, f"{what}: write"),
                     size=nbytes, align=align)
        b.pairs["rmw"].add((rd, wd))
        for e in (rd, wd):
            performed_by_owner(b, ctx, e, at)
        reads.append(rd)
        writes.append(wd)
    return reads, writes


def _tensor_map(b: Builder, ctx: ThreadCtx, taddr: Addr):
    if taddr.base not in b.roots:
        raise ctx.error(f"unknown location '{taddr.base}'")
    d = decl(b, taddr.base)
    if not d.tensormap:
        raise ctx.error(f"'{taddr.base}' is not a tensor map: declare it with the buffers its values "
                        f"select, e.g. {taddr.base}: {{tensormap: {{0: gA, 1: gB}}, init: 0}}")
    return d


def _box(ctx: ThreadCtx, tmap, taddr: Addr) -> tuple[int, int | None]:
    """(byte offset, bytes) of the box a tensor copy moves in each of the map's buffers: with the
    map's `box:` (bytes) and `strides:` (bytes per unit of each coordinate; one coordinate:
    the box), the box at coordinates c starts at sum(c_i * strides_i) -- the tiles of the tensor
    laid out one after the other, exact for boxes that coincide or do not overlap (A15). Without
    `box:`, the whole buffer, at coordinates 0 only."""
    coords = []
    for c in taddr.coords:
        if not isinstance(c, Imm):
            raise ctx.error("a tensor coordinate in a register is not modelled: write the coordinate")
        coords.append(c.value)
    if tmap.box is None:
        if any(coords):
            raise ctx.error(f"coordinates {tuple(coords)} select a box of '{taddr.base}', which declares none: "
                            f"declare its bytes and strides ({taddr.base}: {{tensormap: ..., box: BYTES, "
                            "strides: [BYTES, ...]}})")
        return 0, None
    mode = ctx.instr.quals.get("load_mode") or "tile"
    if mode != "tile":
        raise ctx.error(f"a box through .{mode} is not modelled (only .tile boxes are placed by their "
                        f"coordinates): declare '{taddr.base}' without box")
    if tmap.strides is None and len(coords) > 1:
        raise ctx.error(f"'{taddr.base}' declares a box but no strides: give one stride in bytes per coordinate "
                        f"(strides: [{', '.join(['BYTES'] * len(coords))}])")
    strides = tmap.strides or (tmap.box,)
    if len(strides) != len(coords):
        raise ctx.error(f"'{taddr.base}' declares {len(strides)} strides for {len(coords)} coordinates")
    return sum(c * st for c, st in zip(coords, strides)), tmap.box


def _buffers(b: Builder, t: int, per_index: dict[int, list[int]], tmap) -> None:
    """tbuf from the map read t to the buffer accesses; tsel is computed once every write of the
    map exists (_select)."""
    todo = b.finalize("tensor", _select).setdefault("maps", [])
    for evs in per_index.values():
        b.pairs["tbuf"].update((t, e) for e in evs)
    todo.append((b.events[t].loc, per_index))


def _select(b: Builder) -> None:
    """tsel: from each write of a tensor map to the buffer accesses its value selects; a value that
    is not a constant may select any buffer."""
    for loc, per_index in b.ext["tensor"]["maps"]:
        for w in b.events:
            if w.kind != "W" or w.loc != loc:
                continue
            v = b.write_value[w.eid]
            picked = [per_index.get(v.value, [])] if isinstance(v, Const) else list(per_index.values())
            b.pairs["tsel"].update((w.eid, e) for evs in picked for e in evs)


def lower_tensor_load(b: Builder, ctx: ThreadCtx, i: Instr, dst: str) -> None:
    """A tensor load: the tensor-map read, a read of every buffer of the map's table, and the write
    of the selected buffer's data into [dst] (per destination CTA with .multicast::cluster), each
    write completed by its own complete-tx (the box's bytes) with the implicit proxy fence."""
    dst_space = dst
    dst, taddr, mb = i.operands[0], i.operands[1], i.operands[2]
    check_space(b, ctx, dst, dst_space, "destination")
    check_space(b, ctx, mb, "shared::cluster", "mbarrier")
    tmap = _tensor_map(b, ctx, taddr)
    off, box = _box(ctx, tmap, taddr)
    targets = multicast_targets(b, ctx, cta_mask(i), dst, mb)
    start = issue(b, ctx, i)
    t = b.read(ctx, {"TMAP", "WEAK", "ASRC"}, Addr(taddr.base), in_po=False,
               label=label(i, f"tensormap read {taddr.base}"))
    reads = {}
    for k, buf in sorted(tmap.tensormap.items()):
        reads[k] = b.read(ctx, {"ASYNC", "WEAK", "ASRC"}, Addr(buf, off), in_po=False,
                          label=label(i, f"async read {buf} (if {taddr.base}={k})"), size=box, align=0)
    value: Expr = Const(-1)
    for k, r in sorted(reads.items(), reverse=True):
        value = Ite("==", ReadVal(t), Const(k), ReadVal(r), value)
    writes = []
    for d, m in targets:        # .multicast::cluster: one write and complete-tx per destination CTA
        w = b.write(ctx, {"ASYNC", "WEAK", "ADST"}, d, value, in_po=False, label=label(i, f"async write {d.base}"),
                    size=box, align=128)
        performed_by_owner(b, ctx, w, d)
        writes.append(w)
        complete_tx(b, ctx, i, start, m, CELL if box is None else box, [t, *reads.values(), w], proxy_fence=True)
    order(b, start, [t], list(reads.values()), writes)
    _buffers(b, t, {k: [r] for k, r in reads.items()}, tmap)
    _state(ctx).uncommitted.append(BulkOp([t, *reads.values(), *writes], [t, *reads.values()], full=False))


def lower_tensor_store(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """A tensor store (cp.async.bulk.tensor) or reduction (cp.reduce.async.bulk.tensor, its .redOp)
    from [src] through the tensor map: every buffer of the map's table is accessed, and only the
    one the map's value selects changes."""
    op = i.quals.get("op")
    taddr, src = i.operands[0], i.operands[1]
    check_space(b, ctx, src, "shared::cta", "source")
    tmap = _tensor_map(b, ctx, taddr)
    off, box = _box(ctx, tmap, taddr)
    start = issue(b, ctx, i)
    t = b.read(ctx, {"TMAP", "WEAK", "ASRC"}, Addr(taddr.base), in_po=False,
               label=label(i, f"tensormap read {taddr.base}"))
    rs = b.read(ctx, {"ASYNC", "WEAK", "ASRC"}, src, in_po=False, label=label(i, f"async read {src.base}"),
                size=box, align=128)
    per_index, firsts, lasts = {}, [], []
    for k, buf in sorted(tmap.tensormap.items()):
        if op is None:
            old = b.read(ctx, {"ASYNC", "WEAK"}, Addr(buf, off), in_po=False,
                         label=label(i, f"async read {buf} (kept unless {taddr.base}={k})"), size=box, align=0)
            new = Ite("==", ReadVal(t), Const(k), ReadVal(rs), ReadVal(old))
            w = b.write(ctx, {"ASYNC", "WEAK", "ADST"}, Addr(buf, off), new, in_po=False,
                        label=label(i, f"async write {buf} (if {taddr.base}={k})"), size=box, align=0)
        else:
            if box is not None:
                raise ctx.error("a tensor reduction over a declared box is not modelled (its element type is not "
                                "known): declare the map without box")
            (old,), (w,) = _reduction(b, ctx, i, op, Addr(buf), ReadVal(rs), keep=(ReadVal(t), Const(k)))
        per_index[k] = [old, w]
        firsts.append(old)
        lasts.append(w)
    order(b, start, [t], [rs], firsts, lasts)
    _buffers(b, t, per_index, tmap)
    ops = [t, rs, *firsts, *lasts]
    _state(ctx).uncommitted.append(BulkOp(ops, [t, rs], full=True))


def lower_commit(b: Builder, ctx: ThreadCtx, i: Instr, kind: str = "bulk") -> None:
    st = _state(ctx, kind)
    st.groups.append(st.uncommitted)
    if kind == "cpasync":
        writes = [e for op in st.uncommitted for e in op.events if b.events[e].kind == "W"]
        b.pairs["sgrp"].update((a, c) for a in writes for c in writes if a != c)
    st.uncommitted = []


def lower_wait(b: Builder, ctx: ThreadCtx, i: Instr, kind: str = "bulk") -> None:
    st = _state(ctx, kind)
    n = i.operands[0].value if i.operands else 0
    if n < 0:
        raise ctx.error("wait_group takes a non-negative count")
    read_only = bool(i.quals.get("read"))
    done = st.groups[:max(0, len(st.groups) - n)]
    covered = [e for group in done for op in group
               for e in (op.reads if read_only or not op.full else op.events)]
    if kind == "cpasync":
        # cp.async is a generic-proxy copy: its wait is no proxy fence
        wait = b.new_event(ctx, "C", set(), label=label(i, "completion"))
        b.pairs["acomp"].update((e, wait) for e in covered)
        return
    # The wait: the implicit generic-async proxy fence that follows completion (A9), for
    # exactly the operations it completes.
    wait = b.new_event(ctx, "C", {"PF_ASYNC", "PF_TMAP"}, label=label(i, "completion + implicit proxy fence"))
    b.pairs["acomp"].update((e, wait) for e in covered)
    b.pairs["mbgroup"].update((e, wait) for group in done for op in group if not op.full for e in op.reads)
    restrict(b, wait, "events", tuple(covered))


def _ignore_src(ctx: ThreadCtx, reg: Reg) -> bool:
    """Whether cp.async's register operand is ignore-src (a predicate: set by a .pred instruction,
    or negated) rather than src-size (a typed integer); an untyped register says neither."""
    if reg.name.startswith("!"):
        return True
    bits = ctx.formats.get(reg.name, (None, "int"))[0]
    if bits is None:
        raise ctx.error(f"cp.async's operand '{reg.name}' is ignore-src if it is a predicate, src-size if it is "
                        "an integer: set it with a typed mov (mov.pred p, 1 or mov.u32 r, 8)")
    return bits == 1


def lower_cp_async(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cp.async: a weak generic read of src-size bytes at [src] (cp-size without src-size) and a
    write of cp-size bytes at [dst] -- the bytes read, then zeros -- after the issue, in the
    thread's current cp.async group. src-size 0 writes zeros without reading; ignore-src (a
    predicate): zeros when it is true."""
    q = i.quals
    dst, src = i.operands[0], i.operands[1]
    size = i.operands[2].value
    check_space(b, ctx, dst, "shared::cta", "destination")
    check_space(b, ctx, src, "global", "source")
    extra = i.operands[3] if len(i.operands) > 3 + bool(q["hint"]) else None
    read_size = size
    if isinstance(extra, Reg) and not _ignore_src(ctx, extra):
        known = b.value(ctx, extra)
        if not isinstance(known, Const):
            raise ctx.error(f"src-size '{extra.name}' is not a known number: ptxmc needs the bytes a cp.async "
                            "reads (write it as an immediate, or mov an immediate into the register)")
        if not 0 <= known.value <= size:
            raise ctx.error(f"src-size {known.value} must be at most cp-size ({size}): larger is undefined behaviour")
        extra = Imm(known.value)
    if isinstance(extra, Imm):
        read_size = extra.value
    start = issue(b, ctx, i)
    if read_size == 0:
        ops = []
        value: Expr = Const(0)
    else:
        r = b.read(ctx, {"GEN", "WEAK", "ASRC"}, src, in_po=False, label=label(i, f"async read {src.base}"),
                   size=read_size, align=size)
        ops, value = [r], ReadVal(r)
        if isinstance(extra, Reg):
            cond = b.value(ctx, Reg(extra.name.lstrip("!")))
            value = Ite("==", cond, Const(0), value, Const(0)) if not extra.name.startswith("!") else \
                Ite("==", cond, Const(0), Const(0), value)
    w = b.write(ctx, {"GEN", "WEAK", "ADST"}, dst, value, in_po=False, label=label(i, f"async write {dst.base}"),
                size=size)
    order(b, start, ops, [w])
    op = BulkOp(ops + [w], ops, full=True)
    st = _state(ctx, "cpasync")
    st.uncommitted.append(op)
    st.every.append(op)


def lower_cp_async_arrive(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cp.async.mbarrier.arrive{.noinc}: without .noinc, the pending count is raised by one now (an
    RMW in program order); then an async arrive-on, ordered after every earlier cp.async of the
    thread and after nothing else, releases them (ACOMPL, .release.cta)."""
    mb = i.operands[0]
    mb_location(b, ctx, mb)
    check_space(b, ctx, mb, "shared::cta", "mbarrier")
    mb_objects(b).add(b.roots[mb.base])
    if i.quals["noinc"]:
        first = issue(b, ctx, i)
        after = [first]
    else:
        r0, w0 = mb_rmw(b, ctx, mb, {"STRONG", "RLX", "CTA"}, {"STRONG", "RLX", "CTA"},
                         lambda v: mb_update(v, arrive=Const(-1)), what="pending count + 1")
        after = [r0, w0]
        record_increment(b, ctx, w0)
    tags = {"STRONG", "CTA", "ACOMPL"}
    r, w = mb_rmw(b, ctx, mb, tags, tags | {"REL"}, lambda v: mb_update(v, arrive=Const(1)), in_po=False,
                   what="async arrive-on")
    record_arrive(b, r, w, paired=not i.quals["noinc"])
    b.pairs["aso"].update((a, e) for a in after for e in (r, w))
    b.pairs["acomp"].update((e, w) for op in _state(ctx, "cpasync").every for e in op.events)


def lower_async_store(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """st.async / red.async: an asynchronous generic write (red.async: an atomic RMW) that is not in
    program order, after its issue; with an mbarrier, into another CTA's shared memory with a
    complete-tx of the bytes written (.release.cluster for its own write only, A7); without, a
    .release store / reduction to global memory at .gpu or .sys."""
    rmw = i.op == "red"
    q = i.quals
    nbytes = TYPE_BYTES[q["type"]]
    dst, val = i.operands[0], b.value(ctx, i.operands[1], 8 * nbytes, "float" if q["type"] in FLOAT_TYPES else "int")
    mbar = i.operands[2] if q["completion"] else None
    if mbar is not None:
        check_space(b, ctx, dst, "remote", "destination")
        check_space(b, ctx, mbar, "shared::cluster", "mbarrier")
        if decl(b, mbar.base).owner.cta_key() != decl(b, dst.base).owner.cta_key():
            raise ctx.error(f"the mbarrier '{mbar.base}' must be in the CTA of the destination '{dst.base}'")
        strength = {"STRONG", "RLX", "CLUSTER"} if rmw else {"WEAK"}
    else:
        check_space(b, ctx, dst, "global", "destination")
        strength = {"STRONG", "REL", SCOPE_TAG[q["scope"]]} | ({"MMIO", "RLX"} if q["mmio"] else set())
    start = issue(b, ctx, i)
    ops = []
    if rmw:
        base = (strength - {"REL"}) | {"GEN", "ATOM", "RED"}
        r = b.read(ctx, base, dst, in_po=False, label=label(i, f"async reduce {dst.base}: read"), size=nbytes)
        w = b.write(ctx, base | strength | ({"ADST"} if mbar is not None else set()), dst,
                    atom_value(q["op"], ReadVal(r), [val], 8 * nbytes, q["type"] in SIGNED_TYPES), in_po=False,
                    label=label(i, f"async reduce {dst.base}: write"), size=nbytes)
        b.pairs["rmw"].add((r, w))
        ops = [r, w]
    else:
        w = b.write(ctx, strength | {"GEN"} | ({"ADST"} if mbar is not None else set()), dst, val, in_po=False,
                    label=label(i, f"async write {dst.base}"), size=nbytes)
        ops = [w]
    for e in ops:
        performed_by_owner(b, ctx, e, dst)
    order(b, start, *([e] for e in ops))
    if mbar is not None:
        complete_tx(b, ctx, i, start, mbar, nbytes, ops, proxy_fence=False)


def lower_wait_all(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cp.async.wait_all is cp.async.commit_group; cp.async.wait_group 0."""
    lower_commit(b, ctx, i, "cpasync")
    lower_wait(b, ctx, i, "cpasync")


# -- the families ----------------------------------------------------------------------------

FAMILIES = (
    # -- non-bulk copies and their groups
    Family("cp.async",
           groups=(Group("cache", ("ca", "cg"), required=True), Group("dst", ("shared", "shared::cta"), required=True),
                   Group("src", ("global",), required=True), _HINT,
                   Group("prefetch", ("L2::64B", "L2::128B", "L2::256B"))),
           operands=_cp_async_operands, rules=(_cp_async_form,), lower=lower_cp_async,
           rejects={"shared::cluster": "cp.async copies into the executing CTA's shared memory (.shared or .shared::cta)",
                    "bulk_group": "a bulk copy is written cp.async.bulk.DST.SRC..."}),
    Family("cp.async.commit_group", lower=partial(lower_commit, kind="cpasync")),
    Family("cp.async.wait_group", operands=sig("n:imm", n="the number of most recent groups that may stay pending"),
           lower=partial(lower_wait, kind="cpasync")),
    Family("cp.async.wait_all", lower=lower_wait_all),
    Family("cp.async.mbarrier.arrive", groups=(Group("noinc", ("noinc",)), MB_LOCAL, B64),
           operands=sig("mbar:addr", mbar="the mbarrier"), space="space", lower=lower_cp_async_arrive),
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
    Family("cp.async.bulk.commit_group", lower=lower_commit),
    Family("cp.async.bulk.wait_group", groups=(Group("read", ("read",)),),
           operands=sig("n:imm", n="the number of most recent groups that may stay pending"), lower=lower_wait),
    # -- st.async / red.async
    Family("st.async",
           groups=(Group("mmio", ("mmio",)), Group("sem", ("weak", "release")), Group("scope", SCOPES),
                   Group("ss", ("shared::cluster", "global")), Group("completion", ("mbarrier::complete_tx::bytes",)),
                   Group("type", tuple(TYPE_BYTES), required=True)),
           operands=_async_store_operands, rules=(_async_store_form("st.async", "weak"),), rejects=_VEC, space="ss",
           lower=lower_async_store),
    Family("red.async",
           groups=(Group("mmio", ("mmio",)), Group("sem", ("relaxed", "release")), Group("scope", SCOPES),
                   Group("ss", ("shared::cluster", "global")), Group("completion", ("mbarrier::complete_tx::bytes",)),
                   Group("op", RED_OPS, required=True), Group("type", ("u32", "s32", "u64", "b32", "b64"), required=True)),
           operands=_async_store_operands, rules=(_async_store_form("red.async", "relaxed"), _red_async_op),
           space="ss", lower=lower_async_store),
)
