"""The brute-force engine and the Z3 engine return identical allowed-outcome sets (over every
observable) on every bundled test small enough for brute force, for the default and SC models."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from checker import limits
from checker.resources import resolve_model
from checker.verdict.check import check_test
from checker.engines.brute import BruteEngine
from checker.engines.smt import Z3Engine
from checker.errors import LimitExceeded, LitmusError, Unsupported
from checker.isa.registry import lower

from ..conftest import bundled_tests

TESTS = bundled_tests()
LIMIT = 20_000


def _all_observables(es):
    return es.observables


@pytest.mark.parametrize("model_name", ["ptx", "sc"])
@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_engines_agree(test, model_name):
    model = resolve_model(model_name)
    if test.branches or test.expect_hang is not None:
        return _paths_agree(test, model)
    try:
        es = lower(test)
    except LitmusError as e:
        pytest.fail(str(e))
    try:
        brute = BruteEngine(es, model, limit=LIMIT)
    except LimitExceeded as e:
        pytest.skip(str(e))
    observe = _all_observables(es)
    try:
        expected, _ = brute.outcomes(observe)
    except Unsupported as e:
        pytest.skip(str(e))
    got, complete = Z3Engine(es, model).outcomes(observe)
    assert complete
    assert got == expected


def _paths_agree(test, model):
    """A test with control flow: every path combination's outcomes, and the hangs, agree."""
    from checker.verdict.union import UnionSession

    with limits.use(replace(limits.current(), candidates=LIMIT)):
        try:
            brute = UnionSession(test, model, engine="brute", loops=test.expect_hang is not None)
            b_out, b_hang = brute.outcomes(), brute.hangs()
        except (LimitExceeded, Unsupported) as e:
            pytest.skip(str(e))
    z3 = UnionSession(test, model, loops=test.expect_hang is not None)
    assert z3.outcomes() == b_out
    z_hang = z3.hangs()
    assert [(h.thread, h.blocked, h.state) for h in z_hang[0]] == [(h.thread, h.blocked, h.state) for h in b_hang[0]]
    assert z_hang[1] == b_hang[1]


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_brute_force_judges_like_z3(test, ptx_model):
    """The whole check (sanity run, undefined-behaviour flags, expectations) with brute force gives
    Z3's verdicts. Found by the tma scaling family: the sanity run without axioms met candidates
    whose values depend on themselves and gave up on 52 mbarrier / tensor-core tests."""
    try:
        if not (test.branches or test.expect_hang is not None):   # (control paths: judged whole)
            BruteEngine(lower(test), ptx_model, limit=LIMIT)
    except LimitExceeded as e:
        pytest.skip(str(e))
    with limits.use(replace(limits.current(), candidates=LIMIT)):
        brute = check_test(test, ptx_model, "ptx", frozenset(), "brute", 120)
    if brute.status == "unknown" and "candidate executions" in brute.message:
        pytest.skip(brute.message)          # a path combination too large for brute force
    z3 = check_test(test, ptx_model, "ptx", frozenset(), "z3", 120)
    assert (brute.status, brute.message) == (z3.status, z3.message)
    assert [c.allowed for c in brute.conditions] == [c.allowed for c in z3.conditions]
    assert brute.undefined == z3.undefined


ARRIVE_TWICE = """
name: arrive-twice
source: test
memory:
  bar: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: 1}}}}
threads:
  {a}:
    at: gpu0.cta0.warp0
    code: ["{guard}mbarrier.arrive.shared::cta.b64 _, [bar], 2"]
  {b}:
    at: gpu0.cta0.warp1
    code: ["{guard}mbarrier.arrive.shared::cta.b64 _, [bar], 2"]
"""


