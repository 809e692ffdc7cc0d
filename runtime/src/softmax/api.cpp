// kgen_softmax and friends (forward, backward, any dim, masked): validate,
// build the problem, select, launch.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "device.hpp"
#include "registry.hpp"
#include "softmax/problem.hpp"
#include "validate.hpp"
#include "workspace.hpp"

namespace kgen {
namespace softmax {
namespace {

// The names the arguments have at the entry point that was called: the 2-D
// entry points say rows and cols, the any-dim ones outer, axis and inner.
struct Names {
  const char *outer, *axis, *extent;
};
constexpr Names kRowNames{"rows", "cols", "rows x cols"};
constexpr Names kDimNames{"outer", "axis", "outer x axis x inner"};

// The caller's workspace of a call, and where a size query puts its answer.
struct Workspace {
  void* data = nullptr;  // null: taken from the library's pool when the variant needs one
  size_t bytes = 0;
  size_t* size_out = nullptr;  // set: only report the size
};

// What a call asks for before the device is known.
struct Call {
  const char* variant = nullptr;
  Family family = Family::softmax;
  Mask mask{};  // used when problem.mask is set (points here)
  Problem problem{};
  bool empty = false;
  Workspace workspace;
};

// Host-only checks (no CUDA call) of the extents and pointers; fills
// c->problem.  in: x (forward) or y (backward); out: y or dx.
kgen_status_t check_tensors(const Names& n, int log, kgen_dtype_t dtype, int64_t outer, int64_t axis,
                            int64_t inner, const void* in, const void* dy, const void* out,
                            Call* c) {
  const bool bwd = c->family == Family::softmax_backward;
  KGEN_TRY(check_float_dtype(dtype));
  KGEN_TRY(check_extent(outer, n.outer));
  KGEN_TRY(check_extent(axis, n.axis));
  KGEN_TRY(check_extent(inner, "inner"));
  const int size = dtype_size(dtype);
  int64_t rows_x_axis = 0, elems = 0;
  KGEN_TRY(checked_elements(outer, axis, size, n.extent, &rows_x_axis));
  KGEN_TRY(checked_elements(rows_x_axis, inner, size, n.extent, &elems));
  c->empty = elems == 0;
  if (c->empty) return KGEN_OK;
  const char* in_name = bwd ? "y" : "x";
  const char* out_name = bwd ? "dx" : "y";
  KGEN_TRY(check_pointer(in, elems, in_name));
  if (bwd) KGEN_TRY(check_pointer(dy, elems, "dy"));
  KGEN_TRY(check_pointer(out, elems, out_name));
  KGEN_TRY(check_element_alignment(in, size, in_name));
  if (bwd) KGEN_TRY(check_element_alignment(dy, size, "dy"));
  KGEN_TRY(check_element_alignment(out, size, out_name));
  KGEN_TRY(check_overlap(in, out, elems * size, in_name, out_name));
  if (bwd) KGEN_TRY(check_overlap(dy, out, elems * size, "dy", out_name));
  c->problem = Problem{dtype, log != 0, outer, axis, in, const_cast<void*>(out), nullptr, inner,
                       bwd ? dy : nullptr, nullptr};
  return KGEN_OK;
}

kgen_status_t check_mask_extent(int64_t value, int64_t x_extent, const char* what, const char* of) {
  if (value != 1 && value != x_extent)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s: %lld is neither 1 nor %s (%lld)", what,
                static_cast<long long>(value), of, static_cast<long long>(x_extent));
  return KGEN_OK;
}

// The masked softmax: x (batch, heads, queries, keys) and the mask.
kgen_status_t check_masked(kgen_dtype_t dtype, int64_t batch, int64_t heads, int64_t queries,
                           int64_t keys, const void* x, const kgen_softmax_mask_t* m, const void* y,
                           Call* c) {
  KGEN_TRY(check_float_dtype(dtype));
  KGEN_TRY(check_extent(batch, "batch"));
  KGEN_TRY(check_extent(heads, "heads"));
  KGEN_TRY(check_extent(queries, "queries"));
  KGEN_TRY(check_extent(keys, "keys"));
  if (!m) return fail(KGEN_ERROR_INVALID_ARGUMENT, "mask: null pointer to the kgen_softmax_mask_t");
  if (m->kind != KGEN_MASK_NONE && m->kind != KGEN_MASK_BOOL && m->kind != KGEN_MASK_ADDITIVE)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "kind: unknown mask kind %d", static_cast<int>(m->kind));
  if (!std::isfinite(m->scale)) return fail(KGEN_ERROR_INVALID_ARGUMENT, "scale: must be finite, got %g", m->scale);
  KGEN_TRY(check_mask_extent(m->mask_batch, batch, "mask_batch", "batch"));
  KGEN_TRY(check_mask_extent(m->mask_heads, heads, "mask_heads", "heads"));
  KGEN_TRY(check_mask_extent(m->mask_queries, queries, "mask_queries", "queries"));
  const int size = dtype_size(dtype);
  int64_t bh = 0, rows = 0;
  KGEN_TRY(checked_elements(batch, heads, size, "batch x heads", &bh));
  KGEN_TRY(checked_elements(bh, queries, size, "batch x heads x queries", &rows));
  KGEN_TRY(check_tensors(Names{"batch x heads x queries", "keys", "batch x heads x queries x keys"}, 0,
                         dtype, rows, keys, 1, x, nullptr, y, c));
  if (c->empty) return KGEN_OK;
  Mask& mk = c->mask;
  mk = Mask{m->kind, nullptr, m->scale, heads, queries, 0, 0, 0, m->causal != 0, m->safe != 0};
  if (m->kind != KGEN_MASK_NONE) {
    const int64_t mask_elems = m->mask_batch * m->mask_heads * m->mask_queries * keys;
    const int mask_size = m->kind == KGEN_MASK_BOOL ? 1 : size;
    KGEN_TRY(check_pointer(m->mask, mask_elems, "mask"));
    KGEN_TRY(check_element_alignment(m->mask, mask_size, "mask"));
    KGEN_TRY(check_disjoint(m->mask, mask_elems * mask_size, y, rows * keys * size, "mask", "y"));
    mk.data = m->mask;
    // the mask is contiguous (mask_batch, mask_heads, mask_queries, keys);
    // a broadcast extent has stride 0
    mk.query_stride = m->mask_queries == 1 ? 0 : keys;
    mk.head_stride = m->mask_heads == 1 ? 0 : m->mask_queries * keys;
    mk.batch_stride = m->mask_batch == 1 ? 0 : m->mask_heads * m->mask_queries * keys;
  }
  c->problem.mask = &c->mask;
  return KGEN_OK;
}

void describe(const void* problem, char* text, int size) {
  const Problem& p = *static_cast<const Problem*>(problem);
  std::snprintf(text, size, "%s outer=%lld axis=%lld inner=%lld%s with these pointers", dtype_name(p.dtype),
                static_cast<long long>(p.rows), static_cast<long long>(p.cols),
                static_cast<long long>(p.inner), p.mask ? " masked" : "");
}

// With p->device set: checks the pointers (skipped while the stream is being
// captured into a graph: the driver queries are not capture-safe), then takes
// the named variant if it supports the problem, or selects one.
kgen_status_t choose(const VariantInfo* named, Family family, bool check_pointers, Problem* p,
                     const VariantInfo** chosen) {
  if (check_pointers) {
    const bool bwd = family == Family::softmax_backward;
    KGEN_TRY(check_device_pointer(p->x, *p->device, bwd ? "y" : "x"));
    if (bwd) KGEN_TRY(check_device_pointer(p->dy, *p->device, "dy"));
    KGEN_TRY(check_device_pointer(p->y, *p->device, bwd ? "dx" : "y"));
    if (p->mask && p->mask->data) KGEN_TRY(check_device_pointer(p->mask->data, *p->device, "mask"));
  }
  return choose_variant(named, family, p->dtype, *p->device, p, &heuristic, &describe, chosen, &selection_key);
}

// The caller's workspace, when the chosen variant needs `need` bytes: large
// enough, 16-byte aligned, apart from every tensor, device memory.
kgen_status_t check_workspace(const Call& c, const VariantInfo* v, int64_t need, bool check_pointers) {
  const Problem& p = c.problem;
  const Workspace& w = c.workspace;
  if (w.bytes < static_cast<size_t>(need))
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "workspace: %s needs %lld bytes here, got %zu", v->name,
                static_cast<long long>(need), w.bytes);
  if (!aligned_to(w.data, 16)) return fail(KGEN_ERROR_INVALID_ARGUMENT, "workspace: must be 16-byte aligned");
  const int64_t bytes = p.rows * p.cols * p.inner * dtype_size(p.dtype);
  const bool bwd = backward(p);
  KGEN_TRY(check_disjoint(p.x, bytes, w.data, need, bwd ? "y" : "x", "workspace"));
  if (bwd) KGEN_TRY(check_disjoint(p.dy, bytes, w.data, need, "dy", "workspace"));
  KGEN_TRY(check_disjoint(p.y, bytes, w.data, need, bwd ? "dx" : "y", "workspace"));
  if (check_pointers) KGEN_TRY(check_device_pointer(w.data, *p.device, "workspace"));
  return KGEN_OK;
}

