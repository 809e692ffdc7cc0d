// kgen-sanitize-sample: every compiled variant (or a sample of each family)
// through its *_variant entry point on one to three small problems shaped
// for its tier (odd extents, partial tiles and batches, split and
// multi-block plans), for compute-sanitizer (scripts/sanitize.sh):
//   - outputs are allocated to the exact byte, so that memcheck sees a
//     write one element past them;
//   - inputs are written whole with random non-zero data, so that what
//     initcheck reports is the kernels' own doing; workspaces are left as
//     cudaMalloc returns them, because the API promises that any content
//     works (a kernel reading one before writing it is a finding);
//   - outputs are poisoned and every result is checked loosely against a
//     CPU reference, so that a clean run also means correct results.
//   kgen-sanitize-sample [--family NAME[,NAME]] [--max-per-family N] [--problems N] [--verbose]
// --max-per-family takes variants from every tier in turn, spread over
// the dtypes (racecheck is slow).  Exits 77 without a GPU, 1 on a failure.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "device.hpp"
#include "gpu/host_tensor.hpp"
#include "kgen/kgen.h"
#include "kgen_params.gen.hpp"
#include "reduce/problem.hpp"
#include "topk/problem.hpp"
#include "registry.hpp"
#include "softmax/problem.hpp"

