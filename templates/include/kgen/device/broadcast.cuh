// Broadcast kernels (expand, where) and their host launcher.  One kernel
// over 1 (expand: src) or 3 (where: cond, x, y) inputs: each thread makes
// kUnroll packs of P output units; a pack's coordinates are computed once
// (rank R fixed at compile time, or 0: read at run time) and shared by every
// input, whose broadcast dims have stride 0.  Along the innermost dim an
// input is read whole (one vector of P units) or is one unit, repeated.
// R == 1 (flat: elementwise, fill or a mix) needs no division at all.
// Generated variants instantiate launch<> (templates/broadcast.cu.j2).
#pragma once

#include <algorithm>
#include <type_traits>

#include "broadcast/problem.hpp"
#include "kgen/device/common.cuh"
#include "kgen/device/fastdiv.cuh"

namespace kgen {
namespace device {
namespace broadcast {

using kgen::broadcast::kMaxDims;
using kgen::broadcast::kMaxInputs;
using kgen::broadcast::Layout;
using kgen::broadcast::Problem;

enum class Op { expand, where };

constexpr int kBlock = 256;  // threads of every broadcast kernel
constexpr int kUnroll = 4;   // packs in flight a thread (kgen::broadcast rules: kPacksPerBlock)

template <Op O> struct OpTraits { static constexpr int kInputs = 1; };
template <> struct OpTraits<Op::where> { static constexpr int kInputs = 3; };

struct Args {
  int rank;
  int64_t packs;                          // whole packs of P units of out
  int tail;                               // rank <= 1: units after the last whole pack
  int64_t dims[kMaxDims];                 // int64 path; the innermost in packs
  FastDiv div[kMaxDims];                  // int32 path: the same dims
  int64_t stride[kMaxInputs][kMaxDims];   // in units; the innermost per pack (P or 0)
  bool whole[kMaxInputs];                 // reads P units along the innermost dim
  const void* in[kMaxInputs];
  void* out;
};

// Offsets (in units) of pack n in each of the N inputs; Index is uint32_t
// (n < 2^31: fast division) or int64_t.  Offsets are int64 either way.
template <int R, int N, class Index>
__device__ __forceinline__ void offsets(const Args& a, Index n, int64_t (&off)[N]) {
  constexpr int kDims = R > 0 ? R : kMaxDims;
#pragma unroll
  for (int i = 0; i < N; ++i) off[i] = 0;
#pragma unroll
  for (int k = kDims - 1; k >= 1; --k) {
    if (R == 0 && k >= a.rank) continue;
    Index q, r;
    if constexpr (sizeof(Index) == 4) {
      q = a.div[k].divmod(n, &r);
    } else {
      q = n / a.dims[k];
      r = n - q * a.dims[k];
    }
#pragma unroll
    for (int i = 0; i < N; ++i) off[i] += static_cast<int64_t>(r) * a.stride[i][k];
    n = q;
  }
#pragma unroll
  for (int i = 0; i < N; ++i) off[i] += static_cast<int64_t>(n) * a.stride[i][0];
}

// P units from p: one vector access when read whole, else one unit repeated
template <class T, int P>
__device__ __forceinline__ void load_units(const void* base, int64_t off, bool whole, T (&v)[P]) {
  const T* p = static_cast<const T*>(base) + off;
  if (P == 1 || !whole) {
    const T s = *p;
#pragma unroll
    for (int j = 0; j < P; ++j) v[j] = s;
  } else {
    const Pack<T, P> pk = *reinterpret_cast<const Pack<T, P>*>(p);
#pragma unroll
    for (int j = 0; j < P; ++j) v[j] = pk.v[j];
  }
}

// The P output units at input offsets off (whole: as Args::whole)
template <Op O, class U, int P>
__device__ __forceinline__ void compute(const Args& a, const int64_t* off, const bool* whole,
                                        U (&v)[P]) {
  if constexpr (O == Op::expand) {
    load_units<U, P>(a.in[0], off[0], whole[0], v);
  } else {
    uint8_t c[P];
    U x[P], y[P];
    load_units<uint8_t, P>(a.in[0], off[0], whole[0], c);
    load_units<U, P>(a.in[1], off[1], whole[1], x);
    load_units<U, P>(a.in[2], off[2], whole[2], y);
#pragma unroll
    for (int j = 0; j < P; ++j) v[j] = c[j] ? x[j] : y[j];
  }
}

template <Op O, class U, int R, int P, bool WIDE>
__global__ void __launch_bounds__(kBlock) broadcast_kernel(const __grid_constant__ Args a) {
  using Index = typename std::conditional<WIDE, int64_t, uint32_t>::type;
  constexpr int N = OpTraits<O>::kInputs;
  const Index base = static_cast<Index>(blockIdx.x) * (kBlock * kUnroll) + threadIdx.x;
  const Index packs = static_cast<Index>(a.packs);
  U v[kUnroll][P];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const Index n = base + u * kBlock;
    if (n < packs) {
      int64_t off[N];
      offsets<R, N>(a, n, off);
      compute<O, U, P>(a, off, a.whole, v[u]);
    }
  }
  U* out = static_cast<U*>(a.out);
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const Index n = base + u * kBlock;
    if (n < packs) {
      Pack<U, P> pk;
#pragma unroll
      for (int j = 0; j < P; ++j) pk.v[j] = v[u][j];
      *reinterpret_cast<Pack<U, P>*>(out + static_cast<int64_t>(n) * P) = pk;
    }
  }
  if (R == 1 && P > 1 && blockIdx.x == 0 && static_cast<int>(threadIdx.x) < a.tail) {
    // flat: the units past the last whole pack, one a thread
    const int64_t t = a.packs * P + threadIdx.x;
    int64_t off[N];
#pragma unroll
    for (int i = 0; i < N; ++i) off[i] = a.whole[i] ? t : 0;
    const bool single[kMaxInputs] = {};  // one unit from each input
    U w[1];
    compute<O, U, 1>(a, off, single, w);
    out[t] = w[0];
  }
}

template <Op O, class U, int R, int P, bool WIDE>
cudaError_t launch(const void* problem, cudaStream_t stream) {
  const Problem& p = *static_cast<const Problem*>(problem);
  Layout l = p.layout;
  if (l.rank == 0) {  // one unit
    l.rank = 1;
    l.dims[0] = 1;
  }
  const int last = l.rank - 1;
  Args a{};
  a.rank = l.rank;
  const int64_t n = kgen::broadcast::units(l);
  a.packs = n / P;
  a.tail = static_cast<int>(n % P);  // 0 unless R == 1 (supports: the innermost dim divides)
  for (int k = 0; k < l.rank; ++k) {
    a.dims[k] = k == last ? l.dims[k] / P : l.dims[k];
    if (!WIDE && R > 1) a.div[k] = FastDiv(static_cast<uint32_t>(a.dims[k]));
  }
  for (int i = 0; i < l.inputs; ++i) {
    for (int k = 0; k < l.rank; ++k) a.stride[i][k] = k == last ? l.stride[i][k] * P : l.stride[i][k];
    a.whole[i] = l.stride[i][last] != 0;
    a.in[i] = p.in[i];
  }
  a.out = p.out;
  const int64_t blocks = std::max<int64_t>(1, kgen::broadcast::div_up(a.packs, kBlock * kUnroll));
  broadcast_kernel<O, U, R, P, WIDE><<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace broadcast
}  // namespace device
}  // namespace kgen
