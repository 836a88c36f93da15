"""A condition that only executions past the loop bound reach: no complete variant satisfies it,
even without axioms, but a loop the bound cut (not a pure spin) has well-formed executions that
go on to it. "No execution satisfies it even without axioms" (a broken test, `Impossible`) is
then not shown and not said; and a weakening after which the verdict is Unknown is no "it stays
forbidden without it" (docs/model.md#a18, "Undefined behaviour and the bound")."""
from __future__ import annotations

import checker
from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.verdict.check import check_test

MODEL = resolve_model("ptx")

# MP with a detour: P1 goes on to r0=1, r1=0 (the forbidden outcome) only through a loop that
# must go round three times (P2 releases y only after it reads c=3): past the default bound, 2.
TEST = """\
name: MP+loop-past-the-bound
source: "PTX ISA 9.4, Memory Consistency Model (release/acquire patterns); atom; bra"
memory: {x: 0, flag: 0, c: 0, y: 0}
threads:
  P0:
    at: gpu0.cta0.warp0
    code:
      - st.relaxed.gpu.global.u32 [x], 1
      - st.release.gpu.global.u32 [flag], 1
  P1:
    at: gpu0.cta1.warp0
    code:
      - ld.acquire.gpu.global.u32 r0, [flag]
      - ld.relaxed.gpu.global.u32 r1, [x]
      - setp.eq.u32 p, r0, 1
      - setp.eq.u32 q, r1, 0
      - and.pred p, p, q
      - "@!p bra END"
      - L:
      - atom.relaxed.gpu.global.add.u32 r9, [c], 1
      - ld.acquire.gpu.global.u32 r3, [y]
      - setp.eq.u32 s, r3, 0
      - "@s bra L"
      - END:
  P2:
    at: gpu0.cta2.warp0
    code:
      - ld.acquire.gpu.global.u32 r4, [c]
      - setp.eq.u32 t, r4, 3
      - "@t st.release.gpu.global.u32 [y], 1"
expect:
  forbidden: ['P1:r0=1 /\\ P1:r1=0']
"""


def _test(unroll=None):
    (t,) = load_text(TEST + (f"unroll: {unroll}\n" if unroll else ""), "mp-loop.yaml")
    return t


def test_a_condition_reached_only_past_the_bound_is_not_broken():
    """It was FAIL 'broken test: no execution satisfies P1:r0=1 /\\ P1:r1=0 even without axioms' at
    the default bound, PASS at --unroll 4."""
    r = check_test(_test(), MODEL)
    assert r.status == "pass", r.message
    assert check_test(_test(4), MODEL).status == "pass"
    assert checker.check(_test(), r"P1:r0=1 /\ P1:r1=0").status == "forbidden"


def test_a_weakening_the_bound_leaves_unknown_is_not_called_unneeded():
    """Without P0's release (or P1's acquire) the outcome is allowed at --unroll 4; at the default
    bound its verdict is Unknown, and the explanation said 'No single fence or release/acquire
    annotation is needed: it stays forbidden without any one'."""
    text = checker.explain(_test(), r"P1:r0=1 /\ P1:r1=0")
    assert "stays forbidden without any one" not in text
    assert "Not decided" in text and "st.release.gpu.global.u32 [flag], 1 to st.relaxed" in text
    needed = [e.mutation.describe() for e in checker.check(_test(4), r"P1:r0=1 /\ P1:r1=0").needed]
    assert any("[flag], 1 to st.relaxed" in d for d in needed) and any("r0, [flag] to ld.relaxed" in d for d in needed)


def test_prune_says_whose_verdict_is_unknown():
    """--prune asks its search on the test with every piece at its bottom; there the verdict is
    Unknown at the default bound, and the answer said 'Now: ... is Unknown' as if of the test,
    which passes (Forbidden). It names the program it is about."""
    from checker.repair.prune import prune
    from checker.repair.target import from_test

    t = _test()
    r = prune(t, from_test(t), MODEL, budget=1800.0)
    assert r.status == "unknown" and r.failure.startswith("with every prunable piece removed or weakened: "), r.failure
