// Softmax / log-softmax over the last dim: the device functions and kernels of
// every tier, and their host launchers.  Generated variants instantiate these
// with fixed parameters (templates/softmax_*.cu.j2); no logic lives there.
#pragma once

#include <mutex>

#include "kgen/device/common.cuh"
#include "kgen/device/reduce.cuh"
#include "softmax/problem.hpp"

namespace kgen {
namespace device {
namespace softmax {

// y from x once the row's max and sum of exp(x - max) are known.
template <bool LOG, class C>
__device__ __forceinline__ C finish(C x_minus_max, C sum_or_log_sum) {
  return LOG ? x_minus_max - sum_or_log_sum : kexp(x_minus_max) / sum_or_log_sum;
}

// ---------------------------------------------------------------- warp tier
// A group of G lanes owns R rows; lane l of the group holds columns
// (i * G + l) * P + j for pack i < C / P, so each pack load is coalesced
// across the group.  Padding lanes hold -inf (exp gives 0).  All groups of a
// warp iterate the same number of times (rows past the end are computed on
// -inf and not stored) so the shuffles always see the whole warp.
template <class T, int P, int C, int G, int R, bool PAD, bool LOG, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    warp_kernel(const T* x, T* y, int64_t rows, int cols) {
  using Cm = compute_t<T>;
  static_assert(C % P == 0 && 32 % G == 0, "bad warp tier shape");
  constexpr int kPacks = C / P;
  constexpr int kRowsPerWarp = (32 / G) * R;
  const int lane = threadIdx.x % 32;
  const int g_lane = lane % G;
  const int64_t warp = int64_t{blockIdx.x} * (BLOCK / 32) + threadIdx.x / 32;
  const int64_t warps = int64_t{gridDim.x} * (BLOCK / 32);

  Cm buf[R][C];
  for (int64_t base = warp * kRowsPerWarp; base < rows; base += warps * kRowsPerWarp) {
    const int64_t row0 = base + (lane / G) * R;
    Cm mx[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool row_ok = row0 + r < rows;
      const T* xr = x + (row0 + r) * cols;
      mx[r] = neg_inf<Cm>();
#pragma unroll
      for (int i = 0; i < kPacks; ++i) {
        const int col = (i * G + g_lane) * P;
        if (row_ok && (!PAD || col < cols)) {
          load_pack<T, P>(xr + col, &buf[r][i * P]);
#pragma unroll
          for (int j = 0; j < P; ++j) mx[r] = MaxOp()(mx[r], buf[r][i * P + j]);
        } else {
#pragma unroll
          for (int j = 0; j < P; ++j) buf[r][i * P + j] = neg_inf<Cm>();
        }
      }
    }
    Cm sum[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      mx[r] = group_all_reduce<G>(mx[r], MaxOp());
      sum[r] = 0;
#pragma unroll
      for (int k = 0; k < C; ++k) {
        buf[r][k] -= mx[r];
        if (LOG) {
          sum[r] += kexp(buf[r][k]);
        } else {
          buf[r][k] = kexp(buf[r][k]);
          sum[r] += buf[r][k];
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      sum[r] = group_all_reduce<G>(sum[r], SumOp());
      if (row0 + r >= rows) continue;
      const Cm s = LOG ? klog(sum[r]) : sum[r];
      T* yr = y + (row0 + r) * cols;
#pragma unroll
      for (int i = 0; i < kPacks; ++i) {
        const int col = (i * G + g_lane) * P;
        if (PAD && col >= cols) continue;
        Cm out[P];
#pragma unroll
        for (int j = 0; j < P; ++j)
          out[j] = LOG ? buf[r][i * P + j] - s : buf[r][i * P + j] / s;
        store_pack<T, P>(yr + col, out);
      }
    }
  }
}

// Packs each thread loads before it uses any: enough independent 16-byte
// loads in flight to cover DRAM latency when an SM holds only one or two
// rows (one load per thread at a time gave 24-42% of copy for 32K-column rows
// on an H100; bench/NOTES.md v2).
template <class T, int P, int BYTES>
constexpr int kBatchPacks = BYTES / static_cast<int>(sizeof(T) * P) < 1 ? 1 : BYTES / static_cast<int>(sizeof(T) * P);

// ---------------------------------------------------------------- smem tier
// One block per row (grid-stride over rows); the row is kept in shared memory
// in its own dtype (half types take half the space), laid out pack-major
// (element j of pack k at j * packs + k) so that consecutive threads hit
// consecutive banks.  exp is recomputed in the last pass instead of stored.
// Full residency (2048 threads per SM) when shared memory allows: at 45-56
// registers a thread, blocks of 1024 fitted once per SM and smem/uncached
// rows ran at 40-52% of copy instead of 86-94% (H100, bench/NOTES.md v2).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
constexpr int kThreadsPerSm = 1536;  // sm_86, sm_87, sm_89
#else
constexpr int kThreadsPerSm = 2048;  // sm_80, sm_90
#endif
template <int BLOCK>
constexpr int kMinBlocks = kThreadsPerSm / BLOCK < 1 ? 1 : kThreadsPerSm / BLOCK;

template <class T, int P, bool LOG, int BLOCK>
__global__ void __launch_bounds__(BLOCK, kMinBlocks<BLOCK>)
    smem_kernel(const T* x, T* y, int64_t rows, int cols) {
  using Cm = compute_t<T>;
  constexpr int U = kBatchPacks<T, P, 32>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* buf = reinterpret_cast<T*>(smem_raw);
  const int packs = cols / P;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    Cm thread_max = neg_inf<Cm>();
    for (int k0 = threadIdx.x; k0 < packs; k0 += BLOCK * U) {
      Pack<T, P> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) v[u] = *reinterpret_cast<const Pack<T, P>*>(xr + (k0 + u * BLOCK) * P);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs)
#pragma unroll
          for (int j = 0; j < P; ++j) {
            buf[j * packs + k0 + u * BLOCK] = v[u].v[j];
            thread_max = MaxOp()(thread_max, to_compute(v[u].v[j]));
          }
    }
    const Cm mx = block_all_reduce<BLOCK>(thread_max, MaxOp(), neg_inf<Cm>());
    Cm thread_sum = 0;
    for (int k = threadIdx.x; k < packs; k += BLOCK)
#pragma unroll
      for (int j = 0; j < P; ++j) thread_sum += kexp(to_compute(buf[j * packs + k]) - mx);
    const Cm sum = block_all_reduce<BLOCK>(thread_sum, SumOp(), Cm(0));
    // one division per row, not per element
    const Cm s = LOG ? klog(sum) : Cm(1) / sum;
    T* yr = y + row * cols;
    for (int k = threadIdx.x; k < packs; k += BLOCK) {
      Cm out[P];
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const Cm d = to_compute(buf[j * packs + k]) - mx;
        out[j] = LOG ? d - s : kexp(d) * s;
      }
      store_pack<T, P>(yr + k * P, out);
    }
  }
}

// ------------------------------------------------------------ uncached tier
// Running (max, sum of exp(x - max)) of a stream of values.  -inf entries
// contribute 0 without turning the sum into NaN (exp(-inf - -inf)); NaN
// propagates through the sum; a row of only -inf ends with sum 0 and so
// gives NaN like PyTorch.
template <class C>
struct Online {
  C m, s;
  __device__ __forceinline__ static C safe(C m) { return m == neg_inf<C>() ? C(0) : m; }
  __device__ __forceinline__ void add(C v) {
    if (v > m) {
      s = s * kexp(m - v) + C(1);
      m = v;
    } else {
      s += kexp(v - safe(m));
    }
  }
  __device__ __forceinline__ static Online merge(Online a, Online b) {
    const C m = a.m > b.m ? a.m : b.m;
    return Online{m, a.s * kexp(a.m - safe(m)) + b.s * kexp(b.m - safe(m))};
  }
};

template <int BLOCK, class C>
__device__ __forceinline__ Online<C> block_all_reduce_online(Online<C> v) {
  constexpr int kWarps = BLOCK / 32;
  __shared__ C pm[kWarps], ps[kWarps];
  __shared__ Online<C> result;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int d = 16; d > 0; d /= 2)
    v = Online<C>::merge(v, Online<C>{__shfl_xor_sync(0xffffffffu, v.m, d),
                                      __shfl_xor_sync(0xffffffffu, v.s, d)});
  if (lane == 0) pm[warp] = v.m, ps[warp] = v.s;
  __syncthreads();
  if (warp == 0) {
    Online<C> w = lane < kWarps ? Online<C>{pm[lane], ps[lane]} : Online<C>{neg_inf<C>(), C(0)};
#pragma unroll
    for (int d = 16; d > 0; d /= 2)
      w = Online<C>::merge(w, Online<C>{__shfl_xor_sync(0xffffffffu, w.m, d),
                                        __shfl_xor_sync(0xffffffffu, w.s, d)});
    if (lane == 0) result = w;
  }
  __syncthreads();
  const Online<C> r = result;
  __syncthreads();
  return r;
}

