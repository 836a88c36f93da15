"""Gluon (Triton's explicit dialect) warp-specialized GEMM for sm_90a: a 1-warp TMA load
partition and a 4-warp wgmma partition exchange a 2-stage ring of A/B tiles through `ready`
and `empty` mbarriers; the default partition stores C with a TMA store after a proxy fence.
Written for this corpus after Triton's Gluon tutorials (not copied from them)."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)


@gluon.jit
def _load_partition(a_desc, b_desc, a_bufs, b_bufs, ready, empty, k_tiles, STAGES: gl.constexpr):
    BK: gl.constexpr = a_desc.block_type.shape[1]
    for k in range(k_tiles):
        s = k % STAGES
        phase = (k // STAGES) & 1
        mbarrier.wait(empty.index(s), phase ^ 1)
        mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [0, k * BK], ready.index(s), a_bufs.index(s))
        tma.async_load(b_desc, [k * BK, 0], ready.index(s), b_bufs.index(s))


@gluon.jit
def _mma_partition(a_bufs, b_bufs, ready, empty, c_desc, c_smem, k_tiles, STAGES: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16])
    acc = gl.zeros((BM, BN), gl.float32, layout)
    for k in range(k_tiles):
        s = k % STAGES
        phase = (k // STAGES) & 1
        mbarrier.wait(ready.index(s), phase)
        acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=[acc])
        mbarrier.arrive(empty.index(s), count=1)
    c_smem.store(acc.to(gl.float16))
    fence_async_shared()
    tma.async_store(c_desc, [0, 0], c_smem)
    tma.store_wait(0)


@gluon.jit
def gluon_ws_matmul(a_desc, b_desc, c_desc, k_tiles, STAGES: gl.constexpr):
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    gl.warp_specialize([(_mma_partition, (a_bufs, b_bufs, ready, empty, c_desc, c_smem, k_tiles, STAGES)),
                        (_load_partition, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, k_tiles, STAGES))],
                       [1], [24])


# --- Blackwell (sm_100a): TMA load warp, tcgen05 MMA warp, epilogue in the default partition ---

from triton.experimental.gluon.language.nvidia.blackwell import (TensorMemoryLayout, allocate_tensor_memory,  # noqa: E402
                                                                 tcgen05_commit, tcgen05_mma)


@gluon.jit
def _bw_mma_partition(a_bufs, b_bufs, ready, empty, acc_tmem, acc_bar, k_tiles, STAGES: gl.constexpr):
    for k in range(k_tiles):
        s = k % STAGES
        phase = (k // STAGES) & 1
        mbarrier.wait(ready.index(s), phase)
        tcgen05_mma(a_bufs.index(s), b_bufs.index(s), acc_tmem, use_acc=k > 0)
        tcgen05_commit(empty.index(s))
    tcgen05_commit(acc_bar)


@gluon.jit
def _bw_epilogue(acc_tmem, acc_bar, c_desc, c_smem):
    mbarrier.wait(acc_bar, 0)
    acc = acc_tmem.load(acc_tmem.get_reg_layout())
    c_smem.store(acc.to(gl.float16))
    fence_async_shared()
    tma.async_store(c_desc, [0, 0], c_smem)
    tma.store_wait(0)


@gluon.jit
def gluon_bw_ws_matmul(a_desc, b_desc, c_desc, k_tiles, STAGES: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    acc_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    mbarrier.init(acc_bar, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout(block=(BM, BN), col_stride=1))
    gl.warp_specialize([(_bw_epilogue, (acc_tmem, acc_bar, c_desc, c_smem)),
                        (_bw_mma_partition, (a_bufs, b_bufs, ready, empty, acc_tmem, acc_bar, k_tiles, STAGES)),
                        (_load_partition, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, k_tiles, STAGES))],
                       [1, 1], [24, 24])
