// Argument checks shared by every family's entry points.  Each returns
// KGEN_OK or a failure whose message names the argument.
#pragma once

#include <cstdint>

#include "dtype.hpp"
#include "status.hpp"

namespace kgen {

inline kgen_status_t check_dtype(int dtype) {
  if (!valid_dtype(dtype))
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "dtype: unknown dtype value %d", dtype);
  return KGEN_OK;
}

// Whether p is aligned to `bytes` (capability checks of wide accesses).
inline bool aligned_to(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

// Families defined on floating point only (softmax).
inline kgen_status_t check_float_dtype(int dtype) {
  if (kgen_status_t st = check_dtype(dtype)) return st;
  if (!floating_dtype(dtype))
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "dtype: %s is not a floating dtype",
                dtype_name(static_cast<kgen_dtype_t>(dtype)));
  return KGEN_OK;
}

inline kgen_status_t check_extent(int64_t value, const char* what) {
  if (value < 0)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s: must be >= 0, got %lld", what,
                static_cast<long long>(value));
  return KGEN_OK;
}

// elements = a * b, failing if the byte count of the tensor overflows int64.
inline kgen_status_t checked_elements(int64_t a, int64_t b, int elem_size, const char* what,
                                      int64_t* elements) {
  if (a != 0 && b > INT64_MAX / elem_size / a)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s: %lld x %lld elements overflow 64-bit sizes",
                what, static_cast<long long>(a), static_cast<long long>(b));
  *elements = a * b;
  return KGEN_OK;
}

inline kgen_status_t check_pointer(const void* p, int64_t elements, const char* what) {
  if (p == nullptr)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s: null pointer for %lld elements", what,
                static_cast<long long>(elements));
  return KGEN_OK;
}

// Every element must be naturally aligned (as any allocator and any tensor
// view of the dtype gives); wider alignment is optional and only selects
// wider vector accesses.
inline kgen_status_t check_element_alignment(const void* p, int elem_size, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(elem_size) != 0)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s: %p is not aligned to its %d-byte elements", what,
                p, elem_size);
  return KGEN_OK;
}

// Output may alias input exactly (in place) but not overlap it otherwise.
inline kgen_status_t check_overlap(const void* in, const void* out, int64_t bytes,
                                   const char* in_name, const char* out_name) {
  auto a = reinterpret_cast<uintptr_t>(in), b = reinterpret_cast<uintptr_t>(out);
  const auto n = static_cast<uintptr_t>(bytes);
  if (a != b && a < b + n && b < a + n)
    return fail(KGEN_ERROR_INVALID_ARGUMENT,
                "%s: overlaps %s without being the same buffer (in place needs %s == %s)",
                out_name, in_name, out_name, in_name);
  return KGEN_OK;
}

// Two buffers that must not share a byte.
inline kgen_status_t check_disjoint(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes,
                                    const char* a_name, const char* b_name) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  if (a_bytes > 0 && b_bytes > 0 && pa < pb + static_cast<uintptr_t>(b_bytes) &&
      pb < pa + static_cast<uintptr_t>(a_bytes))
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s: overlaps %s", b_name, a_name);
  return KGEN_OK;
}

}  // namespace kgen

#define KGEN_TRY(expr)                              \
  do {                                              \
    kgen_status_t kgen_try_status_ = (expr);        \
    if (kgen_try_status_ != KGEN_OK) return kgen_try_status_; \
  } while (0)
