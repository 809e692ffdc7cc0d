// Softmax / log-softmax: the kernels of every tier of the forward family and
// their host launchers.  Generated variants instantiate these with fixed
// parameters (templates/softmax_*.cu.j2); no logic lives there.  The row
// kernels read x through a load functor (softmax_load.cuh), so the masked
// softmax is the same kernels with another load.
#pragma once

#include "kgen/device/common.cuh"
#include "kgen/device/reduce.cuh"
#include "kgen/device/row_slice.cuh"
#include "kgen/device/softmax_common.cuh"
#include "kgen/device/softmax_load.cuh"
#include "kgen/device/softmax_strided.cuh"
#include "kgen/device/tile.cuh"
#include "softmax/problem.hpp"

namespace kgen {
namespace device {
namespace softmax {

// ---------------------------------------------------------------- warp tier
// R rows whose values a group of G lanes holds, V a lane (-inf where a lane
// holds none of the row): mx and sum each row's max and sum of exps over
// the group, and buf x - max (LOG) or exp(x - max).
template <class Max, int G, bool LOG, int R, int V, class Cm>
__device__ __forceinline__ void group_rows(Cm (&buf)[R][V], Cm (&mx)[R], Cm (&sum)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    mx[r] = neg_inf<Cm>();
#pragma unroll
    for (int k = 0; k < V; ++k) mx[r] = Max()(mx[r], buf[r][k]);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    mx[r] = group_all_reduce<G>(mx[r], Max());
    sum[r] = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      buf[r][k] -= mx[r];
      if (LOG) {
        sum[r] += kexp(buf[r][k]);
      } else {
        buf[r][k] = kexp(buf[r][k]);
        sum[r] += buf[r][k];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) sum[r] = group_all_reduce<G>(sum[r], SumOp());
}

// No register cap: with every load of a row in flight before the first use
// (below), 5 blocks of 128 an SM (92-100 registers at 64 values a lane)
// have 8 16-byte loads a lane outstanding.  The cap of 80 registers that
// the log mode had when its loads waited one behind another (float16 rows
// of 2048: 68% of copy at 91 registers, 98% at 80; H100) spilled 32-196
// bytes with the loads hoisted.
// (x - (max + log sum)) would save a subtraction but rounds max + log sum:
// off by ulp(max) / 2 on rows near 1e4, so the order stays PyTorch's.

// A group of G lanes owns R rows, 32 / G rows apart (row r of group g is
// base + r * (32 / G) + g), so that each load of the warp covers 32 / G
// adjacent rows; lane l of the group holds columns (i * G + l) * P + j for
// pack i < C / P, so each pack load is coalesced across the group.  (With
// a group's rows adjacent, a warp's load took every other row's packs:
// bfloat16 rows of 8 in one-lane groups 18.9 us two rows a lane against
// 14.5 one row a lane, 1.5M rows on the H200; bench/NOTES.md warp v3.)
// Padding lanes hold -inf (exp gives 0).  All groups of a warp iterate the
// same number of times (rows past the end are computed on row 0's values
// and not stored) so the shuffles always see the whole warp.
// A row the load masks entirely (max -inf) gives 0 when the load asks for
// it (safe), else NaN from exp(-inf - -inf) as in PyTorch.
template <class T, int P, int C, int G, int R, bool PAD, bool LOG, int BLOCK, class Load>
__global__ void __launch_bounds__(BLOCK)
    warp_kernel(Load ld, T* y, int64_t rows, int cols, int64_t hoist_end) {
  using Cm = compute_t<T>;
  static_assert(C % P == 0 && 32 % G == 0, "bad warp tier shape");
  constexpr int kPacks = C / P;
  const LaneGroups<G, R, BLOCK> lg;
  const int g_lane = lg.g_lane;

  Cm buf[R][C];
  for (int64_t base = lg.first; base < rows; base += lg.step) {
    const auto row = [&](int r) { return lg.row(base, r); };
    // the row each group reads (past the end, row 0: computed, not stored)
    // and its first element's offset, which addresses both x and y: one
    // 64-bit product a warp iteration, a 32-bit one a row (the rows' 64-bit
    // index products, for x and again for y, took a sixth of the
    // instructions of bfloat16 rows of 13; bench/NOTES.md warp v4)
    const int64_t base_off = base * cols;
    int64_t at[R], off[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool in = row(r) < rows;
      at[r] = in ? row(r) : 0;
      off[r] = in ? base_off + (lg.group + r * (32 / G)) * cols : 0;
    }
    // Every load of the group's rows is issued before any value is used.  A
    // pack past its row reads the next row's values (replaced by -inf
    // below), so the loads need no predicate: one base address and
    // immediate offsets.  Behind a branch a pack, or with a predicate a pack
    // (sm_90 has 7), ptxas issued 1-7 loads, then waited on the first values
    // before the next: 4 of 4 16-byte loads of a float16 row of 1024, and 26
    // of 32 loads of a log-mode pack-1 row of 1024, each waited a round trip
    // behind the one before.  Rows from hoist_end on (whose reach would pass
    // the end of x; for the masked load, whose mask rows are broadcast,
    // every row unless the reach is the row) and variants of one or two
    // loads a lane (ptxas issues both before either is used) keep the
    // predicated loads.
    if (kPacks * R > 2 && row(R - 1) < hoist_end) {
#pragma unroll
      for (int r = 0; r < R; ++r)
        ld.template load_row<kPacks, P>(ld.row(at[r], off[r]), [&](int i) { return (i * G + g_lane) * P; }, &buf[r][0]);
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const auto lr = ld.row(at[r], off[r]);
#pragma unroll
        for (int i = 0; i < kPacks; ++i) {
          const int col = (i * G + g_lane) * P;
          if (!PAD || col < cols) ld.template load<P>(lr, col, &buf[r][i * P]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < kPacks; ++i)
        if (PAD && (i * G + g_lane) * P >= cols)
#pragma unroll
          for (int j = 0; j < P; ++j) buf[r][i * P + j] = neg_inf<Cm>();
    Cm mx[R], sum[R];
    group_rows<typename Load::Max, G, LOG>(buf, mx, sum);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (row(r) >= rows) continue;
      // one reciprocal a row, not a division an element (div.rn is ~10
      // instructions; the half-type rows are instruction-bound)
      const Cm s = row_scale<T, LOG>(sum[r]);
      const bool zero = ld.safe() && mx[r] == neg_inf<Cm>();
      T* yr = y + off[r];
#pragma unroll
      for (int i = 0; i < kPacks; ++i) {
        const int col = (i * G + g_lane) * P;
        if (PAD && col >= cols) continue;
        Cm out[P];
#pragma unroll
        for (int j = 0; j < P; ++j)
          out[j] = zero ? Cm(0) : LOG ? buf[r][i * P + j] - s : buf[r][i * P + j] * s;
        store_pack<T, P>(yr + col, out);
      }
    }
  }
}

// ---------------------------------------------------------------- span tier
// A max in one instruction (fmax; MaxOp's compare and select took two): a
// NaN it drops still makes the row's sum, so every value of the row, NaN.
struct FastMaxOp {
  template <class C> __device__ __forceinline__ C operator()(C a, C b) const { return fmax(a, b); }
};

// The warp tier's rows that no 16-byte pack divides (odd lengths, tensors a
// few elements into their storage), which it reads an element a load: a
// group of G lanes holds a row's aligned body (from its first 16-byte
// boundary) in 16-byte packs, body pack k in lane k % G, slot k / G (K
// slots), and the head and tail (fewer than a pack each) an element a
// lane, edge q in lane q % G: row_slice.cuh's layout at the size of a lane
// group.  Rows of 2P - 1 values at least (a body pack) and K x G body packs
// at most.  y is stored in the same packs when congruent to x modulo 16
// bytes, else in its own through shared memory (store_span_rows).  (H200,
// kgen-bench at 128 MiB: float16 rows of 77 at 77-79% of copy where the
// warp tier's element loads ran 45-50%, of 255 at 99% against 69-83%;
// bench/NOTES.md span v1.)
template <class T, int K, int G, int R, bool LOG, int BLOCK>
__global__ void __launch_bounds__(BLOCK) span_kernel(const T* x, T* y, int64_t rows, int cols) {
  using Cm = compute_t<T>;
  using Span = rows::GroupSpan<T, K, G>;
  constexpr int P = Span::P, E = Span::E, V = K * P + E;
  const LaneGroups<G, R, BLOCK> lg;
  const bool vec = rows::congruent(x, y);
  T* const stage = rows::warp_span_stage<T, K, G>();  // y apart from x: the launch gives it
  for (int64_t base = lg.first; base < rows; base += lg.step) {
    const auto row = [&](int r) { return lg.row(base, r); };
    Span sp[R];
    rows::Raw pk[R][K];
    T edge[R][E];
    // Every load issued before any value is used: a slot past the body
    // reads the body's last pack and an edge past the row the row's first
    // element (values replaced by -inf below), so no load waits on a
    // predicate.
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const T* xr = x + (row(r) < rows ? row(r) : 0) * cols;
      sp[r] = Span::of(xr, cols, lg.g_lane);
#pragma unroll
      for (int i = 0; i < K; ++i) pk[r][i] = rows::load_raw(xr + sp[r].pack_at(i), true);
#pragma unroll
      for (int e = 0; e < E; ++e) edge[r][e] = xr[sp[r].edge_at(e) < cols ? sp[r].edge_at(e) : 0];
    }
    Cm buf[R][V];
    const rows::Raw none = rows::raw_fill(rows::raw_neg_inf<T>());
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int i = 0; i < K; ++i) {
        const rows::Raw v = sp[r].has(i) ? pk[r][i] : none;  // four selects, not one a value
#pragma unroll
        for (int j = 0; j < P; ++j) buf[r][i * P + j] = rows::value<T>(v, j);
      }
#pragma unroll
      for (int e = 0; e < E; ++e) buf[r][K * P + e] = sp[r].edge_at(e) < cols ? to_compute(edge[r][e]) : neg_inf<Cm>();
    }
    Cm mx[R], sum[R];
    group_rows<FastMaxOp, G, LOG>(buf, mx, sum);
    Cm s[R];
#pragma unroll
    for (int r = 0; r < R; ++r) s[r] = row_scale<T, LOG>(sum[r]);
    rows::store_span_rows<T, K, G, R, BLOCK>(y, rows, cols, base, lg, sp, vec, stage, [&](int r, int v) {
      return LOG ? buf[r][v] - s[r] : buf[r][v] * s[r];
    });
  }
}

// ---------------------------------------------------------------- smem tier
// One block per row (grid-stride over rows); the row is kept in shared memory
// in its own dtype (half types take half the space), laid out pack-major
// (element j of pack k at j * packs + k) so that consecutive threads hit
// consecutive banks.  exp is recomputed in the last pass instead of stored.
template <class T, int P, bool LOG, int BLOCK, class Load>
__global__ void __launch_bounds__(BLOCK, kMinBlocks<BLOCK>)
    smem_kernel(Load ld, T* y, int64_t rows, int cols) {
  using Cm = compute_t<T>;
  using S = typename Load::Cached;
  constexpr int U = kBatchPacks<T, P, Load::kBatchBytes>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* buf = reinterpret_cast<S*>(smem_raw);
  const int packs = cols / P;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const auto lr = ld.row(row);
    Cm thread_max = neg_inf<Cm>();
    for (int k0 = threadIdx.x; k0 < packs; k0 += BLOCK * U) {
      // values as the cache keeps them: x as stored for a plain load (no
      // conversion round trip), scaled and masked floats for the masked one
      Pack<S, P> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) v[u] = ld.template raw<P>(lr, (k0 + u * BLOCK) * P);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs)
#pragma unroll
          for (int j = 0; j < P; ++j) {
            buf[j * packs + k0 + u * BLOCK] = v[u].v[j];
            thread_max = typename Load::Max()(thread_max, to_compute(v[u].v[j]));
          }
    }
    const Cm mx = block_all_reduce<BLOCK>(thread_max, typename Load::Max(), neg_inf<Cm>());
    Cm thread_sum = 0;
    for (int k = threadIdx.x; k < packs; k += BLOCK)
