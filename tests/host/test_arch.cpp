// Several architectures in one build, without a GPU: which code a device
// runs, and that selection and named variants respect a variant's arch.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "device.hpp"
#include "kgen/kgen.h"
#include "registry.hpp"
#include "select.hpp"
#include "softmax/problem.hpp"

namespace {

int code_arch(int major, int minor, std::initializer_list<int> arches) {
  return kgen::code_arch_for(major, minor, arches.begin(), arches.size());
}

}  // namespace

TEST_CASE("a device runs the SASS of its major version, else PTX not newer than it", "[arch]") {
  // the build of -Darch=sm_90,sm_100,sm_120: SASS for each, PTX compute_120
  const std::initializer_list<int> three = {90, 100, 120};
  CHECK(code_arch(9, 0, three) == 90);
  CHECK(code_arch(10, 0, three) == 100);
  CHECK(code_arch(10, 3, three) == 100);   // sm_100 SASS runs on 10.3
  CHECK(code_arch(12, 0, three) == 120);
  CHECK(code_arch(12, 1, three) == 120);
  CHECK(code_arch(8, 0, three) == 0);      // SASS of another major never runs; PTX 120 is newer
  CHECK(code_arch(11, 0, three) == 0);
  CHECK(code_arch(13, 0, three) == 120);   // a later GPU: the PTX through the driver's JIT
  // one arch: its SASS where the major matches, its PTX on later GPUs
  CHECK(code_arch(9, 0, {90}) == 90);
  CHECK(code_arch(10, 0, {90}) == 90);
  CHECK(code_arch(8, 9, {90}) == 0);
  CHECK(code_arch(9, 0, {80}) == 80);      // an H100 running an sm_80 build's PTX
  CHECK(code_arch(8, 6, {80}) == 80);      // sm_80 SASS on 8.6
  // the newest minor not above the device's
  CHECK(code_arch(8, 9, {80, 86, 90}) == 86);
  CHECK(code_arch(8, 0, {86, 90}) == 0);
  CHECK(code_arch(9, 0, {}) == 0);
}

TEST_CASE("the build records its arch list, oldest first, as the code it holds", "[arch][registry]") {
  std::string listed;
  for (std::size_t k = 0; k < kgen::gen::kCodeArchCount; ++k)
    listed += (k ? ",sm_" : "sm_") + std::to_string(kgen::gen::kCodeArches[k]);
  CHECK(listed == kgen_build_arch());
  for (std::size_t k = 1; k < kgen::gen::kCodeArchCount; ++k)
    CHECK(kgen::gen::kCodeArches[k - 1] < kgen::gen::kCodeArches[k]);
  for (const kgen::VariantInfo* v : kgen::Registry::all()) {
    INFO(v->name);
    CHECK(v->min_arch <= kgen::gen::kCodeArches[kgen::gen::kCodeArchCount - 1]);
    if (v->generic) CHECK(v->min_arch == 0);  // selection's last resort runs everywhere
  }
}

namespace {

bool always(const kgen::VariantInfo&, const void*) { return true; }
cudaError_t never_launched(const void*, cudaStream_t) { return cudaErrorUnknown; }
void describe(const void*, char* text, int size) { std::snprintf(text, size, "rows=1 cols=1"); }
kgen::Score prefer_all(const kgen::VariantInfo&, const void*) { return kgen::Score{}; }

}  // namespace

