"""Registers that hold a constant where an instruction reads them (docs/format.md#registers-that-hold-constants).

PTX lets several operands that ptxmc needs as numbers be registers, and nvcc writes them so: a
bulk copy's size (`mov.u32 %r8, 16; cp.async.bulk ... [s], [g], %r8, [bar]`), a named
barrier's id and thread count (`bar.sync %r4, %r5`), mapa's CTA rank (`xor.b32 %r2, %r1, 1` of
%cluster_ctarank), tensor coordinates (`[tmap, {%r6, %r6}]`), the offset of address arithmetic
(`mul.wide.u32 %rd6, %r1, 4; add.s64 %rd7, %rd1, %rd6`). A litmus thread's placement fixes its
special registers (%tid, %laneid, %cluster_ctarank, ...), so such a register often holds one
value on every control path to the instruction. This pass finds it by a forward data-flow over
the thread's control-flow graph (labels, `bra`, guards; a guard whose predicate is a constant
decides its side, as checker.unfold.paths does), and the front end writes the number in place
of the register (the instruction's text keeps what the test wrote).

A register holds a constant at an instruction when every control path that reaches it gives it
the same value, computed from immediates and special registers by register-only instructions
(checker.isa.fold lowers each with its family's own lowering: nothing is re-implemented here).
A value that depends on a read (a load, an RMW, an mbarrier wait) is not a constant, even where
a lowering would fold it (`and.b32 %r2, %r1, 0` of a loaded %r1): the read stays a dependency.
Where such an operand holds no constant, the instruction is refused with the reason (which line
sets the register and how, or that the control paths to it disagree).
"""
from __future__ import annotations

from dataclasses import replace

from ..ast import Addr, Imm, Instr, LitmusTest, Reg, Thread, registers
from ..errors import CheckerError, LitmusError
from ..isa import address, dataflow, fold, registry
from ..isa.syntax import render
from ..isa.table import constant_operands
from ..model.values import Const
from .paths import guard

# register-only families whose result is a constant when their operands are: exactly those the path
# splitter folds (checker.isa.fold), so that a line this pass finds no path runs, no path runs
FOLDED = fold.REGISTER_ONLY
READS = frozenset({"ld", "atom", "ldmatrix", "mbarrier.test_wait", "mbarrier.try_wait"})


def wanted(i: Instr) -> bool:
    """Does `i` give a register where a number is needed (an operand, a tensor coordinate)?"""
    return bool(_positions(i)) or any(isinstance(o, Addr) and any(isinstance(c, Reg) for c in o.coords)
                                      for o in i.operands)


def _positions(i: Instr) -> list[int]:
    fam = registry.family(i)
    return constant_operands(fam, i, i.quals)


class Constants:
    """The constant registers of one thread of a test, at each of its instructions (analysed the
    first time they are asked for)."""

    def __init__(self, test: LitmusTest, thread: Thread):
        self.test, self.thread = test, thread
        self._folder: fold.Folder | None = None
        self._states: list[dict | None] | None = None
        self._ran: set[int] = set()

    @property
    def folder(self) -> fold.Folder:
        if self._folder is None:
            self._folder = fold.Folder(self.test, self.thread)
        return self._folder

    def at(self, k: int, reg: str) -> int | str:
        """The constant `reg` holds when instruction k runs, or why it holds none."""
        if reg.startswith("%"):
            v = self.folder.specials.get(reg)
            return v.value if isinstance(v, Const) else f"{reg} holds {getattr(v, 'why', 'no constant')}"
        env = self.states()[k]
        if env is None:
            return "no control path reaches this line"
        if reg not in env:
            return f"no control path to this line sets {reg}"
        return env[reg]

    def states(self) -> list[dict | None]:
        """The registers known when each instruction is reached (None: no path reaches it)."""
        if self._states is None:
            self._states, self._ran = _analyse(self.thread, self.folder)
        return self._states

    def ran(self) -> set[int]:
        """The instructions that run on some control path."""
        self.states()
        return self._ran

    def substituted(self) -> Thread:
        """The thread with each register that stands for a number replaced by the constant it
        holds there (the instruction validated again); LitmusError where one holds none. Where
        such an instruction runs on no control path (the placement decides the guards before it:
        another role's code of a pasted kernel), the lines no path runs are dropped first
        (`pruned`)."""
        wants = [k for k, i in enumerate(self.thread.code) if wanted(i)]
        if not wants:
            return self.thread
        if any(k not in self.ran() for k in wants):
            return Constants(self.test, self.pruned()).substituted()
        code = list(self.thread.code)
        for k in wants:
            code[k] = self._put(k, code[k])
        return replace(self.thread, code=tuple(code))

    def pruned(self) -> Thread:
        """The thread without the instructions no control path runs, its labels moved to the
        next instruction kept. No path's instructions change (checker.unfold.paths folds guards
        at least as far as this pass: none of its paths runs a line dropped here)."""
        ran, n = self.ran(), len(self.thread.code)
        kept = [k for k in range(n) if k in ran]
        moved = [len(kept)] * (n + 1)             # old index -> the new index of the next line kept
        for k in range(n - 1, -1, -1):
            moved[k] = moved[k + 1] - 1 if k in ran else moved[k + 1]
        return replace(self.thread, code=tuple(self.thread.code[k] for k in kept),
                       labels=tuple((name, moved[k]) for name, k in self.thread.labels))

    def _put(self, k: int, i: Instr) -> Instr:
        def number(o, what: str):
            v = self.at(k, o.name)
            if isinstance(v, str):
                raise LitmusError(f"{what} ('{render(o)}') must be an integer, or a register that holds one on every "
                                  f"control path to this line: {v}", i.where)
            return Imm(v)

        ops = list(i.operands)
        for n in _positions(i):
            ops[n] = number(ops[n], f"operand {n + 1}")
        for n, o in enumerate(ops):
            if isinstance(o, Addr) and any(isinstance(c, Reg) for c in o.coords):
                coords = tuple(number(c, "a tensor coordinate") if isinstance(c, Reg) else c for c in o.coords)
                ops[n] = replace(o, coords=coords)
        return registry.validate(replace(i, operands=tuple(ops), family=""))