#pragma unroll
      for (int j = 0; j < P; ++j) thread_sum += kexp(to_compute(buf[j * packs + k]) - mx);
    const Cm sum = block_all_reduce<BLOCK>(thread_sum, SumOp(), Cm(0));
    // one division per row, not per element
    const Cm s = row_scale<T, LOG>(sum);
    const bool zero = ld.safe() && mx == neg_inf<Cm>();
    T* yr = y + row * cols;
    for (int k = threadIdx.x; k < packs; k += BLOCK) {
      Cm out[P];
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const Cm d = to_compute(buf[j * packs + k]) - mx;
        out[j] = zero ? Cm(0) : LOG ? d - s : kexp(d) * s;
      }
      store_pack<T, P>(yr + k * P, out);
    }
  }
}

// ------------------------------------------------------------ uncached tier
// One block per row, two passes over global memory: online max+sum, then
// normalise.  Any length (int64 columns).
// One 16-byte pack in flight per thread and no residency floor: the online
// update needs registers, and forcing 32 a thread spilled 200-1200 bytes;
// unbatched it reaches 60-65% of copy against its 67% ceiling (three passes
// of traffic for two counted).
template <class T, int P, bool LOG, int BLOCK, class Load>
__global__ void __launch_bounds__(BLOCK)
    uncached_kernel(Load ld, T* y, int64_t rows, int64_t cols) {
  using Cm = compute_t<T>;
  constexpr int U = kBatchPacks<T, P, 16>;
  const int64_t packs = cols / P;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const auto lr = ld.row(row);
    Online<Cm> st{neg_inf<Cm>(), Cm(0)};
    for (int64_t k0 = threadIdx.x; k0 < packs; k0 += int64_t{BLOCK} * U) {
      Cm v[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) ld.template load<P>(lr, (k0 + u * BLOCK) * P, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs)
#pragma unroll
          for (int j = 0; j < P; ++j) st.add(v[u][j]);
    }
    st = block_all_reduce_online<BLOCK>(st);
    const Cm s = row_scale<T, LOG>(st.s);
    const bool zero = ld.safe() && st.m == neg_inf<Cm>();
    T* yr = y + row * cols;
    for (int64_t k0 = threadIdx.x; k0 < packs; k0 += int64_t{BLOCK} * U) {
      Cm v[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) ld.template load<P>(lr, (k0 + u * BLOCK) * P, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (k0 + u * BLOCK >= packs) continue;
#pragma unroll
        for (int j = 0; j < P; ++j)
          v[u][j] = zero ? Cm(0) : LOG ? v[u][j] - st.m - s : kexp(v[u][j] - st.m) * s;
        store_pack<T, P>(yr + (k0 + u * BLOCK) * P, v[u]);
      }
    }
  }
}

