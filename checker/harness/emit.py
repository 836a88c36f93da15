"""The emitter table: one OpSpec per PTX opcode (how to emit it, how values flow through it).
New opcode families (wgmma, tcgen05, ...) are added here. An emitter that cannot express an
instruction raises NotExpressible with the reason; codegen collects the reasons
(`unsupported(test)`), nothing is dropped silently."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ast import Instr
from .emit_async import emit_cp, emit_mbarrier, emit_red_dispatch, emit_st_dispatch, emit_tensormap, unsupported_op
from .emit_generic import (emit_alu, emit_atom, emit_bar, emit_fence, emit_ld, emit_nanosleep, emit_not,
                           emit_plain, emit_prefetch, emit_selp, emit_setp)
from .emit_tensor import emit_tcgen05, emit_wgmma
from .operands import Ctx
from .transfer import (AbsState, values_alu, values_atom, values_cp, values_ld, values_mbarrier, values_none,
                       values_not, values_red, values_selp, values_setp, values_st, values_tcgen05, values_tensormap,
                       values_wgmma)


@dataclass(frozen=True)
class OpSpec:
    emit: Callable[[Instr, Ctx], str]
    values: Callable[[Instr, AbsState], None] = values_none


_TEXTURE = ("ISCA'22 hypothetical proxy instruction: no real PTX instruction reads a plain "
            "location through this proxy, so the harness cannot run it")

OPS: dict[str, OpSpec] = {
    "ld": OpSpec(emit_ld, values_ld),
    "st": OpSpec(emit_st_dispatch, values_st),
    "atom": OpSpec(emit_atom, values_atom),
    "red": OpSpec(emit_red_dispatch, values_red),
    "fence": OpSpec(emit_fence),
    "membar": OpSpec(emit_plain),
    "bar": OpSpec(emit_bar),
    "barrier": OpSpec(emit_bar),
    **{op: OpSpec(emit_alu, values_alu) for op in ("mov", "add", "sub", "mul", "and", "or", "xor")},
    "setp": OpSpec(emit_setp, values_setp),
    "not": OpSpec(emit_not, values_not),
    "selp": OpSpec(emit_selp, values_selp),
    "nanosleep": OpSpec(emit_nanosleep),
    "prefetch": OpSpec(emit_prefetch),
    # bra is emitted by checker.harness.codegen (a goto, bounded when it goes backward)
    "bra": OpSpec(unsupported_op("bra is emitted by the code generator, not as an instruction")),
    "cp": OpSpec(emit_cp, values_cp),
    "mbarrier": OpSpec(emit_mbarrier, values_mbarrier),
    "tld": OpSpec(unsupported_op(_TEXTURE)),
    "suld": OpSpec(unsupported_op(_TEXTURE)),
    "sust": OpSpec(unsupported_op(_TEXTURE)),
    "ldc": OpSpec(unsupported_op(_TEXTURE)),
    "tensormap": OpSpec(emit_tensormap, values_tensormap),
    "wgmma": OpSpec(emit_wgmma, values_wgmma),
    "tcgen05": OpSpec(emit_tcgen05, values_tcgen05),
    "clusterlaunchcontrol": OpSpec(unsupported_op(
        "clusterlaunchcontrol.* is not expressible: whether try_cancel succeeds depends on clusters of the grid "
        "still waiting to launch, and its response is an opaque value (the model's response numbers have no "
        "hardware counterpart)")),
}


# PTX forms that older toolchains reject: (predicate, first CUDA release seen to accept it).
NEWER_PTX: tuple[tuple[Callable[[Instr], bool], tuple[int, int], str], ...] = (
    (lambda i: any(q.endswith("::read") for q in i.qualifiers), (13, 5),
     ".sync_restrict::shared::cluster::read (ptxas 13.0 rejects it; 13.5 accepts it)"),
)


def needs_newer_cuda(i: Instr, cuda: str | None) -> str | None:
    """Why the toolchain release `cuda` ('13.0') cannot assemble `i`, or None."""
    if not cuda:
        return None
    try:
        have = tuple(int(x) for x in cuda.split(".")[:2])
    except ValueError:
        return None
    for pred, need, what in NEWER_PTX:
        if pred(i) and have < need:
            return f"needs CUDA >= {need[0]}.{need[1]} for {what}; this toolchain is {cuda}"
    return None


def opspec(i: Instr) -> OpSpec:
    spec = OPS.get(i.op)
    if spec is None:
        return OpSpec(unsupported_op(f"no harness emitter for '{i.op}' yet"))
    return spec
