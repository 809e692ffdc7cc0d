#include "select.hpp"

#include "registry.hpp"
#include "tuning_db.hpp"

namespace kgen {

Selection select_variant(Family family, kgen_dtype_t dtype, const DeviceInfo& device,
                         const void* problem, ScoreFn heuristic) {
  if (const VariantInfo* tuned = tuned_variant(family, dtype, device, problem))
    if (tuned->supports(*tuned, problem)) return {tuned, Source::tuning_db};

  const VariantInfo* best = nullptr;
  const VariantInfo* generic = nullptr;
  Score best_score = Score::reject();
  for (const VariantInfo* v : Registry::of(family, dtype)) {
    if (v->generic) {
      if (!generic) generic = v;
      continue;
    }
    if (!v->supports(*v, problem)) continue;
    Score s = heuristic(*v, problem);
    if (s.rejected()) continue;
    if (!best || best_score < s) {  // ties keep the first in generator order
      best = v;
      best_score = s;
    }
  }
  if (best) return {best, Source::heuristic};
  return {generic, Source::generic};
}

}  // namespace kgen
