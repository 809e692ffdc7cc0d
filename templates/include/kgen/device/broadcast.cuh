// Broadcast kernels (expand, where) and their host launcher.  One kernel
// over 1 (expand: src) or 3 (where: cond, x, y) inputs: each thread makes
// kUnroll packs of P output units (one in a small problem, 4x the blocks:
// kSpreadBlocksPerSm); a pack's coordinates are computed once
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
// A problem of fewer blocks of kUnroll packs than this many an SM runs one
// pack a thread in kUnroll times the blocks, where a pack is 8 bytes or
// more: every SM gets a share and the blocks even out.  H200, sweeps of 300
// problems (bench/NOTES.md broadcast v4): where of 0.01-8 MiB in 16-byte
// packs 4.4-6.9 us -> 3.5-4.9 (torch 3.4-4.6); packs of 4 bytes or less
// ran 4-18% slower spread (expand 1x3 -> 131072x3 float32 3.8 -> 4.4 us).
constexpr int kSpreadBlocksPerSm = 4;
constexpr int kSpreadMinPackBytes = 8;

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

// Packs of 1- and 2-byte units that fill whole 32-bit words live in
// registers as words: loaded, spread, selected and stored a word at a time,
// never unpacked into a register per unit (H100, where_elem_b2_r3_v8 with a
// select per unit: 57 registers, 50% occupancy, 91% of copy on the float16
// where (64,1,1,2048), (64,16,2048,2048), scalar).
template <class T, int P>
constexpr bool kWordPack = sizeof(T) <= 2 && P * sizeof(T) >= 4;

// What a thread holds of one pack of out: words or units
template <class T, int P>
using Regs = typename std::conditional<kWordPack<T, P>, Pack<uint32_t, std::max<int>(1, P * sizeof(T) / 4)>,
                                       Pack<T, P>>::type;

// P units from base + off: one vector access when read whole, else one unit
// repeated
template <class T, int P>
__device__ __forceinline__ void load_units(const void* base, int64_t off, bool whole, Pack<T, P>& v) {
  const T* p = static_cast<const T*>(base) + off;
  if (P == 1 || !whole) {
    const T s = *p;
#pragma unroll
    for (int j = 0; j < P; ++j) v.v[j] = s;
  } else {
    v = *reinterpret_cast<const Pack<T, P>*>(p);
  }
}

// The same for a word pack of T (uint8_t or uint16_t): a unit repeated is
// spread over every word
template <class T, int P, int W = P * sizeof(T) / 4>
__device__ __forceinline__ void load_words(const void* base, int64_t off, bool whole, uint32_t (&w)[W]) {
  const T* p = static_cast<const T*>(base) + off;
  if (whole) {
    const Pack<uint32_t, W> pk = *reinterpret_cast<const Pack<uint32_t, W>*>(p);
#pragma unroll
    for (int j = 0; j < W; ++j) w[j] = pk.v[j];
  } else {
    const uint32_t s = static_cast<uint32_t>(*p) * (sizeof(T) == 1 ? 0x01010101u : 0x00010001u);
#pragma unroll
    for (int j = 0; j < W; ++j) w[j] = s;
  }
}

// 0xFF in each byte of w that is nonzero, 0 in the others
__device__ __forceinline__ uint32_t nonzero_bytes(uint32_t w) {
  const uint32_t h = (w | ((w & 0x7F7F7F7Fu) + 0x7F7F7F7Fu)) & 0x80808080u;  // 0x80 where nonzero
  return h | (h - (h >> 7));
}

// where on a word pack: byte masks (0xFF where cond is nonzero, spread over
// each unit's bytes), then one LOP3 a word.  P cond bytes: 2 or a multiple of 4.
template <class U, int P, int W = P * sizeof(U) / 4>
__device__ __forceinline__ void select_words(const Args& a, const int64_t* off, const bool* whole,
                                             uint32_t (&out)[W]) {
  constexpr int C = (P + 3) / 4;
  uint32_t m[C], x[W], y[W];
  // every load first (no branch between them: the compiler predicates the
  // whole/broadcast choice), then the masks
  if constexpr (P >= 4) {
    load_words<uint8_t, P>(a.in[0], off[0], whole[0], m);
  } else {
    const uint8_t* c = static_cast<const uint8_t*>(a.in[0]) + off[0];
    m[0] = whole[0] ? *reinterpret_cast<const uint16_t*>(c) : *c * 0x0101u;
  }
  load_words<U, P>(a.in[1], off[1], whole[1], x);
  load_words<U, P>(a.in[2], off[2], whole[2], y);
#pragma unroll
  for (int j = 0; j < C; ++j) m[j] = nonzero_bytes(m[j]);
#pragma unroll
  for (int w = 0; w < W; ++w) {
    // word w holds unit w (1 byte), or units 2w and 2w + 1 (2 bytes: bytes
    // 2w % 4 and the next of cond word w / 2)
    const uint32_t mask = sizeof(U) == 1 ? m[w] : __byte_perm(m[w / 2], 0u, (w & 1) ? 0x3322u : 0x1100u);
    out[w] = (x[w] & mask) | (y[w] & ~mask);
  }
}

