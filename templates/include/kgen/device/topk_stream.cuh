// Top-k's stream tier: one block a row of any length, the row read once,
// in chunks of BLOCK x ITEMS elements (thread i's packs q * BLOCK + i of
// the chunk).  The keys of a chunk at or above a running bound (the
// floor) are appended to a shared buffer of kStreamBuffer keys (32 KB).
// The floor only rises: to the k-th best key of the buffer when it is cut
// to its k best (past half full), and, on a chunk in which more than kHot
// threads hold a key above it (the first chunk; a sorted row's), to a
// bound at or below the k-th largest of the chunk's thread maxima that at
// most 2k of them reach.  Each is at most the row's k-th key, so the row's
// k best all reach the buffer, and a chunk appends at most half the
// buffer: it never overflows.  The last whole chunk is taken second, so
// that a row sorted either way raises the floor within its first two
// chunks.  At the end the buffer is cut to its k best, which one warp
// sorts and writes.  For batches that fill the GPU with a block a
// row, the rows of sampling past what a cluster's registers hold: one read
// of x and one launch; k <= kStreamK, or up to kStreamLargeK with a
// buffer of kStreamLargeBuffer keys in dynamic shared memory, whose k best
// the block sorts (topk v51: 21 x 633161 bfloat16 k 640 reversed 195.9 us
// -> 69.8, against the generic kernel's digit passes, torch 151.8).
// Batches that leave SMs idle split a
// row into slices, a block each, whose k best a second kernel merges.
// k 1 keeps a running best key a thread in place of the buffer (no bound,
// no barrier a chunk), and its merge takes the largest key (H200, topk
// v46: 1 x 2^24 float32 k 1 42.2 -> 27.5 us, bfloat16 42.6 -> 24.9;
// its slices had taken 29.8 us where a kernel only reading them in the
// same chunks, a barrier a chunk, takes 20.7, and the merge 7.2 a call).
// k 1 also keeps two chunks in flight, and the half types take their
// order bits two a 32-bit word into a 32-bit key an element (topk v48:
// 1 x 2^24 float32 27.4 -> 24.9 us, bfloat16 24.9 -> 19.7).
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

// A bound on a chunk's k-th key from below that at most `most` threads'
// best chunk keys (`top`, where `has`) reach, `most` >= k: at or below the
// k-th largest of them (radix_floor), as a key of the row (the chunk
// starting at element `start`); 0 when fewer than k threads hold any.
// Over chunk keys the select's levels past the value stop at the chunk's
// offsets, not the row's.  Whole block.
template <class T, int BLOCK, int CB>
__device__ __forceinline__ key_t<T> threads_bound(uint64_t top, bool has, unsigned k, unsigned most,
                                                  uint32_t start, SelectShared<BLOCK, 8>& sh) {
  if (static_cast<unsigned>(__syncthreads_count(has)) < k) return key_t<T>(0);
  auto each_top = [&](auto&& f) { f(top, has); };
  const uint64_t t = radix_floor<KeyOf<T>::kBits + CB, 8, BLOCK, uint64_t>(each_top, k, most, sh);
  constexpr uint32_t mask = (1u << CB) - 1u;
  // a bucket's lowest chunk key may stand past the row's last index: then
  // the lowest key of its order
  const uint64_t e = uint64_t{start} + (mask - static_cast<uint32_t>(t & mask));
  return make_key<T>(static_cast<bits_t<T>>(t >> CB), e > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(e));
}

// The largest of the block's keys, on the threads of warp 0 (the others'
// value is their warp's); `scratch` holds BLOCK / 32 keys.  Whole block.
template <class T, int BLOCK>
__device__ __forceinline__ key_t<T> block_best(key_t<T> key, key_t<T>* scratch) {
  key = TourneyKey<T, false>::warp_max(key);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = key;
  __syncthreads();
  if (threadIdx.x >= 32) return key;
  const key_t<T> best = TourneyKey<T, false>::warp_max(threadIdx.x < BLOCK / 32 ? scratch[threadIdx.x] : key_t<T>(0));
  __syncwarp();  // every lane has read scratch
  return best;
}