namespace {

using kgen::VariantInfo;
using Rng = std::mt19937_64;
using Dims = std::vector<int64_t>;

bool verbose = false;
int failures = 0;
bool fatal = false;  // a sticky CUDA error: the context cannot run more work

void fail(const std::string& where, const std::string& what) {
  ++failures;
  std::printf("FAIL %s: %s\n", where.c_str(), what.c_str());
}

// Device memory of exactly `bytes` bytes (none for 0).
struct Buffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Buffer(size_t n) : bytes(n) {
    if (n && cudaMalloc(&p, n) != cudaSuccess) p = nullptr;
  }
  ~Buffer() {
    if (p) cudaFree(p);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  bool ok() const { return bytes == 0 || p; }
};

// A host tensor of any dtype as raw bytes, read and written as double.
using Host = test::HostTensor;

bool floating(kgen_dtype_t d) { return d <= KGEN_FLOAT64; }

// Normal values, sd 3 (integers in [-1000, 1000] for int32), never 0
// after rounding to the dtype.
Host random_values(kgen_dtype_t d, size_t n, Rng& rng) {
  Host t(d, n);
  std::normal_distribution<double> normal(0.0, 3.0);
  std::uniform_int_distribution<int> integer(-1000, 1000);
  for (size_t i = 0; i < n; ++i)
    do t.set(i, floating(d) ? normal(rng) : integer(rng)); while (t.get(i) == 0);
  return t;
}

Host uniform_values(kgen_dtype_t d, size_t n, double lo, double hi, Rng& rng) {
  Host t(d, n);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (size_t i = 0; i < n; ++i)
    do t.set(i, dist(rng)); while (t.get(i) == 0);
  return t;
}

// Random bytes 1-255, for the families that copy bits (permute, expand, where).
std::vector<unsigned char> random_bytes(size_t n, Rng& rng) {
  std::uniform_int_distribution<int> dist(1, 255);
  std::vector<unsigned char> b(n);
  for (auto& c : b) c = static_cast<unsigned char>(dist(rng));
  return b;
}

bool upload(const Buffer& b, const void* src, const std::string& where) {
  if (!b.ok()) return fail(where, "cudaMalloc of " + std::to_string(b.bytes) + " bytes failed"), false;
  if (b.bytes == 0) return true;
  const cudaError_t e = cudaMemcpy(b.p, src, b.bytes, cudaMemcpyHostToDevice);
  if (e != cudaSuccess) return fail(where, std::string("upload: ") + cudaGetErrorString(e)), false;
  return true;
}

// Allocates, and fills with 0xFF (NaN in every float dtype), so that an
// element the kernel leaves unwritten fails the comparison.
bool poison(const Buffer& b, const std::string& where) {
  if (!b.ok()) return fail(where, "cudaMalloc of " + std::to_string(b.bytes) + " bytes failed"), false;
  if (b.bytes && cudaMemset(b.p, 0xFF, b.bytes) != cudaSuccess) return fail(where, "cudaMemset failed"), false;
  return true;
}

std::vector<unsigned char> download(const Buffer& b) {
  std::vector<unsigned char> h(b.bytes);
  if (b.bytes) cudaMemcpy(h.data(), b.p, b.bytes, cudaMemcpyDeviceToHost);
  return h;
}

Host download(const Buffer& b, kgen_dtype_t d) {
  Host t(d, b.bytes / kgen_dtype_size(d));
  t.bytes = download(b);
  return t;
}

enum class Outcome { ran, unsupported, failed };

// The entry point's status, then the kernel's own errors (synchronised,
// so that an asynchronous fault is reported against this problem).
Outcome finish(kgen_status_t st, const std::string& where) {
  if (st == KGEN_ERROR_UNSUPPORTED) {
    if (verbose) std::printf("  unsupported %s: %s\n", where.c_str(), kgen_last_error());
    return Outcome::unsupported;
  }
  if (st != KGEN_OK) return fail(where, std::string(kgen_status_string(st)) + ": " + kgen_last_error()), Outcome::failed;
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    fatal = true;
    return fail(where, std::string("kernel: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)), Outcome::failed;
  }
  return Outcome::ran;
}

// Counts mismatches against a reference; reports the first.
struct Check {
  explicit Check(std::string w) : where(std::move(w)) {}
  std::string where;
  size_t bad = 0;
  std::string first;
  void near(size_t i, double got, double want, double tol) {
    const bool ok = (std::isnan(want) && std::isnan(got)) || got == want || std::fabs(got - want) <= tol;
    if (ok) return;
    if (bad++ == 0) {
      char text[200];
      std::snprintf(text, sizeof text, "element %zu: got %.9g, want %.9g (tolerance %.3g)", i, got, want, tol);
      first = text;
    }
  }
  void exact(size_t i, double got, double want) { near(i, got, want, 0); }
  Outcome done() {
    if (!bad) return Outcome::ran;
    fail(where, std::to_string(bad) + " wrong elements; " + first);
    return Outcome::failed;
  }
};

// Loose tolerances: relative to the magnitudes involved, per dtype.
struct Tol {
  double rtol, atol;
};
Tol tol_of(kgen_dtype_t d) {
  switch (d) {
    case KGEN_FLOAT64: return {1e-9, 1e-12};
    case KGEN_FLOAT32: return {1e-4, 1e-6};
    case KGEN_FLOAT16: return {5e-3, 1e-4};
    case KGEN_BFLOAT16: return {3e-2, 1e-3};
    default: return {0, 0};
  }
}

int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

std::string dims_text(const Dims& d) {
  std::string s = "(";
  for (size_t k = 0; k < d.size(); ++k) s += (k ? "," : "") + std::to_string(d[k]);
  return s + ")";
}

// Offset in a contiguous tensor of shape `in` (aligned at the last dims of
// `out`, size-1 dims broadcast) of out's element `index`.
int64_t broadcast_offset(const Dims& out, const Dims& in, int64_t index) {
  std::vector<int64_t> coord(out.size());
  for (size_t k = out.size(); k-- > 0;) coord[k] = index % out[k], index /= out[k];
  int64_t off = 0;
  const size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) off = off * in[k] + (in[k] == 1 ? 0 : coord[lead + k]);
  return off;
}

// ---- softmax and softmax_backward ---------------------------------------

struct SoftmaxKnobs {
  int tier, pack, cols_per_thread, group_width, rows_per_access, padding, block, col_lanes, axis_per_thread, cluster;
};
template <class P>
SoftmaxKnobs softmax_knobs(const void* params) {
  const P& q = *static_cast<const P*>(params);
  return {static_cast<int>(q.tier), q.pack_size, q.cols_per_thread, q.group_width, q.rows_per_access,
          q.padding, q.block_size, q.col_lanes, q.axis_per_thread, q.cluster_size};
}
using SoftmaxTier = kgen::gen::SoftmaxTier;
static_assert(static_cast<int>(kgen::gen::SoftmaxBackwardTier::strided) == static_cast<int>(SoftmaxTier::strided),
              "the backward family reuses the forward's tiers");

// mask: 0 none; 1 bool mask with causal and safe; 2 additive mask with
// -inf entries; 3 no mask tensor, causal.  Masked problems are x seen as
// (2, 3, 5, axis): batch, heads, queries, keys.
struct SoftmaxSpec {
  int64_t outer, axis, inner;
  int log, mask;
};

std::string text(const SoftmaxSpec& s) {
  static const char* const kMask[] = {"", " mask=bool causal safe", " mask=additive", " mask=none causal"};
  return "outer=" + std::to_string(s.outer) + " axis=" + std::to_string(s.axis) + " inner=" + std::to_string(s.inner) +
         (s.log ? " log" : "") + kMask[s.mask];
}

std::vector<SoftmaxSpec> softmax_specs(const SoftmaxKnobs& k, bool backward, int ordinal) {
  const int64_t p = k.pack;
  const int mask = backward ? -1 : 1 + ordinal % 3;  // forward: each masked kind in turn
  std::vector<SoftmaxSpec> specs;
  auto row_tier = [&](int64_t cols, int64_t rows, int64_t log_cols, int64_t keys) {
    specs.push_back({rows, cols, 1, 0, 0});
    specs.push_back({3, log_cols, 1, 1, 0});
    if (mask > 0) specs.push_back({30, keys, 1, 0, mask});
  };
  switch (static_cast<SoftmaxTier>(k.tier)) {
    case SoftmaxTier::warp: {
      // padded variants: a row a pack short of the reach, and one about half
      // of it; exact ones only their reach.  37 rows: a partial last group
      // of rows (two rows per access) and a partial block.
      const int64_t reach = int64_t{k.cols_per_thread} * k.group_width;
      const int64_t shorter = k.padding ? std::max(p, reach - p) : reach;
      const int64_t half = k.padding ? std::min(reach, p * (reach / p / 2 + 1)) : reach;
      row_tier(shorter, 37, half, shorter);
      break;
    }
    case SoftmaxTier::smem:
      // rows longer than two passes of the block, and shorter than one
      row_tier(p * (2 * k.block + 37), 5, p * 7, p * (k.block + 5));
      break;
    case SoftmaxTier::uncached:
      row_tier(p * (3 * k.block + 5), 3, p * (k.block / 2 + 3), p * (2 * k.block + 1));
      break;
    case SoftmaxTier::block:
    case SoftmaxTier::cluster: {
      // an odd row near the cluster's reach (head, body and tail), and a
      // short one that leaves most threads without a pack; no mask
      const int64_t reach = int64_t{k.cluster} * k.block * k.cols_per_thread;
      specs.push_back({3, reach - p - 3, 1, 0, 0});
      specs.push_back({2, p * 5 + 1, 1, 1, 0});
      break;
    }
    case SoftmaxTier::split:
      // rows cut into chunks: two odd rows (the second starts off a 16-byte
      // boundary: head, packs, tail), and rows shorter than a pack a thread
      // (one chunk)
      specs.push_back({2, p * (4 * k.block) + 7, 1, 1, 0});
      specs.push_back({3, 37, 1, 0, 0});
      break;
    case SoftmaxTier::tile: {
      // odd rows: a full tile and a partial last one; a slab of a short
      // axis over an odd inner extent; a unit as long as the tile
      const int64_t cap = int64_t{k.block} * k.cols_per_thread;
      specs.push_back({std::max<int64_t>(3, cap / 29 + 5), 29, 1, 0, 0});
      specs.push_back({7, 3, std::min<int64_t>(281, cap / 3), 1, 0});
      specs.push_back({2, cap - 1, 1, 1, 0});
      // a slab longer than the tile, cut along inner into segments
      specs.push_back({1, 2, 2 * cap + 3, 0, 0});
      break;
    }
    case SoftmaxTier::span: {
      // odd rows: near the group's reach (head, body and tail; rows start
      // at every misalignment) and about half of it; 37 rows: a partial last
      // group of rows and a partial block
      const int64_t reach = int64_t{k.cols_per_thread} * k.group_width;
      specs.push_back({37, reach - 1, 1, 0, 0});
      specs.push_back({37, std::max<int64_t>(2 * p - 1, reach / 2 + 1), 1, 1, 0});
      break;
    }
    case SoftmaxTier::strided: {
      // the longest axis the tile takes with a partial last round, and a
      // short one; columns past a whole tile
      const int64_t per = kgen::softmax::strided_axis_per_warp(k.col_lanes, k.axis_per_thread);
      const int64_t reach = kgen::softmax::strided_reach(k.col_lanes, k.axis_per_thread, backward);
      specs.push_back({2, std::max<int64_t>(1, reach - per / 2 - 1), p * (k.col_lanes + 1), 0, 0});
      specs.push_back({3, std::min(reach, per + 3), p * 3, 1, 0});
      break;
    }
    case SoftmaxTier::column:
      // the whole axis, a partial tile past an outer position; a shorter axis
      specs.push_back({2, k.axis_per_thread, k.cols_per_thread * kgen::softmax::kColumnBlock + p, 0, 0});
      specs.push_back({3, k.axis_per_thread / 2 + 1, p * 5, 1, 0});
      break;
    case SoftmaxTier::strided_uncached:
      specs.push_back({2, 1537, p * (k.col_lanes + 1), 0, 0});
      specs.push_back({3, 33, p * 2, 1, 0});
      break;
    case SoftmaxTier::generic:
      // odd rows; log over a dim that is not the last; masked
      specs.push_back({7, 1001, 1, 0, 0});
      specs.push_back({3, 45, 5, 1, 0});
      if (mask > 0) specs.push_back({30, 77, 1, 0, mask});
      break;
  }
  return specs;
}

// Forward reference over one line z (x scaled and masked, -inf = masked).
void softmax_line(std::vector<double>& z, bool log, bool safe) {
  double m = -INFINITY;
  for (double v : z) m = std::max(m, v);
  if (m == -INFINITY) {
    for (double& v : z) v = safe ? 0.0 : NAN;
    return;
  }
  double s = 0;
  for (double v : z) s += std::exp(v - m);
  for (double& v : z) v = log ? v - m - std::log(s) : std::exp(v - m) / s;
}

Outcome run_softmax(const VariantInfo& v, const SoftmaxSpec& s, Rng& rng, const std::string& where) {
  const auto d = static_cast<kgen_dtype_t>(v.element);
  const int e = kgen_dtype_size(d);
  const int64_t n = s.outer * s.axis * s.inner;
  const Host x = random_values(d, n, rng);
  Buffer bx(n * e), by(n * e);
  if (!upload(bx, x.bytes.data(), where) || !poison(by, where)) return Outcome::failed;

  // the masked problem: (B, H, Q, K) = (2, 3, 5, axis); a bool mask
  // (2, 1, 5, K), an additive one (1, 3, 1, K)
  const int64_t B = 2, H = 3, Q = 5, K = s.axis;
  kgen_softmax_mask_t m{};
  m.scale = 0.5;
  m.mask_batch = m.mask_heads = m.mask_queries = 1;
  Host mask(s.mask == 2 ? d : KGEN_BOOL, 0);
  if (s.mask == 1) m.kind = KGEN_MASK_BOOL, m.mask_batch = B, m.mask_queries = Q, m.causal = 1, m.safe = 1;
  if (s.mask == 2) m.kind = KGEN_MASK_ADDITIVE, m.mask_heads = H;
  if (s.mask == 3) m.kind = KGEN_MASK_NONE, m.causal = 1;
  const int64_t mask_n = s.mask == 1 || s.mask == 2 ? m.mask_batch * m.mask_heads * m.mask_queries * K : 0;
  mask = Host(s.mask == 2 ? d : KGEN_BOOL, mask_n);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < mask_n; ++i)
    mask.set(i, s.mask == 1 ? (u(rng) < 0.8) : u(rng) < 0.1 ? -INFINITY : 4 * u(rng) - 2 + 1e-3);
  Buffer bm(mask.bytes.size());
  if (!upload(bm, mask.bytes.data(), where)) return Outcome::failed;
  m.mask = bm.p;

