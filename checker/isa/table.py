"""The language for describing PTX instruction families: qualifier groups, operand slots and
their kinds, and `Family`, one row of the instruction table. A family's row carries its syntax
(groups, operands, rules, rejects) *and* its meaning (`lower`: how it becomes events; `weaken`:
the single-step weakenings a mutation or the fence advisor tries). The families themselves are
in the other modules of checker.isa; checker.isa.registry lists them.

To add a family: its `key` is the opcode and the leading qualifiers that name it
('cp.async.bulk.tensor.1d.shared::cta.global'; the longest key that prefixes an instruction
wins, so 'fence.proxy' takes precedence over 'fence'); `groups` lists the other qualifiers as
groups of mutually exclusive choices (required, or with a PTX default); `operands` gives the
operand slots (or a function of the chosen qualifiers that does); `rules` are extra checks
returning an error message or None; `rejects` gives a better message than "unknown qualifier"
for qualifiers users are likely to try. `check` returns every group's value with PTX's defaults
applied: the one place defaults live.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Union

from ..ast import Addr, Float, Imm, Instr, Name, Operand, Quals, Reg, Sink, Vec
from ..errors import LitmusError
from .syntax import render, render_instr

if TYPE_CHECKING:
    from ..model.builder import Builder, ThreadCtx

@dataclass(frozen=True)
class Group:
    """Qualifiers of which at most one may be given. `default` is PTX's value when none is."""

    name: str
    choices: tuple[str, ...]
    required: bool = False
    default: str | None = None

    def spelled(self) -> str:
        qs = [f".{c}" for c in self.choices]
        return qs[0] if len(qs) == 1 else ", ".join(qs[:-1]) + " or " + qs[-1]


@dataclass(frozen=True)
class Slot:
    """One operand position: its PTX name, the kind of operand it takes, whether it may be left
    out (only trailing slots, or the ones before a final required slot, as in `a{, b}, c`)."""

    name: str
    kind: str
    optional: bool = False
    what: str = ""           # what the operand means, for "missing operand" errors


def sig(text: str, **what: str) -> tuple[Slot, ...]:
    """Operand slots from 'd:reg, a:addr, b:val?' ('?' marks an optional slot); keyword
    arguments describe slots by name (sig('a:imm, b:imm', b='the thread count'))."""
    slots = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, kind = item.split(":")
        slots.append(Slot(name, kind.rstrip("?"), kind.endswith("?"), what.get(name, "")))
        assert slots[-1].kind in KINDS, item
    return tuple(slots)


def _is_reg(o) -> bool:
    return isinstance(o, Reg) and not o.name.startswith("!")


def _reg_vec(o) -> bool:
    return isinstance(o, Vec) and all(isinstance(x, Reg) and not x.name.startswith("!") for x in o.items)


# kind -> (accepts, what it is called in errors): every operand kind of every family
KINDS: Mapping[str, tuple[Callable[[Operand], bool], str]] = {
    "reg": (_is_reg, "a register"),
    "dst": (lambda o: _is_reg(o) or isinstance(o, Sink), "a register or _"),
    "val": (lambda o: _is_reg(o) or isinstance(o, (Imm, Float)), "a register or a number"),
    "imm": (lambda o: isinstance(o, Imm), "an integer"),
    "label": (lambda o: isinstance(o, Name), "a label"),
    "pred": (lambda o: isinstance(o, Reg), "a predicate register (p or !p)"),
    "addr": (lambda o: isinstance(o, Addr) and not o.coords, "an address [x]"),
    "taddr": (lambda o: isinstance(o, Addr) and bool(o.coords), "a tensor address [tmap, {c0, ...}]"),
    "vec": (lambda o: isinstance(o, Vec), "a vector {a, b, ...}"),
    # an immediate ctaMask of a .multicast::cluster instruction
    "ctamask": (lambda o: isinstance(o, Imm),
                "an immediate mask (0b11, 3 or 0x3): a ctaMask in a register is not modelled"),
    # cp.async's src-size (an integer) or ignore-src (a predicate register)
    "srcsz": (lambda o: isinstance(o, (Reg, Imm)), "an integer (src-size) or a predicate (ignore-src)"),
    "regvec": (_reg_vec, "a vector of registers {r0, ...}"),
    # an address: a location (its address) or a register holding one (checker.isa.address)
    "addrsrc": (lambda o: _is_reg(o) or isinstance(o, Name), "a location or a register holding its address"),
    # mov / add / sub: a value, or a location's address
    "movsrc": (lambda o: _is_reg(o) or isinstance(o, (Imm, Float, Name)), "a register, a number or a location"),
    # ld / st: one register (value), or a vector of them for .v2 / .v4 / .v8
    "dvec": (lambda o: _is_reg(o) or (isinstance(o, Vec) and all(_is_reg(x) or isinstance(x, Sink) for x in o.items)),
             "a register or a vector of registers {r0, r1, ...}"),
    "vvec": (lambda o: _is_reg(o) or isinstance(o, (Imm, Float))
             or (isinstance(o, Vec) and all(_is_reg(x) or isinstance(x, (Imm, Float)) for x in o.items)),
             "a register, a number, or a vector of them {a, b, ...}"),
    "amat": (lambda o: (isinstance(o, Addr) and not o.coords) or _reg_vec(o),
             "a shared-memory matrix [sA] or a register vector {a0, ...}"),
}

