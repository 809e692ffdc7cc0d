// Block-level pieces of top-k: digit counting, the bucket choice, the radix
// select loop over any source of keys, and the finish (in-block bitonic sort
// of the selected k and the output writes).
#pragma once

#include "kgen/device/topk_keys.cuh"

namespace kgen {
namespace device {
namespace topk {

constexpr unsigned kFull = 0xffffffffu;

// Exclusive prefix sum over the threads of a block, in thread order.  With
// `sum`, the block's total too, on every thread (then `scratch` holds
// BLOCK / 32 + 1 entries).
template <int BLOCK>
__device__ __forceinline__ unsigned block_exclusive_sum(unsigned v, unsigned* scratch, unsigned* sum = nullptr) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned inc = v;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const unsigned o = __shfl_up_sync(kFull, inc, d);
    if (lane >= d) inc += o;
  }
  if constexpr (BLOCK == 32) {
    if (sum) *sum = __shfl_sync(kFull, inc, 31);
    return inc - v;
  }
  if (lane == 31) scratch[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    unsigned w = lane < BLOCK / 32 ? scratch[lane] : 0u, wi = w;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const unsigned o = __shfl_up_sync(kFull, wi, d);
      if (lane >= d) wi += o;
    }
    if (lane < BLOCK / 32) scratch[lane] = wi - w;
    if (sum && lane == BLOCK / 32 - 1) scratch[BLOCK / 32] = wi;
  }
  __syncthreads();
  const unsigned r = scratch[warp] + inc - v;
  if (sum) *sum = scratch[BLOCK / 32];
  __syncthreads();
  return r;
}

// Counts one digit per lane into a shared histogram; called by whole warps.
// Narrow digits (R <= 4) count with one warp ballot per bin, as PyTorch's
// 2-bit radix select does; wider ones with one shared-memory atomic a lane.
// (Aggregating the lanes of a warp with equal digits by __match_any_sync
// first was 4x slower: H100, 2^24 float32, first digit 37 -> 157 us.)
// `crowded` (the same for the whole warp): the keys are expected to share
// their digits (a row of few distinct values), where lanes' atomics on one
// shared counter serialise (H100, the first digit of 2^24 float32 of four
// distinct values: 139 us, 36 on random data): lanes of a warp with one
// digit are added by one atomic.  Not for spread digits: the match costs
// more than the atomics it saves (4x on random data, above).
template <int R>
__device__ __forceinline__ void count_digit(unsigned* hist, unsigned digit, bool counted, bool crowded = false,
                                            int stride = 1) {
  if constexpr (R <= 4) {
#pragma unroll
    for (unsigned b = 0; b < (1u << R); ++b) {
      const unsigned m = __ballot_sync(kFull, counted && digit == b);
      if (m && threadIdx.x % 32 == 0) atomicAdd(&hist[b * stride], __popc(m));
    }
  } else if (crowded) {
    const unsigned peers = __match_any_sync(kFull, counted ? digit : ~0u);
    if (counted && __ffs(peers) - 1 == static_cast<int>(threadIdx.x % 32))
      atomicAdd(&hist[digit * stride], __popc(peers));
  } else if (counted) {
    atomicAdd(&hist[digit * stride], 1u);
  }
}

struct Choice {
  unsigned bucket, above, count;  // the bucket, keys in buckets above it, keys in it
};

// The bucket holding the `want`-th largest key: buckets scanned from the top
// (bucket kBins-1), each thread owning a run of them.
template <int BLOCK, int BINS>
__device__ __forceinline__ void choose_bucket(const unsigned* hist, unsigned want, Choice* out,
                                              unsigned* scratch) {
  constexpr int PER = (BINS + BLOCK - 1) / BLOCK;
  const int first = threadIdx.x * PER;  // rank from the top of this thread's first bin
  unsigned local = 0;
#pragma unroll
  for (int j = 0; j < PER; ++j)
    if (first + j < BINS) local += hist[BINS - 1 - (first + j)];
  unsigned acc = block_exclusive_sum<BLOCK>(local, scratch);
  if (acc < want && want <= acc + local) {
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      if (first + j >= BINS) break;
      const unsigned b = BINS - 1 - (first + j), c = hist[b];
      if (acc + c >= want) {
        *out = Choice{b, acc, c};
        break;
      }
      acc += c;
    }
  }
  __syncthreads();
}

template <int BLOCK, int R> struct SelectShared {
  unsigned hist[1 << R];
  unsigned scratch[32];
  Choice choice;
};

