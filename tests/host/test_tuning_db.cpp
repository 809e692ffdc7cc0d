// Tuning databases without a GPU: parsing (good, stale, corrupt, a variant
// not compiled in), the choice of database for a device (exact GPU, nearest
// SM count of the same model, none), and the selection order (database, then
// heuristic, then generic).  Uses only the generic variants, which every
// level and filter compiles.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "registry.hpp"
#include "select.hpp"
#include "softmax/problem.hpp"
#include "tuning/bucket.hpp"
#include "tuning/db.hpp"
#include "tuning/json.hpp"

using kgen::Family;
using kgen::tuning::Database;

namespace {

const kgen::VariantInfo* find(std::string_view name) { return kgen::Registry::find(name); }

std::string db_text(const std::string& entries, const std::string& hash = kgen::gen::kGeneratorHash,
                    const std::string& gpu = "NVIDIA H100 80GB HBM3", int sms = 132, int format = 1) {
  return "{\"format\": " + std::to_string(format) + ", \"gpu\": \"" + gpu + "\", \"sm_count\": " +
         std::to_string(sms) + ", \"arch\": \"sm_90\", \"generator_hash\": \"" + hash +
         "\", \"library_version\": \"0.1.0\", \"commit\": \"abc\", \"entries\": [" + entries + "]}";
}

const std::string kSoftmaxEntry =
    "{\"family\": \"softmax\", \"bucket\": \"row_w1024\", \"variant\": \"softmax_generic_f32\"}";
const std::string kPermuteEntry =
    "{\"family\": \"permute\", \"bucket\": \"tile_i10_j10_b0\", \"variant\": \"permute_generic_b2\"}";

bool load(const std::string& text, Database* db, std::string* why) {
  return kgen::tuning::load(text, kgen::gen::kGeneratorHash, find, db, why);
}

Database named(const std::string& gpu, int sms, const std::string& arch = "sm_90") {
  Database db;
  db.gpu = gpu;
  db.sm_count = sms;
  db.arch = arch;
  return db;
}

kgen::DeviceInfo device(const char* name, int sms, int major = 9, int minor = 0) {
  kgen::DeviceInfo d;
  std::snprintf(d.name, sizeof d.name, "%s", name);
  d.sm_count = sms;
  d.major = major;
  d.minor = minor;
  return d;
}

}  // namespace

TEST_CASE("json: values, escapes and nesting parse; malformed text is an error with its offset", "[tuning]") {
  kgen::json::Value v;
  std::string error;
  REQUIRE(kgen::json::parse(" {\"a\": [1, -2.5e3, true, false, null], \"b\": \"x\\\"\\u0041\\n\"} ", &v, &error));
  REQUIRE(v.get("a") != nullptr);
  CHECK(v.get("a")->array.size() == 5);
  CHECK(v.get("a")->array[1].number == -2500);
  CHECK(v.get("a")->array[2].boolean);
  CHECK(v.get("a")->array[4].is(kgen::json::Value::Type::null));
  CHECK(v.get("b")->string == "x\"A\n");
  CHECK(v.get("c") == nullptr);
  for (const char* bad : {"", "{", "{\"a\" 1}", "[1,]", "[1 2]", "{\"a\": tru}", "\"open", "01x", "{} {}",
                          "[\"\\q\"]", "-", "1.", "[\"\\u12\"]"}) {
    INFO(bad);
    error.clear();
    CHECK_FALSE(kgen::json::parse(bad, &v, &error));
    CHECK(error.find("at byte") != std::string::npos);
  }
  const std::string deep(1000, '[');
  CHECK_FALSE(kgen::json::parse(deep, &v, &error));
  CHECK(error.find("too deep") != std::string::npos);
}

