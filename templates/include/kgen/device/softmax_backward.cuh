// Backward of softmax / log-softmax, from the forward's output y and dy:
//   softmax:     dx = (dy - sum(y * dy)) * y
//   log_softmax: dx = dy - exp(y) * sum(dy)
// The forward's tiers (softmax.cuh) holding two inputs where it holds one;
// one reduction (a sum) where it has two.  The strided kernels are in
// softmax_strided.cuh.
#pragma once

#include "kgen/device/common.cuh"
#include "kgen/device/reduce.cuh"
#include "kgen/device/row_slice.cuh"
#include "kgen/device/softmax_common.cuh"
#include "kgen/device/softmax_strided.cuh"
#include "kgen/device/tile.cuh"
#include "softmax/problem.hpp"

namespace kgen {
namespace device {
namespace softmax_backward {

using softmax::ceil_div;
using softmax::grid_for;
using softmax::lane_group_grid;
using softmax::kBatchPacks;
using softmax::kMinBlocks;
using softmax::kSplitMinBlocks;
using softmax::kSplitShiftMinBlocks;
using softmax::LaneGroups;

using softmax::grad;
using softmax::term;

// A pack's dx from its y and dy as raw words, for the 16-byte stores.
template <class T, bool LOG>
__device__ __forceinline__ rows::Raw grad_pack(const rows::Raw& yp, const rows::Raw& gp, compute_t<T> sum) {
  compute_t<T> o[rows::kVec<T>];
#pragma unroll
  for (int j = 0; j < rows::kVec<T>; ++j) o[j] = grad<LOG>(rows::value<T>(yp, j), rows::value<T>(gp, j), sum);
  return rows::raw_of<T>(o);
}

// The sum term of each of a lane group's R rows (V values of y and dy a
// lane, empty slots 0: no term) over its G lanes; the warp and span tiers'
// counterpart of the forward's group_rows.
template <int G, bool LOG, class Cm, int R, int V>
__device__ __forceinline__ void group_terms(const Cm (&yb)[R][V], const Cm (&gb)[R][V], Cm (&sum)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    sum[r] = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) sum[r] += term<LOG>(yb[r][k], gb[r][k]);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) sum[r] = group_all_reduce<G>(sum[r], SumOp());
}

// ---------------------------------------------------------------- warp tier
// As the forward's warp tier: a group of G lanes owns R rows 32 / G apart,
// C values of each of y and dy a lane; padding lanes hold 0 (no term).
template <class T, int P, int C, int G, int R, bool PAD, bool LOG, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    warp_kernel(const T* y, const T* dy, T* dx, int64_t rows, int cols) {
  using Cm = compute_t<T>;
  static_assert(C % P == 0 && 32 % G == 0, "bad warp tier shape");
  constexpr int kPacks = C / P;
  const LaneGroups<G, R, BLOCK> lg;
  const int g_lane = lg.g_lane;

  Cm yb[R][C], gb[R][C];
  for (int64_t base = lg.first; base < rows; base += lg.step) {
    const auto row = [&](int r) { return lg.row(base, r); };
    Cm sum[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool row_ok = row(r) < rows;
      const int64_t off = (row_ok ? row(r) : 0) * cols;
#pragma unroll
      for (int i = 0; i < kPacks; ++i) {
        const int col = (i * G + g_lane) * P;
        if (row_ok && (!PAD || col < cols)) {
          load_pack<T, P>(y + off + col, &yb[r][i * P]);
          load_pack<T, P>(dy + off + col, &gb[r][i * P]);
        } else {
#pragma unroll
          for (int j = 0; j < P; ++j) yb[r][i * P + j] = gb[r][i * P + j] = Cm(0);
        }
      }
    }
    group_terms<G, LOG>(yb, gb, sum);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (row(r) >= rows) continue;
      T* out = dx + row(r) * cols;
#pragma unroll
      for (int i = 0; i < kPacks; ++i) {
        const int col = (i * G + g_lane) * P;
        if (PAD && col >= cols) continue;
        Cm o[P];
#pragma unroll
        for (int j = 0; j < P; ++j) o[j] = grad<LOG>(yb[r][i * P + j], gb[r][i * P + j], sum[r]);
        store_pack<T, P>(out + col, o);
      }
    }
  }
}

