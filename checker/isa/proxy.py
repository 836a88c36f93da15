"""The proxy instructions: proxy fences (fence.proxy.*, membar.proxy.*), the tensor-map
instructions (tensormap.replace, tensormap.cp_fenceproxy) and the ISCA'22 hypothetical
texture/surface/constant accesses (tld, suld, sust, ldc) through declared views. The model that
gives their tags meaning is the "Proxies" part of axioms/ptx.cat.

Forms, PTX ISA 9.4 "membar / fence" and "tensormap.*":

    fence.proxy.alias                      membar.proxy.alias       (bi-directional)
    fence.proxy.alias.{release,acquire}.sys                         (bi-directional + release/acquire)
    fence.proxy.async{.global,.shared::cta,.shared::cluster}        (bi-directional)
    membar.proxy.async{...}
    fence.proxy.tensormap::generic.release.{cta,cluster,gpu,sys}
    fence.proxy.tensormap::generic.acquire.{scope} [addr], 128
    fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster
    fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster
    fence.proxy.async::generic.release.sync_restrict::shared::cluster::read.cluster
    fence.proxy.{texture,surface,constant}                          (ISCA'22 hypothetical)
    tensormap.replace.tile.field{.global,.shared::cta}.b1024.{b32,b64} [addr], {ord,} new_val
    tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.scope.sync.aligned [dst], [src], 128
    tld r, [t]   suld r, [s]   sust [s], v   ldc r, [c]                (ISCA'22 hypothetical)

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

from dataclasses import replace

from ..ast import Addr, Instr, Quals, Reg
from .syntax import render_instr
from ..model.builder import Builder, ThreadCtx
from ..model.values import ReadVal
from .common import restrict
from .table import LDST_TYPES, SCOPE_TAG, SCOPES, Family, Group, drop, sig

PROXY_KINDS = ("alias", "async", "texture", "surface", "constant", "tensormap::generic", "async::generic")
RESTRICTS = ("sync_restrict::shared::cta", "sync_restrict::shared::cluster",
             "sync_restrict::shared::cluster::read")
# (sem, restriction) pairs of fence.proxy.async::generic, PTX ISA 9.4
ASYNC_GENERIC_FORMS = {("release", "sync_restrict::shared::cta"), ("acquire", "sync_restrict::shared::cluster"),
                       ("release", "sync_restrict::shared::cluster::read")}
HYPOTHETICAL = ("texture", "surface", "constant")


def _only(q: Quals, kind: str, allowed: tuple[str, ...]):
    extra = [g for g in ("space", "sem", "restrict", "scope") if q.get(g) and g not in allowed]
    if extra:
        g = extra[0]
        return f"fence.proxy.{kind} takes no .{q[g]}"
    return None


def _proxy_fence_form(i: Instr, q: Quals):
    kind = q["kind"]
    if kind == "alias":
        msg = _only(q, kind, ("sem", "scope"))
        if msg:
            return msg
        if bool(q["sem"]) != bool(q["scope"]) or (q["scope"] and q["scope"] != "sys"):
            return "fence.proxy.alias is bi-directional (no qualifier) or .release.sys / .acquire.sys"
    elif kind == "async":
        return _only(q, kind, ("space",))
    elif kind in HYPOTHETICAL:
        return _only(q, kind, ())
    elif kind == "tensormap::generic":
        msg = _only(q, kind, ("sem", "scope"))
        if msg:
            return msg
        if not q["sem"] or not q["scope"]:
            return "fence.proxy.tensormap::generic needs .release or .acquire and a scope (.cta, .cluster, .gpu, .sys)"
        if q["sem"] == "acquire" and i.operands[1].value != 128:
            return "the size operand of fence.proxy.tensormap::generic.acquire must be 128"
    elif kind == "async::generic":
        msg = _only(q, kind, ("sem", "restrict", "scope"))
        if msg:
            return msg
        if (q["sem"], q["restrict"]) not in ASYNC_GENERIC_FORMS or q["scope"] != "cluster":
            return ("fence.proxy.async::generic takes .release.sync_restrict::shared::cta.cluster, "
                    ".acquire.sync_restrict::shared::cluster.cluster or "
                    ".release.sync_restrict::shared::cluster::read.cluster")
    return None


def _proxy_fence_operands(q: Quals):
    if q["kind"] == "tensormap::generic" and q["sem"] == "acquire":
        return sig("addr:addr, size:imm", addr="the tensor map's address", size="the size, 128")
    return ()


_FABRIC = "fabric proxy fences are not modelled"
_PROXY_REJECTS = {
    **dict.fromkeys(("generic::fabric", "fabric::generic", "fabric::fabric"), _FABRIC),
    **dict.fromkeys(("sc", "acq_rel"), "a proxy fence is .release or .acquire (or bi-directional, without .sem)"),
    "shared": "write .shared::cta or .shared::cluster",
    "tensormap": "write fence.proxy.tensormap::generic (to_proxy::from_proxy)",
}


def _replace_form(i: Instr, q: Quals):
    wide = q["field"] in ("global_address", "global_stride")
    if q["type"] != ("b64" if wide else "b32"):
        return f"tensormap.replace.{q['field']} takes .{'b64' if wide else 'b32'}"
    if q["field"] in FIELD2 and not 0 <= i.operands[1].value <= 4:
        return "the ordinal of tensormap.replace is 0 to 4"
    return None


FIELD1 = ("global_address", "rank")
FIELD2 = ("box_dim", "global_dim", "global_stride", "element_stride")
FIELD3 = ("elemtype", "interleave_layout", "swizzle_mode", "swizzle_atomicity", "fill_mode")


def _cp_fenceproxy_size(i: Instr, q: Quals):
    if i.operands[2].value != 128:
        return "the size operand of tensormap.cp_fenceproxy must be 128"
    return None


_VIEW_TYPE = Group("type", LDST_TYPES)


# -- lowering --------------------------------------------------------------------------------

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
    used = b.finalize("hypothetical", _hypothetical_note)
    used.setdefault(proxy, [])
    if what not in used[proxy]:
        used[proxy].append(what)


def _hypothetical_note(b: Builder) -> None:
    used = "; ".join(f"{p}: {', '.join(whats)}" for p, whats in b.ext["hypothetical"].items())
    b.notes.append(f"ISCA'22 hypothetical proxies ({used}): not part of the PTX ISA memory model; "
                   "the verdict follows the mixed-proxy extensions paper (docs/model.md#a11)")


# -- fences ----------------------------------------------------------------------------------

def lower_proxy_fence(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    q = i.quals
    kind = q["kind"]
    tags = {"GEN", PROXY_TAG[kind]}                    # A3: a fence is a generic-proxy operation
    if kind in ("tensormap::generic", "async::generic"):
        tags.add("PF_UNI")                              # to_proxy::from_proxy: generic -> K only
    if q.get("sem"):
        tags |= {"STRONG", SEM_TAG[q["sem"]], SCOPE_TAG[q["scope"]]}
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


# -- tensor maps -----------------------------------------------------------------------------

def lower_tensormap_replace(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """PTX ISA, tensormap.replace: "a weak memory operation, on the entire 1024-bit opaque
    tensor-map object". Fields are abstract: the new value is the map's new value."""
    addr, value = i.operands[0], i.operands[-1]
    b.write(ctx, {"WEAK", "GEN"}, addr, b.value(ctx, value))


