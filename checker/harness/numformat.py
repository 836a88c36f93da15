"""Number formats of the values a tensor-core test moves: the model gives a wgmma operand cell an
integer value (a cell stands for a whole matrix, docs/format.md) and the accumulator the product;
the hardware multiplies f16 matrices into f32 registers. So the harness stores each value of a
matrix cell as the f16 bit pattern of that integer in element [0][0] (the low half of the cell's
first word; the rest of the matrix is zero) and reads an accumulator register as the f32 bit
pattern of its integer: the device then compares bit patterns, and every value the model names
is exactly representable (|v| <= 2048 for f16, 2^24 for f32) or the test is refused.

Formats flow: wgmma's [sA]/[sB] cells are f16, and so is every location a copy moves values
between with one of them; its accumulator registers are f32, and so is a location they are stored
to. A value crossing formats any other way (an integer load of a matrix cell, arithmetic on an
accumulator, a register stored into a matrix cell) has no faithful encoding: refused with the
reason.

Pure: a table per test; checker.harness.codegen applies it to immediates, initial values and the
outcome space's domains.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..ast import Addr, Imm, Instr, LitmusTest, Reg, Vec

F16_MAX = 2048          # integers exactly representable in f16
F32_MAX = 1 << 24       # ... in f32


@dataclass(frozen=True)
class Formats:
    locs: dict[str, str]                    # location -> 'f16' | 'f32'
    regs: dict[tuple[str, str], str]        # (thread, register) -> 'f32'
    problems: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.locs or self.regs)


def encode(fmt: str | None, v: int) -> int | None:
    """The 32-bit word holding integer `v` in format `fmt` (None: as an integer); None when not
    exactly representable."""
    if fmt is None:
        return v % 2**32
    if fmt == "f16":
        if not -F16_MAX <= v <= F16_MAX:
            return None
        return struct.unpack("<H", struct.pack("<e", float(v)))[0]
    if not -F32_MAX <= v <= F32_MAX:
        return None
    return struct.unpack("<I", struct.pack("<f", float(v)))[0]


def _addrs(i: Instr) -> list[str]:
    return [o.base for o in i.operands if isinstance(o, Addr)]


def _mma(i: Instr) -> bool:
    return i.op == "wgmma" and i.qualifiers[:1] == ("mma_async",)


def _copy_pair(i: Instr) -> tuple[str, str] | None:
    """(destination, source) of a copy between two locations (the mbarrier operand left out)."""
    a = _addrs(i)
    if i.op == "cp" and len(a) >= 2 and "tensor" not in i.qualifiers:
        return a[0], a[1]
    return None


def formats(test: LitmusTest) -> Formats:
    locs: dict[str, str] = {}
    regs: dict[tuple[str, str], str] = {}
    problems: list[str] = []
    for t in test.threads:
        for i in t.code:
            if _mma(i):
                d = i.operands[0]
                for r in (d.items if isinstance(d, Vec) else (d,)):
                    if isinstance(r, Reg):
                        regs[(t.name, r.name)] = "f32"
                for o in i.operands[1:3]:
                    if isinstance(o, Addr):
                        locs[o.base] = "f16"
    if not locs and not regs:
        return Formats({}, {}, ())
    changed = True
    while changed:
        changed = False
        for t in test.threads:
            for i in t.code:
                pair = _copy_pair(i)
                if pair and (pair[0] in locs) != (pair[1] in locs):
                    fmt = locs.get(pair[0]) or locs.get(pair[1])
                    for n in pair:
                        changed |= n not in locs
                        locs.setdefault(n, fmt)
                if i.op == "st" and len(i.operands) > 1 and isinstance(i.operands[1], Reg) \
                        and (t.name, i.operands[1].name) in regs and isinstance(i.operands[0], Addr):
                    n = i.operands[0].base
                    if locs.get(n, "f32") != "f32":
                        problems.append(f"{t.name}: '{i.text}': an f32 accumulator stored into the f16 matrix "
                                        f"cell {n}")
                    elif n not in locs:
                        locs[n] = "f32"
                        changed = True
    for t in test.threads:
        for k, i in enumerate(t.code):
            where = f"{t.name}:{k} '{i.text}'"
            if _mma(i) or (i.op == "wgmma"):
                continue
            touched = [n for n in _addrs(i) if n in locs]
            if i.op == "st" and touched and isinstance(i.operands[0], Addr):
                v = i.operands[1] if len(i.operands) > 1 else None
                if isinstance(v, Reg) and not (locs[touched[0]] == "f32" and (t.name, v.name) in regs):
                    problems.append(f"{where}: a register stored into the {locs[touched[0]]} cell {touched[0]} "
                                    f"(only immediates are re-encoded)")
                continue
            if _copy_pair(i) and all(n in locs for n in _copy_pair(i)):
                continue
            if touched:
                problems.append(f"{where}: {i.op} of the {locs[touched[0]]} cell {touched[0]} (a wgmma matrix "
                                f"or accumulator value) is not generated: only stores of immediates, copies "
                                f"between such cells and the wgmma itself re-encode the value")
                continue
            regs_here = [o.name for o in i.operands if isinstance(o, Reg) and (t.name, o.name) in regs]
            if regs_here and not (i.op == "mov" and len(i.operands) == 2 and isinstance(i.operands[1], Imm)
                                  and i.operands[0].name in regs_here):
                problems.append(f"{where}: {i.op} of the f32 accumulator {regs_here[0]} is not generated "
                                f"(only stores and wgmma read it; only mov of an immediate writes it)")
    for m in test.memory:
        if m.name in locs and m.tensormap is not None:
            problems.append(f"'{m.name}' is a tensor map used as a matrix")
    return Formats(locs, regs, tuple(dict.fromkeys(problems)))
