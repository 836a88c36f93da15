"""Which synchronization does a forbidden outcome depend on?

Each candidate mutation removes one piece of synchronization from the test, as the instruction's
family says (its `weaken`, checker.isa): drop a fence, a membar or a barrier, weaken
`.release`/`.acquire`/`.acq_rel` to `.relaxed`, weaken `fence.sc` to `fence.acq_rel`, turn
tensormap.cp_fenceproxy into its plain copy. The mutated test is checked again; the pieces whose
removal makes the outcome allowed are the ones it needs ("removing fence.release.gpu in P0
allows it").
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ast import Cond, LitmusTest
from ..errors import CheckerError, SolverUnknown
from ..ast import registers
from ..isa.registry import weakenings
from .awaits import never_ends


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
    verdict: str                # allowed | forbidden | undefined | hang | unknown | error
    message: str = ""


# The verdicts of a mutant that make its piece of synchronization needed: the outcome becomes
# allowed, the program undefined, or no execution terminates (a removed barrier that its partner
# then waits on for ever: "it stays forbidden" would tell the user the barrier can go).
NEEDED = ("allowed", "undefined", "hang")

# How a needed mutation's verdict reads after it ("removing bar.sync 1 (P0, line 9) (then ...)").
THEN = {"undefined": " (then undefined)", "hang": " (then no execution terminates: a hang)"}


def _fresh(test: LitmusTest):
    """fresh(prefix): a register name the test does not use (prefix0, prefix1, ...)."""
    used = {r for t in test.threads for i in t.code for r in registers(i)}

    def fresh(prefix: str) -> str:
        return next(f"{prefix}{n}" for n in range(len(used) + 1) if f"{prefix}{n}" not in used)
    return fresh


def mutations(test: LitmusTest) -> list[tuple[Mutation, LitmusTest]]:
    """Every single-step weakening of the test's synchronization, in thread and program order:
    what each instruction's family says can be removed or weakened (checker.isa)."""
    out = []
    fresh = _fresh(test)
    for ti, th in enumerate(test.threads):
        for i, ins in enumerate(th.code):
            for variant in weakenings(ins, fresh):
                code = th.code[:i] + variant + th.code[i + 1:]
                threads = test.threads[:ti] + (replace(th, code=code),) + test.threads[ti + 1:]
                m = Mutation(th.name, i, ins.text, "; ".join(v.text for v in variant) if variant else None,
                             ins.where.line if ins.where else None)
                out.append((m, replace(test, threads=threads)))
    return out


def verdict(s, cond: Cond) -> tuple[str, str]:
    """Is an execution satisfying `cond` allowed by Session `s`? ('allowed'|'forbidden'|
    'undefined'|'hang'|'unknown'|'error', why), in the order `explain` asks the test itself:
    undefined behaviour first, then a program in which no execution terminates (no verdict)."""
    try:
        if s.undefined:
            return "undefined", f"the program then has undefined behaviour ({s.undefined[0].flag})"
        never = never_ends(s)
        if never:
            return "hang", never
        allowed = s.verdict(cond).allowed
        return ("allowed" if allowed else "forbidden" if allowed is False else "unknown"), ""
    except SolverUnknown as e:
        return "unknown", str(e)
    except CheckerError as e:
        return "error", str(e)


def effects(s, cond: Cond) -> list[Effect]:
    """The verdict on `cond` after each mutation of Session `s`'s test."""
    return [Effect(m, *verdict(ms, cond)) for m, ms in s.mutants()]


def needed(effs: list[Effect]) -> list[Effect]:
    """The mutations that make the outcome allowed, the program undefined (an access it ordered
    is then in flight with an asynchronous copy), or leave no execution that terminates: the
    synchronization it depends on."""
    return [e for e in effs if e.verdict in NEEDED]
