"""Control flow -> control paths: the one place that decides what labels, `bra`, guards (`@p`,
`@!p`) and loops mean for the rest of ptxmc.

A thread with control flow is split into its static control paths (docs/model.md#a18): each
path is straight-line code in which a guarded instruction either runs (unguarded) or is left
out, a branch is followed or not, and every such decision is an `assume p == v`
(checker.isa.flow) at the point where it was taken, so that only the executions in which the
predicate had that value count. A loop is unrolled: a backward branch is taken at most
`unroll - 1` times on a path, so its body runs at most `unroll` times; the path that would take
it once more is *cut* (it ends with the assumption that the loop goes on). A test's executions
are the union, over one path per thread, of each path combination's executions
(checker.verdict.union asks them).

`check_thread` validates a thread's control flow when the test is loaded (labels defined once,
every branch target defined, every predicate set by some instruction of the thread); `split`
gives the paths. Both raise LitmusError naming the file, line and text.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import limits
from ..ast import Addr, Imm, Instr, LitmusTest, Name, Reg, Thread
from ..errors import LimitExceeded, LitmusError
from ..isa import address, core, fold, registry
from ..isa.flow import assume
from ..isa import syntax as ptx
from ..model.values import Const, evaluate
from . import loops

WAITS = ("mbarrier.test_wait", "mbarrier.try_wait")
# the label after the loop of a guarded await (await_loops), which its guard's branch skips to
SKIP = "__skip"
# Iterations of one loop whose every guard registers decide (a counter compared with a constant)
# that a path runs before it is cut: such a loop is unrolled to its bound when the bound is at most
# this, whatever --unroll says.
DECIDED_ITERATIONS = 16


@dataclass(frozen=True)
class Spin:
    """The loop a cut path ends in: its backward branch, its classification (checker.unfold.loops),
    and the last iteration's loads (register, location) and mbarrier waits, for the fairness check
    of a hang (docs/model.md#a18)."""

    branch: Instr
    head: Instr                                # the first instruction of the loop body
    loop: loops.Loop
    loads: tuple[tuple[str, str], ...]        # (register, location) of each `ld` in the body
    waits: tuple[Instr, ...]                   # the body's mbarrier waits (as on the path)
    fair_checkable: bool                       # can the fairness check judge this loop?
    decided: bool = False                      # cut after DECIDED_ITERATIONS iterations registers decided
    why: str = ""                              # why the fairness check cannot judge it ("" when it can)

    def unjudged(self, thread: str) -> str:
        """Why a hang in this loop is not judged, for a message (docs/model.md#a18)."""
        b = self.branch
        return (f"the loop of '{b.text}' ({thread}, line {b.where.line if b.where else '?'}) is cut by the bound and "
                f"ptxmc judges hangs only in spin loops (docs/model.md#a18): {self.why}; a higher --unroll "
                "decides it only if every execution leaves that loop within the bound")

    def pure(self, observed: frozenset[str] | None = None) -> bool:
        """Does the cut lose no outcome over the thread's registers `observed` (None: all)?"""
        return self.loop.pure(observed)


@dataclass(frozen=True)
class Path:
    code: tuple[Instr, ...]
    cut: Spin | None = None       # the path stops where the unrolling bound cut a loop
    decisions: tuple[str, ...] = ()
    # the [start, end) spans of `code` of the iterations of tracked await loops (split's `awaits`)
    # that went round: removing them gives the path with each such await run once
    rounds: tuple[tuple[int, int], ...] = ()

    def once(self) -> tuple[tuple[Instr, ...], dict[int, int]]:
        """The code without the iterations in `rounds`, and where each kept index went."""
        return self.without(self.rounds)

    def without(self, spans) -> tuple[tuple[Instr, ...], dict[int, int]]:
        """The code without the [start, end) `spans`, and where each kept index went."""
        gone = {k for a, b in spans for k in range(a, b)}
        moved, code = {}, []
        for k, i in enumerate(self.code):
            if k not in gone:
                moved[k] = len(code)
                code.append(i)
        return tuple(code), moved

    def describe(self) -> str:
        return ", ".join(self.decisions) or "straight through"


def _fail(msg: str, i: Instr | None, t: Thread):
    raise LitmusError(msg, i.where if i is not None else t.where)


def labels_of(t: Thread) -> dict[str, int]:
    return dict(t.labels)


def guard(i: Instr) -> tuple[str, int]:
    """A guard's predicate register and the value that makes the instruction run."""
    g = i.predicate.lstrip("@")
    return (g[1:], 0) if g.startswith("!") else (g, 1)


def check_thread(t: Thread) -> None:
    """Static checks of a thread's control flow."""
    seen: set[str] = set()
    for name, _ in t.labels:
        if name in seen:
            _fail(f"label '{name}' is defined twice in thread {t.name}", None, t)
        seen.add(name)
    written = {r for i in t.code for r in address.destinations(i, registry.family(i))}
    for i in t.code:
        if i.op == "bra":
            target = i.operands[0]
            if not isinstance(target, Name) or target.name not in seen:
                name = getattr(target, "name", "?")
                known = ", ".join(sorted(seen)) or "none"
                _fail(f"bra to '{name}': no such label in thread {t.name} (labels: {known})", i, t)
        if i.predicate:
            p, _ = guard(i)
            if p not in written:
                _fail(f"predicate '{p}' is never set in thread {t.name}: set it with setp (e.g. "
                      f"setp.eq.s32 {p}, r0, 1) before the guard", i, t)


def split(t: Thread, unroll: int, test: LitmusTest | None = None, options=frozenset(),
          once: frozenset[str] = frozenset(), awaits: frozenset[str] = frozenset(),
          quiet: frozenset[str] = frozenset()) -> list[Path]:
    """Every control path of thread `t`, loops run at most `unroll` times. With the `test` the
    thread belongs to, a guard decided by registers alone (checker.isa.fold) is followed on the
    side it decides only, and an mbarrier wait's parity register that holds a constant is read
    as that immediate. `options`: the model options (loops.REWRITE_EFFECT is read here). The
    loops headed by a label of `once` (the spin loops await_loops writes) run once and are cut
    there, whatever `unroll` says (docs/model.md#a18: a second iteration adds no outcome and no
    hang). Each path records the code of the iterations of the loops headed by a label of
    `awaits` that went round (Path.rounds). With `quiet` (mbarrier locations: checker.verdict.quiet),
    a path with more than one iteration that went round of waits on them, not counting those of
    the await it is cut in (checker.verdict.union._quiet_rounds), is not made: the undefined-
    behaviour question never combines it (docs/model.md#a18, "Failed iterations of an mbarrier
    wait"), and leaving it out here keeps it from counting against the paths limit."""
    if not t.branches:
        return [Path(t.code)]
    labels = labels_of(t)
    code = t.code
    cap = limits.current().paths
    folder = fold.Folder(test, t)
    heads = {labels[i.operands[0].name] for k, i in enumerate(code)
             if i.op == "bra" and labels[i.operands[0].name] <= k}
    bodies: dict[tuple[int, int], frozenset[int] | None] = {}
    out: list[Path] = []
    # (pc, code so far, registers set so far, back-branch counts (free, decided), decisions,
    #  constant registers, where registers decided a branch (the side not taken), for each
    #  loop head the decisions, such branches, registers and code length when it was last
    #  entered, and the spans of the tracked await iterations that went round)
    stack = [(0, (), frozenset(), {}, (), {}, (), {}, ())]
    while stack:
        pc, done, regs, backs, why, env, folds, marks, rounds = stack.pop()
        if pc in heads:
            marks = {**marks, pc: (len(why), len(folds), env, len(done))}
        if pc >= len(code):
            out.append(Path(_awaited(done, t, folder), None, why, rounds))
        else:
            i = code[pc]
            steps = []                                 # (next pc, instrs emitted, decision text)
            if i.predicate:
                p, run = guard(i)
                if p not in regs:
                    _fail(f"predicate '{p}' is read before it is set on a path of thread {t.name} "
                          f"({', '.join(why) or 'from the start'})", i, t)
                line = i.where.line if i.where else pc
                # the guard of an await's loop (await_loops): its decision reads as the await's
                skips = i.op == "bra" and i.operands[0].name.startswith(SKIP)
                body = fold.with_constants(env, replace(i, predicate=None))
                known = fold.value(env, p)
                if known is not None:
                    # a fact of the path: only the side it decides (docs/model.md#a18)
                    if i.op == "bra":
                        target = labels[i.operands[0].name]
                        steps.append((target if known == run else pc + 1, (), ""))
                        folds = folds + ((pc + 1 if known == run else target),)
                    else:
                        steps.append((pc + 1, (body,) if known == run else (), ""))
                elif i.op == "bra":
                    steps.append((labels[i.operands[0].name], (assume(p, run, i.where, f"line {line}: {i.text}"),),
                                  f"line {line} {'skipped' if skips else 'taken'}"))
                else:
                    steps.append((pc + 1, (assume(p, run, i.where, f"line {line}: {i.text}"), body),
                                  f"line {line} runs"))
                if known is None:
                    steps.append((pc + 1, (assume(p, 1 - run, i.where, f"line {line}: {i.text} not taken"),),
                                  f"line {line} {'runs' if skips else 'not taken' if i.op == 'bra' else 'skipped'}"))
            elif i.op == "bra":
                steps.append((labels[i.operands[0].name], (), ""))
            else:
                steps.append((pc + 1, (fold.with_constants(env, i),), ""))
            for nxt, emitted, text in steps:
                new_regs = regs | {r for e in emitted if e.family != "assume"
                                   for r in address.destinations(e, registry.family(e))}
                new_env = env
                for e in emitted:
                    if e.family != "assume":
                        new_env = folder.step(new_env, e)
                new_why = why + ((text,) if text else ())
                if i.op == "bra" and nxt <= pc:
                    free, decided = backs.get(pc, (0, 0))
                    # an iteration that registers bound (they decided every guard, or kept the
                    # loop going at a branch whose other side leaves it) and that changed them
                    # is run as they say, up to DECIDED_ITERATIONS (a counted or retry loop
                    # unrolled to its bound); the others count against `unroll`
                    if (nxt, pc) not in bodies:
                        bodies[(nxt, pc)] = loops.natural_loop(code, labels, nxt, pc)
                    if i.operands[0].name in once:
                        free += 1
                        over = True
                    elif _bound_by_registers(marks.get(nxt), new_why, folds, new_env, bodies[(nxt, pc)]):
                        decided += 1
                        over = decided >= DECIDED_ITERATIONS
                    else:
                        free += 1
                        over = free >= unroll
                    if over:
                        path = _awaited(done + emitted, t, folder)
                        spin = _spin(code, labels, nxt, pc, path, decided, folder, new_env,
                                     loops.REWRITE_EFFECT in options)
                        out.append(Path(path, spin, new_why, rounds))
                        continue
                    went = rounds + (((marks[nxt][3], len(done) + len(emitted)),)
                                     if i.operands[0].name in awaits else ())
                    if quiet and went != rounds and _quiet_excess(done + emitted, went, quiet):
                        continue
                    stack.append((nxt, done + emitted, new_regs, {**backs, pc: (free, decided)}, new_why, new_env,
                                  folds, marks, went))
                else:
                    stack.append((nxt, done + emitted, new_regs, backs, new_why, new_env, folds, marks, rounds))
        if len(out) > cap:
            raise LimitExceeded(f"too large: thread {t.name} has more than {cap} control paths with unroll "
                                f"{unroll} (raise it with --limit paths=N)")
    return out[::-1]


def _quiet_excess(code: tuple[Instr, ...], rounds, quiet: frozenset[str]) -> bool:
    """Will every path that goes on from here have more than one iteration that went round of
    waits on `quiet` mbarriers outside the await it is cut in? Those of one await (by its line)
    at most are left out of the count (the await a path may yet be cut in), and iterations are
    only ever added."""
    per: dict = {}
    for a, _ in rounds:
        i = code[a]
        if i.family in WAITS and i.operands[1].base in quiet:
            per[i.where] = per.get(i.where, 0) + 1
    return sum(per.values()) - max(per.values(), default=0) > 1


def _bound_by_registers(mark, why, folds, env, body) -> bool:
    """Did registers bound this iteration of a loop (`mark`: the decisions, folded branches and
    registers when its head was entered)? They did when they changed and either decided every
    guard on the way round or kept the loop going at a branch whose other side leaves it."""
    if mark is None or env == mark[2]:
        return False
    if len(why) == mark[0]:
        return True
    return body is not None and any(k not in body for k in folds[mark[1]:])


def _awaited(code: tuple[Instr, ...], t: Thread, folder: fold.Folder | None = None) -> tuple[Instr, ...]:
    """An mbarrier wait whose result decides a later branch is awaited with the value the path
    assumes for it (the existing await semantics: only an `== 1` wait acquires), also through
    register operations that compute the branch's predicate from it (selp, not.pred, setp: the
    value of the wait's predicate that gives the assumed one, checker.isa.fold)."""
    out = list(code)
    for k, i in enumerate(out):
        if i.family not in WAITS or i.await_value is not None:
            continue
        dst = i.operands[0]
        value = None
        for n, j in enumerate(out[k + 1:], k + 1):
            if j.family == "assume" and j.operands[0] == dst:
                value = j.await_value
                break
            if j.family == "assume" and isinstance(dst, Reg):
                value = _through(out[:k + 1], out[k + 1:n], dst.name, j, folder)
                if value is not None:
                    break
            if isinstance(dst, Reg) and dst.name in address.destinations(j, registry.family(j)):
                break
        if value is None:
            _fail(f"the result of '{i.text}' decides no branch on this path: ptxmc models an mbarrier wait "
                  "whose predicate a branch tests (@p bra / @!p bra), or an await (== 1 / == 0)", i, t)
        text = i.text.split("==")[0].rstrip() + f" == {value}"
        out[k] = replace(i, await_value=value, text=text)
    return tuple(out)


def _through(before, between, reg: str, assumption: Instr, folder: fold.Folder | None) -> int | None:
    """The value of `reg` that makes the register `assumption` constrains take its assumed
    value through the instructions `between` (None when both or neither do, or it depends on
    something else)."""
    if folder is None:
        return None
    written = {r for i in before for r in address.destinations(i, registry.family(i)) if i.family != "assume"}
    target = assumption.operands[0].name
    got = []
    for v in (0, 1):
        env = {**dict.fromkeys(written), reg: v}
        for i in between:
            if i.family != "assume":
                env = folder.step(env, i)
        got.append(fold.value(env, target))
    if None in got or got[0] == got[1]:
        return None
    return got.index(assumption.await_value) if assumption.await_value in got else None


def _spin(code: tuple[Instr, ...], labels: dict[str, int], head: int, back: int, path: tuple[Instr, ...],
          decided: int, folder: fold.Folder, env, rewrite_effect: bool) -> Spin:
    loop = loops.classify(code, labels, head, back, rewrite_effect)
    written = {r for k in loop.body for r in address.destinations(code[k], registry.family(code[k]))
               if code[k].op != "bra"}
    if loop.rewrites and loop.spins:
        # a CAS retry loop spins when each iteration that goes round wrote back what it read
        test = folder.builder.test if folder.builder is not None else None
        held = (lambda loc: loops.stored_values(test, loc)) if test is not None else (lambda loc: None)
        invariant = {r: v for r, v in env.items() if r not in written}
        if not loops.writes_back(code, labels, loop, folder.step, invariant, held):
            i = code[min(loop.rewrites)]
            loop = replace(loop, spins=False, why=f"ptxmc cannot show that '{i.text}' writes back the value it "
                                                  "read on every iteration that does not exit")
        else:
            # the write-back is a copy of what it read only among morally strong accesses
            shared = next(((code[k], w) for k in sorted(loop.rewrites) if test is not None
                           for w in [loops.shared_with(test, folder.thread.name, code[k])] if w), None)
            if test is None or shared is not None:
                i, w = shared if shared is not None else (code[min(loop.rewrites)], "the test is not known")
                loop = replace(loop, spins=False, why=f"the write-back of '{i.text}' may not be a copy of the "
                                                      f"value it read: {w}")
    body = [code[k] for k in sorted(loop.body)]
    branch = code[back]
    # the last iteration's reads: each load, and each cas/exch (which writes back what it read)
    reads = [i for i in body if i.family == "ld" or loops.rewrites(i) and not rewrite_effect]
    loads = tuple((i.operands[0].name, i.operands[1].base) for i in reads
                  if isinstance(i.operands[0], Reg) and isinstance(i.operands[1], Addr))
    plain = all(i.operands[1].offset == 0 and isinstance(i.operands[0], Reg) for i in reads)
    n_waits = sum(1 for i in body if i.family in WAITS)
    waits = tuple(i for i in path if i.family in WAITS)[-n_waits:] if n_waits else ()
    # the fairness check reads a wait's parity as an immediate (checker.isa.fold makes a register
    # that holds a constant one) or a register the loop does not write (its final value); a wait
    # it cannot read leaves the hang search incomplete
    parities = all(w.quals.get("parity") and (isinstance(w.operands[2], Imm) or isinstance(w.operands[2], Reg)
                                              and w.operands[2].name not in written) for w in waits)
    why = loop.why or ("it reads part of a location (an offset)" if not plain else
                       "an mbarrier wait's parity is computed by the loop" if not parities else "")
    return Spin(branch, code[head], loop, loads, waits, loop.spins and loop.straight and plain and parities,
                decided >= DECIDED_ITERATIONS, why)


def _awaited_register(i: Instr) -> tuple[str, int]:
    """(the `setp` type, the constant) that compare the register of load `i` with what it holds
    when the load reads the awaited value: the await compares the value read, as the load's
    bit pattern, with v's (two's complement for a negative v), and the register holds that
    pattern widened as checker.isa.core.register_of widens it (a .s16 load of -2 leaves
    0xFFFFFFFE). The compare is of patterns, at the register's width."""
    t = i.quals.get("type")
    bits, _, _ = core.value_type(t)
    v = i.await_value
    if t is None or bits is None:                       # untyped: the whole location, exact
        return ("s64" if v < 0 else "b64"), v
    if not -(1 << (bits - 1)) <= v < (1 << bits):
        raise LitmusError(f"the awaited value {v} does not fit in {bits} bits", i.where)
    value, reg_bits = core.register_of(Const(v % (1 << bits)), t)
    return f"b{reg_bits}", evaluate(value, lambda e: 0)


def await_loops(t: Thread) -> Thread:
    """The thread with each spin-wait await written as the loop it stands for (for the liveness
    question: an await that is never satisfied is a thread that spins forever). `ld ... r, [x] == v`
    becomes `L: ld ... r, [x]; setp.ne p, r, v; @p bra L`; an mbarrier wait `== 1` becomes
    `L: mbarrier.try_wait ... p, ...; @!p bra L`. A guarded await (`@q ld ... == v`) is the whole
    loop run only when its guard holds: `@!q bra S; L: ...; S:` (an instruction whose guard is false
    does not execute, so it does not wait). Other awaits (an RMW's, a wait `== 0`, which observes
    that a phase has not completed) stay awaits."""
    code, labels = [], list(t.labels)
    where_of = {}                      # labels written in the test refer to original indices
    for k, i in enumerate(t.code):
        where_of[k] = len(code)
        if i.await_value is not None and (i.family == "ld" and isinstance(i.operands[0], Reg)
                                          or i.family in WAITS and i.await_value == 1):
            label, p, guarded = f"__spin{k}", f"__done{k}", bool(i.predicate)
            if guarded:
                q, run = guard(i)
                code.append(registry.validate(ptx.parse(f"@{'!' if run else ''}{q} bra {SKIP}{k}", i.where)))
                i = replace(i, predicate=None)
            start = len(code)
            if i.family == "ld":
                typ, v = _awaited_register(i)
                code.append(replace(i, await_value=None))
                code.append(registry.parse_instr(f"setp.ne.{typ} {p}, {i.operands[0].name}, {v}", i.where))
                code.append(registry.validate(ptx.parse(f"@{p} bra {label}", i.where)))
            else:
                dst = i.operands[0] if isinstance(i.operands[0], Reg) else Reg(p)
                code.append(replace(i, await_value=None, operands=(dst,) + i.operands[1:]))
                code.append(registry.validate(ptx.parse(f"@!{dst.name} bra {label}", i.where)))
            labels.append((label, start))
            if guarded:
                labels.append((f"{SKIP}{k}", len(code)))
        else:
            code.append(i)
    if len(code) == len(t.code):
        return t
    where_of[len(t.code)] = len(code)
    moved = [(n, where_of[x]) for n, x in t.labels] + labels[len(t.labels):]
    return replace(t, code=tuple(code), labels=tuple(moved))


def await_labels(converted: Thread, original: Thread) -> frozenset[str]:
    """The labels of the spin loops await_loops wrote into `converted` (from `original`)."""
    return frozenset(n for n, _ in converted.labels) - frozenset(n for n, _ in original.labels)


def unconverted_waits(t: Thread) -> tuple[Instr, ...]:
    """The awaits await_loops leaves as awaits that stand for spinning (an RMW's `== v`, a vector
    load's): a hang there is not searched for, so a "no hang" answer cannot be complete."""
    return tuple(i for i in t.code if i.await_value is not None
                 and not (i.family == "ld" and isinstance(i.operands[0], Reg)) and i.family not in WAITS)
