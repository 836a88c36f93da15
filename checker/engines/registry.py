"""The engines `--engine` chooses from: name -> how to build one over an event structure."""
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
    return BruteEngine(es, model, options, limit=lim.candidates, filter=filt)


ENGINES: dict[str, Callable[[EventStructure, Model, frozenset, Limits, Cond | None], Engine]] = {
    "z3": _z3,
    "brute": _brute,
}


def make(name: str, es: EventStructure, model: Model, options, lim: Limits, filt: Cond | None = None) -> Engine:
    """The engine `name` over `es`; only executions satisfying `filt` count (ValueError for an
    unknown name)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r} (engines: {', '.join(ENGINES)})")
    return ENGINES[name](es, model, frozenset(options), lim, filt)
