"""PTX instructions: the parser (text -> `Instr`) and a table-driven well-formedness check.

Syntax accepted, one instruction per string:

    [@p | @!p]  opcode{.qualifier}  operand, operand, ...  [== v]  [;]  [// comment]

Qualifiers are split on '.', so compound ones (`shared::cta`, `mbarrier::complete_tx::bytes`,
`tensormap::generic`) stay whole. Operands: registers (`r0`, `%r1` - the '%' is dropped),
integers (decimal, 0x hex, 0b binary, negative), addresses `[x]`, `[x+4]`, `[tmap, {0, 1}]`,
vectors `{r0, r1}`, the sink `_`, negated predicates `!p` (kept as Reg('!p')). Inside `[...]`
an identifier is always a location; outside, an identifier is a register unless it is a
declared location (then it is a `Name`, which no generic instruction accepts). `== v` makes the
instruction an await (DESIGN section 2).

The check is driven by FAMILIES, one `Family` per opcode family. To add one (async copies,
mbarrier, proxy fences, wgmma, tcgen05), append an entry: its `key` is the opcode and the
leading qualifiers that name it ('cp.async.bulk.tensor'; the longest key that prefixes an
instruction wins, so 'fence.proxy' takes precedence over 'fence'); `groups` lists the other
qualifiers as groups of mutually exclusive choices (required or with a PTX default);
`operands` gives the operand slots (or a function of the chosen qualifiers that does);
`rules` are extra checks returning an error message or None; `rejects` gives a better message
than "unknown qualifier" for qualifiers users are likely to try. `validate` returns every
group's value with PTX defaults applied: the one place defaults live.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Union

from .ast import Addr, Imm, Instr, Name, Operand, Reg, Sink, Vec
from .errors import LitmusError, SourceLoc

Quals = Mapping[str, Union[str, None]]     # group name -> chosen qualifier (None: absent, no default)

# ---------------------------------------------------------------------------------- parsing --

_IDENT = r"[A-Za-z_$][\w$]*"
_INT = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[1-9][0-9]*|0)")
_QUALIFIER = re.compile(r"[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*")


_LITERAL_RANGE = (-(2**63), 2**64 - 1)      # PTX values have at most 64 bits


def int_literal(text: str, fail=None) -> int | None:
    """A PTX/herd integer literal's value; None if `text` is not one. Leading zeros are refused
    (PTX reads 010 as octal, herd as decimal). A literal outside the 64-bit range is None too,
    or, given `fail`, reported through it."""
    text = text.strip()
    if not _INT.fullmatch(text):
        return None
    lo, hi = _LITERAL_RANGE
    value = int(text, 0) if len(text) <= 70 else None    # (no 64-bit literal is longer)
    if value is None or not lo <= value <= hi:
        if fail is not None:
            fail(f"'{text[:30]}{'...' if len(text) > 30 else ''}': integer out of range "
                 "(PTX values have at most 64 bits)")
        return None
    return value


def parse_instr(text: str, where: SourceLoc | None = None, memory=frozenset(), *,
                check: bool = True) -> Instr:
    """Parse one instruction; `memory` holds the declared location names. With `check` (the
    default) the instruction is also validated against FAMILIES. Errors are LitmusErrors."""
    where = where or SourceLoc("<string>", 1, text.strip())

    def fail(msg: str):
        raise LitmusError(msg, where)

    body = text.split("//", 1)[0].strip()
    body = body[:-1].rstrip() if body.endswith(";") else body
    if not body:
        fail("empty instruction")
    await_value = None
    parts = _split_top(body, "==", fail)
    if len(parts) > 2:
        fail("more than one '== v'")
    if len(parts) == 2:
        body, value = parts[0].strip(), parts[1].strip()
        await_value = int_literal(value, fail)
        if await_value is None:
            fail(f"'== {value}': an await needs an integer value")
    predicate = None
    m = re.match(rf"@(!?)%?({_IDENT})\s+", body)
    if body.startswith("@"):
        if m is None:
            fail("malformed guard: write '@p' or '@!p' before the opcode")
        predicate, body = f"@{m.group(1)}{m.group(2)}", body[m.end():]
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)((?:\.[^\s.\[{]*)*)", body)
    if m is None:
        fail("expected an opcode")
    op, quals = m.group(1), tuple(m.group(2).split(".")[1:])
    for q in quals:
        if not _QUALIFIER.fullmatch(q):
            fail(f"malformed qualifier '.{q}'" if q else "empty qualifier ('..')")
    rest = body[m.end():].strip()
    operands = tuple(_operand(s, memory, fail) for s in _split_top(rest, ",", fail)) if rest else ()
    instr = Instr(op, quals, operands, text.strip(), where, await_value, predicate)
    if check:
        validate(instr)
    return instr


def _split_top(text: str, sep: str, fail) -> list[str]:
    """Split at `sep` outside brackets and braces."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth < 0:
                fail(f"unbalanced '{c}'")
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    if depth:
        fail("unclosed '[' or '{'")
    parts.append(text[start:])
    return parts


