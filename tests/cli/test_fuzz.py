"""Fuzzing in CI: every target of tests/fuzz/targets.py with its fixed budget, derandomized, so a
run is reproducible and its cost known (at least 2,000 inputs in all; most fail in the front end
quickly, and only small valid tests reach Z3, under a small timeout and resource limit).

The invariant (tests/fuzz/props.py): for any input, the loaders and `ptxmc run/check/outcomes`
either succeed or report a CheckerError with file:line - never another exception, never an
UNKNOWN presented as an answer. On VALID tests generated from the instruction tables
(tests/fuzz/grammar.py) the properties are stronger: two runs give the same JSON, a suite's
results do not depend on the order of its tests or on --jobs, renaming threads, registers and
locations, reordering threads or adding an independent thread changes no outcome, lowering time
is bounded per event and a test over the events limit is refused fast; and every writer, onto
every kind of target, either writes where the output policy allows or refuses and leaves the
target untouched. The longer campaign is tests/fuzz/campaign.py (README: 100,000 inputs).
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from ..fuzz.targets import CI_TOTAL, TARGETS


def test_ci_budget_is_at_least_2000_inputs():
    assert CI_TOTAL >= 2000


@pytest.mark.parametrize("name", list(TARGETS))
def test_fuzz(name):
    target = TARGETS[name]
    count = [0]

    @settings(max_examples=target.ci_budget, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(target.strategy())
    def run(x):
        count[0] += 1
        target.check(x)

    run()
    assert count[0] >= target.ci_budget, f"{name}: only {count[0]} inputs (the strategy ran dry?)"


def test_the_resume_property_edits_only_records():
    # campaign seed 53053: a garbage line that is JSON but not a record ('"x"'), then a field
    # change aimed at it, made the property itself fail (TypeError), not ptxmc
    from ..fuzz import props, writers
    from ..fuzz.targets import _tmp

    case = (["garbage", "field-change", "field-change"], 573, "undefined", 1.5)
    assert sum(writers.check_resume(_tmp(), case, props.run_cli).values()) == 1
