"""The freeing condition of the extension lemma (docs/model.md#a18, "Stopping choices and undefined
behaviour"): shown from the test's text and each thread's paths lowered alone, without a Session,
that no value-dependent undefined behaviour (relations.VALUE_SETS: MB_RANGE, MB_STALE, MB_SKIP) has
a member in any execution of any variant of the test. Then no execution is freed from an await or
guard (EventStructure.freeing frees only through a member), so every execution of a stopping
variant satisfies its awaits and guards, which is what the lemma's argument needs.

- MB_STALE: its members are the waits with a state token (checker.isa.mbarrier, lower_mbarrier: a
  `.parity` wait adds none); any member in a thread's lowering fails the condition.
- MB_RANGE: each member is an RMW's write (or an init with a register count) with the lowering's
  own expression of the state it reads. The state an RMW on mbarrier M reads is, in every execution
  (axioms alone, undefined behaviour or not), a state of a write that is not an RMW (M's initial
  write, its init) folded through a sequence of distinct RMWs of the variant: the chain of sources
  (each RMW's write depends on its read, `dep`) has no cycle (NoThinAir, axioms/ptx.cat:482) and ends
  at a write that is not an RMW, every write to M being an init, the initial write or such an RMW
  (checked here). So every state read is reached below by folding, from each such start, every
  sequence of the RMWs any variant of the test has (a thread's most of each update over its paths,
  all threads together: a variant's RMWs are among them), with the update expression the lowering
  gives each (evaluated, not re-implemented); the condition fails if the member's expression is
  non-zero on any state so reached.
- MB_SKIP: a member is an arrive-on that reads a state past its lifetime's first phase
  (mbarrier._skipped_phases: its expression is 0 when the phase read is the lifetime's first,
  whatever the waits read); a thread lowered alone may leave an arrive-on without its term (the
  other threads' arrivals are not counted there), so every RMW is taken as an arrive-on, and the
  condition fails if any reached state past the start's phase is read by an RMW.
Past _STATES states at one point of one mbarrier's fold, or _VECTORS multisets of its operations,
the condition is not shown (it fails). Where this order-free fold fails on some mbarriers, they are
folded again in the orders the awaits that no possible member can free keep (_ordered: a greatest
fixpoint over the members that may fire; docs/model.md#a18, "Condition (7) in the orders the
awaits keep")."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from itertools import product
from math import prod

from .. import limits
from ..errors import LimitExceeded, LitmusError, NeverCompletes
from ..isa import barriers
from ..isa.mbarrier import LIMIT, PENDING, PHASE, describe, fields, pack
from ..isa.registry import lower
from ..model import relations
from ..model.values import evaluate, reads_of
from ..unfold.paths import WAITS

_STATES = 4096          # past this many states at one point of one mbarrier's fold: not shown
_VECTORS = 1 << 16      # past this many multisets of one mbarrier's operations: not shown


def members_excluded(test, lim, per) -> str | None:
    """None when no member of a value-dependent undefined behaviour can be one in any execution of
    a variant whose threads run paths of `per` (per thread, its paths: checker.unfold.paths.Path);
    else why that is not shown (see the module)."""
    if set(relations.VALUE_SETS) != {"MB_RANGE", "MB_STALE", "MB_SKIP"}:
        return "a value-dependent set this condition was not written for"      # (read it first)
    lowered: list[list] = []
    for k, ps in enumerate(per):
        lowered.append([])
        # (a failed iteration of an mbarrier wait is a read and no write: the path without them has
        # the same writes, so the same members and updates; lowered once)
        for code in dict.fromkeys(p.without([r for r in p.rounds if p.code[r[0]].family in WAITS])[0]
                                  for p in ps):
            es = _lower_alone(test, lim, k, code)
            if isinstance(es, str):
                return es
            lowered[-1].append(es)
    # every location some thread uses as an mbarrier: all writes to it are read below
    mb = {ev.loc for ess in lowered for es in ess for ev in es.events if "MB" in ev.tags}
    ops: dict[str, Counter] = {}            # mbarrier location -> update key -> how many (all threads)
    updates: dict[str, dict] = {}           # mbarrier location -> update key -> (update, range check, ...)
    starts: dict[str, set[int]] = {}        # mbarrier location -> states of its writes that are no RMW
    for ess in lowered:
        most: dict[str, Counter] = {}
        for es in ess:
            got = _writes(es, mb)
            if isinstance(got, str):
                return got
            for loc, (counts, xs, ss) in got.items():
                most.setdefault(loc, Counter())
                for key, n in counts.items():
                    most[loc][key] = max(most[loc][key], n)
                updates.setdefault(loc, {}).update(xs)
                starts.setdefault(loc, set()).update(ss)
        for loc, counts in most.items():
            ops.setdefault(loc, Counter()).update(counts)
    failing: dict[str, str] = {}
    for loc in sorted(starts):
        why = _fold(loc, starts[loc], [(updates[loc][key], n) for key, n in sorted(ops.get(loc, Counter()).items())])
        if why is not None:
            failing[loc] = why
    if not failing:
        return None
    # the mbarriers whose order-free fold fails: folded again in the orders the awaits that no
    # possible member can free keep (_ordered; docs/model.md#a18, "Condition (7) in the orders")
    why = _ordered(test, lim, set(failing))
    if why is None:
        return None
    first = failing[min(failing)]
    return f"{first} (in the orders the awaits keep: {why})"


def failed_waits_unnamed(test, lim, quiet: frozenset[str], names: dict) -> str | None:
    """None when no flag names a failed iteration of an await on the mbarriers `quiet`, in any
    execution of any variant, given the extension lemma's conditions (no member of a
    value-dependent undefined behaviour, so no wait with a state token: MbarrierStaleToken names
    none; every await a `== 1` wait on a quiet mbarrier); else why that is not shown. Of the flags
    that can name such a failed iteration (docs/model.md#a18, "Failed iterations of an mbarrier
    wait"), MbarrierUninitialised is the one left: it names none where every operation on each of
    `quiet` is base-causality-after its one initialisation (_init_ordered, which reads program
    order: every thread straight-line, no guarded instruction) or the mbarrier is declared one in
    `memory:` (its initial write is its init, first in coherence). `names`: the lowering's location
    of each memory name."""
    th = _straight_threads(test, lim)
    if isinstance(th, str):
        return th
    declared = {names.get(m.name, m.name) for m in test.memory if m.mbarrier is not None}
    quiet = {names.get(n, n) for n in quiet}
    inited = {lc for x in th for _, lc in x["inits"]}
    for loc in sorted(quiet):
        if loc not in inited and loc not in declared:
            return f"{loc} has no mbarrier.init and is not declared an mbarrier"
    return _init_ordered(test, th, quiet)


def _lower_alone(test, lim, k: int, code):
    """Thread `k` running `code` alone, lowered (no barrier: they order nothing an RMW's update
    reads), or why it cannot be."""
    kept = tuple(i for i in code if i.family not in barriers.FAMILIES)
    th = replace(test.threads[k], code=kept, labels=())
    alone = replace(test, threads=(th,), expectations=(), expect_undefined=None, locations=(), filter=None,
                    expect_hang=None, unroll=None, barrier_generations=())
    try:
        with limits.use(lim):
            es = lower(alone)
    except (LitmusError, LimitExceeded, NeverCompletes) as e:
        return f"thread {th.name} cannot be lowered alone ({e})"
    if es.value_sets.get("MB_STALE"):
        return f"thread {th.name} waits on a state token (MbarrierStaleToken may free an await)"
    return es


def _writes(es, mb: set[str]) -> dict | str:
    """The writes of a thread lowered alone to the mbarrier locations `mb`: {location: (update key
    -> count, update key -> (update, range check, read, what), start states)}, or why the condition
    fails on them."""
    ranges = dict(es.value_sets.get("MB_RANGE", ()))
    rmw = {w: r for r, w in es.relations.get("rmw", ())}
    dep = es.relations.get("dep", frozenset())
    out: dict = {}
    for ev in es.events:
        if ev.kind != "W" or ev.loc not in mb:
            continue
        counts, xs, ss = out.setdefault(ev.loc, (Counter(), {}, set()))
        x = es.write_value[ev.eid]
        bad = ranges.pop(ev.eid, None)
        if ev.eid in rmw:
            r = rmw[ev.eid]
            if not ("MB" in ev.tags and reads_of(x) <= {r} and (r, ev.eid) in dep
                    and (bad is None or reads_of(bad) <= {r})):
                return f"{ev.label or ev.loc}: an RMW of an mbarrier whose state is not a function of its own read"
            key = repr((x, bad)).replace(f"ReadVal(eid={r})", "ReadVal(*)")
            counts[key] += 1
            xs[key] = (x, bad, r, ev.label or ev.loc)
        elif (ev.thread is None or "MB_INIT" in ev.tags) and not reads_of(x):
            # the initial write, or an init: a start of the fold
            if bad is not None and (reads_of(bad) or evaluate(bad, lambda e: 0) != 0):
                return f"{ev.label or ev.loc}: its count may be out of range (MbarrierRange may free an await)"
            ss.add(evaluate(x, lambda e: 0))
        else:
            return f"{ev.label or ev.loc}: a write to an mbarrier that is not an RMW of its own read"
    if ranges:
        return "an MbarrierRange member that is not an mbarrier RMW"
    return out


def _fold(loc: str, starts: set[int], groups: list) -> str | None:
    """Every state a sequence of distinct updates of `groups` ([((update, range check, read,
    what), count)]) reaches from each of `starts`: None when no update reads one on which its
    range check holds or that is past the start's phase; else which does."""
    counts = [n for _, n in groups]
    if prod(n + 1 for n in counts) > _VECTORS:
        return f"more than {_VECTORS} subsets of {loc}'s operations to fold"
    for s0 in sorted(starts):
        phase0 = fields(s0)[0]
        states = {tuple(0 for _ in groups): {s0}}
        for vec in sorted(product(*[range(n + 1) for n in counts]), key=sum):
            here = states.pop(vec, None)
            if not here:
                continue
            for i, ((x, bad, r, what), n) in enumerate(groups):
                if vec[i] >= n:
                    continue
                nxt = states.setdefault(vec[:i] + (vec[i] + 1,) + vec[i + 1:], set())
                for s in here:
                    def value(e, s=s, r=r):
                        if e != r:
                            raise KeyError(e)
                        return s
                    if s != 0 and fields(s)[0] != phase0:
                        return (f"{what} may read {loc} in a later phase ({describe(s)}): MbarrierSkippedPhase "
                                "may free an await")
                    if bad is not None and evaluate(bad, value) != 0:
                        return f"{what} may leave {loc}'s ranges from {describe(s)}: MbarrierRange may free an await"
                    nxt.add(evaluate(x, value))
                if len(nxt) > _STATES:
                    return f"more than {_STATES} states of {loc} to fold"
    return None


# -- condition (7) in the orders the awaits keep (docs/model.md#a18) --------------------------------

_SIM = 1 << 17          # past this many configurations of the ordered fold: not shown


def _ordered(test, lim, risky: set[str]) -> str | None:
    """None when no member of MB_RANGE or MB_SKIP on the mbarriers `risky` (those whose order-free
    fold fails) can be one in any execution of any variant, shown by a greatest fixpoint over the
    members that may fire (docs/model.md#a18, "Condition (7) in the orders the awaits keep"); else
    why that is not shown. Starting from every RMW of `risky` as a member that may fire, each round
    folds their RMWs in every order an execution can give them where every await that no member
    still possible can free (EventStructure.freeing: it lies in each one's may-causal past, in every
    variant that has both) holds; the members that fire in no order so found drop out, until none
    does. Premises, each checked here: straight-line threads (no guard), and every operation on
    each of `risky` base-causality-after its one initialisation (program order, or a first barrier
    generation that every thread's first barrier operation joins), so that every RMW reads its
    coherence predecessor and every wait a state of that chain."""
    th = _straight_threads(test, lim)
    if isinstance(th, str):
        return th
    # the mbarriers folded: `risky`, and those of the awaits that gate an operation on one folded
    # (their operations too: when such an await may read a completing state); members only on
    # `risky` (on the others the order-free fold shows none)
    every = [op for x in th for op in x["rmws"]]
    allwaits = [w for x in th for w in x["waits"]]
    why = _init_ordered(test, th, risky)
    if why is not None:
        return why
    starts = {}
    for loc in {op["loc"] for op in every} | {w["loc"] for w in allwaits}:
        ss = {s for x in th for s in x["starts"].get(loc, ())}
        if len(ss) == 1:
            starts[loc] = next(iter(ss))
    if any(loc not in starts for loc in risky):
        return "an mbarrier with no one starting state"
    # first each alone, in the orders its own waits keep (the others' ignored: fewer orders kept)
    first = [op for op in every if op["loc"] in risky]
    members = frozenset(op["id"] for op in first)
    risky = set(risky)
    for loc in sorted(risky):
        got = _simulate(th, [op for op in every if op["loc"] == loc], [w for w in allwaits if w["loc"] == loc],
                        {loc: starts[loc]}, members, first)
        if isinstance(got, str):
            return got
        if not got:
            risky.discard(loc)
    if not risky:
        return None
    folded = set(risky)
    while True:
        more = {w["loc"] for op in every if op["loc"] in folded
                for w in allwaits if w["k"] == op["k"] and w["at"] < op["at"]} - folded
        if not more:
            break
        folded |= more
    why = _init_ordered(test, th, folded)
    if why is not None:
        return why
    if any(loc not in starts for loc in folded):
        return "an mbarrier with no one starting state"
    ops = [op for op in every if op["loc"] in folded]
    waits = [w for w in allwaits if w["loc"] in folded]
    # mbarriers whose operations no await on another gates are folded apart: a configuration of
    # one part is the projection of an execution's (the others' operations done only make more
    # of each thread present, which makes fewer awaits freeable and more waits known to have read)
    part = {loc: loc for loc in folded}

    def find(loc):
        while part[loc] != loc:
            loc = part[loc]
        return loc
    for op in ops:
        for w in waits:
            if w["k"] == op["k"] and w["at"] < op["at"]:
                part[find(w["loc"])] = find(op["loc"])
    groups: dict = {}
    for loc in sorted(folded):
        groups.setdefault(find(loc), set()).add(loc)
    members = frozenset(op["id"] for op in ops if op["loc"] in risky and op["id"] in members)
    while True:
        fired: dict = {}
        for locs in groups.values():
            got = _simulate(th, [op for op in ops if op["loc"] in locs], [w for w in waits if w["loc"] in locs],
                            {loc: starts[loc] for loc in locs}, members, ops)
            if isinstance(got, str):
                return got
            fired.update(got)
        left = members & set(fired)
        if not left:
            return None
        if left == members:
            return fired[min(left)]
        members = frozenset(left)


def _straight_threads(test, lim) -> list[dict] | str:
    """_thread_info of every thread, or why not: a guarded instruction (the readings of program
    order here take each thread as straight-line), or a thread that cannot be lowered alone."""
    th = []
    for k, t in enumerate(test.threads):
        if any(i.predicate for i in t.code):
            return f"thread {t.name} has a guarded instruction (program order is read straight-line here)"
        info = _thread_info(test, lim, k)
        if isinstance(info, str):
            return info
        th.append(info)
    return th


def _thread_info(test, lim, k: int) -> dict | str:
    """Thread `k`'s code lowered alone: its mbarrier reads and writes by the position of their
    instruction (the issue, for an asynchronous operation) in the thread's code, its RMWs (update,
    range check, asynchronous or not, arrive-on or not), its `== 1` waits with the expression of
    their completion, its stopping points (awaits and barrier operations: where a variant may cut
    it) and the states of its inits."""
    t = test.threads[k]
    kept = [j for j, i in enumerate(t.code) if i.family not in barriers.FAMILIES]
    es = _lower_alone(test, lim, k, t.code)
    if isinstance(es, str):
        return es
    ranges = dict(es.value_sets.get("MB_RANGE", ()))
    rmw = {w: r for r, w in es.relations.get("rmw", ())}
    done = {next(iter(reads_of(x))): x for x, v in es.guards if v == 1 and len(reads_of(x)) == 1}
    out: dict = {"name": t.name, "k": k, "reads": [], "writes": [], "rmws": [], "waits": [], "starts": {},
                 "stops": sorted(j for j, i in enumerate(t.code)
                                 if i.await_value is not None or i.family in barriers.FAMILIES),
                 "inits": [], "mb": set(), "code": t.code}
    for ev in es.events:
        if "MB" not in ev.tags or ev.thread is None:
            if "MB" in ev.tags and ev.kind == "W" and not reads_of(es.write_value[ev.eid]):
                out["starts"].setdefault(ev.loc, set()).add(evaluate(es.write_value[ev.eid], lambda e: 0))
            continue
        at = kept[ev.index]
        out["mb"].add(ev.loc)
        if ev.kind == "R":
            out["reads"].append((at, ev.loc))
            if ev.eid in done and ev.eid not in rmw.values():
                out["waits"].append({"k": k, "at": at, "loc": ev.loc, "done": done[ev.eid], "r": ev.eid})
        elif ev.kind == "W":
            out["writes"].append((at, ev.loc))
            x = es.write_value[ev.eid]
            if ev.eid in rmw:
                out["rmws"].append({"id": (k, ev.eid), "k": k, "at": at, "loc": ev.loc, "x": x,
                                    "bad": ranges.get(ev.eid), "r": rmw[ev.eid], "sync": "ACOMPL" not in ev.tags,
                                    "arrive": _arrive_on(x, rmw[ev.eid]),
                                    "what": f"{t.name}: {ev.label or t.code[at].text}"})
            elif "MB_INIT" in ev.tags and not reads_of(x):
                out["inits"].append((at, ev.loc))
                out["starts"].setdefault(ev.loc, set()).add(evaluate(x, lambda e: 0))
    return out


def _arrive_on(x, r: int) -> bool:
    """Is the RMW whose update is `x` (of its read `r`) an arrive-on (MB_SKIP may name it)? It is
    not only where, on a state with every count at its limit, the update leaves the pending count
    and the phase as they were (an expect-tx or complete-tx); where that cannot be evaluated, it
    is taken as one."""
    probe = pack(0, LIMIT, LIMIT, 0)
    try:
        probe = evaluate(probe, _missing)
        after = evaluate(x, lambda e: probe if e == r else _missing(e))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):       # (a count a register gives)
        return True
    return fields(after)[:3] != fields(probe)[:3]


