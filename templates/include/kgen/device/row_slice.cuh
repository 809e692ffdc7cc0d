// A row held in registers across the K CTAs of a thread-block cluster (K = 1:
// one block), read once from memory: the skeleton of the forward's and the
// backward's block and cluster tiers (softmax.cuh, softmax_backward.cuh).
//
// Layout: the row's aligned body (from its first 16-byte boundary) is cut
// into 16-byte packs; CTA `rank` holds a contiguous run of them, thread t its
// packs t, t + B, ... (V at most), as loaded (raw, so half types take half
// the registers of float32).  The elements before the first boundary (the
// head, fewer than a pack) sit one a thread in the first CTA's first
// threads, the elements after the last whole pack (the tail) in the last
// CTA's last threads.  So any row length and any element-aligned pointer
// reads its body in 16-byte vectors; a tensor whose pointer is not
// congruent to the row's (mod 16) goes through the same layout with element
// accesses.
//
// Reductions: warp shuffles, the block's warps through shared memory, then
// for K > 1 each CTA's partial pushed into every CTA's shared memory
// (ClusterPush), all folded in a fixed order, so every CTA holds bitwise the
// same result and reruns give the same bits.
#pragma once

#include <cooperative_groups.h>

#include <cstring>
#include <type_traits>

#include "kgen/device/common.cuh"
#include "kgen/device/softmax_common.cuh"

