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
// Before the select, a bound (cluster_bound): each warp offers the 4
// largest of its lanes' largest keys, and the k-th largest offer of the
// cluster bounds the row's k-th from below.  On random rows about k keys
// pass it; when at most kClusterK do, they go to the first CTA as they are
// and the select is skipped.  When more pass (a sorted row's best keys lie
// in a few warps), the select starts below the digits that the bound
// shares with the row's largest key.
#pragma once

#include <cooperative_groups.h>

#include "kgen/device/topk.cuh"

namespace kgen {
namespace device {
namespace topk {

using kgen::topk::kClusterK;  // the first CTA's warp sorts the selection (finish_warp)
using kgen::topk::kClusterMax;

constexpr int kClusterOffers = 4;  // a warp's offers for the bound

template <class T, int BLOCK> struct ClusterShared {
  static constexpr int kLevels = (KeyOf<T>::kBits + 7) / 8;
  unsigned hist[kLevels][256];  // this CTA's counts, a level each (never reused: no barrier to free them)
  unsigned total[256];          // the cluster's, of the current level
  unsigned scratch[BLOCK / 32 + 1];
  Choice choice;
  unsigned ties;    // this CTA's keys at the boundary
  unsigned filled;  // the first CTA: slots of `keys` taken
  key_t<T> keys[kClusterMax * kClusterK];        // the first CTA: the select's k keys, or each CTA's keys past the bound
  unsigned offer_hist[kLevels][256];              // the bound's counts of the offers, a level each
  bits_t<T> offers[BLOCK / 32 * kClusterOffers];  // this CTA's warps' offers for the bound
  unsigned passed, better;                        // this CTA's keys at or above the bound, and above its value
  unsigned passed_by[kClusterMax], better_by[kClusterMax];  // every CTA's `passed` and `better`, stored here by each
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
__device__ __forceinline__ void cluster_store(uint32_t a, unsigned v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
}

// The `kClusterOffers` largest of a warp's lanes' `top`s, lane t holding
// the t-th: distinct lanes' keys (a round takes its lowest lane of the
// largest), so each offer stands for a distinct key of the row.
template <class Bits> __device__ __forceinline__ Bits warp_offers(Bits top) {
  static_assert(sizeof(Bits) == 4, "one reduction a round");
  const unsigned lane = threadIdx.x % 32;
  Bits offer = 0;
#pragma unroll
  for (int t = 0; t < kClusterOffers; ++t) {
    const Bits m = __reduce_max_sync(kFull, top);
    if (lane == static_cast<unsigned>(t)) offer = m;
    if (lane == static_cast<unsigned>(__ffs(__ballot_sync(kFull, top == m)) - 1)) top = 0;
  }
  return offer;
}

// The k-th largest of the cluster's offers, one a thread (`held`), over
// 8-bit digits: two levels for the half types, four for 4-byte ones.  Two
// barriers a level (radix_select takes five): the counts of every level
// zeroed before, and warp 0 alone finds the bucket.  The offers, a row's
// largest values, share their top digits (count_digit's matched form).
// `shared`: the leading levels at which no offer lay above the chosen
// bucket, whose digits the k-th offer shares with the largest.
template <int W, class Bits>
__device__ __forceinline__ Bits kth_offer(Bits mine, bool held, unsigned k, unsigned (*hist)[256], Choice* choice,
                                          int& shared) {
  using D = Digits<W, 8>;
  Bits prefix = 0;
  unsigned want = k;
  shared = 0;
#pragma unroll 1
  for (int l = 0; l < D::kLevels; ++l) {
    count_digit<8>(hist[l], D::digit(mine, l), held && D::in(mine, l, prefix), Crowd::matched);
    __syncthreads();
    if (threadIdx.x < 32) {  // lane i: bins 255 - 8i down to 248 - 8i, scanned from the top
      const int lane = threadIdx.x;
      unsigned c[8], local = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) local += c[j] = hist[l][255 - 8 * lane - j];
      unsigned acc = local;
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const unsigned o = __shfl_up_sync(kFull, acc, d);
        if (lane >= d) acc += o;
      }
      acc -= local;
      if (acc < want && want <= acc + local) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (acc + c[j] >= want) {
            *choice = Choice{static_cast<unsigned>(255 - 8 * lane - j), acc, c[j]};
            break;
          }
          acc += c[j];
        }
      }
    }
    __syncthreads();
    const Choice c = *choice;  // rewritten next level only after its first barrier
    want -= c.above;
    prefix = (prefix << 8) | Bits(c.bucket);
    if (c.above == 0 && shared == l) shared = l + 1;
    if (c.count == want) return prefix << D::lo(l);  // every offer of the bucket is in
  }
  return prefix;
}

