"""Barrier generations (the PTX rules of bar/barrier, bar.warp.sync, barrier.cluster arrivals):
which arrivals complete each generation of a CTA barrier (bar, barrier),
a warp barrier (bar.warp.sync) or the cluster barrier (barrier.cluster), decided by running the
threads' barrier operations in every order (docs/model.md#a19).

A barrier resource counts arrivals. A generation completes when
- a counted CTA barrier (`bar.sync a, b`, `bar.arrive a, b`, `bar.red`) has received `b` PTX
  threads' arrivals (a litmus thread stands for `threads_per_litmus_thread` of them);
- a CTA barrier without a count, a warp barrier, or the cluster barrier has an arrival from every
  member that has not exited (PTX ISA, bar/barrier, bar.warp.sync, barrier.cluster: "all
  non-exited threads"); a thread exits once it has no barrier operation left.
`bar.sync`/`bar.red` arrive and wait for their own generation, `bar.arrive` and
`barrier.cluster.arrive` arrive only, `barrier.cluster.wait` waits for the generation of the
thread's latest arrival. When a barrier is shared by more threads than one generation takes, which
of them form each generation is decided at run time: every order of arrivals is explored and
each distinct assignment of arrivals to generations is one `Schedule`. A schedule in which some
thread waits forever (its generation never gets its arrivals: a count larger than the threads
that come, a barrier reached on one path only, a cross-barrier deadlock) is blocked: a hang.

The engine never sees this: the chosen schedule only decides the synchronisation pairs the
builder records (syncbar, syncwarp, clusterbar). A test whose barriers meet in several ways, or
block, has one straight-line variant per way (checker.unfold.variants), each naming its
generations, so that lowering does not explore them again.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import limits
from ..ast import Imm, Instr, LitmusTest
from ..errors import LimitExceeded, LitmusError, NeverCompletes

FAMILIES = ("bar", "barrier", "bar.warp", "barrier.cluster")


@dataclass(frozen=True)
class Use:
    """One barrier operation of a thread."""

    thread: str
    index: int                 # its position in the thread's code
    key: tuple                 # the barrier resource: ("cta", cta, id) | ("warp", position, mask) | ("cluster", c)
    kind: str                  # "sync" (arrive and wait), "arrive", "wait" (a cluster wait)
    weight: int                # the PTX threads the arrival stands for
    need: int | None           # PTX threads' arrivals that complete a generation; None: every non-exited member
    instr: Instr


@dataclass(frozen=True)
class Schedule:
    """One way the barrier operations meet: the generation of each use (thread, code index,
    generation of its resource), and the uses that never return (empty: no thread is stuck)."""

    generation: tuple[tuple[str, int, int], ...]
    blocked: tuple[Use, ...] = ()
    leftover: tuple[Use, ...] = ()   # arrivals of a generation that never completes, no one waiting on it
    choice: str = ""           # the generations' members, where there was a choice
    why: str = ""              # a blocked schedule: what its first stuck thread waits for

    def describe(self) -> str:
        return self.choice


def name(key: tuple) -> str:
    if key[0] == "cta":
        return f"barrier {key[2]}"
    if key[0] == "warp":
        return f"bar.warp.sync {key[2]:#x}"
    return "barrier.cluster"


def uses(test: LitmusTest) -> dict[str, list[Use]]:
    """Every thread's barrier operations, in program order."""
    out: dict[str, list[Use]] = {}
    n = test.threads_per_litmus_thread
    for t in test.threads:
        mine = out.setdefault(t.name, [])
        pos = t.position
        for k, i in enumerate(t.code):
            if i.family in ("bar", "barrier"):
                mode = i.quals["mode"]
                ops = list(i.operands[1:-1] if mode == "red" else i.operands)
                bid = ops[0].value
                count = ops[1].value if len(ops) > 1 and isinstance(ops[1], Imm) else None
                if count is not None and count % n:
                    raise LitmusError(f"the barrier's thread count {count} is not a multiple of "
                                      f"threads_per_litmus_thread ({n}): counts are in PTX threads, and each "
                                      "litmus thread stands for that many", i.where)
                mine.append(Use(t.name, k, ("cta", pos.cta_key(), bid), "arrive" if mode == "arrive" else "sync",
                                n, count, i))
            elif i.family == "bar.warp":
                mask = i.operands[0].value if isinstance(i.operands[0], Imm) else 0xFFFFFFFF
                mine.append(Use(t.name, k, ("warp", pos, mask), "sync", 1, None, i))
            elif i.family == "barrier.cluster":
                mode = i.quals["mode"]
                mine.append(Use(t.name, k, ("cluster", pos.cluster_key()), mode, 1, None, i))
    return _one_count(test, out)