// An axis of one over inner > 1 is outer x inner rows of one value each:
// every value its own softmax, the same arithmetic, read in order.  The
// strided tiers gave such a problem lanes along an axis it does not have:
// H100, (6, 1, 3) float32 log_softmax 4.4-4.8 us against torch's 3.5-3.8,
// 3.3-3.5 as rows (bench/NOTES.md warp v5).  Selection only: a named
// variant runs the problem as given.
void fold_axis_of_one(Problem* p) {
  if (p->cols != 1 || p->inner == 1 || p->mask) return;
  p->rows *= p->inner;
  p->inner = 1;
}

// After the checks: launches, or reports the choice (when `selected` is
// set) or the size of its workspace (when c.workspace.size_out is).
kgen_status_t finish(Call& c, kgen_stream_t stream, const char** selected) {
  const VariantInfo *named = nullptr, *v = nullptr;
  size_t* size_out = c.workspace.size_out;
  KGEN_TRY(find_named(c.variant, c.family, c.problem.dtype, &named));
  if (c.empty) {
    if (selected) *selected = "";
    if (size_out) *size_out = 0;
    return succeed();
  }
  if (!named) fold_axis_of_one(&c.problem);
  KGEN_TRY(current_device(&c.problem.device));
  if (selected || size_out) {
    // the size query asks no driver question about the pointers: a
    // workspace is often sized while a capture is in progress
    KGEN_TRY(choose(named, c.family, selected != nullptr, &c.problem, &v));
    if (selected) *selected = v->name;
    else *size_out = static_cast<size_t>(workspace_bytes(*v, c.problem));
    return succeed();
  }
  bool capturing = false;
  KGEN_TRY(check_stream(stream, &capturing));
  KGEN_TRY(choose(named, c.family, !capturing, &c.problem, &v));
  const int64_t need = workspace_bytes(*v, c.problem);
  if (need > 0 && c.workspace.data) KGEN_TRY(check_workspace(c, v, need, !capturing));
  return launch_with_workspace(*v, &c.problem, &c.problem.workspace, static_cast<size_t>(need), c.workspace.data,
                               *c.problem.device, stream);
}

