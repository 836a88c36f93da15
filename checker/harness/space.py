"""The outcome space of a test on hardware: which variables are observed (the registers and final
memory values its conditions name) and which values each can take, so the device can count
outcomes in fixed buckets. Anything outside the space lands in the `other` bucket, which must
stay 0: it means garbage, a harness bug, or a value the test cannot produce.

Value sets come from an over-approximating analysis: every value any write could store, after as
many propagation rounds as the test has instructions (a value flows through at most that many
writes in one execution). Bucket index = mixed radix over the variables, the last variable
varying fastest.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ast import And, Const, Eq, LitmusTest, MemRef, Not, Or, RegRef
from ..errors import HarnessError
from .emit import AbsState, opspec

MAX_VALUES = 64          # per variable
MAX_BUCKETS = 1 << 14    # product over the variables

Outcome = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Var:
    """An observed variable: a register (`thread`:`name`) or a final memory value (`name`)."""

    name: str
    thread: str | None = None

    def __str__(self) -> str:
        return f"{self.thread}:{self.name}" if self.thread else self.name


@dataclass(frozen=True)
class OutcomeSpace:
    vars: tuple[Var, ...]
    domains: tuple[tuple[int, ...], ...]      # sorted values per variable

    @property
    def size(self) -> int:
        n = 1
        for d in self.domains:
            n *= len(d)
        return n

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(str(v) for v in self.vars)

    def index(self, values: tuple[int, ...]) -> int | None:
        """Bucket of a tuple of observed values (None: outside the space, the `other` bucket)."""
        idx = 0
        for v, dom in zip(values, self.domains):
            hits = [k for k, d in enumerate(dom) if (d - v) % 2**32 == 0]
            if not hits:
                return None
            idx = idx * len(dom) + hits[0]
        return idx

    def decode(self, index: int) -> Outcome:
        """The outcome of bucket `index`: ((var, value), ...) in variable order."""
        if not 0 <= index < self.size:
            raise HarnessError(f"bucket {index} outside the outcome space (size {self.size})")
        vals = []
        for dom in reversed(self.domains):
            index, k = divmod(index, len(dom))
            vals.append(dom[k])
        return tuple(zip(self.names, reversed(vals)))


def cond_vars(cond, out: list) -> None:
    if isinstance(cond, Eq):
        ref = cond.lhs
        v = Var(ref.reg, ref.thread) if isinstance(ref, RegRef) else Var(ref.name)
        if v not in out:
            out.append(v)
    elif isinstance(cond, Not):
        cond_vars(cond.arg, out)
    elif isinstance(cond, (And, Or)):
        for a in cond.args:
            cond_vars(a, out)


def eval_cond(cond, valuation: dict[str, int]) -> bool:
    """Truth of a condition under `valuation` (var name -> value; registers never written read 0)."""
    if isinstance(cond, Const):
        return cond.value
    if isinstance(cond, Eq):
        ref = cond.lhs
        name = f"{ref.thread}:{ref.reg}" if isinstance(ref, RegRef) else ref.name
        return (valuation.get(name, 0) - cond.value) % 2**32 == 0
    if isinstance(cond, Not):
        return not eval_cond(cond.arg, valuation)
    if isinstance(cond, And):
        return all(eval_cond(a, valuation) for a in cond.args)
    if isinstance(cond, Or):
        return any(eval_cond(a, valuation) for a in cond.args)
    raise HarnessError(f"unknown condition node {cond!r}")


def observed_vars(test: LitmusTest) -> list[Var]:
    """The condition's variables; without expectations, every destination register and every
    location that is written."""
    out: list[Var] = []
    for e in test.expectations:
        cond_vars(e.cond, out)
    if out or test.expectations:
        return out
    from ..ast import Reg
    for t in test.threads:
        for i in t.code:
            if i.operands and isinstance(i.operands[0], Reg) and i.op not in ("st", "red", "bar", "barrier"):
                v = Var(i.operands[0].name, t.name)
                if v not in out:
                    out.append(v)
    for m in test.memory:
        if m.mbarrier is None and m.tensormap is None:
            out.append(Var(m.name))
    return out


def analyse(test: LitmusTest) -> AbsState:
    """Over-approximate value sets of every location and (final) register."""
    mem: dict = {m.name: {m.init} for m in test.memory}
    rounds = sum(len(t.code) for t in test.threads) + 1
    final_regs: dict[str, dict] = {}
    for _ in range(rounds):
        before = {k: (None if v is None else frozenset(v)) for k, v in mem.items()}
        for t in test.threads:
            s = AbsState(mem, {})
            for i in t.code:
                opspec(i).values(i, s)
            final_regs[t.name] = s.regs
        if before == {k: (None if v is None else frozenset(v)) for k, v in mem.items()}:
            break
        if any(v is not None and len(v) > MAX_VALUES for v in mem.values()):
            break
    return AbsState(mem, {f"{t}:{r}": v for t, regs in final_regs.items() for r, v in regs.items()})


def outcome_space(test: LitmusTest) -> OutcomeSpace:
    """The variables and value domains of `test`; HarnessError when the space is too large or a
    variable's value is opaque."""
    state = analyse(test)
    doms = []
    variables = observed_vars(test)
    for v in variables:
        vals = state.regs.get(str(v), {0}) if v.thread else state.mem.get(v.name, {0})
        if vals is None:
            raise HarnessError(f"{v}: its value is opaque (an mbarrier state or similar), "
                               f"so the device cannot bucket it")
        if len(vals) > MAX_VALUES:
            raise HarnessError(f"{v}: more than {MAX_VALUES} possible values")
        uniq = {}
        for x in sorted(vals):
            uniq.setdefault(x % 2**32, x)
        doms.append(tuple(sorted(uniq.values())))
    space = OutcomeSpace(tuple(variables), tuple(doms))
    if space.size > MAX_BUCKETS:
        raise HarnessError(f"outcome space of {space.size} buckets exceeds {MAX_BUCKETS}")
    return space