// ---------------------------------------------------------------- span tier
// As the forward's span tier (softmax.cuh span_kernel): a group of G lanes
// holds the aligned bodies of a row of y and of dy in 16-byte packs, K a
// lane, and their heads and tails an element a lane; dy lies as y does
// modulo 16 bytes (selection), dx is stored in the same packs when it
// does too, else in its own through shared memory (store_span_rows).
// Empty slots hold 0 (no term).
template <class T, int K, int G, int R, bool LOG, int BLOCK>
__global__ void __launch_bounds__(BLOCK) span_kernel(const T* y, const T* dy, T* dx, int64_t rows, int cols) {
  using Cm = compute_t<T>;
  using Span = rows::GroupSpan<T, K, G>;
  constexpr int P = Span::P, E = Span::E, V = K * P + E;
  const LaneGroups<G, R, BLOCK> lg;
  const bool vec = rows::congruent(y, dx);
  T* const stage = rows::warp_span_stage<T, K, G>();  // dx apart from y: the launch gives it
  for (int64_t base = lg.first; base < rows; base += lg.step) {
    const auto row = [&](int r) { return lg.row(base, r); };
    Span sp[R];
    rows::Raw yp[R][K], gp[R][K];
    T ye[R][E], ge[R][E];
    // every load before any use (softmax.cuh span_kernel)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t off = (row(r) < rows ? row(r) : 0) * cols;
      sp[r] = Span::of(y + off, cols, lg.g_lane);
#pragma unroll
      for (int i = 0; i < K; ++i) {
        yp[r][i] = rows::load_raw(y + off + sp[r].pack_at(i), true);
        gp[r][i] = rows::load_raw(dy + off + sp[r].pack_at(i), true);
      }
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const int c = sp[r].edge_at(e) < cols ? sp[r].edge_at(e) : 0;
        ye[r][e] = y[off + c];
        ge[r][e] = dy[off + c];
      }
    }
    Cm yb[R][V], gb[R][V], sum[R];
    const rows::Raw zero = rows::Raw{{0, 0, 0, 0}};
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int i = 0; i < K; ++i) {
        const rows::Raw yv = sp[r].has(i) ? yp[r][i] : zero, gv = sp[r].has(i) ? gp[r][i] : zero;
#pragma unroll
        for (int j = 0; j < P; ++j) {
          yb[r][i * P + j] = rows::value<T>(yv, j);
          gb[r][i * P + j] = rows::value<T>(gv, j);
        }
      }
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const bool in = sp[r].edge_at(e) < cols;
        yb[r][K * P + e] = in ? to_compute(ye[r][e]) : Cm(0);
        gb[r][K * P + e] = in ? to_compute(ge[r][e]) : Cm(0);
      }
    }
    group_terms<G, LOG>(yb, gb, sum);
    rows::store_span_rows<T, K, G, R, BLOCK>(dx, rows, cols, base, lg, sp, vec, stage, [&](int r, int v) {
      return grad<LOG>(yb[r][v], gb[r][v], sum[r]);
    });
  }
}

