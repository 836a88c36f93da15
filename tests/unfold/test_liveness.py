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


# -- loops of any shape (issue 34) ---------------------------------------------------------------

def _loop(code: list[str]):
    from checker.unfold import loops
    t = one("name: l\nsource: t\nthreads:\n  P0:\n    at: gpu0.cta0\n    code:\n" +
            "".join(f"      - {c!r}\n" for c in code) + "expect:\n  hang: forbidden\n").threads[0]
    labels = dict(t.labels)
    back = max(k for k, i in enumerate(t.code) if i.op == "bra" and labels[i.operands[0].name] <= k)
    return loops.classify(t.code, labels, labels[t.code[back].operands[0].name], back)


ROTATED = ["HEAD:", "ld.relaxed.gpu.global.u32 r0, [flag]", "setp.eq.s32 p, r0, 1", "@p bra EXIT", "bra HEAD", "EXIT:"]


@pytest.mark.parametrize("code, spins, pure", [
    (ROTATED, True, True),                                                           # rotated: exits in the middle
    (["HEAD:", "ld.relaxed.gpu.global.u32 r0, [a]", "ld.relaxed.gpu.global.u32 r1, [b]", "setp.eq.s32 p, r0, 1",
      "setp.eq.s32 q, r1, 1", "or.pred p, p, q", "@!p bra HEAD"], True, True),        # p written before it is read
    (["mov.u32 n, 0", "HEAD:", "add.u32 n, n, 1", "ld.relaxed.gpu.global.u32 r0, [flag]", "setp.ne.s32 p, r0, 1",
      "@p bra HEAD"], True, False),                                                   # a counter nothing reads, observed
    (["mov.u32 n, 0", "HEAD:", "add.u32 n, n, 1", "ld.relaxed.gpu.global.u32 r0, [flag]", "setp.ne.s32 p, n, 3",
      "@p bra HEAD"], False, False),                                                  # a counter the exit reads
    (["HEAD:", "ld.relaxed.gpu.global.u32 r0, [flag]", "st.relaxed.gpu.global.u32 [y], 1", "setp.ne.s32 p, r0, 1",
      "@p bra HEAD"], False, False),                                                  # a store: an effect
])
def test_a_loop_spins_when_an_iteration_that_does_not_exit_leaves_no_trace(code, spins, pure):
    loop = _loop(code)
    assert (loop.spins, loop.pure()) == (spins, pure)


def test_a_counter_the_test_does_not_observe_leaves_the_loop_pure():
    code = ["mov.u32 n, 0", "HEAD:", "add.u32 n, n, 1", "ld.relaxed.gpu.global.u32 r0, [flag]",
            "setp.ne.s32 p, r0, 1", "@p bra HEAD"]
    assert _loop(code).pure(frozenset({"r0"}))
    assert not _loop(code).pure(frozenset({"n"}))
    assert not _loop(code).pure()


def test_a_tid_dispatched_kernel_is_one_path_per_thread():
    """Both threads run the same code branching on %tid.x: folded, each has one path (before: the
    product of both sides of every branch, 16 combinations)."""
    from checker import limits
    from checker.unfold.variants import combos
    from checker.front.litmus import load_paths
    from checker import LITMUS_DIR
    t = next(t for t in load_paths([str(LITMUS_DIR / "liveness" / "dead-paths.yaml")])
             if t.name == "DeadBranch+tid-bulk-load")
    assert len(combos(t, limits.current())) == 1


def test_a_loop_its_registers_bound_runs_to_its_bound_and_names_it_when_longer():
    text = """
name: counted
source: t
threads:
  P0:
    at: gpu0.cta0
    code:
      - mov.u32 i, 0
      - "HEAD:"
      - add.u32 i, i, 1
      - st.global.u32 [x], i
      - setp.lt.u32 q, i, {k}
      - "@q bra HEAD"
expect:
  allowed: ['x={k}']
  forbidden: ['x={m}']
"""
    r = check_test(one(text.format(k=5, m=4)), MODEL, engine="z3")
    assert r.status == "pass", r.message
    r = check_test(one(text.format(k=40, m=39)), MODEL, engine="z3")
    assert r.status == "unknown" and "runs more than 16 iterations" in r.message and "raise --unroll" not in r.message