// ------------------------------------------------------- block and cluster tiers
// The running (max, sum) of the block, cluster and split tiers: from a
// thread's head or tail element (-inf when it has none), then a 16-byte pack
// at a time, one conversion of each value (a max pass then a sum pass kept
// 64 converted float16 values live and spilled at 1024 threads).
template <class C>
__device__ __forceinline__ Online<C> online_start(C edge) {
  return Online<C>{edge, edge == neg_inf<C>() ? C(0) : C(1)};
}
template <class T>
__device__ __forceinline__ void online_add_pack(Online<compute_t<T>>& st, const rows::Raw& v) {
  using Cm = compute_t<T>;
  constexpr int P = rows::kVec<T>;
  Cm f[P];
#pragma unroll
  for (int j = 0; j < P; ++j) f[j] = rows::value<T>(v, j);
  Cm m = st.m;
#pragma unroll
  for (int j = 0; j < P; ++j) m = MaxOp()(m, f[j]);
  const Cm ms = Online<Cm>::safe(m);
  Cm sum = 0;
#pragma unroll
  for (int j = 0; j < P; ++j) sum += kexp(f[j] - ms);
  st.s = st.s * kexp(st.m - ms) + sum;
  st.m = m;
}
// y of one value from the row's max and ls (log sum, or 1 / sum).  (The
// form 2^((v - max) log2 e - log2 sum), one instruction an element fewer,
// ran 10-20% slower in clusters, cause not found: float32 rows of
// 32768-262144, float16 of 262144; H100, same-GPU A/B, bench/NOTES.md
// slice v2.)
template <bool LOG, class C>
__device__ __forceinline__ C softmax_of(C v, C mx, C ls) {
  const C d = v - mx;
  return LOG ? d - ls : kexp(d) * ls;
}

// A pack's outputs as raw words, for the 16-byte stores.
template <class T, bool LOG>
__device__ __forceinline__ rows::Raw softmax_pack(const rows::Raw& r, compute_t<T> mx, compute_t<T> ls) {
  compute_t<T> o[rows::kVec<T>];
#pragma unroll
  for (int j = 0; j < rows::kVec<T>; ++j) o[j] = softmax_of<LOG>(rows::value<T>(r, j), mx, ls);
  return rows::raw_of<T>(o);
}

