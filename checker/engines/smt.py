"""The Z3 engine: one solver per test, in the test's own Z3 context, over the pure encoding;
axioms are guarded by named assumption literals so the same solver serves the sanity run (no
axioms), outcome enumeration (blocking the observable projection, never whole executions),
undefined-behaviour flags, and blame (minimal sets of axioms that rule an outcome out).
unknown/timeouts raise SolverUnknown.

Determinism: every decision that can change a result or a witness is taken on Z3's answers and
resource count, never on the wall clock; a test's context is its own, so what ran before it in
the process cannot change its answers. The wall-clock timeout only turns a query into UNKNOWN."""
from __future__ import annotations

import ctypes
import time
from typing import Sequence

import z3

from .. import limits
from ..ast import And, Cond, Const, Eq, EqRef, Not, Or
from ..cat.interp import Model
from ..cat.symbolic import TRUE, mk_implies
from ..errors import InternalError, SolverUnknown
from ..model.events import EventStructure
from ..model.observables import holds, key
from ..model.symmetry import observable_symmetries
from ..model.values import from_z3, int_of, int_val
from .base import Execution, Pair
from ..watchdog import z3_context
from .encode import Encoding, encode
from .least import bisect, linear


TIMEOUT_SLACK_MS = 100
# Outcomes found before the test's symmetries are looked for: tests with 1-3 outcomes (most
# tests) never pay for the search. The search of a small test costs about one query (SB n = 6:
# 0.4 ms), and a ring of n threads then needs about one query per orbit: SB n = 4 8 queries
# instead of 17, n = 6 16 instead of 36 (it was 32: bench/RESULTS.md, "Issue 38, morning").
SYMMETRY_AFTER = 4
# Outcomes found one model at a time before a test without symmetry switches to the search of
# the product of its observables' values, and the subtree size asked leaf by leaf there.
PRODUCT_AFTER = 256
LEAF_BATCH = 16


