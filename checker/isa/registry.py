"""THE list of instruction families, and the two things done with it: validate an instruction
(once, at load: its family and every qualifier group's value, PTX defaults applied) and lower a
test (each instruction by its family's lowering, threads in order, program order within each).

As herd's parseTest picks an architecture and Dat3M's Compilation a target in one place, this is
the one place that says which families exist. To add a family: write its module (a FAMILIES
tuple of rows carrying syntax, `lower` and `weaken`), add it to FAMILY_MODULES with the key
prefixes its families live under, and give it tests and a suite.

A module is imported when an instruction first needs it (a `ptxmc outcomes` of an SB test does
not load the tensor-core, TMA or tcgen05 families): FAMILY_MODULES says under which dotted key
prefixes each module's families lie, and an instruction `op.q1.q2...` loads every module with a
prefix that is a prefix of it - since a family matches only a prefix of the instruction's name,
that is every module that can hold its family. Loading a module checks that each of its family
keys lies under one of its prefixes (a ValueError otherwise), so a wrong list fails at once.
"""
from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Iterable, Iterator, Mapping

from ..ast import Instr, LitmusTest, Quals
from ..errors import LitmusError, SourceLoc
from . import syntax as ptx
from ..model.builder import Builder, ThreadCtx
from ..model.events import EventStructure
from . import special
from .table import Family, check

# module of checker.isa -> the dotted key prefixes its families lie under (`fence` covers
# `fence.sc`; `fence.proxy` only the proxy fences). Listed in the order the families load.
FAMILY_MODULES: Mapping[str, tuple[str, ...]] = {
    "core": ("add", "and", "atom", "bar", "barrier", "cvt", "fence", "ld", "membar", "mov", "mul", "not", "or", "red",
             "selp", "shl", "shr", "st", "sub", "xor"),
    "address": ("cvta", "mapa"),
    "proxy": ("fence.proxy", "ldc", "membar.proxy", "suld", "sust", "tensormap", "tld"),
    "async_copy": ("cp", "red.async", "st.async"),
    "mbarrier": ("barrier.cluster", "fence.mbarrier_init", "mbarrier"),
    "clc": ("clusterlaunchcontrol",),
    "wgmma": ("wgmma",),
    "tcgen05": ("tcgen05",),
    "warp": ("activemask", "elect", "nanosleep"),
    "regalloc": ("setmaxnreg",),
    "hints": ("prefetch", "prefetchu"),
    "matrix": ("ldmatrix", "stmatrix"),
    "griddep": ("griddepcontrol",),
    "flow": ("assume", "bra", "setp"),
}


def _under(prefix: str, name: str) -> bool:
    """Is the dotted key `prefix` a prefix of the dotted name (whole segments)?"""
    return name == prefix or name.startswith(prefix + ".")


