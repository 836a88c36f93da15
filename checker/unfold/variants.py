"""A test -> its straight-line variants: one per combination of one control path per thread
(checker.unfold.paths) and one way its barrier operations meet (checker.isa.barriers).
A straight-line test whose barriers meet in exactly one way has one variant; lowering takes one
variant at a time (checker.isa.registry.lower), and checker.verdict.open_session asks a test over
all of its variants (herd's list of event structures per test, mem.ml glommed_event_structures)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from .. import limits
from ..ast import And, Cond, Const, Eq, EqRef, LitmusTest, MemRef, Not, Or, RegRef
from ..errors import LimitExceeded, LitmusError, NeverCompletes
from ..isa import address, registry
from ..isa import barriers
from . import paths


def needs_variants(test: LitmusTest) -> bool:
    """Is `test` asked over several straight-line variants: control flow, a hang expectation, or
    barriers whose generations are decided at run time (several ways, or one that never completes)?"""
    return test.expect_hang is not None or one_variant(test) is None


def one_variant(test: LitmusTest) -> LitmusTest | None:
    """`test` as its one straight-line variant, its barrier generations decided (explored here,
    once), or None when it has several (control flow, barriers that meet in several ways or
    block). A test whose barriers cannot be explored (a malformed count, too many ways) is
    returned as it is: lowering reports why."""
    if test.branches:
        return None
    if test.barrier_generations is not None or \
            not any(i.family in barriers.FAMILIES for t in test.threads for i in t.code):
        return test
    try:
        ways = barriers.schedules(test)
    except (LitmusError, LimitExceeded):
        return test
    if len(ways) != 1 or ways[0].blocked:
        return None
    return replace(test, barrier_generations=ways[0].generation)


def single(test: LitmusTest) -> LitmusTest:
    """`test` as its one straight-line variant, its barrier generations decided (explored here
    unless the test names them). NeverCompletes if its only schedule blocks; LitmusError if it has
    control flow or several schedules (then it has several variants: `variants`)."""
    if test.barrier_generations is not None:
        return test
    if test.branches:
        i = next((i for t in test.threads for i in t.code if i.op == "bra" or i.predicate), None)
        raise LitmusError("control flow (labels, bra, @p guards): the test has one straight-line variant per "
                          "control path (checker.unfold.variants)", i.where if i is not None else test.where)
    return replace(test, barrier_generations=barriers.chosen(test).generation)


@dataclass(frozen=True)
class Combo:
    test: LitmusTest                      # straight-line: one path per thread
    paths: tuple[paths.Path, ...]
    schedule: barriers.Schedule | None = None    # how its barrier operations meet (None: not decided yet)

    @property
    def cut(self) -> tuple[tuple[str, paths.Spin], ...]:
        return tuple((t.name, p.cut) for t, p in zip(self.test.threads, self.paths) if p.cut is not None)

    @property
    def stuck(self) -> bool:
        """Does a thread wait forever at a barrier in this combination's schedule?"""
        return self.schedule is not None and bool(self.schedule.blocked)

    def key(self) -> tuple | None:
        """What identifies this combination: every thread's code and, for a schedule whose threads
        all get past their barriers, the generation of each barrier operation (None when stuck)."""
        if self.stuck:
            return None
        gens = tuple(sorted(self.schedule.generation)) if self.schedule else ()
        return tuple(p.code for p in self.paths), gens, self.schedule is not None

    def describe(self) -> str:
        text = "; ".join(f"{t.name}: {p.describe()}" + (" (cut by the bound)" if p.cut else "")
                         for t, p in zip(self.test.threads, self.paths))
        if self.schedule is not None and self.schedule.choice:
            text += f"; {self.schedule.choice}"
        return text


