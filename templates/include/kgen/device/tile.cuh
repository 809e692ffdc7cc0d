// Whole units of a tensor (short rows, or the axis x inner slab of one outer
// position) staged through shared memory in 16-byte vectors, whatever their
// length and alignment: the skeleton of the softmax tile tier, both
// directions (softmax.cuh, softmax_backward.cuh).
//
// A tile is a run of whole units, contiguous in memory, or (a slab longer
// than a tile) `width` inner positions of one slab: `axis` segments, each
// contiguous, staged side by side.  Each input's span (or segment) is read with row_slice.cuh's layout (the elements before the span's first
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

// Blocks an SM must hold: whole units at 64 registers a thread (left to
// itself ptxas took 72-80 for the float16 forward's index math, where the
// first tile kernel took 63-64); the backward's two inputs and segments cut
// along inner at 85 (the backward spilled 32 bytes under 64; segments took
// 78-86 with 32-bit tile offsets, 96-124 with 64-bit ones); float64 at four
// times these (336 bytes spilled under 64, 20-32 under 128).  No spills on
// sm_90 (cuobjdump --dump-resource-usage).
template <class T, bool SEG, int NIN>
constexpr int kTileThreadsPerSm = (SEG || NIN == 2 ? 768 : 1024) / (sizeof(T) == 8 ? 4 : 1);
template <class T, int B, bool SEG, int NIN>
constexpr int kTileMinBlocks = kTileThreadsPerSm<T, SEG, NIN> / B < 1 ? 1 : kTileThreadsPerSm<T, SEG, NIN> / B;

// Offsets inside a tile are 32-bit: a tile holds at most B x U packs (a few
// thousand elements), and 64-bit index math per element cost the first
// segment kernel more than its shared-memory traffic (ncu, bfloat16
// (16320, 3, 860): SM 56% busy, DRAM 13%).

// The spans a tile stages from one input: `count` segments of `len`
// elements, `pitch` elements apart in shared memory, `gstride` elements
// apart in memory (gmod: gstride modulo a pack); whole units: one segment.
struct Segments {
  int count, len, pitch, gmod;
  int64_t gstride;
};

// Where segment a of an input starting `mis0` elements past a 16-byte
// boundary lies: `mis` elements past one (so that element e sits at
// buf[a * pitch + mis + e]); a head of under a pack, `body` packs, a tail
// of under a pack.
struct Span {
  int mis, head, body, tail;
  template <class T>
  __device__ __forceinline__ static Span of(int mis0, int a, const Segments& g) {
    constexpr int P = rows::kVec<T>;
    Span s;
    s.mis = (mis0 + a * g.gmod) & (P - 1);
    s.head = s.mis ? P - s.mis : 0;
    if (s.head > g.len) s.head = g.len;
    s.body = (g.len - s.head) / P;
    s.tail = g.len - s.head - s.body * P;
    return s;
  }
};

template <class T>
__device__ __forceinline__ int misalignment(const T* p) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(p) % 16) / static_cast<int>(sizeof(T));
}

__device__ __forceinline__ uint4 as_uint4(const rows::Raw& r) { return make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]); }

// Calls load(a, s, k) and use(item, a, s, k) for body pack k of segment a
// (s: its Span), the packs of all segments numbered together so that a
// thread's U loads in flight cross segments; then edge(a, s, e) for the
// head and tail elements.  SEG false: one segment (whole units), its layout
// worked out once.
template <class T, int B, int U, bool SEG, class Load, class Use, class Edge>
__device__ __forceinline__ void for_each_piece(int mis0, const Segments& g, Load load, Use use, Edge edge) {
  constexpr int P = rows::kVec<T>;
  const int t = threadIdx.x;
  if constexpr (!SEG) {
    const Span s = Span::of<T>(mis0, 0, g);
    rows::stream_packs<B, U, false>(
        s.body, [&](int64_t k) { return load(0, s, static_cast<int>(k)); },
        [&](const rows::Raw& v, int64_t k) { use(v, 0, s, static_cast<int>(k)); });
    if (t < s.head) edge(0, s, t);
    if (t < s.tail) edge(0, s, s.head + s.body * P + t);
  } else {
    const unsigned most = static_cast<unsigned>(g.len / P + 1);  // body packs a segment has at most
    const int count = g.count * static_cast<int>(most);
    for (int q0 = 0; q0 < count; q0 += B * U) {
      rows::Raw item[U];
      int seg[U], pk[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int q = q0 + u * B + t;
        seg[u] = static_cast<int>(static_cast<unsigned>(q) / most);
        pk[u] = q - seg[u] * static_cast<int>(most);
        const Span s = Span::of<T>(mis0, seg[u], g);
        if (q < count && pk[u] < s.body) item[u] = load(seg[u], s, pk[u]);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const Span s = Span::of<T>(mis0, seg[u], g);
        if (q0 + u * B + t < count && pk[u] < s.body) use(item[u], seg[u], s, pk[u]);
      }
    }
    for (int h = t; h < g.count * P; h += B) {
      const int a = h / P, e = h - a * P;
      const Span s = Span::of<T>(mis0, a, g);
      if (e < s.head) edge(a, s, e);
      if (e < s.tail) edge(a, s, s.head + s.body * P + e);
    }
  }
}