TEST_CASE("a good database loads; its entries are found by family, element and bucket", "[tuning]") {
  Database db;
  std::string why;
  REQUIRE(load(db_text(kSoftmaxEntry + ", " + kPermuteEntry), &db, &why));
  CHECK(why.empty());
  CHECK(db.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(db.sm_count == 132);
  CHECK(db.arch == "sm_90");
  REQUIRE(db.entries.size() == 2);
  CHECK(db.find(Family::softmax, KGEN_FLOAT32, "row_w1024") == find("softmax_generic_f32"));
  CHECK(db.find(Family::permute, kgen::movement_key(2), "tile_i10_j10_b0") == find("permute_generic_b2"));
  CHECK(db.find(Family::softmax, KGEN_FLOAT32, "row_w1536") == nullptr);      // another bucket
  CHECK(db.find(Family::softmax, KGEN_FLOAT16, "row_w1024") == nullptr);      // another element
  CHECK(db.find(Family::softmax_backward, KGEN_FLOAT32, "row_w1024") == nullptr);  // another family
  // an empty database is valid (a sweep where the heuristic won everywhere)
  REQUIRE(load(db_text(""), &db, &why));
  CHECK(db.entries.empty());
}

TEST_CASE("a stale database (other generator hash or format) is refused, saying why", "[tuning]") {
  Database db;
  std::string why;
  CHECK_FALSE(load(db_text(kSoftmaxEntry, "0123456789abcdef"), &db, &why));
  CHECK(why.find("stale") != std::string::npos);
  CHECK(why.find("0123456789abcdef") != std::string::npos);
  CHECK_FALSE(load(db_text(kSoftmaxEntry, kgen::gen::kGeneratorHash, "X", 132, 2), &db, &why));
  CHECK(why.find("format 2") != std::string::npos);
}

TEST_CASE("a corrupt database is refused, saying why, whatever the defect", "[tuning]") {
  const std::string good = db_text(kSoftmaxEntry);
  struct Bad {
    std::string text, says;
  };
  const std::vector<Bad> cases = {
      {good.substr(0, good.size() / 2), "corrupt"},                               // cut short
      {"[1, 2, 3]", "not a JSON object"},
      {"{\"format\": 1}", "gpu"},                                                 // members missing
      {db_text("7"), "not an object"},
      {db_text("{\"family\": \"softmax\", \"bucket\": \"row_w1024\"}"), "variant"},
      {db_text("{\"family\": \"sofmax\", \"bucket\": \"b\", \"variant\": \"softmax_generic_f32\"}"), "unknown family"},
      {db_text("{\"family\": \"expand\", \"bucket\": \"b\", \"variant\": \"permute_generic_b4\"}"), "not of family"},
      {db_text("{\"family\": \"softmax\", \"bucket\": \"\", \"variant\": \"softmax_generic_f32\"}"), "bucket"},
      {db_text(kSoftmaxEntry + ", " + kSoftmaxEntry), "twice"},
      {"{\"format\": \"1\", \"gpu\": \"x\"}", "format"},
      {std::string("{\"format\": 1, \"gpu\": \"x\", \"sm_count\": 1.5}"), "sm_count"},
      {std::string("{\"format\": 1e300, \"gpu\": \"x\"}"), "format"},
      {std::string("{\"format\": 1, \"gpu\": \"x\", \"sm_count\": -1e19}"), "sm_count"},
  };
  for (const Bad& b : cases) {
    INFO(b.text);
    Database db;
    std::string why;
    CHECK_FALSE(load(b.text, &db, &why));
    CHECK(why.find(b.says) != std::string::npos);
  }
}

TEST_CASE("a database naming a variant that is not compiled in is refused", "[tuning]") {
  Database db;
  std::string why;
  CHECK_FALSE(load(db_text(kSoftmaxEntry + ", {\"family\": \"softmax\", \"bucket\": \"row_w16\", "
                                           "\"variant\": \"softmax_warp_f32_p99_c1_g32_r1_pad\"}"),
                   &db, &why));
  CHECK(why.find("softmax_warp_f32_p99_c1_g32_r1_pad") != std::string::npos);
  CHECK(why.find("not compiled in") != std::string::npos);
}

TEST_CASE("the database for a device: exact GPU, else its model's nearest SM count, else none", "[tuning]") {
  const std::vector<Database> dbs = {named("NVIDIA H100 PCIe", 114), named("NVIDIA H100 80GB HBM3", 132),
                                     named("NVIDIA H200", 132), named("NVIDIA A100-SXM4-80GB", 108, "sm_80")};
  // exact name and SM count, even when another of the same SM count comes first
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA H200", 132)) == 2);
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA H100 PCIe", 114)) == 0);
  // same name, other SM count (a partitioned GPU): its model's nearest SM
  // count, not another model's nearer one
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA H100 80GB HBM3", 66)) == 1);
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA H200", 66)) == 2);
  // another model of a known arch, even of the same SM count: none (the
  // heuristic decides; a foreign database was measured to lose on the H200)
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA H800", 132)) == -1);
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA GH200", 120)) == -1);
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA A100-PCIE-40GB", 108, 8, 0)) == -1);
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA A100-SXM4-80GB", 108, 8, 0)) == 3);
  // the same name on another arch (cannot happen, but names are not checked for it): none
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA A100-SXM4-80GB", 108, 9, 0)) == -1);
  // no database of the arch: none
  CHECK(kgen::tuning::choose(dbs, device("NVIDIA L40S", 142, 8, 9)) == -1);
  CHECK(kgen::tuning::choose({}, device("NVIDIA H100 80GB HBM3", 132)) == -1);
  CHECK(kgen::tuning::arch_of(device("x", 1, 8, 6)) == "sm_86");
}

TEST_CASE("KGEN_TUNING_DB replaces the compiled-in databases; a bad database is ignored with one warning",
          "[tuning]") {
  const std::string good = db_text(kSoftmaxEntry), stale = db_text(kSoftmaxEntry, "0000000000000000");
  const std::string other = db_text(kPermuteEntry, kgen::gen::kGeneratorHash, "NVIDIA H200", 132);
  const char* compiled[] = {good.c_str(), stale.c_str()};
  auto file = [](const std::string& name, const std::string& text) {
    const std::string path = "kgen-test-" + name + ".json";
    std::ofstream(path) << text;
    return path;
  };
  std::vector<std::string> warnings;
  auto catalog = [&](const char* env) {
    warnings.clear();
    return kgen::tuning::load_catalog(env, compiled, 2, kgen::gen::kGeneratorHash, find, &warnings);
  };
  // no override: the compiled-in ones, the stale one ignored with one warning
  auto c = catalog(nullptr);
  CHECK_FALSE(c.override_set);
  REQUIRE(c.dbs.size() == 1);
  CHECK(c.dbs[0].description == "NVIDIA H100 80GB HBM3 (132 SMs), compiled in");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("compiled-in tuning database 1") != std::string::npos);
  CHECK(warnings[0].find("stale") != std::string::npos);
  // a good file replaces them all
  const std::string path = file("good", other);
  c = catalog(path.c_str());
  CHECK(c.override_set);
  REQUIRE(c.dbs.size() == 1);
  CHECK(c.dbs[0].gpu == "NVIDIA H200");
  CHECK(c.dbs[0].origin == "from KGEN_TUNING_DB=" + path);
  CHECK(warnings.empty());
  // a missing, corrupt or stale file: one warning naming it, the compiled-in ones stay
  for (const std::string& bad : {std::string("kgen-test-missing.json"), file("corrupt", "{\"format\": 1,"),
                                 file("stale", stale)}) {
    INFO(bad);
    c = catalog(bad.c_str());
    CHECK_FALSE(c.override_set);
    CHECK(c.dbs.size() == 1);
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0].find("KGEN_TUNING_DB=" + bad) != std::string::npos);
    CHECK(warnings[0].find("using the compiled-in ones") != std::string::npos);
  }
  // off: no database at all, no warning
  c = catalog("off");
  CHECK(c.override_set);
  CHECK(c.dbs.empty());
  CHECK(warnings.empty());
  for (const char* name : {"good", "corrupt", "stale"}) std::remove(("kgen-test-" + std::string(name) + ".json").c_str());
}

