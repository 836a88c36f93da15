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
the condition is not shown (it fails)."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from itertools import product
from math import prod

from .. import limits
from ..errors import LimitExceeded, LitmusError, NeverCompletes
from ..isa import barriers
from ..isa.mbarrier import describe, fields
from ..isa.registry import lower
from ..model import relations
from ..model.values import evaluate, reads_of

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
        for code in dict.fromkeys(p.code for p in ps):
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
    for loc in sorted(starts):
        why = _fold(loc, starts[loc], [(updates[loc][key], n) for key, n in sorted(ops.get(loc, Counter()).items())])
        if why is not None:
            return why
    return None


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
