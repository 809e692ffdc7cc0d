// Warp-level pieces of top-k: bitonic networks over keys held 32*C a warp
// (position p = j*32 + lane in register j of a lane), used by the queue
// tier's running list and by the block tier's small finishes.
#pragma once

#include "kgen/device/topk_block.cuh"

namespace kgen {
namespace device {
namespace topk {

template <class Key> __device__ __forceinline__ Key shfl_xor_key(Key v, int m) {
  if constexpr (sizeof(Key) == 16) {
    const uint64_t lo = __shfl_xor_sync(kFull, static_cast<uint64_t>(v), m);
    const uint64_t hi = __shfl_xor_sync(kFull, static_cast<uint64_t>(v >> 64), m);
    return (Key(hi) << 64) | Key(lo);
  } else {
    return __shfl_xor_sync(kFull, v, m);
  }
}
template <class Key> __device__ __forceinline__ Key shfl_key(Key v, int src) {
  if constexpr (sizeof(Key) == 16) {
    const uint64_t lo = __shfl_sync(kFull, static_cast<uint64_t>(v), src);
    const uint64_t hi = __shfl_sync(kFull, static_cast<uint64_t>(v >> 64), src);
    return (Key(hi) << 64) | Key(lo);
  } else {
    return __shfl_sync(kFull, v, src);
  }
}

template <class Key> __device__ __forceinline__ Key kmax(Key a, Key b) { return a > b ? a : b; }
template <class Key> __device__ __forceinline__ Key kmin(Key a, Key b) { return a > b ? b : a; }

// One bitonic step over the 32*C keys of a warp, position p = j*32 + lane:
// partners p and p ^ stride; blocks of `size` alternate direction so that
// the whole ends descending.
template <int C, class Key>
__device__ __forceinline__ void bitonic_step(Key (&v)[C], int size, int stride) {
  const int lane = threadIdx.x % 32;
  if (stride >= 32) {
    const int js = stride / 32;
#pragma unroll
    for (int j = 0; j < C; ++j) {
      if (j & js) continue;
      const bool desc = (((j * 32) + lane) & size) == 0;
      const Key a = v[j], b = v[j + js];
      v[j] = desc ? kmax(a, b) : kmin(a, b);
      v[j + js] = desc ? kmin(a, b) : kmax(a, b);
    }
  } else {
#pragma unroll
    for (int j = 0; j < C; ++j) {
      const Key o = shfl_xor_key(v[j], stride);
      const bool desc = (((j * 32) + lane) & size) == 0, lower = (lane & stride) == 0;
      v[j] = lower == desc ? kmax(v[j], o) : kmin(v[j], o);
    }
  }
}

template <int C, class Key> __device__ __forceinline__ void warp_sort(Key (&v)[C]) {
#pragma unroll
  for (int size = 2; size <= 32 * C; size *= 2)
#pragma unroll
    for (int stride = size / 2; stride > 0; stride /= 2) bitonic_step<C>(v, size, stride);
}

// v is bitonic: sorts it descending
template <int C, class Key> __device__ __forceinline__ void warp_merge(Key (&v)[C]) {
#pragma unroll
  for (int stride = 16 * C; stride > 0; stride /= 2) bitonic_step<C>(v, 32 * C, stride);
}

template <int C, class Key> __device__ __forceinline__ Key warp_at(const Key (&v)[C], int p) {
  Key mine = Key(0);
#pragma unroll
  for (int j = 0; j < C; ++j)
    if (j == p / 32) mine = v[j];
  return shfl_key(mine, p % 32);
}

// Merges one key per lane into the warp's sorted list.
template <int C, class Key> __device__ __forceinline__ void warp_insert(Key (&list)[C], Key key) {
  Key one[1] = {key};
  warp_sort<1>(one);
  const Key rev = shfl_key(one[0], 31 - threadIdx.x % 32);
  list[C - 1] = kmax(list[C - 1], rev);
  warp_merge<C>(list);
}

// The first k of 32*C keys sorted in a warp (position p = j*32 + lane),
// ordered as finish_candidates orders them and written out.
template <int C, class T>
__device__ __forceinline__ void emit_warp_sorted(key_t<T> (&v)[C], const T* row, T* values, int64_t* indices,
                                                 int64_t row_id, const Output& o) {
  using Key = key_t<T>;
  const int lane = threadIdx.x % 32, k = static_cast<int>(o.k);
  if (!o.sorted) {
    const bits_t<T> kth = key_order<T>(warp_at<C>(v, k - 1));
#pragma unroll
    for (int j = 0; j < C; ++j) v[j] = j * 32 + lane < k ? unsorted_key<T>(v[j], kth) : Key(0);
    warp_sort<C>(v);
  }
#pragma unroll
  for (int j = 0; j < C; ++j)
    if (j * 32 + lane < k) emit(row, values, indices, row_id * o.k + j * 32 + lane, v[j]);
}

// With m <= 32*C candidate keys of a row in shared memory, among them the
// row's k best (k <= 32*C): one warp sorts them in registers and writes the
// first k.  Called by one warp.
template <int C, class T>
__device__ void finish_warp(const key_t<T>* keys, int m, const T* row, T* values, int64_t* indices,
                            int64_t row_id, const Output& o) {
  using Key = key_t<T>;
  const int lane = threadIdx.x % 32;
  Key v[C];
#pragma unroll
  for (int j = 0; j < C; ++j) v[j] = j * 32 + lane < m ? keys[j * 32 + lane] : Key(0);
  warp_sort<C>(v);
  emit_warp_sorted<C, T>(v, row, values, indices, row_id, o);
}

// finish_warp with the fewest registers that hold m <= 128 keys.  Called by one warp.
template <class T>
__device__ __forceinline__ void finish_by_warp(const key_t<T>* keys, int m, const T* row, T* values,
                                               int64_t* indices, int64_t row_id, const Output& o) {
  if (m <= 32) finish_warp<1, T>(keys, m, row, values, indices, row_id, o);
  else if (m <= 64) finish_warp<2, T>(keys, m, row, values, indices, row_id, o);
  else finish_warp<4, T>(keys, m, row, values, indices, row_id, o);
}

}  // namespace topk
}  // namespace device
}  // namespace kgen
