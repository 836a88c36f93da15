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
- Hangs (may some fair execution never terminate?): checker.verdict.liveness, over the
  combinations in which each await's spin loop runs once (exact: docs/model.md#a18).
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import replace
from functools import cached_property
from typing import Sequence

from .. import limits
from ..ast import Cond, LitmusTest
from ..cat.interp import Model
from ..errors import LimitExceeded, LitmusError, NeverCompletes, SolverUnknown
from ..front.conditions import check_refs
from ..isa.registry import lower
from ..unfold import paths
from ..unfold.variants import Combo, combos, default_keys, of_choice, ref, single, specialize, thread_paths, written
from ..model.builder import Builder
from ..model.observables import atoms, key
from ..resources import model_name
from ..results.result import UndefinedReport
from . import liveness
from .bundled import bundled
from .liveness import Hang, hang_condition
from .quiet import quiet_mbarriers
from .extension import failed_waits_unnamed, members_excluded
from .stops import refuted
from .session import Session, Verdict, Witness


class UnionSession:
    """One test under a model asked over its straight-line variants (control paths x barrier
    schedules, checker.unfold.variants), each a Session: the same questions as a Session, with
    the same answer types (checker.verdict.open_session picks which)."""

    def __init__(self, test: LitmusTest, model: Model, options=frozenset(), engine: str = "z3",
                 lim: limits.Limits | None = None, loops: bool = False, spin_once: bool = True,
                 quiet: bool = True, refute: bool = True, extend: bool = True, ub_first: bool = False):
        self.test, self.model, self.options, self.engine = test, model, frozenset(options), engine
        self.engine_name, self.model_name = engine, model_name(model)
        self.lim = lim or limits.current()
        self.loops, self.spin_once = loops, spin_once
        self.quiet = quiet      # False: the reference (every combination of failed iterations)
        # False: the reference (every stopping combination asked, none refuted: checker.verdict.stops)
        self.refute = refute
        # False: the reference (the undefined-behaviour search starts from every runs-once choice)
        self.extend = extend
        self.extension_why: str | None = "not asked"   # (None: the lemma applied: _ub_variants)
        self.failed_why: str | None = "not asked"      # (None: no failed iteration combined: _ub_variants)
        self.combos = []
        self._es = []
        self.blocked: list[tuple[Combo, NeverCompletes]] = []    # combinations stuck at a barrier
        # stopping combinations refuted before they are lowered (checker.verdict.stops): no hang,
        # never complete, no cut that loses an outcome; kept unlowered for `endless`
        self.refuted: list[Combo] = []
        spins = loops and spin_once and any(paths.await_loops(t) is not t for t in test.threads)
        if ub_first and spins:
            # (`ub_first`: the caller asks the undefined-behaviour question first, as a verdict does,
            # which needs the awaits unrolled: where they have too many paths, the refusal comes
            # now, not after the refuter's work)
            self._search_paths
        drop = self._refuted if refute and spins else None
        if drop is not None:
            self.names = Builder(test).roots
        with limits.use(self.lim):
            for c in combos(test, self.lim, loops, self.options, spin_once, drop):
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
        self.total = len(self.combos) + len(self.blocked) + len(self.refuted)
        self.names = self._es[0].names if self._es else Builder(test).roots
        # every register some path writes, and those a thread stuck at a barrier would have written
        self.registers = {f"{t}:{r}" for es in self._es for t, r in es.registers} | written(test)
        keys = {key(r, self.names) for r in test.locations}
        for e in test.expectations:
            keys |= atoms(e.cond, self.names)
        if not keys or test.observe_defaults:
            keys |= set().union(set(), *(default_keys(es) for es in self._es))
        order = {t.name: i for i, t in enumerate(test.threads)}
        self.observe = tuple(sorted(keys, key=lambda k: (0, order.get(k.split(":")[0], 99), k) if ":" in k
                                    else (1, 0, k)))
        self.sessions = [self._session(c, es) for c, es in zip(self.combos, self._es)]

    def _refuted(self, c: Combo) -> bool:
        """Is `c` a stopping combination that no execution hangs in, shown without a Session
        (checker.verdict.stops), that adds nothing else a question asks of the combinations? Its
        cut loops are all judged by the fairness check and pure (they lose no outcome, whatever
        is observed), so it is not complete, not cut off, and its hang search finds nothing (the
        search refutes it the same way: liveness._fair_hang). Only for the hang question with
        its awaits run once, whose undefined-behaviour question builds its own variants
        (_ub_variants). Kept in self.refuted."""
        if not c.cut or not all(spin.fair_checkable and spin.pure(None) for _, spin in c.cut) \
                or not refuted(self, c, liveness._fair):
            return False
        self.refuted.append(c)
        return True

    def _session(self, c: Combo, es) -> Session:
        """The Session of combination `c` (lowered: `es`)."""
        have = {f"{t}:{r}" for t, r in es.registers}
        locs = tuple(ref(k) for k in self.observe if ":" not in k or k in have)
        # the test's filter, with the registers this combination never writes decided (0)
        filt = None if self.test.filter is None else specialize(self.test.filter, self.registers - have)
        return Session(replace(c.test, locations=locs, filter=filt), self.model, self.options, self.engine,
                       self.lim, es=es)

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
    def _ub_variants(self) -> list[tuple[Combo, Session]]:
        """The variants the undefined-behaviour question is asked on. An await's loop run once
        answers hangs and outcomes exactly, but not this question: an earlier iteration may read
        a release write and order, say, an mbarrier.inval before a later operation of the thread
        (docs/model.md#a18), so with await loops run once it is asked on the awaits unrolled like
        any loop (the variants before they ran once), built when first asked.

        Only the variants that have an execution are built and kept, found without combining
        every path of one thread with every path of the others. Removing iterations of an await
        loop that went round (Path.rounds) from a consistent execution leaves a consistent
        execution (the argument of docs/model.md#a18), with the same barrier generations. So a
        choice of one path per thread has an execution only if the choice with all such
        iterations removed -- a runs-once choice of this session -- has one, and every choice it
        gives by removing one such iteration (the paths it gives that are paths) has one. The
        choices are visited in order of how many iterations went round: those with no path to
        remove an iteration to first (one per runs-once choice), then each successor (one more
        iteration in one thread) of a choice found with an execution, built when every choice
        it gives has one. A runs-once choice that is not among this session's combinations (stuck
        at a barrier, never lowered) counts as having an execution."""
        if not (self.loops and self.spin_once) or all(paths.await_loops(t) is t for t in self.test.threads):
            return list(zip(self.combos, self.sessions))
        once: dict[tuple, bool] = {}          # runs-once choice (each thread's code) -> has an execution
        for c, s in zip(self.combos, self.sessions):
            k = tuple(p.code for p in c.paths)
            once[k] = once.get(k, False) or s.witness(None) is not None
        for c, _ in self.blocked:
            once[tuple(p.code for p in c.paths)] = True
        # a thread cut in an await on a quiet mbarrier is cut after one failed iteration, as the
        # runs-once combinations are (docs/model.md#a18, "Failed iterations of an mbarrier wait"),
        # whose sessions are this one's; a path with more than one failed iteration of waits on
        # quiet mbarriers that it goes on past is never combined (below), so not made either
        quiet = self._quiet
        # with no hang, the stopping choices' executions extend to complete ones with their flags
        # (docs/model.md#a18, "Stopping choices and undefined behaviour"): only complete choices
        # are where the search starts, where the test meets the lemma's conditions
        per = self._search_paths
        self.extension_why = self._extension_lemma_fails() if self.extend else "not asked (the reference)"
        complete_only = self.extension_why is None
        # how many failed iterations of awaits on quiet mbarriers a choice may have in all: one, for
        # the flag that may name it; none where no flag can (docs/model.md#a18, "Failed iterations
        # with no flag to name them"): then, with the lemma, the complete runs-once choices are all
        self.failed_why = failed_waits_unnamed(self.test, self.lim, quiet, self.names) if complete_only \
            else "the extension lemma does not apply"
        allowed = 1 if self.failed_why is not None else 0
        mine = {c.key(): s for c, s in zip(self.combos, self.sessions)} if quiet else {}
        index = [{p.code: j for j, p in enumerate(ps)} for ps in per]
        # per thread, for each path: the paths it gives by removing one iteration that went round
        fewer = [[tuple(j2 for r in p.rounds for j2 in [index[i].get(p.without((r,))[0])] if j2 is not None)
                  for p in ps] for i, ps in enumerate(per)]
        more = [[[] for _ in ps] for ps in per]
        for i, ps in enumerate(fewer):
            for j, js in enumerate(ps):
                for j2 in js:
                    more[i][j2].append(j)

        # per thread, for each path: the failed iterations of awaits on quiet mbarriers that it
        # exits (docs/model.md#a18, "Failed iterations of an mbarrier wait"): a choice with more
        # than one of them in all adds no flag that a choice with at most one does not
        failed = [[_quiet_rounds(p, quiet) for p in ps] for ps in per]

        def rounds(choice) -> int:
            return sum(len(per[i][j].rounds) for i, j in enumerate(choice))
        live: dict[tuple[int, ...], bool] = {}
        kept, built = [], 0
        # by how many iterations went round: each choice after every choice it gives (one fewer)
        heap = [(rounds(x), x) for x in itertools.product(*[[j for j, f in enumerate(fs) if not f
                                                             and not (complete_only and per[i][j].cut)]
                                                            for i, fs in enumerate(fewer)])]
        heapq.heapify(heap)
        seen = {x for _, x in heap}
        while heap:
            _, choice = heapq.heappop(heap)
            gives = [choice[:i] + (j2,) + choice[i + 1:] for i, j in enumerate(choice) for j2 in fewer[i][j]]
            chosen = tuple(ps[j] for ps, j in zip(per, choice))
            live[choice] = False
            if not all(live.get(g) for g in gives) or once.get(tuple(p.once()[0] for p in chosen), True) is False:
                continue
            for c in of_choice(self.test, self.lim, chosen):
                if c.stuck:
                    continue
                if c.key() in mine:             # a runs-once combination: its session, kept
                    s = mine[c.key()]
                    if s.witness(None) is not None:
                        live[choice] = True
                        kept.append((choice, len(kept), c, s))
                    continue
                try:
                    with limits.use(self.lim):
                        es = lower(single(c.test))
                except NeverCompletes:
                    continue
                built += 1
                if built > self.lim.paths:
                    raise LimitExceeded(f"too large: more than {self.lim.paths} combinations of control paths "
                                        "in which the awaits' loops go round to ask for undefined behaviour "
                                        "(raise it with --limit paths=N or lower --unroll)")
                s = self._session(c, es)
                if s.witness(None) is not None:
                    live[choice] = True
                    s.undefined                 # (asked now, so that the engine can go: a context per variant
                    s.release()                 # kept would exhaust Z3's memory on a real pipeline)
                    kept.append((choice, len(kept), c, s))
            if live[choice]:
                for i, j in enumerate(choice):
                    for j2 in more[i][j]:
                        x = choice[:i] + (j2,) + choice[i + 1:]
                        if x not in seen and sum(failed[k][y] for k, y in enumerate(x)) <= allowed:
                            seen.add(x)
                            heapq.heappush(heap, (rounds(x), x))
        # (in the order combos gives them)
        return [(c, s) for _, _, c, s in sorted(kept, key=lambda x: x[:2])]

    @cached_property
    def _premises_why(self) -> str | None:
        """Why the premises of docs/model.md#a18's extension lemma do not hold here (None: they
        do), the hang question's answer aside (_extension_lemma_fails). Its conditions: no loop
        but awaits (no `bra`, no label), every await an mbarrier wait `== 1` (a spin loop) on a
        quiet mbarrier (checker.verdict.quiet: cut after one failed iteration, so one more
        iteration that exits is within an unroll of 2), no mbarrier.inval (which could hide an
        MbarrierUninitialised flag of a location with no init: axioms/ptx.cat, its third clause),
        no Tensor Memory allocation (TensorMemoryLeak is falsified by an appended dealloc), one
        kernel, the bundled model and options, no member of a value-dependent undefined behaviour
        in any execution of any variant (so none frees an await: checker.verdict.extension, over
        the threads' paths of the search)."""
        quiet = self._quiet
        if not (self.quiet and self.spin_once and self.loops) or self.test.kernels \
                or (self.test.unroll or self.lim.unroll) < 2:
            return "not the hang question's search with its awaits run once, or several kernels, or an unroll below 2"
        # the argument reads the bundled model's rules and options, none other
        if not bundled(self.model, self.options):
            return "another model or option than the bundled ones"
        for t in self.test.threads:
            if t.labels:
                return f"thread {t.name} has labels"
            for i in t.code:
                if i.op == "bra" or i.family in ("mbarrier.inval", *TMEM_ALLOCATION):
                    return f"{t.name}: {i.text}"
                if i.await_value is not None and not (i.family in paths.WAITS and i.await_value == 1
                                                      and i.operands[1].base in quiet):
                    return f"{t.name}: {i.text} is no `== 1` wait on a quiet mbarrier"
        # every mbarrier quiet (one init each: MbarrierSkippedPhase reads phases per lifetime when
        # any mbarrier has two, a whole-test fact a later init would change)
        mine = {self.names.get(n, n) for n in quiet}
        if any("MB" in ev.tags and ev.loc not in mine for es in self._es for ev in es.events) or \
                any(m.mbarrier is not None and m.name not in quiet for m in self.test.memory):
            return "an mbarrier that is not quiet"
        # no execution freed from an await or guard (the freeing rule, A7: docs/model.md#a18)
        return self._members_why

    def _extension_lemma_fails(self) -> str | None:
        """Why docs/model.md#a18's extension lemma does not apply here (None: it does): its
        premises (_premises_why), and the hang question answered "no hang", completely, with
        some execution terminating."""
        why = self._premises_why
        if why is not None:
            return why
        try:
            found, complete = self.hangs()
            if found or not complete or self.never_terminates() is not None:
                return "the hang question did not answer 'no hang' completely, with an execution that terminates"
        except (LimitExceeded, SolverUnknown):
            return "the hang question unanswered"   # (the search starts from every choice)
        return None

    @cached_property
    def hang_settles(self) -> bool:
        """Does a hang the test forbids decide its status before the undefined-behaviour search
        over the awaits unrolled? Where the test states `hang: forbidden` (and does not expect
        undefined behaviour), either answer of that search fails it: undefined behaviour is a fail
        in a test that states an expectation (checker.verdict.check), and so is the hang. Taken
        only where the extension lemma's premises hold, so that the hang question is the one that
        search would ask first (no work is added), and a hang is found: then the lemma fails and
        the search would start from every runs-once choice, past the path limit on a real
        pipeline (a CUTLASS mutant: 258 sessions in 139 s, then refused). The flags are then
        asked of the runs-once combinations only (`undefined_once`); a judge says so. Never for
        `check` or `explain`: their answer is the question itself, not a status."""
        t = self.test
        if t.expect_hang is not False or t.expect_undefined or not self.extend \
                or not any(paths.await_loops(x) is not x for x in t.threads) \
                or self._premises_why is not None:
            return False
        try:
            return bool(self.hangs()[0])
        except (LimitExceeded, SolverUnknown):
            return False

    @cached_property
    def undefined_once(self) -> tuple[UndefinedReport, ...]:
        """The undefined-behaviour flags that fire on a runs-once combination (a subset of
        `undefined`'s: each such combination's executions are among the kernel's)."""
        return _flags(self.sessions)

    @cached_property
    def _quiet(self) -> frozenset[str]:
        """The mbarriers whose failed waits are not combined (checker.verdict.quiet; none for the
        reference)."""
        return quiet_mbarriers(self.test) if self.quiet else frozenset()

    @cached_property
    def _search_paths(self) -> list:
        """Per thread, the paths of the undefined-behaviour search (the awaits unrolled like any
        loop, a thread cut in an await on a quiet mbarrier cut after one failed iteration)."""
        per = thread_paths(self.test, self.lim, True, self.options, spin_once=False, quiet=self._quiet)
        return [[_cut_once(p, self._quiet) for p in ps] for ps in per]

    @cached_property
    def _members_why(self) -> str | None:
        """Why condition (7) of docs/model.md#a18 is not shown (None: no member of a value-dependent
        undefined behaviour in any execution of any variant: checker.verdict.extension)."""
        return members_excluded(self.test, self.lim, self._search_paths)

    @cached_property
    def no_member(self) -> bool:
        """Is condition (7) shown for this test, with no loop but awaits (no `bra`, no label)? Then
        no execution of any combination, the hang question's included, has a member of a
        value-dependent undefined behaviour, and the freeing rule frees nothing (the refuter of
        checker.verdict.stops reads it). False where it is not shown, or the paths are too many."""
        if any(t.labels or any(i.op == "bra" for i in t.code) for t in self.test.threads):
            return False
        try:
            return self._members_why is None
        except (LimitExceeded, LitmusError, NeverCompletes):
            return False

    @cached_property
    def undefined(self) -> tuple[UndefinedReport, ...]:
        """Every undefined-behaviour flag that fires on some variant (once per flag and reason)."""
        return _flags(s for _, s in self._ub_variants)

    @cached_property
    def undefined_cut(self) -> tuple[str, ...]:
        """The variants the undefined-behaviour question is asked on that have an execution and a
        loop cut by the bound that is not a pure spin (it carries a register that decides when it
        ends, as a counter): what its thread does after it may lie past the bound on every path,
        so "no undefined behaviour" is not an answer (undefined behaviour found is one). A pure
        spin's later code is on the paths that leave it (docs/model.md#a18). With a filter, as for
        _cut_off, a cut variant counts even when none of its bounded executions passes the filter
        (a longer one may)."""
        return tuple(c.describe() for c, s in self._ub_variants
                     if any(not spin.pure(frozenset()) for _, spin in c.cut)
                     and (self.test.filter is not None or s.witness(None) is not None))

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
        return self.verdicts([cond])[0]

    def verdicts(self, conds: Sequence[Cond]) -> tuple[Verdict, ...]:
        """`verdict` of each condition: each variant is asked, together, about the conditions
        no earlier variant allows (Session.verdicts settles their sanity at once)."""
        allowed, sane = [False] * len(conds), [False] * len(conds)
        for k, s in self.complete_sessions():
            left = [i for i, a in enumerate(allowed) if not a]
            if not left:
                break
            for i, v in zip(left, s.verdicts([specialize(conds[i], self._missing(k)) for i in left])):
                allowed[i] |= v.allowed
                sane[i] |= v.sane
        out = []
        for cond, a, sn in zip(conds, allowed, sane):
            keys = set(self.observe) | atoms(cond, self.names)
            if not a and self._cut_off(keys):
                out.append(Verdict(None, True))
            else:
                out.append(Verdict(a, sn or a or self._cut_wellformed(keys)))
        return tuple(out)

    def _cut_wellformed(self, keys) -> bool:
        """Does a variant with a loop cut by the bound that loses outcomes over `keys` (as
        _cut_off) have an execution under well-formedness alone? Then a condition no complete
        variant satisfies even without axioms may still be satisfied past the bound (a loop that
        must go round more often than the bound allows before the outcome is reached): that it
        cannot hold at all ("broken", "impossible") is not shown, and is not said."""
        if self.test.filter is not None:
            keys = set(keys) | atoms(self.test.filter, self.names)
        threads = {t: frozenset(k.split(":", 1)[1] for k in keys if k.startswith(t + ":"))
                   for c in self.combos for t, _ in c.cut}
        return any(any(not spin.pure(threads[t]) for t, spin in c.cut)
                   and s.engine.satisfiable(None, axioms=()) is not None
                   for c, s in zip(self.combos, self.sessions))

    # -- the contract a Session meets too (checker.verdict.session) ----------------------------
    @property
    def notes(self) -> tuple[str, ...]:
        return (f"control paths: {self.total} combinations (unroll {self.test.unroll or self.lim.unroll})",)

    def undefined_witness(self) -> tuple[str, Witness] | None:
        """The first undefined-behaviour flag that fires on some variant, with its execution."""
        for c, s in self._ub_variants:
            # (a variant whose flags are known and none fires is not asked again)
            found = None if "undefined" in s.__dict__ and not s.undefined else s.undefined_witness()
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

    # -- liveness (checker.verdict.liveness) --------------------------------------------------
    def stuck(self) -> tuple[Hang, ...]:
        return liveness.stuck(self)

    def never_terminates(self) -> str | None:
        return liveness.never_terminates(self)

    def _endless(self) -> Hang | None:
        return liveness.endless(self)

    def hangs(self) -> tuple[tuple[Hang, ...], bool]:
        return liveness.hangs(self)

    def hang_unknown_why(self) -> str:
        return liveness.hang_unknown_why(self)