def _one_count(test: LitmusTest, per: dict[str, list[Use]]) -> dict[str, list[Use]]:
    """Every use of a CTA barrier gives the same thread count. A use without a count among uses
    with one stands for every thread of the CTA: allowed when the count is exactly that (then the
    barrier is counted throughout), refused otherwise."""
    counts: dict[tuple, set] = {}
    first: dict[tuple, Use] = {}
    for us in per.values():
        for u in us:
            if u.key[0] == "cta":
                counts.setdefault(u.key, set()).add(u.need)
                first.setdefault(u.key, u)
    fixed = {}
    for key, cs in counts.items():
        given = cs - {None}
        if len(given) > 1 or given and None in cs and \
                next(iter(given)) != len(_members(test, key)) * test.threads_per_litmus_thread:
            shown = ", ".join("no count" if c is None else str(c) for c in sorted(cs, key=lambda c: (c is not None, c)))
            u = next(u for us in per.values() for u in us if u.key == key and u.need != first[key].need)
            raise LitmusError(f"{name(key)} is used with different thread counts ({shown}; "
                              f"'{first[key].instr.text}' and '{u.instr.text}'): every thread taking part in a "
                              "barrier gives the same count (no count stands for every thread of the CTA)",
                              u.instr.where)
        if given and None in cs:
            fixed[key] = next(iter(given))
    if not fixed:
        return per
    return {t: [replace(u, need=fixed[u.key]) if u.key in fixed else u for u in us] for t, us in per.items()}


def _members(test: LitmusTest, key: tuple) -> tuple[str, ...]:
    """The threads a generation without a count waits for (those that have not exited)."""
    if key[0] == "cta":
        return tuple(t.name for t in test.threads if t.position.cta_key() == key[1])
    if key[0] == "warp":
        lanes = [t.name for t in test.threads if t.position == key[1]]
        return tuple(x for j, x in enumerate(lanes) if key[2] >> j & 1)
    return tuple(t.name for t in test.threads if t.position.cluster_key() == key[1])


def _check_static(test: LitmusTest, per: dict[str, list[Use]]) -> None:
    """What no schedule can make right: a lane outside its warp barrier's mask, a cluster wait with no arrival before it, two cluster arrivals
    without a wait between them."""
    for t, us in per.items():
        last = None
        for u in us:
            if u.key[0] == "warp" and t not in _members(test, u.key):
                raise LitmusError(f"bar.warp.sync: this thread is not in the mask {u.key[2]:#x}", u.instr.where)
            if u.key[0] == "cluster":
                if u.kind == "wait" and last != "arrive":
                    raise NeverCompletes("barrier.cluster.wait without an earlier barrier.cluster.arrive of this "
                                         "thread: it would never complete" + _left_waiting(test, per, t, u),
                                         u.instr.where)
                if u.kind == "arrive" and last == "arrive":
                    raise LitmusError("barrier.cluster.arrive twice without a barrier.cluster.wait between them: "
                                      "ptxmc does not model it (a thread arrives, then waits)", u.instr.where)
                last = u.kind


def _left_waiting(test: LitmusTest, per: dict[str, list[Use]], t: str, bad: Use) -> str:
    """The other threads a cluster wait without an arrival blocks: thread `t` arrives only as
    often as it did before `bad`, so the next generation never completes, and every member waiting
    for it waits forever (its wait after that many arrivals)."""
    came = sum(1 for u in per[t] if u.key == bad.key and u.kind == "arrive" and u.index < bad.index)
    stuck = [(t, bad)]
    for m in _members(test, bad.key):
        waits = [u for u in per.get(m, ()) if u.key == bad.key and u.kind == "wait"]
        arrives = [u for u in per.get(m, ()) if u.key == bad.key and u.kind == "arrive"]
        if m != t and len(waits) > came and len(arrives) > came and arrives[came].index < waits[came].index:
            stuck.append((m, waits[came]))
    if len(stuck) == 1:
        return ""
    who = " and ".join(f"{m} (line {u.instr.where.line if u.instr.where else '?'})" for m, u in stuck)
    return (f"; {name(bad.key)} generation {came + 1} never completes: it needs an arrival from every member "
            f"that has not exited ({', '.join(_members(test, bad.key))}), and {t} never arrives; {who} wait forever")


