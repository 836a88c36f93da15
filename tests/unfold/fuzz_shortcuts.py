"""A small random generator of hang-question litmus tests in the shapes the hang question's
shortcuts target (checker/verdict/stops.py's refuter, quiet.py's quiet mbarriers, extension.py's
lemma: docs/model.md#a18), and the comparison of each shortcut with its reference:

- the hang answer (found hangs, complete, never terminates) with `refute=True` and `refute=False`;
- the undefined-behaviour flags, with their reasons, of the default search (quiet mbarriers, the
  extension lemma) and of the reference (`quiet=False, refute=False, extend=False`), and where
  the lemma applied, of `extend=True` against `extend=False` (the lemma alone).

Four shapes (`generate`): 30 % "balanced" (each mbarrier's phase 0 completed by its count of
arrivals, some with a bulk copy's transaction, awaited in other threads, data written before an
arrive and read after a wait, in 32 or 16 bits; now and then one arrival too many or too few, a
wait for parity 1, an await written as a `bra` loop or an `== 0` observation): the shape in which
the extension lemma applies; 45 % "freeing" (`freeing`: tests/unfold/test_stops.py's
FreeingRange drawn at random, a member of MB_RANGE / MB_SKIP / MB_STALE that may free an await
the complete variants keep, or a hang: the lemma's conditions (6) and (7), and (1)-(3) now and
then); 17 % "mixed" (2-3 threads of one CTA, 1-2 mbarriers declared initialised or initialised
by P0 before a bar.sync that every thread, or only some, passes; arrive / arrive.expect_tx /
arrive_drop / expect_tx / bulk copies completing on an mbarrier / cp.async's arrive-on, with and
without .noinc; try_wait.parity awaits for the right, a wrong or a skipped phase, with and
without .acquire / .relaxed; plain and release/acquire data accesses and fences; sometimes an
inval at the end, after a bar.sync that every thread, or only some, reaches); 8 % "tmem" (a
Tensor Memory allocation around an await: condition (8)). bench/fuzz_mutants.py measures which
of the shortcuts' conditions the comparison catches when dropped (bench/RESULTS.md).

Run by hand for a long campaign: `python -m tests.unfold.fuzz_shortcuts SEED N [z3|brute [FROM]]`;
tests/unfold/test_fuzz_shortcuts.py runs a fixed seed's few cases."""
from __future__ import annotations

import random
import signal
import sys

from checker.errors import LimitExceeded, LitmusError, NeverCompletes, SolverUnknown
from checker.isa import mbarrier

SEMS_ARRIVE = ["", ".release.cta"]
SEMS_WAIT = ["", ".acquire.cta", ".relaxed.cta"]


def generate(rng: random.Random, name: str = "Fuzz") -> str:
    """One test's YAML text: the extension lemma's shapes (balanced: its conditions mostly hold;
    freeing: an await that value-dependent undefined behaviour may free, condition (7)), a random
    mix, or a Tensor Memory allocation around an await (condition (8))."""
    k = rng.random()
    if k < 0.30:
        return balanced(rng, name)
    if k < 0.75:
        return freeing(rng, name)
    if k < 0.92:
        return mixed(rng, name)
    return tmem(rng, name)


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


