// Block-level pieces of top-k: digit counting, the bucket choice, the radix
// select loop over any source of keys, and the finish (an in-block radix or
// bitonic sort of the selected k and the output writes).
#pragma once

#include <cub/block/block_radix_sort.cuh>

#include <type_traits>

#include "kgen/device/topk_keys.cuh"

namespace kgen {
namespace device {
namespace topk {

constexpr unsigned kFull = 0xffffffffu;

// Inclusive prefix sum over the lanes of a warp, in lane order (`lane`:
// this thread's, as the caller holds it).
template <class Lane> __device__ __forceinline__ unsigned warp_inclusive_sum(unsigned v, Lane lane) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const unsigned o = __shfl_up_sync(kFull, v, d);
    if (lane >= d) v += o;
  }
  return v;
}

// Exclusive prefix sum over the threads of a block, in thread order.  With
// `sum`, the block's total too, on every thread (then `scratch` holds
// BLOCK / 32 + 1 entries).
template <int BLOCK>
__device__ __forceinline__ unsigned block_exclusive_sum(unsigned v, unsigned* scratch, unsigned* sum = nullptr) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned inc = warp_inclusive_sum(v, lane);
  if constexpr (BLOCK == 32) {
    if (sum) *sum = __shfl_sync(kFull, inc, 31);
    return inc - v;
  }
  if (lane == 31) scratch[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    const unsigned w = lane < BLOCK / 32 ? scratch[lane] : 0u, wi = warp_inclusive_sum(w, lane);
    if (lane < BLOCK / 32) scratch[lane] = wi - w;
    if (sum && lane == BLOCK / 32 - 1) scratch[BLOCK / 32] = wi;
  }
  __syncthreads();
  const unsigned r = scratch[warp] + inc - v;
  if (sum) *sum = scratch[BLOCK / 32];
  __syncthreads();
  return r;
}

// How the lanes of a warp add their digits to a shared histogram (the
// same for the whole warp):
//   spread   one atomic a lane (digits that differ lane to lane).
//   matched  one atomic a distinct digit of the warp: keys expected to share
//            their digits (a row of few distinct values), where lanes'
//            atomics on one shared counter serialise (H100, the first digit
//            of 2^24 float32 of four distinct values: 139 us, 36 on random
//            data).  Not for spread digits: the match costs more than the
//            atomics it saves (H100, 2^24 float32, first digit 37 -> 157
//            us matching every key).
//   voted    one atomic when every lane holds the same digit, else one a
//            lane (the cluster tier's levels, where a row of few distinct
//            values puts every key in one bin at every level).
enum class Crowd { spread, matched, voted };