def _analyse(t: Thread, folder: fold.Folder) -> tuple[list[dict | None], set[int]]:
    """The registers known when each instruction is reached (None: no path reaches it; index
    len(code): the thread's end), and the instructions that run on some path."""
    code = t.code

    def decide(pc: int, env: dict, i: Instr):
        p, run = guard(i)
        known = env.get(p)
        return known == run if isinstance(known, int) else None

    def join(a: dict, b: dict, pc: int) -> dict:
        return _join(a, b, code[pc].where.line if pc < len(code) and code[pc].where else None)

    states = dataflow.forward(t, lambda pc, env, i: _step(env, replace(i, predicate=None), folder, i), join, decide)
    return states, dataflow.runs(t, states, decide)


def _join(a: dict, b: dict, line: int | None) -> dict:
    where = f"line {line}" if line is not None else "this line"
    out = {}
    for r in a.keys() | b.keys():
        x, y = a.get(r), b.get(r)
        if isinstance(x, str):
            out[r] = x
        elif isinstance(y, str):
            out[r] = y
        elif x is None or y is None:
            out[r] = f"{r} is set on some control paths to {where} and not on others"
        elif x != y:
            out[r] = f"{r} holds different values ({min(x, y)}, {max(x, y)}) on the control paths that reach {where}"
        else:
            out[r] = x
    return out


def _step(env: dict, i: Instr, folder: fold.Folder, written: Instr) -> dict:
    """The registers after `i` (unguarded) runs; `written` is the instruction as the test wrote it."""
    dests = address.destinations(i, registry.family(i))
    if not dests:
        return env
    out = dict(env)
    line = f"line {written.where.line}" if written.where else "a line"
    why = None
    if i.family not in FOLDED or i.await_value is not None:
        how = "reads it from memory" if i.family in READS or i.await_value is not None else \
            "does not compute it from constants"
        why = f"'{written.text}' ({line}) {how}"
    else:
        for r in _sources(i):
            v = env.get(r) if not r.startswith("%") else None
            if r.startswith("%"):
                s = folder.specials.get(r)
                if not isinstance(s, Const):
                    why = f"'{written.text}' ({line}) reads {r}, which holds {getattr(s, 'why', 'no constant')}"
                    break
            elif not isinstance(v, int):
                why = v if isinstance(v, str) else f"'{written.text}' ({line}) reads {r} before any line sets it"
                break
    try:
        values = {} if why else folder.lower({r: v for r, v in env.items() if isinstance(v, int)}, i)
    except CheckerError as e:         # a value past 64 bits, ...: lowering the test reports it
        values, why = {}, f"'{written.text}' ({line}) computes no value ptxmc models ({e})"
    for r in dests:
        v = values.get(r)
        if isinstance(v, Const) and isinstance(v.value, int):
            out[r] = v.value
        else:
            out[r] = why or f"'{written.text}' ({line}) does not compute {r} as a number"
    return out


def _sources(i: Instr) -> list[str]:
    """The registers `i` reads (its operands after the destination)."""
    return list(registers(replace(i, operands=i.operands[1:])))
