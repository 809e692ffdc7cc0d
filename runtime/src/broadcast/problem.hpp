// A broadcast problem (expand, where) after validation and simplification:
// the output's dims and, for each input, which of them it spans (a stride)
// and which it is broadcast along (stride 0).  Capability checks and the
// generated launchers both read it.
#pragma once

#include <cstdint>

#include "select.hpp"
#include "status.hpp"
#include "variant.hpp"

namespace kgen {
namespace broadcast {

constexpr int kMaxRank = 8;    // of the tensors callers pass
constexpr int kMaxDims = kMaxRank + 1;  // expand's element may split into a dim of units
constexpr int kMaxInputs = 3;  // where: cond, x, y

// One caller's tensor shape.
struct Operand {
  int rank = 0;
  const int64_t* shape = nullptr;
  const char* name = "";
};

// Broadcast shape inference (PyTorch rules: right-aligned, sizes equal or 1).
// Checks each operand's rank (0 to kMaxRank), shape pointer and sizes (>= 0);
// an error names the operand and the dim ("y: dim 1 is 2, but 3 in x").
kgen_status_t infer_shape(int count, const Operand* ops, int* rank, int64_t* dims);

// The simplified problem.  dims are the output's, in units of `movement`
// bytes; input i's stride along dim k is stride[i][k] units (0: broadcast).
// After simplify(): no dim is 1 and no two adjacent dims have the same
// broadcast pattern across the inputs (they merge into one).
struct Layout {
  int rank = 0;
  int inputs = 0;
  int movement = 1;                   // bytes of the units of out (and of x, y, src)
  int unit_bytes[kMaxInputs] = {};    // bytes of one unit of each input (where's cond: 1)
  int64_t dims[kMaxDims] = {};
  int64_t stride[kMaxInputs][kMaxDims] = {};
};

// Simplifies out = f(inputs broadcast to out_dims): right-aligns each input
// against the output (the shapes must already broadcast: infer_shape), drops
// size-1 dims and merges adjacent dims whose pattern (spanned or broadcast)
// is the same for every input.  unit_bytes gives each input's element size;
// movement the output's.
Layout simplify(int inputs, const Operand* ops, const int* unit_bytes, int out_rank,
                const int64_t* out_dims, int movement);

// expand: the element's bytes become one more dim that src spans; the unit
// then widens to the widest power of two <= max_movement (<= 16) that
// divides the innermost spanned bytes and both addresses, and dims merge
// again.  ((4096,1,4096)->(4096,16,4096) float16 moves 16-byte units.)
Layout simplify_expand(const Operand& src, int out_rank, const int64_t* out_dims, int elem_size,
                       uintptr_t src_ptr, uintptr_t dst_ptr, int max_movement);

inline int64_t units(const Layout& l) {
  int64_t n = 1;
  for (int k = 0; k < l.rank; ++k) n *= l.dims[k];
  return n;
}
// input i is read whole along the innermost dim (else: one unit, repeated)
inline bool spans_innermost(const Layout& l, int i) { return l.rank > 0 && l.stride[i][l.rank - 1] != 0; }
inline bool spans_all(const Layout& l, int i) {
  for (int k = 0; k < l.rank; ++k)
    if (l.stride[i][k] == 0) return false;
  return true;
}
inline bool is_scalar(const Layout& l, int i) {
  for (int k = 0; k < l.rank; ++k)
    if (l.stride[i][k] != 0) return false;
  return true;
}

// How a problem runs: every input has out's shape (expand: a copy; where: a
// plain elementwise pass), every input is one value (a fill), or per-dim
// strides with broadcast dims at stride 0.  Elementwise and fill problems,
// and any of rank 1 (each input whole or one value), run on the flat
// variants; strided ones on the elem variants of their rank.
enum class Route { elementwise, fill, strided };
inline Route route(const Layout& l) {
  bool all = true, none = true;
  for (int i = 0; i < l.inputs; ++i) {
    all = all && spans_all(l, i);
    none = none && is_scalar(l, i);
  }
  return all ? Route::elementwise : none ? Route::fill : Route::strided;
}
const char* route_name(Route r);

inline int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Problem {
  Layout layout;
  const void* in[kMaxInputs] = {};
  void* out = nullptr;
  const DeviceInfo* device = nullptr;
};

bool supports(const VariantInfo& v, const void* problem);
Score heuristic(const VariantInfo& v, const void* problem);
// The tuning bucket of a problem (runtime/src/tuning/bucket.hpp).
void bucket(const void* problem, char* out, int size);
// The selection cache's key (select.hpp's KeyFn): the simplified layout
// (every field supports() and the heuristic read) and the pointers mod 16
// (a pack's access is at most 16 bytes).
bool selection_key(const void* problem, ProblemKey* key);

}  // namespace broadcast
}  // namespace kgen
