"""`ptxmc gen`: diy-style generation of litmus tests from cycles of edges (docs/gen.md).

A cycle is a sequence of edges between accesses; the test is the program whose threads perform
them and the condition that says the cycle is in the execution. Vocabulary (every name is
YAML-visible: test names, `source:`, index.tsv):

Structural edges (from an access to the next, R = read, W = write)
    PodWW PodWR PodRW PodRR   program order, different locations
    PosWW PosWR PosRW PosRR   program order, same location
    Rfe Fre Coe               reads-from, from-read, coherence, between threads
    Rfi Fri Coi               the same inside a thread (forward in program order)
    Families: Pod Pos Po Rf Fr Co ext int com.
Access annotations (one per access)
    weak | rlx.S | rel.S (writes) | acq.S (reads), S in cta cluster gpu sys   -> ld/st .sem.scope
    proxy gen | alias (through a virtual alias `xa` of `x`) | async (a bulk copy: write
    cp.async.bulk.global.shared::cta.bulk_group from a shared cell; read
    cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes into a shared cell) |
    tmap (a read of a tensor map by cp.async.bulk.tensor, which copies the buffer it selects).
    Families: rlx rel acq strong proxy.
Program-order separators (one per Pod/Pos edge)
    nofence | fence.sc.S | fence.acq_rel.S | fence.rel.S | fence.acq.S | fence.proxy.alias |
    fence.proxy.async | fence.tmap.rel.S | fence.tmap.acq.S (tensormap proxy fences);
    completion of an asynchronous access before the next one: nowait | wait_group (bulk
    commit_group + wait_group 0) | mbar_wait (mbarrier arrive.expect_tx before the copy,
    try_wait.parity after it). Families: fence fence.sc ... fence.proxy fence.tmap wait.
Placement of the threads of each external edge (--placement)
    warp (same warp) | cta (same CTA) | cluster (same cluster) | gpu (same GPU) | sys (other GPUs).

Names: FAMILY[+component per thread]+PLACEMENT, e.g. MP+po-rel.gpu+acq.gpu-po+sameGPU,
SB+fence.sc.gpus+sameCTA; docs/gen.md gives the grammar.

Modules: vocab (tokens, presets, selection), families (family names), cycles (enumeration up to
rotation, locations, values, condition), placement, annotate (annotated variants up to symmetry),
render (name, YAML text), count (counting without generating), generate (the pipeline), writer
(files, index, --expect-from-model), model_verdict (the checker call), cli.
"""
