"""The core PTX instructions: ld, st, atom, red, fence (memory fences and the restricted
fences, A10), membar, bar / barrier (CTA barriers), bar.warp.sync, and the register operations
mov, add, sub, mul, and, or, xor.

PTX ISA 9.4, "Memory Consistency Model" (operation types, morally strong operations, release and
acquire patterns), "ld", "st", "atom", "red", "membar/fence", "bar/barrier", "bar.warp.sync".

Events: ld is a read and st a write, weak by default (.weak), strong with .relaxed/.acquire/
.release and a scope; .volatile and .mmio are relaxed at .sys. atom and red are a read and a
write linked by rmw (default .relaxed.gpu). A fence is an F event (generic proxy, A3); membar is
fence.sc at its level. A CTA barrier use is a B event; the k-th use of barrier b by each thread
of a CTA joins instance k (`syncbar` between its participants), and a count must match the
threads that take part. bar.warp.sync is a B event synchronizing the lanes of its mask
(`syncwarp`). Register operations compute value expressions (no events).
"""
from __future__ import annotations

from ..ast import Imm, Instr, Quals
from ..errors import LitmusError
from ..model.builder import Builder, ThreadCtx, Unmodelled
from ..model.values import ReadVal, binop
from .common import access_tags, atom_value, restrict, strength_tags
from .table import (ATOM_OPS, ATOM_TYPES, INT_TYPES, LDST_TYPES, SCOPE_TAG, SCOPES, SPACES, Family, Group,
                    Slot, drop, sig, swap_qualifier)

_SCOPE = Group("scope", SCOPES)
_SPACE = Group("space", SPACES)
_VECTOR = {v: "vector accesses (.v2, .v4, .v8) are not supported: use one access per location"
           for v in ("v2", "v4", "v8")}


# -- rules (each returns an error message or None) ------------------------------------------

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



# -- lowering ---------------------------------------------------------------------------------

