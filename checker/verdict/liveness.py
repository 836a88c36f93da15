"""Liveness of a test asked over its straight-line variants (checker.verdict.union): may some
fair execution never terminate (docs/model.md#a18, #a19)?

A thread hangs in a side-effect-free spin loop when an execution exists in which its last
unrolled iteration reads the coherence-latest value of each location it loads (the final value)
and, for an mbarrier wait, finds the final mbarrier state incomplete, and still does not exit;
every other thread has finished or hangs the same way (Lahav et al., "Making Weak Memory Models
Fair", OOPSLA 2021). A thread also hangs at a barrier whose generation never completes. Each
function takes the UnionSession and keeps its answer on it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ast import And, Eq, Imm, Reg
from .. import limits
from ..errors import LimitExceeded, NeverCompletes
from ..isa.registry import lower
from ..model.values import Const as VConst, Ite, binop, evaluate
from ..unfold import paths
from ..unfold.variants import Combo, ref, single, without_barriers
from .session import Session
from .stops import refuted


@dataclass(frozen=True)
class Hang:
    thread: str
    blocked: str          # the instruction it spins on, with its line
    state: str            # what it waits for, read at the end of the execution
    combo: str            # the paths of every thread
    probe: object = None  # the Session of the hanging combination, and the outcome that hangs
    outcome: tuple = ()


def stuck(u) -> tuple[Hang, ...]:
    """The hangs at barriers: each combination (no loop cut) in which a thread waits forever at
    a barrier, and which has an execution."""
    if "_stuck" not in u.__dict__:
        u._stuck = tuple(_barrier_hang(c, e, _feasible(u, c)) for c, e in u.blocked
                         if not c.cut and _feasible(u, c) is not None)
    return u._stuck


def never_terminates(u) -> str | None:
    """If no execution terminates, why (the first stuck barrier, or the first loop no path
    leaves within the bound, where the cut loops are side-effect free so that a longer run
    reaches nothing new); else None."""
    if "_never" not in u.__dict__:
        u._never = None
        if not u.bounded and not any(s.witness(None) is not None for _, s in u.complete_sessions()):
            if stuck(u):
                h = stuck(u)[0]
                u._never = f"{h.thread} blocks forever at {h.blocked}: {h.state} [{h.combo}]"
            else:
                h = endless(u)
                if h is not None:
                    u._never = f"{h.thread} never leaves the loop of {h.blocked} on any path that has an " \
                               f"execution [{h.combo}]"
    return u._never


def endless(u) -> Hang | None:
    """The first cut combination that has an execution, as a hang (the caller has found that
    no complete combination has one and every cut loop is side-effect free)."""
    for c, s in list(zip(u.combos, u.sessions)) + list(_refuted_sessions(u)):
        if c.cut and s.witness(None) is not None:
            thread, spin = c.cut[0]
            return Hang(thread, _loop_at(spin), "no path leaves it within the bound", c.describe())
    return None


def _refuted_sessions(u):
    """The Sessions of the stopping combinations refuted before they were lowered (UnionSession.
    refuted: no hang, but they may have executions), built one at a time, only for `endless`, when
    no complete combination has an execution; each counts against the paths limit with those kept."""
    for n, c in enumerate(c for c in u.refuted if not c.stuck):
        if len(u.combos) + len(u.blocked) + n >= u.lim.paths:
            raise LimitExceeded(f"too large: more than {u.lim.paths} combinations of control paths to find whether "
                                "any execution terminates (raise it with --limit paths=N or lower --unroll)")
        try:
            with limits.use(u.lim):
                es = lower(single(c.test))
        except NeverCompletes:
            continue
        yield c, u._session(c, es)


def hangs(u) -> tuple[tuple[Hang, ...], bool]:
    """The fair hangs found (one per combination that hangs), and whether the search was
    complete (every cut loop could be judged); computed once."""
    if "_hangs" not in u.__dict__:
        found, complete = _search_hangs(u)
        if not found and never_terminates(u):
            # no execution terminates: a hang, whatever the fairness check could judge (so
            # that `check ... hang` and `run` never disagree)
            h = stuck(u)[0] if stuck(u) else endless(u)
            found, complete = (h,), True
        u._hangs = (found, complete)
    return u._hangs


def hang_unknown_why(u) -> str:
    """Why the hang question is Unknown when hangs() found none and was not complete."""
    hangs(u)
    left = [i for t in u.test.threads for i in paths.unconverted_waits(t)]
    if u._unjudged or not left:
        return u._unjudged or "a combination stuck at a barrier could not be judged"
    return (f"the await '{left[0].text}' (line {left[0].where.line if left[0].where else '?'}) is not searched "
            "for hangs: write that wait as a loop (L: ...; setp; @p bra L)")


def _search_hangs(u) -> tuple[tuple[Hang, ...], bool]:
    u._unjudged = ""
    found: list[Hang] = []
    complete = not any(paths.unconverted_waits(t) for t in u.test.threads)
    for c, e in u.blocked:
        if c.cut:
            # A thread still in a loop the bound cut may be why the barrier is short of
            # arrivals: a hang here is that loop's (judged without the barriers), if fair.
            hang, ok = _cut_and_blocked(u, c)
            complete &= ok
            if hang is not None:
                found.append(hang)
            continue
        probe = _feasible(u, c)
        if probe is not None:
            found.append(_barrier_hang(c, e, probe))
    for c, s in zip(u.combos, u.sessions):
        if not c.cut:
            continue
        if not all(spin.fair_checkable for _, spin in c.cut):
            if s.witness(None) is not None:
                complete = False
                u._unjudged = u._unjudged or next(spin.unjudged(t) for t, spin in c.cut
                                                        if not spin.fair_checkable)
            continue
        hang = _fair_hang(u, c, s)
        if hang is not None:
            found.append(hang)
    return tuple(found), complete


def _cut_and_blocked(u, c: Combo) -> tuple[Hang | None, bool]:
    if not all(spin.fair_checkable for _, spin in c.cut):
        u._unjudged = u._unjudged or next(spin.unjudged(t) for t, spin in c.cut if not spin.fair_checkable)
        return None, False
    # With a schedule, the test as far as it runs keeps the generations that complete (the
    # synchronization of a barrier before the loop holds, docs/model.md#a19); without one (its
    # lowering found it blocked), the barriers are removed (they only constrain).
    s = _as_far_as_it_runs(u, c)
    try:
        return _fair_hang(u, c, s), True
    except NeverCompletes:
        return None, False


def _feasible(u, c: Combo):
    """The Session of a combination stuck at a barrier if it has an execution (its path
    assumptions may be contradictory), else None; True where it cannot be built. With a
    schedule, the test as far as it runs (each stuck thread stopped at its barrier, the
    generations that complete kept); else with its barriers removed (they only constrain)."""
    if "_probes" not in u.__dict__:
        u._probes = {}
    if id(c) not in u._probes:
        s = _as_far_as_it_runs(u, c)
        try:
            u._probes[id(c)] = s if s.witness(None) is not None else None
        except NeverCompletes:
            u._probes[id(c)] = True
    return u._probes[id(c)]


def _as_far_as_it_runs(u, c: Combo) -> Session:
    """The Session of a combination stuck at a barrier: the test as far as it runs (each stuck
    thread stopped before its barrier, the generations that complete kept), or, where lowering
    found it blocked without a schedule, with its barriers removed. Combinations that stop at
    the same places are the same test (a thread stopped at a barrier has the same code whatever
    path it would have taken past it): one Session answers them all, its encoding built once."""
    test = c.test if c.stuck else without_barriers(c.test)
    key = (tuple(t.code for t in test.threads), test.barrier_generations)
    shared = u.__dict__.setdefault("_as_far", {})
    if key not in shared:
        shared[key] = Session(test, u.model, u.options, u.engine, u.lim)
    return shared[key]


def _fair_hang(u, c: Combo, s: Session) -> Hang | None:
    if u.refute and refuted(u, c, _fair):
        return None         # no final state leaves the await spinning (checker.verdict.stops)
    keys: set[str] = set()
    checks = []
    for thread, spin in c.cut:
        for reg, loc in spin.loads:
            keys |= {f"{thread}:{reg}", u.names.get(loc, loc)}
            checks.append(("load", thread, reg, u.names.get(loc, loc)))
        for w in spin.waits:
            if not w.quals.get("parity") or not isinstance(w.operands[2], (Imm, Reg)):
                return None
            loc = u.names.get(w.operands[1].base, w.operands[1].base)
            keys.add(loc)
            if isinstance(w.operands[2], Reg):      # a parity the loop does not write (unfold.paths)
                keys.add(f"{thread}:{w.operands[2].name}")
            checks.append(("wait", thread, w, loc))
    have = {f"{t}:{r}" for t, r in s.es.registers}
    locs = tuple(ref(k) for k in sorted(keys) if ":" not in k or k in have)
    probe = s.reprojected(locs)
    outs, _ = probe.outcomes()
    for o in sorted(outs):
        d = dict(o)
        if all(_fair(chk, d) for chk in checks):
            thread, spin = c.cut[0]
            state = "; ".join(_state(chk, d) for chk in checks if chk[1] == thread) or "nothing (an endless loop)"
            return Hang(thread, _loop_at(spin), state, c.describe(), probe, o)
    return None


def _loop_at(spin) -> str:
    """The instruction a hang names for cut loop `spin`, with its line: the await itself where the
    loop is one an await stands for (its branch back, `__spinN`, is ptxmc's, not the test's)."""
    b = spin.head if spin.branch.operands[0].name.startswith("__spin") else spin.branch
    return f"{b.text} (line {b.where.line if b.where else '?'})"


def hang_condition(h: Hang):
    """The condition the hang's witness satisfies in its probe: the final values that make its
    loop spin (None for a barrier hang: any execution of the test as far as it runs)."""
    return And(tuple(Eq(ref(k), v) for k, v in h.outcome)) if h.outcome else None


def _barrier_hang(c: Combo, e: NeverCompletes, probe) -> Hang:
    """The hang of a combination stuck at a barrier; `probe`: the Session of the test as far as
    it runs (an execution up to the barriers it never leaves), when there is one."""
    where = f"line {e.where.line}" if e.where else "?"
    thread = c.schedule.blocked[0].thread if c.stuck else _thread_at(c, e)
    return Hang(thread, f"{e.where.text if e.where else '?'} ({where})", e.message, c.describe(),
                probe if isinstance(probe, Session) and c.stuck else None)


def _thread_at(c: Combo, e: NeverCompletes) -> str:
    """The thread of the combination whose code holds the instruction the error names."""
    for t in c.test.threads:
        if any(i.where is not None and e.where is not None and i.where.line == e.where.line for i in t.code):
            return t.name
    return c.test.threads[0].name


def _fair(chk, d) -> bool:
    kind, thread, x, loc = chk
    if kind == "load":
        return d.get(f"{thread}:{x}", 0) == d.get(loc, 0)
    return _wait_done(x, d.get(loc, 0), _parity(x, thread, d)) == x.await_value


def _parity(w, thread: str, d) -> int:
    """The parity wait `w` waits for: its immediate, or its register's final value (the loop does
    not write it, so it is the value every iteration read)."""
    p = w.operands[2]
    return p.value if isinstance(p, Imm) else d.get(f"{thread}:{p.name}", 0)


def _wait_done(w, state: int, parity: int) -> int:
    """What the parity wait `w` for `parity` returns reading mbarrier state `state`."""
    from ..isa.mbarrier import phase_of
    v = VConst(state)
    done = Ite("!=", binop("mod", phase_of(v), VConst(2)), VConst(parity % 2), VConst(1), VConst(0))
    return evaluate(done, lambda e: 0)


def _state(chk, d) -> str:
    kind, thread, x, loc = chk
    if kind == "load":
        return f"{x} = {d.get(f'{thread}:{x}', 0)}, the final value of {loc}"
    from ..isa.mbarrier import describe
    return f"{loc} stays {describe(d.get(loc, 0))}: the phase of parity {_parity(x, thread, d) % 2} never completes"
