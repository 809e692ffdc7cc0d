#include "tuning_db.hpp"

namespace kgen {

const VariantInfo* tuned_variant(Family, kgen_dtype_t, const DeviceInfo&, const void*) {
  return nullptr;  // no database compiled in: the heuristic decides
}

}  // namespace kgen
