// kgen_reduce and friends: validate, build the problem, select, provide the
// workspace, launch.
#include <algorithm>
#include <cstdio>

#include "device.hpp"
#include "reduce/problem.hpp"
#include "registry.hpp"
#include "validate.hpp"
#include "workspace.hpp"

namespace kgen {
namespace reduce {
namespace {

const char* op_name(kgen_reduce_op_t op) {
  switch (op) {
    case KGEN_REDUCE_SUM: return "sum";
    case KGEN_REDUCE_MEAN: return "mean";
    case KGEN_REDUCE_MAX: return "max";
    case KGEN_REDUCE_MIN: return "min";
    case KGEN_REDUCE_ARGMAX: return "argmax";
    case KGEN_REDUCE_ARGMIN: return "argmin";
  }
  return nullptr;
}

int out_size(kgen_reduce_op_t op, kgen_dtype_t dtype) { return is_arg(op) ? 8 : dtype_size(dtype); }

// Host-only checks (no CUDA call): fills *p, sets *empty for a no-op.
kgen_status_t validate_host(kgen_reduce_op_t op, kgen_dtype_t dtype, int64_t outer, int64_t reduce,
                            int64_t inner, const void* x, const void* out, Problem* p, bool* empty) {
  if (!op_name(op))
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "op: unknown reduce op value %d", static_cast<int>(op));
  KGEN_TRY(check_dtype(dtype));
  if (dtype > KGEN_INT32)
    return fail(KGEN_ERROR_INVALID_ARGUMENT,
                "dtype: reduce takes float32, float16, bfloat16, float64 or int32, got %s",
                dtype_name(dtype));
  if (op == KGEN_REDUCE_MEAN && !floating_dtype(dtype))
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "dtype: mean needs a floating dtype, got %s",
                dtype_name(dtype));
  KGEN_TRY(check_extent(outer, "outer"));
  KGEN_TRY(check_extent(reduce, "reduce"));
  KGEN_TRY(check_extent(inner, "inner"));
  if (reduce == 0 && op != KGEN_REDUCE_SUM && op != KGEN_REDUCE_MEAN)
    return fail(KGEN_ERROR_INVALID_ARGUMENT,
                "reduce: %s over an empty dimension (reduce == 0) is undefined", op_name(op));
  const int e = dtype_size(dtype), oe = out_size(op, dtype);
  int64_t outputs = 0, rows = 0, elements = 0;
  KGEN_TRY(checked_elements(outer, inner, std::max(e, oe), "outer x inner", &outputs));
  KGEN_TRY(checked_elements(outer, reduce, e, "outer x reduce", &rows));
  KGEN_TRY(checked_elements(rows, inner, e, "outer x reduce x inner", &elements));
  *empty = outputs == 0;
  if (*empty) return KGEN_OK;
  if (elements > 0) {
    KGEN_TRY(check_pointer(x, elements, "x"));
    KGEN_TRY(check_element_alignment(x, e, "x"));
  }
  KGEN_TRY(check_pointer(out, outputs, "out"));
  KGEN_TRY(check_element_alignment(out, oe, "out"));
  KGEN_TRY(check_disjoint(x, elements * e, out, outputs * oe, "x", "out"));
  *p = Problem{op, dtype, outer, reduce, inner, x, const_cast<void*>(out), nullptr, 0, nullptr};
  return KGEN_OK;
}

void describe(const void* problem, char* text, int size) {
  const Problem& p = *static_cast<const Problem*>(problem);
  std::snprintf(text, size, "%s %s outer=%lld reduce=%lld inner=%lld with these pointers",
                op_name(p.op), dtype_name(p.dtype), static_cast<long long>(p.outer),
                static_cast<long long>(p.reduce), static_cast<long long>(p.inner));
}

// With p->device set: checks the pointers (not while the stream is being
// captured: those queries are not capture-safe), then takes the named
// variant if it supports the problem, or selects one.
kgen_status_t choose(const VariantInfo* named, bool check_pointers, Problem* p,
                     const VariantInfo** chosen) {
  if (check_pointers) {
    if (p->outer * p->reduce * p->inner > 0) KGEN_TRY(check_device_pointer(p->x, *p->device, "x"));
    KGEN_TRY(check_device_pointer(p->out, *p->device, "out"));
  }
  return choose_variant(named, Family::reduce, p->dtype, *p->device, p, &heuristic, &describe, chosen,
                        &selection_key);
}

kgen_status_t run(const char* variant, kgen_reduce_op_t op, kgen_dtype_t dtype, int64_t outer,
                  int64_t reduce, int64_t inner, const void* x, void* out, void* workspace,
                  size_t workspace_bytes, kgen_stream_t stream) {
  Problem p{};
  const VariantInfo *named = nullptr, *v = nullptr;
  bool empty = false, capturing = false;
  KGEN_TRY(validate_host(op, dtype, outer, reduce, inner, x, out, &p, &empty));
  KGEN_TRY(find_named(variant, Family::reduce, dtype, &named));
  if (empty) return succeed();
  KGEN_TRY(current_device(&p.device));
  KGEN_TRY(check_stream(stream, &capturing));
  KGEN_TRY(choose(named, !capturing, &p, &v));
  const Plan plan = plan_for(*v, p);
  if (plan.bytes > 0 && workspace) {
    if (workspace_bytes < plan.bytes)
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "workspace: %s needs %zu bytes here, got %zu",
                  v->name, plan.bytes, workspace_bytes);
    const int e = dtype_size(dtype);
    KGEN_TRY(check_disjoint(x, p.outer * p.reduce * p.inner * e, workspace,
                            static_cast<int64_t>(plan.bytes), "x", "workspace"));
    KGEN_TRY(check_disjoint(out, p.outer * p.inner * out_size(op, dtype), workspace,
                            static_cast<int64_t>(plan.bytes), "out", "workspace"));
    if (!capturing) KGEN_TRY(check_device_pointer(workspace, *p.device, "workspace"));
  }
  p.workspace_bytes = plan.bytes;
  return launch_with_workspace(*v, &p, &p.workspace, plan.bytes, workspace, *p.device, stream);
}

}  // namespace
}  // namespace reduce
}  // namespace kgen

