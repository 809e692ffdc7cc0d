// kgen_topk and friends: validate, build the problem, select, check the
// caller's workspace, launch.
#include <cstdio>

#include "device.hpp"
#include "registry.hpp"
#include "topk/problem.hpp"
#include "validate.hpp"

namespace kgen {
namespace topk {
namespace {

// Host-only checks of the problem itself (no outputs): fills *p, sets *empty
// for a no-op.
kgen_status_t validate_problem(kgen_dtype_t dtype, int64_t batch, int64_t n, int64_t k,
                               int largest, int sorted, const void* x, Problem* p, bool* empty) {
  KGEN_TRY(check_dtype(dtype));
  if (dtype > KGEN_INT32)
    return fail(KGEN_ERROR_INVALID_ARGUMENT,
                "dtype: topk takes float32, float16, bfloat16, float64 or int32, got %s",
                dtype_name(dtype));
  KGEN_TRY(check_extent(batch, "batch"));
  KGEN_TRY(check_extent(n, "n"));
  if (k < 0)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "k: must be >= 0, got %lld", static_cast<long long>(k));
  if (k > n)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "k: %lld is more than the row's n = %lld elements",
                static_cast<long long>(k), static_cast<long long>(n));
  if (n > kMaxRow)
    return fail(KGEN_ERROR_UNSUPPORTED, "n: rows of %lld elements are longer than 2^32 - 1",
                static_cast<long long>(n));
  const int e = dtype_size(dtype);
  int64_t elements = 0, outputs = 0;
  KGEN_TRY(checked_elements(batch, n, e, "batch x n", &elements));
  KGEN_TRY(checked_elements(batch, k, 8, "batch x k", &outputs));
  *empty = outputs == 0;
  if (*empty) return KGEN_OK;
  KGEN_TRY(check_pointer(x, elements, "x"));
  KGEN_TRY(check_element_alignment(x, e, "x"));
  *p = Problem{dtype, batch, n, k, largest != 0, sorted != 0, x, nullptr, nullptr, nullptr, 0, nullptr};
  if (!sorts_in_block(*p) && outputs > kMaxSortedItems)
    return fail(KGEN_ERROR_UNSUPPORTED,
                "k: %lld x %lld selected elements exceed the global sort's 2^31 - 1 "
                "(k above %lld is sorted across the batch)",
                static_cast<long long>(batch), static_cast<long long>(k),
                static_cast<long long>(block_sort_capacity(dtype)));
  return KGEN_OK;
}

kgen_status_t validate_outputs(Problem* p, void* values, int64_t* indices) {
  const int e = dtype_size(p->dtype);
  const int64_t outputs = p->batch * p->k, elements = p->batch * p->n;
  KGEN_TRY(check_pointer(values, outputs, "values"));
  KGEN_TRY(check_element_alignment(values, e, "values"));
  KGEN_TRY(check_pointer(indices, outputs, "indices"));
  KGEN_TRY(check_element_alignment(indices, 8, "indices"));
  KGEN_TRY(check_disjoint(p->x, elements * e, values, outputs * e, "x", "values"));
  KGEN_TRY(check_disjoint(p->x, elements * e, indices, outputs * 8, "x", "indices"));
  KGEN_TRY(check_disjoint(values, outputs * e, indices, outputs * 8, "values", "indices"));
  p->values = values;
  p->indices = indices;
  return KGEN_OK;
}

void describe(const void* problem, char* text, int size) {
  const Problem& p = *static_cast<const Problem*>(problem);
  std::snprintf(text, size, "%s batch=%lld n=%lld k=%lld with these pointers", dtype_name(p.dtype),
                static_cast<long long>(p.batch), static_cast<long long>(p.n),
                static_cast<long long>(p.k));
}

kgen_status_t choose(const VariantInfo* named, Problem* p, const VariantInfo** chosen) {
  return choose_variant(named, Family::topk, p->dtype, *p->device, p, &heuristic, &describe, chosen,
                        &selection_key);
}

kgen_status_t run(const char* variant, kgen_dtype_t dtype, int64_t batch, int64_t n, int64_t k,
                  int largest, int sorted, const void* x, void* values, int64_t* indices,
                  void* workspace, size_t workspace_bytes, kgen_stream_t stream) {
  Problem p{};
  const VariantInfo *named = nullptr, *v = nullptr;
  bool empty = false, capturing = false;
  KGEN_TRY(validate_problem(dtype, batch, n, k, largest, sorted, x, &p, &empty));
  KGEN_TRY(find_named(variant, Family::topk, dtype, &named));
  if (empty) return succeed();
  KGEN_TRY(validate_outputs(&p, values, indices));
  KGEN_TRY(current_device(&p.device));
  KGEN_TRY(check_stream(stream, &capturing));
  if (!capturing) {  // pointer queries are not capture-safe
    KGEN_TRY(check_device_pointer(x, *p.device, "x"));
    KGEN_TRY(check_device_pointer(values, *p.device, "values"));
    KGEN_TRY(check_device_pointer(indices, *p.device, "indices"));
  }
  KGEN_TRY(choose(named, &p, &v));
  const Plan plan = plan_for(*v, p);
  if (plan.bytes > 0) {
    if (!workspace || workspace_bytes < plan.bytes)
      return fail(KGEN_ERROR_INVALID_ARGUMENT,
                  "workspace: %s needs %zu bytes here (kgen_topk_workspace_size), got %zu%s",
                  v->name, plan.bytes, workspace ? workspace_bytes : size_t{0},
                  workspace ? "" : " (null)");
    const int e = dtype_size(dtype);
    const auto w = static_cast<int64_t>(plan.bytes);
    KGEN_TRY(check_disjoint(x, p.batch * p.n * e, workspace, w, "x", "workspace"));
    KGEN_TRY(check_disjoint(values, p.batch * p.k * e, workspace, w, "values", "workspace"));
    KGEN_TRY(check_disjoint(indices, p.batch * p.k * 8, workspace, w, "indices", "workspace"));
    if (!capturing) KGEN_TRY(check_device_pointer(workspace, *p.device, "workspace"));
    p.workspace = workspace;
    p.workspace_bytes = plan.bytes;
  }
  return launch_chosen(v, &p, stream);
}

}  // namespace
}  // namespace topk
}  // namespace kgen

