// Helpers for GPU tests: checked CUDA calls, device buffers, host-side
// conversion of every dtype, random data, poison.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "gpu/host_tensor.hpp"
#include "kgen/kgen.h"

#define CUDA_REQUIRE(expr)                                                     \
  do {                                                                         \
    cudaError_t err_ = (expr);                                                 \
    INFO(#expr << ": " << cudaGetErrorString(err_));                           \
    REQUIRE(err_ == cudaSuccess);                                              \
  } while (0)

#define KGEN_REQUIRE(expr)                                                     \
  do {                                                                         \
    kgen_status_t st_ = (expr);                                                \
    INFO(#expr << ": " << kgen_last_error());                                  \
    REQUIRE(st_ == KGEN_OK);                                                   \
  } while (0)

namespace test {

struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { CUDA_REQUIRE(cudaMalloc(&ptr, n ? n : 1)); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr; }
  template <class T = void> T* at(size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(ptr) + byte_offset);
  }
};

inline const char* dtype_short(kgen_dtype_t d) {
  switch (d) {
    case KGEN_FLOAT32: return "f32";
    case KGEN_FLOAT16: return "f16";
    case KGEN_BFLOAT16: return "bf16";
    case KGEN_FLOAT64: return "f64";
    case KGEN_INT32: return "i32";
    case KGEN_INT64: return "i64";
    case KGEN_BOOL: return "bool";
    case KGEN_UINT8: return "u8";
  }
  return "?";
}


inline std::mt19937_64& rng() {
  static std::mt19937_64 gen(20261122);
  return gen;
}

// Values spread like activations: normal, sd 3, never all equal, no zeros.
inline HostTensor random_tensor(kgen_dtype_t d, size_t n) {
  HostTensor t(d, n);
  std::normal_distribution<double> dist(0.0, 3.0);
  for (size_t i = 0; i < n; ++i) t.set(i, dist(rng()));
  return t;
}

// Uniform in [lo, hi] as stored in the dtype, never exactly 0.
inline HostTensor uniform_tensor(kgen_dtype_t d, size_t n, double lo, double hi) {
  HostTensor t(d, n);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (size_t i = 0; i < n; ++i)
    do t.set(i, dist(rng())); while (t.get(i) == 0);
  return t;
}

// The elements of t as float64, and back (rounded to the dtype).
inline std::vector<double> values(const HostTensor& t) {
  std::vector<double> v(t.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.get(i);
  return v;
}
inline HostTensor to_tensor(kgen_dtype_t d, const std::vector<double>& v) {
  HostTensor t(d, v.size());
  for (size_t i = 0; i < v.size(); ++i) t.set(i, v[i]);
  return t;
}

inline void upload(const DeviceBuffer& b, const HostTensor& t, size_t byte_offset = 0) {
  CUDA_REQUIRE(cudaMemcpy(b.at(byte_offset), t.bytes.data(), t.bytes.size(), cudaMemcpyHostToDevice));
}
inline HostTensor download(const DeviceBuffer& b, kgen_dtype_t d, size_t n, size_t byte_offset = 0) {
  HostTensor t(d, n);
  CUDA_REQUIRE(cudaMemcpy(t.bytes.data(), b.at(byte_offset), t.bytes.size(), cudaMemcpyDeviceToHost));
  return t;
}

// Bytes of `b` equal to `byte` (an output that an error must leave as it was).
inline size_t count_bytes(const DeviceBuffer& b, unsigned char byte) {
  std::vector<unsigned char> host(b.bytes);
  CUDA_REQUIRE(cudaMemcpy(host.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost));
  size_t n = 0;
  for (unsigned char c : host) n += c == byte;
  return n;
}

// A byte pattern that decodes to NaN in every float dtype: an unwritten
// element never compares equal to a reference.
constexpr unsigned char kNanByte = 0xFF;
// One that decodes to a large positive finite value in every float dtype
// (float16 203.25, float32 and bfloat16 1.5e16, float64 1e126): outside the
// range of every softmax, log_softmax and gradient output, and equal neither
// to NaN nor to 0, the values of rows with no key left.
constexpr unsigned char kOutsideByte = 0x5A;

inline void poison(void* p, size_t bytes, cudaStream_t s = nullptr, unsigned char byte = kNanByte) {
  CUDA_REQUIRE(cudaMemsetAsync(p, byte, bytes, s));
}

// Whether the last failed call's message names `arg` first ("arg: ..."),
// as every validation message does.
inline bool last_error_names(const std::string& arg) {
  return std::string(kgen_last_error()).rfind(arg + ":", 0) == 0;
}

// Captures call(stream) into a CUDA graph on a fresh stream (the call must
// succeed while capturing), then replays the graph twice, poisoning `out`
// before each replay and running check() after it.
template <class Call, class Check>
void capture_and_replay(Call call, void* out, size_t out_bytes, Check check) {
  cudaStream_t st;
  CUDA_REQUIRE(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CUDA_REQUIRE(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  const kgen_status_t status = call(st);
  CUDA_REQUIRE(cudaStreamEndCapture(st, &graph));
  INFO(kgen_last_error());
  REQUIRE(status == KGEN_OK);
  cudaGraphExec_t exec;
  CUDA_REQUIRE(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 2; ++rep) {
    poison(out, out_bytes, st);
    CUDA_REQUIRE(cudaGraphLaunch(exec, st));
    CUDA_REQUIRE(cudaStreamSynchronize(st));
    check();
  }
  CUDA_REQUIRE(cudaGraphExecDestroy(exec));
  CUDA_REQUIRE(cudaGraphDestroy(graph));
  CUDA_REQUIRE(cudaStreamDestroy(st));
}

struct Tolerance {
  double atol, rtol;
};

// Output rounding dominates: float16 keeps 11 bits, bfloat16 8, float32 24.
inline Tolerance tolerance(kgen_dtype_t d) {
  switch (d) {
    case KGEN_FLOAT32: return {1e-6, 2e-5};
    case KGEN_FLOAT64: return {1e-13, 1e-11};
    case KGEN_FLOAT16: return {2e-5, 2e-3};
    case KGEN_BFLOAT16: return {2e-4, 1.6e-2};
    case KGEN_INT32: return {0, 0};
    case KGEN_INT64: return {0, 0};
    case KGEN_BOOL: return {0, 0};
    case KGEN_UINT8: return {0, 0};
  }
  return {0, 0};
}

// Counts elements of `got` outside the tolerance of `want` (NaN must match NaN,
// infinities must match exactly).  The reference is first rounded to the
// output dtype, so that a value past its range (float16 overflows at 65504)
// is expected as the infinity it becomes.  Reports the first few.  `slack`,
// when given, adds an absolute tolerance per element (the rounding that a
// computation's cancellation magnifies).
inline size_t count_mismatches(const HostTensor& got, const std::vector<double>& want,
                               Tolerance tol, std::string* first,
                               const std::vector<double>* slack = nullptr) {
  size_t bad = 0;
  HostTensor rounded(got.dtype, 1);
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.get(i);
    rounded.set(0, want[i]);
    const double w = std::isinf(rounded.get(0)) ? rounded.get(0) : want[i];
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else ok = std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w) + (slack ? (*slack)[i] : 0.0);
    if (!ok && bad++ < 3 && first) {
      char text[96];
      std::snprintf(text, sizeof text, "[%zu] got %.10g want %.10g; ", i, g, w);
      *first += text;
    }
  }
  return bad;
}

// CHECKs that `got` matches `want` as count_mismatches decides, reporting
// the first mismatches (the caller's INFO says which case).
inline void check_matches(const HostTensor& got, const std::vector<double>& want, Tolerance tol,
                          const std::vector<double>* slack = nullptr) {
  std::string first;
  const size_t bad = count_mismatches(got, want, tol, &first, slack);
  INFO(bad << " mismatches: " << first);
  CHECK(bad == 0);
}

}  // namespace test
