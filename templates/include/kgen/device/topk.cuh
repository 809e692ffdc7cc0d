// Top-k over the last dim: the kernels of every strategy and their host
// launchers.  Generated variants instantiate the launchers with fixed
// parameters (templates/topk.cu.j2).
//   tourney  a warp, or a power of two of its lanes, per row of up to
//          32*ITEMS held in registers: k <= 32 rounds of a group maximum
//          over the lanes' sorted keys; larger k sorts the row by a warp.
//   queue  one warp per row.  k <= 16: the k-th largest of the lanes'
//          largest keys bounds the row's k-th; a second read gathers the
//          keys above it and one warp sort orders them.  Otherwise (or when
//          too many pass) the best 32*C keys so far live in registers,
//          sorted across the warp, and a round of loads is merged in (warp
//          bitonic sort + bitonic merge) only when some lane holds a key
//          above the current k-th.  k <= 32*C.
//   block  one block per row, the row in registers (ITEMS per thread); the
//          k-th bounded by the threads' largest keys (few keys above it are
//          gathered and sorted), else radix select with R-bit digits.
//   cluster  one row over a thread-block cluster's CTAs, in their registers;
//          one radix select through distributed shared memory, k <= 128
//          (topk_cluster.cuh).
//   multi  several blocks per row: every warp offers its lanes' largest
//          keys, the k-th largest offer bounds the row's k-th, one pass
//          gathers the keys above it and one block sorts them.  Rows where
//          too many pass go through the digit passes: a count of the first
//          digit (the row's last block picks the bucket on the device), then
//          one pass per digit that appends the keys above the bucket, counts
//          the next digit and compacts the bucket into a list that the next
//          pass reads instead of the row, until one block's sort holds them.
// An unsorted selection past what one block's sort holds is written in
// index order: from the block tier's registers (write_in_order), or by the
// multi tier's passes over the row once the k-th's value is known
// (multi_write_in_order_kernel).  A sorted one is written as (value, index)
// pairs, which a radix sort over the whole GPU orders by value (stably;
// CUB, runtime/src/topk/sort.cu) before an output pass.
#pragma once

#include <algorithm>

#include "kgen/device/common.cuh"
#include "kgen/device/topk_block.cuh"
#include "kgen/device/topk_warp.cuh"
#include "topk/problem.hpp"

namespace kgen {
namespace device {
namespace topk {

using kgen::topk::Plan;
using kgen::topk::Problem;
using kgen::topk::RowState;

// Programmatic dependent launch (sm_90): the digit passes of the
// multi-block select are a chain of short kernels; each lets the next one
// launch early and waits, at its start, for the one before to finish and
// its writes to be visible.  What it saves is the launch gap between
// them.  Elsewhere (or launched plainly) both are no-ops.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void let_next_grid_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <class Kernel, class... Args>
cudaError_t launch_chained(bool chained, Kernel kernel, dim3 grid, int block, cudaStream_t stream,
                           Args... args) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  return launch_with(attr, chained, kernel, grid, block, 0, stream, args...);
}

template <class T> constexpr int kSortCapacity = 32768 / sizeof(key_t<T>);
__host__ __device__ constexpr int pow2_at_least(int v) { return v <= 1 ? 1 : 2 * pow2_at_least((v + 1) / 2); }
// The same for a value known only at run time: pow2_at_least's recursion
// is a real call there (ptxas: a 16-byte stack frame).
__device__ __forceinline__ int pow2_at_least_rt(int v) { return v <= 1 ? 1 : 1 << (32 - __clz(v - 1)); }

// Pack q of a row (elements q*P .. q*P+P-1), or zeros when !valid.  A pack
// is in the row whole or not at all: P > 1 needs n % P == 0 (supports()).
// Loads are predicated, not branched around, and a caller issues all of a
// round's loads before converting any: with the conversion inside each
// load's branch, ptxas waited on every load before issuing the next (H100,
// 2^24 float32: the first digit pass at 66 us for 64 MiB).
template <class T, int P>
__device__ __forceinline__ Pack<T, P> load_pack(const T* row, int64_t q, bool valid) {
  Pack<T, P> pk{};
  if (valid) pk = *reinterpret_cast<const Pack<T, P>*>(row + q * P);
  return pk;
}

// Pack `at` of `span`, whose elements lead .. lead + n - 1 are a row's
// (`valid`: the pack is in the caller's share): loaded whole where all its
// elements are the row's, else element by element (0 elsewhere), so that
// no load reaches past the row's ends (the stream and cluster tiers' rows
// off the packs' alignment).
template <class T, int P>
__device__ __forceinline__ Pack<T, P> load_in_row(const T* span, int64_t at, bool valid, uint32_t lead,
                                                  uint32_t n) {
  const uint32_t e = static_cast<uint32_t>(at) * P;  // the pack's first virtual index
  if (P == 1 || !valid || (e >= lead && e + P - lead <= n)) return load_pack<T, P>(span, at, valid);
  Pack<T, P> pk{};
#pragma unroll
  for (int j = 0; j < P; ++j)
    if (e + j - lead < n) pk.v[j] = span[e + j];
  return pk;
}

// A row read in packs of P elements, where RAGGED (x or n off the packs'
// alignment) in the packs of the aligned span around it: the row's
// elements are lead .. lead + n - 1 of the span's (the stream and cluster
// tiers' instances for such rows).
template <class T, int P, bool RAGGED> struct RowSpan {
  uint32_t lead;  // 0 where aligned
  const T* span;
  uint32_t n;     // supports(): n + lead + a chunk < 2^32
  int64_t packs;  // the span's
  __device__ __forceinline__ RowSpan(const T* row, int64_t n64)
      : lead(RAGGED ? static_cast<uint32_t>(reinterpret_cast<uintptr_t>(row) / sizeof(T) % P) : 0),
        span(row - lead),
        n(static_cast<uint32_t>(n64)),
        packs((int64_t{lead} + n64 + P - 1) / P) {}
  // pack `at` of the span, zeros where !valid (RAGGED: its elements out of
  // the row too, loaded one by one at the row's ends)
  __device__ __forceinline__ Pack<T, P> load(int64_t at, bool valid) const {
    return RAGGED ? load_in_row<T, P>(span, at, valid, lead, n) : load_pack<T, P>(span, at, valid);
  }
};

template <class T, int P>
__device__ __forceinline__ void to_orders(const Pack<T, P>& pk, bool largest, bits_t<T>* out) {
#pragma unroll
  for (int j = 0; j < P; ++j) out[j] = order_bits(pk.v[j], largest);
}

// to_orders of the half types two elements a 32-bit word (order_bits2): the
// tourney's form.  H200 (topk v52): bfloat16 65536 x 256 k 8 37.0 -> 32.1
// us, float16 36.9 -> 32.0.  The stream and cluster tiers ran 11-35% slower
// with it in their chunks (float16 1 x 12799559 k 2 off the alignment 42.1
// -> 56.9 us, 6 x 1577431 constant k 15 47.1 -> 56.9; the cluster's 1 x
// 166597 k 6 14.0 -> 16.0) and keep to_orders: their blocks of 1024 hold
// a thread to 64 registers, and the two halves' unpacking spilled more
// (ptxas, the float16 stream kernel at items 16 off the alignment: 128 ->
// 230 bytes of spill stores; aligned 0 -> 44).
template <class T, int P>
__device__ __forceinline__ void to_orders_paired(const Pack<T, P>& pk, bool largest, bits_t<T>* out) {
  if constexpr (KeyOf<T>::kBits == 16 && P % 2 == 0) {
#pragma unroll
    for (int h = 0; h < P / 2; ++h) {
      const uint32_t ord = order_bits2<T>(reinterpret_cast<const uint32_t*>(&pk)[h], largest);
      out[2 * h] = ord & 0xffffu;
      out[2 * h + 1] = ord >> 16;
    }
  } else {
    to_orders<T, P>(pk, largest, out);
  }
}

// ---- block: one block per row, the row in registers -------------------------

// A value the compiler must take as changed here: keeps it from hoisting a
// computation on it out of a loop (and holding every result live).
__device__ __forceinline__ uint32_t opaque(uint32_t v) {
  asm volatile("" : "+r"(v));
  return v;
}
__device__ __forceinline__ uint64_t opaque(uint64_t v) {
  asm volatile("" : "+l"(v));
  return v;
}

// The lowest order bits of a warp, on every lane.
template <class Bits> __device__ __forceinline__ Bits warp_min_bits(Bits v) {
  if constexpr (sizeof(Bits) == 4) {
    return __reduce_min_sync(kFull, v);
  } else {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) {
      const Bits o = __shfl_xor_sync(kFull, v, m);
      v = o < v ? o : v;
    }
    return v;
  }
}

// Where a selection written in index order goes: the output, or, for a
// sorted k past one block's sort, the global sort's pairs (problem.hpp's
// PairSort): the key (the row's rank above the order bits when the batch
// is sorted at once) and the index, at row * k + the rank.
struct Pairs {
  void* keys;  // null: the output
  unsigned* index;
  int key_bytes;  // 4 or 8
  bool fold;
  int64_t batch;
};

template <class T>
__device__ __forceinline__ void put_pair(const Pairs& pr, int64_t at, int64_t r, bits_t<T> order, uint32_t index) {
  uint64_t key = order;
  if constexpr (KeyOf<T>::kBits < 64)
    if (pr.fold) key |= static_cast<uint64_t>(pr.batch - 1 - r) << KeyOf<T>::kBits;
  if (pr.key_bytes == 4) static_cast<uint32_t*>(pr.keys)[at] = static_cast<uint32_t>(key);
  else static_cast<uint64_t*>(pr.keys)[at] = key;
  pr.index[at] = index;
}

// Element `e` of row r, of order bits `order`, at rank `at` of the row's
// selection in index order; its value made from the order bits.
template <class T>
__device__ __forceinline__ void put_in_order(const Pairs& pr, const T* row, T* values, int64_t* indices, int64_t r,
                                             const Output& o, int64_t at, bits_t<T> order, uint32_t e) {
  if (pr.keys) {
    put_pair<T>(pr, r * o.k + at, r, order, e);
  } else {
    values[r * o.k + at] = value_of<T>(order, o.largest, row, e);
    indices[r * o.k + at] = e;
  }
}

// A selection of a row held in a block's registers (thread i's pack q:
// elements (q * BLOCK + i) * P ..), written in index order: the selected
// keys (those >= t, exactly k) whose value beats the k-th's first, then the
// k-th's ties, each run by index: the unsorted output, or the pairs of a
// sorted k past one block's sort.  finish_candidates orders them so by two
// block sorts of k keys; here one block scan a round of packs ranks them
// (both runs' counts in one word: a round's counts stay below 2^16).
// `scan`: BLOCK / 32 + 1 words; `kth`: ~0 on entry.
template <class T, int BLOCK, int NP, int P>
__device__ __forceinline__ void write_in_order(const bits_t<T> (&s)[NP][P], key_t<T> t, const T* row, T* values,
                                               int64_t* indices, int64_t r, const Output& o, unsigned* scan,
                                               bits_t<T>* kth, const Pairs& pr) {
  using Bits = bits_t<T>;
  static_assert(BLOCK * P < 65536, "a round's counts fit 16 bits");
  auto element = [&](int q, int j) { return (static_cast<uint32_t>(q) * BLOCK + threadIdx.x) * P + j; };
  Bits low = ~Bits(0);  // the k-th's order: the lowest among the selected
#pragma unroll
  for (int q = 0; q < NP; ++q)
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const uint32_t e = element(q, j);
      if (e < o.n && make_key<T>(s[q][j], e) >= t && s[q][j] < low) low = s[q][j];
    }
  low = warp_min_bits(low);
  if (threadIdx.x % 32 == 0) atomic_min_bits(kth, low);
  __syncthreads();
  const Bits kth_order = *kth;
  unsigned better = 0;
#pragma unroll
  for (int q = 0; q < NP; ++q)
#pragma unroll
    for (int j = 0; j < P; ++j) better += element(q, j) < o.n && s[q][j] > kth_order;
  unsigned at_better = 0, at_tie = 0;
  block_exclusive_sum<BLOCK>(better, scan, &at_tie);  // the ties follow every better key
#pragma unroll
  for (int q = 0; q < NP; ++q) {
    unsigned c = 0;  // better keys in the low half, taken ties in the high
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const uint32_t e = element(q, j);
      if (e < o.n) c += s[q][j] > kth_order ? 1u : s[q][j] == kth_order && make_key<T>(s[q][j], e) >= t ? 1u << 16 : 0u;
    }
    unsigned round = 0;
    const unsigned before = block_exclusive_sum<BLOCK>(c, scan, &round);
    unsigned b = at_better + (before & 0xffffu), u = at_tie + (before >> 16);
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const uint32_t e = element(q, j);
      if (e >= o.n) continue;
      if (s[q][j] > kth_order) put_in_order<T>(pr, row, values, indices, r, o, b++, s[q][j], e);
      else if (s[q][j] == kth_order && make_key<T>(s[q][j], e) >= t)
        put_in_order<T>(pr, row, values, indices, r, o, u++, s[q][j], e);
    }
    at_better += round & 0xffffu;
    at_tie += round >> 16;
  }
}