def lower_ld(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    b.read(ctx, access_tags(i.quals), i.operands[1], i.operands[0])


def lower_st(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    b.write(ctx, access_tags(i.quals), i.operands[0], b.value(ctx, i.operands[1]))


def _lower_rmw(b: Builder, ctx: ThreadCtx, i: Instr, is_red: bool) -> None:
    q = i.quals
    sem = q["sem"]
    ops = list(i.operands)
    dst = None if is_red else ops.pop(0)
    addr, args = ops[0], [b.value(ctx, a) for a in ops[1:]]
    base = strength_tags("relaxed", q["scope"]) - ({"RLX"} if sem != "relaxed" else set())
    kind = {"ATOM"} | ({"RED"} if is_red else set())
    rtags = base | kind | ({"ACQ"} if sem in ("acquire", "acq_rel") else set())
    wtags = base | kind | ({"REL"} if sem in ("release", "acq_rel") else set())
    r = b.read(ctx, rtags, addr, None if is_red else dst)
    w = b.write(ctx, wtags, addr, atom_value(q["op"], ReadVal(r), args))
    b.pairs["rmw"].add((r, w))


def lower_atom(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _lower_rmw(b, ctx, i, is_red=False)


def lower_red(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    _lower_rmw(b, ctx, i, is_red=True)


FENCE_TAG = {"sc": "SC", "acq_rel": "ACQ_REL", "acquire": "ACQ", "release": "REL"}


def lower_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """A memory fence; with .sync_restrict (A10), a release (acquire) fence at .cluster scope
    whose effect is restricted to the operations on the executing CTA's .shared::cta cells (every
    .shared::cluster cell)."""
    q = i.quals
    if q["restrict"]:
        f = b.new_event(ctx, "F", {"STRONG", "GEN", "CLUSTER", "RESTRICT", FENCE_TAG[q["sem"]]})
        restrict(b, f, "space", q["restrict"].split("::", 1)[1])
        return
    b.new_event(ctx, "F", {FENCE_TAG[q["sem"]], "STRONG", "GEN", SCOPE_TAG[q["scope"]]})


def lower_membar(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """membar.{cta,gl,sys} is fence.sc.{cta,gpu,sys}."""
    scope = {"cta": "cta", "gl": "gpu", "sys": "sys"}[i.quals["level"]]
    b.new_event(ctx, "F", {"SC", "STRONG", "GEN", SCOPE_TAG[scope]})


def lower_bar(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """A use of a CTA barrier: a B event (BAR_SYNC / BAR_ARRIVE / BAR_RED), matched with the other
    threads' uses once every thread is lowered (_match_barriers)."""
    kind = i.quals["mode"]
    ops = list(i.operands)
    if kind == "red":
        dst = ops.pop(0)
        b.set_reg(ctx, dst, Unmodelled("the result of bar.red, which is not modelled"))
        ops = ops[:-1]      # the predicate operand
    bid = ops[0].value if isinstance(ops[0], Imm) else 0
    count = ops[1].value if len(ops) > 1 and isinstance(ops[1], Imm) else None
    e = b.new_event(ctx, "B", {"BAR_" + kind.upper()})
    uses = b.finalize("bar", _match_barriers).setdefault("cta", {})
    uses.setdefault((ctx.thread.position.cta_key(), bid), {}).setdefault(ctx.thread.name, []).append((e, i, count))


def lower_bar_warp(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """bar.warp.sync: a B event joining the lanes of its mask (the litmus threads placed in this
    warp, in order)."""
    mask = i.operands[0].value if isinstance(i.operands[0], Imm) else 0xFFFFFFFF
    pos = ctx.thread.position
    lanes = [t.name for t in b.test.threads if t.position == pos]
    lane = lanes.index(ctx.thread.name)
    if not mask >> lane & 1:
        raise ctx.error(f"bar.warp.sync: this thread (lane {lane}) is not in the mask {mask:#x}")
    e = b.new_event(ctx, "B", {"BAR_WARP"})
    uses = b.finalize("bar", _match_barriers).setdefault("warp", {})
    uses.setdefault((pos, mask), {}).setdefault(ctx.thread.name, []).append((e, lane))


def _match_barriers(b: Builder) -> None:
    """Static instance matching: the k-th use of barrier id b by each thread of a CTA joins
    instance k. Counts must agree with the threads that take part, or it could never complete."""
    test = b.test
    state = b.ext["bar"]
    for (cta, bid), per_thread in sorted(state.get("cta", {}).items(), key=lambda kv: repr(kv[0])):
        ctas_threads = [t.name for t in test.threads if t.position.cta_key() == cta]
        depth = max(len(v) for v in per_thread.values())
        for k in range(depth):
            members = [(t, per_thread[t][k]) for t in per_thread if len(per_thread[t]) > k]
            for t, (eid, instr, count) in members:
                expected = count if count is not None else len(ctas_threads)
                who = ", ".join(sorted(m for m, _ in members))
                if expected > len(members):
                    raise LitmusError(
                        f"barrier {bid} (use {k + 1}) expects {expected} threads but only {who} "
                        f"take part: it would never complete", instr.where)
                if expected < len(members):
                    raise LitmusError(
                        f"barrier {bid} (use {k + 1}) expects {expected} threads but {len(members)} take "
                        f"part ({who}): which of them complete it together is decided at run time, "
                        f"which ptxmc does not model; give each group its own barrier", instr.where)
            for _, (x, _, _) in members:
                for _, (y, _, _) in members:
                    if x != y and b.events[y].tags & {"BAR_SYNC", "BAR_RED"}:
                        b.pairs["syncbar"].add((x, y))
    for key, per_thread in sorted(state.get("warp", {}).items(), key=lambda kv: repr(kv[0])):
        depth = max(len(v) for v in per_thread.values())
        for k in range(depth):
            members = [per_thread[t][k][0] for t in per_thread if len(per_thread[t]) > k]
            b.pairs["syncwarp"].update((x, y) for x in members for y in members if x != y)


def lower_alu(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    dst, *srcs = i.operands
    vals = [b.value(ctx, s) for s in srcs]
    b.set_reg(ctx, dst, vals[0] if i.op == "mov" else binop(i.op, vals[0], vals[1]))


def weaken_fence(i: Instr, fresh=None):
    """A fence is removed, and fence.sc also weakened to fence.acq_rel."""
    yield ()
    if "sc" in i.qualifiers:
        yield (swap_qualifier(i, "sc", "acq_rel"),)


# -- the families ----------------------------------------------------------------------------

_LD_ST_RULES = (_mmio_form, _weak_takes_no_scope, _strong_needs_scope)

FAMILIES = (
    Family("ld",
           groups=(Group("sem", ("weak", "relaxed", "acquire", "volatile"), default="weak"),
                   Group("mmio", ("mmio",)), _SCOPE, _SPACE, Group("type", LDST_TYPES)),
           operands=sig("d:reg, a:addr"), rules=_LD_ST_RULES, space="space", lower=lower_ld,
           rejects={**_VECTOR, **dict.fromkeys(("release", "acq_rel", "sc"),
                    "ld.release does not exist: a load is .weak, .relaxed, .acquire, .volatile or .mmio")}),
    Family("st",
           groups=(Group("sem", ("weak", "relaxed", "release", "volatile"), default="weak"),
                   Group("mmio", ("mmio",)), _SCOPE, _SPACE, Group("type", LDST_TYPES)),
           operands=sig("a:addr, b:val"), rules=_LD_ST_RULES, space="space", lower=lower_st,
           rejects={**_VECTOR, **dict.fromkeys(("acquire", "acq_rel", "sc"),
                    "st.acquire does not exist: a store is .weak, .relaxed, .release, .volatile or .mmio")}),
    Family("atom",
           groups=(Group("sem", ("relaxed", "acquire", "release", "acq_rel"), default="relaxed"),
                   Group("scope", SCOPES, default="gpu"), _SPACE,
                   Group("op", ATOM_OPS, required=True), Group("type", ATOM_TYPES)),
           operands=lambda q: sig("d:reg, a:addr, b:val" + (", c:val" if q["op"] == "cas" else "")),
           rules=(_atomic_type,), space="space", lower=lower_atom,
           rejects={**_VECTOR, **dict.fromkeys(("weak", "volatile", "mmio", "sc"),
                    "atom takes only .relaxed, .acquire, .release or .acq_rel")}),
    Family("red",
           groups=(Group("sem", ("relaxed", "release"), default="relaxed"),
                   Group("scope", SCOPES, default="gpu"), _SPACE,
                   Group("op", tuple(o for o in ATOM_OPS if o not in ("exch", "cas")), required=True),
                   Group("type", ATOM_TYPES)),
           operands=sig("a:addr, b:val"), rules=(_atomic_type,), space="space", lower=lower_red,
           rejects={**_VECTOR,
                    **dict.fromkeys(("acquire", "acq_rel", "weak", "volatile", "mmio", "sc"),
                                    "red takes only .relaxed or .release"),
                    **dict.fromkeys(("exch", "cas"), "red has no .exch or .cas: use atom")}),
    Family("fence",
           groups=(Group("sem", ("sc", "acq_rel", "acquire", "release"), default="acq_rel"),
                   # restricted fences (PTX 8.6): the effect is limited to one state space (docs/model.md#a10)
                   Group("restrict", ("sync_restrict::shared::cta", "sync_restrict::shared::cluster")),
                   Group("scope", SCOPES, required=True)),
           rules=(_restricted_fence,), lower=lower_fence, weaken=weaken_fence,
           rejects={**dict.fromkeys(("relaxed", "weak"), "fence takes .sc, .acq_rel, .acquire or .release"),
                    "gl": "fence scopes are .cta, .cluster, .gpu and .sys (.gl is membar's)",
                    "proxy": "a proxy fence is written fence.proxy.KIND (.proxy comes first)",
                    "mbarrier_init": "write fence.mbarrier_init.release.cluster (.mbarrier_init comes first)"}),
    Family("membar",
           groups=(Group("level", ("cta", "gl", "sys"), required=True),), lower=lower_membar, weaken=drop,
           rejects={"gpu": "membar levels are .cta, .gl and .sys (membar.gl is fence.sc.gpu)",
                    "cluster": "membar has no .cluster level: use fence.sc.cluster",
                    "proxy": "a proxy fence is written membar.proxy.KIND (.proxy comes first)"}),
    Family("bar", groups=_BAR_GROUPS, operands=_bar_operands, rules=(_barrier_form,), lower=lower_bar, weaken=drop,
           rejects={"aligned": "bar takes no .aligned (bar.sync is barrier.sync.aligned)"}),
    Family("barrier", groups=_BAR_GROUPS + (Group("aligned", ("aligned",)),),
           operands=_bar_operands, rules=(_barrier_form,), lower=lower_bar, weaken=drop,
           rejects={"cluster": "a cluster barrier is written barrier.cluster.arrive / barrier.cluster.wait"}),
    Family("bar.warp", groups=(Group("mode", ("sync",), required=True),), operands=sig("membermask:val"),
           lower=lower_bar_warp, weaken=drop),
    Family("mov", groups=(Group("type", ("pred", "b16", "b32", "b64") + INT_TYPES + ("f32", "f64")),),
           operands=sig("d:reg, a:val"), lower=lower_alu),
    *(Family(op, groups=(Group("type", INT_TYPES + ("f32", "f64")),), operands=sig("d:reg, a:val, b:val"),
             lower=lower_alu)
      for op in ("add", "sub")),
    Family("mul", groups=(Group("mode", ("lo",)), Group("type", INT_TYPES + ("f32", "f64"))),
           operands=sig("d:reg, a:val, b:val"), lower=lower_alu,
           rejects=dict.fromkeys(("hi", "wide"), "mul.hi and mul.wide are not supported (use mul.lo)")),
    *(Family(op, groups=(Group("type", ("pred", "b16", "b32", "b64")),), operands=sig("d:reg, a:val, b:val"),
             lower=lower_alu)
      for op in ("and", "or", "xor")),
)
