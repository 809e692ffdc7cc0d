// Softmax over a dim that is not the last (inner > 1), both directions,
// without a transpose: x is (outer, axis, inner) and a "column" is one
// (outer, inner) position, its values `inner` apart.  A thread owns a pack of
// P adjacent columns (so each access is one vector load, coalesced across the
// TX lanes that own adjacent packs); the other 32 / TX lanes of a warp and
// the block's warps split the axis.  Columns are numbered over outer x inner
// so that a small inner still fills the lanes.
#pragma once

#include "kgen/device/common.cuh"
#include "kgen/device/fastdiv.cuh"
#include "kgen/device/reduce.cuh"
#include "kgen/device/softmax_common.cuh"
#include "softmax/problem.hpp"

namespace kgen {
namespace device {
namespace softmax {

// Packs of P columns (P divides inner) numbered f = o * (inner / P) + i / P.
struct Columns {
  int64_t packs_per_outer, packs, axis, inner;
  static Columns of(const kgen::softmax::Problem& p, int P) {
    return Columns{p.inner / P, p.rows * (p.inner / P), p.cols, p.inner};
  }
  __device__ __forceinline__ int64_t base(int64_t f, int P) const {
    const int64_t o = f / packs_per_outer;
    return o * axis * inner + (f - o * packs_per_outer) * P;
  }
};

// The thread's place in a strided tile: its pack lane tx and its first axis
// position ty, TY axis positions apart.
struct TilePlace {
  int tx, ty, TY;
  template <int TX>
  __device__ __forceinline__ static TilePlace make(int warps) {
    const int lane = threadIdx.x % 32;
    return TilePlace{lane % TX, static_cast<int>(threadIdx.x / 32) * (32 / TX) + lane / TX, warps * (32 / TX)};
  }
};

// The column tiles a block walks (grid-stride, TX packs a tile): calls
// f(base, col_ok) per tile with the offset of the thread's column pack and
// whether it exists (threads past the last pack still take part in the
// reductions).  Every kernel of this file walks its tiles this way.
template <int TX, int P, class F>
__device__ __forceinline__ void for_each_tile(const Columns& cs, const TilePlace& t, F&& f) {
  const int64_t tiles = (cs.packs + TX - 1) / TX;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t pack = tile * TX + t.tx;
    const bool col_ok = pack < cs.packs;
    f(col_ok ? cs.base(pack, P) : int64_t{0}, col_ok);
  }
}

constexpr int kStridedForwardBlock = 32 * kgen::softmax::kStridedMaxWarpsForward;
constexpr int kStridedBackwardBlock = 32 * kgen::softmax::kStridedMaxWarpsBackward;
constexpr int kStridedUncachedWarps = 8;

// Whether the register tile issues its loads unpredicated, all before use
// (H100, against the predicated loads: float16/bfloat16 axes of 37-127 with
// 8 positions of one value a thread 1.5x faster, (16, 19, 262144) 5%,
// (8, 8192, 64) 13%; bench/NOTES.md warp v2).  Not for
// - float32 packs of one value: the hoisted loads spilled under the
//   64-register cap of 1024-thread blocks (sm_90 ptxas, default level: 8-44
//   bytes where the predicated loads spilled 0-8) and cost more than the
//   rounds they saved (a float32 axis of 127, 32 positions a thread,
//   353 -> 526 us);
// - half-type packs of 4 at 8 positions a thread: ptxas split the hoisted
//   loads into 3-4 rounds anyway (load_rounds.py), and float16 ran 2-7%
//   slower (log_softmax over (64, 1024, 4096) dim 1: 513 -> 546 us).
template <class T, int P, int C>
inline constexpr bool kHoistTileLoads = !(sizeof(T) == 4 && P == 1) && !(sizeof(T) == 2 && P == 4 && C == 8);

// ------------------------------------------------ register tile, forward
// The column's axis values in registers (C a thread), so x is read once.
template <class T, int P, int TX, int C, bool LOG>
__global__ void __launch_bounds__(kStridedForwardBlock)
    strided_kernel(const T* x, T* y, Columns cs, int warps) {
  using Cm = compute_t<T>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Cm* scratch = reinterpret_cast<Cm*>(smem_raw);
  const TilePlace t = TilePlace::make<TX>(warps);
  const int64_t step = t.TY * cs.inner;
  for_each_tile<TX, P>(cs, t, [&](const int64_t base, const bool col_ok) {
    Cm buf[C][P], mx[P], sum[P];
#pragma unroll
    for (int j = 0; j < P; ++j) mx[j] = neg_inf<Cm>(), sum[j] = Cm(0);
    if constexpr (kHoistTileLoads<T, P, C>) {
      // Every load before any value is used: one pointer stepped TY rows at
      // a time (fewer live registers than an offset per axis position) that
      // stops at the thread's last axis position, so that positions past the
      // axis re-read it (replaced by -inf below) and no load needs a
      // predicate.  A load a position behind `if (in axis)`, folded into the
      // max at once, ptxas issued 1-6 loads and waited on them before the
      // next (bfloat16 4 packs of 8 a thread: 4 rounds of loads for 4 loads;
      // bench/NOTES.md warp v2).
      const T* xp = x + base + (t.ty < cs.axis ? t.ty * cs.inner : 0);
#pragma unroll
      for (int k = 0; k < C; ++k) {
        if (k > 0 && t.ty + k * t.TY < cs.axis) xp += step;
        load_pack<T, P>(xp, buf[k]);
      }
#pragma unroll
      for (int k = 0; k < C; ++k)
#pragma unroll
        for (int j = 0; j < P; ++j) {
          if (!col_ok || t.ty + k * t.TY >= cs.axis) buf[k][j] = neg_inf<Cm>();
          mx[j] = MaxOp()(mx[j], buf[k][j]);
        }
    } else {
      const T* xp = x + base + t.ty * cs.inner;
#pragma unroll
      for (int k = 0; k < C; ++k, xp += step) {
        if (col_ok && t.ty + k * t.TY < cs.axis) {
          load_pack<T, P>(xp, buf[k]);
#pragma unroll
          for (int j = 0; j < P; ++j) mx[j] = MaxOp()(mx[j], buf[k][j]);
        } else {
#pragma unroll
          for (int j = 0; j < P; ++j) buf[k][j] = neg_inf<Cm>();
        }
      }
    }
    column_all_reduce<TX, P>(mx, MaxOp(), scratch, warps);
#pragma unroll
    for (int k = 0; k < C; ++k)
#pragma unroll
      for (int j = 0; j < P; ++j) {
        buf[k][j] -= mx[j];
        if (LOG) {
          sum[j] += kexp(buf[k][j]);
        } else {
          buf[k][j] = kexp(buf[k][j]);
          sum[j] += buf[k][j];
        }
      }
    column_all_reduce<TX, P>(sum, SumOp(), scratch, warps);
#pragma unroll
    for (int j = 0; j < P; ++j) sum[j] = row_scale<T, LOG>(sum[j]);
    T* yp = y + base + t.ty * cs.inner;
#pragma unroll
    for (int k = 0; k < C; ++k, yp += step) {
      if (!col_ok || t.ty + k * t.TY >= cs.axis) continue;
      Cm out[P];
#pragma unroll
      for (int j = 0; j < P; ++j) out[j] = LOG ? buf[k][j] - sum[j] : buf[k][j] * sum[j];
      store_pack<T, P>(yp, out);
    }
  });
}

// ------------------------------------------------ two passes, forward
// Online max and sum over the axis, then normalise; any axis length.  U axis
// positions a thread loaded before use, for loads in flight.
template <class T, int P, int TX, bool LOG>
__global__ void __launch_bounds__(32 * kStridedUncachedWarps)
    strided_uncached_kernel(const T* x, T* y, Columns cs) {
  using Cm = compute_t<T>;
  constexpr int U = 4;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Online<Cm>* scratch = reinterpret_cast<Online<Cm>*>(smem_raw);
  const TilePlace t = TilePlace::make<TX>(kStridedUncachedWarps);
  for_each_tile<TX, P>(cs, t, [&](const int64_t base, const bool col_ok) {
    // A thread folds axis / TY values (about 10^5 over an axis of 10^6)
    // one after another: the sum is compensated (Kahan), whose lost low
    // bits are scaled with it when the max moves (float32 over 777738
    // values: 1.3e-4 relative error uncompensated)
    Online<Cm> st[P];
    Cm lost[P];
#pragma unroll
    for (int j = 0; j < P; ++j) st[j] = Online<Cm>::identity(), lost[j] = Cm(0);
    for (int64_t a0 = t.ty; col_ok && a0 < cs.axis; a0 += int64_t{t.TY} * U) {
      Cm v[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (a0 + u * t.TY < cs.axis) load_pack<T, P>(x + base + (a0 + u * t.TY) * cs.inner, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (a0 + u * t.TY < cs.axis)
#pragma unroll
          for (int j = 0; j < P; ++j) online_add_compensated(st[j], lost[j], v[u][j]);
    }
#pragma unroll
    for (int j = 0; j < P; ++j) st[j].s -= lost[j];
    column_all_reduce<TX, P>(st, OnlineOp(), scratch, kStridedUncachedWarps);
    Cm s[P];
#pragma unroll
    for (int j = 0; j < P; ++j) s[j] = row_scale<T, LOG>(st[j].s);
    for (int64_t a = t.ty; col_ok && a < cs.axis; a += t.TY) {
      Cm v[P];
      load_pack<T, P>(x + base + a * cs.inner, v);
#pragma unroll
      for (int j = 0; j < P; ++j) v[j] = LOG ? v[j] - st[j].m - s[j] : kexp(v[j] - st[j].m) * s[j];
      store_pack<T, P>(y + base + a * cs.inner, v);
    }
  });
}

// ------------------------------------------------ register tile, backward
// softmax: dx = (dy - sum(y * dy)) * y; log_softmax: dx = dy - exp(y) * sum(dy).
template <class T, int P, int TX, int C, bool LOG>
__global__ void __launch_bounds__(kStridedBackwardBlock)
    strided_backward_kernel(const T* y, const T* dy, T* dx, Columns cs, int warps) {
  using Cm = compute_t<T>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Cm* scratch = reinterpret_cast<Cm*>(smem_raw);
  const TilePlace t = TilePlace::make<TX>(warps);
  const int64_t step = t.TY * cs.inner;
  for_each_tile<TX, P>(cs, t, [&](const int64_t base, const bool col_ok) {
    Cm yv[C][P], gv[C][P], sum[P];
#pragma unroll
    for (int j = 0; j < P; ++j) sum[j] = Cm(0);
    const int64_t first = base + t.ty * cs.inner;
#pragma unroll
    for (int k = 0; k < C; ++k) {
      if (col_ok && t.ty + k * t.TY < cs.axis) {
        load_pack<T, P>(y + first + k * step, yv[k]);
        load_pack<T, P>(dy + first + k * step, gv[k]);
#pragma unroll
        for (int j = 0; j < P; ++j) sum[j] += term<LOG>(yv[k][j], gv[k][j]);
      }
    }
    column_all_reduce<TX, P>(sum, SumOp(), scratch, warps);
#pragma unroll
    for (int k = 0; k < C; ++k) {
      if (!col_ok || t.ty + k * t.TY >= cs.axis) continue;
      Cm out[P];
#pragma unroll
      for (int j = 0; j < P; ++j)
        out[j] = grad<LOG>(yv[k][j], gv[k][j], sum[j]);
      store_pack<T, P>(dx + first + k * step, out);
    }
  });
}

// ------------------------------------------------ two passes, backward
template <class T, int P, int TX, bool LOG>
__global__ void __launch_bounds__(32 * kStridedUncachedWarps)
    strided_uncached_backward_kernel(const T* y, const T* dy, T* dx, Columns cs) {
  using Cm = compute_t<T>;
  constexpr int U = 4;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Cm* scratch = reinterpret_cast<Cm*>(smem_raw);
  const TilePlace t = TilePlace::make<TX>(kStridedUncachedWarps);
  for_each_tile<TX, P>(cs, t, [&](const int64_t base, const bool col_ok) {
    Cm sum[P];
#pragma unroll
    for (int j = 0; j < P; ++j) sum[j] = Cm(0);
    for (int64_t a0 = t.ty; col_ok && a0 < cs.axis; a0 += int64_t{t.TY} * U) {
      Cm yv[U][P], gv[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (a0 + u * t.TY < cs.axis) {
          const int64_t off = base + (a0 + u * t.TY) * cs.inner;
          if (!LOG) load_pack<T, P>(y + off, yv[u]);
          load_pack<T, P>(dy + off, gv[u]);
        }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (a0 + u * t.TY < cs.axis)
#pragma unroll
          for (int j = 0; j < P; ++j) sum[j] += term<LOG>(yv[u][j], gv[u][j]);
    }
    column_all_reduce<TX, P>(sum, SumOp(), scratch, kStridedUncachedWarps);
    for (int64_t a = t.ty; col_ok && a < cs.axis; a += t.TY) {
      Cm yv[P], gv[P];
      load_pack<T, P>(y + base + a * cs.inner, yv);
      load_pack<T, P>(dy + base + a * cs.inner, gv);
#pragma unroll
      for (int j = 0; j < P; ++j) yv[j] = grad<LOG>(yv[j], gv[j], sum[j]);
      store_pack<T, P>(dx + base + a * cs.inner, yv);
    }
  });
}

// ------------------------------------------------ a thread a column pack
// Short axes (at most A positions) over any inner extent: a thread owns
// W = C / P column packs kColumnBlock packs apart (so each load is
// coalesced across the warp at any pack width, pack 1 included) and holds
// the whole axis of each in its registers.  Every load is issued before the
// first use; there is no shared memory and no exchange between threads.
// The register tile above gives a short axis one warp of 32-lane rows and
// a pack of one axis position a thread (an axis of 3 over an odd inner:
// 12 bytes in flight a thread, 32-thread blocks), which left float32
// (1, 3, 295103) at 50% of copy on the H200 (bench/NOTES.md column v1).
using kgen::softmax::kColumnBlock;

// The column packs' offsets: the division by the packs of an outer
// position by multiply and shift while the packs number under 2^31 (a
// thread divides W times a tile).
struct ColumnPlaces {
  Columns cs;
  FastDiv per_outer;
  bool fast;
  static ColumnPlaces of(const Columns& cs) {
    const bool fast = cs.packs <= INT32_MAX;
    return ColumnPlaces{cs, FastDiv(fast ? static_cast<uint32_t>(cs.packs_per_outer) : 1u), fast};
  }
  __device__ __forceinline__ int64_t base(int64_t f, int P) const {
    const int64_t o = fast ? int64_t{per_outer.div(static_cast<uint32_t>(f))} : f / cs.packs_per_outer;
    return o * cs.axis * cs.inner + (f - o * cs.packs_per_outer) * P;
  }
};

// Calls f(first) for every tile of kColumnBlock x W packs the block walks
// (grid-stride), `first` the thread's first pack of it; its others are
// kColumnBlock apart.  A pack past the last takes the last pack's offset
// (its loads stay in bounds unpredicated) and stores nothing.
template <int W, class F>
__device__ __forceinline__ void for_each_column_tile(const ColumnPlaces& cp, F&& f) {
  constexpr int64_t kTile = int64_t{kColumnBlock} * W;
  for (int64_t first = blockIdx.x * kTile + threadIdx.x; first - threadIdx.x < cp.cs.packs;
       first += int64_t{gridDim.x} * kTile)
    f(first);
}

// Loads the A axis positions of the column at `base` into v: positions past
// the axis re-read its last (their values are ignored), so that no load
// needs a predicate and ptxas issues them all before the first use.
template <class T, int P, int A>
__device__ __forceinline__ void load_column(const T* p, int64_t inner, int last, compute_t<T> (&v)[A][P]) {
#pragma unroll
  for (int a = 0; a < A; ++a) {
    load_pack<T, P>(p, v[a]);
    if (a < last) p += inner;
  }
}

template <class T, int P, int A, int W, bool LOG>
__global__ void __launch_bounds__(kColumnBlock) column_kernel(const T* x, T* y, ColumnPlaces cp) {
  using Cm = compute_t<T>;
  const int last = static_cast<int>(cp.cs.axis) - 1;
  for_each_column_tile<W>(cp, [&](const int64_t first) {
    Cm v[W][A][P];
    int64_t base[W];
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const int64_t f = first + w * kColumnBlock;
      base[w] = cp.base(f < cp.cs.packs ? f : cp.cs.packs - 1, P);
      load_column<T, P, A>(x + base[w], cp.cs.inner, last, v[w]);
    }
#pragma unroll
    for (int w = 0; w < W; ++w) {
      if (first + w * kColumnBlock >= cp.cs.packs) continue;
      Cm mx[P], sum[P];
#pragma unroll
      for (int j = 0; j < P; ++j) {
        mx[j] = v[w][0][j];
#pragma unroll
        for (int a = 1; a < A; ++a)
          if (a <= last) mx[j] = MaxOp()(mx[j], v[w][a][j]);
        sum[j] = Cm(0);
#pragma unroll
        for (int a = 0; a < A; ++a) {
          if (a > last) continue;
          v[w][a][j] -= mx[j];
          if (LOG) {
            sum[j] += kexp(v[w][a][j]);
          } else {
            v[w][a][j] = kexp(v[w][a][j]);
            sum[j] += v[w][a][j];
          }
        }
        sum[j] = row_scale<T, LOG>(sum[j]);
      }
      T* yp = y + base[w];
#pragma unroll
      for (int a = 0; a < A; ++a, yp += cp.cs.inner) {
        if (a > last) break;
        Cm out[P];
#pragma unroll
        for (int j = 0; j < P; ++j) out[j] = LOG ? v[w][a][j] - sum[j] : v[w][a][j] * sum[j];
        store_pack<T, P>(yp, out);
      }
    }
  });
}

// softmax: dx = (dy - sum(y * dy)) * y; log_softmax: dx = dy - exp(y) * sum(dy).
template <class T, int P, int A, int W, bool LOG>
__global__ void __launch_bounds__(kColumnBlock)
    column_backward_kernel(const T* y, const T* dy, T* dx, ColumnPlaces cp) {
  using Cm = compute_t<T>;
  const int last = static_cast<int>(cp.cs.axis) - 1;
  for_each_column_tile<W>(cp, [&](const int64_t first) {
    Cm yv[W][A][P], gv[W][A][P];
    int64_t base[W];
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const int64_t f = first + w * kColumnBlock;
      base[w] = cp.base(f < cp.cs.packs ? f : cp.cs.packs - 1, P);
      load_column<T, P, A>(y + base[w], cp.cs.inner, last, yv[w]);
      load_column<T, P, A>(dy + base[w], cp.cs.inner, last, gv[w]);
    }
#pragma unroll
    for (int w = 0; w < W; ++w) {
      if (first + w * kColumnBlock >= cp.cs.packs) continue;
      Cm sum[P];
#pragma unroll
      for (int j = 0; j < P; ++j) {
        sum[j] = Cm(0);
#pragma unroll
        for (int a = 0; a < A; ++a)
          if (a <= last) sum[j] += term<LOG>(yv[w][a][j], gv[w][a][j]);
      }
      T* p = dx + base[w];
#pragma unroll
      for (int a = 0; a < A; ++a, p += cp.cs.inner) {
        if (a > last) break;
        Cm out[P];
#pragma unroll
        for (int j = 0; j < P; ++j) out[j] = grad<LOG>(yv[w][a][j], gv[w][a][j], sum[j]);
        store_pack<T, P>(p, out);
      }
    }
  });
}

// ------------------------------------------------ launchers (both directions)
// One block a tile of TX packs; at most 8 waves of blocks, striding over the
// rest.  BWD picks the backward kernel; the problem's log flag the mode.
// The strided variants of both families name these directly
// (templates/softmax_strided*.cu.j2).
template <bool BWD, class T, int P, int TX, int C>
cudaError_t launch_strided_tile(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const int warps = kgen::softmax::strided_warps(p, TX, C);
  const Columns cs = Columns::of(p, P);
  const unsigned grid = grid_for(ceil_div(cs.packs, TX), *p.device, warps * 32, 8);
  const size_t scratch = static_cast<size_t>(warps + 1) * TX * P * sizeof(compute_t<T>);
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.y);
  if constexpr (BWD) {
    const T* dy = static_cast<const T*>(p.dy);
    if (p.log)
      strided_backward_kernel<T, P, TX, C, true><<<grid, warps * 32, scratch, stream>>>(x, dy, out, cs, warps);
    else
      strided_backward_kernel<T, P, TX, C, false><<<grid, warps * 32, scratch, stream>>>(x, dy, out, cs, warps);
  } else {
    if (p.log)
      strided_kernel<T, P, TX, C, true><<<grid, warps * 32, scratch, stream>>>(x, out, cs, warps);
    else
      strided_kernel<T, P, TX, C, false><<<grid, warps * 32, scratch, stream>>>(x, out, cs, warps);
  }
  return cudaGetLastError();
}

template <bool BWD, class T, int P, int TX>
cudaError_t launch_strided_two_pass(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  constexpr int kBlock = 32 * kStridedUncachedWarps;
  const Columns cs = Columns::of(p, P);
  const unsigned grid = grid_for(ceil_div(cs.packs, TX), *p.device, kBlock, 8);
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.y);
  if constexpr (BWD) {
    const size_t scratch = size_t{kStridedUncachedWarps + 1} * TX * P * sizeof(compute_t<T>);
    const T* dy = static_cast<const T*>(p.dy);
    if (p.log)
      strided_uncached_backward_kernel<T, P, TX, true><<<grid, kBlock, scratch, stream>>>(x, dy, out, cs);
    else
      strided_uncached_backward_kernel<T, P, TX, false><<<grid, kBlock, scratch, stream>>>(x, dy, out, cs);
  } else {
    const size_t scratch = size_t{kStridedUncachedWarps + 1} * TX * P * sizeof(Online<compute_t<T>>);
    if (p.log)
      strided_uncached_kernel<T, P, TX, true><<<grid, kBlock, scratch, stream>>>(x, out, cs);
    else
      strided_uncached_kernel<T, P, TX, false><<<grid, kBlock, scratch, stream>>>(x, out, cs);
  }
  return cudaGetLastError();
}

// A thread a column pack: C / P packs a thread, 128-thread blocks, at most
// 32 waves of them striding over the rest.
template <bool BWD, class T, int P, int A, int C>
cudaError_t launch_column(const void* problem, cudaStream_t stream) {
  static_assert(C % P == 0, "a whole number of packs a thread");
  constexpr int W = C / P;
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const ColumnPlaces cp = ColumnPlaces::of(Columns::of(p, P));
  const unsigned grid = grid_for(ceil_div(cp.cs.packs, int64_t{kColumnBlock} * W), *p.device, kColumnBlock, 32);
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.y);
  if constexpr (BWD) {
    const T* dy = static_cast<const T*>(p.dy);
    if (p.log)
      column_backward_kernel<T, P, A, W, true><<<grid, kColumnBlock, 0, stream>>>(x, dy, out, cp);
    else
      column_backward_kernel<T, P, A, W, false><<<grid, kColumnBlock, 0, stream>>>(x, dy, out, cp);
  } else {
    if (p.log)
      column_kernel<T, P, A, W, true><<<grid, kColumnBlock, 0, stream>>>(x, out, cp);
    else
      column_kernel<T, P, A, W, false><<<grid, kColumnBlock, 0, stream>>>(x, out, cp);
  }
  return cudaGetLastError();
}

// The generic variant of a direction: its row kernel (RowLaunch: the
// uncached tier at pack 1) for the last dim, the strided two-pass kernel at
// pack 1 otherwise.
template <bool BWD, class T, cudaError_t (*RowLaunch)(const void*, cudaStream_t)>
cudaError_t launch_generic_of(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  if (p.inner == 1) return RowLaunch(problem, stream);
  return launch_strided_two_pass<BWD, T, 1, 32>(problem, stream);
}

}  // namespace softmax
}  // namespace device
}  // namespace kgen