def _operand(s: str, memory, fail) -> Operand:
    s = s.strip()
    if not s:
        fail("empty operand")
    if s == "_":
        return Sink()
    if s[0] == "[":
        return _address(s, fail)
    if s[0] == "{":
        items = s[1:-1].strip()
        if not s.endswith("}") or not items:
            fail(f"malformed vector '{s}'")
        if any(c in items for c in "[]{}"):   # checked before recursing: no nesting, no deep stack
            fail(f"a vector holds registers and integers only: '{s}'")
        ops = tuple(_operand(x, memory, fail) for x in _split_top(items, ",", fail))
        if any(isinstance(o, (Addr, Vec)) for o in ops):
            fail(f"a vector holds registers and integers only: '{s}'")
        return Vec(ops)
    if re.fullmatch(rf"!%?{_IDENT}", s):
        return Reg("!" + s[1:].lstrip("%"))
    value = int_literal(s, fail)
    if value is not None:
        return Imm(value)
    if _INT.match(s) and re.fullmatch(r"[+-]?[0-9]+", s):
        fail(f"'{s}': write integers without leading zeros (PTX reads them as octal)")
    if re.fullmatch(rf"%?{_IDENT}", s):
        name = s.lstrip("%")
        return Name(name) if name in memory and not s.startswith("%") else Reg(name)
    fail(f"malformed operand '{s}'")


def _address(s: str, fail) -> Addr:
    if not s.endswith("]"):
        fail(f"malformed address '{s}'")
    parts = _split_top(s[1:-1], ",", fail)
    m = re.fullmatch(rf"\s*(%?)({_IDENT})\s*(?:([+-])\s*(\w+))?\s*", parts[0])
    if m is None:
        fail(f"malformed address '{s}': write [x], [x+4] or [tmap, {{0, 1}}]")
    if m.group(1):
        fail(f"'{s}': an address names a memory location, not a register")
    offset = 0
    if m.group(3):
        offset = int_literal(m.group(4), fail)
        if offset is None:
            fail(f"malformed offset in '{s}'")
        offset = -offset if m.group(3) == "-" else offset
    coords: tuple = ()
    if len(parts) > 2:
        fail(f"malformed address '{s}': write [x], [x+4] or [tmap, {{0, 1}}]")
    if len(parts) == 2:
        vec = _operand(parts[1], frozenset(), fail)
        if not isinstance(vec, Vec):
            fail(f"'{s}': the coordinates of a tensor address are a vector {{c0, c1, ...}}")
        coords = vec.items
    return Addr(m.group(2), offset, coords)


def address_bases(instr: Instr) -> Iterator[str]:
    """The location names the instruction addresses, in operand order."""
    for o in instr.operands:
        if isinstance(o, Addr):
            yield o.base


def registers(instr: Instr) -> Iterator[str]:
    """Every register the instruction names (operands, vectors, tensor coordinates, guard)."""
    def walk(ops):
        for o in ops:
            if isinstance(o, Reg):
                yield o.name.lstrip("!")
            elif isinstance(o, Vec):
                yield from walk(o.items)
            elif isinstance(o, Addr):
                yield from walk(o.coords)
    if instr.predicate:
        yield instr.predicate.lstrip("@!")
    yield from walk(instr.operands)