// The k best of a row (m = k keys at `keys`, kStreamK < k <=
// kStreamLargeK, in shared memory with room for the next power of two)
// sorted by the block and written as finish_candidates writes them: a
// bitonic sort of at most 1024 keys (radix_fits takes no sort of one key
// a thread of 1024: it ran slower than the bitonic one, topk v23).
// Whole block.
template <int BLOCK, class T>
__device__ __forceinline__ void finish_large(key_t<T>* keys, int m, const T* row, T* values, int64_t* indices,
                                             int64_t r, const Output& o) {
  using Finish = FinishShared<T, BLOCK, kgen::topk::kStreamLargeK>;
  static_assert(!kRadixFinish<T, BLOCK, kgen::topk::kStreamLargeK>, "keys alone: no radix scratch");
  finish_candidates<BLOCK, T, kgen::topk::kStreamLargeK, false>(*reinterpret_cast<Finish*>(keys), m, row, values,
                                                                 indices, r, o);
}

// `splits` > 1: CTA blockIdx.x takes slice blockIdx.x % splits of row
// blockIdx.x / splits (whole chunks, the last slices shorter or empty) and
// writes its slice's k best keys, Key(0) past those it has, to `cand` at
// k x blockIdx.x, in no order (stream_merge_kernel selects from them).
// CAP: the buffer's keys, kStreamBuffer in static shared memory, or
// kStreamLargeBuffer in dynamic shared memory (k up to kStreamLargeK).
template <class T, int BLOCK, int ITEMS, int P, bool RAGGED, int CAP>
__global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
    stream_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices, Output o,
                  int splits, key_t<T>* __restrict__ cand) {
  using Key = key_t<T>;
  using Bits = bits_t<T>;
  constexpr int NP = ITEMS / P;
  // supports(): k x 2 x ITEMS <= CAP
  constexpr bool kLarge = CAP > kgen::topk::kStreamBuffer;
  constexpr int CB = log2_of(BLOCK * ITEMS);  // a chunk's offsets
  static_assert(BLOCK * ITEMS == 1 << CB, "a chunk of a power of two");
  // a chunk appends at most kHot x ITEMS keys (half the buffer), and a
  // threads' bound lets at most k threads' through: kStreamK <= kHot
  constexpr int kHot = CAP / (2 * ITEMS);
  static_assert(kgen::topk::kStreamK <= kHot, "a threads' bound's keys fit half the buffer");
  static_assert(sizeof(key_t<T>) == kgen::topk::kStreamKeyBytes, "supports() counts 8 bytes a key");
  __shared__ SelectShared<BLOCK, 8> sh;
  __shared__ key_t<T> static_buf[kLarge ? 1 : CAP];
  extern __shared__ __align__(16) unsigned char stream_dynamic[];
  key_t<T>* const buf = kLarge ? reinterpret_cast<key_t<T>*>(stream_dynamic) : static_buf;
  // keys appended by a chunk, counted in turn by three counters: a
  // chunk's is read after the next chunk's barrier, and cleared after the
  // barrier of the chunk after that, so no other barrier is needed
  __shared__ unsigned added[3];
  __shared__ unsigned kept;
  const int64_t r = blockIdx.x / splits;
  const T* row = x + r * o.n;
  // RAGGED (rows off the packs' alignment: x or n): the row is read in
  // the packs of the aligned span around it.  Its elements take the
  // indices `lead` to lead + n - 1 there (virtual indices; the packs'
  // others are masked), and its keys carry them until shifted to the
  // row's at the end (`to_row`).  Its first and last packs load element
  // by element where they stand out of the row.  An instance of its own:
  // the per-element mask costs registers (the half types' items 16
  // spill 100 bytes a thread with it, 8 without; ptxas, topk v46)
  const RowSpan<T, P, RAGGED> rs(row, o.n);
  const uint32_t lead = rs.lead;
  const int64_t packs = rs.packs;
  constexpr int64_t kChunk = int64_t{NP} * BLOCK;  // packs
  // the slice: whole chunks, the last ones shorter or empty
  const int64_t slice = ((packs + splits - 1) / splits + kChunk - 1) / kChunk * kChunk;
  const int64_t from = static_cast<int64_t>(blockIdx.x % splits) * slice;
  const int64_t begin = from < packs ? from : packs;
  const int64_t end = begin + slice < packs ? begin + slice : packs;
  // the slice's elements: virtual indices lead .. lead + stop - 1
  const uint32_t stop = static_cast<uint32_t>((end * P < int64_t{lead} + o.n ? end * P : int64_t{lead} + o.n) - lead);
  const unsigned k = static_cast<unsigned>(o.k);
  // The chunks in the order they are taken: the first, the last whole one,
  // then the others in order (the short one last), so that a row sorted
  // either way has its best chunk among the first two; ties (a constant
  // row) are best in the first.
  const int64_t whole = (end - begin) / kChunk;
  const int64_t chunks = (end - begin + kChunk - 1) / kChunk;
  const auto chunk_at = [&](int64_t j) -> int64_t {  // the first pack of the j-th taken
    if (j >= chunks) return end;
    const int64_t c = whole < 3 || j == 0 || j >= whole ? j : (j == 1 ? whole - 1 : j - 1);
    return begin + c * kChunk;
  };
  // the same in every thread: the keys in the buffer, the bound below
  // which no key is needed (at most the row's k-th key; the buffer holds
  // every key taken so far at or above it)
  unsigned used = 0;
  Key floor_key = Key(0);
  if (threadIdx.x < 3) added[threadIdx.x] = 0;
  int turn = 0;  // the chunk's counter
  __syncthreads();
  // the next chunk's loads are issued before this one's keys are used:
  // one chunk's are in flight while the block selects (ITEMS x BLOCK x
  // sizeof(T) bytes an SM); k 1 alternates two sets (`spare`), so that
  // the next chunk's loads go out before this one's arrive
  Pack<T, P> raw[NP], spare[NP];
  // this thread's q-th pack of the chunk at pack `first`
  const auto pack_at = [&](int64_t first, int q) { return first + int64_t{q} * BLOCK + threadIdx.x; };
  const auto load_to = [&](int64_t first, bool to_spare) {  // to_spare: a constant at each call
#pragma unroll
    for (int q = 0; q < NP; ++q) {
      const int64_t at = pack_at(first, q);
      const Pack<T, P> v = rs.load(at, at < end);
      if (to_spare) spare[q] = v;
      else raw[q] = v;
    }
  };
  const auto load = [&](int64_t first) { load_to(first, false); };
  const uint32_t own = threadIdx.x * P;  // this thread's first offset in a chunk
  // chunk j's order bits (s) from raw or spare, and which of this thread's
  // packs are in the slice (held; not RAGGED, whose elements are tested
  // one by one); returns the chunk's first pack
  Bits s[NP][P];
  uint32_t held = 0;
  const auto orders_of = [&](int64_t j, bool from_spare) {  // from_spare: a constant at each call
    const int64_t first = chunk_at(j);
    if constexpr (!RAGGED) held = 0;
#pragma unroll
    for (int q = 0; q < NP; ++q) {
      if constexpr (!RAGGED) held |= pack_at(first, q) < end ? 1u << q : 0u;
      to_orders<T, P>(from_spare ? spare[q] : raw[q], o.largest, s[q]);
    }
    return first;
  };
  // chunk j's order bits, the next chunk's loads issued after them
  const auto take = [&](int64_t j) {
    const int64_t first = orders_of(j, false);
    load(chunk_at(j + 1));
    return first;
  };
  // f(order, offset in the chunk, in the slice: RAGGED, its virtual index
  // start + offset in lead .. lead + stop - 1, unsigned) over a chunk's
  // elements of this thread, in index order
  const auto each_of = [&](uint32_t start, auto&& f) {
#pragma unroll
    for (int q = 0; q < NP; ++q)
#pragma unroll
      for (int i = 0; i < P; ++i) {
        const uint32_t off = own + static_cast<uint32_t>(q * BLOCK * P + i);
        f(s[q][i], off, RAGGED ? start + off - lead < stop : (held >> q & 1u) != 0);
      }
  };
  // a key of virtual index e to the row's index e - lead: its index bits
  // (the index complemented) plus lead, e >= lead
  const auto to_row = [&](Key key) { return key + Key(lead); };
  load(chunk_at(0));
  if (k == 1) {  // a running best key a thread, in place of the buffer, its bounds and barriers
    Key best = Key(0);
    // chunk j's best key of this thread (the first of equal orders), from
    // raw or spare (a constant at each call), Key(0) where it holds none
    const auto chunk_best = [&](int64_t j, bool from_spare) {
      if constexpr (KeyOf<T>::kBits == 16 && P % 2 == 0) {
        // two elements a 32-bit word: their order bits at once
        // (order_bits2), then a 32-bit key an element, its order bits over
        // ITEMS - its number (1 .. ITEMS: the lower number wins a tie; 0,
        // none)
        const int64_t first = chunk_at(j);
        const uint32_t start = static_cast<uint32_t>(first * P);  // n < 2^32
        uint32_t top = 0;
#pragma unroll
        for (int q = 0; q < NP; ++q) {
          const Pack<T, P>& pk = from_spare ? spare[q] : raw[q];
          const bool pack_in = pack_at(first, q) < end;
#pragma unroll
          for (int h = 0; h < P / 2; ++h) {
            const uint32_t ord = order_bits2<T>(reinterpret_cast<const uint32_t*>(&pk)[h], o.largest);
#pragma unroll
            for (int half = 0; half < 2; ++half) {
              const int e = q * P + 2 * h + half;
              const uint32_t off = own + static_cast<uint32_t>(q * BLOCK * P + 2 * h + half);
              const bool valid = RAGGED ? start + off - lead < stop : pack_in;
              const uint32_t key = (half ? ord & 0xffff0000u : ord << 16) | static_cast<uint32_t>(ITEMS - e);
              top = valid && key > top ? key : top;
            }
          }
        }
        if (top == 0) return Key(0);
        const int e = ITEMS - static_cast<int>(top & 0xffffu);
        const uint32_t off = own + static_cast<uint32_t>(e / P * BLOCK * P + e % P);
        return make_key<T>(static_cast<Bits>(top >> 16), start + off);
      } else {
        const uint32_t start = static_cast<uint32_t>(orders_of(j, from_spare) * P);  // n < 2^32
        Bits bo = 0;  // the first of equal orders
        uint32_t bi = 0;
        bool any = false;
        each_of(start, [&](Bits b, uint32_t off, bool valid) {
          if (valid && (!any || b > bo)) {
            bo = b;
            bi = off;
          }
          any |= valid;
        });
        return any ? make_key<T>(bo, start + bi) : Key(0);
      }
    };
    // two chunks in flight: chunk j + 1's loads issued before chunk j's
    // are used (chunk_at(chunks) is the slice's end: no loads)
    for (int64_t j = 0; j < chunks; j += 2) {
      load_to(chunk_at(j + 1), true);
      Key key = chunk_best(j, false);
      best = key > best ? key : best;
      if (j + 1 == chunks) break;
      load_to(chunk_at(j + 2), false);
      key = chunk_best(j + 1, true);
      best = key > best ? key : best;
    }
    best = block_best<T, BLOCK>(best, buf);
    if (threadIdx.x >= 32) return;
    if (RAGGED && best != Key(0)) best = to_row(best);
    if (splits > 1) {
      let_next_grid_launch();
      if (threadIdx.x == 0) cand[blockIdx.x] = best;
      return;
    }
    if (threadIdx.x == 0) buf[0] = best;
    __syncwarp();
    finish_by_warp<T>(buf, best != Key(0) ? 1 : 0, row, values, indices, r, o);
    return;
  }
  for (int64_t j = 0; j < chunks; ++j) {
    const int64_t first = take(j);
    const uint32_t start = static_cast<uint32_t>(first * P);  // n < 2^32
    auto each = [&](auto&& f) { each_of(start, f); };
    // whether this thread holds a key at or above `bound`: its order bits
    // above the bound's, or equal to them at an index at or below the
    // bound's (a key's index bits are the index complemented; the index is
    // compared only where the orders tie)
    const auto holds = [&](Key bound) {
      const Bits bo = key_order<T>(bound);
      bool above = false, tied = false;
      each([&](Bits b, uint32_t, bool valid) {
        above |= valid && b > bo;
        tied |= valid && b == bo;
      });
      if (above || !tied) return above;
      const uint32_t bi = key_index(bound);
      each([&](Bits b, uint32_t off, bool valid) { above |= valid && b == bo && start + off <= bi; });
      return above;
    };
    // The threads holding a key at or above the floor; past kHot of them
    // the chunk takes a bound on its k-th key that at most 2k (<= kHot)
    // threads reach.  Either way the chunk appends at most kHot x ITEMS
    // keys, half the buffer.  The barrier also puts the last chunk's
    // appends in.
    const bool mine = holds(floor_key);
    const int pass = __syncthreads_count(mine);
    used += added[turn == 0 ? 2 : turn - 1];
    if (threadIdx.x == 0) added[turn == 2 ? 0 : turn + 1] = 0;  // read before the barrier above
    Key bound = floor_key;
    bool near = mine;
    if (used > static_cast<unsigned>(CAP / 2)) {  // too little room for a chunk's keys: cut
      bound = keep_best<BLOCK, T>(buf, static_cast<int>(used), static_cast<int>(k), sh, &kept);
      used = k;
    }
    if (pass > kHot) {
      uint64_t top = 0;
      bool has = false;
      each([&](Bits b, uint32_t off, bool valid) {
        const uint64_t key = chunk_key<T, CB>(b, off);
        if (valid && (!has || key > top)) top = key;
        has |= valid;
      });
      // at most 2k threads: a floor near the k-th (random rows stop after two
      // levels of eight bits)
      const unsigned most = 2 * k < static_cast<unsigned>(kHot) ? 2 * k : static_cast<unsigned>(kHot);
      const Key t = threads_bound<T, BLOCK, CB>(top, has, k, most, start, sh);
      bound = t > bound ? t : bound;
    }
    if (bound != floor_key) near = holds(bound);
    // a warp whose keys all fall below the bound skips the votes (random
    // rows: all but the first chunks' warps)
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
    floor_key = bound;
    turn = turn == 2 ? 0 : turn + 1;
  }
  __syncthreads();  // the last chunk's appends are in
  used += added[turn == 0 ? 2 : turn - 1];
  int m = static_cast<int>(used);  // >= k: the row's k best are in (a slice's: >= k where it holds k)
  if (splits > 1) {  // the slice's k best to the workspace
    if (m > static_cast<int>(k)) keep_best<BLOCK, T>(buf, m, static_cast<int>(k), sh, &kept);
    let_next_grid_launch();
    key_t<T>* out = cand + int64_t{blockIdx.x} * k;
    for (unsigned i = threadIdx.x; i < k; i += BLOCK)
      out[i] = i < static_cast<unsigned>(m) ? (RAGGED ? to_row(buf[i]) : buf[i]) : Key(0);
    return;
  }
  // cut to the k best, which one warp sorts in registers; past kStreamK
  // the block sorts them
  if (m > (k > static_cast<unsigned>(kStreamK) ? static_cast<int>(k) : kStreamK)) {
    keep_best<BLOCK, T>(buf, m, static_cast<int>(k), sh, &kept);
    m = static_cast<int>(k);
  }
  if (RAGGED && lead != 0) {
    for (int i = threadIdx.x; i < m; i += BLOCK) buf[i] = to_row(buf[i]);
    __syncthreads();
  }
  if constexpr (kLarge) {
    if (k > static_cast<unsigned>(kStreamK)) return finish_large<BLOCK, T>(buf, m, row, values, indices, r, o);
  }
  if (threadIdx.x < 32) finish_by_warp<T>(buf, m, row, values, indices, r, o);
}

