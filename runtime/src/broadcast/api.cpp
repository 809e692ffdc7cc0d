// kgen_expand, kgen_where and friends: validate, infer and simplify the
// broadcast, select, launch (or copy).
#include <cstdio>

#include "broadcast/problem.hpp"
#include "device.hpp"
#include "registry.hpp"
#include "validate.hpp"

namespace kgen {
namespace broadcast {
namespace {

const char* const kCopy = "copy";

struct Request {
  Family family = Family::expand;
  int64_t out_bytes = 0;  // 0: an empty output, nothing to do
  Problem problem{};
  const char* names[kMaxInputs] = {};
};

kgen_status_t product(const int64_t* dims, int rank, int elem_size, const char* what, int64_t* n) {
  int64_t e = 1;
  for (int k = 0; k < rank; ++k) KGEN_TRY(checked_elements(e, dims[k], elem_size, what, &e));
  *n = e;
  return KGEN_OK;
}

kgen_status_t check_out_pointers(const Request& req, const void* out) {
  const Problem& p = req.problem;
  for (int i = 0; i < p.layout.inputs; ++i) KGEN_TRY(check_pointer(p.in[i], req.out_bytes, req.names[i]));
  return check_pointer(out, req.out_bytes, req.family == Family::expand ? "dst" : "out");
}

// Host-only checks of an expand (no CUDA call).  req->out_bytes is 0 for an
// empty dst; otherwise req->problem holds the simplified problem.
kgen_status_t validate_expand(kgen_dtype_t dtype, int src_rank, const int64_t* src_shape,
                              int dst_rank, const int64_t* dst_shape, const void* src,
                              const void* dst, int max_movement, Request* req) {
  KGEN_TRY(check_dtype(dtype));
  const int e = dtype_size(dtype);
  const Operand src_op{src_rank, src_shape, "src"};
  int ignored_rank;
  int64_t ignored[kMaxRank];
  KGEN_TRY(infer_shape(1, &src_op, &ignored_rank, ignored));  // src's rank, pointer, sizes
  if (dst_rank < 0 || dst_rank > kMaxRank)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "dst_rank: must be 0 to %d, got %d", kMaxRank, dst_rank);
  if (dst_rank < src_rank)
    return fail(KGEN_ERROR_INVALID_ARGUMENT,
                "dst_rank: must be >= src_rank (%d): expand adds dims, never drops them; got %d",
                src_rank, dst_rank);
  if (dst_rank > 0 && !dst_shape)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "dst_shape: null pointer for rank %d", dst_rank);
  int64_t out[kMaxRank];
  const int added = dst_rank - src_rank;
  for (int k = 0; k < dst_rank; ++k) {
    const int j = k - added;  // src's dim, if any
    int64_t d = dst_shape[k];
    if (d == -1) {
      if (j < 0)
        return fail(KGEN_ERROR_INVALID_ARGUMENT,
                    "dst_shape[%d]: -1 keeps a size of src, but dim %d is a new leading dim", k, k);
      d = src_shape[j];
    } else if (d < 0) {
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "dst_shape[%d]: must be >= 0 or -1, got %lld", k,
                  static_cast<long long>(d));
    }
    if (j >= 0 && src_shape[j] != d && src_shape[j] != 1)
      return fail(KGEN_ERROR_INVALID_ARGUMENT,
                  "dst_shape[%d]: cannot expand src dim %d of size %lld to %lld (only a size-1 dim grows)",
                  k, j, static_cast<long long>(src_shape[j]), static_cast<long long>(d));
    out[k] = d;
  }
  int64_t src_n = 0, dst_n = 0;
  KGEN_TRY(product(src_shape, src_rank, e, "src_shape", &src_n));
  KGEN_TRY(product(out, dst_rank, e, "dst_shape", &dst_n));
  req->family = Family::expand;
  req->out_bytes = dst_n * e;
  if (dst_n == 0) return KGEN_OK;
  Problem& p = req->problem;
  p.in[0] = src;
  p.out = const_cast<void*>(dst);
  p.layout.inputs = 1;
  req->names[0] = "src";
  KGEN_TRY(check_out_pointers(*req, dst));
  KGEN_TRY(check_disjoint(src, src_n * e, dst, req->out_bytes, "src", "dst"));
  p.layout = simplify_expand(src_op, dst_rank, out, e, reinterpret_cast<uintptr_t>(src),
                             reinterpret_cast<uintptr_t>(dst), max_movement);
  return KGEN_OK;
}

