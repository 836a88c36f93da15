"""Emitting PTX operands: the per-thread emission context (addresses of locations, registers,
tensor-map buffers), the `asm volatile` builder, and qualifier helpers shared by the emitters."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ast import Addr, Imm, Instr, LitmusTest, Reg, Sink, Vec
from .layout import Layout, Slot


TYPES = frozenset(f"{k}{n}" for k in "bus" for n in (8, 16, 32, 64)) | {"f32", "f64", "f16", "bf16", "pred"}
WIDE = frozenset({"b64", "u64", "s64", "f64"})
SCOPES = ("cta", "cluster", "gpu", "sys")
RESERVED_BARRIER = 15            # the harness's own CTA barrier (epilogue)


class NotExpressible(Exception):
    """The harness cannot express this instruction (yet); the message says why."""


@dataclass
class Ctx:
    """What an emitter may consult while emitting one thread's code."""

    test: LitmusTest
    layout: Layout
    slot: Slot
    cell_bytes: int
    tx_factor: int                   # byte counts of bulk copies / tx counts are scaled by this
    shared_index: dict[str, int]     # shared location -> index in the CTA's smem array
    global_index: dict[str, int]     # global location -> index in the global buffer
    aliases: dict[str, tuple[str, int]]  # virtual alias -> (location, mapping number >= 1)
    maps: dict[str, dict[int, str]]      # tensor map location -> {value: global buffer it points at}
    owner_cta: dict[str, int]        # shared location -> role CTA that holds it
    wide_regs: frozenset[str]
    addrs: dict[tuple[str, str], str] = field(default_factory=dict)  # (loc, kind) -> C++ variable
    buffers: dict[tuple[str, int], str] = field(default_factory=dict)  # (map, value) -> C++ variable
    notes: list[str] = field(default_factory=list)
    zeros: list[int] = field(default_factory=lambda: [0])   # next free p.zero[] slot, shared by all threads
    warpgroup: bool = False          # the thread stands for a warpgroup (wgmma)
    whole_warp: bool = False         # the thread takes its whole warp (tcgen05)
    tmem: tuple[str, ...] = ()       # Tensor Memory cells (cell k: column k)
    tmem_regs: list[str] = field(default_factory=list)   # destinations of the thread's tcgen05.ld
    accumulators: tuple[str, ...] = ()   # C variables of its wgmma accumulator fragments

    # -- operands -----------------------------------------------------------------------------
    def reg(self, name: str) -> str:
        """The C variable of register `name` (real-PTX names such as %r1 become R_pc_r1)."""
        return "R_" + name.replace("%", "pc_")

    def address(self, op, kind: str) -> str:
        """C++ variable holding `op`'s address in `kind`: generic | global | cta | cluster."""
        if not isinstance(op, Addr):
            raise NotExpressible("expected an address operand [name]")
        if op.coords and op.base not in self.maps:
            raise NotExpressible(f"'{op.base}' takes tensor coordinates but is not a tensor map")
        if op.offset:
            raise NotExpressible("address offsets inside a cell are not expressible (cells are abstract)")
        name = op.base
        if name in self.tmem:
            var = f"T_{name}"
            self.addrs[(name, "tmem")] = var
            return var
        if name in self.maps:
            shared_map = self.test.mem(name) is not None and self.test.mem(name).space == "shared"
            if shared_map != (kind in ("cta", "cluster")) and kind != "generic":
                raise NotExpressible(f"tensor map '{name}' is in {'shared' if shared_map else 'global'} memory "
                                     f"but the instruction says .{'shared' if kind in ('cta', 'cluster') else 'global'}")
            var = f"A_{name}_{kind}"
            self.addrs[(name, kind)] = var
            return var
        if name in self.aliases and kind in ("cta", "cluster"):
            raise NotExpressible(f"'{name}' is a global virtual alias but the instruction says .shared")
        if name in self.shared_index:
            here = self.slot.role_cta
            owner = self.owner_cta[name]
            if self.layout.unit(owner) != self.layout.unit(here):
                raise NotExpressible(f"'{name}' is shared memory of a CTA outside this thread's cluster")
            if kind == "global":
                raise NotExpressible(f"'{name}' is shared memory but the instruction says .global")
            if kind == "cta" and owner != here:
                raise NotExpressible(f"'{name}' is in another CTA's shared memory: use .shared::cluster")
        elif kind in ("cta", "cluster"):
            raise NotExpressible(f"'{name}' is global memory but the instruction says .shared")
        var = f"A_{name}_{kind}"
        self.addrs[(name, kind)] = var
        return var

    def opaque(self, var: str) -> str:
        """`var` plus a zero that ptxas cannot see (a Params field, 0 at run time): every access
        operand gets its own, so ptxas can neither merge two accesses to one location nor forward
        a store to a load, nor delete an overwritten store (inline asm is volatile to nvcc only;
        ptxas optimises the PTX as PTX)."""
        n = self.zeros[0]
        self.zeros[0] += 1
        return f"({var} + p.zero[{n}])"

    def buffer(self, tmap: str, value) -> str:
        """C++ variable holding the global address of the buffer map value `value` selects."""
        if not isinstance(value, Imm):
            raise NotExpressible("the new value of a tensor map field must be an immediate")
        table = self.maps.get(tmap)
        if table is None:
            raise NotExpressible(f"'{tmap}' is not a tensor map")
        if value.value not in table:
            raise NotExpressible(f"'{tmap}' has no buffer for value {value.value}")
        var = f"B_{tmap}_{value.value}"
        self.buffers[(tmap, value.value)] = var
        return var

    def peer_rank(self, n: int) -> int:
        """%cluster_ctarank of ctaN of this thread's cluster (ctaMask bit N)."""
        from ..ast import Position
        p = self.test.threads[self.slot.tid].position
        key = Position(p.gpu, p.cluster, n).cta_key()
        cta_of = dict(self.layout.cta_of)
        if p.cluster is None or key not in cta_of:
            raise NotExpressible(f"the ctaMask names cta{n}, which holds no thread or location of the test in this "
                                 f"thread's cluster")
        return self.layout.rank(cta_of[key])

    def warp_is_one_role(self) -> None:
        """Warp-collective (.sync.aligned) instructions need every lane of the warp in this role."""
        if self.layout.threads_in(self.slot.role_cta, self.slot.warp) != 1 or self.layout.per_warp != 32:
            raise NotExpressible("a warp-collective (.sync.aligned) instruction needs a warp whose 32 lanes "
                                 "all play this thread (one litmus thread per warp in the whole test)")


