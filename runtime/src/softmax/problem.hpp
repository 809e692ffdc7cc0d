// A softmax problem after validation: what capability checks, the heuristic
// and the generated launchers read.
#pragma once

#include <cstdint>

#include "select.hpp"
#include "variant.hpp"

namespace kgen {
namespace softmax {

struct Problem {
  kgen_dtype_t dtype;
  bool log;               // log_softmax
  int64_t rows, cols;     // rows >= 1, cols >= 1
  const void* x;
  void* y;
  const DeviceInfo* device;
};

// Shared memory the smem tier needs for one row (kept in its own dtype),
// beyond its static scratch.
inline int64_t smem_row_bytes(const Problem& p, int elem_size) { return p.cols * elem_size; }
// Static shared memory of the block reductions, kept free when sizing rows.
constexpr int64_t kSmemReserve = 1024;

bool supports(const VariantInfo& v, const void* problem);
Score heuristic(const VariantInfo& v, const void* problem);

}  // namespace softmax
}  // namespace kgen
