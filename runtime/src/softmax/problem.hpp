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

// Blocks of the smem tier one SM holds at this block size (by shared memory,
// threads and the block limit; at least 1).  Used by the heuristic and by the
// launcher's grid size.
inline int64_t smem_blocks_per_sm(const Problem& p, int block, int elem_size) {
  const DeviceInfo& d = *p.device;
  const int64_t by_smem = static_cast<int64_t>(d.smem_per_sm) / (smem_row_bytes(p, elem_size) + kSmemReserve);
  int64_t blocks = d.max_threads_per_sm / block;
  if (by_smem < blocks) blocks = by_smem;
  if (d.max_blocks_per_sm < blocks) blocks = d.max_blocks_per_sm;
  return blocks < 1 ? 1 : blocks;
}

bool supports(const VariantInfo& v, const void* problem);
Score heuristic(const VariantInfo& v, const void* problem);

}  // namespace softmax
}  // namespace kgen
