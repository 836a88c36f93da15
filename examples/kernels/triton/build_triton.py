"""Compile this folder's Gluon/Triton kernels to PTX without a GPU (target given explicitly).

    TRITON_DISABLE_LINE_INFO=1 python build_triton.py      # from examples/kernels/triton/
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_DISABLE_LINE_INFO", "1")
os.environ.setdefault("TRITON_ALWAYS_COMPILE", "1")

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.experimental.gluon._runtime import GluonASTSource  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gluon_kernels as gk  # noqa: E402
import triton_kernels as tk  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

NVMMA = "NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2, transposed=False, " \
        "fp4_padded=False, cga_layout=[])"


def desc(shape) -> str:
    return f"tensordesc<fp16[{shape[0]}, {shape[1]}],{NVMMA}>"


def gluon_hopper():
    sig = {"a_desc": desc((64, 64)), "b_desc": desc((64, 64)), "c_desc": desc((64, 64)), "k_tiles": "i32",
           "STAGES": "constexpr"}
    src = GluonASTSource(gk.gluon_ws_matmul, sig, constexprs={"STAGES": 2})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    return k.asm["ptx"]


def gluon_blackwell():
    sig = {"a_desc": desc((128, 64)), "b_desc": desc((64, 64)), "c_desc": desc((128, 64)), "k_tiles": "i32",
           "STAGES": "constexpr"}
    src = GluonASTSource(gk.gluon_bw_ws_matmul, sig, constexprs={"STAGES": 2})
    k = triton.compile(src, target=GPUTarget("cuda", 100, 32), options={"num_warps": 4})
    return k.asm["ptx"]


def triton_attention():
    plain = "tensordesc<fp16[128, 64]>"
    sig = {"q_desc": plain, "k_desc": plain, "v_desc": plain, "o_desc": plain, "sm_scale": "fp32", "N_CTX": "i32",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "HEAD_DIM": "constexpr"}
    src = ASTSource(tk.attn_fwd, sig, constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "HEAD_DIM": 64})
    k = triton.compile(src, target=GPUTarget("cuda", 100, 32), options={"num_warps": 4, "num_stages": 2})
    return k.asm["ptx"]


BUILDS = {"gluon_ws_matmul.sm90a.ptx": gluon_hopper, "gluon_bw_ws_matmul.sm100a.ptx": gluon_blackwell,
          "triton_attn_fwd_ws.sm100a.ptx": triton_attention}


def main() -> int:
    for name, build in BUILDS.items():
        text = build()
        (HERE / name).write_text(text)
        print(f"wrote {name}: {len(text.splitlines())} lines, triton {triton.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
