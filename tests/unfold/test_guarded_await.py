"""A guarded await under the hang question (docs/model.md#a18): `@q ld ... == v` (and a guarded
mbarrier wait `== 1`) is its spin loop run only when the guard holds (checker.unfold.paths.
await_loops branches around the whole loop on the negated guard). With the guard true the thread
still waits: it hangs when the awaited value never comes and not when it does; with the guard
false it does not wait at all. Each case is answered with the await loops run once and unrolled
like any loop (the reference), on Z3 and brute force, gives the verdict the PTX text gives, and the
same hang answer as the loop written by hand in the test; a guard registers decide still folds
to one path."""
from __future__ import annotations

import pytest

from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.unfold import paths
from checker.verdict.check import check_test
from checker.verdict.union import UnionSession
from tests.unfold.test_spin_once import _answer

MODEL = resolve_model("ptx")

SOURCE = ("PTX ISA 9.4, Instruction statements > Predicated execution (an instruction whose guard is "
          "false is not executed); docs/model.md#a18 (an await is the spin loop it stands for)")


def _case(name: str, guard: str, setq: list[str], other: list[str], hang: str, await_: str = "") -> str:
    p0 = setq + [f'"{guard} {await_ or "ld.acquire.gpu.u32 r0, [x] == 1"}"', "st.relaxed.gpu.u32 [z], 1"]
    text = f"""
- name: {name}
  source: "{SOURCE}"
  arch: sm_90
  memory:
    mb: {{space: shared, owner: gpu0.cluster0.cta0, mbarrier: {{count: 1}}}}
    x: {{space: global}}
    y: {{space: global}}
    z: {{space: global}}
  threads:
    P0:
      at: gpu0.cluster0.cta0.warp0
      code:
""" + "".join(f"        - {i}\n" for i in p0)
    if other:
        text += """    P1:
      at: gpu0.cluster0.cta0.warp1
      code:
""" + "".join(f"        - {i}\n" for i in other)
    return text + f"""  expect:
    hang: {hang}
"""


READ_Q = ["ld.relaxed.gpu.u32 r5, [y]", "setp.eq.u32 q, r5, 1"]
TRUE_Q = ["mov.u32 r5, 1", "setp.eq.u32 q, r5, 1"]
FALSE_Q = ["mov.u32 r5, 0", "setp.eq.u32 q, r5, 1"]
WAIT = "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [mb], 0 == 1"

# name -> (text, whether the guard is decided by registers alone)
CASES = {
    # the guard true (read, or registers), the awaited value never written: the thread waits forever
    "ReadTrueNeverSatisfied": (_case("ReadTrueNeverSatisfied", "@q", READ_Q, ["st.relaxed.gpu.u32 [y], 1"],
                                     "allowed"), False),
    "RegTrueNeverSatisfied": (_case("RegTrueNeverSatisfied", "@q", TRUE_Q, [], "allowed"), True),
    "RegNotFalseNeverSatisfied": (_case("RegNotFalseNeverSatisfied", "@!q", FALSE_Q, [], "allowed"), True),
    "WaitTrueNeverArrives": (_case("WaitTrueNeverArrives", "@q", TRUE_Q, [], "allowed", WAIT), True),
    # the guard true and the value written: no hang; the guard false: no wait, no hang
    "ReadSatisfied": (_case("ReadSatisfied", "@q", READ_Q,
                            ["st.relaxed.gpu.u32 [x], 1", "st.relaxed.gpu.u32 [y], 1"], "forbidden"), False),
    "ReadNeverWritten": (_case("ReadNeverWritten", "@q", READ_Q, [], "forbidden"), False),
    "RegFalse": (_case("RegFalse", "@q", FALSE_Q, [], "forbidden"), True),
    "RegNotTrue": (_case("RegNotTrue", "@!q", TRUE_Q, [], "forbidden"), True),
    "WaitTrueArrives": (_case("WaitTrueArrives", "@q", TRUE_Q,
                              ["mbarrier.arrive.release.cta.shared::cta.b64 _, [mb]"], "forbidden", WAIT), True),
    "WaitFalse": (_case("WaitFalse", "@q", FALSE_Q, [], "forbidden", WAIT), True),
}

# the cases whose guard is false on every execution
SKIPPED = {"ReadNeverWritten", "RegFalse", "RegNotTrue", "WaitFalse"}


def _load(name: str):
    (t,) = load_text(CASES[name][0], f"{name}.yaml")
    return t


def _by_hand(text: str) -> str:
    """The test with its guarded load await written as the loop it stands for, by hand."""
    for g, neg in (("@q", "@!q"), ("@!q", "@q")):
        await_ = f'"{g} ld.acquire.gpu.u32 r0, [x] == 1"'
        if await_ in text:
            return text.replace(await_, "\n        - ".join([
                f'"{neg} bra SKIP"', "SPIN:", "ld.acquire.gpu.u32 r0, [x]", "setp.ne.u32 p, r0, 1",
                '"@p bra SPIN"', "SKIP:"]))
    return ""


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_guarded_await_waits_exactly_when_its_guard_holds(name, engine):
    t = _load(name)
    r = check_test(t, MODEL, engine=engine)
    assert r.status == "pass", r.message
    once = _answer(t, engine, True)
    assert not isinstance(once, str), once
    assert once == _answer(t, engine, False)
    found, complete = once[0], once[1]
    assert complete and found == t.expect_hang
    # the thread that does not wait gets past the await: its store after it is in every final state
    if name in SKIPPED:
        assert once[5] and all(o.get("z") == 1 for o in map(dict, once[5])), once[5]


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("name", sorted(n for n in CASES if "Wait" not in n))
def test_a_guarded_await_hangs_as_the_loop_written_by_hand(name, engine):
    (t,) = load_text(_by_hand(CASES[name][0]), f"{name}.yaml")
    assert not any(i.await_value is not None for th in t.threads for i in th.code)
    found, complete = UnionSession(t, MODEL, engine=engine, loops=True).hangs()
    assert complete and bool(found) == t.expect_hang


@pytest.mark.parametrize("name", sorted(n for n, (_, decided) in CASES.items() if decided))
def test_a_guard_registers_decide_still_folds(name):
    """One path for the thread whose guard registers decide (the await's loop run once)."""
    t = _load(name)
    p0 = paths.await_loops(t.threads[0])
    assert p0 is not t.threads[0]
    got = paths.split(p0, 2, t, frozenset(), paths.await_labels(p0, t.threads[0]))
    assert not any(i.family == "assume" and i.operands[0].name == "q" for p in got for i in p.code)
    # skipped: one path; the loop run once: the path that exits and the one cut in the loop
    assert [p.cut is not None for p in got] == ([False] if name in SKIPPED else [False, True])
