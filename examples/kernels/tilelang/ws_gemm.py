"""A hand-written warp-specialized GEMM in TileLang, lowered for sm_90a without a GPU.

Run by hand (TileLang pulls torch; it is not a ptxmc dependency and CI does not run this):

    python3 -m venv /tmp/tl && /tmp/tl/bin/pip install tilelang==0.1.15 torch
    /tmp/tl/bin/python ws_gemm.py OUT_DIR      # writes OUT_DIR/tilelang_ws_gemm.sm90a.cu and the TIR

then `nvcc -ptx` of the .cu with TileLang's headers (`python ../generate.py --tilelang
/tmp/tl/bin/python` runs both steps and writes the files of this folder).

Each role runs its own K loop, in the two branches of one `if` on the thread index (the
hand-written warp-specialization pattern). Warpgroup 1 (threads 128-255) is the producer: it waits for a stage to be empty, copies the A and
B tiles from global memory with ordinary loads and `st.shared` stores (no TMA), and arrives on
the stage's `full` mbarrier (count 128). Warpgroup 0 is the consumer: it waits on `full`, runs
`wgmma` on the stage (T.gemm) and arrives on `empty`. Two stages. The wgmma reads the tiles
through the async proxy; the generic stores are not ordered with it unless a
`fence.proxy.async` sits between them. TileLang's InjectFenceProxy pass is recorded: the TIR
before and after it is written beside the CUDA source.
"""
from __future__ import annotations

import sys
from pathlib import Path

import tilelang
import tilelang.language as T
from tvm.target import Target

STAGES = 2
BM, BN, BK = 128, 128, 64
# K = 3 tiles: the mainloop (a constant trip count here) runs STAGES + 1 times, so the ring wraps
# once, as ptxmc extract unrolls a loop whose trip count is a parameter.
M, N, K = 1024, 1024, 3 * BK


def ws_gemm(M: int, N: int, K: int):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=256) as (bx, by):
            a_tile = T.alloc_shared((STAGES, BM, BK), "float16")
            b_tile = T.alloc_shared((STAGES, BK, BN), "float16")
            acc = T.alloc_fragment((BM, BN), "float")
            # full[s] (indices 0..STAGES-1) and empty[s] (STAGES..2*STAGES-1), each counting 128 threads
            bars = T.alloc_barrier([128] * (2 * STAGES))
            tx = T.get_thread_binding()
            if tx >= 128:                       # producer warpgroup: its own K loop
                for k in range(T.ceildiv(K, BK)):
                    T.mbarrier_wait_parity(bars[k % STAGES + STAGES], ((k // STAGES) & 1) ^ 1)
                    T.copy(A[by * BM:(by + 1) * BM, k * BK:(k + 1) * BK], a_tile[k % STAGES, :, :])
                    T.copy(B[k * BK:(k + 1) * BK, bx * BN:(bx + 1) * BN], b_tile[k % STAGES, :, :])
                    T.mbarrier_arrive(bars[k % STAGES])
            else:                               # consumer warpgroup: wgmma, then the epilogue
                T.clear(acc)
                for k in range(T.ceildiv(K, BK)):
                    T.mbarrier_wait_parity(bars[k % STAGES], (k // STAGES) & 1)
                    T.gemm(a_tile[k % STAGES, :, :], b_tile[k % STAGES, :, :], acc)
                    T.mbarrier_arrive(bars[k % STAGES + STAGES])
                T.copy(acc, C[by * BM, bx * BN])

    return kernel


def main(out: Path) -> int:
    import tilelang.cuda.transform as ct

    recorded = {}
    inner = ct.InjectFenceProxy

    def recording_pass():                       # record the TIR that InjectFenceProxy sees and returns
        p = inner()

        def run(mod):
            recorded["before"] = mod.script()
            res = p(mod)
            recorded["after"] = res.script()
            return res
        return run

    ct.InjectFenceProxy = recording_pass
    target = Target({"kind": "cuda", "arch": "sm_90a"})
    with target:
        art = tilelang.lower(ws_gemm(M, N, K), target=target)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tilelang_ws_gemm.sm90a.cu").write_text(art.kernel_source)
    (out / "tilelang_ws_gemm.tir_before_InjectFenceProxy.txt").write_text(recorded["before"])
    changed = recorded["before"] != recorded["after"]
    if changed:
        (out / "tilelang_ws_gemm.tir_after_InjectFenceProxy.txt").write_text(recorded["after"])
    print("InjectFenceProxy changed the TIR:", changed)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "out")))