// Bounded to 64 registers a thread: at 104 (256 x 16 float32) two blocks
// shared an SM and a row's selection latency was not hidden.  SORTED: a
// sorted k that one block's sort holds, compiled apart from the writes in
// index order (the unsorted output, and the pairs of a larger sorted k):
// with those scans in the same kernel the sorted selections ran 7-49%
// slower (H200: 4096 x 4096 float32 k 2048, 507 -> 545 us; 901 x 2492
// int32 k 190, 36.4 -> 54.2).
template <class T, int BLOCK, int ITEMS, int R, int P, bool SORTED>
__global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
    block_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices, Pairs pairs,
                 Output o) {
  using Key = key_t<T>;
  using Bits = bits_t<T>;
  constexpr int NP = ITEMS / P;
  // the sort buffer holds a whole tile when it can (shared memory per
  // block sets how many blocks share an SM: small tiles want many)
  constexpr int CAP = BLOCK * ITEMS < kSortCapacity<T> ? pow2_at_least(BLOCK * ITEMS) : kSortCapacity<T>;
  __shared__ SelectShared<BLOCK, R> sh;
  __shared__ SelectShared<BLOCK, 8> sh_top;  // one key a thread: 8-bit digits, cheap levels
  __shared__ FinishShared<T, BLOCK, CAP> fin;
  Key* const sort_keys = fin.keys;
  __shared__ unsigned count;
  __shared__ Bits kth;
  __shared__ unsigned long long warp_bound;
  __shared__ unsigned scan[BLOCK / 32 + 1];
  const int64_t r = blockIdx.x;
  const T* row = x + r * o.n;
  Bits s[NP][P];
  {
    const int64_t packs = o.n / P;  // whole: n % P == 0
    Pack<T, P> raw[NP];
#pragma unroll
    for (int q = 0; q < NP; ++q) {
      const int64_t at = int64_t{q} * BLOCK + threadIdx.x;
      raw[q] = load_pack<T, P>(row, at, at < packs);
    }
#pragma unroll
    for (int q = 0; q < NP; ++q) to_orders<T, P>(raw[q], o.largest, s[q]);
  }
  // Keys are made from the order bits at each use: held as keys (twice the
  // registers), a row of 32 items a thread spilled at 1024 threads.
  auto each = [&](auto&& f) {
#pragma unroll
    for (int q = 0; q < NP; ++q)
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const uint32_t e = (static_cast<uint32_t>(q) * BLOCK + threadIdx.x) * P + j;
        f(make_key<T>(opaque(s[q][j]), e), e < o.n);
      }
  };
  if (threadIdx.x == 0) {
    count = 0;
    kth = ~Bits(0);
  }
  // Small k: the k-th largest of the threads' largest keys bounds the row's
  // k-th from below (k threads hold a key at least that large).  The keys
  // above the bound are few (random rows: about k), so they are gathered
  // and sorted instead of counting every key of the row per digit, which
  // is bound by shared-memory atomics on rows whose values share their top
  // bits (H100, 1024 x 32768 float32, k 64: 222 us counting every key).
  // For k <= 16 each warp's k-th largest of its lanes' largest keys is such
  // a bound too (found by a warp sort, no block barrier); the block takes
  // the highest.  (At k = 32 it is the lowest lane's largest: too weak.)
  const int64_t holders = (o.n + P - 1) / P < BLOCK ? (o.n + P - 1) / P : BLOCK;
  if (2 * o.k <= BLOCK && o.k <= holders) {
    Key top = Key(0);
    each([&](Key key, bool valid) {
      if (valid && key > top) top = key;
    });
    Key bound;
    if constexpr (sizeof(Key) == 8) {
      if (o.k <= 16) {
        if (threadIdx.x == 0) warp_bound = 0;
        __syncthreads();
        Key lanes[1] = {top};
        warp_sort<1>(lanes);
        const Key kth_top = shfl_key(lanes[0], static_cast<int>(o.k) - 1);
        if (threadIdx.x % 32 == 0 && kth_top) atomicMax(&warp_bound, static_cast<unsigned long long>(kth_top));
        __syncthreads();
        bound = warp_bound;
      } else {
        auto each_top = [&](auto&& f) { f(top, top != Key(0)); };
        bound = radix_select<kKeyWidth<T>, 8, BLOCK, Key>(each_top, 0, Key(0), static_cast<unsigned>(o.k), sh_top);
      }
    } else {
      auto each_top = [&](auto&& f) { f(top, top != Key(0)); };
      bound = radix_select<kKeyWidth<T>, 8, BLOCK, Key>(each_top, 0, Key(0), static_cast<unsigned>(o.k), sh_top);
    }
    each([&](Key key, bool valid) {
      const bool take = valid && key >= bound;
      const unsigned m = __ballot_sync(kFull, take);
      if (!m) return;
      const unsigned at = warp_reserve(&count, m) + lanes_below(m);
      if (take && at < CAP) sort_keys[at] = key;
    });
    __syncthreads();
    const unsigned m = count;
    if (m <= 128 && o.k <= 128) {  // one warp sorts them in registers
      if (threadIdx.x < 32) finish_by_warp<T>(sort_keys, static_cast<int>(m), row, values, indices, r, o);
      return;
    }
    if (m <= CAP) {
      finish_candidates<BLOCK, T, CAP, false>(fin, static_cast<int>(m), row, values, indices, r, o);
      return;
    }
    __syncthreads();  // too many above the bound (a row of few distinct values): count digits
    if (threadIdx.x == 0) count = 0;
  }
  // k = n: every key is selected (the barrier orders count's reset before
  // the collection, as radix_select's do)
  Key t = Key(0);
  if (o.k == o.n) __syncthreads();
  else t = radix_select<kKeyWidth<T>, R, BLOCK, Key>(each, 0, Key(0), static_cast<unsigned>(o.k), sh);
  if constexpr (!SORTED) {
    write_in_order<T, BLOCK, NP, P>(s, t, row, values, indices, r, o, scan, &kth, pairs);
  } else {  // k <= kSortCapacity (else the pairs, above); k <= n <= tile when CAP < kSortCapacity
    const Collected<T> c{sort_keys, &count};
    each([&](Key key, bool valid) { collect<T>(c, key, valid && key >= t); });
    __syncthreads();
    finish_candidates<BLOCK, T>(fin, static_cast<int>(o.k), row, values, indices, r, o);
  }
}

// ---- multi: several blocks per row ------------------------------------------

struct MultiArgs {
  RowState* state;
  unsigned* hist;      // batch x 2^R counts of the first digit
  void* selected;      // batch x k keys
  void* cand;          // batch x 2 lists x candidates keys
  void* tops;          // batch x warps x offers_per_warp keys offered for the bound
  unsigned* ties;      // 2 x batch x blocks_per_row: each block's keys in play once they are ties,
                       // then each block's keys of a better value than the bound's (the gather's)
  int64_t batch, candidates, offers_per_warp;
};

// Row r's counts a block (grid y) in the ties region.
__device__ __forceinline__ unsigned* tie_counts(const MultiArgs& a, int64_t r) { return a.ties + r * gridDim.y; }
__device__ __forceinline__ unsigned* above_counts(const MultiArgs& a, int64_t r) {
  return a.ties + (a.batch + r) * gridDim.y;
}

// A block's counts of keys of a better value than the k-th's (or the
// bound's) and of its ties: each warp adds its threads' to the block's
// (shared, zeroed before), then, after a barrier, thread 0 stores them in
// the ties region for the passes after.
struct BlockCounts {
  unsigned better, tied;
  __device__ __forceinline__ void add(unsigned thread_better, unsigned thread_tied) {
    thread_better = __reduce_add_sync(kFull, thread_better);
    thread_tied = __reduce_add_sync(kFull, thread_tied);
    if (threadIdx.x % 32 == 0 && (thread_better | thread_tied)) {
      atomicAdd(&better, thread_better);
      atomicAdd(&tied, thread_tied);
    }
  }
  __device__ __forceinline__ void store(const MultiArgs& a, int64_t r) const {
    if (threadIdx.x != 0) return;
    above_counts(a, r)[blockIdx.y] = better;
    tie_counts(a, r)[blockIdx.y] = tied;
  }
};

// Walks this block's share of a row: U rounds of BLOCK packs loaded before
// any is used; f(key, valid) for each element, called by whole warps.  A
// pack is valid whole or not at all (P > 1 needs n % P == 0).  stop(),
// asked before each U rounds, ends the walk early; it must answer alike
// for the lanes of a warp.
struct NeverStop {
  __device__ bool operator()() const { return false; }
};
template <class T, int BLOCK, int P, int U, class F, class Stop = NeverStop>
__device__ __forceinline__ void walk_share_packs(const T* row, int64_t n, bool largest, F&& f, Stop stop = {}) {
  const int64_t packs = (n + P - 1) / P;
  const int64_t per = (packs + gridDim.y - 1) / gridDim.y;
  const int64_t q0 = blockIdx.y * per;
  const int64_t q1 = q0 + per < packs ? q0 + per : packs;
  for (int64_t base = q0; base < q1; base += int64_t{BLOCK} * U) {
    if (stop()) break;
    Pack<T, P> raw[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t q = base + int64_t{u} * BLOCK + threadIdx.x;
      raw[u] = load_pack<T, P>(row, q, q < q1);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t q = base + int64_t{u} * BLOCK + threadIdx.x;
      bits_t<T> s[P];
      to_orders<T, P>(raw[u], largest, s);
      f(s, static_cast<uint32_t>(q * P), q < q1);  // n < 2^32
    }
  }
}

// The same, f(key, valid) for each element.
template <class T, int BLOCK, int P, int U, class F, class Stop = NeverStop>
__device__ __forceinline__ void walk_share(const T* row, int64_t n, bool largest, F&& f, Stop stop = {}) {
  walk_share_packs<T, BLOCK, P, U>(
      row, n, largest,
      [&](const bits_t<T>* s, uint32_t e0, bool valid) {
#pragma unroll
        for (int j = 0; j < P; ++j) f(make_key<T>(s[j], e0 + j), valid);
      },
      stop);
}

template <class Key> __device__ __forceinline__ Key prefix_of(const RowState& st) {
  if constexpr (sizeof(Key) == 16) return (Key(st.prefix_hi) << 64) | Key(st.prefix_lo);
  else return Key(st.prefix_lo);
}

// Appends to a row's global list through a block's shared-memory stage:
// lanes reserve stage slots with one shared atomic per warp, and the block
// reserves its run of the list with one global atomic at the end (flush).
// Appending straight to the list costs a global atomic on one address per
// warp that appends: H100, 2^24 float32 with 44K keys in the first digit's
// bucket, ~50 us of the pass.  Keys past the stage's capacity fall back to
// that (SPILL), or are only counted: sg.count keeps counting past the
// capacity, the keys this block took.
template <class Key, int CAP> struct Stage {
  Key keys[CAP];
  unsigned count, base;
};

// SPILL false: keys past the stage are counted in sg.count only (the
// caller gives up on the list once a stage overflows).
template <bool SPILL = true, class Key, int CAP>
__device__ __forceinline__ void stage_key(Stage<Key, CAP>& sg, Key* list, unsigned* counter, Key key,
                                          bool take, unsigned room = 0xffffffffu) {
  const unsigned m = __ballot_sync(kFull, take);
  if (!m) return;
  const unsigned at = warp_reserve(&sg.count, m) + lanes_below(m);
  if (!take) return;
  if (at < CAP) {
    sg.keys[at] = key;
  } else if (SPILL) {
    const unsigned to = atomicAdd(counter, 1u);
    if (to < room) list[to] = key;  // past the list's room: counted, not kept
  }
}

