"""The registry of base sets and relations the engines provide to a cat model.

This is the Python side of the contract whose other side is the glossary at the top of
axioms/ptx.cat; tests/test_glossary.py keeps the two in step. Static names are computed by
the instruction families (checker.isa); dynamic ones (DYNAMIC) are chosen by the engines.
"""
from __future__ import annotations

SETS: dict[str, str] = {
    "R": "reads, including the read half of atom/red",
    "W": "writes, including the write half of atom/red and the initial writes",
    "F": "memory fences (fence, membar)",
    "B": "execution barriers (bar/barrier, bar.warp.sync, barrier.cluster)",
    "INIT": "the initial writes, one per physical location",
    "STRONG": "strong operations: non-weak memory operations, memory fences, and barrier.cluster arrive/wait (A6)",
    "WEAK": "weak memory operations (.weak, the default of ld/st)",
    "RLX": "operations marked .relaxed (and .volatile/.mmio, which are relaxed)",
    "ACQ": "acquire operations: ld.acquire, the read of atom.acquire/.acq_rel, fence.acquire",
    "REL": "release operations: st.release, the write of atom/red.release/.acq_rel, fence.release",
    "ACQ_REL": "fence.acq_rel",
    "SC": "fence.sc and membar",
    "VOL": ".volatile accesses",
    "MMIO": ".mmio accesses",
    "ATOM": "both halves of atom and red, and of the reductions of red.async and cp.reduce.async.bulk{.tensor}",
    "RED": "both halves of red, red.async and cp.reduce.async.bulk{.tensor} (a reduction returns no value)",
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
    "ASYNC": "operations of the async proxy: the data reads and writes of cp{.reduce}.async.bulk{.tensor}",
    "TMAP": "operations of the tensormap proxy: the tensor-map read of cp.async.bulk.tensor",
    "TEX": "operations of the texture proxy: tld (ISCA'22 hypothetical, A11)",
    "SUR": "operations of the surface proxy: suld, sust (ISCA'22 hypothetical, A11)",
    "CON": "operations of the constant proxy: ldc (ISCA'22 hypothetical, A11)",
    "PF_ALIAS": "alias proxy fences: fence.proxy.alias, membar.proxy.alias, fence.proxy.alias.{release,acquire}.sys",
    "PF_ASYNC": "proxy fences between the generic and the async proxy: fence.proxy.async{.space}, fence.proxy.async::generic.*, the implicit fence of a completed bulk copy (its bulk wait_group, or its complete-tx, A9), and wgmma.wait_group (the implicit fence of wgmma completion, A9)",
    "PF_TMAP": "proxy fences from the generic to the tensormap proxy: fence.proxy.tensormap::generic.*, the fence of tensormap.cp_fenceproxy, and the implicit fence of a completed bulk copy (A9)",
    "PF_TEX": "fence.proxy.texture (ISCA'22 hypothetical, A11)",
    "PF_SUR": "fence.proxy.surface (ISCA'22 hypothetical, A11)",
    "PF_CON": "fence.proxy.constant (ISCA'22 hypothetical, A11)",
    "PF_UNI": "uni-directional proxy fences (to_proxy::from_proxy forms): they order the generic proxy before their proxy, not back",
    "PF_READ": "fence.proxy.async::generic.release.sync_restrict::shared::cluster::read: orders reads only, and is not cumulative",
    "RESTRICT": "restricted release/acquire fences (A10): fence.{release,acquire}.sync_restrict, the .sync_restrict fence.proxy.async::generic forms, fence.mbarrier_init; they order only the operations they pfcover",
    "MB": "memory operations on mbarrier objects: every mbarrier instruction, complete-tx, the arrive-on of cp.async.mbarrier.arrive and of tcgen05.commit, and the initial write of a pre-initialised mbarrier",
    "MB_INIT": "mbarrier.init, and the initial write of a pre-initialised mbarrier",
    "MB_INVAL": "mbarrier.inval",
    "ACOMPL": "completion signals of asynchronous instructions: the complete-tx of cp{.reduce}.async.bulk{.tensor}, st.async and red.async, the arrive-on of cp.async.mbarrier.arrive and of tcgen05.commit; each releases only its own instruction's memory operations (A8)",
    "ASRC": "source and tensor-map reads of asynchronous instructions (modifying them in flight is undefined)",
    "ADST": "destination writes of asynchronous instructions that complete (reading them in flight is undefined)",
    "CLU_ARRIVE": "barrier.cluster.arrive",
    "CLU_WAIT": "barrier.cluster.wait",
    "TMEM": "memory operations on Tensor Memory (space: tensor): the accesses of tcgen05.mma, .cp, .ld, .st and tcgen05.dealloc; no proxy, no strength (T2)",
    "TC_SYNC": "synchronous tcgen05 instructions, in program order: tcgen05.fence::*, tcgen05.wait::*, the issue of tcgen05.commit, alloc, dealloc, relinquish_alloc_permit",
    "TC_BEFORE": "tcgen05.fence::before_thread_sync",
    "TC_AFTER": "tcgen05.fence::after_thread_sync",
    "WG_NOFENCE": "issues of wgmma.mma_async without the wgmma.fence the PTX ISA requires before them (undefined behaviour)",
    "REG_HAZARD": "issues of wgmma.mma_async and tcgen05.ld whose registers a later instruction accesses before the wait that completes them (undefined behaviour)",
}

