"""Judging a test with control flow: the union over its control-path combinations
(checker.unfold.variants), each combination a straight-line test judged by its own Session, and the
liveness question "may some fair execution never terminate?" (docs/model.md#a18).

- Outcomes and verdicts: an outcome is allowed when some combination of complete paths (no loop
  cut by the unrolling bound) allows it. A register a path never writes keeps its initial value 0.
- The bound: a combination that ends in a cut loop whose body is side-effect free (only loads,
  setp, fences, register operations, mbarrier waits) adds nothing: a run of such a loop that
  goes on past the bound leaves no trace the exiting iteration does not overwrite, so every
  outcome it can reach is reached by a path that exits within the bound. A cut loop with side
  effects that has a consistent execution does cut executions off: the result says so, and a
  condition no complete path allows is Unknown, never Forbidden.
- Hang (Lahav et al., "Making Weak Memory Models Fair", OOPSLA 2021): a thread hangs in a
  side-effect-free spin loop when an execution exists in which its last unrolled iteration reads
  the coherence-latest value of each location it loads (the final value) and, for an mbarrier
  wait, finds the final mbarrier state incomplete, and still does not exit; every other thread has
  finished or hangs the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from .. import limits
from ..ast import And, Cond, Eq, Imm, LitmusTest, Reg, RegRef
from ..cat.interp import Model
from ..errors import NeverCompletes
from ..front.conditions import check_refs
from ..isa.registry import lower
from ..unfold import paths
from ..unfold.variants import Combo, combos, default_keys, ref, single, specialize, without_barriers, written
from ..model.builder import Builder
from ..model.observables import atoms
from ..model.values import Const as VConst, Ite, binop, evaluate
from ..resources import model_name
from ..results.result import UndefinedReport
from .session import Session, Verdict, Witness


@dataclass(frozen=True)
class Hang:
    thread: str
    blocked: str          # the instruction it spins on, with its line
    state: str            # what it waits for, read at the end of the execution
    combo: str            # the paths of every thread
    probe: object = None  # the Session of the hanging combination, and the outcome that hangs
    outcome: tuple = ()


class UnionSession:
    """One test under a model asked over its straight-line variants (control paths x barrier
    schedules, checker.unfold.variants), each a Session: the same questions as a Session, with
    the same answer types (checker.verdict.open_session picks which)."""

    def __init__(self, test: LitmusTest, model: Model, options=frozenset(), engine: str = "z3",
                 lim: limits.Limits | None = None, loops: bool = False):
        self.test, self.model, self.options, self.engine = test, model, frozenset(options), engine
        self.engine_name, self.model_name = engine, model_name(model)
        self.lim = lim or limits.current()
        self.combos = []
        self._es = []
        self.blocked: list[tuple[Combo, NeverCompletes]] = []    # combinations stuck at a barrier
        with limits.use(self.lim):
            for c in combos(test, self.lim, loops, self.options):
                if c.stuck:
                    self.blocked.append((c, NeverCompletes(c.schedule.why, c.schedule.blocked[0].instr.where)))
                    continue
                try:
                    es = lower(single(c.test))
                except NeverCompletes as e:
                    # (without its traceback: its frames hold this object, a cycle that kept the
                    # test's Z3 contexts alive until a full collection)
                    self.blocked.append((c, e.with_traceback(None)))
                    continue
                self.combos.append(c)
                self._es.append(es)
        self.total = len(self.combos) + len(self.blocked)
        self.names = self._es[0].names if self._es else Builder(test).roots
        # every register some path writes, and those a thread stuck at a barrier would have written
        self.registers = {f"{t}:{r}" for es in self._es for t, r in es.registers} | written(test)
        keys = {str(r) if isinstance(r, RegRef) else r.name for r in test.locations}
        for e in test.expectations:
            keys |= atoms(e.cond, self.names)
        if not keys:
            keys = set().union(set(), *(default_keys(es) for es in self._es))
        order = {t.name: i for i, t in enumerate(test.threads)}
        self.observe = tuple(sorted(keys, key=lambda k: (0, order.get(k.split(":")[0], 99), k) if ":" in k
                                    else (1, 0, k)))
        self.sessions = []
        for c, es in zip(self.combos, self._es):
            have = {f"{t}:{r}" for t, r in es.registers}
            locs = tuple(ref(k) for k in self.observe if ":" not in k or k in have)
            # the test's filter, with the registers this combination never writes decided (0)
            filt = None if test.filter is None else specialize(test.filter, self.registers - have)
            self.sessions.append(Session(replace(c.test, locations=locs, filter=filt), model, options, engine,
                                         self.lim, es=es))

    def check_condition(self, cond: Cond, where) -> None:
        regs: dict[str, set[str]] = {t.name: set() for t in self.test.threads}
        for k in self.registers:
            t, r = k.split(":", 1)
            regs[t].add(r)
        check_refs(cond, where, regs, {m.name for m in self.test.memory})

    def _missing(self, k: int) -> set[str]:
        have = {f"{t}:{r}" for t, r in self._es[k].registers}
        return self.registers - have

    def complete_sessions(self):
        return [(k, s) for k, s in enumerate(self.sessions) if not self.combos[k].cut]

    @property
    def bounded(self) -> tuple[str, ...]:
        """The combinations with an effectful loop cut by the bound that have an execution."""
        return tuple(c.describe() for c in self._cut_off(self.observe))

    @property
    def advice(self) -> str:
        """What would decide a verdict the bound left Unknown: a higher --unroll, or, for a loop
        its registers bound that runs longer than paths.DECIDED_ITERATIONS, that bound."""
        return _advice(self._cut_off(self.observe), self.test.unroll or self.lim.unroll)

    def bounded_for(self, cond: Cond) -> tuple[str, ...]:
        """The combinations whose cut loops lose outcomes `cond` may be about (see bounded)."""
        return tuple(c.describe() for c in self._cut_off(set(self.observe) | atoms(cond, self.names)))

    def _cut_off(self, keys) -> tuple[Combo, ...]:
        """The combinations that have an execution and a loop cut by the bound that loses outcomes
        over `keys` ("thread:register" and location names): a loop that is not pure for the
        registers of its thread they name (checker.unfold.loops)."""
        if self.test.filter is not None:        # the filter decides which executions count
            keys = set(keys) | atoms(self.test.filter, self.names)
        keys = frozenset(keys)
        cache = self.__dict__.setdefault("_cut_cache", {})
        if keys not in cache:
            def seen(thread: str) -> frozenset[str]:
                return frozenset(k.split(":", 1)[1] for k in keys if k.startswith(thread + ":"))
            # (with a filter, a cut path's executions may all lie past the bound: no witness needed)
            cache[keys] = tuple(c for c, s in zip(self.combos, self.sessions)
                                if any(not spin.pure(seen(t)) for t, spin in c.cut)
                                and (self.test.filter is not None or s.witness(None) is not None))
        return cache[keys]

    @cached_property
    def undefined(self) -> tuple[UndefinedReport, ...]:
        """Every undefined-behaviour flag that fires on some variant (once per flag and reason)."""
        seen, out = set(), []
        for s in self.sessions:
            for u in s.undefined:
                if (u.flag, u.why) not in seen:
                    seen.add((u.flag, u.why))
                    out.append(u)
        return tuple(out)

    def outcomes(self):
        outs, complete = set(), True
        for k, s in self.complete_sessions():
            o, c = s.outcomes()
            complete &= c
            for out in o:
                d = dict(out)
                outs.add(tuple((key, d.get(key, 0)) for key in self.observe))
        return frozenset(outs), complete

    def verdict(self, cond: Cond) -> Verdict:
        """Allowed on some complete variant; None (Unknown) when none allows it but the loop bound
        cut executions off that could."""
        allowed, sane = False, False
        for k, s in self.complete_sessions():
            c = specialize(cond, self._missing(k))
            v = s.verdict(c)
            allowed |= v.allowed
            sane |= v.sane
            if allowed:
                break
        if not allowed and self._cut_off(set(self.observe) | atoms(cond, self.names)):
            return Verdict(None, True)
        return Verdict(allowed, sane or allowed)

    # -- the contract a Session meets too (checker.verdict.session) ----------------------------
    @property
    def notes(self) -> tuple[str, ...]:
        return (f"control paths: {self.total} combinations (unroll {self.test.unroll or self.lim.unroll})",)

    def undefined_witness(self) -> tuple[str, Witness] | None:
        """The first undefined-behaviour flag that fires on some variant, with its execution."""
        for c, s in zip(self.combos, self.sessions):
            found = s.undefined_witness()
            if found is not None:
                flag, w = found
                return flag, Witness(w.execution, s, c.describe())
        return None

    def unknown_why(self, cond: Cond) -> str:
        """Why `cond`'s verdict is Unknown (verdict's None): the bound cut executions off."""
        return ("no execution within the loop bound satisfies it, but the bound cut executions off "
                f"({self.bounded_for(cond)[0]}); {self.advice}")

    def hang_witness(self, hangs) -> tuple[Hang, object] | None:
        """A hang of `hangs` that can be drawn, and its execution (the blocked loop's last
        iteration, or the test as far as it runs up to the barriers it never leaves)."""
        h = next((h for h in hangs if h.probe is not None), None)
        if h is None:
            return None
        ex = h.probe.witness(hang_condition(h))
        return None if ex is None else (h, ex)

    def prepare(self, cond: Cond, where=None) -> Cond:
        return self.sessions[0].prepare(cond, where) if self.sessions else cond

    def witnessed(self, cond: Cond | None = None) -> Witness | None:
        """An allowed execution satisfying `cond`, with the variant it runs on, or None."""
        for k, s in self.complete_sessions():
            ex = s.witness(None if cond is None else specialize(cond, self._missing(k)))
            if ex is not None:
                return Witness(ex, s, self.combos[k].describe())
        return None

    def blames(self, cond: Cond) -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
        return tuple(self.blame(cond))

    def candidate_of(self, cond: Cond, blame=None) -> Witness | None:
        """A telling execution satisfying a forbidden `cond` on the first complete variant where it
        is sane (checker.verdict.session.Session.candidate), with that variant."""
        for k, s in self.complete_sessions():
            c = specialize(cond, self._missing(k))
            if s.verdict(c).sane:
                ex = s.candidate(c, s.blame(c))
                if ex is not None:
                    return Witness(ex, s, self.combos[k].describe())
        return None

    def blame(self, cond: Cond) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
        """For each complete combination on which `cond` is possible without axioms: the minimal
        sets of axioms that rule it out there."""
        out = []
        for k, s in self.complete_sessions():
            c = specialize(cond, self._missing(k))
            if s.verdict(c).sane:
                out.append((self.combos[k].describe(), s.blame(c)))
        return out

    def witness(self, cond: Cond):
        """(combination, execution) of an allowed execution satisfying `cond`, or None."""
        for k, s in self.complete_sessions():
            ex = s.witness(specialize(cond, self._missing(k)))
            if ex is not None:
                return self.combos[k], s, ex
        return None

    def stuck(self) -> tuple[Hang, ...]:
        """The hangs at barriers: each combination (no loop cut) in which a thread waits forever at
        a barrier, and which has an execution."""
        if not hasattr(self, "_stuck"):
            self._stuck = tuple(_barrier_hang(c, e, self._feasible(c)) for c, e in self.blocked
                                if not c.cut and self._feasible(c) is not None)
        return self._stuck

    def never_terminates(self) -> str | None:
        """If no execution terminates, why (the first stuck barrier, or the first loop no path
        leaves within the bound, where the cut loops are side-effect free so that a longer run
        reaches nothing new); else None."""
        if not hasattr(self, "_never"):
            self._never = None
            if not self.bounded and not any(s.witness(None) is not None for _, s in self.complete_sessions()):
                if self.stuck():
                    h = self.stuck()[0]
                    self._never = f"{h.thread} blocks forever at {h.blocked}: {h.state} [{h.combo}]"
                else:
                    h = self._endless()
                    if h is not None:
                        self._never = f"{h.thread} never leaves the loop of {h.blocked} on any path that has an " \
                                      f"execution [{h.combo}]"
        return self._never

    def _endless(self) -> Hang | None:
        """The first cut combination that has an execution, as a hang (the caller has found that
        no complete combination has one and every cut loop is side-effect free)."""
        for c, s in zip(self.combos, self.sessions):
            if c.cut and s.witness(None) is not None:
                thread, spin = c.cut[0]
                b = spin.branch
                return Hang(thread, f"{b.text} (line {b.where.line if b.where else '?'})",
                            "no path leaves it within the bound", c.describe())
        return None

    # -- liveness --------------------------------------------------------------------------
    def hangs(self) -> tuple[tuple[Hang, ...], bool]:
        """The fair hangs found (one per combination that hangs), and whether the search was
        complete (every cut loop could be judged); computed once."""
        if not hasattr(self, "_hangs"):
            found, complete = self._search_hangs()
            if not found and self.never_terminates():
                # no execution terminates: a hang, whatever the fairness check could judge (so
                # that `check ... hang` and `run` never disagree)
                h = self.stuck()[0] if self.stuck() else self._endless()
                found, complete = (h,), True
            self._hangs = (found, complete)
        return self._hangs

    def hang_unknown_why(self) -> str:
        """Why the hang question is Unknown when hangs() found none and was not complete."""
        self.hangs()
        left = [i for t in self.test.threads for i in paths.unconverted_waits(t)]
        if self._unjudged or not left:
            return self._unjudged or "a combination stuck at a barrier could not be judged"
        return (f"the await '{left[0].text}' (line {left[0].where.line if left[0].where else '?'}) is not searched "
                "for hangs: write that wait as a loop (L: ...; setp; @p bra L)")

    def _search_hangs(self) -> tuple[tuple[Hang, ...], bool]:
        self._unjudged = ""
        found: list[Hang] = []
        complete = not any(paths.unconverted_waits(t) for t in self.test.threads)
        for c, e in self.blocked:
            if c.cut:
                # A thread still in a loop the bound cut may be why the barrier is short of
                # arrivals: a hang here is that loop's (judged without the barriers), if fair.
                hang, ok = self._cut_and_blocked(c)
                complete &= ok
                if hang is not None:
                    found.append(hang)
                continue
            probe = self._feasible(c)
            if probe is not None:
                found.append(_barrier_hang(c, e, probe))
        for c, s in zip(self.combos, self.sessions):
            if not c.cut:
                continue
            if not all(spin.fair_checkable for _, spin in c.cut):
                if s.witness(None) is not None:
                    complete = False
                    self._unjudged = self._unjudged or next(spin.unjudged(t) for t, spin in c.cut
                                                            if not spin.fair_checkable)
                continue
            hang = self._fair_hang(c, s)
            if hang is not None:
                found.append(hang)
        return tuple(found), complete

    def _cut_and_blocked(self, c: Combo) -> tuple[Hang | None, bool]:
        if not all(spin.fair_checkable for _, spin in c.cut):
            self._unjudged = self._unjudged or next(spin.unjudged(t) for t, spin in c.cut if not spin.fair_checkable)
            return None, False
        # With a schedule, the test as far as it runs keeps the generations that complete (the
        # synchronization of a barrier before the loop holds, docs/model.md#a19); without one (its
        # lowering found it blocked), the barriers are removed (they only constrain).
        s = Session(c.test if c.stuck else without_barriers(c.test), self.model, self.options, self.engine,
                    self.lim)
        try:
            return self._fair_hang(c, s), True
        except NeverCompletes:
            return None, False

    def _feasible(self, c: Combo):
        """The Session of a combination stuck at a barrier if it has an execution (its path
        assumptions may be contradictory), else None; True where it cannot be built. With a
        schedule, the test as far as it runs (each stuck thread stopped at its barrier, the
        generations that complete kept); else with its barriers removed (they only constrain)."""
        if not hasattr(self, "_probes"):
            self._probes = {}
        if id(c) not in self._probes:
            s = Session(c.test if c.stuck else without_barriers(c.test), self.model, self.options, self.engine,
                        self.lim)
            try:
                self._probes[id(c)] = s if s.witness(None) is not None else None
            except NeverCompletes:
                self._probes[id(c)] = True
        return self._probes[id(c)]

    def _fair_hang(self, c: Combo, s: Session) -> Hang | None:
        keys: set[str] = set()
        checks = []
        for thread, spin in c.cut:
            for reg, loc in spin.loads:
                keys |= {f"{thread}:{reg}", self.names.get(loc, loc)}
                checks.append(("load", thread, reg, self.names.get(loc, loc)))
            for w in spin.waits:
                if not w.quals.get("parity") or not isinstance(w.operands[2], (Imm, Reg)):
                    return None
                loc = self.names.get(w.operands[1].base, w.operands[1].base)
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
                b = spin.head if spin.branch.operands[0].name.startswith("__spin") else spin.branch
                return Hang(thread, f"{b.text} (line {b.where.line if b.where else '?'})", state, c.describe(),
                            probe, o)
        return None


def _advice(cut: list[Combo], unroll: int) -> str:
    for c in cut:
        for thread, spin in c.cut:
            if spin.decided:
                b = spin.branch
                return (f"the loop of {b.text} ({thread}, line {b.where.line if b.where else '?'}) runs more than "
                        f"{paths.DECIDED_ITERATIONS} iterations its registers decide: ptxmc unrolls such a loop to at "
                        "most that bound, whatever --unroll says")
    return f"raise --unroll (now {unroll})"


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
