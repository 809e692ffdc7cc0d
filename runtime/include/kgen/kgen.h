/* kgen: generated, autotuned memory-bound CUDA kernels.  C API.
 *
 * Stable ABI: plain C types only, no CUDA headers needed.  A stream is a
 * cudaStream_t (NULL is the legacy default stream).  Every entry point
 * validates its arguments before launching anything and returns a status;
 * on failure nothing is written and kgen_last_error() (per host thread)
 * names the offending argument.  No entry point aborts or throws. */
#ifndef KGEN_H
#define KGEN_H

#include <stddef.h>
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
  KGEN_FLOAT64 = 3,
  KGEN_INT32 = 4, /* reductions: sum, max, min, argmax, argmin */
  KGEN_INT64 = 5, /* the rest: broadcast (expand, where) only   */
  KGEN_BOOL = 6,  /* one byte, 0 or 1 */
  KGEN_UINT8 = 7
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

/* Softmax over any dim: x seen as a row-major (outer, axis, inner) tensor,
 * softmax taken along axis (dim d of a tensor of shape s: outer = s[0] *
 * ... * s[d-1], axis = s[d], inner = s[d+1] * ... ).  inner == 1 is the
 * last-dim case above; inner > 1 runs a strided kernel (no transpose).
 * outer, inner >= 0 (0: no-op), axis >= 1 when the tensor is not empty. */
KGEN_API kgen_status_t kgen_softmax_dim(int log, kgen_dtype_t dtype, int64_t outer, int64_t axis,
                                        int64_t inner, const void* x, void* y,
                                        kgen_stream_t stream);
KGEN_API kgen_status_t kgen_softmax_dim_variant(const char* variant, int log, kgen_dtype_t dtype,
                                                int64_t outer, int64_t axis, int64_t inner,
                                                const void* x, void* y, kgen_stream_t stream);
KGEN_API kgen_status_t kgen_softmax_dim_selected(int log, kgen_dtype_t dtype, int64_t outer,
                                                 int64_t axis, int64_t inner, const void* x,
                                                 const void* y, const char** variant);

/* Few rows (fewer than the GPU has SMs) of many columns are split across
 * many CTAs, which needs a workspace (16 bytes a CTA: a few KB): the calls
 * above take it stream-ordered from a memory pool of the library's own on
 * the device (cudaMallocFromPoolAsync; it keeps up to 64 MiB between calls)
 * and free it on the stream.  To give one instead: the size for these
 * arguments (0 when the variant, chosen as kgen_softmax_dim_variant does,
 * needs none; reads x and y only for their alignment, asks CUDA nothing
 * about them, takes no stream), then the call with workspace_bytes device
 * bytes (any content, 16-byte aligned, apart from x and y; NULL: allocated
 * as above).  A workspace smaller than the variant needs is an error naming
 * it. */
KGEN_API kgen_status_t kgen_softmax_workspace_size(const char* variant, int log, kgen_dtype_t dtype,
                                                   int64_t outer, int64_t axis, int64_t inner,
                                                   const void* x, const void* y,
                                                   size_t* workspace_bytes);
KGEN_API kgen_status_t kgen_softmax_dim_workspace(const char* variant, int log, kgen_dtype_t dtype,
                                                  int64_t outer, int64_t axis, int64_t inner,
                                                  const void* x, void* y, void* workspace,
                                                  size_t workspace_bytes, kgen_stream_t stream);

/* Backward, from the forward's output y and the gradient dy of the loss with
 * respect to y:
 *   softmax:     dx = (dy - sum(y * dy)) * y
 *   log_softmax: dx = dy - exp(y) * sum(dy)
 * sums along the softmax dim.  dx may be dy or y (in place); any other
 * overlap is rejected. */
KGEN_API kgen_status_t kgen_softmax_backward(kgen_dtype_t dtype, int64_t rows, int64_t cols,
                                             const void* y, const void* dy, void* dx,
                                             kgen_stream_t stream);
KGEN_API kgen_status_t kgen_log_softmax_backward(kgen_dtype_t dtype, int64_t rows, int64_t cols,
                                                 const void* y, const void* dy, void* dx,
                                                 kgen_stream_t stream);
