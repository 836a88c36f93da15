"""The registry of base sets and relations the engines provide to a cat model.

This is the Python side of the contract whose other side is the glossary at the top of
axioms/ptx.cat; tests/test_glossary.py keeps the two in step. Static names are computed by
checker.lower; dynamic ones (DYNAMIC) are chosen by the engines.
"""
from __future__ import annotations

SETS: dict[str, str] = {
    "R": "reads, including the read half of atom/red",
    "W": "writes, including the write half of atom/red and the initial writes",
    "F": "memory fences (fence, membar)",
    "B": "execution barriers (bar/barrier, bar.warp.sync)",
    "INIT": "the initial writes, one per physical location",
    "STRONG": "strong operations: non-weak memory operations and memory fences",
    "WEAK": "weak memory operations (.weak, the default of ld/st)",
    "RLX": "operations marked .relaxed (and .volatile/.mmio, which are relaxed)",
    "ACQ": "acquire operations: ld.acquire, the read of atom.acquire/.acq_rel, fence.acquire",
    "REL": "release operations: st.release, the write of atom/red.release/.acq_rel, fence.release",
    "ACQ_REL": "fence.acq_rel",
    "SC": "fence.sc and membar",
    "VOL": ".volatile accesses",
    "MMIO": ".mmio accesses",
    "ATOM": "both halves of atom and red",
    "RED": "both halves of red (a reduction returns no value)",
    "CTA": "strong operations with .cta scope",
    "CLUSTER": "strong operations with .cluster scope",
    "GPU": "strong operations with .gpu scope",
    "SYS": "strong operations with .sys scope",
    "GEN": "operations of the generic proxy (memory fences count as generic, A3)",
    "GLOBAL": "memory operations on .global locations",
    "SHARED": "memory operations on .shared locations",
    "BAR_SYNC": "bar.sync / barrier.sync",
    "BAR_ARRIVE": "bar.arrive / barrier.arrive",
    "BAR_RED": "bar.red / barrier.red",
    "BAR_WARP": "bar.warp.sync",
    "ASYNC": "operations of the async proxy: the data reads and writes of cp.async.bulk{.tensor}",
    "TMAP": "operations of the tensormap proxy: the tensor-map read of cp.async.bulk.tensor",
    "TEX": "operations of the texture proxy: tld (ISCA'22 hypothetical, A11)",
    "SUR": "operations of the surface proxy: suld, sust (ISCA'22 hypothetical, A11)",
    "CON": "operations of the constant proxy: ldc (ISCA'22 hypothetical, A11)",
    "PF_ALIAS": "alias proxy fences: fence.proxy.alias, membar.proxy.alias, fence.proxy.alias.{release,acquire}.sys",
    "PF_ASYNC": "proxy fences between the generic and the async proxy: fence.proxy.async{.space}, fence.proxy.async::generic.*, and the implicit fence of a completed bulk copy (the wait that observes it, A9)",
    "PF_TMAP": "proxy fences from the generic to the tensormap proxy: fence.proxy.tensormap::generic.*, the fence of tensormap.cp_fenceproxy, and the implicit fence of a completed bulk copy (A9)",
    "PF_TEX": "fence.proxy.texture (ISCA'22 hypothetical, A11)",
    "PF_SUR": "fence.proxy.surface (ISCA'22 hypothetical, A11)",
    "PF_CON": "fence.proxy.constant (ISCA'22 hypothetical, A11)",
    "PF_UNI": "uni-directional proxy fences (to_proxy::from_proxy forms): they order the generic proxy before their proxy, not back",
    "PF_READ": "fence.proxy.async::generic.release.sync_restrict::shared::cluster::read: orders reads only, and is not cumulative",
}

RELATIONS: dict[str, str] = {
    "po": "program order: per thread, strict and total on its own events (not on the memory operations of asynchronous instructions, A8)",
    "rmw": "from the read to the write of one atom/red",
    "dep": "data dependencies, and control dependencies from an await to every later event",
    "loc": "same physical location (memory events; reflexive)",
    "vloc": "same virtual address (memory events; reflexive)",
    "sthd": "same thread (reflexive)",
    "swarp": "same warp (reflexive)",
    "scta": "same CTA (reflexive)",
    "scluster": "same cluster (reflexive; without clusters a CTA is its own cluster)",
    "sgpu": "same GPU (reflexive)",
    "syncbar": "bar instance synchronization: from each participant to the others' sync/red",
    "syncwarp": "bar.warp.sync instance synchronization between the lanes of the mask",
    "pscta": "same performing CTA (reflexive): as scta, except that an async-proxy write into another CTA's shared memory is performed by the CTA that owns that memory (A2)",
    "aso": "async order: from the issue point of an asynchronous instruction to each of its memory operations, and among those in order (tensor-map read, source reads, destination writes)",
    "acomp": "completion: from each memory operation of a bulk async-group to the cp.async.bulk.wait_group that completes it (.read, and copies completed by an mbarrier: their reads only)",
    "pfcover": "from a proxy fence to the memory operations its restriction covers: all, those of its state space (.global; .shared::cta of its own CTA; .shared::cluster), those at its address operand, or (a bulk wait_group) those it completes",
    "rf": "reads-from (dynamic)",
    "co": "coherence order candidate (dynamic): a strict partial order per physical location, initial write first",
    "fsc": "fence-SC order candidate (dynamic): a strict partial order on fence.sc events",
}

DYNAMIC = frozenset({"rf", "co", "fsc"})


def glossary_names() -> dict[str, str]:
    """Every base name with its kind ('set' or 'rel')."""
    out = {n: "set" for n in SETS}
    out.update({n: "rel" for n in RELATIONS})
    return out