@pytest.mark.parametrize("a,b", [("T0", "T1"), ("T1", "T0")])
@pytest.mark.parametrize("guarded", [False, True])
def test_every_engine_names_the_same_undefined_behaviour(a, b, guarded, ptx_model):
    """Either arrive may be the one that exceeds the pending count, depending on the execution:
    the report names the least event the flag can contain on any execution, so every engine names
    the same one (Z3 named T1's arrive, brute force T0's, from the witness each found first)."""
    from checker.front.litmus import load_text

    guard = "@p1 " if guarded else ""
    text = ARRIVE_TWICE.format(a=a, b=b, guard=guard)
    if guarded:
        text = text.replace('code: ["@p1', 'code: ["mov.u32 r1, %tid.x", "setp.ne.s32 p1, r1, 64", "@p1')
    (t,) = load_text(text, "t.yaml")
    got = {e: check_test(t, ptx_model, "ptx", frozenset(), e, 120).undefined for e in ("z3", "brute", "auto")}
    assert got["z3"] == got["brute"] == got["auto"]
    (u,) = got["z3"]
    assert u.flag == "MbarrierRange" and u.events == (f"{a}: {guard}mbarrier.arrive.shared::cta.b64 _, [bar], 2",)


def test_brute_force_enumerates_no_orders_when_no_candidate_exists(ptx_model):
    """An await no write can satisfy leaves a read with nothing to read from: there is no
    candidate, and brute force must say so at once rather than enumerate the 4.5e10 coherence
    orders of nine writes to one location first (a fuzz campaign input ran past its time bound)."""
    from checker.front.litmus import load_text

    stores = lambda t: ", ".join(f'"st.relaxed.gpu.global [x], {3 * t + k}"' for k in range(1, 4))  # noqa: E731
    text = ("name: t\nsource: test\nthreads:\n" +
            "".join(f"  P{t}:\n    at: gpu0.cta{t}\n    code: [{stores(t)}]\n" for t in range(3)) +
            '  P3:\n    at: gpu0.cta3\n    code: ["ld.relaxed.gpu.global r0, [y] == 1"]\n')
    (t,) = load_text(text, "t.yaml")
    b = BruteEngine(lower(t), ptx_model, limit=3000)
    assert b.candidates == 0 and all(v == [] for v in b.order_choices.values())
    assert list(b.executions()) == []


UB_TESTS = [t for t in bundled_tests() if t.expect_undefined and not (t.branches or t.expect_hang is not None)]


@pytest.mark.parametrize("test", UB_TESTS, ids=[t.name for t in UB_TESTS])
def test_every_flag_witness_is_a_consistent_execution_on_which_its_flag_fires(test, ptx_model):
    """The flags are asked for together (one query per model that fires a flag not yet seen):
    each flag's witness must still be an execution the axioms allow and on which that flag fires."""
    from checker.engines.base import concrete_evaluation

    es = lower(test)
    eng = Z3Engine(es, ptx_model)
    fired = [n for n in eng.flag_names if eng.flag_witness(n) is not None]
    assert fired, "expected undefined behaviour"
    for name in fired:
        ev = concrete_evaluation(es, ptx_model, eng.flag_witness(name))
        holds = {}
        for check, value in ev.checks:
            holds.setdefault((check.name, check.flag), []).append(bool(value))
        assert all(holds[(name, True)]), name
        assert all(all(v) for (n, flag), v in holds.items() if not flag), name


def _forbidden_small(n: int):
    out = []
    for t in bundled_tests():
        if t.branches or t.expect_hang is not None or t.expect_undefined or t.filter is not None:
            continue
        conds = [e.cond for e in t.expectations if e.kind == "forbidden"]
        if not conds:
            continue
        try:
            b = BruteEngine(lower(t), resolve_model("ptx"), limit=500)
            if b.candidates < 8 or b.has_value_cycle():     # (brute force has no values for those)
                continue
        except (LimitExceeded, LitmusError, Unsupported):
            continue
        out.append((t, tuple(e.cond for e in t.expectations)))
        if len(out) == n:
            return out
    return out