/* The same over any dim (outer, axis, inner as for kgen_softmax_dim). */
KGEN_API kgen_status_t kgen_softmax_backward_dim(int log, kgen_dtype_t dtype, int64_t outer,
                                                 int64_t axis, int64_t inner, const void* y,
                                                 const void* dy, void* dx, kgen_stream_t stream);
KGEN_API kgen_status_t kgen_softmax_backward_variant(const char* variant, int log,
                                                     kgen_dtype_t dtype, int64_t outer,
                                                     int64_t axis, int64_t inner, const void* y,
                                                     const void* dy, void* dx,
                                                     kgen_stream_t stream);
KGEN_API kgen_status_t kgen_softmax_backward_selected(int log, kgen_dtype_t dtype, int64_t outer,
                                                      int64_t axis, int64_t inner, const void* y,
                                                      const void* dy, const void* dx,
                                                      const char** variant);
/* The backward's workspace, as kgen_softmax_workspace_size and
 * kgen_softmax_dim_workspace give the forward's (apart from y, dy and dx). */
KGEN_API kgen_status_t kgen_softmax_backward_workspace_size(const char* variant, int log,
                                                            kgen_dtype_t dtype, int64_t outer,
                                                            int64_t axis, int64_t inner,
                                                            const void* y, const void* dy,
                                                            const void* dx,
                                                            size_t* workspace_bytes);
KGEN_API kgen_status_t kgen_softmax_backward_dim_workspace(const char* variant, int log,
                                                           kgen_dtype_t dtype, int64_t outer,
                                                           int64_t axis, int64_t inner,
                                                           const void* y, const void* dy, void* dx,
                                                           void* workspace, size_t workspace_bytes,
                                                           kgen_stream_t stream);

/* Scale and mask fused on load, as attention uses:
 *   y = softmax(scale * x + mask)
 * over the last dim of x seen as (batch, heads, queries, keys).  The mask is
 * a (mask_batch, mask_heads, mask_queries, keys) tensor, each leading extent
 * either 1 (broadcast) or x's, e.g. [B,1,S,S] or [B,1,1,S] against [B,H,S,S].
 *   KGEN_MASK_BOOL:     one byte per element, nonzero keeps the key, zero
 *                       masks it out (torch scaled_dot_product_attention's
 *                       convention for a bool attn_mask)
 *   KGEN_MASK_ADDITIVE: x's dtype, added after the scale (-inf masks)
 *   KGEN_MASK_NONE:     no mask tensor (scale and causal only)
 * causal keeps key k of query q only when k <= q (the top-left aligned
 * lower triangle of is_causal).  A row with no key left gives NaN like
 * PyTorch, or 0 everywhere when safe is set. */
typedef enum kgen_mask_kind {
  KGEN_MASK_NONE = 0,
  KGEN_MASK_BOOL = 1,
  KGEN_MASK_ADDITIVE = 2
} kgen_mask_kind_t;

typedef struct kgen_softmax_mask {
  double scale;             /* multiplies x; finite */
  kgen_mask_kind_t kind;
  const void* mask;         /* NULL for KGEN_MASK_NONE */
  int64_t mask_batch, mask_heads, mask_queries;  /* each 1 or x's extent */
  int causal;
  int safe;
} kgen_softmax_mask_t;

KGEN_API kgen_status_t kgen_softmax_masked(kgen_dtype_t dtype, int64_t batch, int64_t heads,
                                           int64_t queries, int64_t keys, const void* x,
                                           const kgen_softmax_mask_t* mask, void* y,
                                           kgen_stream_t stream);
KGEN_API kgen_status_t kgen_softmax_masked_variant(const char* variant, kgen_dtype_t dtype,
                                                   int64_t batch, int64_t heads, int64_t queries,
                                                   int64_t keys, const void* x,
                                                   const kgen_softmax_mask_t* mask, void* y,
                                                   kgen_stream_t stream);
KGEN_API kgen_status_t kgen_softmax_masked_selected(kgen_dtype_t dtype, int64_t batch,
                                                    int64_t heads, int64_t queries, int64_t keys,
                                                    const void* x, const kgen_softmax_mask_t* mask,
                                                    const void* y, const char** variant);

