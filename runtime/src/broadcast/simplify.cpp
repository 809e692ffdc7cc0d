// Broadcast shape inference and problem simplification (host only, tested
// without a GPU).  Merging dims is what makes the generated rank-R kernels
// cover most problems at low rank: (64,1,1,2048) with (64,16,2048,2048) and a
// scalar becomes three dims, 64 x 32768 x 2048, the middle one broadcast for
// cond and the scalar.
#include <cstdio>

#include "broadcast/problem.hpp"

namespace kgen {
namespace broadcast {
namespace {

// size of operand `op` along output dim k of an out_rank output (1 if missing)
int64_t size_at(const Operand& op, int out_rank, int k) {
  const int j = k - (out_rank - op.rank);
  return j < 0 ? 1 : op.shape[j];
}

void format_shape(const Operand& op, char* text, int size) {
  int n = std::snprintf(text, size, "[");
  for (int k = 0; k < op.rank && n < size; ++k)
    n += std::snprintf(text + n, size - n, k ? ",%lld" : "%lld", static_cast<long long>(op.shape[k]));
  if (n < size) std::snprintf(text + n, size - n, "]");
}

bool aligned(uintptr_t a, int bytes) { return a % static_cast<uintptr_t>(bytes) == 0; }

// Drops size-1 dims and merges neighbours with the same pattern for every input.
void compact(Layout* l) {
  Layout out = *l;
  out.rank = 0;
  for (int k = 0; k < l->rank; ++k) {
    if (l->dims[k] == 1) continue;
    bool same = out.rank > 0;
    for (int i = 0; i < l->inputs && same; ++i)
      same = (out.stride[i][out.rank - 1] == 0) == (l->stride[i][k] == 0);
    if (same) {
      // the outer dim of the pair spans dims[k] times as much; strides of the
      // merged dim are the inner one's
      out.dims[out.rank - 1] *= l->dims[k];
      for (int i = 0; i < l->inputs; ++i) out.stride[i][out.rank - 1] = l->stride[i][k];
    } else {
      out.dims[out.rank] = l->dims[k];
      for (int i = 0; i < l->inputs; ++i) out.stride[i][out.rank] = l->stride[i][k];
      ++out.rank;
    }
  }
  for (int k = out.rank; k < kMaxDims; ++k) {
    out.dims[k] = 0;
    for (int i = 0; i < kMaxInputs; ++i) out.stride[i][k] = 0;
  }
  *l = out;
}

// Contiguous strides (in units) of each input over the dims it spans.
void assign_strides(Layout* l, const bool spans[kMaxInputs][kMaxDims]) {
  for (int i = 0; i < l->inputs; ++i) {
    int64_t st = 1;
    for (int k = l->rank - 1; k >= 0; --k) {
      l->stride[i][k] = spans[i][k] ? st : 0;
      if (spans[i][k]) st *= l->dims[k];
    }
  }
}

}  // namespace

const char* route_name(Route r) {
  switch (r) {
    case Route::elementwise: return "elementwise";
    case Route::fill: return "fill";
    case Route::strided: return "strided";
  }
  return "unknown";
}

kgen_status_t infer_shape(int count, const Operand* ops, int* rank, int64_t* dims) {
  int r = 0;
  for (int i = 0; i < count; ++i) {
    const Operand& op = ops[i];
    if (op.rank < 0 || op.rank > kMaxRank)
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s_rank: must be 0 to %d, got %d", op.name, kMaxRank,
                  op.rank);
    if (op.rank > 0 && !op.shape)
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s_shape: null pointer for rank %d", op.name, op.rank);
    for (int k = 0; k < op.rank; ++k)
      if (op.shape[k] < 0)
        return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s_shape[%d]: must be >= 0, got %lld", op.name, k,
                    static_cast<long long>(op.shape[k]));
    if (op.rank > r) r = op.rank;
  }
  for (int k = 0; k < r; ++k) {
    int owner = -1;  // the first operand with a size other than 1 here
    int64_t size = 1;
    for (int i = 0; i < count; ++i) {
      const int64_t s = size_at(ops[i], r, k);
      if (s == 1) continue;
      if (owner < 0) {
        owner = i;
        size = s;
      } else if (s != size) {
        char a[160], b[160];
        format_shape(ops[owner], a, sizeof a);
        format_shape(ops[i], b, sizeof b);
        return fail(KGEN_ERROR_INVALID_ARGUMENT,
                    "%s: shape %s does not broadcast with %s %s: dim %d is %lld in %s and %lld in %s",
                    ops[i].name, b, ops[owner].name, a, k, static_cast<long long>(size),
                    ops[owner].name, static_cast<long long>(s), ops[i].name);
      }
    }
    dims[k] = size;
  }
  *rank = r;
  return KGEN_OK;
}

Layout simplify(int inputs, const Operand* ops, const int* unit_bytes, int out_rank,
                const int64_t* out_dims, int movement) {
  Layout l;
  l.rank = out_rank;
  l.inputs = inputs;
  l.movement = movement;
  bool spans[kMaxInputs][kMaxDims] = {};
  for (int k = 0; k < out_rank; ++k) {
    l.dims[k] = out_dims[k];
    for (int i = 0; i < inputs; ++i) spans[i][k] = size_at(ops[i], out_rank, k) == out_dims[k];
  }
  for (int i = 0; i < inputs; ++i) l.unit_bytes[i] = unit_bytes[i];
  assign_strides(&l, spans);
  compact(&l);
  return l;
}

Layout simplify_expand(const Operand& src, int out_rank, const int64_t* out_dims, int elem_size,
                       uintptr_t src_ptr, uintptr_t dst_ptr, int max_movement) {
  // the element's bytes: one more dim, innermost, that src spans
  int64_t dims[kMaxDims];
  int64_t src_dims[kMaxDims];
  for (int k = 0; k < out_rank; ++k) dims[k] = out_dims[k];
  for (int k = 0; k < src.rank; ++k) src_dims[k] = src.shape[k];
  dims[out_rank] = elem_size;
  src_dims[src.rank] = elem_size;
  const Operand bytes{src.rank + 1, src_dims, src.name};
  const int one = 1;
  Layout l = simplify(1, &bytes, &one, out_rank + 1, dims, 1);

  // widen, where src spans the innermost dim: it holds the element's bytes,
  // except for one-byte elements, whose byte dim (size 1) was dropped and an
  // innermost broadcast dim may take its place; that one stays in bytes (a
  // wider unit there would read src past its one byte)
  const int64_t inner = l.rank > 0 ? l.dims[l.rank - 1] : 1;
  int m = 1;
  for (int w = 16; w > 1 && spans_innermost(l, 0); w /= 2) {
    if (w <= max_movement && inner % w == 0 && aligned(src_ptr, w) && aligned(dst_ptr, w)) {
      m = w;
      break;
    }
  }
  if (m > 1) {
    l.dims[l.rank - 1] = inner / m;
    for (int k = 0; k < l.rank - 1; ++k) l.stride[0][k] /= m;  // multiples of inner
    l.movement = m;
    l.unit_bytes[0] = m;
    compact(&l);
  }
  return l;
}

}  // namespace broadcast
}  // namespace kgen
