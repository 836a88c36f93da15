"""CAS retry loops and test-and-set spin locks (issue 34, docs/model.md#a18, the rewrite rule): a
loop whose non-exiting iterations only rewrite, with a cas/exch, the value they read is a spin
loop; which executions spin is decided per execution; option rmw-rewrite-effect takes the other
reading; "raise --unroll" is advised only where a higher bound can decide. Each test failed
before the change (the loops were Unknown, with the advice to raise --unroll)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from checker import LITMUS_DIR
from checker.errors import CheckerError, LitmusError
from checker.front.litmus import load_paths, load_text
from checker.resources import resolve_model
from checker.verdict.check import check_test

MODEL = resolve_model("ptx")
CAS_LOOPS = str(LITMUS_DIR / "liveness" / "cas-loops.yaml")


def one(text: str):
    (t,) = load_text(text, "t.yaml")
    if isinstance(t, LitmusError):
        raise t
    return t


def _suite():
    return {t.name: t for t in load_paths([CAS_LOOPS])}


def test_cas_loops_are_decided_by_both_engines():
    """Every test of cas-loops.yaml passes with Z3; brute force agrees on each it can enumerate
    (the two-contender mutex is over its candidate limit, where it answers Unknown and says so)."""
    tests = _suite()
    assert len(tests) >= 16
    for name, t in tests.items():
        z = check_test(t, MODEL, engine="z3")
        assert z.status == "pass", (name, z.message)
        b = check_test(t, MODEL, engine="brute")
        if "mutex" in name:
            assert b.status == "pass" or (b.status == "unknown" and "candidate" in b.message), (name, b.message)
        else:
            assert b.status == "pass", (name, b.message)


def _tas(other: int) -> str:
    return f"""
name: tas
source: t
memory:
  lock: {{init: 1}}
threads:
  P0: {{at: gpu0.cta0, code: ["st.release.gpu.global.u32 [lock], {other}", "st.release.gpu.global.u32 [lock], 0"]}}
  P1:
    at: gpu0.cta1
    code:
      - "L:"
      - atom.acquire.gpu.global.exch.b32 r, [lock], 1
      - setp.ne.b32 p, r, 0
      - "@p bra L"
expect:
  hang: forbidden
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_an_exch_that_may_change_the_value_while_it_spins_leaves_the_hang_unknown(engine):
    """lock may hold 2: an exch that reads 2 writes 1 and goes round, so an iteration that does
    not exit can change lock, and the loop is not a spin loop: the hang is Unknown, the message
    says why, and does not advise a higher --unroll (with only 0 and 1 it is decided)."""
    assert check_test(one(_tas(1)), MODEL, engine=engine).status == "pass"
    r = check_test(one(_tas(2)), MODEL, engine=engine)
    assert r.status == "unknown"
    assert "cannot show that 'atom.acquire.gpu.global.exch.b32 r, [lock], 1' writes back" in r.message
    assert "raise --unroll" not in r.message


def _flag_loop(first: str) -> str:
    """P1 polls flag (set by P0) in a loop that first runs `first`; the hang is expected forbidden."""
    return f"""
name: flag-loop
source: t
threads:
  P0: {{at: gpu0.cta0, code: ["st.release.gpu.global.u32 [flag], 1"]}}
  P1:
    at: gpu0.cta1
    code: ["L:", "{first}", "ld.acquire.gpu.global.u32 f, [flag]", "setp.ne.b32 p, f, 1", "@p bra L"]
expect:
  hang: forbidden
"""


def test_a_cas_loop_that_goes_round_after_a_success_is_not_a_spin_loop():
    """The loop goes on whatever the CAS returned: an iteration that succeeded changes lock and
    goes round, so the loop spins on no reading; its hang is Unknown, not Forbidden."""
    r = check_test(one(_flag_loop("atom.relaxed.gpu.global.cas.b32 r, [lock], 0, 1")), MODEL, engine="z3")
    assert r.status == "unknown" and "writes back" in r.message, r.message


def test_option_rmw_rewrite_effect_takes_the_other_reading():
    """Under rmw-rewrite-effect a failed CAS's write is an effect: the retry loop is not a spin
    loop, its hang is Unknown (saying why, without advising --unroll), and the option is a name
    --option accepts."""
    from checker.cliargs import check_options
    t = _suite()["CasLock+handoff+kept"]
    r = check_test(t, MODEL, options=frozenset({"rmw-rewrite-effect"}), engine="z3")
    assert r.status == "unknown"
    assert "option rmw-rewrite-effect" in r.message and "raise --unroll" not in r.message
    check_options(MODEL, ["rmw-rewrite-effect"])
    with pytest.raises(CheckerError, match="rmw-rewrite-effect"):
        check_options(MODEL, ["rmw-rewrite-efect"])


