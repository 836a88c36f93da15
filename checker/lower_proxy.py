"""Lowering of the proxy instructions (issue 3): proxy fences, tensor-map instructions and the
ISCA'22 hypothetical texture/surface/constant accesses. Registers itself into checker.lower's
LOWER and FENCE_VARIANTS on import. The model that gives these tags their meaning is the
"Proxies" part of axioms/ptx.cat; here only PTX is turned into events and tags.

Events and tags:
- every proxy fence is a fence event (F) of the generic proxy (GEN, A3), tagged with the proxies
  it orders against the generic proxy (PF_ALIAS, PF_ASYNC, PF_TMAP, PF_TEX, PF_SUR, PF_CON);
  the uni-directional `to_proxy::from_proxy` forms are also PF_UNI, and the `::read` form PF_READ;
  release/acquire forms are strong fences with REL/ACQ and their scope, like fence.release/acquire;
- a restriction (state space, address operand) becomes `pfcover` edges from the fence to the
  memory operations it covers, computed once every event exists;
- `tensormap.replace` is a weak generic write of the whole tensor map: its abstract value;
- `tensormap.cp_fenceproxy` is a weak generic read of [src] and a weak generic write of [dst]
  (value copied), then a uni-directional generic->tensormap release proxy fence covering [dst];
- tld / suld / sust / ldc are weak accesses through a declared view, in the TEX / SUR / CON proxy,
  at the virtual address of the viewed location (A4). Any test that uses them or their fences
  carries a note in its result (A11).
"""
from __future__ import annotations

from . import ptx
from .ast import Addr, Instr
from .lower import FENCE_VARIANTS, LOWER, SCOPES, Builder, ThreadCtx, lower_membar
from .model.values import ReadVal

PROXY_TAG = {"alias": "PF_ALIAS", "async": "PF_ASYNC", "async::generic": "PF_ASYNC",
             "tensormap::generic": "PF_TMAP", "texture": "PF_TEX", "surface": "PF_SUR", "constant": "PF_CON"}
ACCESS_TAG = {"texture": "TEX", "surface": "SUR", "constant": "CON"}
SEM_TAG = {"release": "REL", "acquire": "ACQ"}
# restriction of a fence -> the state space of the objects it covers
RESTRICT_SPACE = {"sync_restrict::shared::cta": "shared::cta", "sync_restrict::shared::cluster": "shared::cluster",
                  "sync_restrict::shared::cluster::read": "shared::cluster"}


def hypothetical(b: Builder, proxy: str, what: str) -> None:
    """Record that the test uses an ISCA'22 hypothetical proxy (A11): the result carries one
    note naming every such proxy and instruction it uses."""
    used = b.ext.setdefault("hypothetical", {})
    if not used:
        b.finalizers.append(_hypothetical_note)
    used.setdefault(proxy, [])
    if what not in used[proxy]:
        used[proxy].append(what)


def _hypothetical_note(b: Builder) -> None:
    used = "; ".join(f"{p}: {', '.join(whats)}" for p, whats in b.ext["hypothetical"].items())
    b.notes.append(f"ISCA'22 hypothetical proxies ({used}): not part of the PTX ISA memory model; "
                   "the verdict follows the mixed-proxy extensions paper (DESIGN A11)")


# -- restrictions: pfcover, computed when every event exists ---------------------------------

def restrict(b: Builder, fence: int, kind: str, arg=None) -> None:
    """Fence `fence` covers the memory operations selected by (kind, arg): ('all',),
    ('space', 'global' | 'shared::cta' | 'shared::cluster'), ('vloc', name) or ('events', eids)."""
    todo = b.ext.setdefault("pfcover", [])
    if not todo:
        b.finalizers.append(_pfcover)
    todo.append((fence, kind, arg))


def _pfcover(b: Builder) -> None:
    test = b.test
    mem = [e for e in b.events if e.is_memory]
    ctas = {t.name: t.position.cta_key() for t in test.threads}
    for fence, kind, arg in b.ext.get("pfcover", ()):
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


# -- fences ----------------------------------------------------------------------------------