// Called by the whole block after its last stage_key.
template <int BLOCK, class Key, int CAP>
__device__ __forceinline__ void flush_stage(Stage<Key, CAP>& sg, Key* list, unsigned* counter,
                                            unsigned room = 0xffffffffu) {
  __syncthreads();
  const unsigned n = sg.count < CAP ? sg.count : CAP;
  if (threadIdx.x == 0 && n) sg.base = atomicAdd(counter, n);
  __syncthreads();
  for (unsigned i = threadIdx.x; i < n; i += BLOCK)
    if (sg.base + i < room) list[sg.base + i] = sg.keys[i];
}

// The end of a digit pass over a row: the block adds its counts of digit l
// to the row's, and the last block of the row to finish (all counts in)
// advances the row to `next` stage, choosing the bucket of digit l among
// the keys with the decided `prefix` when it counted.
// D, Key: the digits counted (those of the keys, or of the order bits alone).
template <class T, int BLOCK, int R, class D = Digits<kKeyWidth<T>, R>, class Key = key_t<T>>
__device__ void end_pass(RowState& st, unsigned* row_hist, SelectShared<BLOCK, R>& sh, bool counted,
                         int l, Key prefix, unsigned want, unsigned next, unsigned next_cur,
                         int freed_list, unsigned arrivals) {
  __shared__ bool last;
  if (counted) {
    __syncthreads();
    for (int b = threadIdx.x; b < D::kBins; b += BLOCK)
      if (sh.hist[b]) atomicAdd(&row_hist[b], sh.hist[b]);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&st.arrived, 1u) == arrivals - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (counted) {
    for (int b = threadIdx.x; b < D::kBins; b += BLOCK) {
      sh.hist[b] = __ldcg(&row_hist[b]);
      row_hist[b] = 0;  // for the next digit
    }
    __syncthreads();
    choose_bucket<BLOCK, D::kBins>(sh.hist, want, &sh.choice, sh.scratch);
  }
  if (threadIdx.x == 0) {
    if (counted) {
      const Choice c = sh.choice;
      const Key p = (prefix << D::width(l)) | Key(c.bucket);
      st.prefix_lo = static_cast<unsigned long long>(p);
      if constexpr (sizeof(Key) == 16) st.prefix_hi = static_cast<unsigned long long>(p >> 64);
      st.remaining = want - c.above;
      st.count = c.count;
      st.done = c.count == want - c.above;
    }
    if (freed_list >= 0) st.listed[freed_list] = 0;
    st.stage = next;
    st.cur = next_cur;
    st.arrived = 0;
  }
}

template <class Key> __device__ __forceinline__ void set_prefix(RowState& st, Key p) {
  st.prefix_lo = static_cast<unsigned long long>(p);
  if constexpr (sizeof(Key) == 16) st.prefix_hi = static_cast<unsigned long long>(p >> 64);
}

// The k-th largest of a row's offers, by a block.  An offer carries no
// index bits (make_key(order, ~0u) leaves them 0), so the select runs over
// the order bits alone (2 levels of 8-bit digits for the half types, where
// the whole key took 6), and the offers, a row's largest values, share
// their top digits: counted by the matched form (one atomic a digit of a
// warp).  H200, 1 x 15892221 bfloat16 (pack 1): the bound kernel took
// 18.3 us over the whole keys, one shared atomic a key.
// `each` gives the offers' order bits.
template <class T, class Each, int BLOCK>
__device__ key_t<T> offers_bound(Each&& each, unsigned k, SelectShared<BLOCK, 8>& sh) {
  using Bits = bits_t<T>;
  return key_t<T>(radix_select<KeyOf<T>::kBits, 8, BLOCK, Bits>(each, 0, Bits(0), k, sh, Crowd::matched)) << 32;
}

// The bound pass: each warp offers the t largest of its lanes' largest keys
// (t distinct keys of the row, sorted by one warp network).  One read of
// the row, no atomics or barriers per key, full residency.  (Offers per
// block, sorted by a block network, took 43 us on 2^24 float32 against 32
// for a plain read; the offers' selection, in here, halved the blocks an
// SM holds: 54 us.)
template <class T, int BLOCK, int P>
__global__ void __launch_bounds__(BLOCK, 2048 / BLOCK)
    multi_offer_kernel(const T* __restrict__ x, MultiArgs a, Output o) {
  using Key = key_t<T>;
  let_next_grid_launch();
  const int64_t r = blockIdx.x;
  // the largest order bits only: an offer is that order with the lowest
  // key an index can give it, at or below the element's own key (equal
  // offers are fine: each stands for a distinct element at or above it)
  bits_t<T> best = 0;
  bool any = false;
  walk_share<T, BLOCK, P, (P == 1 ? 8 : 16 / P)>(x + r * o.n, o.n, o.largest, [&](Key key, bool valid) {
    const bits_t<T> order = key_order<T>(key);
    best = valid && order > best ? order : best;
    any |= valid;
  });
  Key top[1] = {any ? make_key<T>(best, 0xffffffffu) : Key(0)};
  warp_sort<1>(top);
  const int64_t t = a.offers_per_warp;  // offers a warp
  const int lane = threadIdx.x % 32;
  const int64_t warp = int64_t{blockIdx.y} * (BLOCK / 32) + threadIdx.x / 32;
  if (2 * o.k > BLOCK) {  // large k: multi_bound_kernel selects among the offers
    Key* offers = static_cast<Key*>(a.tops) + r * gridDim.y * (BLOCK / 32) * t;
    if (lane < t) offers[warp * t + lane] = top[0];
    return;
  }
  // Small k: the row's last block takes the bound here, the k-th largest of
  // BLOCK maxima of disjoint groups of offers (offer i in group i % BLOCK;
  // at least k groups hold one: offers >= k, BLOCK >= 2k), which saves the
  // bound kernel's launch.  Each warp folds its offers into the row's BLOCK
  // slots (zeroed by the call) by atomic maxima of their order bits, so the
  // last block reads one slot a thread.  (H200, one row of 2^24 at 4 offers
  // a warp: the offer kernel 29.1 us with its last block reading all 33792,
  // 24.1 folded; 25.5 at one a warp.)
  using Slot = std::conditional_t<sizeof(bits_t<T>) == 8, unsigned long long, unsigned>;
  Slot* slots = static_cast<Slot*>(a.tops) + r * BLOCK;
  const bits_t<T> offered = key_order<T>(top[0]);
  if (lane < t && offered) atomicMax(slots + (warp * t + lane) % BLOCK, static_cast<Slot>(offered));
  __shared__ SelectShared<BLOCK, 8> sh;
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  RowState& st = a.state[r];
  if (threadIdx.x == 0) last = atomicAdd(&st.arrived, 1u) == gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const bits_t<T> mine = static_cast<bits_t<T>>(__ldcg(slots + threadIdx.x));
  auto each_top = [&](auto&& f) { f(mine, true); };
  const Key bound = offers_bound<T>(each_top, static_cast<unsigned>(o.k), sh);
  if (threadIdx.x == 0) {
    set_prefix(st, bound);
    st.stage = kgen::topk::kBound;
    st.arrived = 0;
  }
}

// For k > BLOCK / 2, one block per row: the k-th largest offer is the
// bound: at least k keys of the row are at or above it.
constexpr int kBoundBlock = 1024, kBoundItems = 16;  // offers a row: 16384 at most (plan_multi)

template <class T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    multi_bound_kernel(MultiArgs a, Output o, int64_t offers_per_row) {
  using Key = key_t<T>;
  wait_for_previous_grid();
  let_next_grid_launch();
  __shared__ SelectShared<BLOCK, 8> sh;
  const int64_t r = blockIdx.x;
  constexpr int kItems = kBoundItems;
  const int64_t m = offers_per_row;  // <= BLOCK * kItems (plan_multi)
  const Key* offers = static_cast<const Key*>(a.tops) + r * m;
  bits_t<T> v[kItems];  // the offers' order bits
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = int64_t{j} * BLOCK + threadIdx.x;
    v[j] = i < m ? key_order<T>(offers[i]) : bits_t<T>(0);
  }
  auto each = [&](auto&& f) {
#pragma unroll
    for (int j = 0; j < kItems; ++j) f(v[j], int64_t{j} * BLOCK + threadIdx.x < m);
  };
  // Offers of 0 (warps with no keys) and offers of one order are equal;
  // radix_select then returns the k-th value, still a bound.  For k <=
  // BLOCK / 2 the k-th largest of the threads' largest offers is one too,
  // found over one offer a thread (H100, 8448 offers: 10 us over all).
  Key bound;
  if (2 * o.k <= BLOCK && o.k <= m) {  // k threads hold an offer (thread i holds offer i)
    bits_t<T> top = 0;
    each([&](bits_t<T> order, bool valid) { top = valid && order > top ? order : top; });
    auto each_top = [&](auto&& f) { f(top, true); };
    bound = offers_bound<T>(each_top, static_cast<unsigned>(o.k), sh);
  } else {
    bound = offers_bound<T>(each, static_cast<unsigned>(o.k), sh);
  }
  if (threadIdx.x == 0) {
    RowState& st = a.state[r];
    set_prefix(st, bound);
    st.stage = kgen::topk::kBound;
  }
}

// The gather pass: the keys at or above the bound go to candidate list 0.
// When they fit one block's sort the finishing block sorts them (stage
// small).  Spread keys stay far under a stage a block (random rows: a few
// times k over the whole row), but a sorted row's lie in one block's share:
// about 1540 at 256 x 128256 float32 k 50, which a stage of 1024 sent to
// the digit passes (H200: 373 us against 132 on random rows).  So a block
// of 512 threads or more stages as many as one sort takes (32 KB; at 256
// threads it would cost residency: 1024 keys).  A block that takes more
// keys than its stage holds stops taking them, and past 1024 a block takes
// no more ties of the bound's value (counted only): ties at the bound (a
// constant row, a few distinct values) put most of the row above it, and
// spilling past the stage took an atomic on the row's one counter every
// warp (H100, a row of 2^24 float32 of four distinct values, k 8: the
// gather 395 us); staging 4096 of them a block cost 2^24 float32 of four
// values k 64 91 -> 103 us (H200).  The ties are needed in the list only
// when fewer than k keys are better, and then the row goes to the ties
// pass (bound_ties) without it.
// Every block also counts its keys of a better value than the bound's and
// of the bound's value.  When fewer than k are better, the bound's value
// is the k-th's: the pass after takes the better keys and the lowest
// indices of its ties in one ordered read (stage bound_ties).  Else the
// row goes to the digit passes from the start, which on such rows read it
// four to five times, each pass at a third of the memory's pace (H200, 256
// x 128256 float32 of ten distinct values, k 50: 585 us, torch 455).
template <class T, int BLOCK, int P>
__global__ void __launch_bounds__(BLOCK, 2048 / BLOCK)
    multi_gather_kernel(const T* __restrict__ x, MultiArgs a, Output o) {
  using Key = key_t<T>;
  wait_for_previous_grid();
  let_next_grid_launch();
  constexpr unsigned kTiesStaged = 1024;
  constexpr unsigned kStaged = BLOCK >= 512 ? kSortCapacity<T> : kTiesStaged;
  __shared__ Stage<Key, kStaged> to_list;
  __shared__ bool last, ties_left;
  __shared__ BlockCounts here;
  const int64_t r = blockIdx.x;
  RowState& st = a.state[r];
  if (st.stage != kgen::topk::kBound) return;  // the whole block
  const Key bound = prefix_of<Key>(st);
  Key* list = static_cast<Key*>(a.cand) + r * 2 * a.candidates;
  const unsigned room = static_cast<unsigned>(a.candidates);
  if (threadIdx.x == 0) {
    to_list.count = here.better = here.tied = 0;
    ties_left = false;
  }
  __syncthreads();
  // every key whose order is at least the bound's: a superset of the keys
  // at or above it (the finishing sort keeps the k largest), one 32-bit test
  const bits_t<T> bound_order = key_order<T>(bound);
  const volatile unsigned& took = to_list.count;
  unsigned better = 0, tied = 0;
  walk_share<T, BLOCK, P, (P == 1 ? 8 : 16 / P)>(
      x + r * o.n, o.n, o.largest,
      [&](Key key, bool valid) {
        const bits_t<T> order = key_order<T>(key);
        const bool take = valid && order >= bound_order;
        if (!__any_sync(kFull, take)) return;
        better += take && order != bound_order;
        tied += take && order == bound_order;
        const unsigned so_far = took;
        if (__any_sync(kFull, so_far > kStaged)) return;  // overflowed: counted only
        const bool tie_left = take && order == bound_order && so_far >= kTiesStaged;
        if (tie_left) ties_left = true;
        stage_key<false>(to_list, list, &st.listed[0], key, take && !tie_left, room);
      },
      // a warp that alone saw k better keys has settled the row for the
      // digit passes: the rest of its share is not needed, and its block's
      // counts stay partial, its better count at least k (a sorted row: the
      // whole read cost 4-7% of the call, H200 256 x 128256, k 50)
      [&] {
        return __any_sync(kFull, took > kStaged) &&
               __reduce_add_sync(kFull, better) >= static_cast<unsigned>(o.k);
      });
  here.add(better, tied);
  flush_stage<BLOCK>(to_list, list, &st.listed[0], room);  // a barrier first
  here.store(a, r);
  // an overflowed stage: more than one block's sort in all, and a row whose
  // keys crowd (the digit count takes count_digit's matched form)
  if (threadIdx.x == 0 && to_list.count > kStaged) {
    atomicAdd(&st.listed[0], static_cast<unsigned>(kSortCapacity<T>) + 1u);
    st.crowded = 1;
  }
  // ties left out of the list: the list holds the row's k best only if
  // at least k keys are better (else the ties pass chooses, stage bound_ties)
  if (threadIdx.x == 0 && ties_left) {
    st.crowded = 1;
    st.ties_left = 1;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&st.arrived, 1u) == gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // the row's keys of a better value than the bound's, summed by the block into here.better
  if (threadIdx.x == 0) here.better = 0;
  __syncthreads();
  unsigned part = 0;
  for (unsigned y = threadIdx.x; y < gridDim.y; y += BLOCK) part += __ldcg(above_counts(a, r) + y);
  part = __reduce_add_sync(kFull, part);
  if (threadIdx.x % 32 == 0 && part) atomicAdd(&here.better, part);
  __syncthreads();
  if (threadIdx.x != 0) return;
  const unsigned got = atomicAdd(&st.listed[0], 0u);
  const bool complete = !st.ties_left || here.better >= static_cast<unsigned>(o.k);
  if (got <= static_cast<unsigned>(kSortCapacity<T>) && complete) {
    st.stage = kgen::topk::kSmall;
    st.cur = 0;
  } else if (here.better < static_cast<unsigned>(o.k)) {
    st.stage = kgen::topk::kBoundTies;
    set_prefix(st, Key(bound_order));
    st.remaining = static_cast<unsigned>(o.k) - here.better;
    st.listed[0] = 0;
  } else {
    st.stage = kgen::topk::kRow;
    st.listed[0] = 0;
  }
  st.arrived = 0;
}

