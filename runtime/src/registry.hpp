// The table of compiled variants (generated: registry.gen.cpp), with lookups
// by name and by (family, dtype).  Built on first use, immutable after.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "variant.hpp"

namespace kgen {

struct Registry {
  // every compiled variant, in generator order
  static const std::vector<const VariantInfo*>& all();
  // the variants of one family and element (a dtype, or a movement_key), in
  // generator order
  static const std::vector<const VariantInfo*>& of(Family family, int element);
  // nullptr when no compiled variant has this name
  static const VariantInfo* find(std::string_view name);
};

namespace gen {
// defined in the generated registry.gen.cpp
extern const VariantInfo* const kRegistry[];
extern const std::size_t kRegistrySize;
extern const char* const kBuildArch;   // "sm_90,sm_100,sm_120"
extern const int kCodeArches[];        // {90, 100, 120}: SASS for each, PTX for the last
extern const std::size_t kCodeArchCount;
extern const char* const kBuildLevel;
extern const char* const kGeneratorHash;
extern const char* const kTuningDatabases[];  // JSON texts, kTuningDatabaseCount of them
extern const std::size_t kTuningDatabaseCount;
}  // namespace gen

}  // namespace kgen
