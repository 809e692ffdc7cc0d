// Top-k's cluster tier: one row over the CTAs of a thread-block cluster
// (up to 8), the row read once into their registers.  For the rows of
// sampling (a batch of 1-256 rows of 32K-262K, k up to 100) the multi tier
// took 9-10 launches, most of them short and waiting on the one before
// (H200, 1 x 128256 bfloat16 k 50: 40 us of kernels, 8.3 and 8.9 of them
// the two passes that read x), and a block a row left a row of 32000 to
// one SM (18 us).  Here the CTAs of a cluster hold a chunk of the row each
// and run one radix select over the order bits together: each level's
// 8-bit digits are counted in each CTA's shared memory, every CTA sums the
// cluster's counts through distributed shared memory and picks the same
// bucket.  The chosen keys (exactly k) are then appended to the first
// CTA's shared memory, which sorts and writes them.  One launch, no
// workspace; k <= kClusterK.
#pragma once

#include <cooperative_groups.h>

#include "kgen/device/topk.cuh"

namespace kgen {
namespace device {
namespace topk {

using kgen::topk::kClusterK;  // the first CTA's warp sorts the selection (finish_warp)

template <class T, int BLOCK> struct ClusterShared {
  static constexpr int kLevels = (KeyOf<T>::kBits + 7) / 8;
  unsigned hist[kLevels][256];  // this CTA's counts, a level each (never reused: no barrier to free them)
  unsigned total[256];          // the cluster's, of the current level
  unsigned scratch[BLOCK / 32 + 1];
  Choice choice;
  unsigned ties;    // this CTA's keys at the boundary
  unsigned filled;  // the first CTA: slots of `keys` taken
  key_t<T> keys[kClusterK];
};

// Shared memory of CTA `rank` of the cluster, at this CTA's `p`'s offset.
template <class V> __device__ __forceinline__ uint32_t cluster_address(V* p, unsigned rank) {
  uint32_t a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p))), "r"(rank));
  return a;
}
__device__ __forceinline__ unsigned cluster_atomic_add(uint32_t a, unsigned v) {
  unsigned old;
  asm volatile("atom.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(a), "r"(v) : "memory");
  return old;
}
static_assert(sizeof(key_t<float>) == 8 && sizeof(key_t<__half>) == 8, "the cluster tier's keys: 64 bits (not float64)");
__device__ __forceinline__ void cluster_store(uint32_t a, uint64_t v) {
  asm volatile("st.shared::cluster.u64 [%0], %1;" ::"r"(a), "l"(v) : "memory");
}

// A row over `C` CTAs (the cluster's size, set at launch): CTA `rank` holds
// packs [rank * chunk, rank * chunk + chunk) of the row, thread i its packs
// q * BLOCK + i.  Rows are clusters: row = blockIdx.x / C.
template <class T, int BLOCK, int ITEMS, int P>
__global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
    cluster_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices, Output o,
                   int64_t chunk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  return;  // no clusters before sm_90: never launched there (the tier's min_arch)
#else
  namespace cg = cooperative_groups;
  using Bits = bits_t<T>;
  using D = Digits<KeyOf<T>::kBits, 8>;
  constexpr int NP = ITEMS / P, L = D::kLevels;
  __shared__ ClusterShared<T, BLOCK> sh;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), C = cluster.num_blocks();
  const int64_t r = blockIdx.x / C;
  const T* row = x + r * o.n;
  const int64_t packs = o.n / P, first = rank * chunk;
  for (int i = threadIdx.x; i < L * 256; i += BLOCK) (&sh.hist[0][0])[i] = 0;
  if (threadIdx.x == 0) sh.ties = sh.filled = 0;
  // this thread's packs in the row: bit q of `held` (a mask, not 64-bit
  // compares at every use: those spilled at 64 registers)
  uint32_t held = 0;
#pragma unroll
  for (int q = 0; q < NP; ++q) {
    const int64_t in = int64_t{q} * BLOCK + threadIdx.x;
    held |= in < chunk && first + in < packs ? 1u << q : 0u;
  }
  const auto live = [&](int q) { return (held >> q & 1u) != 0; };
  const uint32_t base = static_cast<uint32_t>((first + threadIdx.x) * P);  // n < 2^32
  const auto element = [&](int q, int j) { return base + static_cast<uint32_t>(q * BLOCK * P + j); };
  Bits s[NP][P];
  {
    Pack<T, P> raw[NP];
#pragma unroll
    for (int q = 0; q < NP; ++q) raw[q] = load_pack<T, P>(row, first + int64_t{q} * BLOCK + threadIdx.x, live(q));
#pragma unroll
    for (int q = 0; q < NP; ++q) to_orders<T, P>(raw[q], o.largest, s[q]);
  }
  __syncthreads();  // the counts zeroed
  // The radix select over the order bits: the keys whose digits above
  // level l are `prefix` are in play, `want` of them still to be chosen.
  Bits prefix = 0;
  unsigned want = static_cast<unsigned>(o.k);
  int lo = 0, l = 0;
