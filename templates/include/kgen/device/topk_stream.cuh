// Top-k's stream tier: one block a row of any length, the row read once,
// in chunks of BLOCK x ITEMS elements (thread i's packs q * BLOCK + i of
// the chunk).  The keys of a chunk at or above a running bound are
// appended to a shared buffer of kStreamBuffer keys (32 KB).  The bound only
// rises: to the k-th best key of the buffer when it is cut to its k best,
// and, for the first chunk and every chunk once one has overflowed the
// buffer (a sorted row), to the k-th largest of the chunk's thread maxima.
// Each is at most the row's k-th key, so the row's k best all reach the
// buffer.  A threads' bound lets at most
// k x ITEMS keys of a chunk pass (only the k threads at or above it hold
// any), so once the buffer is cut whenever it has less room than that, a
// chunk never overflows it; before the first overflow a chunk that does
// is taken again.  At the end the buffer is cut to its k best, which one
// warp sorts and writes.  For batches that fill the GPU with a block a row, the
// rows of sampling past what a cluster's registers hold: one read of x and
// one launch; k <= kStreamK.
#pragma once

#include "kgen/device/topk.cuh"

namespace kgen {
namespace device {
namespace topk {

using kgen::topk::kStreamK;

__host__ __device__ constexpr int log2_of(int v) { return v <= 1 ? 0 : 1 + log2_of(v / 2); }

// An element's key within its chunk of 2^CB: the order bits above its
// offset in the chunk, complemented (kBits + CB bits, where a row's key has
// kBits + 32).  Within a chunk the two orders agree.
template <class T, int CB>
__device__ __forceinline__ uint64_t chunk_key(bits_t<T> order, uint32_t offset) {
  return uint64_t{order} << CB | ((1u << CB) - 1u - offset);
}

// The k-th largest of the threads' best chunk keys (`top`, where `has`) of
// a chunk starting at element `start` of the row, as a key of the row: a
// bound on the chunk's k-th key from below; 0 when fewer than k threads
// hold any.  Over chunk keys the select's levels past the value stop at the
// chunk's offsets, not the row's.  Whole block.
template <class T, int BLOCK, int CB>
__device__ __forceinline__ key_t<T> threads_kth(uint64_t top, bool has, unsigned k, uint32_t start,
                                                SelectShared<BLOCK, 8>& sh) {
  if (static_cast<unsigned>(__syncthreads_count(has)) < k) return key_t<T>(0);
  auto each_top = [&](auto&& f) { f(top, has); };
  const uint64_t t = radix_select<KeyOf<T>::kBits + CB, 8, BLOCK, uint64_t>(each_top, 0, uint64_t{0}, k, sh);
  constexpr uint32_t mask = (1u << CB) - 1u;
  return make_key<T>(static_cast<bits_t<T>>(t >> CB), start + (mask - static_cast<uint32_t>(t & mask)));
}

template <class T, int BLOCK, int ITEMS, int P>
__global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
    stream_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices, Output o) {
  using Key = key_t<T>;
  using Bits = bits_t<T>;
  constexpr int NP = ITEMS / P;
  constexpr int CAP = kgen::topk::kStreamBuffer;  // supports() leaves room for k x (ITEMS + 1)
  constexpr int CB = log2_of(BLOCK * ITEMS);       // a chunk's offsets
  static_assert(BLOCK * ITEMS == 1 << CB, "a chunk of a power of two");
  __shared__ SelectShared<BLOCK, 8> sh;
  __shared__ key_t<T> buf[CAP];
  // keys appended by a chunk, counted in turn by three counters: a
  // chunk's is read after its barrier, and the next but one's is cleared
  // before it, so no other barrier is needed between chunks
  __shared__ unsigned added[3];
  __shared__ unsigned kept;
  const int64_t r = blockIdx.x;
  const T* row = x + r * o.n;
  const int64_t packs = o.n / P;  // whole: n % P == 0
  const unsigned k = static_cast<unsigned>(o.k);
  // the same in every thread: the keys in the buffer, the highest bound so
  // far (at most the row's k-th key), whether a chunk has overflowed the
  // buffer (every chunk after takes its threads' bound)
  unsigned used = 0;
  Key floor_key = Key(0);
  bool hot = false;
  if (threadIdx.x < 3) added[threadIdx.x] = 0;
  int turn = 0;  // the chunk's counter
  __syncthreads();
  // the next chunk's loads are issued before this one's keys are used:
  // one chunk's are in flight while the block selects (ITEMS x BLOCK x
  // sizeof(T) bytes an SM)
  Pack<T, P> raw[NP];
  const auto load = [&](int64_t first) {
#pragma unroll
    for (int q = 0; q < NP; ++q) {
      const int64_t at = first + int64_t{q} * BLOCK + threadIdx.x;
      raw[q] = load_pack<T, P>(row, at, at < packs);
    }
  };
  load(0);
  for (int64_t first = 0; first < packs; first += int64_t{NP} * BLOCK) {
    Bits s[NP][P];
    uint32_t held = 0;  // bit q: pack q of this thread is in the row
#pragma unroll
    for (int q = 0; q < NP; ++q) {
      held |= first + int64_t{q} * BLOCK + threadIdx.x < packs ? 1u << q : 0u;
      to_orders<T, P>(raw[q], o.largest, s[q]);
    }
    load(first + int64_t{NP} * BLOCK);
    const uint32_t start = static_cast<uint32_t>(first * P);  // n < 2^32
    const uint32_t own = threadIdx.x * P;                       // this thread's first offset in the chunk
    // f(order, offset in the chunk, in the row)
    auto each = [&](auto&& f) {
#pragma unroll
      for (int q = 0; q < NP; ++q)
#pragma unroll
        for (int j = 0; j < P; ++j) f(s[q][j], own + static_cast<uint32_t>(q * BLOCK * P + j), (held >> q & 1u) != 0);
    };
    if (threadIdx.x == 0) added[turn == 2 ? 0 : turn + 1] = 0;  // read by the chunk before last, before the last barrier
#pragma unroll 1
    for (;;) {  // at most twice: a chunk that overflows the buffer is taken again, hot
      if (used + k * ITEMS > static_cast<unsigned>(CAP)) {  // too little room for a threads' bound's keys: cut
        floor_key = keep_best<BLOCK, T>(buf, static_cast<int>(used), static_cast<int>(k), sh, &kept);
        used = k;
      }
      Key bound = floor_key;
      if (hot || first == 0) {
        uint64_t top = 0;
        bool has = false;
        each([&](Bits b, uint32_t off, bool valid) {
          const uint64_t key = chunk_key<T, CB>(b, off);
          if (valid && (!has || key > top)) top = key;
          has |= valid;
        });
        const Key t = threads_kth<T, BLOCK, CB>(top, has, k, start, sh);
        bound = t > bound ? t : bound;
      }
      // a warp whose keys all fall below the bound's order bits skips the
      // votes (random rows: all but the first chunks' warps)
      const Bits bound_order = static_cast<Bits>(bound >> 32);
      bool near = false;
      each([&](Bits b, uint32_t, bool valid) { near |= valid && b >= bound_order; });
      if (__any_sync(kFull, near)) {
        each([&](Bits b, uint32_t off, bool valid) {
          const Key key = make_key<T>(b, start + off);
          const bool take = valid && key >= bound;
          const unsigned m = __ballot_sync(kFull, take);
          if (!m) return;
          const unsigned at = used + warp_reserve(&added[turn], m) + lanes_below(m);
          if (take && at < static_cast<unsigned>(CAP)) buf[at] = key;
        });
      }
      __syncthreads();  // the chunk's appends are in
      const unsigned now = used + added[turn];
      if (now <= static_cast<unsigned>(CAP)) {  // the bound holds for the chunks after
        used = now;
        floor_key = bound;
        break;
      }
      __syncthreads();  // every thread has read the count
      if (threadIdx.x == 0) added[turn] = 0;
      hot = true;
      __syncthreads();
    }
    turn = turn == 2 ? 0 : turn + 1;
  }
  int m = static_cast<int>(used);  // >= k: the row's k best are in
  if (m > kStreamK) {  // cut to the k best, which one warp sorts in registers
    keep_best<BLOCK, T>(buf, m, static_cast<int>(k), sh, &kept);
    m = static_cast<int>(k);
  }
  if (threadIdx.x < 32) finish_by_warp<T>(buf, m, row, values, indices, r, o);
}

template <class T, int BLOCK, int ITEMS, int P>
cudaError_t launch_stream(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  stream_kernel<T, BLOCK, ITEMS, P><<<static_cast<unsigned>(p.batch), BLOCK, 0, stream>>>(
      static_cast<const T*>(p.x), static_cast<T*>(p.values), p.indices, Output{p.n, p.k, p.largest, p.sorted});
  return cudaGetLastError();
}

}  // namespace topk
}  // namespace device
}  // namespace kgen
