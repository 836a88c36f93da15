"""`ptxmc import --from dat3m`: Dat3M's PTX litmus files (herd's column layout, header `PTX NAME`).

Accepted subset and how it maps (layout, placement and conditions: checker.convert.herdcommon):

  Dat3M                                  ptxmc
  P0@cta N,gpu G (thread header)         at: gpuG.ctaN (threads of one CTA in warps 0, 1, ...)
  x=V; (init)                            memory: x: V  (global memory)
  P0:r0=V; (init)                        mov r0, V at the start of P0 (dropped when V is 0 and
                                         the thread uses r0: registers start at 0)
  y @ generic aliases x;                 y: {alias_of: x}    (another virtual address of x)
  t @ texture|surface|constant aliases x t: {texture_of|surface_of|constant_of: x}
  ld r0, x / ld.weak r0, x               ld.weak r0, [x]   (Dat3M and PTX: no semantics is .weak)
  ld.relaxed|acquire.SCOPE r0, x         ld.relaxed|acquire.SCOPE r0, [x]
  st[.weak] x, v / st.relaxed|release.S  st.weak [x], v / st.relaxed|release.S [x], v
  tld / suld / cold r0, x  (.weak)       tld / suld / ldc r0, [x]   (ISCA'22 views, weak only)
  sust x, v  (.weak)                     sust [x], v
  atom.SEM.SCOPE.OP r, x, v[, w]         atom.SEM.SCOPE.OP r, [x], v[, w]  (OP add (also spelled
                                         plus), and, or, xor, exch, cas)
  red.SEM.SCOPE.OP x, v                  red.SEM.SCOPE.OP [x], v
  fence.sc|acq_rel.SCOPE                 fence.sc|acq_rel.SCOPE
  fence.proxy.alias|texture|surface|constant   the same PTX / ISCA'22 proxy fences
  bar.cta.sync a                         bar.cta.sync a  (every thread of the CTA takes part)
  bar.cta.arrive a                       bar.cta.arrive a, N  (N: the test's threads in the CTA,
                                         which is what an arrive without a count means)
  bar.cta.sync|arrive a, id[, count]     bar.cta.sync|arrive id[, count]  (a named barrier: a,
                                         Dat3M's instance, is dropped; id and count immediates)
  ld r0, v  (v a register or integer)    mov r0, v
  add|sub|mul r0, a, b                   add|sub|mul r0, a, b
  LC00: / goto LC00 / beq a, b, LC01     control flow: checker.convert.controlflow (refused
                                         today: ptxmc has no branches yet)
  exists / ~exists / forall / final C with default: [~]exists;   see herdcommon

Refused, with the reason: atom/red operations PTX does not have (sub, mul, div), red with
acquire semantics (checked by ptxmc's own instruction table, which also rejects every other
non-PTX qualifier), surface atomics (suatom, sured), div, barriers whose id or count is a
register, texture/surface/constant accesses with a semantics other than .weak, pointers (`x=&y`,
`P0:r0=&x`, a location stored as a value), `filter`, and anything else Dat3M's grammar does not
have.

Barriers (docs/model.md#a19): Dat3M gives its barriers its own semantics. A counted barrier lets
every thread that arrives through once `count` have arrived; a barrier without a count waits only
for the threads that reach it. Under the PTX text a generation of a counted barrier completes with
`count` arrivals and a later arrival waits for the next generation, and a barrier without a count
waits for every thread of the CTA that has not exited. A test whose barriers rely on Dat3M's
reading (more arrivals than the count; threads of one CTA that meet different barriers in an order
no thread's barriers are a prefix of) is converted with a note saying that under the PTX text it
may deadlock (barrier_notes). Expectations: Dat3M keeps the
verdicts of plain `exists`/`~exists`/`forall` files outside the file, so only the quantifier's
meaning is imported (`~exists C`: C forbidden; `forall C`: ~(C) forbidden; `exists C`: none,
recorded in the doc); `final C with default: exists;` states one.
"""
from __future__ import annotations

import re

from . import herdcommon as hc
from .herdfile import Piece, split
from .model import Code, Control, Item, TestIR, fail

_REG = re.compile(r"r\d+")
_INT = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|\d+)")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_VIEW_OPS = {"tld": "tld", "suld": "suld", "cold": "ldc"}
_ATOM_OPS = {"add": "add", "plus": "add", "and": "and", "or": "or", "xor": "xor", "exch": "exch", "cas": "cas"}
_BRANCHES = ("beq", "bne", "blt", "bgt", "ble", "bge")