def _text(name, nt, mbs, counts, declared, bulk, threads, cp=False, arch="sm_90", extra=()):
    out = [f"- name: {name}", f"  arch: {arch}", "  memory:"]
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
    out += [f"    {e}" for e in extra]
    out.append("  threads:")
    for i, code in enumerate(threads):
        out += [f"    P{i}:", f"      at: gpu0.cta0.warp{i}", "      code:"]
        out += [f'        - "{c}"' if c.startswith("@") or c.endswith(":") else f"        - {c}" for c in code] \
            or ["        - fence.acq_rel.cta"]
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
                threads[i].append(rng.choice(["st.global.u32 [x], 1", "st.shared.u32 [d], 1", "st.shared.b16 [d], 1"]))
            if rng.random() < 0.2:
                bulk = True
                threads[i].append(f"mbarrier.arrive.expect_tx{rng.choice(SEMS_ARRIVE)}.shared::cta.b64 _, [{m}], 16")
                threads[rng.randrange(nt)].append(BULK.format(m=m))
            else:
                threads[i].append(f"mbarrier.arrive{rng.choice(SEMS_ARRIVE)}.shared::cta.b64 _, [{m}]")
        for _ in range(rng.choice([1, 1, 2])):
            i = rng.choice([j for j in range(nt) if j != producers[m]])
            par = 1 if rng.random() < 0.1 else 0
            wait = WAIT.format(sem=rng.choice(SEMS_WAIT), p=f"p{reg}", m=m, par=par)
            k = rng.random()
            if k < 0.06:            # a loop, not an await (the lemma's condition (1))
                threads[i] += [f"W{reg}:", wait[:-5], f"@!p{reg} bra W{reg}"]
            elif k < 0.12:          # an observation that the phase has not completed (`== 0`)
                threads[i].append(wait[:-5] + " == 0")
            else:
                threads[i].append(wait)
            reg += 1
            if rng.random() < 0.5:
                threads[i].append(rng.choice([f"ld.global.u32 r{reg}, [x]", f"ld.shared.u32 r{reg}, [d]",
                                              f"ld.shared.b16 r{reg}, [d]"]))
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


# what the member thread does to r in `freeing` (value-dependent undefined behaviour or not)
MEMBERS = ["range"] * 3 + ["skip"] * 3 + ["tx"] * 2 + ["none"] * 2 + ["hang"] * 2 + ["stale", "drop", "init", "parity"]
# a state token of phase 3 (expected 2, pending 2, tx 0): stale against r's first two phases
TOKEN = 3 * mbarrier.PHASE + 2 * mbarrier.EXPECTED + 2 * mbarrier.PENDING + mbarrier.TX0
ARRIVE = "mbarrier.arrive{sem}.shared::cta.b64 _, [{m}]"
WAIT = "mbarrier.try_wait.parity{sem}.shared::cta.b64 {p}, [{m}], {par} == 1"


