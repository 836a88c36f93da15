"""Regenerate the PTX of this corpus from its sources with pip-installed compilers (no GPU).

    pip install 'ptxmc[kernels]'          # nvcc + libcu++ (CCCL) wheels, triton, CUTLASS headers
    python examples/kernels/generate.py   # rewrites cuda/, triton/ and cutlass/*.ptx
    python examples/kernels/generate.py --only cutlass   # cutlass/*.ptx only (about 35 s)
    python examples/kernels/generate.py --cutedsl PYTHON CHECKOUT   # + cutedsl/ (see its script)
    python examples/kernels/generate.py --tilelang PYTHON           # + tilelang/ (by hand: torch)

PYTHON is the interpreter of a separate virtual environment holding the compiler
(`nvidia-cutlass-dsl==4.8.1`; `tilelang==0.1.15` with torch); CHECKOUT a checkout of
NVIDIA/cutlass at the commit named in cutedsl/build_cutedsl.py.

Each entry: the source, the target, the command. The committed .ptx files are what ptxmc's
tests extract and check (tests/extract/test_extract.py); CI does not need the compilers.
"""
from __future__ import annotations

import argparse
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


CUTLASS = [  # (output, -D flags): cutlass/cutlass_sm90_gemm.cu with the headers of nvidia-cutlass
    ("cutlass/cutlass_sm90_ws_cooperative.sm90a.ptx", ["-DSCHED=0", "-DSTAGES=2"]),
]


def cutlass_include() -> Path:
    try:
        import cutlass_library
    except ImportError:
        sys.exit("CUTLASS headers not found: pip install 'ptxmc[kernels]' (nvidia-cutlass)")
    return Path(cutlass_library.__file__).resolve().parent / "source" / "include"


def nvcc_cutlass(cu: Path) -> None:
    inc = cutlass_include()
    for out, defs in CUTLASS:
        cmd = [str(cu / "bin" / "nvcc"), "-arch=sm_90a", "-ptx", "-O3", "-std=c++17", "-DNDEBUG",
               f"-I{inc}", f"-I{cu / 'include' / 'cccl'}", "--expt-relaxed-constexpr", *defs,
               "cutlass/cutlass_sm90_gemm.cu", "-o", out]
        print(" ".join(cmd).replace(str(cu), "$CU").replace(str(inc), "$CUTLASS/include"))
        subprocess.run(cmd, cwd=HERE, check=True)


def tilelang(cu: Path, python: str) -> None:
    """TileLang lowers ws_gemm.py to CUDA (and records InjectFenceProxy's TIR); nvcc prints the
    PTX with the tl_templates and CUTLASS headers that ship in the tilelang package."""
    d = HERE / "tilelang"
    subprocess.run([python, "ws_gemm.py", "."], cwd=d, check=True)
    tl = subprocess.run([python, "-c", "import tilelang, os; print(os.path.dirname(tilelang.__file__))"],
                        check=True, capture_output=True, text=True).stdout.strip()
    cmd = [str(cu / "bin" / "nvcc"), "-arch=sm_90a", "-ptx", "-O3", "-std=c++20", "-w", f"-I{tl}/src",
           f"-I{tl}/3rdparty/cutlass/include", f"-I{cu / 'include' / 'cccl'}",
           "tilelang_ws_gemm.sm90a.cu", "-o", "tilelang_ws_gemm.sm90a.ptx"]
    print(" ".join(cmd).replace(str(cu), "$CU").replace(tl, "$TL"))
    subprocess.run(cmd, cwd=d, check=True)


def cutedsl(python: str, checkout: str) -> None:
    d = HERE / "cutedsl"
    subprocess.run([python, "build_cutedsl.py", checkout, "cutedsl_hopper_dense_gemm.sm90a.ptx"], cwd=d,
                   check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tilelang", metavar="PYTHON", help="also TileLang, with this interpreter")
    ap.add_argument("--cutedsl", nargs=2, metavar=("PYTHON", "CHECKOUT"), help="also the CuTe DSL GEMM")
    ap.add_argument("--only", choices=("cuda", "triton", "cutlass", "none"), action="append",
                    help="regenerate only these groups (repeatable; default: cuda, triton and cutlass)")
    args = ap.parse_args(argv)
    groups = set(args.only or ("cuda", "triton", "cutlass"))
    cu = cuda_root()
    if "cuda" in groups:
        for src, out, arch in NVCC:
            cmd = [str(cu / "bin" / "nvcc"), f"-arch={arch}", "-ptx", "-O3", "-std=c++17",
                   f"-I{cu / 'include' / 'cccl'}", src, "-o", out]
            print(" ".join(cmd).replace(str(cu), "$CU"))
            subprocess.run(cmd, cwd=HERE, check=True, env={**os.environ})
    if "triton" in groups:
        _triton()
    if "cutlass" in groups:
        nvcc_cutlass(cu)
    if args.tilelang:
        tilelang(cu, args.tilelang)
    if args.cutedsl:
        cutedsl(*args.cutedsl)
    return 0


def _triton() -> None:
    env = {**os.environ, "TRITON_DISABLE_LINE_INFO": "1", "TRITON_ALWAYS_COMPILE": "1", "TRITON_DEFAULT_FP_FUSION": "1"}
    subprocess.run([sys.executable, "build_triton.py"], cwd=HERE / "triton", check=True, env=env)


if __name__ == "__main__":
    sys.exit(main())