namespace kgen {
namespace device {
namespace rows {

template <class T>
constexpr int kVec = 16 / static_cast<int>(sizeof(T));

// A 16-byte pack as loaded, in 32-bit words: half types keep two values a
// register (held as 16-bit values, each took a register of its own, and
// float16 slices of 8 packs a thread spilled under 1024 threads).
struct Raw {
  uint32_t w[4];
};

// Element j of a pack of T, in the compute type.
template <class T>
__device__ __forceinline__ compute_t<T> value(const Raw& r, int j) {
  if constexpr (sizeof(T) == 2) {
    const uint32_t bits = j % 2 ? r.w[j / 2] >> 16 : r.w[j / 2] & 0xFFFFu;
    if constexpr (std::is_same<T, __half>::value) return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    else return __uint_as_float(bits << 16);  // bfloat16: the high half of a float
  } else if constexpr (sizeof(T) == 4) {
    return __uint_as_float(r.w[j]);
  } else {
    return __hiloint2double(static_cast<int>(r.w[2 * j + 1]), static_cast<int>(r.w[2 * j]));
  }
}

// Every element of a pack set to a value's bit pattern (e.g. -inf).
template <class T>
__device__ __forceinline__ Raw raw_fill(T v) {
  Raw r;
  uint32_t word[sizeof(T) < 4 ? 1 : sizeof(T) / 4];
  if constexpr (sizeof(T) == 2) {
    const uint32_t h = *reinterpret_cast<const unsigned short*>(&v);
    word[0] = h | h << 16;
  } else {
    memcpy(word, &v, sizeof(T));
  }
  constexpr int kWords = sizeof(word) / 4;
#pragma unroll
  for (int k = 0; k < 4; ++k) r.w[k] = word[k % kWords];
  return r;
}
template <class T> __device__ __forceinline__ T raw_neg_inf() { return T(neg_inf<compute_t<T>>()); }
template <> __device__ __forceinline__ __half raw_neg_inf<__half>() { return __ushort_as_half(0xFC00); }
template <> __device__ __forceinline__ __nv_bfloat16 raw_neg_inf<__nv_bfloat16>() {
  return __ushort_as_bfloat16(0xFF80);
}

// Keeps a pack in its raw form between passes, so that the conversions of
// one pass are not kept live for the next.
__device__ __forceinline__ void keep_raw(Raw& r) {
#pragma unroll
  for (int k = 0; k < 4; ++k) asm volatile("" : "+r"(r.w[k]));
}
template <int V>
__device__ __forceinline__ void keep_raw(Raw (&r)[V]) {
#pragma unroll
  for (int i = 0; i < V; ++i) keep_raw(r[i]);
}
// Every word of every pack XORed with z: with a z that is 0 at run time but
// unknown to ptxas, a dependency that costs one instruction a word.
template <int V>
__device__ __forceinline__ void xor_all(Raw (&r)[V], uint32_t z) {
#pragma unroll
  for (int i = 0; i < V; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) r[i].w[k] ^= z;
}
// Makes packs depend on a value ptxas cannot know (`never`, always false at
// run time) so that it cannot move their conversions ahead of what computed
// it: keep_raw binds only the compiler's front end.
template <int V>
__device__ __forceinline__ void after(Raw (&r)[V], bool never) {
  xor_all(r, never ? ~0u : 0u);  // all bits: a 0/1 mask let ptxas prove the high halves unchanged
}

// Makes every word of every pack depend on every pack's load and on `never`
// (false at run time, unknown to ptxas), so that all V loads are issued
// before the first value is used.  Left to itself ptxas converted the first
// packs while the later loads waited for them: 4 of 8 loads late in the half
// types' block and cluster kernels, 3 of 8 in float32's log mode (sm_90
// SASS), so a CTA's slice took two or three memory round trips, not one.
// (A dependency on the loads alone is not enough: ptxas may still place the
// uses of early packs between later loads; the AND of every pack ties them.)
// About 40 SASS instructions a thread at 8 packs.
template <int V>
__device__ __forceinline__ void landed(Raw (&r)[V], bool never) {
  uint32_t z = never ? ~0u : 0u;
#pragma unroll
  for (int i = 0; i < V; ++i) z &= r[i].w[0];
  xor_all(r, z);
}

// Blocks an SM must hold: at most 64 registers a thread.  Left to itself
// ptxas gave the half types' log mode 128 (every value of 8 packs a thread
// converted ahead of the output pass), half the residency of the plain
// mode, and bfloat16 log_softmax rows of 65536 in clusters ran at 56% of
// copy against 75% (H100).
template <int B>
constexpr int kSliceMinBlocks = 65536 / (B * 64) < 1 ? 1 : 65536 / (B * 64);

// Packs a thread holds in registers; the slice kernels keep any further
// packs in dynamic shared memory (Held).
constexpr int kSliceRegPacks = 8;
template <int V, int B>
constexpr size_t held_bytes() {
  return V > kSliceRegPacks ? size_t{16} * B * (V - kSliceRegPacks) : 0;
}

// Where this thread's part of one row lies.
struct Slice {
  int head;       // elements before the row's first 16-byte boundary
  int64_t first;  // this CTA's first pack of the aligned body
  int64_t count;  // body packs this CTA holds
  int64_t edge;   // the head or tail element this thread holds, or -1
  // the column of this thread's pack i (valid when has(i))
  template <int B>
  __device__ __forceinline__ int64_t col(int i, int p) const {
    return head + (first + i * B + threadIdx.x) * p;
  }
  template <int B>
  __device__ __forceinline__ bool has(int i) const { return i * B + static_cast<int>(threadIdx.x) < count; }
  // the column of this CTA's pack k (k < count)
  __device__ __forceinline__ int64_t at(int64_t k, int p) const { return head + (first + k) * p; }
};

// The slice of the row starting at `row` (cols elements) held by CTA `rank`
// of `parts`, B threads each.
template <class T, int B>
__device__ __forceinline__ Slice slice_of(const T* row, int64_t cols, int rank, int64_t parts) {
  constexpr int P = kVec<T>;
  const int mis = static_cast<int>(reinterpret_cast<uintptr_t>(row) % 16) / static_cast<int>(sizeof(T));
  Slice s;
  s.head = mis ? P - mis : 0;
  if (s.head > cols) s.head = static_cast<int>(cols);
  const int64_t body = (cols - s.head) / P;
  const int tail = static_cast<int>(cols - s.head - body * P);
  const int64_t per = (body + parts - 1) / parts;
  s.first = rank * per;
  s.count = body - s.first < per ? body - s.first : per;
  if (s.count < 0) s.count = 0;
  const int t = threadIdx.x;
  s.edge = -1;
  if (rank == 0 && t < s.head) s.edge = t;
  if (rank == parts - 1 && t >= B - tail) s.edge = cols - (B - t);
  return s;
}

// A row in the span tiers' layout (softmax.cuh and softmax_backward.cuh
// span_kernel): the slice layout above at the size of a lane group.  The
// row's body packs go to a group of G lanes, pack k in lane k % G, slot
// k / G (K slots a lane); its head and tail elements (the head's first)
// go edge q in lane q % G, slot q / G (E slots).
template <class T, int K, int G>
struct GroupSpan {
  static constexpr int P = kVec<T>;
  static constexpr int E = (2 * P - 2 + G - 1) / G;  // edge elements a lane holds at most
  int head, body, g_lane;
  __device__ __forceinline__ static GroupSpan of(const T* row, int cols, int g_lane) {
    const int mis = static_cast<int>(reinterpret_cast<uintptr_t>(row) % 16) / static_cast<int>(sizeof(T));
    const int head = mis ? P - mis : 0;
    return GroupSpan{head, (cols - head) / P, g_lane};
  }
  // whether slot i holds a body pack
  __device__ __forceinline__ bool has(int i) const { return i * G + g_lane < body; }
  // where slot i's pack starts in the row: past the body, the body's last
  // pack, so that every slot loads unpredicated (the row has a body pack)
  __device__ __forceinline__ int pack_at(int i) const {
    const int k = i * G + g_lane;
    return head + (k < body ? k : body - 1) * P;
  }
  // where body slot i's pack starts, for a slot has(i) holds (the stores:
  // no clamp, so that the compiler keeps one store path a slot)
  __device__ __forceinline__ int body_at(int i) const { return head + (i * G + g_lane) * P; }
  // the column of edge slot e: the row's length or more past the row
  __device__ __forceinline__ int edge_at(int e) const {
    const int q = e * G + g_lane;
    return q < head ? q : body * P + q;
  }
};

// Streams this thread's packs k = t, t + B, ... < count of a slice, U
// loads in flight: load(k) for U packs, then use(item, k, has) in every
// lane for each, from the first round to the last or (REVERSE) from the
// last to the first; has: whether pack k is the slice's (item is loaded
// only where it is).  Every lane of a warp takes the same rounds, so that
// use may exchange packs across lanes (rows::shift_next).
template <int B, int U, bool REVERSE, class Load, class Use>
__device__ __forceinline__ void stream_packs_all(int64_t count, Load load, Use use) {
  using Item = decltype(load(int64_t{0}));
  constexpr int64_t kRound = int64_t{B} * U;
  const int64_t rounds = (count + kRound - 1) / kRound;
  for (int64_t r0 = 0; r0 < rounds; ++r0) {
    const int64_t base = (REVERSE ? rounds - 1 - r0 : r0) * kRound + threadIdx.x;
    Item item[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (base + u * B < count) item[u] = load(base + u * B);
#pragma unroll
    for (int u = 0; u < U; ++u) use(item[u], base + u * B, base + u * B < count);
  }
}

// The same, use(item, k) only for the slice's packs.
template <int B, int U, bool REVERSE, class Load, class Use>
__device__ __forceinline__ void stream_packs(int64_t count, Load load, Use use) {
  stream_packs_all<B, U, REVERSE>(count, load, [&](const auto& item, int64_t k, bool has) {
    if (has) use(item, k);
  });
}

// A thread's packs R, R + 1, ... (S of them) of a slice in dynamic shared
// memory, pack i at [(i - R) * B + t]: copied there by cp.async (16 bytes,
// L1 bypassed) at the slice's start, with no registers held meanwhile, and
// read back only by the thread that copied them, so no barrier (wait()
// makes its copies visible to itself).  S = 0: nothing.
template <int S, int B>
struct Held {
  template <class T>
  __device__ __forceinline__ void load(const Slice& s, int r, const T* row) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (S > 0) {
#pragma unroll
      for (int i = 0; i < S; ++i)
        if (s.has<B>(r + i)) {
          const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(slot(i)));
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst),
                       "l"(__cvta_generic_to_global(row + s.col<B>(r + i, kVec<T>)))
                       : "memory");
        }
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
#endif
  }
  __device__ __forceinline__ void wait() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (S > 0) asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
  }
  // fn(pack, i) for each held pack i the slice has
  template <class Fn>
  __device__ __forceinline__ void for_each(const Slice& s, int r, Fn fn) const {
#pragma unroll
    for (int i = 0; i < S; ++i)
      if (s.has<B>(r + i)) {
        const uint4 u = *slot(i);
        fn(Raw{{u.x, u.y, u.z, u.w}}, r + i);
      }
  }
  // fn(pack, i, has) for every held slot, the same calls in every lane of a
  // warp (for warp-wide exchanges); pack is read only where has
  template <class Fn>
  __device__ __forceinline__ void for_all(const Slice& s, int r, Fn fn) const {
#pragma unroll
    for (int i = 0; i < S; ++i) {
      const bool has = s.has<B>(r + i);
      uint4 u = {0, 0, 0, 0};
      if (has) u = *slot(i);
      fn(Raw{{u.x, u.y, u.z, u.w}}, r + i, has);
    }
  }
  __device__ __forceinline__ uint4* slot(int i) const {
    extern __shared__ uint4 kgen_held[];
    return kgen_held + i * B + threadIdx.x;
  }
};

