"""Control flow: setp (a predicate from a comparison), bra (a branch to a label), and `assume`,
the internal instruction through which a control path of a thread states what its predicates
were (checker.unfold.paths puts it where a branch or a guard `@p` decided the path).

PTX ISA 9.4, "setp" (Comparison and Selection Instructions), "bra" (Control Flow Instructions),
"Predicated Execution" (a guard `@p` / `@!p` on any instruction) and the table "Operators for
Signed Integer, Unsigned Integer, and Bit-Size Types": eq and ne for every type; lt le gt ge on
signed and unsigned types (on unsigned types they compare unsigned); lo ls hi hs (unsigned <,
<=, >, >=) on unsigned types; bit-size types (.b32, .b64) take eq and ne only.

setp writes its predicate register as a value expression (1 or 0): no event. bra has no events:
a path of the thread follows it (checker.unfold.paths). An `assume p == v` makes only the
executions in which predicate p has value v count (a guard on its value expression, as an await
is, EventStructure.guards), and makes every later event of the thread control dependent on the
reads p depends on: `ctrl` (and `dep`, where NoThinAir sees it, like an await's).
"""
from __future__ import annotations

from ..ast import Instr, Quals, Reg
from ..model.builder import Builder, ThreadCtx
from ..model.values import Const, Ite, evaluate, reads_of, signed
from .common import same_width, sized
from .table import Family, Group, sig

# The model options the control-flow layer reads, not the cat model (docs/model.md#options):
# rmw-rewrite-effect counts the write of a failed cas as an effect (docs/model.md#a18).
REWRITE_EFFECT = "rmw-rewrite-effect"
OPTIONS = frozenset({REWRITE_EFFECT})

SETP_TYPES = ("s16", "u16", "b16", "s32", "u32", "b32", "s64", "u64", "b64")
CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
        "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}


def _setp_form(i: Instr, q: Quals):
    t, cmp = q["type"], q["cmp"]
    if t.startswith("b") and cmp not in ("eq", "ne"):
        return f"setp.{cmp}.{t}: bit-size types compare with .eq and .ne only (use .u{t[1:]} or .s{t[1:]})"
    if t.startswith("s") and cmp in ("lo", "ls", "hi", "hs"):
        return f"setp.{cmp}.{t}: .{cmp} is an unsigned comparison (use .u{t[1:]}, or .lt/.le/.gt/.ge)"
    return None


def _no_await(i: Instr, q: Quals):
    if i.await_value is not None:
        return "an await (== v) on setp is not modelled: branch on the predicate (@p bra L)"
    return None


def lower_setp(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """setp.CMP.TYPE p, a, b: p is 1 if a CMP b, else 0. Each source register has the type's
    size (same_width); its value is taken as that many bits (sized: a .b16 register that a .s16
    load filled holds its value sign-extended to 32 bits in ptxmc, A16)."""
    same_width(b, ctx, i)
    t = i.quals["type"]
    bits = int(t[1:])
    a, c = (sized(b, ctx, o, bits) for o in i.operands[1:3])
    if t.startswith("s"):
        a, c = signed(a, bits), signed(c, bits)
    v = Ite(_CMP[i.quals["cmp"]], a, c, Const(1), Const(0))
    if isinstance(a, Const) and isinstance(c, Const):
        v = Const(evaluate(v, lambda e: 0))
    b.set_reg(ctx, i.operands[0], v, 1)


def lower_assume(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """`assume p == v`: only executions where predicate p is v; later events depend on p's reads."""
    v = b.value(ctx, i.operands[0])
    b.guards.append((v, i.await_value))
    reads = sorted(reads_of(v))
    if reads:
        ctx.awaited.extend(r for r in reads if r not in ctx.awaited)
        state = b.finalize("ctrl", _finish_ctrl)
        state.setdefault("from", []).append((ctx.thread.name, tuple(reads), len(b.events)))


def _finish_ctrl(b: Builder) -> None:
    for thread, reads, start in b.ext["ctrl"].get("from", ()):
        for e in b.events[start:]:
            if e.thread == thread:
                b.pairs["ctrl"].update((r, e.eid) for r in reads)


def _internal(i: Instr, q: Quals):
    return "'assume' is internal to ptxmc (a control path's branch decision): write setp and @p bra"


def assume(pred: str, value: int, where, why: str) -> Instr:
    """The internal instruction a control path uses: predicate `pred` has `value` (1 or 0)."""
    return Instr("assume", (), (Reg(pred),), f"assume {pred} == {value}  ({why})", where, value, None,
                 "assume", Quals())


FAMILIES = (
    Family("setp", groups=(Group("cmp", CMPS, required=True), Group("type", SETP_TYPES, required=True)),
           operands=sig("p:reg, a:val, b:val"), rules=(_no_await, _setp_form), lower=lower_setp,
           rejects={**dict.fromkeys(("f32", "f64", "f16"), "floating-point comparisons are not modelled"),
                    **dict.fromkeys(("and", "or", "xor"), "setp with a boolean operator (setp.CmpOp.BoolOp) is "
                                    "not modelled: combine predicates with and.pred / or.pred")},
           weaken=lambda i, fresh=None: ()),
    Family("bra", groups=(Group("uni", ("uni",)),), operands=sig("L:label"), lower=None,
           weaken=lambda i, fresh=None: ()),
    # No operand slots: the family exists for paths (which build its instructions validated) and,
    # in a test, only for its error message.
    Family("assume", rules=(_internal,), lower=lower_assume,
           weaken=lambda i, fresh=None: ()),
)