class Z3Engine:
    name = "z3"

    def __init__(self, es: EventStructure, model: Model, options=frozenset(), timeout: float | None = None,
                 max_outcomes: int | None = None, rlimit: int | None = None, ctx: z3.Context | None = None,
                 filter: Cond | None = None):
        lim = limits.current()
        limits.check_events(len(es.events))
        self.es = es
        self.ctx = ctx or z3_context()
        self.timeout = lim.timeout if timeout is None else timeout
        # Within a Session, the test's deadline (its time includes lowering); else from now.
        self.deadline = limits.current_deadline() or time.monotonic() + self.timeout
        self.max_outcomes = lim.outcomes if max_outcomes is None else max_outcomes
        self.rlimit = lim.rlimit if rlimit is None else rlimit
        self.filter = filter
        self._flag_order = model.flag_names
        self.enc: Encoding = encode(es, model, options, self.ctx)
        self._budget = 0                    # the timeout (ms) last given to the solver
        self._witnesses: list[tuple[frozenset, Execution]] = []    # with the axioms each satisfies
        self._refuted: dict[Cond | None, list[frozenset]] = {}      # condition -> axiom sets refuting it
        self._terms: dict = {}              # condition -> its term
        self.solver = z3.Solver(ctx=self.ctx)
        # (one call: setting a parameter costs about as much as a small check)
        self.solver.set(
            # No relevancy filtering: every atom of this encoding matters, and the enumeration's
            # many small incremental queries run about twice as fast without it (bench/RESULTS.md).
            "relevancy", 0,
            # The older simplex arithmetic solver: mbarrier states are packed integers (div/mod by
            # a constant radix); it halves the 4-stage TMA pipeline and speeds the suites by ~20%
            # (bench/RESULTS.md).
            "arith.solver", 2,
            # Models as the solver found them: compacting one (Z3's default) cost more than the
            # check itself in long enumerations (mp n = 12: 2.9 -> 2.1 s; bench/RESULTS.md).
            "model.compact", False,
            # Z3's rlimit bounds each check() call (0: none)
            *(("rlimit", self.rlimit) if self.rlimit else ()),
            # the time left, renewed by _check_array as it shrinks
            "timeout", self._renewed_budget())
        self._arrays: dict = {}             # assumption literals -> their C array (_array)
        self._fired: dict | None = None     # flag -> witness, for the flags that fire (flag_witness)
        # (through the C API: z3py's add casts every term to a Boolean again, ~66,000 casts over
        # the bundled suites; the encoding's terms are Booleans of this context already)
        for t in self.enc.wellformed:
            self._assert(t)
        if filter is not None:          # herd's filter: only executions satisfying it exist
            self.solver.add(self.term(filter))
        self.lits = {}
        for name, ax in sorted(self.enc.axioms.items(), key=_literal_order(self.enc.axioms)):
            lit = z3.Bool(_literal_name(name, self.enc.axioms), self.ctx)
            self.lits[name] = lit
            self._assert(mk_implies(lit, ax))

    def _assert(self, t: z3.BoolRef) -> None:
        z3.Z3_solver_assert(self.ctx.ref(), self.solver.solver, t.as_ast())

    @property
    def axiom_names(self) -> tuple[str, ...]:
        return tuple(sorted(self.lits))

    @property
    def flag_names(self) -> tuple[str, ...]:
        return tuple(n for n in self._flag_order if n in self.enc.flags)

    def term(self, cond: Cond) -> z3.BoolRef:
        """The Z3 term of a condition over this test's observables (cached)."""
        t = self._terms.get(cond)
        if t is None:
            t = self._terms[cond] = _cond_term(cond, self.enc.observables, self.es.names, self.ctx)
        return t

    def _check(self, *assumptions) -> bool:
        """sat? unknown raises SolverUnknown."""
        return self._check_array(self._array(assumptions), len(assumptions))

    def _array(self, assumptions) -> ctypes.Array:
        # Solver.check goes through the C API with the assumption array built once per set of
        # axioms: z3py casts every assumption at every call, a third of an enumeration's Python time.
        key = tuple(map(id, assumptions))
        hit = self._arrays.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], assumptions)):
            # the terms are kept with their array: an id is only unique while its object lives
            hit = self._arrays[key] = (assumptions, (z3.Ast * len(assumptions))(*(a.as_ast() for a in assumptions)))
        return hit[1]

    def _check_array(self, arr: ctypes.Array, n: int) -> bool:
        """`_check` under the first `n` assumption literals of the C array `arr`."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._timeout()
        # Setting a solver parameter costs about as much as a small check, so the budget is
        # renewed only when it has shrunk by TIMEOUT_SLACK_MS: a check may overrun the deadline by
        # at most that much.
        if self._budget - left * 1000 > TIMEOUT_SLACK_MS:
            self.solver.set("timeout", self._renewed_budget())
        r = z3.Z3_solver_check_assumptions(self.ctx.ref(), self.solver.solver, n, arr)
        if r == z3.Z3_L_UNDEF:
            reason = self.solver.reason_unknown()
            if "timeout" in reason or time.monotonic() >= self.deadline:
                raise self._timeout()
            if self.rlimit and ("canceled" in reason or "resource" in reason):
                raise SolverUnknown(f"Z3 resource limit exceeded (rlimit {self.rlimit} per solver call; "
                                    f"raise it with {limits.flag('rlimit')})")
            raise SolverUnknown(f"Z3 returned unknown ({reason})")
        return r == z3.Z3_L_TRUE

    def _renewed_budget(self) -> int:
        """The solver's timeout (ms) to the deadline, remembered as the one last given."""
        self._budget = max(1, int((self.deadline - time.monotonic()) * 1000))
        return self._budget

    def _timeout(self) -> SolverUnknown:
        return limits.timeout_error(self.timeout)

    def _axioms(self, names: Sequence[str] | None = None):
        names = self.axiom_names if names is None else names
        return [self.lits[n] for n in names]

    def satisfiable(self, cond: Cond | None = None, axioms: Sequence[str] | None = None) -> Execution | None:
        """An execution satisfying `cond` under the given axioms (None: all of them; ():
        well-formedness alone), or None.

        A query under fewer axioms can be far harder for the solver than under all of them (the
        sanity run on mbarrier tests: without the axioms, values may depend on themselves, and
        refuting such cycles is integer arithmetic). So a stronger query goes first: the given
        axioms and all the others but at most one (a cardinality constraint on their literals:
        one query in place of one per axiom left out), since an execution it allows is allowed
        by fewer axioms too. Only if it has none does the query itself run (bench/RESULTS.md).
        What each answer shows is kept: a witness answers every query under axioms it satisfies
        (its axiom literals that are true) for every condition its outcome satisfies (the sanity
        runs of a test's forbidden conditions), a refutation every query of its condition under
        more axioms (blame asks many sets of axioms of one condition)."""
        wanted = frozenset(self.lits if axioms is None else axioms)
        ex = self._kept_witness(cond, wanted)
        if ex is not None:
            return ex
        refuted = self._refuted.setdefault(cond, [])
        if any(r <= wanted for r in refuted):
            return None
        every = frozenset(self.lits)
        if wanted == every:
            ex = self._satisfiable(self._cond_term(cond), wanted)
        else:
            # (the stronger query is skipped where each of its axiom sets is refuted already:
            # sane_each refutes it for several conditions in one query)
            if not self._stronger_refuted(cond, wanted):
                ex = self._satisfiable(self._cond_term(cond), wanted, all_but_one=True)
                if ex is None:
                    refuted.extend(every - {a} for a in sorted(every - wanted))
            if ex is None and len(every - wanted) > 1:  # (with one axiom left out, that was this query)
                ex = self._satisfiable(self._cond_term(cond), wanted)
        if ex is None:
            refuted.append(wanted)
        return ex

    def sane(self, cond: Cond) -> bool:
        return self.satisfiable(cond, axioms=()) is not None

    def sane_each(self, conds: Sequence[Cond]) -> tuple[bool, ...]:
        """`sane` of each condition, the first, stronger query of each (all axioms but at most
        one: see satisfiable) asked for all of them at once, as the flags are (_flags_fired): one
        query asks whether any condition not yet answered holds, and its model (a witness, kept
        as satisfiable keeps them) answers every condition its outcome satisfies; when none is
        left, the refutation refutes each condition left under each such set of axioms. What is
        left is asked per condition, as `sane` asks it. Before that loop, one query asks whether
        the conditions left all hold at once (a skeleton's data checks usually do, under every
        axiom but one): its model answers each of them (the CUTLASS skeleton's 8 data checks: 8
        queries -> 1; bench/RESULTS.md); if they cannot, it costs one query."""
        every = frozenset(self.lits)
        nothing = frozenset()
        left = [c for c in dict.fromkeys(conds)
                if self._kept_witness(c, nothing) is None and not self._stronger_refuted(c, nothing)]
        if len(left) > 1:
            # First whether they all hold at once: the broken reads of a skeleton's data checks
            # usually do on one execution, which then answers every one of them (the CUTLASS
            # skeleton: 5 queries -> 1). If they cannot, only the disjunction's loop below runs.
            self._satisfiable(self._all([self.term(c) for c in left]), nothing, all_but_one=bool(every))
            left = [c for c in left if self._kept_witness(c, nothing) is None]
        while left:
            ex = self._satisfiable(self._any([self.term(c) for c in left]), nothing, all_but_one=bool(every))
            if ex is None:
                for c in left:
                    self._refuted.setdefault(c, []).extend([every - {a} for a in sorted(every)] or [every])
                break
            now = [c for c in left if holds(c, dict(ex.outcome), self.es.names)]
            if not now:     # (the model satisfies the disjunction)
                raise InternalError("a model of 'some condition holds' on which no condition holds")
            left = [c for c in left if c not in now]
        return tuple(self.sane(c) for c in conds)

    def _stronger_refuted(self, cond: Cond | None, wanted: frozenset) -> bool:
        """Is satisfiable's stronger query for `cond` under `wanted` refuted already: `cond`
        under each set of all axioms but one outside `wanted` (all of them, if that is none)?"""
        every = frozenset(self.lits)
        refuted = self._refuted.get(cond, ())
        return all(any(r <= s for r in refuted) for s in [every - {a} for a in every - wanted] or [every])

    def _kept_witness(self, cond: Cond | None, wanted: frozenset) -> Execution | None:
        """A witness kept from an earlier query that satisfies `cond` under the axioms `wanted`."""
        for held, ex in self._witnesses:
            if wanted <= held and (cond is None or holds(cond, dict(ex.outcome), self.es.names)):
                return ex
        return None

    def _cond_term(self, cond: Cond | None) -> z3.BoolRef | None:
        return None if cond is None else self.term(cond)

    def _satisfiable(self, term: z3.BoolRef | None, axioms: frozenset, all_but_one: bool = False) -> Execution | None:
        """satisfiable's query for `term` (None: none) under `axioms`, and with `all_but_one`
        every other axiom but at most one; a witness is kept with the axioms it satisfies."""
        self.solver.push()
        try:
            if term is not None:
                self.solver.add(term)
            if all_but_one:
                others = [lit for name, lit in sorted(self.lits.items()) if name not in axioms]
                self.solver.add(z3.PbGe([(lit, 1) for lit in others], len(others) - 1))
            if not self._check(*self._axioms(sorted(axioms))):
                return None
            m = self.solver.model()
            held = frozenset(n for n, lit in self.lits.items() if z3.is_true(m.eval(lit, model_completion=True)))
            ex = self._execution(m, tuple(self.enc.observables))
            self._witnesses.append((held | axioms, ex))
            return ex
        finally:
            self.solver.pop()

    def outcomes(self, observe: Sequence[str]) -> tuple[frozenset, bool]:
        """Every allowed projection onto `observe`; the bool is False if the cap was reached.

        Outcomes are found one model at a time, each blocked once found. A test with many
        outcomes changes strategy: past SYMMETRY_AFTER, if it is symmetric, one model per orbit
        (model/symmetry.py); otherwise, past PRODUCT_AFTER, a search of the product of the
        observables' value sets (_product_search)."""
        obs = [self.enc.observables.get(k, z3.IntVal(0, self.ctx)) for k in observe]
        found: set[tuple[int, ...]] = set()
        projection = _Projection(obs, self.ctx)
        sym, looked = None, False
        self.solver.push()
        try:
            while self._check(*self._axioms()):
                vals = projection.values(self.solver.model())
                new = {vals}
                if not looked and len(found) >= SYMMETRY_AFTER and self.filter is None:
                    looked = True
                    sym = observable_symmetries(self.es, observe)
                    if sym is not None:
                        # From now on only orbit leaders are looked for (model/symmetry.py), and
                        # each outcome found brings its orbit: one solver call per orbit.
                        self.solver.add(*(_lex_leq(obs, src, self.ctx) for src in sym.generators))
                        new = set().union(*(sym.orbit(v, self.max_outcomes) for v in found | new))
                if sym is not None:
                    new = sym.orbit(vals, self.max_outcomes) | new
                new -= found
                found |= new
                if len(found) >= self.max_outcomes:
                    return self._listed(observe, found, False)
                if not obs:
                    break
                # Block these projections (not the executions): the next model differs somewhere.
                # Outcomes that are not orbit leaders are excluded already.
                for v in sorted(new):
                    if sym is None or sym.leader(v):
                        projection.block(self.solver, v)
                if sym is None and len(found) >= PRODUCT_AFTER:
                    return self._listed(observe, found, self._product_search(projection, found))
        finally:
            self.solver.pop()
        return self._listed(observe, found, True)

    def _listed(self, observe, found, complete: bool) -> tuple[frozenset, bool]:
        kept = found if complete else sorted(found)[:self.max_outcomes]
        return frozenset(tuple(zip(observe, v)) for v in kept), complete

    def _product_search(self, projection: "_Projection", found: set) -> bool:
        """The allowed outcomes not yet in `found`, added to it: a depth-first walk over the
        product of the observables' value sets, each node a query under assumptions (observable
        = value), no model built. The blocking clauses of the outcomes found are in force, so a
        prefix is satisfiable only if some outcome not yet found extends it; a subtree of at most
        LEAF_BATCH outcomes is asked leaf by leaf. A dense outcome set (the MP chain: every
        combination but one) costs about 1.1 queries per outcome, each cheaper than a query and
        a model (bench/RESULTS.md). False if the cap was reached."""
        axioms = self._axioms()
        n = len(projection.terms)
        doms = []
        for i in range(n):          # each observable's values: those found, then the others
            known = sorted({v[i] for v in found})
            more = []
            self.solver.push()
            try:
                for v in known:
                    projection.exclude(self.solver, i, v)
                while self._check(*axioms):
                    v = projection.value(i, self.solver.model())
                    more.append(v)
                    projection.exclude(self.solver, i, v)
            finally:
                self.solver.pop()
            doms.append(sorted(known + more))
        below = [1] * (n + 1)           # outcomes in a subtree whose root is at depth i
        for i in reversed(range(n)):
            below[i] = below[i + 1] * len(doms[i])
        # One C array for the whole walk: the axioms' literals, then the prefix's (observable =
        # value). The walk is depth-first, so a node popped at depth d shares its first d - 1
        # values with the node written last: only its own literal, entry d - 1, is written.
        fixed = len(axioms)
        arr = (z3.Ast * (fixed + n))(*(a.as_ast() for a in axioms))
        literal = [{v: projection.equals(i, v).as_ast() for v in doms[i]} for i in range(n)]
        stack: list[tuple[int, tuple]] = [(0, ())]     # depth, values
        while stack:
            depth, vals = stack.pop()
            if depth:
                arr[fixed + depth - 1] = literal[depth - 1][vals[-1]]
            if depth == n:
                if vals not in found and self._check_array(arr, fixed + n):
                    found.add(vals)
                    if len(found) >= self.max_outcomes:
                        return False
                continue
            if below[depth] > LEAF_BATCH and not self._check_array(arr, fixed + depth):
                continue
            stack.extend((depth + 1, vals + (v,)) for v in reversed(doms[depth]))
        return True

    def flag_witness(self, name: str) -> Execution | None:
        if self._fired is None:
            self._fired = self._flags_fired()
        return self._fired.get(name)

    def flag_least(self, name: str, below: Pair) -> tuple[Pair, Execution] | None:
        """The least edge before `below` (a set's element e as (e, e)) that flag `name`'s relation
        contains on some consistent execution, with such an execution; None if there is none.
        By bisection over the statically possible edges in order (least.bisect: a query asks
        whether some edge of a range fires), about log2 of their number in queries; the answer
        is the linear scan's (flag_least_linear), an unknown range falling back to it."""
        terms = self._candidates(name, below)
        found = bisect(len(terms), lambda lo, hi: self._some_edge(terms, lo, hi),
                       lambda i: self._edge_fires(terms[i][1]))
        return None if found is None else (terms[found[0]][0], found[1])

    def flag_least_linear(self, name: str, below: Pair) -> tuple[Pair, Execution] | None:
        """flag_least by its specification: one query per statically possible edge, in order,
        stopping at the first yes (tests compare the two; bench/flags.py times both)."""
        terms = self._candidates(name, below)
        found = linear(lambda i: self._edge_fires(terms[i][1]), 0, len(terms))
        return None if found is None else (terms[found[0]][0], found[1])

    def _candidates(self, name: str, below: Pair) -> list[tuple[Pair, z3.BoolRef]]:
        """The statically possible edges of flag `name` before `below`, in order, with their terms."""
        value = self.enc.flags[name][2]
        return [(_edge(k), value[k]) for k in sorted(value, key=_edge) if _edge(k) < below]

    def _edge_fires(self, t) -> Execution | None:
        """A consistent execution on which the term `t` (one edge of a flag) holds, or None."""
        self.solver.push()
        try:
            if t is not TRUE:
                self._assert(t)
            if self._check(*self._axioms()):
                return self._execution(self.solver.model(), tuple(self.enc.observables))
            return None
        finally:
            self.solver.pop()

    def _some_edge(self, terms: list, lo: int, hi: int) -> tuple[int, Execution] | None:
        """Does some edge of terms[lo:hi] hold on a consistent execution? The least index whose
        edge holds on the execution found, with it; None if none can."""
        ts = [t for _, t in terms[lo:hi]]
        some = self._any(ts)
        self.solver.push()
        try:
            self._assert(some)
            if not self._check(*self._axioms()):
                return None
            m = self.solver.model()
            j = next((lo + k for k, t in enumerate(ts)
                      if t is TRUE or z3.is_true(m.eval(t, model_completion=True))), None)
            if j is None:       # the model satisfies the disjunction
                raise InternalError("a model of 'some edge of the flag holds' on which none holds")
            return j, self._execution(m, tuple(self.enc.observables))
        finally:
            self.solver.pop()

    def _any(self, terms: list) -> z3.BoolRef:
        """The disjunction of `terms` (TRUE among them: true), in one C call."""
        if any(t is TRUE for t in terms):
            return z3.BoolVal(True, self.ctx)
        return z3.BoolRef(z3.Z3_mk_or(self.ctx.ref(), len(terms), (z3.Ast * len(terms))(*(t.as_ast() for t in terms))),
                          self.ctx)

    def _all(self, terms: list) -> z3.BoolRef:
        """The conjunction of `terms` (TRUE among them: left out), in one C call."""
        terms = [t for t in terms if t is not TRUE]
        return z3.BoolRef(z3.Z3_mk_and(self.ctx.ref(), len(terms), (z3.Ast * len(terms))(*(t.as_ast() for t in terms))),
                          self.ctx)

    def _flags_fired(self) -> dict[str, Execution]:
        """A witness for every flag that fires on some consistent execution. One query asks
        whether any flag not yet seen fires, and its model answers for every flag firing there,
        so a test without undefined behaviour costs one query, not one per flag (the real ring:
        9 -> 1; bench/RESULTS.md)."""
        fired: dict[str, Execution] = {}
        left = sorted(self.enc.flags)
        while left:
            terms = [self.enc.flags[n][0] for n in left]
            some = self._any(terms)
            self.solver.push()
            try:
                self.solver.add(some)
                if not self._check(*self._axioms()):
                    break
                m = self.solver.model()
                ex = self._execution(m, tuple(self.enc.observables))
                now = [n for n, t in zip(left, terms)
                       if t is TRUE or z3.is_true(m.eval(t, model_completion=True))]
            finally:
                self.solver.pop()
            if not now:     # the model satisfies the disjunction
                raise InternalError("a model of 'some flag fires' on which no flag fires")
            for n in now:
                fired[n] = ex
            left = [n for n in left if n not in fired]
        return fired

    def _execution(self, m: z3.ModelRef, observe) -> Execution:
        def true(t) -> bool:
            return t is TRUE or z3.is_true(m.eval(t, model_completion=True))

        rf = frozenset(k for k, t in self.enc.rf.items() if true(t))
        orders = {n: frozenset(k for k, t in rel.items() if true(t)) for n, rel in self.enc.orders.items()}
        vals = {r: from_z3(m.eval(v, model_completion=True)) for r, v in self.enc.values.items()}
        outcome = tuple((k, from_z3(m.eval(self.enc.observables[k], model_completion=True))) for k in observe)
        return Execution(rf, orders, vals, outcome)


