"""A small random generator of hang-question litmus tests in the shapes the hang question's
shortcuts target (checker/verdict/stops.py's refuter, quiet.py's quiet mbarriers, extension.py's
lemma: docs/model.md#a18), and the comparison of each shortcut with its reference:

- the hang answer (found hangs, complete, never terminates) with `refute=True` and `refute=False`;
- the undefined-behaviour flags, with their reasons, of the default search (quiet mbarriers, the
  extension lemma) and of the reference (`quiet=False, refute=False, extend=False`), and where
  the lemma applied, of `extend=True` against `extend=False` (the lemma alone).

2-3 threads in one CTA, 1-2 mbarriers (declared initialised, or initialised by P0 before a
bar.sync that every thread, or only some, passes), arrive / arrive.expect_tx / arrive_drop /
expect_tx / bulk copies completing on an mbarrier / cp.async's arrive-on (with and without
.noinc), try_wait.parity awaits (`== 1`) with an
immediate parity (right, wrong, a skipped phase), with and without .acquire / .relaxed, plain and
release/acquire data accesses and fences, and sometimes an inval at the end, after a bar.sync
(that every thread, or only some, reaches). Four tests in ten are "balanced" (each phase 0
completed by its count of arrivals, awaited elsewhere, now and then one arrival too many or too
few): the extension lemma's shape.

Run by hand for a long campaign: `python -m tests.unfold.fuzz_shortcuts SEED N [z3|brute [FROM]]`;
tests/unfold/test_fuzz_shortcuts.py runs a fixed seed's few cases."""
from __future__ import annotations

import random
import signal
import sys

from checker.errors import LimitExceeded, LitmusError, NeverCompletes, SolverUnknown

SEMS_ARRIVE = ["", ".release.cta"]
SEMS_WAIT = ["", ".acquire.cta", ".relaxed.cta"]


def generate(rng: random.Random, name: str = "Fuzz") -> str:
    """One test's YAML text: a random mix, or (the extension lemma's shape) a balanced one."""
    return balanced(rng, name) if rng.random() < 0.4 else mixed(rng, name)


def _head(rng, nt, mbs, counts, declared, threads, race=0.0):
    if not declared:
        threads[0] += [f"mbarrier.init.shared::cta.b64 [{m}], {counts[m]}" for m in mbs]
        if rng.random() < race:
            return      # no bar.sync: the others' waits and arrives race the init
        # every thread passes the bar.sync after the init, or (sometimes) one does not
        skip = rng.randrange(1, nt) if rng.random() < 0.15 else None
        n = nt - (skip is not None)
        for i in range(nt):
            if i != skip:
                threads[i].append(f"bar.sync 0, {32 * n}" if n < nt else "bar.sync 0")


def _text(name, nt, mbs, counts, declared, bulk, threads, cp=False):
    out = [f"- name: {name}", "  arch: sm_90", "  memory:"]
    for m in mbs:
        out.append(f"    {m}: {{space: shared, owner: gpu0.cta0"
                   + (f", mbarrier: {{count: {counts[m]}}}}}" if declared else "}"))
    out.append("    x: {space: global}")
    out.append("    d: {space: shared, owner: gpu0.cta0}")
    if bulk:
        out.append("    s: {space: shared, owner: gpu0.cta0, size: 16}")
        out.append("    g: {space: global, size: 16}")
    if cp:
        out.append("    c: {space: shared, owner: gpu0.cta0}")
        out.append("    h: 1")
    out.append("  threads:")
    for i, code in enumerate(threads):
        out += [f"    P{i}:", f"      at: gpu0.cta0.warp{i}", "      code:"]
        out += [f"        - {c}" for c in code] or ["        - fence.acq_rel.cta"]
    out += ["  expect:", "    hang: allowed", ""]
    return "\n".join(out)


BULK = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 16, [{m}]"


