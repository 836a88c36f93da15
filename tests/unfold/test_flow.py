"""Control flow (labels, bra, @p guards, setp), loops by bounded unrolling, and the liveness
verdict (hang): real tests through the front end, the path splitter and both engines."""
from __future__ import annotations

from dataclasses import replace

import pytest

from checker.errors import LitmusError
from checker.front.litmus import load_text
from checker.unfold.paths import split
from checker.resources import resolve_model
from checker.verdict.check import check_test
from checker.verdict.explain import explain_text, hang_text
from checker.verdict.open import open_session
from checker.verdict.union import UnionSession

MODEL = resolve_model("ptx")


def one(text: str):
    (t,) = load_text(text, "t.yaml")
    if isinstance(t, LitmusError):
        raise t
    return t


SPIN = """
name: spin
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.weak.global [x], 1
      - st.release.gpu.global [flag], {v}
  P1:
    at: gpu0.cta1
    code:
      - L1:
      - ld.{sem}.gpu.global r0, [flag]
      - setp.ne.s32 p, r0, 1
      - "@p bra L1"
      - ld.weak.global r1, [x]
expect:
  hang: {hang}
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_spin_loop_message_passing(engine):
    t = one(SPIN.format(v=1, sem="acquire", hang="forbidden"))
    fc = UnionSession(t, MODEL, engine=engine, loops=True)
    outs, complete = fc.outcomes()
    assert complete
    assert {dict(o)["P1:r1"] for o in outs} == {1}
    assert {dict(o)["P1:r0"] for o in outs} == {1}          # every exiting path read flag=1
    assert fc.hangs() == ((), True)
    r = check_test(t, MODEL, engine=engine)
    assert r.status == "pass", r.message


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_relaxed_poll_lets_the_data_read_miss(engine):
    t = one(SPIN.format(v=1, sem="relaxed", hang="forbidden"))
    outs, _ = UnionSession(t, MODEL, engine=engine).outcomes()
    assert {dict(o)["P1:r1"] for o in outs} == {0, 1}


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_a_flag_never_set_to_the_awaited_value_hangs(engine):
    t = one(SPIN.format(v=2, sem="acquire", hang="allowed"))
    hangs, complete = UnionSession(t, MODEL, engine=engine, loops=True).hangs()
    assert complete and hangs and hangs[0].thread == "P1"
    assert "r0 = 2, the final value of flag" in hangs[0].state
    assert check_test(t, MODEL, engine=engine).status == "pass"


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_a_flow_test_encodes_each_event_structure_once(engine, monkeypatch):
    """The hang search's probe of a path (its outcomes over the spinning loop's values) asks the
    path's own engine, and each path's Session reuses the structure UnionSession lowered: one engine
    per distinct event structure, with the verdicts as before."""
    import pickle

    from checker.engines import registry
    from checker.verdict import session, union as paths

    made, lowered = [], []
    make, lower = registry.ENGINES[engine], paths.lower
    monkeypatch.setitem(registry.ENGINES, engine,
                        lambda es, *a: made.append(pickle.dumps((es, a[-1]))) or make(es, *a))
    for module in (paths, session):
        monkeypatch.setattr(module, "lower", lambda t: lowered.append(t.name) or lower(t))
    t = one(SPIN.format(v=2, sem="acquire", hang="allowed"))
    fc = UnionSession(t, MODEL, engine=engine, loops=True)
    hangs, complete = fc.hangs()
    assert complete and hangs and "r0 = 2, the final value of flag" in hangs[0].state
    assert all(s.undefined == () for s in fc.sessions)        # (every path's engine now)
    assert len(made) == len(set(made)) == len(fc.sessions)
    assert len(lowered) == len(fc.sessions)


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_a_reprojected_session_answers_as_a_fresh_one(engine):
    """Session.reprojected shares the lowering and the engine, and enumerates what a new Session
    of the test with those `locations:` enumerates."""
    from checker.ast import RegRef
    from checker.verdict.session import Session

    t = one("""
name: mp
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.weak.global [x], 1
      - st.weak.global [flag], 1
  P1:
    at: gpu0.cta1
    code:
      - ld.weak.global r0, [flag]
      - ld.weak.global r1, [x]
