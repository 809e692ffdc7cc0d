// kgen_softmax and friends: validate, build the problem, select, launch.
#include <cstdio>
#include <cstring>

#include "device.hpp"
#include "registry.hpp"
#include "softmax/problem.hpp"
#include "validate.hpp"

namespace kgen {
namespace softmax {
namespace {

// Host-only checks (no CUDA call): fills *p, sets *empty for a no-op.
kgen_status_t validate_host(int log, kgen_dtype_t dtype, int64_t rows, int64_t cols,
                            const void* x, const void* y, Problem* p, bool* empty) {
  KGEN_TRY(check_float_dtype(dtype));
  KGEN_TRY(check_extent(rows, "rows"));
  KGEN_TRY(check_extent(cols, "cols"));
  int64_t n = 0;
  KGEN_TRY(checked_elements(rows, cols, dtype_size(dtype), "rows x cols", &n));
  *empty = n == 0;
  if (*empty) return KGEN_OK;
  KGEN_TRY(check_pointer(x, n, "x"));
  KGEN_TRY(check_pointer(y, n, "y"));
  KGEN_TRY(check_element_alignment(x, dtype_size(dtype), "x"));
  KGEN_TRY(check_element_alignment(y, dtype_size(dtype), "y"));
  KGEN_TRY(check_overlap(x, y, n * dtype_size(dtype), "x", "y"));
  *p = Problem{dtype, log != 0, rows, cols, x, const_cast<void*>(y), nullptr};
  return KGEN_OK;
}

void describe(const void* problem, char* text, int size) {
  const Problem& p = *static_cast<const Problem*>(problem);
  std::snprintf(text, size, "%s rows=%lld cols=%lld with these pointers", dtype_name(p.dtype),
                static_cast<long long>(p.rows), static_cast<long long>(p.cols));
}

// With p->device set: checks the pointers (skipped while the stream is being
// captured into a graph: the driver queries are not capture-safe), then takes
// the named variant if it supports the problem, or selects one.
kgen_status_t choose(const VariantInfo* named, bool check_pointers, Problem* p,
                     const VariantInfo** chosen) {
  if (check_pointers) {
    KGEN_TRY(check_device_pointer(p->x, *p->device, "x"));
    KGEN_TRY(check_device_pointer(p->y, *p->device, "y"));
  }
  return choose_variant(named, Family::softmax, p->dtype, *p->device, p, &heuristic, &describe, chosen);
}

kgen_status_t run(const char* variant, int log, kgen_dtype_t dtype, int64_t rows, int64_t cols,
                  const void* x, void* y, kgen_stream_t stream) {
  Problem p{};
  const VariantInfo *named = nullptr, *v = nullptr;
  bool empty = false, capturing = false;
  KGEN_TRY(validate_host(log, dtype, rows, cols, x, y, &p, &empty));
  KGEN_TRY(find_named(variant, Family::softmax, dtype, &named));
  if (empty) return succeed();
  KGEN_TRY(current_device(&p.device));
  KGEN_TRY(check_stream(stream, &capturing));
  KGEN_TRY(choose(named, !capturing, &p, &v));
  return launch_chosen(v, &p, stream);
}

}  // namespace
}  // namespace softmax
}  // namespace kgen

using kgen::softmax::run;

extern "C" {

kgen_status_t kgen_softmax(kgen_dtype_t dtype, int64_t rows, int64_t cols, const void* x, void* y,
                           kgen_stream_t stream) {
  KGEN_GUARD(return run(nullptr, 0, dtype, rows, cols, x, y, stream);)
}

kgen_status_t kgen_log_softmax(kgen_dtype_t dtype, int64_t rows, int64_t cols, const void* x,
                               void* y, kgen_stream_t stream) {
  KGEN_GUARD(return run(nullptr, 1, dtype, rows, cols, x, y, stream);)
}

kgen_status_t kgen_softmax_variant(const char* variant, int log, kgen_dtype_t dtype, int64_t rows,
                                   int64_t cols, const void* x, void* y, kgen_stream_t stream) {
  KGEN_GUARD(return run(variant, log, dtype, rows, cols, x, y, stream);)
}

kgen_status_t kgen_softmax_selected(int log, kgen_dtype_t dtype, int64_t rows, int64_t cols,
                                    const void* x, const void* y, const char** variant) {
  KGEN_GUARD({
    if (!variant) return kgen::fail(KGEN_ERROR_INVALID_ARGUMENT, "variant: null output pointer");
    kgen::softmax::Problem p{};
    const kgen::VariantInfo* v = nullptr;
    bool empty = false;
    KGEN_TRY(kgen::softmax::validate_host(log, dtype, rows, cols, x, y, &p, &empty));
    if (!empty) {
      KGEN_TRY(kgen::current_device(&p.device));
      KGEN_TRY(kgen::softmax::choose(nullptr, true, &p, &v));
    }
    *variant = empty ? "" : v->name;
    return kgen::succeed();
  })
}

}  // extern "C"