// A 16-byte pack at `p` (16-byte aligned when vec, else element aligned).
template <class T>
__device__ __forceinline__ Raw load_raw(const T* p, bool vec) {
  Raw r;
  if (vec) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    r.w[0] = u.x, r.w[1] = u.y, r.w[2] = u.z, r.w[3] = u.w;
    return r;
  }
  if constexpr (sizeof(T) == 2) {
    const unsigned short* h = reinterpret_cast<const unsigned short*>(p);
#pragma unroll
    for (int k = 0; k < 4; ++k) r.w[k] = uint32_t{h[2 * k]} | uint32_t{h[2 * k + 1]} << 16;
  } else {
    const uint32_t* u = reinterpret_cast<const uint32_t*>(p);  // 4-byte aligned
#pragma unroll
    for (int k = 0; k < 4; ++k) r.w[k] = u[k];
  }
  return r;
}

// Values of a pack rounded to T as from_compute rounds them, in 32-bit
// words as stored: half types two values a conversion (a Pack filled by
// from_compute and copied to words took 0.2-0.3% more SASS instructions
// in the slice, split and tile bundles).
template <class T>
__device__ __forceinline__ Raw raw_of(const compute_t<T>* v) {
  Raw r;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if constexpr (std::is_same<T, __half>::value) {
      const __half2 h = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
      memcpy(&r.w[k], &h, 4);
    } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
      memcpy(&r.w[k], &h, 4);
    } else if constexpr (sizeof(T) == 4) {
      r.w[k] = __float_as_uint(v[k]);
    } else {
      const double d = v[k / 2];
      r.w[k] = k % 2 ? static_cast<uint32_t>(__double_as_longlong(d) >> 32)
                     : static_cast<uint32_t>(__double_as_longlong(d));
    }
  }
  return r;
}