// Host-only checks of a where (no CUDA call), as validate_expand.
kgen_status_t validate_where(kgen_dtype_t dtype, const Operand* ops, const void* const* in,
                             const void* out, Request* req) {
  KGEN_TRY(check_dtype(dtype));
  const int e = dtype_size(dtype);
  const int unit_bytes[kMaxInputs] = {1, e, e};
  int rank = 0;
  int64_t dims[kMaxRank];
  KGEN_TRY(infer_shape(kMaxInputs, ops, &rank, dims));
  int64_t n = 0, in_n[kMaxInputs];
  KGEN_TRY(product(dims, rank, e, "out shape", &n));
  for (int i = 0; i < kMaxInputs; ++i)
    KGEN_TRY(product(ops[i].shape, ops[i].rank, unit_bytes[i], ops[i].name, &in_n[i]));
  req->family = Family::where;
  req->out_bytes = n * e;
  if (n == 0) return KGEN_OK;
  Problem& p = req->problem;
  p.layout.inputs = kMaxInputs;
  for (int i = 0; i < kMaxInputs; ++i) {
    p.in[i] = in[i];
    req->names[i] = ops[i].name;
  }
  p.out = const_cast<void*>(out);
  KGEN_TRY(check_out_pointers(*req, out));
  for (int i = 1; i < kMaxInputs; ++i) KGEN_TRY(check_element_alignment(in[i], e, ops[i].name));
  KGEN_TRY(check_element_alignment(out, e, "out"));
  for (int i = 0; i < kMaxInputs; ++i) {
    // in place: out may be an input of its own shape and element size, where
    // every thread reads exactly the units it writes
    if (in[i] == out && in_n[i] == n && unit_bytes[i] == e) continue;
    KGEN_TRY(check_disjoint(in[i], in_n[i] * unit_bytes[i], out, req->out_bytes, ops[i].name, "out"));
  }
  p.layout = simplify(kMaxInputs, ops, unit_bytes, rank, dims, e);
  return KGEN_OK;
}

void describe(const void* problem, char* text, int size) {
  const Layout& l = static_cast<const Problem*>(problem)->layout;
  std::snprintf(text, size, "this problem (%s, rank %d in %d-byte units once simplified) with these pointers",
                route_name(route(l)), l.rank, l.movement);
}

// With p->device set: checks the pointers (not while capturing), then takes
// the named variant if it supports the problem, or selects one; *chosen is
// null for an expand that is a plain copy.
kgen_status_t choose(const Request& req, const VariantInfo* named, bool check_pointers, Problem* p,
                     const VariantInfo** chosen) {
  if (check_pointers) {
    for (int i = 0; i < p->layout.inputs; ++i)
      KGEN_TRY(check_device_pointer(p->in[i], *p->device, req.names[i]));
    KGEN_TRY(check_device_pointer(p->out, *p->device, req.family == Family::expand ? "dst" : "out"));
  }
  *chosen = nullptr;
  if (!named && req.family == Family::expand && route(p->layout) == Route::elementwise) return KGEN_OK;
  return choose_variant(named, req.family, movement_key(p->layout.movement), *p->device, p,
                        &heuristic, &describe, chosen, &selection_key);
}

// Runs a validated request (req.out_bytes > 0).
kgen_status_t execute(Request& req, const VariantInfo* named, kgen_stream_t stream) {
  Problem& p = req.problem;
  bool capturing = false;
  const VariantInfo* v = nullptr;
  KGEN_TRY(current_device(&p.device));
  KGEN_TRY(check_stream(stream, &capturing));
  KGEN_TRY(choose(req, named, !capturing, &p, &v));
  return launch_chosen(v, &p, stream, PlainCopy{p.out, p.in[0], req.out_bytes});
}

