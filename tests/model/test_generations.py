"""Barrier generations decided at run time (checker/isa/barriers.py, docs/model.md#a19): the
schedules of a test's barrier operations, and the verdicts judged schedule by schedule, with both
engines agreeing."""
from __future__ import annotations

import pytest

from checker.cli import main
from checker.errors import LitmusError
from checker.front.litmus import load_paths, load_text
from checker.isa import barriers as generations
from checker.isa.registry import lower
from checker.resources import resolve_model
from checker.unfold.variants import needs_variants
from checker.verdict.check import check_test
from checker.verdict.union import UnionSession

MODEL = resolve_model("ptx")


def _test(threads: dict[str, tuple[str, list[str]]], extra: str = "") -> object:
    lines = ["name: t", "source: test", "threads:"]
    for name, (at, code) in threads.items():
        lines += [f"  {name}:", f"    at: {at}", "    code:"] + [f"      - {c}" for c in code]
    (t,) = load_text("\n".join(lines) + "\n" + extra, "g.yaml")
    assert not isinstance(t, Exception), t
    return t


def _groups(s: generations.Schedule, test) -> list[list[str]]:
    """The arrivals of each (resource, generation), as thread names, sorted."""
    per = generations.uses(test)
    by = {(u.thread, u.index): u for us in per.values() for u in us}
    gens: dict = {}
    for t, i, g in s.generation:
        if by[(t, i)].kind != "wait":
            gens.setdefault((repr(by[(t, i)].key), g), []).append(t)
    return sorted(sorted(v) for v in gens.values())


CTA = "gpu0.cta0"


def test_three_threads_with_count_two_each_leave_one_waiting():
    t = _test({f"P{k}": (f"{CTA}.warp{k}", ["bar.sync 1, 2"]) for k in range(3)})
    ways = generations.schedules(t)
    assert len(ways) == 3 and all(w.blocked for w in ways)
    assert sorted(w.blocked[0].thread for w in ways) == ["P0", "P1", "P2"]
    assert sorted(_groups(w, t) for w in ways) == [[["P0"], ["P1", "P2"]], [["P0", "P1"], ["P2"]],
                                                   [["P0", "P2"], ["P1"]]]
    assert needs_variants(t)


def test_four_threads_pair_up_in_three_ways_whatever_the_order_of_generations():
    t = _test({f"P{k}": (f"{CTA}.warp{k}", ["bar.sync 1, 2"]) for k in range(4)})
    ways = generations.schedules(t)
    assert not any(w.blocked for w in ways)
    assert sorted(_groups(w, t) for w in ways) == [[["P0", "P1"], ["P2", "P3"]], [["P0", "P2"], ["P1", "P3"]],
                                                   [["P0", "P3"], ["P1", "P2"]]]
    with pytest.raises(LitmusError, match=r"decided at run time \(3 ways\)"):
        lower(t)


def test_matching_counts_meet_in_one_way_and_build_as_before():
    t = _test({f"P{k}": (f"{CTA}.warp{k}", ["bar.sync 1, 2", "bar.sync 1, 2"]) for k in range(2)})
    (only,) = generations.schedules(t)
    assert not only.blocked and _groups(only, t) == [["P0", "P1"], ["P0", "P1"]]
    assert not needs_variants(t)
    es = lower(t)
    assert len(es.relations["syncbar"]) == 4       # each generation: P0 -> P1 and P1 -> P0


def test_arrive_does_not_wait_so_two_arrivals_of_one_thread_may_complete_a_generation():
    t = _test({"P0": (CTA, ["bar.arrive 1, 2", "bar.arrive 1, 2"]), "P1": (f"{CTA}.warp1", ["bar.sync 1, 2"])})
    ways = generations.schedules(t)
    assert [(_groups(w, t), [u.thread for u in w.blocked]) for w in ways] == [
        ([["P0"], ["P0", "P1"]], []),            # P1 completes the first with P0; P0's second arrival is left over
        ([["P0", "P0"], ["P1"]], ["P1"]),        # P0 arrives twice first: P1 waits forever
    ]


def test_a_sync_thread_is_never_twice_in_one_generation():
    t = _test({"P0": (CTA, ["bar.sync 1, 2", "bar.sync 1, 2"]), "P1": (f"{CTA}.warp1", ["bar.sync 1, 2"]),
               "P2": (f"{CTA}.warp2", ["bar.sync 1, 2"])})
    for w in generations.schedules(t):
        for group in _groups(w, t):
            assert len(group) == len(set(group))