def lower_cp_fenceproxy(b: Builder, ctx: ThreadCtx, i: Instr) -> None:
    """tensormap.cp_fenceproxy: the generic-proxy copy, then a uni-directional proxy release
    pattern from the copy to later tensormap-proxy accesses of [dst]."""
    q = i.quals
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
    f = b.new_event(ctx, "F", {"GEN", "STRONG", "REL", SCOPE_TAG[q["scope"]], "PF_TMAP", "PF_UNI"},
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


def weaken_cp_fenceproxy(i: Instr, fresh):
    """tensormap.cp_fenceproxy [dst], [src], 128 without its proxy release fence: the plain
    generic copy it performs (ld.shared::cta + st.global through a fresh register)."""
    reg = Reg(fresh("rcp"))
    ld = Instr("ld", ("shared::cta",), (reg, Addr(i.operands[1].base)), "", i.where)
    st = Instr("st", ("global",), (Addr(i.operands[0].base), reg), "", i.where)
    yield tuple(replace(x, text=render_instr(x)) for x in (ld, st))


# -- the families ----------------------------------------------------------------------------

FAMILIES = (
    Family("fence.proxy",
           groups=(Group("kind", PROXY_KINDS, required=True),
                   Group("space", ("global", "shared::cta", "shared::cluster")),
                   Group("sem", ("release", "acquire")),
                   Group("restrict", RESTRICTS),
                   Group("scope", SCOPES)),
           operands=_proxy_fence_operands, rules=(_proxy_fence_form,), rejects=_PROXY_REJECTS,
           lower=lower_proxy_fence, weaken=drop),
    Family("membar.proxy",
           groups=(Group("kind", ("alias", "async"), required=True),
                   Group("space", ("global", "shared::cta", "shared::cluster"))),
           rules=(lambda i, q: "membar.proxy.alias takes no state space" if q["kind"] == "alias" and q["space"]
                  else None,),
           rejects={"shared": "write .shared::cta or .shared::cluster"}, lower=lower_proxy_fence, weaken=drop),
    Family("tensormap.replace",
           groups=(Group("mode", ("tile",), required=True),
                   Group("field", FIELD1 + FIELD2 + FIELD3, required=True),
                   Group("ss", ("global", "shared::cta")),
                   Group("size", ("b1024",), required=True),
                   Group("type", ("b32", "b64"), required=True)),
           operands=lambda q: sig("addr:addr, ord:imm, new_val:val" if q["field"] in FIELD2 else "addr:addr, new_val:val",
                                  new_val="the new value (the tensor map's abstract value)"),
           rules=(_replace_form,), space="ss", lower=lower_tensormap_replace,
           rejects={"shared": "tensormap.replace takes .global or .shared::cta"}),
    Family("tensormap.cp_fenceproxy",
           groups=(Group("dst", ("global",), required=True),
                   Group("src", ("shared::cta",), required=True),
                   Group("proxy", ("tensormap::generic",), required=True),
                   Group("sem", ("release",), required=True),
                   Group("scope", SCOPES, required=True),
                   Group("sync", ("sync",), required=True),
                   Group("aligned", ("aligned",), required=True)),
           operands=sig("dst:addr, src:addr, size:imm", size="the size, 128"),
           rules=(_cp_fenceproxy_size,), lower=lower_cp_fenceproxy, weaken=weaken_cp_fenceproxy),
    # ISCA'22 hypothetical proxies (docs/format.md, A11): weak accesses through a view.
    Family("tld", groups=(_VIEW_TYPE,), operands=sig("d:reg, a:addr"), lower=lower_view_access),
    Family("suld", groups=(_VIEW_TYPE,), operands=sig("d:reg, a:addr"), lower=lower_view_access),
    Family("sust", groups=(_VIEW_TYPE,), operands=sig("a:addr, b:val"), lower=lower_view_access),
    Family("ldc", groups=(_VIEW_TYPE,), operands=sig("d:reg, a:addr"), lower=lower_view_access),
)