# The Tensor Memory allocation instructions: with none, TC_ALLOC, TC_DEALLOC, TC_RELINQ, TC_LEAK and
# tcgrow are empty in every variant, so TensorMemoryAlloc, TensorMemoryWarp, TensorMemoryColumns and
# TensorMemoryLeak (axioms/ptx.cat:717-732; Leak is falsified by an appended dealloc) never fire.
TMEM_ALLOCATION = ("tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit")


def _flags(sessions) -> tuple[UndefinedReport, ...]:
    """Every undefined-behaviour flag that fires on one of `sessions`, once per flag and reason."""
    seen, out = set(), []
    for s in sessions:
        for u in s.undefined:
            if (u.flag, u.why) not in seen:
                seen.add((u.flag, u.why))
                out.append(u)
    return tuple(out)


def _cut_spans(p: paths.Path) -> tuple[tuple[int, int], ...]:
    """The iterations that went round of the await loop path `p` is cut in: the spans of
    Path.rounds that run, one after the other, up to its last iteration (which ends the path)."""
    if p.cut is None or not p.rounds:
        return ()
    spans = sorted(p.rounds)
    last = spans[-1]
    if last[1] + (last[1] - last[0]) != len(p.code):
        return ()
    out = [last]
    for a, b in reversed(spans[:-1]):
        if b != out[-1][0]:
            break
        out.append((a, b))
    where = p.cut.head.where
    return tuple(x for x in reversed(out) if p.code[x[0]].where == where)


