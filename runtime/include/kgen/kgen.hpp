// kgen C++ API: a thin layer over kgen.h that turns statuses into
// kgen::Error exceptions (thrown here, in the caller's code, never inside the
// library) and maps C++ element types to dtypes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kgen/kgen.h"

#if defined(__CUDACC__) || __has_include(<cuda_fp16.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define KGEN_HAVE_CUDA_HALF 1
#endif

namespace kgen {

class Error : public std::runtime_error {
 public:
  Error(kgen_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  kgen_status_t status() const noexcept { return status_; }

 private:
  kgen_status_t status_;
};

inline void check(kgen_status_t status) {
  if (status != KGEN_OK) throw Error(status, kgen_last_error());
}

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr kgen_dtype_t value = KGEN_FLOAT32; };
template <> struct dtype_of<double> { static constexpr kgen_dtype_t value = KGEN_FLOAT64; };
template <> struct dtype_of<int32_t> { static constexpr kgen_dtype_t value = KGEN_INT32; };
template <> struct dtype_of<int64_t> { static constexpr kgen_dtype_t value = KGEN_INT64; };
template <> struct dtype_of<bool> { static constexpr kgen_dtype_t value = KGEN_BOOL; };
template <> struct dtype_of<uint8_t> { static constexpr kgen_dtype_t value = KGEN_UINT8; };
#ifdef KGEN_HAVE_CUDA_HALF
template <> struct dtype_of<__half> { static constexpr kgen_dtype_t value = KGEN_FLOAT16; };
template <> struct dtype_of<__nv_bfloat16> { static constexpr kgen_dtype_t value = KGEN_BFLOAT16; };
#endif

// Untyped: the dtype is an argument.
inline void softmax(kgen_dtype_t dtype, int64_t rows, int64_t cols, const void* x, void* y,
                    kgen_stream_t stream = nullptr) {
  check(kgen_softmax(dtype, rows, cols, x, y, stream));
}
inline void log_softmax(kgen_dtype_t dtype, int64_t rows, int64_t cols, const void* x, void* y,
                        kgen_stream_t stream = nullptr) {
  check(kgen_log_softmax(dtype, rows, cols, x, y, stream));
}

// Typed: the dtype follows from T.
template <class T>
void softmax(int64_t rows, int64_t cols, const T* x, T* y, kgen_stream_t stream = nullptr) {
  softmax(dtype_of<T>::value, rows, cols, x, y, stream);
}
template <class T>
void log_softmax(int64_t rows, int64_t cols, const T* x, T* y, kgen_stream_t stream = nullptr) {
  log_softmax(dtype_of<T>::value, rows, cols, x, y, stream);
}

// Over the axis of x seen as (outer, axis, inner): any dim, no transpose.
template <class T>
void softmax_dim(bool log, int64_t outer, int64_t axis, int64_t inner, const T* x, T* y,
                 kgen_stream_t stream = nullptr) {
  check(kgen_softmax_dim(log, dtype_of<T>::value, outer, axis, inner, x, y, stream));
}

// Backward from the forward's output y and dy (inner = 1: the last dim).
template <class T>
void softmax_backward(bool log, int64_t outer, int64_t axis, int64_t inner, const T* y, const T* dy, T* dx,
                      kgen_stream_t stream = nullptr) {
  check(kgen_softmax_backward_dim(log, dtype_of<T>::value, outer, axis, inner, y, dy, dx, stream));
}

// y = softmax(scale * x + mask) over keys of x (batch, heads, queries, keys).
template <class T>
void softmax_masked(int64_t batch, int64_t heads, int64_t queries, int64_t keys, const T* x,
                    const kgen_softmax_mask_t& mask, T* y, kgen_stream_t stream = nullptr) {
  check(kgen_softmax_masked(dtype_of<T>::value, batch, heads, queries, keys, x, &mask, y, stream));
}

// out = op over the middle axis of x seen as (outer, reduce, inner); out is
// outer x inner elements of the dtype (int64 for argmax / argmin).
inline void reduce(kgen_reduce_op_t op, kgen_dtype_t dtype, int64_t outer, int64_t reduce,
                   int64_t inner, const void* x, void* out, kgen_stream_t stream = nullptr) {
  check(kgen_reduce(op, dtype, outer, reduce, inner, x, out, stream));
}
template <class T>
void reduce(kgen_reduce_op_t op, int64_t outer, int64_t reduce_, int64_t inner, const T* x, void* out,
            kgen_stream_t stream = nullptr) {
  reduce(op, dtype_of<T>::value, outer, reduce_, inner, x, out, stream);
}

// dst = src.permute(perm).contiguous(); shape and perm have rank entries.
inline void permute(size_t elem_size, int rank, const int64_t* shape, const int* perm,
                    const void* src, void* dst, kgen_stream_t stream = nullptr) {
  check(kgen_permute(elem_size, rank, shape, perm, src, dst, stream));
}
template <class T>
void permute(int rank, const int64_t* shape, const int* perm, const T* src, T* dst,
             kgen_stream_t stream = nullptr) {
  permute(sizeof(T), rank, shape, perm, src, dst, stream);
}

// dst = src.expand(dst_shape).contiguous() (-1 keeps a size of src).
inline void expand(kgen_dtype_t dtype, int src_rank, const int64_t* src_shape, int dst_rank,
                   const int64_t* dst_shape, const void* src, void* dst, kgen_stream_t stream = nullptr) {
  check(kgen_expand(dtype, src_rank, src_shape, dst_rank, dst_shape, src, dst, stream));
}
template <class T>
void expand(int src_rank, const int64_t* src_shape, int dst_rank, const int64_t* dst_shape, const T* src,
            T* dst, kgen_stream_t stream = nullptr) {
  expand(dtype_of<T>::value, src_rank, src_shape, dst_rank, dst_shape, src, dst, stream);
}

// values, indices = torch.topk(x, k, -1, largest, sorted) over the rows of a
// contiguous batch x n tensor; workspace_bytes from topk_workspace_size.
inline size_t topk_workspace_size(kgen_dtype_t dtype, int64_t batch, int64_t n, int64_t k,
                                  bool largest, bool sorted, const void* x) {
  size_t bytes = 0;
  check(kgen_topk_workspace_size(nullptr, dtype, batch, n, k, largest, sorted, x, &bytes));
  return bytes;
}
inline void topk(kgen_dtype_t dtype, int64_t batch, int64_t n, int64_t k, bool largest, bool sorted,
                 const void* x, void* values, int64_t* indices, void* workspace,
                 size_t workspace_bytes, kgen_stream_t stream = nullptr) {
  check(kgen_topk(dtype, batch, n, k, largest, sorted, x, values, indices, workspace,
                  workspace_bytes, stream));
}
template <class T>
void topk(int64_t batch, int64_t n, int64_t k, bool largest, bool sorted, const T* x, T* values,
          int64_t* indices, void* workspace, size_t workspace_bytes, kgen_stream_t stream = nullptr) {
  topk(dtype_of<T>::value, batch, n, k, largest, sorted, x, values, indices, workspace,
       workspace_bytes, stream);
}

// out = torch.where(cond, x, y) with broadcasting; cond is bool or uint8
// (nonzero selects x); out has the broadcast shape (kgen_broadcast_shape).
inline void where(kgen_dtype_t dtype, int cond_rank, const int64_t* cond_shape, int x_rank,
                  const int64_t* x_shape, int y_rank, const int64_t* y_shape, const void* cond,
                  const void* x, const void* y, void* out, kgen_stream_t stream = nullptr) {
  check(kgen_where(dtype, cond_rank, cond_shape, x_rank, x_shape, y_rank, y_shape, cond, x, y, out,
                   stream));
}
template <class T>
void where(int cond_rank, const int64_t* cond_shape, int x_rank, const int64_t* x_shape, int y_rank,
           const int64_t* y_shape, const void* cond, const T* x, const T* y, T* out,
           kgen_stream_t stream = nullptr) {
  where(dtype_of<T>::value, cond_rank, cond_shape, x_rank, x_shape, y_rank, y_shape, cond, x, y, out,
        stream);
}

inline std::string version() { return kgen_version(); }

}  // namespace kgen