// A block's digit counts of a pass over the whole row, in four copies
// interleaved (bin * 4 + lane % 4): lanes of a warp with one digit collide
// on an address a quarter as often.  Every key of the row is counted, and a
// row's first digits crowd into few bins.  (H100, 2^24 float32: 37 us with
// one copy, 35-36 with four: the collisions were not what held it.)
template <int BINS, int BLOCK> struct CountCopies {
  static constexpr int kCopies = 4;
  unsigned c[BINS * kCopies];
  __device__ __forceinline__ void zero() {  // then a barrier before counting
    for (int b = threadIdx.x; b < BINS * kCopies; b += BLOCK) c[b] = 0;
  }
  __device__ __forceinline__ unsigned* mine() { return c + threadIdx.x % kCopies; }
  __device__ __forceinline__ void sum_into(unsigned* hist) const {  // after a barrier
    for (int b = threadIdx.x; b < BINS; b += BLOCK)
      hist[b] = c[b * kCopies] + c[b * kCopies + 1] + c[b * kCopies + 2] + c[b * kCopies + 3];
  }
};

// Whether the lanes of a warp share their digits, for count_digit's
// matched form.  Even on a crowded row the digits may spread (a NaN-heavy
// row: the NaNs crowd, the rest do not), so every eighth call a warp
// counts the distinct digits of its lanes and matches lanes until the next
// probe only when they are few (H100, bfloat16 36 x 141757 with 30% NaN:
// 167 -> 185 us matching every key).  Called by whole warps.
struct CrowdProbe {
  unsigned calls = 0;
  bool match = false;
  __device__ __forceinline__ bool crowded(unsigned digit, bool valid) {
    if ((calls++ & 7u) == 0) {
      const unsigned peers = __match_any_sync(kFull, valid ? digit : ~0u);
      const bool leads = __ffs(peers) - 1 == static_cast<int>(threadIdx.x % 32);
      match = __popc(__ballot_sync(kFull, leads)) <= 8;
    }
    return match;
  }
};

// Digit 0 of every key of the row.
template <class T, int BLOCK, int R, int P>
__global__ void __launch_bounds__(BLOCK)
    multi_count_kernel(const T* __restrict__ x, MultiArgs a, Output o) {
  using D = Digits<kKeyWidth<T>, R>;
  wait_for_previous_grid();
  let_next_grid_launch();
  if (a.state[blockIdx.x].stage != kgen::topk::kRow) return;  // the bound pass found the keys
  __shared__ SelectShared<BLOCK, R> sh;
  __shared__ CountCopies<D::kBins, BLOCK> copies;
  const int64_t r = blockIdx.x;
  copies.zero();
  __syncthreads();
  unsigned* mine = copies.mine();
  // the gather found more keys at or above the bound in one block than its
  // stage holds, or more ties of the bound's value than it stages: ties or
  // few distinct values, whose lanes share digits
  const bool crowded = a.state[r].crowded != 0;
  CrowdProbe probe;
  walk_share<T, BLOCK, P, (P == 1 ? 8 : 16 / P)>(x + r * o.n, o.n, o.largest, [&](key_t<T> key, bool valid) {
    const unsigned digit = D::digit(key, 0);
    count_digit<R>(mine, digit, valid, crowded && probe.crowded(digit, valid) ? Crowd::matched : Crowd::spread,
                   copies.kCopies);
  });
  __syncthreads();
  copies.sum_into(sh.hist);
  end_pass<T, BLOCK, R>(a.state[r], a.hist + r * D::kBins, sh, true, 0, key_t<T>(0),
                        static_cast<unsigned>(o.k), kgen::topk::kRow, 0, -1, gridDim.y);
}

// The level whose digit decides the last order bits: past it every key in
// play has the k-th's value, and only the index tells them apart.
template <class D> __device__ constexpr int order_level(int l = 0) {
  return D::lo(l) <= 32 ? l : order_level<D>(l + 1);
}

// The ties pass: `want` keys in play (their digits down to `lo` are
// `prefix`: ties of the k-th's value) chosen by lowest index, a block's
// share at a time: the ties of the blocks before this one (their counts,
// from the pass before) come first, and within the share a block scan
// ranks them in index order.  A block whose ties are all taken appends
// them unranked; one with none, or none left to take, reads nothing.
// Instead of a digit pass per level of the index bits, each over the row:
// ties past a candidate list's room (a constant or few-valued row) read it
// three more times for float16, four for float32.  `above` (or null): each
// block's count of keys above the prefix, all chosen here too; a block
// with any reads its whole share.
template <class T, int BLOCK, int P>
__device__ void choose_ties(const T* row, int64_t n, bool largest, key_t<T> prefix, int lo, unsigned want,
                            const unsigned* counts, const unsigned* above, key_t<T>* sel, unsigned* selected,
                            unsigned* scratch) {
  using Key = key_t<T>;
  __shared__ unsigned earlier, round_total;
  if (threadIdx.x == 0) earlier = 0;
  __syncthreads();
  unsigned part = 0;
  for (unsigned y = threadIdx.x; y < blockIdx.y; y += BLOCK) part += counts[y];
  if (part) atomicAdd(&earlier, part);
  __syncthreads();
  const unsigned mine = counts[blockIdx.y], start = earlier;
  const unsigned better = above ? above[blockIdx.y] : 0u;
  if ((mine == 0 || start >= want) && better == 0) return;  // the whole block
  const unsigned need = start < want ? want - start : 0u;  // this block's ties still to take, lowest index first
  const bool all = mine <= need;
  unsigned taken = 0;  // ties of this share before the current pack round (the same in every thread)
  walk_share_packs<T, BLOCK, P, (P == 1 ? 8 : 16 / P)>(
      row, n, largest,
      [&](const bits_t<T>* s, uint32_t e0, bool valid) {
        unsigned mask = 0;
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const key_t<T> key = make_key<T>(s[j], e0 + j);
          if (valid && (key >> lo) == prefix) mask |= 1u << j;
          if (better && valid && (key >> lo) > prefix) sel[atomicAdd(selected, 1u)] = key;
        }
        if (all) {  // every tie of the share is taken: no ranks needed
#pragma unroll
          for (int j = 0; j < P; ++j)
            if (mask >> j & 1u) sel[atomicAdd(selected, 1u)] = make_key<T>(s[j], e0 + j);
          return;
        }
        if (taken >= need) return;  // the same in every thread
        const unsigned cnt = __popc(mask);
        const unsigned rank = taken + block_exclusive_sum<BLOCK>(cnt, scratch);
        if (threadIdx.x == BLOCK - 1) round_total = rank - taken + cnt;
        __syncthreads();
        taken += round_total;
        __syncthreads();  // round_total is rewritten next round
#pragma unroll
        for (int j = 0; j < P; ++j)
          if ((mask >> j & 1u) && rank + __popc(mask & ((1u << j) - 1u)) < need)
            sel[atomicAdd(selected, 1u)] = make_key<T>(s[j], e0 + j);
      },
      [&] { return taken >= need && better == 0; });
}

// The pass after digit l-1 was decided, over the keys that had the digits
// before it (read from the row, or from the candidate list that holds
// them): those above its bucket are chosen (appended to the selected list);
// those in it are chosen too when the bucket is all chosen; else they go to
// the other candidate list when they fit it, and have digit l counted
// unless they and the chosen fit the finishing block's sort.
// FIRST: the pass after digit 0, always over the row: its level is known at
// compile time, so the bucket test is a shift of the order bits (H100, 2^24
// float32: 40 instructions a key with the level a run-time value).
template <class T, int BLOCK, int R, int P, bool FIRST>
__global__ void __launch_bounds__(BLOCK, (FIRST ? 2048 : 1024) / BLOCK)
    multi_pass_kernel(const T* __restrict__ x, MultiArgs a, Output o, int level) {
  const int l = FIRST ? 1 : level;
  wait_for_previous_grid();
  let_next_grid_launch();
  using Key = key_t<T>;
  using D = Digits<kKeyWidth<T>, R>;
  constexpr int kStaged = 512;  // keys a block stages for each of its two lists
  __shared__ SelectShared<BLOCK, R> sh;
  __shared__ Stage<Key, kStaged> to_sel, to_list;
  const int64_t r = blockIdx.x;
  RowState& st = a.state[r];
  const unsigned stage = st.stage;
  if (stage != kgen::topk::kRow && stage != kgen::topk::kList && stage != kgen::topk::kTies &&
      (FIRST || stage != kgen::topk::kBoundTies))
    return;  // the whole block
  const Key prefix = prefix_of<Key>(st);
  const Key before = prefix >> D::width(l - 1);
  const bool done = st.done;
  const bool small = !done && int64_t{st.count} + o.k <= kSortCapacity<T>;
  const bool fits = !done && st.count <= a.candidates;
  const unsigned want = st.remaining, cur = st.cur;
  unsigned* ties = tie_counts(a, r);
  Key* sel = static_cast<Key*>(a.selected) + r * o.k;
  constexpr int kOrder = order_level<D>();
  if constexpr (!FIRST) {
    // the pass after the ties were counted: by the digit passes (their
    // digits down to lo(kOrder) decided), or by the gather (their order the
    // bound's; the keys of a better order chosen here too)
    if (stage == kgen::topk::kTies || stage == kgen::topk::kBoundTies) {
      const bool gathered = stage == kgen::topk::kBoundTies;
      choose_ties<T, BLOCK, P>(x + r * o.n, o.n, o.largest, prefix, gathered ? 32 : D::lo(kOrder), want, ties,
                               gathered ? above_counts(a, r) : nullptr, sel, &st.selected, sh.scratch);
      end_pass<T, BLOCK, R>(st, nullptr, sh, false, l, prefix, want, kgen::topk::kSelected, cur, -1, gridDim.y);
      return;
    }
  }
  // the order bits were decided by the level before and the keys in play,
  // too many for a list, are ties: count them a block (the ties pass next)
  const bool tie_count = !FIRST && l == kOrder + 1 && stage == kgen::topk::kRow && !done && !small && !fits;
  const bool count = !done && !small && !tie_count;
  // a list pass takes only the blocks its keys need (the rest leave at once)
  const unsigned listed = FIRST || stage == kgen::topk::kRow ? 0u : st.listed[cur];
  const unsigned arrivals =
      FIRST || stage == kgen::topk::kRow
          ? gridDim.y
          : (listed + BLOCK - 1) / BLOCK < gridDim.y ? (listed + BLOCK - 1) / BLOCK : gridDim.y;
  if (blockIdx.y >= arrivals) return;  // the whole block
  Key* lists = static_cast<Key*>(a.cand) + r * 2 * a.candidates;
  Key* next_list = lists + (1 - cur) * a.candidates;
  if (count)
    for (int b = threadIdx.x; b < D::kBins; b += BLOCK) sh.hist[b] = 0;
  __shared__ unsigned in_play;
  if (threadIdx.x == 0) to_sel.count = to_list.count = in_play = 0;
  __syncthreads();
  auto visit = [&](Key key, bool valid) {
    const bool had = valid && D::in(key, l - 1, before);
    const Key decided = key >> D::lo(l - 1);
    // most keys of a row are below the bucket: whole warps of them skip
    if (!__any_sync(kFull, had && decided >= prefix)) return;
    const bool in = had && decided == prefix;
    stage_key(to_sel, sel, &st.selected, key, (had && decided > prefix) || (done && in));
    if (fits) stage_key(to_list, next_list, &st.listed[1 - cur], key, in);
    if (count) count_digit<R>(sh.hist, D::digit(key, l), in);
    if (tie_count) {
      const unsigned m = __ballot_sync(kFull, in);
      if (m && threadIdx.x % 32 == 0) atomicAdd(&in_play, __popc(m));
    }
  };
  if (FIRST || stage == kgen::topk::kRow) {
    walk_share<T, BLOCK, P, (P == 1 ? 8 : 16 / P)>(x + r * o.n, o.n, o.largest, visit);
  } else if constexpr (!FIRST) {
    const Key* list = lists + cur * a.candidates;
    for (unsigned i0 = blockIdx.y * BLOCK; i0 < listed; i0 += arrivals * BLOCK) {
      const unsigned i = i0 + threadIdx.x;
      visit(i < listed ? list[i] : Key(0), i < listed);
    }
  }
  flush_stage<BLOCK>(to_sel, sel, &st.selected);
  if (fits) flush_stage<BLOCK>(to_list, next_list, &st.listed[1 - cur]);
  if (tie_count) {
    __syncthreads();
    if (threadIdx.x == 0) ties[blockIdx.y] = in_play;
    end_pass<T, BLOCK, R>(st, nullptr, sh, false, l, prefix, want, kgen::topk::kTies, cur, -1, arrivals);
    return;
  }
  const unsigned next = done ? kgen::topk::kSelected
                             : small ? kgen::topk::kSmall
                             : fits ? kgen::topk::kList : kgen::topk::kRow;
  end_pass<T, BLOCK, R>(st, a.hist + r * D::kBins, sh, count, l, prefix, want, next,
                        fits ? 1 - cur : cur, stage == kgen::topk::kList ? static_cast<int>(cur) : -1,
                        arrivals);
}

