"""THE list of instruction families, and the two things done with it: validate an instruction
(once, at load: its family and every qualifier group's value, PTX defaults applied) and lower a
test (each instruction by its family's lowering, threads in order, program order within each).

As herd's parseTest picks an architecture and Dat3M's Compilation a target in one place, this is
the one place that says which families exist. To add a family: write its module (a FAMILIES
tuple of rows carrying syntax, `lower` and `weaken`), add it to FAMILY_MODULES, and give it tests
and a suite.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator, Mapping

from ..ast import Instr, LitmusTest, Quals
from ..errors import LitmusError, SourceLoc
from . import syntax as ptx
from ..model.builder import Builder, ThreadCtx
from ..model.events import EventStructure
from . import (address, async_copy, clc, core, flow, griddep, hints, matrix, mbarrier, proxy, regalloc, special,
               tcgen05, warp, wgmma)
from .table import Family, check

FAMILY_MODULES = (core, address, proxy, async_copy, mbarrier, clc, wgmma, tcgen05, warp, regalloc, hints, matrix,
                  griddep, flow)


class Registry:
    """A table of instruction families (keys unique) and what is done with it."""

    def __init__(self, families: Iterable[Family]):
        table: dict[str, Family] = {}
        for f in families:
            if f.key in table:
                raise ValueError(f"instruction family {f.key!r} defined twice")
            names = [c for g in f.groups for c in g.choices]
            if len(names) != len(set(names)):
                raise ValueError(f"{f.key}: a qualifier in two groups")
            table[f.key] = f
        self.families: Mapping[str, Family] = table

    def family_of(self, instr: Instr) -> tuple[Family, tuple[str, ...]]:
        """The instruction's family (longest matching key) and the qualifiers after its key."""
        for n in range(len(instr.qualifiers), -1, -1):
            fam = self.families.get(".".join((instr.op,) + instr.qualifiers[:n]))
            if fam is not None:
                return fam, instr.qualifiers[n:]
        raise LitmusError(f"unknown or unsupported PTX instruction '{instr.op}'", instr.where)

    def validate(self, instr: Instr) -> Instr:
        """The instruction checked against its family, with `family` and `quals` (every qualifier
        group's value, PTX defaults applied) recorded; LitmusError if it is malformed."""
        fam, rest = self.family_of(instr)
        return replace(instr, family=fam.key, quals=check(fam, instr, rest))

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
            b.finalize("kernels", griddep.kernel_order)
        contexts = []
        for tid, th in enumerate(test.threads):
            ctx = ThreadCtx(th, tid)
            ctx.regs.update(special.registers(test, th))
            for k, instr in enumerate(th.code):
                if not instr.family:            # built by hand, not loaded: validate it now
                    instr = self.validate(instr)
                ctx.instr, ctx.index = instr, k
                fn = self.families[instr.family].lower
                if fn is not None:
                    fn(b, ctx, instr)
            ctx.instr, ctx.index = None, -1
            for name in [r for r in ctx.regs if r.startswith("%")]:     # special registers: inputs, not results
                del ctx.regs[name]
            contexts.append(ctx)
        return b.build(contexts)


REGISTRY = Registry(f for m in FAMILY_MODULES for f in m.FAMILIES)
FAMILIES = REGISTRY.families


def family(instr: Instr) -> Family:
    """The family of a validated instruction."""
    return FAMILIES[instr.family]


def validate(instr: Instr) -> Instr:
    return REGISTRY.validate(instr)


def lower(test: LitmusTest) -> EventStructure:
    return REGISTRY.lower(test)


def with_qualifiers(instr: Instr, qualifiers: tuple[str, ...]) -> Instr:
    """`instr` with other qualifiers, validated again (its text re-rendered)."""
    i = replace(instr, qualifiers=tuple(qualifiers), family="", quals=Quals())
    return validate(replace(i, text=ptx.render_instr(i)))


def parse_instr(text: str, where: SourceLoc | None = None, memory=frozenset()) -> Instr:
    """One instruction's text, parsed and validated (`memory`: the declared location names)."""
    return validate(ptx.parse(text, where, memory))


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
