"""A Session: one test under one model, option set and engine, lowered and encoded once, that
answers every question about the test -- undefined behaviour, allowed outcomes, the verdict on a
condition, a witness, the minimal sets of axioms that rule a condition out, the violations a
candidate execution shows, and the mutants of the test (each its own Session). `ptxmc run`,
`check` and `report` all ask a Session (Dat3M's VerificationTask plus ModelChecker: the witness
comes from the run that produced the verdict)."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Iterator, NamedTuple, Sequence

from .. import limits
from ..ast import And, Cond, Eq, LitmusTest, Not, Or
from ..errors import LitmusError
from ..errors import SourceLoc
from ..model.values import FLOAT_FORMATS, float_bits
from ..front.conditions import check_refs
from ..cat.interp import Model
from ..engines import registry as engines
from ..engines.base import Engine, Execution, concrete_evaluation
from ..isa.registry import lower
from ..limits import Limits
from ..model.events import EventStructure
from ..model.observables import atoms, key, predicate
from ..unfold.variants import default_keys
from ..resources import model_name
from ..results.result import Outcome, UndefinedReport
from .blame import blame
from .mutate import Mutation, mutations


class Verdict(NamedTuple):
    allowed: bool | None    # does the model allow an execution satisfying the condition? (None:
                            # Unknown, a loop bound cut executions off: checker.verdict.union)
    sane: bool              # does any execution satisfy it under well-formedness alone?


@dataclass(frozen=True)
class Witness:
    """An execution and the straight-line variant it runs on: `session` is that variant's
    Session (its event structure, its model evaluation), `paths` the control paths and barrier
    schedule that variant takes ('' for a test with one variant)."""

    execution: Execution
    session: "Session"
    paths: str = ""

    @property
    def es(self) -> EventStructure:
        return self.session.es


class Session:
    """See the module docstring. Everything is computed on first use and kept."""

    def __init__(self, test: LitmusTest, model: Model, options=frozenset(), engine: str = "z3",
                 lim: Limits | None = None, es: EventStructure | None = None, variant: LitmusTest | None = None):
        """`es`: the test's event structure where the caller has lowered it already (neither a
        test's `locations:` nor its filter reach lowering); `variant`: the test as its one
        straight-line variant, its barrier generations decided (checker.unfold.variants), where the
        caller has unfolded it already (then lowering does not explore them again)."""
        self.test = test
        self.variant = variant or test
        if es is not None:
            self.__dict__["es"] = es        # (the cached_property's value)
        self.model = model
        self.options = frozenset(options)
        self.engine_name = engine
        self.lim = lim or limits.current()
        self.model_name = model_name(model)
        self._outcomes: tuple[frozenset[Outcome], bool] | None = None
        # The test's time runs from here: lowering and encoding count against --timeout too.
        self.deadline = time.monotonic() + self.lim.timeout

    @cached_property
    def es(self) -> EventStructure:
        with limits.use(self.lim), limits.deadline(self.deadline):
            return lower(self.variant)

    @cached_property
    def engine(self) -> Engine:
        es = self.es
        lim = self.lim if self.test.rlimit is None else replace(self.lim, rlimit=self.test.rlimit)
        filt = None if self.test.filter is None else self.prepare(self.test.filter)
        with limits.use(lim), limits.deadline(self.deadline):
            return engines.make(self.engine_name, es, self.model, self.options, lim, filt)

    @cached_property
    def observe(self) -> tuple[str, ...]:
        """The outcome projection: what the expectations and `locations:` mention; without
        either (or with `observe_defaults`), every register and every location a thread writes
        (an mbarrier object's state is not data: it is shown when asked for)."""
        es = self.es
        keys = {key(r, es.names) for r in self.test.locations}
        for e in self.test.expectations:
            keys |= atoms(e.cond, es.names)
        if not keys or self.test.observe_defaults:
            keys |= default_keys(es)
        order = {t: i for i, t in enumerate(es.thread_names)}

        def sort_key(k: str):
            if ":" in k:
                t, r = k.split(":", 1)
                return (0, order.get(t, 99), r)
            return (1, 0, k)

        return tuple(sorted(keys, key=sort_key))

    def prepare(self, cond: Cond, where: SourceLoc | None = None) -> Cond:
        """`cond` with each value as the bit pattern of what it is compared with (A16): a negative
        integer as its two's complement in the register's or location's width, a decimal number
        as the .f32 / .f64 pattern of a floating-point register. LitmusError if a value does not
        fit, or a decimal number meets an integer."""
        if isinstance(cond, Eq):
            k = key(cond.lhs, self.es.names)
            bits, fmt = self.es.formats.get(k, (None, "int"))
            v = cond.value
            if isinstance(v, float):
                if fmt not in FLOAT_FORMATS:
                    raise LitmusError(f"'{cond.lhs}={v}': {cond.lhs} holds an integer; write an integer "
                                      "(or 0f... / 0d... for a floating-point bit pattern)", where)
                v = float_bits(repr(v), fmt)
            elif bits is not None and not 0 <= v < (1 << bits):
                if not -(1 << (bits - 1)) <= v < 0:
                    raise LitmusError(f"'{cond.lhs}={v}': {cond.lhs} holds {bits}-bit values: {v} does not fit",
                                      where)
                v += 1 << bits
            return cond if v == cond.value and type(v) is type(cond.value) else Eq(cond.lhs, v)
        if isinstance(cond, Not):
            return Not(self.prepare(cond.arg, where))
        if isinstance(cond, (And, Or)):
            return type(cond)(tuple(self.prepare(c, where) for c in cond.args))
        return cond

    def check_condition(self, cond: Cond, where: SourceLoc | None = None) -> None:
        """`cond` names only registers the test's threads write and locations it has: a typo
        (P1:R0, P1:r9, r0 for P1:r0) is a LitmusError with a suggestion, never an answer."""
        regs: dict[str, set[str]] = {t.name: set() for t in self.test.threads}
        for t, r in self.es.registers:
            regs[t].add(r)
        check_refs(cond, where, regs, {m.name for m in self.test.memory})

    # -- questions -------------------------------------------------------------------------
    @cached_property
    def undefined(self) -> tuple[UndefinedReport, ...]:
        """Every undefined-behaviour flag that fires on some consistent execution, by name."""
        out = []
        for name in self.engine.flag_names:
            ex = self.engine.flag_witness(name)
            if ex is not None:
                out.append(self._ub_report(name, ex))
        return tuple(out)

    def outcomes(self) -> tuple[frozenset[Outcome], bool]:
        """Every allowed outcome over `observe`, and whether the list is complete."""
        if self._outcomes is None:
            self._outcomes = self.engine.outcomes(self.observe)
        return self._outcomes

    def verdict(self, cond: Cond) -> Verdict:
        """Is `cond` allowed, and is it sane? Read off the enumerated outcomes when they are
        complete and cover the condition; otherwise the condition is its own query."""
        return self.verdicts([cond])[0]

    def verdicts(self, conds: Sequence[Cond]) -> tuple[Verdict, ...]:
        """`verdict` of each condition, the sanity of those not allowed settled together (the
        engine's sane_each: one query for several conditions where it can)."""
        conds = [self.prepare(c) for c in conds]
        allowed = [self._allowed(c) for c in conds]
        sane = iter(self.engine.sane_each([c for c, a in zip(conds, allowed) if not a]))
        return tuple(Verdict(a, a or next(sane)) for a in allowed)

    def _allowed(self, cond: Cond) -> bool:
        """Does the model allow `cond` (a prepared condition)?"""
        if self._outcomes is not None and atoms(cond, self.es.names) <= set(self.observe):
            outs, complete = self._outcomes
            test_ = predicate(cond, self.es.names)
            if any(test_(dict(o)) for o in outs):
                return True
            if complete:
                return False
        return self.engine.satisfiable(cond) is not None

    def witness(self, cond: Cond | None = None) -> Execution | None:
        """An allowed execution satisfying `cond`, or None."""
        return self.engine.satisfiable(None if cond is None else self.prepare(cond))

    def witnessed(self, cond: Cond | None = None) -> Witness | None:
        """`witness` with the variant it runs on (the contract checker.verdict.union meets too)."""
        ex = self.witness(cond)
        return None if ex is None else Witness(ex, self)

    def blames(self, cond: Cond) -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
        """(paths, minimal sets) for each variant on which `cond` is possible without axioms: here
        the one variant, if `cond` is sane."""
        return (("", self.blame(cond)),) if self.engine.sane(self.prepare(cond)) else ()

    def candidate_of(self, cond: Cond, blame: Sequence[tuple[str, ...]]) -> Witness | None:
        """`candidate` with the variant it runs on."""
        ex = self.candidate(cond, blame)
        return None if ex is None else Witness(ex, self)

    @property
    def notes(self) -> tuple[str, ...]:
        return self.es.notes

    def undefined_witness(self) -> tuple[str, Witness] | None:
        """The first undefined-behaviour flag that fires, and an execution on which it does."""
        for name in self.engine.flag_names:
            ex = self.engine.flag_witness(name)
            if ex is not None:
                return name, Witness(ex, self)
        return None

    def unknown_why(self, cond: Cond) -> str:
        return ""                   # (a Session's verdicts are never Unknown)

    def hang_witness(self, hangs) -> None:
        return None

    def hangs(self) -> tuple[tuple, bool]:
        """A straight-line test asked without the hang question: no hang is searched for."""
        return (), True

    def hang_unknown_why(self) -> str:
        return ""                   # (never Unknown: see hangs)

    def never_terminates(self) -> str | None:
        return None

    def blame(self, cond: Cond) -> tuple[tuple[str, ...], ...]:
        """Every minimal set of named axioms that rules `cond` out (none if it is allowed)."""
        return tuple(blame(self.engine, self.prepare(cond)))

    def candidate(self, cond: Cond, blame: Sequence[tuple[str, ...]]) -> Execution | None:
        """A telling execution satisfying a forbidden `cond`: one that satisfies every axiom outside
        the minimal sets (it always exists), else one that is merely well-formed."""
        used = {a for s in blame for a in s}
        cond = self.prepare(cond)
        return self.engine.satisfiable(cond, axioms=[a for a in self.engine.axiom_names if a not in used]) \
            or self.engine.satisfiable(cond, axioms=())

    def evaluation(self, ex: Execution):
        """The model evaluated concretely on `ex` (env of every relation, each check's truth)."""
        return concrete_evaluation(self.es, self.model, ex, self.options)

    def release(self) -> None:
        """Let go of the engine (with Z3, its context and every term in it): the answers kept so
        far stay (undefined, outcomes); a later question builds the engine again."""
        self.__dict__.pop("engine", None)

    def reprojected(self, locations) -> "Session":
        """This test with another outcome projection (its `locations:`), answered by this
        Session's engine: the projection reaches neither lowering nor the engine. (Its queries
        run against this Session's deadline.)"""
        other = Session(replace(self.test, locations=tuple(locations)), self.model, self.options,
                        self.engine_name, self.lim, es=self.es)
        other.__dict__["engine"] = self.engine
        return other

    def mutants(self) -> Iterator[tuple[Mutation, "Session"]]:
        """Each single-step weakening of the test's synchronization, as its own Session (one that
        needs several variants: checker.verdict.open.mutants)."""
        for m, t in mutations(self.test):
            yield m, Session(t, self.model, self.options, self.engine_name, self.lim)

    # -- helpers ---------------------------------------------------------------------------
    def _ub_report(self, name: str, ex: Execution) -> UndefinedReport:
        es = self.es
        ev = self.evaluation(ex)
        i = next(i for i, (c, fired) in enumerate(ev.checks) if c.name == name and c.flag and fired)
        kind, value = ev.check_values[i]
        edges = sorted(value) if kind == "rel" else [(e, e) for e in sorted(value)]
        # The report names the least edge the flag contains on any consistent execution, not this
        # witness's least one: the same whichever witness an engine found (two arrives that may
        # each exceed the pending count). Asked only below this witness's edge (Z3: by bisection
        # over the statically possible smaller edges, about log2 of their number in queries).
        if edges:
            least = self.engine.flag_least(name, edges[0])
            if least is not None:
                edges = [least[0]]
        events = []
        for a, b in edges[:1]:
            for e in dict.fromkeys((a, b)):
                ev_ = es.events[e]
                events.append(f"{ev_.thread or 'init'}: {ev_.label}")
        return UndefinedReport(name, tuple(events), f"{name} between " + " and ".join(events))

