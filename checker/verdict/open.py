"""How a test is asked: the one place that decides between a Session (one straight-line
variant: one event structure) and a UnionSession (the union over the test's straight-line
variants: control paths x barrier schedules, and the liveness question; docs/model.md#a18, #a19).
Both answer the same questions with the same types (checker.verdict.session.Verdict, Witness),
so no caller asks which kind of test it holds."""
from __future__ import annotations

from typing import Iterator

from .. import limits
from ..ast import LitmusTest
from ..cat.interp import Model
from ..unfold.variants import one_variant
from .mutate import Mutation, mutations
from .session import Session
from .union import UnionSession


def open_session(test: LitmusTest, model: Model, options=frozenset(), engine: str = "z3",
                 lim: limits.Limits | None = None, *, hang: bool = False,
                 ub_first: bool = False) -> Session | UnionSession:
    """The session that answers every question about `test` (`hang`: the liveness question is
    asked too, so spin-wait awaits are written as the loops they stand for; `ub_first`: the
    undefined-behaviour question is the first asked, as a verdict asks it: UnionSession)."""
    lim = lim or limits.current()
    if hang or test.expect_hang is not None or test.branches:
        return UnionSession(test, model, options, engine, lim, loops=hang or test.expect_hang is not None,
                            ub_first=ub_first)
    with limits.use(lim):
        variant = one_variant(test)
    if variant is None:
        return UnionSession(test, model, options, engine, lim)
    return Session(test, model, options, engine, lim, variant=variant)


def mutants(s: Session | UnionSession) -> Iterator[tuple[Mutation, Session | UnionSession]]:
    """Each single-step weakening of the test's synchronization (checker.verdict.mutate), asked as
    a test of its own (a weakening may leave a barrier short of arrivals: then over its variants)."""
    for m, t in mutations(s.test):
        yield m, open_session(t, s.model, s.options, s.engine_name, s.lim)
