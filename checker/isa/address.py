"""Addresses held in registers: cvta and mapa, and the pass that resolves every register-held
address of a test to the location and byte offset it points to.

PTX ISA 9.4, "Data Movement and Conversion Instructions: cvta", "mapa"; "Parallel
Synchronization and Communication Instructions" (the shared::cluster window). A test computes
its addresses statically, as kernels do: `mov.u64 rd, x` takes the address of location x (or
`mov.u64 rd, x+16`... is written `mov.u64 rd, x; add.u64 rd, rd, 16`), `add`/`sub` of a
constant moves it, `cvta` converts between the generic and a state-space window (the location
does not change), and `mapa.shared::cluster d, a, r` maps a shared address to the same offset in
the CTA of rank r of the cluster (the cell declared there with `offset_of`). An access through
a register (`[%rd]`, `[rd+8]`) is then an access to that location at that offset, the same on
every control path that reaches it (a forward data-flow over labels, `bra` and guards; where
paths disagree, a branch or a loop that moves a pointer, the access is refused); the pass
rewrites it before anything else sees the test, so the model, the checks and the harness only
ever meet named addresses. An address that is not computed this way (read from memory, from a
special register, by other arithmetic) is refused: ptxmc does not model pointer chasing.

    cvta{.space}.size d, a      cvta.to{.space}.size d, a      (.space: .global .shared{::cta, ::cluster}; .size: .u32 .u64)
    mapa{.shared::cluster}.type d, a, b                        (.type: .u32 .u64; b: the CTA rank, a number or
                                                                a register that holds one, checker.unfold.constants)

A register holding an address has no value a condition can ask for: its events are none, and
`P0:rd=...` is refused like any register the thread does not write.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping

from ..ast import Addr, Imm, Instr, MemoryDecl, Name, Reg, Thread
from ..errors import LitmusError
from ..model.builder import AddressValue, Builder, ThreadCtx
from . import dataflow
from .table import Family, Group, sig

SPACES = ("global", "shared", "shared::cta", "shared::cluster")


def lower_address(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """cvta / mapa: the destination holds an address (resolved statically by `resolve`)."""
    b.set_reg(ctx, i.operands[0], AddressValue(f"an address ({i.text})"))


def _mapa_rank(i: Instr, q):
    if not 0 <= i.operands[2].value < 16:
        return f"a cluster has CTAs of rank 0 to 15, not {i.operands[2].value}"
    return None


FAMILIES = (
    Family("cvta", groups=(Group("to", ("to",)), Group("space", SPACES, required=True),
                           Group("size", ("u32", "u64"), required=True)),
           operands=sig("d:reg, a:addrsrc", a="the address to convert"), lower=lower_address,
           rejects={**dict.fromkeys(("local", "const"), "cvta to or from .local/.const memory: "
                                                        "ptxmc models .global and .shared memory"),
                    "param": "cvta.param takes the address of a __grid_constant__ kernel argument (a CUtensorMap): "
                             "give the location it is under params: (e.g. params: "
                             "{_Z8tma_load14CUtensorMap_stPi_param_0: tmap}, with tmap a tensor map declared under "
                             "memory:) (docs/format.md#kernel-arguments-and-shared-variables)"}),
    Family("mapa", groups=(Group("space", ("shared::cluster",)), Group("type", ("u32", "u64"), required=True)),
           operands=sig("d:reg, a:addrsrc, b:imm", a="the shared address to map", b="the target CTA's rank"),
           rules=(_mapa_rank,), lower=lower_address),
)


# -- resolution ---------------------------------------------------------------------------------

ADDRESS_FAMILIES = ("mov", "add", "sub", "cvta", "mapa") + tuple(f"cvt.{t}" for t in ("u32", "u64", "s32", "s64"))


class NotRun(LitmusError):
    """An address ptxmc cannot follow, on a line no control path of its thread runs (`index`)."""

    def __init__(self, msg: str, where, index: int):
        super().__init__(msg, where)
        self.index = index


def resolve(threads: list[Thread], memory: dict[str, MemoryDecl], destinations: dict[str, set[str]],
            known: Mapping[str, Callable[[int, str], "int | str"]] | None = None,
            runs: Mapping[str, Callable[[int], bool]] | None = None) -> list[Thread]:
    """Threads whose register-held addresses are rewritten to the locations they point to.
    `destinations[thread]`: the registers the thread writes; `memory`: every location;
    `known[thread](k, reg)`: the constant reg holds at instruction k, or why it holds none
    (checker.unfold.constants: an offset added in a register); `runs[thread](k)`: does some
    control path run instruction k (NotRun where one that does not fails)."""
    return [_resolve_thread(t, memory, destinations[t.name], (known or {}).get(t.name), (runs or {}).get(t.name))
            for t in threads]


def _resolve_thread(t: Thread, memory: dict[str, MemoryDecl], dests: set[str], known=None, runs=None) -> Thread:
    # The addresses registers hold where each instruction runs, joined over the control paths that
    # reach it (labels, bra, guards; a guard `known` decides takes one side): a register that holds
    # different addresses on two paths holds none ptxmc can follow there (_Differs).
    states = _flow(t, memory, dests, known)
    unguided = None               # for lines no path reaches: every guard read as either side
    code = []
    for k, i in enumerate(t.code):
        def fail(msg: str):
            if runs is not None and not runs(k):
                raise NotRun(msg, i.where, k)
            raise LitmusError(msg, i.where)

        if states[k] is None and unguided is None:
            unguided = _flow(t, memory, dests, None)
        env = states[k] if states[k] is not None else unguided[k] or {}
        ops = tuple(_rewrite(o, env, fail) if isinstance(o, Addr) and o.register else o for o in i.operands)
        code.append(replace(i, operands=ops) if ops != i.operands else i)
        _step(i, env, memory, t, dests, fail, known and (lambda r, k=k: known(k, r)))
    return replace(t, code=tuple(code))


class _Differs(str):
    """Why a register holds no one address where it is read (the control paths to it disagree)."""


class _Quiet(Exception):
    pass


def _quiet(msg: str):
    raise _Quiet(msg)


def _step(i: Instr, env: dict, memory, t: Thread, dests: set[str], fail, known) -> dict:
    """The register addresses after `i` runs (unguarded) with `env`."""
    dst = i.operands[0] if i.operands and isinstance(i.operands[0], Reg) else None
    if dst is None or dst.name not in dests:
        return env
    out = dict(env)
    addr = _address_of(i, env, memory, t, fail, known) if i.family in ADDRESS_FAMILIES else None
    if addr is None:
        out.pop(dst.name, None)
    else:
        out[dst.name] = addr
    return out


def _flow(t: Thread, memory, dests: set[str], known) -> list:
    """The register addresses when each instruction is reached (None: no path reaches it)."""
    def step(pc: int, env: dict, i: Instr) -> dict:
        try:
            return _step(replace(i, predicate=None), env, memory, t, dests, _quiet,
                         known and (lambda r: known(pc, r)))
        except _Quiet:          # reported where the final states are walked
            return {r: a for r, a in env.items() if r not in _dests_of(i)}

    def decide(pc: int, env: dict, i: Instr):
        g = i.predicate.lstrip("@")
        p, run = (g[1:], 0) if g.startswith("!") else (g, 1)
        v = known(pc, p) if known is not None else None
        return v == run if isinstance(v, int) else None

    return dataflow.forward(t, step, lambda a, b, _pc: _join(a, b), decide)


def _dests_of(i: Instr) -> set[str]:
    o = i.operands[0] if i.operands else None
    return {o.name} if isinstance(o, Reg) else set()


def _join(a: dict, b: dict) -> dict:
    out = {}
    for r in a.keys() | b.keys():
        x, y = a.get(r), b.get(r)
        if x == y:
            out[r] = x
        elif isinstance(x, _Differs):
            out[r] = x
        elif isinstance(y, _Differs):
            out[r] = y
        elif x is None or y is None:
            out[r] = _Differs(f"register {r} holds an address on some control paths to this line and not on others")
        else:
            out[r] = _Differs(f"register {r} holds different addresses ({', '.join(sorted((_text(x), _text(y))))}) on the control "
                              f"paths to this line")
    return out


def _text(a: tuple[str, int]) -> str:
    return a[0] if not a[1] else f"{a[0]}{a[1]:+d}"


def _value(o, env):
    """The address an operand stands for: a location's name, or a register holding an address."""
    if isinstance(o, Name):
        return (o.name, 0)
    if isinstance(o, Reg):
        return env.get(o.name)
    return None