// Reads the segments at src into buf (16-byte aligned, the tile's size and
// a pack): 16-byte loads and shared stores for the aligned bodies, the
// unaligned ends an element a thread.  Returns src's misalignment.
template <class T, int B, int U, bool SEG>
__device__ __forceinline__ int stage_in(const T* src, const Segments& g, T* buf) {
  constexpr int P = rows::kVec<T>;
  const int mis0 = misalignment(src);
  for_each_piece<T, B, U, SEG>(
      mis0, g,
      [&](int a, const Span& s, int k) { return rows::load_raw(src + a * g.gstride + s.head + k * P, true); },
      [&](const rows::Raw& v, int a, const Span& s, int k) {
        *reinterpret_cast<uint4*>(buf + a * g.pitch + s.mis + s.head + k * P) = as_uint4(v);
      },
      [&](int a, const Span& s, int e) { buf[a * g.pitch + s.mis + e] = src[a * g.gstride + e]; });
  return mis0;
}

// What stage_out does to the values of buffer 0 on their way out: nothing
// (the compute step wrote the results there), or a transform of each body
// pack and each edge element, given its place e in the span (whole units:
// the element's index in the tile), so that a flat pass over the tile in
// 16-byte packs computes them instead.
struct Unchanged {
  __device__ __forceinline__ void pack(rows::Raw&, int) const {}
  template <class T>
  __device__ __forceinline__ void one(T&, int) const {}
};

// Writes buf, laid out as `like`'s segments (the input it was read from),
// to dst: 16-byte stores when dst is congruent to `like`, else element
// stores at the same places; fin transforms each value on the way.
template <class T, int B, bool SEG, class Finish = Unchanged>
__device__ __forceinline__ void stage_out(const Segments& g, const T* like, T* dst, const T* buf,
                                          const Finish& fin = Finish{}) {
  constexpr int P = rows::kVec<T>;
  const bool vec = rows::congruent(like, dst);
  for_each_piece<T, B, 1, SEG>(
      misalignment(like), g,
      [&](int a, const Span& s, int k) {
        rows::Raw r;
        const uint4 v = *reinterpret_cast<const uint4*>(buf + a * g.pitch + s.mis + s.head + k * P);
        r.w[0] = v.x, r.w[1] = v.y, r.w[2] = v.z, r.w[3] = v.w;
        fin.pack(r, s.head + k * P);
        return r;
      },
      [&](const rows::Raw& r, int a, const Span& s, int k) {
        T* d = dst + a * g.gstride + s.head + k * P;
        if (vec) {
          rows::store_raw(d, r);  // a uint4 assignment compiled to four 4-byte stores
        } else {
          const T* vals = reinterpret_cast<const T*>(&r);
#pragma unroll
          for (int j = 0; j < P; ++j) d[j] = vals[j];
        }
      },
      [&](int a, const Span& s, int e) {
        T v = buf[a * g.pitch + s.mis + e];
        fin.one(v, e);
        dst[a * g.gstride + e] = v;
      });
}

// Where value a of a column sits in an input's buffer: whole units at
// mis0 + col + a * inner (col: the column's first element in the tile);
// segments (SEG) at a * pitch + (segment a's misalignment) + col (col: the
// inner position in the tile; gmod: inner modulo a pack).
template <class T, bool SEG>
struct Place {
  int mis0, pitch, inner, gmod;
  __device__ __forceinline__ int at(int col, int a) const {
    if constexpr (SEG) return a * pitch + ((mis0 + a * gmod) & (rows::kVec<T> - 1)) + col;
    return mis0 + col + a * inner;
  }
};

// The columns of a staged tile: `columns` of them; for whole units column c
// is inner position c % inner of unit c / inner.  Groups of sh.group lanes
// take columns c0 + group index; every lane of a warp makes the same number
// of calls (so that a group's shuffles see the whole warp), with ok false
// past the last column.  f(col, ok, lane) with col as Place::at takes it.
template <int B, bool SEG, class F>
__device__ __forceinline__ void for_each_column(const kgen::softmax::TileShape& sh, int columns, F&& f) {
  const int groups = B / sh.group;
  const int gi = static_cast<int>(threadIdx.x) / sh.group, lane = static_cast<int>(threadIdx.x) % sh.group;
  const int inner = static_cast<int>(sh.inner), unit = static_cast<int>(sh.unit);
  for (int c0 = 0; c0 < columns; c0 += groups) {
    const int c = c0 + gi;
    const bool ok = c < columns;
    int col = c;
    if (!SEG) {
      const int u = inner == 1 ? c : static_cast<int>(static_cast<unsigned>(c) / static_cast<unsigned>(inner));
      col = u * unit + (c - u * inner);
    }
    f(ok ? col : 0, ok, lane);
  }
}