RELATIONS: dict[str, str] = {
    "po": "program order: per thread, strict and total on its own events (not on the memory operations of asynchronous instructions, A8)",
    "rmw": "from the read to the write of one atom/red",
    "dep": "data dependencies, and control dependencies from an await to every later event",
    "ctrl": "control dependencies: from the reads a branch's or a guard's predicate depends on to every later event of the thread (also in dep)",
    "loc": "same physical location (memory events; reflexive): the same atom, the bytes no access boundary cuts",
    "vloc": "same virtual address (memory events; reflexive): the same atom through the same name",
    "sa": "same access (memory events; reflexive): the atoms of one access that covers several",
    "srange": "same bytes (memory events; reflexive): accesses that cover exactly the same bytes of a location (complete overlap)",
    "sthd": "same thread (reflexive)",
    "swarp": "same warp (reflexive)",
    "scta": "same CTA (reflexive)",
    "scluster": "same cluster (reflexive; without clusters a CTA is its own cluster)",
    "sgpu": "same GPU (reflexive)",
    "syncbar": "bar generation synchronization: from each arrival of a generation to the other members' sync/red (which arrivals form a generation: A19)",
    "syncwarp": "bar.warp.sync generation synchronization between the lanes of the mask that arrive (A19)",
    "kbo": "kernel boundary order (A17): from every event of a kernel (its asynchronous memory operations included) to the program-ordered events of every later kernel of the stream (of a PDL launch: those after its thread's griddepcontrol.wait)",
    "pscta": "same performing CTA (reflexive): as scta, except that an asynchronous access to another CTA's shared memory (a .shared::cluster copy or reduction, st.async, red.async, a complete-tx on that CTA's mbarrier) is performed by the CTA that owns that memory (A2)",
    "aso": "async order: from the issue point of an asynchronous instruction to each of its memory operations and its completion signal, and among the memory operations in order (tensor-map read, source reads, destination writes); for wgmma.mma_async, not ordered after its issue (A8), from the thread's earlier wgmma.fence and async proxy fences (T1), and for asynchronous tcgen05 instructions from the thread's earlier tcgen05.fence::after_thread_sync (T3)",
    "acomp": "completion: from each memory operation of an asynchronous instruction to what completes it: the cp.async.wait_group / cp.async.bulk.wait_group of its group (.read, and bulk copies completed by an mbarrier: reads only), its own complete-tx, the arrive-on of a later cp.async.mbarrier.arrive or tcgen05.commit (mma, cp), the wgmma.wait_group of its wgmma-group, or the next tcgen05.wait::ld / wait::st (ld, st)",
    "mbgroup": "bulk-group completion of mbarrier copies: from the source and tensor-map reads of a cp.async.bulk{.tensor} that completes through an mbarrier to the cp.async.bulk.wait_group whose group it joined (a subset of acomp; option bulk-group-only drops it)",
    "pfcover": "from a proxy fence or restricted fence to the memory operations its restriction covers: all, those of its state space (.global; .shared::cta of its own CTA; .shared::cluster), those at its address operand, those it completes (a bulk wait_group, a bulk complete-tx, a wgmma.wait_group), or the thread's earlier mbarrier.init (fence.mbarrier_init)",
    "clusterbar": "barrier.cluster generation: from each thread's arrive to the other threads' wait of the same generation in its cluster (A19)",
    "sgrp": "same cp.async group: between the destination writes of two cp.async committed in one group",
    "tbuf": "from the tensor-map read of a tensor copy to its accesses of the map's buffers",
    "tsel": "from a write of a tensor map to the buffer accesses its value selects (all of them when the value is not a constant)",
    "tcissue": "from the issue event of an asynchronous tcgen05 instruction (mma, cp, ld, st) to each of its operations",
    "tcpipe": "pipelined tcgen05 pairs of one CTA, between issue events: mma -> mma with the same accumulator and shape, cp -> mma (ordered when issued in that order)",
    "rf": "reads-from (dynamic)",
    "co": "coherence order candidate (dynamic): a strict partial order per physical location, initial write first",
    "fsc": "fence-SC order candidate (dynamic): a strict partial order on fence.sc events",
}

# Sets whose members depend on the values of an execution: each member is a write whose value
# makes it one (EventStructure.value_sets); the engines compute them per execution.
VALUE_SETS: dict[str, str] = {
    "MB_RANGE": "writes of an mbarrier state with a field outside the range PTX gives it: a tx-count beyond "
                "+-(2^20-1), a pending arrival count below 0 or above 2^20-1, an expected count below 0, or an "
                "arrival count operand outside 1..2^20-1 (undefined behaviour, A7) (dynamic)",
}

DYNAMIC = frozenset({"rf", "co", "fsc", *VALUE_SETS})


def glossary_names() -> dict[str, str]:
    """Every base name with its kind ('set' or 'rel')."""
    out = {n: "set" for n in (*SETS, *VALUE_SETS)}
    out.update({n: "rel" for n in RELATIONS})
    return out