template <class Bits> struct ClusterBound {
  unsigned passed;  // the cluster's keys at or above the bound; past kClusterK, not all counted
  unsigned better;  // past kClusterK passing: the cluster's keys of a better value than the bound's
  Bits bound;
  int shared;  // the leading digit levels the bound shares with the row's largest key, so with every key above it
};

// The cluster's bound (the k-th largest offer of its warps) and the keys
// at or above it, each CTA's into its own run of kClusterK slots of the
// first CTA's `keys` (a shared atomic a warp, no cluster atomic: with
// every key passing, a row of one value, one address took every warp's).
// Each CTA stores its count of keys passing into every CTA, so that after
// the barrier none reads another's memory: when at most kClusterK pass,
// the first CTA's first warp moves them to the front and every other CTA
// may leave at once (a split barrier there, every CTA waiting before it
// left, drew racecheck hazards between the first CTA's reads of the keys
// and the other CTAs' stores before the full barrier; bench/NOTES.md topk
// v38).  The keys of a better value than the bound's are counted beside
// them: when too many pass and fewer than k are better, the bound's value
// is the k-th's.  Two cluster barriers.  On random rows about k keys pass
// (4 offers a warp; a simulation over normal rows of 32000-262144 at 8 x
// 1024 threads: at most k + 7 for k <= 128); a row of few values or a
// sorted one passes more.
template <class T, int BLOCK, int NP, int P, class Live, class Element>
__device__ __forceinline__ ClusterBound<bits_t<T>> cluster_bound(cooperative_groups::cluster_group& cluster,
                                                                 ClusterShared<T, BLOCK>& sh,
                                                                 const bits_t<T> (&s)[NP][P], Live&& live,
                                                                 Element&& element, unsigned k, unsigned rank,
                                                                 unsigned C) {
  using Bits = bits_t<T>;
  constexpr int kPerCta = BLOCK / 32 * kClusterOffers;
  constexpr unsigned kRoom = kClusterK;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Bits top = 0;  // this thread's largest (0 when it holds none: below every offer that counts)
#pragma unroll
  for (int q = 0; q < NP; ++q)
#pragma unroll
    for (int j = 0; j < P; ++j) top = live(q, j) && s[q][j] > top ? s[q][j] : top;
  const Bits offer = warp_offers(top);
  if (lane < kClusterOffers) sh.offers[warp * kClusterOffers + lane] = offer;
  cluster.sync();  // every CTA's offers are in
  // thread i reads offer i of the cluster (C x kPerCta <= BLOCK: C <= 8)
  const unsigned i = threadIdx.x;
  const bool held = i < C * kPerCta;
  const Bits mine = held ? *cluster.map_shared_rank(&sh.offers[i % kPerCta], i / kPerCta) : Bits(0);
  int shared;
  const Bits bound = kth_offer<KeyOf<T>::kBits>(mine, held, k, sh.offer_hist, &sh.choice, shared);
  const uint32_t out = cluster_address(sh.keys, 0) + rank * kRoom * 8u;
  // of a better value than the bound's: wanted only when too many pass,
  // counted here to save a barrier
  unsigned better = 0;
  if (__any_sync(kFull, top >= bound)) {
    bool room = true;  // a warp stops once its CTA's run is full
#pragma unroll
    for (int q = 0; q < NP; ++q)
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const bool take = live(q, j) && s[q][j] >= bound;
        better += take && s[q][j] != bound;
        const unsigned m = __ballot_sync(kFull, take && room);
        if (!m) continue;
        const unsigned at = warp_reserve(&sh.passed, m);
        room = at + __popc(m) <= kRoom;
        if (take && at + lanes_below(m) < kRoom) cluster_store(out + (at + lanes_below(m)) * 8u, make_key<T>(s[q][j], element(q, j)));
      }
  }
  better = __reduce_add_sync(kFull, better);
  if (lane == 0 && better) atomicAdd(&sh.better, better);
  __syncthreads();  // this CTA's counts are final: to every CTA's `passed_by` and `better_by`
  if (threadIdx.x < C) {
    cluster_store(cluster_address(&sh.passed_by[rank], threadIdx.x), sh.passed);
    cluster_store(cluster_address(&sh.better_by[rank], threadIdx.x), sh.better);
  }
  cluster.sync();  // every CTA's keys passing are counted, and placed while they fit
  const unsigned count = lane < C ? sh.passed_by[lane] : 0u, total = __reduce_add_sync(kFull, count);
  if (total <= kRoom) {  // no CTA reads another's memory from here: each may leave
    if (rank == 0 && warp == 0) {  // the CTAs' runs to the front, in rank order
      unsigned to = count;
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const unsigned o = __shfl_up_sync(kFull, to, d);
        if (lane >= d) to += o;
      }
      to -= count;  // CTA lane's first slot
      for (unsigned c = 1; c < C; ++c) {
        const unsigned n = __shfl_sync(kFull, count, c), at = __shfl_sync(kFull, to, c);
        for (unsigned b = 0; b < n; b += 32) {  // reads below writes never meet: at <= c x kRoom
          const unsigned e = b + lane;
          const key_t<T> v = e < n ? sh.keys[c * kRoom + e] : key_t<T>(0);
          __syncwarp();
          if (e < n) sh.keys[at + e] = v;
          __syncwarp();
        }
      }
    }
    return ClusterBound<Bits>{total, 0u, bound, shared};
  }
  better = __reduce_add_sync(kFull, lane < C ? sh.better_by[lane] : 0u);
  return ClusterBound<Bits>{total, better, bound, shared};
}