TEST_CASE("a variant whose arch the device does not run is never selected, and naming it says why",
          "[arch]") {
  const kgen::VariantInfo needs_90{"softmax_cluster_f32_test", kgen::Family::softmax, KGEN_FLOAT32,
                                   nullptr, false, 90, &always, &never_launched};
  kgen::DeviceInfo hopper, ampere;
  ampere.major = 8;
  ampere.code_arch = 80;
  std::snprintf(ampere.name, sizeof ampere.name, "NVIDIA A100-SXM4-80GB");
  CHECK(kgen::runs_on(needs_90, hopper));
  CHECK_FALSE(kgen::runs_on(needs_90, ampere));

  kgen::softmax::Problem p{};
  const kgen::VariantInfo* chosen = &needs_90;
  CHECK(kgen::choose_variant(&needs_90, kgen::Family::softmax, KGEN_FLOAT32, ampere, &p, &prefer_all,
                             &describe, &chosen) == KGEN_ERROR_UNSUPPORTED);
  CHECK(chosen == nullptr);
  const std::string why = kgen_last_error();
  CHECK(why.find("softmax_cluster_f32_test") != std::string::npos);
  CHECK(why.find("sm_90") != std::string::npos);
  CHECK(why.find("sm_80") != std::string::npos);
  CHECK(why.find("A100") != std::string::npos);

  CHECK(kgen::choose_variant(&needs_90, kgen::Family::softmax, KGEN_FLOAT32, hopper, &p, &prefer_all,
                             &describe, &chosen) == KGEN_OK);
  CHECK(chosen == &needs_90);
}

TEST_CASE("selection skips a variant whose arch the device does not run", "[arch]") {
  // the preferred variant needs sm_90 code; the generic one runs anywhere
  const kgen::VariantInfo needs_90{"softmax_cluster_f32_test", kgen::Family::softmax, KGEN_FLOAT32,
                                   nullptr, false, 90, &always, &never_launched};
  const kgen::VariantInfo generic{"softmax_generic_f32_test", kgen::Family::softmax, KGEN_FLOAT32,
                                  nullptr, true, 0, &always, &never_launched};
  const std::vector<const kgen::VariantInfo*> candidates = {&generic, &needs_90};
  kgen::DeviceInfo hopper, ampere, jit80;
  ampere.major = 8;
  ampere.code_arch = 80;
  jit80.code_arch = 80;  // an H100 running an sm_80 build through its PTX
  kgen::softmax::Problem p{};
  CHECK(kgen::best_of(candidates, hopper, &p, &prefer_all).variant == &needs_90);
  CHECK(kgen::best_of(candidates, ampere, &p, &prefer_all).variant == &generic);
  CHECK(kgen::best_of(candidates, jit80, &p, &prefer_all).variant == &generic);
}

namespace {
// prefers the variant whose name sorts last
kgen::Score prefer_last_name(const kgen::VariantInfo& v, const void*) {
  kgen::Score s;
  s.key[0] = static_cast<unsigned char>(v.name[std::strlen(v.name) - 1]);
  return s;
}
}  // namespace

TEST_CASE("the heuristic never ranks a database-only winner",
          "[arch]") {
  // b would win on the heuristic's score, but it is compiled only as a
  // tuning database's winner: another GPU's database must not move the pick
  const kgen::VariantInfo a{"softmax_warp_f32_a", kgen::Family::softmax, KGEN_FLOAT32, nullptr, false, 0,
                            &always, &never_launched};
  const kgen::VariantInfo b{"softmax_warp_f32_b", kgen::Family::softmax, KGEN_FLOAT32, nullptr, false, 0,
                            &always, &never_launched, false};
  const kgen::VariantInfo generic{"softmax_generic_f32_test", kgen::Family::softmax, KGEN_FLOAT32,
                                  nullptr, true, 0, &always, &never_launched};
  kgen::DeviceInfo hopper;
  kgen::softmax::Problem p{};
  auto picked = [&](std::vector<const kgen::VariantInfo*> c) { return kgen::best_of(c, hopper, &p, &prefer_last_name); };
  CHECK(picked({&generic, &a, &b}).variant == &a);
  CHECK(picked({&generic, &b, &a}).variant == &a);
  CHECK(picked({&generic, &a, &b}).source == kgen::Source::heuristic);
  // nor before the generic variant, where no ranked variant takes the
  // problem (a tuned-level build ranks all it holds)
  CHECK(picked({&generic, &b}).variant == &generic);
  CHECK(picked({&generic, &b}).source == kgen::Source::generic);
  CHECK(picked({&generic}).variant == &generic);
}
