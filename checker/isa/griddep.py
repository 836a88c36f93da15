"""Kernels in stream order and programmatic dependent launch: griddepcontrol (PTX ISA 9.4,
"Parallel Synchronization and Communication Instructions: griddepcontrol"; CUDA Programming
Guide, "Programmatic Dependent Launch and Synchronization"). Decision A17 (docs/model.md#a17).

A test with `kernels:` runs its kernels in stream order. A kernel launched normally starts after
every earlier kernel of the stream has completed: every program-ordered event of an earlier
kernel is ordered before every event of it (`kbo`, in base causality). A kernel launched with
programmatic dependent launch (`launch: pdl`) may start while its primary (the kernel before it)
still runs, and `griddepcontrol.wait` "causes the executing thread to wait until all
prerequisite grids in flight have completed and all the memory operations from the prerequisite
grids are performed and made visible to the current grid": so only the events after the
thread's first griddepcontrol.wait are ordered after the earlier kernels; its events before the
wait are not ordered with the primary at all. `griddepcontrol.launch_dependents` only lets the
dependent be scheduled ("no guarantee" of memory visibility, the CUDA guide): no events, no
ordering. In a kernel launched normally, griddepcontrol.wait has nothing to wait for.

A kernel's completion covers its asynchronous operations too: griddepcontrol.wait waits until the
prerequisite grids "have completed and all the memory operations from the prerequisite grids are
performed and made visible", and a normal launch waits for at least as much, so every event of an
earlier kernel (its asynchronous memory operations included, waited for or not) is ordered before
the later kernel. These stream-order edges also "participate in proxy-preserved base causality
order except for the tensormap-proxy" (Memory synchronization > API synchronization): the cat
model (ppbc_kernel, axioms/ptx.cat) makes a path through kbo proxy-preserving unless it ends at a
tensor-map read, which still needs fence.proxy.tensormap::generic.acquire.
"""
from __future__ import annotations

from ..ast import Instr
from ..model.builder import Builder, ThreadCtx
from .table import Family, Group


def lower_griddep(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    if i.quals["action"] == "wait":
        waits = b.ext.setdefault("griddep_wait", {})
        waits.setdefault(ctx.thread.name, len(ctx.events))   # the thread's first po event after its first wait


def kernel_order(b: Builder) -> None:
    """kbo: from every event of each kernel (asynchronous memory operations included) to the
    program-ordered events of every later kernel they are ordered before (all of them; for a PDL
    launch, those after each thread's wait; later asynchronous operations follow through aso)."""
    kernels = b.test.kernels
    if not kernels:
        return
    waits = b.ext.get("griddep_wait", {})
    po_events: dict[str, list[int]] = {}
    all_events: dict[str, list[int]] = {}
    for e in b.events:
        if e.thread is not None:
            all_events.setdefault(e.thread, []).append(e.eid)
            if e.eid in b.unit:
                po_events.setdefault(e.thread, []).append(e.eid)
    before: list[int] = []
    for k in kernels:
        after = []
        for t in k.threads:
            evs = po_events.get(t, [])
            if k.launch == "pdl":
                evs = evs[waits[t]:] if t in waits else []
            after.extend(evs)
        b.pairs["kbo"].update((x, y) for x in before for y in after)
        before = before + [e for t in k.threads for e in all_events.get(t, [])]


def weaken_griddep(i: Instr, fresh=None):
    """griddepcontrol.wait is synchronization a mutation may remove; launch_dependents is not
    (removing it only delays the dependent)."""
    if i.quals["action"] == "wait":
        yield ()


FAMILIES = (
    Family("griddepcontrol", groups=(Group("action", ("launch_dependents", "wait"), required=True),),
           lower=lower_griddep, weaken=weaken_griddep),
)
