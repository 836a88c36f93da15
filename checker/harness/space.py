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

from ..ast import And, Const, Eq, EqRef, LitmusTest, Not, Or, RegRef
from ..errors import HarnessError
from .emit import opspec
from .transfer import MAX_PAIRS, AbsState

MAX_VALUES = 64          # per variable
MAX_BUCKETS = 1 << 14    # product over the variables
LOOP_ROUNDS = 4 * MAX_VALUES   # fixpoint rounds of a test with loops

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

    def values_of(self, outcome) -> tuple[int, ...]:
        """A model outcome ((name, value) pairs or a dict) as values in variable order. A name the
        outcome leaves out is one the model does not observe: a register never written (0), or a
        location that holds only its initial value -- the one value of its domain here."""
        o = dict(outcome)
        return tuple(o.get(n, d[0] if len(d) == 1 else 0) for n, d in zip(self.names, self.domains))

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
    if isinstance(cond, (Eq, EqRef)):
        for ref in (cond.lhs, cond.rhs) if isinstance(cond, EqRef) else (cond.lhs,):
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
    if isinstance(cond, EqRef):
        a, b = (f"{r.thread}:{r.reg}" if isinstance(r, RegRef) else r.name for r in (cond.lhs, cond.rhs))
        return (valuation.get(a, 0) - valuation.get(b, 0)) % 2**32 == 0
    if isinstance(cond, Not):
        return not eval_cond(cond.arg, valuation)
    if isinstance(cond, And):
        return all(eval_cond(a, valuation) for a in cond.args)
    if isinstance(cond, Or):
        return any(eval_cond(a, valuation) for a in cond.args)
    raise HarnessError(f"unknown condition node {cond!r}")


def observed_vars(test: LitmusTest) -> list[Var]:
    """The condition's variables; without expectations, every destination register and every
    plain location (not mbarriers, tensor maps or virtual aliases of another location)."""
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
    skip = set(map_tables(test)) | set(alias_roots(test))
    for m in test.memory:
        if m.mbarrier is None and m.name not in skip:
            out.append(Var(m.name))
    return out


def alias_roots(test: LitmusTest) -> dict[str, str]:
    """Virtual alias -> the location whose memory it maps (alias chains followed)."""
    decl = {m.name: m for m in test.memory}
    out = {}
    for m in test.memory:
        seen, cur = {m.name}, m
        while cur.alias_of and cur.alias_of in decl and cur.alias_of not in seen:
            seen.add(cur.alias_of)
            cur = decl[cur.alias_of]
        if cur is not m:
            out[m.name] = cur.name if not cur.alias_of else cur.alias_of
    return out


def map_tables(test: LitmusTest) -> dict[str, dict[int, str]]:
    """Tensor maps -> {value: global buffer}. Declared maps (`tensormap:`) give their table; a
    shared location that `tensormap.replace` edits or `tensormap.cp_fenceproxy` copies from is a
    map too, with the table of the global map it is copied to."""
    from ..ast import Addr
    tables = {m.name: {int(k): str(v) for k, v in m.tensormap.items()} for m in test.memory if m.tensormap is not None}
    edited = []
    for t in test.threads:
        for i in t.code:
            if i.op == "tensormap" and i.operands and isinstance(i.operands[0], Addr):
                if i.qualifiers[:1] == ("replace",):
                    edited.append(i.operands[0].base)
                elif i.qualifiers[:1] == ("cp_fenceproxy",) and len(i.operands) > 1 and isinstance(i.operands[1], Addr):
                    src, dst = i.operands[1].base, i.operands[0].base
                    edited.append(src)
                    if dst in tables and src not in tables:
                        tables[src] = dict(tables[dst])
    for name in edited:
        tables.setdefault(name, {})
    return tables