// A row in the registers of K CTAs (row_slice.cuh): x read once in 16-byte
// packs at any length and alignment, each thread's running (max, sum of
// exp) over its packs, one all-reduce of the pairs across the cluster, then
// y from the registers.  The non-log mode takes exp twice an element (the
// registers hold x as stored, half types two values a register) rather than
// keeping float values.  Packs past rows::kSliceRegPacks a thread (rows of
// 1M in clusters of 16) wait in dynamic shared memory, copied there by
// cp.async as the register packs load (rows::Held).  K > 1 needs sm_90
// (clusters); the kernel compiles to nothing for older archs, where the
// runtime never selects it.
template <class T, int V, int B, int K, bool LOG, bool SHIFT>
__global__ void __launch_bounds__(B, rows::kSliceMinBlocks<B>) slice_kernel(const T* x, T* y, int64_t cols) {
  if constexpr (K > 1 && !rows::kClusters) return;
  using Cm = compute_t<T>;
  constexpr int P = rows::kVec<T>;
  constexpr int R = V < rows::kSliceRegPacks ? V : rows::kSliceRegPacks;  // in registers
  const int rank = rows::cluster_rank<K>();
  const int64_t row = blockIdx.x / K;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  const rows::Slice s = rows::slice_of<T, B>(xr, cols, rank, K);
  const rows::Held<V - R, B> held;
  held.load(s, R, xr);
  rows::Raw v[R];
#pragma unroll
  for (int i = 0; i < R; ++i)
    v[i] = s.has<B>(i) ? rows::load_raw(xr + s.col<B>(i, P), true) : rows::raw_fill(rows::raw_neg_inf<T>());
  // the cluster's exchange armed past the loads: at the kernel's start the
  // plain mode spilled 4-8 bytes (64 registers)
  if constexpr (K > 1) rows::ClusterPush<Online<Cm>, K>::begin();
  // The log mode's loads all issued first (rows::landed): 3-4 of 8 went out
  // late, and float32 rows of 131072-262144 in clusters took 235-252 us
  // against 205-220 (H100, 256 MiB, same-GPU A/B).  The plain mode lost
  // 1-3% with it (half types 4 of 8 late there too, yet no slower).
  if constexpr (LOG) rows::landed(v, cols < 0);
  const Cm e = s.edge >= 0 ? to_compute(xr[s.edge]) : neg_inf<Cm>();
  Online<Cm> st = online_start(e);
#pragma unroll
  for (int i = 0; i < R; ++i) online_add_pack<T>(st, v[i]);
  held.wait();
  held.for_each(s, R, [&](const rows::Raw& h, int) { online_add_pack<T>(st, h); });
  rows::keep_raw(v);
  st = rows::slice_all_reduce<B, K>(st, OnlineOp(), Online<Cm>::identity());
  // x as loaded anew past the reduction (rows::after): ptxas otherwise kept
  // the first pass's conversions for the output, and the float16 and
  // bfloat16 log modes spilled 92 bytes at 8 packs a thread (ncu, bfloat16
  // rows of 131072 in clusters of 16 x 128: 2.6M local-memory requests)
  rows::after(v, st.s < Cm(0));
  const Cm ls = row_scale<T, LOG>(st.s);
  const auto y_of = [&](const rows::Raw& r) { return softmax_pack<T, LOG>(r, st.m, ls); };
  if constexpr (!SHIFT) {
    // (float32 and float64 y off x's boundaries: an element a store, which
    // ran as fast as the shifted packs or faster: float32 rows of 1691-32768
    // one element in at 90-101% of copy in blocks and clusters, H200)
    const bool vec_y = rows::congruent(x, y);
    const auto out = [&](const rows::Raw& r, int i) {
      if (vec_y) rows::store_raw(yr + s.col<B>(i, P), y_of(r));
      else rows::store_elements<T>(yr + s.col<B>(i, P), y_of(r), 0, P);
    };
#pragma unroll
    for (int i = 0; i < R; ++i)
      if (s.has<B>(i)) out(v[i], i);
    held.for_each(s, R, out);
  } else {
    // y off x's 16-byte boundaries (x a few elements into its storage, y
    // fresh): y's packs from the inputs shifted across neighbouring lanes
    // (rows::shift_next); the slice's first and last packs in part an
    // element at a time.  Stored an element at a time, float16 rows of
    // 1691-32768 one element in ran at 20-43% of copy in blocks and
    // clusters (H200).  The half types only (float32: the other branch's
    // note), in a kernel of its own: in the same kernel behind a branch
    // (an earlier form of the shift), the congruent path's float16 log
    // mode ran 3-5% slower in 128 x 16 values (H200 kgen-bench --variants,
    // rows of 1691-2048: 90.0 -> 87.0 and 98.4 -> 93.6% of copy).
    const int lead = rows::store_lead(x, y);
    const auto out = [&](const rows::Raw& r, int i, bool has) {
      const int64_t k = int64_t{i} * B + threadIdx.x;  // the pack's index in the slice
      const bool next = k + 1 < s.count;
      T* const yc = yr + s.col<B>(i, P);
      const rows::Raw sh = rows::shift_next<T>(r, has, next, xr + s.col<B>(i, P) + P, lead);
      if (!has) return;
      rows::store_shifted(yc, k, next, lead, [&] { return y_of(sh); }, [&] { return y_of(r); });
    };
#pragma unroll
    for (int i = 0; i < R; ++i) out(v[i], i, s.has<B>(i));
    held.for_all(s, R, out);
  }
  if (s.edge >= 0) yr[s.edge] = from_compute<T>(softmax_of<LOG>(e, st.m, ls));
}

// --------------------------------------------------------------- split tier
// Rows too long for a cluster, or too few to fill the GPU: each row cut into
// `parts` chunks of its 16-byte packs (row_slice.cuh's layout, a CTA a
// chunk), in two kernels.  The first streams x and leaves each CTA's
// (max, sum) in the workspace; the second combines its row's partials in a
// fixed order (every CTA of the row gets the same bits, and so does every
// run), streams x again and writes y.  The second runs its CTAs, and each
// thread its packs, in reverse order: it starts on what the first read
// last, still in L2.
template <class T, int B, int U>
__global__ void __launch_bounds__(B, kSplitMinBlocks<T, B>)
    split_partial_kernel(const T* x, int64_t cols, int64_t parts, Online<compute_t<T>>* partial) {
  constexpr int P = rows::kVec<T>;
  const T* xr = x + blockIdx.x / parts * cols;
  const rows::Slice s = rows::slice_of<T, B>(xr, cols, static_cast<int>(blockIdx.x % parts), parts);
  Online<compute_t<T>> st = online_start(s.edge >= 0 ? to_compute(xr[s.edge]) : neg_inf<compute_t<T>>());
  rows::stream_packs<B, U, false>(
      s.count, [&](int64_t k) { return rows::load_raw(xr + s.at(k, P), true); },
      [&](const rows::Raw& v, int64_t) { online_add_pack<T>(st, v); });
  st = block_all_reduce_online<B>(st);
  if (threadIdx.x == 0) partial[blockIdx.x] = st;
}

// SHIFT (the half types, y off x's 16-byte boundaries): y's packs from the
// inputs shifted across neighbouring lanes, as the slice kernel's SHIFT.
template <class T, int B, int U, bool LOG, bool SHIFT>
__global__ void __launch_bounds__(B, kSplitShiftMinBlocks<T, B, SHIFT>)
    split_apply_kernel(const T* x, T* y, int64_t cols, int64_t parts, const Online<compute_t<T>>* partial) {
  using Cm = compute_t<T>;
  constexpr int P = rows::kVec<T>;
  const int64_t cta = gridDim.x - 1 - blockIdx.x, row = cta / parts;
  Online<Cm> st = Online<Cm>::identity();
  for (int64_t g = threadIdx.x; g < parts; g += B) st = Online<Cm>::merge(st, partial[row * parts + g]);
  st = block_all_reduce_online<B>(st);
  const Cm ls = row_scale<T, LOG>(st.s);
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  const rows::Slice s = rows::slice_of<T, B>(xr, cols, static_cast<int>(cta % parts), parts);
  const auto load = [&](int64_t k) { return rows::load_raw(xr + s.at(k, P), true); };
  if constexpr (!SHIFT) {
    const bool vec_y = rows::congruent(x, y);
    rows::stream_packs<B, U, true>(s.count, load, [&](const rows::Raw& v, int64_t k) {
      Cm o[P];
#pragma unroll
      for (int j = 0; j < P; ++j) o[j] = softmax_of<LOG>(rows::value<T>(v, j), st.m, ls);
      rows::store_values(yr + s.at(k, P), o, vec_y);
    });
  } else {
    const auto y_of = [&](const rows::Raw& r) { return softmax_pack<T, LOG>(r, st.m, ls); };
    const int lead = rows::store_lead(x, y);
    rows::stream_packs_all<B, U, true>(s.count, load, [&](const rows::Raw& v, int64_t k, bool has) {
      const bool next = k + 1 < s.count;
      const rows::Raw sh = rows::shift_next<T>(v, has, next, xr + s.at(k, P) + P, lead);
      if (!has) return;
      rows::store_shifted(yr + s.at(k, P), k, next, lead, [&] { return y_of(sh); }, [&] { return y_of(v); });
    });
  }
  if (s.edge >= 0) yr[s.edge] = from_compute<T>(softmax_of<LOG>(to_compute(xr[s.edge]), st.m, ls));
}

