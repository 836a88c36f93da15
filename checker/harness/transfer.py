"""Value transfer functions for the outcome-space analysis (checker.harness.space): what each
instruction may write and read, over sets of (value, writes it went through)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ast import Addr, Imm, Instr, Reg
from ..errors import CheckerError
from .emit_generic import ATOM_OPS

#
# Abstract values are (value, writes) pairs: `writes` are the write instructions the value flowed
# through. A write never consumes a value that already went through itself (each instruction runs
# once per execution), which keeps read-modify-write chains finite and tight. An instruction in a
# loop runs many times: it may (`AbsState.repeat`), and the analysis then iterates to a fixpoint
# (checker.harness.space.analyse).

Val = tuple[int, frozenset]
MAX_PAIRS = 4096


@dataclass
class AbsState:
    """Sets of (value, writes) each location / register may hold; None = opaque (not a number)."""

    mem: dict[str, set | None]
    regs: dict[str, set | None]
    here: tuple[str, int] = ("", 0)      # the instruction being interpreted (a write's identity)
    roots: dict = field(default_factory=dict)   # virtual alias -> the location it maps
    maps: dict = field(default_factory=dict)    # tensor map -> {value: buffer}
    multicast: object = None                    # (instr, name) -> the locations a multicast writes
    repeat: bool = False                        # the instruction is in a loop: it may consume its own values

    def val(self, op) -> set | None:
        if isinstance(op, Imm):
            return {(op.value, frozenset())}
        if isinstance(op, Reg):
            return self.regs.get(op.name, {(0, frozenset())})
        return None

    def set_reg(self, op, vals) -> None:
        if isinstance(op, Reg):
            self.regs[op.name] = None if vals is None else set(vals)

    def loc(self, op) -> str | None:
        return self.roots.get(op.base, op.base) if isinstance(op, Addr) else None

    def read(self, op) -> set | None:
        return self.mem.get(self.loc(op), {(0, frozenset())})

    def write(self, name: str | None, vals) -> None:
        """Values `vals` stored by the current instruction (its own earlier results excluded)."""
        if name is None:
            return
        cur = self.mem.setdefault(name, {(0, frozenset())})
        if cur is None or vals is None:
            self.mem[name] = None
            return
        cur |= {(v, w | {self.here}) for v, w in vals if self.repeat or self.here not in w}
        if len(cur) > MAX_PAIRS:
            self.mem[name] = None


# The value semantics of atom/red and ALU instructions are the model's (checker.isa.common's
# atom_value, checker.isa.core's mul_half and checker.model.values' integer operators), evaluated
# here on constants: a second copy diverged (bitwise ops on negative values gave Python's
# infinite-precision results, the model gives the unsigned 32-bit pattern). These imports are the
# harness's only dependence on the model's arithmetic; a value outside the model's 64-bit range makes the result opaque.
from ..isa.common import atom_value as _model_atom_value   # noqa: E402
from ..isa.core import mul_half as _mul_half   # noqa: E402
from ..model.values import Const as _Const, evaluate as _evaluate, binop as _binop  # noqa: E402


def _eval(expr) -> int:
    return _evaluate(expr, lambda eid: 0)


def _rmw_new(op: str, old: int, args: list[int]) -> int:
    return _eval(_model_atom_value(op, _Const(old), [_Const(a) for a in args]))


def _alu(op: str, a: int, b: int) -> int:
    return _eval(_binop(op, _Const(a), _Const(b)))


def _product(sets):
    if any(s is None for s in sets):
        return None
    out = [((), frozenset())]
    for s in sets:
        out = [(vs + (v,), ws | w) for vs, ws in out for v, w in s]
        if len(out) > MAX_PAIRS:
            return None
    return out


def values_ld(i: Instr, s: AbsState) -> None:
    vals = s.read(i.operands[1])
    if i.await_value is not None and vals is not None:
        vals = {(v, w) for v, w in vals if (v - i.await_value) % 2**32 == 0} or {(i.await_value, frozenset())}
    s.set_reg(i.operands[0], vals)


def values_st(i: Instr, s: AbsState) -> None:
    s.write(s.loc(i.operands[0]), s.val(i.operands[1]))


def _values_rmw(i: Instr, s: AbsState, ops: list):
    op = i.pick(ATOM_OPS) or "add"
    old = s.read(ops[0])
    combos = _product([old] + [s.val(o) for o in ops[1:]])
    if combos is None:
        s.write(s.loc(ops[0]), None)
        return old
    try:
        s.write(s.loc(ops[0]), {(_rmw_new(op, vs[0], list(vs[1:])), w) for vs, w in combos})
    except CheckerError:
        s.write(s.loc(ops[0]), None)
    return old


def values_atom(i: Instr, s: AbsState) -> None:
    old = _values_rmw(i, s, list(i.operands[1:]))
    if i.await_value is not None and old is not None:
        old = {(v, w) for v, w in old if (v - i.await_value) % 2**32 == 0} or {(i.await_value, frozenset())}
    s.set_reg(i.operands[0], old)


def values_red(i: Instr, s: AbsState) -> None:
    # red.async's third operand is its mbarrier, not an argument
    _values_rmw(i, s, list(i.operands[:2]) if i.has("async") else list(i.operands))


def values_alu(i: Instr, s: AbsState) -> None:
    srcs = [s.val(o) for o in i.operands[1:]]
    if i.op == "mov":
        s.set_reg(i.operands[0], srcs[0] if srcs else None)
        return
    combos = _product(srcs[:2])
    half = i.quals.get("mode") if i.op == "mul" and i.quals.get("mode") in ("hi", "wide") else None
    try:
        if half:
            s.set_reg(i.operands[0], None if combos is None else
                      {(_eval(_mul_half(half, i.quals["type"], *map(_Const, vs))), w) for vs, w in combos})
            return
        s.set_reg(i.operands[0], None if combos is None else {(_alu(i.op, *vs), w) for vs, w in combos})
    except CheckerError:              # leaves the model's value range: opaque, as the model refuses it
        s.set_reg(i.operands[0], None)


def _through_map(s: AbsState, op) -> list[str]:
    """The buffers a tensor operand [tmap, {..}] may point at (the map's possible values)."""
    table = s.maps.get(op.base, {})
    vals = s.read(Addr(op.base))
    if vals is None:
        return sorted(set(table.values()))
    return [table[v] for v in sorted({v for v, _ in vals}) if v in table]


def _dests(i: Instr, s: AbsState, op) -> list[str | None]:
    """The locations a copy writes: its destination, or with .multicast::cluster the location at
    that offset in each CTA of the mask (checker.harness.mbarriers.multicast_targets)."""
    if "multicast::cluster" in i.qualifiers and s.multicast is not None:
        return list(s.multicast(i, op.base))
    return [s.loc(op)]


def values_cp(i: Instr, s: AbsState) -> None:
    ops = [o for o in i.operands if isinstance(o, Addr)]
    if "tensor" in i.qualifiers and len(ops) >= 2:
        if ops[0].coords:                        # shared -> global through the map
            for buf in _through_map(s, ops[0]):
                s.write(buf, s.read(ops[1]))
        else:
            vals = set()
            for buf in _through_map(s, ops[1]):
                got = s.read(Addr(buf))
                if got is None:
                    vals = None
                    break
                vals |= got
            for d in _dests(i, s, ops[0]):
                s.write(d, vals)
        return
    if i.qualifiers[:1] == ("reduce",) and len(ops) >= 2:
        op = i.pick(ATOM_OPS) or "add"
        combos = _product([s.read(ops[0]), s.read(ops[1])])
        try:
            s.write(s.loc(ops[0]), None if combos is None else {(_rmw_new(op, vs[0], [vs[1]]), w) for vs, w in combos})
        except CheckerError:
            s.write(s.loc(ops[0]), None)
        return
    if len(ops) >= 2 and "arrive" not in i.qualifiers and "prefetch" not in i.qualifiers:
        for d in _dests(i, s, ops[0]):
            s.write(d, s.read(ops[1]))


def values_tensormap(i: Instr, s: AbsState) -> None:
    if i.qualifiers[:1] == ("replace",):
        s.write(s.loc(i.operands[0]), s.val(i.operands[1]))
    elif i.qualifiers[:1] == ("cp_fenceproxy",):
        s.write(s.loc(i.operands[0]), s.read(i.operands[1]))


def values_mbarrier(i: Instr, s: AbsState) -> None:
    q = i.qualifiers
    if q and q[0] in ("try_wait", "test_wait"):
        vals = {0, 1} if i.await_value is None else {i.await_value}
        s.set_reg(i.operands[0], {(v, frozenset()) for v in vals})
    elif q and q[0].startswith("arrive") and i.operands:
        s.set_reg(i.operands[0], None)      # an opaque phase state


def values_wgmma(i: Instr, s: AbsState) -> None:
    """wgmma.mma_async: d = (scale-d ? d : 0) + (imm-scale-a * A) * (imm-scale-b * B), A and B the
    values of the operand cells (checker.isa.wgmma); scale-d taken as either."""
    if i.qualifiers[:1] != ("mma_async",) or len(i.operands) < 6:
        return
    from ..ast import Vec
    d, a, b = i.operands[0], i.operands[1], i.operands[2]
    sa = i.operands[4].value if isinstance(i.operands[4], Imm) else 1
    sb = i.operands[5].value if isinstance(i.operands[5], Imm) else 1
    regs = [r for r in (d.items if isinstance(d, Vec) else (d,)) if isinstance(r, Reg)]
    av = s.read(a) if isinstance(a, Addr) else None
    bv = s.read(b) if isinstance(b, Addr) else None
    for r in regs:
        prods = _product([av, bv, s.val(r)])
        s.set_reg(r, None if prods is None else
                  {(sa * x * sb * y, w) for (x, y, _), w in prods} | {(z + sa * x * sb * y, w) for (x, y, z), w in prods})


def values_tcgen05(i: Instr, s: AbsState) -> None:
    """tcgen05.ld reads the cell into every register of its vector; tcgen05.st writes the first
    register's value (checker.isa.tcgen05)."""
    from ..ast import Vec
    what = i.qualifiers[0] if i.qualifiers else ""
    if what == "ld" and len(i.operands) >= 2:
        vec = i.operands[0]
        for r in (vec.items if isinstance(vec, Vec) else (vec,)):
            s.set_reg(r, s.read(i.operands[1]))
    elif what == "st" and len(i.operands) >= 2:
        vec = i.operands[-1]
        first = vec.items[0] if isinstance(vec, Vec) and vec.items else vec
        s.write(s.loc(i.operands[0]), s.val(first))


def values_setp(i: Instr, s: AbsState) -> None:
    s.set_reg(i.operands[0], {(0, frozenset()), (1, frozenset())})


def values_not(i: Instr, s: AbsState) -> None:
    """not.pred flips a 0/1 predicate; not.bN complements the N-bit pattern."""
    vals = s.val(i.operands[1])
    if vals is None:
        s.set_reg(i.operands[0], None)
        return
    if i.has("pred"):
        s.set_reg(i.operands[0], {(int(v == 0), w) for v, w in vals})
        return
    bits = next((int(q[1:]) for q in i.qualifiers if q[:1] == "b" and q[1:].isdigit()), 32)
    s.set_reg(i.operands[0], {(~v & ((1 << bits) - 1), w) for v, w in vals})


def values_selp(i: Instr, s: AbsState) -> None:
    """selp d, a, b, c: a's values where c may be 1, b's where c may be 0."""
    a, b, c = (s.val(o) for o in i.operands[1:4])
    if c is None:
        c = {(0, frozenset()), (1, frozenset())}
    out = set()
    for got, side in ((any(v != 0 for v, _ in c), a), (any(v == 0 for v, _ in c), b)):
        if got:
            if side is None:
                s.set_reg(i.operands[0], None)
                return
            out |= side
    s.set_reg(i.operands[0], out)


def values_none(i: Instr, s: AbsState) -> None:
    pass