# the kinds of operand PTX lets a register give and ptxmc needs as a number: a thread's code may
# name a register there when the register holds a constant on every control path to it
# (checker.unfold.constants reads it; `check(..., constant_registers=True)` lets it through)
CONSTANT_KINDS = frozenset({"imm", "ctamask"})

Rule = Callable[[Instr, Quals], Union[str, None]]


Lowering = Callable[["Builder", "ThreadCtx", Instr], None]
# A weakening of an instruction: the instructions that replace it (() drops it), not validated yet
# (checker.isa.registry.validate keeps the valid ones). `fresh(prefix)` names a register the test
# does not use.
Weakening = tuple[Instr, ...]
Weaken = Callable[[Instr, Callable[[str], str]], Iterable[Weakening]]


def swap_qualifier(i: Instr, old: str, new: str) -> Instr:
    """`i` with qualifier `old` replaced by `new` (text re-rendered, not validated)."""
    quals = tuple(new if q == old else q for q in i.qualifiers)
    return replace(i, qualifiers=quals, text=render_instr(i, quals), family="", quals=Quals())


def weaken_semantics(i: Instr, fresh=None) -> Iterable[Weakening]:
    """.release, .acquire and .acq_rel, where written, weakened to .relaxed (the default
    weakening of an instruction)."""
    for old in ("release", "acquire", "acq_rel"):
        if old in i.qualifiers:
            yield (swap_qualifier(i, old, "relaxed"),)


def drop(i: Instr, fresh=None) -> Iterable[Weakening]:
    """Synchronization that is removed whole (a barrier, a proxy fence)."""
    yield ()


@dataclass(frozen=True)
class Family:
    """One opcode family of the table (see the module docstring)."""

    key: str
    groups: tuple[Group, ...] = ()
    operands: Union[tuple[Slot, ...], Callable[[Quals], tuple[Slot, ...]]] = ()
    rules: tuple[Rule, ...] = ()
    rejects: Mapping[str, str] = field(default_factory=dict)
    space: str | None = None     # the group that gives the state space of the address operand
    lower: Lowering | None = None          # None: no memory effect (a prefetch, a cache hint)
    weaken: Weaken = weaken_semantics
    tensor_memory: bool = False            # may it address Tensor Memory (space: tensor)?
    own_shared_only: str | None = None     # why it cannot address another CTA's shared memory

    def slots(self, q: Quals) -> tuple[Slot, ...]:
        return self.operands(q) if callable(self.operands) else self.operands


# Qualifier vocabularies ---------------------------------------------------------------------

SCOPES = ("cta", "cluster", "gpu", "sys")
SPACES = ("global", "shared", "shared::cta", "shared::cluster")
LDST_TYPES = ("b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64",
              "s8", "s16", "s32", "s64", "f32", "f64")
ATOM_OPS = ("exch", "cas", "add", "inc", "dec", "min", "max", "and", "or", "xor")
ATOM_TYPES = ("b32", "b64", "u32", "u64", "s32", "s64", "f32", "f64")
INT_TYPES = ("u16", "u32", "u64", "s16", "s32", "s64")

# bits of each type's values (.pred: one bit)
TYPE_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
             "b32": 32, "u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64,
             "b128": 128, "pred": 1}
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
SIGNED_TYPES = ("s8", "s16", "s32", "s64")

# tag of each scope (checker.model.relations)
SCOPE_TAG = {"cta": "CTA", "cluster": "CLUSTER", "gpu": "GPU", "sys": "SYS"}