def freeing(rng: random.Random, name: str) -> str:
    """tests/unfold/test_stops.py's FreeingRange drawn at random (the extension lemma's condition
    (7), docs/model.md#a18): a writer stores x and releases m; a victim waits for m's phase 0,
    stores x in another size (or the same), waits on w, and (mostly) arrives on r, which puts its
    wait on m in the causal past of the member's operation on r; one thread releases w (count 1,
    or 2 and one arrival: a hang, condition (6)); a member does to r something that may be
    value-dependent undefined behaviour: an over-arrival beyond the pending count (MB_RANGE), one
    arrival too many (a later phase: MB_SKIP), a state token's wait (MB_STALE), a complete-tx
    beyond the expected transactions (MB_RANGE), an arrive_drop of too many, an init with count
    a register (0 or not, read from memory), or nothing undefined (a plain arrive, a wait for a parity). Now and then the roles share a
    thread, the mbarriers are initialised in P0 (racing the others, or after a bar.sync), or the
    victim's awaits are written as loops (`bra`: condition (1)) or it polls a flag (an `ld` await),
    r is made not quiet (initialised twice, read as data: condition (3)) or invalidated (condition
    (2)), or the writer never arrives on m (only undefined behaviour frees the victim's wait: the
    refuter's freeing premise, checker/verdict/stops.py)."""
    nt = rng.choice([3, 3, 4])
    threads = [[] for _ in range(nt)]
    member = rng.choice(MEMBERS)
    cw = 2 if member == "hang" or rng.random() < 0.05 else 1
    cr = rng.choice([1, 2])
    mbs = ["m", "w", "r"]
    counts = {"m": 1, "w": cw, "r": cr}
    declared = rng.random() < 0.75
    if member == "init":
        declared = False
    _head(rng, nt, mbs, counts, declared, threads, race=0.15)
    if member == "init":        # (r's init by the member instead, with count 0: out of range)
        threads[0].remove(f"mbarrier.init.shared::cta.b64 [r], {cr}")
    # (the writer's and the victim's stores ordered by m mostly, in two sizes mostly: a race
    # only where the wait on m is freed; unordered now and then, or where the test hangs)
    sync = 0.5 if member == "hang" else 0.9
    # (no qualifier: acquire and release, as written out)
    acq = lambda: rng.choice([".acquire.cta", ""]) if rng.random() < sync else ".relaxed.cta"  # noqa: E731
    rel = lambda: rng.choice([".release.cta", ""]) if rng.random() < sync else ".relaxed.cta"  # noqa: E731
    big, small = rng.choice([(32, 16), (32, 16), (32, 16), (16, 32), (16, 8)]
                            + [(32, 32)] * (member != "hang"))
    space = rng.choice(["shared", "shared", "global"])
    loc = "d" if space == "shared" else "x"
    threads[0].append(f"st.{space}.b{big} [{loc}], 2")
    if rng.random() < 0.9:          # (else m never completes: only undefined behaviour frees its wait)
        threads[0].append(ARRIVE.format(sem=rel(), m="m"))
    reg = 0
    form = rng.random()
    extra = []
    for mb in ("m", "w"):
        if form < 0.06 and mb == "w":        # the wait on w a loop: no await (condition (1))
            threads[1] += [f"W{reg}:", WAIT.format(sem=acq(), p=f"p{reg}", m=mb, par=0)[:-5],
                           f"@!p{reg} bra W{reg}"]
        elif form < 0.12 and mb == "w":      # a flag polled in place of the wait on w (an `ld` await)
            threads[1].append(f"ld.acquire.gpu.global.u32 r{reg}, [f] == 1")
            extra = ["f: {space: global}"]
        else:
            threads[1].append(WAIT.format(sem=acq(), p=f"p{reg}", m=mb, par=0))
        reg += 1
        if mb == "m":
            threads[1].append(f"st.{space}.b{small} [{loc}], 1")
    if rng.random() < 0.9:
        threads[1].append(ARRIVE.format(sem=rel(), m="r"))
    others = [i for i in range(nt) if i != 1]
    releaser = rng.choice(others[1:])
    threads[releaser].append("st.release.gpu.global.u32 [f], 1" if extra else ARRIVE.format(sem=rel(), m="w"))
    if extra and cw == 1:
        threads[releaser].append(ARRIVE.format(sem=rel(), m="w"))
    t = threads[rng.choice(others)]
    bulk = False
    if member == "range":
        t.append(f"mbarrier.arrive.shared::cta.b64 _, [r], {cr + rng.choice([1, 1, 2])}")
    elif member == "skip":
        t += [ARRIVE.format(sem=rel(), m="r")] * (cr + 1)
    elif member == "stale":
        t += rng.choice([["mbarrier.arrive.shared::cta.b64 st, [r]", "mbarrier.test_wait.shared::cta.b64 q, [r], st == 0"],
                         ["mbarrier.arrive.shared::cta.b64 st, [r]", "mbarrier.try_wait.shared::cta.b64 q, [r], st == 1"],
                         [f"mov.b64 st, {TOKEN}", "mbarrier.try_wait.shared::cta.b64 q, [r], st == 1"]])
    elif member == "tx":
        bulk = True
        if rng.random() < 0.5:
            t.append("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [r], 16")
        t += [BULK.format(m="r")] * rng.choice([1, 2])
    elif member == "drop":
        t.append(f"mbarrier.arrive_drop.shared::cta.b64 _, [r], {cr + 1}")
    elif member == "init":
        t[:0] = ["ld.global.u32 rc, [k]", "mbarrier.init.shared::cta.b64 [r], rc"]
        t.append(ARRIVE.format(sem="", m="r"))
        extra = extra + [f"k: {rng.choice([0, 0, cr])}"]
    elif member in ("none", "hang"):
        t += [ARRIVE.format(sem=rel(), m="r")] * (cr - 1)
    else:
        t.append(WAIT.format(sem=acq(), p="pp", m="r", par=rng.choice([0, 1])))
    k = rng.random()
    if k < 0.06:                    # r not quiet (condition (3)): initialised again, read as data
        threads[rng.choice(others)].append(f"mbarrier.init.shared::cta.b64 [r], {cr}")
    elif k < 0.12:
        threads[rng.randrange(nt)].append("ld.shared.b64 rr, [r]")
    elif k < 0.16:                  # or invalidated at the end (condition (2))
        threads[rng.choice(others)].append("mbarrier.inval.shared::cta.b64 [r]")
    return _text(name, nt, mbs, counts, declared, bulk, threads, extra=extra)


