// Problem simplification (host only, tested without a GPU).  The element's
// bytes are carried as one more src dim that every permutation preserves, so
// "widen the unit" is the same operation as "merge the preserved innermost
// dims": a (4096, 8192, 4 bytes) -> (1, 0) float32 transpose keeps its
// 4-byte unit, (32, 512, 16, 128) -> (0, 2, 1, 3) merges into 512-byte rows
// moved as 32 units of 16 bytes.
#include "permute/problem.hpp"

namespace kgen {
namespace permute {
namespace {

constexpr int kWork = kMaxDims;  // the dims plus the byte dim

struct Dims {
  int rank = 0;
  int64_t dims[kWork] = {};
  int perm[kWork] = {};
};

Dims drop_ones(const Dims& in) {
  int new_index[kWork];
  Dims out;
  for (int k = 0; k < in.rank; ++k) {
    new_index[k] = in.dims[k] == 1 ? -1 : out.rank;
    if (in.dims[k] != 1) out.dims[out.rank++] = in.dims[k];
  }
  int n = 0;
  for (int k = 0; k < in.rank; ++k)
    if (new_index[in.perm[k]] >= 0) out.perm[n++] = new_index[in.perm[k]];
  return out;
}

// Runs of dst dims whose src dims are consecutive and in order become one dim.
Dims merge(const Dims& in) {
  // head[d]: src dim d starts a run (it does not follow its src predecessor in dst)
  bool head[kWork];
  for (int d = 0; d < in.rank; ++d) head[d] = true;
  for (int k = 1; k < in.rank; ++k)
    if (in.perm[k] == in.perm[k - 1] + 1) head[in.perm[k]] = false;
  int run_of[kWork];
  Dims out;
  for (int d = 0; d < in.rank; ++d) {
    if (head[d]) out.dims[out.rank++] = 1;
    run_of[d] = out.rank - 1;
    out.dims[out.rank - 1] *= in.dims[d];
  }
  int n = 0;
  for (int k = 0; k < in.rank; ++k)
    if (head[in.perm[k]]) out.perm[n++] = run_of[in.perm[k]];
  return out;
}

bool aligned(uintptr_t a, int bytes) { return a % static_cast<uintptr_t>(bytes) == 0; }

}  // namespace

Shape simplify(int rank, const int64_t* shape, const int* perm, int64_t elem_size, uintptr_t src,
               uintptr_t dst, int max_movement) {
  Dims w;
  for (int k = 0; k < rank; ++k) {
    w.dims[k] = shape[k];
    w.perm[k] = perm[k];
  }
  w.dims[rank] = elem_size;  // the bytes of one element: a dim no perm moves
  w.perm[rank] = rank;
  w.rank = rank + 1;
  w = merge(drop_ones(w));

  int movement = 1;
  if (w.rank >= 1 && w.perm[w.rank - 1] == w.rank - 1) {
    // the innermost dim is preserved and counts bytes (it holds the byte dim,
    // or the elements are single bytes)
    const int64_t bytes = w.dims[w.rank - 1];
    for (int m = 16; m > 1; m /= 2) {
      if (m <= max_movement && bytes % m == 0 && aligned(src, m) && aligned(dst, m)) {
        movement = m;
        break;
      }
    }
    w.dims[w.rank - 1] = bytes / movement;
    w = merge(drop_ones(w));
  }

  Shape s;
  s.rank = w.rank;
  s.movement = movement;
  for (int k = 0; k < w.rank; ++k) {
    s.dims[k] = w.dims[k];
    s.perm[k] = w.perm[k];
  }
  return s;
}

}  // namespace permute
}  // namespace kgen
