// The compiled registry, without a GPU: names, generic variants, lookups.
#include <set>
#include <string>

#include "catch.hpp"
#include "kgen/kgen.h"
#include "kgen_params.gen.hpp"
#include "registry.hpp"

using kgen::Family;
using kgen::Registry;

TEST_CASE("variant names are unique, found by name, and listed by the C API", "[registry]") {
  const auto& all = Registry::all();
  REQUIRE(!all.empty());
  REQUIRE(kgen_variant_count() == static_cast<int64_t>(all.size()));
  std::set<std::string> names;
  for (int64_t i = 0; i < kgen_variant_count(); ++i) {
    const std::string name = kgen_variant_name(i);
    CHECK(names.insert(name).second);
    CHECK(Registry::find(name) == all[i]);
    CHECK(name.rfind(std::string(kgen_variant_family(i)) + "_", 0) == 0);
  }
  CHECK(kgen_variant_name(-1) == nullptr);
  CHECK(kgen_variant_name(kgen_variant_count()) == nullptr);
  CHECK(Registry::find("softmax_warp_f32_no_such_thing") == nullptr);
}

TEST_CASE("every softmax dtype has exactly one generic variant, whatever the level", "[registry]") {
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64}) {
    int generic = 0;
    for (const kgen::VariantInfo* v : Registry::of(Family::softmax, d)) {
      CHECK(v->element == d);
      CHECK(v->family == Family::softmax);
      const auto& p = *static_cast<const kgen::gen::SoftmaxParams*>(v->params);
      if (v->generic) {
        ++generic;
        CHECK(p.tier == kgen::gen::SoftmaxTier::generic);
        CHECK(p.pack_size == 1);
      }
    }
    CHECK(generic == 1);
  }
}

TEST_CASE("the build records its arch and level", "[registry]") {
  const std::string arch = kgen_build_arch(), level = kgen_build_level();
  CHECK(arch.rfind("sm_", 0) == 0);
  CHECK((level == "default" || level == "full" || level == "tuned"));
}