@pytest.mark.parametrize("test,conds", _forbidden_small(6), ids=lambda x: getattr(x, "name", ""))
def test_kept_answers_agree_with_brute_force_under_every_set_of_axioms(test, conds, ptx_model):
    """A Z3 engine asked each condition of a test with a forbidden one under every set of axioms,
    smallest sets first and (a second engine) largest first, so that kept witnesses (also those
    found for another condition) and refutations answer later queries: each answer is brute
    force's, and each witness satisfies the condition and the axioms asked."""
    from itertools import combinations

    from checker.engines.base import concrete_evaluation
    from checker.model.observables import holds
    from checker.verdict.session import Session

    names = Session(test, ptx_model).engine.axiom_names
    subsets = [frozenset(k) for n in range(len(names) + 1) for k in combinations(names, n)]
    brute = None
    for order in (subsets, subsets[::-1]):
        s = Session(test, ptx_model)
        es, eng = s.es, s.engine
        brute = brute or BruteEngine(es, ptx_model, limit=LIMIT)
        for subset, c in ((subset, s.prepare(cond)) for subset in order for cond in conds):
            ex = eng.satisfiable(c, tuple(sorted(subset)))
            assert (ex is None) == (brute.satisfiable(c, tuple(sorted(subset))) is None), sorted(subset)
            if ex is not None:
                assert holds(c, dict(ex.outcome), es.names)
                ev = concrete_evaluation(es, ptx_model, ex)
                assert all(bool(v) for check, v in ev.checks if not check.flag and check.name in subset), sorted(subset)


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_auto_judges_exactly_like_z3(test, ptx_model):
    """The default engine (brute force on small structures, Z3 for what brute force cannot answer
    there, Z3 on the rest) gives Z3's whole Result: outcomes, verdicts, sanity, blame, undefined
    behaviour and its offending events, messages."""
    auto = check_test(test, ptx_model, "ptx", frozenset(), "auto", 120)
    z3 = check_test(test, ptx_model, "ptx", frozenset(), "z3", 120)
    assert auto.engine == "auto"
    assert replace(auto, engine="z3") == z3


def _small(name: str):
    (t,) = [t for t in TESTS if t.name == name]
    return lower(t)


def test_auto_uses_brute_force_up_to_its_candidate_bound(ptx_model):
    from checker.engines import registry
    from checker.engines.auto import AutoEngine
    from checker.engines.brute import candidate_count

    lim = limits.current()
    es = _small("MP+rel.gpu+acq.gpu+sameCTA")
    n = candidate_count(es)
    assert 1 < n <= registry.AUTO_BRUTE_MAX
    assert isinstance(registry.make("auto", es, ptx_model, (), lim), AutoEngine)
    # a lower candidates limit is kept: brute force never runs past it
    assert isinstance(registry.make("auto", es, ptx_model, (), replace(lim, candidates=n - 1)), Z3Engine)
    big = next(lower(t) for t in TESTS if not (t.branches or t.expect_hang is not None)
               and candidate_count(lower(t)) > registry.AUTO_BRUTE_MAX)
    assert isinstance(registry.make("auto", big, ptx_model, (), lim), Z3Engine)


LB_PLUS_ONE = """
name: LB+data+add
source: test
threads:
  P0:
    at: gpu0.cta0
    code: ["ld.relaxed.gpu.global r0, [x]", "st.relaxed.gpu.global [y], r0"]
  P1:
    at: gpu0.cta1
    code: ["ld.relaxed.gpu.global r0, [y]", "add.s32 r1, r0, 1", "st.relaxed.gpu.global [x], r1"]
"""