// The pack of out at input offsets off (whole: as Args::whole)
template <Op O, class U, int P>
__device__ __forceinline__ void compute(const Args& a, const int64_t* off, const bool* whole,
                                        Regs<U, P>& out) {
  if constexpr (O == Op::expand) {
    if constexpr (kWordPack<U, P>) load_words<U, P>(a.in[0], off[0], whole[0], out.v);
    else load_units<U, P>(a.in[0], off[0], whole[0], out);
  } else if constexpr (kWordPack<U, P>) {
    select_words<U, P>(a, off, whole, out.v);
  } else {
    Pack<uint8_t, P> c;
    Pack<U, P> x, y;
    load_units<uint8_t, P>(a.in[0], off[0], whole[0], c);
    load_units<U, P>(a.in[1], off[1], whole[1], x);
    load_units<U, P>(a.in[2], off[2], whole[2], y);
#pragma unroll
    for (int j = 0; j < P; ++j) out.v[j] = c.v[j] ? x.v[j] : y.v[j];
  }
}

// A thread's UNROLL packs, kBlock apart from pack `base`: all computed,
// then all stored; kChecked skips those at or past `packs`.
template <Op O, class U, int R, int P, int UNROLL, bool kChecked, class Index>
__device__ __forceinline__ void run_packs(const Args& a, Index base, Index packs, U* out) {
  constexpr int N = OpTraits<O>::kInputs;
  Regs<U, P> v[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const Index n = base + u * kBlock;
    if (!kChecked || n < packs) {
      int64_t off[N];
      offsets<R, N>(a, n, off);
      compute<O, U, P>(a, off, a.whole, v[u]);
    }
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const Index n = base + u * kBlock;
    if (!kChecked || n < packs) *reinterpret_cast<Regs<U, P>*>(out + static_cast<int64_t>(n) * P) = v[u];
  }
}

template <Op O, class U, int R, int P, bool WIDE, int UNROLL>
__global__ void __launch_bounds__(kBlock) broadcast_kernel(const __grid_constant__ Args a) {
  using Index = typename std::conditional<WIDE, int64_t, uint32_t>::type;
  constexpr int N = OpTraits<O>::kInputs;
  const Index base = static_cast<Index>(blockIdx.x) * (kBlock * UNROLL) + threadIdx.x;
  const Index packs = static_cast<Index>(a.packs);
  U* out = static_cast<U*>(a.out);
  if (static_cast<Index>(blockIdx.x) * (kBlock * UNROLL) + kBlock * UNROLL <= packs) {
    // a whole block of packs (all but the last block): no bounds checks, so
    // the loads of every pack go out before the first is used
    run_packs<O, U, R, P, UNROLL, false>(a, base, packs, out);
  } else {
    run_packs<O, U, R, P, UNROLL, true>(a, base, packs, out);
  }
  if (R == 1 && P > 1 && blockIdx.x == 0 && static_cast<int>(threadIdx.x) < a.tail) {
    // flat: the units past the last whole pack, one a thread
    const int64_t t = a.packs * P + threadIdx.x;
    int64_t off[N];
#pragma unroll
    for (int i = 0; i < N; ++i) off[i] = a.whole[i] ? t : 0;
    const bool single[kMaxInputs] = {};  // one unit from each input
    Regs<U, 1> w;  // one unit
    compute<O, U, 1>(a, off, single, w);
    out[t] = w.v[0];
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
  if (P * sizeof(U) >= kSpreadMinPackBytes && blocks < int64_t{kSpreadBlocksPerSm} * p.device->sm_count) {
    const int64_t spread = std::max<int64_t>(1, kgen::broadcast::div_up(a.packs, kBlock));
    broadcast_kernel<O, U, R, P, WIDE, 1><<<static_cast<unsigned>(spread), kBlock, 0, stream>>>(a);
  } else {
    broadcast_kernel<O, U, R, P, WIDE, kUnroll><<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

}  // namespace broadcast
}  // namespace device
}  // namespace kgen
