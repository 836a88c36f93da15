"""A kernel's threads -> roles -> its synchronization skeleton (a litmus test, as YAML text).

1. Every thread of every CTA of one cluster is run (checker.extract.interp) with its own
   `%tid`/`%cluster_ctarank`; threads whose synchronization is the same (same lines, same
   objects) form a *role*; one litmus thread stands for each role.
2. Objects: each shared variable is cut at the offsets its synchronization names (mbarriers,
   tensor-copy destinations and sources, wgmma operands): one location per piece (`full1` is
   the second mbarrier of `full`). Generic accesses inside a piece are accesses to it.
3. Counts are scaled so that phase and barrier accounting stay exact: a role of n threads
   arrives n times where the litmus thread arrives once, so an mbarrier's expected count and
   each arrival's count are divided by their common factor; a `bar.sync` count becomes the
   number of roles that take part (which must sum, in threads, to the count). Each tensor copy
   moves one 16-byte box from its own global buffer (value i+1 for copy i), and an `expect_tx`
   expects 16 bytes per copy that completes on its mbarrier before the next `expect_tx`.
4. Data checks: a generic read of a piece, after a wait on the mbarrier a tensor copy into that
   piece completes on, must see that copy's value (`forbidden: [role:r != v]`).

Every emitted instruction carries `// L<line>: <PTX text>`.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

from ..errors import SourceLoc
from ..isa.mbarrier import LIMIT as MB_LIMIT
from ..isa.syntax import render_instr
from .facts import Cond
from .interp import Event, Ident, Machine, Refused, Trace
from .memo import RunMemo
from .layout import Layout, Loc
from .module import Function, Module
from .reduce import reduce      # the exact reductions (a name here: tests compare with and without)

BOX = 16
BOXES = 8            # boxes of a loaded buffer: its initial value (a value per box) is at most 1024 bits
DATA = 0x77          # the value a generic store of data (not a constant) writes in the skeleton


@dataclass
class Line:
    """One emitted instruction, with where it came from and what a mutant may change."""

    text: str
    src_line: int
    src_text: str
    kind: str = ""                      # event kind
    mutable: dict = field(default_factory=dict)


@dataclass
class Role:
    name: str
    rank: int
    tids: list[int]
    trace: Trace
    mult: list[int] = field(default_factory=list)     # per event: how many PTX threads perform it
    lines: list[Line] = field(default_factory=list)
    # the threads folded into this role's litmus thread whose runs decided something of their own
    # (tids, their assumptions): the role table says them too
    folded: list = field(default_factory=list)
    # the threads whose run `trace` is (None: every thread of the role); the threads folded in
    # perform only a subsequence of it, so they do not perform its releases (_fold_keeps_order)
    performers: list | None = None
    # the threads whose own runs access data (set by _merge): only their accesses need the order a
    # fold lends (_fold_keeps_order)
    access_tids: list | None = None

    @property
    def size(self) -> int:
        return len(self.tids)

    @property
    def trace_warps(self) -> list[int]:
        """The warps of the threads that perform the whole of `trace`."""
        return sorted({t // 32 for t in (self.tids if self.performers is None else self.performers)})

    @property
    def warps(self) -> list[int]:
        return sorted({t // 32 for t in self.tids})


@dataclass
class Skeleton:
    kernel: str
    path: str
    target: str
    block: tuple[int, int, int]
    cluster: int
    iterations: int
    roles: list[Role]
    memory: dict[str, dict]
    regions: dict[tuple, str]
    checks: list[str]
    notes: list[str]
    reused: dict = field(default_factory=dict)     # mbarrier Loc -> its bytes' data lifetimes (_lifetimes)
    params: dict = field(default_factory=dict)     # the parameter values it was extracted with
    why: dict = field(default_factory=dict)        # check -> what its failure means (shadow words)


def _short(sym: str) -> str:
    """A readable name for a mangled symbol (`_ZZ15tma_ws_pipelineE4full` -> `full`)."""
    m = re.search(r"E(\d+)([A-Za-z_]\w*)$", sym)
    if m and len(m.group(2)) >= int(m.group(1)):
        return m.group(2)[:int(m.group(1))]
    return re.sub(r"\W", "_", sym)[:24].strip("_") or "smem"


def extract(mod: Module, fn: Function, *, iterations: int = 3, block: tuple[int, int, int] | None = None,
            cluster: int | None = None, params: dict | None = None, tiles: int | None = None,
            memo: RunMemo | None = None) -> Skeleton:
    """The skeleton of kernel `fn`. `memo`: thread runs remembered from earlier extractions of the
    same kernel (the parameter search's trials: checker.extract.memo)."""
    block = block or fn.block()
    if block is None:
        raise Refused(f"kernel '{fn.name}' has no .reqntid/.maxntid: give the block size with --block X,Y,Z",
                      SourceLoc(mod.path, fn.line, fn.name))
    nthreads = block[0] * block[1] * block[2]
    if nthreads > 1024:
        raise Refused(f"block of {nthreads} threads: more than 1024", SourceLoc(mod.path, fn.line, fn.name))
    dims = fn.cluster() or (1, 1, 1)
    if dims[1] * dims[2] > 1:
        # the skeleton's CTAs are ranks 0..N-1 along x (%ctaid = (rank, 0, 0), %cluster_nctarank N):
        # a cluster with y or z above 1 was taken as its x extent, its other CTAs silently dropped
        raise Refused(f"a cluster of {dims[0]}x{dims[1]}x{dims[2]} CTAs (.reqnctapercluster): ptxmc extract models "
                      "clusters along x only", SourceLoc(mod.path, fn.line, fn.name))
    if cluster is not None and fn.cluster() is not None and cluster != dims[0]:
        raise Refused(f"--cluster {cluster}, but the kernel requires clusters of {dims[0]} CTAs (.reqnctapercluster): "
                      "no launch runs it with that cluster size", SourceLoc(mod.path, fn.line, fn.name))
    ncta = cluster or dims[0]
    layout = Layout(mod, fn)
    traces = _run_all(mod, fn, layout, block, nthreads, ncta, iterations, params or {}, tiles, memo or RunMemo())
    traces, reused = _lifetimes(traces, mod.path)
    anchors = _anchors(traces.values())
    groups: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    sigs: dict[tuple, tuple] = {}
    for key, tr in traces.items():
        sig = _signature(tr, anchors)
        groups[(key[0], sig)].append(key)
    roles: list[Role] = []
    for (rank, sig), keys in sorted(groups.items(), key=lambda kv: kv[1][0]):
        tids = sorted(t for _, t in keys)
        rep = traces[(rank, tids[0])]
        if not rep.events:
            continue                    # threads that synchronize with nothing: no litmus thread
        role = Role("", rank, tids, rep, mult=[len(tids)] * len(rep.events))
        # threads of the role that decided something else on the way (a question on a parameter
        # that only they asked, an exit they took earlier): the role table says it too
        others: dict = defaultdict(list)
        for t in tids[1:]:
            a = traces[(rank, t)].assumptions
            if a != rep.assumptions:
                others[tuple(a)].append(t)
        role.folded = [(ts, list(a)) for a, ts in others.items()]
        sigs[id(role)] = sig
        roles.append(role)
    roles = _merge(roles, sigs)
    for r in roles:
        r.name = _role_name(r.tids, r.rank, ncta)
    _allocating_warp(traces, roles, mod.path)
    if not roles:
        raise Refused(f"kernel '{fn.name}' performs no synchronization ptxmc extract models",
                      SourceLoc(mod.path, fn.line, fn.name))
    sk = Skeleton(fn.name, mod.path, mod.target, block, ncta, iterations, roles, {}, {}, [], [], reused, dict(params or {}))
    for name, v in sorted((params or {}).items()):
        sk.notes.append(f"parameter {name} taken as {v}")
    outer = sorted({(line, n) for r in roles for line, n in r.trace.tiles.items()})
    if outer:
        sk.notes.append(f"outer loop{'s' if len(outer) > 1 else ''} closed after "
                        + ", ".join(f"{n} trip{'s' if n > 1 else ''} at L{line}" for line, n in outer)
                        + " (--tiles): the outer loop of a loop nest whose exit the PTX does not give (a persistent "
                          "kernel's tile loop), and the loops that end on the same unknown; the inner loops are "
                          f"unrolled {iterations} times each trip")
    _emit(sk, anchors, layout, nthreads)
    reduce(sk)
    return sk


def _run_all(mod, fn, layout, block, nthreads, ncta, iterations, params, tiles, memo: RunMemo) -> dict[tuple[int, int], Trace]:
    """Every thread's trace. Constants a thread stores to shared memory (a warp-specialization
    state word) are read by the others after a barrier they share, and the unknown that ends an
    outer loop (a tile count) bounds the other roles' loops that end on it too: so the threads
    are run again with the stores and tile counts of the last round until nothing changes (at
    most 4 rounds). A thread whose lookups get the same answers as in an earlier round is not run
    again (`memo`)."""
    consts: dict = {}
    named: dict = {}        # the unknowns threads store to shared memory, for the others (Trace.named_stores)
    traces: dict[tuple[int, int], Trace] = {}
    tile_whys: frozenset = frozenset()
    for _ in range(4):
        errors: dict[tuple[int, int], Refused] = {}
        new: dict[tuple[int, int], Trace] = {}
        # the decisions earlier threads took on kernel parameters (checker.extract.facts): every
        # later thread follows them, so that the roles take one side of each question together
        decided: dict = {}
        for rank in range(ncta):
            lane0: dict = {}
            for t in range(nthreads):
                tid = (t % block[0], (t // block[0]) % block[1], t // (block[0] * block[1]))
                ident = Ident(tid, block, (rank, 0, 0), rank, ncta)
                if t % 32 == 0:
                    lane0 = {}
                m = Machine(fn, layout, mod.path, iterations, lane0, consts=consts, param_values=params,
                            tiles=tiles, tile_whys=tile_whys, decided=decided, named=named)
                tr = memo.run(m, ident)
                if isinstance(tr, Refused):
                    errors[(rank, t)] = tr
                    continue
                for f, truth, line in tr.decided:
                    where = f"L{line} by thread {t}" + (f" of CTA {rank}" if ncta > 1 else "")
                    for key in Cond(f).keys():
                        if all(g != f for g, _, _ in decided.get(key, ())):
                            decided[key] = decided.get(key, ()) + ((f, truth, where),)
                if t % 32 == 0:
                    lane0.update(tr.shfl)
                new[(rank, t)] = tr
        stores: dict = defaultdict(list)
        for (rank, t), tr in new.items():
            for r, addr, byte, counts in tr.stores:
                stores[(r, addr)].append((counts, byte, (rank, t)))
        whys = frozenset(w for tr in new.values() for w in tr.tile_whys)
        names: dict = defaultdict(list)
        for (rank, t), tr in new.items():
            for r, addr, n, name, add, addbits, counts in tr.named_stores:
                names[(r, addr)].append((counts, n, name, add, addbits, (rank, t)))
        # the run of a thread depends on nothing else: when this round's stores and tile counts are
        # those it was run with, another round would run every thread the same way (refused or not)
        settled = dict(stores) == consts and whys == tile_whys and dict(names) == named
        traces, consts, named = new, dict(stores), dict(names)
        if settled:
            break
        tile_whys = whys
    if errors:
        raise next(iter(errors.values()))
    _split_questions(traces, mod.path)
    if not settled:
        # the last round ran with values an earlier round stored: a load of them would be taken
        # as unknown (its branch assumed), though the kernel gives it
        raise Refused(f"kernel '{fn.name}': the constants its threads store to shared memory for each "
                      "other (or the tile counts their loops end on) did not settle in 4 rounds (a hand-off "
                      "from thread to thread takes a round each, or values alternate): ptxmc extract cannot "
                      "tell what they read", SourceLoc(mod.path, fn.line, fn.name))
    return traces


def _split_questions(traces: dict, path: str) -> None:
    """Refuse a decision on a value the facts do not follow exactly (interp.Trace.risky: `popc` of a
    parameter, global data a store may write) whose sides differ in synchronization, where another
    thread decides a question on the same values: each deciding on its own could take opposite
    sides of one question, a path no launch takes. Only one thread deciding it is consistent."""
    who: dict = defaultdict(list)           # root -> [(thread, line)]
    for (rank, t), tr in traces.items():
        for f, _, line in tr.decided:
            for key in Cond(f).keys():
                who[key[0]].append(((rank, t), line))
                if isinstance(key[0], str) and key[0].startswith("global byte "):
                    who["global memory"].append(((rank, t), line))
        for line, _, _, _, roots, _ in tr.risky:
            for r in roots:
                who[r].append(((rank, t), line))
    for (rank, t), tr in sorted(traces.items()):
        for line, text, pred, why, roots, opaque in tr.risky:
            _one_thread(tr, line, text, pred, why, roots, opaque, path)
            for r in sorted(roots, key=repr):
                other = next(((u, ln) for u, ln in who[r] if u != (rank, t)), None)
                if other is None:
                    continue
                (orank, ot), oline = other
                name = r if r == "global memory" else _root_text(r)
                raise Refused(f"this branch's condition {pred} depends on {why}"
                              + ("" if name in why else f" (computed from {name})") + ", which "
                              "ptxmc extract does not follow exactly, and its two sides differ in synchronization; "
                              f"thread {ot}{f' of CTA {orank}' if orank != rank else ''} also decides a question "
                              f"on {name} (at L{oline}): deciding each on its own could take a path no launch "
                              "takes, not modelled", SourceLoc(path, line, text))


def _one_thread(tr, line: int, text: str, pred: str, why: str, roots: frozenset, opaque: frozenset,
                path: str) -> None:
    """Refuse a risky decision (_split_questions) where the same thread decides another question
    on the same values: on another value the facts do not follow (`popc` of one parameter
    computed twice is two unknowns: the thread took `popc(n) < 2` at one branch and `>= 2` at the
    next, a path no launch takes), or on the values themselves (`n == 0`, then `popc(n) >= 1`).
    Two decisions on one such value (the same register) are one question: its facts follow."""
    def refuse(name: str, oline: int) -> None:
        raise Refused(f"this branch's condition {pred} depends on {why}" + ("" if name in why else f" (computed from "
                      f"{name})") + ", which ptxmc extract does not follow exactly, and its two sides differ in "
                      f"synchronization; this thread also decides a question on {name} (at L{oline}) that the facts "
                      "cannot relate to it: the two decisions could take sides no launch takes, not modelled",
                      SourceLoc(path, line, text))
    for oline, _, _, _, oroots, other in tr.risky:
        if other != opaque:
            common = sorted(roots & oroots, key=repr)
            if common:
                refuse(common[0] if common[0] == "global memory" else _root_text(common[0]), oline)
    for f, _, oline in tr.own_decided:
        for key in Cond(f).keys():
            r = "global memory" if isinstance(key[0], str) and key[0].startswith("global byte ") else key[0]
            if r in roots:
                refuse(r if r == "global memory" else _root_text(r), oline)


def _root_text(name: str) -> str:
    from .facts import _name
    return _name((name, 0))


def _subsequence(small: tuple, big: tuple) -> list[int] | None:
    """Indices of big at which small's items occur in order, or None."""
    out, j = [], 0
    for item in small:
        while j < len(big) and big[j] != item:
            j += 1
        if j == len(big):
            return None
        out.append(j)
        j += 1
    return out


# events that access data (a thread's own ordering of them is what its synchronization is about)
_ACCESS_KINDS = frozenset(("smem", "tc_mma", "tc_ld", "tc_st", "tma_load", "tma_store"))
# events that order the executing thread's earlier accesses before what follows them in other threads
_RELEASES = frozenset(("mb_arrive", "mb_expect_tx", "tc_commit", "tma_load", "tma_store", "bulk_commit_group",
                       "cluster_barrier"))
# events after which the executing thread's later accesses are ordered
_ACQUIRES = frozenset(("mb_wait", "wgmma_wait", "bulk_wait_group", "tc_wait", "cluster_barrier"))


def _fold_keeps_order(a: Role, b: Role, small: tuple, big: tuple, idx: list[int]) -> bool:
    """Whether the threads of role `a` (events `small`) may be folded into role `b`'s litmus
    thread (events `big`, `small` at positions `idx`) without giving `a`'s own accesses an order
    they do not have: in the fold, `b`'s operations that `a` lacks stand in program order between
    `a`'s accesses. That is exact only when a barrier both perform orders `a`'s access on the
    same side of the operation: a `bar.sync` both take part in, or a full-mask `bar.warp.sync`
    when every warp of `a` has a thread of `b`. A fence orders only the executing thread's
    accesses (a proxy fence in lane 0 does not fence lanes 1-31's `ld.shared`; one in warp 4
    does not fence warps 5-7); an arrive releases only the arriving thread's accesses (lane 0's
    arrive does not publish lanes 1-31's reads unless the lanes synchronize first); a wait orders
    only the waiting thread's later accesses (lanes that read a tile without waiting for it race
    with its copy). Threads that fail this stay a role of their own. (wgmma is one operation of
    the whole warpgroup, which folding keeps: not an access of one thread here.)"""
    matched = set(idx)
    acc = [idx[k] for k, e in enumerate(small) if e[0] in _ACCESS_KINDS]
    if not acc:
        return True
    # a bar.sync both wait at (not a bar.arrive: it waits for nothing), just after b's event
    bars = [idx[k] + 0.5 for k, e in enumerate(small) if e[0] == "barrier" and dict(e[2]).get("mode") != "arrive"]
    if {t // 32 for t in (a.tids if a.access_tids is None else a.access_tids)} <= set(b.trace_warps):
        # (b's warps that perform its releases: threads folded into b earlier, idle lanes of another
        # warp, do not, and a bar.warp.sync there orders nothing before them; it used to count
        # them: PASS for warp 0's reads folded into warp 1's arrive, each warp's __syncwarp its own)
        for p in a.trace.warpsyncs:         # before a's event p: between b's idx[p-1] and idx[p]
            lo = idx[p - 1] if p > 0 else -1
            hi = idx[p] if p < len(idx) else len(big)
            bars += [q - 0.5 for q in b.trace.warpsyncs if lo < q <= hi]

    def separated(i: int, j: int) -> bool:      # a barrier of both between b's events i < j
        return any(i < x < j for x in bars)
    def kind(tr: Trace, k: int) -> tuple:
        ins = tr.events[k].instr
        return (ins.op, ins.qualifiers) if ins is not None else (None,)
    for j, e in enumerate(big):
        if j in matched:
            continue
        if e[0] == "fence":
            # it would fence a's accesses too, unless a's own fence of the same instruction lies
            # between each of them and it (lanes that each fence, then `__syncwarp()`, then lane 0
            # fences again and issues a TMA store: it used to keep them apart, and the dropped
            # bar.warp.sync left their stores unordered before the copy, a FAIL for a correct kernel)
            same = [idx[k] for k, x in enumerate(small) if x[0] == "fence" and kind(a.trace, k) == kind(b.trace, j)]
            if any(i > j or not any(i < f < j for f in same) for i in acc):
                return False
            continue
        if e[0] in _RELEASES and any(i < j and not separated(i, j) for i in acc):
            return False
        if e[0] in _ACQUIRES and any(j < i and not separated(j, i) for i in acc):
            return False
    return True


def _merge(roles: list[Role], sigs: dict) -> list[Role]:
    """Fold a role into a larger one of the same warpgroup when it performs a subset of the other's
    synchronization in the same order (the lanes of a warp beside its elected lane; the threads
    of a warpgroup beside the one that also initialises and arrives): one litmus thread then
    stands for both, and each event counts the threads that perform it."""
    roles = sorted(roles, key=lambda r: -r.size)
    for r in roles:
        if r.access_tids is None:
            r.access_tids = list(r.tids) if any(e[0] in _ACCESS_KINDS for e in sigs[id(r)]) else []
    out: list[Role] = []
    for r in roles:
        merged = False
        for big in out:
            groups = {w // 4 for w in big.warps}        # the same warpgroup(s)
            if big.rank != r.rank or {w // 4 for w in r.warps} != groups:
                continue
            a, b = (r, big) if len(sigs[id(r)]) <= len(sigs[id(big)]) else (big, r)
            idx = _subsequence(sigs[id(a)], sigs[id(b)])
            if idx is None or not _fold_keeps_order(a, b, sigs[id(a)], sigs[id(b)], idx):
                continue
            mult = list(b.mult)
            for k, j in enumerate(idx):
                mult[j] += a.mult[k]
            others = {t for ts, _ in a.folded for t in ts}       # (they decided otherwise than a's own)
            own = [t for t in sorted(a.tids) if t not in others]
            big.folded = big.folded + r.folded + [(own, a.trace.assumptions)]
            big.performers = list(b.tids if b.performers is None else b.performers)
            big.access_tids = sorted(a.access_tids + b.access_tids)
            big.trace, big.mult = b.trace, mult
            big.tids = sorted(big.tids + r.tids)
            sigs[id(big)] = sigs[id(b)]
            merged = True
            break
        if not merged:
            out.append(r)
    return sorted(out, key=lambda r: (r.rank, r.tids[0]))


_ALLOCS = ("tc_alloc", "tc_dealloc")


def _allocating_warp(traces: dict, roles: list[Role], path: str) -> None:
    """docs/model.md#t6: one warp performs every tcgen05.alloc and dealloc of its CTA, and the
    model tells warps apart by the litmus thread's position. A role's litmus thread sits at its
    first warp, whichever of its warps perform an event; so the skeleton keeps the rule's answer
    only when the warps that really allocate are one, and its litmus threads that allocate sit at
    one warp. Otherwise it is refused at the PTX line (two allocating warps break the rule; the
    skeleton could not say so)."""
    for rank in sorted({k[0] for k in traces}):
        real: dict[int, Event] = {}
        for (rk, tid), tr in sorted(traces.items()):
            if rk == rank:
                for e in tr.events:
                    if e.kind in _ALLOCS:
                        real.setdefault(tid // 32, e)
        if len(real) > 1:
            e = real[max(real)]
            raise Refused(f"tcgen05.alloc/dealloc by warps {', '.join(map(str, sorted(real)))} of one CTA: one warp "
                          "must perform all of a CTA's (docs/model.md#t6), and a role's litmus thread stands for "
                          "its first warp, so the skeleton would not show it", SourceLoc(path, e.line, e.text))
        placed = {r.warps[0]: r for r in roles if r.rank == rank and any(e.kind in _ALLOCS for e in r.trace.events)}
        if len(placed) > 1:
            e = next(e for e in placed[max(placed)].trace.events if e.kind in _ALLOCS)
            raise Refused(f"the tcgen05.alloc/dealloc of warp {min(real)} fall in roles placed at warps "
                          f"{', '.join(map(str, sorted(placed)))}: the skeleton would show them in different warps "
                          "(docs/model.md#t6)", SourceLoc(path, e.line, e.text))


def _role_name(tids: list[int], rank: int, ncta: int) -> str:
    warps = sorted({t // 32 for t in tids})
    suffix = f"_c{rank}" if ncta > 1 else ""
    if len(tids) == 1:
        return f"t{tids[0]}{suffix}"
    full = len(tids) == 32 * len(warps) and warps == list(range(warps[0], warps[-1] + 1))
    w = f"w{warps[0]}" + (f"_{warps[-1]}" if len(warps) > 1 else "")
    return w + ("" if full else f"_{len(tids)}t") + suffix


LIFE = "~"          # a reused mbarrier's bytes as data: SYMBOL~pre (before its init), SYMBOL~post (after inval)


def _base(sym: str) -> str:
    return sym.split(LIFE)[0]


def _lifetimes(traces: dict, path: str) -> tuple[dict, dict]:
    """Shared bytes that are data, then an mbarrier (init .. inval), then data again (Triton's
    attention: the Tensor Memory address slot, the Q barrier, the epilogue's tile) get one
    location per lifetime: the data accesses before the mbarrier's init are moved to the variable
    `SYMBOL~pre`, those after its inval to `SYMBOL~post` (same offsets), so that no litmus
    location is both an mbarrier and data. Which lifetime an access is in: in a thread that
    also operates on the mbarrier, program order; in another, the barrier generations it has
    passed, compared with those the init and the inval were performed after. The skeleton then
    checks that the lifetimes are ordered (skeleton._emit: shadow accesses), so a wrong guess is
    a finding, never a hidden race. Returns the rewritten traces and {mbarrier Loc: lifetimes}."""
    anchors = _anchors(traces.values())
    uses: dict[tuple, list] = defaultdict(list)       # mbarrier region -> (trace key, event index)
    for key, tr in traces.items():
        for i, e in enumerate(tr.events):
            if e.get("mb") is not None:
                uses[_region(e.get("mb"), anchors)].append((key, i))
    data = {_region(loc, anchors) for tr in traces.values() for e in tr.events for k, v in e.info
            for loc in ([v] if k in ("loc", "dst", "src") else list(v) if k == "srcs" else []) if isinstance(loc, Loc)}
    reused: dict[tuple, dict] = {}
    for reg, us in uses.items():
        if reg not in data:
            continue
        inits = [(k, i) for k, i in us if traces[k].events[i].kind == "mb_init"]
        invals = [(k, i) for k, i in us if traces[k].events[i].kind == "mb_inval"]
        if not invals:
            continue
        if len(inits) != 1 or len(invals) != 1:
            e = traces[invals[0][0]].events[invals[0][1]]
            raise Refused(f"these shared bytes are initialised as an mbarrier {len(inits)} time(s) and invalidated "
                          f"{len(invals)} time(s): ptxmc extract models one mbarrier lifetime per location",
                          SourceLoc(path, e.line, e.text))
        reused[reg] = {"init": inits[0], "inval": invals[0]}
    if not reused:
        return traces, {}
    # the bytes after a reused mbarrier are the later lifetime's data (a tile), not a state word
    anchors = _anchors(traces.values(), whole=set(reused))

    def lifetime(key, i, e, reg) -> str:
        tr = traces[key]
        mine = [j for j, e2 in enumerate(tr.events) if e2.get("mb") is not None and _region(e2.get("mb"), anchors) == reg]
        if mine:
            if i < mine[0]:
                return "pre"
            if i > mine[-1]:
                return "post"
            raise Refused("a data access to the bytes of an mbarrier between the thread's own operations on it",
                          SourceLoc(path, e.line, e.text))
        here = dict(tr.gens[i])
        (ki, ii), (kv, iv) = reused[reg]["init"], reused[reg]["inval"]
        at_init, at_inval = dict(traces[ki].gens[ii]), dict(traces[kv].gens[iv])
        if any(n > at_inval.get(b, 0) for b, n in here.items()):
            return "post"
        if all(n <= at_init.get(b, 0) for b, n in here.items()):
            return "pre"
        raise Refused("a data access to the bytes of a reused mbarrier that no barrier places before its init "
                      "or after its inval", SourceLoc(path, e.line, e.text))

    def move(key, i, e, loc):
        if not isinstance(loc, Loc) or _region(loc, anchors) not in reused:
            return loc
        return Loc(loc.rank, loc.symbol + LIFE + lifetime(key, i, e, _region(loc, anchors)), loc.offset)

    out = {}
    for key, tr in traces.items():
        events = []
        for i, e in enumerate(tr.events):
            info = []
            for k, v in e.info:
                if k in ("loc", "dst", "src"):
                    v = move(key, i, e, v)
                elif k == "srcs":
                    v = tuple(move(key, i, e, x) for x in v)
                info.append((k, v))
            events.append(replace(e, info=tuple(info)))
        out[key] = replace(tr, events=events)
    return out, {Loc(*reg): v for reg, v in reused.items()}


def _anchors(traces, whole: set = frozenset()) -> dict[tuple[int, str], list[int]]:
    """Per (rank, variable): the offsets at which its pieces start: mbarriers (8 bytes each) and
    the ends of asynchronous copies; a generic access past an mbarrier starts a piece of its own
    (a state word), except past the mbarrier regions in `whole`. wgmma operands fall inside the
    tiles the copies fill."""
    traces = list(traces)
    out: dict[tuple[int, str], set[int]] = defaultdict(lambda: {0})
    mbs: dict[tuple[int, str], set[int]] = defaultdict(set)
    generic: dict[tuple[int, str], set[int]] = defaultdict(set)
    for tr in traces:
        for dst, extent in _copy_extents(tr.events):
            if dst.offset + extent < (1 << 24):
                out[(dst.rank, dst.symbol)].add(dst.offset + extent)
        for e in tr.events:
            for k, v in e.info:
                if k in ("mb", "dst", "src") and isinstance(v, Loc):
                    out[(v.rank, v.symbol)].add(v.offset)
                    if k == "mb":
                        mbs[(v.rank, v.symbol)].add(v.offset)
            loc = e.get("loc")
            if loc is not None:
                generic[(loc.rank, loc.symbol)].add(loc.offset)
    # A variable no copy fills (TileLang's tiles, written with st.shared) is cut where each wgmma
    # group's operands start: its first wgmma's A and B (later k-steps and halves fall inside).
    copied = set(out)
    for tr in traces:
        first = True
        for e in tr.events:
            if e.kind in ("wgmma_fence", "wgmma_commit_group"):
                first = True
            elif e.kind == "wgmma_mma" and first:
                first = False
                for v in e.get("srcs") or ():
                    if isinstance(v, Loc) and (v.rank, v.symbol) not in copied:
                        out[(v.rank, v.symbol)].add(v.offset)
    for key, offs in generic.items():
        for off in sorted(offs):
            start = max(o for o in out[key] if o <= off)
            if start in mbs[key] and off >= start + 8 and (key[0], key[1], start) not in whole:
                out[key].add(off)
    return {k: sorted(v) for k, v in out.items()}


def _load_spans(sk: Skeleton, anchors) -> dict[tuple, list[tuple]]:
    """Per tensor-load destination piece: the pieces the load writes. A box's size is set on the
    host, so a load is taken to write its own piece and, when other pieces start inside its tile
    (CuTe DSL's epilogue reuses the A tile's bytes as four C buffers, cut by their TMA stores),
    every piece up to the last one a wgmma reads before the next load's destination or
    mbarrier: the wgmma operands show how far the tile reaches."""
    loads: dict[tuple, set[int]] = defaultdict(set)
    stops: dict[tuple, set[int]] = defaultdict(set)
    reads: dict[tuple, set[int]] = defaultdict(set)
    for r in sk.roles:
        for e in r.trace.events:
            if e.kind == "tma_load":
                d = e.get("dst")
                loads[(d.rank, d.symbol)].add(_region(d, anchors)[2])
            if e.get("mb") is not None:
                m = e.get("mb")
                stops[(m.rank, m.symbol)].add(m.offset)
            if e.kind == "wgmma_mma":
                for v in e.get("srcs") or ():
                    if isinstance(v, Loc):
                        reads[(v.rank, v.symbol)].add(v.offset)
    out: dict[tuple, list[tuple]] = {}
    for var, starts in loads.items():
        ends = starts | stops[var]
        for s0 in starts:
            nxt = min((o for o in ends if o > s0), default=None)
            inside = [w for w in reads[var] if w >= s0 and (nxt is None or w < nxt)]
            last = max(inside, default=s0)
            out[(var[0], var[1], s0)] = [(var[0], var[1], a) for a in anchors.get(var, [0]) if s0 <= a <= last]
    return out


def _no_hint(q: tuple) -> tuple:
    """The qualifiers without `.L2::cache_hint`: the cache policy operand it needs is dropped
    with the data path (it carries no synchronization)."""
    return tuple(x for x in q if x != "L2::cache_hint")


def _copy_extents(events: list[Event]):
    """(destination, bytes) of each tensor copy that is the only copy an `expect_tx` with a
    constant byte count covers: its box is that many contiguous bytes, so the piece it fills
    ends there (Triton's attention keeps a scratch row right after the Q tile). With several
    copies per expect_tx the split between them is not in the PTX: no end is assumed."""
    open_: dict[Loc, list] = {}
    groups: list[tuple[int, list]] = []
    for e in events:
        if e.kind in ("mb_arrive", "mb_expect_tx") and e.get("tx") is not None:
            group: list = []
            open_[e.get("mb")] = group
            groups.append((e.get("tx"), group))
        elif e.kind == "tma_load" and e.get("mb") in open_:
            open_[e.get("mb")].append(e.get("dst"))
    for tx, dsts in groups:
        if isinstance(tx, int) and tx > 0 and len(dsts) == 1:
            yield dsts[0], tx


def _region(loc: Loc, anchors) -> tuple[int, str, int]:
    offs = anchors.get((loc.rank, loc.symbol), [0])
    start = max((o for o in offs if o <= loc.offset), default=0)
    return (loc.rank, loc.symbol, start)


def _signature(tr: Trace, anchors) -> tuple:
    out = []
    for e in tr.events:
        items = []
        for k, v in e.info:
            if isinstance(v, Loc):
                v = _region(v, anchors)
            elif k == "srcs":
                v = tuple(None if x is None else _region(x, anchors) for x in v)
            elif k == "coords":
                continue
            items.append((k, v))
        out.append((e.kind, e.line, tuple(items)))
    return tuple(out)


# ------------------------------------------------------------------------------- emission --

def _emit(sk: Skeleton, anchors, layout: Layout, nthreads: int) -> None:
    ncta = sk.cluster

    def owner(rank: int) -> str:
        return f"gpu0.cluster0.cta{rank}" if ncta > 1 else "gpu0.cta0"

    # names of the pieces
    mbars = {_region(e.get("mb"), anchors) for r in sk.roles for e in r.trace.events if e.get("mb") is not None}
    _no_reuse(sk, anchors, mbars)
    names: dict[tuple, str] = {}
    used = set()
    for r in sk.roles:
        for e in r.trace.events:
            for k, v in e.info:
                locs = [v] if isinstance(v, Loc) else ([x for x in v if x is not None] if k == "srcs" else [])
                for loc in locs:
                    reg = _region(loc, anchors)
                    if reg in names:
                        continue
                    offs = anchors.get((reg[0], reg[1]), [0])
                    same = [o for o in offs if ((reg[0], reg[1], o) in mbars) == (reg in mbars)]
                    idx = same.index(reg[2]) if reg[2] in same else 0
                    base = _short(_base(reg[1])) + ("_" + reg[1].split(LIFE)[1] if LIFE in reg[1] else "")
                    kind = "_mb" if reg in mbars and len(same) < len(offs) else ""
                    nm = f"{base}{kind}{idx}" + (f"_c{reg[0]}" if ncta > 1 else "")
                    while nm in used:
                        nm += "x"
                    used.add(nm)
                    names[reg] = nm
    sk.regions = names
    first = {}
    for reg, nm in sorted(names.items()):
        key = (reg[1], reg[2])
        decl = {"space": "shared", "owner": owner(reg[0])}
        if reg not in mbars:
            offs = anchors.get((reg[0], reg[1]), [0])
            nxt = min((o for o in offs if o > reg[2]), default=None)
            size = layout.size(_base(reg[1]))
            room = min(x for x in (BOX, None if nxt is None else nxt - reg[2],
                                   None if size is None else size - reg[2]) if x is not None)
            decl["size"] = room if room in (1, 2, 4, 8, 16) else BOX
        if key in first and ncta > 1:
            decl["offset_of"] = first[key]
        else:
            first.setdefault(key, nm)
        sk.memory[nm] = decl

    tmems = sorted({r.rank for r in sk.roles for e in r.trace.events if e.kind.startswith("tc_")})
    for rank in tmems:
        sk.memory[f"tmem_c{rank}" if ncta > 1 else "tmem"] = {"space": "tensor", "owner": owner(rank)}

    # mbarrier count scaling
    arrivals: dict[tuple, list[int]] = defaultdict(list)
    inits: dict[tuple, list[int]] = defaultdict(list)
    for r in sk.roles:
        for e, n in zip(r.trace.events, r.mult):
            if e.kind == "mb_arrive":
                arrivals[_region(e.get("mb"), anchors)].append(n * e.get("count"))
            elif e.kind == "tc_commit":
                arrivals[_region(e.get("mb"), anchors)].append(n)
            elif e.kind == "mb_init":
                inits[_region(e.get("mb"), anchors)].append(e.get("count"))
    # A count outside the range PTX gives it is refused here, at its PTX line: divided below (or
    # its mbarrier dropped as unused, checker.extract.reduce) the skeleton would not show it.
    for r in sk.roles:
        for e in r.trace.events:
            if e.kind in ("mb_init", "mb_arrive") and not 1 <= e.get("count") <= MB_LIMIT:
                what = "expected arrival count" if e.kind == "mb_init" else "arrival count"
                raise Refused(f"{what} {e.get('count')}: PTX allows 1..{MB_LIMIT} (2^20-1); outside it the "
                              "behaviour is undefined", SourceLoc(sk.path, e.line, e.text))
    scale: dict[tuple, int] = {}
    for mb in mbars:
        s = 0
        for x in arrivals.get(mb, []) + inits.get(mb, []):
            s = math.gcd(s, x)
        scale[mb] = s or 1

    # barrier participation: one litmus barrier per (id, count); a kernel that uses barrier 0 for
    # the whole CTA and for one warpgroup (bar.sync 0 / bar.sync 0, 128) gets two litmus barriers
    bars: dict[tuple[int, int, int], dict[str, int]] = defaultdict(dict)
    first_line: dict[tuple[int, int, int], Event] = {}
    for r in sk.roles:
        for e, n in zip(r.trace.events, r.mult):
            if e.kind == "barrier":
                key = (r.rank, e.get("id"), e.get("count") or nthreads)
                first_line.setdefault(key, e)
                prev = bars[key].setdefault(r.name, n)
                if prev != n:
                    raise Refused(f"barrier {e.get('id')}: role {r.name} reaches it with {prev} threads at one use and "
                                  f"{n} at another: not mapped", SourceLoc(sk.path, e.line, e.text))
    bar_id: dict[tuple[int, int, int], int] = {}
    used_ids = {k[1] for k in bars}
    spare = [x for x in range(15, -1, -1) if x not in used_ids]
    for key in sorted(bars):
        rank, bid, c = key
        if any(k[0] == rank and k[1] == bid for k in bar_id):
            if not spare:
                raise Refused("more barrier (id, count) pairs than the 16 barriers", SourceLoc(sk.path, 0, ""))
            bar_id[key] = spare.pop(0)
            sk.notes.append(f"barrier {bid} used with {c} threads (L{first_line[key].line}) is litmus barrier "
                            f"{bar_id[key]}: that its uses with another count cannot meet is checked (shadow words "
                            "bar<ID>_<COUNT>_g<K>, docs/extract.md: one barrier with two counts)")
        else:
            bar_id[key] = bid
        members = sum(bars[key].values())
        if len(bars[key]) == 1 and members == c:
            sk.notes.append(f"barrier {bid} with {c} threads (L{first_line[key].line}) joins the threads of role "
                            f"{next(iter(bars[key]))} only: program order in the skeleton, not emitted")
        if members != c:
            e0 = first_line[key]
            raise Refused(f"barrier {bid}: {members} threads of the roles that use it arrive, its count is {c}: "
                          "ptxmc extract maps a barrier only when its users are exactly its count",
                          SourceLoc(sk.path, e0.line, e0.text))

    # pieces that stores of one known value write (one store, or the stores of several roles: the
    # lanes of a warp beside its elected lane, folded apart because no bar.warp.sync orders their
    # stores before its arrive), and no copy writes: a reader must see that value. Only one
    # writing role used to count, so a store no synchronization orders before the read, by the
    # role beside the one that arrives, went unchecked (PASS for a kernel without __syncwarp)
    spans = _load_spans(sk, anchors)
    written: dict[tuple, set] = defaultdict(set)
    for r in sk.roles:
        for e in r.trace.events:
            if e.kind == "smem" and e.get("write"):
                v = e.get("value")
                written[_region(e.get("loc"), anchors)].add((r.name, 0, v if isinstance(v, int) else DATA))
            elif e.kind == "tma_load":
                for piece in spans[_region(e.get("dst"), anchors)]:
                    written[piece].add(("copy", e.line, None))  # each copy its own value
    writers = {reg: next(iter(vs)) for reg, ws in written.items()
               if len(vs := {w[2] for w in ws}) == 1 and next(iter(vs)) is not None}

    # tensor copies: one litmus map and one global buffer per PTX tensor map (and direction), and
    # one 16-byte box of that buffer per copy, at coordinates {k, 0, ...}: each load brings its own
    # value (copy i: i + 1), so a consumer that reads a stale or future stage is seen, and boxes do
    # not overlap, so sharing the map and the buffer adds no race and no order (a load that covers
    # several pieces: one copy per piece, each with its own box and value; at most BOXES boxes per
    # buffer, whose initial value is at most 1024 bits). A store whose data is
    # checked (its source has one known writer) keeps a buffer of its own: a condition names a
    # whole location.
    copy_no = 0
    copies: dict[tuple, list] = {}      # (role, event index) -> [(map, buffer, value, piece, box)] or (map, buffer, value, box)
    maps: dict[tuple, tuple[str, str]] = {}     # (rank, direction, PTX map) -> (litmus map, buffer)

    def box_of(key: tuple, dims: int, prefix: str, value: int) -> tuple[str, str, int]:
        if key in maps and value and sk.memory[maps[key][1]]["size"] >= BOX * BOXES:
            maps[key + (len(maps),)] = maps.pop(key)        # its initial value is full: a new map and buffer
        if key not in maps:
            n = len(maps) + 1
            maps[key] = (f"tmap{n}", f"{prefix}{n}")
            sk.memory[maps[key][1]] = {"size": 0, "init": 0}
            sk.memory[maps[key][0]] = {"tensormap": {0: maps[key][1]}, "init": 0, "box": BOX, "strides": [BOX] * dims}
        tm, g = maps[key]
        if len(sk.memory[tm]["strides"]) != dims:
            raise Refused("one tensor map used with two numbers of coordinates", SourceLoc(sk.path, 0, ""))
        k = sk.memory[g]["size"] // BOX
        sk.memory[g]["size"] += BOX
        sk.memory[g]["init"] |= value << (8 * BOX * k)
        return tm, g, k

    for r in sk.roles:
        for i, e in enumerate(r.trace.events):
            if e.kind == "tma_load":
                copies[(r.name, i)] = []
                for piece in spans[_region(e.get("dst"), anchors)]:
                    copy_no += 1
                    tm, g, k = box_of((r.rank, "load", e.get("tmap")), int(e.get("dim")[0]), "gbuf", copy_no)
                    copies[(r.name, i)].append((tm, g, copy_no, piece, k))
            elif e.kind == "tma_store":
                copy_no += 1
                own = (r.name, i) if writers.get(_region(e.get("src"), anchors)) is not None else None
                tm, g, k = box_of((r.rank, "store", e.get("tmap"), own), int(e.get("dim")[0]), "gout", 0)
                copies[(r.name, i)] = (tm, g, copy_no, k)

    # phases: the copies completing on each mbarrier, grouped by expect_tx, in order
    phase_copies: dict[tuple, list[list]] = defaultdict(list)
    expect_cover: dict[tuple[str, int], int] = {}
    for r in sk.roles:
        open_: dict[tuple, tuple[int, list]] = {}
        pending: dict[tuple, list] = defaultdict(list)      # copies-first mbarriers: copies not yet counted
        first = _copies_first(r.trace.events, anchors)
        for i, e in enumerate(r.trace.events):
            if e.kind in ("mb_arrive", "mb_expect_tx") and e.get("tx") is not None:
                mb = _region(e.get("mb"), anchors)
                group: list = pending.pop(mb, [])
                open_[mb] = (i, group)
                phase_copies[mb].append(group)
            elif e.kind == "tma_load":
                mb = _region(e.get("mb"), anchors)
                items = [(r.name, i, piece, v) for _, _, v, piece, _ in copies[(r.name, i)]]
                if mb in first:
                    pending[mb].extend(items)
                    continue
                if mb not in open_:
                    raise Refused("a tensor copy completes on an mbarrier that this role has not armed with expect_tx",
                                  SourceLoc(sk.path, e.line, e.text))
                open_[mb][1].extend(items)
        for mb, items in pending.items():
            if items:
                e = r.trace.events[items[0][1]]
                raise Refused("a tensor copy completes on an mbarrier that this role does not arm with expect_tx "
                              "afterwards", SourceLoc(sk.path, e.line, e.text))
    for r in sk.roles:
        first = _copies_first(r.trace.events, anchors)
        for i, e in enumerate(r.trace.events):
            if e.kind in ("mb_arrive", "mb_expect_tx") and e.get("tx") is not None:
                mb = _region(e.get("mb"), anchors)
                which = _preceding if mb in first else _following
                n = sum(len(copies[(r.name, j)]) for j in which(r.trace.events, i, mb, anchors))
                expect_cover[(r.name, i)] = n
                if n == 0:
                    raise Refused("expect_tx with no tensor copy completing on its mbarrier after it in this role "
                                  "(other byte sources are not modelled yet)", SourceLoc(sk.path, e.line, e.text))
                if isinstance(e.get("tx"), int) and not 0 <= e.get("tx") <= MB_LIMIT:
                    raise Refused(f"expect_tx of {e.get('tx')} bytes: beyond the tx-count range of an mbarrier "
                                  f"(0..{MB_LIMIT}), undefined behaviour that the skeleton's {BOX}-byte boxes "
                                  "would not show", SourceLoc(sk.path, e.line, e.text))
                sk.notes.append(f"L{e.line}: expect_tx {e.get('tx')} bytes taken to cover the {n} tensor "
                                f"cop{'y' if n == 1 else 'ies'} that complete on it ({BOX * n} bytes in the skeleton; "
                                "box sizes are set on the host)")

    # reused mbarrier bytes: a shadow word per mbarrier checks that its lifetimes are ordered;
    # distributed shared memory: a shadow word per (role, CTA it reaches) checks that the CTA is
    # still running when the role's last access of its memory is done
    life = _shadows(sk, anchors, names, owner)
    stored, store_why = _store_shadows(sk, anchors, names, owner)
    counted, count_why = _separated_counts(sk, bars, nthreads, owner)
    store_why.update(count_why)
    for k, v in list(stored.items()) + list(counted.items()):
        life.setdefault(k, []).extend(v)
    exits: dict[str, tuple] = {}
    for k, v in _exit_shadows(sk, owner, exits).items():
        life.setdefault(k, []).extend(v)
    exit_reads: dict[str, list[str]] = defaultdict(list)     # shadow word -> its reads' conditions

    # lines
    for r in sk.roles:
        waits: dict[tuple, int] = Counter()
        last_wait_phase: dict[tuple, int] = {}
        reg_no = 0
        prev_smem = None
        prev_mma = None
        pending: list[tuple] = []
        for i, e in enumerate(r.trace.events + [None]):
            now = [(src_e, *x) for src_e, x in pending]             # after the previous event
            pending = []
            here = life.get((r.name, i), ())
            if e is not None:
                pending = [(e, x[1:]) for x in here if x[0] == "after"]
            now += [(e or _last(r), *x[1:]) for x in here if x[0] == "before"]
            for src_e, shadow, written, check in now:
                if written is not None:
                    space = "cta" if sk.memory[shadow]["owner"] == owner(r.rank) else "cluster"
                    r.lines.append(Line(f"st.shared::{space}.b32 [{shadow}], {written}", src_e.line, src_e.text,
                                        "shadow"))
                else:
                    r.lines.append(Line(f"ld.shared::cta.b32 r{reg_no}, [{shadow}]", src_e.line, src_e.text, "shadow"))
                    if shadow in exits:
                        exit_reads[shadow].append(f"{r.name}:r{reg_no}{check}")
                    else:
                        sk.checks.append(f"{r.name}:r{reg_no}{check}")
                        if shadow in store_why:
                            sk.why[f"{r.name}:r{reg_no}{check}"] = f"{r.name}'s read at PTX L{src_e.line} " + \
                                store_why[shadow]
                    reg_no += 1
            if e is None:
                break
            src = (e.line, e.text)
            k = e.kind
            q = e.instr.qualifiers
            if k == "mb_init":
                mb = _region(e.get("mb"), anchors)
                c = e.get("count") // scale[mb] if e.get("count") % scale[mb] == 0 else None
                if c is None:
                    raise Refused("mbarrier count cannot be scaled exactly", SourceLoc(sk.path, e.line, e.text))
                r.lines.append(Line(f"mbarrier.init.shared::cta.b64 [{names[mb]}], {c}", *src, k))
            elif k == "mb_arrive":
                mb = _region(e.get("mb"), anchors)
                cnt = r.mult[i] * e.get("count") // scale[mb]
                quals = ".".join(x for x in q if x not in ("b64",))
                mbname = names[mb]
                remote = mb[0] != r.rank
                if "shared::cluster" not in q and remote:
                    quals = quals.replace("shared::cta", "shared::cluster")
                ops = f"_, [{mbname}]"
                mut = {}
                if e.get("tx") is not None:
                    n = expect_cover[(r.name, i)]
                    ops += f", {BOX * n}"
                    mut["tx"] = BOX * n
                if cnt != 1:
                    ops += f", {cnt}"
                r.lines.append(Line(f"mbarrier.{quals}.b64 {ops}", *src, k, mut))
            elif k == "mb_expect_tx":
                mb = _region(e.get("mb"), anchors)
                n = expect_cover[(r.name, i)]
                quals = ".".join(x for x in q if x not in ("b64",))
                r.lines.append(Line(f"mbarrier.{quals}.b64 [{names[mb]}], {BOX * n}", *src, k, {"tx": BOX * n}))
            elif k == "mb_inval":
                mb = _region(e.get("mb"), anchors)
                r.lines.append(Line(f"mbarrier.inval.shared::cta.b64 [{names[mb]}]", *src, k))
                for piece in _inval_bytes(e.get("mb"), anchors, names):
                    # the inval is a generic-proxy write of the object's bytes (docs/model.md#a7-inval-proxy):
                    # where they are reused as data, the data's location gets that write too, so a copy
                    # into them with no proxy fence after the inval is a mixed-size race
                    bits = 8 * min(8, sk.memory[names[piece]].get("size", 8))
                    r.lines.append(Line(f"st.shared::cta.b{bits} [{names[piece]}], 0", *src, "inval_bytes"))
            elif k == "mb_wait":
                mb = _region(e.get("mb"), anchors)
                quals = ".".join(x for x in q if x not in ("b64",))
                phase = waits[mb]
                waits[mb] += 1
                last_wait_phase[mb] = phase
                r.lines.append(Line(f"mbarrier.{quals}.b64 p{reg_no}, [{names[mb]}], {e.get('parity')} == 1", *src, k,
                                    {"parity": e.get("parity")}))
                reg_no += 1
            elif k == "fence":
                r.lines.append(Line(render_instr(replace(e.instr, predicate=None)), *src, k))
            elif k == "barrier":
                key = (r.rank, e.get("id"), e.get("count") or nthreads)
                if len(bars[key]) == 1:
                    continue        # joins the threads of this role only: program order in the skeleton
                r.lines.append(Line(f"bar.{e.get('mode')} {bar_id[key]}, {len(bars[key])}", *src, k))
            elif k == "cluster_barrier":
                r.lines.append(Line(render_instr(replace(e.instr, predicate=None)), *src, k))
            elif k == "tma_load":
                mb = names[_region(e.get("mb"), anchors)]
                dims = int(e.get("dim")[0])
                quals = ".".join(_no_hint(q))
                tail = ""
                if e.get("multicast"):
                    raise Refused("multicast tensor copies are not mapped by ptxmc extract yet",
                                  SourceLoc(sk.path, e.line, e.text))
                for tm, g, v, piece, box in copies[(r.name, i)]:
                    at = ", ".join([str(box)] + ["0"] * (dims - 1))
                    r.lines.append(Line(f"cp.{quals} [{names[piece]}], [{tm}, {{{at}}}], [{mb}]{tail}", *src, k))
            elif k == "tma_store":
                tm, g, v, box = copies[(r.name, i)]
                srcn = names[_region(e.get("src"), anchors)]
                if writers.get(_region(e.get("src"), anchors)) is not None:
                    sk.checks.append(f"{g}!={writers[_region(e.get('src'), anchors)]}")
                dims = int(e.get("dim")[0])
                at = ", ".join([str(box)] + ["0"] * (dims - 1))
                r.lines.append(Line(f"cp.{'.'.join(_no_hint(q))} [{tm}, {{{at}}}], [{srcn}]", *src, k))
            elif k in ("bulk_commit_group", "bulk_wait_group", "wgmma_fence", "wgmma_commit_group", "wgmma_wait"):
                prev_mma = None
                r.lines.append(Line(render_instr(replace(e.instr, predicate=None)), *src, k))
            elif k.startswith("tc_"):
                tm = f"tmem_c{r.rank}" if ncta > 1 else "tmem"
                quals = ".".join(q)
                if k == "tc_alloc":
                    text = f"tcgen05.{quals} [{names[_region(e.get('loc'), anchors)]}], {e.get('cols')}"
                elif k == "tc_dealloc":
                    text = f"tcgen05.{quals} [{tm}], {e.get('cols')}"
                elif k == "tc_commit":
                    mb = _region(e.get("mb"), anchors)
                    if r.mult[i] * 1 % scale[mb]:
                        raise Refused("tcgen05.commit arrival count cannot be scaled exactly",
                                      SourceLoc(sk.path, e.line, e.text))
                    text = f"tcgen05.{quals} [{names[mb]}]"
                elif k == "tc_mma":
                    srcs = [f"[{names[_region(x, anchors)]}]" if x is not None else f"[{tm}]" for x in e.get("srcs")]
                    if prev_mma == srcs:
                        continue        # one mma per tile pair between commits
                    prev_mma = srcs
                    text = f"tcgen05.{quals} [{tm}], {srcs[0]}, {srcs[1]}, idesc, pz"
                elif k in ("tc_ld", "tc_st") and r.lines and r.lines[-1].kind == k:
                    continue        # one Tensor Memory access between synchronizations
                elif k == "tc_ld":
                    text = f"tcgen05.ld.sync.aligned.32x32b.x1.b32 {{t{reg_no}}}, [{tm}]"
                    reg_no += 1
                elif k == "tc_st":
                    text = f"tcgen05.st.sync.aligned.32x32b.x1.b32 [{tm}], {{tz}}"
                else:
                    text = render_instr(replace(e.instr, predicate=None))
                if k != "tc_mma":
                    prev_mma = None
                r.lines.append(Line(text, *src, k))
            elif k == "wgmma_mma":
                srcs = [names[_region(x, anchors)] for x in e.get("srcs")]
                if prev_mma == srcs:
                    continue            # one wgmma per tile pair and commit group
                prev_mma = srcs
                quals = ".".join(q)
                a = f"[{srcs[0]}]" if len(srcs) == 2 else "{a0}"
                b = f"[{srcs[-1]}]"
                tail = ", 1, 1, 0, 0" if any(x in q for x in ("f16", "bf16")) and len(srcs) == 2 else \
                    (", 1, 1, 0" if any(x in q for x in ("f16", "bf16")) else
                     (", 1, 1" if any(x in q for x in ("tf32", "e4m3", "e5m2")) else ""))
                r.lines.append(Line(f"wgmma.{quals} {{d0}}, {a}, {b}, pz{tail}", *src, k))
            elif k == "smem":
                reg = _region(e.get("loc"), anchors)
                key = (reg, e.get("write"), e.get("value") if e.get("write") else None)
                if prev_smem == key:
                    continue            # one access per piece between synchronizations (a store of
                    # another value is kept: the last value stored is the one a reader must see)
                prev_smem = key
                space = "shared::cluster" if reg[0] != r.rank else "shared::cta"
                sem = e.get("sem")
                semq = "" if sem in ("weak",) else f".{sem}"
                if sem not in ("weak", "volatile"):
                    scope = next((x for x in q if x in ("cta", "cluster", "gpu", "sys")), "cta")
                    semq += f".{scope}"
                if sem == "volatile":
                    semq = ".relaxed.cta"
                nbytes = e.get("bytes")
                bits = {1: 8, 2: 16, 8: 64}.get(nbytes, 32)
                if e.get("write"):
                    v = e.get("value")
                    v = v if isinstance(v, int) else DATA
                    v &= (1 << bits) - 1
                    r.lines.append(Line(f"st{semq}.{space}.b{bits} [{names[reg]}], {v}", *src, k))
                else:
                    rn = f"r{reg_no}"
                    reg_no += 1
                    r.lines.append(Line(f"ld{semq}.{space}.b{bits} {rn}, [{names[reg]}]", *src, k))
                    value = _expected(sk, r, i, reg, anchors, copies, phase_copies, last_wait_phase)
                    if value is None:
                        value = writers.get(reg)
                    if value is None:
                        value = _expected_store(sk, r, i, reg, anchors, last_wait_phase)
                    if value is not None:
                        sk.checks.append(f"{r.name}:{rn}!={value}")
                continue
            else:
                raise Refused(f"no emission for {k}", SourceLoc(sk.path, e.line, e.text))
            prev_smem = None

    # a CTA's shared memory lives while one of its threads runs: the access is late only in an
    # execution in which every role of the CTA ends without seeing it
    for shadow, reads in exit_reads.items():
        reader, rank, line = exits[shadow]
        cond = " /\\ ".join(reads)
        sk.checks.append(cond)
        sk.why[cond] = (f"CTA {rank} ({', '.join(x.split(':')[0] for x in reads)}) may end while {reader} still "
                        f"accesses its shared memory: the access at PTX L{line} is not ordered before any of "
                        "the CTA's threads ends (a cluster barrier with a release arrive after it; docs/extract.md, "
                        "distributed shared memory)")


def _locs(e: Event):
    """The shared-memory bytes event `e` names (its Loc operands, and its sources')."""
    for k, v in e.info:
        yield from [v] if isinstance(v, Loc) else [x for x in v if isinstance(x, Loc)] if k == "srcs" else []


def _last(r: Role):
    """The event a role's end is reported at: its last one (a role has at least one)."""
    return r.trace.events[-1]


# asynchronous instructions whose access of another CTA's shared memory completes there (A2), after
# the issue: the exit shadow word of _exit_shadows cannot follow their completion
ASYNC_REMOTE = {"tma_load": "a tensor copy into it, completing on its mbarrier",
                "tc_commit": "the arrive-on of tcgen05.commit on its mbarrier"}


def _exit_shadows(sk: Skeleton, owner, exits: dict) -> dict:
    """Distributed shared memory: a CTA must not exit while another CTA of its cluster still
    accesses its shared memory (CUDA C++ Programming Guide, Thread Block Clusters, Distributed
    Shared Memory: the kernel synchronizes the cluster before it exits for this reason). The
    model has no event for a CTA's exit, so a shadow word `ROLE_exit_cN` in CTA N's shared memory
    stands for it: the role writes 1 there just after its last access of CTA N's memory (any
    operation on a location of CTA N: data, an mbarrier), and every role of CTA N reads it at
    its end; the memory lives while one of them runs, so no execution may have all of them
    miss it (`forbidden: A:rK=0 /\\ B:rJ=0`, built by _emit): the access is ordered before
    some thread of CTA N ends. A CTA none of whose threads synchronizes is refused. A kernel without that order (no cluster barrier after the access,
    or a `.relaxed` arrive that orders nothing before it) fails this check: a finding, never a
    PASS. Returns {(role, event index): [(when, shadow, value written or None, check)]}, and
    records each shadow word's (reader role, CTA rank, PTX line of the last access) in `exits`."""
    out: dict[tuple, list] = defaultdict(list)
    for r in sk.roles:
        last: dict[int, int] = {}
        for i, e in enumerate(r.trace.events):
            for loc in _locs(e):
                if loc.rank != r.rank:
                    last[loc.rank] = i
                    if e.kind in ASYNC_REMOTE:
                        raise Refused(f"an asynchronous access of CTA {loc.rank}'s shared memory ({ASYNC_REMOTE[e.kind]}): "
                                      f"it completes in CTA {loc.rank}, after its issue, and that the CTA is still "
                                      "running then is not checked by ptxmc extract (the CTA-exit shadow word can only follow "
                                      "the issue: it passed a kernel in which no thread of that CTA waits for the copy, "
                                      "and failed one in which one does)", SourceLoc(sk.path, e.line, e.text))
        for rank, i in sorted(last.items()):
            if not any(r2.rank == rank for r2 in sk.roles):
                e = r.trace.events[i]
                raise Refused(f"an access of CTA {rank}'s shared memory, but no thread of CTA {rank} synchronizes: "
                              f"that the CTA is still running then cannot be checked", SourceLoc(sk.path, e.line, e.text))
            nm = f"{r.name}_exit_c{rank}"
            sk.memory[nm] = {"space": "shared", "owner": owner(rank), "size": 4}
            exits[nm] = (r.name, rank, r.trace.events[i].line)
            out[(r.name, i)].append(("after", nm, 1, None))
            for r2 in sk.roles:
                if r2.rank == rank:
                    out[(r2.name, len(r2.trace.events))].append(("before", nm, None, "=0"))
    return out


def _shadows(sk: Skeleton, anchors, names: dict, owner) -> dict:
    """For each reused mbarrier (skeleton._lifetimes), a shadow word `NAME_life`: its init role
    writes 1 just before `mbarrier.init`, its inval role 2 just after `mbarrier.inval`; each
    role reads it just after its last access of the bytes as data before the init (it must not
    see 1: the access is ordered before the init) and just before its first access after the
    inval (it must see 2: the access is ordered after the inval). A wrong lifetime guess, or a
    kernel whose lifetimes overlap, fails these checks: a finding, never a hidden race.
    Returns {(role, event index): [(when, shadow, value written or None, check of the value read)]}."""
    out: dict[tuple, list] = defaultdict(list)
    shadow_of: dict[tuple, str] = {}
    for loc in sk.reused:
        reg = _region(loc, anchors)
        nm = f"{names[reg]}_life"
        sk.memory[nm] = {"space": "shared", "owner": owner(loc.rank), "size": 4}
        shadow_of[(loc.rank, loc.symbol, loc.offset)] = nm

    def shadow(loc: Loc) -> str | None:
        cands = [(off, nm) for (rk, sym, off), nm in shadow_of.items()
                 if rk == loc.rank and sym == _base(loc.symbol) and off <= loc.offset]
        return max(cands)[1] if cands else None

    for r in sk.roles:
        first_post: dict[str, int] = {}
        last_pre: dict[str, int] = {}
        for i, e in enumerate(r.trace.events):
            if e.kind in ("mb_init", "mb_inval") and _region(e.get("mb"), anchors) in \
                    {_region(x, anchors) for x in sk.reused}:
                nm = shadow(e.get("mb"))
                out[(r.name, i)].append(("before", nm, 1, None) if e.kind == "mb_init" else ("after", nm, 2, None))
            for loc in _locs(e):
                if LIFE not in loc.symbol:
                    continue
                nm = shadow(loc)
                if loc.symbol.endswith(LIFE + "pre"):
                    last_pre[nm] = max(last_pre.get(nm, i), _completed(sk, r, i))
                else:
                    first_post.setdefault(nm, i)
        for nm, i in last_pre.items():
            out[(r.name, i)].append(("after", nm, None, "=1"))        # forbidden: it saw the init's write
        for nm, i in first_post.items():
            out[(r.name, i)].append(("before", nm, None, "!=2"))      # forbidden: it missed the inval's
    return out


def _inval_bytes(mb: Loc, anchors, names: dict) -> list[tuple]:
    """The pieces of the data lifetime after an mbarrier's inval (`SYMBOL~post`, skeleton._lifetimes)
    that hold bytes of the 8-byte object: the inval writes them (docs/model.md#a7-inval-proxy), and
    the skeleton gives each such piece a generic store at the inval. None when the bytes are not
    reused after it."""
    sym = mb.symbol + LIFE + "post"
    offs = sorted(anchors.get((mb.rank, sym), [0]))
    out = []
    for k, start in enumerate(offs):
        end = offs[k + 1] if k + 1 < len(offs) else None
        if start < mb.offset + 8 and (end is None or end > mb.offset) and (mb.rank, sym, start) in names:
            out.append((mb.rank, sym, start))
    return out


def _completed(sk: Skeleton, r: Role, i: int) -> int:
    """The index of the event of role `r` after which its access `i` of bytes later reused as an
    mbarrier is complete, so that the lifetime's shadow read placed after it follows the access
    (the shadow's placement rule, 0ba9a89: a read's shadow after the access). A generic access is
    complete at itself; an asynchronous read completes at the role's first `wait_group 0` of its
    kind after a `commit_group` (`cp.async.bulk.wait_group{.read} 0` for a TMA store's source,
    `wgmma.wait_group 0` for a wgmma operand). Read after the issue instead, the shadow passed a
    TMA store whose source was still being read when another role initialised the mbarrier there
    (two litmus locations: the in-flight read was seen by nothing). Any other asynchronous access
    (a copy into the bytes, completing on an mbarrier; a tcgen05.mma; a wait that is not 0) is
    refused, naming its line."""
    e = r.trace.events[i]
    kinds = {"tma_store": ("bulk_commit_group", "bulk_wait_group"),
             "wgmma_mma": ("wgmma_commit_group", "wgmma_wait")}.get(e.kind)
    if e.kind in ("smem", "tc_alloc"):
        return i
    if kinds is not None:
        committed = False
        for j in range(i + 1, len(r.trace.events)):
            x = r.trace.events[j]
            committed = committed or x.kind == kinds[0]
            if committed and x.kind == kinds[1] and x.get("n") == 0:
                return j
    raise Refused(f"{e.kind.replace('_', ' ')} of bytes that later become an mbarrier (mbarrier.init at another "
                  "lifetime of them): ptxmc extract checks the lifetimes' order with a shadow word read after the "
                  "access, and this asynchronous access completes after its issue at no wait_group 0 of its role "
                  "that the shadow could follow: not modelled", SourceLoc(sk.path, e.line, e.text))


def _separated_counts(sk: Skeleton, bars: dict, nthreads: int, owner) -> tuple[dict, dict]:
    """One hardware barrier used with two thread counts (Gluon's and Triton's `bar.sync 0` for the
    CTA and `bar.sync 0, 128` in one warpgroup) becomes two litmus barriers, which is exact only
    when no arrival at one use can count towards a generation of the other in progress. Handled
    shape: a wide use W and a narrow use S, every role of S also in W, every role of W at W equally
    often, and the roles of S interleaving their uses of S and W alike. A generation of W that such
    a role reaches before a generation of S is complete before any arrival at S (program order);
    one it reaches after needs the arrivals of the roles outside S ordered after that S generation
    completes. A shadow word `bar<ID>_<COUNT>_g<K>` checks it: the first role of S writes 1 just
    after its K-th S, each role outside S reads it just before its arrival at that W generation,
    and must not see 0. Warps 0-3 at `bar.sync 1, 128` while nothing keeps warps 4-7 from
    arriving at `bar.sync 1, 256` (whose arrivals would count towards it) fail that check. Other
    shapes are refused at their PTX line. Returns ({(role, event index): [(when, shadow, value
    written or None, check)]}, {shadow: what a failed check means}), as _store_shadows."""
    out: dict[tuple, list] = defaultdict(list)
    whys: dict[str, str] = {}
    by_id: dict[tuple[int, int], list] = defaultdict(list)
    for key in bars:
        by_id[key[:2]].append(key)
    for (rank, bid), keys in sorted(by_id.items()):
        if len(keys) == 1:
            continue
        uses: dict[tuple, dict[str, list[int]]] = {k: defaultdict(list) for k in keys}
        first: dict[tuple, Event] = {}
        events: dict[tuple, Event] = {}
        for r in sk.roles:
            if r.rank != rank:
                continue
            for i, e in enumerate(r.trace.events):
                if e.kind == "barrier" and e.get("id") == bid:
                    k = (rank, bid, e.get("count") or nthreads)
                    uses[k][r.name].append(i)
                    first.setdefault(k, e)
                    events[(r.name, i)] = e
        wide = [w for w in keys if all(set(uses[x]) <= set(uses[w]) for x in keys)]
        ok = len(keys) == 2 and len(wide) == 1 and len({len(v) for v in uses[wide[0]].values()}) == 1
        if ok:
            w = wide[0]
            narrow = next(k for k in keys if k != w)
            # for each S generation, the first W generation each role of S reaches after it
            after = {tuple(sum(1 for j in uses[w][rn] if j < i) for i in uses[narrow][rn]) for rn in uses[narrow]}
            ok = len(after) == 1 and len({len(v) for v in uses[narrow].values()}) == 1
        if not ok:
            e = max((first[k] for k in keys), key=lambda x: x.line)
            shown = ", ".join(f"{k[2]} threads (L{first[k].line})" for k in sorted(keys))
            raise Refused(f"barrier {bid} is used with {shown}: an arrival at one use may count towards the other "
                          "while it is in progress (the same hardware barrier); ptxmc extract maps it only for a "
                          "wider use and a narrower one whose threads all take part in the wider one, in the same "
                          "order", SourceLoc(sk.path, e.line, e.text))
        writer = sorted(uses[narrow])[0]
        outside = sorted(set(uses[w]) - set(uses[narrow]))
        for g, h in enumerate(next(iter(after))):
            if h >= len(uses[w][writer]) or not outside:
                continue                # no W generation after this S generation
            nm = f"bar{bid}_{narrow[2]}_g{g}" + (f"_c{rank}" if sk.cluster > 1 else "")
            sk.memory[nm] = {"space": "shared", "owner": owner(rank), "size": 4}
            out[(writer, uses[narrow][writer][g])].append(("after", nm, 1, None))
            s_e = events[(writer, uses[narrow][writer][g])]
            for x in outside:
                out[(x, uses[w][x][h])].append(("before", nm, None, "=0"))   # forbidden: S still in progress
            whys[nm] = (f"(just before its arrival at barrier {bid} with {w[2]} threads) may come while {writer}'s "
                        f"barrier {bid} with {narrow[2]} threads at PTX L{s_e.line} is in progress: the hardware barrier "
                        "counts its arrivals towards either (docs/extract.md, one barrier with two counts)")
    return out, whys


def _store_shadows(sk: Skeleton, anchors, names: dict, owner) -> tuple[dict, dict]:
    """A piece that the generic stores of two or more roles write (the lanes of a warp beside its
    elected lane, folded apart because nothing orders their stores before its arrive) stands for
    different bytes per role: a reader's value check cannot tell whose store it read (each role's
    store covers the piece, so an ordered one hides an unordered one). For each such role W a
    shadow word `PIECE_by_W`: W writes 1 just after its first store to the piece, each other role
    reads it just before its first read of the piece, which must not see 0 (W's store is ordered
    before the read). After the store and before the read, so that whatever orders the shadow
    words orders the data too: `fix` inserting a barrier between a shadow and its access (before
    the store, after the read) fails the check instead of passing it. Only for a writer W beside another writer of the piece in one of its warps
    that arrives on an mbarrier after its store (the elected lane publishing for its warp: other
    roles' stores to one piece usually stand for other bytes of it, which the reader need not
    read, a warpgroup's own part of a buffer behind its own named barrier), only pieces of the
    readers' and writers' own CTA that no other kind of access
    names (copies, wgmma operands keep their own checks), and only writers that pass no full-mask
    `bar.warp.sync` after the store: the skeleton drops it, and the order it gives the store before
    another lane's arrive (a role of its own when the lanes merged with idle lanes of another warp)
    would be missing, a race the kernel does not have. Returns {(role, event index): [(when,
    shadow, value written or None, check of the value read)]}, as _shadows, and for each shadow
    word what a failed check means."""
    out: dict[tuple, list] = defaultdict(list)
    whys: dict[str, str] = {}
    first_store: dict[tuple, dict[str, int]] = defaultdict(dict)
    first_read: dict[tuple, dict[str, int]] = defaultdict(dict)
    other: set = set()
    for r in sk.roles:
        for i, e in enumerate(r.trace.events):
            for loc in _locs(e):
                reg = _region(loc, anchors)
                if e.kind != "smem" or reg[0] != r.rank:
                    other.add(reg)
                elif e.get("write"):
                    first_store[reg].setdefault(r.name, i)
                else:
                    first_read[reg].setdefault(r.name, i)
    for reg, stores in sorted(first_store.items()):
        if len(stores) < 2 or reg in other or reg not in names:
            continue
        role_of = {x.name: x for x in sk.roles}
        for w, i in sorted(stores.items()):
            if any(p > i for p in role_of[w].trace.warpsyncs):
                continue
            if not any(set(role_of[w2].warps) & set(role_of[w].warps)
                       and any(e.kind == "mb_arrive" for e in role_of[w2].trace.events[j:])
                       for w2, j in stores.items() if w2 != w):
                continue
            readers = [(rd, j) for rd, j in sorted(first_read.get(reg, {}).items()) if rd != w]
            if not readers:
                continue
            nm = f"{names[reg]}_by_{w}"
            sk.memory[nm] = {"space": "shared", "owner": owner(reg[0]), "size": 4}
            out[(w, i)].append(("after", nm, 1, None))
            e = next(x for x in sk.roles if x.name == w).trace.events[i]
            whys[nm] = (f"of {names[reg]} may miss {w}'s store at PTX L{e.line}: nothing orders that store "
                        "before the read (docs/extract.md, stores of several roles)")
            for rd, j in readers:
                out[(rd, j)].append(("before", nm, None, "=0"))  # forbidden: it missed w's store
    return out, whys


def _no_reuse(sk: Skeleton, anchors, mbars) -> None:
    """Shared memory that is an mbarrier for a while and data at another time (an mbarrier
    invalidated and its bytes reused for a tile or a Tensor Memory address) would need one
    litmus location per lifetime; merging them is refused by ptxmc and splitting them could hide
    a race between the lifetimes. Refused, with both lines."""
    for r in sk.roles:
        for e in r.trace.events:
            for k in ("loc", "dst", "src"):
                loc = e.get(k)
                if loc is None or _region(loc, anchors) not in mbars:
                    continue
                mb_use = next(e2 for r2 in sk.roles for e2 in r2.trace.events
                              if e2.get("mb") is not None and _region(e2.get("mb"), anchors) == _region(loc, anchors))
                raise Refused(f"these shared bytes are an mbarrier at L{mb_use.line} ('{_clip(mb_use.text)}') and data "
                              "here: memory reused across lifetimes (mbarrier.inval, then data) is not modelled by "
                              "ptxmc extract yet", SourceLoc(sk.path, e.line, e.text))


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


def _copies_first(events: list[Event], anchors) -> set:
    """The mbarriers on which this role issues its tensor copies before the `expect_tx` that
    accounts for them (CUTLASS's epilogue loads C, then calls expect_transaction): on those,
    an expect_tx covers the copies since the previous one (complete_tx may precede expect_tx
    in a phase: the tx-count goes below zero until the expectation is set)."""
    seen: dict = {}
    for e in events:
        if e.kind in ("mb_arrive", "mb_expect_tx") and e.get("tx") is not None:
            seen.setdefault(_region(e.get("mb"), anchors), "tx")
        elif e.kind == "tma_load":
            seen.setdefault(_region(e.get("mb"), anchors), "copy")
    return {mb for mb, k in seen.items() if k == "copy"}


def _preceding(events: list[Event], i: int, mb: tuple, anchors):
    """The indices of the tensor copies before events[i] that complete on mbarrier `mb`, back to
    the previous expect_tx on it."""
    for j in range(i - 1, -1, -1):
        e = events[j]
        if e.kind in ("mb_arrive", "mb_expect_tx") and e.get("tx") is not None and _region(e.get("mb"), anchors) == mb:
            return
        if e.kind == "tma_load" and _region(e.get("mb"), anchors) == mb:
            yield j


def _following(events: list[Event], i: int, mb: tuple, anchors):
    """The indices of the tensor copies after events[i] that complete on mbarrier `mb`, up to the
    next expect_tx on it."""
    for j, e in enumerate(events[i + 1:], i + 1):
        if e.kind in ("mb_arrive", "mb_expect_tx") and e.get("tx") is not None and _region(e.get("mb"), anchors) == mb:
            return
        if e.kind == "tma_load" and _region(e.get("mb"), anchors) == mb:
            yield j


def _expected_store(sk, role, i, reg, anchors, last_wait_phase) -> int | None:
    """The value a generic read of piece `reg` at role.events[i] must see when another role W
    writes the piece with generic stores of several values (no other role or copy writes it) and
    is the only role that arrives on the mbarrier this role last waited on, each of its arrives
    completing one phase (its count is the init's; no expect_tx, copy or commit on it): W's last
    store to the piece before the arrive that completes the awaited phase. None (no check) where
    that is not so, where the wait's parity is not its phase's (a producer's first wait, which
    passes at once), or where W stores nothing before that arrive. A store after the arrive (the
    data published too late) used to go unchecked: PASS for a kernel that reads a stale value."""
    wait = next((e for e in reversed(role.trace.events[:i]) if _acquires(e)), None)
    if wait is not None and wait.kind == "barrier":
        return _expected_after_barrier(sk, role, i, reg, anchors, wait)
    if wait is None or wait.kind != "mb_wait":
        return None     # the last acquire before the read is another barrier, or there is none
    mb = _region(wait.get("mb"), anchors)
    phase = last_wait_phase.get(mb)
    if phase is None or wait.get("parity") != phase % 2:
        return None
    inits, arrives, stores = [], [], []
    for r in sk.roles:
        for j, e in enumerate(r.trace.events):
            if e.kind == "smem" and e.get("write") and _region(e.get("loc"), anchors) == reg:
                stores.append((r, j, e))
            elif e.kind == "tma_load" and reg in {_region(x, anchors) for x in _locs(e)}:
                return None
            if e.get("mb") is None or _region(e.get("mb"), anchors) != mb:
                continue
            if e.kind == "mb_init":
                inits.append(e.get("count"))
            elif e.kind == "mb_arrive" and e.get("tx") is None and not e.get("drop"):
                arrives.append((r, j, r.mult[j] * e.get("count")))
            elif e.kind not in ("mb_wait",):
                return None         # expect_tx, a copy or commit completing on it, an inval
    owners = {r.name for r, _, _ in arrives} | {r.name for r, _, _ in stores}
    if len(inits) != 1 or len(owners) != 1 or role.name in owners or not arrives or not stores \
            or any(n != inits[0] for _, _, n in arrives) or phase >= len(arrives):
        return None
    at = arrives[phase][1]
    return _last_before(stores, at, role.trace.events[i])


def _last_before(stores, at: int, read: Event) -> int | None:
    """The value the last of `stores` (role, index, event) before index `at` wrote, as `read`
    sees it (None where there is none, or it writes another number of bytes than `read` reads)."""
    before = [e for _, j, e in stores if j < at]
    if not before or before[-1].get("bytes") != read.get("bytes"):
        return None
    v = before[-1].get("value")
    bits = {1: 8, 2: 16, 8: 64}.get(before[-1].get("bytes"), 32)
    return (v if isinstance(v, int) else DATA) & ((1 << bits) - 1)


def _acquires(e: Event) -> bool:
    """An event after which a role may see another role's stores it did not see before: a wait,
    a blocking CTA barrier, a cluster barrier's wait."""
    return e.kind == "mb_wait" or (e.kind == "barrier" and e.get("mode") != "arrive") or \
        (e.kind == "cluster_barrier" and e.get("mode") == "wait")


def _expected_after_barrier(sk, role, i, reg, anchors, bar: Event) -> int | None:
    """As _expected_store, where the last acquire before the read is a CTA barrier (`bar.sync`,
    the reader's g-th at that barrier) and one other role W writes the piece with several values:
    W's last store before its own g-th arrival there (each role arrives once per generation, the
    extractor maps a barrier only when its users are exactly its count). Where W's arrival is a
    `bar.arrive` (it goes on at once), only if W synchronizes nothing after it: a later store it
    published otherwise (an mbarrier the reader waits on before the barrier) may be the one meant.
    A store after the arrival (`bar.arrive`, then the next value) used to go unchecked."""
    key = (bar.get("id"), bar.get("count"))
    gen = sum(1 for e in role.trace.events[:i] if e.kind == "barrier" and (e.get("id"), e.get("count")) == key) - 1
    stores, writers = [], set()
    for r in sk.roles:
        for j, e in enumerate(r.trace.events):
            if e.kind == "smem" and e.get("write") and _region(e.get("loc"), anchors) == reg:
                stores.append((r, j, e))
                writers.add(r.name)
            elif e.kind != "smem" and reg in {_region(x, anchors) for x in _locs(e)}:
                return None     # a copy or another kind of access: not this rule's
    if len(writers) != 1 or role.name in writers or len({(e.get("value"), e.get("bytes")) for _, _, e in stores}) < 2:
        return None
    w = stores[0][0]
    if w.rank != role.rank:
        return None
    mine = [j for j, e in enumerate(w.trace.events) if e.kind == "barrier" and (e.get("id"), e.get("count")) == key]
    if gen < 0 or gen >= len(mine):
        return None
    at = mine[gen]
    if w.trace.events[at].get("mode") == "arrive" and any(
            e.kind not in ("smem",) for e in w.trace.events[at + 1:]):
        return None
    return _last_before(stores, at, role.trace.events[i])


def _expected(sk, role, i, reg, anchors, copies, phase_copies, last_wait_phase) -> int | None:
    """The value a generic read of piece `reg` at role.events[i] must see: the copy into that
    piece that completes the phase of the last mbarrier this role waited on."""
    for e in reversed(role.trace.events[:i]):
        if e.kind == "mb_wait":
            mb = _region(e.get("mb"), anchors)
            phase = last_wait_phase.get(mb)
            groups = phase_copies.get(mb, [])
            if phase is None or phase >= len(groups):
                return None
            hits = [v for rn, j, dst, v in groups[phase] if dst == reg]
            return hits[-1] if len(hits) == 1 else None
    return None
