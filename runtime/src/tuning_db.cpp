#include "tuning_db.hpp"

namespace kgen {

const VariantInfo* tuned_variant(Family, int, const DeviceInfo&, const void*) {
  return nullptr;  // no database compiled in: the heuristic decides
}

}  // namespace kgen