// One block per row, two passes over global memory: online max+sum, then
// normalise.  Any length (int64 columns).
// One 16-byte pack in flight per thread and no residency floor: the online
// update needs registers, and forcing 32 a thread spilled 200-1200 bytes;
// unbatched it reaches 60-65% of copy against its 67% ceiling (three passes
// of traffic for two counted).
template <class T, int P, bool LOG, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    uncached_kernel(const T* x, T* y, int64_t rows, int64_t cols) {
  using Cm = compute_t<T>;
  constexpr int U = kBatchPacks<T, P, 16>;
  const int64_t packs = cols / P;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    Online<Cm> st{neg_inf<Cm>(), Cm(0)};
    for (int64_t k0 = threadIdx.x; k0 < packs; k0 += int64_t{BLOCK} * U) {
      Cm v[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) load_pack<T, P>(xr + (k0 + u * BLOCK) * P, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs)
#pragma unroll
          for (int j = 0; j < P; ++j) st.add(v[u][j]);
    }
    st = block_all_reduce_online<BLOCK>(st);
    const Cm s = LOG ? klog(st.s) : Cm(1) / st.s;
    T* yr = y + row * cols;
    for (int64_t k0 = threadIdx.x; k0 < packs; k0 += int64_t{BLOCK} * U) {
      Cm v[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (k0 + u * BLOCK < packs) load_pack<T, P>(xr + (k0 + u * BLOCK) * P, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (k0 + u * BLOCK >= packs) continue;
#pragma unroll
        for (int j = 0; j < P; ++j) v[u][j] = LOG ? v[u][j] - st.m - s : kexp(v[u][j] - st.m) * s;
        store_pack<T, P>(yr + (k0 + u * BLOCK) * P, v[u]);
      }
    }
  }
}

