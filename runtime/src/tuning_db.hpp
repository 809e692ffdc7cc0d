// Step 1 of selection: the per-GPU tuning database.  No database format or
// sweep exists yet, so there is no preference and selection goes on to the
// heuristic; the autotuning work fills this in.
#pragma once

#include "variant.hpp"

namespace kgen {

const VariantInfo* tuned_variant(Family family, int element, const DeviceInfo& device,
                                 const void* problem);

}  // namespace kgen
