// Buckets: the classes of problems one tuning-database entry stands for.
// A bucket key is a short string from the family's simplified problem
// ("row_c10", "tile_i6_j8", ...); each family's rules.cpp writes its own,
// from the extents that move its variants' ranking (powers of two of the
// reduced or moved extents, the layout), so that the problems of one bucket
// share a winner.  kgen-tune groups its problems by the same keys.
#pragma once

#include <cstdint>

#include "variant.hpp"

namespace kgen {
namespace tuning {

constexpr int kBucketChars = 48;

// Writes the bucket of `problem` (the family's Problem struct) into out.
void bucket_of(Family family, const void* problem, char* out, int size);

// ceil(log2(n)) for n >= 1 (0 for n <= 1): the power-of-two class of an extent.
inline int log2_class(int64_t n) {
  int c = 0;
  while (c < 62 && (int64_t{1} << c) < n) ++c;
  return c;
}

// "_s" for a tensor under 4 MiB, else "": such a tensor's time is launch and
// one wave, and an entry won on one need not win where the data streams
// from DRAM, nor the reverse (bench/NOTES.md tuning v5).  Permute, reduce
// (mid and last) and the softmax strided layout tag their buckets with it.
constexpr int64_t kSmallTensorBytes = int64_t{4} << 20;
inline const char* small_tag(int64_t bytes) { return bytes < kSmallTensorBytes ? "_s" : ""; }

}  // namespace tuning
}  // namespace kgen
