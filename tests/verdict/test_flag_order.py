"""The undefined-behaviour flags of a test are listed in the order the model states them, so the
first one (what `explain`, `fix` and the mutants name) is the cause the model puts first, not the
first in the alphabet: a shared word with a non-zero initial value used as an mbarrier that was
never initialised is MbarrierUninitialised first; its MbarrierRange (the value is no valid
state) follows from it."""
from __future__ import annotations

import pytest

from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.verdict.check import check_test

MODEL = resolve_model("ptx")

TEST = """
- name: Uninitialised-NonZero
  source: "PTX ISA 9.4, mbarrier.init (an mbarrier operation other than init on an object that was
    not initialised is undefined); mbarrier (contents of the mbarrier object)"
  arch: sm_90
  memory:
    mb: {space: shared, owner: gpu0.cluster0.cta0, init: 5}
  threads:
    P0:
      at: gpu0.cluster0.cta0
      code:
        - mbarrier.arrive.shared::cta.b64 _, [mb]
  expect:
    undefined: true
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_the_cause_is_listed_first(engine):
    (t,) = load_text(TEST, "t.yaml")
    r = check_test(t, MODEL, engine=engine)
    assert r.status == "pass", r.message
    assert [u.flag for u in r.undefined] == ["MbarrierUninitialised", "MbarrierRange"]


def test_the_order_is_the_model_files():
    model = MODEL
    names = [c.name for c in model.checks if c.flag]
    assert model.flag_names == tuple(dict.fromkeys(names))
    assert model.flag_names != tuple(sorted(model.flag_names))   # (else the first test proves nothing)