// One block per row, k within one block's sort: the chosen keys (and, from
// a small stage, the keys still in play) sorted, the first k written.
template <class T, int BLOCK, int R>
__global__ void __launch_bounds__(BLOCK)
    multi_finish_kernel(const T* __restrict__ x, T* __restrict__ values,
                        int64_t* __restrict__ indices, MultiArgs a, Output o) {
  using Key = key_t<T>;
  __shared__ FinishShared<T, BLOCK, kSortCapacity<T>> fin;
  Key* const sort_keys = fin.keys;
  wait_for_previous_grid();
  const int64_t r = blockIdx.x;
  const RowState st = a.state[r];
  const Key* sel = static_cast<const Key*>(a.selected) + r * o.k;
  const unsigned s = st.selected;
  const unsigned m = st.stage == kgen::topk::kSmall ? st.listed[st.cur] : 0u;
  const Key* list = static_cast<const Key*>(a.cand) + (r * 2 + st.cur) * a.candidates;
  for (unsigned i = threadIdx.x; i < s + m; i += BLOCK) sort_keys[i] = i < s ? sel[i] : list[i - s];
  __syncthreads();
  int c = static_cast<int>(s + m);
  const int k = static_cast<int>(o.k);
  // Many more candidates than k (a sorted row's best in one block's share:
  // about 1540 at 256 x 128256 float32 k 50, against about 100 on random
  // rows): the k best are selected first, so that the sort takes k (H200,
  // topk v35: that finish 48.5 -> 24.1 us, the call 166.9 -> 142.9).
  // keep_best is not inlined, and a few candidates are not sorted by one
  // warp (finish_warp) here: with both in this kernel, 51 -> 59 registers
  // and 7799 lines of PTX against 3055, the finish of rows the cut
  // leaves ran slower (46 x 61890 float16 k 1815: 20.8 -> 25.7 us; one
  // row of 2^24 float32 random k 64: 9.4 -> 13.9); the two causes were
  // not measured apart.
  if (c > 4 * k && c > 256) {
    __shared__ SelectShared<BLOCK, 8> sh;
    __shared__ unsigned kept;
    keep_best<BLOCK, T>(sort_keys, c, k, sh, &kept);
    c = k;
  }
  finish_candidates<BLOCK, T>(fin, c, x + r * o.n, values, indices, r, o);
}

// ---- multi: a k past one block's sort, written in index order ----------------
//
// No keys are collected.  Digit passes over the row find the k-th's order
// bits alone (2 for the half types, 3 for 4-byte types with 11-bit
// digits); each block then counts, over its share of the row, its keys of
// a better value and of that value; and the writes take the better keys
// first, then the ties of the lowest index, each run by index, ranked by a
// block scan a round of packs after the counts of the blocks before.  That
// is the unsorted output; a sorted one writes the global sort's pairs,
// which it orders by value alone (stable: equal values stay by index).
// Before, the select's digit passes over the whole keys appended the k
// keys to a list (past a block's stage of 512, an atomic on the row's
// counter a key), and the keys went through a radix sort of their order
// and index bits whatever the order asked (H200, 73 x 92049 float32, k = n,
// unsorted: 699 us, torch 160).

// Digit l of the order bits of every key whose digits before it are the
// decided ones; the row's last block chooses the bucket of the k-th.
// After the last level the row state's prefix is the k-th's order bits.
// Bounded to 64 registers a thread (two blocks of 512 an SM, as the
// shared counts allow): unbounded, 73 x 92049 float32 read 27.5 MB in 30-34
// us a level (H200), where the count pass took 13.
template <class T, int BLOCK, int R, int P>
__global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
    multi_order_digit_kernel(const T* __restrict__ x, MultiArgs a, Output o, int l) {
  using D = Digits<KeyOf<T>::kBits, R>;
  using Bits = bits_t<T>;
  wait_for_previous_grid();
  let_next_grid_launch();
  __shared__ SelectShared<BLOCK, R> sh;
  __shared__ CountCopies<D::kBins, BLOCK> copies;
  const int64_t r = blockIdx.x;
  RowState& st = a.state[r];
  const Bits prefix = static_cast<Bits>(st.prefix_lo);
  const unsigned want = l == 0 ? static_cast<unsigned>(o.k) : st.remaining;
  copies.zero();
  __syncthreads();
  unsigned* mine = copies.mine();
  CrowdProbe probe;
  walk_share_packs<T, BLOCK, P, (P == 1 ? 8 : 16 / P)>(
      x + r * o.n, o.n, o.largest, [&](const Bits* s, uint32_t, bool valid) {
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const bool in = valid && D::in(s[j], l, prefix);
          if (!__any_sync(kFull, in)) continue;  // past the first level most keys are out
          const unsigned digit = D::digit(s[j], l);
          count_digit<R>(mine, digit, in, probe.crowded(digit, in) ? Crowd::matched : Crowd::spread, copies.kCopies);
        }
      });
  __syncthreads();
  copies.sum_into(sh.hist);
  end_pass<T, BLOCK, R, D, Bits>(st, a.hist + r * D::kBins, sh, true, l, prefix, want, kgen::topk::kRow, 0, -1,
                                 gridDim.y);
}

template <class T> __device__ __forceinline__ bits_t<T> kth_order_of(const RowState& st) {
  return static_cast<bits_t<T>>(st.prefix_lo);
}

template <class T, int BLOCK, int P>
__global__ void __launch_bounds__(BLOCK, 2048 / BLOCK)
    multi_rank_count_kernel(const T* __restrict__ x, MultiArgs a, Output o) {
  wait_for_previous_grid();
  let_next_grid_launch();
  __shared__ BlockCounts here;
  const int64_t r = blockIdx.x;
  const bits_t<T> kth = kth_order_of<T>(a.state[r]);
  if (threadIdx.x == 0) here.better = here.tied = 0;
  __syncthreads();
  unsigned better = 0, tied = 0;
  walk_share_packs<T, BLOCK, P, (P == 1 ? 8 : 16 / P)>(
      x + r * o.n, o.n, o.largest, [&](const bits_t<T>* s, uint32_t, bool valid) {
#pragma unroll
        for (int j = 0; j < P; ++j) {
          better += valid && s[j] > kth;
          tied += valid && s[j] == kth;
        }
      });
  here.add(better, tied);
  __syncthreads();
  here.store(a, r);
}

// 64 registers a thread: at 32 (four blocks of 512 an SM) it spilled 24-276
// bytes.
template <class T, int BLOCK, int P>
__global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
    multi_write_in_order_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices,
                                MultiArgs a, Output o, Pairs pairs) {
  static_assert(BLOCK * P < 65536, "a round's counts fit 16 bits");
  wait_for_previous_grid();
  __shared__ unsigned sums[3];  // better keys of the blocks before, their ties, better keys of the row
  __shared__ unsigned scan[BLOCK / 32 + 1];
  const int64_t r = blockIdx.x;
  const T* row = x + r * o.n;
  const bits_t<T> kth = kth_order_of<T>(a.state[r]);
  const unsigned* above = above_counts(a, r);
  const unsigned* ties = tie_counts(a, r);
  if (threadIdx.x < 3) sums[threadIdx.x] = 0;
  __syncthreads();
  unsigned b_before = 0, t_before = 0, b_all = 0;
  for (unsigned y = threadIdx.x; y < gridDim.y; y += BLOCK) {
    const unsigned b = above[y];
    b_all += b;
    if (y < blockIdx.y) {
      b_before += b;
      t_before += ties[y];
    }
  }
  b_before = __reduce_add_sync(kFull, b_before);
  t_before = __reduce_add_sync(kFull, t_before);
  b_all = __reduce_add_sync(kFull, b_all);
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], b_before);
    atomicAdd(&sums[1], t_before);
    atomicAdd(&sums[2], b_all);
  }
  __syncthreads();
  const unsigned better_from = sums[0], ties_before = sums[1], better_all = sums[2];
  const unsigned want = static_cast<unsigned>(o.k) - better_all;  // the row's ties to take, lowest index first
  const unsigned mine = above[blockIdx.y];
  const unsigned tied = ties[blockIdx.y];
  const unsigned need = ties_before < want ? (tied < want - ties_before ? tied : want - ties_before) : 0u;
  if (mine == 0 && need == 0) return;  // the whole block
  const unsigned ties_from = better_all + ties_before;
  unsigned took = 0, tie_rank = 0;  // the same in every thread
  walk_share_packs<T, BLOCK, P, (P == 1 ? 8 : 16 / P)>(
      row, o.n, o.largest,
      [&](const bits_t<T>* s, uint32_t e0, bool valid) {
        if (took >= mine && tie_rank >= need) return;
        unsigned c = 0;  // better keys in the low half, ties in the high
#pragma unroll
        for (int j = 0; j < P; ++j)
          if (valid) c += s[j] > kth ? 1u : s[j] == kth ? 1u << 16 : 0u;
        unsigned round = 0;
        const unsigned before = block_exclusive_sum<BLOCK>(c, scan, &round);
        unsigned b = took + (before & 0xffffu), t = tie_rank + (before >> 16);
#pragma unroll
        for (int j = 0; j < P; ++j) {
          if (!valid) continue;
          if (s[j] > kth) {
            put_in_order<T>(pairs, row, values, indices, r, o, better_from + b++, s[j], e0 + j);
          } else if (s[j] == kth) {
            if (t < need) put_in_order<T>(pairs, row, values, indices, r, o, ties_from + t, s[j], e0 + j);
            ++t;
          }
        }
        took += round & 0xffffu;
        tie_rank += round >> 16;
      },
      [&] { return took >= mine && tie_rank >= need; });
}

// ---- queue: one warp per row, the best keys in registers ----------------------

