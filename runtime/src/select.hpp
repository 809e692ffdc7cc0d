// Variant selection, in the order of the design:
//   1. the tuning database for this GPU          (tuning/db.cpp)
//   2. the family's heuristic: the best-scoring compiled variant that
//      supports the problem                      (<family>/rules.cpp)
//   3. the family's generic variant
// Every step only proposes variants that are compiled in and whose
// supports() accepts the real problem.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kgen/kgen.h"
#include "variant.hpp"

namespace kgen {

// Lexicographic preference: larger is better, first key first.
struct Score {
  std::array<int64_t, 5> key{};
  static Score reject() { Score s; s.key[0] = INT64_MIN; return s; }
  bool rejected() const { return key[0] == INT64_MIN; }
  bool operator<(const Score& o) const { return key < o.key; }
};

using ScoreFn = Score (*)(const VariantInfo& v, const void* problem);

enum class Source { tuning_db, heuristic, generic };

struct Selection {
  const VariantInfo* variant = nullptr;
  Source source = Source::generic;
};

// Host-only: the variant a caller named (null: none) must be a compiled
// variant of this family and dtype; *named is null when none was named.
kgen_status_t find_named(const char* variant, Family family, kgen_dtype_t dtype,
                         const VariantInfo** named);

// The same for the families that only move bytes (permute, expand, where):
// any compiled variant of the family; *max_movement is the unit it moves,
// kMaxMovement when none is named.
kgen_status_t find_named_mover(const char* variant, Family family, const VariantInfo** named,
                               int* max_movement);

namespace tuning {
struct Database;
}

// The three steps with the database of this device (active_database).
Selection select_variant(Family family, int element, const DeviceInfo& device,
                         const void* problem, ScoreFn heuristic);
// The same with a given database (null: none).  Variants that do not run on
// the device (runs_on) are never proposed.
Selection select_from(const tuning::Database* db, Family family, int element,
                      const DeviceInfo& device, const void* problem, ScoreFn heuristic);

// Steps 2 and 3 over `candidates` (a family's variants of one element, in
// generator order): the best-scoring non-generic variant that runs on the
// device and supports the problem (the first on a tie), else the first
// generic one.
Selection best_of(const std::vector<const VariantInfo*>& candidates, const DeviceInfo& device,
                  const void* problem, ScoreFn heuristic);

// Writes a short description of a family's problem ("rows=4 cols=7") for
// error messages; called only on failure.
using DescribeFn = void (*)(const void* problem, char* text, int size);

// A problem's class for the selection cache: every field that the
// family's supports() and heuristic read, pointers as their address mod 16
// (no rule looks past 16-byte alignment).  Two problems of one key get the
// same variant; the cache still asks the variant's supports() of the real
// problem before reusing it (capability is never cached, only preference).
struct ProblemKey {
  // the largest key: a where's layout (a header word, 9 dims, 3 inputs'
  // strides along each, 4 pointers) is 41 words
  static constexpr int kWords = 44;
  int64_t w[kWords] = {};
  int n = 0;
  bool overflow = false;
  void add(int64_t v) {
    if (n < kWords) w[n++] = v;
    else overflow = true;
  }
  void add_address(const void* p) { add(p ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) % 16) : -1); }
  bool operator==(const ProblemKey& o) const;
};
// Fills `key` for a problem; false: not cacheable (selected every time).
using KeyFn = bool (*)(const void* problem, ProblemKey* key);

// select_variant through a per-thread cache keyed by (family, element,
// device, database, key): a repeated problem class skips the scoring of
// every compiled variant (0.9 us a softmax call on a 2-core host).  key
// null: no cache.
Selection select_cached(Family family, int element, const DeviceInfo& device, const void* problem,
                        ScoreFn heuristic, KeyFn key);

// Every entry point's last step before launching: the named variant if
// there is one (an error naming `variant` and the problem when it cannot run
// it, or naming the arch when the device does not run its code), else
// select_variant's choice (an internal error if not even a
// generic variant of this element is compiled in).
kgen_status_t choose_variant(const VariantInfo* named, Family family, int element,
                             const DeviceInfo& device, const void* problem, ScoreFn heuristic,
                             DescribeFn describe, const VariantInfo** chosen, KeyFn key = nullptr);

// A problem that needs no kernel: `bytes` copied from src to dst as they are
// (a permute or an expand that moves nothing).
struct PlainCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  int64_t bytes = 0;
};

// Every entry point's launch: the chosen variant on the problem, or with v
// null the plain copy.  A CUDA failure is KGEN_ERROR_CUDA with its message.
kgen_status_t launch_chosen(const VariantInfo* v, const void* problem, kgen_stream_t stream,
                            const PlainCopy& copy = PlainCopy{});

}  // namespace kgen