// A pack's words stored at a 16-byte aligned `p` (store_raw), or its values
// at `p` (store_values: 16-byte aligned when vec, else element aligned).
// The aligned store is one 16-byte vector in PTX: as a C++ store (of a Pack
// of T or a uint4) the front end split packs into 4-byte stores, one pack of
// the cluster kernel's eight, every pack in a version that looped over rows
// (30% of copy, float16 rows of 8192; bench/NOTES.md slice v2), and every
// pack of the tile tier's stage_out.
__device__ __forceinline__ void store_raw(void* p, const Raw& r) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(p)), "r"(r.w[0]), "r"(r.w[1]),
               "r"(r.w[2]), "r"(r.w[3])
               : "memory");
}

template <class T>
__device__ __forceinline__ void store_values(T* p, const compute_t<T>* v, bool vec) {
  if (vec) {
    store_raw(p, raw_of<T>(v));
    return;
  }
#pragma unroll
  for (int j = 0; j < kVec<T>; ++j) p[j] = from_compute<T>(v[j]);
}

__host__ __device__ __forceinline__ bool congruent(const void* a, const void* b) {
  return (reinterpret_cast<uintptr_t>(a) - reinterpret_cast<uintptr_t>(b)) % 16 == 0;
}

// Bytes [b, b + 16) of a's 16 bytes followed by n's (0 <= b < 16, a
// multiple of the element size): the word shift in two selects, the byte
// shift (half types) in funnel shifts.
__device__ __forceinline__ Raw bytes_from(const Raw& a, const Raw& n, int b) {
  const uint32_t w[8] = {a.w[0], a.w[1], a.w[2], a.w[3], n.w[0], n.w[1], n.w[2], n.w[3]};
  const int q = b / 4;
  uint32_t t[6], u[5];
#pragma unroll
  for (int j = 0; j < 6; ++j) t[j] = q & 2 ? w[j + 2] : w[j];
#pragma unroll
  for (int j = 0; j < 5; ++j) u[j] = q & 1 ? t[j + 1] : t[j];
  Raw o;
#pragma unroll
  for (int k = 0; k < 4; ++k) o.w[k] = __funnelshift_r(u[k], u[k + 1], (b % 4) * 8);
  return o;
}