// Walks a row with one warp: rounds of 4 packs a lane, all loaded before
// any is converted; f(key, valid) for each element, called by the whole warp.
template <class T, int P, class F>
__device__ __forceinline__ void warp_walk(const T* row, int64_t n, bool largest, F&& f) {
  constexpr int U = 4;
  const int lane = threadIdx.x % 32;
  const int64_t packs = n / P;  // whole: n % P == 0
  for (int64_t base = 0; base < n; base += 32 * P * U) {
    Pack<T, P> raw[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t q = (base + u * 32 * P) / P + lane;
      raw[u] = load_pack<T, P>(row, q, q < packs);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      bits_t<T> s[P];
      to_orders<T, P>(raw[u], largest, s);
      const int64_t q = (base + u * 32 * P) / P + lane;
#pragma unroll
      for (int j = 0; j < P; ++j) f(make_key<T>(s[j], static_cast<uint32_t>(q * P + j)), q < packs);
    }
  }
}

template <class T, int C, int P, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    queue_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices,
                 int64_t batch, Output o) {
  using Key = key_t<T>;
  const int64_t r = blockIdx.x * int64_t{BLOCK / 32} + threadIdx.x / 32;
  if (r >= batch) return;  // whole warps leave
  const int lane = threadIdx.x % 32;
  const T* row = x + r * o.n;
  const int k = static_cast<int>(o.k);
  // Fast path for k <= 16: the k-th largest of the lanes' largest keys
  // bounds the row's k-th from below; a second read of the row (from L1)
  // gathers the keys above it, usually about k, which one warp sort orders.
  // Rows that put more than 64 keys above the bound take the running list.
  // (At k = 32 the bound is the lowest lane's largest, too weak: H100,
  // 4096 x 4096 float32, 155 -> 210 us.)
  constexpr int kGather = 64;
  __shared__ Key gathered[BLOCK / 32][kGather];
  if (k <= 16) {
    Key top = Key(0);
    warp_walk<T, P>(row, o.n, o.largest, [&](Key key, bool valid) {
      if (valid && key > top) top = key;
    });
    Key lanes[1] = {top};
    warp_sort<1>(lanes);
    const Key bound = shfl_key(lanes[0], k - 1);
    if (bound != Key(0)) {  // else fewer than k lanes hold a key
      Key* mine = gathered[threadIdx.x / 32];
      unsigned got = 0;
      warp_walk<T, P>(row, o.n, o.largest, [&](Key key, bool valid) {
        const bool take = valid && key >= bound;
        const unsigned m = __ballot_sync(kFull, take);
        const unsigned at = got + lanes_below(m);
        if (take && at < kGather) mine[at] = key;
        got += __popc(m);
      });
      __syncwarp();
      if (got <= 32) {
        finish_warp<1, T>(mine, static_cast<int>(got), row, values, indices, r, o);
        return;
      }
      if (got <= kGather) {
        finish_warp<2, T>(mine, static_cast<int>(got), row, values, indices, r, o);
        return;
      }
    }
  }
  Key list[C];
#pragma unroll
  for (int j = 0; j < C; ++j) list[j] = Key(0);  // below every real key
  Key kth = Key(0);
  warp_walk<T, P>(row, o.n, o.largest, [&](Key key, bool valid) {
    const bool better = valid && key > kth;
    if (__any_sync(kFull, better)) {
      warp_insert<C>(list, better ? key : Key(0));
      kth = warp_at<C>(list, k - 1);
    }
  });
  if (!o.sorted) {
    const bits_t<T> kth_order = key_order<T>(kth);
#pragma unroll
    for (int j = 0; j < C; ++j)
      list[j] = j * 32 + lane < k ? unsorted_key<T>(list[j], kth_order) : Key(0);
    warp_sort<C>(list);
  }
#pragma unroll
  for (int j = 0; j < C; ++j)
    if (j * 32 + lane < k) emit(row, values, indices, r * o.k + j * 32 + lane, list[j]);
}

// ---- tourney: a warp (or a group of its lanes) per short row, k rounds of a maximum -----

// The tourney's key.  A 2-byte type's 16 order bits and 16 inverted index
// bits fit 32 (one reduction a round, 32-bit compares); 4-byte types keep
// the 64-bit key (two reductions: the order bits, then the index among the
// lanes holding that order).  wide() gives the library's key for the output.
template <class T, bool kNarrow = sizeof(T) == 2> struct TourneyKey {
  using Key = key_t<T>;
  static constexpr bool kDistinct = true;  // one lane owns a round's maximum
  __device__ static Key make(bits_t<T> order, uint32_t index) { return make_key<T>(order, index); }
  __device__ static key_t<T> wide(Key key) { return key; }
  __device__ static Key warp_max(Key key) {
    const uint32_t hi = static_cast<uint32_t>(key >> 32);
    const uint32_t top_hi = __reduce_max_sync(kFull, hi);
    const uint32_t top_lo = __reduce_max_sync(kFull, hi == top_hi ? static_cast<uint32_t>(key) : 0u);
    return (Key(top_hi) << 32) | Key(top_lo);
  }
};
template <class T> struct TourneyKey<T, true> {
  using Key = uint32_t;
  static constexpr bool kDistinct = true;
  __device__ static Key make(bits_t<T> order, uint32_t index) { return (order << 16) | (0xffffu - index); }
  __device__ static key_t<T> wide(Key key) { return make_key<T>(key >> 16, 0xffffu - (key & 0xffffu)); }
  __device__ static Key warp_max(Key key) { return __reduce_max_sync(kFull, key); }
};
// A 4-byte type's order bits alone, for a warp a row of k <= 32: 32-bit
// compares and one reduction a round, where the 64-bit key takes two of
// each (H200, 65536 x 256 float32 k 8, ncu: 668 warp instructions a row
// with the 64-bit key, 357 with the order bits; 59.3 -> 38.3 us; the ALU
// pipe, which compares and selects run on, is still the busiest, at 77.5%).
// Heads may tie: a round's owner is the lowest of the tied lanes, which
// holds the lowest index because a lane holds ITEMS consecutive elements
// (lane_major), and a lane's equal keys leave in index order once the
// index is found (place_by_value).  Lanes past the row hold 0 at the
// highest indices, so ties put them last.
template <class T> struct ValueKey {
  using Key = uint32_t;
  static constexpr bool kDistinct = false;
  __device__ static Key warp_max(Key key) { return __reduce_max_sync(kFull, key); }
};

// The largest key of each aligned group of `width` lanes (a power of two),
// on every lane of the group.  A whole warp reduces in one instruction
// (two for 64-bit keys); a reduction over part of a warp returns a value
// a group, which the hardware's warp-uniform result does by a round a
// group (H200: a row of one float32, 32 groups a warp, 6.2-6.7 us against
// a block's 5.3-5.5), so groups take log2(width) shuffles instead.
template <class TK, class Key> __device__ __forceinline__ Key group_max(Key key, int width) {
  if (width == 32) return TK::warp_max(key);
  for (int m = width / 2; m > 0; m /= 2) key = kmax(key, shfl_xor_key(key, m));
  return key;
}

// One key a lane sorted, largest first, within each aligned group of
// `width` lanes (a power of two): a bitonic network whose directions
// restart at every group.
template <class Key> __device__ __forceinline__ Key group_sort(Key v, int width) {
  const int sub = threadIdx.x % 32 & (width - 1);
  for (int size = 2; size <= width; size *= 2)
    for (int stride = size / 2; stride > 0; stride /= 2) {
      const Key o = shfl_xor_key(v, stride);
      const bool desc = (sub & size) == 0, lower = (sub & stride) == 0;
      v = lower == desc ? kmax(v, o) : kmin(v, o);
    }
  return v;
}

// N keys of one thread sorted, largest first: Batcher's odd-even merge
// sort (19 compare-exchanges for 8 keys and 63 for 16, against a bitonic
// network's 24 and 80), as templates so that every index is a constant and
// the keys stay in registers (nested loops of it took local memory).
template <int LO, int N, int R, class Key, int M>
__device__ __forceinline__ void odd_even_merge(Key (&v)[M]) {
  constexpr int kStep = 2 * R;
  if constexpr (kStep < N) {
    odd_even_merge<LO, N, kStep>(v);
    odd_even_merge<LO + R, N, kStep>(v);
#pragma unroll
    for (int i = LO + R; i + R < LO + N; i += kStep) {
      const Key a = v[i], b = v[i + R];
      v[i] = kmax(a, b);
      v[i + R] = kmin(a, b);
    }
  } else {
    const Key a = v[LO], b = v[LO + R];
    v[LO] = kmax(a, b);
    v[LO + R] = kmin(a, b);
  }
}
template <int LO, int N, class Key, int M> __device__ __forceinline__ void odd_even_sort(Key (&v)[M]) {
  if constexpr (N > 1) {
    odd_even_sort<LO, N / 2>(v);
    odd_even_sort<LO + N / 2, N / 2>(v);
    odd_even_merge<LO, N, 1>(v);
  }
}
template <int N, class Key> __device__ __forceinline__ void sort_descending(Key (&v)[N]) {
  static_assert((N & (N - 1)) == 0, "a power of two");
  odd_even_sort<0, N>(v);
}

// The tourney's unsorted output past k 32, written in index order: the
// keys better than the k-th first, then its ties while positions below k
// are left, each group by index, placed by ballots over the row read again
// (from L1, every pack before the first ballot; packs to the lanes in
// turn, as loaded), the values written as read.  The order that a second
// warp sort of the k keys gave (better, then index), without that sort:
// 64-bit keys sorted by one warp cost about 20 us at 512 (H200, 1 x 347
// bfloat16 k 65: 6.0 us sorted, 27.9 unsorted).  `better` counts the row's
// keys above the k-th.
template <class T, int ITEMS, int P>
__device__ __forceinline__ void tourney_unsorted(int64_t packs, bits_t<T> kth, unsigned better, const T* row,
                                                 T* values, int64_t* indices, int64_t r, const Output& o) {
  constexpr int NP = ITEMS / P;
  const int lane = threadIdx.x % 32;
  const unsigned lower = (1u << lane) - 1u;
  Pack<T, P> raw[NP];
#pragma unroll
  for (int q = 0; q < NP; ++q) raw[q] = load_pack<T, P>(row, int64_t{q} * 32 + lane, int64_t{q} * 32 + lane < packs);
  unsigned before = 0, ties = 0;  // better keys and ties of the earlier packs
#pragma unroll
  for (int q = 0; q < NP; ++q) {
    const bool valid = int64_t{q} * 32 + lane < packs;
    bits_t<T> ord[P];
    to_orders_paired<T, P>(raw[q], o.largest, ord);
    unsigned is_better = 0, is_tie = 0, lower_better = 0, lower_ties = 0, all_better = 0, all_ties = 0;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      is_better |= (valid && ord[j] > kth ? 1u : 0u) << j;
      is_tie |= (valid && ord[j] == kth ? 1u : 0u) << j;
      const unsigned b = __ballot_sync(kFull, is_better >> j & 1u), t = __ballot_sync(kFull, is_tie >> j & 1u);
      lower_better += __popc(b & lower);
      lower_ties += __popc(t & lower);
      all_better += __popc(b);
      all_ties += __popc(t);
    }
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const unsigned earlier = (1u << j) - 1u;  // this lane's keys before j
      const unsigned at = is_better >> j & 1u ? before + lower_better + __popc(is_better & earlier)
                                               : better + ties + lower_ties + __popc(is_tie & earlier);
      if ((is_better | is_tie) >> j & 1u && at < o.k) {
        values[r * o.k + at] = raw[q].v[j];
        indices[r * o.k + at] = (int64_t{q} * 32 + lane) * P + j;
      }
    }
    before += all_better;
    ties += all_ties;
  }
}