def test_auto_asks_z3_where_values_depend_on_themselves(ptx_model):
    """LB with data dependencies, one of them adding 1: when each read reads the other thread's
    store, x = y + 1 and y = x, which no values satisfy. Brute force has no values for that
    candidate and answers every other question; the sanity run of an outcome only such a
    candidate could give goes to Z3, which finds no fixed point; so does brute force alone, on
    the fixed points of that candidate's values (checker.engines.fixpoint)."""
    from checker.ast import And, Eq, RegRef
    from checker.engines import registry
    from checker.front.litmus import load_text

    (t,) = load_text(LB_PLUS_ONE, "lb.yaml")
    es = lower(t)
    auto = registry.make("auto", es, ptx_model, (), limits.current())
    z3 = Z3Engine(es, ptx_model)
    observe = _all_observables(es)
    assert auto.outcomes(observe) == z3.outcomes(observe)
    assert auto._exact is None
    possible = And((Eq(RegRef("P0", "r0"), 1), Eq(RegRef("P1", "r0"), 0)))
    thin_air = And((Eq(RegRef("P0", "r0"), 5), Eq(RegRef("P1", "r0"), 4)))
    assert auto.sane(possible) and auto._exact is None        # brute force has values for it
    assert auto.sane(thin_air) is False is z3.sane(thin_air)
    assert auto.satisfiable(thin_air, axioms=()) is None is z3.satisfiable(thin_air, axioms=())
    assert auto._exact is not None and auto.brute.sane(thin_air) is False
    # Without the +1 (LB+datas), the cycle holds at every value: 42 is well-formed.
    es = _small("LB+datas+relaxed")
    auto = registry.make("auto", es, ptx_model, (), limits.current())
    both_42 = And((Eq(RegRef("P0", "r0"), 42), Eq(RegRef("P1", "r0"), 42)))
    for ex in (auto.satisfiable(both_42, axioms=()), auto.brute.satisfiable(both_42, axioms=())):
        assert ex is not None and dict(ex.outcome)["P0:r0"] == 42
    assert auto.satisfiable(both_42) is None        # the axioms (No Thin Air) rule it out


def test_auto_gives_z3_the_questions_once_a_consistent_candidate_has_no_values(tmp_path):
    """Under a model without axioms the thin-air candidate of LB with data dependencies is
    consistent, and brute force has no values for it: Z3 answers, with its own outcome cap."""
    from checker.cat.interp import load_model
    from checker.engines import registry

    (tmp_path / "none.cat").write_text('"no axioms"\nlet x = po\n')
    model = load_model(tmp_path / "none.cat")
    es = _small("LB+datas+relaxed")
    lim = replace(limits.current(), outcomes=6)
    observe = _all_observables(es)
    with pytest.raises(Unsupported):
        BruteEngine(es, model).outcomes(observe)
    auto = registry.make("auto", es, model, (), lim)
    got = auto.outcomes(observe)
    assert auto._no_values and got == Z3Engine(es, model, max_outcomes=6).outcomes(observe)
    assert got[1] is False and len(got[0]) == 6


def test_brute_force_keeps_the_outcome_cap_as_z3_does(ptx_model):
    es = _small("SB+fence.sc.gpu+sameCTA")
    observe = _all_observables(es)
    every, complete = BruteEngine(es, ptx_model).outcomes(observe)
    n = len(every)
    assert complete and n > 2
    for cap in (n - 1, n, n + 1):
        got, done = BruteEngine(es, ptx_model, max_outcomes=cap).outcomes(observe)
        z_got, z_done = Z3Engine(es, ptx_model, max_outcomes=cap).outcomes(observe)
        assert (len(got), done) == (min(cap, n), cap > n) == (len(z_got), z_done)
        assert got <= every


def test_brute_force_keeps_the_tests_deadline_as_z3_does(ptx_model):
    """Built within a test's time (a Session's deadline), brute force stops at it with Z3's
    message; Z3 stops already while encoding (the encoding checks the deadline), and the Z3
    engine `auto` builds on demand stops the same way."""
    import time

    from checker.engines import registry
    from checker.errors import SolverUnknown

    es = _small("SB+fence.sc.gpu+sameCTA")
    observe = _all_observables(es)
    past = time.monotonic() - 1
    messages = []
    with limits.deadline(past):
        brute = BruteEngine(es, ptx_model)
        auto = registry.make("auto", es, ptx_model, (), limits.current())
        with pytest.raises(SolverUnknown) as e:
            Z3Engine(es, ptx_model).outcomes(observe)
        messages.append(str(e.value))
    for engine in (brute, auto):
        with pytest.raises(SolverUnknown) as e:
            engine.outcomes(observe)
        messages.append(str(e.value))
    assert messages[0].startswith("timeout: ") and len(set(messages)) == 1
    with pytest.raises(SolverUnknown):
        auto.exact()                    # its Z3 engine is built against the same deadline