def combos(test: LitmusTest, lim: limits.Limits, loops: bool = False, options=frozenset(),
           spin_once: bool = True, drop=None) -> list[Combo]:
    """Every combination of one control path per thread (`loops`: spin-wait awaits written as the
    loops they stand for, for the liveness question, each run once and cut there when
    `spin_once`, else unrolled like any loop (the reference the tests compare with);
    `options`: the model options). `drop`: a predicate on a combination that leaves it out (a
    stopping combination refuted without a Session: checker.verdict.stops); the combinations it
    leaves out do not count against the paths limit, and the product of the threads' paths may
    then reach REFUTABLE times that limit (each choice costs a barrier schedule, memoized, and the
    predicate; none is lowered here)."""
    per_thread = thread_paths(test, lim, loops, options, spin_once)
    total = 1
    for ps in per_thread:
        total *= len(ps)
    if total > lim.paths * (REFUTABLE if drop is not None else 1):
        raise LimitExceeded(f"too large: {total} combinations of control paths (raise it with --limit paths=N "
                            "or lower --unroll)")
    out: list[Combo] = []
    memo: dict = {}
    for choice in itertools.product(*per_thread):
        out += [c for c in of_choice(test, lim, choice, memo) if drop is None or not drop(c)]
        if len(out) > lim.paths:
            raise LimitExceeded(f"too large: more than {lim.paths} combinations of control paths and barrier "
                                "generations (raise it with --limit paths=N or lower --unroll)")
    return out


# With a predicate that leaves combinations out (combos' `drop`), the product of the threads' paths
# may be this many times the paths limit: only the combinations left count against the limit.
REFUTABLE = 100


def thread_paths(test: LitmusTest, lim: limits.Limits, loops: bool = False, options=frozenset(),
                 spin_once: bool = True, quiet: frozenset[str] = frozenset()) -> list[list[paths.Path]]:
    """Each thread's control paths, as `combos` combines them (unrolled await loops record the
    iterations that went round: Path.rounds; `quiet`: paths.split's filter of the paths with more
    than one failed iteration of waits on those mbarriers)."""
    unroll = test.unroll or lim.unroll
    with limits.use(lim):
        threads = [paths.await_loops(t) if loops else t for t in test.threads]
        return [paths.split(c, unroll, test, options,
                            paths.await_labels(c, t) if spin_once else frozenset(),
                            paths.await_labels(c, t) if loops and not spin_once else frozenset(), quiet)
                for c, t in zip(threads, test.threads)]


def of_choice(test: LitmusTest, lim: limits.Limits, choice: tuple[paths.Path, ...], memo: dict | None = None) \
        -> list[Combo]:
    """The combinations of one path per thread `choice`: one per way its barriers meet. `memo`:
    the ways already explored, by what they depend on (each thread's barrier operations, which
    threads spin), shared by the choices of one test."""
    threads = tuple(replace(t, code=p.code, labels=(), stops=p.cut is not None) for t, p in zip(test.threads, choice))
    straight = replace(test, threads=threads, expectations=(), expect_undefined=None, locations=(),
                       filter=None, unroll=None, expect_hang=None)
    spinning = frozenset(t.name for t, p in zip(test.threads, choice) if p.cut)
    try:
        with limits.use(lim):
            ways = _schedules(straight, spinning, memo)
    except NeverCompletes:
        return [Combo(straight, choice)]      # lowering it reports why
    return [Combo(truncated(straight, x), choice, x) if x.blocked else
            Combo(replace(straight, barrier_generations=x.generation), choice, x) for x in ways]