// The selection's name for a validated request: "" when empty, "copy" for a copy.
kgen_status_t selected_name(Request& req, const char** variant) {
  const VariantInfo* v = nullptr;
  if (req.out_bytes > 0) {
    KGEN_TRY(current_device(&req.problem.device));
    KGEN_TRY(choose(req, nullptr, true, &req.problem, &v));
  }
  *variant = req.out_bytes == 0 ? "" : v ? v->name : kCopy;
  return succeed();
}

kgen_status_t run_expand(const char* variant, kgen_dtype_t dtype, int src_rank,
                         const int64_t* src_shape, int dst_rank, const int64_t* dst_shape,
                         const void* src, void* dst, kgen_stream_t stream) {
  const VariantInfo* named = nullptr;
  int max_movement = kMaxMovement;
  Request req;
  KGEN_TRY(find_named_mover(variant, Family::expand, &named, &max_movement));
  KGEN_TRY(validate_expand(dtype, src_rank, src_shape, dst_rank, dst_shape, src, dst, max_movement, &req));
  if (req.out_bytes == 0) return succeed();
  return execute(req, named, stream);
}

struct WhereArgs {
  Operand ops[kMaxInputs];
  const void* in[kMaxInputs];
};

WhereArgs where_args(int cond_rank, const int64_t* cond_shape, int x_rank, const int64_t* x_shape,
                     int y_rank, const int64_t* y_shape, const void* cond, const void* x,
                     const void* y) {
  return WhereArgs{{{cond_rank, cond_shape, "cond"}, {x_rank, x_shape, "x"}, {y_rank, y_shape, "y"}},
                   {cond, x, y}};
}

kgen_status_t run_where(const char* variant, kgen_dtype_t dtype, const WhereArgs& a, void* out,
                        kgen_stream_t stream) {
  const VariantInfo* named = nullptr;
  int max_movement = kMaxMovement;
  Request req;
  KGEN_TRY(find_named_mover(variant, Family::where, &named, &max_movement));
  KGEN_TRY(validate_where(dtype, a.ops, a.in, out, &req));
  if (req.out_bytes == 0) return succeed();
  return execute(req, named, stream);
}

kgen_status_t broadcast_shape(int count, const int* ranks, const int64_t* const* shapes,
                              int* out_rank, int64_t* out_shape) {
  if (count < 1 || count > kMaxRank)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "count: must be 1 to %d, got %d", kMaxRank, count);
  if (!ranks) return fail(KGEN_ERROR_INVALID_ARGUMENT, "ranks: null pointer");
  if (!shapes) return fail(KGEN_ERROR_INVALID_ARGUMENT, "shapes: null pointer");
  if (!out_rank) return fail(KGEN_ERROR_INVALID_ARGUMENT, "out_rank: null pointer");
  if (!out_shape) return fail(KGEN_ERROR_INVALID_ARGUMENT, "out_shape: null pointer");
  static const char* const kNames[kMaxRank] = {"shapes[0]", "shapes[1]", "shapes[2]", "shapes[3]",
                                               "shapes[4]", "shapes[5]", "shapes[6]", "shapes[7]"};
  Operand ops[kMaxRank];
  for (int i = 0; i < count; ++i) {
    if (ranks[i] < 0 || ranks[i] > kMaxRank)
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "ranks[%d]: must be 0 to %d, got %d", i, kMaxRank, ranks[i]);
    if (ranks[i] > 0 && !shapes[i])
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "shapes[%d]: null pointer for rank %d", i, ranks[i]);
    for (int k = 0; k < ranks[i]; ++k)
      if (shapes[i][k] < 0)
        return fail(KGEN_ERROR_INVALID_ARGUMENT, "shapes[%d][%d]: must be >= 0, got %lld", i, k,
                    static_cast<long long>(shapes[i][k]));
    ops[i] = Operand{ranks[i], shapes[i], kNames[i]};
  }
  int rank = 0;
  int64_t dims[kMaxRank];
  KGEN_TRY(infer_shape(count, ops, &rank, dims));
  *out_rank = rank;
  for (int k = 0; k < rank; ++k) out_shape[k] = dims[k];
  return succeed();
}

}  // namespace
}  // namespace broadcast
}  // namespace kgen