/* ---- reduce family ------------------------------------------------------ */
typedef enum kgen_reduce_op {
  KGEN_REDUCE_SUM = 0,
  KGEN_REDUCE_MEAN = 1,   /* floating dtypes only */
  KGEN_REDUCE_MAX = 2,
  KGEN_REDUCE_MIN = 3,
  KGEN_REDUCE_ARGMAX = 4, /* int64 index of the first maximum (of the first NaN) */
  KGEN_REDUCE_ARGMIN = 5
} kgen_reduce_op_t;

/* out[o, i] = op over r of x[o, r, i], for a contiguous tensor seen as
 * (outer, reduce, inner): the last dim is inner == 1, a middle axis
 * inner > 1, the whole tensor outer == inner == 1.  out holds outer x inner
 * elements of the input dtype (int64 for argmax/argmin) and may not overlap x.
 * Half types accumulate in float32; int32 sums wrap like int32 arithmetic.
 * NaN propagates through sum, mean, max and min; argmax/argmin of a row with
 * a NaN give the first NaN; ties give the lowest index.  reduce == 0 gives
 * 0 for sum and NaN for mean, and is an error for the others; outer == 0 or
 * inner == 0 is a no-op.  Results are bitwise the same on every run.
 * Few long rows are split across blocks, which needs a workspace: this call
 * takes it stream-ordered from the library's memory pool (as kgen_softmax)
 * when needed;
 * kgen_reduce_variant takes one from the caller instead. */
KGEN_API kgen_status_t kgen_reduce(kgen_reduce_op_t op, kgen_dtype_t dtype, int64_t outer,
                                   int64_t reduce, int64_t inner, const void* x, void* out,
                                   kgen_stream_t stream);

/* The variant kgen_reduce would run for these arguments and the workspace
 * it needs (0 when none).  *variant stays valid for the life of the process. */
KGEN_API kgen_status_t kgen_reduce_selected(kgen_reduce_op_t op, kgen_dtype_t dtype, int64_t outer,
                                            int64_t reduce, int64_t inner, const void* x,
                                            const void* out, const char** variant,
                                            size_t* workspace_bytes);

/* kgen_reduce with a chosen variant (NULL selects as kgen_reduce does) and
 * a caller's workspace of workspace_bytes device bytes (any content; NULL:
 * allocated as kgen_reduce does).  A workspace smaller than the variant
 * needs for this problem is an error naming it.  A named variant that is not
 * compiled in, or that cannot run this problem, gives KGEN_ERROR_UNSUPPORTED. */
KGEN_API kgen_status_t kgen_reduce_variant(const char* variant, kgen_reduce_op_t op,
                                           kgen_dtype_t dtype, int64_t outer, int64_t reduce,
                                           int64_t inner, const void* x, void* out,
                                           void* workspace, size_t workspace_bytes,
                                           kgen_stream_t stream);

/* ---- permute family ----------------------------------------------------- */
/* dst = src.permute(perm).contiguous() for a contiguous (row-major) src of
 * `rank` dims (0 to 8) with extents shape[0..rank-1] >= 0, elements of
 * elem_size bytes (1, 2, 4, 8, 16 for the usual dtypes; any size from 1 to 2^30).
 * dst dim k is src dim perm[k]; perm must be a permutation of 0..rank-1.
 * An empty tensor is a no-op.  src and dst may not overlap.  Any alignment
 * works: the widest unit (up to 16 bytes) that both pointers and the
 * preserved innermost bytes allow is moved.  A permutation that is the
 * identity once size-1 dims are dropped is a device-to-device copy. */
KGEN_API kgen_status_t kgen_permute(size_t elem_size, int rank, const int64_t* shape,
                                    const int* perm, const void* src, void* dst,
                                    kgen_stream_t stream);

/* The variant kgen_permute would run for these arguments ("copy" for a
 * plain copy, "" for an empty tensor).  *variant stays valid for the life
 * of the process. */
KGEN_API kgen_status_t kgen_permute_selected(size_t elem_size, int rank, const int64_t* shape,
                                             const int* perm, const void* src, const void* dst,
                                             const char** variant);

/* kgen_permute with a chosen variant (NULL selects as kgen_permute does).  The
 * problem is simplified for the variant's unit size; a named variant that is
 * not compiled in, or that cannot run the result, gives
 * KGEN_ERROR_UNSUPPORTED.  For tests, benchmarks and tuning. */
