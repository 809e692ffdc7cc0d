#include "status.hpp"

#include <cstdarg>
#include <cstdio>

namespace kgen {
thread_local char last_error[512] = "";

kgen_status_t fail(kgen_status_t status, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(last_error, sizeof last_error, fmt, args);
  va_end(args);
  return status;
}

kgen_status_t fail_cuda(cudaError_t err, const char* what) {
  return fail(KGEN_ERROR_CUDA, "%s: %s: %s", what, cudaGetErrorName(err), cudaGetErrorString(err));
}

kgen_status_t succeed() {
  last_error[0] = '\0';
  return KGEN_OK;
}

}  // namespace kgen

extern "C" const char* kgen_last_error(void) { return kgen::last_error; }
