"""Fixed addresses for a kernel's shared variables, so that the address arithmetic a compiler
emits (`mov.u32 %r, sym; add; shl`; `cvta.shared`; `mapa`; a wgmma descriptor's `addr >> 4`) is
computed exactly and traced back to a variable and a byte offset.

Shared addresses are laid out from SHARED_BASE in declaration order, each variable at its
alignment; an unsized `.extern .shared` array comes last, 1024-aligned, and runs to the end of
the window. A generic address of shared memory is GENERIC_SHARED + the shared address
(`cvta.shared`); a shared::cluster address of another CTA of the cluster carries the CTA's rank
above bit 24 (`mapa`). The numbers themselves never reach the litmus test: only (CTA, variable,
offset) does, which is what the layout must preserve (distinct variables never overlap).
"""
from __future__ import annotations

from dataclasses import dataclass

from .module import Function, Module, Symbol

SHARED_BASE = 0x400
SHARED_WINDOW = 0x100000          # 1 MiB: more than any GPU's shared memory per CTA
GENERIC_SHARED = 0x7E0000000000
RANK_SHIFT = 24


@dataclass(frozen=True, order=True)
class Loc:
    """A byte of shared memory: the CTA's rank in its cluster, the variable, the offset."""

    rank: int
    symbol: str
    offset: int


class Layout:
    def __init__(self, mod: Module, fn: Function):
        self.symbols: dict[str, Symbol] = {**mod.symbols, **fn.symbols}
        self.base: dict[str, int] = {}
        addr = SHARED_BASE
        shared = [s for s in self.symbols.values() if s.space == "shared"]
        for s in sorted(shared, key=lambda s: (s.size is None, s.line)):
            align = max(s.align, 1024 if s.size is None else 1)
            addr = (addr + align - 1) // align * align
            self.base[s.name] = addr
            addr += s.size if s.size is not None else 0
        self.extern = [s.name for s in shared if s.size is None]
        self.order = sorted(self.base.items(), key=lambda kv: kv[1])

    def address(self, name: str) -> int | None:
        return self.base.get(name)

    def symbol(self, name: str) -> Symbol | None:
        return self.symbols.get(name)

    def size(self, name: str) -> int | None:
        return self.symbols[name].size

    def resolve(self, v, space: str, own_rank: int) -> Loc | None:
        """The shared byte an address names, or None."""
        if not isinstance(v, int):
            return None
        if space == "generic":
            if not GENERIC_SHARED <= v < GENERIC_SHARED + (SHARED_WINDOW << 8):
                return None
            v -= GENERIC_SHARED
        rank = own_rank
        if v >> RANK_SHIFT:
            if space not in ("shared::cluster", "generic"):
                return None
            rank = (v >> RANK_SHIFT) - 1
            v &= (1 << RANK_SHIFT) - 1
        for name, base in reversed(self.order):
            if v >= base:
                size = self.symbols[name].size
                if size is None or v < base + size:
                    return Loc(rank, name, v - base)
                return None
        return None

    def cvta(self, q: tuple, v):
        """`cvta[.to].SPACE`: shared <-> generic; other windows keep the value (parameters,
        global pointers are symbolic already)."""
        if "shared" in q or any(x.startswith("shared") for x in q):
            if not isinstance(v, int):
                return v
            if "to" in q:
                return v - GENERIC_SHARED if v >= GENERIC_SHARED else v
            return v + GENERIC_SHARED
        return v

    def mapa(self, a, rank: int, own: int):
        """`mapa.shared::cluster`: the same offset in the CTA of that rank."""
        if not isinstance(a, int):
            return a
        generic = a >= GENERIC_SHARED
        if generic:
            a -= GENERIC_SHARED
        a &= (1 << RANK_SHIFT) - 1
        out = a if rank == own else a | ((rank + 1) << RANK_SHIFT)
        return out + GENERIC_SHARED if generic else out
