// How the row kernels read x: a load functor gives the compute-type values of
// pack_size adjacent columns of a row.  DirectLoad reads x; MaskLoad fuses
// the attention scale and mask (softmax(scale * x + mask), causal) so that
// the masked softmax costs one pass over x and the mask.
#pragma once

#include "kgen/device/common.cuh"
#include "kgen/device/fastdiv.cuh"
#include "kgen/device/reduce.cuh"
#include "kgen/device/softmax_common.cuh"
#include "softmax/problem.hpp"

namespace kgen {
namespace device {
namespace softmax {

template <class T>
struct DirectLoad {
  using Cached = T;    // the smem tier caches x as it is
  using Max = MaxOp;   // NaN reaches y through the sum
  static constexpr int kBatchBytes = 32;  // the smem tier's loads in flight a thread
  // the warp tier may read past a row into the next inside x (values
  // discarded)
  static constexpr bool kOverread = true;
  const T* x;
  int64_t cols;

  struct Row {
    const T* x;
  };
  __device__ __forceinline__ Row row(int64_t r) const { return Row{x + r * cols}; }
  // row r, whose first element the caller has at `offset` (r x cols)
  __device__ __forceinline__ Row row(int64_t, int64_t offset) const { return Row{x + offset}; }
  template <int P>
  __device__ __forceinline__ void load(const Row& r, int64_t col, compute_t<T>* dst) const {
    load_pack<T, P>(r.x + col, dst);
  }
  // K packs of a row, pack k at column col_of(k), into dst[k * P + j]
  template <int K, int P, class ColOf>
  __device__ __forceinline__ void load_row(const Row& r, ColOf col_of, compute_t<T>* dst) const {
#pragma unroll
    for (int k = 0; k < K; ++k) load_pack<T, P>(r.x + col_of(k), dst + k * P);
  }
  // x as stored, for the smem tier's cache (no round trip through float)
  template <int P>
  __device__ __forceinline__ Pack<T, P> raw(const Row& r, int64_t col) const {
    return *reinterpret_cast<const Pack<T, P>*>(r.x + col);
  }
  // rows whose every value is -inf give NaN, as in PyTorch
  __device__ __forceinline__ bool safe() const { return false; }
};

// scale * x, then the mask: an additive mask is added, a zero byte of a bool
// mask or a key past the query (causal) gives -inf.  The mask row of x's row
// r = (b * heads + h) * queries + q sits at the Mask's strides; its pointer
// is aligned to the pack (checked by supports), so mask packs are one load.
template <class T>
struct MaskLoad {
  using C = compute_t<T>;
  using Cached = C;     // scaled values are kept unrounded
  using Max = NanMaxOp;  // a NaN key keeps its row from looking fully masked
  // half the plain load's batch: the mask's packs and the float cache took
  // the smem tier past its 32 registers (36-44 bytes spilled in bfloat16)
  static constexpr int kBatchBytes = 16;
  static constexpr bool kOverread = false;  // mask rows are broadcast, not laid out as x's
  const T* x;
  int64_t cols;
  const void* mask;
  C scale;
  int kind;  // kgen_mask_kind_t
  int64_t heads, queries;
  int64_t batch_stride, head_stride, query_stride;
  bool causal, safe_rows;
  // row -> (b, h, q) by multiply-shift when every index fits 31 bits: two
  // 64-bit divisions a row doubled the instructions of 1024-key rows
  bool narrow;
  FastDiv by_queries, by_heads;

  static MaskLoad make(const kgen::softmax::Problem& p) {
    const kgen::softmax::Mask& m = *p.mask;
    const bool narrow = p.rows < (int64_t{1} << 31);
    return MaskLoad{static_cast<const T*>(p.x), p.cols, m.data, static_cast<C>(m.scale), m.kind,
                    m.heads, m.queries, m.batch_stride, m.head_stride, m.query_stride, m.causal, m.safe,
                    narrow, FastDiv(narrow ? static_cast<uint32_t>(m.queries) : 1u),
                    FastDiv(narrow ? static_cast<uint32_t>(m.heads) : 1u)};
  }