// The split tier over a dim that is not the last (softmax_common.cuh's
// StridedSplitPlace): each thread's running (max, sum) over its share of
// the CTA's run, the column's pairs folded, one partial a CTA and column.
template <class T, int B>
__global__ void __launch_bounds__(B, kStridedSplitMinBlocks<B>)
    strided_split_partial_kernel(const T* x, int64_t axis, int64_t inner, int64_t parts,
                                 Online<compute_t<T>>* partial) {
  using Cm = compute_t<T>;
  constexpr int U = kStridedSplitLoads<T>;
  __shared__ Online<Cm> scratch[B];
  const auto s = StridedSplitPlace::make(blockIdx.x % parts, axis, inner, parts, B);
  const T* xc = x + blockIdx.x / parts * axis * inner + s.col;
  Online<Cm> st = Online<Cm>::identity();
  const int64_t step = int64_t{s.rows} * inner;  // between a thread's slab rows
  if (s.active)
    for (int64_t a = s.a0 + s.row; a < s.a1; a += int64_t{s.rows} * U) {
      const T* xa = xc + a * inner;
      Cm v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = a + int64_t{u} * s.rows < s.a1 ? to_compute(xa[u * step]) : neg_inf<Cm>();
      Cm m = v[0];
#pragma unroll
      for (int u = 1; u < U; ++u) m = MaxOp()(m, v[u]);
      const Cm ms = Online<Cm>::safe(m);
      Cm sum = 0;
#pragma unroll
      for (int u = 0; u < U; ++u) sum += kexp(v[u] - ms);
      st = Online<Cm>::merge(st, Online<Cm>{m, sum});
    }
  st = fold_columns(st, s, scratch, OnlineOp());
  if (static_cast<int>(threadIdx.x) < s.in) partial[blockIdx.x * inner + threadIdx.x] = st;
}

// The slab's partials of each column folded in part order, then the CTA's
// run read again (CTAs in reverse order: the last runs the first kernel
// read are still in L2) and y written.
template <class T, int B, bool LOG>
__global__ void __launch_bounds__(B, kStridedSplitMinBlocks<B>)
    strided_split_apply_kernel(const T* x, T* y, int64_t axis, int64_t inner, int64_t parts,
                               const Online<compute_t<T>>* partial) {
  using Cm = compute_t<T>;
  constexpr int U = kStridedSplitLoads<T>;
  __shared__ Online<Cm> scratch[B];
  const int64_t cta = gridDim.x - 1 - blockIdx.x, outer = cta / parts;
  const auto s = StridedSplitPlace::make(cta % parts, axis, inner, parts, B);
  // thread (row, col) folds parts row, row + rows, ... of its column; then
  // the rows in order
  Online<Cm> st = Online<Cm>::identity();
  if (s.active)
    for (int64_t g = s.row; g < parts; g += s.rows) st = Online<Cm>::merge(st, partial[(outer * parts + g) * inner + s.col]);
  st = fold_columns(st, s, scratch, OnlineOp());
  if (!s.active) return;
  const Cm ls = row_scale<T, LOG>(st.s);
  const int64_t base = outer * axis * inner + s.col;
  const int64_t step = int64_t{s.rows} * inner;
  for (int64_t a = s.a0 + s.row; a < s.a1; a += int64_t{s.rows} * U) {
    const T* xa = x + base + a * inner;
    T* ya = y + base + a * inner;
    Cm v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (a + int64_t{u} * s.rows < s.a1) v[u] = to_compute(xa[u * step]);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (a + int64_t{u} * s.rows < s.a1) ya[u * step] = from_compute<T>(softmax_of<LOG>(v[u], st.m, ls));
  }
}

// ---------------------------------------------------------------- tile tier
// Short rows or short axes whose 16-byte packs the register tiers cannot
// use (odd lengths, misaligned tensors): whole units staged through shared
// memory in 16-byte vectors (tile.cuh), each column computed there by a
// group of lanes, y stored as x was read.  A column of up to
// kTileValuesPerLane values a lane is read once into registers (max, exp,
// sum as the warp tier does them); longer ones (rows past 256 values) are
// folded in chunks of that many into a running (max, sum) and read again.
//
// Whole rows a group reads at once (tiles::flat_rows: rows of up to 256)
// take two steps instead (tile_rows): each group leaves its row's max and
// scale in shared memory (tile_row_stats, the group's size a template
// argument), then the store reads the tile back in 16-byte packs and
// computes every value on its way out.  A pack meets at most two rows when
// rows are no shorter than it.  The tier is issue-bound (ncu, H200,
// bfloat16 rows of 12: warps issuing on 80% of cycles, DRAM 34%, 52
// instructions a value); this path took 0.76-0.92x its time on the H200
// (bench/NOTES.md tile v4).  The values are the group pass's bits.
template <class C>
struct RowStat {
  C m, ls;  // the row's max; 1 / sum (log: log sum)
};

template <class T, bool LOG>
struct RowFinish {
  using Cm = compute_t<T>;
  const RowStat<Cm>* stat;
  FastDiv cols;
  __device__ __forceinline__ Cm at(Cm v, const RowStat<Cm>& s) const { return softmax_of<LOG>(v, s.m, s.ls); }
  __device__ __forceinline__ void pack(rows::Raw& r, int e0) const {
    constexpr int P = rows::kVec<T>;
    Cm v[P];
    if (cols.d >= static_cast<uint32_t>(P)) {
      uint32_t c0;
      const uint32_t r0 = cols.divmod(static_cast<uint32_t>(e0), &c0);
      const RowStat<Cm> s0 = stat[r0], s1 = stat[r0 + 1];
      const int first = static_cast<int>(cols.d - c0);  // the pack's elements in row r0
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const bool next = j >= first;
        v[j] = at(rows::value<T>(r, j), RowStat<Cm>{next ? s1.m : s0.m, next ? s1.ls : s0.ls});
      }
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j) v[j] = at(rows::value<T>(r, j), stat[cols.div(static_cast<uint32_t>(e0 + j))]);
    }
    r = rows::raw_of<T>(v);
  }
  __device__ __forceinline__ void one(T& v, int e) const {
    v = from_compute<T>(at(to_compute(v), stat[cols.div(static_cast<uint32_t>(e))]));
  }
};