def lower_proxy_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = ptx.validate(i)
    kind = q["kind"]
    tags = {"GEN", PROXY_TAG[kind]}                    # A3: a fence is a generic-proxy operation
    if kind in ("tensormap::generic", "async::generic"):
        tags.add("PF_UNI")                              # to_proxy::from_proxy: generic -> K only
    if q.get("sem"):
        tags |= {"STRONG", SEM_TAG[q["sem"]], SCOPES[q["scope"]]}
    if q.get("restrict") == "sync_restrict::shared::cluster::read":
        tags.add("PF_READ")
    elif q.get("restrict"):
        tags.add("RESTRICT")                            # A10: its release/acquire effect is restricted too
    if kind in ACCESS_TAG:
        hypothetical(b, kind, f"fence.proxy.{kind}")
    f = b.new_event(ctx, "F", tags)
    if kind == "tensormap::generic" and q["sem"] == "acquire":
        _, vloc = b.location(ctx, i.operands[0])
        if "GLOBAL" not in b.mem_tags[i.operands[0].base]:
            raise ctx.error(f"the address of {i.text.split()[0]} must be global memory "
                            "(otherwise the behaviour is undefined)")
        restrict(b, f, "vloc", vloc)
    elif q.get("space") or q.get("restrict"):
        restrict(b, f, "space", q.get("space") or RESTRICT_SPACE[q["restrict"]])
    elif kind != "alias":
        restrict(b, f, "all")


def lower_membar_any(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    if i.has("proxy"):
        lower_proxy_fence(b, ctx, i)
    else:
        lower_membar(b, ctx, i)


# -- tensor maps -----------------------------------------------------------------------------

def lower_tensormap(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = ptx.validate(i)
    if i.qualifiers[0] == "replace":
        # PTX ISA, tensormap.replace: "a weak memory operation, on the entire 1024-bit opaque
        # tensor-map object". Fields are abstract: the new value is the map's new value.
        addr, value = i.operands[0], i.operands[-1]
        b.write(ctx, {"WEAK", "GEN"}, addr, b.value(ctx, value))
        return
    # tensormap.cp_fenceproxy: the generic-proxy copy, then a uni-directional proxy release
    # pattern from the copy to later tensormap-proxy accesses of [dst].
    dst, src = i.operands[0], i.operands[1]
    for op, space in ((dst, "global"), (src, "shared")):
        decl = b.test.mem(b.roots.get(op.base, op.base)) if isinstance(op, Addr) else None
        if decl is not None and decl.space != space:
            raise ctx.error(f"tensormap.cp_fenceproxy copies from .shared::cta to .global: '{op.base}' is {decl.space}")
    owner = b.test.mem(b.roots[src.base]).owner
    if owner.cta_key() != ctx.thread.position.cta_key():
        raise ctx.error(f"'{src.base}' is shared memory of another CTA: the source of tensormap.cp_fenceproxy "
                        "is the executing CTA's .shared::cta")
    r = b.read(ctx, {"WEAK", "GEN"}, src, label=f"{i.text}  [copy: read {src.base}]")
    b.write(ctx, {"WEAK", "GEN"}, dst, ReadVal(r), label=f"{i.text}  [copy: write {dst.base}]")
    f = b.new_event(ctx, "F", {"GEN", "STRONG", "REL", SCOPES[q["scope"]], "PF_TMAP", "PF_UNI"},
                    label=f"{i.text}  [release proxy fence]")
    restrict(b, f, "vloc", b.vlocs[dst.base])


# -- ISCA'22 hypothetical proxies ------------------------------------------------------------

VIEW_OF_OP = {"tld": "texture", "suld": "surface", "sust": "surface", "ldc": "constant"}


def lower_view_access(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    proxy = VIEW_OF_OP[i.op]
    hypothetical(b, proxy, i.op)
    tags = {"WEAK", ACCESS_TAG[proxy]}
    if i.op == "sust":
        b.write(ctx, tags, i.operands[0], b.value(ctx, i.operands[1]), view=proxy)
    else:
        b.read(ctx, tags, i.operands[1], i.operands[0], view=proxy)


FENCE_VARIANTS["proxy"] = lower_proxy_fence
LOWER.update({
    "membar": lower_membar_any,
    "tensormap": lower_tensormap,
    **{op: lower_view_access for op in VIEW_OF_OP},
})
