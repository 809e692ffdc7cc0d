// Whole units of a tensor (short rows, or the axis x inner slab of one outer
// position) staged through shared memory in 16-byte vectors, whatever their
// length and alignment: the skeleton of the softmax tile tier, both
// directions (softmax.cuh, softmax_backward.cuh).
//
// A tile is a run of whole units, contiguous in memory.  Each input's span
// is read with row_slice.cuh's layout (the elements before the span's first
// 16-byte boundary one a thread, the aligned body in 16-byte packs, the tail
// one a thread) into shared memory at the same offset modulo 16 bytes, so
// that every body pack is one 16-byte load and one 16-byte shared store.
// The tile's columns (a row, or one inner position of a slab) are then
// computed in shared memory by groups of lanes, the result written over
// input 0's span, and the span stored the way it was read (16-byte stores
// when y is congruent to x modulo 16 bytes, element stores otherwise).  So
// a row of 29 float16 values, or a (3, 281) slab, moves at full vector
// width where the register tiers would use one element a load.
#pragma once

#include "kgen/device/row_slice.cuh"
#include "softmax/problem.hpp"

namespace kgen {
namespace device {
namespace tiles {

// Where a span of `len` elements starting at `src` lies: `mis` elements
// past its first 16-byte boundary (so element e sits at buf[mis + e]); a
// head of under a pack, `body` packs, a tail of under a pack.
struct Span {
  int mis, head, tail;
  int64_t body;
  template <class T>
  __device__ __forceinline__ static Span of(const T* src, int64_t len) {
    constexpr int P = rows::kVec<T>;
    Span s;
    s.mis = static_cast<int>(reinterpret_cast<uintptr_t>(src) % 16) / static_cast<int>(sizeof(T));
    s.head = s.mis ? P - s.mis : 0;
    if (s.head > len) s.head = static_cast<int>(len);
    s.body = (len - s.head) / P;
    s.tail = static_cast<int>(len - s.head - s.body * P);
    return s;
  }
  // the element index of body pack k's first element
  template <class T>
  __device__ __forceinline__ int64_t pack(int64_t k) const { return head + k * rows::kVec<T>; }
};

__device__ __forceinline__ uint4 as_uint4(const rows::Raw& r) { return make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]); }

// Reads `len` elements at src into buf (16-byte aligned, len + one pack
// long); returns the span's layout.  B threads, U packs in flight each.
template <class T, int B, int U>
__device__ __forceinline__ Span stage_in(const T* src, int64_t len, T* buf) {
  const Span s = Span::of(src, len);
  const int t = threadIdx.x;
  if (t < s.head) buf[s.mis + t] = src[t];
  const int64_t tail0 = s.pack<T>(s.body);
  if (t < s.tail) buf[s.mis + tail0 + t] = src[tail0 + t];
  rows::stream_packs<B, U, false>(
      s.body, [&](int64_t k) { return rows::load_raw(src + s.pack<T>(k), true); },
      [&](const rows::Raw& v, int64_t k) { *reinterpret_cast<uint4*>(buf + s.mis + s.pack<T>(k)) = as_uint4(v); });
  return s;
}

// Writes buf, laid out as span s of `like` (the input it was read from),
// to dst: 16-byte stores when dst is congruent to `like`, else element
// stores at the same places.
template <class T, int B>
__device__ __forceinline__ void stage_out(const Span& s, const T* like, T* dst, const T* buf) {
  constexpr int P = rows::kVec<T>;
  const int t = threadIdx.x;
  if (t < s.head) dst[t] = buf[s.mis + t];
  const int64_t tail0 = s.pack<T>(s.body);
  if (t < s.tail) dst[tail0 + t] = buf[s.mis + tail0 + t];
  const bool vec = rows::congruent(like, dst);
  for (int64_t k = t; k < s.body; k += B) {
    const int64_t e = s.pack<T>(k);
    const uint4 v = *reinterpret_cast<const uint4*>(buf + s.mis + e);
    if (vec) {
      *reinterpret_cast<uint4*>(dst + e) = v;
    } else {
      const T* vals = reinterpret_cast<const T*>(&v);
#pragma unroll
      for (int j = 0; j < P; ++j) dst[e + j] = vals[j];
    }
  }
}

// The columns of a staged tile of n units: column c is inner position
// c % inner of unit c / inner, its axis values `inner` apart from
// column_start(c).  Groups of sh.group lanes take columns c0 + group index;
// every lane of a warp makes the same number of calls (so that a group's
// shuffles see the whole warp), with ok false past the last column.
template <int B, class F>
__device__ __forceinline__ void for_each_column(const kgen::softmax::TileShape& sh, int64_t n, F&& f) {
  const int groups = B / sh.group;
  const int gi = static_cast<int>(threadIdx.x) / sh.group, lane = static_cast<int>(threadIdx.x) % sh.group;
  const int64_t columns = n * sh.inner;
  for (int64_t c0 = 0; c0 < columns; c0 += groups) {
    const int64_t c = c0 + gi;
    const bool ok = c < columns;
    const int64_t u = sh.inner == 1 ? c : c / sh.inner;
    f(ok ? u * sh.unit + (c - u * sh.inner) : int64_t{0}, ok, lane);
  }
}

// All-reduce over the `group` lanes of a column (a power of two up to 32;
// every lane of the warp calls it).
template <class V, class Op>
__device__ __forceinline__ V group_reduce(V v, Op op, int group) {
  for (int d = group / 2; d > 0; d /= 2) v = op(v, softmax::shfl_xor(v, d));
  return v;
}

// Tiles of whole units, grid-stride: stage the NIN inputs' spans, barrier,
// compute(bufs, spans, n) (which writes the result over input 0's span),
// barrier, store input 0's span to out, barrier (the next tile reuses the
// buffers).  smem holds NIN buffers of `capacity` elements and a pack.
template <class T, int B, int U, int NIN, class Compute>
__device__ __forceinline__ void run_tiles(const T* const (&in)[NIN], T* out, const kgen::softmax::TileShape& sh,
                                          int64_t capacity, Compute compute) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* bufs[NIN];
#pragma unroll
  for (int k = 0; k < NIN; ++k) bufs[k] = reinterpret_cast<T*>(smem_raw) + k * (capacity + rows::kVec<T>);
  for (int64_t tile = blockIdx.x; tile < sh.tiles; tile += gridDim.x) {
    const int64_t u0 = tile * sh.per_tile;
    const int64_t n = sh.units - u0 < sh.per_tile ? sh.units - u0 : sh.per_tile;
    const int64_t start = u0 * sh.unit, len = n * sh.unit;
    Span spans[NIN];
#pragma unroll
    for (int k = 0; k < NIN; ++k) spans[k] = stage_in<T, B, U>(in[k] + start, len, bufs[k]);
    __syncthreads();
    compute(bufs, spans, n);
    __syncthreads();
    stage_out<T, B>(spans[0], in[0] + start, out + start, bufs[0]);
    __syncthreads();
  }
}

