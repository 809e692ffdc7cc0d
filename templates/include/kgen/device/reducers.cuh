// The reduction ops as policies: accumulator type, identity, how elements
// enter in index order (accumulate, accumulate_pack), how two accumulators combine, and the output (finish).
// Combines are order-independent in their result where PyTorch defines one
// (NaN wins, ties go to the lower index), so every fixed combine order gives
// PyTorch's answer and a fixed order gives the same bits on every run.
#pragma once

#include <climits>
#include <cstdint>
#include <type_traits>

#include "kgen/device/common.cuh"

namespace kgen {
namespace device {
namespace reduce {

template <class C> __device__ __forceinline__ bool is_nan(C v) { return v != v; }
__device__ __forceinline__ bool is_nan(int) { return false; }

template <class C> __device__ __forceinline__ C lowest();
template <class C> __device__ __forceinline__ C highest();
template <> __device__ __forceinline__ float lowest<float>() { return neg_inf<float>(); }
template <> __device__ __forceinline__ double lowest<double>() { return neg_inf<double>(); }
template <> __device__ __forceinline__ int lowest<int>() { return INT_MIN; }
template <> __device__ __forceinline__ float highest<float>() { return -neg_inf<float>(); }
template <> __device__ __forceinline__ double highest<double>() { return -neg_inf<double>(); }
template <> __device__ __forceinline__ int highest<int>() { return INT_MAX; }

// NaN-propagating max / min in one instruction where the ISA has one
// (float32, sm_80+); the two-test form elsewhere.
template <bool MAX, class C> __device__ __forceinline__ C extreme_nan(C a, C b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return (MAX ? b > a : b < a) ? b : a;
}
template <bool MAX> __device__ __forceinline__ float extreme_nan(float a, float b) {
  float d;
  if (MAX) asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  else asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// The extreme of a pack of half types in their own precision (exact for
// max / min), two lanes per instruction.
template <bool MAX, class H2, class T, int P>
__device__ __forceinline__ float pack_extreme_half(const Pack<T, P>& v) {
  const H2* h = reinterpret_cast<const H2*>(v.v);
  H2 m = h[0];
#pragma unroll
  for (int k = 1; k < P / 2; ++k) m = MAX ? __hmax2_nan(m, h[k]) : __hmin2_nan(m, h[k]);
  const T e = MAX ? __hmax_nan(m.x, m.y) : __hmin_nan(m.x, m.y);
  return to_compute(e);
}

// The extreme of a pack, NaN-propagating, in the compute type.
template <bool MAX, class T, int P>
__device__ __forceinline__ compute_t<T> pack_extreme(const Pack<T, P>& v) {
  if constexpr (P % 2 == 0 && std::is_same<T, __half>::value) {
    return pack_extreme_half<MAX, __half2>(v);
  } else if constexpr (P % 2 == 0 && std::is_same<T, __nv_bfloat16>::value) {
    return pack_extreme_half<MAX, __nv_bfloat162>(v);
  } else {
    compute_t<T> m = to_compute(v.v[0]);
#pragma unroll
    for (int j = 1; j < P; ++j) m = extreme_nan<MAX>(m, to_compute(v.v[j]));
    return m;
  }
}

// int32 sums wrap (two's complement) instead of overflowing into UB.
template <class C> __device__ __forceinline__ C add(C a, C b) { return a + b; }
__device__ __forceinline__ int add(int a, int b) {
  return static_cast<int>(static_cast<unsigned>(a) + static_cast<unsigned>(b));
}

// sum and mean (mean: finish scales by 1/reduce, as PyTorch's MeanOps does)
template <class T>
struct Sum {
  using C = compute_t<T>;
  using Acc = C;
  using Out = T;
  static __device__ __forceinline__ Acc identity() { return C(0); }
  static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return add(a, b); }
  static __device__ __forceinline__ Out finish(Acc a, C scale) { return from_compute<T>(a * scale); }
  // elements in increasing index order, one at a time or a pack at a time
  static __device__ __forceinline__ void accumulate(Acc& a, T v, int64_t) { a = add(a, to_compute(v)); }
  template <int P>
  static __device__ __forceinline__ void accumulate_pack(Acc& a, const Pack<T, P>& v, int64_t) {
#pragma unroll
    for (int j = 0; j < P; ++j) a = add(a, to_compute(v.v[j]));
  }
};

// max (MAX) or min; NaN wins
template <class T, bool MAX>
struct Extreme {
  using C = compute_t<T>;
  using Acc = C;
  using Out = T;
  static __device__ __forceinline__ Acc identity() { return MAX ? lowest<C>() : highest<C>(); }
  static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return extreme_nan<MAX>(a, b); }
  static __device__ __forceinline__ Out finish(Acc a, C) { return from_compute<T>(a); }
  static __device__ __forceinline__ void accumulate(Acc& a, T v, int64_t) {
    a = extreme_nan<MAX>(a, to_compute(v));
  }
  template <int P>
  static __device__ __forceinline__ void accumulate_pack(Acc& a, const Pack<T, P>& v, int64_t) {
    a = extreme_nan<MAX>(a, pack_extreme<MAX>(v));
  }
};

template <class C>
struct ArgAcc {
  C v;
  int64_t i;
};

// argmax (MAX) or argmin: the first NaN, else the first extreme
template <class T, bool MAX>
struct Arg {
  using C = compute_t<T>;
  using Acc = ArgAcc<C>;
  using Out = int64_t;
  static __device__ __forceinline__ Acc identity() {
    return Acc{MAX ? lowest<C>() : highest<C>(), INT64_MAX};
  }
  static __device__ __forceinline__ Acc combine(Acc a, Acc b) {
    const bool na = is_nan(a.v), nb = is_nan(b.v);
    if (na || nb) return na && (!nb || a.i < b.i) ? a : b;
    if (a.v == b.v) return a.i < b.i ? a : b;
    return (MAX ? a.v > b.v : a.v < b.v) ? a : b;
  }
  // Only a reduction whose every element equals the identity's value
  // (all -inf for argmax, all +inf for argmin; int32 extremes alike) keeps
  // the identity's index: its answer is the first element, 0.
  static __device__ __forceinline__ Out finish(Acc a, C) { return a.i == INT64_MAX ? 0 : a.i; }
  // In increasing index order a later element replaces the running one only
  // if strictly better or the first NaN: !(c <= v) is c > v or c NaN, and
  // a NaN running value is never replaced.
  static __device__ __forceinline__ bool better(C c, const Acc& a) {
    return (MAX ? !(c <= a.v) : !(c >= a.v)) && !is_nan(a.v);
  }
  static __device__ __forceinline__ void accumulate(Acc& a, T v, int64_t i) {
    const C c = to_compute(v);
    if (better(c, a)) a = Acc{c, i};
  }
  // A pack's extreme first (cheap); only a pack that beats the running
  // value is searched for its first extreme (rare after the first packs).
  template <int P>
  static __device__ __forceinline__ void accumulate_pack(Acc& a, const Pack<T, P>& v, int64_t i0) {
    const C m = pack_extreme<MAX>(v);
    if (!better(m, a)) return;
    const bool nan = is_nan(m);
    int first = P - 1;
#pragma unroll
    for (int j = P - 1; j >= 0; --j) {
      const C c = to_compute(v.v[j]);
      if (nan ? is_nan(c) : c == m) first = j;
    }
    a = Acc{m, i0 + first};
  }
};

// ---------------------------------------------------- moving accumulators
template <class C> __device__ __forceinline__ C shfl_xor(C v, int mask, int width) {
  return __shfl_xor_sync(0xffffffffu, v, mask, width);
}
template <class C> __device__ __forceinline__ ArgAcc<C> shfl_xor(ArgAcc<C> v, int mask, int width) {
  return ArgAcc<C>{__shfl_xor_sync(0xffffffffu, v.v, mask, width),
                   static_cast<int64_t>(__shfl_xor_sync(0xffffffffu, static_cast<long long>(v.i), mask, width))};
}

// Partials written by other blocks: read past L1 (it is not coherent).
__device__ __forceinline__ float load_cg(const float* p) { return __ldcg(p); }
__device__ __forceinline__ double load_cg(const double* p) { return __ldcg(p); }
__device__ __forceinline__ int load_cg(const int* p) { return __ldcg(p); }
template <class C> __device__ __forceinline__ ArgAcc<C> load_cg(const ArgAcc<C>* p) {
  return ArgAcc<C>{load_cg(&p->v), static_cast<int64_t>(__ldcg(reinterpret_cast<const long long*>(&p->i)))};
}

}  // namespace reduce
}  // namespace device
}  // namespace kgen
