"""The engines `--engine` chooses from: name -> how to build one over an event structure.

`auto` (the default) picks per event structure: brute force where it has few candidate
executions (with Z3 for what brute force cannot answer exactly, checker.engines.auto), Z3
otherwise."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:       # the command line reads ENGINES for --engine: keep this module light
    from ..ast import Cond
    from ..cat.interp import Model
    from ..limits import Limits
    from ..model.events import EventStructure
    from .base import Engine


def _z3(es: EventStructure, model: Model, options, lim: Limits, filt: Cond | None) -> Engine:
    from .smt import Z3Engine
    return Z3Engine(es, model, options, timeout=lim.timeout, max_outcomes=lim.outcomes, rlimit=lim.rlimit,
                    filter=filt)


def _brute(es: EventStructure, model: Model, options, lim: Limits, filt: Cond | None) -> Engine:
    from .brute import BruteEngine
    return BruteEngine(es, model, options, limit=lim.candidates, filter=filt, max_outcomes=lim.outcomes)


# The most candidate executions `auto` leaves to brute force. Brute force runs the compiled model
# (checker/cat/compiled.py) and stops at a candidate's first failing axiom, the axioms that need
# least first: over the bundled suites' tests (best of two runs each), it takes 0.2-0.5x Z3's CPU
# time up to 1,216 candidates (0.22x for the 42 tests with 162), about Z3's at 1,728-2,432, and
# 1.1-7x past that; the suites' total is least from 1,024 to 2,500 (bench/RESULTS.md).
AUTO_BRUTE_MAX = 1024


def _auto(es: EventStructure, model: Model, options, lim: Limits, filt: Cond | None) -> Engine:
    from .. import limits
    from .auto import AutoEngine
    from .brute import candidate_count

    limits.check_events(len(es.events))     # (before counting, as the engines check it)
    if candidate_count(es) <= min(AUTO_BRUTE_MAX, lim.candidates):
        deadline = limits.current_deadline()

        def exact() -> Engine:      # (built on demand, against the test's deadline all the same)
            with limits.deadline(deadline):
                return _z3(es, model, options, lim, filt)

        return AutoEngine(_brute(es, model, options, lim, filt), exact)
    return _z3(es, model, options, lim, filt)


ENGINES: dict[str, Callable[[EventStructure, Model, frozenset, Limits, Cond | None], Engine]] = {
    "auto": _auto,
    "z3": _z3,
    "brute": _brute,
}
DEFAULT = "auto"


def make(name: str, es: EventStructure, model: Model, options, lim: Limits, filt: Cond | None = None) -> Engine:
    """The engine `name` over `es`; only executions satisfying `filt` count (ValueError for an
    unknown name)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r} (engines: {', '.join(ENGINES)})")
    return ENGINES[name](es, model, frozenset(options), lim, filt)