// ------------------------------------------------------------ host launcher
// The plain or log instantiation of a tile kernel (B threads, C elements a
// thread, NIN inputs) over p's tiles: kernel(args..., shape, capacity), as
// many CTAs as tiles up to 32 waves (the hardware balances them; kernels
// stride over the rest).
template <class T, int C, int B, int NIN, auto Plain, auto Log, class... Args>
cudaError_t launch(const kgen::softmax::Problem& p, cudaStream_t stream, Args... args) {
  constexpr int64_t kCapacity = int64_t{B} * C;
  const kgen::softmax::TileShape sh = kgen::softmax::tile_shape(p, kCapacity);
  const size_t smem = static_cast<size_t>(kgen::softmax::tile_smem_bytes(kCapacity, sizeof(T), NIN));
  if (smem > 48 * 1024) {
    const cudaError_t err = p.log ? softmax::allow_max_smem<Log>(*p.device) : softmax::allow_max_smem<Plain>(*p.device);
    if (err != cudaSuccess) return err;
  }
  const unsigned grid = softmax::grid_for(sh.tiles, *p.device, B, 32);
  if (p.log)
    Log<<<grid, B, smem, stream>>>(args..., sh, kCapacity);
  else
    Plain<<<grid, B, smem, stream>>>(args..., sh, kCapacity);
  return cudaGetLastError();
}

}  // namespace tiles
}  // namespace device
}  // namespace kgen