  kgen_status_t st;
  if (s.mask) st = kgen_softmax_masked_variant(v.name, d, B, H, Q, K, bx.p, &m, by.p, nullptr);
  else if (s.inner == 1) st = kgen_softmax_variant(v.name, s.log, d, s.outer, s.axis, bx.p, by.p, nullptr);
  else st = kgen_softmax_dim_variant(v.name, s.log, d, s.outer, s.axis, s.inner, bx.p, by.p, nullptr);
  const Outcome o = finish(st, where);
  if (o != Outcome::ran) return o;

  const Host y = download(by, d);
  const Tol t = tol_of(d);
  Check c(where);
  std::vector<double> z(s.axis);
  for (int64_t o2 = 0; o2 < s.outer; ++o2)
    for (int64_t i = 0; i < s.inner; ++i) {
      for (int64_t a = 0; a < s.axis; ++a) {
        double v2 = x.get((o2 * s.axis + a) * s.inner + i);
        if (s.mask) {
          const int64_t b = o2 / (H * Q), h = o2 / Q % H, q = o2 % Q;
          const int64_t row = ((m.mask_batch == 1 ? 0 : b) * m.mask_heads + (m.mask_heads == 1 ? 0 : h)) *
                                  m.mask_queries + (m.mask_queries == 1 ? 0 : q);
          v2 *= m.scale;
          if (s.mask == 1 && mask.get(row * K + a) == 0) v2 = -INFINITY;
          if (s.mask == 2) v2 += mask.get(row * K + a);
          if (m.causal && a > q) v2 = -INFINITY;
        }
        z[a] = v2;
      }
      softmax_line(z, s.log, m.safe);
      for (int64_t a = 0; a < s.axis; ++a) {
        const int64_t idx = (o2 * s.axis + a) * s.inner + i;
        c.near(idx, y.get(idx), z[a], t.rtol * std::fabs(z[a]) + t.atol);
      }
    }
  return c.done();
}

// Backward: y uniform in (0.01, 1) (log: (-5, -0.01)), dy normal.
Outcome run_softmax_backward(const VariantInfo& v, const SoftmaxSpec& s, Rng& rng, const std::string& where) {
  const auto d = static_cast<kgen_dtype_t>(v.element);
  const int e = kgen_dtype_size(d);
  const int64_t n = s.outer * s.axis * s.inner;
  const Host y = s.log ? uniform_values(d, n, -5, -0.01, rng) : uniform_values(d, n, 0.01, 1, rng);
  const Host dy = random_values(d, n, rng);
  Buffer by(n * e), bdy(n * e), bdx(n * e);
  if (!upload(by, y.bytes.data(), where) || !upload(bdy, dy.bytes.data(), where) || !poison(bdx, where))
    return Outcome::failed;
  const Outcome o = finish(kgen_softmax_backward_variant(v.name, s.log, d, s.outer, s.axis, s.inner, by.p, bdy.p,
                                                         bdx.p, nullptr),
                           where);
  if (o != Outcome::ran) return o;
  const Host dx = download(bdx, d);
  const Tol t = tol_of(d);
  Check c(where);
  for (int64_t o2 = 0; o2 < s.outer; ++o2)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t a) { return (o2 * s.axis + a) * s.inner + i; };
      double sum = 0, sum_abs = 0;
      for (int64_t a = 0; a < s.axis; ++a) {
        const double term = s.log ? dy.get(at(a)) : y.get(at(a)) * dy.get(at(a));
        sum += term, sum_abs += std::fabs(term);
      }
      for (int64_t a = 0; a < s.axis; ++a) {
        const double yv = y.get(at(a)), g = dy.get(at(a));
        const double want = s.log ? g - std::exp(yv) * sum : (g - sum) * yv;
        const double mag = s.log ? std::fabs(g) + std::exp(yv) * sum_abs : (std::fabs(g) + sum_abs) * std::fabs(yv);
        c.near(at(a), dx.get(at(a)), want, t.rtol * mag + t.atol);
      }
    }
  return c.done();
}