extern "C" {

kgen_status_t kgen_broadcast_shape(int count, const int* ranks, const int64_t* const* shapes,
                                   int* out_rank, int64_t* out_shape) {
  KGEN_GUARD(return kgen::broadcast::broadcast_shape(count, ranks, shapes, out_rank, out_shape);)
}

kgen_status_t kgen_expand(kgen_dtype_t dtype, int src_rank, const int64_t* src_shape, int dst_rank,
                          const int64_t* dst_shape, const void* src, void* dst, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::broadcast::run_expand(nullptr, dtype, src_rank, src_shape, dst_rank,
                                                dst_shape, src, dst, stream);)
}

kgen_status_t kgen_expand_variant(const char* variant, kgen_dtype_t dtype, int src_rank,
                                  const int64_t* src_shape, int dst_rank, const int64_t* dst_shape,
                                  const void* src, void* dst, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::broadcast::run_expand(variant, dtype, src_rank, src_shape, dst_rank,
                                                dst_shape, src, dst, stream);)
}

kgen_status_t kgen_expand_selected(kgen_dtype_t dtype, int src_rank, const int64_t* src_shape,
                                   int dst_rank, const int64_t* dst_shape, const void* src,
                                   const void* dst, const char** variant) {
  KGEN_GUARD({
    using namespace kgen::broadcast;
    if (!variant) return kgen::fail(KGEN_ERROR_INVALID_ARGUMENT, "variant: null output pointer");
    Request req;
    KGEN_TRY(validate_expand(dtype, src_rank, src_shape, dst_rank, dst_shape, src, dst,
                             kgen::kMaxMovement, &req));
    return selected_name(req, variant);
  })
}

kgen_status_t kgen_where(kgen_dtype_t dtype, int cond_rank, const int64_t* cond_shape, int x_rank,
                         const int64_t* x_shape, int y_rank, const int64_t* y_shape,
                         const void* cond, const void* x, const void* y, void* out,
                         kgen_stream_t stream) {
  KGEN_GUARD({
    using namespace kgen::broadcast;
    return run_where(nullptr, dtype,
                     where_args(cond_rank, cond_shape, x_rank, x_shape, y_rank, y_shape, cond, x, y),
                     out, stream);
  })
}

kgen_status_t kgen_where_variant(const char* variant, kgen_dtype_t dtype, int cond_rank,
                                 const int64_t* cond_shape, int x_rank, const int64_t* x_shape,
                                 int y_rank, const int64_t* y_shape, const void* cond, const void* x,
                                 const void* y, void* out, kgen_stream_t stream) {
  KGEN_GUARD({
    using namespace kgen::broadcast;
    return run_where(variant, dtype,
                     where_args(cond_rank, cond_shape, x_rank, x_shape, y_rank, y_shape, cond, x, y),
                     out, stream);
  })
}

kgen_status_t kgen_where_selected(kgen_dtype_t dtype, int cond_rank, const int64_t* cond_shape,
                                  int x_rank, const int64_t* x_shape, int y_rank,
                                  const int64_t* y_shape, const void* cond, const void* x,
                                  const void* y, const void* out, const char** variant) {
  KGEN_GUARD({
    using namespace kgen::broadcast;
    if (!variant) return kgen::fail(KGEN_ERROR_INVALID_ARGUMENT, "variant: null output pointer");
    const WhereArgs a = where_args(cond_rank, cond_shape, x_rank, x_shape, y_rank, y_shape, cond, x, y);
    Request req;
    KGEN_TRY(validate_where(dtype, a.ops, a.in, out, &req));
    return selected_name(req, variant);
  })
}

}  // extern "C"
