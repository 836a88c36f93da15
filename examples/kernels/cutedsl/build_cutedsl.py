"""Print the PTX of CUTLASS's CuTe DSL Hopper dense GEMM for sm_90a, without a GPU.

The kernel is the `HopperWgmmaGemmKernel` of CUTLASS's example
`examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm.py` (not in the
`nvidia-cutlass-dsl` wheel, and not copied here): give the folder of a checkout of
NVIDIA/cutlass at commit 7107b05535f8977f5ecb9d01ee203205b1fd9bc4.

    python3 -m venv /tmp/cute && /tmp/cute/bin/pip install nvidia-cutlass-dsl==4.8.1
    /tmp/cute/bin/python build_cutedsl.py CUTLASS_CHECKOUT OUT.ptx [--tile128]

The tensors are fake (`cute.runtime.make_fake_compact_tensor`: shapes and strides, no memory),
the stream is a fake stream, and `CUTE_DSL_ARCH=sm_90a` picks the target, so nothing touches a
driver. fp16 A (K-major) x fp16 B (K-major) -> fp16 C (N-major), f32 accumulation, 64x64 tile,
cluster 1x1, occupancy 6 (so a 2-stage A/B ring), K = 3 tiles. The dump's `.loc`/`.file` lines are left out (no line info is asked for).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

TILE_MN = (64, 64)   # one m64 wgmma per k-step and 2 epilogue sub-tiles: a small skeleton
OCCUPANCY = 6        # CTAs per SM: the example sizes its A/B ring from one CTA's share of shared
                     # memory, so 2 stages of 16 KB (with the default 1: 13)
EXAMPLE = "examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm.py"


def main(checkout: Path, out: Path, tile_mn=TILE_MN, occupancy=OCCUPANCY) -> int:
    dump = Path(tempfile.mkdtemp(prefix="cute-dump-"))
    os.environ["CUTE_DSL_ARCH"] = "sm_90a"
    os.environ["CUTE_DSL_DUMP_DIR"] = str(dump)
    os.environ["CUTE_DSL_KEEP"] = "ptx"
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor
    from cutlass.runtime import make_fake_stream

    spec = importlib.util.spec_from_file_location("dense_gemm", checkout / EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m, n, k, l = 1024, 1024, 3 * 64, 1      # K: 3 k-tiles, so the mainloop wraps the 2-stage ring once
    # (M, K, L) with K contiguous, (N, K, L) with K contiguous, (M, N, L) with N contiguous
    a = make_fake_compact_tensor(cutlass.Float16, (m, k, l), stride_order=(1, 0, 2), assumed_align=16)
    b = make_fake_compact_tensor(cutlass.Float16, (n, k, l), stride_order=(1, 0, 2), assumed_align=16)
    c = make_fake_compact_tensor(cutlass.Float16, (m, n, l), stride_order=(1, 0, 2), assumed_align=16)
    gemm = mod.HopperWgmmaGemmKernel(cutlass.Float32, tile_mn, (1, 1))
    gemm.occupancy = occupancy          # 2 stages: a 3-iteration skeleton wraps the ring once
    compiled = cute.compile(gemm, a, b, c, make_fake_stream(), options="--keep-ptx")
    ptx = compiled.__ptx__
    text = Path(ptx).read_text() if ptx and len(ptx) < 4096 and Path(ptx).is_file() else ptx
    if not text:
        found = sorted(dump.rglob("*.ptx"))
        if not found:
            sys.exit(f"no PTX in {dump}")
        text = found[-1].read_text()
    out.write_text(text)
    print(f"wrote {out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    if len(sys.argv) == 4:      # --tile128: 128x128 tile, occupancy 3 (2 stages); tests/data/extract/
        sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]), (128, 128), 3))
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