""")
    s = Session(t, MODEL, engine=engine)
    s.outcomes()
    locs = (RegRef("P1", "r1"),)
    again = s.reprojected(locs)
    assert again.engine is s.engine and again.es is s.es and again.test.locations == locs
    fresh = Session(replace(t, locations=locs), MODEL, engine=engine)
    assert again.observe == fresh.observe == ("P1:r1",)
    assert again.outcomes() == fresh.outcomes()
    assert {dict(o)["P1:r1"] for o in again.outcomes()[0]} == {0, 1}


def test_unroll_bounds_the_paths():
    t = one(SPIN.format(v=1, sem="acquire", hang="forbidden"))
    p1 = t.threads[1]
    for n in (1, 2, 3):
        ps = split(p1, n)
        assert len(ps) == n + 1                          # exit after 1..n iterations, or cut
        assert sum(p.cut is not None for p in ps) == 1
        assert max(sum(i.op == "ld" for i in p.code) for p in ps) == n + 1            # n polls and the data load


GUARD = """
name: guard
memory:
  v: {init}
threads:
  P0:
    at: gpu0.cta0
    code:
      - ld.relaxed.gpu.global.{t} r0, [v]
      - setp.{cmp}.{t} p, r0, {k}
      - "@p mov.b32 r2, 1"
      - "@!p mov.b32 r2, 2"
"""


@pytest.mark.parametrize("init,cmp,t,k,want", [
    (-1, "lt", "s32", 0, 1), (-1, "lo", "u32", 0, 2), (-1, "lt", "u32", 0, 2), (-1, "hi", "u32", 5, 1),
    (5, "ge", "s64", 5, 1), (5, "ne", "b32", 5, 2), (4, "ls", "u64", 4, 1), (3, "gt", "s16", 3, 2)])
def test_setp_comparisons(init, cmp, t, k, want):
    test = one(GUARD.format(init=init, cmp=cmp, t=t, k=k))
    outs, complete = UnionSession(test, MODEL).outcomes()
    assert complete and {dict(o)["P0:r2"] for o in outs} == {want}
    assert {dict(o)["P0:p"] for o in outs} == {1 if want == 1 else 0}


def test_ctrl_relation_from_the_predicate_read_to_later_events():
    test = one(GUARD.format(init=1, cmp="eq", t="s32", k=1).replace('"@!p mov.b32 r2, 2"',
                                                                    "st.relaxed.gpu.global [y], 1"))
    fc = UnionSession(test, MODEL)
    for es in fc._es:
        ctrl = es.relations["ctrl"]
        (read,) = [e.eid for e in es.events if e.kind == "R"]
        (write,) = [e.eid for e in es.events if e.kind == "W" and e.thread]
        assert (read, write) in ctrl and (read, write) in es.relations["dep"]


@pytest.mark.parametrize("code,msg", [
    (['bra L9'], "bra to 'L9': no such label"),
    (['"@p st [x], 1"'], "predicate 'p' is never set"),
    (['L1:', 'L1:', 'st [x], 1'], "label 'L1' is defined twice"),
    (['"@p bra L1"', 'setp.eq.s32 p, 1, 1', 'L1:'], "predicate 'p' is read before it is set"),
    (['setp.lt.b32 p, r0, 1'], "bit-size types compare with .eq and .ne only"),
    (['setp.lo.s32 p, r0, 1'], "is an unsigned comparison"),
    (['assume'], "internal"),
])
def test_malformed_control_flow_is_a_located_error(code, msg):
    body = "\n".join(f"      - {c}" for c in code)
    text = f"name: bad\nthreads:\n  P0:\n    at: gpu0.cta0\n    code:\n{body}\n"
    (r,) = load_text(text, "bad.yaml")
    if not isinstance(r, LitmusError):
        r = check_test(r, MODEL)
        assert r.status == "error" and msg in r.message
        return
    assert msg in str(r) and str(r).startswith("bad.yaml:")


def test_effectful_loop_cut_by_the_bound_is_unknown_not_forbidden():
    text = """
