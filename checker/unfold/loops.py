"""Loops of a thread as the control-flow graph gives them, and whether an iteration that does not
exit leaves a trace (docs/model.md#a18).

A loop is the natural loop of a back edge (a branch to a label at or before it whose target
dominates it): the target (the head) and every instruction that reaches the branch without
passing through the head, whatever the layout -- `HEAD: ...; @!p bra HEAD`, the rotated
`HEAD: ...; @p bra EXIT; bra HEAD; EXIT:`, a do-while, `bra.uni`, several exits, exits in the
middle. An iteration that does not exit leaves a trace when it
- runs an instruction with an effect another thread can see (anything but a load, `setp`,
  register arithmetic, a fence, an mbarrier test/try_wait, `nanosleep`, `elect.sync`, a branch,
  and an `atom.cas`/`atom.exch` that writes back the value it read: a failed CAS);
- or carries a register to a later iteration or past the loop (live at the head: read before it
  is written on some way round, counting the exits as reads of what is used after the loop).

A carried register that reaches no branch, guard or memory access (a statistics counter) does not
change whether or how the loop exits: the loop still *spins* (its hang can be judged), but its
value is part of an outcome when the test observes it, so the loop is not *pure* (a cut loses
outcomes) unless the test does not observe it.

An `atom.cas` or `atom.exch` in a loop (a CAS retry loop, a test-and-set spin lock) writes in
every iteration, as the PTX text says (`*a = (*a == b) ? c : *a`), but an iteration that writes
back the value it read changes no location (docs/model.md#a18, the rewrite rule): the loop spins
when every iteration that does not exit does so, which `writes_back` shows from the loop's code
(the way round after the RMW exits whenever it changed the value: a CAS that succeeded, an exch
that read another of the values the location can hold). Which executions fail is then decided
per execution by the control path (the cut path is the one whose CASes all failed). A write-back
is a copy only among morally strong accesses (`shared_with`: every access of the location by
another thread must be one). Option
`rmw-rewrite-effect` takes the other reading: such a write is an effect like any other.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ast import Addr, Imm, Instr, LitmusTest, MemoryDecl, Reg
from ..isa import address, registry
from ..isa.flow import REWRITE_EFFECT
from ..isa.table import TYPE_BITS
from ..isa import syntax as ptx

# Families whose instructions leave no trace but registers (the 'no effect' families above).
TRACELESS = frozenset({"ld", "setp", "fence", "membar", "mov", "add", "sub", "mul", "and", "or", "xor", "not", "selp",
                       "mbarrier.test_wait", "mbarrier.try_wait", "nanosleep", "elect"})
REGISTER_ONLY = frozenset({"setp", "mov", "add", "sub", "mul", "and", "or", "xor", "not", "selp", "elect"})
# RMW operations whose write may put back the value they read (a failed cas, an exch of the value
# already there), and the option that counts such a write as an effect all the same.
REWRITES = frozenset({"cas", "exch"})


@dataclass(frozen=True)
class Loop:
    """The natural loop of one back edge, classified."""

    body: frozenset[int]          # the code indices of the loop
    spins: bool                   # no effect, and no carried register that reaches control or memory
    straight: bool                # every non-exiting iteration runs every instruction of the body
                                  # (no guarded instruction, no branch inside the loop but exits)
    matter: frozenset[str] = frozenset()       # registers that reach control or memory
    carried: frozenset[str] = frozenset()      # registers carried when only control and memory use them
    carried_if: tuple[tuple[str, frozenset[str]], ...] = ()   # more carried when a register is observed
    rewrites: frozenset[int] = frozenset()     # its cas/exch: it spins only if each writes back what it read
    why: str = ""                              # why it does not spin, or is not straight (for messages)

    def pure(self, observed: frozenset[str] | None = None) -> bool:
        """Does a cut lose no outcome over the thread's registers `observed` (None: every
        register)? It spins, and carries no register that matters or is observed."""
        extra = dict(self.carried_if)
        seen = set(extra) if observed is None else set(observed)
        carried = set(self.carried).union(*(extra.get(r, ()) for r in seen))
        return self.spins and not carried & (self.matter | seen)


def sources(i: Instr) -> set[str]:
    """The registers instruction `i` reads (its guard's predicate included)."""
    dests = address.destinations(i, registry.family(i))
    ops = i.operands[1:] if dests else i.operands
    return set(ptx.registers(replace(i, operands=ops, predicate=i.predicate)))


def _dests(i: Instr) -> set[str]:
    return address.destinations(i, registry.family(i)) if i.op != "bra" else set()


def successors(code: tuple[Instr, ...], labels: dict[str, int], k: int) -> tuple[int, ...]:
    """The indices control may go to after instruction k (len(code): the thread ends)."""
    i = code[k]
    if i.op == "bra":
        target = labels[i.operands[0].name]
        return (target, k + 1) if i.predicate else (target,)
    return (k + 1,)


def natural_loop(code, labels, head: int, back: int) -> frozenset[int] | None:
    """The natural loop of the back edge `back` -> `head`, or None if `head` does not dominate
    `back` (a loop entered other than through its head)."""
    preds: dict[int, set[int]] = {}
    for k in range(len(code)):
        for s in successors(code, labels, k):
            preds.setdefault(s, set()).add(k)
    body, todo = {head}, [back]
    while todo:
        k = todo.pop()
        if k not in body:
            body.add(k)
            todo.extend(preds.get(k, ()))
    if any(k != head and preds.get(k, set()) - body for k in body):
        return None
    return frozenset(body)


def relevant(code: tuple[Instr, ...]) -> set[str]:
    """The registers whose value reaches a branch, a guard or a memory access (an address, a
    stored value, an mbarrier operand), through register arithmetic."""
    out = {r for i in code if i.predicate for r in sources(replace(i, operands=()))}
    out |= {r for i in code if i.family not in REGISTER_ONLY and i.op != "bra" for r in sources(i)}
    changed = True
    while changed:
        changed = False
        for i in code:
            if i.family in REGISTER_ONLY and _dests(i) & out and not sources(i) <= out:
                out |= sources(i)
                changed = True
    return out


def rewrites(i: Instr) -> bool:
    """Is `i` an RMW that may write back the value it read (`atom.cas`/`atom.exch` on a named
    location, its old value in a register)?"""
    return (i.family == "atom" and i.quals.get("op") in REWRITES and not i.quals.get("mmio")
            and isinstance(i.operands[0], Reg) and isinstance(i.operands[1], Addr)
            and i.operands[1].offset == 0 and not i.operands[1].coords)


def classify(code: tuple[Instr, ...], labels: dict[str, int], head: int, back: int,
             rewrite_effect: bool = False) -> Loop:
    """The loop of back edge `back` -> `head` (`rewrite_effect`: a cas/exch is an effect even when
    it writes back the value it read)."""
    body = natural_loop(code, labels, head, back)
    if body is None:
        return Loop(frozenset(range(head, back + 1)), False, False, why="it is entered other than through its head")
    rmws = frozenset(() if rewrite_effect else (k for k in body if rewrites(code[k])))
    effects = [code[k] for k in sorted(body - rmws) if code[k].op != "bra"
               and (code[k].family not in TRACELESS or code[k].quals.get("mmio"))]
    effect = bool(effects)
    inside = any(code[k].op == "bra" and k != back and labels[code[k].operands[0].name] in body for k in body)
    guarded = any(code[k].predicate and code[k].op != "bra" for k in body)
    written = {r for k in body for r in _dests(code[k])}
    matter = relevant(code)
    # what the code after the loop uses for control or memory (liveness is a union over what the
    # exits read, so what observing each register adds is computed alone)
    used_after = relevant(tuple(i for k, i in enumerate(code) if k not in body))
    carried = _live_at_head(code, labels, body, head, used_after) & written
    carried_if = tuple((r, frozenset(_live_at_head(code, labels, body, head, {r}) & written))
                       for r in sorted(written))
    why = ""
    if effects:
        i = effects[0]
        why = f"'{i.text}' has an effect another thread can see" + (
            f" (option {REWRITE_EFFECT}: even when it writes back the value it read)"
            if rewrite_effect and rewrites(i) else "")
    elif carried & matter:
        why = f"register {sorted(carried & matter)[0]} is carried from one iteration to the next"
    elif inside or guarded:
        why = "it has a branch inside it or a guarded instruction"
    return Loop(body, not effect and not carried & matter, not inside and not guarded, frozenset(matter),
                frozenset(carried), carried_if, rmws, why)


def writes_back(code: tuple[Instr, ...], labels: dict[str, int], loop: Loop, step, env,
                values) -> bool:
    """Does every iteration of the straight `loop` that does not exit write back, at each of its
    RMWs (loop.rewrites), the value the RMW read? For each way the RMW changes the value -- a CAS
    that read its expected value `b` (and writes another), an exch of `v` that read one of the
    other values the location can hold (`values(location)`: None when unknown) -- the rest of the
    iteration is followed with the registers it decides (`step`: checker.isa.fold.Folder.step;
    `env`: the constants the loop does not write); the answer is yes when each such way exits."""
    if not loop.straight:
        return False
    for k in sorted(loop.rewrites):
        ways = _changes(code[k], env, values)
        if ways is None:
            return False
        for start, same in ways:
            if _may_go_round(code, labels, loop.body, range(k + 1, max(loop.body) + 1), step, start, same):
                return False
    return True


def _changes(i: Instr, env, values):
    """The ways RMW `i` changes the value it reads, each (registers known right after it, a pair
    of operands known equal): None when they cannot be listed."""
    d = i.operands[0].name
    if i.quals["op"] == "cas":
        b, c = i.operands[2], i.operands[3]
        known = _const(b, env)
        if b == c or known is not None and known == _const(c, env):
            return []                         # it writes back what it read either way
        start = {**env, d: known}
        if isinstance(b, Reg) and b.name != d:
            start[b.name] = known
        return [(start, (Reg(d), b))]
    v = _const(i.operands[2], env)
    held = values(i.operands[1].base)
    if v is None or held is None:
        return None
    return [({**env, d: u}, None) for u in sorted(held) if u != v]


def _const(o, env) -> int | None:
    if isinstance(o, Imm):
        return o.value
    return env.get(o.name) if isinstance(o, Reg) else None


def _may_go_round(code, labels, body, after, step, env, same) -> bool:
    """Can the rest of an iteration (`after`) go round again from registers `env`? `same`: two
    operands known equal (a setp .eq/.ne of an integer type comparing them is decided)."""
    for k in after:
        i = code[k]
        if i.op == "bra":
            target = labels[i.operands[0].name]
            stays = target in body
            if not i.predicate:
                if not stays:
                    return False
                continue
            g = i.predicate.lstrip("@")
            p, run = (g[1:], 0) if g.startswith("!") else (g, 1)
            v = env.get(p)
            if v is not None and (v == run) != stays:
                return False
            continue
        decided = _compares(i, same)
        env = step(env, i)
        if decided is not None:
            env = {**env, i.operands[0].name: decided}
        if same is not None and _dests(i) & {o.name for o in same if isinstance(o, Reg)}:
            same = None                       # one of them was overwritten
    return True


def _compares(i: Instr, same) -> int | None:
    """The value of `setp.eq/ne` of an integer type comparing the two operands `same` (equal)."""
    if same is None or i.family != "setp" or i.quals.get("cmp") not in ("eq", "ne") or i.predicate \
            or str(i.quals.get("type", "")).startswith("f") or not isinstance(i.operands[0], Reg) \
            or len(i.operands) != 3:
        return None
    if set(i.operands[1:3]) == set(same) or i.operands[1] == i.operands[2]:
        return 1 if i.quals["cmp"] == "eq" else 0
    return None


def stored_values(test: LitmusTest, loc: str) -> frozenset[int] | None:
    """Every value location `loc` can hold: its initial value and the immediates written to it
    (st, atom.exch, the new value of atom.cas). None when something else writes it (a register's
    value, another RMW, an alias or view of the same cell, an mbarrier)."""
    m = test.mem(loc) or MemoryDecl(loc)          # a location the test does not declare holds 0 first
    if m.mbarrier or m.alias_of or m.view_of or m.offset_of or any(
            x.alias_of == loc or x.view_of == loc or x.offset_of == loc or loc in (x.tensormap or {}).values()
            for x in test.memory):
        return None
    out, widths = {m.init}, set()
    for t in test.threads:
        for i in t.code:
            at = [o for o in i.operands if isinstance(o, Addr) and o.base == loc]
            if not at:
                continue
            if any(o.offset or o.coords for o in at):
                return None                   # a part of it (memory is bytes)
            if i.family in ("ld", "mbarrier.test_wait", "mbarrier.try_wait"):
                continue
            typ = str(i.quals.get("type") or "")
            widths.add(typ[1:] if typ[:1] in "bus" else typ)     # .b32, .u32 and .s32 write 4 bytes
            if i.family == "st" and isinstance(i.operands[1], Imm):
                v = i.operands[1].value
            elif i.family == "atom" and i.quals.get("op") == "exch" and isinstance(i.operands[2], Imm):
                v = i.operands[2].value
            elif i.family == "atom" and i.quals.get("op") == "cas" and isinstance(i.operands[3], Imm):
                v = i.operands[3].value
            else:
                return None
            if v < 0:
                return None
            out.add(v)
    return frozenset(out) if len(widths) <= 1 else None


def shared_with(test: LitmusTest, thread: str, i: Instr) -> str:
    """Why the write-back of RMW `i` (in `thread`) might not be a copy of the write it read ('' when
    it is one). The rewrite rule needs the write-back to sit in coherence order right after the
    write it read, which the model gives (Atomicity, coherence among morally strong writes) only
    for the accesses morally strong with it: a write that is not may come between its read and its
    write, and a later write-back then re-publishes a stale value that a reader, morally strong with
    that write only, reads after newer ones. So every access of the location by another thread must
    be a strong ld/st/atom/red of the same width whose scope includes `thread` and is included in
    the scope of `i` (docs/model.md#a18); anything else (a weak or volatile access, a narrower
    scope, another width, an alias or part of the location, an mbarrier, an asynchronous access)
    leaves the loop undecided. A conservative reading of the cat model's `ms` over the test's
    instructions: ptxmc decides no verdict from it, only whether a cut is judged."""
    loc = i.operands[1].base
    m = test.mem(loc) or MemoryDecl(loc)
    if m.mbarrier or m.alias_of or m.view_of or m.offset_of or any(
            x.alias_of == loc or x.view_of == loc or x.offset_of == loc or loc in (x.tensormap or {}).values()
            for x in test.memory):
        return f"location {loc} has aliases, views or parts"
    me = next(t for t in test.threads if t.name == thread)

    def within(scope: str | None, a, b) -> bool:     # does `scope` at thread a include thread b?
        return {"cta": a.cta_key() == b.cta_key(), "cluster": a.cluster_key() == b.cluster_key(),
                "gpu": a.gpu == b.gpu, "sys": True}.get(scope, False)

    for t in test.threads:
        if t.name == thread:
            continue                          # program order: morally strong (width checked by the model)
        for j in t.code:
            if not any(isinstance(o, Addr) and o.base == loc for o in j.operands):
                continue
            what = f"'{j.text}' ({t.name})"
            if j.family not in ("ld", "st", "atom", "red") or j.quals.get("mmio") or j.quals.get("vec") \
                    or any(isinstance(o, Addr) and o.base == loc and (o.offset or o.coords) for o in j.operands):
                return f"{what} accesses {loc} other than as one value"
            if j.quals.get("sem") in (None, "weak", "volatile"):
                return f"{what} is not a strong access, so not morally strong with '{i.text}'"
            if _covered(test, loc, j) != _covered(test, loc, i):
                return f"{what} accesses {loc} with another width"
            if not (within(j.quals.get("scope"), t.position, me.position)
                    and within(i.quals.get("scope"), me.position, t.position)):
                return f"{what} and '{i.text}' do not include each other's thread in their scopes (not morally strong)"
    return ""


def _covered(test: LitmusTest, loc: str, i: Instr) -> int | None:
    """The bytes of `loc` that `i` covers from offset 0 (docs/format.md, Bytes, sizes and values):
    its type's, or, untyped, the whole location -- its declared size, else the largest end of its
    typed accesses (None: an unsized location, one abstract integer)."""
    t = i.quals.get("type")
    if t:
        return TYPE_BITS[t] // 8
    m = test.mem(loc)
    if m is not None and m.size:
        return m.size
    ends = [o.offset + TYPE_BITS[j.quals["type"]] // 8 * _lanes(j)
            for th in test.threads for j in th.code if j.quals.get("type") in TYPE_BITS
            for o in j.operands if isinstance(o, Addr) and o.base == loc]
    return max(ends, default=None)


def _lanes(i: Instr) -> int:
    v = i.quals.get("vec")
    return int(v[1:]) if v else 1


def _live_at_head(code, labels, body: frozenset[int], head: int, after: set[str]) -> set[str]:
    """The registers live at the loop head: read before written on some way round the loop, an
    exit reading `after` (what is used or observed past the loop)."""
    live_in: dict[int, set[str]] = {k: set() for k in body}
    changed = True
    while changed:
        changed = False
        for k in sorted(body, reverse=True):
            i = code[k]
            out: set[str] = set()
            for s in successors(code, labels, k):
                out |= live_in[s] if s in body else after
            kills = set() if i.predicate else _dests(i)
            new = sources(i) | (out - kills)
            if new != live_in[k]:
                live_in[k] = new
                changed = True
    return live_in[head]
