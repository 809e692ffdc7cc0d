// What the softmax kernels of both directions share: occupancy constants,
// the running (max, sum) of the two-pass kernels, reductions across the
// threads that own one column of a strided tile, and launch helpers.
#pragma once

#include <mutex>

#include "kgen/device/common.cuh"
#include "kgen/device/reduce.cuh"
#include "variant.hpp"

namespace kgen {
namespace device {
namespace softmax {

// Packs each thread loads before it uses any: enough independent 16-byte
// loads in flight to cover DRAM latency when an SM holds only one or two
// rows (one load per thread at a time gave 24-42% of copy for 32K-column rows
// on an H100; bench/NOTES.md v2).
template <class T, int P, int BYTES>
constexpr int kBatchPacks = BYTES / static_cast<int>(sizeof(T) * P) < 1 ? 1 : BYTES / static_cast<int>(sizeof(T) * P);

// The split tier's 16-byte loads in flight a thread: at full residency 64
// KB an SM, past what DRAM latency needs.
constexpr int kSplitLoads = 2;

// Full residency (2048 threads per SM) when shared memory allows: at 45-56
// registers a thread, blocks of 1024 fitted once per SM and smem/uncached
// rows ran at 40-52% of copy instead of 86-94% (H100, bench/NOTES.md v2).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890 || \
                               __CUDA_ARCH__ >= 1200)
constexpr int kThreadsPerSm = 1536;  // sm_86, sm_87, sm_89, sm_120, sm_121
#else
constexpr int kThreadsPerSm = 2048;  // sm_80, sm_90, sm_100, sm_103
#endif
template <int BLOCK>
constexpr int kMinBlocks = kThreadsPerSm / BLOCK < 1 ? 1 : kThreadsPerSm / BLOCK;
// The split tier's kernels at full residency, but float64 at half: its
// online update took 112-176 bytes of spills under 32 registers (sm_90).
template <class T, int BLOCK>
constexpr int kSplitMinBlocks = sizeof(T) == 8 && kMinBlocks<BLOCK> > 1 ? kMinBlocks<BLOCK> / 2 : kMinBlocks<BLOCK>;
// The shifted stores' kernels (the half types' output off the input's
// 16-byte boundaries) at half residency: under 32 registers the forward
// spilled 12 bytes and the backward 152 (sm_90, 512 threads).
template <class T, int BLOCK, bool SHIFT>
constexpr int kSplitShiftMinBlocks = SHIFT && kSplitMinBlocks<T, BLOCK> > 1 ? kSplitMinBlocks<T, BLOCK> / 2
                                                                           : kSplitMinBlocks<T, BLOCK>;

// Where the rows of a warp-tier kernel's lane groups lie: groups of G lanes
// own R rows each, 32 / G rows apart (row r of group g is base + r x 32 / G
// + g, so that each load of the warp covers adjacent rows; bench/NOTES.md
// warp v3), the warps of BLOCK-thread blocks striding over the rows
// kRowsPerWarp at a time: for (base = first; base < rows; base += step).
template <int G, int R, int BLOCK>
struct LaneGroups {
  static_assert(32 % G == 0, "a lane group divides the warp");
  static constexpr int kGroups = 32 / G;
  static constexpr int kRowsPerWarp = kGroups * R;
  int g_lane, group;  // this lane's place in its group; its group in the warp
  int64_t first, step;
  __device__ __forceinline__ LaneGroups()
      : g_lane(static_cast<int>(threadIdx.x % 32) % G),
        group(static_cast<int>(threadIdx.x % 32) / G),
        first((int64_t{blockIdx.x} * (BLOCK / 32) + threadIdx.x / 32) * kRowsPerWarp),
        step(int64_t{gridDim.x} * (BLOCK / 32) * kRowsPerWarp) {}
  // row r of this lane's group at the warp's base row
  __device__ __forceinline__ int64_t row(int64_t base, int r) const { return base + group + int64_t{r} * kGroups; }
};

// The backward's sum term and dx from the sum, for every backward kernel:
//   softmax:     sum(y * dy),  dx = (dy - sum) * y
//   log_softmax: sum(dy),      dx = dy - exp(y) * sum
template <bool LOG, class C>
__device__ __forceinline__ C term(C y, C dy) { return LOG ? dy : y * dy; }
template <bool LOG, class C>
__device__ __forceinline__ C grad(C y, C dy, C sum) { return LOG ? dy - kexp(y) * sum : (dy - sum) * y; }

// A max that returns NaN when either side is NaN (MaxOp keeps whichever side
// the comparison favours, so a NaN can be lost).  The masked softmax needs
// it: a row whose only kept key is NaN must not look fully masked.
struct NanMaxOp {
  template <class C> __device__ __forceinline__ C operator()(C a, C b) const { return (a > b || a != a) ? a : b; }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __device__ __forceinline__ float operator()(float a, float b) const {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
#endif
};

// A row's finishing scale from its sum of exps: log sum (LOG) or 1 / sum.
// The half types' log in one MUFU.LG2 and a multiply (__logf: a few ulp of
// a float, far below the rounding of a half-type y), where logf's ~27
// instructions a row were a quarter of a warp's work on short rows
// (bfloat16 log_softmax rows of 13: 200 instructions a warp iteration of 4
// rows; bench/NOTES.md warp v4).  float32 and float64 keep logf and log.
template <class T, bool LOG, class C>
__device__ __forceinline__ C row_scale(C sum) {
  if constexpr (!LOG) return C(1) / sum;
  else if constexpr (sizeof(T) == 2) return __logf(sum);
  else return klog(sum);
}

// Running (max, sum of exp(x - max)) of a stream of values.  -inf entries
// contribute 0 without turning the sum into NaN (exp(-inf - -inf)); NaN
// propagates through the max and the sum; a row of only -inf ends with
// sum 0 and max -inf, and so gives NaN like PyTorch (or 0 when safe).
template <class C>
struct Online {
  C m, s;
  __device__ __forceinline__ static C safe(C m) { return m == neg_inf<C>() ? C(0) : m; }
  __device__ __forceinline__ static Online identity() { return Online{neg_inf<C>(), C(0)}; }
  __device__ __forceinline__ void add(C v) {
    if (v > m || v != v) {
      s = s * kexp(m - v) + C(1);
      m = v;
    } else {
      s += kexp(v - safe(m));
    }
  }
  __device__ __forceinline__ static Online merge(Online a, Online b) {
    const C m = NanMaxOp()(a.m, b.m);
    return Online{m, a.s * kexp(a.m - safe(m)) + b.s * kexp(b.m - safe(m))};
  }
};

// Online::add with the sum compensated (Kahan): `lost` holds the low bits
// the running sum dropped (to subtract at the end); a new max rescales
// both.  For long serial folds (the strided two-pass kernel).
template <class C>
__device__ __forceinline__ void online_add_compensated(Online<C>& o, C& lost, C v) {
  C term;
  if (v > o.m || v != v) {
    const C scale = kexp(o.m - v);
    o.s *= scale;
    lost *= scale;
    o.m = v;
    term = C(1);
  } else {
    term = kexp(v - Online<C>::safe(o.m));
  }
  const C y = term - lost;
  const C t = o.s + y;
  lost = (t - o.s) - y;
  o.s = t;
}

struct OnlineOp {
  template <class C> __device__ __forceinline__ Online<C> operator()(Online<C> a, Online<C> b) const {
    return Online<C>::merge(a, b);
  }
};

// Shuffles of the values the reductions combine.
template <class C>
__device__ __forceinline__ C shfl_xor(C v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
template <class C>
__device__ __forceinline__ Online<C> shfl_xor(Online<C> v, int lane_mask) {
  return Online<C>{__shfl_xor_sync(0xffffffffu, v.m, lane_mask), __shfl_xor_sync(0xffffffffu, v.s, lane_mask)};
}

template <int BLOCK, class C>
__device__ __forceinline__ Online<C> block_all_reduce_online(Online<C> v) {
  constexpr int kWarps = BLOCK / 32;
  __shared__ Online<C> partial[kWarps];
  __shared__ Online<C> result;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = Online<C>::merge(v, shfl_xor(v, d));
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    Online<C> w = lane < kWarps ? partial[lane] : Online<C>::identity();
#pragma unroll
    for (int d = 16; d > 0; d /= 2) w = Online<C>::merge(w, shfl_xor(w, d));
    if (lane == 0) result = w;
  }
  __syncthreads();
  const Online<C> r = result;
  __syncthreads();
  return r;
}

// All-reduce of v[0..P) across the threads of a strided tile that own the
// same column: the lanes of a warp with equal lane % TX, then the block's
// `warps` warps through `scratch` ((warps + 1) * P * TX values, dynamic
// shared memory): each warp's partials go to [warp][j][tx] (consecutive banks
// across a warp), one thread a (j, tx) slot combines the warps' partials into
// the last row, and every thread reads back its P results.  Each thread thus
// reads about warps + P values, not warps * P (which, at 16-32 warps and 8
// values a pack, cost more than the tile's own loads: float16 tiles ran at
// 28-60% of copy, bench/NOTES.md v4).  Fixed order, so results are bitwise
// reproducible.  Every thread of the block must call it.
template <int TX, int P, class V, class Op>
__device__ __forceinline__ void column_all_reduce(V (&v)[P], Op op, V* scratch, int warps) {
  constexpr int kSlots = P * TX;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, tx = lane % TX;
#pragma unroll
  for (int j = 0; j < P; ++j)
#pragma unroll
    for (int m = TX; m < 32; m *= 2) v[j] = op(v[j], shfl_xor(v[j], m));
  if (warps == 1) return;
  if (lane < TX)
#pragma unroll
    for (int j = 0; j < P; ++j) scratch[warp * kSlots + j * TX + lane] = v[j];
  __syncthreads();
  V* result = scratch + warps * kSlots;
  for (int slot = threadIdx.x; slot < kSlots; slot += warps * 32) {
    V acc = scratch[slot];
    for (int w = 1; w < warps; ++w) acc = op(acc, scratch[w * kSlots + slot]);
    result[slot] = acc;
  }
  __syncthreads();
  // no barrier after: the next call writes the partial rows, and combines
  // into `result` only after its own first barrier, which every thread
  // reaches after reading these results
#pragma unroll
  for (int j = 0; j < P; ++j) v[j] = result[j * TX + tx];
}

// ------------------------------------------------------------ host helpers
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grid of at most `waves` full waves of resident blocks; kernels stride over
// the rest.
inline unsigned grid_for(int64_t blocks_needed, const DeviceInfo& d, int block, int waves) {
  const int64_t resident = int64_t{d.sm_count} * (d.max_threads_per_sm / block);
  const int64_t g = blocks_needed < resident * waves ? blocks_needed : resident * waves;
  return static_cast<unsigned>(g < 1 ? 1 : g);
}

// The grid of a lane-group kernel (LaneGroups<G, R, BLOCK>): each block's
// warps take (BLOCK / 32) x (32 / G) x R rows, up to 32 waves.
template <int G, int R, int BLOCK>
unsigned lane_group_grid(int64_t rows, const DeviceInfo& d) {
  constexpr int kRowsPerBlock = (BLOCK / 32) * (32 / G) * R;
  return grid_for(ceil_div(rows, kRowsPerBlock), d, BLOCK, 32);
}

// The status of setup() (a kernel attribute a launch needs), run once per
// device for each (Kernel, Setting): a template argument, so that each
// instantiation has its own flags.
template <auto Kernel, int Setting, class Setup>
cudaError_t once_per_device(const DeviceInfo& d, Setup setup) {
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  static cudaError_t result[kMaxDevices];
  if (d.ordinal < 0 || d.ordinal >= kMaxDevices) return cudaErrorInvalidDevice;
  std::call_once(once[d.ordinal], [&] { result[d.ordinal] = setup(); });
  return result[d.ordinal];
}

// Raises a kernel's dynamic shared memory limit to all this device allows,
// once per kernel and device.
template <auto Kernel>
cudaError_t allow_max_smem(const DeviceInfo& d) {
  return once_per_device<Kernel, 0>(d, [&] {
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, Kernel);
    if (err == cudaSuccess)
      err = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(d.smem_per_block_optin - attr.sharedSizeBytes));
    return err;
  });
}

// The split tier over a dim that is not the last, for a short inner
// (strided problems of few columns: a long axis over 2-`B / 4` inner
// positions, so few that the strided tiers' CTAs, a column tile each, leave
// most SMs idle).  The slab of one outer position is contiguous: a CTA takes
// a run of axis positions of it, `parts` CTAs a slab, and its B / inner x
// inner threads read the run in order (coalesced), thread t always at
// inner position t % inner, kStridedSplitLoads values in flight.  Per column
// the threads' partials (the forward's (max, sum), the backward's sum) are
// folded in a fixed order through shared memory, so that the partials, and
// y or dx, are the same on every run.
struct StridedSplitPlace {
  int64_t a0, a1;  // the CTA's axis positions
  int in, rows, col, row;  // inner, slab rows a pass, the thread's inner position and first row
  bool active;
  __device__ __forceinline__ static StridedSplitPlace make(int64_t cta_part, int64_t axis, int64_t inner,
                                                          int64_t parts, int block) {
    StridedSplitPlace s;
    const int64_t per = (axis + parts - 1) / parts;
    s.a0 = cta_part * per;
    s.a1 = s.a0 + per < axis ? s.a0 + per : axis;
    s.in = static_cast<int>(inner);
    s.rows = block / s.in;
    s.col = static_cast<int>(threadIdx.x) % s.in;
    s.row = static_cast<int>(threadIdx.x) / s.in;
    s.active = s.row < s.rows;
    return s;
  }
};

// Folds each column's partials over the block's slab rows, in row order,
// one thread a column: every thread gets its column's total, the same bits
// on every run.  (A pairwise tree, log2(rows) steps of two barriers each,
// ran 5-25% slower than this at every block size measured: H200, float32
// (1, 448133, 13) 43.6 -> 50.1 us, (4, 65536, 3) in blocks of 128 25.6 ->
// 29.2, same-GPU A/B, bench/NOTES.md split v3.)  `scratch` holds a partial
// a thread; row 0's slots receive the totals.
template <class A, class Op>
__device__ __forceinline__ A fold_columns(A st, const StridedSplitPlace& s, A* scratch, Op op) {
  scratch[threadIdx.x] = st;
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < s.in) {
    A t = st;
    for (int r = 1; r < s.rows; ++r) t = op(t, scratch[threadIdx.x + r * s.in]);
    scratch[threadIdx.x] = t;
  }
  __syncthreads();
  return scratch[s.col];
}

// Values a thread has in flight (of each input): 8 (float64: 4, which
// spilled 124 bytes at 8 in the forward).
template <class T>
constexpr int kStridedSplitLoads = sizeof(T) == 8 ? 4 : 8;
// Half residency (1024 threads an SM, 64 registers): at full residency's 32
// the U values and their 64-bit addresses spilled 12-88 bytes (sm_90 ptxas).
template <int B>
constexpr int kStridedSplitMinBlocks = B < 1024 ? 1024 / B : 1;

}  // namespace softmax
}  // namespace device
}  // namespace kgen