KGEN_API kgen_status_t kgen_permute_variant(const char* variant, size_t elem_size, int rank,
                                            const int64_t* shape, const int* perm,
                                            const void* src, void* dst, kgen_stream_t stream);

/* ---- broadcast family --------------------------------------------------- */
/* Shapes broadcast as in PyTorch (and NumPy): aligned at their last dims, a
 * missing leading dim counts as 1, and each dim's sizes must be equal or 1
 * (a 1 grows to the other size, 0 included).  Every tensor is contiguous
 * (row-major) and has rank 0 (a scalar) to 8. */

/* The shape `count` (1 to 8) tensors broadcast to: out_shape gets out_rank
 * (the largest rank) sizes; out_shape must hold 8.  An error names the two
 * operands (shapes[i]) and the dim that disagree. */
KGEN_API kgen_status_t kgen_broadcast_shape(int count, const int* ranks,
                                            const int64_t* const* shapes, int* out_rank,
                                            int64_t* out_shape);

/* dst = src.expand(dst_shape).contiguous(): dst_rank >= src_rank; leading
 * dims may be added; a dim of src grows only from size 1; -1 in dst_shape
 * keeps src's size (not in an added leading dim).  Any dtype; any alignment
 * (the widest unit, up to 16 bytes, that the pointers and the contiguous
 * innermost bytes allow is moved).  src and dst may not overlap.  An empty
 * dst is a no-op; an expand that broadcasts nothing is a device-to-device
 * copy, a scalar src a fill. */
KGEN_API kgen_status_t kgen_expand(kgen_dtype_t dtype, int src_rank, const int64_t* src_shape,
                                   int dst_rank, const int64_t* dst_shape, const void* src,
                                   void* dst, kgen_stream_t stream);
/* The variant kgen_expand would run ("copy" for a plain copy, "" for an
 * empty dst).  *variant stays valid for the life of the process. */
KGEN_API kgen_status_t kgen_expand_selected(kgen_dtype_t dtype, int src_rank,
                                            const int64_t* src_shape, int dst_rank,
                                            const int64_t* dst_shape, const void* src,
                                            const void* dst, const char** variant);
/* kgen_expand with a chosen variant (NULL selects as kgen_expand does).  The
 * problem is simplified for the variant's unit size; a variant that is not
 * compiled in, or that cannot run the result, gives KGEN_ERROR_UNSUPPORTED. */
KGEN_API kgen_status_t kgen_expand_variant(const char* variant, kgen_dtype_t dtype, int src_rank,
                                           const int64_t* src_shape, int dst_rank,
                                           const int64_t* dst_shape, const void* src, void* dst,
                                           kgen_stream_t stream);

/* out = torch.where(cond, x, y): out[i] = cond[i] ? x[i] : y[i] with cond, x
 * and y broadcast to one shape (kgen_broadcast_shape of the three); out is
 * that shape, contiguous.  cond holds one byte an element (bool or uint8:
 * nonzero selects x); x, y and out hold `dtype` (any dtype; values are
 * copied bit for bit) and must be aligned to it.  out may be x or y itself
 * when that input has out's shape; any other overlap of out with an input is
 * rejected.  An empty out is a no-op. */
KGEN_API kgen_status_t kgen_where(kgen_dtype_t dtype, int cond_rank, const int64_t* cond_shape,
                                  int x_rank, const int64_t* x_shape, int y_rank,
                                  const int64_t* y_shape, const void* cond, const void* x,
                                  const void* y, void* out, kgen_stream_t stream);
/* The variant kgen_where would run ("" for an empty out). */
KGEN_API kgen_status_t kgen_where_selected(kgen_dtype_t dtype, int cond_rank,
                                           const int64_t* cond_shape, int x_rank,
                                           const int64_t* x_shape, int y_rank,
                                           const int64_t* y_shape, const void* cond,
                                           const void* x, const void* y, const void* out,
                                           const char** variant);
/* kgen_where with a chosen variant (NULL selects as kgen_where does). */
KGEN_API kgen_status_t kgen_where_variant(const char* variant, kgen_dtype_t dtype, int cond_rank,
                                          const int64_t* cond_shape, int x_rank,
                                          const int64_t* x_shape, int y_rank,
                                          const int64_t* y_shape, const void* cond, const void* x,
                                          const void* y, void* out, kgen_stream_t stream);

