"""PTX syntax of the asynchronous bulk copies that ptxmc models so far (issue 3's minimal subset,
to be extended by issue 4): cp.async.bulk in its four directions, the load directions of
cp.async.bulk.tensor, cp.async.bulk.commit_group and cp.async.bulk.wait_group{.read}.
Registered into checker.ptx.FAMILIES on import; their meaning is in checker.lower_async.

PTX ISA 9.4, "Data Movement and Conversion Instructions: cp.async.bulk / cp.async.bulk.tensor /
Bulk and Tensor copy completion instructions":

    cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes{.L2::cache_hint}     [dst], [src], size, [mbar]{, policy}
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]{, policy}
    cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes            [dst], [src], size, [mbar]
    cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}                        [dst], [src], size{, policy}
    cp.async.bulk.tensor.Nd.{shared::cta,shared::cluster}.global{.tile}.mbarrier::complete_tx::bytes{.cta_group::1}{.L2::cache_hint}
                                                                     [dst], [tmap, {c0, ...}], [mbar]{, policy}
    cp.async.bulk.commit_group
    cp.async.bulk.wait_group{.read} N

Not yet (issue 4): .multicast::cluster, .cp_mask, .cta_group::2, the im2col and gather/scatter
load modes, the tensor store direction (its destination depends on the map's value), the
.relaxed.scope forms (PTX 9.3), cp.reduce.async.bulk*, prefetch, and the complete-tx on the
mbarrier (an mbarrier operand is accepted and not yet acted on).
"""
from __future__ import annotations

from .ptx import Family, Group, Instr, Quals, register, sig

_ISSUE4 = "is not modelled yet (asynchronous completion, issue 4)"
_BULK_REJECTS = {
    "multicast::cluster": f".multicast::cluster {_ISSUE4}",
    "cp_mask": f".cp_mask {_ISSUE4}",
    **dict.fromkeys(("relaxed", "weak"), f"the .sem/.scope forms of cp.async.bulk {_ISSUE4}"),
    **dict.fromkeys(("cta", "cluster", "gpu", "sys", "b128"), f"the .sem/.scope forms of cp.async.bulk {_ISSUE4}"),
}
_HINT = Group("hint", ("L2::cache_hint",))
_MBAR = Group("completion", ("mbarrier::complete_tx::bytes",), required=True)
_BULKG = Group("completion", ("bulk_group",), required=True)

# (dst, src) -> does it complete through an mbarrier?
BULK_DIRECTIONS = {("shared::cta", "global"): True, ("shared::cluster", "global"): True,
                   ("shared::cluster", "shared::cta"): True, ("global", "shared::cta"): False}
TENSOR_LOADS = (("shared::cta", "global"), ("shared::cluster", "global"))


def _size(i: Instr, q: Quals):
    size = i.operands[2].value
    if size <= 0 or size % 16:
        return f"the size of a bulk copy is a positive multiple of 16 bytes, not {size}"
    return None


def _policy(slot: int):
    def rule(i: Instr, q: Quals):
        has = len(i.operands) > slot
        if has != bool(q.get("hint")):
            return "a cache-policy operand goes with .L2::cache_hint, and only with it"
        return None
    return rule


def _bulk(dst: str, src: str, mbar: bool) -> Family:
    ops = "dst:addr, src:addr, size:imm" + (", mbar:addr" if mbar else "") + ", policy:val?"
    slots = sig(ops, size="the size in bytes", mbar="the mbarrier")
    remote = ()
    if (dst, src) == ("shared::cluster", "shared::cta"):
        remote = (lambda i, q: "cp.async.bulk.shared::cluster.shared::cta takes no cache policy"
                  if q["hint"] else None,)
    return Family(f"cp.async.bulk.{dst}.{src}", groups=(_MBAR if mbar else _BULKG, _HINT),
                  operands=slots, rules=(_size, _policy(4 if mbar else 3)) + remote, rejects=_BULK_REJECTS)


def _tensor(dim: int, dst: str, src: str) -> Family:
    return Family(
        f"cp.async.bulk.tensor.{dim}d.{dst}.{src}",
        groups=(Group("load_mode", ("tile",), default="tile"), _MBAR, Group("cta_group", ("cta_group::1",)), _HINT),
        operands=sig("dst:addr, tmap:taddr, mbar:addr, policy:val?", tmap="the tensor map and coordinates",
                     mbar="the mbarrier"),
        rules=(_policy(3), _coords(dim)),
        rejects={**_BULK_REJECTS, "cta_group::2": f".cta_group::2 {_ISSUE4}",
                 **dict.fromkeys(("tile::gather4", "im2col", "im2col::w", "im2col::w::128"),
                                 f"this load mode {_ISSUE4}")})


def _coords(dim: int):
    def rule(i: Instr, q: Quals):
        n = len(i.operands[1].coords)
        if n != dim:
            return f"a {dim}d tensor copy takes {dim} coordinate{'s' if dim > 1 else ''}, not {n}"
        return None
    return rule


def _tensor_store(dim: int) -> Family:
    return Family(f"cp.async.bulk.tensor.{dim}d.global.shared::cta",
                  rules=(lambda i, q: f"the tensor store direction {_ISSUE4}: its destination buffer depends "
                                      "on the tensor map's value",),
                  groups=(Group("load_mode", ("tile",)), _BULKG, _HINT),
                  operands=sig("tmap:taddr, src:addr, policy:val?"))


register(
    Family("cp.async.bulk",
           rejects={**_BULK_REJECTS,
                    **dict.fromkeys(("shared::cta", "shared::cluster", "global", "shared"),
                                    "cp.async.bulk directions are .shared::cta.global, .shared::cluster.global, "
                                    ".shared::cluster.shared::cta and .global.shared::cta"),
                    "prefetch": f"cp.async.bulk.prefetch {_ISSUE4}"},
           # the bare prefix names no instruction (found by fuzzing: it used to pass validation)
           rules=(lambda i, q: "cp.async.bulk needs a direction: .shared::cta.global, .shared::cluster.global, "
                               ".shared::cluster.shared::cta or .global.shared::cta",)),
    *(_bulk(dst, src, mbar) for (dst, src), mbar in BULK_DIRECTIONS.items()),
    Family("cp.async.bulk.tensor",
           rejects={f"{d}d": "tensor copy directions are .shared::cta.global, .shared::cluster.global "
                              "(and .global.shared::cta, not modelled yet)" for d in range(1, 6)},
           rules=(lambda i, q: "cp.async.bulk.tensor needs a dimension and a direction, "
                               "e.g. cp.async.bulk.tensor.1d.shared::cluster.global",)),
    *(_tensor(d, dst, src) for d in range(1, 6) for dst, src in TENSOR_LOADS),
    *(_tensor_store(d) for d in range(1, 6)),
    Family("cp.async.bulk.commit_group"),
    Family("cp.async.bulk.wait_group", groups=(Group("read", ("read",)),),
           operands=sig("n:imm", n="the number of most recent groups that may stay pending")),
)