// ---- reduce ------------------------------------------------------------

struct ReduceSpec {
  kgen_reduce_op_t op;
  int64_t outer, reduce, inner;
};

std::string text(const ReduceSpec& s) {
  static const char* const kOps[] = {"sum", "mean", "max", "min", "argmax", "argmin"};
  return std::string(kOps[s.op]) + " outer=" + std::to_string(s.outer) + " reduce=" + std::to_string(s.reduce) +
         " inner=" + std::to_string(s.inner);
}

std::vector<ReduceSpec> reduce_specs(const kgen::gen::ReduceParams& q, kgen_dtype_t d) {
  using T = kgen::gen::ReduceTier;
  const int64_t p = q.pack_size, u = q.fold, g = q.group_width, b = q.block_size, l = q.lanes;
  const kgen_reduce_op_t mean = floating(d) ? KGEN_REDUCE_MEAN : KGEN_REDUCE_SUM;
  switch (q.tier) {
    case T::thread:
      return {{KGEN_REDUCE_SUM, 37, p * (3 * u + 1), 1}, {KGEN_REDUCE_ARGMAX, 300, p * 5, 1},
              {KGEN_REDUCE_MAX, 5, p * (2 * u + 1), 1}};
    case T::warp:
      // several batches of the group and a tail; fewer packs than lanes
      return {{KGEN_REDUCE_SUM, 37, p * (2 * g * u + 3), 1}, {KGEN_REDUCE_ARGMAX, 9, p * (g + 1), 1},
              {KGEN_REDUCE_MIN, 3, p, 1}};
    case T::block:
      return {{KGEN_REDUCE_SUM, 5, p * (b * u + 7), 1}, {KGEN_REDUCE_ARGMIN, 3, p * (b / 2 + 1), 1},
              {mean, 2, p * 3, 1}};
    case T::split: {
      // 4 and 6 batches of the block a row: 2 and 3 blocks share a row (the
      // combine by the last block); then the whole tensor as one row
      const int64_t chunk = b * u;
      return {{KGEN_REDUCE_SUM, 3, p * (4 * chunk + 5), 1}, {KGEN_REDUCE_ARGMAX, 1, p * (6 * chunk + 3), 1},
              {mean, 2, p * 7, 1}};
    }
    case T::col: {
      // a partial tile of columns; a reduced axis split over 2 blocks
      const int64_t chunk = (b / l) * u;
      return {{KGEN_REDUCE_SUM, 3, 37, p * (l + 3)}, {KGEN_REDUCE_ARGMAX, 2, 4 * chunk + 3, p * 3},
              {KGEN_REDUCE_MAX, 1, 5, p}};
    }
    case T::col_thread:
      // a fold's tail; outer positions sharing a warp
      return {{KGEN_REDUCE_SUM, 3, u + 1, p * 37}, {KGEN_REDUCE_ARGMIN, 50, 2 * u, p}, {mean, 1, 1, p * 5}};
    case T::generic:
      return {{mean, 7, 1001, 1}, {KGEN_REDUCE_ARGMAX, 3, 37, 13}, {KGEN_REDUCE_SUM, 1, 4 * b * u + 3, 1}};
  }
  return {};
}

Outcome run_reduce(const VariantInfo& v, const ReduceSpec& s, Rng& rng, const kgen::DeviceInfo& dev,
                   const std::string& where) {
  const auto d = static_cast<kgen_dtype_t>(v.element);
  const bool arg = s.op == KGEN_REDUCE_ARGMAX || s.op == KGEN_REDUCE_ARGMIN;
  const int64_t n = s.outer * s.reduce * s.inner, outs = s.outer * s.inner;
  const Host x = random_values(d, n, rng);
  Buffer bx(n * kgen_dtype_size(d)), bout(outs * (arg ? 8 : kgen_dtype_size(d)));
  if (!upload(bx, x.bytes.data(), where) || !poison(bout, where)) return Outcome::failed;
  // the workspace this variant's plan needs, exactly
  kgen::reduce::Problem prob{s.op, d, s.outer, s.reduce, s.inner, bx.p, bout.p, nullptr, 0, &dev};
  const size_t ws_bytes = kgen::reduce::plan_for(v, prob).bytes;
  Buffer ws(ws_bytes);
  if (!ws.ok()) return fail(where, "cudaMalloc of the workspace failed"), Outcome::failed;
  const Outcome o = finish(
      kgen_reduce_variant(v.name, s.op, d, s.outer, s.reduce, s.inner, bx.p, bout.p, ws.p, ws_bytes, nullptr), where);
  if (o != Outcome::ran) return o;

  const Host out = download(bout, arg ? KGEN_INT64 : d);
  Check c(where);
  const Tol t = tol_of(d);
  const double acc = d == KGEN_FLOAT64 ? 1e-12 : 1e-5;  // half types accumulate in float32
  for (int64_t o2 = 0; o2 < s.outer; ++o2)
    for (int64_t i = 0; i < s.inner; ++i) {
      double sum = 0, sum_abs = 0, best = 0;
      int64_t wrapped = 0, best_at = 0;
      for (int64_t r = 0; r < s.reduce; ++r) {
        const double val = x.get((o2 * s.reduce + r) * s.inner + i);
        sum += val, sum_abs += std::fabs(val);
        wrapped += static_cast<int64_t>(val);
        const bool better = s.op == KGEN_REDUCE_MAX || s.op == KGEN_REDUCE_ARGMAX ? val > best : val < best;
        if (r == 0 || better) best = val, best_at = r;
      }
      const int64_t idx = o2 * s.inner + i;
      const double got = out.get(idx);
      switch (s.op) {
        case KGEN_REDUCE_SUM:
          if (d == KGEN_INT32) c.exact(idx, got, static_cast<int32_t>(static_cast<uint32_t>(wrapped)));
          else c.near(idx, got, sum, t.rtol * std::fabs(sum) + acc * sum_abs + t.atol);
          break;
        case KGEN_REDUCE_MEAN: {
          const double mean = sum / s.reduce;
          c.near(idx, got, mean, t.rtol * std::fabs(mean) + acc * sum_abs / s.reduce + t.atol);
          break;
        }
        case KGEN_REDUCE_MAX:
        case KGEN_REDUCE_MIN: c.exact(idx, got, best); break;
        default: c.exact(idx, got, static_cast<double>(best_at));
      }
    }
  return c.done();
}