// ---------------------------------------------------------------- smem tier
// One block a row; y and dy cached in shared memory in their dtype, each
// pack-major (element j of pack k at j * packs + k) for conflict-free banks.
template <class T, int P, bool LOG, int BLOCK>
__global__ void __launch_bounds__(BLOCK, kMinBlocks<BLOCK>)
    smem_kernel(const T* y, const T* dy, T* dx, int64_t rows, int cols) {
  using Cm = compute_t<T>;
  // 16 bytes of each input in flight (32 a thread, as the forward): with 32
  // of each, bfloat16 spilled under the 32-register cap of full residency
  // and ran at 42-46% of copy (H100, bench/NOTES.md v4)
  constexpr int U = kBatchPacks<T, P, 16>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* ys = reinterpret_cast<T*>(smem_raw);
  T* gs = ys + cols;
  const int packs = cols / P;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t off = row * cols;
    Cm thread_sum = 0;
    for (int k0 = threadIdx.x; k0 < packs; k0 += BLOCK * U) {
      Pack<T, P> yv[U], gv[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) {
          yv[u] = *reinterpret_cast<const Pack<T, P>*>(y + off + (k0 + u * BLOCK) * P);
          gv[u] = *reinterpret_cast<const Pack<T, P>*>(dy + off + (k0 + u * BLOCK) * P);
        }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs)
#pragma unroll
          for (int j = 0; j < P; ++j) {
            ys[j * packs + k0 + u * BLOCK] = yv[u].v[j];
            gs[j * packs + k0 + u * BLOCK] = gv[u].v[j];
            thread_sum += term<LOG>(to_compute(yv[u].v[j]), to_compute(gv[u].v[j]));
          }
    }
    const Cm sum = block_all_reduce<BLOCK>(thread_sum, SumOp(), Cm(0));
    T* out = dx + off;
    for (int k = threadIdx.x; k < packs; k += BLOCK) {
      Cm o[P];
#pragma unroll
      for (int j = 0; j < P; ++j)
        o[j] = grad<LOG>(to_compute(ys[j * packs + k]), to_compute(gs[j * packs + k]), sum);
      store_pack<T, P>(out + k * P, o);
    }
  }
}

// ------------------------------------------------------------ uncached tier
// One block a row, two passes over global memory (y and dy read twice); any
// length.
template <class T, int P, bool LOG, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    uncached_kernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols) {
  using Cm = compute_t<T>;
  constexpr int U = kBatchPacks<T, P, 16>;
  const int64_t packs = cols / P;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t off = row * cols;
    Cm thread_sum = 0;
    for (int64_t k0 = threadIdx.x; k0 < packs; k0 += int64_t{BLOCK} * U) {
      Cm yv[U][P], gv[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) {
          if (!LOG) load_pack<T, P>(y + off + (k0 + u * BLOCK) * P, yv[u]);
          load_pack<T, P>(dy + off + (k0 + u * BLOCK) * P, gv[u]);
        }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs)
#pragma unroll
          for (int j = 0; j < P; ++j) thread_sum += term<LOG>(yv[u][j], gv[u][j]);
    }
    const Cm sum = block_all_reduce<BLOCK>(thread_sum, SumOp(), Cm(0));
    for (int64_t k0 = threadIdx.x; k0 < packs; k0 += int64_t{BLOCK} * U) {
      Cm yv[U][P], gv[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) {
          load_pack<T, P>(y + off + (k0 + u * BLOCK) * P, yv[u]);
          load_pack<T, P>(dy + off + (k0 + u * BLOCK) * P, gv[u]);
        }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (k0 + u * BLOCK >= packs) continue;
#pragma unroll
        for (int j = 0; j < P; ++j) yv[u][j] = grad<LOG>(yv[u][j], gv[u][j], sum);
        store_pack<T, P>(dx + off + (k0 + u * BLOCK) * P, yv[u]);
      }
    }
  }
}

// ------------------------------------------------------- block and cluster tiers
// The forward's layout (row_slice.cuh) holding y and dy: both read once in
// 16-byte packs laid out by y's alignment (dy congruent to y mod 16 in
// vectors, else element by element), one sum across the cluster.  dx
// congruent to y leaves in the same packs; the half types' dx off y's
// boundaries (SHIFT, its own instantiation as in the forward) leaves in
// dx's own 16-byte packs, from y and dy shifted across neighbouring lanes
// (rows::shift_next); float32 and float64 an element a store.
template <class T, int V, int B, int K, bool LOG, bool SHIFT>
__global__ void __launch_bounds__(B, rows::kSliceMinBlocks<B>) slice_kernel(const T* y, const T* dy, T* dx, int64_t cols) {
  if constexpr (K > 1 && !rows::kClusters) return;
  using Cm = compute_t<T>;
  constexpr int P = rows::kVec<T>;
  if constexpr (K > 1) rows::ClusterPush<Cm, K>::begin();
  const int rank = rows::cluster_rank<K>();
  const int64_t off = blockIdx.x / K * cols;
  const rows::Slice s = rows::slice_of<T, B>(y + off, cols, rank, K);
  const bool vec_dy = rows::congruent(y, dy), vec_dx = rows::congruent(y, dx);
  rows::Raw yv[V], gv[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const bool has = s.has<B>(i);
    const int64_t at = off + s.col<B>(i, P);
    yv[i] = has ? rows::load_raw(y + at, true) : rows::raw_fill(T(0.0f));
    gv[i] = has ? rows::load_raw(dy + at, vec_dy) : rows::raw_fill(T(0.0f));
  }
  const Cm ye = s.edge >= 0 ? to_compute(y[off + s.edge]) : Cm(0);
  const Cm ge = s.edge >= 0 ? to_compute(dy[off + s.edge]) : Cm(0);
  Cm sum = term<LOG>(ye, ge);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    Cm part = 0;
#pragma unroll
    for (int j = 0; j < P; ++j) part += term<LOG>(rows::value<T>(yv[i], j), rows::value<T>(gv[i], j));
    sum += part;
  }
  rows::keep_raw(yv);
  rows::keep_raw(gv);
  sum = rows::slice_all_reduce<B, K>(sum, SumOp(), Cm(0));
  if constexpr (!SHIFT) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if (!s.has<B>(i)) continue;
      Cm o[P];