def convert(text: str, path: str) -> TestIR:
    hf = split(text, path)
    if hf.arch.upper() != "PTX":
        fail(f"a Dat3M PTX litmus file starts with 'PTX NAME', not '{hf.arch}'", path, hf.line, hf.arch)
    names = hc.thread_names(hf, path)
    if any("@" not in c.text for c in hf.header):
        cell = next(c for c in hf.header if "@" not in c.text)
        fail("Dat3M places every thread in its header cell: P<N>@cta <N>,gpu <N>", path, cell.line, cell.text)
    at = hc.placements(hf, names, path)
    init = hc.initial_state(hf, names, path)
    if init.addresses:
        t, reg, loc, line, text = init.addresses[0]
        fail(f"{t}:{reg} holds the address of '{loc}': ptxmc values are integers, not pointers", path, line, text)
    memory = list(init.memory)
    declared = {n for n, _ in memory}
    cta_of = {n: at[n].split(".warp")[0] for n in names}
    cta_size = {n: sum(1 for m in names if cta_of[m] == cta_of[n]) for n in names}
    notes: list[str] = []
    bodies = {}
    for k, name in enumerate(names):
        items: list[Item] = []
        for row in hf.rows:
            items += _cell(row[k], path, cta_size[name], notes)
        bodies[name] = items
    notes += barrier_notes(bodies, cta_of)
    v = hc.verdicts(hf, names, path)
    wanted = hc.referenced_registers(v)
    cond_line = hf.post.condition.line if hf.post.condition else hf.line
    for name in names:
        want = {r for t, r in wanted if t == name}
        bodies[name] = hc.register_moves(init, name, hc.registers_used(bodies[name], declared), want, cond_line) \
            + bodies[name]
    return hc.assemble(hf, "dat3m", path, names, at, bodies, memory, v, sorted(set(notes)))


def _cell(cell: Piece, path: str, cta_size: int, notes: list[str]) -> list[Item]:
    items, text = hc.label_prefix(cell)
    text = text.strip().rstrip(";").strip()
    if not text:
        return items
    line = cell.line
    m = re.fullmatch(r"goto\s+([A-Za-z_]\w*)", text)
    if m:
        return items + [Control("jump", cell.text, line, m.group(1))]
    m = re.fullmatch(rf"({'|'.join(_BRANCHES)})\s+([^,]+),([^,]+),\s*([A-Za-z_]\w*)", text)
    if m:
        a, b = m.group(2).strip(), m.group(3).strip()
        if _kind(a) not in ("reg", "int") or _kind(b) not in ("reg", "int"):
            fail("a branch compares registers and integers", path, line, cell.text)
        return items + [Control("branch", cell.text, line, m.group(4), (m.group(1), a, b))]
    m = re.fullmatch(r"([A-Za-z_]\w*)((?:\.\w+)*)\s*(.*)", text)
    if m is None:
        fail("cannot read this instruction", path, line, cell.text)
    op, quals, args = m.group(1), [q for q in m.group(2).split(".") if q], m.group(3)
    ops = [a.strip() for a in args.split(",")] if args.strip() else []
    return items + [Code(_translate(op, quals, ops, path, line, cell.text, cta_size, notes), line, cell.text)]


def _kind(o: str) -> str:
    if _REG.fullmatch(o):
        return "reg"
    if _INT.fullmatch(o):
        return "int"
    if _IDENT.fullmatch(o):
        return "loc"
    return "?"


