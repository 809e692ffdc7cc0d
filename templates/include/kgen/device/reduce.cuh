// Warp- and block-wide all-reductions by shuffles; no atomics, so results
// are bitwise reproducible.
#pragma once

#include "kgen/device/common.cuh"

namespace kgen {
namespace device {

struct MaxOp {
  template <class C> __device__ __forceinline__ C operator()(C a, C b) const { return a > b ? a : b; }
};
struct SumOp {
  template <class C> __device__ __forceinline__ C operator()(C a, C b) const { return a + b; }
};

// All-reduce across groups of WIDTH consecutive lanes (WIDTH a power of two
// <= 32).  Every lane of the warp must call it.
template <int WIDTH, class C, class Op>
__device__ __forceinline__ C group_all_reduce(C v, Op op) {
#pragma unroll
  for (int m = WIDTH / 2; m > 0; m /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, m, WIDTH));
  return v;
}

// All-reduce across a block of BLOCK threads (a multiple of 32).  Every
// thread of the block must call it.
template <int BLOCK, class C, class Op>
__device__ __forceinline__ C block_all_reduce(C v, Op op, C identity) {
  constexpr int kWarps = BLOCK / 32;
  __shared__ C partial[kWarps];
  __shared__ C result;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = group_all_reduce<32>(v, op);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    C w = lane < kWarps ? partial[lane] : identity;
    w = group_all_reduce<32>(w, op);
    if (lane == 0) result = w;
  }
  __syncthreads();
  const C r = result;
  __syncthreads();  // the next call may overwrite `result`
  return r;
}

}  // namespace device
}  // namespace kgen