// The statistics of a staged tile's n rows of `axis` values (row c at b +
// c * axis), a group of G lanes a row, value k of a lane G slots on: G known
// at compile time, so each slot is a shared load at a fixed offset (with the
// group size a run-time value, the address, the bound and the break of a
// slot took ten instructions around its load).
template <int G, class T, int B, bool LOG>
__device__ __forceinline__ void tile_row_stats(const T* b, int n, int axis, RowStat<compute_t<T>>* stat) {
  using Cm = compute_t<T>;
  constexpr int K = kgen::softmax::kTileValuesPerLane;
  const int lane = static_cast<int>(threadIdx.x) % G;
  for (int c0 = 0; c0 < n; c0 += B / G) {
    const int c = c0 + static_cast<int>(threadIdx.x) / G;
    const bool ok = c < n;
    const T* row = b + (ok ? c : 0) * axis + lane;
    const int room = ok ? axis - lane : 0;  // slot k holds a value when k * G < room
    Cm r[K];
    Cm m = neg_inf<Cm>();
#pragma unroll
    for (int k = 0; k < K; ++k) {
      r[k] = k * G < room ? to_compute(row[k * G]) : neg_inf<Cm>();
      m = MaxOp()(m, r[k]);
      if ((k + 1) * G >= axis) break;
    }
    m = group_all_reduce<G>(m, MaxOp());
    Cm s = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      s += kexp(r[k] - m);
      if ((k + 1) * G >= axis) break;
    }
    s = group_all_reduce<G>(s, SumOp());
    if (ok && lane == 0) stat[c] = RowStat<Cm>{m, row_scale<T, LOG>(s)};
  }
}

template <class T, int B, int U, bool LOG>
__device__ __forceinline__ void tile_rows(const T* x, T* y, const kgen::softmax::TileShape& sh, FastDiv cols) {
  using Cm = compute_t<T>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto* stat = reinterpret_cast<RowStat<Cm>*>(smem_raw + (int64_t{B} * U * rows::kVec<T> + rows::kVec<T>) * sizeof(T));
  const int axis = static_cast<int>(sh.axis);
  const T* const in[1] = {x};
  tiles::run_tiles<T, B, U, 1, false>(
      in, y, sh,
      [&](const tiles::Place<T, false>* pl, T* const* buf, int n) {
        const T* b = buf[0] + pl[0].mis0;
        switch (sh.group) {
          case 1: return tile_row_stats<1, T, B, LOG>(b, n, axis, stat);
          case 2: return tile_row_stats<2, T, B, LOG>(b, n, axis, stat);
          case 4: return tile_row_stats<4, T, B, LOG>(b, n, axis, stat);
          case 8: return tile_row_stats<8, T, B, LOG>(b, n, axis, stat);
          case 16: return tile_row_stats<16, T, B, LOG>(b, n, axis, stat);
          default: return tile_row_stats<32, T, B, LOG>(b, n, axis, stat);
        }
      },
      RowFinish<T, LOG>{stat, cols});
}

template <class T, int B, int U, bool LOG, bool SEG>
__global__ void __launch_bounds__(B, tiles::kTileMinBlocks<T, B, SEG, 1>)
    tile_kernel(const T* x, T* y, FastDiv cols, kgen::softmax::TileShape sh) {
  using Cm = compute_t<T>;
  constexpr int K = kgen::softmax::kTileValuesPerLane;
  if constexpr (!SEG) {
    if (tiles::flat_rows(sh)) return tile_rows<T, B, U, LOG>(x, y, sh, cols);
  }
  const T* const in[1] = {x};
  tiles::run_tiles<T, B, U, 1, SEG>(in, y, sh, [&](const tiles::Place<T, SEG>* pl, T* const* buf, int columns) {
    T* b = buf[0];
    const tiles::Place<T, SEG> place = pl[0];
    const int axis = static_cast<int>(sh.axis);
    const int g = sh.group;
    const bool one_chunk = axis <= K * g;
    tiles::for_each_column<B, SEG>(sh, columns, [&](int col, bool ok, int lane) {
      // the lane's K values from axis position a0 on, g apart (-inf past
      // the axis); returns their max.  Slots wholly past the axis (k * g >=
      // axis: the same for every lane) are skipped, not computed on -inf:
      // a slab of 3 values a column would otherwise do 8 of everything.
      auto load = [&](int a0, Cm(&r)[K]) {
        Cm m = neg_inf<Cm>();
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int a = a0 + k * g;
          r[k] = ok && a < axis ? to_compute(b[place.at(col, a)]) : neg_inf<Cm>();
          m = MaxOp()(m, r[k]);
          if ((k + 1) * g >= axis) break;
        }
        return m;
      };
      if (one_chunk) {
        Cm r[K];
        const Cm m = tiles::group_reduce(load(lane, r), MaxOp(), g);
        Cm s = 0;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          r[k] -= m;
          if (LOG) {
            s += kexp(r[k]);
          } else {
            r[k] = kexp(r[k]);
            s += r[k];
          }
          if ((k + 1) * g >= axis) break;
        }
        s = tiles::group_reduce(s, SumOp(), g);
        if (!ok) return;
        const Cm ls = row_scale<T, LOG>(s);
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int a = lane + k * g;
          if (a < axis) b[place.at(col, a)] = from_compute<T>(LOG ? r[k] - ls : r[k] * ls);
          if ((k + 1) * g >= axis) break;
        }
        return;
      }
      Online<Cm> st = Online<Cm>::identity();
      for (int a0 = lane; a0 < axis; a0 += K * g) {
        Cm r[K];
#pragma unroll
        for (int k = 0; k < K; ++k) r[k] = neg_inf<Cm>();
        const Cm m = load(a0, r);
        const Cm ms = Online<Cm>::safe(m);
        Cm s = 0;
#pragma unroll
        for (int k = 0; k < K; ++k) s += kexp(r[k] - ms);
        st = Online<Cm>::merge(st, Online<Cm>{m, s});
      }
      st = tiles::group_reduce(st, OnlineOp(), g);
      if (!ok) return;
      const Cm ls = row_scale<T, LOG>(st.s);
      for (int a = lane; a < axis; a += g) {
        T& v = b[place.at(col, a)];
        v = from_compute<T>(softmax_of<LOG>(to_compute(v), st.m, ls));
      }
    });
  });
}

// ------------------------------------------------------------ host launchers
// Each row launcher runs its kernel with the problem's load (plain or
// masked) and mode; the masked softmax has no log mode.
template <class T, template <class, class> class Launch>
cudaError_t with_load(const kgen::softmax::Problem& p, cudaStream_t stream) {
  if (p.mask) return Launch<T, MaskLoad<T>>::template run<false>(p, MaskLoad<T>::make(p), stream);
  const DirectLoad<T> ld{static_cast<const T*>(p.x), p.cols};
  return p.log ? Launch<T, DirectLoad<T>>::template run<true>(p, ld, stream)
               : Launch<T, DirectLoad<T>>::template run<false>(p, ld, stream);
}