#pragma unroll
      for (int j = 0; j < P; ++j) o[j] = grad<LOG>(rows::value<T>(yv[i], j), rows::value<T>(gv[i], j), sum);
      rows::store_values(dx + off + s.col<B>(i, P), o, vec_dx);
    }
    if (s.edge >= 0) dx[off + s.edge] = from_compute<T>(grad<LOG>(ye, ge, sum));
  } else {
    // as the forward's SHIFT (softmax.cuh slice_kernel): the output pack at
    // dx's boundary, `lead` elements into this pack, from this pack's inputs
    // and the next's; the slice's first and last packs in part an element
    // at a time.  The edge first: its values then leave the registers the
    // packs' shifts need (the non-log mode spilled 40 bytes at 64 registers
    // with the edge last).
    if (s.edge >= 0) dx[off + s.edge] = from_compute<T>(grad<LOG>(ye, ge, sum));
    const auto dx_of = [&](const rows::Raw& yp, const rows::Raw& gp) { return grad_pack<T, LOG>(yp, gp, sum); };
    const int lead = rows::store_lead(y, dx);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const bool has = s.has<B>(i);
      const int64_t k = int64_t{i} * B + threadIdx.x;  // the pack's index in the slice
      const bool next = k + 1 < s.count;
      const int64_t at = off + s.col<B>(i, P);
      const rows::Raw sy = rows::shift_next<T>(yv[i], has, next, y + at + P, lead);
      const rows::Raw sg = rows::shift_next<T>(gv[i], has, next, dy + at + P, lead, vec_dy);
      if (!has) continue;
      rows::store_shifted(dx + at, k, next, lead, [&] { return dx_of(sy, sg); }, [&] { return dx_of(yv[i], gv[i]); });
    }
  }
}

// --------------------------------------------------------------- split tier
// The forward's split tier (softmax.cuh) over y and dy: the first kernel
// leaves each CTA's partial sum of the term in the workspace, the second
// adds its row's partials in a fixed order and writes dx, CTAs and packs
// in reverse order.
struct RawPair {
  rows::Raw y, dy;
};

template <class T, bool LOG>
__device__ __forceinline__ compute_t<T> term_of_pack(const RawPair& v) {
  compute_t<T> part = 0;
#pragma unroll
  for (int j = 0; j < rows::kVec<T>; ++j) part += term<LOG>(rows::value<T>(v.y, j), rows::value<T>(v.dy, j));
  return part;
}

