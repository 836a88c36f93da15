"""The synchronization a forbidden outcome needs (`ptxmc check`, `explain`, the report): what each
single weakening does to the outcome must be what `check` answers for the weakened test itself.

A weakening that leaves no execution that terminates (a removed bar.sync whose partner then waits
for ever) was reported "forbidden", so a test whose only ordering is a barrier read "No single fence
or release/acquire annotation is needed: it stays forbidden without any one", while `check` on the
test without the barrier answers that the program hangs: the user was told the barrier can go.
"""
from __future__ import annotations

import pytest

from checker import LITMUS_DIR, api
from checker.front.litmus import load_paths
from checker.verdict.mutate import mutations

BARRIER = str(LITMUS_DIR / "core" / "Barrier.yaml")


def _test(path, name):
    return next(t for t in load_paths([path]) if getattr(t, "name", None) == name)


@pytest.mark.parametrize("name, cond", [
    ("Bar+MP+bar.sync.count", "P1:r0=0"),
    ("Bar+two-barriers", "P1:r0=0"),
    ("Bar+MP+bar.arrive+bar.sync", "P1:r0=0"),
])
def test_each_effect_is_what_check_says_of_the_weakened_test(name, cond):
    test = _test(BARRIER, name)
    x = api.check(test, cond)
    assert x.status == "forbidden"
    weakened = {m.describe(): t for m, t in mutations(test)}
    assert x.effects
    for e in x.effects:
        assert e.verdict == api.check(weakened[e.mutation.describe()], cond).status, e.mutation.describe()


def test_a_barrier_whose_removal_hangs_the_program_is_needed():
    x = api.check(f"{BARRIER}::Bar+MP+bar.sync.count", "P1:r0=0")
    assert [(e.mutation.thread, e.verdict) for e in x.needed] == [("P0", "hang"), ("P1", "hang")]
    text = api.explain(f"{BARRIER}::Bar+MP+bar.sync.count", "P1:r0=0")
    assert "No single fence" not in text
    assert "removing bar.sync 1, 2 (P0, line 19) (then no execution terminates: a hang)" in text