TEST_CASE("selection order: the database's entry, else the heuristic, else the generic variant", "[tuning]") {
  const kgen::DeviceInfo dev;  // an H100 SXM
  const void* x = reinterpret_cast<const void*>(uintptr_t{1} << 32);
  void* y = reinterpret_cast<void*>(uintptr_t{1} << 33);
  kgen::softmax::Problem p{KGEN_FLOAT32, false, 4096, 1024, x, y, &dev};
  char bucket[kgen::tuning::kBucketChars];
  kgen::tuning::bucket_of(Family::softmax, &p, bucket, sizeof bucket);
  CHECK(std::string(bucket) == "row_w1024");

  Database db;
  std::string why;
  REQUIRE(load(db_text(kSoftmaxEntry), &db, &why));
  // 1. the database's pick for the bucket, which supports the problem
  auto s = kgen::select_from(&db, Family::softmax, KGEN_FLOAT32, dev, &p, &kgen::softmax::heuristic);
  CHECK(s.source == kgen::Source::tuning_db);
  CHECK(s.variant == find("softmax_generic_f32"));
  // 2. no entry for this bucket (or no database): the heuristic's pick
  kgen::softmax::Problem other = p;
  other.cols = 3000;
  s = kgen::select_from(&db, Family::softmax, KGEN_FLOAT32, dev, &other, &kgen::softmax::heuristic);
  const auto h = kgen::select_from(nullptr, Family::softmax, KGEN_FLOAT32, dev, &other, &kgen::softmax::heuristic);
  CHECK(s.variant == h.variant);
  CHECK(s.source == h.source);
  CHECK(s.source != kgen::Source::tuning_db);
  // 3. a heuristic that takes nothing: the generic variant
  auto none = [](const kgen::VariantInfo&, const void*) { return kgen::Score::reject(); };
  s = kgen::select_from(nullptr, Family::softmax, KGEN_FLOAT32, dev, &other, none);
  CHECK(s.source == kgen::Source::generic);
  CHECK(s.variant == find("softmax_generic_f32"));
}