// Element j of a pack, stored to p as the raw bits of a T.
template <class T>
__device__ __forceinline__ void store_element(T* p, const Raw& r, int j) {
  if constexpr (sizeof(T) == 2) {
    const uint16_t bits = static_cast<uint16_t>(j % 2 ? r.w[j / 2] >> 16 : r.w[j / 2]);
    *reinterpret_cast<uint16_t*>(p) = bits;
  } else if constexpr (sizeof(T) == 4) {
    *reinterpret_cast<uint32_t*>(p) = r.w[j];
  } else {
    *reinterpret_cast<uint64_t*>(p) = (uint64_t{r.w[2 * j + 1]} << 32) | r.w[2 * j];
  }
}

// Where y lies off x's 16-byte boundaries (x a few elements into its
// storage, y fresh), y's boundary falls `lead` elements into each of x's
// packs (0 < lead < P, the same in every pack of every row).  The output
// pack at y's boundary is then this pack's last P - lead inputs and the
// next pack's first lead: shift_next gives those inputs, the next pack from
// the neighbouring lane by a shuffle, or for lane 31 (whose neighbour is
// another warp's, or this warp's next round) loaded again from xn (its
// first use is recent: an L2 hit at worst; 16-byte aligned when vec, as r
// was loaded).  has: whether this lane holds a pack; next: whether the pack
// after it is this CTA's.  Every lane of the warp calls it.  Of the
// reloaded pack only its first lead elements are used: where the output
// is the input (the backward's dx == dy), the rest may already be the
// next pack's output.
template <class T>
__device__ __forceinline__ Raw shift_next(const Raw& r, bool has, bool next, const T* xn, int lead, bool vec = true) {
  Raw n;
#pragma unroll
  for (int k = 0; k < 4; ++k) n.w[k] = __shfl_down_sync(0xffffffffu, r.w[k], 1);
  if (threadIdx.x % 32 == 31 && has && next) n = load_raw(xn, vec);
  return bytes_from(r, n, lead * static_cast<int>(sizeof(T)));
}

// The elements [from, to) of an output pack, an element at a time (the
// packs at a slice's ends, which y's 16-byte packs straddle; a whole pack
// off a 16-byte boundary).
template <class T>
__device__ __forceinline__ void store_elements(T* p, const Raw& r, int from, int to) {
#pragma unroll
  for (int j = 0; j < kVec<T>; ++j)
    if (j >= from && j < to) store_element<T>(p + j, r, j);
}

