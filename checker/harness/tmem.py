"""Tensor Memory in generated programs (tcgen05, sm_100a): which tcgen05 forms the harness runs and
where a `space: tensor` cell lives.

Every testing CTA allocates 32 columns of Tensor Memory in its prologue (warp 0, then
relinquishes the allocation permit) and frees them in its epilogue; cell k of the test is column
k, lanes 0-31. A tcgen05.ld/.st of shape 32x32b reaches the 32 lanes of its warp's quarter of
Tensor Memory (warp % 4), so the harness puts every warp of such a test at a hardware warp that
is a multiple of 4 (checker.harness.layout: warp stride 4), and every thread that runs tcgen05
instructions is a whole warp: all 32 lanes run the warp-collective ld/st/wait, lane 0 (Tensor
Memory lane 0) holds the test's value, performs the thread's writes (stores, arrivals, the
commit) and reports its registers. Before the epilogue each such thread waits for its own
tcgen05.ld/st (wait::ld, wait::st), so no access is in flight when the columns are freed; the
test's instructions and outcomes come before that.

Generated: tcgen05.fence::before_thread_sync / ::after_thread_sync, tcgen05.wait::ld / ::st,
tcgen05.ld / .st .32x32b.x1.b32, tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 (one
arrival, by lane 0). Refused with the reason: tcgen05.mma and tcgen05.cp (instruction and matrix
descriptors for sm_100a, not built yet), alloc / dealloc / relinquish_alloc_permit in the test
(the harness owns the allocation), other shapes, multicast commits, a tensor cell of another CTA
or named in a condition.

Pure: reads the test.
"""
from __future__ import annotations

from ..ast import Addr, LitmusTest

COLUMNS = 32          # columns each testing CTA allocates (the minimum allocation)


def cells(test: LitmusTest) -> list[str]:
    """The test's Tensor Memory cells, in declaration order (cell k = column k)."""
    return [m.name for m in test.memory if m.space == "tensor"]


def threads(test: LitmusTest) -> frozenset[int]:
    """The threads (tid) that run tcgen05 instructions: each a whole warp."""
    return frozenset(tid for tid, t in enumerate(test.threads) if any(i.op == "tcgen05" for i in t.code))


def problems(test: LitmusTest) -> list[str]:
    out = []
    names = cells(test)
    if len(names) > COLUMNS:
        out.append(f"{len(names)} Tensor Memory cells: the harness allocates {COLUMNS} columns")
    owners = {m.name: m.owner for m in test.memory if m.space == "tensor"}
    if any(t.position.cluster is not None for t in test.threads):
        out.append("Tensor Memory in a cluster launch is not generated: a CTA waiting in tcgen05.alloc for columns "
                   "other clusters hold could keep its siblings at the cluster barrier forever")
    whole = threads(test)
    for tid in sorted(whole):
        t = test.threads[tid]
        shared = [u.name for u in test.threads if u is not t and u.position == t.position]
        if shared:
            out.append(f"{t.name} runs warp-collective tcgen05 instructions, so it takes its whole warp, which "
                       f"{', '.join(shared)} also use")
        if t.branches:
            out.append(f"{t.name}: control flow in a thread running tcgen05 is not generated (its warp must stay "
                       f"converged)")
    for t in test.threads:
        for k, i in enumerate(t.code):
            where = f"{t.name}:{k} '{i.text}'"
            used = [o.base for o in i.operands if isinstance(o, Addr) and o.base in owners]
            for n in used:
                if owners[n] is not None and owners[n].cta_key() != t.position.cta_key():
                    out.append(f"{where}: '{n}' is Tensor Memory of another CTA")
            if i.op != "tcgen05":
                if used:
                    out.append(f"{where}: only tcgen05 instructions access Tensor Memory")
                continue
            what = i.qualifiers[0] if i.qualifiers else ""
            if what in ("fence::before_thread_sync", "fence::after_thread_sync", "wait::ld", "wait::st"):
                continue
            if what in ("ld", "st"):
                shape = [q for q in i.qualifiers if "x" in q and q[0].isdigit()]
                if "32x32b" not in i.qualifiers or "x1" not in i.qualifiers or any(
                        q.startswith(("pack", "unpack")) for q in i.qualifiers):
                    out.append(f"{where}: only tcgen05.{what}.sync.aligned.32x32b.x1.b32 is generated "
                               f"(shape {'.'.join(shape) or '?'})")
                continue
            if what == "commit":
                if "multicast::cluster" in i.qualifiers or "cta_group::2" in i.qualifiers:
                    out.append(f"{where}: a multicast or CTA-pair tcgen05.commit is not generated")
                continue
            if what in ("mma", "cp"):
                out.append(f"{where}: tcgen05.{what} needs sm_100a instruction and matrix descriptors, which the "
                           f"harness does not build yet")
            elif what in ("alloc", "dealloc", "relinquish_alloc_permit"):
                out.append(f"{where}: tcgen05.{what} in the test is not generated (the harness allocates and frees "
                           f"the Tensor Memory)")
            else:
                out.append(f"{where}: tcgen05.{what} is not generated")
    from .space import observed_vars
    for v in observed_vars(test):
        if not v.thread and v.name in owners:
            out.append(f"the outcome names the Tensor Memory cell '{v.name}': its final value is not read back")
    return list(dict.fromkeys(out))
