// Softmax capability (supports) and preference (heuristic).
//
// Capability is decided from the real problem: pack width against cols and
// pointer alignment, row length against the tier's reach, shared memory
// against what this device gives one block.  Preference follows OneFlow's
// dispatch: registers when the row fits a warp tier variant, else shared
// memory, else the two-pass uncached kernel; within a tier the widest pack,
// the tightest fit, and for shared memory the block size that keeps the most
// warps resident.
#include <algorithm>
#include <cstdlib>
#include <cstdint>

#include "dtype.hpp"
#include "validate.hpp"
#include "kgen_params.gen.hpp"
#include "softmax/problem.hpp"

namespace kgen {
namespace softmax {
namespace {

using Params = gen::SoftmaxParams;
using Tier = gen::SoftmaxTier;

// Warps an SM keeps resident for the smem tier at this block size.
int64_t smem_active_warps(const Problem& p, int block) {
  return smem_blocks_per_sm(p, block, dtype_size(p.dtype)) * block / 32;
}

}  // namespace

bool supports(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Params& q = *static_cast<const Params*>(v.params);
  if (v.element != p.dtype) return false;
  const int64_t pack_bytes = int64_t{q.pack_size} * dtype_size(p.dtype);
  if (p.cols % q.pack_size != 0 || !aligned_to(p.x, pack_bytes) || !aligned_to(p.y, pack_bytes))
    return false;
  switch (q.tier) {
    case Tier::warp: {
      const int64_t reach = int64_t{q.cols_per_thread} * q.group_width;
      return q.padding ? p.cols <= reach : p.cols == reach;
    }
    case Tier::smem: {
      const int64_t need = smem_row_bytes(p, dtype_size(p.dtype)) + kSmemReserve;
      return p.cols <= INT32_MAX && need <= static_cast<int64_t>(p.device->smem_per_block_optin);
    }
    case Tier::uncached:
    case Tier::generic:
      return true;
  }
  return false;
}

Score heuristic(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Params& q = *static_cast<const Params*>(v.params);
  Score s;
  s.key[1] = q.pack_size;  // widest accesses first (the smem tier overrides)
  switch (q.tier) {
    case Tier::warp: {
      s.key[0] = 3;
      const int64_t reach = int64_t{q.cols_per_thread} * q.group_width;
      s.key[2] = -reach;  // least padding: fewer registers, fewer idle lanes
      // two rows per access hides latency for narrow groups; a full warp
      // already has cols_per_thread loads in flight
      s.key[3] = (q.rows_per_access == 2) == (q.group_width < 32);
      s.key[4] = !q.padding;  // exact fit: no bounds checks
      return s;
    }
    case Tier::smem: {
      s.key[0] = 2;
      // 4-byte packs: on an H100 they reached 86-94% of copy for 2048-8192
      // cols where 16-byte packs reached 30-65% (the wide-pack kernels spill
      // under the 32-register cap of full residency; bench/NOTES.md v3)
      s.key[1] = -std::abs(q.pack_size * dtype_size(p.dtype) - 4);
      s.key[2] = smem_active_warps(p, q.block_size);
      // at equal occupancy the smallest block: more rows in flight per SM
      // and cheaper barriers (H100, 2048-8192 cols: 128-thread blocks beat
      // 512-1024 by 5-25%; bench/NOTES.md v1)
      s.key[3] = -q.block_size;
      return s;
    }
    case Tier::uncached:
      s.key[0] = 1;
      s.key[2] = q.block_size;
      return s;
    case Tier::generic:
      s.key[0] = 0;
      return s;
  }
  return Score::reject();
}

}  // namespace softmax
}  // namespace kgen