// One output pack of a slice whose y lies off x's 16-byte boundaries (the
// SHIFT kernels), pack k of the CTA's slice, at yc in y: where the pack
// after it is this CTA's (next), the 16-byte store at y's boundary `lead`
// elements in, of shifted() (the output of shift_next's inputs); the
// slice's last pack stores its elements [lead, P) and its first its [0,
// lead) from own() (this pack's output) an element at a time.
template <class T, class Shifted, class Own>
__device__ __forceinline__ void store_shifted(T* yc, int64_t k, bool next, int lead, Shifted shifted, Own own) {
  if (next) store_raw(yc + lead, shifted());
  if (!next || k == 0) {
    const Raw o = own();
    if (!next) store_elements<T>(yc, o, lead, kVec<T>);
    if (k == 0) store_elements<T>(yc, o, 0, lead);
  }
}

// How many elements into x's 16-byte packs y's 16-byte boundary falls (0
// when congruent): the same for every pack of every row.
template <class T>
__device__ __forceinline__ int store_lead(const T* x, const T* y) {
  const int m = static_cast<int>((reinterpret_cast<uintptr_t>(y) - reinterpret_cast<uintptr_t>(x)) % 16) /
                static_cast<int>(sizeof(T));
  return m ? kVec<T> - m : 0;
}

// A warp's staging buffer for span rows whose output is not congruent to
// the input (store_span_rows): elements a warp, a multiple of a pack (the
// rows of one r, adjacent in y, at most (G x K + 1) x P - 1 values each,
// and up to P - 1 ahead of the first).
template <class T, int K, int G>
constexpr int kSpanStage = ((32 / G) * ((G * K + 1) * kVec<T> - 1) + 2 * kVec<T> - 1) / kVec<T> * kVec<T>;

// The dynamic shared memory a span launch of BLOCK threads gives: the
// warps' staging buffers when the output is not congruent to the input,
// else none.
template <class T, int K, int G, int BLOCK>
size_t span_stage_bytes(const void* in, const void* out) {
  return congruent(in, out) ? 0 : (BLOCK / 32) * kSpanStage<T, K, G> * sizeof(T);
}

// This warp's staging buffer in a span kernel's dynamic shared memory.
template <class T, int K, int G>
__device__ __forceinline__ T* warp_span_stage() {
  extern __shared__ __align__(16) unsigned char span_stage[];
  return reinterpret_cast<T*>(span_stage) + (threadIdx.x / 32) * kSpanStage<T, K, G>;
}