def _schedules(straight: LitmusTest, spinning: frozenset[str], memo: dict | None) -> list[barriers.Schedule]:
    """barriers.schedules(straight, spinning), through `memo`. The ways depend only on each
    thread's barrier operations (barriers.uses reads nothing else of the code) and on which
    threads spin: they are explored once on the test of those operations alone, then each
    operation's position in that test is mapped to its position in `straight`'s code."""
    if memo is None:
        return barriers.schedules(straight, spinning)
    at = [tuple(k for k, i in enumerate(t.code) if i.family in barriers.FAMILIES) for t in straight.threads]
    # (an instruction by what it is: the same barrier instruction on two paths is the same operation)
    key = (tuple(tuple(repr(t.code[k]) for k in ks) for t, ks in zip(straight.threads, at)), spinning)
    if key not in memo:
        alone = replace(straight, threads=tuple(replace(t, code=tuple(t.code[k] for k in ks))
                                                for t, ks in zip(straight.threads, at)))
        try:
            memo[key] = barriers.schedules(alone, spinning)
        except NeverCompletes as e:
            memo[key] = e.with_traceback(None)
    ways = memo[key]
    if isinstance(ways, NeverCompletes):
        raise ways
    where = {t.name: ks for t, ks in zip(straight.threads, at)}

    def moved(u: barriers.Use) -> barriers.Use:
        return replace(u, index=where[u.thread][u.index])
    return [replace(x, generation=tuple((t, where[t][i], g) for t, i, g in x.generation),
                    blocked=tuple(moved(u) for u in x.blocked), leftover=tuple(moved(u) for u in x.leftover))
            for x in ways]


def specialize(c: Cond, missing: set[str]) -> Cond:
    """`c` with each atom on a register the combination never writes decided (its value is 0)."""
    if isinstance(c, Eq):
        if isinstance(c.lhs, RegRef) and str(c.lhs) in missing:
            return Const(c.value == 0)
        return c
    if isinstance(c, EqRef):
        gone = [isinstance(r, RegRef) and str(r) in missing for r in (c.lhs, c.rhs)]
        if all(gone):
            return Const(True)
        return Eq(c.lhs, 0) if gone[1] else Eq(c.rhs, 0) if gone[0] else c
    if isinstance(c, Not):
        return Not(specialize(c.arg, missing))
    if isinstance(c, (And, Or)):
        return type(c)(tuple(specialize(a, missing) for a in c.args))
    return c


def ref(k: str):
    if ":" in k:
        t, r = k.split(":", 1)
        return RegRef(t, r)
    return MemRef(k)


def default_keys(es) -> set[str]:
    mbarriers = {ev.loc for ev in es.events if "MB" in ev.tags}
    atoms_of = {atom: root for root, parts in es.compose.items() for atom, _ in parts}
    # registers named __... are the spin loops' own (checker.unfold.paths.await_loops), not the test's
    return {f"{t}:{r}" for t, r in es.registers if not r.startswith("__")} | \
        {atoms_of.get(loc, loc) for loc, ws in es.final_writes.items() if len(ws) > 1 and loc not in mbarriers}


def without_barriers(test: LitmusTest) -> LitmusTest:
    """`test` with its CTA and cluster barriers removed (they only add constraints)."""
    threads = tuple(replace(t, code=tuple(i for i in t.code if i.op not in ("bar", "barrier")))
                    for t in test.threads)
    return replace(test, threads=threads, barrier_generations=None)


def written(test: LitmusTest) -> set[str]:
    """`thread:register` for every register an instruction of the test writes."""
    return {f"{t.name}:{r}" for t in test.threads for i in t.code for r in address.destinations(i, registry.family(i))}


def decided_at_run_time(test: LitmusTest) -> bool:
    """Must the test be judged schedule by schedule (several ways, or a blocked one)?"""
    if test.branches or test.barrier_generations is not None:
        return False
    if not any(i.family in barriers.FAMILIES for t in test.threads for i in t.code):
        return False
    try:
        all_ = barriers.schedules(test)
    except (LitmusError, LimitExceeded):
        return False            # reported when the test is built
    return len(all_) != 1 or bool(all_[0].blocked)


def truncated(test: LitmusTest, x: barriers.Schedule) -> LitmusTest:
    """`test` as far as a blocked schedule runs: each stuck thread stops before the barrier
    operation it never returns from."""
    stop = {u.thread: u.index for u in x.blocked}
    threads = tuple(replace(t, code=t.code[:stop[t.name]], stops=True) if t.name in stop else t for t in test.threads)
    gens = tuple((t, i, g) for t, i, g in x.generation if i < stop.get(t, 1 << 30))
    return replace(test, threads=threads, barrier_generations=gens)