kgen_status_t run_forward(const Names& n, const char* variant, int log, kgen_dtype_t dtype, int64_t outer,
                      int64_t axis, int64_t inner, const void* x, const void* y, kgen_stream_t stream,
                      const char** selected, const Workspace& w = {}) {
  Call c;
  c.variant = variant;
  c.workspace = w;
  KGEN_TRY(check_tensors(n, log, dtype, outer, axis, inner, x, nullptr, y, &c));
  return finish(c, stream, selected);
}

kgen_status_t run_backward(const Names& n, const char* variant, int log, kgen_dtype_t dtype, int64_t outer,
                       int64_t axis, int64_t inner, const void* y, const void* dy, const void* dx,
                       kgen_stream_t stream, const char** selected, const Workspace& w = {}) {
  Call c;
  c.variant = variant;
  c.family = Family::softmax_backward;
  c.workspace = w;
  KGEN_TRY(check_tensors(n, log, dtype, outer, axis, inner, y, dy, dx, &c));
  return finish(c, stream, selected);
}

kgen_status_t run_masked(const char* variant, kgen_dtype_t dtype, int64_t batch, int64_t heads, int64_t queries,
                     int64_t keys, const void* x, const kgen_softmax_mask_t* m, const void* y,
                     kgen_stream_t stream, const char** selected) {
  Call c;
  c.variant = variant;
  KGEN_TRY(check_masked(dtype, batch, heads, queries, keys, x, m, y, &c));
  return finish(c, stream, selected);
}