// A row over `C` CTAs (the cluster's size, set at launch): CTA `rank` holds
// packs [rank * chunk, rank * chunk + chunk) of the row, thread i its packs
// q * BLOCK + i.  Rows are clusters: row = blockIdx.x / C.  RAGGED (rows off
// the packs' alignment: x or n): the packs are those of the aligned span
// around the row, as the stream tier reads it (load_in_row), each element
// tested against the row's ends; an instance of its own, launched only for
// such rows.
template <class T, int BLOCK, int ITEMS, int P, bool RAGGED>
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
  const RowSpan<T, P, RAGGED> rs(row, o.n);
  const uint32_t lead = rs.lead, n32 = rs.n;
  const int64_t packs = rs.packs, first = rank * chunk;
  for (int i = threadIdx.x; i < L * 256; i += BLOCK) (&sh.hist[0][0])[i] = (&sh.offer_hist[0][0])[i] = 0;
  if (threadIdx.x == 0) sh.ties = sh.filled = sh.passed = sh.better = 0;
  // this thread's packs in the row: bit q of `held` (a mask, not 64-bit
  // compares at every use: those spilled at 64 registers)
  uint32_t held = 0;
#pragma unroll
  for (int q = 0; q < NP; ++q) {
    const int64_t in = int64_t{q} * BLOCK + threadIdx.x;
    held |= in < chunk && first + in < packs ? 1u << q : 0u;
  }
  // an element's index in the row (RAGGED: its index in the span less
  // lead, past n, unsigned, for the span's elements out of the row)
  const uint32_t base = static_cast<uint32_t>((first + threadIdx.x) * P) - lead;  // n < 2^32
  const auto element = [&](int q, int j) { return base + static_cast<uint32_t>(q * BLOCK * P + j); };
  const auto live = [&](int q, int j) { return (held >> q & 1u) != 0 && (!RAGGED || element(q, j) < n32); };
  Bits s[NP][P];
  {
    Pack<T, P> raw[NP];
#pragma unroll
    for (int q = 0; q < NP; ++q) {
      const int64_t at = first + int64_t{q} * BLOCK + threadIdx.x;
      const bool in = (held >> q & 1u) != 0;
      raw[q] = rs.load(at, in);
    }
#pragma unroll
    for (int q = 0; q < NP; ++q) to_orders<T, P>(raw[q], o.largest, s[q]);
  }
  __syncthreads();  // the counts zeroed
  // The radix select over the order bits: the keys whose digits above
  // level l are `prefix` are in play, `want` of them still to be chosen.
  Bits prefix = 0;
  unsigned want = static_cast<unsigned>(o.k);
  int lo = 0, l = 0;
  if (o.k <= static_cast<int64_t>(C) * (BLOCK / 32) * kClusterOffers) {
    const ClusterBound<Bits> b =
        cluster_bound<T, BLOCK, NP, P>(cluster, sh, s, live, element, static_cast<unsigned>(o.k), rank, C);
    if (b.passed <= static_cast<unsigned>(kClusterK)) {
      if (rank == 0 && threadIdx.x < 32) finish_by_warp<T>(sh.keys, static_cast<int>(b.passed), row, values, indices, r, o);
      return;
    }
    if (b.better < want) {  // the bound's value is the k-th's (a row of few values): its ties chosen below
      prefix = b.bound;
      want -= b.better;
      l = L;
    } else if (b.shared > 0 && b.shared < L) {  // the levels every key from the bound up shares are chosen
      l = b.shared;
      lo = D::lo(l - 1);
      prefix = b.bound >> lo;
    }
  }