// Stores the rows of a warp's lane groups in the span layout (GroupSpan
// over LaneGroups<G, R>): out(r, v) is the output of the lane's value v of
// row r (body slot i's element j at v = i x P + j, edge e at K x P + e).
// With y congruent to the rows' packs (vec), each body pack is one 16-byte
// store.  Otherwise an element a store wrote a pack's sector eight times
// (H200 sweep: 7x16x1117x421 float16 one element into its storage 259 us,
// 68 in the warp tier's element accesses), so the warp's rows of each r,
// adjacent in y, go through `stage` (kSpanStage elements of shared memory,
// 16-byte aligned) placed so that y's 16-byte boundaries fall on the
// buffer's, and leave in y's own packs, the head and tail an element a lane.
template <class T, int K, int G, int R, int BLOCK, class Out>
__device__ __forceinline__ void store_span_rows(T* y, int64_t rows, int cols, int64_t base,
                                                const softmax::LaneGroups<G, R, BLOCK>& lg,
                                                const GroupSpan<T, K, G> (&sp)[R], bool vec, T* stage, Out out) {
  constexpr int P = kVec<T>, E = GroupSpan<T, K, G>::E, W = 32 / G;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = lg.row(base, r);
    if (vec) {
      if (row >= rows) continue;
      T* yr = y + row * cols;
#pragma unroll
      for (int i = 0; i < K; ++i) {
        if (!sp[r].has(i)) continue;
        compute_t<T> o[P];
#pragma unroll
        for (int j = 0; j < P; ++j) o[j] = out(r, i * P + j);
        store_raw(yr + sp[r].body_at(i), raw_of<T>(o));
      }
#pragma unroll
      for (int e = 0; e < E; ++e) {
        // value and column first: predicated stores, not a branch each
        const int c = sp[r].edge_at(e);
        const T v = from_compute<T>(out(r, K * P + e));
        if (c < cols) yr[c] = v;
      }
      continue;
    }
    const int64_t first = row - lg.group;  // the warp's first row of this r
    if (first >= rows) break;              // the same for the whole warp
    T* const yc = y + first * cols;
    const int a = static_cast<int>(reinterpret_cast<uintptr_t>(yc) % 16) / static_cast<int>(sizeof(T));
    if (row < rows) {
      T* const s = stage + a + lg.group * cols;
#pragma unroll
      for (int i = 0; i < K; ++i) {
        if (!sp[r].has(i)) continue;
#pragma unroll
        for (int j = 0; j < P; ++j) s[sp[r].body_at(i) + j] = from_compute<T>(out(r, i * P + j));
      }
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const int c = sp[r].edge_at(e);
        const T v = from_compute<T>(out(r, K * P + e));
        if (c < cols) s[c] = v;
      }
    }
    __syncwarp();
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int n = static_cast<int>((rows - first < W ? rows - first : W) * cols);
    const int head = a ? P - a : 0;  // n > head: a row has a body pack
    const int packs = (n - head) / P, tail = head + packs * P;
    for (int k = lane; k < packs; k += 32) {
      const uint4 q = *reinterpret_cast<const uint4*>(stage + a + head + k * P);  // one 16-byte shared load
      store_raw(yc + head + k * P, Raw{{q.x, q.y, q.z, q.w}});
    }
    if (lane < head) yc[lane] = stage[a + lane];
    if (lane < n - tail) yc[tail + lane] = stage[a + tail + lane];
    __syncwarp();
  }
}

// Whether this compilation pass has thread-block clusters (sm_90 on; the
// host pass says yes).  Kernels of K > 1 compile to nothing without them.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
constexpr bool kClusters = true;
#else
constexpr bool kClusters = false;
#endif

// This CTA's rank in its cluster (0 for K = 1).
template <int K>
__device__ __forceinline__ int cluster_rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (K > 1) return static_cast<int>(cooperative_groups::this_cluster().block_rank());
#endif
  return 0;
}

template <class V, class Op>
__device__ __forceinline__ V warp_all_reduce(V v, Op op) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = op(v, softmax::shfl_xor(v, d));
  return v;
}

// The cluster's exchange of one partial a CTA (K > 1): each CTA pushes its
// partial into slot `rank` of every CTA's `slots` (st.async), and a
// transaction barrier in each CTA completes when all K have landed, so a
// CTA waits only for the partials it needs and never for another CTA to
// finish reading its own (no cluster barrier round trip, none at exit).
// begin() arms the barrier once the kernel's loads are issued and leaves a
// cluster barrier open (peers' barriers must be armed before a push) that
// the exchange closes.  Against a cluster barrier, a read of each partial
// through distributed shared memory and a barrier before exit: float32
// rows of 131072 in clusters of 16, 82.5 -> 97.9% of copy on the H200 and
// 94.3 -> 99.6% on the H100; half-type rows of 1M 72 -> 80% and 83 -> 91%
// (bench/NOTES.md slice v7).
template <class V, int K>
struct ClusterPush {
  static_assert(sizeof(V) % 4 == 0 && sizeof(V) <= 16, "a partial is 1-4 words");
  __device__ __forceinline__ static V* slots() {
    __shared__ alignas(16) V s[K];
    return s;
  }
  __device__ __forceinline__ static uint64_t* bar() {
    __shared__ alignas(8) uint64_t b;
    return &b;
  }
  __device__ __forceinline__ static void begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar()));
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b) : "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b),
                   "r"(static_cast<unsigned>(K * sizeof(V)))
                   : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n");