// ---- topk --------------------------------------------------------------

struct TopkSpec {
  int64_t batch, n, k;
  int largest, sorted;
};

std::string text(const TopkSpec& s) {
  return "batch=" + std::to_string(s.batch) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
         (s.largest ? " largest" : " smallest") + (s.sorted ? " sorted" : " unsorted");
}

int64_t round_up(int64_t a, int64_t m) { return (a + m - 1) / m * m; }

std::vector<TopkSpec> topk_specs(const kgen::gen::TopkParams& q) {
  using T = kgen::gen::TopkTier;
  const int64_t p = q.pack_size;
  switch (q.tier) {
    case T::queue: {
      // k within the fast path, then the whole queue
      const int64_t full = 32 * int64_t{q.capacity};
      return {{37, p * 97, 7, 1, 1}, {5, std::max(p * 97, round_up(full + 5, p)), full, 0, 0}};
    }
    case T::tourney: {
      // a row a pack short of the warp's capacity, k past a lane's items,
      // and unsorted past k 32 (the ballots' placement); a full one with
      // k = 32
      const int64_t cap = 32 * int64_t{q.items};
      return {{5, cap - p, q.items + 3, 1, 1}, {4, cap - p, 40, 1, 0}, {3, cap, 32, 0, 0}};
    }
    case T::block: {
      // a row a pack short of the block's capacity; a full one with k past
      // one block's sort (or k == n where the capacity is smaller)
      const int64_t cap = int64_t{q.block_size} * q.items;
      return {{5, cap - p, 33, 1, 1}, {3, cap, std::min<int64_t>(cap, 5000), 0, 0}};
    }
    case T::cluster: {
      // a row over the most CTAs a pack short of their capacity; a short
      // one spread over idle SMs, k at the most; rows off the packs'
      // alignment whose spans reach within a pack of the capacity, the
      // last one's last pack partial at the end of x
      const int64_t cap = 8 * int64_t{q.block_size} * q.items;
      return {{3, cap - p, 50, 1, 1}, {2, round_up(1000, p), 128, 0, 0}, {3, cap - 2 * p + 1, 50, 1, 0}};
    }
    case T::stream: {
      // rows of five chunks, a pack and an element (rows off the packs'
      // alignment, the last one's last pack partial at the end of x), k at
      // the most the buffer allows; a row shorter than one chunk; one row
      // in slices (stream_splits), its last slice short and its last pack
      // partial; the large buffer at its most k too, in one block and in
      // slices (the block's sort of k past kStreamK)
      const int64_t chunk = int64_t{q.block_size} * q.items;
      const int64_t most = q.buffer / (2 * q.items);
      if (q.buffer > kgen::topk::kStreamBuffer)
        return {{3, 5 * chunk + p + 1, most, 1, 1}, {2, round_up(1000, p), 50, 0, 0},
                {1, 4 * 32768 + 3 * p + 1, 300, 1, 0}, {1, 4 * 32768 + 3 * p + 1, 40, 1, 0}};
      return {{3, 5 * chunk + p + 1, std::min<int64_t>(128, most), 1, 1},
              {2, round_up(1000, p), 50, 0, 0},
              {1, 4 * 32768 + 3 * p + 1, 40, 1, 0}};
    }
    case T::multi: {
      // 3 blocks a row with the bound pass (small k); k past one block's
      // sort, without it (candidate lists, the global sort)
      const int64_t chunk = int64_t{q.block_size} * p * 4;
      return {{2, 2 * chunk + 3 * p, 9, 1, 1}, {3, round_up(std::max<int64_t>(3 * chunk, 10000) + p, p), 4500, 0, 1}};
    }
    case T::generic:
      return {{7, 1001, 10, 1, 1}, {2, 40003, 5000, 0, 1}, {3, 5, 5, 1, 0}};
  }
  return {};
}

Outcome run_topk(const VariantInfo& v, const TopkSpec& s, Rng& rng, const std::string& where) {
  const auto d = static_cast<kgen_dtype_t>(v.element);
  const int e = kgen_dtype_size(d);
  const Host x = random_values(d, s.batch * s.n, rng);
  Buffer bx(s.batch * s.n * e), bv(s.batch * s.k * e), bi(s.batch * s.k * 8);
  if (!upload(bx, x.bytes.data(), where) || !poison(bv, where) || !poison(bi, where)) return Outcome::failed;
  size_t ws_bytes = 0;
  const kgen_status_t wst = kgen_topk_workspace_size(v.name, d, s.batch, s.n, s.k, s.largest, s.sorted, bx.p, &ws_bytes);
  if (wst != KGEN_OK) return finish(wst, where + " (workspace size)");
  Buffer ws(ws_bytes);
  if (!ws.ok()) return fail(where, "cudaMalloc of the workspace failed"), Outcome::failed;
  const Outcome o = finish(kgen_topk_variant(v.name, d, s.batch, s.n, s.k, s.largest, s.sorted, bx.p, bv.p,
                                             static_cast<int64_t*>(bi.p), ws.p, ws_bytes, nullptr),
                           where);
  if (o != Outcome::ran) return o;

  const Host values = download(bv, d), indices = download(bi, KGEN_INT64);
  Check c(where);
  std::vector<int64_t> order(s.n);
  for (int64_t r = 0; r < s.batch; ++r) {
    auto val = [&](int64_t j) { return x.get(r * s.n + j); };
    for (int64_t j = 0; j < s.n; ++j) order[j] = j;
    // best first; among equal values the lower index
    std::partial_sort(order.begin(), order.begin() + s.k, order.end(), [&](int64_t a, int64_t b) {
      const double va = val(a), vb = val(b);
      if (va != vb) return s.largest ? va > vb : va < vb;
      return a < b;
    });
    std::vector<int64_t> want(order.begin(), order.begin() + s.k);
    if (!s.sorted) {
      // those strictly better than the k-th, then those equal to it, each
      // in ascending index order
      const double kth = val(want.back());
      std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) {
        const bool ea = val(a) == kth, eb = val(b) == kth;
        return ea != eb ? eb : a < b;
      });
    }
    for (int64_t j = 0; j < s.k; ++j) {
      c.exact(r * s.k + j, values.get(r * s.k + j), val(want[j]));
      c.exact(r * s.k + j, indices.get(r * s.k + j), static_cast<double>(want[j]));
    }
  }
  return c.done();
}