TEST_CASE("with tracing on, every selection records its bucket, the selection cache aside", "[tuning]") {
  const kgen::DeviceInfo dev;
  const void* x = reinterpret_cast<const void*>(uintptr_t{1} << 32);
  void* y = reinterpret_cast<void*>(uintptr_t{1} << 33);
  const kgen::softmax::Problem a{KGEN_FLOAT32, false, 4096, 1024, x, y, &dev};
  kgen::softmax::Problem b = a;
  b.cols = 3000;
  auto select = [&](const kgen::softmax::Problem& p) {
    kgen::select_cached(Family::softmax, KGEN_FLOAT32, dev, &p, &kgen::softmax::heuristic,
                        &kgen::softmax::selection_key);
    return std::string(kgen::tuning::last_trace().bucket);
  };
  select(a);  // a in the cache before tracing starts
  kgen::tuning::set_tracing(true);
  const std::string first = select(a), other = select(b), again = select(a);
  kgen::tuning::set_tracing(false);
  CHECK(first == "row_w1024");
  CHECK(other != first);
  CHECK(again == first);
}

TEST_CASE("a database entry whose variant cannot run the problem falls back to the heuristic",
          "[tuning][default-set]") {
  const kgen::DeviceInfo dev;
  // x 4 bytes past a 16-byte boundary: no variant with wider packs runs it
  const void* x = reinterpret_cast<const void*>((uintptr_t{1} << 32) + 4);
  void* y = reinterpret_cast<void*>(uintptr_t{1} << 33);
  kgen::softmax::Problem p{KGEN_FLOAT32, false, 4096, 1024, x, y, &dev};
  const kgen::VariantInfo* cannot = nullptr;
  for (const kgen::VariantInfo* v : kgen::Registry::of(Family::softmax, KGEN_FLOAT32))
    if (!v->supports(*v, &p)) cannot = cannot ? cannot : v;
  REQUIRE(cannot != nullptr);
  Database db;
  std::string why;
  REQUIRE(load(db_text("{\"family\": \"softmax\", \"bucket\": \"row_w1024\", \"variant\": \"" +
                       std::string(cannot->name) + "\"}"),
               &db, &why));
  REQUIRE(db.find(Family::softmax, KGEN_FLOAT32, "row_w1024") == cannot);
  const auto s = kgen::select_from(&db, Family::softmax, KGEN_FLOAT32, dev, &p, &kgen::softmax::heuristic);
  const auto h = kgen::select_from(nullptr, Family::softmax, KGEN_FLOAT32, dev, &p, &kgen::softmax::heuristic);
  CHECK(s.source != kgen::Source::tuning_db);
  CHECK(s.variant == h.variant);
  CHECK(s.variant->supports(*s.variant, &p));
}

