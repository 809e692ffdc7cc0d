// Reductions over (outer, reduce, inner): the kernels of every strategy and
// their host launchers.  Generated variants instantiate the launchers with
// fixed parameters (templates/reduce_*.cu.j2); the op is a run-time argument
// that picks one of the kernels compiled into the variant.
#pragma once

#include "kgen/device/common.cuh"
#include "kgen/device/reducers.cuh"
#include "reduce/problem.hpp"

#include <type_traits>

namespace kgen {
namespace device {
namespace reduce {

// The block-level combine: warp shuffles, or a shared-memory tree with
// sequential addressing, or that tree down to one warp and shuffles after
// (the modern form of the "unrolled last warp").  The result is in thread 0.
enum class Tree { shfl = 0, seq = 1, unroll = 2 };

// Combine across groups of G consecutive lanes; every lane gets its group's result.
template <class R, int G>
__device__ __forceinline__ typename R::Acc group_reduce(typename R::Acc v) {
#pragma unroll
  for (int m = G / 2; m > 0; m /= 2) v = R::combine(v, shfl_xor(v, m, G));
  return v;
}

template <class R, int BLOCK, Tree TREE>
__device__ __forceinline__ typename R::Acc block_reduce(typename R::Acc v) {
  using Acc = typename R::Acc;
  const int t = threadIdx.x;
  if constexpr (TREE == Tree::shfl) {
    constexpr int kWarps = BLOCK / 32;
    __shared__ Acc warp_part[kWarps];
    v = group_reduce<R, 32>(v);
    if constexpr (kWarps == 1) return v;
    if (t % 32 == 0) warp_part[t / 32] = v;
    __syncthreads();
    if (t < 32) v = group_reduce<R, 32>(t < kWarps ? warp_part[t] : R::identity());
    __syncthreads();  // warp_part is reused by the next call
    return v;
  } else {
    __shared__ Acc part[BLOCK];
    part[t] = v;
    __syncthreads();
    constexpr int kStop = TREE == Tree::unroll ? 32 : 0;
#pragma unroll
    for (int s = BLOCK / 2; s > kStop; s /= 2) {
      if (t < s) part[t] = R::combine(part[t], part[t + s]);
      __syncthreads();
    }
    if (TREE == Tree::unroll && t < 32) v = group_reduce<R, 32>(R::combine(part[t], part[t + 32]));
    else v = part[0];
    __syncthreads();
    return v;
  }
}

// The split protocol for one output group: every block stores its partial
// (slot[split]) and counts itself in; the last to arrive reads all partials
// in split order and combines them.  Returns true in every thread of that
// block, with the group's result in thread 0's acc.
template <class R, int BLOCK>
__device__ __forceinline__ bool last_block_combines(typename R::Acc& acc, typename R::Acc* slot,
                                                    unsigned* counter, int splits, int split) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    slot[split] = acc;
    __threadfence();
    last = atomicAdd(counter, 1u) == static_cast<unsigned>(splits - 1);
  }
  __syncthreads();
  if (!last) return false;
  __threadfence();
  typename R::Acc a = R::identity();
  for (int s = threadIdx.x; s < splits; s += BLOCK) a = R::combine(a, load_cg(slot + s));
  acc = block_reduce<R, BLOCK, Tree::shfl>(a);
  return true;
}

// The split protocol of a block whose partials are stored (any of its
// threads): counts the block in for its group; true in every thread of the
// group's last block to arrive, which then sees every block's partials.
__device__ __forceinline__ bool arrived_last(unsigned* counter, int splits) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!last) return false;
  __threadfence();
  return true;
}