def balanced(rng: random.Random, name: str) -> str:
    """Each mbarrier's phase 0 completed by exactly its count of arrivals (some with a bulk copy's
    transaction), awaited by other threads, data written before an arrive and read after a wait,
    the init racing the others' waits in 4 tests in 10 of those that initialise in P0 (the quiet
    mbarriers' and the lemma's undefined behaviour: a failed iteration before the init);
    now and then one arrival too many or too few, or a wait for parity 1."""
    nt = rng.choice([2, 2, 3])
    nm = rng.choice([1, 1, 2])
    mbs = [f"m{i}" for i in range(nm)]
    counts = {m: rng.choice([1, 1, 2]) for m in mbs}
    declared = rng.random() < 0.6
    threads = [[] for _ in range(nt)]
    _head(rng, nt, mbs, counts, declared, threads, race=0.4)
    bulk = False
    reg = 0
    producers = {m: rng.randrange(nt) for m in mbs}
    for m in mbs:
        n = counts[m] + (rng.random() < 0.1) - (rng.random() < 0.1)
        for a in range(n):
            i = producers[m] if a == 0 else rng.randrange(nt)
            if rng.random() < 0.4:
                threads[i].append(rng.choice(["st.global.u32 [x], 1", "st.shared.u32 [d], 1"]))
            if rng.random() < 0.2:
                bulk = True
                threads[i].append(f"mbarrier.arrive.expect_tx{rng.choice(SEMS_ARRIVE)}.shared::cta.b64 _, [{m}], 16")
                threads[rng.randrange(nt)].append(BULK.format(m=m))
            else:
                threads[i].append(f"mbarrier.arrive{rng.choice(SEMS_ARRIVE)}.shared::cta.b64 _, [{m}]")
        for _ in range(rng.choice([1, 1, 2])):
            i = rng.choice([j for j in range(nt) if j != producers[m]])
            par = 1 if rng.random() < 0.1 else 0
            threads[i].append(f"mbarrier.try_wait.parity{rng.choice(SEMS_WAIT)}.shared::cta.b64 "
                              f"p{reg}, [{m}], {par} == 1")
            reg += 1
            if rng.random() < 0.5:
                threads[i].append(rng.choice([f"ld.global.u32 r{reg}, [x]", f"ld.shared.u32 r{reg}, [d]"]))
                reg += 1
    if rng.random() < 0.15:
        i = rng.randrange(nt)
        threads[i].append(f"mbarrier.arrive_drop.shared::cta.b64 _, [{rng.choice(mbs)}]")
    return _text(name, nt, mbs, counts, declared, bulk, threads)


def mixed(rng: random.Random, name: str) -> str:
    nt = rng.choice([2, 2, 3])
    nm = rng.choice([1, 1, 2])
    mbs = [f"m{i}" for i in range(nm)]
    counts = {m: rng.choice([1, 1, 2]) for m in mbs}
    declared = rng.random() < 0.6
    bulk = cp = False
    threads = [[] for _ in range(nt)]
    _head(rng, nt, mbs, counts, declared, threads)
    reg = 0
    for i in range(nt):
        for _ in range(rng.choice([1, 2, 2, 3])):
            m = rng.choice(mbs)
            k = rng.random()
            if k < 0.30:
                threads[i].append(f"mbarrier.arrive{rng.choice(SEMS_ARRIVE)}.shared::cta.b64 _, [{m}]")
            elif k < 0.36:
                threads[i].append(f"mbarrier.arrive_drop.shared::cta.b64 _, [{m}]")
            elif k < 0.44:
                bulk = True
                threads[i].append(f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{m}], 16")
                if rng.random() < 0.7:
                    j = rng.randrange(nt)
                    threads[j].append(f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                                      f"[s], [g], 16, [{m}]")
            elif k < 0.48:
                bulk = True
                threads[i].append(f"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{m}], 16")
                threads[i].append(f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                                  f"[s], [g], 16, [{m}]")
            elif k < 0.75:
                par = rng.choice([0, 0, 0, 1])
                p = f"p{reg}"
                reg += 1
                threads[i].append(f"mbarrier.try_wait.parity{rng.choice(SEMS_WAIT)}.shared::cta.b64 "
                                  f"{p}, [{m}], {par} == 1")
            elif k < 0.83:
                threads[i].append(rng.choice(["st.global.u32 [x], 1", "st.release.gpu.global.u32 [x], 1",
                                              "st.shared.u32 [d], 1"]))
            elif k < 0.92:
                r = f"r{reg}"
                reg += 1
                threads[i].append(rng.choice([f"ld.global.u32 {r}, [x]", f"ld.acquire.gpu.global.u32 {r}, [x]",
                                              f"ld.shared.u32 {r}, [d]"]))
            elif k < 0.96:
                threads[i].append(rng.choice(["fence.acq_rel.gpu", "fence.acq_rel.cta"]))
            else:
                # cp.async's asynchronous arrive-on (without .noinc: a pending arrival added first)
                cp = True
                threads[i].append("cp.async.ca.shared.global [c], [h], 4")
                threads[i].append(f"cp.async.mbarrier.arrive{rng.choice(['', '.noinc', '.noinc'])}.shared::cta.b64 [{m}]")
    if rng.random() < 0.25:
        # an inval at the end, sometimes after a bar.sync that every thread (or only some) reaches
        m = rng.choice(mbs)
        if rng.random() < 0.6:
            who = list(range(nt)) if rng.random() < 0.7 else rng.sample(range(nt), nt - 1)
            for i in who:
                threads[i].append(f"bar.sync 1, {32 * len(who)}" if len(who) < nt else "bar.sync 1")
            threads[who[0]].append(f"mbarrier.inval.shared::cta.b64 [{m}]")
        else:
            threads[rng.randrange(nt)].append(f"mbarrier.inval.shared::cta.b64 [{m}]")
    return _text(name, nt, mbs, counts, declared, bulk, threads, cp)