def test_barriers_taken_in_opposite_orders_deadlock():
    t = _test({"P0": (CTA, ["bar.sync 1, 2", "bar.sync 2, 2"]), "P1": (f"{CTA}.warp1", ["bar.sync 2, 2", "bar.sync 1, 2"])})
    (w,) = generations.schedules(t)
    assert sorted(u.thread for u in w.blocked) == ["P0", "P1"]
    assert "barrier 1 generation 1 never completes" in w.why and "barrier 2 generation 1 never completes" in w.why


@pytest.mark.parametrize("count, blocked", [("", False), (", 2", True)])
def test_a_barrier_without_a_count_does_not_wait_for_exited_threads(count, blocked):
    t = _test({"P0": (CTA, [f"bar.sync 0{count}", f"bar.sync 0{count}"]), "P1": (f"{CTA}.warp1", [f"bar.sync 0{count}"])})
    (w,) = generations.schedules(t)
    assert bool(w.blocked) == blocked


def test_a_thread_still_looping_has_not_exited():
    t = _test({"P0": (CTA, ["bar.sync 0", "bar.sync 0"]), "P1": (f"{CTA}.warp1", ["bar.sync 0"])})
    (w,) = generations.schedules(t, spinning=frozenset({"P1"}))
    assert [u.thread for u in w.blocked] == ["P0"]


def test_cluster_waits_wait_for_the_generation_of_the_threads_latest_arrive():
    arrive, wait = "barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned"
    t = _test({"P0": ("gpu0.cluster0.cta0", [arrive, wait, arrive, wait]),
               "P1": ("gpu0.cluster0.cta1", [arrive, wait])}, "arch: sm_90\n")
    (w,) = generations.schedules(t)
    assert not w.blocked                       # P1 exits: P0's second generation needs only P0
    es = lower(t)
    assert len(es.relations["clusterbar"]) == 2    # generation 1: each arrive to the other's wait


@pytest.mark.parametrize("codes, message", [
    ((["bar.sync 1, 2"], ["bar.sync 1, 4"]), "barrier 1 is used with different thread counts (2, 4"),
    ((["bar.sync 1"], ["bar.arrive 1, 4"]), "barrier 1 is used with different thread counts (no count, 4"),
    ((["barrier.cluster.arrive", "barrier.cluster.arrive"], ["barrier.cluster.arrive"]),
     "barrier.cluster.arrive twice without a barrier.cluster.wait between them"),
])
def test_what_no_schedule_makes_right_is_refused_at_its_line(codes, message):
    at = ("gpu0.cluster0.cta0", "gpu0.cluster0.cta1") if "cluster" in codes[0][0] else (CTA, f"{CTA}.warp1")
    t = _test({"P0": (at[0], codes[0]), "P1": (at[1], codes[1])}, "arch: sm_90\n")
    with pytest.raises(LitmusError, match=message.replace("(", r"\(")) as e:
        generations.schedules(t)
    assert e.value.where is not None and e.value.where.line > 0


def test_a_count_equal_to_the_ctas_threads_may_mix_with_no_count():
    t = _test({"P0": (CTA, ["bar.arrive 1, 2"]), "P1": (f"{CTA}.warp1", ["bar.sync 1"])})
    (w,) = generations.schedules(t)
    assert not w.blocked and _groups(w, t) == [["P0", "P1"]]


# -- verdicts, schedule by schedule, with both engines ------------------------------------------

QUORUMS = [t for t in load_paths(["litmus/liveness/quorums.yaml"])]


@pytest.mark.parametrize("test", QUORUMS, ids=lambda t: t.name)
def test_the_quorum_suite_agrees_between_engines(test):
    z, b = check_test(test, MODEL, engine="z3"), check_test(test, MODEL, engine="brute")
    assert z.status == b.status == "pass", (z.message, b.message)
    assert z.outcomes == b.outcomes
    assert [(c.text, c.allowed) for c in z.conditions] == [(c.text, c.allowed) for c in b.conditions]


def test_issue_example_three_threads_get_a_verdict_for_each_outcome():
    """Three threads, `bar.sync 1, 2`, P0 storing before its barrier: no longer an error; the
    terminating executions have outcomes and the hang is reported."""
    (t,) = [t for t in QUORUMS if t.name == "BarQuorum+3threads+P0-twice"]
    fc = UnionSession(t, MODEL, loops=True)
    outs, complete = fc.outcomes()
    assert complete and sorted(dict(o)["P1:r1"] for o in outs) == [1]
    hangs, done = fc.hangs()
    assert done and [h.thread for h in hangs] == ["P0"] and "P1+P2, then P0" in hangs[0].combo