def check(fam: Family, instr: Instr, rest: tuple[str, ...], constant_registers: bool = False) -> Quals:
    """Check the instruction against its family (`rest`: the qualifiers after the family's key);
    return each qualifier group's value, PTX defaults applied (e.g. {'sem': 'weak', 'scope':
    None, ...} for a bare `ld`). `constant_registers`: a register may stand where a number is
    needed (CONSTANT_KINDS); the family's rules, which read those numbers, then wait until
    checker.unfold.constants has put them there and validates the instruction again."""
    def fail(msg: str):
        raise LitmusError(msg, instr.where)

    chosen: dict[str, str] = {}
    for q in rest:
        group = next((g for g in fam.groups if q in g.choices), None)
        if group is None:
            fail(fam.rejects.get(q) or f"unknown qualifier '.{q}' for {fam.key}")
        if chosen.get(group.name) == q:
            fail(f"qualifier '.{q}' given twice")
        if group.name in chosen:
            fail(f"'.{chosen[group.name]}' and '.{q}' cannot be combined (one .{group.name} only)")
        chosen[group.name] = q
    for g in fam.groups:
        if g.required and g.name not in chosen:
            fail(f"{fam.key} needs a .{g.name} qualifier ({g.spelled()})")
    quals = Quals((g.name, chosen.get(g.name, g.default)) for g in fam.groups)
    slots = fam.slots(quals)
    if not fam.groups and not slots:
        for rule in fam.rules:          # a family that only explains (cvt without its types): say it first
            msg = rule(instr, quals)
            if msg:
                fail(msg)
    deferred = _check_operands(fam, instr, slots, fail, constant_registers)
    _written_once(instr, slots, fail)
    for rule in () if deferred else fam.rules:
        msg = rule(instr, quals)
        if msg:
            fail(msg)
    if instr.await_value is not None and not (slots and slots[0].kind in ("reg", "dst", "dvec")):
        fail(f"'== {instr.await_value}': {fam.key} returns no value to await")
    return quals


# the kinds of a first operand an instruction writes (checker.isa.address.destinations)
DESTINATION_KINDS = frozenset({"reg", "dst", "dvec", "regvec", "vec"})


def _written_once(instr: Instr, slots, fail) -> None:
    """A vector destination names each register once: PTX does not say which element a register
    named twice holds afterwards (`ld.v2.u32 {%r1, %r1}, [x]`), and ptxmc does not pick one.
    A vector *source* may name a register twice (`st.v2.u32 [x], {%r1, %r1}`)."""
    if not slots or slots[0].kind not in DESTINATION_KINDS or not instr.operands:
        return
    seen: set[str] = set()
    for x in getattr(instr.operands[0], "items", ()):
        if isinstance(x, Reg):
            if x.name in seen:
                fail(f"register {x.name} is written twice by one instruction: PTX does not define which "
                     "value it then holds (name each destination once, or _ to discard one)")
            seen.add(x.name)


def _shape(slots) -> str:
    out = ""
    for k, s in enumerate(slots):
        name = f"[{s.name}]" if "addr" in s.kind else s.name
        out += ("{, " + name + "}" if k else "{" + name + "}") if s.optional else (", " + name if k else name)
    return out or "no operands"


def operand_slots(slots: tuple[Slot, ...], count: int) -> list[Slot]:
    """The slot of each of `count` operands (optional slots filled left to right)."""
    spare = count - sum(1 for s in slots if not s.optional)
    chosen = []
    for s in slots:
        if s.optional:
            if spare <= 0:
                continue
            spare -= 1
        chosen.append(s)
    return chosen


def constant_operands(fam: Family, instr: Instr, quals: Quals) -> list[int]:
    """The positions of the operands that give a register where the family needs a number."""
    slots = operand_slots(fam.slots(quals), len(instr.operands))
    return [n for n, (s, o) in enumerate(zip(slots, instr.operands))
            if s.kind in CONSTANT_KINDS and _is_reg(o)]


def _check_operands(fam: Family, instr: Instr, slots, fail, constant_registers: bool = False) -> bool:
    """Check the operands against the slots; True when a register stands where a number is
    needed and `constant_registers` lets it."""
    ops, need = instr.operands, [s for s in slots if not s.optional]
    if len(ops) < len(need) and need[len(ops)].what:
        missing = need[len(ops)]
        fail(f"missing operand {missing.name}, {missing.what} (operands: {_shape(slots)})")
    if ops and not slots:
        fail(f"{fam.key} takes no operands")
    if not len(need) <= len(ops) <= len(slots):
        count = (f"{len(slots)}" if len(need) == len(slots) else f"{len(need)} to {len(slots)}")
        fail(f"expected {count} operand{'s' if len(slots) != 1 else ''} ({_shape(slots)}), got {len(ops)}")
    deferred = False
    for n, (s, o) in enumerate(zip(operand_slots(slots, len(ops)), ops), 1):
        accepts, what = KINDS[s.kind]
        if accepts(o):
            continue
        if constant_registers and s.kind in CONSTANT_KINDS and _is_reg(o):
            deferred = True
            continue
        if isinstance(o, Name):
            fail(f"'{o.name}' is a location, not a register: write [{o.name}] to access it")
        fail(f"operand {n} ('{render(o)}') must be {what}")
    return deferred