// ---- permute, expand, where (bit copies) ---------------------------------

struct PermuteSpec {
  Dims shape;
  std::vector<int> perm;
};

std::string text(const PermuteSpec& s) {
  std::string p;
  for (int k : s.perm) p += (p.empty() ? "" : ",") + std::to_string(k);
  return "shape=" + dims_text(s.shape) + " perm=(" + p + ")";
}

// dims that stay apart after simplification (a reversal never keeps two
// src-adjacent dims in order)
PermuteSpec reversed(Dims shape) {
  std::vector<int> perm(shape.size());
  for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int>(perm.size() - 1 - k);
  return {shape, perm};
}

std::vector<PermuteSpec> permute_specs(const kgen::gen::PermuteParams& q) {
  using T = kgen::gen::PermuteTier;
  const Dims odd = {5, 9, 7, 3, 5, 3, 2, 3}, other = {4, 3, 6, 5, 2, 3, 2, 2};
  switch (q.tier) {
    case T::elem: {
      // its rank, reversed; then adjacent pairs swapped (also keeps rank)
      const size_t r = static_cast<size_t>(q.rank);
      if (r == 2) return {{{33, 47}, {1, 0}}, {{2, 513}, {1, 0}}};
      std::vector<int> swapped(r);
      for (size_t k = 0; k < r; ++k) swapped[k] = static_cast<int>(k + 1 < r || r % 2 == 0 ? k ^ 1 : k);
      return {reversed(Dims(odd.begin(), odd.begin() + r)), {Dims(other.begin(), other.begin() + r), swapped}};
    }
    case T::row: {
      const int64_t chunk = int64_t{q.group} * q.unroll;
      return {{{5, 7, 37}, {1, 0, 2}}, {{6, 2, chunk + 5}, {1, 0, 2}}, {{3, 4, 5, 2 * chunk + 1}, {2, 0, 1, 3}}};
    }
    case T::tile: {
      // partial tiles in both directions; batch dims on both sides of the tile
      const int64_t v = q.pack;
      return {{{v * 45, v * 37}, {1, 0}}, {{2, v * 5, 3, v * 7}, {0, 3, 2, 1}}, {{3, v * 9, v * 13}, {0, 2, 1}}};
    }
    case T::generic:
      return {{{33, 47}, {1, 0}}, {{2, 3, 5, 7, 3}, {4, 2, 0, 3, 1}}};
  }
  return {};
}

Outcome run_permute(const VariantInfo& v, const PermuteSpec& s, Rng& rng, const std::string& where) {
  const size_t b = static_cast<size_t>(v.element - kgen::movement_key(0));  // elements of the variant's unit
  const int64_t n = numel(s.shape);
  const int rank = static_cast<int>(s.shape.size());
  const std::vector<unsigned char> src = random_bytes(n * b, rng);
  Buffer bs(n * b), bd(n * b);
  if (!upload(bs, src.data(), where) || !poison(bd, where)) return Outcome::failed;
  const Outcome o = finish(kgen_permute_variant(v.name, b, rank, s.shape.data(), s.perm.data(), bs.p, bd.p, nullptr),
                           where);
  if (o != Outcome::ran) return o;
  const std::vector<unsigned char> dst = download(bd);
  Dims src_stride(rank), dst_shape(rank);
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; --k) src_stride[k] = stride, stride *= s.shape[k];
  for (int k = 0; k < rank; ++k) dst_shape[k] = s.shape[s.perm[k]];
  Check c(where);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, off = 0;
    for (int k = rank - 1; k >= 0; --k) off += rest % dst_shape[k] * src_stride[s.perm[k]], rest /= dst_shape[k];
    c.exact(i, std::memcmp(&dst[i * b], &src[off * b], b) == 0, 1);
  }
  return c.done();
}

struct BroadcastKnobs {
  int tier, pack, rank;
};
template <class P>
BroadcastKnobs broadcast_knobs(const void* params) {
  const P& q = *static_cast<const P*>(params);
  return {static_cast<int>(q.tier), q.pack, q.rank};
}
enum { kFlat = 0, kElem = 1, kGeneric = 2 };
static_assert(static_cast<int>(kgen::gen::ExpandTier::elem) == kElem &&
                  static_cast<int>(kgen::gen::WhereTier::generic) == kGeneric,
              "expand and where share their tiers");

// The dtype a byte mover's unit is made of: one element (two float64 for
// a 16-byte unit, which the innermost extents then hold in pairs).
kgen_dtype_t unit_dtype(int bytes) {
  switch (bytes) {
    case 1: return KGEN_UINT8;
    case 2: return KGEN_FLOAT16;
    case 4: return KGEN_FLOAT32;
    default: return KGEN_FLOAT64;
  }
}

// Leading dims that alternate between broadcast (1) and whole in `bcast`,
// so that no two adjacent dims merge; innermost dim `inner`.
void alternating(int rank, int64_t inner, Dims* full, Dims* bcast) {
  const Dims lead = {3, 4, 5, 2, 3, 2, 3};
  full->assign(lead.begin(), lead.begin() + (rank - 1));
  full->push_back(inner);
  *bcast = *full;
  for (int k = 0; k < rank - 1; ++k)
    if ((rank - 2 - k) % 2 == 0) (*bcast)[k] = 1;
}

struct ExpandSpec {
  Dims src, dst;
};
std::string text(const ExpandSpec& s) { return "src=" + dims_text(s.src) + " dst=" + dims_text(s.dst); }

