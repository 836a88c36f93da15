"""Special registers (PTX ISA 9.4, "Special Registers"): %tid, %laneid, %ctaid, %clusterid,
%cluster_ctaid, %cluster_ctarank, ... read with `mov`, given their values from the thread's
position in the test (docs/format.md#special-registers).

A litmus thread's lane is its index among the litmus threads the test places in the same warp
(declaration order, as bar.warp.sync counts lanes); a CTA and a cluster are one-dimensional
(.y and .z read 0). Registers the test does not determine (%ntid, %nctaid, %warpid, which the
ISA calls volatile, %smid, %clock, ...) are refused when their value is used; %ctaid in a launch
with clusters is refused too (the cluster's shape is not part of the test).
"""
from __future__ import annotations

from ..ast import LitmusTest, Thread

_DIMS = ("x", "y", "z")
NAMES = frozenset({"tid", "ntid", "laneid", "warpid", "nwarpid", "ctaid", "nctaid", "smid", "nsmid", "gridid",
                   "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank",
                   "cluster_nctarank", "is_explicit_cluster", "lanemask_eq", "lanemask_le", "lanemask_lt",
                   "lanemask_ge", "lanemask_gt", "clock", "clock64", "globaltimer", "dynamic_smem_size",
                   "total_smem_size", "aggr_smem_size"})
_VECTOR = frozenset({"tid", "ntid", "ctaid", "nctaid", "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid"})


def name_is_vector(base: str) -> bool:
    """Whether special register %base has .x/.y/.z components."""
    return base in _VECTOR


def operand_name(text: str) -> str | None:
    """The canonical name ('%tid.x') of special-register operand text, or None."""
    if not text.startswith("%"):
        return None
    base, _, dim = text[1:].partition(".")
    if base not in NAMES or (dim and (base not in _VECTOR or dim not in _DIMS)):
        return None
    if base in _VECTOR and not dim:
        return None
    return "%" + text[1:]


def lane(test: LitmusTest, thread: Thread) -> int:
    """The litmus thread's lane: its index among the test's threads in the same warp."""
    return [t.name for t in test.threads if t.position == thread.position].index(thread.name)


def value(name: str, test: LitmusTest, thread: Thread) -> int | str:
    """The value of special register `name` for `thread`, or why the test does not determine it."""
    base, _, dim = name[1:].partition(".")
    pos = thread.position
    if dim in ("y", "z"):
        return 0 if base in ("tid", "ctaid", "clusterid", "cluster_ctaid") else _unknown(name)
    per_lane = base in ("tid", "laneid") or base.startswith("lanemask")
    if per_lane and test.threads_per_litmus_thread != 1:
        return (f"no single value: each litmus thread stands for {test.threads_per_litmus_thread} PTX threads "
                "(threads_per_litmus_thread), so its lane is not one number")
    if base == "laneid":
        return lane(test, thread)
    if base == "tid":
        return 32 * pos.warp + lane(test, thread)
    if base.startswith("lanemask"):
        k = lane(test, thread)
        full = (1 << 32) - 1
        return {"eq": 1 << k, "lt": (1 << k) - 1, "le": (1 << (k + 1)) - 1,
                "ge": full & ~((1 << k) - 1), "gt": full & ~((1 << (k + 1)) - 1)}[base.split("_")[1]]
    if base == "cluster_ctarank" or base == "cluster_ctaid":
        return pos.cta if pos.cluster is not None else 0
    if base == "clusterid":
        return pos.cluster if pos.cluster is not None else pos.cta
    if base == "is_explicit_cluster":
        return int(pos.cluster is not None)
    if base == "ctaid":
        if pos.cluster is not None:
            return ("a value that depends on the cluster's shape in a launch with clusters, which the test does not "
                    "give: use %cluster_ctarank and %clusterid.x")
        return pos.cta
    if base == "warpid":
        return "a volatile value (the PTX ISA: %warpid may change during execution): use %tid.x / 32"
    return _unknown(name)


def _unknown(name: str) -> str:
    return "a value the test does not determine (ptxmc knows positions, not launch sizes or clocks)"


def registers(test: LitmusTest, thread: Thread) -> dict[str, object]:
    """The special registers `thread`'s code reads, as register values for the Builder (a Const,
    or an Unmodelled value that explains itself where it is used)."""
    from ..ast import registers as regs_of
    from ..model.builder import Unmodelled
    from ..model.values import Const
    out: dict[str, object] = {}
    for i in thread.code:
        for r in regs_of(i):
            if r.startswith("%") and r not in out:
                v = value(r, test, thread)
                out[r] = Const(v) if isinstance(v, int) else Unmodelled(v)
    return out
