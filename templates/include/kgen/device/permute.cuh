// Permute kernels and their host launchers.  Every kernel moves units of
// `U` (1-16 bytes: the simplified problem's movement size); generated
// variants instantiate the launchers (templates/permute_*.cu.j2).
//   elem  per-unit index math in dst order (rank R fixed, or 0: read at run time)
//   row   rows of the preserved innermost dim, the row's source offset
//         computed once per row
//   tile  shared-memory transpose of ti x tj tiles with pack x pack register
//         transposes, batch dims decomposed once per tile
#pragma once

#include <algorithm>

#include "kgen/device/common.cuh"
#include "kgen/device/fastdiv.cuh"
#include "permute/problem.hpp"

namespace kgen {
namespace device {
namespace permute {

using kgen::permute::kMaxDims;
using kgen::permute::Problem;
using kgen::permute::Shape;

constexpr int kBlock = 256;  // threads of every permute kernel (generator/ops/permute.py)

// ---------------------------------------------------------------- elem ---
constexpr int kElemUnroll = 4;  // units in flight a thread

struct ElemArgs {
  int rank;
  int64_t count;                 // units
  int64_t dst_dims[kMaxDims];    // int64 path
  FastDiv div[kMaxDims];         // int32 path: the same dims
  int64_t src_stride[kMaxDims];  // src stride of each dst dim
};

// Source offset of the unit at dst index n; Index is uint32_t (every
// offset < 2^31) or int64_t.
template <int R, class Index>
__device__ __forceinline__ Index elem_source(const ElemArgs& a, Index n) {
  constexpr int kDims = R > 0 ? R : kMaxDims;
  Index off = 0;
#pragma unroll
  for (int k = kDims - 1; k >= 1; --k) {
    if (R == 0 && k >= a.rank) continue;
    Index q, r;
    if constexpr (sizeof(Index) == 4) {
      q = a.div[k].divmod(n, &r);
    } else {
      q = n / a.dst_dims[k];
      r = n - q * a.dst_dims[k];
    }
    off += r * static_cast<Index>(a.src_stride[k]);
    n = q;
  }
  return off + n * static_cast<Index>(a.src_stride[0]);
}

template <class U, int R, class Index>
__global__ void __launch_bounds__(kBlock) elem_kernel(const U* __restrict__ src, U* __restrict__ dst,
                                                      ElemArgs a) {
  const Index base = static_cast<Index>(blockIdx.x) * (kBlock * kElemUnroll) + threadIdx.x;
  const Index count = static_cast<Index>(a.count);
  U v[kElemUnroll];
#pragma unroll
  for (int k = 0; k < kElemUnroll; ++k) {
    const Index n = base + k * kBlock;
    if (n < count) v[k] = src[elem_source<R>(a, n)];
  }
#pragma unroll
  for (int k = 0; k < kElemUnroll; ++k) {
    const Index n = base + k * kBlock;
    if (n < count) dst[n] = v[k];
  }
}

// ----------------------------------------------------------------- row ---
struct RowArgs {
  int outer_rank;                // dst dims before the innermost
  uint32_t rows;
  int64_t len;                   // units per row
  FastDiv div[kMaxDims];         // the outer dst dims
  int64_t src_stride[kMaxDims];  // src stride of each outer dst dim
};

// grid.x: groups of kBlock / G rows; grid.y: chunks of G x UNROLL units of
// each row (a grid-stride loop past 65535 chunks), so few long rows still
// fill the GPU.
template <class U, int G, int UNROLL>
__global__ void __launch_bounds__(kBlock) row_kernel(const U* __restrict__ src, U* __restrict__ dst,
                                                     RowArgs a) {
  constexpr int kRows = kBlock / G;
  const uint32_t row = blockIdx.x * kRows + threadIdx.x / G;
  if (row >= a.rows) return;
  uint32_t n = row;
  int64_t off = 0;
  for (int k = a.outer_rank - 1; k >= 1; --k) {
    uint32_t r;
    n = a.div[k].divmod(n, &r);
    off += r * a.src_stride[k];
  }
  off += n * a.src_stride[0];
  const U* __restrict__ s = src + off;
  U* __restrict__ d = dst + static_cast<int64_t>(row) * a.len;
  constexpr int kChunk = G * UNROLL;
  for (int64_t u = static_cast<int64_t>(blockIdx.y) * kChunk + threadIdx.x % G; u < a.len;
       u += static_cast<int64_t>(gridDim.y) * kChunk) {
    U v[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k)
      if (u + k * G < a.len) v[k] = s[u + k * G];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k)
      if (u + k * G < a.len) d[u + k * G] = v[k];
  }
}

// ---------------------------------------------------------------- tile ---
struct TileArgs {
  uint32_t ni, nj;               // extents of I (src-contiguous) and J (dst-contiguous)
  FastDiv nj1;                   // J = (j2, j1): dst's innermost dim and the one grouped with it
  int64_t src_stride_j, src_stride_j2, dst_stride_i;
  FastDiv tiles_i, tiles_j;
  int batch_rank;
  FastDiv batch_div[kMaxDims];
  int64_t batch_src[kMaxDims], batch_dst[kMaxDims];
};

// Shared-memory layout: TJ rows of TI / V chunks of V units.  Chunk c of row
// j is stored at c ^ swizzle(j), so that the chunks one access of the write
// phase reads (same chunk, rows V apart) land in distinct banks, as the
// plain rows of the read phase do.
template <class U, int TI, int TJ, int V>
struct TileLayout {
  static constexpr int kChunks = TI / V;                     // chunks a row
  static constexpr int kChunkBytes = V * static_cast<int>(sizeof(U));
  // lanes one shared-memory wavefront serves: 128 bytes of chunks
  static constexpr int kWave = kChunkBytes >= 128 ? 1 : std::min(32, 128 / kChunkBytes);
  static constexpr int kSwizzle = std::min(kChunks, kWave);
  static constexpr int kLanesJ = TJ / V;                     // write-phase lanes a dst row
  // the write phase's lanes of one wavefront span kWave / kLanesJ chunks
  static constexpr int kStep = kLanesJ >= kWave ? 1 : kWave / kLanesJ;
  static __device__ __forceinline__ int at(int j, int c) {
    return c ^ (((j / V) * kStep) & (kSwizzle - 1));
  }
};

template <class U, int TI, int TJ, int V>
__global__ void __launch_bounds__(kBlock) tile_kernel(const U* __restrict__ src, U* __restrict__ dst,
                                                      TileArgs a) {
  using P = Pack<U, V>;
  using L = TileLayout<U, TI, TJ, V>;
  __shared__ P tile[TJ][L::kChunks];

  uint32_t ti, tj, r;
  uint32_t b = a.tiles_j.divmod(a.tiles_i.divmod(blockIdx.x, &ti), &tj);
  int64_t src_base = 0, dst_base = 0;
  for (int k = 0; k < a.batch_rank; ++k) {
    b = a.batch_div[k].divmod(b, &r);
    src_base += r * a.batch_src[k];
    dst_base += r * a.batch_dst[k];
  }
  const uint32_t i0 = ti * TI, j0 = tj * TJ;
  const int ni = static_cast<int>(min(static_cast<uint32_t>(TI), a.ni - i0));
  const int nj = static_cast<int>(min(static_cast<uint32_t>(TJ), a.nj - j0));
  const U* __restrict__ s = src + src_base + i0;
  U* __restrict__ d = dst + dst_base + static_cast<int64_t>(i0) * a.dst_stride_i + j0;

  // read: chunk c of row j, c fastest (rows of src are contiguous)
  constexpr int kReads = TJ * L::kChunks / kBlock;
  P v[kReads];
#pragma unroll
  for (int it = 0; it < kReads; ++it) {
    const int task = it * kBlock + threadIdx.x, j = task / L::kChunks, c = task % L::kChunks;
    if (j < nj && c * V < ni) {
      uint32_t j1;
      const uint32_t j2 = a.nj1.divmod(j0 + j, &j1);
      v[it] = *reinterpret_cast<const P*>(s + j2 * a.src_stride_j2 + j1 * a.src_stride_j + c * V);
    }
  }
#pragma unroll
  for (int it = 0; it < kReads; ++it) {
    const int task = it * kBlock + threadIdx.x, j = task / L::kChunks, c = task % L::kChunks;
    if (j < nj && c * V < ni) tile[j][L::at(j, c)] = v[it];
  }
  __syncthreads();

  // write: the V x V block (chunk ci, dst chunk cj), cj fastest (rows of dst
  // are contiguous); V chunks read, transposed in registers, V packs stored
  constexpr int kWrites = L::kChunks * L::kLanesJ;
#pragma unroll
  for (int it = 0; it < (kWrites + kBlock - 1) / kBlock; ++it) {
    const int task = it * kBlock + threadIdx.x;
    if (kWrites % kBlock != 0 && task >= kWrites) break;
    const int ci = task / L::kLanesJ, cj = task % L::kLanesJ;
    if (cj * V >= nj || ci * V >= ni) continue;
    P in[V];
#pragma unroll
    for (int x = 0; x < V; ++x) in[x] = tile[cj * V + x][L::at(cj * V + x, ci)];
#pragma unroll
    for (int y = 0; y < V; ++y) {
      P out;
#pragma unroll
      for (int x = 0; x < V; ++x) out.v[x] = in[x].v[y];
      if (ci * V + y < ni)
        *reinterpret_cast<P*>(d + static_cast<int64_t>(ci * V + y) * a.dst_stride_i + cj * V) = out;
    }
  }
}

// ----------------------------------------------------------- launchers ---
// A copy-sized shape (rank 0 or 1) seen as rank 1.
inline Shape at_least_rank1(Shape s) {
  if (s.rank == 0) {
    s.rank = 1;
    s.dims[0] = 1;
    s.perm[0] = 0;
  }
  return s;
}

template <class U, int R, bool WIDE>
cudaError_t launch_elem(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Shape s = at_least_rank1(p.shape);
  ElemArgs a{};
  a.rank = s.rank;
  a.count = kgen::permute::units(s);
  int64_t ss[kMaxDims];
  kgen::permute::src_strides(s, ss);
  for (int k = 0; k < s.rank; ++k) {
    a.dst_dims[k] = s.dims[s.perm[k]];
    a.src_stride[k] = ss[s.perm[k]];
    if (!WIDE) a.div[k] = FastDiv(static_cast<uint32_t>(a.dst_dims[k]));
  }
  const int64_t blocks = kgen::permute::div_up(a.count, kBlock * kElemUnroll);
  using Index = typename std::conditional<WIDE, int64_t, uint32_t>::type;
  elem_kernel<U, R, Index><<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(
      static_cast<const U*>(p.src), static_cast<U*>(p.dst), a);
  return cudaGetLastError();
}

template <class U, int G, int UNROLL>
cudaError_t launch_row(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Shape& s = p.shape;
  RowArgs a{};
  a.outer_rank = s.rank - 1;
  a.len = s.dims[s.rank - 1];
  a.rows = static_cast<uint32_t>(kgen::permute::units(s) / a.len);
  int64_t ss[kMaxDims];
  kgen::permute::src_strides(s, ss);
  for (int k = 0; k < a.outer_rank; ++k) {
    a.div[k] = FastDiv(static_cast<uint32_t>(s.dims[s.perm[k]]));
    a.src_stride[k] = ss[s.perm[k]];
  }
  const int64_t chunks = kgen::permute::div_up(a.len, int64_t{G} * UNROLL);
  const dim3 grid(static_cast<unsigned>(kgen::permute::div_up(a.rows, kBlock / G)),
                  static_cast<unsigned>(std::min<int64_t>(chunks, 65535)));
  row_kernel<U, G, UNROLL><<<grid, kBlock, 0, stream>>>(static_cast<const U*>(p.src),
                                                         static_cast<U*>(p.dst), a);
  return cudaGetLastError();
}

template <class U, int TI, int TJ, int V>
cudaError_t launch_tile(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const kgen::permute::TileView t = kgen::permute::tile_view(p.shape);
  TileArgs a{};
  a.ni = static_cast<uint32_t>(t.ni);
  a.nj = static_cast<uint32_t>(t.nj);
  a.nj1 = FastDiv(static_cast<uint32_t>(t.nj1));
  a.src_stride_j = t.src_stride_j;
  a.src_stride_j2 = t.src_stride_j2;
  a.dst_stride_i = t.dst_stride_i;
  const int64_t tiles_i = kgen::permute::div_up(t.ni, TI), tiles_j = kgen::permute::div_up(t.nj, TJ);
  a.tiles_i = FastDiv(static_cast<uint32_t>(tiles_i));
  a.tiles_j = FastDiv(static_cast<uint32_t>(tiles_j));
  a.batch_rank = t.batch_rank;
  for (int k = 0; k < t.batch_rank; ++k) {
    a.batch_div[k] = FastDiv(static_cast<uint32_t>(t.batch_dims[k]));
    a.batch_src[k] = t.batch_src[k];
    a.batch_dst[k] = t.batch_dst[k];
  }
  const int64_t blocks = tiles_i * tiles_j * t.batches;
  tile_kernel<U, TI, TJ, V><<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(
      static_cast<const U*>(p.src), static_cast<U*>(p.dst), a);
  return cudaGetLastError();
}

}  // namespace permute
}  // namespace device
}  // namespace kgen
