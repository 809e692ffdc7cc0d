// Step 1 of selection: the tuning database of this GPU (runtime/src/tuning/).
#pragma once

#include "variant.hpp"

namespace kgen {
namespace tuning {
struct Database;
}

// The database selection consults on this device: null when none applies
// or tuning is turned off (tuning::set_enabled).
const tuning::Database* active_database(const DeviceInfo& device);

// kgen-tune's tracing is on (tuning::set_tracing): selection must run, and
// record the problem's bucket, on every call (the selection cache steps aside).
bool selection_traced();

// The variant db (may be null) picks for the problem's bucket, or null when
// it has no entry for it.  The caller still checks supports().
const VariantInfo* tuned_variant(const tuning::Database* db, Family family, int element,
                                 const void* problem);

}  // namespace kgen
