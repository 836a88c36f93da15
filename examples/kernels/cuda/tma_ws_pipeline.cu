// A hand-written warp-specialized TMA ring with libcu++'s cuda::ptx wrappers (sm_90a).
// Warp 0's elected lane is the producer: it waits until a stage is empty, arms the stage's
// `full` mbarrier with the tile's bytes and TMA-loads the tile. Warps 4-7 are the consumer
// warpgroup: each thread waits on `full`, reads its element with a generic ld.shared, orders
// that read before the next TMA write with fence.proxy.async, and arrives on `empty`
// (count 128: one arrival per consumer thread).
#include <cuda/ptx>
#include <cstdint>
namespace ptx = cuda::ptx;

struct alignas(64) TensorMap { unsigned char bytes[128]; };

constexpr int STAGES = 2;
constexpr int TILE_BYTES = 64 * 64 * 2;

extern "C" __global__ void __launch_bounds__(256)
tma_ws_pipeline(const __grid_constant__ TensorMap tmap, float* out, int k_tiles)
{
  __shared__ alignas(128) unsigned char tile[STAGES][TILE_BYTES];
  __shared__ uint64_t full[STAGES], empty[STAGES];
  const int warp = threadIdx.x / 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      ptx::mbarrier_init(&full[s], 1);
      ptx::mbarrier_init(&empty[s], 128);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (warp == 0) {
    if (ptx::elect_sync(~0u)) {
      for (int k = 0; k < k_tiles; ++k) {
        const int s = k % STAGES;
        const uint32_t phase = (k / STAGES) & 1;
        while (!ptx::mbarrier_try_wait_parity(&empty[s], phase ^ 1)) {}
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s], TILE_BYTES);
        const int32_t coords[2] = {k * 64, (int32_t)blockIdx.x * 64};
        ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, tile[s], &tmap, coords, &full[s]);
      }
    }
  } else if (warp >= 4) {
    float acc = 0.0f;
    for (int k = 0; k < k_tiles; ++k) {
      const int s = k % STAGES;
      const uint32_t phase = (k / STAGES) & 1;
      while (!ptx::mbarrier_try_wait_parity(&full[s], phase)) {}
      acc += reinterpret_cast<const float*>(tile[s])[threadIdx.x - 128];
      ptx::fence_proxy_async(ptx::space_shared);
      ptx::mbarrier_arrive(&empty[s]);
    }
    out[blockIdx.x * 128 + threadIdx.x - 128] = acc;
  }
}
