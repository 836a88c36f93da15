"""`ptxmc import --from herd`: litmus files in herd's own layout whose instructions are real PTX.

Accepted subset (layout, placement, initial state and conditions: checker.convert.herdcommon):

- Header `PTX NAME` (what `ptxmc export --to herd` writes) or `GPU_PTX NAME` (herd7's GPU
  dialect). Every instruction cell is PTX as ptxmc accepts it (checker.isa): `ld.acquire.gpu r0,
  [x]`, `st.relaxed.cta.global [x], 1`, `atom.add r0, [x], 1`, `fence.sc.gpu`, `membar.gl`,
  `bar.sync 0`, `mov`/`add`/..., proxy fences, async copies; PTX's defaults apply (a bare `ld`
  is .weak, `atom` .relaxed.gpu), ptxmc's await (`== v`) included. Instructions ptxmc rejects
  are reported with its message and the source line.
- Placement: `P0@cta N,gpu G[,cluster K][,warp W]` in the thread header, or herd's `scopeTree`.
- herd's memory map after the condition: `x: global` (the default) or `x: shared`, which becomes
  the shared memory of the one CTA whose threads access x (herd gives each CTA its own copy of a
  shared location; accesses from several CTAs are refused).
- herd's registers holding addresses: `0:r1=x` in the initial state with `[r1]` operands is
  the constant address x (`[x]`); if the code writes r1 or uses it as a value, the address
  depends on the execution and the test is refused.
- Cache operators on ld/st (`.ca .cg .cs .lu .cv .wb .wt`) are dropped, with a note: PTX treats
  them as performance hints that do not change the memory consistency behaviour.
- Labels, `bra`, guards `@p`/`@!p` and `setp`: control flow, checker.convert.controlflow
  (refused today).
- Expectations: `~exists C` forbids C, `forall C` forbids ~(C), `exists C` states no verdict;
  `(* ptxmc: allowed|forbidden: C *)` comments (written by ptxmc export) state them exactly.
"""
from __future__ import annotations

import re

from . import herdcommon as hc
from .herdfile import Piece, split
from .model import Code, Control, Item, TestIR, fail

CACHE_OPS = ("ca", "cg", "cs", "lu", "cv", "wb", "wt")
_OPCODE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\.[^\s.\[{]+)*)(.*)", re.S)


def convert(text: str, path: str) -> TestIR:
    hf = split(text, path)
    if hf.arch not in ("PTX", "GPU_PTX"):
        fail(f"a PTX litmus file starts with 'PTX NAME' or 'GPU_PTX NAME', not '{hf.arch}'", path, hf.line, hf.arch)
    names = hc.thread_names(hf, path)
    at = hc.placements(hf, names, path)
    init = hc.initial_state(hf, names, path)
    v = hc.verdicts(hf, names, path)
    addresses = {(t, reg): (loc, line) for t, reg, loc, line, _ in init.addresses}
    wanted = hc.referenced_registers(v)
    for (t, reg), (loc, line) in addresses.items():
        if (t, reg) in wanted:
            fail(f"the condition names {t}:{reg}, which holds the address of '{loc}': ptxmc values are "
                 "integers, not pointers", path, line, f"{t}:{reg}={loc}")
    notes: set[str] = set()
    bodies: dict[str, list[Item]] = {}
    for k, name in enumerate(names):
        regs = {reg: loc for (t, reg), (loc, _) in addresses.items() if t == name}
        notes.update(f"{name}:{reg} holds the address of {loc}: [{reg}] is written [{loc}]"
                     for reg, loc in regs.items())
        items: list[Item] = []
        for row in hf.rows:
            items += _cell(row[k], regs, path, notes)
        _check_address_registers(items, regs, path)
        bodies[name] = items
    memory = list(init.memory)
    declared = {n for n, _ in memory}
    for piece in hf.post.memory_map:
        memory = _map_entry(piece, memory, declared, names, at, bodies, path)
    declared = {n for n, _ in memory}
    cond_line = hf.post.condition.line if hf.post.condition else hf.line
    for name in names:
        used = hc.registers_used(bodies[name], declared)
        want = {r for t, r in wanted if t == name}
        bodies[name] = hc.register_moves(init, name, used, want, cond_line) + bodies[name]
    return hc.assemble(hf, "herd", path, names, at, bodies, memory, v, sorted(notes))