// The tourney past k 32: a lane's first C keys (C x 32 keys cover the row:
// a row of 64 sorts 64 keys, not 32 x ITEMS) sorted by the warp and the
// first k written; unsorted, only the k-th is taken from the sort
// (tourney_unsorted).
template <int C, class T, class Key, int ITEMS, int P>
__device__ __forceinline__ void tourney_sort(Key (&v)[ITEMS], int64_t packs, const T* row, T* values,
                                             int64_t* indices, int64_t r, const Output& o) {
  Key(&head)[C] = *reinterpret_cast<Key(*)[C]>(&v[0]);
  warp_sort<C>(head);
  if (!o.sorted) {
    const int lane = threadIdx.x % 32, k = static_cast<int>(o.k);
    // the k-th by a select a register (warp_at's index of a register took
    // the keys to local memory here)
    Key at = Key(0);
#pragma unroll
    for (int j = 0; j < C; ++j) at = j * 32 + lane == k - 1 ? head[j] : at;
    const bits_t<T> kth = key_order<T>(TourneyKey<T>::wide(shfl_key(at, (k - 1) % 32)));
    unsigned better = 0;
#pragma unroll
    for (int j = 0; j < C; ++j) better += j * 32 + lane < k && key_order<T>(TourneyKey<T>::wide(head[j])) > kth;
    return tourney_unsorted<T, ITEMS, P>(packs, kth, __reduce_add_sync(kFull, better), row, values, indices,
                                         r, o);
  }
  key_t<T> wide[C];
#pragma unroll
  for (int j = 0; j < C; ++j) wide[j] = TourneyKey<T>::wide(head[j]);
  emit_warp_sorted<C, T>(wide, row, values, indices, r, o);
}

// tourney_sort over the fewest registers, a power of two C <= ITEMS, that
// hold a lane's `held` keys.
template <int C, class T, class Key, int ITEMS, int P>
__device__ __forceinline__ void tourney_sort_held(int64_t held, Key (&v)[ITEMS], int64_t packs, const T* row,
                                                  T* values, int64_t* indices, int64_t r, const Output& o) {
  if constexpr (C > 1)
    if (held <= C / 2)
      return tourney_sort_held<C / 2, T, Key, ITEMS, P>(held, v, packs, row, values, indices, r, o);
  tourney_sort<C, T, Key, ITEMS, P>(v, packs, row, values, indices, r, o);
}

// A round's winner for lane t of the group: the key and the lane it came
// from.  Keys that may tie (ValueKey) leave it in shared memory: the owner
// stores, lane t loads once after the rounds (H200, 65536 x 256 float32
// k 8: 38.3 -> 36.3 us against selecting the key and its lane into lane
// t's registers each round); distinct keys keep the register select (the
// store made ptxas branch around the shift: bfloat16 36.0 -> 37.5 us).
template <class Key> struct alignas(2 * sizeof(Key)) Won {
  Key key;
  int owner;
};

// One round of a tourney over each lane's keys, sorted largest first: the
// group's largest head goes to lane t, and its owner shifts its next `len`
// keys up.  A lane gives at most k keys, so for k <= ITEMS round t shifts
// only the ITEMS - 1 - t keys later rounds can reach (the rounds unrolled,
// `len` a constant); past that every round shifts all and fills the last
// with Key(0), and a lane that gave all its keys (`can` false) owns no
// more.  The shift is selects, not a branch around moves (ptxas branched,
// and a warp ran both sides).  Returns whether this lane gave the key.
template <class TK, int ITEMS, class Key>
__device__ __forceinline__ bool tourney_round(Key (&v)[ITEMS], int len, bool can, int t, int width, int sub,
                                              Won<Key>& mine_won, Won<Key>* staged) {
  const Key top = group_max<TK>(v[0], width);
  bool mine = v[0] == top;
  if constexpr (TK::kDistinct) {
    if (sub == t) mine_won.key = top;
  } else {  // the lowest of the tied lanes
    mine = mine && can;
    const unsigned tied = __ballot_sync(kFull, mine);  // every lane: not under the && below
    mine = mine && (tied & ((1u << (threadIdx.x % 32)) - 1u)) == 0;
    if (mine) staged[t] = Won<Key>{top, sub};
  }
#pragma unroll
  for (int i = 0; i + 1 < ITEMS; ++i)
    if (i < len) v[i] = mine ? v[i + 1] : v[i];
  if (len == ITEMS - 1) v[ITEMS - 1] = mine ? Key(0) : v[ITEMS - 1];
  return mine;
}

// k rounds: lane t of the group gets the row's t-th largest key.  `staged`:
// the group's k slots in shared memory (keys that may tie).
template <class TK, int ITEMS, class Key>
__device__ __forceinline__ Won<Key> tourney_rounds(Key (&v)[ITEMS], int k, int width, int sub, Won<Key>* staged) {
  Won<Key> mine{Key(0), 0};
  if (k <= ITEMS) {
#pragma unroll
    for (int t = 0; t < ITEMS; ++t) {
      if (t == k) break;
      tourney_round<TK>(v, ITEMS - 1 - t, true, t, width, sub, mine, staged);
    }
  } else {
    int left = ITEMS;
    for (int t = 0; t < k; ++t) left -= tourney_round<TK>(v, ITEMS - 1, left > 0, t, width, sub, mine, staged);
  }
  if constexpr (!TK::kDistinct) {
    __syncwarp();
    if (sub < k) mine = staged[sub];
  }
  return mine;
}

// The element index of lane t's key when keys are order bits alone: the
// owner's nth element of that value in index order, where n counts the
// earlier rounds that took the same value from the same lane (those rounds
// are consecutive: a lane's equal keys are adjacent in its sorted list, and
// the lowest tied lane keeps winning until its copies are gone).  `s` is
// the lane's keys before sorting, in index order.
template <int ITEMS>
__device__ __forceinline__ uint32_t place_by_value(const uint32_t (&s)[ITEMS], uint32_t won, int owner, int lane,
                                                   bool won_live) {
  const uint32_t won_before = __shfl_up_sync(kFull, won, 1);
  const int owner_before = __shfl_up_sync(kFull, owner, 1);
  const bool starts = lane == 0 || won != won_before || owner != owner_before;
  const unsigned runs = __ballot_sync(kFull, starts) & (0xffffffffu >> (31 - lane));
  const int nth = lane - (31 - __clz(runs));
  uint32_t pos = 0;
  if (__any_sync(kFull, won_live && nth > 0)) {  // lanes past k hold no winner
    int seen = 0;
#pragma unroll
    for (int p = 0; p < ITEMS; ++p) {
      const bool same = __shfl_sync(kFull, s[p], owner) == won;
      if (same && seen == nth) pos = p;
      seen += same;
    }
  } else {  // no value taken twice from one lane: its first copy
#pragma unroll
    for (int p = ITEMS - 1; p >= 0; --p)
      if (__shfl_sync(kFull, s[p], owner) == won) pos = p;
  }
  return static_cast<uint32_t>(owner * ITEMS) + pos;
}

// Lane t's key (the row's t-th largest) written out; unsorted: values better
// than the k-th first, then its ties, each by index.
template <class T>
__device__ __forceinline__ void tourney_write(key_t<T> mine, const T* row, T* values, int64_t* indices, int64_t r,
                                              const Output& o, int width, int sub, bool live) {
  const int lane = threadIdx.x % 32, k = static_cast<int>(o.k);
  if (!o.sorted) {
    // the order needs only whether a key beats the k-th, then its index (a
    // row of at most 1024): 32-bit keys, where unsorted_key's 64-bit ones
    // take two shuffles and 64-bit compares a step.  Lanes from k on hold
    // nothing: sort the first power of two that covers k.
    const bits_t<T> kth_order = key_order<T>(shfl_key(mine, (lane & ~(width - 1)) + k - 1));
    const uint32_t better = key_order<T>(mine) > kth_order ? 0x80000000u : 0u;
    const uint32_t key = sub < k ? better | (0x7fffffffu - key_index(mine)) : 0u;
    const uint32_t ordered = group_sort(key, pow2_at_least_rt(k));
    mine = make_key<T>(0, 0x7fffffffu - (ordered & 0x7fffffffu));  // emit reads the value at the index
  }
  if (live && sub < k) emit(row, values, indices, r * o.k + sub, mine);
}

// A row of at most 32 x ITEMS elements read once into the registers of a
// group of lanes (a warp, or a power of two of its lanes for short rows:
// 8 lanes a row of 64 at 8 keys a lane, four rows a warp).  k <= 32: each
// lane's ITEMS keys sorted, largest first, then k rounds (tourney_round):
// a sort of ITEMS keys and a few instructions a round, against the queue's
// two walks of the row and two warp sorts, for rows of routing size (8-256
// experts, k 2-8).  A 4-byte type in a warp a row takes its order bits
// alone (ValueKey) and finds the indices after the rounds; its lanes hold
// ITEMS consecutive elements (lane_major) so that the lowest lane holds the
// lowest index.  k > 32: the row sorted whole by a warp.  Shared memory
// only for ValueKey's round winners (Won).  Not float64.  GROUPS: compiled for groups of `width_arg` lanes; without it
// a warp a row, the width a constant (a runtime width cost the warp-a-row
// form 6-18%: H100, 16384 x 256 float32 k 8, 18.7 -> 22.1 us).
template <class T, int ITEMS, int P, int BLOCK, bool GROUPS>
__global__ void __launch_bounds__(BLOCK)
    tourney_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices,
                   int64_t batch, Output o, int width_arg) {
  using TK = TourneyKey<T>;
  using Key = typename TK::Key;
  static_assert(sizeof(key_t<T>) == 8, "not float64");
  constexpr int NP = ITEMS / P;
  constexpr bool kByValue = !GROUPS && sizeof(T) == 4;  // ValueKey for k <= 32
  // a row to each `width` lanes (a power of two: 32 / width rows a warp)
  const int width = GROUPS ? width_arg : 32;
  const int lane = threadIdx.x % 32, sub = lane & (width - 1);
  const int64_t r = (blockIdx.x * int64_t{BLOCK} + threadIdx.x) / width;
  const bool live = r < batch;
  if (width == 32 && !live) return;  // whole warps leave; groups of a warp stay for its shuffles
  const T* row = x + (live ? r : 0) * o.n;
  const int64_t packs = live ? o.n / P : 0;  // whole: n % P == 0
  const int k = static_cast<int>(o.k);
  // ValueKey's lanes hold ITEMS consecutive elements (lane_major); a warp
  // sort past k 32 takes the first registers of every lane, so packs go to
  // the lanes in turn
  const bool lane_major = kByValue && k <= 32;
  const auto pack_at = [&](int q) { return lane_major ? int64_t{lane} * NP + q : int64_t{q} * width + sub; };
  Pack<T, P> raw[NP];
#pragma unroll
  for (int q = 0; q < NP; ++q) raw[q] = load_pack<T, P>(row, pack_at(q), pack_at(q) < packs);
  if constexpr (kByValue) {
    if (lane_major) {
      uint32_t s[ITEMS], v[ITEMS];  // past the row: 0, at the highest indices
#pragma unroll
      for (int q = 0; q < NP; ++q) to_orders_paired<T, P>(raw[q], o.largest, &s[q * P]);
      if (packs < 32 * NP) {  // a short row (or none): what no lane loaded is 0, not its zeros' order
#pragma unroll
        for (int q = 0; q < NP; ++q)
#pragma unroll
          for (int j = 0; j < P; ++j) s[q * P + j] = pack_at(q) < packs ? s[q * P + j] : 0u;
      }
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) v[i] = s[i];
      sort_descending(v);
      __shared__ Won<uint32_t> won[BLOCK];
      const Won<uint32_t> mine = tourney_rounds<ValueKey<T>>(v, k, 32, lane, won + threadIdx.x / 32 * 32);
      const uint32_t index = place_by_value(s, mine.key, mine.owner, lane, lane < k);
      return tourney_write<T>(make_key<T>(mine.key, index), row, values, indices, r, o, 32, lane, live);
    }
  }
  Key v[ITEMS];
#pragma unroll
  for (int q = 0; q < NP; ++q) {
    const int64_t at = pack_at(q);
    bits_t<T> s[P];
    to_orders_paired<T, P>(raw[q], o.largest, s);
#pragma unroll
    for (int j = 0; j < P; ++j)  // Key(0): below every real key
      v[q * P + j] = at < packs ? TK::make(s[j], static_cast<uint32_t>(at * P + j)) : Key(0);
  }
  if (!GROUPS && k > 32) {  // most of the row: sort it whole, over the registers a lane may fill
    const int64_t held = (packs + 31) / 32 * P;
    return tourney_sort_held<ITEMS, T, Key, ITEMS, P>(held, v, packs, row, values, indices, r, o);
  }
  if constexpr (!kByValue) {
    sort_descending(v);
    const Won<Key> mine = tourney_rounds<TK>(v, k, width, sub, static_cast<Won<Key>*>(nullptr));
    tourney_write<T>(TK::wide(mine.key), row, values, indices, r, o, width, sub, live);
  }
}

// ---- the global sort's output pass ----------------------------------------------