#pragma unroll 1
  for (; l < L; ++l) {
    unsigned* h = sh.hist[l];
#pragma unroll
    for (int q = 0; q < NP; ++q)
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const bool in = live(q, j) && (l == 0 || (s[q][j] >> D::hi(l)) == prefix);
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
      for (int j = 0; j < P; ++j) mine += live(q, j) && s[q][j] == prefix;
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
      for (int j = 0; j < P; ++j) c += live(q, j) && s[q][j] == prefix;
      at = taken + block_exclusive_sum<BLOCK>(c, sh.scratch, &round);
      taken += round;
    }
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const Bits top = static_cast<Bits>(s[q][j] >> lo);
      bool take = false;
      if (live(q, j)) {
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
  const bool ragged = !kgen::topk::rows_aligned(p, P);
  const int c = kgen::topk::cluster_ctas(p, BLOCK * ITEMS, P);
  const int64_t chunk = (kgen::topk::span_packs(p, P) + c - 1) / c;  // packs a CTA
  const Output o{p.n, p.k, p.largest, p.sorted};
  auto kernel = cluster_kernel<T, BLOCK, ITEMS, P, false>;
  if constexpr (P > 1) {
    if (ragged) kernel = cluster_kernel<T, BLOCK, ITEMS, P, true>;
  }
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(c);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  const cudaError_t err =
      launch_with(attr, true, kernel, dim3(static_cast<unsigned>(p.batch * c)), BLOCK,
                  0, stream, static_cast<const T*>(p.x), static_cast<T*>(p.values), p.indices, o, chunk);
  return err != cudaSuccess ? err : cudaGetLastError();
}

}  // namespace topk
}  // namespace device
}  // namespace kgen
