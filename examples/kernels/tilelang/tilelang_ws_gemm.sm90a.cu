#if defined(_MSC_VER) && !defined(__clang__) && _MSC_VER < 1940
#define _tl_orig_alignas alignas
#define alignas(N) _tl_orig_alignas((N) <= 64 ? (N) : 64)
#include <cuda.h>
#undef alignas
#define alignas _tl_orig_alignas
#endif
#include <tl_templates/cuda/instruction/wgmma.h>
#include <tl_templates/cuda/intrin.h>
#include <tl_templates/cuda/barrier.h>
#include <tl_templates/cuda/reduce.h>
#include <tl_templates/cuda/scan.h>
#include <tl_templates/cuda/ldsm.h>
#include <tl_templates/cuda/threadblock_swizzle.h>
#include <tl_templates/cuda/debug.h>
#ifdef ENABLE_BF16
#include <tl_templates/cuda/cuda_bf16_fallbacks.cuh>
#endif

extern "C" __global__ void kernel_kernel(const half_t* __restrict__ A, const half_t* __restrict__ B, half_t* __restrict__ C);
extern "C" __global__ void __launch_bounds__(256, 1) kernel_kernel(const half_t* __restrict__ A, const half_t* __restrict__ B, half_t* __restrict__ C) {
  extern __shared__ __align__(1024) uchar buf_dyn_shmem[];
  void* a_tile = ((void*)((char*)buf_dyn_shmem + 0));
  void* b_tile = ((void*)((char*)buf_dyn_shmem + 32768));
  __shared__ __align__(16) uint64_t bars_mem[4];
  auto bars = reinterpret_cast<Barrier*>(bars_mem);
  float acc[128];
  if (tl::tl_shuffle_elect<0>()) {
    bars[0].init(128);
    bars[1].init(128);
    bars[2].init(128);
    bars[3].init(128);
  }
  tl::fence_barrier_init();
  __syncthreads();
  if (128 <= ((int)threadIdx.x)) {
    for (int k = 0; k < 3; ++k) {
      bars[((k & 1) + 2)].wait((((k >> 1) & 1) ^ 1));
      #pragma unroll
      for (int i = 0; i < 8; ++i) {
        *(uint4*)(((half_t*)a_tile) + ((((((((k & 1) * 8192) + (i * 1024)) + ((((int)threadIdx.x) >> 3) * 64)) + (((((((int)threadIdx.x) & 63) >> 5) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 32)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 3) >> 1)) & 1) * 16)) + (((((((int)threadIdx.x) & 15) >> 3) + (((int)threadIdx.x) & 1)) & 1) * 8)) - 1024)) = *(uint4*)(A + ((((((((int)blockIdx.y) * 24576) + (i * 3072)) + ((((int)threadIdx.x) >> 3) * 192)) + (k * 64)) + ((((int)threadIdx.x) & 7) * 8)) - 3072));
      }
      #pragma unroll
      for (int i_1 = 0; i_1 < 8; ++i_1) {
        *(uint4*)(((half_t*)b_tile) + ((((((((k & 1) * 8192) + (((((int)threadIdx.x) & 15) >> 3) * 4096)) + (i_1 * 512)) + (((((int)threadIdx.x) & 127) >> 4) * 64)) + (((((((int)threadIdx.x) & 127) >> 6) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 32)) + (((((((int)threadIdx.x) & 63) >> 5) + ((((int)threadIdx.x) & 3) >> 1)) & 1) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + (((int)threadIdx.x) & 1)) & 1) * 8))) = *(uint4*)(B + ((((((k * 65536) + (i_1 * 8192)) + ((((int)threadIdx.x) >> 4) * 1024)) + (((int)blockIdx.x) * 128)) + ((((int)threadIdx.x) & 15) * 8)) - 8192));
      }
      bars[(k & 1)].arrive();
    }
  } else {
    #pragma unroll
    for (int i_2 = 0; i_2 < 32; ++i_2) {
      float broadcast_var = 0x0p+0f/*0.000000e+00*/;
      *(float4*)(acc + (i_2 * 4)) = make_float4(broadcast_var, broadcast_var, broadcast_var, broadcast_var);
    }
    for (int k_1 = 0; k_1 < 3; ++k_1) {
      bars[(k_1 & 1)].wait(((k_1 >> 1) & 1));
      {
        tl::GmmaDescriptor desc_a;
        tl::GmmaDescriptor desc_b;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_a, (&(((half_t*)a_tile)[0])));
        tl::increase_descriptor_offset<int>(desc_a, ((k_1 & 1) * 16384));
        tl::initialize_wgmma_descriptor<1, 512, 64>(desc_b, (&(((half_t*)b_tile)[0])));
        tl::increase_descriptor_offset<int>(desc_b, ((k_1 & 1) * 16384));
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc + 0), 128);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int i_3 = 0; i_3 < 2; ++i_3) {
          #pragma unroll
          for (int ki = 0; ki < 4; ++ki) {
            tl::wgmma_ss<tl::DataType::kFloat16, tl::DataType::kFloat16, tl::DataType::kFloat32, 64, 128, 16, false, true, 1, 1>(uint64_t(desc_a + (((i_3 * 8192) + (ki * 32)) >> 4)), uint64_t(desc_b + ((ki * 2048) >> 4)), ((uint32_t*)(acc + (i_3 * 64))), 1);
          }
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_wait<0>();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc + 0), 128);
      }
      bars[((k_1 & 1) + 2)].arrive();
    }
    #pragma unroll
    for (int i_4 = 0; i_4 < 64; ++i_4) {
      half_t C_local_cast[2];
      uint1 __1;
      float2 v_ = *(float2*)(acc + (i_4 * 2));
      ((half2*)(&__1))[0] = __float22half2_rn(((float2*)(&v_))[0]);
      *(uint1*)(C_local_cast + 0) = __1;
      *(uint1*)(C + ((((((((((int)blockIdx.y) * 131072) + ((i_4 >> 5) * 65536)) + ((((int)threadIdx.x) >> 5) * 16384)) + ((i_4 & 1) * 8192)) + (((((int)threadIdx.x) & 31) >> 2) * 1024)) + (((int)blockIdx.x) * 128)) + (((i_4 & 31) >> 1) * 8)) + ((((int)threadIdx.x) & 3) * 2))) = *(uint1*)(C_local_cast + 0);
    }
  }
}