  struct Row {
    const T* x;
    int64_t mask_offset;  // elements
    int64_t query;
  };
  __device__ __forceinline__ Row row(int64_t r) const { return row(r, r * cols); }
  // row r, whose first element the caller has at `offset` (r x cols)
  __device__ __forceinline__ Row row(int64_t r, int64_t offset) const {
    int64_t q, h, b;
    if (narrow) {
      uint32_t uq, uh;
      const uint32_t bh = by_queries.divmod(static_cast<uint32_t>(r), &uq);
      b = by_heads.divmod(bh, &uh);
      q = uq, h = uh;
    } else {
      q = r % queries;
      const int64_t bh = r / queries;
      h = bh % heads, b = bh / heads;
    }
    return Row{x + offset, b * batch_stride + h * head_stride + q * query_stride, q};
  }
  template <int P>
  __device__ __forceinline__ void load(const Row& r, int64_t col, C* dst) const {
    load_row<1, P>(r, [&](int) { return col; }, dst);
  }
  // K packs of a row, pack k at column col_of(k), into dst[k * P + j]:
  // every pack of x, then every pack of the mask (one branch on its kind
  // for all of them), then the arithmetic.  A pack at a time, behind the
  // kind's branches, ptxas issued one or two loads and waited on them
  // before the next pack's (the float16 variant of 64 values a lane: 24
  // rounds of loads over its three kinds' code, sm_90 SASS,
  // scripts/load_rounds.py; bench/NOTES.md warp v2).
  template <int K, int P, class ColOf>
  __device__ __forceinline__ void load_row(const Row& r, ColOf col_of, C* dst) const {
    Pack<T, P> xs[K];
#pragma unroll
    for (int k = 0; k < K; ++k) xs[k] = *reinterpret_cast<const Pack<T, P>*>(r.x + col_of(k));
    if (kind == KGEN_MASK_ADDITIVE) {
      Pack<T, P> add[K];
      const T* m = static_cast<const T*>(mask) + r.mask_offset;
#pragma unroll
      for (int k = 0; k < K; ++k) add[k] = *reinterpret_cast<const Pack<T, P>*>(m + col_of(k));
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int j = 0; j < P; ++j) dst[k * P + j] = to_compute(xs[k].v[j]) * scale + to_compute(add[k].v[j]);
    } else if (kind == KGEN_MASK_BOOL) {
      Pack<unsigned char, P> keep[K];
      const unsigned char* m = static_cast<const unsigned char*>(mask) + r.mask_offset;
#pragma unroll
      for (int k = 0; k < K; ++k) keep[k] = *reinterpret_cast<const Pack<unsigned char, P>*>(m + col_of(k));
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int j = 0; j < P; ++j) dst[k * P + j] = keep[k].v[j] ? to_compute(xs[k].v[j]) * scale : neg_inf<C>();
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int j = 0; j < P; ++j) dst[k * P + j] = to_compute(xs[k].v[j]) * scale;
    }
    if (causal) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        // keys col + j past the query: j > query - col, clamped to [-1, P]
        // so that the compares are 32-bit
        const int64_t d = r.query - col_of(k);
        const int last = d < 0 ? -1 : d > P ? P : static_cast<int>(d);
#pragma unroll
        for (int j = 0; j < P; ++j)
          if (j > last) dst[k * P + j] = neg_inf<C>();
      }
    }
  }
  // what the smem tier caches: the scaled, masked values in float
  template <int P>
  __device__ __forceinline__ Pack<C, P> raw(const Row& r, int64_t col) const {
    Pack<C, P> out;
    load<P>(r, col, out.v);
    return out;
  }
  __device__ __forceinline__ bool safe() const { return safe_rows; }
};

}  // namespace softmax
}  // namespace device
}  // namespace kgen