def _address_of(i: Instr, env, memory, t: Thread, fail, known=None):
    """The address instruction `i` puts in its destination, or None if it computes no address
    (`known(reg)`: the constant a register holds there, or why it holds none)."""
    srcs = [_value(o, env) for o in i.operands[1:]]
    differs = next((a for a in srcs if isinstance(a, _Differs)), None)
    if differs is not None:           # refused where it is used as an address (_rewrite)
        return differs
    if i.family == "cvta" and srcs[0] is not None:
        _own_window(i, srcs[0][0], memory, t, fail)
    if i.family in ("mov", "cvta") or i.family.startswith("cvt."):
        return srcs[0]
    if i.family == "mapa":
        if srcs[0] is None:
            fail("mapa maps a shared-memory address: its operand is a location or a register holding one")
        name, off = srcs[0]
        return (_peer(name, i.operands[2].value, memory, t, fail), off)
    addrs = [a for a in srcs if a is not None]
    if not addrs:
        return None
    other = i.operands[2] if srcs[0] is not None else i.operands[1]
    held = known(other.name) if known is not None and isinstance(other, Reg) and len(addrs) == 1 else None
    if isinstance(held, int):
        other = Imm(held)
    if len(addrs) > 1 or not isinstance(other, Imm) or (i.family == "sub" and srcs[0] is None):
        why = f" ({held})" if isinstance(held, str) else ""
        fail(f"'{i.text}': address arithmetic other than adding or subtracting a constant is not modelled{why}")
    name, off = addrs[0]
    return (name, off + (other.value if i.family == "add" else -other.value))