kgen_status_t check_out(const char** variant) {
  if (!variant) return fail(KGEN_ERROR_INVALID_ARGUMENT, "variant: null output pointer");
  return KGEN_OK;
}

kgen_status_t check_size_out(const size_t* bytes) {
  if (!bytes) return fail(KGEN_ERROR_INVALID_ARGUMENT, "workspace_bytes: null output pointer");
  return KGEN_OK;
}

}  // namespace
}  // namespace softmax
}  // namespace kgen

using kgen::softmax::kDimNames;
using kgen::softmax::kRowNames;

extern "C" {

kgen_status_t kgen_softmax(kgen_dtype_t dtype, int64_t rows, int64_t cols, const void* x, void* y,
                           kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_forward(kRowNames, nullptr, 0, dtype, rows, cols, 1, x, y, stream, nullptr);)
}

kgen_status_t kgen_log_softmax(kgen_dtype_t dtype, int64_t rows, int64_t cols, const void* x,
                               void* y, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_forward(kRowNames, nullptr, 1, dtype, rows, cols, 1, x, y, stream, nullptr);)
}

kgen_status_t kgen_softmax_variant(const char* variant, int log, kgen_dtype_t dtype, int64_t rows,
                                   int64_t cols, const void* x, void* y, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_forward(kRowNames, variant, log, dtype, rows, cols, 1, x, y, stream, nullptr);)
}

kgen_status_t kgen_softmax_selected(int log, kgen_dtype_t dtype, int64_t rows, int64_t cols,
                                    const void* x, const void* y, const char** variant) {
  KGEN_GUARD({
    KGEN_TRY(kgen::softmax::check_out(variant));
    return kgen::softmax::run_forward(kRowNames, nullptr, log, dtype, rows, cols, 1, x, y, nullptr, variant);
  })
}

kgen_status_t kgen_softmax_dim(int log, kgen_dtype_t dtype, int64_t outer, int64_t axis, int64_t inner,
                               const void* x, void* y, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_forward(kDimNames, nullptr, log, dtype, outer, axis, inner, x, y, stream,
                                           nullptr);)
}

kgen_status_t kgen_softmax_dim_variant(const char* variant, int log, kgen_dtype_t dtype, int64_t outer,
                                       int64_t axis, int64_t inner, const void* x, void* y,
                                       kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_forward(kDimNames, variant, log, dtype, outer, axis, inner, x, y, stream,
                                           nullptr);)
}

kgen_status_t kgen_softmax_dim_selected(int log, kgen_dtype_t dtype, int64_t outer, int64_t axis,
                                        int64_t inner, const void* x, const void* y, const char** variant) {
  KGEN_GUARD({
    KGEN_TRY(kgen::softmax::check_out(variant));
    return kgen::softmax::run_forward(kDimNames, nullptr, log, dtype, outer, axis, inner, x, y, nullptr, variant);
  })
}

kgen_status_t kgen_softmax_backward(kgen_dtype_t dtype, int64_t rows, int64_t cols, const void* y,
                                    const void* dy, void* dx, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_backward(kRowNames, nullptr, 0, dtype, rows, cols, 1, y, dy, dx, stream,
                                            nullptr);)
}

kgen_status_t kgen_log_softmax_backward(kgen_dtype_t dtype, int64_t rows, int64_t cols, const void* y,
                                        const void* dy, void* dx, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_backward(kRowNames, nullptr, 1, dtype, rows, cols, 1, y, dy, dx, stream,
                                            nullptr);)
}

kgen_status_t kgen_softmax_backward_dim(int log, kgen_dtype_t dtype, int64_t outer, int64_t axis,
                                        int64_t inner, const void* y, const void* dy, void* dx,
                                        kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_backward(kDimNames, nullptr, log, dtype, outer, axis, inner, y, dy, dx,
                                            stream, nullptr);)
}