def render(o: Operand) -> str:
    """An operand back as PTX text."""
    if isinstance(o, Reg):
        return o.name
    if isinstance(o, Imm):
        return str(o.value)
    if isinstance(o, Sink):
        return "_"
    if isinstance(o, Name):
        return o.name
    if isinstance(o, Vec):
        return "{" + ", ".join(render(i) for i in o.items) + "}"
    off = f"+{o.offset}" if o.offset > 0 else (f"{o.offset}" if o.offset else "")
    coords = ", {" + ", ".join(render(c) for c in o.coords) + "}" if o.coords else ""
    return f"[{o.base}{off}{coords}]"


# ------------------------------------------------------------------------------- the table --

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


# kind -> (accepts, what it is called in errors)
KINDS: dict[str, tuple[Callable[[Operand], bool], str]] = {
    "reg": (_is_reg, "a register"),
    "dst": (lambda o: _is_reg(o) or isinstance(o, Sink), "a register or _"),
    "val": (lambda o: _is_reg(o) or isinstance(o, Imm), "a register or an integer"),
    "imm": (lambda o: isinstance(o, Imm), "an integer"),
    "pred": (lambda o: isinstance(o, Reg), "a predicate register (p or !p)"),
    "addr": (lambda o: isinstance(o, Addr) and not o.coords, "an address [x]"),
    "taddr": (lambda o: isinstance(o, Addr) and bool(o.coords), "a tensor address [tmap, {c0, ...}]"),
    "vec": (lambda o: isinstance(o, Vec), "a vector {a, b, ...}"),
}

Rule = Callable[[Instr, Quals], Union[str, None]]


@dataclass(frozen=True)
class Family:
    """One opcode family of the table (see the module docstring)."""

    key: str
    groups: tuple[Group, ...] = ()
    operands: Union[tuple[Slot, ...], Callable[[Quals], tuple[Slot, ...]]] = ()
    rules: tuple[Rule, ...] = ()
    rejects: Mapping[str, str] = field(default_factory=dict)
    space: str | None = None     # the group that gives the state space of the address operand

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

_SCOPE = Group("scope", SCOPES)
_SPACE = Group("space", SPACES)
_VECTOR = {v: "vector accesses (.v2, .v4, .v8) are not supported: use one access per location"
           for v in ("v2", "v4", "v8")}


# Rules (each returns an error message or None) ----------------------------------------------

def _mmio_form(i: Instr, q: Quals):
    # PTX ISA, ld/st: `ld.mmio.relaxed.sys{.global}.type` - the only form of an .mmio access.
    if q["mmio"] and (q["sem"] != "relaxed" or q["scope"] != "sys"):
        return f"{i.op}.mmio must be .relaxed.sys ({i.op}.mmio.relaxed.sys)"
    if q["mmio"] and q["space"] not in (None, "global"):
        return ".mmio accesses are to .global memory only"


def _weak_takes_no_scope(i: Instr, q: Quals):
    # Memory Consistency Model > Operation types: .weak accesses are not strong and have no scope;
    # .volatile is relaxed.sys by definition, so it takes no scope qualifier either.
    if q["sem"] in ("weak", "volatile") and q["scope"]:
        note = "" if i.has(q["sem"]) else f" ({i.op} without a semantics qualifier is .weak)"
        return f".{q['sem']} accesses take no scope{note}"


def _strong_needs_scope(i: Instr, q: Quals):
    if q["sem"] in ("relaxed", "acquire", "release") and not q["scope"]:
        return f".{q['sem']} accesses need a scope ({_SCOPE.spelled()})"


_ATOM_TYPES_OF = {  # PTX ISA, atom: which types each operation takes (integer litmus values)
    "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"),
    "exch": ("b32", "b64"), "cas": ("b32", "b64"),
    "add": ("u32", "s32", "u64", "f32", "f64"), "inc": ("u32",), "dec": ("u32",),
    "min": ("u32", "s32", "u64", "s64"), "max": ("u32", "s32", "u64", "s64"),
}