def _with_comments(text: str) -> str:
    """A cat model's text with comment lines added at the top and before each check: the same
    model, every check on another line."""
    lines = ["(* a comment *)", "(* another", "   comment *)"]
    for line in text.splitlines():
        if line.lstrip().startswith(("acyclic", "irreflexive", "empty", "flag")):
            lines.append("(* moved by a comment *)")
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("spec, model_text", [
    ("litmus/async/mbarrier-ranges.yaml::MB-range+count-10000", None),
    ("litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster",
     "let fr = (rf^-1; co) \\ id\nlet com = rf | co | fr\nacyclic po | com\n"
     "acyclic (po & loc) | com as SCPerLocation\nempty rmw & (fr; co)\n"),
])
def test_the_z3_query_does_not_depend_on_the_models_line_numbers(tmp_path, spec, model_text):
    """Z3's search depends on its variables' names and order: when the names of an acyclic check's
    clocks carried the check's line, an edit of comments alone in ptx.cat turned
    MB-range+count-10000 from a 50 ms answer into a timeout. The same model with its checks on
    other lines (named ones, and unnamed ones, `check@LINE` to the user) gives the same query."""
    from checker.api import load_test
    from checker.cat.interp import load_model

    text = model_text or Path(resolve_model("ptx").path).read_text()
    (tmp_path / "a.cat").write_text(text)
    (tmp_path / "b.cat").write_text(_with_comments(text))
    a, b = (load_model(str(tmp_path / n)) for n in ("a.cat", "b.cat"))
    es = lower(load_test(spec))
    assert Z3Engine(es, a).solver.sexpr() == Z3Engine(es, b).solver.sexpr()


def test_z3_answers_the_mbarrier_count_split_across_two_arrivals(ptx_model):
    """MB-range+count-10000 (10000 arrivals, as 9999 + 1): answered by Z3, not UNKNOWN."""
    from checker.api import load_test

    r = check_test(load_test("litmus/async/mbarrier-ranges.yaml::MB-range+count-10000"), ptx_model, "ptx",
                   frozenset(), "z3", 120)
    assert (r.status, r.message) == ("pass", "")


# Two message-passing pairs: each pair's stale read is forbidden but well-formed (sane); no
# execution reads a value nobody writes (broken conditions: not even without axioms).
TWO_MP = r"""
name: MP2+rel+acq
source: test (two message-passing pairs, conditions both sane and broken)
threads:
  P0:
    at: gpu0.cta0
    code: ["st.weak.global [x], 1", "st.release.gpu.global [f], 1"]
  P1:
    at: gpu0.cta1
    code: ["ld.acquire.gpu.global r0, [f]", "ld.weak.global r1, [x]"]
  P2:
    at: gpu0.cta2
    code: ["st.weak.global [y], 1", "st.release.gpu.global [g], 1"]
  P3:
    at: gpu0.cta3
    code: ["ld.acquire.gpu.global r0, [g]", "ld.weak.global r1, [y]"]
expect:
  forbidden: ['P1:r0=1 /\ P1:r1=0', 'P1:r0=2', 'P3:r0=1 /\ P3:r1=0', 'P3:r1=5', 'P1:r1=3 \/ P3:r0=4', 'y=7']
"""
TWO_MP_SANE = (True, False, True, False, False, False)


def solver_queries(monkeypatch) -> list[int]:
    """A counter of the Z3 solver checks asked from now on (one element)."""
    import z3

    count = [0]
    check = z3.Z3_solver_check_assumptions

    def counted(*args):
        count[0] += 1
        return check(*args)

    monkeypatch.setattr(z3, "Z3_solver_check_assumptions", counted)
    return count