// All-reduce over the `group` lanes of a column (a power of two up to 32;
// every lane of the warp calls it).
template <class V, class Op>
__device__ __forceinline__ V group_reduce(V v, Op op, int group) {
  for (int d = group / 2; d > 0; d /= 2) v = op(v, softmax::shfl_xor(v, d));
  return v;
}

// The tiles, grid-stride: stage the NIN inputs, barrier, compute(places,
// bufs, columns) (which writes the result over input 0's buffer, or leaves
// what fin needs), barrier, store input 0's buffer to out through fin,
// barrier (the next tile reuses the buffers).  smem holds NIN buffers of B
// x U packs (the tile) and a pack.  SEG: slabs cut along inner (sh.width >
// 0), else whole units.
template <class T, int B, int U, int NIN, bool SEG, class Compute, class Finish = Unchanged>
__device__ __forceinline__ void run_tiles(const T* const (&in)[NIN], T* out, const kgen::softmax::TileShape& sh,
                                          Compute compute, const Finish& fin = Finish{}) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int P = rows::kVec<T>;
  T* bufs[NIN];
#pragma unroll
  for (int k = 0; k < NIN; ++k) bufs[k] = reinterpret_cast<T*>(smem_raw) + k * (int64_t{B} * U * P + P);
  for (int64_t tile = blockIdx.x; tile < sh.tiles; tile += gridDim.x) {
    int64_t start;
    int columns;
    Segments g;
    if constexpr (!SEG) {
      const int64_t u0 = tile * sh.per_tile;
      const int n = static_cast<int>(sh.units - u0 < sh.per_tile ? sh.units - u0 : sh.per_tile);
      start = u0 * sh.unit;
      columns = n * static_cast<int>(sh.inner);
      g = Segments{1, n * static_cast<int>(sh.unit), 0, 0, 0};
    } else {
      const int64_t o = tile / sh.chunks, i0 = (tile - o * sh.chunks) * sh.width;
      start = o * sh.unit + i0;
      columns = static_cast<int>(sh.inner - i0 < sh.width ? sh.inner - i0 : sh.width);
      g = Segments{static_cast<int>(sh.axis), columns, static_cast<int>(sh.width) + P, static_cast<int>(sh.inner & (P - 1)),
                   sh.inner};
    }
    Place<T, SEG> places[NIN];
#pragma unroll
    for (int k = 0; k < NIN; ++k)
      places[k] = Place<T, SEG>{stage_in<T, B, U, SEG>(in[k] + start, g, bufs[k]), g.pitch,
                                static_cast<int>(SEG ? 0 : sh.inner), g.gmod};
    __syncthreads();
    compute(places, bufs, columns);
    __syncthreads();
    stage_out<T, B, SEG>(g, in[0] + start, out + start, bufs[0], fin);
    __syncthreads();
  }
}

// Whole rows (inner 1) that a group of lanes reads at once (one chunk): the
// forward computes each row's statistics in shared memory and its values in
// stage_out's flat pass over the tile's 16-byte packs (softmax.cuh
// tile_kernel).
__host__ __device__ __forceinline__ bool flat_rows(const kgen::softmax::TileShape& sh) {
  return sh.width == 0 && sh.inner == 1 && sh.axis <= kgen::softmax::kTileValuesPerLane * sh.group;
}

// ------------------------------------------------------------ host launcher
// The tile kernel for p (B threads, C elements a thread, NIN inputs), its
// mode (Kernel<LOG, SEG>: log_softmax or not, slabs cut along inner or
// whole units) from p: kernel(args..., shape), as many CTAs as
// tiles up to 32 waves (the hardware balances them; kernels stride over
// the rest).  stat_bytes: shared memory a row of flat_rows tiles takes
// past the buffers (one more row than the tile holds).
template <class T, int C, int B, int NIN, template <bool, bool> class Kernel, class... Args>
cudaError_t launch(const kgen::softmax::Problem& p, cudaStream_t stream, int stat_bytes, Args... args) {
  constexpr int64_t kCapacity = int64_t{B} * C;
  const kgen::softmax::TileShape sh = kgen::softmax::tile_shape(p, kCapacity, sizeof(T));
  size_t smem = static_cast<size_t>(kgen::softmax::tile_smem_bytes(kCapacity, sizeof(T), NIN));
  if (flat_rows(sh)) smem += static_cast<size_t>(sh.per_tile + 1) * stat_bytes;
  const unsigned grid = softmax::grid_for(sh.tiles, *p.device, B, 32);
  auto go = [&](auto kernel) {
    if (smem > 48 * 1024) {
      const cudaError_t err = softmax::allow_max_smem<decltype(kernel)::value>(*p.device);
      if (err != cudaSuccess) return err;
    }
    decltype(kernel)::value<<<grid, B, smem, stream>>>(args..., sh);
    return cudaGetLastError();
  };
  if (sh.width > 0) return p.log ? go(Kernel<true, true>{}) : go(Kernel<false, true>{});
  return p.log ? go(Kernel<true, false>{}) : go(Kernel<false, false>{});
}

}  // namespace tiles
}  // namespace device
}  // namespace kgen