def _init_ordered(test, th: list, risky: set[str]) -> str | None:
    """Why some operation on one of `risky` may not be base-causality-after the mbarrier's
    initialisation in every execution (None: each is). The initialising thread's later operations
    are (program order); another thread's after its first barrier operation are when every
    thread's first barrier operation is a `bar.sync` (arrive and wait) on one barrier whose count
    is every thread's, and the initialising thread's comes after the init: its first generation
    then has each thread's first arrival, the initialising thread's included (syncbar), as
    stops._after reads it. A `memory:` mbarrier (no init instruction) starts initialised: its
    initial write is first in coherence."""
    per = barriers.uses(test)
    firsts = [per.get(t.name, [None])[0] if per.get(t.name) else None for t in test.threads]
    keys = {(u.key, u.kind) for u in firsts if u is not None}
    need = firsts[0].need if firsts and firsts[0] is not None else None
    shared = (None not in firsts and len(keys) == 1 and next(iter(keys))[1] == "sync"
              and (need is None or need == sum(u.weight for u in firsts)))
    for loc in sorted(risky):
        inits = [(x["k"], at) for x in th for at, lc in x["inits"] if lc == loc]
        if not inits:
            continue
        if len(inits) > 1:
            return f"{loc} is initialised more than once"
        k0, j0 = inits[0]
        for x in th:
            ats = [at for at, lc in x["reads"] + x["writes"] if lc == loc and (x["k"], at) != (k0, j0)]
            if not ats:
                continue
            if x["k"] == k0 and min(ats) > j0:
                continue
            if shared and firsts[k0].index > j0 and firsts[x["k"]].index < min(ats):
                continue
            return f"thread {x['name']} may operate on {loc} before its init in base causality"
    return None