extern "C" {

kgen_status_t kgen_reduce(kgen_reduce_op_t op, kgen_dtype_t dtype, int64_t outer, int64_t reduce,
                          int64_t inner, const void* x, void* out, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::reduce::run(nullptr, op, dtype, outer, reduce, inner, x, out, nullptr, 0,
                                      stream);)
}

kgen_status_t kgen_reduce_variant(const char* variant, kgen_reduce_op_t op, kgen_dtype_t dtype,
                                  int64_t outer, int64_t reduce, int64_t inner, const void* x,
                                  void* out, void* workspace, size_t workspace_bytes,
                                  kgen_stream_t stream) {
  KGEN_GUARD(return kgen::reduce::run(variant, op, dtype, outer, reduce, inner, x, out, workspace,
                                      workspace_bytes, stream);)
}

kgen_status_t kgen_reduce_selected(kgen_reduce_op_t op, kgen_dtype_t dtype, int64_t outer,
                                   int64_t reduce, int64_t inner, const void* x, const void* out,
                                   const char** variant, size_t* workspace_bytes) {
  KGEN_GUARD({
    if (!variant) return kgen::fail(KGEN_ERROR_INVALID_ARGUMENT, "variant: null output pointer");
    if (!workspace_bytes)
      return kgen::fail(KGEN_ERROR_INVALID_ARGUMENT, "workspace_bytes: null output pointer");
    kgen::reduce::Problem p{};
    const kgen::VariantInfo* v = nullptr;
    bool empty = false;
    KGEN_TRY(kgen::reduce::validate_host(op, dtype, outer, reduce, inner, x, out, &p, &empty));
    if (!empty) {
      KGEN_TRY(kgen::current_device(&p.device));
      KGEN_TRY(kgen::reduce::choose(nullptr, true, &p, &v));
    }
    *variant = empty ? "" : v->name;
    *workspace_bytes = empty ? 0 : kgen::reduce::plan_for(*v, p).bytes;
    return kgen::succeed();
  })
}

}  // extern "C"