// Ties a batch's U packs with `landed` so that ptxas issues all U loads
// before the first combine: left to itself it issued the half types' max,
// min and sum loads and float32's and float64's argmax loads a few at a
// time, each after the one before was combined (row kernels of 4 loads in 4
// rounds; sm_90 SASS, scripts/load_rounds.py).  H100: float16 column sums
// over (64, 4096, 512) 83 -> 91% of copy, a float32 argmax over 2^28
// 85 -> 95% (bench/NOTES.md reduce loads).  Not for
// - packs of one 4-byte value, whose loads already issued together: the
//   tie's two instructions a value cost int32 column sums 7-14%;
// - the half types' argmax and argmin, already together too: tied, they
//   took 7-17 more registers and ran 2-4% slower (rows of 8192 and of 1M).
template <class R> struct IsArg : std::false_type {};
template <class T, bool MAX> struct IsArg<Arg<T, MAX>> : std::true_type {};
template <class R, class T, int P, int U>
__device__ __forceinline__ void tie_batch(Pack<T, P> (&v)[U], bool never) {
  if constexpr (sizeof(Pack<T, P>) > 4 && !(IsArg<R>::value && sizeof(T) == 2)) landed(v, never);
}

// Loads packs k0, k0 + STRIDE, ... (U of them, those below `end`) of a
// row's body before combining any: U independent loads in flight per
// thread (tie_batch).  Pack k holds the row's elements head + k * P on.
template <class R, class T, int P, int U, int STRIDE>
__device__ __forceinline__ void fold_packs(typename R::Acc& acc, const T* body, int head, int64_t k0,
                                           int64_t end) {
  Pack<T, P> v[U];
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (k0 + u * STRIDE < end) v[u] = reinterpret_cast<const Pack<T, P>*>(body)[k0 + u * STRIDE];
  tie_batch<R>(v, end < 0);  // end < 0: never
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (k0 + u * STRIDE < end) R::accumulate_pack(acc, v[u], head + (k0 + u * STRIDE) * P);
}

// A row cut for P-element packs at any length and element alignment: the
// elements before its first P * sizeof(T)-byte boundary (the head, fewer
// than P), the whole packs after it (the body), the elements past the last
// whole pack (the tail, fewer than P).  Odd rows and rows one element into
// their storage read their body at full width.  The row kernels cut rows
// only where some row needs it (with_cut).
struct RowCut {
  int head;
  int64_t packs;
  int64_t tail_begin;  // head + packs * P
};
template <class T, int P>
__device__ __forceinline__ RowCut cut_row(const T* row, int64_t cols) {
  constexpr uintptr_t kBytes = sizeof(T) * P;
  const uintptr_t a = reinterpret_cast<uintptr_t>(row);
  int64_t head = static_cast<int64_t>(((kBytes - a % kBytes) % kBytes) / sizeof(T));
  if (head > cols) head = cols;
  const int64_t packs = (cols - head) / P;
  return RowCut{static_cast<int>(head), packs, head + packs * P};
}

// Elements [from, to) of a row, fewer than P of them (a head or a tail):
// this thread's (first, first + STRIDE, ...), at most N, all loaded before
// any is combined, combined in increasing order.  One load at a time cost
// a thread a row of 17 bfloat16 at pack 8 twice the time of pack 1 with 4
// loads in flight (H200 sweep).
template <class R, class T, int P, int STRIDE>
__device__ __forceinline__ void fold_few(typename R::Acc& acc, const T* row, int64_t from, int64_t to, int first) {
  constexpr int N = (P - 1 + STRIDE - 1) / STRIDE > 0 ? (P - 1 + STRIDE - 1) / STRIDE : 1;
  T v[N];
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (from + first + i * STRIDE < to) v[i] = row[from + first + i * STRIDE];
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (from + first + i * STRIDE < to) R::accumulate(acc, v[i], from + first + i * STRIDE);
}