def _edge(key) -> Pair:
    """A flagged relation's edge, or a flagged set's element e as (e, e)."""
    return key if isinstance(key, tuple) else (key, key)


class _Projection:
    """The observable terms of an enumeration: their values in a model, and the clause that
    blocks one tuple of values. Enumeration does this once per outcome, so it goes through the
    C API: the z3py wrappers cost about 4x more per term (bench/RESULTS.md). Every AST the C API
    returns is read at once or wrapped (reference-counted) before the next call."""

    def __init__(self, terms: Sequence[z3.ArithRef], ctx: z3.Context):
        self.terms = list(terms)
        self.ctx = ctx
        self.asts = [t.as_ast() for t in self.terms]
        self.numerals: dict[int, z3.IntNumRef] = {}
        self.differs: dict[tuple[int, int], z3.BoolRef] = {}
        self.eqs: dict[tuple[int, int], z3.BoolRef] = {}
        self._out = z3.Ast(0)

    def values(self, m: z3.ModelRef) -> tuple[int, ...]:
        return tuple(self.value(i, m) for i in range(len(self.asts)))

    def block(self, solver: z3.Solver, vals: Sequence[int]) -> None:
        """Assert that the observables do not take the values `vals` (all at once): a clause of
        disequalities, each made once per (observable, value) and shared by every clause."""
        cref = self.ctx.ref()
        args = (z3.Ast * len(vals))(*(self._differs(i, v) for i, v in enumerate(vals)))
        clause = z3.BoolRef(z3.Z3_mk_or(cref, len(vals), args), self.ctx)
        z3.Z3_solver_assert(cref, solver.solver, clause.as_ast())

    def value(self, i: int, m: z3.ModelRef) -> int:
        out, cref = self._out, self.ctx.ref()
        if z3.Z3_model_eval(cref, m.model, self.asts[i], True, ctypes.byref(out)) and z3.Z3_is_numeral_ast(cref, out):
            return int_of(z3.Z3_get_numeral_string(cref, out))
        return from_z3(m.eval(self.terms[i], True))

    def exclude(self, solver: z3.Solver, i: int, v: int) -> None:
        """Assert that observable i does not take the value v."""
        z3.Z3_solver_assert(self.ctx.ref(), solver.solver, self._differs(i, v))

    def equals(self, i: int, v: int) -> z3.BoolRef:
        e = self.eqs.get((i, v))
        if e is None:
            e = self.eqs[(i, v)] = z3.BoolRef(z3.Z3_mk_eq(self.ctx.ref(), self.asts[i], self._numeral(v).as_ast()),
                                              self.ctx)
        return e

    def _differs(self, i: int, v: int):
        d = self.differs.get((i, v))
        if d is None:
            d = self.differs[(i, v)] = z3.BoolRef(z3.Z3_mk_not(self.ctx.ref(), self.equals(i, v).as_ast()), self.ctx)
        return d.as_ast()

    def _numeral(self, v: int) -> z3.IntNumRef:
        n = self.numerals.get(v)
        if n is None:
            n = self.numerals[v] = int_val(v, self.ctx)
        return n


