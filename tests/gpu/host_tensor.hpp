// A host tensor of any dtype as raw bytes, read and written as double:
// the GPU tests' inputs and expected outputs, and the sanitizer sample's.
// Neither Catch2 nor a device is needed.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kgen/kgen.h"

namespace test {

inline int elem_size(kgen_dtype_t d) { return kgen_dtype_size(d); }

// Host-side storage of any dtype as raw bytes, with conversion to double.
struct HostTensor {
  kgen_dtype_t dtype;
  std::vector<unsigned char> bytes;
  HostTensor(kgen_dtype_t d, size_t n) : dtype(d), bytes(n * elem_size(d)) {}
  size_t size() const { return bytes.size() / elem_size(dtype); }
  double get(size_t i) const {
    const unsigned char* p = bytes.data() + i * elem_size(dtype);
    switch (dtype) {
      case KGEN_FLOAT32: { float v; std::memcpy(&v, p, 4); return v; }
      case KGEN_FLOAT64: { double v; std::memcpy(&v, p, 8); return v; }
      case KGEN_FLOAT16: { __half v; std::memcpy(&v, p, 2); return __half2float(v); }
      case KGEN_BFLOAT16: { __nv_bfloat16 v; std::memcpy(&v, p, 2); return __bfloat162float(v); }
      case KGEN_INT32: { int32_t v; std::memcpy(&v, p, 4); return v; }
      case KGEN_INT64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
      case KGEN_BOOL: return *p != 0 ? 1.0 : 0.0;
      case KGEN_UINT8: return *p;
    }
    return NAN;
  }
  void set(size_t i, double value) {
    unsigned char* p = bytes.data() + i * elem_size(dtype);
    switch (dtype) {
      case KGEN_FLOAT32: { float v = static_cast<float>(value); std::memcpy(p, &v, 4); break; }
      case KGEN_FLOAT64: { std::memcpy(p, &value, 8); break; }
      case KGEN_FLOAT16: { __half v = __float2half_rn(static_cast<float>(value)); std::memcpy(p, &v, 2); break; }
      case KGEN_BFLOAT16: { __nv_bfloat16 v = __float2bfloat16_rn(static_cast<float>(value)); std::memcpy(p, &v, 2); break; }
      case KGEN_INT32: {  // wraps like int32 arithmetic
        const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(value)));
        std::memcpy(p, &v, 4);
        break;
      }
      case KGEN_INT64: {  // truncates toward zero; NaN and values past the range give 0
        const int64_t v = std::fabs(value) < 9.2e18 ? static_cast<int64_t>(value) : 0;
        std::memcpy(p, &v, 8);
        break;
      }
      case KGEN_BOOL: { *p = value != 0 ? 1 : 0; break; }  // NaN is true, as bool(nan)
      case KGEN_UINT8: {  // wraps like uint8 arithmetic
        *p = std::fabs(value) < 9.2e18 ? static_cast<unsigned char>(static_cast<int64_t>(value)) : 0;
        break;
      }
    }
  }
};

}  // namespace test
