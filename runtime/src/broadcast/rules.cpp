// Broadcast capability (supports) and preference (heuristic), shared by
// expand and where, whose generated params have the same fields.
//
// Capability: flat variants take rank <= 1 (every input whole or one value);
// elem variants their compiled rank, with the innermost dim a multiple of
// the pack; both need out and every input read whole along the innermost
// dim aligned to a pack.  int32 indices need fewer than 2^31 packs (fast
// division); every launch fewer than 2^31 blocks.
// Preference: the widest pack (16-byte accesses), then int32 indices.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "broadcast/problem.hpp"
#include "kgen_params.gen.hpp"
#include "tuning/bucket.hpp"
#include "validate.hpp"

namespace kgen {
namespace broadcast {
namespace {

constexpr int64_t kBelow31 = int64_t{1} << 31;
constexpr int64_t kPacksPerBlock = 256 * 4;  // kBlock x kUnroll (kgen/device/broadcast.cuh)

enum class Tier { flat = 0, elem = 1, generic = 2 };
static_assert(static_cast<int>(gen::ExpandTier::flat) == 0 && static_cast<int>(gen::WhereTier::flat) == 0 &&
                  static_cast<int>(gen::ExpandTier::elem) == 1 && static_cast<int>(gen::WhereTier::elem) == 1 &&
                  static_cast<int>(gen::ExpandTier::generic) == 2 &&
                  static_cast<int>(gen::WhereTier::generic) == 2,
              "expand and where share the tiers of generator/ops/broadcast.py");

struct Knobs {
  Tier tier;
  int rank, pack, index;
};

template <class Params>
Knobs knobs_of(const void* params) {
  const Params& q = *static_cast<const Params*>(params);
  return {static_cast<Tier>(q.tier), q.rank, q.pack, q.index};
}

Knobs knobs(const VariantInfo& v) {
  return v.family == Family::expand ? knobs_of<gen::ExpandParams>(v.params)
                                    : knobs_of<gen::WhereParams>(v.params);
}

// out, and every input read whole along the innermost dim, aligned to a pack
bool packs_aligned(const Problem& p, int pack) {
  const Layout& l = p.layout;
  if (!aligned_to(p.out, int64_t{pack} * l.movement)) return false;
  for (int i = 0; i < l.inputs; ++i)
    if (spans_innermost(l, i) && !aligned_to(p.in[i], int64_t{pack} * l.unit_bytes[i])) return false;
  return true;
}

bool dims_below31(const Layout& l) {
  for (int k = 0; k < l.rank; ++k)
    if (l.dims[k] >= kBelow31) return false;
  return true;
}

}  // namespace

bool supports(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Layout& l = p.layout;
  const Knobs q = knobs(v);
  if (v.element != movement_key(l.movement)) return false;
  const int64_t n = units(l);
  switch (q.tier) {
    case Tier::generic:
      return div_up(n, kPacksPerBlock) < kBelow31;
    case Tier::flat:
      return l.rank <= 1 && packs_aligned(p, q.pack) && div_up(n / q.pack, kPacksPerBlock) < kBelow31;
    case Tier::elem: {
      if (l.rank != q.rank || l.dims[l.rank - 1] % q.pack != 0 || !packs_aligned(p, q.pack)) return false;
      const int64_t packs = n / q.pack;
      return q.index == 0 ? packs < kBelow31 && dims_below31(l) : div_up(packs, kPacksPerBlock) < kBelow31;
    }
  }
  return false;
}

Score heuristic(const VariantInfo& v, const void* problem) {
  const Layout& l = static_cast<const Problem*>(problem)->layout;
  const Knobs q = knobs(v);
  if (q.tier == Tier::generic) return Score::reject();  // the last resort, not a choice
  Score s;
  s.key[0] = 1;
  s.key[1] = int64_t{q.pack} * l.movement;  // wide accesses
  s.key[2] = q.index == 0;                  // int32 indices: fast division
  return s;
}

// By route (all inputs full, fill, broadcast), rank and the power-of-two
// class (capped at 2^10) of the innermost extent, which bounds the pack.
void bucket(const void* problem, char* out, int size) {
  const Layout& l = static_cast<const Problem*>(problem)->layout;
  using tuning::log2_class;
  std::snprintf(out, size, "%s_r%d_i%d", route_name(route(l)), l.rank,
                l.rank > 0 ? std::min(log2_class(l.dims[l.rank - 1]), 10) : 0);
}

bool selection_key(const void* problem, ProblemKey* key) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Layout& l = p.layout;
  // rank, inputs, movement and the inputs' unit bytes (each <= 16) in one word
  int64_t head = l.rank | l.inputs << 4 | int64_t{l.movement} << 6;
  for (int i = 0; i < kMaxInputs; ++i) head |= int64_t{l.unit_bytes[i]} << (11 + 5 * i);
  key->add(head);
  for (int k = 0; k < l.rank; ++k) key->add(l.dims[k]);
  for (int i = 0; i < l.inputs; ++i)
    for (int k = 0; k < l.rank; ++k) key->add(l.stride[i][k]);
  for (int i = 0; i < l.inputs; ++i) key->add_address(p.in[i]);
  key->add_address(p.out);
  return true;
}

}  // namespace broadcast
}  // namespace kgen
