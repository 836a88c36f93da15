// A cluster of two CTAs exchanging data through distributed shared memory (sm_90a):
// each CTA's thread 0 writes its rank into its own shared word, the cluster synchronizes,
// each thread 0 reads its neighbour's word through map_shared_rank (mapa), and the cluster
// synchronizes again so that no CTA exits while its neighbour may still read its memory.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(64)
cluster_dsmem(int* out)
{
  __shared__ int word;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0)
    word = (int)rank + 1;
  cluster.sync();
  if (threadIdx.x == 0) {
    int* remote = cluster.map_shared_rank(&word, rank ^ 1);
    out[blockIdx.x] = *remote;
  }
  cluster.sync();
}