class Registry:
    """A table of instruction families (keys unique) and what is done with it. `modules` (name in
    checker.isa -> key prefixes, as FAMILY_MODULES) are imported as instructions need them."""

    def __init__(self, families: Iterable[Family] = (), modules: Mapping[str, tuple[str, ...]] | None = None):
        self._table: dict[str, Family] = {}
        self._order = ("",) + tuple(modules or ())    # "" the families given here, then the modules'
        self._of_module: dict[str, tuple[Family, ...]] = {}
        self._pending = dict(modules or {})     # modules not imported yet
        self._ordered = False                   # is _table in _order (every module imported)?
        self._add(tuple(families), "")

    def _add(self, families: tuple[Family, ...], module: str, prefixes: tuple[str, ...] = ()) -> None:
        for f in families:
            if f.key in self._table:
                raise ValueError(f"instruction family {f.key!r} defined twice")
            if module and not any(_under(p, f.key) for p in prefixes):
                raise ValueError(f"instruction family {f.key!r} of checker.isa.{module} lies under none of "
                                 f"its prefixes in FAMILY_MODULES ({', '.join(prefixes)})")
            names = [c for g in f.groups for c in g.choices]
            if len(names) != len(set(names)):
                raise ValueError(f"{f.key}: a qualifier in two groups")
            self._table[f.key] = f
        self._of_module[module] = families

    def _load(self, name: str | None) -> None:
        """Import every pending module that may hold a family of the dotted `name` (every one
        for None)."""
        for module, prefixes in list(self._pending.items()):
            if name is None or any(_under(p, name) for p in prefixes):
                del self._pending[module]
                self._add(tuple(importlib.import_module(f"{__package__}.{module}").FAMILIES), module, prefixes)

    @property
    def families(self) -> Mapping[str, Family]:
        """Every family, each module imported, in FAMILY_MODULES' order (whichever loaded first)."""
        if self._pending:
            self._load(None)
        if not self._ordered:       # (modules loaded on demand came in the order tests needed them)
            self._table = {f.key: f for m in self._order for f in self._of_module[m]}
            self._ordered = True
        return self._table

    def get(self, key: str) -> Family:
        """The family of this key (KeyError if there is none)."""
        if key not in self._table and self._pending:
            self._load(key)
        return self._table[key]

    def family_of(self, instr: Instr) -> tuple[Family, tuple[str, ...]]:
        """The instruction's family (longest matching key) and the qualifiers after its key."""
        if self._pending:
            self._load(".".join((instr.op,) + instr.qualifiers))
        for n in range(len(instr.qualifiers), -1, -1):
            fam = self._table.get(".".join((instr.op,) + instr.qualifiers[:n]))
            if fam is not None:
                return fam, instr.qualifiers[n:]
        raise LitmusError(f"unknown or unsupported PTX instruction '{instr.op}'", instr.where)

    def validate(self, instr: Instr, constant_registers: bool = False) -> Instr:
        """The instruction checked against its family, with `family` and `quals` (every qualifier
        group's value, PTX defaults applied) recorded; LitmusError if it is malformed.
        `constant_registers`: a register may stand where a number is needed (a litmus thread's
        code: checker.unfold.constants replaces it by the constant it holds)."""
        fam, rest = self.family_of(instr)
        return replace(instr, family=fam.key, quals=check(fam, instr, rest, constant_registers))

    def lower(self, test: LitmusTest) -> EventStructure:
        """The event structure of a test whose instructions are validated."""
        if test.branches:
            # A guard or a branch lowered as straight-line code would run as if always taken: a
            # test with control flow is split into its variants first (checker.unfold.variants).
            i = next((i for t in test.threads for i in t.code if i.op == "bra" or i.predicate), None)
            raise LitmusError("control flow (labels, bra, @p guards): the test is asked over its straight-line "
                              "variants, one per control path, and this asks for one event structure",
                              i.where if i is not None else test.where)
        b = Builder(test)
        if test.kernels:
            from .griddep import kernel_order

            b.finalize("kernels", kernel_order)
        contexts = []
        for tid, th in enumerate(test.threads):
            ctx = ThreadCtx(th, tid)
            ctx.regs.update(special.registers(test, th))
            for k, instr in enumerate(th.code):
                if not instr.family:            # built by hand, not loaded: validate it now
                    instr = self.validate(instr)
                ctx.instr, ctx.index = instr, k
                fn = self.get(instr.family).lower
                if fn is not None:
                    fn(b, ctx, instr)
            ctx.instr, ctx.index = None, -1
            for name in [r for r in ctx.regs if r.startswith("%")]:     # special registers: inputs, not results
                del ctx.regs[name]
            contexts.append(ctx)
        return b.build(contexts)


REGISTRY = Registry(modules=FAMILY_MODULES)


def __getattr__(name: str):
    if name == "FAMILIES":              # every family: each module imported
        return REGISTRY.families
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def family(instr: Instr) -> Family:
    """The family of a validated instruction."""
    return REGISTRY.get(instr.family)


def validate(instr: Instr, constant_registers: bool = False) -> Instr:
    return REGISTRY.validate(instr, constant_registers)


def lower(test: LitmusTest) -> EventStructure:
    return REGISTRY.lower(test)


def with_qualifiers(instr: Instr, qualifiers: tuple[str, ...]) -> Instr:
    """`instr` with other qualifiers, validated again (its text re-rendered)."""
    i = replace(instr, qualifiers=tuple(qualifiers), family="", quals=Quals())
    return validate(replace(i, text=ptx.render_instr(i)))


def parse_instr(text: str, where: SourceLoc | None = None, memory=frozenset(),
                constant_registers: bool = False) -> Instr:
    """One instruction's text, parsed and validated (`memory`: the declared location names;
    `constant_registers`: as for `validate`)."""
    return validate(ptx.parse(text, where, memory), constant_registers)


def address_space(instr: Instr) -> str | None:
    """The state-space qualifier of a validated instruction's address operand, for families that
    have one (ld, st, atom, red, ...); None for generic addressing or other families."""
    fam = family(instr)
    return instr.quals[fam.space] if fam.space else None


def weakenings(instr: Instr, fresh) -> Iterator[tuple[Instr, ...]]:
    """The valid single-step weakenings of a validated instruction: the instructions that replace
    it (() removes it), each validated. `fresh(prefix)` names a register the test does not use."""
    for variant in family(instr).weaken(instr, fresh):
        try:
            yield tuple(validate(v) for v in variant)
        except LitmusError:
            continue
