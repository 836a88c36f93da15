"""Prefetches: prefetch, prefetchu, and the tensor-map prefetch (PTX ISA 9.4, "Data Movement and
Conversion Instructions: prefetch, prefetchu").

A prefetch brings a line into a cache level, or a tensor map into the cache, as a hint: "no
memory effect" (the ISA lists no ordering for it, and a cache is invisible to the memory
consistency model). No events. The cache qualifiers of ld/st (.ca .cg .cs .lu .cv .wb .wt,
.L1::evict_*, .L1::no_allocate, .L2::evict_*, .L2::cache_hint with its cache-policy operand,
.L2::64B/128B/256B) are hints of the same kind, accepted by ld and st (checker.isa.core) and
ignored by the model; so is cp.async.bulk.prefetch (checker.isa.async_copy).

    prefetch{.space}.level [a]          .space: .global .local; .level: .L1 .L2
    prefetch.global.L2::evict_last [a]  prefetch.global.L2::evict_normal [a]
    prefetch{.const, .param}.tensormap [a]
    prefetchu.L1 [a]
"""
from __future__ import annotations

from ..ast import Instr, Quals
from ..errors import LitmusError
from .table import Family, Group, sig

# PTX ISA 9.4, ld / st: the cache operators and cache-eviction, cache-hint and prefetch-size
# qualifiers. Hints: no ordering, no events.
_L1 = Group("l1_evict", ("L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last",
                         "L1::no_allocate"))
_L2 = Group("l2_evict", ("L2::evict_normal", "L2::evict_first", "L2::evict_last"))
_HINT = Group("cache_hint", ("L2::cache_hint",))
LD_HINTS = (Group("cop", ("ca", "cg", "cs", "lu", "cv")), _L1, _L2, _HINT,
            Group("prefetch_size", ("L2::64B", "L2::128B", "L2::256B")), Group("nc", ("nc",)))
ST_HINTS = (Group("cop", ("wb", "cg", "cs", "wt")), _L1, _L2, _HINT)


def hint_rule(i: Instr, q: Quals):
    """The cache-policy operand goes with .L2::cache_hint; .nc is ld.global.nc, a weak load."""
    if q["cache_hint"] and len(i.operands) != 3:
        return f"{i.op}.L2::cache_hint takes a cache-policy operand after the address"
    if not q["cache_hint"] and len(i.operands) == 3:
        return "a third operand is a cache policy: it goes with .L2::cache_hint"
    if q.get("nc") and (q["space"] != "global" or q["sem"] != "weak" or q["mmio"]):
        return "ld.global.nc is a weak load of .global memory: write ld.global.nc.TYPE (no .sem, .scope or .mmio)"
    return None


def noncoherent(b, ctx, i: Instr) -> None:
    """ld.global.nc reads through the non-coherent (read-only) data cache: defined only for data
    that no thread writes while the kernel runs. A write to the location by the same kernel is
    refused once every event exists (the value such a load returns is not modelled)."""
    b.finalize("nc", _check_nc).setdefault("loads", []).append((ctx.thread.name, i.operands[1], i))


def _check_nc(b) -> None:
    kernel_of = {t: k.name for k in b.test.kernels for t in k.threads}
    for thread, addr, instr in b.ext["nc"]["loads"]:
        root = b.roots[addr.base]
        for e in b.events:
            if e.kind == "W" and "INIT" not in e.tags and e.loc == root \
                    and kernel_of.get(e.thread) == kernel_of.get(thread):
                raise LitmusError(
                    f"ld.global.nc reads through the non-coherent cache, which is for data that is read-only while "
                    f"the kernel runs, but {e.thread} writes '{addr.base}' in the same kernel ({e.label}): what the "
                    "load returns is not modelled; use ld.global (or ld.relaxed / ld.acquire) for data that changes",
                    instr.where)

FAMILIES = (
    Family("prefetch", groups=(Group("space", ("global", "local", "const", "param")),
                               Group("level", ("L1", "L2", "L2::evict_last", "L2::evict_normal", "tensormap"),
                                     required=True)),
           operands=sig("a:addr", a="the address to prefetch"), lower=None),
    Family("prefetchu", groups=(Group("level", ("L1",), required=True),),
           operands=sig("a:addr", a="the address to prefetch"), lower=None),
)
