// What kgen-bench and kgen-tune share: checked CUDA calls, argument
// parsing, random inputs and event timing.  Both time a variant the same
// way: warm-up, then CUDA-event-timed launches over sets of buffers that
// rotate so that together they exceed the L2.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "kgen/kgen.h"

namespace {

#define CUDA_OK(expr)                                                               \
  do {                                                                              \
    cudaError_t e_ = (expr);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// "f32" -> KGEN_FLOAT32 ...; -1 for a name it does not know.
kgen_dtype_t dtype_from_name(const std::string& s) {
  if (s == "f32") return KGEN_FLOAT32;
  if (s == "f16") return KGEN_FLOAT16;
  if (s == "bf16") return KGEN_BFLOAT16;
  if (s == "f64") return KGEN_FLOAT64;
  if (s == "i32") return KGEN_INT32;
  if (s == "i64") return KGEN_INT64;
  if (s == "bool") return KGEN_BOOL;
  if (s == "u8") return KGEN_UINT8;
  return static_cast<kgen_dtype_t>(-1);
}

kgen_dtype_t parse_dtype(const std::string& s) {
  const kgen_dtype_t d = dtype_from_name(s);
  if (static_cast<int>(d) < 0) {
    std::fprintf(stderr, "unknown dtype %s\n", s.c_str());
    std::exit(2);
  }
  return d;
}

// Deterministic pseudo-random fill: sums of three uniforms, about [-6, 6].

__device__ float hash_uniform(uint64_t i, uint64_t seed) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (z >> 40) * (1.0f / 16777216.0f);
}

__global__ void fill_random(void* p, int64_t n, int dtype, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const float v = (hash_uniform(i, seed) + hash_uniform(i + n, seed) + hash_uniform(i + 2 * n, seed) - 1.5f) * 4.0f;
    switch (dtype) {
      case KGEN_FLOAT32: static_cast<float*>(p)[i] = v; break;
      case KGEN_FLOAT64: static_cast<double*>(p)[i] = v; break;
      case KGEN_INT32: static_cast<int*>(p)[i] = static_cast<int>(v * 1000.0f); break;
      case KGEN_INT64: static_cast<long long*>(p)[i] = static_cast<long long>(v * 1000.0f); break;
      case KGEN_BOOL: static_cast<uint8_t*>(p)[i] = v > 0.0f; break;
      case KGEN_UINT8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int>(v * 20.0f)); break;
      case KGEN_FLOAT16: static_cast<uint16_t*>(p)[i] = __half_as_ushort(__float2half_rn(v)); break;
      case KGEN_BFLOAT16: {
        uint32_t bits = __float_as_uint(v);
        bits += 0x7FFFu + ((bits >> 16) & 1u);
        static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(bits >> 16);
        break;
      }
    }
  }
}

// Median of `reps` event-timed runs of fn(set) after warm-up; sets rotate.
double median_us(int reps, int sets, const std::function<void(int)>& fn) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  // warm-up: clocks up, buffers touched, first-launch costs paid
  for (int i = 0; i < 10; ++i) fn(i % sets);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) {
    CUDA_OK(cudaEventRecord(a));
    fn(i % sets);
    CUDA_OK(cudaEventRecord(b));
    CUDA_OK(cudaEventSynchronize(b));
    CUDA_OK(cudaEventElapsedTime(&ms[i], a, b));
  }
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2] * 1000.0;
}

// The commit the results are recorded under ($KGEN_COMMIT; "unknown").
std::string commit() {
  const char* c = std::getenv("KGEN_COMMIT");
  return c && *c ? c : "unknown";
}

// Sets of buffers of `bytes` each that together exceed 4x the L2: a set's
// inputs have left the L2 when it runs again.  At most kMaxSets: a tensor
// of a few bytes would otherwise want millions of allocations; below about
// 0.5 MB a set (4x a 60 MB L2 / 512) the sets stay partly in the L2, as
// such small tensors do in a real program.
constexpr size_t kMaxSets = 512;
int sets_past_l2(size_t l2_bytes, size_t bytes) {
  const size_t want = (4 * l2_bytes + bytes - 1) / std::max<size_t>(bytes, 1);
  return static_cast<int>(std::min(kMaxSets, std::max<size_t>(1, want)));
}

// The samples of one variant on one case, in microseconds: `min_runs` to
// `max_runs` event-timed launches after `warmups` untimed ones, until their
// sum passes budget_ms.  Sorted.
std::vector<double> budget_samples(double budget_ms, int min_runs, int max_runs, int sets,
                                   const std::function<void(int)>& fn, int warmups = 2) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  for (int i = 0; i < warmups; ++i) fn(i % sets);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<double> us;
  double spent_ms = 0;
  for (int i = 0; i < max_runs && (i < min_runs || spent_ms < budget_ms); ++i) {
    CUDA_OK(cudaEventRecord(a));
    fn(i % sets);
    CUDA_OK(cudaEventRecord(b));
    CUDA_OK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    spent_ms += ms;
    us.push_back(ms * 1000.0);
  }
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  std::sort(us.begin(), us.end());
  return us;
}

}  // namespace