// A row's k best of its slices' k best keys (`splits` x k <=
// kStreamMerged, Key(0) where a slice had fewer), held in registers: a
// radix select over them down to a floor at or below the k-th that at
// most kStreamK of them reach, those gathered in shared memory, then
// sorted and the k best written by one warp.  A block a row.  Against the
// exact k-th (H200, topk v44): faster where the slices' keys share their
// digits (int32 1 x 277658 reversed k 2 40.3 -> 34.7 us, bfloat16 8 x
// 10^6 k 100 52.3 -> 44.2), a little slower on random float32 rows (1 x
// 2^24 k 64 57.3 -> 60.7).
// Its time was the select's counting (H200, topk v45, the kernel timed
// phase by phase on the keys of 1 x 2^24 random float32's 132 slices,
// select of call): k 64 matched 11.2 of 18.0 us, voted skipping the
// rounds past the m keys 5.6 of 12.3; k 1: 3.2 of 9.4 -> 1.8 of 7.6; k
// 128: 19.6 of 27.0 -> 11.4 of 18.9.  Spread counting (one atomic a lane)
// timed faster still there, on random, constant and four-valued rows (k
// 64: 4.7, 13.7 and 13.7 us of select against 5.6, 16.9 and 16.9); in the
// library (topk v46, with keep_best's spread count) 1 x 2^24 float32 k 64
// 55.2 -> 54.2 us, k 128 69.9 -> 65.6.
// LARGE (k up to kStreamLargeK): the floor lets at most 2k keys through
// (at most kStreamK for k <= kStreamK), cut to the k best (keep_best) and
// sorted by the block (finish_large).
constexpr int kMergeBlock = 1024;
template <class T, bool LARGE>
__global__ void __launch_bounds__(kMergeBlock)
    stream_merge_kernel(const T* __restrict__ x, const key_t<T>* __restrict__ cand, int splits,
                        T* __restrict__ values, int64_t* __restrict__ indices, Output o) {
  using Key = key_t<T>;
  constexpr int kItems = kgen::topk::kStreamMerged / kMergeBlock;
  constexpr int kPool = LARGE ? 2 * kgen::topk::kStreamLargeK : kStreamK;
  __shared__ SelectShared<kMergeBlock, 8> sh;
  __shared__ Key best[kPool];
  __shared__ unsigned count, kept;
  wait_for_previous_grid();
  const int64_t r = blockIdx.x;
  const int m = splits * static_cast<int>(o.k);
  const Key* c = cand + r * m;
  Key v[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int i = j * kMergeBlock + static_cast<int>(threadIdx.x);
    v[j] = i < m ? c[i] : Key(0);
  }
  if (o.k == 1) {  // the largest key, in place of the select and the warp's sort
    Key top = v[0];
#pragma unroll
    for (int j = 1; j < kItems; ++j) top = v[j] > top ? v[j] : top;
    top = block_best<T, kMergeBlock>(top, best);
    if (threadIdx.x >= 32) return;
    if (threadIdx.x == 0) best[0] = top;
    __syncwarp();
    finish_by_warp<T>(best, 1, x + r * o.n, values, indices, r, o);
    return;
  }
  // Key(0): no key (no real key is 0: indices < 2^32 - 1); rounds past
  // the m keys are skipped (the same for the whole block)
  auto each = [&](auto&& f) {
#pragma unroll
    for (int j = 0; j < kItems; ++j)
      if (j * kMergeBlock < m) f(v[j], v[j] != Key(0));
  };
  const bool wide = LARGE && o.k > kStreamK;
  const unsigned most = wide ? 2 * static_cast<unsigned>(o.k) : static_cast<unsigned>(kStreamK);
  const Key t = radix_floor<kKeyWidth<T>, 8, kMergeBlock, Key>(each, static_cast<unsigned>(o.k), most, sh,
                                                                 Crowd::spread);
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  const Collected<T> into{best, &count};
  each([&](Key key, bool valid) { collect<T>(into, key, valid && key >= t); });
  __syncthreads();
  int got = static_cast<int>(count);  // k .. most
  if constexpr (LARGE) {
    if (wide) {
      if (got > static_cast<int>(o.k)) {
        keep_best<kMergeBlock, T>(best, got, static_cast<int>(o.k), sh, &kept);
        got = static_cast<int>(o.k);
      }
      return finish_large<kMergeBlock, T>(best, got, x + r * o.n, values, indices, r, o);
    }
  }
  if (threadIdx.x < 32) finish_by_warp<T>(best, got, x + r * o.n, values, indices, r, o);
}

