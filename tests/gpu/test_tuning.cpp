// The compiled-in tuning database on the GPU in hand: it is found for this
// GPU (or for its arch), and selection takes its entries.  The variants it
// names are in the default level and run in every family's own tests.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "device.hpp"
#include "gpu_util.hpp"
#include "registry.hpp"
#include "tuning/db.hpp"

using namespace test;

namespace {

const kgen::DeviceInfo& this_device() {
  const kgen::DeviceInfo* d = nullptr;
  REQUIRE(kgen::current_device(&d) == KGEN_OK);
  return *d;
}

// The compiled-in databases, loaded as the library loads them.
kgen::tuning::Catalog compiled() {
  std::vector<std::string> warnings;
  auto c = kgen::tuning::load_catalog(nullptr, kgen::gen::kTuningDatabases, kgen::gen::kTuningDatabaseCount,
                                      kgen::gen::kGeneratorHash, [](std::string_view n) { return kgen::Registry::find(n); },
                                      &warnings);
  for (const std::string& w : warnings) WARN(w);
  return c;
}

}  // namespace

TEST_CASE("the compiled-in database of this GPU's arch is the one selection uses", "[tuning]") {
  const char* env = std::getenv("KGEN_TUNING_DB");
  if (env && *env) {
    WARN("KGEN_TUNING_DB is set: the compiled-in databases are not in use");
    return;
  }
  const kgen::DeviceInfo& d = this_device();
  const auto c = compiled();
  const int k = kgen::tuning::choose(c.dbs, d);
  const std::string in_use = kgen_tuning_database();
  INFO("GPU " << d.name << " (" << d.sm_count << " SMs), database in use: '" << in_use << "'");
  if (k < 0) {
    CHECK(in_use.empty());
    CHECK(kgen::tuning::database_for(d) == nullptr);
    return;
  }
  CHECK(in_use == c.dbs[k].description);
  REQUIRE(kgen::tuning::database_for(d) != nullptr);
  CHECK(kgen::tuning::database_for(d)->gpu == c.dbs[k].gpu);
}

TEST_CASE("softmax and reduce rows of a tuned bucket run the database's variant", "[tuning]") {
  const kgen::DeviceInfo& d = this_device();
  const kgen::tuning::Database* db = kgen::tuning::database_for(d);
  if (!db) {
    WARN("no tuning database for " << d.name << ": nothing to check");
    return;
  }
  // rows at a warp capacity (softmax row_w<cap>), 8192 of them, and of 2^k
  // elements (reduce val_last_r<k>), at least 8192 and 8 MiB of them (the
  // buckets under 4 MiB end in _s), from aligned buffers: the database's
  // entry supports them and selection must return it
  int checked = 0;
  DeviceBuffer x(size_t{8192} * 2048 * 8), y(size_t{8192} * 2048 * 8);
  for (const kgen::tuning::Entry& e : db->entries) {
    const auto dtype = static_cast<kgen_dtype_t>(e.element);
    const char* selected = nullptr;
    if (e.family == kgen::Family::softmax && e.bucket.rfind("row_w", 0) == 0 &&
        e.bucket.find("_few") == std::string::npos) {
      const int64_t cols = std::atoll(e.bucket.c_str() + 5);
      KGEN_REQUIRE(kgen_softmax_selected(0, dtype, 8192, cols, x.ptr, y.ptr, &selected));
    } else if (e.family == kgen::Family::reduce && e.bucket.rfind("val_last_r", 0) == 0 &&
               e.bucket.find('_', 10) == std::string::npos) {  // not _few, _cut or _s
      const int64_t reduce = int64_t{1} << std::atoi(e.bucket.c_str() + 10);
      if (reduce > 2048) continue;
      const int64_t rows = std::max<int64_t>(8192, (int64_t{8} << 20) / (reduce * kgen_dtype_size(dtype)));
      size_t need = 0;
      KGEN_REQUIRE(kgen_reduce_selected(KGEN_REDUCE_SUM, dtype, rows, reduce, 1, x.ptr, y.ptr, &selected, &need));
    } else {
      continue;
    }
    INFO(kgen::family_name(e.family) << " " << e.bucket << ": the database names " << e.variant->name);
    CHECK(std::string(selected) == e.variant->name);
    ++checked;
  }
  INFO("entries checked: " << checked);
  CHECK(checked > 0);
}
