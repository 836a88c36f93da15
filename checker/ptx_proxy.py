"""PTX syntax of the proxy instructions (issue 3): proxy fences, tensor-map instructions and the
ISCA'22 hypothetical texture/surface/constant accesses. Registered into checker.ptx.FAMILIES on
import (checker.ptx imports this module); their meaning is in checker.lower_proxy.

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
"""
from __future__ import annotations

from .ptx import LDST_TYPES, SCOPES, Family, Group, Instr, Quals, register, sig

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

register(
    Family("fence.proxy",
           groups=(Group("kind", PROXY_KINDS, required=True),
                   Group("space", ("global", "shared::cta", "shared::cluster")),
                   Group("sem", ("release", "acquire")),
                   Group("restrict", RESTRICTS),
                   Group("scope", SCOPES)),
           operands=_proxy_fence_operands, rules=(_proxy_fence_form,), rejects=_PROXY_REJECTS),
    Family("membar.proxy",
           groups=(Group("kind", ("alias", "async"), required=True),
                   Group("space", ("global", "shared::cta", "shared::cluster"))),
           rules=(lambda i, q: "membar.proxy.alias takes no state space" if q["kind"] == "alias" and q["space"]
                  else None,),
           rejects={"shared": "write .shared::cta or .shared::cluster"}),
    Family("tensormap.replace",
           groups=(Group("mode", ("tile",), required=True),
                   Group("field", FIELD1 + FIELD2 + FIELD3, required=True),
                   Group("ss", ("global", "shared::cta")),
                   Group("size", ("b1024",), required=True),
                   Group("type", ("b32", "b64"), required=True)),
           operands=lambda q: sig("addr:addr, ord:imm, new_val:val" if q["field"] in FIELD2 else "addr:addr, new_val:val",
                                  new_val="the new value (the tensor map's abstract value)"),
           rules=(_replace_form,), space="ss",
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
           rules=(_cp_fenceproxy_size,)),
    # ISCA'22 hypothetical proxies (DESIGN section 2, A11): weak accesses through a view.
    Family("tld", groups=(_VIEW_TYPE,), operands=sig("d:reg, a:addr")),
    Family("suld", groups=(_VIEW_TYPE,), operands=sig("d:reg, a:addr")),
    Family("sust", groups=(_VIEW_TYPE,), operands=sig("a:addr, b:val")),
    Family("ldc", groups=(_VIEW_TYPE,), operands=sig("d:reg, a:addr")),
)
