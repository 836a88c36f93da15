"""Control flow of a litmus thread as the harness generates it (labels, `bra`, `@p`/`@!p` guards,
`setp`): which branches go backward (spin loops, bounded on the device by a spin counter), which
instructions run exactly once on every path that finishes, and what the harness refuses.

A backward branch taken more than SPIN_CAP times (counted per thread, over all its loops) gives
up: the thread jumps to its end and the instance is recorded as `hang` ("did not exit within
SPIN_CAP spins"), never as a stuck GPU. A thread that gives up skips every instruction after the
loop, so what the harness accounts for statically (barriers, whose other participants would
block forever, and the arrivals and transaction bytes that the epilogue's mbarrier wait and
checker.harness.static_check count, checker.harness.mbarriers) must run exactly once and before
the thread's first backward branch. Only instructions whose repetition or omission the harness
does not account for may sit in a loop, behind a guard or after a forward branch: loads, stores,
atomics, fences, register arithmetic (`not` and `selp` included), `setp`, `bra`, `nanosleep` (a
spin loop's back-off), `prefetch`, and mbarrier phase tests.

Pure: no code is emitted here (checker.harness.codegen does that).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ast import Instr, Reg, Thread

# Instructions that may run zero times or repeatedly (see the module docstring).
REPEATABLE_OPS = frozenset({"ld", "st", "atom", "red", "fence", "membar", "mov", "add", "sub", "mul", "and",
                            "or", "xor", "not", "selp", "setp", "bra", "nanosleep", "prefetch"})
SETP_CMPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"})
SETP_TYPES = frozenset({"s32", "u32", "b32", "s64", "u64", "b64"})


@dataclass(frozen=True)
class Flow:
    """One thread's control flow."""

    labels: dict[str, int]               # label -> index of the instruction it precedes
    backward: frozenset[int]             # indices of branches to a label at or before them
    once: frozenset[int]                 # instructions that run exactly once on every finishing path
    in_loop: frozenset[int]              # instructions between a backward branch and its label
    first_loop: int | None               # index of the thread's first backward branch (None: no loop)

    @property
    def loops(self) -> bool:
        return bool(self.backward)


def target(i: Instr) -> str | None:
    """The label a `bra` jumps to."""
    if i.op != "bra" or not i.operands:
        return None
    return getattr(i.operands[0], "name", None)


def analyse(t: Thread) -> Flow:
    labels = {name: idx for name, idx in t.labels}
    n = len(t.code)
    backward, skippable, repeated = set(), set(), set()
    for b, i in enumerate(t.code):
        lab = target(i)
        if lab is None or lab not in labels:
            continue
        to = labels[lab]
        if to <= b:
            backward.add(b)
            repeated.update(range(to, b + 1))
        else:
            skippable.update(range(b + 1, to))
    guarded = {k for k, i in enumerate(t.code) if i.predicate}
    once = frozenset(set(range(n)) - backward - skippable - repeated - guarded)
    return Flow(labels, frozenset(backward), once, frozenset(repeated), min(backward) if backward else None)


def _accounted(i: Instr) -> bool:
    """Does the harness account for this instruction statically (it must run exactly once)?"""
    if i.op in REPEATABLE_OPS:
        return i.op in ("st", "red") and i.has("async")       # st.async/red.async complete on an mbarrier
    if i.op == "mbarrier":
        return i.qualifiers[:1] not in (("try_wait",), ("test_wait",))
    return True


def problems(t: Thread) -> list[str]:
    """Why the harness cannot generate this thread's control flow (empty: it can)."""
    if not t.branches:
        return []
    f = analyse(t)
    out = []
    written = {i.operands[0].name for i in t.code if i.operands and isinstance(i.operands[0], Reg)}
    for k, i in enumerate(t.code):
        where = f"{t.name}:{k} '{i.text}'"
        if i.predicate and i.predicate.lstrip("@!") not in written:
            out.append(f"{where}: the predicate {i.predicate.lstrip('@!')} is never set in this thread")
        if i.op == "bra" and target(i) not in f.labels:
            out.append(f"{where}: branch to an unknown label")
        if i.op == "setp":
            cmp_ = [q for q in i.qualifiers if q in SETP_CMPS]
            types = [q for q in i.qualifiers if q in SETP_TYPES]
            if len(cmp_) != 1 or len(types) != 1 or len(i.qualifiers) != 2 or len(i.operands) != 3:
                out.append(f"{where}: only setp.CMP.TYPE p, a, b (integer types, no combining "
                           f"operation or second destination) is generated")
        if i.await_value is not None and k not in f.once:
            out.append(f"{where}: an await (== v) in a loop, behind a guard or after a forward branch is not "
                       f"generated (write the wait as a loop)")
        if not _accounted(i):
            continue
        if k not in f.once:
            out.append(f"{where}: {i.op} in a loop, behind a guard or after a forward branch is not generated: "
                       f"the harness accounts for it statically (barriers, mbarrier arrivals and transaction "
                       f"bytes), so it must run exactly once (a skipped barrier would block the other "
                       f"threads on the GPU forever)")
        elif f.first_loop is not None and k > f.first_loop:
            out.append(f"{where}: {i.op} after a spin loop is not generated: a loop that gives up after "
                       f"SPIN_CAP spins skips it (a skipped barrier or arrival would leave other threads "
                       f"or the epilogue waiting forever)")
    return out


MAX_STATES = 20000


def reachable(test, t: Thread) -> set[int] | None:
    """The indices of `t`'s instructions some execution reaches, when guards are decided by the
    registers the thread computes without memory (checker.isa.fold: `%tid`, constants, setp on
    them), as the model decides them; None when the walk does not settle within MAX_STATES
    states (then every instruction counts as reachable). The harness virtualizes special
    registers into these constants, so ptxas deletes the other paths: the SASS check must not ask
    for their instructions."""
    from ..isa import fold
    folder = fold.Folder(test, t)
    labels = dict(t.labels)
    seen: set = set()
    out: set[int] = set()
    todo = [(0, ())]
    while todo:
        pc, env_items = todo.pop()
        if pc >= len(t.code) or (pc, env_items) in seen:
            continue
        seen.add((pc, env_items))
        if len(seen) > MAX_STATES:
            return None
        out.add(pc)
        env = dict(env_items)
        i = t.code[pc]
        known = None
        if i.predicate:
            reg = i.predicate.lstrip("@!")
            v = fold.value(env, reg)
            known = None if v is None else (v != 0) != i.predicate.startswith("@!")
        if i.op == "bra":
            dest = labels.get(target(i) or "")
            nexts = [] if dest is None else [dest]
            if known is None and i.predicate:
                nexts.append(pc + 1)
            elif known is False:
                nexts = [pc + 1]
            for n in nexts:
                todo.append((n, env_items))
            continue
        if known is False:
            todo.append((pc + 1, env_items))
            continue
        new = dict(folder.step(env, replace(i, predicate=None)))
        if known is None and i.predicate:          # it may not run: a register it changes is unknown
            for r, v in list(new.items()):
                if env.get(r) != v:
                    new[r] = None
        todo.append((pc + 1, tuple(sorted(new.items(), key=lambda kv: kv[0]))))
    return out