def test_loop_shapes_both_engines_agree():
    """litmus/liveness/loop-shapes.yaml is decided at the default options by brute force as by Z3
    (tests/verdict/test_suites.py runs it with Z3)."""
    from checker import LITMUS_DIR
    from checker.front.litmus import load_paths
    tests = [t for t in load_paths([str(LITMUS_DIR / "liveness" / "loop-shapes.yaml")])]
    assert len(tests) >= 30
    bad = [(t.name, r.status, r.message) for t in tests
           for r in [check_test(t, MODEL, engine="brute")] if r.status != "pass"]
    assert bad == []


def _counted(name: str, head: str = "", after: str = "", rest: str = "") -> str:
    """A test whose P1 polls flag in a loop that counts its iterations in n (a counter no branch
    reads), P0 setting flag: `head` goes before threads:, `after` after P1's loop, `rest` last."""
    return (f"name: {name}\nsource: t\n{head}threads:\n"
            "  P0: {at: gpu0.cta0, code: [\"st.release.gpu.global.u32 [flag], 1\"]}\n"
            "  P1:\n    at: gpu0.cta1\n    code:\n"
            "      - mov.u32 n, 0\n      - \"HEAD:\"\n      - add.u32 n, n, 1\n"
            "      - ld.acquire.gpu.global.u32 r0, [flag]\n      - setp.ne.s32 p, r0, 1\n"
            "      - \"@p bra HEAD\"\n" + after + rest)


def test_a_question_about_a_counter_the_expectations_do_not_name_is_not_forbidden_by_the_cut():
    """The loop is pure for what the test's expectations observe (r1), not for its counter n: a
    condition on n asked afterwards (`ptxmc check FILE::NAME P1:n=5`) is Unknown at unroll 2 (five
    iterations are cut off), never Forbidden; within the bound it is Allowed."""
    from checker.front.conditions import parse_cond
    from checker.verdict.explain import explain_text
    from checker.verdict.open import open_session
    t = one(_counted("counter", after="      - ld.global.u32 r1, [x]\n",
                     rest="expect:\n  allowed: ['P1:r1=0']\n"))
    assert check_test(t, MODEL, engine="z3").status == "pass"
    for engine in ("z3", "brute"):
        assert explain_text(open_session(t, MODEL, engine=engine), parse_cond("P1:n=5"))[0] == "unknown"
        assert explain_text(open_session(t, MODEL, engine=engine), parse_cond("P1:n=2"))[0] == "allowed"



def test_a_filter_on_a_counter_past_the_bound_is_unknown_not_broken():
    """The filter keeps only executions that went round five times: none within unroll 2, so the
    cut loop decides (Unknown), not 'no execution satisfies it' (a broken test); at unroll 6 the
    condition is allowed."""
    rest = "filter: \"P1:n=5\"\nexpect:\n  allowed: ['P1:r0=1']\n"
    for engine in ("z3", "brute"):
        assert check_test(one(_counted("counter-filter", rest=rest)), MODEL, engine=engine).status == "unknown"
        assert check_test(one(_counted("counter-filter", head="unroll: 6\n", rest=rest)), MODEL,
                          engine=engine).status == "pass"


CUT_STORE_LOOP = """
name: cut-store-loop
source: "PTX ISA 9.4, bra; st"
threads:
  P0:
    at: gpu0.cta0
    code:
      - L:
      - st.relaxed.gpu.global.u32 [y], 1
      - ld.relaxed.gpu.global.u32 r, [x]
      - setp.eq.b32 p, r, 0
      - "@p bra L"
  P1:
    at: gpu0.cta1
    code:
      - st.relaxed.gpu.global.u32 [x], 1
"""


def test_outcomes_says_the_loop_bound_not_the_outcome_cap_cut_the_list(tmp_path, capsys):
    """`ptxmc outcomes` of a test whose loop (not a spin loop: it stores) the bound cuts: the
    list is incomplete because of the bound, which the outcome cap's advice (raise
    --limit outcomes) cannot help; it said the outcome cap stopped the enumeration."""
    from checker.cli import main

    f = tmp_path / "t.yaml"
    f.write_text(CUT_STORE_LOOP)
    assert main(["outcomes", f"{f}::cut-store-loop"]) == 0
    out = capsys.readouterr().out
    assert "outcome cap" not in out, out
    assert "(the list is incomplete: loop bound reached: executions continue past unroll 2" in out, out
    # the cap still speaks when it is the cause
    assert main(["outcomes", "--limit", "outcomes=1", "litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster"]) == 0
    assert "stopped at the outcome cap of 1" in capsys.readouterr().out
