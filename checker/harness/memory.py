"""Where a test's locations live on the device: global cells, shared cells, virtual aliases,
tensor maps; cell sizing for bulk copies; which registers are 64-bit; what cannot be placed."""
from __future__ import annotations

from ..ast import Addr, Imm, LitmusTest, Reg
from .operands import WIDE


def locations(test: LitmusTest) -> tuple[list[str], list[str], dict[str, tuple[str, int]], dict]:
    """Global and shared location names (declared, then undeclared ones met in the code), and the
    virtual aliases: alias -> (location, mapping number; mapping 0 is the location's own)."""
    from .space import alias_roots
    decl = {m.name: m for m in test.memory}
    roots = alias_roots(test)
    aliases: dict[str, tuple[str, int]] = {}
    for name, root in roots.items():
        aliases[name] = (root, 1 + sum(1 for a in aliases.values() if a[0] == root))
    names = [m.name for m in test.memory]
    for t in test.threads:
        for i in t.code:
            for o in i.operands:
                if isinstance(o, Addr) and o.base not in decl and o.base not in names:
                    names.append(o.base)
    from .space import map_tables
    maps = map_tables(test)
    glob = [n for n in names if (n not in decl or decl[n].space not in ("shared", "tensor")) and n not in aliases
            and n not in maps]
    shared = [n for n in names if n in decl and decl[n].space == "shared" and n not in aliases and n not in maps]
    return glob, shared, aliases, decl


def memory_problems(test: LitmusTest) -> list[str]:
    out = []
    for m in test.memory:
        if m.alias_of:
            root = test.mem(m.alias_of)
            if root is not None and root.space == "shared" or m.space == "shared":
                out.append(f"'{m.name}' aliases shared memory, which cannot be mapped twice")
        if m.view or m.view_of:
            out.append(f"'{m.name}' is seen through the {m.view or 'texture/surface/constant'} proxy "
                       f"(ISCA'22 hypothetical): no PTX instruction reads a plain location that way")
        if m.tensormap is not None and m.space != "global":
            out.append(f"'{m.name}': a declared tensor map lives in global memory")
        if m.space not in ("global", "shared", "tensor"):      # tensor: checker.harness.tmem
            out.append(f"'{m.name}': state space '{m.space}' is not expressible")
        if m.mbarrier is not None and m.space != "shared":
            out.append(f"'{m.name}': an mbarrier must live in shared memory")
        if m.size is not None or m.box is not None:
            out.append(f"'{m.name}' declares its {'size' if m.size is not None else 'box'}: the harness places "
                       f"whole cells, not byte layouts")
    return out + layout_problems_of_bytes(test)


def layout_problems_of_bytes(test: LitmusTest) -> list[str]:
    """What the harness cannot place because it gives every location one cell: vector accesses,
    and a location its accesses cut into several byte ranges (docs/model.md#a15)."""
    from ..errors import CheckerError
    from ..isa.registry import lower

    out = [f"{t.name}: '{i.text}': vector accesses are not expressible (one cell per location)"
           for t in test.threads for i in t.code if i.family in ("ld", "st") and i.quals.get("vec")]
    try:
        es = lower(test)
    except CheckerError:
        return out                  # the model refuses it; the harness says so elsewhere
    out += [f"'{root}' is accessed at different byte ranges: the harness places whole cells"
            for root in sorted(es.compose)]
    return out


MAX_CELL_BYTES = 256        # a cell per location and instance must fit the device's shared memory


def bulk_sizing(test: LitmusTest) -> tuple[int, int, list[str]]:
    """(cell bytes, tx factor, problems). A cell is 16 bytes (bulk copies move >= 16 aligned
    bytes); a test written with smaller copy sizes has its byte counts scaled to match."""
    sizes = set()
    st_async = False
    for t in test.threads:
        for i in t.code:
            if i.op == "cp" and "bulk" in i.qualifiers and len(i.operands) > 2 and isinstance(i.operands[2], Imm):
                sizes.add(i.operands[2].value)
            if i.op in ("st", "red") and i.has("async"):
                st_async = True
    if not sizes:
        return 16, 1, []
    if len(sizes) > 1:
        return 16, 1, [f"bulk copies of different sizes {sorted(sizes)}: a cell has one size"]
    s = sizes.pop()
    if s <= 0:
        return 16, 1, [f"bulk copy size {s}"]
    if s % 16 == 0:
        if s > MAX_CELL_BYTES:
            return 16, 1, [f"bulk copy size {s}: cells over {MAX_CELL_BYTES} bytes, one per instance, do not fit "
                           "in shared memory (the harness does not scale large byte counts down yet)"]
        return s, 1, []
    if 16 % s == 0:
        if st_async:
            return 16, 1, ["st.async/red.async together with sub-16-byte bulk copies: tx counts cannot be scaled"]
        return 16, 16 // s, []
    return 16, 1, [f"bulk copy size {s} is neither a multiple nor a divisor of 16 bytes"]


def wide_regs(test: LitmusTest) -> dict[str, frozenset[str]]:
    out = {}
    for t in test.threads:
        wide = set()
        for i in t.code:
            dst = i.operands[0] if i.operands else None
            if not isinstance(dst, Reg):
                continue
            if i.op == "mbarrier" and i.qualifiers and i.qualifiers[0].startswith("arrive"):
                wide.add(dst.name)
            elif i.op in ("ld", "atom", "mov", "add", "sub", "mul", "and", "or", "xor", "not", "selp") \
                    and set(i.qualifiers) & WIDE:
                wide.add(dst.name)
            elif i.op == "mul" and "wide" in i.qualifiers and {"u32", "s32"} & set(i.qualifiers):
                wide.add(dst.name)              # mul.wide.u32: a 64-bit product of 32-bit operands
        out[t.name] = frozenset(wide)
    return out