// Counts one digit per lane into a shared histogram; called by whole warps.
// Narrow digits (R <= 4) count with one warp ballot per bin, as PyTorch's
// 2-bit radix select does (whatever `crowd` says); wider ones as `crowd`
// says.
template <int R>
__device__ __forceinline__ void count_digit(unsigned* hist, unsigned digit, bool counted,
                                            Crowd crowd = Crowd::spread, int stride = 1) {
  if constexpr (R <= 4) {
#pragma unroll
    for (unsigned b = 0; b < (1u << R); ++b) {
      const unsigned m = __ballot_sync(kFull, counted && digit == b);
      if (m && threadIdx.x % 32 == 0) atomicAdd(&hist[b * stride], __popc(m));
    }
  } else if (crowd == Crowd::matched) {
    const unsigned peers = __match_any_sync(kFull, counted ? digit : ~0u);
    if (counted && __ffs(peers) - 1 == static_cast<int>(threadIdx.x % 32))
      atomicAdd(&hist[digit * stride], __popc(peers));
  } else if (crowd == Crowd::voted) {
    const unsigned lead = __shfl_sync(kFull, digit, 0);
    if (__all_sync(kFull, counted && digit == lead)) {
      if (threadIdx.x % 32 == 0) atomicAdd(&hist[lead * stride], 32u);
    } else if (counted) {
      atomicAdd(&hist[digit * stride], 1u);
    }
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

// Where radix_select stops: at the level whose bucket's keys are all
// chosen (its prefix is then the threshold; with distinct keys this is
// certain at the last level).
struct StopAtThreshold {
  __device__ bool operator()(unsigned /*above*/, unsigned count, unsigned want) const { return count == want; }
};
// Or, for a threshold at or below the want-th that at most `most` keys
// reach, also at the first level whose bucket and the buckets above it
// hold at most `most` keys (radix_floor).
struct StopWithin {
  unsigned most;
  __device__ bool operator()(unsigned above, unsigned count, unsigned want) const {
    return above + count <= most || count == want;
  }
};

// The radix select loop.  The keys in play are those whose digits before
// level `level` equal `prefix`; `want` of them are still to be chosen.
// `each(f)` calls f(key, valid) for every key of the source (whole warps
// at a time; keys outside the prefix are skipped here).  Returns the
// threshold: the selection is every key in play >= it, exactly `want` keys
// (past `stop`'s first level, the bucket's lowest key).
// `crowd`: how count_digit counts (keys that share their digits: matched
// or voted).
template <int W, int R, int BLOCK, class Key, class Each, class Stop = StopAtThreshold>
__device__ Key radix_select(Each&& each, int level, Key prefix, unsigned want,
                            SelectShared<BLOCK, R>& sh, Crowd crowd = Crowd::spread, Stop stop = {}) {
  using D = Digits<W, R>;
  unsigned above = 0;  // keys in buckets above the prefix's, over this call's levels
  for (int l = level; l < D::kLevels; ++l) {
    for (int b = threadIdx.x; b < D::kBins; b += BLOCK) sh.hist[b] = 0;
    __syncthreads();
    each([&](Key key, bool valid) {
      count_digit<R>(sh.hist, D::digit(key, l), valid && D::in(key, l, prefix), crowd);
    });
    __syncthreads();
    choose_bucket<BLOCK, D::kBins>(sh.hist, want, &sh.choice, sh.scratch);
    const Choice c = sh.choice;
    want -= c.above;
    above += c.above;
    prefix = (prefix << D::width(l)) | Key(c.bucket);
    __syncthreads();  // sh.choice and sh.hist are rewritten next level
    if (stop(above, c.count, want)) return prefix << D::lo(l);
  }
  return prefix;  // not reached: keys are distinct
}

// A threshold at or below the `want`-th largest key that at most `most`
// keys reach (most >= want): radix_select's levels from the top, stopped at
// the first whose bucket and the buckets above it hold at most `most` keys;
// the bucket's lowest key.  Spread keys stop after a level or two where the
// want-th itself takes every level: the stream tier's threads' bound
// (H200, topk v43, 128 x 128256 k 50: float32 52.7 -> 41.2 us, bfloat16
// 56.6 -> 48.2, against the exact k-th of the thread maxima) and the
// slices' merge.
template <int W, int R, int BLOCK, class Key, class Each>
__device__ Key radix_floor(Each&& each, unsigned want, unsigned most, SelectShared<BLOCK, R>& sh,
                           Crowd crowd = Crowd::spread) {
  return radix_select<W, R, BLOCK, Key>(each, 0, Key(0), want, sh, crowd, StopWithin{most});
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

// The lanes of `m` below this one: a taking lane's place in its warp's run.
__device__ __forceinline__ unsigned lanes_below(unsigned m) {
  return __popc(m & ((1u << (threadIdx.x % 32)) - 1u));
}

// The first of popc(m) slots of a run, reserved by one add(popc(m)) (an
// atomic add returning the count before) of the warp's lowest lane in m
// (m, the lanes taking a slot, not 0); every lane of the warp gets it.
// Called by whole warps.
template <class Add> __device__ __forceinline__ unsigned warp_reserve_by(unsigned m, Add&& add) {
  const int leader = __ffs(m) - 1;
  unsigned base = 0;
  if (static_cast<int>(threadIdx.x % 32) == leader) base = add(static_cast<unsigned>(__popc(m)));
  return __shfl_sync(kFull, base, leader);
}

// The same, counted by `counter` (shared or global memory).
__device__ __forceinline__ unsigned warp_reserve(unsigned* counter, unsigned m) {
  return warp_reserve_by(m, [counter](unsigned n) { return atomicAdd(counter, n); });
}

template <class T>
__device__ __forceinline__ void collect(const Collected<T>& c, key_t<T> key, bool take) {
  // one atomic per warp: lanes take consecutive slots
  const unsigned m = __ballot_sync(kFull, take);
  if (!m) return;
  const unsigned base = warp_reserve(c.count, m);
  if (take) c.keys[base + lanes_below(m)] = key;
}

// Keeps the k best of the m distinct keys in shared memory: moved to the
// front, in no order.  Returns the k-th best key.  `kept`: a shared counter.
// Digits counted spread (one atomic a lane) where they were matched: the
// stream kernel with it timed 1-4% faster on rows of random, constant,
// four-valued, ascending and descending values (H200, topk v46, a
// standalone harness); the sweep's problems of the multi tier, whose
// finish is the other caller, ran at 1.000-1.008 of before (geomean,
// 22-31 problems a seed).
// Round j's keys are all read before any is written, and its writes land
// below (j + 1) x BLOCK: no key is overwritten unread.  Whole block.
template <int BLOCK, class T>
__device__ __noinline__ key_t<T> keep_best(key_t<T>* keys, int m, int k, SelectShared<BLOCK, 8>& sh, unsigned* kept) {
  using Key = key_t<T>;
  auto each = [&](auto&& f) {
    for (int base = 0; base < m; base += BLOCK) {
      const int i = base + static_cast<int>(threadIdx.x);
      f(i < m ? keys[i] : Key(0), i < m);
    }
  };
  const Key t = radix_select<kKeyWidth<T>, 8, BLOCK, Key>(each, 0, Key(0), static_cast<unsigned>(k), sh, Crowd::spread);
  if (threadIdx.x == 0) *kept = 0;
  __syncthreads();
  const Collected<T> front{keys, kept};
  for (int base = 0; base < m; base += BLOCK) {
    const int i = base + static_cast<int>(threadIdx.x);
    const Key key = i < m ? keys[i] : Key(0);
    __syncthreads();
    collect<T>(front, key, i < m && key >= t);
  }
  __syncthreads();
  return t;
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

// The finish's radix sort: the candidates of a row (n, a power of two,
// IPT = n / BLOCK a thread, up to 8), each as one 64-bit key of its order
// bits over its index's bits, sorted where radix_fits; a bitonic sort
// otherwise.  H200, sweep (topk v23): the bitonic sort of 4096 8-byte keys
// moves 78 x 64 KiB through shared memory, a radix sort 8-12 passes of
// about 80 KiB (2826 x 2921 float16 k 2232: 647 -> 369 us).  But 1024 keys
// of 1 or 2 a thread sorted slower by radix (83 x 9371 int32 k 574, 1024 x
// 1: 38 -> 52 us; 1 x 543927 float32 k 964, 512 x 2: 68 -> 77), and 16 a
// thread spilled 400-560 bytes at 64 registers, as did the radix sort
// inlined where a row's keys are still live (see finish_candidates).
// float64's keys (64 order bits and the index) do not fit 64 bits:
// bitonic only.
template <int BLOCK, int IPT>
constexpr bool radix_fits = IPT >= 1 && BLOCK * IPT >= 1024 && (IPT >= 4 || BLOCK * IPT >= 2048);
template <int BLOCK, int IPT> using KeySort = cub::BlockRadixSort<uint64_t, BLOCK, IPT>;
template <int BLOCK, int CAP> constexpr int kRadixItems = CAP / BLOCK < 8 ? CAP / BLOCK : 8;  // the most
template <class T, int BLOCK, int CAP>
constexpr bool kRadixFinish = sizeof(key_t<T>) == 8 && radix_fits<BLOCK, kRadixItems<BLOCK, CAP>>;

// The finish's shared memory: the candidates' keys, then the sort's scratch;
// and each warp's bits of the candidates (differing_bits).
template <class T, int BLOCK, int CAP> struct FinishShared {
  union {
    key_t<T> keys[CAP];
    std::conditional_t<kRadixFinish<T, BLOCK, CAP>, typename KeySort<BLOCK, kRadixItems<BLOCK, CAP>>::TempStorage,
                       char>
        sort;
  };
  uint32_t spread[4][BLOCK / 32];
};

// The bits a radix sort of a block's keys must look at: those below the
// highest bit on which two keys differ (above it they all agree).  `any`
// and `all`: a thread's keys OR-ed and AND-ed; `spread`: 4 words a warp.
// Candidates crowd: a row's best values share their top order bits (all
// of them in a constant or NaN-heavy row, and then often the top index
// bits too), and each 4 bits they share is a pass of the sort saved (H200,
// topk v28: 400 x 27701 float16 descending k 1769 171 -> 151 us, 31 x 1997
// float32 constant k = n 21.2 -> 11.5).  Whole block.
template <int BLOCK>
__device__ __forceinline__ int differing_bits(uint64_t any, uint64_t all, uint32_t (&spread)[4][BLOCK / 32]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t w[4] = {__reduce_or_sync(kFull, static_cast<uint32_t>(any)),
                         __reduce_or_sync(kFull, static_cast<uint32_t>(any >> 32)),
                         __reduce_and_sync(kFull, static_cast<uint32_t>(all)),
                         __reduce_and_sync(kFull, static_cast<uint32_t>(all >> 32))};
  if (lane < 4) spread[lane][warp] = w[lane];
  __syncthreads();
  uint32_t v[4] = {0, 0, ~0u, ~0u};
  if (lane < BLOCK / 32)
    for (int q = 0; q < 4; ++q) v[q] = spread[q][lane];
  const uint64_t ors = (uint64_t{__reduce_or_sync(kFull, v[1])} << 32) | __reduce_or_sync(kFull, v[0]);
  const uint64_t ands = (uint64_t{__reduce_and_sync(kFull, v[3])} << 32) | __reduce_and_sync(kFull, v[2]);
  const uint64_t differ = ors ^ ands;
  return differ ? 64 - __clzll(static_cast<long long>(differ)) : 1;
}

// Sorts the m candidates of f.keys by radix (descending) and writes the
// first k as finish_candidates does.  A key is the order bits over
// (mask - index): never 0, the empty slots' key, and the lower index first
// among equal values.  Only the bits the candidates differ in are sorted:
// the sort is stable and the empty slots come last, so they stay after a
// real key that is 0 in those bits.
template <int BLOCK, class T, int CAP, int IPT>
__device__ void finish_radix(FinishShared<T, BLOCK, CAP>& f, int m, const T* row, T* values, int64_t* indices,
                             int64_t row_id, const Output& o) {
  using Sort = KeySort<BLOCK, IPT>;
  using Scratch = typename Sort::TempStorage;
  static_assert(sizeof(Scratch) <= sizeof(f.sort), "the largest sort's scratch holds a smaller one's");
  Scratch& scratch = *reinterpret_cast<Scratch*>(&f.sort);
  const int k = static_cast<int>(o.k);
  const int ib = 32 - __clz(static_cast<unsigned>(o.n));  // bits of n: mask >= n > every index
  const uint64_t mask = (uint64_t{1} << ib) - 1u;
  uint64_t c[IPT];
  uint64_t any = 0, all = ~uint64_t{0};  // bits set in some candidate, in every one
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    const int i = static_cast<int>(threadIdx.x) * IPT + j;
    const key_t<T> key = i < m ? f.keys[i] : key_t<T>(0);
    c[j] = i < m ? (uint64_t{key_order<T>(key)} << ib) | (mask - key_index(key)) : 0u;
    any |= c[j];  // 0 past m
    all &= i < m ? c[j] : ~uint64_t{0};
  }
  __syncthreads();  // the keys' memory is the sort's scratch
  const int bits = differing_bits<BLOCK>(any, all, f.spread);
  Sort(scratch).SortDescendingBlockedToStriped(c, 0, bits);
  // c[j] holds rank j * BLOCK + threadIdx.x
  if (o.sorted) {
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
      const int rank = j * BLOCK + static_cast<int>(threadIdx.x);
      if (rank >= k) break;
      const uint32_t e = static_cast<uint32_t>(mask - (c[j] & mask));
      values[row_id * o.k + rank] = value_of<T>(static_cast<bits_t<T>>(c[j] >> ib), o.largest, row, e);
      indices[row_id * o.k + rank] = e;
    }
    return;
  }
  __shared__ uint64_t kth;  // the k-th's order
#pragma unroll
  for (int j = 0; j < IPT; ++j)
    if (j * BLOCK + static_cast<int>(threadIdx.x) == k - 1) kth = c[j] >> ib;
  __syncthreads();  // kth written; the scratch free again
  const uint64_t kt = kth;
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    const int rank = j * BLOCK + static_cast<int>(threadIdx.x);
    c[j] = rank < k ? (uint64_t{(c[j] >> ib) > kt} << ib) | (c[j] & mask) : 0u;
  }
  Sort(scratch).SortDescendingBlockedToStriped(c, 0, ib + 1);
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    const int rank = j * BLOCK + static_cast<int>(threadIdx.x);
    if (rank >= k) break;
    const uint32_t e = static_cast<uint32_t>(mask - (c[j] & mask));
    values[row_id * o.k + rank] = row[e];
    indices[row_id * o.k + rank] = e;
  }
}