// ------------------------------------------------------------ host launchers
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grid of at most `waves` full waves of resident blocks; kernels stride over
// the rest.
inline unsigned grid_for(int64_t blocks_needed, const DeviceInfo& d, int block, int waves) {
  const int64_t resident = int64_t{d.sm_count} * (d.max_threads_per_sm / block);
  const int64_t g = blocks_needed < resident * waves ? blocks_needed : resident * waves;
  return static_cast<unsigned>(g < 1 ? 1 : g);
}

template <class T, int P, int C, int G, int R, bool PAD>
cudaError_t launch_warp(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  constexpr int kBlock = 128;
  constexpr int kRowsPerBlock = (kBlock / 32) * (32 / G) * R;
  const unsigned grid = grid_for(ceil_div(p.rows, kRowsPerBlock), *p.device, kBlock, 32);
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int cols = static_cast<int>(p.cols);
  if (p.log)
    warp_kernel<T, P, C, G, R, PAD, true, kBlock><<<grid, kBlock, 0, stream>>>(x, y, p.rows, cols);
  else
    warp_kernel<T, P, C, G, R, PAD, false, kBlock><<<grid, kBlock, 0, stream>>>(x, y, p.rows, cols);
  return cudaGetLastError();
}

// Raises a kernel's dynamic shared memory limit to all this device allows,
// once per kernel and device (the kernel is a template argument so that each
// instantiation has its own flags).
template <auto Kernel>
cudaError_t allow_max_smem(const DeviceInfo& d) {
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  static cudaError_t result[kMaxDevices];
  if (d.ordinal < 0 || d.ordinal >= kMaxDevices) return cudaErrorInvalidDevice;
  std::call_once(once[d.ordinal], [&] {
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, Kernel);
    if (err == cudaSuccess)
      err = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(d.smem_per_block_optin - attr.sharedSizeBytes));
    result[d.ordinal] = err;
  });
  return result[d.ordinal];
}

template <class T, int P, int BLOCK>
cudaError_t launch_smem(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const DeviceInfo& d = *p.device;
  const size_t smem = static_cast<size_t>(kgen::softmax::smem_row_bytes(p, sizeof(T)));
  const int64_t resident = d.sm_count * kgen::softmax::smem_blocks_per_sm(p, BLOCK, sizeof(T));
  const unsigned grid = static_cast<unsigned>(p.rows < resident ? p.rows : resident);
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int cols = static_cast<int>(p.cols);
  constexpr auto kSoftmax = smem_kernel<T, P, false, BLOCK>;
  constexpr auto kLogSoftmax = smem_kernel<T, P, true, BLOCK>;
  if (smem > 48 * 1024) {
    cudaError_t err = p.log ? allow_max_smem<kLogSoftmax>(d) : allow_max_smem<kSoftmax>(d);
    if (err != cudaSuccess) return err;
  }
  (p.log ? kLogSoftmax : kSoftmax)<<<grid, BLOCK, smem, stream>>>(x, y, p.rows, cols);
  return cudaGetLastError();
}

template <class T, int P, int BLOCK>
cudaError_t launch_uncached(const void* problem, cudaStream_t stream) {
  const auto& p = *static_cast<const kgen::softmax::Problem*>(problem);
  const unsigned grid = grid_for(p.rows, *p.device, BLOCK, 1);
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  if (p.log)
    uncached_kernel<T, P, true, BLOCK><<<grid, BLOCK, 0, stream>>>(x, y, p.rows, p.cols);
  else
    uncached_kernel<T, P, false, BLOCK><<<grid, BLOCK, 0, stream>>>(x, y, p.rows, p.cols);
  return cudaGetLastError();
}

}  // namespace softmax
}  // namespace device
}  // namespace kgen