// ------------------------------------------------ rows: thread and warp tiers
// A group of G lanes (1 <= G <= 32) per row, BLOCK / G rows per block pass;
// lane l of a group reads packs l, l + G, ... so a group's loads are coalesced.
template <class R, class T, int P, int U, int G, int BLOCK, bool CUT>
__global__ void __launch_bounds__(BLOCK)
    row_group_kernel(const T* __restrict__ x, typename R::Out* __restrict__ out, int64_t rows,
                     int64_t cols, typename R::C scale) {
  const int g_lane = threadIdx.x % G;
  const int64_t groups = int64_t{gridDim.x} * (BLOCK / G);
  // all lanes of a warp loop together (the shuffles need the whole warp):
  // the loop runs on the warp's first row
  const int64_t warp_first = int64_t{blockIdx.x} * (BLOCK / G) + (threadIdx.x / 32) * (32 / G);
  const int64_t packs = cols / P;  // whole rows
  for (int64_t base = warp_first; base < rows; base += groups) {
    const int64_t row = base + (threadIdx.x % 32) / G;
    typename R::Acc acc = R::identity();
    if (row < rows) {
      const T* xr = x + row * cols;
      if constexpr (CUT) {
        // a lane's elements in increasing order: head, body packs, tail
        const RowCut c = cut_row<T, P>(xr, cols);
        fold_few<R, T, P, G>(acc, xr, 0, c.head, g_lane);
        for (int64_t k0 = g_lane; k0 < c.packs; k0 += int64_t{G} * U)
          fold_packs<R, T, P, U, G>(acc, xr + c.head, c.head, k0, c.packs);
        fold_few<R, T, P, G>(acc, xr, c.tail_begin, cols, g_lane);
      } else {
        for (int64_t k0 = g_lane; k0 < packs; k0 += int64_t{G} * U) fold_packs<R, T, P, U, G>(acc, xr, 0, k0, packs);
      }
    }
    acc = group_reduce<R, G>(acc);
    if (g_lane == 0 && row < rows) out[row] = R::finish(acc, scale);
  }
}

// ------------------------------------------------ rows: block and split tiers
// Block (blockIdx.x = split) reduces packs [split * per, (split + 1) * per)
// of rows blockIdx.y, blockIdx.y + gridDim.y, ...; with one split it writes
// the row's output, else it takes part in the split protocol.
template <class R, class T, int P, int U, int BLOCK, Tree TREE, bool CUT>
__global__ void __launch_bounds__(BLOCK)
    row_block_kernel(const T* __restrict__ x, typename R::Out* __restrict__ out, int64_t rows,
                     int64_t cols, typename R::C scale, int splits, typename R::Acc* partials,
                     unsigned* counters) {
  // whole rows: every row's packs split alike
  const int64_t packs = cols / P;
  const int64_t per = (packs + splits - 1) / splits;
  const int64_t begin = blockIdx.x * per;
  const int64_t end = begin + per < packs ? begin + per : packs;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const T* xr = x + row * cols;
    typename R::Acc acc = R::identity();
    if constexpr (CUT) {
      // the first split takes the row's head, the last its tail; a
      // thread's elements in increasing order
      const RowCut c = cut_row<T, P>(xr, cols);
      const int64_t c_per = (c.packs + splits - 1) / splits;
      const int64_t c_begin = blockIdx.x * c_per;
      const int64_t c_end = c_begin + c_per < c.packs ? c_begin + c_per : c.packs;
      if (blockIdx.x == 0) fold_few<R, T, P, BLOCK>(acc, xr, 0, c.head, threadIdx.x);
      for (int64_t k0 = c_begin + threadIdx.x; k0 < c_end; k0 += int64_t{BLOCK} * U)
        fold_packs<R, T, P, U, BLOCK>(acc, xr + c.head, c.head, k0, c_end);
      if (blockIdx.x == splits - 1) fold_few<R, T, P, BLOCK>(acc, xr, c.tail_begin, cols, threadIdx.x);
    } else {
      for (int64_t k0 = begin + threadIdx.x; k0 < end; k0 += int64_t{BLOCK} * U)
        fold_packs<R, T, P, U, BLOCK>(acc, xr, 0, k0, end);
    }
    acc = block_reduce<R, BLOCK, TREE>(acc);
    if (splits > 1 && !last_block_combines<R, BLOCK>(acc, partials + row * splits, counters + row,
                                                      splits, blockIdx.x))
      continue;
    if (threadIdx.x == 0) out[row] = R::finish(acc, scale);
  }
}

