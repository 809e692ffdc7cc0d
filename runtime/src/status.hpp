// Error reporting: each entry point returns a status and leaves a message
// naming the offending argument in a thread-local buffer.
#pragma once

#include <cuda_runtime_api.h>

#include "kgen/kgen.h"

namespace kgen {

// Records the message for kgen_last_error() and returns status.
kgen_status_t fail(kgen_status_t status, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
// A CUDA error: "<what>: <cuda error name>: <cuda message>".
kgen_status_t fail_cuda(cudaError_t err, const char* what);
kgen_status_t succeed();

}  // namespace kgen

// Runs a statement that may throw (std::bad_alloc and the like) inside an
// entry point, so that no exception crosses the C ABI.
#define KGEN_GUARD(body)                                                      \
  try {                                                                       \
    body                                                                      \
  } catch (const std::exception& e) {                                         \
    return ::kgen::fail(KGEN_ERROR_INTERNAL, "internal error: %s", e.what()); \
  } catch (...) {                                                             \
    return ::kgen::fail(KGEN_ERROR_INTERNAL, "internal error: unknown exception"); \
  }
