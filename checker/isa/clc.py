"""clusterlaunchcontrol.try_cancel and query_cancel (PTX ISA 8.6, sm_100; "Parallel
Synchronization and Communication Instructions: clusterlaunchcontrol.try_cancel / query_cancel").

    clusterlaunchcontrol.try_cancel.async{.shared::cta}.mbarrier::complete_tx::bytes{.multicast::cluster::all}.b128 [addr], [mbar]
    clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, handle
    clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {x, y, z, _}, handle
    clusterlaunchcontrol.query_cancel.get_first_ctaid::{x,y,z}.b32.b128 r, handle

[addr] holds the 16-byte response (16-byte aligned); the handle is a register loaded from it
(ld.shared.b128 handle, [addr]).

- try_cancel is lowered like a bulk copy without a source: an issue event, a weak async-proxy
  write of the 16-byte response into the 16 bytes at [addr], performed by their CTA (A2) and
  followed by a complete-tx of 16 bytes (.release.cluster, ACOMPL) on [mbar]; with
  .multicast::cluster::all, one write and one complete-tx per CTA of the cluster, at the
  `offset_of` cells of [addr] and [mbar] there (every CTA of the test's cluster must have both).
  It joins no bulk group: only the mbarrier completes it. Reading the response before its
  completion is observed is undefined (ADST).
- Decision (A9 extended): the complete-tx carries the implicit generic-async proxy fence for the
  response write. The ISA states the implicit fence for bulk copies only, but its own try_cancel
  example reads the response with a generic ld.shared right after an .acquire try_wait and no
  proxy fence; without the implicit fence that read could be stale.
- Abstract response: the k-th try_cancel of the test (threads in order, then program order)
  writes the value k; the location's earlier value (its init, 0 by default) is what a read sees if no
  response reached it. query_cancel is a register operation on a value loaded with
  ld.shared.b128: is_canceled = (value != 0); get_first_ctaid gives x = the value, y = z = 0.
  Not modelled: the undefined behaviour of get_first_ctaid on a failed response, and of a
  try_cancel issued after a failure was observed (success is not a modelled outcome).
"""
from __future__ import annotations

from ..ast import Addr, Instr, Quals, cta_text
from ..model.builder import Builder, ThreadCtx
from ..model.values import Const, Ite
from .common import cells_in, check_space, cluster_ctas, issue, label, order, performed_by_owner
from .mbarrier import complete_tx
from .table import Family, Group, sig

RESPONSE_BYTES = 16     # the response of try_cancel
_MBAR = Group("completion", ("mbarrier::complete_tx::bytes",), required=True)
_OWN_SHARED = ("the operands of clusterlaunchcontrol.try_cancel are the executing CTA's own shared memory "
               "(.multicast::cluster::all reaches the other CTAs)")


def lower_try_cancel(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """clusterlaunchcontrol.try_cancel: an issue event, then a weak async-proxy write of the
    response into [addr] -- with .multicast::cluster::all into the location at [addr]'s offset in every
    CTA of the cluster -- each performed by its CTA (A2) and followed by its own complete-tx (16
    bytes, .release.cluster) on the mbarrier at [mbar]'s offset there, which completes that write
    and carries the implicit generic-async proxy fence for it (see the module docstring). The k-th
    try_cancel of the test (threads in order, then program order) writes the response value k."""
    q = i.quals
    addr, mbar = i.operands
    check_space(b, ctx, addr, "shared::cta", "response")
    check_space(b, ctx, mbar, "shared::cta", "mbarrier")
    k = b.ext["clc"] = b.ext.get("clc", 0) + 1
    targets = _cluster_targets(b, ctx, addr, mbar) if q["multicast"] else [(addr, mbar)]
    issue_event = issue(b, ctx, i)
    writes = []
    for d, mb in targets:
        w = b.write(ctx, {"ASYNC", "WEAK", "ADST"}, d, Const(k), in_po=False,
                    label=label(i, f"async write {d.base} (response {k})"), size=RESPONSE_BYTES)
        performed_by_owner(b, ctx, w, d)
        writes.append(w)
        complete_tx(b, ctx, i, issue_event, mb, RESPONSE_BYTES, [w], proxy_fence=True)
    order(b, issue_event, writes)


def _cluster_targets(b: Builder, ctx: ThreadCtx, *ops: Addr) -> list[tuple[Addr, ...]]:
    """.multicast::cluster::all: the cells at the offsets of `ops` in every CTA of the executing
    thread's cluster (the CTAs the test names: threads and shared-memory owners); a CTA without
    one is an error. In a launch without clusters the cluster is the executing CTA alone."""
    here = ctx.thread.position
    ours = [here.cta_key()] if here.cluster is None else cluster_ctas(b, here)
    return [cells_in(b, ctx, cta, ops, f".multicast::cluster::all reaches every CTA of the cluster, but "
                                        f"{cta_text(cta)}") for cta in ours]


def lower_query_cancel(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """clusterlaunchcontrol.query_cancel: a register operation on the response value (no memory
    access). is_canceled: 1 when the value is a response (non-zero), else 0. get_first_ctaid: the
    response value k is the x coordinate of the canceled cluster's first CTA, y and z are 0 (and
    the unspecified 4th element of .v4 too)."""
    q = i.quals
    dst, handle = i.operands
    v = b.value(ctx, handle)
    what = q["query"]
    if what == "is_canceled":
        b.set_reg(ctx, dst, Ite("==", v, Const(0), Const(0), Const(1)))
    elif what == "get_first_ctaid":
        for n, item in enumerate(dst.items):
            b.set_reg(ctx, item, v if n == 0 else Const(0))
    else:
        b.set_reg(ctx, dst, v if what.endswith("::x") else Const(0))


# -- the families ----------------------------------------------------------------------------

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


FAMILIES = (
    # -- clusterlaunchcontrol (PTX ISA 8.6, sm_100)
    Family("clusterlaunchcontrol",
           rules=(lambda i, q: "clusterlaunchcontrol is .try_cancel or .query_cancel",)),
    Family("clusterlaunchcontrol.try_cancel",
           groups=(Group("async", ("async",), required=True), Group("space", ("shared::cta",)), _MBAR,
                   Group("multicast", ("multicast::cluster::all",)), Group("type", ("b128",), required=True)),
           operands=sig("addr:addr, mbar:addr", addr="the response's address", mbar="the mbarrier"),
           rejects=_CLC_REJECTS, space="space", lower=lower_try_cancel, own_shared_only=_OWN_SHARED),
    Family("clusterlaunchcontrol.query_cancel",
           groups=(Group("query", ("is_canceled", "get_first_ctaid", "get_first_ctaid::x", "get_first_ctaid::y",
                                   "get_first_ctaid::z"), required=True),
                   Group("vec", ("v4",)), Group("rtype", ("pred", "b32"), required=True),
                   Group("type", ("b128",), required=True)),
           operands=_query_operands, rules=(_query_form,), lower=lower_query_cancel),
)
