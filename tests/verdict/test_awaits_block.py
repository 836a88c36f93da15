"""A test whose every execution stops at an await nothing satisfies (asked without the hang
question, an await is the read that returns its value) hangs: no condition has a verdict, and
run, check and the API say so alike (docs/model.md#a18). Found by review's run/check/API
comparison: `check` and checker.check answered 'Impossible: no well-formed execution satisfies
it ... (check the condition's values and registers)' for every condition where run said the
execution blocks, and with a control path run itself called the test broken."""
from __future__ import annotations

import pytest

import checker
from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.verdict.check import check_test

MODEL = resolve_model("ptx")

STRAIGHT = ["ld.relaxed.gpu.u32 r0, [x] == 1", "ld.relaxed.gpu.u32 r1, [y]"]
BRANCHED = ["ld.relaxed.gpu.u32 r2, [z]", "setp.eq.u32 p, r2, 0", "@p bra L", "st.relaxed.gpu.u32 [y], 1", "L:",
            "ld.relaxed.gpu.u32 r0, [x] == 1", "ld.relaxed.gpu.u32 r1, [y]"]


def _test(code):
    text = f"""
name: Blocks
source: "docs/model.md#a18 (a test whose awaits no execution gets past)"
threads:
  P0:
    at: gpu0.cta0
    code: {code!r}
expect: {{forbidden: ["P0:r1=1"]}}
"""
    (t,) = load_text(text.replace("'", '"'), "b.yaml")
    return t


@pytest.mark.parametrize("code", [STRAIGHT, BRANCHED], ids=["straight", "branched"])
def test_run_check_and_the_api_give_no_verdict(code):
    t = _test(code)
    r = check_test(t, MODEL)
    assert r.status == "fail" and r.message.startswith("no execution gets past its awaits"), r.message
    assert [c.allowed for c in r.conditions] == [None]
    for cond in ("P0:r1=1", "P0:r1=0"):
        x = checker.check(t, cond)
        assert (x.status, x.why) == ("hang", "no execution gets past its awaits: every execution blocks, a hang")
    assert "No verdict: no execution terminates (a hang)" in checker.explain(t, "P0:r1=0")
    assert checker.check(t, "hang").status == "allowed"