def _translate(op, quals, ops, path, line, text, cta_size, notes) -> str:
    def need(n: int, shape: str):
        if len(ops) != n or any(_kind(o) == "?" for o in ops):
            fail(f"expected {shape}", path, line, text)

    def value(o: str) -> str:
        if _kind(o) == "loc":
            fail(f"'{o}' is a location used as a value: ptxmc values are integers, not pointers", path, line, text)
        return o

    q = "".join("." + x for x in quals)
    if op in ("ld", "tld", "suld", "cold"):
        need(2, f"{op} REGISTER, LOCATION")
        dst, src = ops
        if _kind(dst) != "reg":
            fail(f"the destination of {op} must be a register", path, line, text)
        if _kind(src) != "loc":
            if op != "ld":
                fail(f"{op} reads a location", path, line, text)
            if quals:
                notes.append(f"'{text.strip()}' (a constant or register, not a location) is a register move")
            return f"mov {dst}, {src}"
        if op != "ld":
            if quals not in ([], ["weak"]):
                fail(f"{op}{q}: ptxmc models texture/surface/constant accesses (ISCA'22 hypothetical proxies) "
                     "as weak accesses only", path, line, text)
            return f"{_VIEW_OPS[op]} {dst}, [{src}]"
        return f"ld{q or '.weak'} {dst}, [{src}]"
    if op in ("st", "sust"):
        need(2, f"{op} LOCATION, VALUE")
        loc, val = ops
        if _kind(loc) != "loc":
            fail(f"{op} writes a location", path, line, text)
        if op == "sust":
            if quals not in ([], ["weak"]):
                fail(f"sust{q}: ptxmc models surface accesses (ISCA'22 hypothetical proxy) as weak only",
                     path, line, text)
            return f"sust [{loc}], {value(val)}"
        return f"st{q or '.weak'} [{loc}], {value(val)}"
    if op in ("suatom", "sured"):
        fail(f"{op}: surface atomics are not modelled by ptxmc", path, line, text)
    if op in ("atom", "red"):
        if not quals:
            fail(f"{op} needs an operation", path, line, text)
        *sem_scope, aop = quals
        if aop not in _ATOM_OPS:
            fail(f"{op}.{aop}: not a PTX atomic operation (PTX has add, and, or, xor, exch, cas, inc, dec, "
                 "min, max)", path, line, text)
        ptx_op = ".".join([op] + sem_scope + [_ATOM_OPS[aop]])
        if op == "atom":
            n = 4 if aop == "cas" else 3
            need(n, f"atom REGISTER, LOCATION, VALUE{', VALUE' if n == 4 else ''}")
            if _kind(ops[0]) != "reg" or _kind(ops[1]) != "loc":
                fail("atom REGISTER, LOCATION, VALUE...", path, line, text)
            return f"{ptx_op} {ops[0]}, [{ops[1]}], " + ", ".join(value(o) for o in ops[2:])
        need(2, "red LOCATION, VALUE")
        if _kind(ops[0]) != "loc":
            fail("red LOCATION, VALUE", path, line, text)
        return f"{ptx_op} [{ops[0]}], {value(ops[1])}"
    if op == "fence":
        if ops:
            fail("fence takes no operands", path, line, text)
        return f"fence{q}"
    if op == "bar":
        if quals[:1] != ["cta"] or len(quals) != 2 or quals[1] not in ("sync", "arrive"):
            fail("expected bar.cta.sync ID or bar.cta.arrive ID", path, line, text)
        if not 1 <= len(ops) <= 3:
            fail(f"a barrier with {len(ops)} operands: Dat3M's is bar.cta.sync|arrive INSTANCE[, ID[, COUNT]]",
                 path, line, text)
        if any(_kind(o) != "int" for o in ops):
            fail("a barrier id or count in a register: ptxmc's barriers take immediates", path, line, text)
        bid = ops[0] if len(ops) == 1 else ops[1]
        if len(ops) == 3:
            return f"bar.cta.{quals[1]} {bid}, {ops[2]}"
        if quals[1] == "arrive":
            notes.append(f"'{text.strip()}': an arrive without a count waits for every thread of the CTA, "
                         f"written bar.cta.arrive {bid}, {cta_size}")
            return f"bar.cta.arrive {bid}, {cta_size}"
        return f"bar.cta.sync {bid}"
    if op in ("add", "sub", "mul"):
        need(3, f"{op} REGISTER, VALUE, VALUE")
        if _kind(ops[0]) != "reg":
            fail(f"the destination of {op} must be a register", path, line, text)
        return f"{op}{q} {ops[0]}, {value(ops[1])}, {value(ops[2])}"
    if op == "div":
        fail("div is not among ptxmc's register instructions (mov, add, sub, mul, and, or, xor)", path, line, text)
    fail(f"unknown Dat3M PTX instruction '{op}{q}'", path, line, text)


_BAR = re.compile(r"bar\.cta\.(sync|arrive) (\d+)(?:, (\d+))?")


def barrier_notes(bodies: dict[str, list[Item]], cta_of: dict[str, str]) -> list[str]:
    """Notes for the barriers whose Dat3M reading differs from the PTX text's (module docstring):
    a counted barrier that more threads arrive at than its count, and, in one CTA, barriers without
    a count met in orders that are not prefixes of one another (or inside control flow, where the
    order is decided at run time)."""
    out = []
    for cta in sorted(set(cta_of.values())):
        threads = [t for t in bodies if cta_of[t] == cta]
        seqs = {}
        counted: dict[tuple[str, str], list[str]] = {}
        flow = set()
        for t in threads:
            seq = []
            for item in bodies[t]:
                if isinstance(item, Control):
                    flow.add(t)
                m = _BAR.fullmatch(item.text) if isinstance(item, Code) else None
                if m is None:
                    continue
                if m.group(3) is not None and not (m.group(1) == "arrive" and int(m.group(3)) == len(threads)):
                    counted.setdefault((m.group(2), m.group(3)), []).append(t)
                else:
                    seq.append(m.group(2))
            if seq:
                seqs[t] = seq
        for (bid, count), who in sorted(counted.items()):
            if len(who) > int(count):
                out.append(f"barrier {bid} with count {count} in {cta}: {len(who)} arrivals ({', '.join(who)}). "
                           f"Dat3M lets every thread that arrives through once {count} have arrived; under the PTX "
                           f"text a generation completes with {count} arrivals and a later arrival waits for the "
                           "next one (docs/model.md#a19), so this test may deadlock under ptxmc where Dat3M "
                           "finds none")
        orders = sorted(seqs.items())
        clash = [(a, b) for i, (a, x) in enumerate(orders) for b, y in orders[i + 1:]
                 if x[:len(y)] != y[:len(x)]]
        looped = sorted(t for t in seqs if t in flow)
        if clash or (looped and len(seqs) > 1):
            a, b = clash[0] if clash else (looped[0], next(t for t in sorted(seqs) if t != looped[0]))
            why = (f"{a} meets barriers {' '.join(seqs[a])} and {b} meets {' '.join(seqs[b])}" if clash else
                   f"{a} meets its barriers inside control flow")
            out.append(f"barriers without a count in {cta}: {why}. Dat3M's barrier without a count waits only for "
                       "the threads that reach it; under the PTX text it waits for every thread of the CTA that "
                       "has not exited (docs/model.md#a19), so this test may deadlock under ptxmc where Dat3M "
                       "finds none")
    return out