def analyse(test: LitmusTest) -> tuple[dict, dict]:
    """Over-approximate value sets: (location -> values, 'thread:reg' -> final values); a set is
    None when opaque. In a thread with control flow (checker.harness.flow) a register keeps its
    earlier values besides each new one (an instruction may be skipped), and a thread with loops
    is interpreted until its registers settle; HarnessError when loops keep producing new
    values past LOOP_ROUNDS rounds."""
    from .flow import analyse as flow_of
    from .mbarriers import multicast_targets
    roots = alias_roots(test)
    mem: dict = {m.name: {(m.init, frozenset())} for m in test.memory if m.name not in roots}
    flows = {t.name: flow_of(t) for t in test.threads if t.branches}
    loops = any(f.loops for f in flows.values())

    def snapshot():
        return {k: (None if v is None else frozenset(v)) for k, v in mem.items()}

    rounds = LOOP_ROUNDS if loops else sum(len(t.code) for t in test.threads) + 1
    final: dict[str, set | None] = {}
    for _ in range(rounds):
        before = snapshot()
        for t in test.threads:
            s = AbsState(mem, {}, roots=roots, maps=map_tables(test),
                         multicast=lambda i, name, _p=t.position: multicast_targets(test, i, _p, name)[0])
            f = flows.get(t.name)
            for _ in range(LOOP_ROUNDS if f is not None and f.loops else 1):
                regs_before = {k: (None if v is None else frozenset(v)) for k, v in s.regs.items()}
                for idx, i in enumerate(t.code):
                    s.here = (t.name, idx)
                    if f is None:
                        opspec(i).values(i, s)
                        continue
                    s.repeat = idx in f.in_loop
                    old = dict(s.regs)
                    opspec(i).values(i, s)
                    for r, v in s.regs.items():          # weak update: the old value may survive
                        if v is not old.get(r):
                            prev = old.get(r, {(0, frozenset())})
                            s.regs[r] = None if v is None or prev is None or len(v | prev) > MAX_PAIRS \
                                else set(v) | set(prev)
                if {k: (None if v is None else frozenset(v)) for k, v in s.regs.items()} == regs_before:
                    break
            else:
                if f is not None and f.loops:
                    raise HarnessError(f"{t.name}: the values its loops produce do not settle within "
                                       f"{LOOP_ROUNDS} rounds (more than the device can bucket)")
            for r, v in s.regs.items():
                final[f"{t.name}:{r}"] = v
        if snapshot() == before:
            break
    else:
        if loops:
            raise HarnessError(f"the values the test's loops store do not settle within {LOOP_ROUNDS} rounds "
                               f"(more than the device can bucket)")

    def plain(v):
        return None if v is None else {x for x, _ in v}

    return {k: plain(v) for k, v in mem.items()}, {k: plain(v) for k, v in final.items()}


def outcome_space(test: LitmusTest) -> OutcomeSpace:
    """The variables and value domains of `test`; HarnessError when the space is too large or a
    variable's value is opaque."""
    mem, regs = analyse(test)
    doms = []
    variables = observed_vars(test)
    roots = alias_roots(test)
    for v in variables:
        vals = regs.get(str(v), {0}) if v.thread else mem.get(roots.get(v.name, v.name), {0})
        if vals is None:
            raise HarnessError(f"{v}: its value is opaque (an mbarrier state, or more values than the harness "
                               f"tracks, from arithmetic, a chain of RMWs or a loop), so the device cannot bucket it")
        if len(vals) > MAX_VALUES:
            raise HarnessError(f"{v}: more than {MAX_VALUES} possible values")
        wide = [x for x in vals if not -(2**31) <= x < 2**32]
        if wide:
            # Observed values are 32-bit words on the device: a value that needs more bits would be
            # bucketed by its low half, merging outcomes the model tells apart (review D16).
            raise HarnessError(f"{v}: value {wide[0]} needs more than 32 bits; the device observes 32-bit words")
        uniq = {}
        for x in sorted(vals):
            uniq.setdefault(x % 2**32, x)
        doms.append(tuple(sorted(uniq.values())))
    space = OutcomeSpace(tuple(variables), tuple(doms))
    if space.size > MAX_BUCKETS:
        raise HarnessError(f"outcome space of {space.size} buckets exceeds {MAX_BUCKETS}")
    return space


def fingerprint(test: LitmusTest) -> str:
    """A short hash of what a hardware run of `test` depends on (threads, positions, code, memory,
    conditions, observed variables): a histogram carries it, and compare/import refuse a histogram
    whose test has changed since (a stale or foreign histogram would read missing variables as 0)."""
    import hashlib
    parts = [test.name]
    for t in test.threads:
        p = t.position
        parts.append(f"T {t.name} {p.gpu}.{p.cluster}.{p.cta}.{p.warp}: " + " ; ".join(i.text for i in t.code))
    for m in test.memory:
        parts.append(f"M {m.name} {m.space} {m.owner} {m.init} {m.alias_of} {m.view} {m.view_of} "
                     f"{dict(m.mbarrier) if m.mbarrier is not None else None} "
                     f"{dict(m.tensormap) if m.tensormap is not None else None} {m.offset_of}")
    parts += [f"E {e.kind} {e.text}" for e in test.expectations]
    parts.append("V " + " ".join(str(v) for v in observed_vars(test)))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
