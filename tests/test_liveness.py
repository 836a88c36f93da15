"""Liveness and untaken paths (docs/model.md#a7, #a18): what a path that cannot run may not
supply (undefined behaviour, a hang, an outcome), hangs after later barriers and with a parity
in a register, both engines. Each test failed before its fix (issue 32 items 3-5)."""
from __future__ import annotations

import pytest

from checker.errors import LitmusError
from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.verdict.check import check_test

MODEL = resolve_model("ptx")


def one(text: str):
    (t,) = load_text(text, "t.yaml")
    if isinstance(t, LitmusError):
        raise t
    return t


DEAD_ARRIVE = """
name: dead-arrive
source: "PTX ISA 9.4, Predicated Execution"
memory:
  bar: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: 1}}}}
threads:
  T1:
    at: gpu0.cta0.warp1
    code:
      - mov.u32 r1, {value}
      - setp.eq.s32 p1, r1, 0
      - "@p1 mbarrier.arrive.shared::cta.b64 _, [bar], 2"
expect:
  undefined: {ub}
  allowed: ['T1:p1={p}']
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("value,ub", [(32, "false"), (0, "true")])
def test_a_guard_decided_by_a_constant_supplies_no_undefined_behaviour(engine, value, ub):
    """The arrive of count 2 on a count-1 mbarrier is out of range (MbarrierRange) only when it
    runs: with r1 = 32 its guard is false on every execution, and the path that assumes it true
    has no execution (undefined behaviour elsewhere does not free a constant guard)."""
    r = check_test(one(DEAD_ARRIVE.format(value=value, ub=ub, p=int(value == 0))), MODEL, engine=engine)
    assert r.status == "pass", r.message
    assert bool(r.undefined) == (value == 0)