// The radix select loop.  The keys in play are those whose digits before
// level `level` equal `prefix`; `want` of them are still to be chosen.
// `each(f)` calls f(key, valid) for every key of the source (whole warps
// at a time; keys outside the prefix are skipped here).  Returns the
// threshold: the selection is every key in play >= it, exactly `want` keys.
template <int W, int R, int BLOCK, class Key, class Each>
__device__ Key radix_select(Each&& each, int level, Key prefix, unsigned want,
                            SelectShared<BLOCK, R>& sh) {
  using D = Digits<W, R>;
  for (int l = level; l < D::kLevels; ++l) {
    for (int b = threadIdx.x; b < D::kBins; b += BLOCK) sh.hist[b] = 0;
    __syncthreads();
    each([&](Key key, bool valid) {
      count_digit<R>(sh.hist, D::digit(key, l), valid && D::in(key, l, prefix));
    });
    __syncthreads();
    choose_bucket<BLOCK, D::kBins>(sh.hist, want, &sh.choice, sh.scratch);
    const Choice c = sh.choice;
    want -= c.above;
    prefix = (prefix << D::width(l)) | Key(c.bucket);
    __syncthreads();  // sh.choice and sh.hist are rewritten next level
    // every key of the bucket is chosen: its prefix is the threshold (with
    // distinct keys this is certain at the last level)
    if (c.count == want) return prefix << D::lo(l);
  }
  return prefix;  // not reached: keys are distinct
}

// Where the selected keys of a row go before the block's sort.
template <class T> struct Collected {
  key_t<T>* keys;    // smem buffer
  unsigned* count;   // smem counter
};

__device__ __forceinline__ void atomic_min_bits(uint32_t* a, uint32_t v) { atomicMin(a, v); }
__device__ __forceinline__ void atomic_min_bits(uint64_t* a, uint64_t v) {
  atomicMin(reinterpret_cast<unsigned long long*>(a), static_cast<unsigned long long>(v));
}

template <class T>
__device__ __forceinline__ void collect(const Collected<T>& c, key_t<T> key, bool take) {
  // one atomic per warp: lanes take consecutive slots
  const unsigned m = __ballot_sync(kFull, take);
  if (!m) return;
  const int lane = threadIdx.x % 32, leader = __ffs(m) - 1;
  unsigned base = 0;
  if (lane == leader) base = atomicAdd(c.count, __popc(m));
  base = __shfl_sync(kFull, base, leader);
  if (take) c.keys[base + __popc(m & ((1u << lane) - 1u))] = key;
}

// Sorts n (a power of two) keys in shared memory, descending.
template <int BLOCK, class Key>
__device__ void bitonic_sort_desc(Key* keys, int n) {
  for (int size = 2; size <= n; size *= 2) {
    for (int stride = size / 2; stride > 0; stride /= 2) {
      for (int i = threadIdx.x; i < n / 2; i += BLOCK) {
        const int a = 2 * i - (i & (stride - 1)), b = a + stride;
        const Key ka = keys[a], kb = keys[b];
        const bool first_half = (a & size) == 0;  // sorted descending in the end
        if (first_half ? ka < kb : ka > kb) {
          keys[a] = kb;
          keys[b] = ka;
        }
      }
      __syncthreads();
    }
  }
}

template <class T>
__device__ __forceinline__ void emit(const T* row, T* values, int64_t* indices, int64_t at,
                                     key_t<T> key) {
  const uint32_t i = key_index(key);
  values[at] = row[i];
  indices[at] = i;
}

struct Output {
  int64_t n, k;
  bool largest, sorted;
};

// With m >= k candidate keys of a row in shared memory, among them the
// row's k best: sorts them (descending), keeps the first k, orders those as
// asked (sorted: by key; unsorted: better than the k-th value first, then
// by index) and writes values and indices.  `keys` holds the next power of
// two >= m.
template <int BLOCK, class T>
__device__ void finish_candidates(key_t<T>* keys, int m, const T* row, T* values, int64_t* indices,
                                  int64_t row_id, const Output& o) {
  using Key = key_t<T>;
  const int k = static_cast<int>(o.k);
  int n = 1;
  while (n < m) n *= 2;
  for (int i = m + threadIdx.x; i < n; i += BLOCK) keys[i] = Key(0);  // below every real key
  __syncthreads();
  if (n > 1) bitonic_sort_desc<BLOCK>(keys, n);
  if (!o.sorted) {
    const bits_t<T> kth = key_order<T>(keys[k - 1]);
    int nk = 1;
    while (nk < k) nk *= 2;
    __syncthreads();  // every thread has read the k-th
    for (int i = threadIdx.x; i < nk; i += BLOCK)
      keys[i] = i < k ? unsorted_key<T>(keys[i], kth) : Key(0);
    __syncthreads();
    if (nk > 1) bitonic_sort_desc<BLOCK>(keys, nk);
  }
  for (int i = threadIdx.x; i < k; i += BLOCK)
    emit(row, values, indices, row_id * o.k + i, keys[i]);
}

}  // namespace topk
}  // namespace device
}  // namespace kgen