@dataclass
class _State:
    pos: dict
    blocked: dict          # thread -> (key, generation) it waits for
    pending: dict          # key -> tuple of (thread, index, weight) arrived in the current generation
    done: dict             # key -> generations completed
    last: dict             # thread -> generation of its latest cluster arrival
    assigned: dict         # (thread, index) -> generation

    def frozen(self):
        return (tuple(sorted(self.pos.items())), tuple(sorted(self.blocked.items(), key=repr)),
                tuple(sorted(((k, v) for k, v in self.pending.items() if v), key=repr)),
                tuple(sorted(self.done.items(), key=repr)), tuple(sorted(self.last.items())),
                tuple(sorted(self.assigned.items())))

    def copy(self) -> "_State":
        return _State(dict(self.pos), dict(self.blocked), dict(self.pending), dict(self.done), dict(self.last),
                      dict(self.assigned))


def schedules(test: LitmusTest, spinning: frozenset[str] = frozenset()) -> list[Schedule]:
    """Every distinct way the barrier operations of straight-line `test` form generations, in a
    fixed order. `spinning`: threads that never exit (a loop the unrolling bound cut)."""
    per = uses(test)
    if not any(per.values()):
        return [Schedule(())]
    _check_static(test, per)
    members = {u.key: _members(test, u.key) for us in per.values() for u in us}
    need = {u.key: u.need for us in per.values() for u in us}
    by = {(u.thread, u.index): u for us in per.values() for u in us}
    cap = limits.current().paths
    start = _State({t: 0 for t in per}, {}, {}, {}, {}, {})
    seen, finals = set(), {}
    stack = [start]
    while stack:
        s = stack.pop()
        f = s.frozen()
        if f in seen:
            continue
        seen.add(f)
        if len(seen) > 50 * cap:
            raise LimitExceeded(f"too large: more than {50 * cap} states of the barriers' arrivals "
                                "(raise it with --limit paths=N)")
        moved = False
        for t, us in per.items():
            if t in s.blocked or s.pos[t] >= len(us):
                continue
            moved = True
            stack.append(_step(s, us[s.pos[t]], per, members, need, spinning))
        if not moved:
            blocked = tuple(per[t][s.pos[t] - 1] for t in sorted(s.blocked))   # the use it is stuck in
            # schedules that group the arrivals alike are one (generations are not ordered by the model)
            stuck = tuple((u.thread, u.index) for u in blocked)
            key = (_partition(s.assigned, by), stuck)
            left = tuple(by[(t, i)] for _, arrivals in sorted(s.pending.items(), key=repr)
                         for t, i, _ in arrivals if (t, i) not in stuck)
            x = Schedule(tuple((t, i, g) for (t, i), g in sorted(s.assigned.items())), blocked, left)
            if key not in finals or x.generation < finals[key].generation:
                finals[key] = x
                if len(finals) > cap:
                    raise LimitExceeded(f"too large: more than {cap} ways the barriers' arrivals form generations "
                                        "(raise it with --limit paths=N)")
    out = sorted(finals.values(), key=lambda x: (len(x.blocked), x.generation, [(u.thread, u.index) for u in x.blocked]))
    out = [replace(x, why=_blocked_message(x, test, by)) if x.blocked else x for x in out]
    if len(out) > 1:
        out = [replace(x, choice=_choice(x, by)) for x in out]
    return out


def _partition(assigned: dict, by: dict) -> frozenset:
    """The groups of uses that share a generation, per resource."""
    groups: dict[tuple, set] = {}
    for use, g in assigned.items():
        groups.setdefault((by[use].key, g), set()).add(use)
    return frozenset((k, frozenset(v)) for (k, _), v in groups.items())


def _step(s: _State, u: Use, per, members, need, spinning) -> _State:
    s = s.copy()
    t = u.thread
    s.pos[t] += 1
    g = s.done.get(u.key, 0)
    if u.kind == "wait":
        g = s.last[t]
        s.assigned[(t, u.index)] = g
        if s.done.get(u.key, 0) <= g:
            s.blocked[t] = (u.key, g)
    else:
        s.assigned[(t, u.index)] = g
        s.pending[u.key] = s.pending.get(u.key, ()) + ((t, u.index, u.weight),)
        if u.kind == "sync":
            s.blocked[t] = (u.key, g)
        if u.key[0] == "cluster":
            s.last[t] = g
    _settle(s, per, members, need, spinning)
    return s


def _settle(s: _State, per, members, need, spinning) -> None:
    """Complete every generation that has its arrivals, until nothing changes."""
    changed = True
    while changed:
        changed = False
        exited = {t for t, us in per.items() if s.pos[t] >= len(us) and t not in s.blocked and t not in spinning}
        for key, arrivals in list(s.pending.items()):
            if not arrivals:
                continue
            if need[key] is not None:
                full = sum(w for _, _, w in arrivals) >= need[key]
            else:
                came = {t for t, _, _ in arrivals}
                full = all(m in came or m in exited for m in members[key])
            if full:
                g = s.done.get(key, 0)
                s.done[key] = g + 1
                s.pending[key] = ()
                for t, (k, wg) in list(s.blocked.items()):
                    if k == key and wg <= g:
                        del s.blocked[t]
                changed = True


