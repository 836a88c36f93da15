"""The loops of a kernel's body, read off its back edges: which loop a branch is in, and whether
that loop is the outer loop of a nest (a persistent kernel's tile loop around its K loop).

A loop is the statements from a backward branch's target to the branch, when control can go
from the one to the other inside them. A spin loop (a wait, the branch that retries it, nothing
else that synchronizes) is no loop here: it becomes one await (checker.extract.interp). The run
takes an outer loop whose exit it cannot evaluate for `--tiles` trips instead of `--iterations`:
one trip of it already runs the inner loop, which wraps the ring by itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from .module import Function

# instructions that carry synchronization (a loop whose body has one besides its waits is no spin loop)
SYNC_OPS = frozenset(("mbarrier", "cp", "fence", "membar", "bar", "barrier", "wgmma", "tcgen05", "atom", "red", "st",
                      "ld", "griddepcontrol", "elect", "setmaxnreg", "ldmatrix", "stmatrix", "tensormap",
                      "clusterlaunchcontrol", "call", "mapa", "cvta", "shfl"))
WAITS = frozenset(("try_wait", "test_wait"))


@dataclass(frozen=True)
class Loop:
    head: int          # body index of the back edge's target
    tail: int          # body index of the back edge

    def contains(self, other: "Loop") -> bool:
        return self != other and self.head <= other.head and other.tail <= self.tail


@dataclass(frozen=True)
class Nest:
    loops: tuple[Loop, ...]

    def innermost(self, pc: int) -> Loop | None:
        inside = [lp for lp in self.loops if lp.head <= pc <= lp.tail]
        return min(inside, key=lambda lp: lp.tail - lp.head) if inside else None

    def encloses(self, lp: Loop) -> bool:
        """`lp` contains another loop: it is the outer loop of a nest."""
        return any(lp.contains(o) for o in self.loops)


_CACHE: dict[int, tuple[Function, Nest]] = {}


def nest(fn: Function) -> Nest:
    hit = _CACHE.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    found = []
    for i, s in enumerate(fn.body):
        ins = s.instr
        if ins is None or ins.op != "bra" or not ins.operands:
            continue
        target = fn.labels.get(getattr(ins.operands[0], "name", None))
        if target is None or target > i:
            continue
        if not _spin(fn, target, i) and _reaches(fn, target, i):
            found.append(Loop(target, i))
    out = Nest(tuple(dict.fromkeys(found)))
    _CACHE[id(fn)] = (fn, out)
    return out


def work_after(fn: Function, pc: int) -> bool:
    """The branch at `pc` tests the exit of its loop before the trip's work (a loop tested at its
    top): an inner loop lies after it in the loop, or, in a loop with none, every statement that
    synchronizes does. Leaving the loop there the first time runs no trip."""
    loops = nest(fn)
    lp = loops.innermost(pc)
    if lp is None:
        return False
    inner = [o for o in loops.loops if lp.contains(o)]
    if inner:
        return any(o.head > pc for o in inner)

    def syncs(a: int, b: int) -> bool:
        return any(s.instr is not None and s.instr.op in SYNC_OPS for s in fn.body[a:b])
    return not syncs(lp.head, pc) and syncs(pc + 1, lp.tail + 1)


def _reaches(fn: Function, head: int, tail: int) -> bool:
    """Control reaches the back edge at `tail` from `head` without leaving head..tail (a branch
    back to a function's exit block, `$L__BB0_174: ret`, laid out before the branch, is no loop)."""
    seen, todo = set(), [head]
    while todo:
        i = todo.pop()
        if i in seen or not head <= i <= tail:
            continue
        if i == tail:
            return True
        seen.add(i)
        ins = fn.body[i].instr
        if ins is None:
            todo.append(i + 1)
            continue
        if ins.op in ("ret", "exit"):
            continue
        if ins.op == "bra" and ins.operands:
            t = fn.labels.get(getattr(ins.operands[0], "name", None))
            if t is not None:
                todo.append(t)
            if not ins.predicate:
                continue
        if ins.op == "brx":
            todo += [fn.labels[x] for x in fn.tables.get(getattr(ins.operands[1], "name", None), []) if x in fn.labels]
            continue
        todo.append(i + 1)
    return False


def _spin(fn: Function, head: int, tail: int) -> bool:
    """The body from `head` to `tail` waits on an mbarrier and does nothing else that synchronizes."""
    waits = False
    for s in fn.body[head:tail + 1]:
        ins = s.instr
        if ins is None or ins.op == "bra":
            continue
        if ins.op == "mbarrier" and ins.qualifiers and ins.qualifiers[0] in WAITS:
            waits = True
        elif ins.op in SYNC_OPS:
            return False
    return waits
