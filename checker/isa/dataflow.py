"""A forward data-flow over one thread's control-flow graph (labels, `bra`, guards), to its fixed
point: the one walker of the passes that follow register values along control paths (the
addresses registers hold, checker.isa.address; the constants they hold, checker.unfold.constants)."""
from __future__ import annotations

from typing import Callable

from ..ast import Instr, Thread


def forward(t: Thread, step: Callable[[int, dict, Instr], dict], join: Callable[[dict, dict, int], dict],
            decide: Callable[[int, dict, Instr], bool | None]) -> list[dict | None]:
    """The state when each instruction is reached (None: no path reaches it; index len(code): the
    thread's end). `step(pc, env, i)`: the state after instruction i runs (its guard aside);
    `join(old, new, pc)`: two states meeting at pc; `decide(pc, env, i)`: whether a guarded
    instruction runs, or None where either may happen."""
    code, labels = t.code, dict(t.labels)
    states: list[dict | None] = [None] * (len(code) + 1)
    states[0] = {}
    work = [0]
    while work:
        pc = work.pop()
        if pc >= len(code):
            continue
        env, i = states[pc], code[pc]
        run = decide(pc, env, i) if i.predicate else True
        for taken in (True, False) if run is None else (run,):
            if i.op == "bra":
                nxt = labels.get(getattr(i.operands[0], "name", None)) if taken and i.operands else \
                    (None if taken else pc + 1)
                new = env
            else:
                nxt, new = pc + 1, step(pc, env, i) if taken else env
            if nxt is None:
                continue
            merged = new if states[nxt] is None else join(states[nxt], new, nxt)
            if merged != states[nxt]:
                states[nxt] = merged
                work.append(nxt)
    return states


def runs(t: Thread, states: list[dict | None], decide: Callable[[int, dict, Instr], bool | None]) -> set[int]:
    """The instructions that run on some path: reached, and their guard lets them."""
    return {pc for pc, i in enumerate(t.code)
            if states[pc] is not None and (not i.predicate or decide(pc, states[pc], i) is not False)}
