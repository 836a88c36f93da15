"""One PTX thread of a kernel, run concretely: its path and the synchronization it performs.

The thread's identity (`%tid`, `%laneid`, `%ctaid`, `%cluster_ctarank`) is known, so every value
that depends only on it, on constants and on addresses is computed exactly: role predicates,
warp indices broadcast with `shfl.sync.idx`, `elect.sync` (lane 0 is the leader), loop counters,
the stage and phase of a pipeline, barrier ids and counts, mbarrier addresses. Shared variables
get fixed addresses (checker.extract.layout), so address arithmetic, `cvta` and wgmma descriptors
are computed and traced back to a variable and a byte offset.

What the thread cannot know is *unknown*: kernel parameters (a loop trip count), loaded data,
floating-point results. A branch on an unknown predicate is decided and the decision recorded
(`Trace.assumptions`): a backward branch (a loop) is taken until the loop body has run
`iterations` times; a forward one takes the direction that performs more synchronization
(ties: fall through). A wait (`mbarrier.try_wait`/`test_wait`) is taken to succeed, and the
branch that would retry must lead straight back to a wait: a spin loop becomes one await.

Synchronization under an unknown guard, an address that cannot be traced, an instruction with no
model: a LitmusError naming the PTX line. Data movement in global memory with no ordering
semantics (weak `ld`/`st.global`) is the data path: dropped and counted.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..ast import Addr, Imm, Instr, Name, Reg, Sink, Vec, Float
from ..errors import LitmusError, SourceLoc
from .facts import Cond, Var, _leaves, combine, comparison, implied, record, term_text, width
from .layout import GENERIC_SHARED, Layout, Loc
from .loops import SYNC_OPS, WAITS, nest, work_after
from .module import Function


@dataclass(frozen=True)
class Unk:
    """A value the thread cannot know (a parameter, loaded data, a float)."""

    why: str
    # an unknown predicate that compares an unknown register with a constant (checker.extract.facts);
    # not part of the value's identity, so that it changes nothing where it is not read
    cond: Cond | None = field(default=None, compare=False, repr=False)
    # which value it is, for the facts (checker.extract.facts): a kernel parameter's bytes
    # (`parameter n@4:32`: the same value in every register and thread it is loaded into,
    # whatever is written in between), else the register and write that made it (`r9#3`: a copy
    # with `mov` is the same value)
    src: str | None = field(default=None, compare=False, repr=False)
    # `selp.T d, A, B, c` with constants A, B and an unknown predicate c: (c's Cond, A, B), so that a
    # comparison of d with a constant is c, its negation, or a constant (nvcc's `selp` + `setp`)
    sel: tuple | None = field(default=None, compare=False, repr=False)
    # the value is `src` + add (modulo 2^addbits): `add.s32 %r8, %r9, 1` on a named value
    add: int = field(default=0, compare=False, repr=False)
    addbits: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True)
class Sym:
    """An address outside shared memory: a kernel parameter's (`param:NAME`) or a pointer read
    from one (`arg:NAME`); `off` None when an unknown amount was added."""

    name: str
    off: int | None = 0


@dataclass(frozen=True)
class Ident:
    tid: tuple[int, int, int]
    ntid: tuple[int, int, int]
    ctaid: tuple[int, int, int] = (0, 0, 0)
    rank: int = 0                     # %cluster_ctarank
    nrank: int = 1

    @property
    def linear(self) -> int:
        x, y, z = self.tid
        return x + self.ntid[0] * (y + self.ntid[1] * z)

    @property
    def lane(self) -> int:
        return self.linear % 32

    @property
    def warp(self) -> int:
        return self.linear // 32


@dataclass(frozen=True)
class Event:
    """A synchronization-relevant operation the thread performs, with its operands resolved."""

    kind: str
    line: int
    text: str
    instr: Instr
    info: tuple                       # sorted (key, value) pairs

    def get(self, key: str, default=None):
        return dict(self.info).get(key, default)


@dataclass
class Trace:
    ident: Ident
    events: list[Event] = field(default_factory=list)
    assumptions: list[tuple[int, str]] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    maxnreg: list[tuple[int, str]] = field(default_factory=list)
    shfl: dict = field(default_factory=dict)        # (stmt, occurrence) -> value (lane 0's, for its warp)
    stores: list = field(default_factory=list)      # (rank, byte address, byte value, barrier counts)
    # per event: the barrier generations the thread has passed, ((id, count), n) pairs (count None:
    # the whole CTA): which lifetime of reused shared memory an access falls in (skeleton._lifetimes)
    gens: list = field(default_factory=list)
    # the outer loops of loop nests this thread closed after `--tiles` trips: line -> trips, and
    # why their exits were unknown (a parameter: the tile count, which other roles' loops share)
    tiles: dict = field(default_factory=dict)
    tile_whys: set = field(default_factory=set)
    # where the thread passed a full-mask `bar.warp.sync` (dropped: it orders lanes of one warp):
    # the number of events before it; role folding asks whether it orders one lane's accesses
    # before another lane's release (skeleton._fold_keeps_order)
    warpsyncs: list = field(default_factory=list)
    # the decisions this thread took on questions about kernel parameters only, (formula, truth,
    # line): every later thread of the kernel follows them (skeleton._run_all)
    decided: list = field(default_factory=list)
    # unknown values stored to shared memory, (rank, byte address, bytes, name, add, addbits,
    # barrier counts): a thread that loads exactly those bytes after a barrier reads that value,
    # named the same in every thread (facts on it are shared like a parameter's)
    named_stores: list = field(default_factory=list)
    names_read: set = field(default_factory=set)        # the named stored values it loaded
    # decisions on values the facts do not follow exactly but other threads may ask about (a
    # function of a parameter the extractor does not model, global data a store may write), whose
    # sides differ in synchronization: (line, text, predicate, why, roots); refused where another
    # thread decides a question on the same roots (skeleton._run_all)
    risky: list = field(default_factory=list)
    # every decision this thread took, (formula, truth, line), those on its own unnamed values
    # too (which `decided` leaves out): a risky decision on an opaque computation of a value
    # beside one on the value itself is refused (skeleton._one_thread)
    own_decided: list = field(default_factory=list)


class Refused(LitmusError):
    """Something the extractor cannot model, at a PTX line."""


class _SecondTrip(Exception):
    """A side of a branch explored with `--tiles 1` went back to the head of the outer loop."""

    def __init__(self, head: int):
        super().__init__(head)
        self.head = head


FLOAT_TYPES = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2"}
_INT_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "b32": 32, "u32": 32, "s32": 32,
             "b64": 64, "u64": 64, "s64": 64, "pred": 1}
_PURE_DATA = {"fma", "ex2", "lg2", "rcp", "sqrt", "rsqrt", "tanh", "sin", "cos", "copysign", "mma", "dp4a", "dp2a",
              "vote", "match", "redux", "activemask", "createpolicy", "fns", "cvt", "cvt.pack", "abs", "neg",
              "testp", "mul24", "mad24", "sad", "lop3", "prmt", "popc", "clz", "brev", "bfind", "min", "max",
              "div", "rem", "bfi", "bmsk", "szext", "movmatrix", "cvt", "set", "slct", "shf", "addc", "subc",
              "madc", "mad", "mul", "add", "sub", "and", "or", "xor", "not", "shl", "shr", "bfe", "selp", "setp",
              "mov"}


# What a lookup in the environment answers when the key is not there (checker.extract.memo)
ABSENT = object()


class Machine:
    """Runs one thread of `fn` over `layout`. Every lookup in the environment (other threads'
    constants, lane 0's shuffles, parameter values, the tile loops' unknowns) goes through `_read`,
    which records it in `reads`: the run is a function of the thread, its bounds and those answers
    (checker.extract.memo)."""

    def __init__(self, fn: Function, layout: Layout, path: str, iterations: int, lane0: dict | None = None,
                 fork_depth: int = 4, consts: dict | None = None, param_values: dict | None = None,
                 tiles: int | None = None, tile_whys: frozenset = frozenset(), decided: dict | None = None,
                 named: dict | None = None):
        self.fn, self.layout, self.path = fn, layout, path
        # the outer loop of a loop nest whose exit is unknown runs `tiles` trips (None: `iterations`,
        # like every loop); so does a loop whose exit depends on the same unknown (`tile_whys`,
        # found by any thread: a persistent kernel's roles each run the same tile loop)
        self.tiles, self.tile_whys = tiles, tile_whys
        self.param_values = param_values or {}      # parameter -> the value assumed for it
        # (rank, byte address) -> [(writer's barrier counts, byte value, writer tid)]: constants other
        # threads store to shared memory (a warp-specialization state word), visible after a barrier
        self.consts = consts or {}
        self.iterations = iterations
        self.lane0 = lane0 or {}
        self.fork_depth = fork_depth
        self.params = {p[0]: p for p in fn.params}
        self.reads: dict = {}                       # (table, key) -> what the environment answered
        # a parameter's value key -> the decisions earlier threads took on it, ((formula, truth,
        # where), ...): one decision per question for the whole kernel
        self.decided = decided or {}
        # (rank, byte address) -> [(writer's barrier counts, bytes, name, add, addbits, writer)]: the
        # unknown values other threads stored there (Trace.named_stores)
        self.named = named or {}

    def lookup(self, table: str, key):
        """The environment's answer for `key` in `table` (c: constants, l: lane 0's shuffles,
        p: parameter values, w: whether an unknown ends a tile loop, d: the decisions earlier
        threads took on a parameter), not recorded."""
        if table == "c":
            return self.consts.get(key, ABSENT)
        if table == "l":
            return self.lane0.get(key, ABSENT)
        if table == "p":
            return self.param_values.get(key, ABSENT)
        if table == "d":
            return self.decided.get(key, ())
        if table == "s":
            return self.named.get(key, ABSENT)
        return key in self.tile_whys

    def _read(self, table: str, key):
        v = self.reads[(table, key)] = self.lookup(table, key)
        return v

    # -------------------------------------------------------------------------------- run --
    def run(self, ident: Ident) -> Trace:
        st = _State(pc=0, regs={}, taint={}, loops={}, local={}, occ=Counter(), trace=Trace(ident))
        st.bars = Counter()
        st.gens = Counter()
        st.own = {}
        end = self._go(st, 0)
        if end.early is not None:
            self._early_exit(end.early)
        # the facts other threads can ask about: on parameters, named shared values, and values
        # of this thread's registers that it stored to shared memory
        seen = {x[3] for x in end.trace.named_stores} | end.trace.names_read
        end.trace.decided = [(f, truth, line) for f, (truth, line) in end.facts.items()
                             if isinstance(line, int) and all(k[0].startswith(SHARED_NAMES) or k[0] in seen
                                                              for k in Cond(f).keys())]
        end.trace.own_decided = [(f, truth, line) for f, (truth, line) in end.facts.items() if isinstance(line, int)]
        for idx in sorted(end.unused, reverse=True):
            # a non-blocking try_wait whose result no branch read: a query, not a wait
            e = end.trace.events.pop(idx)
            end.trace.assumptions.append((e.line, "non-blocking mbarrier.try_wait whose result is never tested: "
                                                  "dropped (it waits for nothing)"))
        return end.trace

    def _go(self, st: "_State", depth: int) -> "_State":
        body = self.fn.body
        bound = 64 + 64 * self.iterations * self.iterations
        while st.pc < len(body):
            if st.stop and st.pc in st.stop:
                raise _SecondTrip(st.pc)
            if st.early is not None and st.pc == st.early[0]:
                st.early = None             # the facts kept the loop going
            st.visits[st.pc] += 1
            if st.visits[st.pc] > bound:
                raise Refused(f"this statement runs more than {bound} times on the thread's path: a loop whose "
                              "exit the extractor cannot evaluate (it depends on memory it does not track)",
                              self._loc(body[st.pc]))
            s = body[st.pc]
            if s.instr is None:
                st.pc += 1
                continue
            ins = s.instr
            if ins.predicate:
                neg = ins.predicate.startswith("@!")
                g = st.regs.get(ins.predicate.lstrip("@!"), _UNWRITTEN)
                if st.grid and isinstance(g, int) and ins.predicate.lstrip("@!") in st.grid:
                    # computed from the CTA's place in the grid alone (a decision on unknowns
                    # that it enters, CUTLASS's tile index, is one of the table's)
                    end = self._grid_branch(st, s, ins, bool(g) != neg, depth)
                    if end is not None:
                        return end
                if isinstance(g, Unk):
                    if ins.op == "bra" and self._exits_loop(st.pc, s, ins):
                        g = self._leaves(st, s, ins, g)
                    else:
                        g = self._follows(st, s, ins, g)
                if isinstance(g, int):
                    if bool(g) == neg:
                        if ins.op == "bra" and st.taint.get(ins.predicate.lstrip("@!")):
                            self._consume(st, st.taint[ins.predicate.lstrip("@!")])    # a wait's result read
                        st.pc += 1
                        continue
                elif ins.op == "bra":
                    fork = self._unknown_branch(st, s, ins, depth)
                    if fork is not None:
                        return fork
                    continue
                elif ins.op in ("ret", "exit"):
                    return self._unknown_exit(st, s, ins, depth)
                elif self._sync(ins):
                    raise Refused("synchronization under a predicate the thread cannot evaluate "
                                  f"({ins.predicate}: {g.why}): not modelled", self._loc(s))
                else:
                    self._guarded(st, s, ins, g)
                    st.pc += 1
                    continue
            if ins.op == "bra":
                if ins.predicate:
                    self._check_spin(st, s, ins)
                st.pc = self._target(s, ins)
                continue
            if ins.op in ("ret", "exit"):
                break
            if ins.op == "brx":
                idx = self._val(st, ins.operands[0], s)
                table = self.fn.tables.get(ins.operands[1].name) if len(ins.operands) > 1 else None
                if table is None:
                    raise Refused("brx.idx without a .branchtargets table of this function", self._loc(s))
                if not isinstance(idx, int) or not 0 <= idx < len(table):
                    raise Refused(f"brx.idx with an index the thread cannot evaluate ({getattr(idx, 'why', idx)})",
                                  self._loc(s))
                st.pc = self.fn.labels[table[idx]]
                continue
            self._exec(st, s, ins)
            if st.grid or _reads_grid(ins):
                _mark_grid(st, ins)
            st.pc += 1
        return st

    def _grid_branch(self, st: "_State", s, ins: Instr, runs: bool, depth: int):
        """A branch (or `ret`/`exit`, or a guarded instruction) on a value computed from the CTA's
        place in the grid (%ctaid, %clusterid). The skeleton is one cluster, the grid's first
        (%ctaid.x = the CTA's rank); a CTA elsewhere in the grid takes the other side. Where the two
        sides differ in synchronization, the kernel's CTAs synchronize differently and one skeleton
        cannot stand for them: refused (it used to take CTA 0's side silently: PASS for a kernel
        whose other CTAs read a tile without waiting). Else the concrete side's end, run here.
        A guarded instruction that is not a register operation is refused alike."""
        body = self.fn.body
        if ins.op == "bra":
            pcs = (self._target(s, ins), st.pc + 1)
        elif ins.op in ("ret", "exit"):
            pcs = (len(body), st.pc + 1)
        elif ins.op in _ALU_OPS:
            for r in _dests(ins.operands[0]) if ins.operands else ():
                st.grid = st.grid | {r}      # executed here, not elsewhere in the grid (or the reverse)
            return None
        else:
            raise Refused(f"'{ins.op}' under the predicate {ins.predicate}, which depends on the CTA's place in the "
                          "grid (%ctaid, %clusterid): the skeleton is the grid's first cluster, and CTAs elsewhere "
                          "would not run it alike: not modelled", self._loc(s))
        if depth >= self.fork_depth:
            raise Refused(f"this branch depends on the CTA's place in the grid (%ctaid, %clusterid), nested more "
                          f"than {self.fork_depth} deep: not modelled", self._loc(s))
        mine, other = (pcs[0], pcs[1]) if runs else (pcs[1], pcs[0])
        end = self._go(st.copy(mine), depth + 1)
        try:
            alt = self._go(st.copy(other), depth + 1)
        except _SecondTrip:
            alt = None              # it goes on to another trip of an outer loop, this side does not
        if alt is None or [(e.kind, e.line) for e in end.trace.events] != [(e.kind, e.line) for e in alt.trace.events]:
            raise Refused(f"this branch's condition {ins.predicate} depends on the CTA's place in the grid (%ctaid, "
                          "%clusterid) or the warp's hardware slot (%warpid), and its two sides differ in "
                          "synchronization: the skeleton is one cluster, the grid's first (%ctaid.x = its rank, "
                          "%warpid = %tid / 32), and CTAs elsewhere in the grid (warps in other slots) take the other "
                          "side; one skeleton cannot stand for both: not modelled", self._loc(s))
        return end

    def _unknown_branch(self, st: "_State", s, ins: Instr, depth: int):
        """A branch on a value the thread cannot know. The first time: a backward branch (a loop's
        back edge) is taken; a forward one takes the direction that synchronizes more (both are
        run to the end). Each later time the same branch is reached, it goes the same way until
        the loop has run `iterations` times, then the other way (the loop is closed)."""
        self._no_float_decision(st, s, ins)
        target = self._target(s, ins)
        here = st.pc
        bound, outer = self._bound(st, here, ins)
        if here in st.loops:
            direction, n = st.loops[here]
            if outer and self._why(st, ins):    # a trip of an outer loop came back here: the loops
                st.trace.tile_whys.add(self._why(st, ins))      # ending on this unknown are outer too
            if n + 1 < bound:
                st.loops[here] = (direction, n + 1)
                self._decide(st, ins, direction, self._trip(here, s, ins, direction))
                st.pc = target if direction else here + 1
            else:
                # an outer loop's leaving after its `--tiles` trips is a fact (the launch runs that
                # many tiles: every role's tile loop follows it); another loop's is the window's
                del st.loops[here]
                self._closed(st, s, bound, outer)
                self._decide(st, ins, not direction, s.line if outer else None)
                st.pc = here + 1 if direction else target
            return None
        if target <= here:
            if bound <= 1:                  # one trip (iteration): the back edge is not taken
                self._closed(st, s, bound, outer, self._why(st, ins))
                self._decide(st, ins, False, s.line if outer else None)
                st.pc = here + 1
                return None
            st.loops[here] = (True, 1)
            self._decide(st, ins, True, s.line)         # a trip that runs: a fact
            st.pc = target
            return None
        if depth >= self.fork_depth:
            self._note_risky(st, s, ins, st, None, None)
            st.trace.assumptions.append((s.line, "branch not taken (unknown condition; fork depth reached)"))
            st.loops[here] = (False, 1)
            self._decide(st, ins, False, self._trip(here, s, ins, False))
            st.pc = here + 1
            return None
        bound, outer = self._bound(st, here, ins)
        # an exit test before the trip's work (a loop tested at its top, checker.extract.loops): no
        # trip has run when it is first reached, so the side that stays counts from 0 and comes back
        # to it after each trip; taking the exit side here would run no trip at all
        first = outer and work_after(self.fn, here)

        def sides(stop=frozenset(), prior=0):
            a, b = st.copy(target), st.copy(here + 1)
            n = (0 if first else 1) + prior
            a.loops[here], b.loops[here] = (True, n), (False, n)
            self._decide(a, ins, True, self._trip(here, s, ins, True))
            self._decide(b, ins, False, self._trip(here, s, ins, False))
            a.stop, b.stop = st.stop | stop, st.stop | stop
            return a, b

        ran, prior, exit_, last = None, 0, False, False
        if outer and not first:
            # a side that goes back to the loop's head (a second trip) stops there. One trip: the
            # other side is taken. A branch whose sides both go back is no exit: its direction is
            # kept on every trip (counted from 0 like a test at the top; it used to flip on the
            # last trip, said as a loop closed at its line); neither: both sides are as they ran.
            # The trips before this one whose test the facts passed (an earlier thread's decision
            # on the tile count) count: the window is `--tiles` trips in every thread (a thread
            # after the first ran one more trip per thread before it)
            head = nest(self.fn).innermost(here).head
            prior = st.visits[here] - 1
            last = prior + 1 >= bound
            ran = []
            for x in sides(frozenset({head})):
                try:
                    ran.append(self._go(x, depth + 1))
                except _SecondTrip as e:
                    if e.head != head:
                        raise
                    ran.append(None)
            if ran.count(None) == 1 and last:
                chosen = next(x for x in ran if x is not None)
                chosen.trace.assumptions.insert(len(st.trace.assumptions), (
                    s.line, ("branch taken" if chosen is ran[0] else "branch not taken")
                    + f" (its condition {ins.predicate} depends on unknown values; this direction leaves the loop)"))
                self._closed(chosen, s, bound, outer, self._why(st, ins))
                chosen.stop = st.stop
                return chosen
            exit_ = ran.count(None) == 1
            first = ran.count(None) == 2
            ran = None if None in ran else ran
        if ran is None:
            a, b = sides(prior=prior if exit_ and not first else 0)
            ran = [self._go(a, depth + 1), self._go(b, depth + 1)]
        taken, fall = ran
        self._same_lifetimes(s, ins, st.regs.get(ins.predicate.lstrip("@!")), taken, fall)
        pick_taken = len(taken.trace.events) > len(fall.trace.events)
        chosen = taken if pick_taken else fall
        chosen.trace.assumptions.insert(len(st.trace.assumptions), (
            s.line, ("branch taken" if pick_taken else "branch not taken")
            + f" (its condition {ins.predicate} depends on unknown values; this direction synchronizes more)"))
        self._note_risky(st, s, ins, chosen, taken, fall)
        return chosen

    def _note_risky(self, st: "_State", s, ins: Instr, chosen: "_State", a, b) -> None:
        """A decision on a value computed from values other threads name, in a way the facts do not
        follow (`popc` of a parameter, global data a store may write), whose sides `a` and `b` differ
        in synchronization (None: not run, taken to differ): recorded in `chosen`'s trace, and
        refused where another thread decides a question on the same values (skeleton._run_all),
        since the two could take opposite sides of one question."""
        reg = ins.predicate.lstrip("@!")
        g = st.regs.get(reg, _UNWRITTEN)
        if not isinstance(g, Unk):
            return
        keys = [k[0] for k in self._cond(st, reg, g).keys()]
        whys = [st.risky[k][0] for k in keys if isinstance(k, str) and k in st.risky]
        if not whys:
            return
        if a is not None and [(e.kind, e.line) for e in a.trace.events] == [(e.kind, e.line) for e in b.trace.events]:
            return
        chosen.trace.risky.append((s.line, s.text, ins.predicate, whys[0], self._key_roots(st, keys),
                                   frozenset(k for k in keys if isinstance(k, str) and k in st.risky)))

    def _no_float_decision(self, st: "_State", s, ins: Instr) -> None:
        """A branch on a comparison of a float kernel parameter is not decided: the facts do not
        follow float comparisons, so two roles (or two setps) could take opposite sides of one
        question. The refusal names the parameter, and the extraction is run again with a value
        for it (checker.extract.api: 1.0, then 0.0), which every thread compares exactly."""
        reg = ins.predicate.lstrip("@!")
        g = st.regs.get(reg, _UNWRITTEN)
        keys = self._cond(st, reg, g).keys() if isinstance(g, Unk) else ()
        param = next((k[0].split("#")[0] for k in keys if k[0].startswith("float parameter ")), None)
        if param is not None:
            raise Refused(f"a branch on a comparison of a float kernel parameter ({param}): ptxmc extract "
                          f"decides it only with a value for the parameter (--param)", self._loc(s))

    def _trip(self, here: int, s, ins: Instr, taken: bool) -> int | None:
        """The line to record a decision at as a fact, or None: leaving a loop at its exit test is
        the window's doing (`--iterations`, `--tiles`: it stands for any longer run), no fact;
        staying in it runs a trip, which is one (a later `K < 2` cannot follow two trips of `i < K`)."""
        if not self._exits_loop(here, s, ins):
            return s.line
        goes = self._target(s, ins) if taken else here + 1
        stays = all(lp.head <= goes <= lp.tail for lp in nest(self.fn).loops if lp.head <= here <= lp.tail)
        return s.line if stays else None

    def _exits_loop(self, here: int, s, ins: Instr) -> bool:
        """The branch at `here` can leave a loop it is in (checker.extract.loops): its decisions
        are the loop's trip count, no fact, and no fact decides it."""
        hit = _EXITS.get((id(self.fn), here))
        if hit is None or hit[0] is not self.fn:
            target = self._target(s, ins)
            out = any(lp.head <= here <= lp.tail and not (lp.head <= target <= lp.tail and here + 1 <= lp.tail)
                      for lp in nest(self.fn).loops)
            hit = _EXITS[(id(self.fn), here)] = (self.fn, out)
        return hit[1]

    def _unknown_exit(self, st: "_State", s, ins: Instr, depth: int) -> "_State":
        """`@p ret` / `@p exit` on a value the thread cannot know: a forward branch to the end.
        The side that goes on synchronizes at least as much, so it is taken, and said (it used to
        be taken silently); as for a branch, sides that differ in an mbarrier's lifetime are
        refused."""
        self._no_float_decision(st, s, ins)
        gone = st.copy(st.pc)
        self._decide(gone, ins, True, s.line)
        stay = st.copy(st.pc + 1)
        self._decide(stay, ins, False, s.line)
        stay = self._go(stay, depth)         # (the other side ends here: no fork to bound)
        self._same_lifetimes(s, ins, st.regs.get(ins.predicate.lstrip("@!")), gone, stay)
        self._note_risky(st, s, ins, stay, gone, stay)
        stay.trace.assumptions.insert(len(st.trace.assumptions), (
            s.line, f"{ins.op} not taken (its condition {ins.predicate} depends on unknown values; "
                    "this direction synchronizes more)"))
        return stay

    def _bound(self, st: "_State", here: int, ins: Instr) -> tuple[int, bool]:
        """How many times the loop of the unknown branch at `here` runs, and whether it is an outer
        loop (`--tiles`): the outer loop of a nest (checker.extract.loops), or a loop whose exit
        depends on the same unknown as one (the tile count: CUTLASS's epilogue load warp runs the
        tile loop with no K loop inside, and must run it as often as the producer and consumers)."""
        if self.tiles is None:
            return self.iterations, False
        cond = st.regs.get(ins.predicate.lstrip("@!")) if ins.predicate else None
        why = getattr(cond, "why", None)
        loops = nest(self.fn)
        lp = loops.innermost(here)
        if lp is None:
            return self.iterations, False
        if loops.encloses(lp):
            return self.tiles, True
        if why is not None and self._read("w", why):
            return self.tiles, True
        return self.iterations, False

    @staticmethod
    def _why(st: "_State", ins: Instr) -> str | None:
        """Why the predicate of a branch on an unknown value is unknown (`parameter KEY`)."""
        return getattr(st.regs.get(ins.predicate.lstrip("@!")), "why", None) if ins.predicate else None

    @staticmethod
    def _closed(st: "_State", s, bound: int, outer: bool, why: str | None = None) -> None:
        if outer:
            if why:
                st.trace.tile_whys.add(why)
            st.trace.tiles[s.line] = bound
            st.trace.assumptions.append((s.line, f"outer loop closed after {bound} trip{'s' if bound > 1 else ''} "
                                                  "(--tiles; its exit depends on unknown values)"))
        else:
            st.trace.assumptions.append((s.line, f"loop closed after {bound} iterations "
                                                  "(its condition depends on unknown values)"))

    def _same_lifetimes(self, s, ins: Instr, cond, taken: "_State", fall: "_State") -> None:
        """Refuse a branch whose sides differ in an mbarrier's init or inval: the lifetime a later
        access of those bytes falls in (data or mbarrier) depends on the side, and an inval is not
        synchronization, so no side is the safe one to assume (either could hide the other's UB)."""
        def lifetimes(t: "_State"):
            return [(e.kind, e.get("mb"), e.line) for e in t.trace.events if e.kind in ("mb_init", "mb_inval")]
        lt, lf = lifetimes(taken), lifetimes(fall)
        if lt == lf:
            return
        x, y = next((x, y) for x, y in zip(lt + [None], lf + [None]) if x != y)
        only = x or y
        why = getattr(cond, "why", "unknown values")
        param = re.search(r"parameter (\S+)$", why)
        hint = (f"; choose the side with --param {param.group(1)}=VALUE" if param
                else "; ptxmc extract cannot choose a side for it: not modelled")
        raise Refused(f"the sides of this branch differ in an mbarrier's lifetime (one runs "
                      f"{only[0].replace('mb_', 'mbarrier.')} at L{only[2]}, the other does not), and its condition "
                      f"{ins.predicate} depends on {why}, which the extractor cannot evaluate: assuming either "
                      f"side would hide the other's accesses to those bytes{hint}", self._loc(s))

    def _decide(self, st: "_State", ins: Instr, taken: bool, line: int | None = None) -> None:
        """The predicate register of a decided branch holds the decision from here on, so that the
        guards computed from it later (`and.pred %p5, %p10, %p4`) agree with the path; and the
        decision is a fact about the values the predicate is made of, which later predicates on
        them follow (checker.extract.facts). A loop's decisions (its back edge taken, then not)
        are no fact: the trip count is the abstraction."""
        reg = ins.predicate.lstrip("@!")
        old = st.regs.get(reg, _UNWRITTEN)
        v = int(taken != ins.predicate.startswith("@!"))
        if line is not None and isinstance(old, Unk):
            record(st.facts, self._cond(st, reg, old), v, line)
        st.regs[reg] = v
        st.writes[reg] += 1
        st.taint.pop(reg, None)

    @staticmethod
    def _source(st: "_State", o, v) -> tuple | None:
        """Which value the setp operand `o` (holding `v`) is, for the facts: the one its Unk names
        (a parameter's: the same in every register; a copy's: the register it was copied from),
        else the register's at its latest write; None for no register."""
        if isinstance(v, Unk) and v.src is not None:
            return (v.src, 0)
        if isinstance(v, Sym) and v.off is not None:
            # a parameter's pointer (`arg:NAME`) or address plus a constant: the same in every
            # thread (a null test on it is one question for the kernel)
            kind, name = v.name.split(":", 1)
            plus = f" + {v.off}" if v.off else ""
            if kind in ("arg", "param"):
                return (f"parameter {name} ({'pointer' if kind == 'arg' else 'address'}{plus}):64", 0)
            return (f"address of {kind} {name}{plus}:64", 0)
        if isinstance(o, Reg) and o.name[:1] not in "%!":
            return (_reg_name(st, o.name), 0)
        return None

    @staticmethod
    def _cond(st: "_State", reg: str, v: "Unk") -> Cond:
        """The formula an unknown predicate held in `reg` is: its comparison, or itself (a Var)."""
        if v.cond is not None:
            return v.cond
        return Cond(Var(v.src if v.src is not None else _reg_name(st, reg), 0))

    def _more(self, key: tuple) -> dict:
        """The decisions earlier threads of the kernel took on the parameter value `key`."""
        if not is_global(key[0]):
            return {}
        return {f: (truth, where) for f, truth, where in self._read("d", key)}

    def _follows(self, st: "_State", s, ins: Instr, g: Unk):
        """The guard `g` where an earlier decision on the same unknowns (this thread's, or an
        earlier thread's on a kernel parameter) settles it (said in the role table at a branch's
        or an exit's line), else `g`."""
        reg = ins.predicate.lstrip("@!")
        cond = self._cond(st, reg, g)
        hit = implied(cond, st.facts, self._more)
        if hit is None:
            return g
        v, line = hit
        taken = bool(v) != ins.predicate.startswith("@!")
        what = {"bra": "branch"}.get(ins.op, ins.op if ins.op in ("ret", "exit") else ins_name(s))
        done = ('taken' if ins.op == 'bra' else 'run') if taken else ('not taken' if ins.op == 'bra' else 'skipped')
        return self._settled(st, s, ins, cond, v, line, f"{what} {done}")

    def _guarded(self, st: "_State", s, ins: Instr, g: Unk) -> None:
        """`@p op d, ...` (no synchronization) on an unknown p: d keeps its old value or gets the
        new one. Both known and different (`@%p4 mov.u32 %r7, 1` after `mov.u32 %r7, 0`): d is
        selp(new, old, p), whose comparisons follow p's decisions; else d is unknown."""
        d = ins.operands[0] if ins.operands else None
        if ins.op in _ALU_OPS and ins.op != "setp" and isinstance(d, Reg) and FLOAT_TYPES.isdisjoint(ins.qualifiers):
            old = st.regs.get(d.name.lstrip("!"), _UNWRITTEN)
            new = _alu(ins.op, ins.qualifiers, [self._val(st, o, s) for o in ins.operands[1:]])
            if isinstance(old, int) and isinstance(new, int):
                c = self._cond(st, ins.predicate.lstrip("@!"), g)
                c = c.negated() if ins.predicate.startswith("@!") else c
                self._set(st, d, old if old == new else Unk(g.why, sel=(c, new, old)))
                return
        roots = self._roots(st, Reg(ins.predicate.lstrip("@!")), g)
        for o in _regs_in(ins.operands[1:]):
            roots |= self._roots(st, o, st.regs.get(o.name.lstrip("!"), _UNWRITTEN))
        if ins.op in ("vote", "redux", "shfl", "match"):
            roots |= {f"{ins.op} of warp {st.trace.ident.warp} in CTA {st.trace.ident.rank}"}
        self._assign_unknown(st, ins, "guarded by unknown predicate", roots)

    def _leaves(self, st: "_State", s, ins: Instr, g: Unk):
        """A loop's exit test on unknowns: the window (`--iterations`, `--tiles`) decides how long
        the loop stays, but where the decisions taken so far say the loop ends here (another role
        decided `K < 2`: no second trip), it ends here, and the table says so; else `g`."""
        reg = ins.predicate.lstrip("@!")
        cond = self._cond(st, reg, g)
        hit = implied(cond, st.facts, self._more)
        if hit is None:
            return g
        v, line = hit
        here = st.pc
        taken = bool(v) != ins.predicate.startswith("@!")
        goes = self._target(s, ins) if taken else here + 1
        if all(lp.head <= goes <= lp.tail for lp in nest(self.fn).loops if lp.head <= here <= lp.tail):
            return g                    # the facts keep the loop going: the window says how long
        st.loops.pop(here, None)
        return self._settled(st, s, ins, cond, v, line, "loop left here")

    def _settled(self, st: "_State", s, ins: Instr, cond, v: int, line, what: str) -> int:
        """Ins's guard register takes the value `v` an earlier decision (at `line`) settles its
        condition `cond` to, and the role table says `what` followed from which decision."""
        reg = ins.predicate.lstrip("@!")
        st.regs[reg] = v
        st.writes[reg] += 1
        where = f"L{line}" if isinstance(line, int) else line
        note = (s.line, f"{what} (its condition {ins.predicate} follows from the decision at {where}: "
                        f"{cond.text()} is {'true' if (v == 1) == cond.true else 'false'})")
        self._early(st, s, ins, note[1])
        if note not in st.trace.assumptions:
            st.trace.assumptions.append(note)
        return v

    def _early(self, st: "_State", s, ins: Instr, note: str) -> None:
        """A branch of an outer loop (`--tiles`) that the facts decided: where the path leaves the
        loop after it without coming back to the loop's head, and fewer than `--tiles` trips ran,
        the extraction is refused (Machine.run). The window asks for `--tiles` trips in every
        role; a decision taken before (another role's, on the tile count: `%nctaid`, a parameter)
        that ends the loop sooner leaves no launch that runs them, and running fewer trips than the
        header says would be a silent change of the question."""
        if self.tiles is None or st.early is not None:
            return
        lp = nest(self.fn).innermost(st.pc)
        if lp is None or not self._bound(st, st.pc, ins)[1]:
            return
        trips = st.visits[lp.head] - (1 if work_after(self.fn, st.pc) else 0)
        if trips < self.tiles:
            st.early = (lp.head, s, trips, note)

    def _early_exit(self, early: tuple) -> None:
        head, s, trips, note = early
        raise Refused(f"--tiles {self.tiles} asks for {self.tiles} trips of the outer loop at "
                      f"L{self.fn.body[head].line}, but this branch leaves it after {trips}: {note}; no launch "
                      f"runs both (run with --tiles {max(trips, 1)}, or set the tile count with --param)", self._loc(s))

    def _check_spin(self, st: "_State", s, ins: Instr) -> None:
        """A branch decided by a wait's result: the other direction must spin back to a wait."""
        reg = ins.predicate.lstrip("@!")
        if not st.taint.get(reg):
            return
        neg = ins.predicate.startswith("@!")
        taken_now = bool(st.regs.get(reg)) != neg
        other = st.pc + 1 if taken_now else self._target(s, ins)
        body = self.fn.body
        for _ in range(16):
            if other >= len(body):
                break
            t = body[other]
            if t.instr is None:
                other += 1
                continue
            i2 = t.instr
            if i2.op == "mbarrier" and i2.qualifiers and i2.qualifiers[0] in WAITS:
                self._consume(st, st.taint[reg])
                return
            if i2.op == "bra" and not i2.predicate:
                other = self._target(t, i2)
                continue
            if self._sync(i2) or i2.op in ("ret", "exit", "bra"):
                break
            other += 1
        raise Refused("this branch depends on an mbarrier wait's result, and its other direction does not "
                      "retry the wait: only spin loops (retry until the phase completes) are modelled", self._loc(s))

    @staticmethod
    def _consume(st: "_State", waits) -> None:
        """A branch read the result of the waits `waits` (event indices) and skips a blocking wait:
        a spin loop's own test, or CuTe DSL's non-blocking peek (`try_wait` early in one iteration,
        its result tested at the top of the next, before the blocking loop). A peek's wait is moved
        here, where the thread stops until the phase completes; had the peek succeeded, its acquire
        would have ordered the operations in between too (fewer orders: races are over-reported,
        never missed)."""
        for idx in sorted(w for w in waits if w in st.unused):
            st.unused.discard(idx)
            ev = st.trace.events
            if idx == len(ev) - 1:
                continue
            ev.append(ev.pop(idx))
            def moved(j):
                return len(ev) - 1 if j == idx else (j - 1 if j > idx else j)
            st.unused = {moved(j) for j in st.unused}
            st.taint = {r: frozenset(moved(j) for j in t) for r, t in st.taint.items()}

    def _target(self, s, ins: Instr) -> int:
        name = ins.operands[0].name if ins.operands and isinstance(ins.operands[0], Name) else None
        if name is None or name not in self.fn.labels:
            raise Refused("a branch whose target is not a label of this function", self._loc(s))
        return self.fn.labels[name]

    def _loc(self, s) -> SourceLoc:
        return SourceLoc(self.path, s.line, s.text)

    # ---------------------------------------------------------------------------- values --
    def _val(self, st: "_State", o, s) -> Any:
        if isinstance(o, Reg):
            name = o.name
            first = name[:1]
            if first == "%":
                return self._special(st.trace.ident, name, s)
            if first == "!":
                reg = name.lstrip("!")
                v = st.regs.get(reg, _UNWRITTEN)
                if isinstance(v, Unk):
                    return Unk(v.why, self._cond(st, reg, v).negated())
                return (0 if v else 1) if isinstance(v, int) else v
            return st.regs.get(name, _UNWRITTEN)
        if isinstance(o, Imm):
            return o.value
        if isinstance(o, Float):
            return Unk("float")
        if isinstance(o, Name):
            return self._symbol_address(o.name, s)
        if isinstance(o, Sink):
            return Unk("sink")
        if isinstance(o, Vec):
            return Unk("vector")
        raise Refused(f"operand '{o}' has no value here", self._loc(s))

    def _symbol_address(self, name: str, s):
        if name in self.params:
            return Sym(f"param:{name}")
        addr = self.layout.address(name)
        if addr is not None:
            return addr
        sym = self.layout.symbol(name)
        if sym is not None:
            return Sym(f"{sym.space}:{name}")
        raise Refused(f"'{name}' is not a variable or parameter of this module", self._loc(s))

    def _special(self, ident: Ident, name: str, s):
        base, _, dim = name[1:].partition(".")
        d = "xyz".index(dim) if dim else 0
        # (the skeleton is the grid's first cluster: %clusterid 0, %ctaid the CTA's rank in it;
        # a branch on them whose sides differ is refused, _grid_branch)
        table = {"tid": ident.tid, "ntid": ident.ntid, "ctaid": ident.ctaid, "clusterid": (0, 0, 0),
                 "cluster_ctaid": (ident.rank, 0, 0),
                 "cluster_nctaid": (ident.nrank, 1, 1)}
        if base in table:
            return table[base][d]
        if base == "laneid":
            return ident.lane
        if base == "warpid":
            return ident.warp
        if base == "cluster_ctarank":
            return ident.rank
        if base == "cluster_nctarank":
            return ident.nrank
        if base in ("is_explicit_cluster",):
            return 1 if ident.nrank > 1 else 0
        if base.startswith("lanemask"):
            lane = ident.lane
            return {"lanemask_eq": 1 << lane, "lanemask_lt": (1 << lane) - 1, "lanemask_le": (1 << (lane + 1)) - 1,
                    "lanemask_ge": (0xffffffff << lane) & 0xffffffff,
                    "lanemask_gt": (0xffffffff << (lane + 1)) & 0xffffffff}.get(base, Unk(name))
        if base in _LAUNCH_WIDE:
            # the same value in every thread of the launch: one question for the kernel
            return Unk(name, src=f"launch {name}:{_LAUNCH_WIDE[base]}")
        return Unk(name)

    def _assign_unknown(self, st: "_State", ins: Instr, why: str, roots: frozenset | None = None) -> None:
        if ins.operands:
            if roots is None:
                roots = _NO_ROOTS
                for o in _regs_in(ins.operands[1:]):
                    x = st.regs.get(o.name.lstrip("!"), _UNWRITTEN)
                    if x.__class__ is Unk:
                        roots = roots | self._roots(st, o, x)
            for r in _dests(ins.operands[0]):
                st.writes[r] += 1
                st.regs[r] = Unk(why)       # a value of its own, named by the register and write (_source)
                st.taint.pop(r, None)
            if roots:
                self._risk(st, ins, ".".join((ins.op,) + ins.qualifiers), roots)

    def _set(self, st: "_State", d, v, taint=frozenset()) -> None:
        for r in _dests(d):
            st.writes[r] += 1
            st.regs[r] = v
            if taint:
                st.taint[r] = taint
            else:
                st.taint.pop(r, None)

    # ------------------------------------------------------------------------ execution --
    def _sync(self, ins: Instr) -> bool:
        return ins.op in SYNC_OPS

    def _exec(self, st: "_State", s, ins: Instr) -> None:
        op, q = ins.op, ins.qualifiers
        ops = ins.operands
        if op == "mov" and (isinstance(ops[0], Vec) or isinstance(ops[1], Vec)):
            self._mov_vector(st, s, ins)
            return
        if op in _ALU_OPS:
            if op not in ("mov", "selp") and not FLOAT_TYPES.isdisjoint(q):
                if op == "setp":
                    self._float_setp(st, s, ins)
                    return
                self._assign_unknown(st, ins, "floating point")
                return
            vals = [self._val(st, o, s) for o in ops[1:]]
            if op == "setp" and q[0] in ("eq", "ne") and _bits(q) == 64 and 0 in vals[:2]:
                vals = self._null_field(st, s, vals)
            taint = frozenset()
            if st.taint:        # which wait results this value carries (only a wait's predicate starts one)
                carried = [t for t in map(st.taint.get, _sources(ins)) if t]
                if carried:
                    taint = taint.union(*carried)
            if op == "setp":
                self._setp(st, s, ins, vals, taint)
                return
            if "pred" in q and op in ("and", "or", "xor", "not") and any(isinstance(v, Unk) for v in vals):
                self._set(st, ops[0], self._pred_op(st, op, ops[1:], vals), taint)
                return
            if op == "selp" and isinstance(vals[2], Unk) and all(isinstance(v, int) for v in vals[:2]) \
                    and vals[0] != vals[1]:
                c = vals[2]
                self._set(st, ops[0], Unk(c.why, sel=(self._operand_cond(st, ops[3], c), vals[0], vals[1])), taint)
                return
            if op in ("add", "sub") and len(vals) == 2 and not _wide(q):
                named = [Unk(v.why, src=_reg_name(st, o.name)) if isinstance(v, Unk) and v.src is None
                         and v.cond is None and v.sel is None and isinstance(o, Reg) and o.name[:1] not in "%!" else v
                         for o, v in zip(ops[1:3], vals)]
                v = self._offset(op, q, named)
                if v is not None:
                    self._set(st, ops[0], v, taint)
                    return
            if op in _TERM_OPS:
                # a value computed exactly from named ones: a term of them (on values of the
                # thread's own only, a term would relate them to nothing another thread names:
                # they stay unknowns of their own, as cheap as before)
                for x in vals:
                    if x.__class__ is Unk and x.src is not None:
                        t = self._exact(st, ins, vals)
                        if t is not None and _size(t) <= _TERM_LIMIT:
                            why = next(v.why for v in vals if isinstance(v, Unk))
                            self._set(st, ops[0], Unk(why, src=t), taint)
                            return
                        break
            v = _carry(op, q, _alu(op, q, vals))
            if op == "mov" and isinstance(v, Unk) and v.src is None and v.cond is None and isinstance(ops[1], Reg) \
                    and ops[1].name[:1] not in "%!":
                v = Unk(v.why, src=_reg_name(st, ops[1].name), sel=v.sel)       # a copy is the same value
            roots = _NO_ROOTS
            if v.__class__ is Unk and op != "mov" and v.src is None and v.cond is None and v.sel is None:
                for o, x in zip(ops[1:], vals):
                    if x.__class__ is Unk:
                        roots = roots | self._roots(st, o, x)
            self._set(st, ops[0], v, taint)
            if roots:
                self._risk(st, ins, ".".join((op,) + q), roots)
            return
        if op == "cvta":
            v = self._val(st, ops[1], s)
            self._set(st, ops[0], self.layout.cvta(q, v))
            return
        if op == "mapa":
            a, r = self._val(st, ops[1], s), self._val(st, ops[2], s)
            if not isinstance(r, int):
                raise Refused("mapa with a CTA rank the thread cannot evaluate", self._loc(s))
            self._set(st, ops[0], self.layout.mapa(a, r, st.trace.ident.rank))
            return
        if op == "shfl":
            self._shfl(st, s, ins)
            return
        if op == "elect":
            # the leader is one lane of the member mask; which one does not change what the role
            # synchronizes, so the lowest member is taken (lane 0 for a full mask). A mask that
            # leaves lane 0 out elects another lane: two halves of a warp each elect their own
            mask = self._val(st, ops[1], s) if len(ops) > 1 else 0xffffffff
            if not isinstance(mask, int) or not mask & 0xffffffff:
                raise Refused(f"elect.sync with a member mask the thread cannot evaluate ({getattr(mask, 'why', mask)})",
                              self._loc(s))
            mask &= 0xffffffff
            lane = st.trace.ident.lane
            if not mask >> lane & 1:
                raise Refused(f"elect.sync run by lane {lane}, which its member mask {mask:#010x} leaves out "
                              "(undefined behaviour)", self._loc(s))
            leader = (mask & -mask).bit_length() - 1
            d = ops[0]
            if isinstance(d, Vec):
                self._set(st, d.items[0], leader)
                self._set(st, d.items[1], int(lane == leader))
            else:
                self._set(st, d, leader)
            return
        if op == "setmaxnreg":
            st.trace.maxnreg.append((s.line, ".".join((op,) + q) + " " + ", ".join(str(self._val(st, o, s)) for o in ops)))
            return
        if op in ("ld", "st", "ldu"):
            self._memory(st, s, ins)
            return
        if op in ("stmatrix", "ldmatrix"):
            write = op == "stmatrix"
            a = ops[0] if write else ops[1]
            loc = self._shared_loc(st, s, a, "shared", f"{op}'s")
            if not write:
                self._assign_unknown(st, ins, op)
            self._event(st, s, ins, "smem", loc=loc, write=write, bytes=16, sem="weak", value=None)
            return
        if op in ("bar", "barrier"):
            self._barrier(st, s, ins)
            return
        if op == "mbarrier":
            self._mbarrier(st, s, ins)
            return
        if op in ("fence", "membar"):
            self._event(st, s, ins, "fence")
            return
        if op == "cp":
            self._copy(st, s, ins)
            return
        if op == "wgmma":
            self._wgmma(st, s, ins)
            return
        if op == "tcgen05":
            self._tcgen05(st, s, ins)
            return
        if op in ("prefetch", "prefetchu", "nanosleep", "discard", "applypriority", "pmevent"):
            st.trace.dropped[op] += 1
            return
        if op in ("vote", "redux") and "sync" in q and self._warp_value(st, s, ins):
            return
        if op in _PURE_DATA or op in ("vote", "match", "redux", "activemask", "createpolicy", "mma", "fma", "ex2",
                                      "rcp", "sqrt", "rsqrt", "lg2", "tanh", "cvt", "sin", "cos", "copysign",
                                      "dp4a", "dp2a", "set", "slct", "testp", "shf", "lop3", "movmatrix"):
            self._assign_unknown(st, ins, op)
            return
        if op == "trap":
            raise Refused("trap on the extracted path (a failed check): the path is not a normal execution",
                          self._loc(s))
        raise Refused(f"'{'.'.join((op,) + q)}': no model in ptxmc extract yet", self._loc(s))

    def _warp_value(self, st, s, ins: Instr) -> bool:
        """`vote.sync`/`redux.sync d, a, membermask` with a known mask: the result is the same in
        every lane of the member mask (PTX ISA), so it is one value named by the CTA, the warp, the
        mask, the line and the occurrence, whose facts are shared like a parameter's (each lane
        deciding it on its own took opposite sides of one branch). Where this lane's own input
        settles it (`.any` of a true predicate, `.all` of a false one) it is that value, and a fact
        on the name for the lanes after. False (an unknown of the lane's own, as before) where the
        mask is not known."""
        ops = ins.operands
        key = (st.pc, st.occ[st.pc])      # counted in every lane that runs it, named or not
        st.occ[st.pc] += 1
        if len(ops) != 3 or isinstance(ops[0], Vec):
            return False
        a, mask = self._val(st, ops[1], s), self._val(st, ops[2], s)
        ident = st.trace.ident
        if not isinstance(mask, int):
            # a mask every lane computes the same from named values (a parameter): the result is
            # one value for the lanes of that mask, named by the term
            t = self._term(st, ops[2], mask, 32)
            if not isinstance(t, tuple) or not all(k[0].startswith(SHARED_NAMES) for k in _leaves((t, 0))):
                roots = self._roots(st, ops[1], a) | self._roots(st, ops[2], mask)
                self._assign_unknown(st, ins, ins.op, roots | {f"{ins.op} of warp {ident.warp} in CTA {ident.rank}"})
                return True
            mask = term_text(t)
        else:
            mask = f"{mask & 0xffffffff:#x}"
        name = (f"shared value {'.'.join((ins.op,) + ins.qualifiers)} of warp {ident.warp} mask "
                f"{mask} in CTA {ident.rank} at L{s.line} ({key[1] + 1})")
        mode = next((m for m in ("any", "all") if m in ins.qualifiers), None) if ins.op == "vote" else None
        if isinstance(a, int) and mode is not None and bool(a & 1) == (mode == "any"):
            v, cond = int(mode == "any"), Cond(Var(name, 0))
            hit = implied(cond, st.facts, self._more)
            if hit is not None and hit[0] != v:
                where = f"L{hit[1]}" if isinstance(hit[1], int) else hit[1]
                said, other = ("false", "true") if v == 0 else ("true", "false")
                raise Refused(f"this lane's input makes {'.'.join((ins.op,) + ins.qualifiers)} {said}, but a lane "
                              f"that ran before it took it {other} at {where} (the lanes are decided in order): "
                              "no launch takes both paths, not modelled", self._loc(s))
            record(st.facts, cond, v, s.line)
            self._set(st, ops[0], v)
            return True
        self._set(st, ops[0], Unk(ins.op, src=name))
        return True

    def _term(self, st, o, v, bits: int):
        """The value of operand `o` (holding `v`) at `bits` bits as a term over named values
        (checker.extract.facts), an int for a constant; None where it is no value the facts can
        follow exactly (a predicate, a selp, an address)."""
        if isinstance(v, int):
            return _wrap(v, bits)
        if not isinstance(v, Unk) or v.cond is not None or v.sel is not None:
            return None
        if v.src is None:
            if isinstance(o, Reg) and o.name[:1] not in "%!":
                return ("v", _reg_name(st, o.name), bits)       # the register's value at its write
            return None
        t = v.src if isinstance(v.src, tuple) else ("v", v.src, v.addbits if v.add else bits)
        if v.add:
            t = _fit(t, v.addbits)
            if t is None:
                return None
            t = ("add", v.addbits, t, v.add)
        return _fit(t, bits)

    def _exact(self, st, ins: Instr, vals: list):
        """The result of an integer ALU instruction on unknown values as a term over the named
        values it is computed from, where bit-vector arithmetic is exactly the PTX ISA's (add, sub,
        mul.lo/.wide, mad.lo/.wide, shl, shr, and, or, xor, not, neg, min, max, cvt between integer
        types without .sat); None otherwise (the result is then an unknown of its own)."""
        op, q, ops = ins.op, ins.qualifiers, ins.operands
        if "cc" in q or "sat" in q or "hi" in q or "pred" in q or not isinstance(ops[0], Reg):
            return None
        if op == "cvt":
            dst = next((x for x in q if x in _INT_BITS), None)
            src = next((x for x in reversed(q) if x in _INT_BITS), None)
            if dst is None or src is None or "pred" in (dst, src) or len(vals) != 1:
                return None
            db, sb = _INT_BITS[dst], _INT_BITS[src]
            a = self._term(st, ops[1], vals[0], sb)
            if a is None or isinstance(a, int):
                return None
            return _ext(a, sb, db, src[0] == "s") if db >= sb else ("trunc", db, a)
        bits, signed = _bits(q), _signed(q)
        n = {"not": 1, "neg": 1, "mad": 3}.get(op, 2)
        if op not in ("add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "neg", "min", "max") \
                or len(vals) != n:
            return None
        if op in ("shl", "shr"):
            a = self._term(st, ops[1], vals[0], bits)
            k = vals[1]
            if isinstance(k, int):
                b = min(_wrap(k, 32), bits)
            elif bits >= 32:
                b = self._term(st, ops[2], k, 32)
                b = None if b is None else _ext(b, 32, bits, False)
            else:
                return None     # a 16-bit shift by an unknown amount: the amount is 32 bits
            if a is None or b is None:
                return None
            return ("shl" if op == "shl" else "ashr" if signed else "lshr", bits, a, b)
        xs = [self._term(st, o, v, bits) for o, v in zip(ops[1:], vals)]
        if any(x is None for x in xs) or all(isinstance(x, int) for x in xs):
            return None
        if op in ("not", "neg"):
            return (op, bits, xs[0])
        if op in ("min", "max"):
            return (("s" if signed else "u") + op, bits, xs[0], xs[1])
        if op in ("mul", "mad"):
            if "wide" in q:
                w = 2 * bits
                prod = ("mul", w, _ext(xs[0], bits, w, signed), _ext(xs[1], bits, w, signed))
                if op == "mul":
                    return prod
                c = self._term(st, ops[3], vals[2], w)
                return None if c is None else ("add", w, prod, c)
            if "lo" not in q:
                return None
            prod = ("mul", bits, xs[0], xs[1])
            return prod if op == "mul" else ("add", bits, prod, xs[2])
        if "wide" in q:
            return None
        return (op, bits, xs[0], xs[1])

    def _roots(self, st, o, v) -> frozenset:
        """The values other threads name (and "global memory") that the operand `o` (holding `v`)
        is computed from: where the facts do not follow the computation, two threads deciding a
        question on it could take opposite sides."""
        if not isinstance(v, Unk):
            return _NO_ROOTS
        if v.cond is None and v.sel is None and v.src is None:
            # a value of its own (the common case: loaded data, floating point)
            if not isinstance(o, Reg) or o.name[:1] in "%!":
                return _NO_ROOTS
            name = _reg_name(st, o.name)
            hit = st.risky.get(name)
            if hit is not None:
                return hit[1]
            # (the value itself: one thread deciding two questions on two opaque computations of
            # it could take sides no launch takes, skeleton._one_thread)
            return frozenset({name})
        if v.cond is not None:
            keys = [k[0] for k in v.cond.keys()]
        elif v.sel is not None:
            keys = [k[0] for k in v.sel[0].keys()]
        elif v.src is not None:
            keys = [k[0] for k in _leaves((v.src, 0))]
        elif isinstance(o, Reg) and o.name[:1] not in "%!":
            keys = [_reg_name(st, o.name.lstrip("!"))]
        else:
            keys = []
        return self._key_roots(st, keys)

    @staticmethod
    def _key_roots(st, keys) -> frozenset:
        out: set = set()
        tag = None
        for k in keys:
            if not isinstance(k, str):
                continue
            if k in st.risky:
                out |= st.risky[k][1]
            elif k.startswith(SHARED_NAMES):
                out.add(k)
                if k.startswith("global byte "):
                    out.add("global memory")
            elif "|t" in k and (not k.endswith(tag or (tag := _tag(st))) or any(x[3] == k for x in st.trace.named_stores)):
                out.add(k)          # another thread's value (stored to shared memory), or one this one stored
        return frozenset(out)

    def _risk(self, st, ins: Instr, why: str, roots: frozenset) -> None:
        """The unknowns `ins` just wrote are computed from `roots` in a way the facts do not follow."""
        if roots and ins.operands:
            for r in _dests(ins.operands[0]):
                st.risky[_reg_name(st, r)] = (why, roots)

    @staticmethod
    def _null_field(st, s, vals: list) -> list:
        """A 64-bit field of a struct parameter tested against 0 is a pointer tested for null
        (CUTLASS's `beta_ptr`, `alpha_ptr`: when set, the scalar is read from global memory,
        data the extractor cannot know). It is taken as null, and the run says so."""
        out = []
        for v in vals:
            if isinstance(v, Unk) and v.why.startswith("parameter ") and "@" in v.why:
                note = (s.line, f"{v.why} taken as 0 (a pointer field tested for null; the scalar it would "
                                "point to is read from the parameter instead)")
                if note not in st.trace.assumptions:
                    st.trace.assumptions.append(note)
                v = 0
            out.append(v)
        return out

    def _operand_cond(self, st, o, v: "Unk") -> Cond:
        """The formula of the unknown predicate operand `o` (holding `v`)."""
        if v.cond is not None:
            return v.cond
        key = self._source(st, o, v)
        return Cond(Var(*key)) if key is not None else Cond(Var(f"?{id(v)}", 0))

    @staticmethod
    def _bool(op: str, x, y):
        """x OP y on predicates: ints, or Unks with a Cond."""
        if isinstance(x, int) and isinstance(y, int):
            return {"and": x & y, "or": x | y, "xor": x ^ y}[op]
        if isinstance(x, int):
            x, y = y, x
        if isinstance(y, int):          # x unknown, y known
            if op == "and":
                return x if y else 0
            if op == "or":
                return 1 if y else x
            return Unk(x.why, x.cond.negated()) if y else x
        return Unk(x.why, combine(op, x.cond, y.cond))

    def _pred_op(self, st, op: str, srcs, vals):
        """`and/or/xor/not.pred` with an unknown operand: the formula of its operands."""
        xs = [v & 1 if isinstance(v, int) else Unk(v.why, self._operand_cond(st, o, v))
              if isinstance(v, Unk) else Unk("predicate", Cond(Var(f"?{id(v)}", 0)))
              for o, v in zip(srcs, vals)]
        if op == "not":
            x = xs[0]
            return 1 - x if isinstance(x, int) else Unk(x.why, x.cond.negated())
        return self._bool(op, xs[0], xs[1])

    def _setp(self, st, s, ins: Instr, vals: list, taint) -> None:
        """`setp.CMP[.BOOLOP].T p[|q], a, b[, c]`: p = (a CMP b) BOOLOP c and q = !(a CMP b) BOOLOP c
        (PTX ISA, setp), each the formula of its comparison and of c where a value is unknown:
        never the same value twice, and a decision on p says what it says about a, b and c."""
        q, ops = ins.qualifiers, ins.operands
        base = tuple(x for x in q if x not in _BOOL_OPS)
        items = ops[0].items if isinstance(ops[0], Vec) else [ops[0]]
        t = _alu("setp", base, vals[:2])
        if isinstance(t, Unk):
            cond = self._selp_compare(base, vals[:2])
            if isinstance(cond, int):
                t = cond
            else:
                bits = _bits(base)
                srcs = [self._source(st, o, v) for o, v in zip(ops[1:3], vals[:2])]
                adds = [v.add if isinstance(v, Unk) else 0 for v in vals[:2]]
                for i, v in enumerate(vals[:2]):
                    if isinstance(v, Unk) and v.cond is None and v.sel is None and \
                            (isinstance(v.src, tuple) or v.add and v.addbits != bits):
                        # a value computed from named ones (a constant added at another width): its term
                        x = self._term(st, ops[1 + i], v, bits)
                        srcs[i], adds[i] = ((x, 0), 0) if isinstance(x, tuple) else (None, adds[i])
                cond = cond or comparison(base, tuple(srcs), tuple(vals[:2]), tuple(adds))
                if cond is None:
                    # an opaque comparison (on an address, an unknown type) is a predicate of its own
                    name = f"{items[0].name}#setp{st.writes[items[0].name] + 1}{_tag(st)}"
                    roots = frozenset().union(*(self._roots(st, o, v) for o, v in zip(ops[1:3], vals[:2])))
                    if roots:
                        st.risky[name] = ("setp." + ".".join(base), roots)
                    cond = Cond(Var(name, 0))
                t = Unk(t.why, cond)
        self._setp_out(st, s, ins, t, taint)

    def _setp_out(self, st, s, ins: Instr, t, taint=frozenset()) -> None:
        """setp's destinations from its comparison `t` (an int, or an Unk with a Cond)."""
        q, ops = ins.qualifiers, ins.operands
        bop = next((x for x in q if x in _BOOL_OPS), None)
        items = ops[0].items if isinstance(ops[0], Vec) else [ops[0]]
        c = None
        if bop:
            c = self._val(st, ops[3], s) if len(ops) > 3 else _UNWRITTEN
            if isinstance(c, Unk):
                c = Unk(c.why, self._operand_cond(st, ops[3], c))
            elif not isinstance(c, int):
                c = Unk("predicate", Cond(Var(f"?{id(c)}", 0)))
        neg = 1 - t if isinstance(t, int) else Unk(t.why, t.cond.negated())
        outs = [t, neg]
        if bop:
            outs = [self._bool(bop, x, c) for x in outs]
        self._set(st, items[0], outs[0], taint)
        if len(items) > 1:
            self._set(st, items[1], outs[1], taint)

    @staticmethod
    def _offset(op: str, q: tuple, vals: list):
        """`add/sub d, x, k` (or `add d, k, x`) on a named unknown x and a constant k: the same value
        plus a constant, so that comparisons of d follow the facts on x; None otherwise."""
        x, k = vals
        if op == "add" and isinstance(x, int):
            x, k = k, x
        if not isinstance(x, Unk) or not isinstance(k, int) or x.src is None or x.cond is not None:
            return None
        bits = _bits(q)
        if x.add and x.addbits != bits:
            return None
        m = (1 << bits) - 1
        return Unk(x.why, src=x.src, add=(x.add + (k if op == "add" else -k)) & m, addbits=bits)

    @staticmethod
    def _selp_compare(q: tuple, vals: list):
        """`setp.CMP d, k` on d = selp(A, B, c) and a constant k: 1 or 0 where A and B compare the
        same, else c's Cond or its negation; None where no operand is such a value."""
        for i in (0, 1):
            x, k = vals[i], vals[1 - i]
            if isinstance(x, Unk) and x.sel is not None and isinstance(k, int):
                c, a, b = x.sel
                pair = (lambda v: [v, k]) if i == 0 else (lambda v: [k, v])
                ra, rb = _alu("setp", q, pair(a)), _alu("setp", q, pair(b))
                if not isinstance(ra, int) or not isinstance(rb, int):
                    return None
                if ra == rb:
                    return ra
                return c if ra else c.negated()
        return None

    def _float_setp(self, st, s, ins: Instr) -> None:
        """`setp.CMP.f32 p, a, b` on known bit patterns (a parameter given a value, `0f00000000`)
        is evaluated; on a parameter not given one, the predicate names it (`float parameter
        KEY`), so that the extraction can be run again with a value for it (CUTLASS's epilogue
        loads the source matrix only when `beta != 0`)."""
        q, ops = ins.qualifiers, ins.operands
        vals = [self._val(st, o, s) for o in ops[1:3]]
        if all(isinstance(v, int) for v in vals) and len(q) >= 2 and q[1] in ("f32", "f64") and q[0] in _FCMP:
            a, b = (_as_float(v, q[1]) for v in vals)
            r = _FCMP[q[0]](a, b) if a == a and b == b else q[0].endswith("u")   # NaN: only unordered holds
            self._setp_out(st, s, ins, int(bool(r)))
            return
        param = next((v for v in vals if isinstance(v, Unk) and v.why.startswith("parameter ")), None)
        d = ops[0].items[0] if isinstance(ops[0], Vec) else ops[0]
        why = "float " + param.why if param else "floating point"
        # one unknown comparison, which p and q (its complement) and the BOOLOP are made of; named
        # after the float parameter it compares, if any (no branch on it is decided)
        name = f"{why}#" if param else ""
        name = f"{name}{d.name}#setp{st.writes[d.name] + 1}{_tag(st)}"
        roots = frozenset().union(*(self._roots(st, o, v) for o, v in zip(ops[1:3], vals)))
        if roots:
            st.risky[name] = (why, roots)
        self._setp_out(st, s, ins, Unk(why, Cond(Var(name, 0))))

    def _mov_vector(self, st, s, ins: Instr) -> None:
        """`mov.b64 d, {lo, hi}` packs, `mov.b64 {lo, hi}, d` unpacks (wgmma/tcgen05 descriptors)."""
        d, a = ins.operands[0], ins.operands[1]
        bits = _bits(ins.qualifiers)
        if isinstance(a, Vec):
            parts = [self._val(st, x, s) for x in a.items]
            w = bits // len(parts)
            if all(isinstance(p, int) for p in parts):
                v = 0
                for k, p in enumerate(parts):
                    v |= _wrap(p, w) << (w * k)
                self._set(st, d, v)
            else:
                self._set(st, d, Unk("vector"))
            return
        v = self._val(st, a, s)
        w = bits // len(d.items)
        for k, x in enumerate(d.items):
            self._set(st, x, (v >> (w * k)) & ((1 << w) - 1) if isinstance(v, int) else Unk("vector"))

    def _shfl(self, st, s, ins: Instr) -> None:
        q, ops = ins.qualifiers, ins.operands
        key = (st.pc, st.occ[st.pc])
        st.occ[st.pc] += 1
        dest = ops[0].items[0] if isinstance(ops[0], Vec) else ops[0]
        if "idx" not in q:
            # another lane's value (bfly, up, down), which this run does not know: computed from
            # what the operand is computed from, so that two threads deciding on such values (of
            # one parameter: the same in every lane) are refused (it was a thread's own unknown,
            # decided each its own way: PASS for a kernel that hangs)
            a = self._val(st, ops[1], s)
            self._set(st, dest, Unk("shfl"))
            self._risk(st, ins, "shfl", self._roots(st, ops[1], a))
            return
        a, src = self._val(st, ops[1], s), self._val(st, ops[2], s)
        c = self._val(st, ops[3], s) if len(ops) > 3 else None
        me = st.trace.ident.lane
        # the source lane as the PTX ISA computes it (shfl.sync, mode .idx): c holds the clamp
        # (bits 0-4) and the segment mask (bits 8-12); a lane past the clamp reads its own value
        j = ok = None
        if isinstance(src, int) and isinstance(c, int):
            seg, clamp = (c >> 8) & 31, c & 31
            j, top = (me & seg) | (src & 31 & ~seg), (me & seg) | (clamp & ~seg)
            ok = int(j <= top)
            if not ok:
                j = me
        if j == 0 and isinstance(a, Unk) and me == 0 and not (a.src is not None and is_global(a.src)):
            # lane 0's unknown, which the warp's lanes receive: one name for all of them (a
            # register's name is its own thread's), so that they decide questions on it together;
            # a value already named for the kernel (a parameter) keeps its name (renamed per warp,
            # two warps decided one parameter each its own way: PASS for a kernel that hangs)
            ident = st.trace.ident
            a = Unk(a.why, src=f"shared value shfl of lane 0 of warp {ident.warp} in CTA {ident.rank} at L{s.line}"
                               f" ({key[1] + 1})")
        if j == me:
            v = a
        elif j == 0 and self._read("l", key) is not ABSENT:
            v = self.lane0[key]
        else:
            v = Unk("shfl from another lane" if j is not None else "shfl with an unknown lane or clamp")
        if me == 0:
            st.trace.shfl[key] = v
        roots = self._roots(st, ops[1], a) if v is not a and (j != 0 or v.src is None) else frozenset()
        self._set(st, dest, v)
        self._risk(st, ins, "shfl", roots)
        if isinstance(ops[0], Vec) and len(ops[0].items) > 1:       # d|p: p says whether j was in range
            self._set(st, ops[0].items[1], ok if ok is not None else Unk("shfl with an unknown lane or clamp"))

    # --------------------------------------------------------------------------- events --
    def _event(self, st, s, ins: Instr, kind: str, **info) -> None:
        st.trace.events.append(Event(kind, s.line, s.text, ins, tuple(sorted(info.items()))))
        st.trace.gens.append(tuple(sorted(st.gens.items(), key=repr)))

    def _addr(self, st, s, a: Addr, space: str) -> Any:
        if a.register:
            base = st.regs.get(a.base, 0)
        else:
            base = self._symbol_address(a.base, s)
        if isinstance(base, int):
            return base + a.offset
        if isinstance(base, Sym):
            return Sym(base.name, None if base.off is None else base.off + a.offset)
        return base

    def _shared_loc(self, st, s, a: Addr, space: str, what: str) -> Loc:
        v = self._addr(st, s, a, space)
        loc = self.layout.resolve(v, space, st.trace.ident.rank)
        if loc is None:
            why = v.why if isinstance(v, Unk) else (v.name if isinstance(v, Sym) else hex(v))
            raise Refused(f"the {what} address cannot be traced to a shared variable ({why})", self._loc(s))
        return loc

    def _int(self, st, s, o, what: str) -> int:
        v = self._val(st, o, s)
        if not isinstance(v, int):
            raise Refused(f"the {what} is not a constant on this path ({getattr(v, 'why', v)})", self._loc(s))
        return v

    def _memory(self, st, s, ins: Instr) -> None:
        q, ops = ins.qualifiers, ins.operands
        write = ins.op == "st"
        a = ops[0] if write else ops[1]
        if not isinstance(a, Addr):
            raise Refused("a memory access without an address operand", self._loc(s))
        if "async" in q:
            # st.async / ld.async: a remote access that completes on an mbarrier (complete_tx):
            # a plain store would drop its synchronization
            raise Refused(f"'{ins.op}.async' (completes on an mbarrier) is not modelled by ptxmc extract yet",
                          self._loc(s))
        space = next((x for x in q if x.split("::")[0] in ("shared", "global", "local", "param", "const")), "")
        strong = bool({"relaxed", "acquire", "release", "volatile", "mmio"} & set(q))
        if space == "param":
            name = a.base
            if name in self.params and not write:
                p = self.params[name]
                if p[1] in ("u64", "b64", "s64") and a.offset == 0 and p[2] is None and not isinstance(ops[0], Vec) \
                        and self._read("p", name) is ABSENT:
                    self._set(st, ops[0], Sym(f"arg:{name}"))
                else:
                    self._param_fields(st, ins, name, a.offset)
                return
            if not write and a.register:
                # a field of a struct parameter, through its address (CUTLASS's Params)
                v = self._addr(st, s, a, "param")
                if isinstance(v, Sym) and v.name.startswith("param:") and v.off is not None:
                    self._param_fields(st, ins, v.name[6:], v.off, always_at=True)
                    return
            self._assign_unknown(st, ins, "param")
            return
        if space == "local":
            addr = self._addr(st, s, a, space)
            if write:
                st.local[_key(addr)] = self._val(st, ops[1], s)
            else:
                self._set(st, ops[0], st.local.get(_key(addr), Unk("local")))
            return
        if space == "const":
            self._assign_unknown(st, ins, "const")
            return
        v = self._addr(st, s, a, space)
        if space.startswith("shared") or (space == "" and self.layout.resolve(v, "generic", st.trace.ident.rank)):
            loc = self._shared_loc(st, s, a, space or "generic", "shared-memory access's")
            nbytes = _access_bytes(q, ops[1] if write else ops[0])
            sem = next((x for x in q if x in ("relaxed", "acquire", "release", "volatile", "weak")), "weak")
            addr = v - GENERIC_SHARED if isinstance(v, int) and v >= GENERIC_SHARED else v
            if not write:
                got = self._shared_value(st, addr, nbytes)
                self._set(st, ops[0], got)
                if isinstance(got, Unk) and got.src is None:
                    # a value no store names (several may have written it): another thread's load
                    # of those bytes may read the same
                    for r in _dests(ops[0]):
                        st.risky[_reg_name(st, r)] = ("shared memory no one store names",
                                                      frozenset({f"shared memory of CTA {st.trace.ident.rank}"}))
            else:
                val = self._val(st, ops[1], s)
                if isinstance(ops[1], Vec):         # st.shared.v2.b32 [a], {0, 50397698}: a constant vector
                    parts = [self._val(st, x, s) for x in ops[1].items]
                    w = nbytes // len(parts)
                    val = 0
                    for k, p in enumerate(parts):
                        val = val | (_wrap(p, 8 * w) << (8 * w * k)) if isinstance(val, int) and isinstance(p, int) \
                            else Unk("vector")
                if isinstance(addr, int):
                    for k in [k for k, x in st.own_names.items() if k < addr + nbytes and addr < k + x[0]]:
                        del st.own_names[k]
                for b in range(nbytes):
                    byte = (val >> (8 * b)) & 0xff if isinstance(val, int) else None
                    st.own[addr + b] = byte
                    st.own_at[addr + b] = dict(st.bars)
                    if byte is not None:
                        st.trace.stores.append((st.trace.ident.rank, addr + b, byte, dict(st.bars)))
                if isinstance(val, Unk) and isinstance(addr, int) and val.cond is None and val.sel is None:
                    self._name_store(st, s, addr, nbytes, val)
            self._event(st, s, ins, "smem", loc=loc, write=write, bytes=nbytes, sem=sem,
                        value=self._val(st, ops[1], s) if write else None)
            return
        if strong or ins.op == "ldu":
            raise Refused("a strong (or volatile) global access carries synchronization that ptxmc extract does "
                          "not model yet", self._loc(s))
        if not write:
            self._global_load(st, s, ins, v)
        st.trace.dropped["global data access"] += 1

    def _global_load(self, st, s, ins: Instr, addr) -> None:
        """A weak load of global memory. At an address every thread computes the same (a pointer
        parameter plus a constant), in a kernel none of whose instructions may write global
        memory, each byte is one value for the kernel (`global byte arg:p+4`) and the load their
        concatenation (extended to 32 bits below that, by the type's sign): two loads of those
        bytes read the same value. Else the value is the load's own, which another thread's load
        may equal (a store of the kernel between them, an address it cannot evaluate): a question
        on it is refused where another thread decides one on global memory too (skeleton)."""
        q, d = ins.qualifiers, ins.operands[0]
        items = d.items if isinstance(d, Vec) else [d]
        elem = _access_bytes(tuple(x for x in q if x not in ("v2", "v4", "v8")), None)
        typ = next((x for x in q if x in _INT_BITS and x != "pred"), None)
        named = isinstance(addr, Sym) and addr.off is not None and typ is not None and not self._writes_global()
        for k, r in enumerate(items):
            if not isinstance(r, Reg):
                continue
            if not named:
                self._set(st, r, Unk("global data"))
                why = ("global memory a store of the kernel may write" if self._writes_global() else
                       "global memory at an address the thread cannot evaluate" if typ is not None else
                       "global memory loaded as " + ".".join(q))
                st.risky[_reg_name(st, r.name)] = (why, frozenset({"global memory"}))
                continue
            leaves = [("v", f"global byte {addr.name}+{addr.off + k * elem + b}", 8) for b in reversed(range(elem))]
            t = leaves[0] if elem == 1 else ("cat", 8 * elem) + tuple(leaves)
            if 8 * elem < 32:
                t = _ext(t, 8 * elem, 32, typ[0] == "s")
            self._set(st, r, Unk("global data", src=t))

    def _writes_global(self) -> bool:
        """Whether an instruction of the function may write global memory (a store, an atomic or
        reduction, a bulk copy or tensor store to global, a generic store): conservative."""
        hit = _GLOBAL_WRITES.get(id(self.fn))
        if hit is None or hit[0] is not self.fn:
            out = False
            for t in self.fn.body:
                i = t.instr
                if i is None:
                    continue
                space = next((x.split("::")[0] for x in i.qualifiers
                              if x.split("::")[0] in ("shared", "global", "local", "param", "const")), "")
                if i.op in ("st", "atom", "red", "multimem", "stmatrix") and space in ("global", ""):
                    out = out or i.op != "stmatrix"
                elif i.op in ("cp", "cp.reduce", "tensormap") and space == "global":
                    out = True
                elif i.op == "call":
                    out = True
            hit = _GLOBAL_WRITES[id(self.fn)] = (self.fn, out)
        return hit[1]

    def _name_store(self, st, s, addr: int, nbytes: int, val: "Unk") -> None:
        """An unknown value stored to shared memory gets a name every thread knows: a parameter's
        own, else the store's (its CTA, address, thread, line and occurrence)."""
        ident = st.trace.ident
        if val.src is None and isinstance(s.instr.operands[1], Reg) and s.instr.operands[1].name[:1] not in "%!":
            val = Unk(val.why, src=_reg_name(st, s.instr.operands[1].name))
        if val.src is not None and is_global(val.src):
            name, add, addbits = val.src, val.add, val.addbits
        else:
            k = sum(1 for x in st.trace.named_stores if x[1] == addr)
            name, add, addbits = (f"shared value c{ident.rank}+{addr:#x} stored by thread {ident.linear} at "
                                  f"L{s.line}" + (f" ({k + 1})" if k else "")), 0, 0
        st.trace.named_stores.append((ident.rank, addr, nbytes, name, add, addbits, dict(st.bars)))
        st.own_names[addr] = (nbytes, name, add, addbits)

    def _named_value(self, st, addr: int, nbytes: int):
        """The named unknown another thread stored at exactly these bytes before a barrier both
        have passed, when it is the only store there this thread can see; else None."""
        found = self._read("s", (st.trace.ident.rank, addr))
        if found is ABSENT:
            return None
        last: dict = {}
        for w, n, name, add, addbits, who in found:
            if any(k > w.get(i, 0) for i, k in st.bars.items()):
                last[who] = (n, name, add, addbits)
        if not last:
            # no store this thread can see by its barriers (one ordered by an mbarrier, or none):
            # the one value another thread ever stored there, if there is one. Taking the load to
            # read it is a launch that can happen (two unknowns can be equal), and one the
            # synchronization intends; a load racing the store is the check's to find
            last = {who: (n, name, add, addbits) for w, n, name, add, addbits, who in found
                    if who != (st.trace.ident.rank, st.trace.ident.linear)}
            if len({x[1] for x in last.values()}) != 1 or len(found) != len(last):
                return None
        vals = set(last.values())
        if len(vals) != 1:
            return None
        n, name, add, addbits = next(iter(vals))
        if n != nbytes:
            return None
        # a constant stored over those bytes by a thread this one can see: not the one value
        for b in range(nbytes):
            c = self._read("c", (st.trace.ident.rank, addr + b))
            if c is not ABSENT and any(any(k > w.get(i, 0) for i, k in st.bars.items()) for w, _, _ in c):
                return None
        st.trace.names_read.add(name)
        return Unk("shared data", src=name, add=add, addbits=addbits)

    def _param_fields(self, st, ins: Instr, name: str, off: int, always_at: bool = False) -> None:
        """`ld.param[.vN].T d, [NAME+off]`: each destination is the parameter's bytes at its own
        offset (`NAME@OFF`; `NAME` itself at offset 0 of a plain parameter): the value given for
        it (--param, the parameter search), else an unknown named by those bytes and their width
        (the same value whichever register, thread or signedness loads it)."""
        q = ins.qualifiers
        d = ins.operands[0]
        items = d.items if isinstance(d, Vec) else [d]
        elem = _access_bytes(tuple(x for x in q if x not in ("v2", "v4", "v8")), None)
        for k, r in enumerate(items):
            o = off + k * elem
            key = name if o == 0 and not always_at else f"{name}@{o}"
            v = self._read("p", key)
            self._set(st, r, Unk(f"parameter {key}", src=f"parameter {key}:{8 * elem}") if v is ABSENT
                      else _param(v, q))

    def _shared_value(self, st, addr, nbytes: int):
        """A load of shared memory: the bytes this thread stored itself, else the constant another
        thread stored before a barrier generation both have passed (the latest such), else the
        named unknown another thread stored there (`_named_value`), else unknown."""
        if not isinstance(addr, int):
            return Unk("shared data")
        later = {addr + b for b in range(nbytes) if addr + b in st.own and self._stored_after(st, addr + b)}
        if not later and any(addr + b in st.own and self._stored_unordered(st, addr + b) for b in range(nbytes)):
            # another thread's store there that no barrier orders before this thread's own: an
            # mbarrier may order it between the two (not followed), so this thread's value may
            # be overwritten (it was read back: PASS for a thread that took the side its own value
            # gives, where the other thread's store, published through an mbarrier, gives the other)
            return Unk("shared data")
        if later:
            # another thread stored there after a barrier this thread's own store came before:
            # its own value may be overwritten (it was read back, and a kernel that hangs passed)
            return self._latest(st, addr, nbytes)
        if not any(addr + b in st.own for b in range(nbytes)):
            v = self._named_value(st, addr, nbytes)
            if v is not None:
                return v
        mine = st.own_names.get(addr)
        if mine is not None and mine[0] == nbytes:        # this thread's own named store, read back
            st.trace.names_read.add(mine[1])
            return Unk("shared data", src=mine[1], add=mine[2], addbits=mine[3])
        value = 0
        for b in range(nbytes):
            a = addr + b
            if a in st.own:
                byte = st.own[a]
            else:
                last: dict = {}             # writer -> its latest store visible to this thread
                found = self._read("c", (st.trace.ident.rank, a))
                for w, v, who in (() if found is ABSENT else found):
                    if any(n > w.get(i, 0) for i, n in st.bars.items()):
                        last[who] = v
                vals = set(last.values())
                byte = next(iter(vals)) if len(vals) == 1 else None
            if byte is None:
                return Unk("shared data")
            value |= byte << (8 * b)
        return value

    def _stored_after(self, st, a: int) -> bool:
        """Another thread stored to byte `a` (a constant, or a named unknown over it) after a
        barrier generation that this thread's own store there came before, and before one this
        thread has passed since (it can see that store)."""
        mine = st.own_at.get(a, {})
        me = (st.trace.ident.rank, st.trace.ident.linear)
        rank = st.trace.ident.rank

        def after(w):
            return any(k > mine.get(i, 0) for i, k in w.items()) and any(n > w.get(i, 0) for i, n in st.bars.items())
        found = self._read("c", (rank, a))
        if found is not ABSENT and any(who != me and after(w) for w, _, who in found):
            return True
        for start in range(a - 15, a + 1):
            found = self._read("s", (rank, start))
            if found is not ABSENT and any(who != me and start + n > a and after(w) for w, n, _, _, _, who in found):
                return True
        return False

    def _stored_unordered(self, st, a: int) -> bool:
        """Another thread stores to byte `a` another value than this thread's own store there (or a
        named unknown over it), and no barrier generation orders that store before this thread's
        own or after this thread's load: it may land between the two."""
        mine = st.own_at.get(a, {})
        me = (st.trace.ident.rank, st.trace.ident.linear)
        rank = st.trace.ident.rank

        def unordered(w):       # neither before this thread's own store nor after its load
            return not any(k > w.get(i, 0) for i, k in mine.items()) and \
                not any(k > st.bars.get(i, 0) for i, k in w.items())
        found = self._read("c", (rank, a))
        if found is not ABSENT and any(who != me and v != st.own.get(a) and unordered(w) for w, v, who in found):
            return True
        for start in range(a - 15, a + 1):
            found = self._read("s", (rank, start))
            if found is not ABSENT and any(who != me and start + n > a and unordered(w)
                                           for w, n, _, _, _, who in found):
                return True
        return False

    def _latest(self, st, addr: int, nbytes: int):
        """The bytes at addr, where another thread's store may have overwritten this thread's own:
        per byte, the constants visible to this thread (by its barriers) and its own, less every
        one a barrier orders before another; one value left, else unknown (and so whenever a
        named unknown was stored over them later)."""
        me = (st.trace.ident.rank, st.trace.ident.linear)
        rank = st.trace.ident.rank
        for start in range(addr - 15, addr + nbytes):
            found = self._read("s", (rank, start))
            if found is not ABSENT and any(who != me and start + n > addr and any(k > w.get(i, 0) for i, k in st.bars.items())
                                           for w, n, _, _, _, who in found):
                return Unk("shared data")
        value = 0
        for b in range(nbytes):
            a = addr + b
            seen = [(st.own_at.get(a, {}), st.own.get(a))] if a in st.own else []
            found = self._read("c", (rank, a))
            for w, v, who in (() if found is ABSENT else found):
                if who != me and any(n > w.get(i, 0) for i, n in st.bars.items()):
                    seen.append((w, v))
            left = {v for w, v in seen
                    if not any(any(k > w.get(i, 0) for i, k in x.items()) for x, _ in seen)}
            if len(left) != 1 or None in left:
                return Unk("shared data")
            value |= next(iter(left)) << (8 * b)
        return value

    def _barrier(self, st, s, ins: Instr) -> None:
        q, ops = ins.qualifiers, ins.operands
        if ins.op == "bar" and q[:1] == ("warp",):
            st.trace.dropped["bar.warp.sync (lanes of one role)"] += 1
            if ops and self._val(st, ops[0], s) in (-1, 0xffffffff):
                st.trace.warpsyncs.append(len(st.trace.events))
            return
        if "cluster" in q:
            self._event(st, s, ins, "cluster_barrier", mode="arrive" if "arrive" in q else "wait")
            return
        mode = next((x for x in q if x in ("sync", "arrive", "red")), "sync")
        if mode == "red":
            raise Refused("bar.red is not modelled by ptxmc extract", self._loc(s))
        bid = self._int(st, s, ops[0], "barrier id")
        count = self._int(st, s, ops[1], "barrier thread count") if len(ops) > 1 else None
        st.bars[bid] += 1
        st.gens[(bid, count)] += 1
        self._event(st, s, ins, "barrier", id=bid, count=count, mode=mode)

    def _tx(self, st, s, o) -> int | str:
        """An expect_tx byte count: a constant, or (CUTLASS keeps it in Params) a parameter's value,
        which the skeleton replaces by its own count of the copies that follow anyway."""
        v = self._val(st, o, s)
        if isinstance(v, int):
            return v
        if isinstance(v, Unk) and v.why.startswith("param"):
            return "a parameter's"
        raise Refused(f"the byte count is not a constant on this path ({getattr(v, 'why', v)})", self._loc(s))

    def _mbarrier(self, st, s, ins: Instr) -> None:
        q, ops = ins.qualifiers, ins.operands
        kind = q[0] if q else ""
        space = next((x for x in q if x.startswith("shared")), "shared")
        if kind == "init":
            mb = self._shared_loc(st, s, ops[0], space, "mbarrier")
            self._event(st, s, ins, "mb_init", mb=mb, count=self._int(st, s, ops[1], "arrival count"))
        elif kind in ("arrive", "arrive_drop"):
            mb = self._shared_loc(st, s, ops[1], space, "mbarrier")
            tx = None
            count = 1
            if "expect_tx" in q:
                tx = self._tx(st, s, ops[2])
                if len(ops) > 3:
                    count = self._int(st, s, ops[3], "arrival count")
            elif len(ops) > 2:
                count = self._int(st, s, ops[2], "arrival count")
            self._set(st, ops[0], Unk("mbarrier state"))
            self._event(st, s, ins, "mb_arrive", mb=mb, count=count, tx=tx, drop=kind == "arrive_drop")
        elif kind == "complete_tx":
            raise Refused("'mbarrier.complete_tx' (a thread completing transaction bytes itself) is not modelled by "
                          "ptxmc extract", self._loc(s))
        elif kind == "expect_tx":
            mb = self._shared_loc(st, s, ops[0], space, "mbarrier")
            self._event(st, s, ins, "mb_" + kind, mb=mb, tx=self._tx(st, s, ops[1]))
        elif kind in WAITS:
            mb = self._shared_loc(st, s, ops[1], space, "mbarrier")
            if "parity" not in q:
                raise Refused("an mbarrier wait on a state token: extract models parity waits only", self._loc(s))
            parity = self._int(st, s, ops[2], "phase parity") & 1
            st.unused.add(len(st.trace.events))
            self._set(st, ops[0], 1, frozenset({len(st.trace.events)}))
            self._event(st, s, ins, "mb_wait", mb=mb, parity=parity)
        elif kind in ("inval",):
            mb = self._shared_loc(st, s, ops[0], space, "mbarrier")
            self._event(st, s, ins, "mb_inval", mb=mb)
        else:
            raise Refused(f"'mbarrier.{kind}' is not modelled by ptxmc extract", self._loc(s))

    def _copy(self, st, s, ins: Instr) -> None:
        q, ops = ins.qualifiers, ins.operands
        if q[:2] == ("async", "bulk") and len(q) > 2 and q[2] in ("commit_group", "wait_group"):
            n = self._int(st, s, ops[0], "group count") if ops else None
            self._event(st, s, ins, "bulk_" + q[2], n=n, read="read" in q)
            return
        if q[:3] == ("async", "bulk", "tensor"):
            load = len(q) > 4 and q[4].startswith("shared")
            if load:
                dst = self._shared_loc(st, s, ops[0], "shared::cluster", "tensor copy's destination")
                tmap = self._tmap(st, s, ops[1])
                mb = self._shared_loc(st, s, ops[2], "shared::cluster", "mbarrier")
                coords = tuple(self._val(st, c, s) for c in ops[1].coords)
                self._event(st, s, ins, "tma_load", dst=dst, tmap=tmap, mb=mb, dim=q[3],
                            coords=tuple(c if isinstance(c, int) else None for c in coords),
                            multicast=any(x.startswith("multicast") for x in q))
            else:
                tmap = self._tmap(st, s, ops[0])
                src = self._shared_loc(st, s, ops[1], "shared::cta", "tensor copy's source")
                self._event(st, s, ins, "tma_store", src=src, tmap=tmap, dim=q[3], reduce=ins.op == "cp.reduce")
            return
        raise Refused(f"'{'.'.join(('cp',) + q)}' is not modelled by ptxmc extract yet", self._loc(s))

    def _tmap(self, st, s, a: Addr) -> str:
        v = self._addr(st, s, Addr(a.base, a.offset, (), a.register), "param")
        if isinstance(v, Sym) and v.name.split(":")[0] in ("param", "arg", "global", "const"):
            # a map inside a struct parameter (CUTLASS's Params) is named by its offset too
            return v.name.split(":", 1)[1] + ("" if not v.off else f"@{v.off}")
        raise Refused("the tensor map cannot be traced to a kernel parameter or variable", self._loc(s))

    def _tcgen05(self, st, s, ins: Instr) -> None:
        """tcgen05: Tensor Memory is one cell per allocation (its address a constant, so that the
        register that carries it is traced); shared operands are descriptors, decoded."""
        q, ops = ins.qualifiers, ins.operands
        kind = q[0]
        if any(x == "cta_group::2" for x in q):
            raise Refused("tcgen05 with .cta_group::2 (CTA pairs) is not modelled", self._loc(s))
        if kind == "alloc":
            loc = self._shared_loc(st, s, ops[0], "shared::cta", "tcgen05.alloc destination")
            addr = self._addr(st, s, ops[0], "shared")
            for b in range(4):
                byte = (TMEM_ALLOC >> (8 * b)) & 0xff
                st.own[addr + b] = byte
                st.own_at[addr + b] = dict(st.bars)
                st.trace.stores.append((st.trace.ident.rank, addr + b, byte, dict(st.bars)))
            self._event(st, s, ins, "tc_alloc", loc=loc, cols=self._int(st, s, ops[1], "column count"))
            return
        if kind in ("dealloc",):
            self._tmem_operand(st, s, ops[0])
            self._event(st, s, ins, "tc_dealloc", cols=self._int(st, s, ops[1], "column count"))
            return
        if kind in ("relinquish_alloc_permit", "fence::before_thread_sync", "fence::after_thread_sync",
                    "wait::ld", "wait::st"):
            self._event(st, s, ins, "tc_plain")
            return
        if kind == "commit":
            if any(x.startswith("multicast") for x in q):
                raise Refused("multicast tcgen05.commit is not mapped by ptxmc extract yet", self._loc(s))
            mb = self._shared_loc(st, s, ops[0], "shared::cluster", "mbarrier")
            self._event(st, s, ins, "tc_commit", mb=mb)
            return
        if kind == "mma":
            if any(x in ("ws", "sp") or x.startswith(("block_scale", "scale_vec", "collector")) for x in q):
                raise Refused(f"'tcgen05.{'.'.join(q)}' is not modelled", self._loc(s))
            self._tmem_operand(st, s, ops[0])
            srcs = []
            for o in ops[1:3]:
                if isinstance(o, Addr):
                    self._tmem_operand(st, s, o)
                    srcs.append(None)
                    continue
                d = self._val(st, o, s)
                if not isinstance(d, int):
                    raise Refused("a tcgen05.mma descriptor the thread cannot evaluate", self._loc(s))
                loc = self.layout.resolve((d & 0x3FFF) << 4, "shared::cta", st.trace.ident.rank)
                if loc is None:
                    raise Refused("a tcgen05.mma descriptor whose start address is not in a shared variable",
                                  self._loc(s))
                srcs.append(loc)
            self._event(st, s, ins, "tc_mma", srcs=tuple(srcs))
            return
        if kind in ("ld", "st"):
            a = ops[1] if kind == "ld" else ops[0]
            self._tmem_operand(st, s, a)
            if kind == "ld":
                self._assign_unknown(st, ins, "tensor memory data")
            self._event(st, s, ins, "tc_" + kind)
            return
        raise Refused(f"'tcgen05.{kind}' is not modelled by ptxmc extract", self._loc(s))

    def _tmem_operand(self, st, s, o) -> None:
        v = self._addr(st, s, o, "tensor") if isinstance(o, Addr) else self._val(st, o, s)
        if not _tmem(v):
            raise Refused("a Tensor Memory address that cannot be traced to a tcgen05.alloc", self._loc(s))

    def _wgmma(self, st, s, ins: Instr) -> None:
        q, ops = ins.qualifiers, ins.operands
        kind = q[0]
        if kind in ("fence", "commit_group"):
            self._event(st, s, ins, "wgmma_" + kind)
            return
        if kind == "wait_group":
            self._event(st, s, ins, "wgmma_wait", n=self._int(st, s, ops[0], "group count"))
            return
        if kind == "mma_async":
            srcs = []
            for o in ops[1:3]:
                if isinstance(o, Vec):
                    continue
                d = self._val(st, o, s)
                if not isinstance(d, int):
                    raise Refused("a wgmma descriptor the thread cannot evaluate", self._loc(s))
                addr = (d & 0x3FFF) << 4
                loc = self.layout.resolve(addr, "shared::cta", st.trace.ident.rank)
                if loc is None:
                    raise Refused(f"the wgmma descriptor's start address {hex(addr)} is not in a shared variable",
                                  self._loc(s))
                srcs.append(loc)
            self._assign_unknown(st, ins, "accumulator")
            self._event(st, s, ins, "wgmma_mma", srcs=tuple(srcs))
            return
        raise Refused(f"'wgmma.{kind}' is not modelled by ptxmc extract", self._loc(s))


TMEM_ALLOC = 0x100000          # the Tensor Memory address an allocation returns in the extractor


def _tmem(v) -> bool:
    return isinstance(v, int) and v >= TMEM_ALLOC


@dataclass
class _State:
    pc: int
    regs: dict
    taint: dict
    loops: dict
    local: dict
    occ: Counter
    trace: Trace
    visits: Counter = field(default_factory=Counter)
    bars: Counter = field(default_factory=Counter)      # barrier id -> uses so far
    own: dict = field(default_factory=dict)             # byte address -> value this thread stored
    gens: Counter = field(default_factory=Counter)      # (barrier id, count) -> generations passed
    unused: set = field(default_factory=set)            # event indices of waits no branch has read yet
    stop: frozenset = frozenset()                       # loop heads where a second trip stops (--tiles 1)
    writes: Counter = field(default_factory=Counter)    # register -> writes so far (which value it holds)
    facts: dict = field(default_factory=dict)           # Atom -> (truth, line): decisions on unknowns
    own_names: dict = field(default_factory=dict)       # byte address -> the named unknown this thread stored there
    # value name -> (why, roots): an unknown computed from values other threads name (roots: those
    # names, "global memory") in a way the facts do not follow (`popc` of a parameter)
    risky: dict = field(default_factory=dict)
    own_at: dict = field(default_factory=dict)          # byte address -> the barrier counts at this thread's store
    # (head, statement, trips, note): an outer loop's branch the facts decided before its `--tiles`
    # trips ran, until the path comes back to the loop's head (Machine._early)
    early: tuple | None = None
    # registers whose value depends on the CTA's place in the grid (%ctaid, %clusterid), which the
    # skeleton takes as its cluster's, the grid's first (Machine._grid_branch)
    grid: frozenset = frozenset()
    # registers that hold %ctaid.x itself (a `mov` of it): `rem` of one by the cluster's size is
    # the CTA's rank in its cluster, the same in every cluster of the grid (_mark_grid)
    ctaid_x: frozenset = frozenset()

    def copy(self, pc: int) -> "_State":
        t = self.trace
        nt = Trace(t.ident, list(t.events), list(t.assumptions), Counter(t.dropped), list(t.maxnreg), dict(t.shfl),
                   list(t.stores), list(t.gens), dict(t.tiles), set(t.tile_whys), list(t.warpsyncs),
                   list(t.decided), list(t.named_stores), set(t.names_read), list(t.risky))
        return _State(pc, dict(self.regs), dict(self.taint), dict(self.loops), dict(self.local), Counter(self.occ), nt,
                      Counter(self.visits), Counter(self.bars), dict(self.own), Counter(self.gens),
                      set(self.unused), self.stop, Counter(self.writes), dict(self.facts), dict(self.own_names),
                      dict(self.risky), dict(self.own_at), self.early, self.grid, self.ctaid_x)


def ins_name(s) -> str:
    """An instruction's opcode with its qualifiers (`mbarrier.arrive.expect_tx`), for the table."""
    return ".".join((s.instr.op,) + tuple(s.instr.qualifiers)) if s.instr is not None else s.text


def _key(addr):
    return addr if isinstance(addr, int) else repr(addr)


def _dests(d) -> list[str]:
    if isinstance(d, Reg):
        return [d.name.lstrip("!")]
    if isinstance(d, Vec):
        return [x.name for x in d.items if isinstance(x, Reg)]
    return []


_UNWRITTEN = Unk("a register not written on this path")
# the value names that are the same in every thread: facts on them are shared by the kernel
SHARED_NAMES = ("parameter ", "shared value ", "address of ", "global byte ", "launch ")


def _tag(st: "_State") -> str:
    """What makes a register's value name unique in the kernel: its thread (`|t32c0`), so that a
    value stored to shared memory or broadcast keeps its name in the threads that read it."""
    tr = st.trace
    t = tr.__dict__.get("tag")
    if t is None:
        i = tr.ident
        t = tr.__dict__["tag"] = f"|t{i.linear}c{i.rank}"
    return t


def _reg_name(st: "_State", reg: str) -> str:
    """The name of the value register `reg` holds (with no name of its own): the register, its
    write, and the thread (`r8#1|t32c0`)."""
    return f"{reg}#{st.writes[reg]}{_tag(st)}"


def is_global(name) -> bool:
    """A value name every thread means the same by (facts on it are shared by the kernel); a term
    (checker.extract.facts) whose leaves all are."""
    if isinstance(name, tuple):
        return all(is_global(k[0]) for k in _leaves((name, 0)))
    return name.startswith(SHARED_NAMES) or "|t" in name


# Special registers with one value for the whole launch (PTX ISA, Special Registers), and their bits.
_LAUNCH_WIDE = {"nctaid": 32, "nclusterid": 32, "dynamic_smem_size": 32, "total_smem_size": 32,
                "aggr_smem_size": 32, "gridid": 64, "nsmid": 32, "nwarpid": 32}

_NO_ROOTS: frozenset = frozenset()
_TERM_OPS = frozenset(("add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "neg", "min", "max",
                       "cvt"))
_TERM_LIMIT = 64        # the most distinct nodes a term has (a longer computation is an unknown of its own)
_TREE_LIMIT = 1024      # the most nodes it has written out as a tree (it is hashed, printed and walked as one)


def _size(t) -> int:
    """How many nodes the term `t` has, each shared subterm counted once (a tile index that adds
    the grid size on every trip grows by one node a trip, not by the grid size's term): the size
    of the Z3 term it becomes. Past the tree bound (a tree of 2^k nodes can be k tuples, and
    Python hashes and prints it as the tree) it counts as past the limit."""
    if not isinstance(t, tuple):
        return 0
    if t[0] == "v":
        return 1
    nodes = _nodes(t)
    return _TERM_LIMIT + 1 if nodes is None or _tree(t) > _TREE_LIMIT else len(nodes)


def _nodes(t) -> frozenset | None:
    """The distinct nodes of `t` (a leaf by its value, an operation by its identity), None where
    they are more than the limit; remembered by identity."""
    hit = _NODES.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    out: frozenset | None = frozenset((id(t),))
    for x in t[2:]:
        if not isinstance(x, tuple):
            continue
        sub = frozenset((x,)) if x[0] == "v" else _nodes(x)
        if sub is None or len(out | sub) > _TERM_LIMIT:
            out = None
            break
        out = out | sub
    if len(_NODES) > 200_000:
        _NODES.clear()
    _NODES[id(t)] = (t, out)
    return out


def _tree(t) -> int:
    """How many nodes the term `t` has as a tree, from its operands' (remembered by identity)."""
    if not isinstance(t, tuple):
        return 0
    if t[0] == "v":
        return 1
    hit = _SIZES.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    n = min(1 + sum(_tree(x) for x in t[2:]), 1 << 30)
    if len(_SIZES) > 200_000:
        _SIZES.clear()
    _SIZES[id(t)] = (t, n)
    return n


_SIZES: dict = {}
_NODES: dict = {}


def _fit(t, bits: int):
    """The term `t` at `bits` bits: its low bits where it is wider (a register wider than the
    instruction's type), None where it is narrower (which extension is not known)."""
    if isinstance(t, int):
        return t & ((1 << bits) - 1)
    w = width(t)
    if w == bits:
        return t
    return ("trunc", bits, t) if w > bits else None


def _ext(t, frm: int, bits: int, signed: bool):
    """`t` (at `frm` bits) sign- or zero-extended to `bits` bits."""
    if isinstance(t, int):
        return _wrap(_sx(t, frm) if signed else _wrap(t, frm), bits)
    return t if frm == bits else ("sext" if signed else "zext", bits, t)
_GLOBAL_WRITES: dict = {}      # id(function) -> (function, whether it may write global memory)
_EXITS: dict = {}           # (id(function), statement) -> (function, whether the branch there leaves a loop)
_BOOL_OPS = ("and", "or", "xor")       # setp.CMP.BOOLOP
_ALU_OPS = frozenset(("mov", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "bfe", "bfi",
                      "selp", "min", "max", "div", "rem", "neg", "abs", "popc", "clz", "brev", "cvt", "setp", "prmt"))
_SOURCE_NAMES: dict[int, tuple] = {}      # id(instruction) -> (it, the names of its source registers)


def _sources(ins: Instr) -> tuple[str, ...]:
    """The register names an instruction reads (its operands after the first), computed once per
    instruction: the taint of every ALU result after a wait reads them."""
    hit = _SOURCE_NAMES.get(id(ins))
    if hit is None or hit[0] is not ins:
        hit = _SOURCE_NAMES[id(ins)] = (ins, tuple(o.name.lstrip("!") for o in _regs_in(ins.operands[1:])))
    return hit[1]


# (and %warpid: the warp's hardware slot, unique in the CTA but not tid / 32, and volatile by the
# PTX ISA; taken as tid / 32, a branch on it whose sides differ is refused alike)
_GRID_REGS = ("%ctaid", "%clusterid", "%warpid")


def _reads_grid(ins: Instr) -> bool:
    """Does the instruction read a special register that says where the CTA is in the grid?"""
    return any(isinstance(o, Reg) and o.name.split(".")[0] in _GRID_REGS for o in ins.operands[1:])


def _mark_grid(st: "_State", ins: Instr) -> None:
    """After a register operation: its results depend on the CTA's place in the grid when one of
    its operands does (a value loaded or stored through memory is not followed)."""
    if ins.op not in _ALU_OPS or not ins.operands:
        # a load, shuffle, vote...: whatever register it writes no longer holds %ctaid.x (every
        # register it names is dropped from ctaid_x: a conservative over-approximation of its writes)
        st.ctaid_x = st.ctaid_x - {o.name.lstrip("!") for o in _all_regs(ins.operands)}
        return
    dests = _dests(ins.operands[0])
    exact = ins.op == "mov" and not ins.predicate and len(ins.operands) == 2 and \
        isinstance(ins.operands[1], Reg) and (ins.operands[1].name == "%ctaid.x" or ins.operands[1].name in st.ctaid_x)
    st.ctaid_x = (st.ctaid_x | set(dests)) if exact else (st.ctaid_x - set(dests))
    if _cluster_rank(st, ins):
        st.grid = st.grid - set(dests)
    elif _reads_grid(ins) or any(r in st.grid for r in _sources(ins)) or \
            (ins.predicate and ins.predicate.lstrip("@!") in st.grid):
        st.grid = st.grid | set(dests)
    elif st.grid:
        st.grid = st.grid - set(dests)


def _all_regs(ops) -> list[Reg]:
    out = []
    for o in ops:
        if isinstance(o, Reg):
            out.append(o)
        elif isinstance(o, Vec):
            out += _all_regs(o.items)
        elif isinstance(o, Addr) and o.register:
            out.append(Reg(o.base))
    return out


def _cluster_rank(st: "_State", ins: Instr) -> bool:
    """Is `ins` `rem %r, %ctaid.x, N` (or `and %r, %ctaid.x, N-1` for N a power of two), N the
    cluster's size (.reqnctapercluster N,1,1, or --cluster N)? A grid's clusters tile it along x,
    whose size the cluster's divides, so that is the CTA's rank in its cluster (%cluster_ctarank),
    the same in every cluster: not a value of the CTA's place in the grid (before, a branch on it
    was refused where its sides differ)."""
    if ins.predicate or len(ins.operands) != 3 or ins.op not in ("rem", "and"):
        return False
    a, b = ins.operands[1], ins.operands[2]
    n = st.trace.ident.nrank
    if not (isinstance(a, Reg) and (a.name == "%ctaid.x" or a.name in st.ctaid_x)) or not isinstance(b, Imm):
        return False
    return b.value == n if ins.op == "rem" else (n & (n - 1) == 0 and b.value == n - 1)


def _regs_in(ops) -> list[Reg]:
    out = []
    for o in ops:
        if isinstance(o, Reg) and not o.name.startswith("%"):
            out.append(o)
        elif isinstance(o, Vec):
            out += _regs_in(o.items)
    return out


def _access_bytes(q, data) -> int:
    width = next((_INT_BITS.get(x) or {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "b128": 128}.get(x)
                  for x in q if x in _INT_BITS or x in ("f16", "bf16", "f32", "f64", "b128")), 32) or 32
    vec = next((int(x[1]) for x in q if x in ("v2", "v4", "v8")), 1)
    return max(1, width // 8) * vec


def _bits(q) -> int:
    b = _BITS.get(q)
    if b is None:
        b = _BITS[q] = next((_INT_BITS[x] for x in reversed(q) if x in _INT_BITS), 64)
    return b


def _wide(q) -> bool:
    return "wide" in q or "cc" in q or "sat" in q


def _signed(q) -> bool:
    s = _SIGNED.get(q)
    if s is None:
        s = _SIGNED[q] = any(x.startswith("s") and x[1:].isdigit() for x in q)
    return s


_BITS: dict[tuple, int] = {}        # qualifiers -> _bits (a few hundred distinct tuples per kernel)
_SIGNED: dict[tuple, bool] = {}


def _wrap(v: int, bits: int) -> int:
    return v & ((1 << bits) - 1)


def _sx(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


_FCMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
         "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
         "equ": lambda a, b: a == b, "neu": lambda a, b: a != b, "ltu": lambda a, b: a < b,
         "leu": lambda a, b: a <= b, "gtu": lambda a, b: a > b, "geu": lambda a, b: a >= b}


def _as_float(v: int, t: str) -> float:
    """The IEEE value of a bit pattern (`0f3F800000` is 1.0)."""
    import struct
    if t == "f32":
        return struct.unpack("<f", struct.pack("<I", v & 0xFFFFFFFF))[0]
    return struct.unpack("<d", struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF))[0]


def _param(v, q: tuple):
    """A parameter's assumed value as the load reads it: a float as its bit pattern."""
    if isinstance(v, float):
        return float_bits(v, "f64" if "f64" in q else "f32")
    return v


def float_bits(x: float, t: str = "f32") -> int:
    """The bit pattern of `x` as an .f32 (or .f64) value."""
    import struct
    if t == "f32":
        return struct.unpack("<I", struct.pack("<f", x))[0]
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _carry(op: str, q: tuple, v: Any) -> Any:
    """What an ALU result keeps of an unknown predicate's comparison or of a parameter's value: a
    copy keeps it, `not.pred` negates the comparison, anything else (`and.pred`, selp, `add`) is no
    longer that comparison or that value."""
    if not isinstance(v, Unk) or (v.cond is None and v.src is None) or op == "mov":
        return v
    if op == "not" and "pred" in q and v.cond is not None:
        return Unk(v.why, v.cond.negated())
    return Unk(v.why)


def _alu(op: str, q: tuple, vals: list) -> Any:
    """The result of an integer ALU operation; Unk if an input is unknown; Sym arithmetic for
    adding constants to non-shared addresses."""
    if op == "mov":
        return vals[0]
    if op == "selp":
        c = vals[2]
        if not isinstance(c, int):
            return c if vals[0] != vals[1] else vals[0]
        return vals[0] if c else vals[1]
    if op in ("add", "sub") and len(vals) == 2:
        a, b = vals
        if isinstance(a, Sym) and isinstance(b, int):
            return Sym(a.name, None if a.off is None else a.off + (b if op == "add" else -b))
        if isinstance(b, Sym) and isinstance(a, int) and op == "add":
            return Sym(b.name, None if b.off is None else b.off + a)
        if isinstance(a, Sym) or isinstance(b, Sym):
            s = a if isinstance(a, Sym) else b
            return Sym(s.name, None)
    if op == "cvt" and vals and isinstance(vals[0], Sym):
        return vals[0]
    if not all(isinstance(v, int) for v in vals):
        if op == "and" and "pred" in q and any(v == 0 for v in vals if isinstance(v, int)):
            return 0
        if op == "or" and "pred" in q and any(v == 1 for v in vals if isinstance(v, int)):
            return 1
        return next(v for v in vals if not isinstance(v, int)) if any(isinstance(v, Unk) for v in vals) \
            else Unk(op + " of an address")
    bits = _bits(q)
    s = _signed(q)
    a = vals[0]
    b = vals[1] if len(vals) > 1 else 0
    if op == "setp":
        cmp = q[0]
        x, y = (_sx(a, bits), _sx(b, bits)) if s else (_wrap(a, bits), _wrap(b, bits))
        r = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,
             "lo": x < y, "ls": x <= y, "hi": x > y, "hs": x >= y}.get(cmp)
        if r is None:
            return Unk("setp." + cmp)
        r = int(r)
        if len(vals) > 2 and len(q) > 2 and q[1] in ("and", "or", "xor"):
            c = vals[2]
            r = {"and": r & c, "or": r | c, "xor": r ^ c}[q[1]]
        return r
    if op == "cvt":
        if isinstance(a, Sym):
            return a
        src = next((x for x in reversed(q) if x in _INT_BITS), None)
        sb = _INT_BITS.get(src, 64)
        v = _sx(a, sb) if src and src.startswith("s") else _wrap(a, sb)
        dst = next((x for x in q if x in _INT_BITS), "u64")
        return _wrap(v, _INT_BITS[dst])
    wide = "wide" in q
    if op in ("add", "sub", "mul", "mad", "min", "max", "div", "rem"):
        x, y = (_sx(a, bits), _sx(b, bits)) if s else (_wrap(a, bits), _wrap(b, bits))
        if op == "add":
            r = x + y
        elif op == "sub":
            r = x - y
        elif op in ("mul", "mad"):
            r = x * y
            if "hi" in q:
                r >>= bits
            if op == "mad":
                r += vals[2]
        elif op == "min":
            r = min(x, y)
        elif op == "max":
            r = max(x, y)
        elif op == "div":
            if y == 0:
                return Unk("division by zero")
            r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        else:
            if y == 0:
                return Unk("division by zero")
            r = x - y * (abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1))
        return _wrap(r, 2 * bits if wide else bits)
    if op == "neg":
        return _wrap(-a, bits)
    if op == "abs":
        return _wrap(abs(_sx(a, bits)), bits)
    if op == "not":
        return _wrap(~a, bits) if bits > 1 else (0 if a else 1)
    if op in ("and", "or", "xor"):
        r = {"and": a & b, "or": a | b, "xor": a ^ b}[op]
        return _wrap(r, bits)
    if op == "shl":
        return _wrap(a << b, bits) if b < bits else 0
    if op == "shr":
        if s:
            return _wrap(_sx(a, bits) >> min(b, bits - 1), bits)
        return _wrap(a, bits) >> b if b < bits else 0
    if op == "bfe":
        pos, ln = vals[1] & 0xff, vals[2] & 0xff
        v = (_wrap(a, bits) >> pos) & ((1 << ln) - 1) if ln else 0
        if s and ln and v >> (ln - 1):
            v -= 1 << ln
        return _wrap(v, bits)
    if op == "bfi":
        f, base, pos, ln = a, b, vals[2] & 0xff, vals[3] & 0xff
        mask = ((1 << ln) - 1) << pos
        return _wrap((base & ~mask) | ((f << pos) & mask), bits)
    if op == "popc":
        return bin(_wrap(a, bits)).count("1")
    if op == "clz":
        v = _wrap(a, bits)
        return bits - v.bit_length()
    if op == "brev":
        v = _wrap(a, bits)
        return int(format(v, f"0{bits}b")[::-1], 2)
    if op == "prmt":
        return Unk("prmt")
    return Unk(op)