def _atomic_type(i: Instr, q: Quals):
    ok = _ATOM_TYPES_OF[q["op"]]
    if q["type"] and q["type"] not in ok:
        return f"{i.op}.{q['op']} does not take .{q['type']} (it takes {Group('', ok).spelled()})"


def _barrier_form(i: Instr, q: Quals):
    # PTX ISA, bar/barrier: bar.red.popc.u32 d, a{, b}, {!}c;  bar.red.{and,or}.pred p, a{, b}, {!}c
    if q["mode"] == "red" and not q["redop"]:
        return f"{i.op}.red needs .popc, .and or .or"
    if q["mode"] != "red" and (q["redop"] or q["type"]):
        return f"'.{q['redop'] or q['type']}' belongs to {i.op}.red only"
    if q["redop"] == "popc" and q["type"] == "pred" or q["redop"] in ("and", "or") and q["type"] == "u32":
        return f"{i.op}.red.{q['redop']} is {'.u32' if q['redop'] == 'popc' else '.pred'}"
    a, *rest = i.operands[1:] if q["mode"] == "red" else i.operands
    if not 0 <= a.value <= 15:
        return f"barrier {a.value} does not exist: a CTA has barriers 0 to 15"
    if rest and isinstance(rest[0], Imm) and rest[0].value <= 0:
        return "the thread count must be positive"


def _bar_operands(q: Quals) -> tuple[Slot, ...]:
    if q["mode"] == "arrive":
        return sig("a:imm, b:imm", b="the thread count")   # ISA: required for .arrive
    if q["mode"] == "red":
        return sig("d:reg, a:imm, b:imm?, c:pred")
    return sig("a:imm, b:imm?")


def _restricted_fence(i: Instr, q: Quals):
    # PTX ISA 9.4, membar/fence: fence.release.sync_restrict::shared::cta.cluster and
    # fence.acquire.sync_restrict::shared::cluster.cluster are the two restricted forms.
    r = q["restrict"]
    if r is None:
        return None
    want = {"sync_restrict::shared::cta": "release", "sync_restrict::shared::cluster": "acquire"}[r]
    if q["sem"] != want or q["scope"] != "cluster":
        return (f"a fence with .{r} is fence.{want}.{r}.cluster "
                "(fence.release.sync_restrict::shared::cta.cluster or "
                "fence.acquire.sync_restrict::shared::cluster.cluster)")
    return None


_BAR_GROUPS = (Group("cta", ("cta",)), Group("mode", ("sync", "arrive", "red"), required=True),
               Group("redop", ("popc", "and", "or")), Group("type", ("u32", "pred")))


# The table ----------------------------------------------------------------------------------

_LD_ST_RULES = (_mmio_form, _weak_takes_no_scope, _strong_needs_scope)

FAMILIES: dict[str, Family] = {}


def register(*families: Family) -> None:
    """Add families to the table (a key may be defined once)."""
    for f in families:
        assert f.key not in FAMILIES, f.key
        names = [c for g in f.groups for c in g.choices]
        assert len(names) == len(set(names)), f"{f.key}: a qualifier in two groups"
        FAMILIES[f.key] = f