kgen_status_t kgen_softmax_backward_variant(const char* variant, int log, kgen_dtype_t dtype, int64_t outer,
                                            int64_t axis, int64_t inner, const void* y, const void* dy,
                                            void* dx, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_backward(kDimNames, variant, log, dtype, outer, axis, inner, y, dy, dx,
                                            stream, nullptr);)
}

kgen_status_t kgen_softmax_backward_selected(int log, kgen_dtype_t dtype, int64_t outer, int64_t axis,
                                             int64_t inner, const void* y, const void* dy, const void* dx,
                                             const char** variant) {
  KGEN_GUARD({
    KGEN_TRY(kgen::softmax::check_out(variant));
    return kgen::softmax::run_backward(kDimNames, nullptr, log, dtype, outer, axis, inner, y, dy, dx, nullptr,
                                   variant);
  })
}

kgen_status_t kgen_softmax_workspace_size(const char* variant, int log, kgen_dtype_t dtype, int64_t outer,
                                         int64_t axis, int64_t inner, const void* x, const void* y,
                                         size_t* workspace_bytes) {
  KGEN_GUARD({
    KGEN_TRY(kgen::softmax::check_size_out(workspace_bytes));
    return kgen::softmax::run_forward(kDimNames, variant, log, dtype, outer, axis, inner, x, y, nullptr, nullptr,
                                      {nullptr, 0, workspace_bytes});
  })
}

kgen_status_t kgen_softmax_dim_workspace(const char* variant, int log, kgen_dtype_t dtype, int64_t outer,
                                         int64_t axis, int64_t inner, const void* x, void* y, void* workspace,
                                         size_t workspace_bytes, kgen_stream_t stream) {
  KGEN_GUARD({
    return kgen::softmax::run_forward(kDimNames, variant, log, dtype, outer, axis, inner, x, y, stream, nullptr,
                                      {workspace, workspace_bytes, nullptr});
  })
}

kgen_status_t kgen_softmax_backward_workspace_size(const char* variant, int log, kgen_dtype_t dtype,
                                                  int64_t outer, int64_t axis, int64_t inner, const void* y,
                                                  const void* dy, const void* dx, size_t* workspace_bytes) {
  KGEN_GUARD({
    KGEN_TRY(kgen::softmax::check_size_out(workspace_bytes));
    return kgen::softmax::run_backward(kDimNames, variant, log, dtype, outer, axis, inner, y, dy, dx, nullptr,
                                       nullptr, {nullptr, 0, workspace_bytes});
  })
}

kgen_status_t kgen_softmax_backward_dim_workspace(const char* variant, int log, kgen_dtype_t dtype,
                                                  int64_t outer, int64_t axis, int64_t inner, const void* y,
                                                  const void* dy, void* dx, void* workspace,
                                                  size_t workspace_bytes, kgen_stream_t stream) {
  KGEN_GUARD({
    return kgen::softmax::run_backward(kDimNames, variant, log, dtype, outer, axis, inner, y, dy, dx, stream,
                                       nullptr, {workspace, workspace_bytes, nullptr});
  })
}

kgen_status_t kgen_softmax_masked(kgen_dtype_t dtype, int64_t batch, int64_t heads, int64_t queries,
                                  int64_t keys, const void* x, const kgen_softmax_mask_t* mask, void* y,
                                  kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_masked(nullptr, dtype, batch, heads, queries, keys, x, mask, y, stream,
                                          nullptr);)
}

kgen_status_t kgen_softmax_masked_variant(const char* variant, kgen_dtype_t dtype, int64_t batch,
                                          int64_t heads, int64_t queries, int64_t keys, const void* x,
                                          const kgen_softmax_mask_t* mask, void* y, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::softmax::run_masked(variant, dtype, batch, heads, queries, keys, x, mask, y, stream,
                                          nullptr);)
}

kgen_status_t kgen_softmax_masked_selected(kgen_dtype_t dtype, int64_t batch, int64_t heads, int64_t queries,
                                           int64_t keys, const void* x, const kgen_softmax_mask_t* mask,
                                           const void* y, const char** variant) {
  KGEN_GUARD({
    KGEN_TRY(kgen::softmax::check_out(variant));
    return kgen::softmax::run_masked(nullptr, dtype, batch, heads, queries, keys, x, mask, y, nullptr, variant);
  })
}

}  // extern "C"
