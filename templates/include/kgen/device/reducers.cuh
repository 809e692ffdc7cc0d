// The reduction ops as policies: accumulator type, identity, how an element
// enters (lift), how two accumulators combine, and the output (finish).
// Combines are order-independent in their result where PyTorch defines one
// (NaN wins, ties go to the lower index), so every fixed combine order gives
// PyTorch's answer and a fixed order gives the same bits on every run.
#pragma once

#include <climits>
#include <cstdint>

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
  static __device__ __forceinline__ Acc lift(T v, int64_t) { return to_compute(v); }
  static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return add(a, b); }
  static __device__ __forceinline__ Out finish(Acc a, C scale) { return from_compute<T>(a * scale); }
};

// max (MAX) or min; NaN wins
template <class T, bool MAX>
struct Extreme {
  using C = compute_t<T>;
  using Acc = C;
  using Out = T;
  static __device__ __forceinline__ Acc identity() { return MAX ? lowest<C>() : highest<C>(); }
  static __device__ __forceinline__ Acc lift(T v, int64_t) { return to_compute(v); }
  static __device__ __forceinline__ Acc combine(Acc a, Acc b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (MAX ? b > a : b < a) ? b : a;
  }
  static __device__ __forceinline__ Out finish(Acc a, C) { return from_compute<T>(a); }
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
  static __device__ __forceinline__ Acc lift(T v, int64_t i) { return Acc{to_compute(v), i}; }
  static __device__ __forceinline__ Acc combine(Acc a, Acc b) {
    const bool na = is_nan(a.v), nb = is_nan(b.v);
    if (na || nb) return na && (!nb || a.i < b.i) ? a : b;
    if (a.v == b.v) return a.i < b.i ? a : b;
    return (MAX ? a.v > b.v : a.v < b.v) ? a : b;
  }
  static __device__ __forceinline__ Out finish(Acc a, C) { return a.i; }
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
