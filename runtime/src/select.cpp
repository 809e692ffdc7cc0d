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

// The heuristic ranks the default level's own variants (every variant of a
// tuned-level build); where none takes the problem, the generic variant
// runs.  A winner that a tuning database compiles in (another GPU's too) is
// reached only through its entry or by name.  Ranked beside the default
// level's variants, the H200 database's winners moved the H100's heuristic
// picks (float32 rows of 630 into 8-byte packs, float16 transposes into
// 8 x 256 tiles); ranked before the generic variant, they moved bfloat16
// top-k off the generic kernel where the default level has no other (H100
// sweep: 0.64x to 1.23x; bench/NOTES.md tuning v4).  The winners the
// heuristic came to pick stay in the default level by name
// (generator/default_keep.txt).
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
    if (!v->ranked || !runs_on(*v, device) || !v->supports(*v, problem)) continue;
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

bool ProblemKey::operator==(const ProblemKey& o) const {
  if (n != o.n || overflow || o.overflow) return false;
  for (int i = 0; i < n; ++i)
    if (w[i] != o.w[i]) return false;
  return true;
}

namespace {

// The device fields selection reads: a cached choice holds for a device
// equal in all of them (a described device in the host tests may reuse an
// ordinal).
struct DeviceFields {
  int ordinal = -1, code_arch = 0, sm_count = 0, max_threads_per_sm = 0;
  std::size_t smem_per_block_optin = 0, smem_per_sm = 0;
  static DeviceFields of(const DeviceInfo& d) {
    return {d.ordinal, d.code_arch, d.sm_count, d.max_threads_per_sm, d.smem_per_block_optin, d.smem_per_sm};
  }
  bool operator==(const DeviceFields& o) const {
    return ordinal == o.ordinal && code_arch == o.code_arch && sm_count == o.sm_count &&
           max_threads_per_sm == o.max_threads_per_sm && smem_per_block_optin == o.smem_per_block_optin &&
           smem_per_sm == o.smem_per_sm;
  }
};

struct CachedChoice {
  const VariantInfo* variant = nullptr;
  Source source = Source::generic;
  const tuning::Database* db = nullptr;
  int family = -1, element = 0;
  DeviceFields device;
  ProblemKey key;
};
constexpr int kCachedChoices = 64;  // per thread, direct-mapped

uint64_t slot_hash(int family, int element, int ordinal, const ProblemKey& k) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {  // a word at a time: multiply, fold the high bits down
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  };
  mix(static_cast<uint64_t>(family));
  mix(static_cast<uint64_t>(element));
  mix(static_cast<uint64_t>(ordinal));
  for (int i = 0; i < k.n; ++i) mix(static_cast<uint64_t>(k.w[i]));
  return h;
}

}  // namespace

Selection select_cached(Family family, int element, const DeviceInfo& device, const void* problem,
                        ScoreFn heuristic, KeyFn key_fn) {
  ProblemKey key;
  if (!key_fn || selection_traced() || !key_fn(problem, &key) || key.overflow)
    return select_variant(family, element, device, problem, heuristic);
  const tuning::Database* db = active_database(device);
  thread_local CachedChoice cache[kCachedChoices];
  CachedChoice& c = cache[slot_hash(static_cast<int>(family), element, device.ordinal, key) % kCachedChoices];
  const DeviceFields fields = DeviceFields::of(device);
  if (c.variant && c.family == static_cast<int>(family) && c.element == element && c.db == db &&
      c.device == fields && c.key == key && runs_on(*c.variant, device) &&
      c.variant->supports(*c.variant, problem))
    return {c.variant, c.source};
  const Selection s = select_from(db, family, element, device, problem, heuristic);
  if (s.variant) c = CachedChoice{s.variant, s.source, db, static_cast<int>(family), element, fields, key};
  return s;
}

kgen_status_t choose_variant(const VariantInfo* named, Family family, int element,
                             const DeviceInfo& device, const void* problem, ScoreFn heuristic,
                             DescribeFn describe, const VariantInfo** chosen, KeyFn key) {
  if (named && !runs_on(*named, device)) {
    *chosen = nullptr;
    return fail(KGEN_ERROR_UNSUPPORTED,
                "variant: '%s' needs sm_%d or later, but %s runs this library's sm_%d code", named->name,
                named->min_arch, device.name[0] ? device.name : "the device", device.code_arch);
  }
  *chosen = named ? named : select_cached(family, element, device, problem, heuristic, key).variant;
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