// ------------------------------------------------------- strided: col tier
// Shared memory for combining all of a thread's columns at once: one
// barrier per tree level instead of one per level and column (H100,
// (64, 4096, 512) float16: the per-column tree held sums at 83% of copy).
constexpr int kColTreeBytes = 32 * 1024;

// The last block's combine of a group's split partials, slot[s * width + e]
// for splits s and outputs e < width (at most BLOCK * P of them).
// BLOCK / width groups of threads (at least one) each fold a contiguous run
// of splits, 8 loads in flight, and the first group folds the groups'
// results in order: the order depends on (splits, BLOCK, width) only, so
// results are the same on every run.  One thread folding every split in
// turn is bound by L2 latency: 260 us for 1056 splits (H100, argmin over
// dim 0 of 81531x16 bfloat16, against 12.6 us for torch).  part holds
// BLOCK accumulators; store(e, acc) takes each output.
template <class R, int BLOCK, class Store>
__device__ __forceinline__ void combine_splits(const typename R::Acc* slot, int splits, int width,
                                               typename R::Acc* part, Store&& store) {
  using Acc = typename R::Acc;
  constexpr int kInFlight = 8;
  const int groups = width >= BLOCK ? 1 : BLOCK / width;
  const int t = threadIdx.x, gy = t / width;
  const int per = (splits + groups - 1) / groups;
  for (int e = t % width; e < width && gy < groups; e += (width >= BLOCK ? BLOCK : width)) {
    const int s_begin = gy * per, s_end = min(splits, s_begin + per);
    Acc a = R::identity();
    for (int s0 = s_begin; s0 < s_end; s0 += kInFlight) {
      Acc v[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (s0 + u < s_end) v[u] = load_cg(slot + int64_t{s0 + u} * width + e);
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (s0 + u < s_end) a = R::combine(a, v[u]);
    }
    if (groups == 1) store(e, a);
    else part[gy * width + e] = a;
  }
  if (groups > 1) {
    __syncthreads();
    if (gy == 0) {
      Acc a = part[t];
      for (int g = 1; g < groups; ++g) a = R::combine(a, part[g * width + t]);
      store(t, a);
    }
  }
  __syncthreads();
}

// Tile g of the outputs: outer index g / tiles, LANES x P consecutive inner
// positions.  Thread (tx, ty) = (t % LANES, t / LANES) reads pack tx of rows
// r = ty, ty + BY, ... of its split's range, U rows in flight; the BY
// partials of each output are combined through shared memory, then written
// (one split) or handed to the split protocol, one partial per output.
template <class R, class T, int P, int U, int LANES, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    col_kernel(const T* __restrict__ x, typename R::Out* __restrict__ out, int64_t outer,
               int64_t reduce, int64_t inner, typename R::C scale, int splits,
               typename R::Acc* partials, unsigned* counters) {
  using Acc = typename R::Acc;
  constexpr int BY = BLOCK / LANES;
  constexpr int kWidth = LANES * P;
  constexpr bool kVectorTree = BLOCK * P * sizeof(Acc) <= kColTreeBytes;
  __shared__ Acc part[kVectorTree ? BLOCK * P : BLOCK];
  const int t = threadIdx.x, tx = t % LANES, ty = t / LANES;
  const int64_t ipacks = inner / P;
  const int64_t tiles = (ipacks + LANES - 1) / LANES;
  const int64_t per = (reduce + splits - 1) / splits;
  const int64_t r_begin = blockIdx.y * per;
  const int64_t r_end = r_begin + per < reduce ? r_begin + per : reduce;
  for (int64_t g = blockIdx.x; g < outer * tiles; g += gridDim.x) {
    const int64_t o = g / tiles, tile = g % tiles;
    const int64_t ip = tile * LANES + tx;
    const bool ok = ip < ipacks;
    const T* base = x + o * reduce * inner + ip * P;
    Acc acc[P];
#pragma unroll
    for (int j = 0; j < P; ++j) acc[j] = R::identity();
    if (ok) {
      for (int64_t r0 = r_begin + ty; r0 < r_end; r0 += int64_t{BY} * U) {
        Pack<T, P> v[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (r0 + u * BY < r_end) v[u] = *reinterpret_cast<const Pack<T, P>*>(base + (r0 + u * BY) * inner);
        tie_batch<R>(v, r_end < 0);  // as fold_packs
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (r0 + u * BY < r_end)
#pragma unroll
            for (int j = 0; j < P; ++j) R::accumulate(acc[j], v[u].v[j], r0 + u * BY);
      }
    }
    // combine down the BY rows of threads: all P columns per step when
    // they fit kColTreeBytes of shared memory, else one column at a time
    if constexpr (kVectorTree) {
#pragma unroll
      for (int j = 0; j < P; ++j) part[j * BLOCK + t] = acc[j];
      __syncthreads();
#pragma unroll
      for (int s = BY / 2; s > 0; s /= 2) {
        if (ty < s)
#pragma unroll
          for (int j = 0; j < P; ++j)
            part[j * BLOCK + t] = R::combine(part[j * BLOCK + t], part[j * BLOCK + t + s * LANES]);
        __syncthreads();
      }
#pragma unroll
      for (int j = 0; j < P; ++j) acc[j] = part[j * BLOCK + tx];
      __syncthreads();
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j) {
        part[t] = acc[j];
        __syncthreads();
#pragma unroll
        for (int s = BY / 2; s > 0; s /= 2) {
          if (ty < s) part[t] = R::combine(part[t], part[t + s * LANES]);
          __syncthreads();
        }
        acc[j] = part[tx];
        __syncthreads();
      }
    }
    if (splits == 1) {
      if (ty == 0 && ok)
#pragma unroll
        for (int j = 0; j < P; ++j) out[o * inner + ip * P + j] = R::finish(acc[j], scale);
      continue;
    }
    Acc* slot = partials + g * splits * kWidth;
    if (ty == 0)
#pragma unroll
      for (int j = 0; j < P; ++j) slot[int64_t{blockIdx.y} * kWidth + tx * P + j] = acc[j];
    if (!arrived_last(counters + g, splits)) continue;
    combine_splits<R, BLOCK>(slot, splits, kWidth, part, [&](int e, const Acc& a) {
      const int64_t i = tile * kWidth + e;  // inner position
      if (i < inner) out[o * inner + i] = R::finish(a, scale);
    });
  }
}

// A thread per output pack (P consecutive outputs along inner) over the
// flattened (outer, inner / P) index, each folding its whole reduced axis in
// index order, U rows in flight: no shared memory, no splits.  For outputs
// that fill the GPU on their own, above all a short reduced axis over a
// narrow or odd inner, where col tiles keep most lanes or rows of threads
// idle.  Adjacent threads read adjacent packs of a row (a narrow inner
// puts several outer positions in one warp, their rows a stride apart).
template <class R, class T, int P, int U, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    col_thread_kernel(const T* __restrict__ x, typename R::Out* __restrict__ out, int64_t outer,
                      int64_t reduce, int64_t inner, typename R::C scale) {
  using Acc = typename R::Acc;
  const int64_t ipacks = inner / P;
  const int64_t packs = outer * ipacks;
  for (int64_t j = int64_t{blockIdx.x} * BLOCK + threadIdx.x; j < packs; j += int64_t{gridDim.x} * BLOCK) {
    const int64_t o = j / ipacks, ip = j - o * ipacks;
    const T* base = x + o * reduce * inner + ip * P;
    Acc acc[P];
#pragma unroll
    for (int k = 0; k < P; ++k) acc[k] = R::identity();
    for (int64_t r0 = 0; r0 < reduce; r0 += U) {
      Pack<T, P> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (r0 + u < reduce) v[u] = *reinterpret_cast<const Pack<T, P>*>(base + (r0 + u) * inner);
      tie_batch<R>(v, reduce < 0);  // as fold_packs
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (r0 + u < reduce)
#pragma unroll
          for (int k = 0; k < P; ++k) R::accumulate(acc[k], v[u].v[k], r0 + u);
    }
#pragma unroll
    for (int k = 0; k < P; ++k) out[o * inner + ip * P + k] = R::finish(acc[k], scale);
  }
}

// ------------------------------------------------------- strided: slab tier
// A narrow inner (ipacks = inner / P packs, at most BLOCK / 2): the slab of
// one outer position, reduce x inner elements, lies back to back, so a block
// reads a run of its rows in order.  Thread t takes inner pack t % ipacks of
// rows t / ipacks, t / ipacks + RS, ... (RS = BLOCK / ipacks rows a pass):
// each warp's loads are contiguous and every sector read is used, where a
// col tile reads row segments of LANES x P elements a row's stride apart
// (H200 sweep at 9f1eacf: argmin over dim 2 of 17x211x479x2x17 float32, an
// inner of 136 bytes, 143 us in col tiles of 8 lanes, torch 82).  The RS
// partials of a column fold in a fixed tree through shared memory; with
// splits, a block takes a run of the slab's rows and the split protocol
// combines a slab's partials in split order.
template <class R, class T, int P, int U, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    slab_kernel(const T* __restrict__ x, typename R::Out* __restrict__ out, int64_t outer, int64_t reduce,
                int64_t inner, typename R::C scale, int splits, typename R::Acc* partials, unsigned* counters) {
  using Acc = typename R::Acc;
  __shared__ Acc part[BLOCK * P];
  const int ipacks = static_cast<int>(inner / P);
  const int rs = BLOCK / ipacks;  // rows a pass
  const int t = threadIdx.x, c = t % ipacks, r0 = t / ipacks;
  const bool active = r0 < rs;
  const int64_t per = (reduce + splits - 1) / splits;
  for (int64_t g = blockIdx.x; g < outer * splits; g += gridDim.x) {
    const int64_t o = g / splits;
    const int split = static_cast<int>(g - o * splits);
    const int64_t r_begin = split * per;
    const int64_t r_end = r_begin + per < reduce ? r_begin + per : reduce;
    const T* base = x + o * reduce * inner + c * P;
    Acc acc[P];
#pragma unroll
    for (int j = 0; j < P; ++j) acc[j] = R::identity();
    if (active)
      for (int64_t r = r_begin + r0; r < r_end; r += int64_t{rs} * U) {
        Pack<T, P> v[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (r + u * rs < r_end) v[u] = *reinterpret_cast<const Pack<T, P>*>(base + (r + u * rs) * inner);
        tie_batch<R>(v, r_end < 0);  // as fold_packs
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (r + u * rs < r_end)
#pragma unroll
            for (int j = 0; j < P; ++j) R::accumulate(acc[j], v[u].v[j], r + u * rs);
      }
    // fold the RS rows of threads: pairs h apart, h halving from the
    // largest power of two below RS (a fixed order for every run)
#pragma unroll
    for (int j = 0; j < P; ++j) part[j * BLOCK + t] = acc[j];
    __syncthreads();
    int h = 1;
    while (2 * h < rs) h *= 2;
    for (; h > 0; h /= 2) {  // rs >= 2 (supports: ipacks <= BLOCK / 2)
      if (active && r0 < h && r0 + h < rs)
#pragma unroll
        for (int j = 0; j < P; ++j)
          part[j * BLOCK + t] = R::combine(part[j * BLOCK + t], part[j * BLOCK + t + h * ipacks]);
      __syncthreads();
    }
    if (splits == 1) {
      if (t < ipacks)
#pragma unroll
        for (int j = 0; j < P; ++j) out[o * inner + c * P + j] = R::finish(part[j * BLOCK + t], scale);
      __syncthreads();  // part is the next slab's
      continue;
    }
    Acc* slot = partials + o * splits * inner;
    if (t < ipacks)
#pragma unroll
      for (int j = 0; j < P; ++j) slot[int64_t{split} * inner + c * P + j] = part[j * BLOCK + t];
    if (!arrived_last(counters + o, splits)) continue;
    combine_splits<R, BLOCK>(slot, splits, static_cast<int>(inner), part, [&](int e, const Acc& a) {
      out[o * inner + e] = R::finish(a, scale);
    });
  }
}

// ------------------------------------------------------------ host launchers
using kgen::reduce::Plan;
using kgen::reduce::Problem;

// Calls f(R{}) with the reducer of the problem's op.
template <class T, class F>
cudaError_t with_reducer(kgen_reduce_op_t op, F&& f) {
  switch (op) {
    case KGEN_REDUCE_SUM:
    case KGEN_REDUCE_MEAN: return f(Sum<T>{});
    case KGEN_REDUCE_MAX: return f(Extreme<T, true>{});
    case KGEN_REDUCE_MIN: return f(Extreme<T, false>{});
    case KGEN_REDUCE_ARGMAX: return f(Arg<T, true>{});
    case KGEN_REDUCE_ARGMIN: return f(Arg<T, false>{});
  }
  return cudaErrorInvalidValue;
}

template <class R>
typename R::C scale_of(const Problem& p) {
  using C = typename R::C;
  return p.op == KGEN_REDUCE_MEAN ? C(1) / static_cast<C>(p.reduce) : C(1);
}

// Workspace pointers of a plan; zeroes the counters on the stream.
template <class Acc>
cudaError_t prepare(const Problem& p, const Plan& pl, cudaStream_t stream, Acc** partials,
                    unsigned** counters) {
  *partials = nullptr;
  *counters = nullptr;
  if (pl.splits == 1) return cudaSuccess;
  if (!p.workspace || p.workspace_bytes < pl.bytes || sizeof(Acc) != static_cast<size_t>(
          kgen::reduce::acc_bytes(p.op, p.dtype)))
    return cudaErrorInvalidValue;
  *counters = static_cast<unsigned*>(p.workspace);
  *partials = reinterpret_cast<Acc*>(static_cast<char*>(p.workspace) + pl.counter_bytes);
  return cudaMemsetAsync(p.workspace, 0, pl.counter_bytes, stream);
}

// Calls f(std::false_type) when every row of x starts on a P-element
// boundary and P divides it, else f(std::true_type): the row kernels' cut
// form (head and tail) is a kernel of its own, so that whole rows run the
// loop and registers they had before rows were cut.  In one kernel, the cut
// path's registers (float32 argmax, warp of 8 lanes: 46 -> 56) cost argmax
// over rows of 128 15-18% (H200, 1048576 x 128, float32 93.7 -> 79.4% of
// copy, float16 71.5 -> 62.0%).
template <class T, int P, class F>
void with_cut(const Problem& p, F&& f) {
  if constexpr (P > 1)
    if (kgen::reduce::rows_cut(p, P, sizeof(T))) return f(std::true_type{});
  f(std::false_type{});
}

inline unsigned capped_grid(int64_t blocks, int64_t cap) {
  const int64_t g = blocks < cap ? blocks : cap;
  return static_cast<unsigned>(g < 1 ? 1 : g);
}

template <class T, int P, int U, int G>
cudaError_t launch_group(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  constexpr int kBlock = 128;
  const unsigned grid = capped_grid(kgen::reduce::div_up(p.outer, kBlock / G),
                                    8 * kgen::reduce::one_wave(*p.device, kBlock));
  return with_reducer<T>(p.op, [&](auto r) {
    using R = decltype(r);
    with_cut<T, P>(p, [&](auto cut) {
      row_group_kernel<R, T, P, U, G, kBlock, decltype(cut)::value><<<grid, kBlock, 0, stream>>>(
          static_cast<const T*>(p.x), static_cast<typename R::Out*>(p.out), p.outer, p.reduce, scale_of<R>(p));
    });
    return cudaGetLastError();
  });
}

// For the op's reducer R: provides plan pl's workspace (partials and
// counters, null without splits), then runs launch(r, partials, counters)
// and returns the launch's error state.
template <class T, class Launch>
cudaError_t with_workspace(const Problem& p, const Plan& pl, cudaStream_t stream, Launch&& launch) {
  return with_reducer<T>(p.op, [&](auto r) {
    typename decltype(r)::Acc* partials;
    unsigned* counters;
    const cudaError_t err = prepare(p, pl, stream, &partials, &counters);
    if (err != cudaSuccess) return err;
    launch(r, partials, counters);
    return cudaGetLastError();
  });
}

template <class T, int P, int U, int BLOCK, int TREE, bool SPLIT>
cudaError_t launch_block(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Plan pl = kgen::reduce::plan_rows(p, BLOCK, P, U, SPLIT);
  // splits along x; rows along y (grid-stride past the cap: split plans
  // have fewer rows than one wave, so each row keeps its own blocks)
  const int64_t waves = 8 * kgen::reduce::one_wave(*p.device, BLOCK);
  const dim3 grid(static_cast<unsigned>(pl.splits), capped_grid(p.outer, waves < 65535 ? waves : 65535));
  return with_workspace<T>(p, pl, stream, [&](auto r, auto* partials, unsigned* counters) {
    using R = decltype(r);
    with_cut<T, P>(p, [&](auto cut) {
      row_block_kernel<R, T, P, U, BLOCK, static_cast<Tree>(TREE), decltype(cut)::value><<<grid, BLOCK, 0, stream>>>(
          static_cast<const T*>(p.x), static_cast<typename R::Out*>(p.out), p.outer, p.reduce,
          scale_of<R>(p), static_cast<int>(pl.splits), partials, counters);
    });
  });
}

template <class T, int P, int U, int LANES, int BLOCK>
cudaError_t launch_col(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Plan pl = kgen::reduce::plan_cols(p, BLOCK, P, U, LANES);
  const dim3 grid(capped_grid(pl.groups, pl.splits > 1 ? INT32_MAX : 8 * kgen::reduce::one_wave(*p.device, BLOCK)),
                  static_cast<unsigned>(pl.splits));
  return with_workspace<T>(p, pl, stream, [&](auto r, auto* partials, unsigned* counters) {
    using R = decltype(r);
    col_kernel<R, T, P, U, LANES, BLOCK><<<grid, BLOCK, 0, stream>>>(
        static_cast<const T*>(p.x), static_cast<typename R::Out*>(p.out), p.outer, p.reduce, p.inner,
        scale_of<R>(p), static_cast<int>(pl.splits), partials, counters);
  });
}

template <class T, int P, int U, int BLOCK>
cudaError_t launch_col_thread(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const unsigned grid = capped_grid(kgen::reduce::div_up(p.outer * (p.inner / P), BLOCK),
                                    8 * kgen::reduce::one_wave(*p.device, BLOCK));
  return with_reducer<T>(p.op, [&](auto r) {
    using R = decltype(r);
    col_thread_kernel<R, T, P, U, BLOCK><<<grid, BLOCK, 0, stream>>>(
        static_cast<const T*>(p.x), static_cast<typename R::Out*>(p.out), p.outer, p.reduce, p.inner,
        scale_of<R>(p));
    return cudaGetLastError();
  });
}

template <class T, int P, int U, int BLOCK>
cudaError_t launch_slab(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Plan pl = kgen::reduce::plan_slab(p, BLOCK, P, U);
  const unsigned grid = capped_grid(pl.groups * pl.splits, 8 * kgen::reduce::one_wave(*p.device, BLOCK));
  return with_workspace<T>(p, pl, stream, [&](auto r, auto* partials, unsigned* counters) {
    using R = decltype(r);
    slab_kernel<R, T, P, U, BLOCK><<<grid, BLOCK, 0, stream>>>(
        static_cast<const T*>(p.x), static_cast<typename R::Out*>(p.out), p.outer, p.reduce, p.inner,
        scale_of<R>(p), static_cast<int>(pl.splits), partials, counters);
  });
}

// The generic variant: pack 1, any alignment; rows or strided, split as needed.
template <class T>
cudaError_t launch_generic(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  return p.inner == 1 ? launch_block<T, 1, 4, 256, 0, true>(problem, stream)
                      : launch_col<T, 1, 4, 32, 256>(problem, stream);
}

}  // namespace reduce
}  // namespace device
}  // namespace kgen