#endif
  }
  // Every thread: v (the same in every thread of this CTA) to every CTA's
  // slot `rank`, pushed by lanes 0..K-1 of warp 0; returns the K slots
  // folded by a warp's butterfly (lane r holding CTA r's), so every warp of
  // every CTA gets the same bits.
  template <class Op>
  __device__ __forceinline__ static V exchange(V v, Op op, V identity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const int lane = threadIdx.x % 32;
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
    // read again here (volatile): one held from the kernel's start cost a
    // register across the loads (4 bytes spilled at 64 registers)
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar()));
    if (threadIdx.x < K) {
      const unsigned peer = threadIdx.x;
      unsigned dst, rbar;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                   : "=r"(dst)
                   : "r"(static_cast<unsigned>(__cvta_generic_to_shared(slots() + rank))), "r"(peer));
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(rbar) : "r"(b), "r"(peer));
      uint32_t w[4] = {0, 0, 0, 0};
      memcpy(w, &v, sizeof(V));
      if constexpr (sizeof(V) == 4) {
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(dst),
                     "r"(w[0]), "r"(rbar)
                     : "memory");
      } else if constexpr (sizeof(V) == 8) {
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];\n" ::"r"(
                         dst),
                     "r"(w[0]), "r"(w[1]), "r"(rbar)
                     : "memory");
      } else {
        static_assert(sizeof(V) == 16, "a partial of 1, 2 or 4 words");
        asm volatile(
            "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                dst),
            "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]), "r"(rbar)
            : "memory");
      }
    }
    unsigned done = 0;
    do {
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(done)
          : "r"(b)
          : "memory");
    } while (!done);
    V c = lane < K ? slots()[lane] : identity;
    return warp_all_reduce(c, op);
#else
    (void)op, (void)identity;
    return v;
#endif
  }
};

// All-reduce of v over the row's K x B threads.  Every thread of every CTA
// of the cluster calls it once, and for K > 1 has called
// ClusterPush<V, K>::begin() before.
template <int B, int K, class V, class Op>
__device__ __forceinline__ V slice_all_reduce(V v, Op op, V identity) {
  constexpr int kWarps = B / 32;
  __shared__ V partial[kWarps];
  __shared__ V total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_all_reduce(v, op);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if constexpr (K > 1) {
    // every warp folds the block's partials alike (no second block barrier)
    V w = lane < kWarps ? partial[lane] : identity;
    w = warp_all_reduce(w, op);
    return ClusterPush<V, K>::exchange(w, op, identity);
  } else {
    if (warp == 0) {
      V w = lane < kWarps ? partial[lane] : identity;
      w = warp_all_reduce(w, op);
      if (lane == 0) total = w;
    }
    __syncthreads();
    return total;
  }
}

// ------------------------------------------------------------ host helpers
// Launches kernel<<<grid, B, smem>>> as clusters of K CTAs (K = 1: a plain
// launch).  Clusters of more than 8 CTAs are opted into once per kernel and
// device.
template <int K, auto Kernel, class... Args>
cudaError_t launch_clusters(const DeviceInfo& d, unsigned grid, int block, size_t smem, cudaStream_t stream,
                            Args... args) {
  if (smem > 48 * 1024) {
    const cudaError_t err = softmax::allow_max_smem<Kernel>(d);
    if (err != cudaSuccess) return err;
  }
  if constexpr (K == 1) {
    Kernel<<<grid, block, smem, stream>>>(args...);
    return cudaGetLastError();
  } else {
    if constexpr (K > 8) {
      const cudaError_t err = softmax::once_per_device<Kernel, 1>(
          d, [] { return cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1); });
      if (err != cudaSuccess) return err;
    }
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = K;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    const cudaError_t err = launch_with(attr, true, Kernel, dim3(grid), block, smem, stream, args...);
    return err != cudaSuccess ? err : cudaGetLastError();
  }
}

}  // namespace rows
}  // namespace device
}  // namespace kgen