template <class T, int B, int U, bool LOG>
__global__ void __launch_bounds__(B, kSplitMinBlocks<T, B>)
    split_partial_kernel(const T* y, const T* dy, int64_t cols, int64_t parts, compute_t<T>* partial) {
  using Cm = compute_t<T>;
  constexpr int P = rows::kVec<T>;
  const int64_t off = blockIdx.x / parts * cols;
  const rows::Slice s = rows::slice_of<T, B>(y + off, cols, static_cast<int>(blockIdx.x % parts), parts);
  const bool vec_dy = rows::congruent(y, dy);
  Cm sum = s.edge >= 0 ? term<LOG>(to_compute(y[off + s.edge]), to_compute(dy[off + s.edge])) : Cm(0);
  rows::stream_packs<B, U, false>(
      s.count,
      [&](int64_t k) {
        const int64_t at = off + s.at(k, P);
        return RawPair{rows::load_raw(y + at, true), rows::load_raw(dy + at, vec_dy)};
      },
      [&](const RawPair& v, int64_t) { sum += term_of_pack<T, LOG>(v); });
  sum = block_all_reduce<B>(sum, SumOp(), Cm(0));
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// SHIFT (the half types, dx off y's 16-byte boundaries): dx's packs from
// the inputs shifted across neighbouring lanes, as the slice kernel's.
template <class T, int B, int U, bool LOG, bool SHIFT>
__global__ void __launch_bounds__(B, kSplitShiftMinBlocks<T, B, SHIFT>)
    split_apply_kernel(const T* y, const T* dy, T* dx, int64_t cols, int64_t parts, const compute_t<T>* partial) {
  using Cm = compute_t<T>;
  constexpr int P = rows::kVec<T>;
  const int64_t cta = gridDim.x - 1 - blockIdx.x, row = cta / parts, off = row * cols;
  Cm sum = 0;
  for (int64_t g = threadIdx.x; g < parts; g += B) sum += partial[row * parts + g];
  sum = block_all_reduce<B>(sum, SumOp(), Cm(0));
  const rows::Slice s = rows::slice_of<T, B>(y + off, cols, static_cast<int>(cta % parts), parts);
  const bool vec_dy = rows::congruent(y, dy), vec_dx = rows::congruent(y, dx);
  const auto load = [&](int64_t k) {
    const int64_t at = off + s.at(k, P);
    return RawPair{rows::load_raw(y + at, true), rows::load_raw(dy + at, vec_dy)};
  };
  if constexpr (!SHIFT) {
    rows::stream_packs<B, U, true>(s.count, load, [&](const RawPair& v, int64_t k) {
      Cm o[P];
#pragma unroll
      for (int j = 0; j < P; ++j) o[j] = grad<LOG>(rows::value<T>(v.y, j), rows::value<T>(v.dy, j), sum);
      rows::store_values(dx + off + s.at(k, P), o, vec_dx);
    });
  } else {
    const auto dx_of = [&](const rows::Raw& yp, const rows::Raw& gp) { return grad_pack<T, LOG>(yp, gp, sum); };
    const int lead = rows::store_lead(y, dx);
    rows::stream_packs_all<B, U, true>(s.count, load, [&](const RawPair& v, int64_t k, bool has) {
      const bool next = k + 1 < s.count;
      const int64_t at = off + s.at(k, P);
      const rows::Raw sy = rows::shift_next<T>(v.y, has, next, y + at + P, lead);
      const rows::Raw sg = rows::shift_next<T>(v.dy, has, next, dy + at + P, lead, vec_dy);
      if (!has) return;
      rows::store_shifted(dx + at, k, next, lead, [&] { return dx_of(sy, sg); }, [&] { return dx_of(v.y, v.dy); });
    });
  }
  if (s.edge >= 0)
    dx[off + s.edge] = from_compute<T>(grad<LOG>(to_compute(y[off + s.edge]), to_compute(dy[off + s.edge]), sum));
}

// The split tier over a dim that is not the last, as the forward's
// (softmax_common.cuh's StridedSplitPlace): each thread's sum of
// term(y, dy) over its share of the CTA's run, the column's sums folded,
// one partial a CTA and column; then dx from the folded partials.  Half
// the forward's values in flight, of each input (at the forward's count
// the second kernel spilled 8-16 bytes under 64 registers).
template <class T, int B, bool LOG>
__global__ void __launch_bounds__(B, softmax::kStridedSplitMinBlocks<B>)
    strided_split_partial_kernel(const T* y, const T* dy, int64_t axis, int64_t inner, int64_t parts,
                                 compute_t<T>* partial) {
  using Cm = compute_t<T>;
  constexpr int U = softmax::kStridedSplitLoads<T> / 2;  // of y and of dy: as many loads as the forward
  __shared__ Cm scratch[B];
  const auto s = softmax::StridedSplitPlace::make(blockIdx.x % parts, axis, inner, parts, B);
  const int64_t base = blockIdx.x / parts * axis * inner + s.col;
  const int64_t step = int64_t{s.rows} * inner;  // between a thread's slab rows
  Cm sum = 0;
  if (s.active)
    for (int64_t a = s.a0 + s.row; a < s.a1; a += int64_t{s.rows} * U) {
      const T* ya = y + base + a * inner;
      const T* da = dy + base + a * inner;
      Cm v[U], g[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const bool in = a + int64_t{u} * s.rows < s.a1;
        v[u] = in ? to_compute(ya[u * step]) : Cm(0);
        g[u] = in ? to_compute(da[u * step]) : Cm(0);
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (a + int64_t{u} * s.rows < s.a1) sum += term<LOG>(v[u], g[u]);
    }
  sum = softmax::fold_columns(sum, s, scratch, SumOp());
  if (static_cast<int>(threadIdx.x) < s.in) partial[blockIdx.x * inner + threadIdx.x] = sum;
}

template <class T, int B, bool LOG>
__global__ void __launch_bounds__(B, softmax::kStridedSplitMinBlocks<B>)
    strided_split_apply_kernel(const T* y, const T* dy, T* dx, int64_t axis, int64_t inner, int64_t parts,
                               const compute_t<T>* partial) {
  using Cm = compute_t<T>;
  constexpr int U = softmax::kStridedSplitLoads<T> / 2;  // of y and of dy: as many loads as the forward
  __shared__ Cm scratch[B];
  const int64_t cta = gridDim.x - 1 - blockIdx.x, outer = cta / parts;
  const auto s = softmax::StridedSplitPlace::make(cta % parts, axis, inner, parts, B);
  // thread (row, col) sums parts row, row + rows, ... of its column; then
  // the rows are folded
  Cm sum = 0;
  if (s.active)
    for (int64_t g = s.row; g < parts; g += s.rows) sum += partial[(outer * parts + g) * inner + s.col];
  sum = softmax::fold_columns(sum, s, scratch, SumOp());
  if (!s.active) return;
  const int64_t base = outer * axis * inner + s.col;
  const int64_t step = int64_t{s.rows} * inner;
  for (int64_t a = s.a0 + s.row; a < s.a1; a += int64_t{s.rows} * U) {
    const int64_t at = base + a * inner;
    Cm v[U], g[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (a + int64_t{u} * s.rows < s.a1) v[u] = to_compute(y[at + u * step]), g[u] = to_compute(dy[at + u * step]);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (a + int64_t{u} * s.rows < s.a1) dx[at + u * step] = from_compute<T>(grad<LOG>(v[u], g[u], sum));
  }
}

// ---------------------------------------------------------------- tile tier
// As the forward's: y and dy staged through shared memory, each column's
// sum and dx computed there (dx over y's copy), dx stored as y was read;
// up to kTileValuesPerLane values a lane read once, longer columns twice.
template <class T, int B, int U, bool LOG, bool SEG>
__global__ void __launch_bounds__(B, tiles::kTileMinBlocks<T, B, SEG, 2>)
    tile_kernel(const T* y, const T* dy, T* dx, kgen::softmax::TileShape sh) {
  using Cm = compute_t<T>;
  constexpr int K = kgen::softmax::kTileValuesPerLane;
  const T* const in[2] = {y, dy};
  tiles::run_tiles<T, B, U, 2, SEG>(in, dx, sh, [&](const tiles::Place<T, SEG>* pl, T* const* buf, int columns) {
    T* yb = buf[0];
    const T* db = buf[1];
    const tiles::Place<T, SEG> py = pl[0], pd = pl[1];
    const int axis = static_cast<int>(sh.axis);
    const int g = sh.group;
    const bool one_chunk = axis <= K * g;
    tiles::for_each_column<B, SEG>(sh, columns, [&](int col, bool ok, int lane) {
      if (one_chunk) {
        Cm ry[K], rd[K];
        Cm s = 0;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int a = lane + k * g;
          const bool in_axis = ok && a < axis;
          ry[k] = in_axis ? to_compute(yb[py.at(col, a)]) : Cm(0);
          rd[k] = in_axis ? to_compute(db[pd.at(col, a)]) : Cm(0);
          s += term<LOG>(ry[k], rd[k]);
          if ((k + 1) * g >= axis) break;  // slots past the axis: the same for every lane
        }
        s = tiles::group_reduce(s, SumOp(), g);
        if (!ok) return;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int a = lane + k * g;
          if (a < axis) yb[py.at(col, a)] = from_compute<T>(grad<LOG>(ry[k], rd[k], s));
          if ((k + 1) * g >= axis) break;
        }
        return;
      }
      Cm s = 0;
      if (ok)
        for (int a = lane; a < axis; a += g) s += term<LOG>(to_compute(yb[py.at(col, a)]), to_compute(db[pd.at(col, a)]));
      s = tiles::group_reduce(s, SumOp(), g);
      if (!ok) return;
      for (int a = lane; a < axis; a += g) {
        T& v = yb[py.at(col, a)];
        v = from_compute<T>(grad<LOG>(to_compute(v), to_compute(db[pd.at(col, a)]), s));
      }
    });
  });
}

// ------------------------------------------------------------ host launchers
template <class T, int P, int C, int G, int R, bool PAD>
cudaError_t launch_warp(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  constexpr int kBlock = 128;
  const unsigned grid = lane_group_grid<G, R, kBlock>(p.rows, *p.device);
  const T* y = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  T* dx = static_cast<T*>(p.y);
  const int cols = static_cast<int>(p.cols);
  if (p.log)
    warp_kernel<T, P, C, G, R, PAD, true, kBlock><<<grid, kBlock, 0, stream>>>(y, dy, dx, p.rows, cols);
  else
    warp_kernel<T, P, C, G, R, PAD, false, kBlock><<<grid, kBlock, 0, stream>>>(y, dy, dx, p.rows, cols);
  return cudaGetLastError();
}

template <class T, int C, int G, int R>
cudaError_t launch_span(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  constexpr int kBlock = 128, K = C / rows::kVec<T>;
  const unsigned grid = lane_group_grid<G, R, kBlock>(p.rows, *p.device);
  const T* y = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  T* dx = static_cast<T*>(p.y);
  const int cols = static_cast<int>(p.cols);
  const size_t stage = rows::span_stage_bytes<T, K, G, kBlock>(y, dx);
  if (p.log)
    span_kernel<T, K, G, R, true, kBlock><<<grid, kBlock, stage, stream>>>(y, dy, dx, p.rows, cols);
  else
    span_kernel<T, K, G, R, false, kBlock><<<grid, kBlock, stage, stream>>>(y, dy, dx, p.rows, cols);
  return cudaGetLastError();
}

template <class T, int P, int BLOCK>
cudaError_t launch_smem(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const DeviceInfo& d = *p.device;
  const size_t smem = static_cast<size_t>(kgen::softmax::smem_row_bytes(p, sizeof(T)));
  const int64_t resident = d.sm_count * kgen::softmax::smem_blocks_per_sm(p, BLOCK, sizeof(T));
  const unsigned grid = static_cast<unsigned>(p.rows < resident ? p.rows : resident);
  constexpr auto kGrad = smem_kernel<T, P, false, BLOCK>;
  constexpr auto kLogGrad = smem_kernel<T, P, true, BLOCK>;
  if (smem + kgen::softmax::kSmemReserve > 48 * 1024) {  // static scratch counts too
    const cudaError_t err = p.log ? softmax::allow_max_smem<kLogGrad>(d) : softmax::allow_max_smem<kGrad>(d);
    if (err != cudaSuccess) return err;
  }
  (p.log ? kLogGrad : kGrad)<<<grid, BLOCK, smem, stream>>>(
      static_cast<const T*>(p.x), static_cast<const T*>(p.dy), static_cast<T*>(p.y), p.rows,
      static_cast<int>(p.cols));
  return cudaGetLastError();
}

template <class T, int P, int BLOCK>
cudaError_t launch_uncached(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const unsigned grid = grid_for(p.rows, *p.device, BLOCK, 1);
  const T* y = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  T* dx = static_cast<T*>(p.y);
  if (p.log)
    uncached_kernel<T, P, true, BLOCK><<<grid, BLOCK, 0, stream>>>(y, dy, dx, p.rows, p.cols);
  else
    uncached_kernel<T, P, false, BLOCK><<<grid, BLOCK, 0, stream>>>(y, dy, dx, p.rows, p.cols);
  return cudaGetLastError();
}

template <class T, int V, int B, int K, bool SHIFT>
cudaError_t launch_slice_kernel(const kgen::softmax::Problem& p, const T* y, const T* dy, T* dx, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(p.rows * K);
  return p.log ? rows::launch_clusters<K, slice_kernel<T, V, B, K, true, SHIFT>>(*p.device, grid, B, 0, stream, y, dy,
                                                                                 dx, p.cols)
               : rows::launch_clusters<K, slice_kernel<T, V, B, K, false, SHIFT>>(*p.device, grid, B, 0, stream, y,
                                                                                  dy, dx, p.cols);
}

template <class T, int V, int B, int K>
cudaError_t launch_slice(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const T* y = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  T* dx = static_cast<T*>(p.y);
  if constexpr (sizeof(T) == 2)
    if (!rows::congruent(y, dx)) return launch_slice_kernel<T, V, B, K, true>(p, y, dy, dx, stream);
  return launch_slice_kernel<T, V, B, K, false>(p, y, dy, dx, stream);
}

template <class T, int B, bool LOG>
cudaError_t launch_split_as(const kgen::softmax::Problem& p, cudaStream_t stream) {
  constexpr int U = softmax::kSplitLoads;
  const int64_t parts = kgen::softmax::split_parts(p, B, sizeof(T));
  const unsigned grid = static_cast<unsigned>(p.rows * parts);
  const T* y = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  auto* partial = static_cast<compute_t<T>*>(p.workspace);
  if (p.inner > 1) {  // a dim that is not the last
    strided_split_partial_kernel<T, B, LOG><<<grid, B, 0, stream>>>(y, dy, p.cols, p.inner, parts, partial);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    strided_split_apply_kernel<T, B, LOG><<<grid, B, 0, stream>>>(y, dy, static_cast<T*>(p.y), p.cols, p.inner,
                                                                  parts, partial);
    return cudaGetLastError();
  }
  split_partial_kernel<T, B, U, LOG><<<grid, B, 0, stream>>>(y, dy, p.cols, parts, partial);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  T* dx = static_cast<T*>(p.y);
  if constexpr (sizeof(T) == 2)
    if (!rows::congruent(y, dx)) {
      split_apply_kernel<T, B, U, LOG, true><<<grid, B, 0, stream>>>(y, dy, dx, p.cols, parts, partial);
      return cudaGetLastError();
    }
  split_apply_kernel<T, B, U, LOG, false><<<grid, B, 0, stream>>>(y, dy, dx, p.cols, parts, partial);
  return cudaGetLastError();
}
template <class T, int B>
cudaError_t launch_split(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  return p.log ? launch_split_as<T, B, true>(p, stream) : launch_split_as<T, B, false>(p, stream);
}

template <class T, int B, int U>
struct TileKernels {
  template <bool LOG, bool SEG>
  struct Of {
    static constexpr auto value = tile_kernel<T, B, U, LOG, SEG>;
  };
};

template <class T, int C, int B>
cudaError_t launch_tile(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  return tiles::launch<T, C, B, 2, TileKernels<T, B, C / rows::kVec<T>>::template Of>(
      p, stream, 0, static_cast<const T*>(p.x), static_cast<const T*>(p.dy), static_cast<T*>(p.y));
}

// Pack 1: the uncached row kernel for the last dim, the strided two-pass
// kernel otherwise.
template <class T>
cudaError_t launch_generic(const void* problem, cudaStream_t stream) {
  return softmax::launch_generic_of<true, T, launch_uncached<T, 1, 256>>(problem, stream);
}

}  // namespace softmax_backward
}  // namespace device
}  // namespace kgen