std::vector<ExpandSpec> expand_specs(const BroadcastKnobs& k, int unit) {
  const int64_t epu = unit == 16 ? 2 : 1, v = k.pack;
  switch (k.tier) {
    case kFlat:  // fills, with a tail past the last pack
      return {{{1, epu}, {v * 37 + 1, epu}}, {{1, 1, epu}, {3, 5 * v + 1, epu}}};
    case kElem: {
      std::vector<ExpandSpec> specs(2);
      alternating(k.rank, v * 13 * epu, &specs[0].dst, &specs[0].src);
      alternating(k.rank, v * 3 * epu, &specs[1].dst, &specs[1].src);
      specs[1].dst[0] = 7;  // a different leading extent
      if (specs[1].src[0] != 1) specs[1].src[0] = 7;
      return specs;
    }
    default:
      return {{{3, 1, 5 * epu}, {2, 3, 4, 5 * epu}}, {{7, 1, epu}, {7, 9, epu}}};
  }
}

Outcome run_expand(const VariantInfo& v, const ExpandSpec& s, Rng& rng, const std::string& where) {
  const int unit = v.element - kgen::movement_key(0);
  const kgen_dtype_t d = unit_dtype(unit);
  const size_t e = kgen_dtype_size(d);
  const int64_t ns = numel(s.src), nd = numel(s.dst);
  const std::vector<unsigned char> src = random_bytes(ns * e, rng);
  Buffer bs(ns * e), bd(nd * e);
  if (!upload(bs, src.data(), where) || !poison(bd, where)) return Outcome::failed;
  const Outcome o = finish(kgen_expand_variant(v.name, d, static_cast<int>(s.src.size()), s.src.data(),
                                               static_cast<int>(s.dst.size()), s.dst.data(), bs.p, bd.p, nullptr),
                           where);
  if (o != Outcome::ran) return o;
  const std::vector<unsigned char> dst = download(bd);
  Check c(where);
  for (int64_t i = 0; i < nd; ++i)
    c.exact(i, std::memcmp(&dst[i * e], &src[broadcast_offset(s.dst, s.src, i) * e], e) == 0, 1);
  return c.done();
}

struct WhereSpec {
  Dims cond, x, y;
};
std::string text(const WhereSpec& s) {
  return "cond=" + dims_text(s.cond) + " x=" + dims_text(s.x) + " y=" + dims_text(s.y);
}

std::vector<WhereSpec> where_specs(const BroadcastKnobs& k) {
  const int64_t v = k.pack;
  switch (k.tier) {
    case kFlat:  // everything whole; x a scalar
      return {{{v * 37 + 1}, {v * 37 + 1}, {v * 37 + 1}}, {{4, v * 5 + 3}, {}, {4, v * 5 + 3}}};
    case kElem: {
      std::vector<WhereSpec> specs(2);
      alternating(k.rank, v * 13, &specs[0].cond, &specs[0].x);
      specs[0].y = {v * 13};
      alternating(k.rank, v * 3, &specs[1].x, &specs[1].cond);  // cond broadcast, x whole
      specs[1].y = {1};
      return specs;
    }
    default:
      return {{{5, 1, 7}, {3, 7}, {1}}, {{6, 1, 9}, {1, 8, 1}, {9}}};
  }
}

Outcome run_where(const VariantInfo& v, const WhereSpec& s, Rng& rng, const std::string& where) {
  const kgen_dtype_t d = unit_dtype(v.element - kgen::movement_key(0));
  const size_t e = kgen_dtype_size(d);
  int ranks[3];
  const Dims* in[3] = {&s.cond, &s.x, &s.y};
  const int64_t* shapes[3];
  for (int k = 0; k < 3; ++k) ranks[k] = static_cast<int>(in[k]->size()), shapes[k] = in[k]->data();
  int out_rank = 0;
  int64_t out_dims[8];
  if (kgen_broadcast_shape(3, ranks, shapes, &out_rank, out_dims) != KGEN_OK)
    return fail(where, std::string("broadcast shape: ") + kgen_last_error()), Outcome::failed;
  const Dims out(out_dims, out_dims + out_rank);
  const int64_t n = numel(out);
  std::vector<unsigned char> cond(numel(s.cond));
  std::bernoulli_distribution coin(0.5);
  for (auto& c : cond) c = coin(rng);
  const std::vector<unsigned char> x = random_bytes(numel(s.x) * e, rng), y = random_bytes(numel(s.y) * e, rng);
  Buffer bc(cond.size()), bx(x.size()), by(y.size()), bo(n * e);
  if (!upload(bc, cond.data(), where) || !upload(bx, x.data(), where) || !upload(by, y.data(), where) ||
      !poison(bo, where))
    return Outcome::failed;
  const Outcome o = finish(kgen_where_variant(v.name, d, ranks[0], shapes[0], ranks[1], shapes[1], ranks[2], shapes[2],
                                              bc.p, bx.p, by.p, bo.p, nullptr),
                           where);
  if (o != Outcome::ran) return o;
  const std::vector<unsigned char> got = download(bo);
  Check c(where);
  for (int64_t i = 0; i < n; ++i) {
    const bool take_x = cond[broadcast_offset(out, s.cond, i)] != 0;
    const unsigned char* want = take_x ? &x[broadcast_offset(out, s.x, i) * e] : &y[broadcast_offset(out, s.y, i) * e];
    c.exact(i, std::memcmp(&got[i * e], want, e) == 0, 1);
  }
  return c.done();
}

// ---- driver ------------------------------------------------------------

int tier_of(const VariantInfo& v) {
  using kgen::Family;
  switch (v.family) {
    case Family::softmax: return softmax_knobs<kgen::gen::SoftmaxParams>(v.params).tier;
    case Family::softmax_backward: return softmax_knobs<kgen::gen::SoftmaxBackwardParams>(v.params).tier;
    case Family::reduce: return static_cast<int>(static_cast<const kgen::gen::ReduceParams*>(v.params)->tier);
    case Family::topk: return static_cast<int>(static_cast<const kgen::gen::TopkParams*>(v.params)->tier);
    case Family::permute: return static_cast<int>(static_cast<const kgen::gen::PermuteParams*>(v.params)->tier);
    case Family::expand: return broadcast_knobs<kgen::gen::ExpandParams>(v.params).tier;
    case Family::where: return broadcast_knobs<kgen::gen::WhereParams>(v.params).tier;
  }
  return 0;
}

struct Counts {
  int run = 0, skipped = 0, failed = 0, problems = 0, unsupported = 0;
};