template <int P, int C, int G, int R, bool PAD>
struct WarpLaunch {
  template <class T, class Load>
  struct With {
    template <bool LOG>
    static cudaError_t run(const kgen::softmax::Problem& p, const Load& ld, cudaStream_t stream) {
      constexpr int kBlock = 128;
      const unsigned grid = lane_group_grid<G, R, kBlock>(p.rows, *p.device);
      // rows whose group's reach (G x C values) stays inside x; the mask's
      // rows are not laid out as x's, so a masked row is read past its end
      // by no lane or not hoisted
      const int64_t reach = int64_t{G} * C;
      const int64_t hoist_end = Load::kOverread ? p.rows - ceil_div(reach, p.cols) + 1 : reach == p.cols ? p.rows : 0;
      warp_kernel<T, P, C, G, R, PAD, LOG, kBlock, Load><<<grid, kBlock, 0, stream>>>(
          ld, static_cast<T*>(p.y), p.rows, static_cast<int>(p.cols), hoist_end);
      return cudaGetLastError();
    }
  };
};

template <class T, int P, int C, int G, int R, bool PAD>
cudaError_t launch_warp(const void* problem, cudaStream_t stream) {
  return with_load<T, WarpLaunch<P, C, G, R, PAD>::template With>(
      *static_cast<const kgen::softmax::Problem*>(problem), stream);
}

template <class T, int C, int G, int R>
cudaError_t launch_span(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  constexpr int kBlock = 128, K = C / rows::kVec<T>;
  const unsigned grid = lane_group_grid<G, R, kBlock>(p.rows, *p.device);
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int cols = static_cast<int>(p.cols);
  const size_t stage = rows::span_stage_bytes<T, K, G, kBlock>(x, y);
  if (p.log)
    span_kernel<T, K, G, R, true, kBlock><<<grid, kBlock, stage, stream>>>(x, y, p.rows, cols);
  else
    span_kernel<T, K, G, R, false, kBlock><<<grid, kBlock, stage, stream>>>(x, y, p.rows, cols);
  return cudaGetLastError();
}

template <int P, int BLOCK>
struct SmemLaunch {
  template <class T, class Load>
  struct With {
    template <bool LOG>
    static cudaError_t run(const kgen::softmax::Problem& p, const Load& ld, cudaStream_t stream) {
      const DeviceInfo& d = *p.device;
      const size_t smem = static_cast<size_t>(kgen::softmax::smem_row_bytes(p, sizeof(T)));
      const int64_t resident = d.sm_count * kgen::softmax::smem_blocks_per_sm(p, BLOCK, sizeof(T));
      const unsigned grid = static_cast<unsigned>(p.rows < resident ? p.rows : resident);
      constexpr auto kKernel = smem_kernel<T, P, LOG, BLOCK, Load>;
      if (smem + kgen::softmax::kSmemReserve > 48 * 1024) {  // static scratch counts too
        const cudaError_t err = allow_max_smem<kKernel>(d);
        if (err != cudaSuccess) return err;
      }
      kKernel<<<grid, BLOCK, smem, stream>>>(ld, static_cast<T*>(p.y), p.rows, static_cast<int>(p.cols));
      return cudaGetLastError();
    }
  };
};

template <class T, int P, int BLOCK>
cudaError_t launch_smem(const void* problem, cudaStream_t stream) {
  return with_load<T, SmemLaunch<P, BLOCK>::template With>(*static_cast<const kgen::softmax::Problem*>(problem),
                                                           stream);
}

template <int P, int BLOCK>
struct UncachedLaunch {
  template <class T, class Load>
  struct With {
    template <bool LOG>
    static cudaError_t run(const kgen::softmax::Problem& p, const Load& ld, cudaStream_t stream) {
      const unsigned grid = grid_for(p.rows, *p.device, BLOCK, 1);
      uncached_kernel<T, P, LOG, BLOCK, Load><<<grid, BLOCK, 0, stream>>>(ld, static_cast<T*>(p.y), p.rows, p.cols);
      return cudaGetLastError();
    }
  };
};

template <class T, int P, int BLOCK>
cudaError_t launch_uncached(const void* problem, cudaStream_t stream) {
  return with_load<T, UncachedLaunch<P, BLOCK>::template With>(
      *static_cast<const kgen::softmax::Problem*>(problem), stream);
}

template <class T, int V, int B, int K, bool SHIFT>
cudaError_t launch_slice_kernel(const kgen::softmax::Problem& p, const T* x, T* y, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(p.rows * K);
  const size_t smem = rows::held_bytes<V, B>();
  return p.log ? rows::launch_clusters<K, slice_kernel<T, V, B, K, true, SHIFT>>(*p.device, grid, B, smem, stream, x,
                                                                                 y, p.cols)
               : rows::launch_clusters<K, slice_kernel<T, V, B, K, false, SHIFT>>(*p.device, grid, B, smem, stream, x,
                                                                                  y, p.cols);
}

// A cluster (K CTAs) a row: rows x K CTAs (supports() keeps that within a
// grid); the plain load only (the masked softmax keeps the other tiers).
template <class T, int V, int B, int K>
cudaError_t launch_slice(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  if constexpr (sizeof(T) == 2)
    if (!rows::congruent(x, y)) return launch_slice_kernel<T, V, B, K, true>(p, x, y, stream);
  return launch_slice_kernel<T, V, B, K, false>(p, x, y, stream);
}

template <class T, int B, bool SHIFT>
cudaError_t launch_split_apply(const kgen::softmax::Problem& p, const T* x, T* y, int64_t parts,
                               const Online<compute_t<T>>* partial, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(p.rows * parts);
  if (p.log)
    split_apply_kernel<T, B, kSplitLoads, true, SHIFT><<<grid, B, 0, stream>>>(x, y, p.cols, parts, partial);
  else
    split_apply_kernel<T, B, kSplitLoads, false, SHIFT><<<grid, B, 0, stream>>>(x, y, p.cols, parts, partial);
  return cudaGetLastError();
}