def _cut_once(p: paths.Path, quiet: frozenset[str]) -> paths.Path:
    """`p`, cut after one failed iteration where it is cut in an await on a `quiet` mbarrier."""
    head = p.cut.head if p.cut is not None else None
    if head is None or head.family not in paths.WAITS or head.operands[1].base not in quiet:
        return p
    gone = _cut_spans(p)
    if not gone:
        return p
    code, moved = p.without(gone)
    rounds = tuple((moved[a], moved[b - 1] + 1) for a, b in p.rounds if (a, b) not in gone)
    return replace(p, code=code, rounds=rounds)


def _quiet_rounds(p: paths.Path, quiet: frozenset[str]) -> int:
    """How many iterations that went round on path `p` are failed waits on a `quiet` mbarrier
    (checker.verdict.quiet) of an await the path goes on past (not the await it is cut in)."""
    cut = p.cut.head.where if p.cut is not None else None
    n = 0
    for a, _ in p.rounds:
        i = p.code[a]
        if i.family in paths.WAITS and i.operands[1].base in quiet and (cut is None or i.where != cut):
            n += 1
    return n


def _advice(cut: list[Combo], unroll: int) -> str:
    for c in cut:
        for thread, spin in c.cut:
            if spin.decided:
                b = spin.branch
                return (f"the loop of {b.text} ({thread}, line {b.where.line if b.where else '?'}) runs more than "
                        f"{paths.DECIDED_ITERATIONS} iterations its registers decide: ptxmc unrolls such a loop to at "
                        "most that bound, whatever --unroll says")
    return f"raise --unroll (now {unroll})"