/* ---- top-k family ------------------------------------------------------- */
/* values, indices = torch.topk(x, k, dim=-1, largest, sorted) for a
 * contiguous batch x n tensor x: values (batch x k, x's dtype) and indices
 * (batch x k, int64).  dtype float32, float16, bfloat16, float64 or int32.
 * Order as PyTorch's: NaN above +inf (first for largest, last for smallest),
 * -0.0 below +0.0; among equal values the lower index wins.  sorted != 0:
 * by value (best first), equal values by ascending index.  sorted == 0:
 * the values strictly better than the k-th first, then those equal to it,
 * each in ascending index order.  Results are bitwise the same on every run.
 * k == 0 or batch == 0 is a no-op; k < 0 and k > n are errors naming k;
 * n < 2^32.  Outputs may not overlap x, each other or the workspace.
 * workspace: workspace_bytes device bytes (any content) of at least what
 * kgen_topk_workspace_size gives for the same arguments (often 0: NULL is
 * fine then); nothing is allocated on the call's path. */
KGEN_API kgen_status_t kgen_topk(kgen_dtype_t dtype, int64_t batch, int64_t n, int64_t k,
                                 int largest, int sorted, const void* x, void* values,
                                 int64_t* indices, void* workspace, size_t workspace_bytes,
                                 kgen_stream_t stream);
/* The workspace kgen_topk (variant NULL) or kgen_topk_variant with this
 * variant needs for these arguments on the current device.  This query and
 * kgen_topk_selected read x only for its alignment and do not ask CUDA
 * whether it is device memory (kgen_topk does): they take no stream, so
 * they cannot tell a capture in progress, and a workspace is often sized
 * while one is. */
KGEN_API kgen_status_t kgen_topk_workspace_size(const char* variant, kgen_dtype_t dtype,
                                                int64_t batch, int64_t n, int64_t k, int largest,
                                                int sorted, const void* x, size_t* bytes);
/* The variant kgen_topk would run ("" for an empty problem). */
KGEN_API kgen_status_t kgen_topk_selected(kgen_dtype_t dtype, int64_t batch, int64_t n, int64_t k,
                                          int largest, int sorted, const void* x,
                                          const char** variant);
/* kgen_topk with a chosen variant (NULL selects as kgen_topk does); a
 * variant that is not compiled in, or that cannot run this problem, gives
 * KGEN_ERROR_UNSUPPORTED. */
KGEN_API kgen_status_t kgen_topk_variant(const char* variant, kgen_dtype_t dtype, int64_t batch,
                                         int64_t n, int64_t k, int largest, int sorted,
                                         const void* x, void* values, int64_t* indices,
                                         void* workspace, size_t workspace_bytes,
                                         kgen_stream_t stream);

/* ---- registry introspection -------------------------------------------- */
KGEN_API int64_t kgen_variant_count(void);
/* NULL when index is out of range */
KGEN_API const char* kgen_variant_name(int64_t index);
KGEN_API const char* kgen_variant_family(int64_t index);
/* The build's arch list, oldest first ("sm_90" or "sm_90,sm_100,sm_120":
 * SASS for each, PTX for the last) and level ("default", "full", "tuned").
 * On a device that runs none of that code (an sm_80 GPU and an sm_90
 * build, say) every entry point gives KGEN_ERROR_UNSUPPORTED naming the
 * device's arch and the build's; a *_variant call naming a variant whose
 * kernels need a newer arch than the code the device runs gives
 * KGEN_ERROR_UNSUPPORTED naming both, and selection never picks one. */
KGEN_API const char* kgen_build_arch(void);
KGEN_API const char* kgen_build_level(void);
/* The hash of the generator and templates the kernels were generated from:
 * a tuning database measured on other kernels is stale. */
KGEN_API const char* kgen_generator_hash(void);
/* The tuning database selection uses on the current device, e.g.
 * "NVIDIA H100 80GB HBM3 (132 SMs), compiled in"; "" when none applies (no
 * database of this arch, KGEN_TUNING_DB=off, or no device).  Selection
 * then uses the families' heuristics.  KGEN_TUNING_DB=path (read once, at
 * the first selection) replaces the compiled-in databases. */
KGEN_API const char* kgen_tuning_database(void);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* KGEN_H */