def test_check_names_the_grouping_of_its_witness(capsys):
    rc = main(["check", "litmus/liveness/quorums.yaml::BarQuorum+4threads+one-barrier", "P1:r1=0 /\\ P2:r2=0"])
    out = capsys.readouterr().out
    assert rc == 0 and "Allowed" in out and "barrier 1: P0+P3, then P1+P2" in out


def test_outcomes_of_a_test_where_every_execution_blocks_says_hang_and_fails(capsys):
    rc = main(["outcomes", "litmus/liveness/quorums.yaml::BarCrossed+deadlock"])
    out, err = capsys.readouterr()
    assert rc == 1 and "States 0" in out and "Hang: no execution terminates" in out
    assert err.startswith("ptxmc: ") and err.rstrip().endswith("BarCrossed+deadlock: no execution terminates (a hang)")


# -- an independent oracle: the groupings of one counted barrier, stated declaratively ----------

def _declarative(kinds: list[list[str]], need: int) -> set:
    """Every valid assignment of one counted barrier's uses (thread t's k-th use is kinds[t][k],
    "sync" or "arrive", one arrival each) to generations, as (groups, stuck threads), checked
    against the rules rather than simulated: each thread runs a prefix of its uses; a sync's
    next use is in a later generation, an arrive's in the same or a later one; every generation
    but the last has exactly `need` arrivals, the last at most `need`; a thread stops early only
    when stuck in a sync of an incomplete generation, and every thread that is not stuck has run
    all its uses."""
    import itertools

    uses = [(t, k) for t, ks in enumerate(kinds) for k in range(len(ks))]
    total = len(uses)
    found = set()
    for gens in itertools.product(range(total + 1), repeat=total):     # total: "not run"
        g = dict(zip(uses, gens))
        ok = True
        for t, ks in enumerate(kinds):
            run = [g[(t, k)] for k in range(len(ks))]
            n_run = next((k for k, x in enumerate(run) if x == total), len(run))
            if any(x != total for x in run[n_run:]):
                ok = False
                break
            for k in range(n_run - 1):
                if (ks[k] == "sync" and run[k + 1] <= run[k]) or (ks[k] == "arrive" and run[k + 1] < run[k]):
                    ok = False
            if not ok:
                break
        if not ok:
            continue
        used = sorted({x for x in gens if x != total})
        if used != list(range(len(used))):
            continue
        size = {x: sum(1 for y in gens if y == x) for x in used}
        if any(size[x] != need for x in used[:-1]) or (used and size[used[-1]] > need):
            continue
        incomplete = used[-1] if used and size[used[-1]] < need else None
        stuck = set()
        for t, ks in enumerate(kinds):
            run = [g[(t, k)] for k in range(len(ks))]
            n_run = next((k for k, x in enumerate(run) if x == total), len(run))
            last_stuck = n_run > 0 and ks[n_run - 1] == "sync" and run[n_run - 1] == incomplete
            if n_run < len(ks) and not last_stuck:
                ok = False
            if last_stuck:
                stuck.add(f"P{t}")
        if not ok:
            continue
        groups = frozenset(frozenset((f"P{t}", k) for (t, k), x in g.items() if x == y) for y in used)
        found.add((groups, frozenset(stuck)))
    return found


def _simulated(kinds: list[list[str]], need: int) -> set:
    code = {f"P{t}": (f"{CTA}.warp{t}", [f"bar.{k} 1, {need}" for k in ks]) for t, ks in enumerate(kinds)}
    test = _test(code)
    out = set()
    for w in generations.schedules(test):
        by: dict = {}
        for t, i, g in w.generation:
            by.setdefault(g, set()).add((t, i))
        groups = frozenset(frozenset(v) for v in by.values())
        out.add((groups, frozenset(u.thread for u in w.blocked)))
    return out


def test_the_simulation_finds_exactly_the_groupings_the_rules_allow():
    import random

    rng = random.Random(1624)
    checked = 0
    for _ in range(60):
        threads = rng.randint(1, 3)
        kinds = [[rng.choice(("sync", "arrive")) for _ in range(rng.randint(1, 2))] for _ in range(threads)]
        if sum(map(len, kinds)) > 5:
            continue
        need = rng.randint(1, 3)
        assert _simulated(kinds, need) == _declarative(kinds, need), (kinds, need)
        checked += 1
    assert checked >= 40