// finish_radix with the sort of n = BLOCK x IPT keys (IPT from the most
// down); false where no sort of n keys is compiled.
template <int BLOCK, class T, int CAP, int IPT = kRadixItems<BLOCK, CAP>>
__device__ bool finish_radix_of(FinishShared<T, BLOCK, CAP>& f, int n, int m, const T* row, T* values,
                                int64_t* indices, int64_t row_id, const Output& o) {
  if constexpr (kRadixFinish<T, BLOCK, CAP> && radix_fits<BLOCK, IPT>) {
    if (n == BLOCK * IPT) {
      finish_radix<BLOCK, T, CAP, IPT>(f, m, row, values, indices, row_id, o);
      return true;
    }
    return finish_radix_of<BLOCK, T, CAP, IPT / 2>(f, n, m, row, values, indices, row_id, o);
  }
  return false;
}

// With m >= k candidate keys of a row in f.keys, among them the row's k
// best: sorts them (descending), keeps the first k, orders those as asked
// (sorted: by key; unsorted: better than the k-th value first, then by
// index) and writes values and indices.  CAP >= the next power of two >= m.
// RADIX: whether the radix sort may be taken (its keys a thread are
// registers: inlined where the row's keys are still live, 100-1400 bytes
// spilled at 64 registers).
template <int BLOCK, class T, int CAP, bool RADIX = true>
__device__ void finish_candidates(FinishShared<T, BLOCK, CAP>& f, int m, const T* row, T* values,
                                  int64_t* indices, int64_t row_id, const Output& o) {
  using Key = key_t<T>;
  Key* keys = f.keys;
  const int k = static_cast<int>(o.k);
  int n = 1;
  while (n < m) n *= 2;
  if constexpr (RADIX)
    if (finish_radix_of<BLOCK, T, CAP>(f, n, m, row, values, indices, row_id, o)) return;
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
