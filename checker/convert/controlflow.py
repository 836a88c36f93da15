"""Control flow of imported tests: the one place that decides what labels, jumps, conditional
branches, guards (`@p`) and `setp` become.

ptxmc's threads have labels, `bra`, guards and `setp` (docs/format.md, control flow), so each
construct becomes its PTX form: a label `L:` an entry `L:` of the code, a jump (`goto L`, `bra
L`) `bra L`, and a Dat3M conditional branch `beq a, b, L` (bne, blt, ble, bgt, bge) a `setp.s64` on
a predicate of ptxmc's own (`__cN`, kept out of outcomes) followed by `@__cN bra L`. herd's
guarded instructions and `setp` are PTX already and arrive here as code. Dat3M and herd mark
the construct as `Control(kind, text, line, target, args)`; no importer decides anything else.
"""
from __future__ import annotations

from .model import Code, Item, fail

_CMP = {"beq": "eq", "bne": "ne", "blt": "lt", "ble": "le", "bgt": "gt", "bge": "ge"}


def to_code(body: tuple[Item, ...], path: str) -> tuple[Code, ...]:
    """The thread's code in ptxmc's syntax, control flow included."""
    out: list[Code] = []
    branches = 0
    for item in body:
        if isinstance(item, Code):
            out.append(item)
        elif item.kind == "label":
            out.append(Code(f"{item.target}:", item.line, item.text))
        elif item.kind == "jump":
            out.append(Code(f"bra {item.target}", item.line, item.text))
        elif item.kind == "branch":
            op, a, b = item.args
            if op not in _CMP:
                fail(f"unknown conditional branch '{op}'", path, item.line, item.text)
            p = f"__c{branches}"
            branches += 1
            # .s64: Dat3M compares integers; the widest signed comparison ptxmc has (values that do
            # not fit 64 bits are refused when the test is built)
            out.append(Code(f"setp.{_CMP[op]}.s64 {p}, {a}, {b}", item.line, item.text))
            out.append(Code(f"@{p} bra {item.target}", item.line, item.text))
        else:
            fail(f"control flow ({item.kind}) that ptxmc does not convert", path, item.line, item.text)
    return tuple(out)