template <class T, int BLOCK, int ITEMS, int P, int CAP>
cudaError_t launch_stream(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const auto x = static_cast<const T*>(p.x);
  const auto values = static_cast<T*>(p.values);
  const Output o{p.n, p.k, p.largest, p.sorted};
  const int64_t splits = kgen::topk::stream_splits(p);
  static_assert(CAP == kgen::topk::kStreamBuffer || CAP == kgen::topk::kStreamLargeBuffer,
                "the buffers supports() knows");
  constexpr bool kLarge = CAP > kgen::topk::kStreamBuffer;
  auto kernel = stream_kernel<T, BLOCK, ITEMS, P, false, CAP>;
  if constexpr (P > 1) {  // a row off the packs' alignment
    if (!kgen::topk::rows_aligned(p, P)) kernel = stream_kernel<T, BLOCK, ITEMS, P, true, CAP>;
  }
  // the large buffer: dynamic shared memory past the 48 KB a launch gets
  // unasked (the attribute is the function's, set at each launch: a
  // device may be new to it)
  constexpr size_t kDynamic = kLarge ? sizeof(key_t<T>) * CAP : 0;
  if constexpr (kLarge) {
    const cudaError_t a = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(kDynamic));
    if (a != cudaSuccess) return a;
  }
  if (splits == 1) {
    kernel<<<static_cast<unsigned>(p.batch), BLOCK, kDynamic, stream>>>(x, values, p.indices, o, 1,
                                                                          static_cast<key_t<T>*>(nullptr));
    return cudaGetLastError();
  }
  const auto cand = static_cast<key_t<T>*>(p.workspace);  // plan_stream: the slices' keys
  kernel<<<static_cast<unsigned>(p.batch * splits), BLOCK, kDynamic, stream>>>(x, values, p.indices, o,
                                                                                static_cast<int>(splits), cand);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  // sm_90 code, not only an sm_90 device: PTX of an older arch compiles the
  // grid dependency's wait to nothing (as launch_multi)
  return launch_chained(p.device->code_arch >= 90, stream_merge_kernel<T, kLarge>,
                        dim3(static_cast<unsigned>(p.batch)), kMergeBlock, stream, x,
                        static_cast<const key_t<T>*>(cand), static_cast<int>(splits), values, p.indices, o);
}

}  // namespace topk
}  // namespace device
}  // namespace kgen