name: cas
threads:
  P0:
    at: gpu0.cta0
    code:
      - L:
      - atom.acquire.gpu.cas.b32 r0, [m], 0, 1
      - setp.ne.s32 p, r0, 0
      - "@p bra L"
      - ld.weak.global r1, [x]
      - st.weak.global [x], 1
      - st.release.gpu.global [m], 0
  P1:
    at: gpu0.cta1
    code:
      - L:
      - atom.acquire.gpu.cas.b32 r0, [m], 0, 1
      - setp.ne.s32 p, r0, 0
      - "@p bra L"
      - ld.weak.global r1, [x]
      - st.weak.global [x], 2
      - st.release.gpu.global [m], 0
expect:
  forbidden: ['P0:r1=0 /\\ P1:r1=0']
"""
    # a failed CAS writes back what it read, so the retry loop spins and mutual exclusion is
    # decided (docs/model.md#a18); under rmw-rewrite-effect that write is an effect, the loop
    # cut by the bound loses executions, and the condition is Unknown, never Forbidden
    assert check_test(one(text), MODEL).status == "pass"
    r = check_test(one(text), MODEL, options=frozenset({"rmw-rewrite-effect"}))
    assert r.status == "unknown" and not r.complete
    assert r.conditions[0].allowed is None and r.conditions[0].verdict == "Unknown"
    assert any("loop bound reached" in n for n in r.notes)


MB = """
name: mb
arch: sm_80
memory:
  g1: 1
  s1: {{space: shared, owner: gpu0.cluster0.cta0}}
  mb1: {{space: shared, owner: gpu0.cluster0.cta0, mbarrier: {{count: 1}}}}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code:
      - cp.async.ca.shared.global [s1], [g1], 4
      - cp.async.mbarrier.arrive{noinc}.shared::cta.b64 [mb1]
      - mbarrier.try_wait.parity.shared::cta.b64 p, [mb1], 0 == 1
      - ld.shared r1, [s1]
expect:
  forbidden: ['P0:r1=0']
"""


def test_cp_async_arrive_without_noinc_is_a_hang_not_forbidden():
    bad = one(MB.format(noinc=""))
    r = check_test(bad, MODEL)
    assert r.status == "fail" and "every execution blocks" in r.message
    word, text, _ = hang_text(open_session(bad, MODEL, hang=True))
    assert word == "allowed" and "pending=1" in text and "never completes" in text
    good = one(MB.format(noinc=".noinc"))
    assert check_test(good, MODEL).status == "pass"
    assert hang_text(open_session(good, MODEL, hang=True))[0] == "forbidden"


def test_cli_check_hang(tmp_path, capsys):
    from checker.cli import main
    f = tmp_path / "t.yaml"
    f.write_text(SPIN.format(v=2, sem="acquire", hang="allowed"))
    assert main(["check", f"{f}::spin", "hang", "--expect", "allowed"]) == 0
    out = capsys.readouterr().out
    assert "P1 blocks at @p bra L1" in out and "Witness execution" in out
    assert main(["run", str(f), "--unroll", "3"]) == 0


def test_check_explains_a_forbidden_condition_per_path_combination(tmp_path, capsys):
    from checker.cli import main
    f = tmp_path / "t.yaml"
    f.write_text(SPIN.format(v=1, sem="acquire", hang="forbidden"))
    assert main(["check", f"{f}::spin", "P1:r1=0", "--expect", "forbidden"]) == 0
    out = capsys.readouterr().out
    # the same explanation as a straight-line test's: the axioms, the synchronization it needs,
    # and a candidate execution with the paths it takes (issue 33)
    assert "\nForbidden\n  ruled out by: Causality\n" in out
    assert "Synchronization it needs" in out and "  paths: P0: straight through; P1: " in out
    assert "violates Causality (irreflexive at " in out and ": cycle e" in out
    f.write_text(SPIN.format(v=1, sem="relaxed", hang="forbidden"))
    assert main(["check", f"{f}::spin", "P1:r1=0", "--expect", "allowed"]) == 0
    assert "Witness execution" in capsys.readouterr().out


def test_check_says_unknown_when_the_bound_cuts_executions(tmp_path, capsys):
    from checker.cli import main
    f = tmp_path / "t.yaml"
    f.write_text("""