def test_the_hang_question_of_a_loop_with_effects_does_not_advise_raising_unroll():
    """A store in the loop: the hang question is Unknown at every bound (the loop runs as long as
    flag says), so neither `run` nor `check ... hang` advises a higher --unroll; they name the
    store."""
    from checker.verdict.explain import hang_text
    from checker.verdict.open import open_session
    t = one(_flag_loop("st.relaxed.gpu.global.u32 [y], 1"))
    r = check_test(t, MODEL, engine="z3")
    assert r.status == "unknown" and "raise --unroll" not in r.message
    assert "'st.relaxed.gpu.global.u32 [y], 1' has an effect" in r.message
    word, text, _ = hang_text(open_session(t, MODEL, engine="z3", hang=True))
    assert word == "unknown" and "raise --unroll" not in text and "[y]" in text


def test_a_two_contender_test_and_set_lock_is_decided():
    """Two threads take a test-and-set lock on a location the test does not declare (it holds 0
    first): lock only ever holds 0 and 1, so an exch of 1 that goes round wrote back what it read;
    released, no fair execution spins; never released, the loser spins forever."""
    text = """
name: tas-{v}
source: t
threads:
  P0: {{at: gpu0.cta0, code: ["L:", "atom.acquire.gpu.global.exch.b32 r, [lock], 1", "setp.ne.b32 p, r, 0",
                               "@p bra L", "st.release.gpu.global.u32 [lock], {v}"]}}
  P1: {{at: gpu0.cta1, code: ["L:", "atom.acquire.gpu.global.exch.b32 r, [lock], 1", "setp.ne.b32 p, r, 0",
                               "@p bra L", "st.release.gpu.global.u32 [lock], {v}"]}}
expect:
  hang: {hang}
"""
    assert check_test(one(text.format(v=0, hang="forbidden")), MODEL, engine="z3").status == "pass"
    assert check_test(one(text.format(v=1, hang="allowed")), MODEL, engine="z3").status == "pass"


CLOBBER = """
name: cas-clobber
source: "PTX ISA 9.4, atom; Coherence order; Axioms > Atomicity"
memory:
  lock: {{init: 1}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - {st} [lock], 2
      - {st} [lock], 0
  P1:
    at: gpu0.cta1
    code:
      - L:
      - atom.relaxed.gpu.global.cas.b32 r, [lock], 0, 5
      - setp.ne.b32 p, r, 0
      - "@p bra L"
  P2:
    at: gpu0.cta0.warp1
    code:
      - ld.relaxed.cta.global.u32 a, [lock]
      - ld.relaxed.cta.global.u32 b, [lock]
      - ld.relaxed.cta.global.u32 c, [lock]
expect: {{forbidden: ['P2:a=0 /\\ P2:b=1 /\\ P2:c=2']}}
"""


def test_a_write_back_not_morally_strong_with_every_access_leaves_the_loop_undecided():
    """P0's .cta stores and P1's .gpu CAS (another CTA) are not morally strong: coherence does not
    order them, so a failed CAS's write-back is a new write of a stale value, and P2 (morally strong
    with P0 only) can read 0, then the write-back of 1, then that of 2 -- two failed iterations
    and the exit. The rule took the loop for a pure spin loop and answered Forbidden (pass) at
    unroll 2; unroll 3 shows the outcome Allowed. The cut now loses outcomes: Unknown."""
    t = one(CLOBBER.format(st="st.relaxed.cta.global.u32"))
    r = check_test(t, MODEL, engine="z3")
    assert r.status == "unknown", (r.status, r.message)
    assert "loop bound" in r.message
    deeper = check_test(replace(t, unroll=3), MODEL, engine="z3")
    assert deeper.status == "fail" and deeper.conditions[0].allowed, deeper.message
    # the same loop with P0's stores at .gpu scope (morally strong with the CAS) stays decided
    strong = check_test(one(CLOBBER.format(st="st.relaxed.gpu.global.u32").replace(
        "ld.relaxed.cta", "ld.relaxed.gpu")), MODEL, engine="z3")
    assert strong.status == "pass", strong.message


@pytest.mark.parametrize("unlock", ["st.global.u32 [lock], 0", "st.relaxed.cta.global.u32 [lock], 0",
                                    "st.volatile.global.u32 [lock], 0"])
def test_a_hang_behind_an_unlock_not_morally_strong_with_the_cas_is_unknown(unlock):
    """A lock released by a weak store, a volatile store or a store of too narrow a scope: the CAS's
    write-back may overwrite the release (a lost update, as PTX's Atomicity allows between
    operations that are not morally strong), so the fair-spin judgement does not apply: the hang
    question is Unknown and says which access, never Forbidden by the rewrite rule."""
    t = one(f"""
name: unlock
source: "PTX ISA 9.4, atom; Axioms > Atomicity"
memory:
  lock: {{init: 1}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - {unlock}
  P1:
    at: gpu0.cta1
    code:
      - L:
      - atom.acquire.gpu.global.cas.b32 r, [lock], 0, 1
      - setp.ne.b32 p, r, 0
      - "@p bra L"
expect: {{hang: forbidden}}
""")
    r = check_test(t, MODEL, engine="z3")
    assert r.status == "unknown", (r.status, r.message)
    assert "may not be a copy of the value it read" in r.message and unlock.split(" [")[0] in r.message