def _unnamed(axioms) -> dict[str, int]:
    """The model's unnamed checks (`check@LINE`), each by its rank among them in the model."""
    return {n: i for i, n in enumerate(n for n in axioms if n.startswith("check@"))}


def _literal_order(axioms):
    """The order the axiom literals are made in: named checks by name, then the unnamed ones in
    the model's order (not by `check@LINE`: lines, which comments move, must not change Z3's
    search, which depends on the order and the names of its variables)."""
    unnamed = _unnamed(axioms)
    return lambda item: (1, "", unnamed[item[0]]) if item[0] in unnamed else (0, item[0], 0)


def _literal_name(name: str, axioms) -> str:
    """The Z3 name of an axiom's literal: `axiom|NAME`, `axiom|check#K` for the K-th unnamed check."""
    unnamed = _unnamed(axioms)
    return f"axiom|check#{unnamed[name] + 1}" if name in unnamed else f"axiom|{name}"


def _lex_leq(terms, src, ctx) -> z3.BoolRef:
    """terms <= (lexicographically) their image under the permutation `src`."""
    acc = z3.BoolVal(True, ctx)
    if not all(z3.is_int(t) for t in terms):
        for j in reversed(range(len(terms))):
            if src[j] != j:
                a, b = terms[j], terms[src[j]]
                acc = z3.Or(a < b, z3.And(a == b, acc))
        return acc
    # The same terms, built in the same order, through the C entry points (z3py's operators
    # check and coerce every argument: ~1 ms of SB n = 6's enumeration).
    c, pair = ctx.ref(), (z3.Ast * 2)()
    for j in reversed(range(len(terms))):
        if src[j] != j:
            a, b = terms[j].as_ast(), terms[src[j]].as_ast()
            lt = z3.BoolRef(z3.Z3_mk_lt(c, a, b), ctx)
            eq = z3.BoolRef(z3.Z3_mk_eq(c, a, b), ctx)
            pair[0], pair[1] = eq.as_ast(), acc.as_ast()
            both = z3.BoolRef(z3.Z3_mk_and(c, 2, pair), ctx)
            pair[0], pair[1] = lt.as_ast(), both.as_ast()
            acc = z3.BoolRef(z3.Z3_mk_or(c, 2, pair), ctx)
    return acc


def _cond_term(c: Cond, observables, names, ctx) -> z3.BoolRef:
    """A condition as a Z3 term over the observables (an observable not in the encoding is 0)."""
    if isinstance(c, Eq):
        t = observables.get(key(c.lhs, names))
        return (t if t is not None else z3.IntVal(0, ctx)) == int_val(c.value, ctx)
    if isinstance(c, EqRef):
        a, b = (observables.get(key(r, names)) for r in (c.lhs, c.rhs))
        return (a if a is not None else z3.IntVal(0, ctx)) == (b if b is not None else z3.IntVal(0, ctx))
    if isinstance(c, Not):
        return z3.Not(_cond_term(c.arg, observables, names, ctx), ctx)
    if isinstance(c, And):
        return z3.And([_cond_term(a, observables, names, ctx) for a in c.args] + [z3.BoolVal(True, ctx)])
    if isinstance(c, Or):
        return z3.Or([_cond_term(a, observables, names, ctx) for a in c.args] + [z3.BoolVal(False, ctx)])
    if isinstance(c, Const):
        return z3.BoolVal(c.value, ctx)
    raise TypeError(c)