def _own_window(i: Instr, name: str, memory: dict[str, MemoryDecl], t: Thread, fail) -> None:
    """`cvta.shared` / `.shared::cta` converts within the executing CTA's shared window: a cell of
    another CTA is not in it (mapa, or a .shared::cluster address, reaches another CTA)."""
    if i.pick(("shared", "shared::cta")) is None:
        return
    d = memory.get(name)
    if d is None or d.space != "shared" or d.owner is None or d.owner.cta_key() == t.position.cta_key():
        return
    fail(f"'{name}' is {d.owner.cta_text()}'s shared memory, and .{i.pick(('shared', 'shared::cta'))} "
         f"is the window of {t.name}'s own CTA ({t.position.cta_text()}): reach another CTA's cell with mapa "
         "(or name this CTA's copy with a `.shared` line, docs/format.md#kernel-arguments-and-shared-variables)")


def _peer(name: str, rank: int, memory: dict[str, MemoryDecl], t: Thread, fail) -> str:
    """The cell at `name`'s offset in the CTA of rank `rank` of thread t's cluster (offset_of)."""
    d = memory.get(name)
    if d is None or d.space != "shared":
        fail(f"mapa maps shared memory: '{name}' is {'no location' if d is None else d.space + ' memory'}")
    here = t.position
    cta = (here.gpu, here.cluster, rank) if here.cluster is not None else here.cta_key()
    if here.cluster is None and rank != 0:
        fail(f"mapa to rank {rank}: in a launch without clusters every CTA is a cluster of one")
    first = d.offset_of or d.name
    for m in memory.values():
        if (m.name == first or m.offset_of == first) and m.owner is not None and m.owner.cta_key() == cta:
            return m.name
    fail(f"mapa to rank {rank}: {t.name}'s cluster has no cell at the offset of '{name}' in that CTA: declare "
         f"one (NAME: {{space: shared, owner: gpu{here.gpu}"
         f"{'' if here.cluster is None else f'.cluster{here.cluster}'}.cta{rank}, offset_of: {first}}})")


def _rewrite(a: Addr, env, fail) -> Addr:
    if isinstance(env.get(a.base), _Differs):
        fail(f"'[{a.base}]': {env[a.base]}: ptxmc follows an address that is the same on every control path")
    if a.base not in env:
        fail(f"'[{a.base}]': register {a.base} holds no address ptxmc can follow (addresses are computed in "
             "the test from a location: mov, cvta, mapa, and add/sub of a constant)")
    name, off = env[a.base]
    return Addr(name, off + a.offset, a.coords)


def destinations(i: Instr, family: Family) -> set[str]:
    """The registers instruction `i` writes: its first operand, if its family returns a value."""
    slots = family.slots(i.quals)
    if not slots or slots[0].kind not in ("reg", "dst", "dvec", "regvec", "vec") or not i.operands:
        return set()
    o = i.operands[0]
    items = getattr(o, "items", (o,))
    return {x.name for x in items if isinstance(x, Reg)}


__all__ = ["FAMILIES", "NotRun", "destinations", "resolve"]