register(
    Family("ld",
           groups=(Group("sem", ("weak", "relaxed", "acquire", "volatile"), default="weak"),
                   Group("mmio", ("mmio",)), _SCOPE, _SPACE, Group("type", LDST_TYPES)),
           operands=sig("d:reg, a:addr"), rules=_LD_ST_RULES, space="space",
           rejects={**_VECTOR, **dict.fromkeys(("release", "acq_rel", "sc"),
                    "ld.release does not exist: a load is .weak, .relaxed, .acquire, .volatile or .mmio")}),
    Family("st",
           groups=(Group("sem", ("weak", "relaxed", "release", "volatile"), default="weak"),
                   Group("mmio", ("mmio",)), _SCOPE, _SPACE, Group("type", LDST_TYPES)),
           operands=sig("a:addr, b:val"), rules=_LD_ST_RULES, space="space",
           rejects={**_VECTOR, **dict.fromkeys(("acquire", "acq_rel", "sc"),
                    "st.acquire does not exist: a store is .weak, .relaxed, .release, .volatile or .mmio")}),
    Family("atom",
           groups=(Group("sem", ("relaxed", "acquire", "release", "acq_rel"), default="relaxed"),
                   Group("scope", SCOPES, default="gpu"), _SPACE,
                   Group("op", ATOM_OPS, required=True), Group("type", ATOM_TYPES)),
           operands=lambda q: sig("d:reg, a:addr, b:val" + (", c:val" if q["op"] == "cas" else "")),
           rules=(_atomic_type,), space="space",
           rejects={**_VECTOR, **dict.fromkeys(("weak", "volatile", "mmio", "sc"),
                    "atom takes only .relaxed, .acquire, .release or .acq_rel")}),
    Family("red",
           groups=(Group("sem", ("relaxed", "release"), default="relaxed"),
                   Group("scope", SCOPES, default="gpu"), _SPACE,
                   Group("op", tuple(o for o in ATOM_OPS if o not in ("exch", "cas")), required=True),
                   Group("type", ATOM_TYPES)),
           operands=sig("a:addr, b:val"), rules=(_atomic_type,), space="space",
           rejects={**_VECTOR,
                    **dict.fromkeys(("acquire", "acq_rel", "weak", "volatile", "mmio", "sc"),
                                    "red takes only .relaxed or .release"),
                    **dict.fromkeys(("exch", "cas"), "red has no .exch or .cas: use atom")}),
    Family("fence",
           groups=(Group("sem", ("sc", "acq_rel", "acquire", "release"), default="acq_rel"),
                   # restricted fences (PTX 8.6): the effect is limited to one state space (DESIGN A10)
                   Group("restrict", ("sync_restrict::shared::cta", "sync_restrict::shared::cluster")),
                   Group("scope", SCOPES, required=True)),
           rules=(_restricted_fence,),
           rejects={**dict.fromkeys(("relaxed", "weak"), "fence takes .sc, .acq_rel, .acquire or .release"),
                    "gl": "fence scopes are .cta, .cluster, .gpu and .sys (.gl is membar's)",
                    "proxy": "a proxy fence is written fence.proxy.KIND (.proxy comes first)",
                    "mbarrier_init": "write fence.mbarrier_init.release.cluster (.mbarrier_init comes first)"}),
    Family("membar",
           groups=(Group("level", ("cta", "gl", "sys"), required=True),),
           rejects={"gpu": "membar levels are .cta, .gl and .sys (membar.gl is fence.sc.gpu)",
                    "cluster": "membar has no .cluster level: use fence.sc.cluster",
                    "proxy": "a proxy fence is written membar.proxy.KIND (.proxy comes first)"}),
    Family("bar", groups=_BAR_GROUPS, operands=_bar_operands, rules=(_barrier_form,),
           rejects={"aligned": "bar takes no .aligned (bar.sync is barrier.sync.aligned)"}),
    Family("barrier", groups=_BAR_GROUPS + (Group("aligned", ("aligned",)),),
           operands=_bar_operands, rules=(_barrier_form,),
           rejects={"cluster": "a cluster barrier is written barrier.cluster.arrive / barrier.cluster.wait"}),
    Family("bar.warp", groups=(Group("mode", ("sync",), required=True),), operands=sig("membermask:val")),
    Family("mov", groups=(Group("type", ("pred", "b16", "b32", "b64") + INT_TYPES + ("f32", "f64")),),
           operands=sig("d:reg, a:val")),
    *(Family(op, groups=(Group("type", INT_TYPES + ("f32", "f64")),), operands=sig("d:reg, a:val, b:val"))
      for op in ("add", "sub")),
    Family("mul", groups=(Group("mode", ("lo",)), Group("type", INT_TYPES + ("f32", "f64"))),
           operands=sig("d:reg, a:val, b:val"),
           rejects=dict.fromkeys(("hi", "wide"), "mul.hi and mul.wide are not supported (use mul.lo)")),
    *(Family(op, groups=(Group("type", ("pred", "b16", "b32", "b64")),), operands=sig("d:reg, a:val, b:val"))
      for op in ("and", "or", "xor")),
)