def _choice(x: Schedule, by: dict) -> str:
    """The generations' members, as `barrier 1: P0+P1, then P0+P2`."""
    gens: dict[tuple, dict[int, list[str]]] = {}
    for t, i, g in x.generation:
        u = by[(t, i)]
        if u.kind != "wait":
            gens.setdefault(u.key, {}).setdefault(g, []).append(t)
    parts = []
    for key in sorted(gens, key=repr):
        parts.append(f"{name(key)}: " + ", then ".join("+".join(gens[key][g]) for g in sorted(gens[key])))
    return "; ".join(parts)


def _blocked_message(x: Schedule, test: LitmusTest, by: dict) -> str:
    """What the stuck threads of a blocked schedule wait for, one generation at a time (`by`:
    each use by (thread, code index))."""
    waiting: dict[tuple, list[Use]] = {}
    for u in x.blocked:
        g = next(gg for t, i, gg in x.generation if (t, i) == (u.thread, u.index))
        waiting.setdefault((u.key, g), []).append(u)
    parts = []
    for (key, g), us in waiting.items():
        came = [t for t, i, gg in x.generation if gg == g and by[(t, i)].key == key and by[(t, i)].kind != "wait"]
        who = "+".join(came) or "none"
        if us[0].need is not None:
            n = test.threads_per_litmus_thread
            want = f"{us[0].need} threads' arrivals, {len(came) * n} arrive ({who}"
            if us[0].need > len(_members(test, key)) * n:      # more than the CTA has: say how counts are read
                want += (f"; counts are in PTX threads, and each litmus thread stands for {n}: "
                         f"threads_per_litmus_thread: {n}{'' if n > 1 else ', the default'}")
            want += ")"
        else:
            want = f"an arrival from every member that has not exited ({', '.join(_members(test, key))}); arrived: {who}"
        stuck = " and ".join(f"{u.thread} (line {u.instr.where.line if u.instr.where else '?'})" for u in us)
        parts.append(f"{name(key)} generation {g + 1} never completes: it needs {want}; {stuck} "
                     f"wait{'s' if len(us) == 1 else ''} forever")
    return "; ".join(parts)


def chosen(test: LitmusTest) -> Schedule:
    """The schedule to build `test` with: the one it names (a variant of checker.unfold.variants
    names it: explored once, there), or its only one (a straight-line test handed to lowering
    directly). NeverCompletes if its only schedule blocks; LitmusError if several are possible
    (then the test has one variant per schedule: checker.unfold.variants)."""
    if test.barrier_generations is not None:
        return Schedule(test.barrier_generations)
    all_ = schedules(test)
    if len(all_) == 1:
        x = all_[0]
        if x.blocked:
            raise NeverCompletes(x.why, x.blocked[0].instr.where)
        return x
    where = next(v for us in uses(test).values() for v in us).instr.where
    raise LitmusError(f"which arrivals complete each barrier generation is decided at run time ({len(all_)} ways): "
                      "each way is one straight-line variant of the test (checker.unfold.variants), not one "
                      "test to lower", where)


# -- building: the synchronisation pairs of the chosen schedule --------------------------------

def record(b, ctx, event: int) -> None:
    """Note the B event of the barrier operation being lowered; the pairs are made once every
    thread is lowered (match)."""
    b.finalize("barriers", match)[(ctx.thread.name, ctx.index)] = event


_RELATION = {"cta": "syncbar", "warp": "syncwarp", "cluster": "clusterbar"}


def match(b) -> None:
    """The pairs of each generation of the chosen schedule: in a CTA generation every arrival
    with every other member's wait (syncbar); in a warp generation every member with every other
    (syncwarp); in a cluster generation every arrival with every other thread's wait of it
    (clusterbar)."""
    events = b.ext["barriers"]
    per = uses(b.test)
    by = {(u.thread, u.index): u for us in per.values() for u in us}
    groups: dict[tuple, list[tuple[Use, int]]] = {}
    for t, i, g in chosen(b.test).generation:
        if (t, i) in events:
            u = by[(t, i)]
            groups.setdefault((u.key, g), []).append((u, events[(t, i)]))
    for (key, _), members in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        rel = b.pairs[_RELATION[key[0]]]
        for u, x in members:
            for v, y in members:
                if u.thread == v.thread:
                    continue
                if key[0] == "cta" and v.kind == "sync" or key[0] == "warp" or \
                        key[0] == "cluster" and u.kind == "arrive" and v.kind == "wait":
                    rel.add((x, y))