name: cas
threads:
  P0:
    at: gpu0.cta0
    code:
      - L:
      - atom.acquire.gpu.cas.b32 r0, [m], 0, 1
      - setp.ne.s32 p, r0, 0
      - "@p bra L"
      - ld.weak.global r1, [x]
  P1:
    at: gpu0.cta1
    code:
      - st.relaxed.gpu.global [m], 1
""")
    # P1 may hold the lock forever, so the CAS loop may go round past the bound: its failed
    # iterations write back what they read, so the cut loses nothing (no execution reads 5),
    # unless that write counts as an effect (rmw-rewrite-effect: Unknown)
    assert main(["check", f"{f}::cas", "P0:r1=5"]) == 0
    assert "Impossible" in capsys.readouterr().out
    assert main(["check", f"{f}::cas", "P0:r1=5", "--option", "rmw-rewrite-effect"]) == 3
    assert "Unknown" in capsys.readouterr().out


BAR = """
name: bar
threads:
  P0:
    at: gpu0.cta0
    code:
      - ld.relaxed.gpu.global r0, [x]{await_}
      - setp.eq.s32 p, r0, 1
      - "@p bar.sync 1, 2"
  P1:
    at: gpu0.cta0.warp1
    code:
      - st.relaxed.gpu.global [x], 1
      - bar.sync 1, 2
expect:
  hang: {hang}
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_a_barrier_reached_on_one_path_only_is_a_hang(engine):
    racy = UnionSession(one(BAR.format(await_="", hang="allowed")), MODEL, engine=engine, loops=True)
    hangs, complete = racy.hangs()
    assert complete and [(h.thread, h.blocked) for h in hangs] == [("P1", "bar.sync 1, 2 (line 14)")]
    assert "barrier 1 generation 1 never completes: it needs 2 threads' arrivals, 1 arrive (P1" in hangs[0].state
    # P0 waits until it reads x=1: it always reaches the barrier, and its spin always exits
    fixed = UnionSession(one(BAR.format(await_=" == 1", hang="forbidden")), MODEL, engine=engine, loops=True)
    assert fixed.hangs() == ((), True)


def test_a_barrier_count_no_thread_set_can_meet_is_a_hang_finding_not_an_error():
    text = BAR.format(await_="", hang="allowed").replace('"@p bar.sync 1, 2"', "bar.sync 1, 3") \
        .replace("bar.sync 1, 2", "bar.sync 1, 3")
    r = check_test(one(text), MODEL)
    assert r.status == "pass" and any("blocks forever at bar.sync 1, 3" in n for n in r.notes)
    # without the liveness question the straight-line test is a hang too: it fails, with no verdict
    # (every execution blocks: "true" must not read as Forbidden), never "malformed"
    plain = one(text.replace("expect:\n  hang: allowed\n", "expect:\n  allowed: ['true']\n")
                .replace('      - setp.eq.s32 p, r0, 1\n', ""))
    r = check_test(plain, MODEL)
    assert (r.status, [c.allowed for c in r.conditions]) == ("fail", [None])
    assert r.message.startswith("no execution terminates, a hang (P0 blocks forever at bar.sync 1, 3"), r.message


def test_a_filter_applies_to_every_path_combination():
    text = SPIN.format(v=1, sem="relaxed", hang="forbidden").replace("expect:\n  hang: forbidden\n",
                                                                     "filter: 'P1:r1=1'\n")
    outs, _ = UnionSession(one(text), MODEL).outcomes()
    assert outs and {dict(o)["P1:r1"] for o in outs} == {1}


def test_a_loop_carried_register_makes_the_bound_visible():
    """A counting loop is not traceless: iterations past the bound give counts the bounded paths
    do not, so the result must say the bound cut executions off."""
    text = """
name: count
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.relaxed.gpu.global [flag], 1
  P1:
    at: gpu0.cta1
    code:
      - L:
      - add.u32 n, n, 1
      - ld.relaxed.gpu.global r0, [flag]
      - setp.ne.s32 p, r0, 1
      - "@p bra L"
expect:
  forbidden: ['P1:n=3']
"""
    r = check_test(one(text), MODEL)
    assert r.status == "unknown" and r.conditions[0].allowed is None
    assert check_test(one(text.replace("unroll", "x") + "unroll: 3\n"), MODEL).conditions[0].allowed is True