def _cell(cell: Piece, regs: dict[str, str], path: str, notes: set[str]) -> list[Item]:
    items, text = hc.label_prefix(cell)
    text = text.strip().rstrip(";").strip()
    if not text:
        return items
    if text.startswith("@"):                 # a guard: the instruction it guards, translated, behind it
        guard, _, rest = text.partition(" ")
        inner = _cell(Piece(cell.line, rest), regs, path, notes)[-1]
        body = f"bra {inner.target}" if isinstance(inner, Control) else inner.text
        return items + [Code(f"{guard} {body}", cell.line, cell.text)]
    m = re.fullmatch(r"bra(?:\.uni)?\s+([A-Za-z_]\w*)", text)
    if m:
        return items + [Control("jump", cell.text, cell.line, m.group(1))]
    m = _OPCODE.fullmatch(text)
    if m is None:
        fail("cannot read this instruction", path, cell.line, cell.text)
    op, quals, rest = m.group(1), [q for q in m.group(2).split(".") if q], m.group(3)
    if op in ("ld", "st"):
        dropped = [q for q in quals if q in CACHE_OPS]
        if dropped:
            notes.add(f"cache operator{'s' if len(dropped) > 1 else ''} {', '.join('.' + q for q in dropped)} "
                      "dropped: PTX treats cache operators as performance hints that do not change the memory "
                      "consistency behaviour")
            quals = [q for q in quals if q not in CACHE_OPS]
    for reg, loc in regs.items():
        rest = re.sub(rf"\[\s*%?{re.escape(reg)}\s*(?=[\]+-])", f"[{loc}", rest)
    return items + [Code(op + "".join("." + q for q in quals) + rest, cell.line, cell.text)]


def _check_address_registers(items: list[Item], regs: dict[str, str], path: str) -> None:
    """An address register may appear only inside brackets (resolved above): anything else writes
    it or uses its value, and the address would depend on the execution."""
    for it in items:
        if not isinstance(it, Code):
            continue
        outside = re.sub(r"\[[^\]]*\]", "", it.text)
        for reg, loc in regs.items():
            if re.search(rf"(?<![\w.$%])%?{re.escape(reg)}\b", outside):
                fail(f"{reg} holds the address of '{loc}' and this instruction writes it or uses it as a value: "
                     "the address would depend on the execution (address dependencies are not expressible "
                     "in ptxmc)", path, it.line, it.original)


def _bases(items: list[Item]) -> set[str]:
    from ..errors import LitmusError
    from ..isa.syntax import address_bases, parse

    out = set()
    for it in items:
        if isinstance(it, Code):
            try:
                out |= set(address_bases(parse(it.text, None)))
            except LitmusError:
                pass
    return out


def _map_entry(piece: Piece, memory, declared, names, at, bodies, path):
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*:\s*(global|shared)", piece.text)
    if m is None:
        fail("a memory-map entry is 'x: global' or 'x: shared'", path, piece.line, piece.text)
    loc, space = m.groups()
    if space == "global":
        return memory if loc in declared else memory + [(loc, 0)]
    ctas = sorted({at[n].split(".warp")[0] for n in names if loc in _bases(bodies[n])})
    if len(ctas) > 1:
        fail(f"'{loc}' is shared memory accessed from {len(ctas)} CTAs ({', '.join(ctas)}): herd gives each CTA "
             "its own copy, which ptxmc writes as one location per CTA; split it by hand", path, piece.line, piece.text)
    if not ctas:
        fail(f"'{loc}' is shared memory that no thread accesses: its CTA is unknown", path, piece.line, piece.text)
    init = dict(memory).get(loc, 0)
    long = {"space": "shared", "owner": ctas[0], "init": init}
    return [(n, long if n == loc else v) for n, v in memory] if loc in declared else memory + [(loc, long)]
