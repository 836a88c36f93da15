"""Lowering helpers shared by the instruction families: strength tags, the issue event and async
order of an asynchronous instruction, state-space checks, the CTA that performs an access (A2),
the restriction of a fence to the operations it covers (pfcover), atom/red arithmetic, and the
cells a .multicast::cluster operation reaches."""
from __future__ import annotations

from ..ast import Addr, Imm, Instr, Quals, Reg, cta_text
from ..model.builder import Builder, ThreadCtx, Unmodelled, UntypedUse
from ..model.values import ZERO, Bin, Const, Expr, Ite, binop, signed, wrap
from .table import SCOPE_TAG

# -- operand widths --------------------------------------------------------------------------

# The families whose source registers must have the size of the instruction type, and where
# those stand among the operands: the PTX ISA (Operand Type Information: an operand's type must
# be compatible with the instruction type, which needs the same size; Restricted Use of Sub-Word
# Sizes: only ld, st and cvt take wider registers, for convenience). ptxmc would
# compare, select or combine such a register's whole value, which is no value of the type:
# refused (docs/model.md#a16).
SAME_WIDTH = {"setp": slice(1, 3), "selp": slice(1, 3), "atom": slice(2, None), "red": slice(1, None)}


def same_width_sources(i: Instr) -> tuple[int | None, tuple]:
    """The size in bits every source register of `i` must have (None: no such rule for it), and
    those operands."""
    where = SAME_WIDTH.get(i.family)
    t = i.quals.get("type") if where is not None else None
    if not (isinstance(t, str) and t[1:].isdigit()):
        return None, ()
    return int(t[1:]), tuple(i.operands[where])


def width_mismatch(i: Instr, reg: str, have: int, bits: int, declared: bool = True) -> str:
    """The message for a source register `reg` of `have` bits where `i` takes `bits`."""
    t = i.quals["type"]
    wide = f"{i.op}.{i.quals['cmp']}.{t[0]}{have}" if i.family == "setp" else f"the .{t[0]}{have} type"
    if declared:
        return (f"%{reg} is a {have}-bit register, and .{t} takes {bits}-bit registers: PTX allows a register of "
                f"another size only to ld, st and cvt; use {wide}, or convert the value to a {bits}-bit register "
                f"with cvt first")
    return (f"{reg} holds a {have}-bit value, and .{t} takes {bits}-bit registers: PTX allows a register of another "
            f"size only to ld, st and cvt; use {wide}")


def note_narrow(ctx: ThreadCtx, op, bits: int) -> None:
    """Register `op` now holds a `bits`-bit value (bits < 32) that a typed load or cvt put in it,
    extended to 32 bits: in a thread that does not declare its registers, it may stand for a
    register of `bits` bits as well as for a 32-bit one (`ld.s16 %rs1` and `ld.s16 %r1` are both
    PTX), so an instruction of either size may read it (same_width)."""
    if isinstance(op, Reg):
        ctx.ext.setdefault("narrow", {})[op.name] = (bits, ctx.regs.get(op.name))


def sized(b: Builder, ctx: ThreadCtx, op, bits: int | None, fmt: str = "int") -> Expr:
    """The value of source operand `op` of an instruction of `bits`-bit type whose source
    registers are that size (same_width): a register ptxmc holds wider (a value narrower than 32
    bits is kept extended to 32) gives its low `bits` bits."""
    v = b.value(ctx, op, bits, fmt)
    have = ctx.formats.get(op.name, (None, fmt))[0] if isinstance(op, Reg) else None
    return wrap(v, bits) if bits is not None and have is not None and have > bits else v