ERRORS = (LimitExceeded, LitmusError, NeverCompletes, SolverUnknown)


def hang_answer(t, model, engine: str, refute: bool):
    from checker.verdict.union import UnionSession
    try:
        u = UnionSession(t, model, engine=engine, loops=True, refute=refute)
        found, complete = u.hangs()
        return sorted((h.thread, h.blocked, h.combo) for h in found), complete, u.never_terminates() is not None
    except ERRORS as e:
        return type(e).__name__


def flags(t, model, engine: str, **kw):
    from checker.verdict.union import UnionSession
    try:
        u = UnionSession(t, model, engine=engine, loops=True, **kw)
        return sorted({(f.flag, f.why) for f in u.undefined}), u.extension_why is None
    except ERRORS as e:
        return type(e).__name__, False


def compare(text: str, model, engine: str = "z3", stats: dict | None = None) -> list[str]:
    """What differs between the shortcuts and the reference on this test (empty: nothing);
    `stats` counts the tests on which each shortcut did something."""
    from checker.verdict.quiet import quiet_mbarriers
    from checker.verdict.union import UnionSession
    stats = {} if stats is None else stats
    from checker.front.litmus import load_text
    tests = [t for t in load_text(text, "fuzz.yaml") if not isinstance(t, LitmusError)]
    bad = []
    for t in tests:
        try:
            u = UnionSession(t, model, engine=engine, loops=True)
            if u.refuted:
                stats["refuted"] = stats.get("refuted", 0) + 1
        except ERRORS as e:
            stats[type(e).__name__] = stats.get(type(e).__name__, 0) + 1
        if quiet_mbarriers(t):
            stats["quiet"] = stats.get("quiet", 0) + 1
        got, want = hang_answer(t, model, engine, True), hang_answer(t, model, engine, False)
        if not isinstance(got, str) and got[0]:
            stats["hang"] = stats.get("hang", 0) + 1
        if got != want and not (isinstance(got, str) or isinstance(want, str)):
            bad.append(f"hang: refuted {got} reference {want}")
        default = flags(t, model, engine)
        ref = flags(t, model, engine, quiet=False, refute=False, extend=False)
        if default[0] != ref[0] and not (isinstance(default[0], str) or isinstance(ref[0], str)):
            what = "flags" if {f for f, _ in default[0]} != {f for f, _ in ref[0]} else "reasons"
            bad.append(f"{what}: default {default} reference {ref}")
        if default[0] and not isinstance(default[0], str):
            stats["undefined"] = stats.get("undefined", 0) + 1
            for f in sorted({f for f, _ in default[0]}):
                stats[f] = stats.get(f, 0) + 1
        if default[1]:          # the lemma applied: also against extend=False alone
            stats["lemma"] = stats.get("lemma", 0) + 1
            if default[0]:
                stats["lemma+undefined"] = stats.get("lemma+undefined", 0) + 1
            noext = flags(t, model, engine, extend=False)
            if default[0] != noext[0] and not isinstance(noext[0], str):
                what = "flags" if {f for f, _ in default[0]} != {f for f, _ in noext[0]} else "reasons"
                bad.append(f"{what}: extend {default} extend=False {noext}")
    return bad


def main(argv):
    from tests.unfold.test_ub_variants import MODEL
    seed, n = int(argv[1]), int(argv[2])
    engine = argv[3] if len(argv) > 3 else "z3"
    start = int(argv[4]) if len(argv) > 4 else 0
    rng = random.Random(seed)
    stats: dict = {}

    class Slow(Exception):
        pass

    def alarm(*_):
        raise Slow()
    signal.signal(signal.SIGALRM, alarm)
    for k in range(n):
        text = generate(rng, f"Fuzz{seed}x{k}")
        if k < start:
            continue
        signal.alarm(60)            # (a case over a minute is left: counted, its text printed)
        try:
            bad = compare(text, MODEL, engine, stats)
        except (Slow, *ERRORS) as e:
            print(k, "error", type(e).__name__, e, flush=True)
            print(text)
            continue
        finally:
            signal.alarm(0)
        print(k, "DIFF" if bad else "ok", stats, flush=True)
        if bad:
            print(text)
            for b in bad:
                print("   ", b)
    return stats


if __name__ == "__main__":
    main(sys.argv)
