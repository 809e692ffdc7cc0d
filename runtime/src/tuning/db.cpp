#include "tuning/db.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <tuple>

#include "registry.hpp"
#include "tuning/bucket.hpp"
#include "tuning/json.hpp"
#include "tuning_db.hpp"

namespace kgen {
namespace tuning {
namespace {

bool family_of(std::string_view name, Family* f) {
  for (int k = 0; k < kFamilies; ++k)
    if (name == family_name(static_cast<Family>(k))) {
      *f = static_cast<Family>(k);
      return true;
    }
  return false;
}

auto entry_key(const Entry& e) { return std::make_tuple(static_cast<int>(e.family), e.element, std::string_view(e.bucket)); }

bool text_member(const json::Value& v, const char* key, std::string* out, std::string* why) {
  const json::Value* m = v.get(key);
  if (!m || !m->is(json::Value::Type::string)) {
    *why = std::string("no string member \"") + key + "\"";
    return false;
  }
  *out = m->string;
  return true;
}

bool int_member(const json::Value& v, const char* key, int* out, std::string* why) {
  const json::Value* m = v.get(key);
  // range first: converting a double outside int's range is undefined
  if (!m || !m->is(json::Value::Type::number) || !(std::fabs(m->number) < 2e9) ||
      m->number != std::floor(m->number)) {
    *why = std::string("no integer member \"") + key + "\"";
    return false;
  }
  *out = static_cast<int>(m->number);
  return true;
}

}  // namespace

const VariantInfo* Database::find(Family family, int element, std::string_view bucket) const {
  const auto key = std::make_tuple(static_cast<int>(family), element, bucket);
  auto it = std::lower_bound(entries.begin(), entries.end(), key,
                             [](const Entry& e, const auto& k) { return entry_key(e) < k; });
  return it != entries.end() && entry_key(*it) == key ? it->variant : nullptr;
}

bool load(std::string_view text, std::string_view generator_hash, FindVariant find, Database* out,
          std::string* why) {
  json::Value root;
  std::string error;
  if (!json::parse(text, &root, &error)) {
    *why = "corrupt: " + error;
    return false;
  }
  if (!root.is(json::Value::Type::object)) {
    *why = "corrupt: not a JSON object";
    return false;
  }
  Database db;
  int format = 0;
  if (!int_member(root, "format", &format, why) || !text_member(root, "gpu", &db.gpu, why) ||
      !int_member(root, "sm_count", &db.sm_count, why) || !text_member(root, "arch", &db.arch, why) ||
      !text_member(root, "generator_hash", &db.generator_hash, why) ||
      !text_member(root, "library_version", &db.library_version, why)) {
    *why = "corrupt: " + *why;
    return false;
  }
  if (format != kFormat) {
    *why = "format " + std::to_string(format) + ", this library reads format " + std::to_string(kFormat);
    return false;
  }
  if (db.generator_hash != generator_hash) {
    *why = "stale: measured on kernels of generator hash " + db.generator_hash + ", this build's is " +
           std::string(generator_hash);
    return false;
  }
  const json::Value* entries = root.get("entries");
  if (!entries || !entries->is(json::Value::Type::array)) {
    *why = "corrupt: no array member \"entries\"";
    return false;
  }
  for (const json::Value& e : entries->array) {
    std::string family, variant;
    Entry entry{};
    if (!e.is(json::Value::Type::object) || !text_member(e, "family", &family, why) ||
        !text_member(e, "bucket", &entry.bucket, why) || !text_member(e, "variant", &variant, why)) {
      *why = "corrupt: entry " + std::to_string(&e - entries->array.data()) + ": " +
             (e.is(json::Value::Type::object) ? *why : "not an object");
      return false;
    }
    if (!family_of(family, &entry.family)) {
      *why = "corrupt: unknown family \"" + family + "\"";
      return false;
    }
    if (entry.bucket.empty() || entry.bucket.size() >= static_cast<size_t>(kBucketChars)) {
      *why = "corrupt: bucket \"" + entry.bucket + "\" is empty or too long";
      return false;
    }
    entry.variant = find(variant);
    if (!entry.variant) {
      *why = "names variant " + variant + ", which is not compiled in";
      return false;
    }
    if (entry.variant->family != entry.family) {
      *why = "corrupt: variant " + variant + " is not of family " + family;
      return false;
    }
    entry.element = entry.variant->element;
    db.entries.push_back(std::move(entry));
  }
  std::sort(db.entries.begin(), db.entries.end(),
            [](const Entry& a, const Entry& b) { return entry_key(a) < entry_key(b); });
  for (size_t k = 1; k < db.entries.size(); ++k)
    if (entry_key(db.entries[k - 1]) == entry_key(db.entries[k])) {
      *why = "corrupt: bucket " + db.entries[k].bucket + " of " + family_name(db.entries[k].family) +
             " listed twice for one element";
      return false;
    }
  *out = std::move(db);
  return true;
}

std::string arch_of(const DeviceInfo& device) {
  return "sm_" + std::to_string(device.major) + std::to_string(device.minor);
}

// Only the GPU model a database was measured on: the H100 database on an
// H200 (same arch and SM count) gained 1.6-2.5% in geomean on three
// families' held-out shapes but ran 7 of 175 slower than the heuristic, by
// up to 1.39x (tuning/results/H200_report_h100_db.md), and an entry cannot
// be trusted on a model it was never timed on.
int choose(const std::vector<Database>& dbs, const DeviceInfo& device) {
  const std::string arch = arch_of(device);
  int best = -1;
  for (int k = 0; k < static_cast<int>(dbs.size()); ++k) {
    const Database& db = dbs[k];
    if (db.arch != arch || db.gpu != device.name) continue;
    if (db.sm_count == device.sm_count) return k;
    if (best < 0 || std::abs(db.sm_count - device.sm_count) < std::abs(dbs[best].sm_count - device.sm_count))
      best = k;
  }
  return best;
}

namespace {

void set_origin(Database& db, const std::string& origin) {
  db.origin = origin;
  db.description = db.gpu + " (" + std::to_string(db.sm_count) + " SMs), " + origin;
}

}  // namespace

Catalog load_catalog(const char* env, const char* const* compiled, std::size_t count,
                     std::string_view generator_hash, FindVariant find, std::vector<std::string>* warnings) {
  Catalog c;
  auto warn = [&](const std::string& what, const std::string& why) {
    warnings->push_back("kgen: warning: ignoring " + what + ": " + why);
  };
  if (env && *env) {
    if (std::strcmp(env, "off") == 0) {
      c.override_set = true;
      return c;
    }
    std::ifstream in(env, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    Database db;
    std::string why;
    if (!in) {
      why = "cannot be read";
    } else if (load(text.str(), generator_hash, find, &db, &why)) {
      set_origin(db, std::string("from KGEN_TUNING_DB=") + env);
      c.dbs.push_back(std::move(db));
      c.override_set = true;
      return c;
    }
    warn(std::string("tuning database KGEN_TUNING_DB=") + env, why + "; using the compiled-in ones");
  }
  for (std::size_t k = 0; k < count; ++k) {
    Database db;
    std::string why;
    if (load(compiled[k], generator_hash, find, &db, &why)) {
      set_origin(db, "compiled in");
      c.dbs.push_back(std::move(db));
    } else {
      warn("compiled-in tuning database " + std::to_string(k), why);
    }
  }
  return c;
}

namespace {

const VariantInfo* find_compiled(std::string_view name) { return Registry::find(name); }

// The process's catalog: loaded at the first selection, warnings printed
// once, immutable after.
const Catalog& catalog() {
  static const Catalog c = [] {
    std::vector<std::string> warnings;
    Catalog loaded;
    try {
      loaded = load_catalog(std::getenv("KGEN_TUNING_DB"), gen::kTuningDatabases, gen::kTuningDatabaseCount,
                            gen::kGeneratorHash, find_compiled, &warnings);
    } catch (const std::exception& e) {
      loaded = Catalog{};
      warnings.push_back(std::string("kgen: warning: ignoring the tuning databases: ") + e.what());
    }
    for (const std::string& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
    return loaded;
  }();
  return c;
}

constexpr int kMaxDevices = 64;
const Database* chosen[kMaxDevices];
std::once_flag chosen_once[kMaxDevices];

std::atomic<bool> enabled{true};
std::atomic<bool> tracing{false};
thread_local Trace trace;

}  // namespace

const Database* database_for(const DeviceInfo& device) {
  if (device.ordinal < 0 || device.ordinal >= kMaxDevices) return nullptr;
  std::call_once(chosen_once[device.ordinal], [&] {
    const Catalog& c = catalog();
    // an override applies to whatever GPU this is
    const int k = c.override_set ? (c.dbs.empty() ? -1 : 0) : choose(c.dbs, device);
    chosen[device.ordinal] = k < 0 ? nullptr : &c.dbs[k];
  });
  return chosen[device.ordinal];
}

void set_enabled(bool on) { enabled.store(on, std::memory_order_relaxed); }
void set_tracing(bool on) { tracing.store(on, std::memory_order_relaxed); }
const Trace& last_trace() { return trace; }

}  // namespace tuning

const tuning::Database* active_database(const DeviceInfo& device) {
  return tuning::enabled.load(std::memory_order_relaxed) ? tuning::database_for(device) : nullptr;
}

bool selection_traced() { return tuning::tracing.load(std::memory_order_relaxed); }

const VariantInfo* tuned_variant(const tuning::Database* db, Family family, int element,
                                 const void* problem) {
  const bool trace = tuning::tracing.load(std::memory_order_relaxed);
  if (!db && !trace) return nullptr;
  char bucket[tuning::kBucketChars];
  tuning::bucket_of(family, problem, bucket, sizeof bucket);
  const VariantInfo* v = db ? db->find(family, element, bucket) : nullptr;
  if (trace) {
    tuning::Trace& t = tuning::trace;
    t.family = family;
    t.element = element;
    std::memcpy(t.bucket, bucket, sizeof bucket);
    t.hit = v != nullptr;
  }
  return v;
}

}  // namespace kgen
