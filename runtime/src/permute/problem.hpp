// A permute problem after validation and simplification, and the layouts
// (strides, tile and batch dims) that capability checks and the generated
// launchers both derive from it.
#pragma once

#include <cstdint>

#include "select.hpp"
#include "variant.hpp"

namespace kgen {
namespace permute {

constexpr int kMaxRank = 8;  // of the tensors callers pass
// of a simplified shape: an element split into narrower units (misaligned
// pointers) adds one dim
constexpr int kMaxDims = kMaxRank + 1;

// dst = src.permute(perm) of a contiguous src, in units of `movement` bytes.
// dims are in src order; dst dim k is src dim perm[k].  After simplify():
// no dim is 1, no two dims that are adjacent in src stay adjacent and in
// order in dst, and rank 0 or 1 is a plain copy of units() units.
struct Shape {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int perm[kMaxDims] = {};
  int movement = 1;
};

// Simplifies the permutation of a rank-`rank` tensor of `elem_size`-byte
// elements (rank <= kMaxRank, perm a permutation, every dim >= 1): drops
// size-1 dims, merges dims that stay adjacent and in order, then widens the
// unit to the widest power of two <= max_movement (<= 16) dividing the bytes
// of the preserved innermost dim and both addresses, and merges again.
Shape simplify(int rank, const int64_t* shape, const int* perm, int64_t elem_size, uintptr_t src,
               uintptr_t dst, int max_movement);

inline int64_t units(const Shape& s) {
  int64_t n = 1;
  for (int k = 0; k < s.rank; ++k) n *= s.dims[k];
  return n;
}
inline bool is_copy(const Shape& s) { return s.rank <= 1; }
// the innermost dim stays innermost: rows of dims[rank-1] units move whole
inline bool keeps_last(const Shape& s) { return s.rank >= 2 && s.perm[s.rank - 1] == s.rank - 1; }

// Strides in units: of each src dim in src (contiguous), and in dst.
inline void src_strides(const Shape& s, int64_t* out) {
  int64_t st = 1;
  for (int k = s.rank - 1; k >= 0; --k) out[k] = st, st *= s.dims[k];
}
inline void dst_strides_of_src_dims(const Shape& s, int64_t* out) {
  int64_t st = 1;
  for (int k = s.rank - 1; k >= 0; --k) out[s.perm[k]] = st, st *= s.dims[s.perm[k]];
}

// The tiled view when the innermost dim moves: I is src's innermost dim
// (contiguous in src), J the dim that is innermost in dst; every other dim
// is a batch dim, listed from src's innermost out.  When J's rows are short
// (under kShortRowBytes) and dst's next dim is not I, J takes that dim in
// too: j = j2 * nj1 + j1 is still contiguous in dst, and a tile writes runs
// of tj units instead of nj1 ((8,16,16,16,16,64)->(5,3,1,4,2,0): dst rows of
// 8 units become runs of 8 x 16).
constexpr int64_t kShortRowBytes = 64;

struct TileView {
  int64_t ni, nj;          // extents of I and J (J: nj1 x the grouped dim's extent)
  int64_t nj1;             // extent of dst's innermost dim
  int64_t src_stride_j;    // stride of dst's innermost dim in src
  int64_t src_stride_j2;   // stride of the grouped dim in src (0: none grouped)
  int64_t dst_stride_i;    // stride of I in dst
  int batch_rank;
  int64_t batch_dims[kMaxDims];
  int64_t batch_src[kMaxDims], batch_dst[kMaxDims];
  int64_t batches;
};

inline TileView tile_view(const Shape& s) {
  TileView t{};
  int64_t ss[kMaxDims] = {}, ds[kMaxDims] = {};
  src_strides(s, ss);
  dst_strides_of_src_dims(s, ds);
  const int i = s.rank - 1, j = s.perm[s.rank - 1];
  const int j2 = s.rank >= 3 && s.perm[s.rank - 2] != i && s.dims[j] * s.movement < kShortRowBytes
                     ? s.perm[s.rank - 2]
                     : -1;
  t.ni = s.dims[i];
  t.nj1 = s.dims[j];
  t.nj = j2 < 0 ? t.nj1 : t.nj1 * s.dims[j2];
  t.src_stride_j = ss[j];
  t.src_stride_j2 = j2 < 0 ? 0 : ss[j2];
  t.dst_stride_i = ds[i];
  t.batches = 1;
  for (int k = s.rank - 1; k >= 0; --k) {
    if (k == i || k == j || k == j2) continue;
    t.batch_dims[t.batch_rank] = s.dims[k];
    t.batch_src[t.batch_rank] = ss[k];
    t.batch_dst[t.batch_rank] = ds[k];
    t.batches *= s.dims[k];
    ++t.batch_rank;
  }
  return t;
}

inline int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Problem {
  Shape shape;
  const void* src;
  void* dst;
  const DeviceInfo* device;
};

bool supports(const VariantInfo& v, const void* problem);
Score heuristic(const VariantInfo& v, const void* problem);
// The tuning bucket of a problem (runtime/src/tuning/bucket.hpp).
void bucket(const void* problem, char* out, int size);
// The selection cache's key (select.hpp's KeyFn): the simplified shape
// (every field supports() and the heuristic read) and the pointers mod 16
// (a tile's pack x movement is at most 16 bytes).
bool selection_key(const void* problem, ProblemKey* key);

}  // namespace permute
}  // namespace kgen
