#pragma once

#include "kgen/kgen.h"

namespace kgen {

inline bool valid_dtype(int d) { return d >= KGEN_FLOAT32 && d <= KGEN_UINT8; }
inline bool floating_dtype(int d) { return d >= KGEN_FLOAT32 && d <= KGEN_FLOAT64; }

inline int dtype_size(kgen_dtype_t d) {
  switch (d) {
    case KGEN_FLOAT32: return 4;
    case KGEN_FLOAT16: return 2;
    case KGEN_BFLOAT16: return 2;
    case KGEN_FLOAT64: return 8;
    case KGEN_INT32: return 4;
    case KGEN_INT64: return 8;
    case KGEN_BOOL: return 1;
    case KGEN_UINT8: return 1;
  }
  return 0;
}

// size of the type kernels compute in (half types compute in float32)
inline int compute_size(kgen_dtype_t d) { return d == KGEN_FLOAT64 ? 8 : 4; }

inline const char* dtype_name(kgen_dtype_t d) {
  switch (d) {
    case KGEN_FLOAT32: return "float32";
    case KGEN_FLOAT16: return "float16";
    case KGEN_BFLOAT16: return "bfloat16";
    case KGEN_FLOAT64: return "float64";
    case KGEN_INT32: return "int32";
    case KGEN_INT64: return "int64";
    case KGEN_BOOL: return "bool";
    case KGEN_UINT8: return "uint8";
  }
  return "unknown";
}

}  // namespace kgen
