#include "select.hpp"

#include "device.hpp"
#include "dtype.hpp"
#include "registry.hpp"
#include "status.hpp"
#include "tuning_db.hpp"

namespace kgen {

kgen_status_t find_named(const char* variant, Family family, kgen_dtype_t dtype,
                         const VariantInfo** named) {
  *named = nullptr;
  if (!variant) return KGEN_OK;
  *named = Registry::find(variant);
  if (!*named || (*named)->family != family)
    return fail(KGEN_ERROR_UNSUPPORTED, "variant: '%s' is not a compiled %s variant", variant,
                family_name(family));
  if ((*named)->element != dtype)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "variant: '%s' is not for dtype %s", variant,
                dtype_name(dtype));
  return KGEN_OK;
}

kgen_status_t find_named_mover(const char* variant, Family family, const VariantInfo** named,
                               int* max_movement) {
  *named = nullptr;
  *max_movement = kMaxMovement;
  if (!variant) return KGEN_OK;
  *named = Registry::find(variant);
  if (!*named || (*named)->family != family)
    return fail(KGEN_ERROR_UNSUPPORTED, "variant: '%s' is not a compiled %s variant", variant,
                family_name(family));
  *max_movement = (*named)->element - movement_key(0);
  return KGEN_OK;
}

Selection select_variant(Family family, int element, const DeviceInfo& device,
                         const void* problem, ScoreFn heuristic) {
  return select_from(active_database(device), family, element, device, problem, heuristic);
}

Selection select_from(const tuning::Database* db, Family family, int element,
                      const DeviceInfo& device, const void* problem, ScoreFn heuristic) {
  if (const VariantInfo* tuned = tuned_variant(db, family, element, problem))
    if (runs_on(*tuned, device) && tuned->supports(*tuned, problem)) return {tuned, Source::tuning_db};

  return best_of(Registry::of(family, element), device, problem, heuristic);
}

Selection best_of(const std::vector<const VariantInfo*>& candidates, const DeviceInfo& device,
                  const void* problem, ScoreFn heuristic) {
  const VariantInfo* best = nullptr;
  const VariantInfo* generic = nullptr;
  Score best_score = Score::reject();
  for (const VariantInfo* v : candidates) {
    if (v->generic) {
      if (!generic) generic = v;
      continue;
    }
    if (!runs_on(*v, device) || !v->supports(*v, problem)) continue;
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

kgen_status_t choose_variant(const VariantInfo* named, Family family, int element,
                             const DeviceInfo& device, const void* problem, ScoreFn heuristic,
                             DescribeFn describe, const VariantInfo** chosen) {
  if (named && !runs_on(*named, device)) {
    *chosen = nullptr;
    return fail(KGEN_ERROR_UNSUPPORTED,
                "variant: '%s' needs sm_%d or later, but %s runs this library's sm_%d code", named->name,
                named->min_arch, device.name[0] ? device.name : "the device", device.code_arch);
  }
  *chosen = named ? named : select_variant(family, element, device, problem, heuristic).variant;
  if (*chosen && (!named || named->supports(*named, problem))) return KGEN_OK;
  char text[160];
  describe(problem, text, sizeof text);
  *chosen = nullptr;
  if (named)
    return fail(KGEN_ERROR_UNSUPPORTED, "variant: '%s' cannot run %s", named->name, text);
  return fail(KGEN_ERROR_INTERNAL, "no generic %s variant can run %s", family_name(family), text);
}

kgen_status_t launch_chosen(const VariantInfo* v, const void* problem, kgen_stream_t stream,
                            const PlainCopy& copy) {
  if (!v) {
    const cudaError_t err = cudaMemcpyAsync(copy.dst, copy.src, static_cast<size_t>(copy.bytes),
                                            cudaMemcpyDeviceToDevice, stream);
    if (err != cudaSuccess)
      return fail(KGEN_ERROR_CUDA, "stream: copying %lld bytes failed: %s: %s",
                  static_cast<long long>(copy.bytes), cudaGetErrorName(err), cudaGetErrorString(err));
    return succeed();
  }
  drop_earlier_error();
  const cudaError_t err = v->launch(problem, stream);
  if (err != cudaSuccess)
    return fail(KGEN_ERROR_CUDA, "stream: launching %s failed: %s: %s", v->name, cudaGetErrorName(err),
                cudaGetErrorString(err));
  return succeed();
}

}  // namespace kgen