def _simulate(th: list, ops: list, waits: list, starts: dict, members: frozenset, every: list):
    """The members of `members` that fire in some order of `ops` (see _ordered): {op id: why}, or
    why the fold is not shown. A configuration: the operations done, each mbarrier's state (the last
    of its coherence chain), and per wait the states of the chain so far that complete it (a wait
    reads some state of the chain before it). An operation may come next when each earlier
    synchronous operation of its thread on its mbarrier is done (SCPerLocation) and each earlier
    await of its thread has a completing state, or may be freed: some member still possible has it
    outside its may-causal past, in every variant with the operations done so far (_freeable)."""
    locs = sorted(starts)
    li = {loc: n for n, loc in enumerate(locs)}
    wi = {(w["k"], w["at"]): n for n, w in enumerate(waits)}
    byloc: dict = {}
    for n, w in enumerate(waits):
        byloc.setdefault(w["loc"], []).append(n)
    readers = [x["reads"] for x in th]
    writers: dict = {}
    for x in th:
        for at, loc in x["writes"]:
            writers.setdefault(loc, []).append((x["k"], at))
    past_cache: dict = {}

    def reach(m, ext):
        """How far into each thread the may-causal past of member `m` reaches, in every variant
        whose threads run at least to `ext` (and m's to m)."""
        key = (m["id"], ext)
        if key in past_cache:
            return past_cache[key]
        end = [_next_stop(x["stops"], ext[x["k"]], len(x["code"])) for x in th]
        end[m["k"]] = max(end[m["k"]], _next_stop(th[m["k"]]["stops"], m["at"], len(th[m["k"]]["code"])))
        got = [-1] * len(th)
        got[m["k"]] = m["at"]
        changed = True
        while changed:
            changed = False
            for k, rs in enumerate(readers):
                for at, loc in rs:
                    if at > got[k]:
                        continue
                    for k2, i2 in writers.get(loc, ()):
                        if i2 < end[k2] and i2 > got[k2]:
                            got[k2] = i2
                            changed = True
        past_cache[key] = tuple(got)
        return past_cache[key]

    cands = [op for op in every if op["id"] in members]

    def freeable(w, ext) -> bool:
        return any(_outside(reach(m, ext), w) for m in cands)

    gating = {op["id"]: [wi[(w["k"], w["at"])] for w in waits if w["k"] == op["k"] and w["at"] < op["at"]]
              for op in ops}
    before = {op["id"]: [n for n, o in enumerate(ops) if o["sync"] and op["sync"] and o["k"] == op["k"]
                         and o["loc"] == op["loc"] and o["at"] < op["at"]] for op in ops}
    # a wait reads no state coherence-before one that an earlier operation of its thread on the
    # same mbarrier wrote or read (SCPerLocation): it may read the chain's states only from the
    # last write of its earlier synchronous RMWs there, and from the first state that completes
    # each earlier wait there (which read one at or after it)
    order = sorted(range(len(waits)), key=lambda n: (waits[n]["k"], waits[n]["at"]))
    prior_ops = [[i for i, o in enumerate(ops) if o["sync"] and o["k"] == w["k"] and o["loc"] == w["loc"]
                  and o["at"] < w["at"]] for w in waits]
    prior_waits = [[n2 for n2, w2 in enumerate(waits) if w2["k"] == w["k"] and w2["loc"] == w["loc"]
                    and w2["at"] < w["at"]] for w in waits]

    def completing(done, comp, loc, s):
        comp = list(comp)
        for n in order:
            w = waits[n]
            if w["loc"] == loc and all(i in done for i in prior_ops[n]) and all(comp[p] for p in prior_waits[n]) \
                    and _completes(w, s):
                comp[n] = comp[n] | {s}
        return tuple(comp)

    fired: dict = {}
    comp0 = tuple(frozenset() for _ in waits)
    for loc in locs:
        comp0 = completing(frozenset(), comp0, loc, starts[loc])
    # `freed`: the waits an operation done went past without a completing state: an execution
    # with these operations frees each (some member still possible has it outside its may-causal
    # past in its variant, which runs its threads at least as far as the operations done), so a
    # configuration where that no longer holds, with more operations done, is no execution's
    start = (frozenset(), tuple(starts[loc] for loc in locs), comp0, frozenset())
    seen = {start}
    todo = [start]
    while todo:
        done, states, comp, freed = todo.pop()
        base = [-1] * len(th)
        for n in done:
            base[ops[n]["k"]] = max(base[ops[n]["k"]], ops[n]["at"])
        for n, op in enumerate(ops):
            if n in done or any(b not in done for b in before[op["id"]]):
                continue
            ext = list(base)
            ext[op["k"]] = max(ext[op["k"]], op["at"])
            ext = tuple(ext)
            now = freed | {g for g in gating[op["id"]] if not comp[g]}
            if not all(freeable(waits[g], ext) for g in now):
                continue
            loc = op["loc"]
            v = states[li[loc]]
            why = _fires(op, v, waits, byloc.get(loc, ()), comp, ext, freeable)
            if why is not None and op["id"] in members:
                fired.setdefault(op["id"], why)
            new = evaluate(op["x"], lambda e, v=v, r=op["r"]: v if e == r else _missing(e))
            ns = states[:li[loc]] + (new,) + states[li[loc] + 1:]
            nc = completing(done | {n}, comp, loc, new)
            cfg = (done | {n}, ns, nc, frozenset(now))
            if cfg not in seen:
                seen.add(cfg)
                if len(seen) > _SIM:
                    return f"more than {_SIM} configurations of the ordered fold"
                todo.append(cfg)
    return fired