// Two kernels, rows x parts CTAs each (split_parts); the workspace holds
// their (max, sum) partials, one a CTA (and inner position).
template <class T, int B>
cudaError_t launch_split(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const int64_t parts = kgen::softmax::split_parts(p, B, sizeof(T));
  const unsigned grid = static_cast<unsigned>(p.rows * parts);
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  auto* partial = static_cast<Online<compute_t<T>>*>(p.workspace);
  if (p.inner > 1) {  // a dim that is not the last
    strided_split_partial_kernel<T, B><<<grid, B, 0, stream>>>(x, p.cols, p.inner, parts, partial);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    if (p.log)
      strided_split_apply_kernel<T, B, true><<<grid, B, 0, stream>>>(x, y, p.cols, p.inner, parts, partial);
    else
      strided_split_apply_kernel<T, B, false><<<grid, B, 0, stream>>>(x, y, p.cols, p.inner, parts, partial);
    return cudaGetLastError();
  }
  split_partial_kernel<T, B, kSplitLoads><<<grid, B, 0, stream>>>(x, p.cols, parts, partial);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  if constexpr (sizeof(T) == 2)
    if (!rows::congruent(x, y)) return launch_split_apply<T, B, true>(p, x, y, parts, partial, stream);
  return launch_split_apply<T, B, false>(p, x, y, parts, partial, stream);
}

// --------------------------------------------------------------- grid tier
// A few rows over every SM in one launch: each row cut into `parts` slices
// (row_slice.cuh's layout, CTA `rank` of `parts`), a CTA each, V packs a
// thread: up to rows::kSliceRegPacks in registers, the rest in dynamic
// shared memory (rows::Held, copied there by cp.async as the register packs
// load), so that the GPU's registers and shared memory together hold the
// tensor (34.6 MB on 132 SMs at 32 packs a thread); each CTA leaves its
// (max, sum) in the workspace, the grid waits at one barrier (a cooperative
// launch: every CTA resident), then every CTA folds its row's partials in
// the same order (the same bits in every CTA and on every run) and writes y
// from its registers and shared memory.  x is read once, where the split
// tier reads it twice in two launches and a cluster holds a row on at most
// 16 SMs.
template <class T, int V, int B, bool LOG>
__global__ void __launch_bounds__(B, kgen::softmax::kGridCtasPerSm<B>)
    grid_kernel(const T* x, T* y, int64_t cols, int parts, Online<compute_t<T>>* partial) {
  using Cm = compute_t<T>;
  constexpr int P = rows::kVec<T>;
  constexpr int R = V < rows::kSliceRegPacks ? V : rows::kSliceRegPacks;  // in registers
  const int64_t row = blockIdx.x / parts;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  const rows::Slice s = rows::slice_of<T, B>(xr, cols, static_cast<int>(blockIdx.x % parts), parts);
  const rows::Held<V - R, B> held;
  held.load(s, R, xr);
  rows::Raw v[R];
#pragma unroll
  for (int i = 0; i < R; ++i)
    v[i] = s.has<B>(i) ? rows::load_raw(xr + s.col<B>(i, P), true) : rows::raw_fill(rows::raw_neg_inf<T>());
  rows::landed(v, cols < 0);
  const Cm e = s.edge >= 0 ? to_compute(xr[s.edge]) : neg_inf<Cm>();
  Online<Cm> st = online_start(e);
#pragma unroll
  for (int i = 0; i < R; ++i) online_add_pack<T>(st, v[i]);
  held.wait();
  held.for_each(s, R, [&](const rows::Raw& h, int) { online_add_pack<T>(st, h); });
  rows::keep_raw(v);
  st = block_all_reduce_online<B>(st);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = st;
    __threadfence();
  }
  cooperative_groups::this_grid().sync();
  // the row's partials, read past L1 (written by other SMs during this launch)
  Online<Cm> r = Online<Cm>::identity();
  for (int g = threadIdx.x; g < parts; g += B) {
    const Online<Cm>* q = partial + row * parts + g;
    Online<Cm> w;
    w.m = __ldcg(&q->m);
    w.s = __ldcg(&q->s);
    r = Online<Cm>::merge(r, w);
  }
  st = block_all_reduce_online<B>(r);
  rows::after(v, st.s < Cm(0));
  const Cm ls = row_scale<T, LOG>(st.s);
  const bool vec_y = rows::congruent(x, y);
  const auto out = [&](const rows::Raw& pk, int i) {
    Cm o[P];
#pragma unroll
    for (int j = 0; j < P; ++j) o[j] = softmax_of<LOG>(rows::value<T>(pk, j), st.m, ls);
    rows::store_values(yr + s.col<B>(i, P), o, vec_y);
  };
#pragma unroll
  for (int i = 0; i < R; ++i)
    if (s.has<B>(i)) out(v[i], i);
  held.for_each(s, R, out);
  if (s.edge >= 0) yr[s.edge] = from_compute<T>(softmax_of<LOG>(e, st.m, ls));
}

// rows x parts CTAs (grid_parts: at most kGridCtasPerSm<B> an SM), launched
// cooperatively so that all are resident at once, each with the shared
// memory of its held packs; the workspace holds a partial a CTA.
template <class T, int V, int B, bool LOG>
cudaError_t launch_grid_kernel(const kgen::softmax::Problem& p, cudaStream_t stream) {
  constexpr auto kernel = grid_kernel<T, V, B, LOG>;
  const size_t smem = rows::held_bytes<V, B>();
  if (smem > 48 * 1024) {
    const cudaError_t err = allow_max_smem<kernel>(*p.device);
    if (err != cudaSuccess) return err;
  }
  const int parts = static_cast<int>(kgen::softmax::grid_parts(p, B));
  const dim3 grid(static_cast<unsigned>(p.rows * parts));
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  const cudaError_t err = launch_with(attr, true, kernel, grid, B, smem, stream, static_cast<const T*>(p.x),
                                      static_cast<T*>(p.y), p.cols, parts,
                                      static_cast<Online<compute_t<T>>*>(p.workspace));
  return err != cudaSuccess ? err : cudaGetLastError();
}

template <class T, int V, int B>
cudaError_t launch_grid(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  return p.log ? launch_grid_kernel<T, V, B, true>(p, stream) : launch_grid_kernel<T, V, B, false>(p, stream);
}

// The tile kernel of each mode, for tiles::launch.
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
  using Cm = compute_t<T>;
  const FastDiv cols(static_cast<uint32_t>(p.cols > 0 ? p.cols : 1));  // flat rows: at most 256
  return tiles::launch<T, C, B, 1, TileKernels<T, B, C / rows::kVec<T>>::template Of>(
      p, stream, static_cast<int>(sizeof(RowStat<Cm>)), static_cast<const T*>(p.x), static_cast<T*>(p.y), cols);
}

// Pack 1: the uncached row kernel for the last dim, the strided two-pass
// kernel otherwise.
template <class T>
cudaError_t launch_generic(const void* problem, cudaStream_t stream) {
  return launch_generic_of<false, T, launch_uncached<T, 1, 256>>(problem, stream);
}

}  // namespace softmax
}  // namespace device
}  // namespace kgen
