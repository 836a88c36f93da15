"""The undefined-behaviour question when the loop bound cuts executions off: undefined behaviour
after a loop that runs longer than --unroll is not seen on the bounded paths, so "no undefined
behaviour" is not an answer there (Unknown, as a condition no bounded execution satisfies is,
docs/model.md#a18); with a bound high enough the flag is found."""
from __future__ import annotations

import pytest

from checker import limits
from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.verdict.check import check_test

MODEL = resolve_model("ptx")

TEST = """
- name: UB-PastTheBound
  doc: "P1 counts from the value it read (0: nobody writes y) up to 5, then invalidates mb and arrives on it:
    undefined on every execution, after five iterations of a loop that is not pure (r1 is carried)."
  source: "PTX ISA 9.4, mbarrier.inval (an mbarrier operation other than init on an invalidated object is
    undefined)"
  arch: sm_90
  memory:
    mb: {space: shared, owner: gpu0.cluster0.cta0, mbarrier: {count: 1}}
    y: {space: global}
  threads:
    P1:
      at: gpu0.cluster0.cta0.warp1
      code:
        - ld.relaxed.gpu.u32 r1, [y]
        - "L:"
        - add.u32 r1, r1, 1
        - setp.lt.u32 p, r1, 5
        - "@p bra L"
        - mbarrier.inval.shared::cta.b64 [mb]
        - mbarrier.arrive.shared::cta.b64 _, [mb]
  expect:
    undefined: EXPECT
"""


def _run(expect: str, unroll: int):
    (t,) = load_text(TEST.replace("EXPECT", expect), "t.yaml")
    with limits.use(limits.current().override([f"unroll={unroll}"])):
        return check_test(t, MODEL)


@pytest.mark.parametrize("expect, status", [("true", "pass"), ("false", "fail")])
def test_a_bound_high_enough_finds_it(expect, status):
    r = _run(expect, 6)
    assert r.status == status, r.message


def test_no_undefined_behaviour_is_not_a_pass_past_the_bound():
    r = _run("false", 2)
    assert r.status == "unknown", (r.status, r.message, r.notes)


def test_expected_undefined_behaviour_past_the_bound_is_unknown():
    r = _run("true", 2)
    assert r.status == "unknown" and "well defined" not in r.message, (r.status, r.message)


GUARDED = """
- name: UB-PastTheBound-Allowed
  doc: "P1 counts from what it read up to 5; only when it read 0 (five iterations) does it invalidate mb and
    arrive on it. Reading P0's 4 it leaves at once: P1:r0=4 is Allowed within the bound, and the program is
    undefined on the executions past it."
  source: "PTX ISA 9.4, mbarrier.inval (an mbarrier operation other than init on an invalidated object is
    undefined)"
  arch: sm_90
  memory:
    mb: {space: shared, owner: gpu0.cluster0.cta0, mbarrier: {count: 1}}
    y: {space: global}
  threads:
    P0:
      at: gpu0.cluster0.cta0.warp0
      code:
        - st.relaxed.gpu.u32 [y], 4
    P1:
      at: gpu0.cluster0.cta0.warp1
      code:
        - ld.relaxed.gpu.u32 r0, [y]
        - mov.u32 r1, r0
        - "L:"
        - add.u32 r1, r1, 1
        - setp.lt.u32 p, r1, 5
        - "@p bra L"
        - setp.eq.u32 q, r0, 0
        - "@q mbarrier.inval.shared::cta.b64 [mb]"
        - "@q mbarrier.arrive.shared::cta.b64 _, [mb]"
  expect:
    allowed: ["P1:r0=4"]
"""


def _guarded(unroll: int, undefined: str | None = None):
    text = GUARDED if undefined is None else GUARDED.replace("  expect:\n", f"  expect:\n    undefined: {undefined}\n")
    (t,) = load_text(text, "g.yaml")
    with limits.use(limits.current().override([f"unroll={unroll}"])):
        return check_test(t, MODEL)


def test_a_verdict_that_stands_within_the_bound_says_undefined_behaviour_was_not_searched_past_it():
    """Found by review: PASS at --unroll 2 without a word, FAIL (MbarrierUninitialised) at 6. The
    condition's verdict stands (the bound cuts no execution that satisfies it), but the
    undefined-behaviour question is not answered past the bound: the result says so."""
    r = _guarded(2)
    assert r.status == "pass" and any("undefined behaviour is searched only within the loop bound" in n
                                      for n in r.notes), (r.status, r.notes)
    assert _guarded(6).status == "fail"
    assert _guarded(2, "false").status == "unknown"


def test_check_says_it_too():
    """`ptxmc check` and the API's explain answer the same question as run: the note is there."""
    import checker
    (t,) = load_text(GUARDED, "g.yaml")
    text = checker.explain(t, "P1:r0=4")
    assert "Allowed" in text and "undefined behaviour is searched only within the loop bound" in text, text


def test_a_filter_that_no_bounded_execution_passes_does_not_hide_the_bound():
    """Found by review: with `filter: P1:r1=5` (only the executions that count to 5 pass it, and
    none does within --unroll 2) 'undefined: false' PASSed, and FAILed at --unroll 6: the cut
    variant was counted only if one of its bounded executions passed the filter. As for
    the outcomes' bound (UnionSession._cut_off), it counts with a filter."""
    (t,) = load_text(TEST.replace("EXPECT", "false").replace("  expect:\n", '  filter: "P1:r1=5"\n  expect:\n'), "f.yaml")
    with limits.use(limits.current().override(["unroll=2"])):
        r = check_test(t, MODEL)
    assert r.status == "unknown", (r.status, r.message)
    with limits.use(limits.current().override(["unroll=6"])):
        assert check_test(t, MODEL).status == "fail"