def _outside(reached: tuple, w) -> bool:
    """Is wait `w` outside a may-causal past that reaches each thread's instructions up to
    `reached` (the wait then may be freed by that member)?"""
    return reached[w["k"]] < w["at"]


def _next_stop(stops: list, at: int, end: int) -> int:
    """The first stopping point after position `at` (the thread's end if none): a variant that
    runs the thread past `at` runs it at least to there."""
    return next((s for s in stops if s > at), end)


def _missing(e):
    raise KeyError(e)


def _completes(w, s: int) -> bool:
    return evaluate(w["done"], lambda e: s if e == w["r"] else _missing(e)) != 0


def _fires(op, v: int, waits: list, mine: list, comp: tuple, ext: tuple, freeable) -> str | None:
    """Why `op` reading state `v` is a member (None: it is not): its range check holds
    (MB_RANGE), or it is an arrive-on past its lifetime's first phase and no wait is known to have
    read a state of that phase at or before `v` (MB_SKIP, mbarrier._skipped_phases: a wait on the
    same mbarrier that some operation done already follows in its thread, that no member still
    possible can free, and every state of the chain so far that completes it lies in
    [v without its tx-count, the next phase))."""
    if op["bad"] is not None and evaluate(op["bad"], lambda e: v if e == op["r"] else _missing(e)) != 0:
        return f"{op['what']} may leave {op['loc']}'s ranges from {describe(v)}: MbarrierRange may free an await"
    if not op["arrive"] or v == 0 or v // PHASE == 0:
        return None
    low, high = v // PENDING * PENDING, (v // PHASE + 1) * PHASE
    for n in mine:
        w = waits[n]
        if ext[w["k"]] > w["at"] and comp[n] and all(low <= s < high for s in comp[n]) and not freeable(w, ext):
            return None
    return f"{op['what']} may read {op['loc']} in a later phase ({describe(v)}): MbarrierSkippedPhase may free an await"
