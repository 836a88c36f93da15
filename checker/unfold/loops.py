"""Loops of a thread as the control-flow graph gives them, and whether an iteration that does not
exit leaves a trace (docs/model.md#a18).

A loop is the natural loop of a back edge (a branch to a label at or before it whose target
dominates it): the target (the head) and every instruction that reaches the branch without
passing through the head, whatever the layout -- `HEAD: ...; @!p bra HEAD`, the rotated
`HEAD: ...; @p bra EXIT; bra HEAD; EXIT:`, a do-while, `bra.uni`, several exits, exits in the
middle. An iteration that does not exit leaves a trace when it
- runs an instruction with an effect another thread can see (anything but a load, `setp`,
  register arithmetic, a fence, an mbarrier test/try_wait, `nanosleep`, `elect.sync`, a branch);
- or carries a register to a later iteration or past the loop (live at the head: read before it
  is written on some way round, counting the exits as reads of what is used after the loop).

A carried register that reaches no branch, guard or memory access (a statistics counter) does not
change whether or how the loop exits: the loop still *spins* (its hang can be judged), but its
value is part of an outcome when the test observes it, so the loop is not *pure* (a cut loses
outcomes) unless the test does not observe it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ast import Instr
from ..isa import address, registry
from ..isa import syntax as ptx

# Families whose instructions leave no trace but registers (the 'no effect' families above).
TRACELESS = frozenset({"ld", "setp", "fence", "membar", "mov", "add", "sub", "mul", "and", "or", "xor", "not", "selp",
                       "mbarrier.test_wait", "mbarrier.try_wait", "nanosleep", "elect"})
REGISTER_ONLY = frozenset({"setp", "mov", "add", "sub", "mul", "and", "or", "xor", "not", "selp", "elect"})


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


def classify(code: tuple[Instr, ...], labels: dict[str, int], head: int, back: int) -> Loop:
    """The loop of back edge `back` -> `head`."""
    body = natural_loop(code, labels, head, back)
    if body is None:
        return Loop(frozenset(range(head, back + 1)), False, False)
    effect = any(i.op != "bra" and (i.family not in TRACELESS or i.quals.get("mmio"))
                 for i in (code[k] for k in body))
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
    return Loop(body, not effect and not carried & matter, not inside and not guarded, frozenset(matter),
                frozenset(carried), carried_if)


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