class Asm:
    """Builds `asm volatile("...": outs : ins : "memory")` with operands numbered at the end."""

    def __init__(self):
        self.outs: list[str] = []
        self.ins: list[str] = []
        self.lines: list[str] = []

    def out(self, constraint: str, cexpr: str) -> str:
        self.outs.append(f'"={constraint}"({cexpr})')
        return f"\x00o{len(self.outs) - 1}\x00"

    def inp(self, constraint: str, cexpr: str) -> str:
        self.ins.append(f'"{constraint}"({cexpr})')
        return f"\x00i{len(self.ins) - 1}\x00"

    def render(self, *ptx_lines: str) -> str:
        text = " ".join(ptx_lines)
        for i in range(len(self.outs)):
            text = text.replace(f"\x00o{i}\x00", f"%{i}")
        for i in range(len(self.ins)):
            text = text.replace(f"\x00i{i}\x00", f"%{len(self.outs) + i}")
        text = text.replace('"', '\\"')
        return f'asm volatile("{text}" : {", ".join(self.outs)} : {", ".join(self.ins)} : "memory");'


# -- qualifier helpers ------------------------------------------------------------------------

def has_type(i: Instr) -> bool:
    return any(q in TYPES for q in i.qualifiers)


def mnemonic(i: Instr, default_type: str | None = None, drop=()) -> str:
    quals = [q for q in i.qualifiers if q not in drop]
    if default_type and not has_type(i):
        quals.append(default_type)
    return ".".join([i.op, *quals])


def spaces(i: Instr) -> list[str]:
    """Address kinds of the state-space qualifiers, in order (e.g. cp.async: [dst, src])."""
    out = []
    for q in i.qualifiers:
        if q == "global":
            out.append("global")
        elif q in ("shared", "shared::cta"):
            out.append("cta")
        elif q == "shared::cluster":
            out.append("cluster")
        elif q in ("local", "param", "const", "tex", "surf"):
            raise NotExpressible(f"the .{q} state space is not expressible yet")
    return out


def _value(a: Asm, ctx: Ctx, op, wide=False) -> str:
    if isinstance(op, Imm):
        return a.inp("l" if wide else "r", f"{op.value & (2**64 - 1 if wide else 0xFFFFFFFF)}u" + ("ll" if wide else ""))
    if isinstance(op, Reg):
        is_wide = op.name in ctx.wide_regs
        if wide:
            return a.inp("l", ctx.reg(op.name) if is_wide else f"(unsigned long long){ctx.reg(op.name)}")
        return a.inp("r", f"(unsigned){ctx.reg(op.name)}" if is_wide else ctx.reg(op.name))
    raise NotExpressible("expected a register or an immediate")


def _literal(op) -> str:
    if isinstance(op, Imm):
        return str(op.value)
    raise NotExpressible("expected an immediate operand")


def _dst(a: Asm, ctx: Ctx, op, wide=False) -> str:
    if isinstance(op, Sink):
        return "_"
    if isinstance(op, Reg):
        return a.out("l" if (wide or op.name in ctx.wide_regs) else "r", ctx.reg(op.name))
    raise NotExpressible("expected a destination register")


def _no_vectors(i: Instr) -> None:
    if any(isinstance(o, Vec) for o in i.operands) or any(q.startswith("v") and q[1:].isdigit() for q in i.qualifiers):
        raise NotExpressible("vector accesses are not expressible (cells are single values)")


def _addr(a: Asm, ctx: Ctx, op, kind: str) -> str:
    var = ctx.address(op, kind)
    return "[" + a.inp("r" if kind in ("cta", "cluster") else "l", ctx.opaque(var)) + "]"


def _space(i: Instr, n: int = 0) -> str:
    sp = spaces(i)
    return sp[n] if len(sp) > n else "generic"