# ---------------------------------------------------------------------------- the check --

def family_of(instr: Instr) -> tuple[Family, tuple[str, ...]]:
    """The instruction's family (longest matching key) and the qualifiers after its key."""
    for n in range(len(instr.qualifiers), -1, -1):
        fam = FAMILIES.get(".".join((instr.op,) + instr.qualifiers[:n]))
        if fam is not None:
            return fam, instr.qualifiers[n:]
    if instr.op in NOT_MODELLED_YET:
        raise LitmusError(f"'{instr.op}' is not supported by the model yet ({NOT_MODELLED_YET[instr.op]})",
                          instr.where)
    raise LitmusError(f"unknown or unsupported PTX instruction '{instr.op}'", instr.where)


# Real PTX opcodes that ptxmc does not model yet, with the work that will (a clearer error than
# "unknown instruction"); a family registered for one of them takes precedence.
NOT_MODELLED_YET = {
    "wgmma": "warpgroup MMA, tensor-core work of issue 5",
    "tcgen05": "tensor-core instructions of sm_100, issue 5",
}


def validate(instr: Instr) -> dict[str, str | None]:
    """Check the instruction against its family; return each qualifier group's value, PTX
    defaults applied (e.g. {'sem': 'weak', 'scope': None, ...} for a bare `ld`)."""
    def fail(msg: str):
        raise LitmusError(msg, instr.where)

    fam, rest = family_of(instr)
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
    quals = {g.name: chosen.get(g.name, g.default) for g in fam.groups}
    slots = fam.slots(quals)
    _check_operands(instr, slots, fail)
    for rule in fam.rules:
        msg = rule(instr, quals)
        if msg:
            fail(msg)
    if instr.await_value is not None and not (slots and slots[0].kind in ("reg", "dst")):
        fail(f"'== {instr.await_value}': {fam.key} returns no value to await")
    return quals


def address_space(instr: Instr) -> str | None:
    """The state-space qualifier of the instruction's single address operand, for families that
    have one (ld, st, atom, red); None for generic addressing or other families."""
    fam, _ = family_of(instr)
    return validate(instr)[fam.space] if fam.space else None


def _shape(slots) -> str:
    out = ""
    for k, s in enumerate(slots):
        name = f"[{s.name}]" if "addr" in s.kind else s.name
        out += ("{, " + name + "}" if k else "{" + name + "}") if s.optional else (", " + name if k else name)
    return out or "no operands"


def _check_operands(instr: Instr, slots, fail) -> None:
    ops, need = instr.operands, [s for s in slots if not s.optional]
    if len(ops) < len(need) and need[len(ops)].what:
        missing = need[len(ops)]
        fail(f"missing operand {missing.name}, {missing.what} (operands: {_shape(slots)})")
    if ops and not slots:
        fail(f"{family_of(instr)[0].key} takes no operands")
    if not len(need) <= len(ops) <= len(slots):
        count = (f"{len(slots)}" if len(need) == len(slots) else f"{len(need)} to {len(slots)}")
        fail(f"expected {count} operand{'s' if len(slots) != 1 else ''} ({_shape(slots)}), got {len(ops)}")
    spare = len(ops) - len(need)             # optional slots filled, left to right
    chosen = []
    for s in slots:
        if s.optional:
            if spare == 0:
                continue
            spare -= 1
        chosen.append(s)
    for n, (s, o) in enumerate(zip(chosen, ops), 1):
        accepts, what = KINDS[s.kind]
        if accepts(o):
            continue
        if isinstance(o, Name):
            fail(f"'{o.name}' is a location, not a register: write [{o.name}] to access it")
        fail(f"operand {n} ('{render(o)}') must be {what}")


# Instruction families defined elsewhere register themselves on import.
from . import ptx_proxy as _ptx_proxy  # noqa: E402, F401  (proxy fences, tensor maps, ISCA'22 views
from . import ptx_async as _ptx_async  # noqa: E402, F401  (the bulk asynchronous copies
from . import ptx_tensor as _ptx_tensor  # noqa: E402, F401  (wgmma, tcgen05
