// CUTLASS 4.2 sm_90 warp-specialized GEMM (fp16 x fp16 -> f32 accumulate, fp16 out), built
// with the CollectiveBuilder as in CUTLASS's example 48/49, for PTX only (no host code, no GPU).
// SCHED=0: KernelTmaWarpSpecializedCooperative (128x128x64 tile, 2 consumer warpgroups on one tile)
// SCHED=1: KernelTmaWarpSpecializedPingpong    (64x128x64 tile, 2 consumer warpgroups alternate)
// STAGES: the mainloop's pipeline depth. Cluster 1x1x1, TMA warp-specialized epilogue.
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/device_kernel.h"

#ifndef SCHED
#define SCHED 0
#endif
#ifndef STAGES
#define STAGES 2
#endif

using namespace cute;

using ElementA = cutlass::half_t;
using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::half_t;
using LayoutB = cutlass::layout::ColumnMajor;
using ElementC = cutlass::half_t;
using LayoutC = cutlass::layout::ColumnMajor;
using ElementAccumulator = float;
constexpr int AlignA = 128 / cutlass::sizeof_bits<ElementA>::value;
constexpr int AlignB = 128 / cutlass::sizeof_bits<ElementB>::value;
constexpr int AlignC = 128 / cutlass::sizeof_bits<ElementC>::value;

#if SCHED == 0
using TileShape = Shape<_128, _128, _64>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#else
using TileShape = Shape<_64, _128, _64>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#endif
using ClusterShape = Shape<_1, _1, _1>;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
    ElementC, LayoutC, AlignC, ElementC, LayoutC, AlignC, EpilogueSchedule>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, AlignA, ElementB,
    LayoutB, AlignB, ElementAccumulator, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCount<STAGES>, KernelSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                        CollectiveEpilogue>;

// Explicit instantiation: `nvcc -ptx` emits the kernel without any host code.
template __global__ void cutlass::device_kernel<GemmKernel>(CUTLASS_GRID_CONSTANT typename GemmKernel::Params const);