def same_width(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """In a thread that does not declare its registers, each source register of `i` must hold a
    value as wide as `i`'s type: what ptxmc last put in it, or the narrower type of the load or
    cvt that put it there (note_narrow); a predicate's 0 or 1 fits any type. An untyped (exact)
    value must fit the type (negative only for a signed setp, atom or red), checked once the
    sizes of the locations it was read from are known (Builder.untyped_uses); one read from a
    location without a size is an abstract integer and fits any type. A thread that declares
    its registers is checked by the front end (checker.front.litmus)."""
    bits, ops = same_width_sources(i)
    if bits is None:
        return
    untyped = [op for op in ops if isinstance(op, Reg) and ctx.formats.get(op.name, (0,))[0] is None
               and not isinstance(ctx.regs.get(op.name), Unmodelled)]
    # the compare of an await written as its loop (checker.unfold.paths.await_loops, `__done` predicate)
    awaited = next((o.value for o in ops if isinstance(o, Imm) and o.value < 0), None) \
        if i.family == "setp" and getattr(i.operands[0], "name", "").startswith("__done") else None
    for op in untyped:
        negative = i.family != "selp" and i.quals["type"].startswith("s")
        name = ("%" if ctx.thread.declares_registers else "") + op.name
        b.untyped_uses.append(UntypedUse(name, ctx.regs[op.name], bits, negative, i.text, i.where, awaited))
    if ctx.thread.declares_registers:
        return
    narrow = ctx.ext.get("narrow", {})
    for op in ops:
        if isinstance(op, Reg) and op.name in ctx.formats:
            have = ctx.formats[op.name][0]
            if have is None or have == 1 or have == bits:
                continue
            n = narrow.get(op.name)
            if n is not None and n[0] == bits and n[1] is ctx.regs.get(op.name):
                continue
            raise ctx.error(width_mismatch(i, op.name, have, bits, declared=False))


# -- strength --------------------------------------------------------------------------------


def strength_tags(sem: str, scope: str | None) -> set[str]:
    """The tags of a memory operation with this semantics (weak, relaxed, volatile, mmio, acquire,
    release, acq_rel) and scope."""
    if sem == "weak":
        return {"WEAK", "GEN"}
    tags = {"STRONG", "GEN", SCOPE_TAG[scope or "gpu"]}
    tags |= {"relaxed": {"RLX"}, "volatile": {"RLX", "VOL"}, "mmio": {"RLX", "MMIO"},
             "acquire": {"ACQ"}, "release": {"REL"}, "acq_rel": set()}[sem]
    return tags


def access_tags(q: Quals) -> set[str]:
    """The strength tags of an ld/st from its validated qualifiers: .volatile and .mmio are
    relaxed at .sys scope (PTX ISA, Memory Consistency Model > Operation types)."""
    if q.get("mmio"):
        return strength_tags("mmio", "sys")
    if q["sem"] == "volatile":
        return strength_tags("volatile", "sys")
    return strength_tags(q["sem"], q["scope"])


# -- asynchronous instructions (A8) ----------------------------------------------------------

def label(i: Instr, what: str) -> str:
    return f"{i.text}  [{what}]"


def issue(b: Builder, ctx: ThreadCtx, i: Instr, tags=(), note: str = "issue") -> int:
    """The issue event of an asynchronous instruction, in the thread's program order."""
    return b.new_event(ctx, "I", set(tags), label=label(i, note))


def order(b: Builder, issue_event: int, *stages: list[int]) -> None:
    """aso: the issue event before every operation; each stage before the later stages."""
    evs = [e for st in stages for e in st]
    b.pairs["aso"].update((issue_event, e) for e in evs)
    for k, st in enumerate(stages):
        for later in stages[k + 1:]:
            b.pairs["aso"].update((a, c) for a in st for c in later)


# -- locations -------------------------------------------------------------------------------

def decl(b: Builder, name: str):
    """The declaration of the physical cell `name` stands for."""
    return b.test.mem(b.roots[name])


def check_space(b: Builder, ctx: ThreadCtx, op, space: str, role: str) -> None:
    """`op` must lie in `space` as seen from the executing thread: global, its own CTA's shared
    memory (shared::cta), shared memory in its cluster (shared::cluster), or another CTA's
    shared memory in its cluster (remote)."""
    if not isinstance(op, Addr) or op.base not in b.roots:
        raise ctx.error(f"expected an address operand for the {role}")
    d = decl(b, op.base)
    here = ctx.thread.position
    if space == "global":
        if d.space != "global":
            raise ctx.error(f"the {role} '{op.base}' must be global memory")
        return
    if d.space != "shared":
        raise ctx.error(f"the {role} '{op.base}' must be shared memory")
    if d.owner.cluster_key() != here.cluster_key():
        raise ctx.error(f"the {role} '{op.base}' is shared memory outside the executing cluster")
    own = d.owner.cta_key() == here.cta_key()
    if space == "shared::cta" and not own:
        raise ctx.error(f"the {role} '{op.base}' must be the executing CTA's shared memory (.shared::cta)")
    if space == "remote" and own:
        raise ctx.error(f"the {role} '{op.base}' must be the shared memory of another CTA of the cluster "
                        "(cp.async.bulk.shared::cluster.shared::cta is strictly remote)")


def performed_by_owner(b: Builder, ctx: ThreadCtx, e: int, dst: Addr) -> None:
    """A2: an access to another CTA's shared memory is performed by the CTA owning it."""
    d = decl(b, dst.base)
    if d.space == "shared" and d.owner.cta_key() != ctx.thread.position.cta_key():
        b.perf_cta[e] = d.owner.cta_key()


# -- restrictions: pfcover, computed when every event exists ---------------------------------

def restrict(b: Builder, fence: int, kind: str, arg=None) -> None:
    """Fence `fence` covers the memory operations selected by (kind, arg): ('all',),
    ('space', 'global' | 'shared::cta' | 'shared::cluster'), ('vloc', name) or ('events', eids)."""
    b.finalize("pfcover", _pfcover).setdefault("todo", []).append((fence, kind, arg))


def _pfcover(b: Builder) -> None:
    test = b.test
    mem = [e for e in b.events if e.is_memory]
    ctas = {t.name: t.position.cta_key() for t in test.threads}
    for fence, kind, arg in b.ext["pfcover"]["todo"]:
        if kind == "events":
            b.pairs["pfcover"].update((fence, e) for e in arg)
            continue
        for e in mem:
            if kind == "all":
                ok = True
            elif kind == "vloc":
                ok = e.vloc == arg
            elif arg == "global":
                ok = "GLOBAL" in e.tags
            elif arg == "shared::cluster":
                ok = "SHARED" in e.tags
            else:   # shared::cta: the shared memory of the fence's own CTA
                owner = test.mem(e.loc).owner if "SHARED" in e.tags else None
                ok = owner is not None and owner.cta_key() == ctas[b.events[fence].thread]
            if ok:
                b.pairs["pfcover"].add((fence, e.eid))


# -- atom / red arithmetic -------------------------------------------------------------------

def atom_value(op: str, old: Expr, args: list[Expr], bits: int | None = None, is_signed: bool = False) -> Expr:
    """The value an atom/red (or a reduction) of operation `op` writes, from the old value and its
    operands (PTX ISA, atom: exch, cas, add, inc, dec, min, max, and, or, xor). Typed (`bits`):
    on `bits`-bit patterns, wrapping around, min/max comparing signed values for a signed type;
    untyped: exact integers (bitwise operators on 32-bit patterns)."""
    x = args[0]
    if op == "exch":
        return x
    if op == "cas":
        # PTX: *a = (*a == b) ? c : *a -- a failed cas still writes (the old value).
        return Ite("==", old, x, args[1], old)
    if op == "inc":
        return Ite(">=", old, x, ZERO, Bin("add", old, Const(1)))
    if op == "dec":
        return Ite("==", old, ZERO, x, Ite(">", old, x, x, Bin("sub", old, Const(1))))
    if op in ("and", "or", "xor"):
        return binop(op, old, x, bits or 32)
    if op in ("min", "max") and bits is not None and is_signed:
        a, b = signed(old, bits), signed(x, bits)
        return wrap(Ite("<=" if op == "min" else ">=", a, b, a, b), bits)
    v = binop(op, old, x)
    return v if bits is None else wrap(v, bits)


# -- .multicast::cluster ---------------------------------------------------------------------

IM2COL = ("im2col", "im2col::w", "im2col::w::128")


def _mask_slot(i: Instr, q: Quals) -> int:
    if i.op == "tcgen05":
        return 1
    return 3 + (q.get("load_mode") in IM2COL) if "tensor" in i.qualifiers else 4


def cta_mask(i: Instr) -> int | None:
    """The ctaMask immediate of a .multicast::cluster instruction (None without .multicast)."""
    return i.operands[_mask_slot(i, i.quals)].value if i.quals.get("multicast") else None


def cta_mask_rule(i: Instr, q: Quals):
    """ctaMask names at least one CTA of a (16-CTA at most) cluster."""
    if not q.get("multicast"):
        return None
    mask = i.operands[_mask_slot(i, q)].value
    if not 0 < mask <= 0xFFFF:
        return f"ctaMask is a 16-bit mask naming at least one CTA of the cluster, not {mask}"
    return None


def cta_rank(pos) -> int:
    """A CTA's rank in its cluster (%cluster_ctarank, the bit of a ctaMask that names it): the N of
    gpuG.clusterK.ctaN; 0 in a launch without clusters (every CTA is a cluster of one)."""
    return pos.cta if pos.cluster is not None else 0


def cell_at_offset(b: Builder, name: str, cta: tuple) -> str | None:
    """The shared cell at the same CTA-relative offset as `name` in CTA `cta` (offset_of), or None."""
    d = decl(b, name)
    first = d.offset_of or d.name
    for m in b.test.memory:
        if (m.name == first or m.offset_of == first) and m.owner is not None and m.owner.cta_key() == cta:
            return m.name
    return None


def cluster_ctas(b: Builder, here) -> list[tuple]:
    """The CTAs of `here`'s cluster that the test names (threads and shared-memory owners)."""
    ctas = {t.position.cta_key() for t in b.test.threads} | \
        {m.owner.cta_key() for m in b.test.memory if m.owner is not None}
    return sorted(k for k in ctas if k[:2] == here.cluster_key()[:2])


def cells_in(b: Builder, ctx: ThreadCtx, cta: tuple, ops, who: str) -> tuple[Addr, ...]:
    """The cells at the offsets of `ops` in CTA `cta`; for a missing one the error "`who` has no
    cell at the offset of ..." (`who` names the CTA and why it is reached)."""
    cells = []
    for op in ops:
        cell = cell_at_offset(b, op.base, cta)
        if cell is None:
            first = decl(b, op.base).offset_of or op.base
            raise ctx.error(f"{who} has no cell at the offset of '{op.base}': declare one, e.g. NAME: "
                            f"{{space: shared, owner: {cta_text(cta)}, offset_of: {first}}}")
        cells.append(Addr(cell, op.offset))
    return tuple(cells)


def multicast_targets(b: Builder, ctx: ThreadCtx, mask: int | None, *ops: Addr) -> list[tuple[Addr, ...]]:
    """For each CTA that ctaMask names (by rank), the cells at the offsets of `ops` in that CTA;
    without a mask (no .multicast::cluster), [ops]. Bit N names ctaN of the issuer's cluster."""
    if mask is None:
        return [tuple(ops)]
    here = ctx.thread.position
    spelled = f"0b{mask:b}"
    ours = cluster_ctas(b, here) if here.cluster is not None else []
    named = []
    for rank in (n for n in range(16) if mask >> n & 1):
        if here.cluster is None:
            if rank:
                raise ctx.error(f"ctaMask {spelled} names CTA {rank} of the cluster, but in a launch without "
                                "clusters every CTA is a cluster of one: only bit 0 (the executing CTA) names a CTA")
            named.append((rank, here.cta_key()))
            continue
        cta = (here.gpu, here.cluster, rank)
        if cta not in ours:
            raise ctx.error(f"ctaMask {spelled} names {cta_text(cta)} (bit {rank}), which is not a CTA of "
                            f"this test's cluster (its CTAs: {', '.join(f'cta{k[2]}' for k in ours)})")
        named.append((rank, cta))
    return [cells_in(b, ctx, cta, ops, f"ctaMask {spelled} names {cta_text(cta)} (bit {rank}), which")
            for rank, cta in named]


# -- tensor-core operands --------------------------------------------------------------------

def own_cell(b: Builder, ctx: ThreadCtx, op, role: str, space: str, kind: str, hint: str, why: str) -> None:
    """`op` must be a cell of `space` (`kind`, in messages) owned by the executing CTA."""
    if not isinstance(op, Addr) or op.base not in b.roots:
        raise ctx.error(f"expected a declared location for the {role}")
    d = decl(b, op.base)
    if d is None or d.space != space:
        raise ctx.error(f"the {role} '{op.base}' must be {kind}{hint}")
    if d.owner.cta_key() != ctx.thread.position.cta_key():
        raise ctx.error(f"the {role} '{op.base}' is {kind} of another CTA: {why}")


def tmem_cell(b: Builder, ctx: ThreadCtx, op, role: str) -> None:
    """`op` must be a Tensor Memory cell of the executing CTA (.cta_group::1)."""
    own_cell(b, ctx, op, role, "tensor", "Tensor Memory",
             f": declare it {op.base}: {{space: tensor, owner: {ctx.thread.position.cta_text()}}}",
             "with .cta_group::1 a tcgen05 instruction accesses its own CTA's Tensor Memory")


def smem_matrix(b: Builder, ctx: ThreadCtx, op, role: str) -> None:
    """`op` must be a shared-memory cell of the executing CTA (a matrix descriptor's start address)."""
    own_cell(b, ctx, op, role, "shared", "shared memory",
             " (a matrix descriptor names a cell of the executing CTA's shared memory)",
             "a matrix descriptor addresses the executing CTA's shared memory")


def pred_value(b: Builder, ctx: ThreadCtx, op) -> Expr:
    """A predicate operand's truth as 0/1 (`!p` negated; a register never set is false)."""
    name = op.name
    v = b.value(ctx, Reg(name.lstrip("!")))
    if name.startswith("!"):
        return Ite("==", v, ZERO, Const(1), ZERO)
    return v if v == ZERO else Ite("!=", v, ZERO, Const(1), ZERO)
