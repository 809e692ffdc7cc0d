/* kgen: generated, autotuned memory-bound CUDA kernels.  C API.
 *
 * Stable ABI: plain C types only, no CUDA headers needed.  A stream is a
 * cudaStream_t (NULL is the legacy default stream).  Every entry point
 * validates its arguments before launching anything and returns a status;
 * on failure nothing is written and kgen_last_error() (per host thread)
 * names the offending argument.  No entry point aborts or throws. */
#ifndef KGEN_H
#define KGEN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KGEN_API __declspec(dllexport)
#else
#define KGEN_API __attribute__((visibility("default")))
#endif

typedef enum kgen_status {
  KGEN_OK = 0,
  KGEN_ERROR_INVALID_ARGUMENT = 1, /* a bad size, pointer, dtype or name   */
  KGEN_ERROR_UNSUPPORTED = 2,      /* valid, but no compiled variant can   */
  KGEN_ERROR_CUDA = 3,             /* the CUDA runtime reported an error   */
  KGEN_ERROR_INTERNAL = 4          /* a bug in kgen: please report it      */
} kgen_status_t;

typedef enum kgen_dtype {
  KGEN_FLOAT32 = 0,
  KGEN_FLOAT16 = 1,
  KGEN_BFLOAT16 = 2,
  KGEN_FLOAT64 = 3
} kgen_dtype_t;

typedef struct CUstream_st* kgen_stream_t; /* == cudaStream_t */

/* ---- errors and library facts ------------------------------------------ */
/* Message of the last failed call on this host thread ("" after success). */
KGEN_API const char* kgen_last_error(void);
KGEN_API const char* kgen_status_string(kgen_status_t status);
KGEN_API const char* kgen_version(void);
/* bytes per element of a dtype, 0 for an unknown one */
KGEN_API int kgen_dtype_size(kgen_dtype_t dtype);

/* ---- softmax family ----------------------------------------------------- */
/* y = softmax(x) over the last dim of a row-major rows x cols tensor.
 * rows >= 0 (0: no-op), cols >= 1 when rows > 0, x == y allowed (in place),
 * any other overlap of x and y is rejected.  Half types compute in float32. */
KGEN_API kgen_status_t kgen_softmax(kgen_dtype_t dtype, int64_t rows, int64_t cols,
                                    const void* x, void* y, kgen_stream_t stream);
KGEN_API kgen_status_t kgen_log_softmax(kgen_dtype_t dtype, int64_t rows, int64_t cols,
                                        const void* x, void* y, kgen_stream_t stream);

/* The same with a chosen variant (by name; NULL selects as kgen_softmax
 * does) and the mode as an argument (log = 0 softmax, 1 log_softmax).
 * A named variant that is not compiled in, or that cannot run this problem,
 * gives KGEN_ERROR_UNSUPPORTED.  For tests, benchmarks and tuning. */
KGEN_API kgen_status_t kgen_softmax_variant(const char* variant, int log, kgen_dtype_t dtype,
                                            int64_t rows, int64_t cols, const void* x, void* y,
                                            kgen_stream_t stream);
/* The variant kgen_softmax would run for these arguments (pointers count:
 * their alignment decides the vector width).  *variant stays valid for the
 * life of the process. */
KGEN_API kgen_status_t kgen_softmax_selected(int log, kgen_dtype_t dtype, int64_t rows,
                                             int64_t cols, const void* x, const void* y,
                                             const char** variant);

/* ---- registry introspection -------------------------------------------- */
KGEN_API int64_t kgen_variant_count(void);
/* NULL when index is out of range */
KGEN_API const char* kgen_variant_name(int64_t index);
KGEN_API const char* kgen_variant_family(int64_t index);
/* The build's target arch ("sm_90") and level ("default", "full"). */
KGEN_API const char* kgen_build_arch(void);
KGEN_API const char* kgen_build_level(void);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* KGEN_H */