def test_sanity_of_several_conditions_is_asked_together(ptx_model, monkeypatch):
    """sane_each answers as sane does, condition by condition, on Z3 and brute force, and Z3
    asks fewer queries: one query for any condition not yet answered (as for the flags), its
    refutation answering each broken condition's first query (all axioms but at most one)."""
    from checker.front.litmus import load_text

    (t,) = load_text(TWO_MP, "t.yaml")
    es = lower(t)
    conds = [e.cond for e in t.expectations]
    queries = solver_queries(monkeypatch)
    one_by_one = Z3Engine(es, ptx_model)
    assert tuple(one_by_one.sane(c) for c in conds) == TWO_MP_SANE
    each, queries[0] = queries[0], 0
    batched = Z3Engine(es, ptx_model)
    assert batched.sane_each(conds) == TWO_MP_SANE
    assert batched.sane_each(conds) == TWO_MP_SANE     # (answered from what it kept)
    assert queries[0] < each
    brute = BruteEngine(es, ptx_model, limit=LIMIT)
    assert brute.sane_each(conds) == TWO_MP_SANE == tuple(brute.sane(c) for c in conds)
    # what it kept answers later questions as the per-condition answers do
    for c in conds:
        for axioms in ((), None):
            assert (batched.satisfiable(c, axioms) is None) == (one_by_one.satisfiable(c, axioms) is None)


def _stale_reads(k: int) -> str:
    """Message passing of k data locations, each data check a condition of its own (as the
    data checks of an extracted skeleton: every one of them broken on one execution)."""
    writes = ", ".join(f'"st.weak.global [x{i}], 1"' for i in range(k))
    reads = ", ".join(f'"ld.weak.global r{i + 1}, [x{i}]"' for i in range(k))
    forbidden = ", ".join(f"'P1:r0=1 /\\ P1:r{i + 1}!=1'" for i in range(k))
    return f"""name: MP{k}+rel+acq
source: test (message passing of {k} locations, one forbidden condition per data read)
threads:
  P0:
    at: gpu0.cta0
    code: [{writes}, "st.release.gpu.global [f], 1"]
  P1:
    at: gpu0.cta1
    code: ["ld.acquire.gpu.global r0, [f]", {reads}]
expect:
  forbidden: [{forbidden}]
"""


@pytest.mark.parametrize("k", [2, 3, 4])
def test_sanity_of_conditions_that_hold_together_is_one_query(ptx_model, monkeypatch, k):
    """sane_each asks first whether the conditions left all hold at once: here they do (a stale
    read of each location, under every axiom but one), and that one query answers them all
    (the disjunction's models answered one at a time: 2 queries for k = 2; the CUTLASS
    skeleton's 8 data checks 5 -> 1, bench/RESULTS.md). Same answers as asked one by one and as
    brute force."""
    from checker.front.litmus import load_text

    (t,) = load_text(_stale_reads(k), "t.yaml")
    es = lower(t)
    conds = [e.cond for e in t.expectations]
    queries = solver_queries(monkeypatch)
    assert Z3Engine(es, ptx_model).sane_each(conds) == (True,) * k
    assert queries[0] == 1
    assert tuple(Z3Engine(es, ptx_model).sane(c) for c in conds) == (True,) * k
    assert BruteEngine(es, ptx_model, limit=LIMIT).sane_each(conds) == (True,) * k


CUT = """
name: cut
source: test
threads:
  P0:
    at: gpu0.cta0
    code: ["st.global.u16 [x+2], 1"]
  P1:
    at: gpu0.cta1
    code: ["st.global.u32 [x], 5"]
"""


def test_observables_are_what_an_outcome_gives_a_value(ptx_model):
    """A location two accesses cut into byte ranges is observed as itself, never as its atoms:
    the comparisons of whole outcome sets (here, tests/fuzz/props.check_engines_agree) compared
    'x[0:2]' and 'x[2:4]', which no outcome has (both engines answer 0 for them), and never 'x',
    so a disagreement on x's value could not fail them."""
    from checker.front.litmus import load_text

    (t,) = load_text(CUT, "t.yaml")
    es = lower(t)
    assert es.compose and es.observables == ("x",)
    brute = BruteEngine(es, ptx_model)
    assert all(set(dict(ex.outcome)) == set(es.observables) for ex, _ in brute.executions())
    want = {(("x", 5),), (("x", 5 + (1 << 16)),)}
    assert brute.outcomes(es.observables)[0] == Z3Engine(es, ptx_model).outcomes(es.observables)[0] == want
