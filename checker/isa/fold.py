"""Registers a control path decides without memory: the constant values the path splitter folds
guards and branches with (docs/model.md#a18).

Along one control path of a thread, an instruction that only computes registers (mov, add, sub,
mul, and, or, xor, not, shl, shr, cvt, selp, setp, elect.sync) is lowered by its own family's lowering on the registers
known so far: the special registers with the values the test's placement gives (%tid, %laneid,
%cluster_ctarank, ...), the registers earlier such instructions set to constants, and every other
register written so far as an unknown value. Its destination is constant exactly when the
family's lowering gives a constant: this module never re-implements an instruction. Every other
instruction that writes a register (a load, an RMW, an mbarrier wait, ...) makes it unknown.

A guard whose predicate is constant on the path is a fact: the path splitter follows the side it
decides and never the other (so a `%tid`-dispatched kernel is one path per thread, not a
product), and an mbarrier wait whose parity register is constant is read as the immediate it
holds (a phase bit flipped with `xor.b32 %r, %r, 1` each iteration is followed like one).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from ..ast import Imm, Instr, LitmusTest, Reg, Thread
from ..errors import LitmusError
from ..model.builder import Builder, ThreadCtx
from ..model.values import Const, ReadVal
from . import address, registry, special

# The families whose lowering only computes registers (no events, no per-test state).
REGISTER_ONLY = frozenset({"mov", "add", "sub", "mul", "and", "or", "xor", "not", "selp", "setp", "elect", "shl",
                           "shr"} | {f"cvt.{t}" for t in ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")})
_UNKNOWN = ReadVal(-1)        # a value that is not a constant (no read has this id)

Env = Mapping[str, "int | None"]     # register -> its constant value on the path (None: unknown)


class Folder:
    """The constant-folding state of one thread of one test (see the module docstring)."""

    def __init__(self, test: LitmusTest | None, thread: Thread):
        self.thread = thread
        self.builder = Builder(test) if test is not None else None
        self.specials = special.registers(test, thread) if test is not None else {}

    def step(self, env: Env, i: Instr) -> Env:
        """The registers known after instruction `i` runs (unguarded) on a path with `env`."""
        dests = address.destinations(i, registry.family(i))
        if not dests:
            return env
        out = dict(env)
        values = self.lower(env, i) if i.family in REGISTER_ONLY and i.await_value is None else {}
        for r in dests:
            v = values.get(r)
            out[r] = v.value if isinstance(v, Const) and isinstance(v.value, int) else None
        return out

    def lower(self, env: Env, i: Instr) -> dict:
        """The registers after the register-only instruction `i` runs with `env` (the model's
        values: a Const where the family's lowering gives one; {} when it refuses)."""
        if self.builder is None:
            return {}
        ctx = ThreadCtx(self.thread, 0)
        ctx.regs.update(self.specials)
        ctx.regs.update({r: _UNKNOWN if v is None else Const(v) for r, v in env.items()})
        ctx.instr = i
        try:
            registry.family(i).lower(self.builder, ctx, i)
        except LitmusError:
            return {}          # lowering the whole test reports it where it matters
        return ctx.regs


def value(env: Env, reg: str) -> int | None:
    """The constant value of `reg` on the path, or None."""
    return env.get(reg)


def with_constants(env: Env, i: Instr) -> Instr:
    """`i` with the parity operand of an mbarrier wait read as the immediate its register holds on
    the path (the text keeps the register, so messages show what the test wrote)."""
    if i.family in ("mbarrier.test_wait", "mbarrier.try_wait") and i.quals.get("parity") and len(i.operands) > 2:
        p = i.operands[2]
        if isinstance(p, Reg) and env.get(p.name) is not None:
            ops = list(i.operands)
            ops[2] = Imm(env[p.name])
            return replace(i, operands=tuple(ops))
    return i
