// Element types, vector packs and math shared by every kernel family.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace kgen {
namespace device {

// Half types are computed in float32, float64 in float64, int32 in int32.
template <class T> struct ComputeOf { using type = float; };
template <> struct ComputeOf<double> { using type = double; };
template <> struct ComputeOf<int> { using type = int; };
template <class T> using compute_t = typename ComputeOf<T>::type;

__device__ __forceinline__ float to_compute(float v) { return v; }
__device__ __forceinline__ double to_compute(double v) { return v; }
__device__ __forceinline__ int to_compute(int v) { return v; }
__device__ __forceinline__ float to_compute(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_compute(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T from_compute(compute_t<T> v);
template <> __device__ __forceinline__ float from_compute<float>(float v) { return v; }
template <> __device__ __forceinline__ double from_compute<double>(double v) { return v; }
template <> __device__ __forceinline__ int from_compute<int>(int v) { return v; }
template <> __device__ __forceinline__ __half from_compute<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_compute<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class C> __device__ __forceinline__ C neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return -__int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double neg_inf<double>() {
  return -__longlong_as_double(0x7ff0000000000000ll);
}

// exp in float as the SFU's 2^(v log2 e) (as __expf: within 2 + 1.2|v|
// ulp, a few ulp where softmax values are not negligible; the float tests
// hold 2e-5 relative).  The accurate expf costs ~6 more instructions an
// element, and half-type softmax is instruction-bound, not memory-bound:
// the masked float16 rows of 1024 ran at 77% of the SM's issue rate and 38%
// of DRAM's (H100, ncu, bench/NOTES.md v4).  The flush-to-zero form: results
// below 2^-126 (1.2e-38) are 0, where __expf's range check took three more
// instructions an exp.  Double and log stay accurate.
__device__ __forceinline__ float kexp(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v * 1.4426950408889634f));  // log2 e
  return r;
}
__device__ __forceinline__ double kexp(double v) { return exp(v); }
__device__ __forceinline__ float klog(float v) { return logf(v); }
__device__ __forceinline__ double klog(double v) { return log(v); }

// kernel<<<grid, block, smem, stream>>>(args...) through cudaLaunchKernelEx
// with one launch attribute (a cluster's size, a cooperative launch, a
// programmatic dependent launch), or none when !use.
template <class Kernel, class... Args>
cudaError_t launch_with(cudaLaunchAttribute attr, bool use, Kernel kernel, dim3 grid, int block, size_t smem,
                        cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = use ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

// N elements moved as one aligned vector access (up to 16 bytes).
template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <class T, int N>
__device__ __forceinline__ void load_pack(const T* src, compute_t<T>* dst) {
  const Pack<T, N> pk = *reinterpret_cast<const Pack<T, N>*>(src);
#pragma unroll
  for (int i = 0; i < N; ++i) dst[i] = to_compute(pk.v[i]);
}

// Makes every 32-bit word of U packs depend on every pack's first word and
// on `never` (false at run time, unknown to ptxas), so that all U loads are
// issued before the first value is used (rows::landed does the same for the
// softmax slices' raw packs).  Packs of under 4 bytes are left as they are.
template <class T, int N, int U>
__device__ __forceinline__ void landed(Pack<T, N> (&v)[U], bool never) {
  if constexpr (sizeof(Pack<T, N>) % 4 == 0) {
    constexpr int kWords = sizeof(Pack<T, N>) / 4;
    uint32_t z = never ? ~0u : 0u;
#pragma unroll
    for (int u = 0; u < U; ++u) z &= reinterpret_cast<const uint32_t*>(&v[u])[0];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int w = 0; w < kWords; ++w) reinterpret_cast<uint32_t*>(&v[u])[w] ^= z;
  }
}

template <class T, int N>
__device__ __forceinline__ void store_pack(T* dst, const compute_t<T>* src) {
  Pack<T, N> pk;
#pragma unroll
  for (int i = 0; i < N; ++i) pk.v[i] = from_compute<T>(src[i]);
  *reinterpret_cast<Pack<T, N>*>(dst) = pk;
}

}  // namespace device
}  // namespace kgen