// The first k sorted pairs of each row (rows of `stride` pairs: k, or n when
// every element was sorted) written out: their indices, and the values made
// from the keys' order bits (value_of: x is read only for a NaN).  Reading
// x by index instead gathered a 32-byte sector a value (H200, 9.1M float32,
// k = n: 121 us, 260 MB read for 36 MB of values).
template <class T>
__global__ void emit_sorted_kernel(const T* __restrict__ x, T* __restrict__ values,
                                   int64_t* __restrict__ indices, const void* __restrict__ keys, int key_bytes,
                                   const unsigned* __restrict__ index, Output o, int64_t stride, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / o.k;
    const int64_t at = row * stride + (i - row * o.k);
    const uint64_t key = key_bytes == 4 ? static_cast<const uint32_t*>(keys)[at] : static_cast<const uint64_t*>(keys)[at];
    const uint32_t e = index[at];
    constexpr uint64_t kOrder = KeyOf<T>::kBits == 64 ? ~0ull : (1ull << KeyOf<T>::kBits) - 1;  // the row's rank above
    values[i] = value_of<T>(static_cast<bits_t<T>>(key & kOrder), o.largest, x + row * o.n, e);
    indices[i] = e;
  }
}

// Every element's pair (sorts_all), in row order: already by index.
template <class T>
__global__ void all_pairs_kernel(const T* __restrict__ x, Pairs pr, int64_t batch, int64_t n, bool largest) {
  const int64_t total = batch * n;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / n;
    put_pair<T>(pr, i, row, order_bits<T>(x[i], largest), static_cast<uint32_t>(i - row * n));
  }
}

// ---- launchers ----------------------------------------------------------------------

inline char* region(const Problem& p, std::size_t at) { return static_cast<char*>(p.workspace) + at; }

inline unsigned grid_for(int64_t total) {
  return static_cast<unsigned>((total + 255) / 256 < 4096 ? (total + 255) / 256 : 4096);
}

// The global sort's pairs (problem.hpp's plan_sort): the first of their two buffers.
inline Pairs pairs_for(const Problem& p, const Plan& pl, const kgen::topk::PairSort& s) {
  return Pairs{region(p, pl.pair_keys_at), reinterpret_cast<unsigned*>(region(p, pl.pair_indices_at)),
               s.key_bytes, s.fold, p.batch};
}

// Sorts the pairs the kernels wrote and writes the first k of each row.
template <class T>
cudaError_t sort_in_global(const Problem& p, const Plan& pl, const kgen::topk::PairSort& s, cudaStream_t stream) {
  void* const keys[2] = {region(p, pl.pair_keys_at), region(p, pl.pair_keys_at + pl.pair_keys / 2)};
  unsigned* const index[2] = {reinterpret_cast<unsigned*>(region(p, pl.pair_indices_at)),
                              reinterpret_cast<unsigned*>(region(p, pl.pair_indices_at + pl.pair_indices / 2))};
  bool second = false;
  cudaError_t err = kgen::topk::global_sort(s, keys, index, region(p, pl.sort_temp_at), pl.sort_temp, stream,
                                            &second);
  if (err != cudaSuccess) return err;
  const int64_t total = p.batch * p.k;
  const int b = second ? 1 : 0;
  emit_sorted_kernel<T><<<grid_for(total), 256, 0, stream>>>(static_cast<const T*>(p.x), static_cast<T*>(p.values),
                                                            p.indices, keys[b], s.key_bytes, index[b],
                                                            Output{p.n, p.k, p.largest, p.sorted}, s.per_row,
                                                            total);
  return cudaGetLastError();
}

// sorts_all: every element of every row, sorted, the first k written.
template <class T>
cudaError_t sort_all(const Problem& p, cudaStream_t stream) {
  const Plan pl = kgen::topk::plan_sort_all(p);
  const kgen::topk::PairSort s = kgen::topk::pair_sort(p, p.n);
  all_pairs_kernel<T><<<grid_for(p.batch * p.n), 256, 0, stream>>>(static_cast<const T*>(p.x),
                                                                   pairs_for(p, pl, s), p.batch, p.n, p.largest);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  return sort_in_global<T>(p, pl, s, stream);
}

template <class T, int BLOCK, int ITEMS, int R, int P>
cudaError_t launch_block(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Plan pl = kgen::topk::plan_block(p);
  const auto x = static_cast<const T*>(p.x);
  const auto values = static_cast<T*>(p.values);
  const Output o{p.n, p.k, p.largest, p.sorted};
  const auto blocks = static_cast<unsigned>(p.batch);
  if (p.sorted && kgen::topk::sorts_in_block(p)) {
    block_kernel<T, BLOCK, ITEMS, R, P, true><<<blocks, BLOCK, 0, stream>>>(x, values, p.indices, Pairs{}, o);
    return cudaGetLastError();
  }
  // written in index order by the block (write_in_order): the output, or the global sort's pairs
  const kgen::topk::PairSort s = kgen::topk::pair_sort(p, p.k);
  const Pairs pairs = p.sorted ? pairs_for(p, pl, s) : Pairs{};
  block_kernel<T, BLOCK, ITEMS, R, P, false><<<blocks, BLOCK, 0, stream>>>(x, values, p.indices, pairs, o);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess || !p.sorted) return err;
  return sort_in_global<T>(p, pl, s, stream);
}

// A k past one block's sort (problem.hpp's plan_large_k): the k-th's order
// bits by digit passes, each block's counts, the writes in index order.
template <class T, int BLOCK, int R, int P>
cudaError_t launch_large_k(const Problem& p, cudaStream_t stream) {
  const Plan pl = kgen::topk::plan_large_k(p, BLOCK, P, R);
  MultiArgs a{reinterpret_cast<RowState*>(region(p, pl.state_at)),
              reinterpret_cast<unsigned*>(region(p, pl.hist_at)), nullptr, nullptr, nullptr,
              reinterpret_cast<unsigned*>(region(p, pl.ties_at)), p.batch, 0, 0};
  const Output o{p.n, p.k, p.largest, p.sorted};
  cudaError_t err = cudaMemsetAsync(p.workspace, 0, pl.zeroed, stream);
  if (err != cudaSuccess) return err;
  const dim3 grid(static_cast<unsigned>(p.batch), static_cast<unsigned>(pl.blocks_per_row));
  const T* x = static_cast<const T*>(p.x);
  const bool chained = p.device->code_arch >= 90;  // as launch_multi's
  constexpr int kLevels = Digits<KeyOf<T>::kBits, R>::kLevels;
  for (int l = 0; l < kLevels; ++l)
    if ((err = launch_chained(chained && l > 0, multi_order_digit_kernel<T, BLOCK, R, P>, grid, BLOCK, stream, x, a,
                              o, l)) != cudaSuccess)
      return err;
  if ((err = launch_chained(chained, multi_rank_count_kernel<T, BLOCK, P>, grid, BLOCK, stream, x, a, o)) !=
      cudaSuccess)
    return err;
  const kgen::topk::PairSort s = kgen::topk::pair_sort(p, p.k);
  const Pairs pairs = p.sorted ? pairs_for(p, pl, s) : Pairs{};
  if ((err = launch_chained(chained, multi_write_in_order_kernel<T, BLOCK, P>, grid, BLOCK, stream, x,
                            static_cast<T*>(p.values), p.indices, a, o, pairs)) != cudaSuccess ||
      !p.sorted)
    return err;
  return sort_in_global<T>(p, pl, s, stream);
}

template <class T, int BLOCK, int R, int P>
cudaError_t launch_multi(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  if (kgen::topk::sorts_all(p)) return sort_all<T>(p, stream);
  if (!kgen::topk::sorts_in_block(p)) return launch_large_k<T, BLOCK, R, P>(p, stream);
  const Plan pl = kgen::topk::plan_multi(p, BLOCK, P, R);
  MultiArgs a{reinterpret_cast<RowState*>(region(p, pl.state_at)),
              reinterpret_cast<unsigned*>(region(p, pl.hist_at)), region(p, pl.selected_at),
              region(p, pl.cand_at), region(p, pl.tops_at), reinterpret_cast<unsigned*>(region(p, pl.ties_at)),
              p.batch, pl.candidates, pl.offers_per_warp};
  const Output o{p.n, p.k, p.largest, p.sorted};
  cudaError_t err = cudaMemsetAsync(p.workspace, 0, pl.zeroed, stream);
  if (err != cudaSuccess) return err;
  const dim3 grid(static_cast<unsigned>(p.batch), static_cast<unsigned>(pl.blocks_per_row));
  const T* x = static_cast<const T*>(p.x);
  // the device must run sm_90 code of these kernels, not only be an sm_90
  // device: a build for sm_80 alone runs there through its PTX, in which
  // the grid dependency waits compile to nothing
  const bool chained = p.device->code_arch >= 90;
  if (pl.offers_per_warp > 0) {
    multi_offer_kernel<T, BLOCK, P><<<grid, BLOCK, 0, stream>>>(x, a, o);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
    if (2 * p.k > BLOCK &&  // else the offer pass's last block took the bound
        (err = launch_chained(chained, multi_bound_kernel<T, kBoundBlock>, dim3(static_cast<unsigned>(p.batch)),
                              kBoundBlock, stream, a, o, pl.blocks_per_row * (BLOCK / 32) * pl.offers_per_warp)) !=
            cudaSuccess)
      return err;
    if ((err = launch_chained(chained, multi_gather_kernel<T, BLOCK, P>, grid, BLOCK, stream, x, a, o)) !=
        cudaSuccess)
      return err;
  }
  // the digit passes: rows the bound pass settled skip them all
  if ((err = launch_chained(chained && pl.offers_per_warp > 0, multi_count_kernel<T, BLOCK, R, P>, grid,
                            BLOCK, stream, x, a, o)) != cudaSuccess)
    return err;
  // one pass per digit after the first, and one that appends the last
  // bucket; a row whose keys went to its candidate list (random data: after
  // the first pass) skips the rest
  constexpr int kLevels = Digits<kKeyWidth<T>, R>::kLevels;
  if ((err = launch_chained(chained, multi_pass_kernel<T, BLOCK, R, P, true>, grid, BLOCK, stream, x, a,
                            o, 1)) != cudaSuccess)
    return err;
  for (int l = 2; l <= kLevels; ++l)
    if ((err = launch_chained(chained, multi_pass_kernel<T, BLOCK, R, P, false>, grid, BLOCK, stream, x,
                              a, o, l)) != cudaSuccess)
      return err;
  // the finishing sort with 1024 threads whatever the passes' block size
  return launch_chained(chained, multi_finish_kernel<T, 1024, R>, dim3(static_cast<unsigned>(p.batch)), 1024,
                        stream, x, static_cast<T*>(p.values), p.indices, a, o);
}

template <class T, int C, int P>
cudaError_t launch_queue(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  constexpr int kBlock = 128;
  const int64_t blocks = (p.batch + kBlock / 32 - 1) / (kBlock / 32);
  queue_kernel<T, C, P, kBlock><<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(
      static_cast<const T*>(p.x), static_cast<T*>(p.values), p.indices, p.batch,
      Output{p.n, p.k, p.largest, p.sorted});
  return cudaGetLastError();
}

// Lanes a row: enough for the row at ITEMS keys a lane and for k winners
// (lane t holds the t-th), a power of two; 32 when the row is sorted whole,
// or when a warp a row fits one wave: a group's rounds take shuffles where
// a warp's take one reduction (H100, one row of 127 int32, k 14: 6.5 us
// in 16 lanes, 4.8 in a block).
inline int tourney_width(const Problem& p, int items, int pack) {
  const int64_t n = p.n, k = p.k;
  if (k > 32 || p.batch * 32 <= int64_t{p.device->sm_count} * p.device->max_threads_per_sm) return 32;
  const int64_t lanes = std::max<int64_t>((n / pack + items / pack - 1) / (items / pack), k);
  int width = 1;
  while (width < lanes) width *= 2;
  return width;
}

template <class T, int ITEMS, int P>
cudaError_t launch_tourney(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  constexpr int kBlock = 128;
  const int width = tourney_width(p, ITEMS, P);
  const int64_t rows = kBlock / width;  // a block's
  const int64_t blocks = (p.batch + rows - 1) / rows;
  const Output o{p.n, p.k, p.largest, p.sorted};
  const auto x = static_cast<const T*>(p.x);
  const auto values = static_cast<T*>(p.values);
  if (width == 32)
    tourney_kernel<T, ITEMS, P, kBlock, false>
        <<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(x, values, p.indices, p.batch, o, 32);
  else
    tourney_kernel<T, ITEMS, P, kBlock, true>
        <<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(x, values, p.indices, p.batch, o, width);
  return cudaGetLastError();
}

}  // namespace topk
}  // namespace device
}  // namespace kgen