TEST_CASE("buckets follow the extents that move the ranking", "[tuning]") {
  const kgen::DeviceInfo dev;
  const void* x = reinterpret_cast<const void*>(uintptr_t{1} << 32);
  void* y = reinterpret_cast<void*>(uintptr_t{1} << 33);
  auto softmax_bucket = [&](int64_t rows, int64_t cols, int64_t inner) {
    kgen::softmax::Problem p{KGEN_FLOAT16, false, rows, cols, x, y, &dev, inner};
    char b[kgen::tuning::kBucketChars];
    kgen::tuning::bucket_of(Family::softmax, &p, b, sizeof b);
    return std::string(b);
  };
  CHECK(softmax_bucket(8192, 513, 1) == "row_w768");
  CHECK(softmax_bucket(8192, 768, 1) == "row_w768");
  CHECK(softmax_bucket(8192, 1024, 1) == "row_w1024");
  CHECK(softmax_bucket(8192, 1025, 1) == "row_w1536");
  CHECK(softmax_bucket(8192, 3, 1) == "row_w4");
  CHECK(softmax_bucket(8192, 2049, 1) == "row_l22");  // 2 log2(2049) = 22.001
  CHECK(softmax_bucket(8192, 2896, 1) == "row_l22");  // 22.9995
  CHECK(softmax_bucket(8192, 2897, 1) == "row_l23");
  CHECK(softmax_bucket(8192, 4096, 1) == "row_l24");
  // under 1024 rows, by rows an SM (132 SMs): under 33, 132, 528, 1024
  CHECK(softmax_bucket(100, 1024, 1) == "row_w1024_few1");
  CHECK(softmax_bucket(100, 100000, 1) == "row_l33_few1");
  CHECK(softmax_bucket(1, 100000, 1) == "row_l33_few0");
  CHECK(softmax_bucket(32, 100000, 1) == "row_l33_few0");
  CHECK(softmax_bucket(33, 100000, 1) == "row_l33_few1");
  CHECK(softmax_bucket(132, 100000, 1) == "row_l33_few2");
  CHECK(softmax_bucket(1023, 100000, 1) == "row_l33_few3");
  CHECK(softmax_bucket(1024, 100000, 1) == "row_l33");
  CHECK(softmax_bucket(64, 1024, 4096) == "strided_a5_i6");
  CHECK(softmax_bucket(1, 120281, 9) == "strided_a9_i2_few_s");  // the split tier's; 2.1 MB
  CHECK(softmax_bucket(8, 120281, 9) == "strided_a9_i2_few");     // 17 MB
  CHECK(softmax_bucket(128, 1024, 8) == "strided_a5_i2_s");       // 2 MiB
  // the backward's dx apart from y (mod 16 bytes): a bucket of its own,
  // which no sweep of congruent tensors fills; y and dx off alike, and the
  // forward's y apart from x, keep theirs
  auto shifted_bucket = [&](bool bwd, int64_t x_off, int64_t y_off, int64_t rows, int64_t inner) {
    kgen::softmax::Problem p{KGEN_FLOAT16,
                             false,
                             rows,
                             1001,
                             static_cast<const char*>(x) + x_off,
                             static_cast<char*>(y) + y_off,
                             &dev,
                             inner};
    if (bwd) p.dy = static_cast<const char*>(x) + (uintptr_t{1} << 30) + x_off;
    char b[kgen::tuning::kBucketChars];
    kgen::tuning::bucket_of(bwd ? Family::softmax_backward : Family::softmax, &p, b, sizeof b);
    return std::string(b);
  };
  CHECK(shifted_bucket(true, 2, 0, 8192, 1) == "row_w1024_apart");
  CHECK(shifted_bucket(true, 0, 2, 100, 1) == "row_w1024_few1_apart");
  CHECK(shifted_bucket(true, 2, 2, 8192, 1) == "row_w1024");
  CHECK(shifted_bucket(true, 0, 16, 8192, 1) == "row_w1024");
  CHECK(shifted_bucket(true, 2, 0, 64, 4096) == "strided_a5_i6_apart");
  CHECK(shifted_bucket(false, 2, 0, 8192, 1) == "row_w1024");
  CHECK(shifted_bucket(false, 2, 0, 64, 4096) == "strided_a5_i6");
  CHECK(kgen::tuning::log2_class(1) == 0);
  CHECK(kgen::tuning::log2_class(2) == 1);
  CHECK(kgen::tuning::log2_class(3) == 2);
  CHECK(kgen::tuning::log2_class(int64_t{1} << 40) == 40);
}

TEST_CASE("every compiled-in database is current: its generator hash and every variant it names", "[tuning]") {
  // a database left at an old generator hash is ignored at run time with a
  // warning: the commit that changes generator/ or templates/ must sweep it
  // again or carry it (tuning/README.md)
  std::vector<std::string> warnings;
  const kgen::tuning::Catalog c = kgen::tuning::load_catalog(
      nullptr, kgen::gen::kTuningDatabases, kgen::gen::kTuningDatabaseCount, kgen::gen::kGeneratorHash, find, &warnings);
  std::string said;
  for (const std::string& w : warnings) said += w + "\n";
  INFO(said);
  CHECK(warnings.empty());
  CHECK(c.dbs.size() == kgen::gen::kTuningDatabaseCount);
}
