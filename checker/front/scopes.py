"""Names scoped to `{ }` blocks (PTX ISA, *Statements*: a block has its own labels and `.reg`
declarations, visible in it and in the blocks inside it).

nvcc prints one block per inline-asm statement, so an inlined wait loop pasted twice defines its
label (and its predicate register) twice, once per block. Both readers of PTX text -- a litmus
thread's `ptx:` block (checker.front.litmus) and a whole `.ptx` module (checker.extract.module) --
rename what a block declares (`LAB_WAIT` in block 3 -> `LAB_WAIT{sep}3`) through this module, so
that the rest of the checker sees one flat namespace per thread.

A scope chain is the tuple of block ids from the outermost (0: the thread or function body) to
the block a statement stands in.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..ast import Addr, Instr, Name, Reg, Vec
from ..errors import LitmusError, SourceLoc


@dataclass
class Scopes:
    """The labels and registers each block declares; `sep` joins a name and its block id."""
    sep: str = "@"
    labels: dict[tuple[int, str], int] = field(default_factory=dict)   # (block, label) -> position
    regs: dict[tuple[int, str], str] = field(default_factory=dict)     # (block, register) -> renamed

    def named(self, name: str, sid: int) -> str:
        return name if sid == 0 else f"{name}{self.sep}{sid}"

    def declare_reg(self, name: str, chain: tuple[int, ...]) -> None:
        self.regs[(chain[-1], name)] = self.named(name, chain[-1])

    def visible_regs(self, chain: tuple[int, ...]) -> set[str]:
        return {name for (sid, name) in self.regs if sid in chain}

    def label(self, name: str, chain: tuple[int, ...], where: SourceLoc) -> str:
        """The renamed label a branch in `chain` reaches: the innermost enclosing block's (a label
        no block defines is returned as it is, for the control-flow checks to report)."""
        for sid in reversed(chain):
            if (sid, name) in self.labels:
                return self.named(name, sid)
        if any(n == name for _, n in self.labels):
            raise LitmusError(f"branch to label '{name}' of another {{ }} block: a label is visible only in "
                              "its block and the blocks inside it", where)
        return name

    def reg(self, name: str, chain: tuple[int, ...]) -> str:
        for sid in reversed(chain):
            if (sid, name) in self.regs:
                return self.regs[(sid, name)]
        return name

    def renamed(self, ins: Instr, chain: tuple[int, ...], where: SourceLoc) -> Instr:
        """`ins` with its registers and branch targets renamed to the declarations `chain` sees."""
        return renamed(ins, chain, self.reg, lambda name, ch: self.label(name, ch, where), self.regs)


def renamed(ins: Instr, chain, rename, resolve_label, regs=None) -> Instr:
    """`ins` with registers renamed by `rename(name, chain)` and `bra` targets by
    `resolve_label(name, chain)` (special `%` registers and `brx` tables kept)."""
    regs = regs or {}

    def op(o):
        if isinstance(o, Reg):
            if o.name.startswith("%"):
                return o
            neg = o.name.startswith("!")
            base = rename(o.name.lstrip("!"), chain)
            return Reg(("!" if neg else "") + base)
        if isinstance(o, Vec):
            return Vec(tuple(op(x) for x in o.items))
        if isinstance(o, Addr):
            if o.register:
                return replace(o, base=rename(o.base, chain), coords=tuple(op(x) for x in o.coords))
            base = rename(o.base, chain)
            # a register declared without '%' (CUTLASS: `.reg .b32 remAddr32; ... [remAddr32]`)
            declared = base != o.base or any((sid, o.base) in regs for sid in chain)
            return replace(o, base=base, register=declared, coords=tuple(op(x) for x in o.coords))
        return o

    if ins.op == "bra":
        ops = tuple(Name(resolve_label(o.name, chain)) if isinstance(o, Name) else op(o) for o in ins.operands)
    elif ins.op == "brx":
        ops = (op(ins.operands[0]),) + tuple(Name(o.name) if isinstance(o, (Name, Reg)) else o for o in ins.operands[1:])
    else:
        ops = tuple(op(o) for o in ins.operands)
    pred = ins.predicate
    if pred:
        neg = pred.startswith("@!")
        pred = ("@!" if neg else "@") + rename(pred.lstrip("@!"), chain)
    return replace(ins, operands=ops, predicate=pred)
