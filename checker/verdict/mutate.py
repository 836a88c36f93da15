"""Which synchronization does a forbidden outcome depend on?

Each candidate mutation removes one piece of synchronization from the test: drop a fence, a
membar or a barrier, weaken `.release`/`.acquire`/`.acq_rel` to `.relaxed`, weaken `fence.sc` to
`fence.acq_rel`. The mutated test is checked again; the pieces whose removal makes the outcome
allowed are the ones it needs ("removing fence.release.gpu in P0 allows it").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..model import observables as conditions
from ..ast import Cond, Instr, LitmusTest
from ..errors import CheckerError

DROP_OPS = ("fence", "membar", "bar", "barrier")
WEAKEN = {"release": "relaxed", "acquire": "relaxed", "acq_rel": "relaxed"}
FENCE_WEAKEN = {"sc": "acq_rel"}


@dataclass(frozen=True)
class Mutation:
    thread: str
    index: int                  # the instruction's index in its thread's code
    original: str               # its text
    replacement: str | None     # the weakened text; None when the instruction is dropped
    line: int | None = None     # its line in the test file

    @property
    def action(self) -> str:
        return "drop" if self.replacement is None else "weaken"

    def describe(self) -> str:
        where = f"{self.thread}" + (f", line {self.line}" if self.line else f", instruction {self.index}")
        if self.replacement is None:
            return f"removing {self.original} ({where})"
        return f"weakening {self.original} to {self.replacement} ({where})"


@dataclass(frozen=True)
class Effect:
    mutation: Mutation
    verdict: str                # allowed | forbidden | undefined | unknown | error
    message: str = ""


def _swap(instr: Instr, old: str, new: str) -> Instr | None:
    from ..ptx import validate

    quals = tuple(new if q == old else q for q in instr.qualifiers)
    text, n = re.subn(rf"\.{old}(?=[.\s;,]|$)", f".{new}", instr.text, count=1)
    if not n:
        return None
    cand = replace(instr, qualifiers=quals, text=text)
    try:
        validate(cand)
    except CheckerError:
        return None
    return cand


def _unfenced_copy(ins: Instr, test: LitmusTest) -> tuple[Instr, ...]:
    """tensormap.cp_fenceproxy [dst], [src], 128 without its proxy release fence: the plain
    generic copy it performs (ld.shared::cta + st.global through a fresh register)."""
    from ..ptx import parse_instr, registers

    used = {r for t in test.threads for i in t.code for r in registers(i)}
    reg = next(f"rcp{n}" for n in range(len(used) + 1) if f"rcp{n}" not in used)
    dst, src = ins.operands[0].base, ins.operands[1].base
    names = frozenset(m.name for m in test.memory)
    ld = parse_instr(f"ld.shared::cta {reg}, [{src}]", ins.where, names)
    st = parse_instr(f"st.global [{dst}], {reg}", ins.where, names)
    return ld, st


def mutations(test: LitmusTest) -> list[tuple[Mutation, LitmusTest]]:
    """Every single-step weakening of the test's synchronization, in thread and program order."""
    out = []
    for ti, th in enumerate(test.threads):
        for i, ins in enumerate(th.code):
            if ins.op == "tensormap" and ins.qualifiers[:1] == ("cp_fenceproxy",):
                copy = _unfenced_copy(ins, test)
                code = th.code[:i] + copy + th.code[i + 1:]
                threads = test.threads[:ti] + (replace(th, code=code),) + test.threads[ti + 1:]
                m = Mutation(th.name, i, ins.text, "; ".join(c.text for c in copy),
                             ins.where.line if ins.where else None)
                out.append((m, replace(test, threads=threads)))
                continue
            variants: list[Instr | None] = []
            if ins.op in DROP_OPS:
                variants.append(None)
                table = FENCE_WEAKEN if ins.op == "fence" else {}
            else:
                table = WEAKEN
            for old, new in table.items():
                if old in ins.qualifiers:
                    v = _swap(ins, old, new)
                    if v is not None:
                        variants.append(v)
            for v in variants:
                code = th.code[:i] + ((v,) if v is not None else ()) + th.code[i + 1:]
                threads = test.threads[:ti] + (replace(th, code=code),) + test.threads[ti + 1:]
                m = Mutation(th.name, i, ins.text, None if v is None else v.text,
                             ins.where.line if ins.where else None)
                out.append((m, replace(test, threads=threads)))
    return out


def verdict(test: LitmusTest, cond: Cond, model, options=frozenset(), timeout: float = 60.0) -> tuple[str, str]:
    """Is an execution satisfying `cond` allowed in `test`? ('allowed'|'forbidden'|'undefined'|
    'unknown'|'error', why)."""
    from ..engines.smt import Z3Engine
    from ..errors import SolverUnknown
    from ..lower import lower

    try:
        es = lower(test)
        eng = Z3Engine(es, model, options, timeout=timeout)
        for name in sorted(eng.enc.flags):
            if eng.flag_witness(name) is not None:
                return "undefined", f"the program then has undefined behaviour ({name})"
        term = conditions.to_z3(cond, eng.enc.observables, es.names)
        return ("allowed" if eng.satisfiable(term) is not None else "forbidden"), ""
    except SolverUnknown as e:
        return "unknown", str(e)
    except CheckerError as e:
        return "error", str(e)


def effects(test: LitmusTest, cond: Cond, model, options=frozenset(), timeout: float = 60.0) -> list[Effect]:
    """The verdict on `cond` after each mutation of the test."""
    return [Effect(m, *verdict(t, cond, model, options, timeout)) for m, t in mutations(test)]


def needed(effs: list[Effect]) -> list[Effect]:
    """The mutations that make the outcome allowed, or the program undefined (an access it ordered
    is then in flight with an asynchronous copy): the synchronization it depends on."""
    return [e for e in effs if e.verdict in ("allowed", "undefined")]
