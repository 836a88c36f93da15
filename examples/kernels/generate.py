"""Regenerate the PTX of this corpus from its sources with pip-installed compilers (no GPU).

    pip install 'ptxmc[kernels]'          # nvcc + libcu++ (CCCL) wheels, triton
    python examples/kernels/generate.py   # rewrites cuda/*.ptx and triton/*.ptx

Each entry: the source, the target, the command. The committed .ptx files are what ptxmc's
tests extract and check (tests/test_extract.py); CI does not need the compilers.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

NVCC = [  # (source, output, arch)
    ("cuda/tma_ws_pipeline.cu", "cuda/tma_ws_pipeline.sm90a.ptx", "sm_90a"),
    ("cuda/cluster_dsmem.cu", "cuda/cluster_dsmem.sm90a.ptx", "sm_90a"),
]


def cuda_root() -> Path:
    import nvidia
    for base in nvidia.__path__:
        root = Path(base) / "cu13"
        if (root / "bin" / "nvcc").exists():
            return root
    sys.exit("nvcc not found: pip install 'ptxmc[kernels]' (nvidia-cuda-nvcc, nvidia-cuda-cccl)")


def main() -> int:
    cu = cuda_root()
    for src, out, arch in NVCC:
        cmd = [str(cu / "bin" / "nvcc"), f"-arch={arch}", "-ptx", "-O3", "-std=c++17",
               f"-I{cu / 'include' / 'cccl'}", src, "-o", out]
        print(" ".join(cmd).replace(str(cu), "$CU"))
        subprocess.run(cmd, cwd=HERE, check=True, env={**os.environ})
    env = {**os.environ, "TRITON_DISABLE_LINE_INFO": "1", "TRITON_ALWAYS_COMPILE": "1", "TRITON_DEFAULT_FP_FUSION": "1"}
    subprocess.run([sys.executable, "build_triton.py"], cwd=HERE / "triton", check=True, env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
