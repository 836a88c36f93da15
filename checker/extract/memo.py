"""Thread runs remembered across the rounds of one extraction and across the parameter search.

A run of one thread (checker.extract.interp.Machine) is a function of the kernel, the thread's
identity, the unrolling bounds, and the few values it looks up in its environment: the constants
other threads stored to shared memory, lane 0's `shfl` results, the parameter values assumed, and
whether an unknown ends an outer loop. The machine records each lookup and its answer
(`Machine.reads`); a later run of the same thread under the same bounds whose environment gives
the same answer to every lookup the earlier run made takes the same path, so its trace (or its
refusal) is the earlier one. Nothing is approximated: a lookup the earlier run did not make
cannot change the path it took.
"""
from __future__ import annotations

from .interp import Machine, Refused


class RunMemo:
    """Earlier runs per (thread, bounds): their lookups and their outcome (a Trace or a Refused)."""

    def __init__(self):
        self._runs: dict[tuple, list[tuple[dict, object]]] = {}
        self.hits = self.misses = 0

    def run(self, m: Machine, ident):
        """m.run(ident), or the outcome of an earlier run whose lookups `m` answers the same."""
        key = (ident, m.iterations, m.tiles, m.fork_depth)
        for reads, outcome in self._runs.get(key, ()):
            if all(m.lookup(kind, k) == v for (kind, k), v in reads.items()):
                self.hits += 1
                return outcome
        self.misses += 1
        try:
            outcome = m.run(ident)
        except Refused as e:            # remembered like a trace
            outcome = e
        self._runs.setdefault(key, []).append((dict(m.reads), outcome))
        return outcome