def tmem(rng: random.Random, name: str) -> str:
    """A Tensor Memory allocation around an await (the extension lemma's condition (8)): P0
    allocates, (perhaps relinquishes the permit,) waits for m's phase 0, which P1 completes after
    a store, and deallocates, or P1 deallocates after its own wait (another warp), or nobody does
    (a leak), or P0 allocates again (more columns, or after relinquishing)."""
    threads = [[], []]
    c1 = rng.choice([32, 64])
    alloc = "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [sA], {c}"
    dealloc = "tcgen05.dealloc.cta_group::1.sync.aligned.b32 [tD], {c}"
    threads[0].append(alloc.format(c=c1))
    if rng.random() < 0.2:
        threads[0].append("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned")
    threads[0].append(WAIT.format(sem=rng.choice([".acquire.cta", ""]), p="p0", m="m", par=rng.choice([0, 0, 0, 1])))
    threads[1] += [rng.choice(["st.shared.b32 [d], 1", "st.shared.b16 [d], 1"]),
                   ARRIVE.format(sem=rng.choice([".release.cta", ""]), m="m")]
    k = rng.random()
    if k < 0.5:
        threads[0].append(dealloc.format(c=c1))
    elif k < 0.7:
        threads[1] += [WAIT.format(sem=".acquire.cta", p="p1", m="w", par=0), dealloc.format(c=c1)]
        threads[0].append(ARRIVE.format(sem=".release.cta", m="w"))
    elif k < 0.85:
        threads[0] += [dealloc.format(c=c1), alloc.format(c=rng.choice([32, 64, 128])), dealloc.format(c=c1)]
    if rng.random() < 0.5:
        threads[0].append(rng.choice(["ld.shared.b32 r0, [d]", "ld.shared.b16 r0, [d]"]))
    counts = {"m": 1, "w": 1}
    return _text(name, 2, ["m", "w"], counts, True, False, threads, arch="sm_100a",
                 extra=["sA: {space: shared, owner: gpu0.cta0}", "tD: {space: tensor, owner: gpu0.cta0}"])


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
        flagged = sorted({(f.flag, f.why) for f in u.undefined})
        return flagged, u.extension_why is None, condition(u.extension_why)
    except ERRORS as e:
        return type(e).__name__, False, None


# the words of UnionSession.extension_why (checker/verdict/union.py, extension.py) by the
# condition of docs/model.md#a18 that failed first ("-": not asked, the test has no await)
CONDITIONS = [("-", ("not asked",)), ("(1)", ("labels", ": bra", "is no `== 1` wait", "an unroll below")), ("(2)", ("mbarrier.inval",)),
              ("(3)", ("not quiet",)), ("(5)", ("another model",)), ("(6)", ("hang question",)),
              ("(8)", ("tcgen05.",)),
              ("(7)", ("ranges", "later phase", "state token", "not an RMW", "out of range", "cannot be lowered",
                       "subsets", "states of", "MbarrierRange member"))]


def condition(why: str | None) -> str | None:
    """Which of the lemma's conditions `why` (UnionSession.extension_why) names (None: it applied)."""
    if why is None:
        return None
    return next((c for c, words in CONDITIONS if any(w in why for w in words)), "other")


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
        if not (isinstance(default[0], str) or isinstance(ref[0], str)):
            stats["compared"] = stats.get("compared", 0) + 1     # (both answered: flags compared)
        if default[0] != ref[0] and not (isinstance(default[0], str) or isinstance(ref[0], str)):
            what = "flags" if {f for f, _ in default[0]} != {f for f, _ in ref[0]} else "reasons"
            bad.append(f"{what}: default {default} reference {ref}")
        if default[0] and not isinstance(default[0], str):
            stats["undefined"] = stats.get("undefined", 0) + 1
            for f in sorted({f for f, _ in default[0]}):
                stats[f] = stats.get(f, 0) + 1
        if default[2]:          # which of the lemma's conditions failed first
            stats[f"why{default[2]}"] = stats.get(f"why{default[2]}", 0) + 1
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
