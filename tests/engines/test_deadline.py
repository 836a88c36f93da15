"""The test's time bounds the Z3 encoding too (issue 38): the order constraints (k^3 for a
coherence class of k writes) and the symbolic compositions (up to n^3 terms) check the deadline,
so a test near the event limit stops at its timeout instead of encoding for minutes (121 events
on one location took 40 s CPU and 2.3 GiB of memory past a 20 s timeout)."""
from __future__ import annotations

import time

import pytest

from checker import limits
from checker.engines.encode import encode
from checker.errors import SolverUnknown
from checker.front.litmus import load_text
from checker.isa.registry import lower
from checker.resources import resolve_model


def _racing_writes(threads: int, per: int) -> str:
    lines = ["name: racing", "source: tests/engines/test_deadline.py (generated)", "threads:"]
    for t in range(threads):
        lines += [f"  P{t}:", f"    at: gpu0.cta{t}", "    code:"]
        lines += [f"      - st.relaxed.gpu.global [x], {t * per + i + 1}" for i in range(per)]
    return "\n".join(lines) + "\n"


def test_encoding_stops_at_the_deadline():
    [t] = load_text(_racing_writes(2, 12))
    es = lower(t)
    with limits.deadline(time.monotonic() - 1.0):          # the test's time is already up
        with pytest.raises(SolverUnknown, match="timeout"):
            encode(es, resolve_model("ptx"))


def test_encoding_without_a_deadline_is_unbounded():
    [t] = load_text(_racing_writes(2, 12))
    assert encode(lower(t), resolve_model("ptx")).axioms      # no deadline set: no check fires