def test_a_hang_at_an_rmw_await_is_not_answered_forbidden():
    text = """
name: atomawait
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.relaxed.gpu.global [m], 1
  P1:
    at: gpu0.cta1
    code:
      - atom.acquire.gpu.global.cas.b32 r0, [m], 0, 1 == 0
expect:
  hang: forbidden
"""
    r = check_test(one(text), MODEL)
    assert r.status == "unknown" and r.conditions[-1].allowed is None
    assert any("hang not searched at the await" in n for n in r.notes)


def test_spin_loops_own_registers_stay_out_of_the_outcomes():
    """An await written as a loop for the liveness question (await_loops) adds registers named
    __done...: they are ptxmc's, never shown as part of an outcome."""
    from checker.front.litmus import load_paths

    tests = [t for t in load_paths(["litmus/liveness/barriers.yaml", "litmus/liveness/never-set.yaml"])
             if any(i.await_value is not None for th in t.threads for i in th.code) and t.expect_hang is not None]
    assert tests
    for t in tests:
        r = check_test(t, MODEL)
        assert not any(k.split(":", 1)[-1].startswith("__") for k in r.observe), (t.name, r.observe)


def test_the_report_draws_witnesses_and_the_hang_of_a_test_with_control_flow():
    from checker.front.litmus import load_paths
    from checker.report.analyze import analyze

    by = {t.name: t for t in load_paths(["litmus/liveness/never-set.yaml", "litmus/liveness/quorums.yaml"])}
    spin = next(t for n, t in by.items() if n.startswith("Spin") and t.expect_hang)
    rep = analyze(spin, MODEL, "ptx", layout="builtin")
    assert rep.hang is not None and rep.hang.caption.startswith("hang: ") and rep.hang.graph.nodes
    quorum = analyze(by["BarQuorum+4threads+one-barrier"], MODEL, "ptx", layout="builtin")
    assert len(quorum.witnesses) == len(quorum.result.outcomes) == 4
    assert any("barrier 1: P0+P3, then P1+P2" in p.caption for _, p in quorum.witnesses)


def test_a_loop_no_path_leaves_is_a_hang_not_impossible():
    """`L: ld r0, [x]; bra L` never terminates: no verdict for any condition (it used to be
    'Impossible' for every one), and the hang is named."""
    text = """
name: forever
source: test
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.relaxed.gpu.global [x], 1
  P1:
    at: gpu0.cta1
    code:
      - "L:"
      - ld.relaxed.gpu.global r0, [x]
      - bra L
expect:
  allowed: ['P1:r0=1']
"""
    r = check_test(one(text), MODEL)
    assert (r.status, [c.allowed for c in r.conditions], r.outcomes) == ("fail", [None], ())
    assert r.message.startswith("no execution terminates, a hang (P1 never leaves the loop of bra L")
    from checker.ast import Eq, RegRef
    verdict, out, _ = explain_text(open_session(one(text), MODEL), Eq(RegRef("P1", "r0"), 1))
    assert verdict == "hang" and "No verdict: no execution terminates" in out


def test_a_hang_where_no_execution_terminates_names_the_await_not_its_loop():
    """An await stands for a spin loop whose branch back (`__spinN`) is ptxmc's, not the test's:
    the note of a test no execution of which terminates named that branch
    ("never leaves the loop of @!p bra __spin0 (line 24)"), where a fair hang names the wait."""
    from checker.front.litmus import load_file
    from checker.resources import LITMUS_DIR
    (test,) = load_file(LITMUS_DIR / "liveness" / "unreachable-waits.yaml", "UnreachableCircle")
    r = check_test(test, MODEL)
    (note,) = [n for n in r.notes if "never leaves the loop of" in n]
    assert "__spin" not in note and "P0 never leaves the loop of mbarrier.try_wait" in note, note
