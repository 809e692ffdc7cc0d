// Tuning databases: what kgen-tune measured on one GPU, as the runtime reads
// it.  A database is JSON (tuning/db/<gpu>_<sms>.json):
//   {"format": 1, "gpu": "NVIDIA H100 80GB HBM3", "sm_count": 132,
//    "arch": "sm_90", "generator_hash": "...", "library_version": "0.1.0",
//    "entries": [{"family": "softmax", "bucket": "row_c10",
//                 "variant": "softmax_warp_f32_p4_c32_g32_r1_nopad"}, ...]}
// plus free-form provenance members (date, commit, budget) the runtime
// ignores.  An entry's element (dtype or unit size) is its variant's.
//
// Which databases apply: KGEN_TUNING_DB=path replaces the compiled-in ones
// (KGEN_TUNING_DB=off turns tuning off); of the compiled-in ones, the one of
// this GPU's name and SM count, else the one of its name with the nearest SM
// count (a partitioned GPU); another model gets none.  A database that does
// not parse, was measured on other kernels (generator hash) or names a
// variant that is not compiled in is ignored with one warning on stderr.
// Loaded on first use, immutable after.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "variant.hpp"

namespace kgen {
namespace tuning {

constexpr int kFormat = 1;

struct Entry {
  Family family;
  int element;         // the variant's
  std::string bucket;
  const VariantInfo* variant;
};

struct Database {
  std::string gpu, arch, generator_hash, library_version;
  int sm_count = 0;
  std::string origin;          // "compiled in", or "from KGEN_TUNING_DB=<path>"
  std::string description;     // "NVIDIA H100 80GB HBM3 (132 SMs), compiled in"
  std::vector<Entry> entries;  // sorted by (family, element, bucket)

  const VariantInfo* find(Family family, int element, std::string_view bucket) const;
};

// Looks a variant up by name (the registry in the library; a table in tests).
using FindVariant = const VariantInfo* (*)(std::string_view name);

// Parses and checks one database; false with *why on any defect (syntax,
// missing or mistyped member, other format or generator hash, an unknown
// family, a variant not found or of another family, a bucket listed twice).
bool load(std::string_view text, std::string_view generator_hash, FindVariant find, Database* out,
          std::string* why);

// The database for a device: the exact GPU name and SM count, else the same
// name and arch ("sm_90" from major.minor) with the nearest SM count (the
// first on a tie); -1 when none is of this GPU model.
int choose(const std::vector<Database>& dbs, const DeviceInfo& device);

// "sm_90" for a device of compute capability 9.0.
std::string arch_of(const DeviceInfo& device);

// The databases a process may use: KGEN_TUNING_DB's (env: its value, may
// be null) or else the compiled-in texts; each one refused leaves a warning
// line.  override_set: KGEN_TUNING_DB was a loadable file, or "off" (then
// dbs is empty and no database applies).
struct Catalog {
  bool override_set = false;
  std::vector<Database> dbs;
};
Catalog load_catalog(const char* env, const char* const* compiled, std::size_t count,
                     std::string_view generator_hash, FindVariant find, std::vector<std::string>* warnings);

// The database that selection uses on this device (null: none), loading
// the databases on first use.
const Database* database_for(const DeviceInfo& device);

// kgen-tune's switches.  With tuning disabled, selection skips the database
// (the heuristic's pick is what it compares against).  With tracing on,
// every selection on this thread records the problem's bucket.
void set_enabled(bool enabled);
void set_tracing(bool tracing);
struct Trace {
  Family family = Family::softmax;
  int element = 0;
  char bucket[48] = "";
  bool hit = false;  // the database had an entry for it
};
const Trace& last_trace();

}  // namespace tuning
}  // namespace kgen