// Runs the specs of one variant, up to `limit` that it supports.
template <class Spec, class Fn>
void run_specs(const VariantInfo& v, const std::vector<Spec>& specs, int limit, Counts& n, Fn fn) {
  uint64_t seed = 1469598103934665603ull;  // FNV-1a of the name: the same data every run
  for (const char* c = v.name; *c; ++c) seed = (seed ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  int ran = 0;
  bool bad = false;
  for (size_t k = 0; k < specs.size() && ran < limit && !fatal; ++k) {
    Rng rng(seed + k);
    const std::string where = std::string(v.name) + " [" + text(specs[k]) + "]";
    if (verbose) std::printf("  %s\n", where.c_str());
    switch (fn(specs[k], rng, where)) {
      case Outcome::ran: ++ran; break;
      case Outcome::unsupported: ++n.unsupported; break;
      case Outcome::failed: ++ran, bad = true; break;
    }
  }
  n.problems += ran;
  if (bad) ++n.failed;
  if (ran) ++n.run;
  else if (!fatal) ++n.skipped, std::printf("SKIP %s: supports none of its %zu problems\n", v.name, specs.size());
}

void run_variant(const VariantInfo& v, int ordinal, int limit, const kgen::DeviceInfo& dev, Counts& n) {
  using kgen::Family;
  const auto d = static_cast<kgen_dtype_t>(v.element);
  switch (v.family) {
    case Family::softmax:
      run_specs(v, softmax_specs(softmax_knobs<kgen::gen::SoftmaxParams>(v.params), false, ordinal), limit, n,
                [&](const SoftmaxSpec& s, Rng& r, const std::string& w) { return run_softmax(v, s, r, w); });
      break;
    case Family::softmax_backward:
      run_specs(v, softmax_specs(softmax_knobs<kgen::gen::SoftmaxBackwardParams>(v.params), true, ordinal), limit, n,
                [&](const SoftmaxSpec& s, Rng& r, const std::string& w) { return run_softmax_backward(v, s, r, w); });
      break;
    case Family::reduce:
      run_specs(v, reduce_specs(*static_cast<const kgen::gen::ReduceParams*>(v.params), d), limit, n,
                [&](const ReduceSpec& s, Rng& r, const std::string& w) { return run_reduce(v, s, r, dev, w); });
      break;
    case Family::topk:
      run_specs(v, topk_specs(*static_cast<const kgen::gen::TopkParams*>(v.params)), limit, n,
                [&](const TopkSpec& s, Rng& r, const std::string& w) { return run_topk(v, s, r, w); });
      break;
    case Family::permute:
      run_specs(v, permute_specs(*static_cast<const kgen::gen::PermuteParams*>(v.params)), limit, n,
                [&](const PermuteSpec& s, Rng& r, const std::string& w) { return run_permute(v, s, r, w); });
      break;
    case Family::expand:
      run_specs(v, expand_specs(broadcast_knobs<kgen::gen::ExpandParams>(v.params), v.element - kgen::movement_key(0)),
                limit, n, [&](const ExpandSpec& s, Rng& r, const std::string& w) { return run_expand(v, s, r, w); });
      break;
    case Family::where:
      run_specs(v, where_specs(broadcast_knobs<kgen::gen::WhereParams>(v.params)), limit, n,
                [&](const WhereSpec& s, Rng& r, const std::string& w) { return run_where(v, s, r, w); });
      break;
  }
}

// At most `cap` variants of a family: every tier in turn, each tier's share
// spread evenly over its variants (and so over its dtypes).
std::vector<const VariantInfo*> sample(const std::vector<const VariantInfo*>& all, int cap) {
  if (cap <= 0 || static_cast<int>(all.size()) <= cap) return all;
  std::map<int, std::vector<const VariantInfo*>> tiers;
  for (const VariantInfo* v : all) tiers[tier_of(*v)].push_back(v);
  std::map<int, int> share;
  for (int taken = 0; taken < cap;)
    for (auto& t : tiers)
      if (taken < cap && share[t.first] < static_cast<int>(t.second.size())) ++share[t.first], ++taken;
  std::vector<const VariantInfo*> out;
  for (auto& t : tiers)
    for (int j = 0; j < share[t.first]; ++j)
      out.push_back(t.second[static_cast<size_t>((j + 0.5) * t.second.size() / share[t.first])]);
  return out;
}

int usage() {
  std::printf("usage: kgen-sanitize-sample [--family NAME[,NAME]] [--max-per-family N] [--problems N] [--verbose]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string families;
  int cap = 0, limit = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--family" && has_value) families = "," + std::string(argv[++i]) + ",";
    else if (a == "--max-per-family" && has_value) cap = std::atoi(argv[++i]);
    else if (a == "--problems" && has_value) limit = std::max(1, std::atoi(argv[++i]));
    else if (a == "--verbose") verbose = true;
    else return usage();
  }

  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("no CUDA device (%s): skipping\n", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 77;
  }
  const kgen::DeviceInfo* dev = nullptr;
  if (kgen::current_device(&dev) != KGEN_OK) {
    std::printf("FAIL: %s\n", kgen_last_error());
    return 1;
  }
  std::printf("GPU: %s, %d SMs; %s build, level %s, %lld variants\n", dev->name, dev->sm_count, kgen_build_arch(),
              kgen_build_level(), static_cast<long long>(kgen_variant_count()));

  // the families in registry order, each with its variants
  std::vector<std::string> order;
  std::map<std::string, std::vector<const VariantInfo*>> by_family;
  for (int64_t i = 0; i < kgen_variant_count(); ++i) {
    const std::string f = kgen_variant_family(i);
    if (!families.empty() && families.find("," + f + ",") == std::string::npos) continue;
    if (!by_family.count(f)) order.push_back(f);
    by_family[f].push_back(kgen::Registry::find(kgen_variant_name(i)));
  }
  if (order.empty()) {
    std::printf("FAIL: no compiled variant of the families %s\n", families.c_str());
    return 1;
  }

  Counts total;
  for (const std::string& f : order) {
    Counts n;
    const std::vector<const VariantInfo*> chosen = sample(by_family[f], cap);
    for (size_t k = 0; k < chosen.size() && !fatal; ++k) run_variant(*chosen[k], static_cast<int>(k), limit, *dev, n);
    std::printf("%s: %d variants run, %d skipped (of %zu compiled), %d problems, %d unsupported problems, %d failed\n",
                f.c_str(), n.run, n.skipped, by_family[f].size(), n.problems, n.unsupported, n.failed);
    total.run += n.run, total.problems += n.problems;
    if (fatal) {
      std::printf("FAIL: a kernel left the CUDA context unusable; stopping\n");
      break;
    }
  }
  std::printf("sanitize sample: %d variants run, %d problems, %d failures\n", total.run, total.problems, failures);
  // destroy the context, so that memcheck's leak check sees every allocation
  cudaDeviceReset();
  return failures ? 1 : 0;
}