#pragma unroll 1
  for (; l < L; ++l) {
    unsigned* h = sh.hist[l];
#pragma unroll
    for (int q = 0; q < NP; ++q)
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const bool in = live(q) && (l == 0 || (s[q][j] >> D::hi(l)) == prefix);
        count_digit<8>(h, D::digit(s[q][j], l), in, Crowd::voted);
      }
    cluster.sync();  // every CTA's counts of level l are in
    if (threadIdx.x < 256) {
      unsigned t = 0;
      for (unsigned c = 0; c < C; ++c) t += *cluster.map_shared_rank(&h[threadIdx.x], c);
      sh.total[threadIdx.x] = t;
    }
    __syncthreads();
    choose_bucket<BLOCK, 256>(sh.total, want, &sh.choice, sh.scratch);
    const Choice c = sh.choice;
    want -= c.above;
    prefix = (prefix << D::width(l)) | static_cast<Bits>(c.bucket);
    lo = D::lo(l);
    if (c.count == want) break;  // the whole bucket is chosen
  }
  // Chosen: the keys above the boundary ((s >> lo) > prefix) and `want` at
  // it, all of them when the loop ended early, else (lo == 0: the k-th's
  // ties) the lowest indices: CTAs in rank order, then packs, threads and
  // elements in index order.
  const bool all = l < L;
  unsigned quota = ~0u;  // of this CTA's keys at the boundary
  if (!all) {
    unsigned mine = 0;
#pragma unroll
    for (int q = 0; q < NP; ++q)
#pragma unroll
      for (int j = 0; j < P; ++j) mine += live(q) && s[q][j] == prefix;
    mine = __reduce_add_sync(kFull, mine);
    if (threadIdx.x % 32 == 0 && mine) atomicAdd(&sh.ties, mine);
    cluster.sync();  // every CTA's ties are counted
    unsigned before = 0;
    for (unsigned c = 0; c < rank; ++c) before += *cluster.map_shared_rank(&sh.ties, c);
    quota = want > before ? want - before : 0u;
  }
  const unsigned ties = all ? 0u : sh.ties;
  // the first CTA's counter and keys as 32-bit shared::cluster addresses
  // (generic 64-bit pointers to them spilled at 64 registers)
  const uint32_t filled = cluster_address(&sh.filled, 0), out = cluster_address(sh.keys, 0);
  const bool partial = !all && quota > 0 && quota < ties;  // the same for the whole CTA
  unsigned taken = 0;  // partial: this CTA's boundary keys before this round
#pragma unroll
  for (int q = 0; q < NP; ++q) {
    unsigned at = 0;  // partial: this thread's first boundary key's rank in the CTA
    if (partial) {
      unsigned c = 0, round = 0;
#pragma unroll
      for (int j = 0; j < P; ++j) c += live(q) && s[q][j] == prefix;
      at = taken + block_exclusive_sum<BLOCK>(c, sh.scratch, &round);
      taken += round;
    }
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const Bits top = static_cast<Bits>(s[q][j] >> lo);
      bool take = false;
      if (live(q)) {
        if (top > prefix) take = true;
        else if (top == prefix) take = partial ? at++ < quota : quota > 0;
      }
      const unsigned m = __ballot_sync(kFull, take);
      if (!m) continue;
      // the warp's first in the first CTA's keys
      const unsigned slot = warp_reserve_by(m, [filled](unsigned n) { return cluster_atomic_add(filled, n); });
      if (take) cluster_store(out + (slot + lanes_below(m)) * 8u, make_key<T>(s[q][j], element(q, j)));
    }
  }
  cluster.sync();  // the k chosen keys are in the first CTA
  if (rank != 0 || threadIdx.x >= 32) return;
  const int k = static_cast<int>(o.k);
  finish_by_warp<T>(sh.keys, k, row, values, indices, r, o);
#endif
}

template <class T, int BLOCK, int ITEMS, int P>
cudaError_t launch_cluster(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const int c = kgen::topk::cluster_ctas(p, BLOCK * ITEMS);
  const int64_t chunk = (p.n / P + c - 1) / c;  // packs a CTA
  const Output o{p.n, p.k, p.largest, p.sorted};
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(c);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  const cudaError_t err =
      launch_with(attr, true, cluster_kernel<T, BLOCK, ITEMS, P>, dim3(static_cast<unsigned>(p.batch * c)), BLOCK,
                  0, stream, static_cast<const T*>(p.x), static_cast<T*>(p.values), p.indices, o, chunk);
  return err != cudaSuccess ? err : cudaGetLastError();
}

}  // namespace topk
}  // namespace device
}  // namespace kgen