extern "C" {

kgen_status_t kgen_topk(kgen_dtype_t dtype, int64_t batch, int64_t n, int64_t k, int largest,
                        int sorted, const void* x, void* values, int64_t* indices, void* workspace,
                        size_t workspace_bytes, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::topk::run(nullptr, dtype, batch, n, k, largest, sorted, x, values, indices,
                                    workspace, workspace_bytes, stream);)
}

kgen_status_t kgen_topk_variant(const char* variant, kgen_dtype_t dtype, int64_t batch, int64_t n,
                                int64_t k, int largest, int sorted, const void* x, void* values,
                                int64_t* indices, void* workspace, size_t workspace_bytes,
                                kgen_stream_t stream) {
  KGEN_GUARD(return kgen::topk::run(variant, dtype, batch, n, k, largest, sorted, x, values, indices,
                                    workspace, workspace_bytes, stream);)
}

static kgen_status_t topk_query(const char* variant, kgen_dtype_t dtype, int64_t batch, int64_t n,
                                int64_t k, int largest, int sorted, const void* x,
                                const char** name, size_t* bytes) {
  kgen::topk::Problem p{};
  const kgen::VariantInfo *named = nullptr, *v = nullptr;
  bool empty = false;
  KGEN_TRY(kgen::topk::validate_problem(dtype, batch, n, k, largest, sorted, x, &p, &empty));
  KGEN_TRY(kgen::find_named(variant, kgen::Family::topk, dtype, &named));
  if (empty) {
    if (name) *name = "";
    if (bytes) *bytes = 0;
    return kgen::succeed();
  }
  KGEN_TRY(kgen::current_device(&p.device));
  KGEN_TRY(kgen::topk::choose(named, &p, &v));
  if (name) *name = v->name;
  if (bytes) *bytes = kgen::topk::plan_for(*v, p).bytes;
  return kgen::succeed();
}

kgen_status_t kgen_topk_workspace_size(const char* variant, kgen_dtype_t dtype, int64_t batch,
                                       int64_t n, int64_t k, int largest, int sorted, const void* x,
                                       size_t* bytes) {
  KGEN_GUARD({
    if (!bytes) return kgen::fail(KGEN_ERROR_INVALID_ARGUMENT, "bytes: null output pointer");
    return topk_query(variant, dtype, batch, n, k, largest, sorted, x, nullptr, bytes);
  })
}

kgen_status_t kgen_topk_selected(kgen_dtype_t dtype, int64_t batch, int64_t n, int64_t k,
                                 int largest, int sorted, const void* x, const char** variant) {
  KGEN_GUARD({
    if (!variant) return kgen::fail(KGEN_ERROR_INVALID_ARGUMENT, "variant: null output pointer");
    return topk_query(nullptr, dtype, batch, n, k, largest, sorted, x, variant, nullptr);
  })
}

}  // extern "C"
