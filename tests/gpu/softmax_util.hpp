// Shared by the softmax GPU tests: the float64 reference over any dim, the
// facts of a compiled variant that decide which problems it can run, and the
// shapes that reach every tier.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu_util.hpp"
#include "reference.hpp"
#include "kgen_params.gen.hpp"
#include "registry.hpp"
#include "softmax/problem.hpp"

namespace test {

// float64 softmax (log_softmax when log) of x along the axis of a row-major
// (outer, axis, inner) tensor, PyTorch's semantics (reference.hpp).
inline std::vector<double> softmax_reference(const std::vector<double>& x, int64_t outer, int64_t axis,
                                             int64_t inner, bool log) {
  return rnd::softmax_ref(x, outer, axis, inner, log);
}

// Unit roundoff of the arithmetic: half types compute in float32.
inline double compute_eps(kgen_dtype_t d) { return d == KGEN_FLOAT64 ? 0x1p-53 : 0x1p-24; }

// tolerance(d)'s relative part (the rounding of dx to the dtype), with an
// absolute part that only covers dx's underflow: float16's subnormal
// spacing, the flush-to-zero threshold of float32 and bfloat16.  The slack
// below covers the arithmetic; the forward's atol would let whole gradients
// of long rows pass, their elements being about 1/axis.
inline Tolerance backward_tolerance(kgen_dtype_t d) {
  const double atol = d == KGEN_FLOAT16 ? 0x1p-24 : d == KGEN_FLOAT64 ? 0x1p-1022 : 0x1p-126;
  return {atol, tolerance(d).rtol};
}

// One backward problem: inputs as stored in the dtype and the float64
// expected dx with its per-element slack.
struct BackwardCase {
  HostTensor y, dy;
  std::vector<double> want, slack;
};

// y: softmax (log: log_softmax) of random x along the axis, computed in
// float64 and rounded to the dtype, as a forward pass hands it over; dy
// uniform in [-1, 1].  The reference reads the rounded y and dy.
//
// Tolerance.  The kernels compute (half types in float32) with unit roundoff
// u, and the sums along the axis carry an error of at most
// g * sum|terms| with g = u * (16 + 2 log2(axis)): partial sums over the
// threads of a block and a tree across them; dy's random signs keep the
// sequential parts far below that bound.  dx then subtracts that sum from
// dy, where the relative error of a result near 0 grows without bound, so
// the check adds an absolute slack per element, on top of
// backward_tolerance(d) (the rounding of dx itself):
//   softmax:     dx_i = (dy_i - s) y_i, s = sum y*dy
//                slack_i = y_i * (g sum|y*dy| + 2u (|dy_i| + |s|))
//   log_softmax: dx_i = dy_i - p_i S, p_i = exp(y_i), S = sum dy
//                slack_i = p_i (g sum|dy| + e_i |S|) + 2u (|dy_i| + p_i |S|)
//                with e_i = u (4 + 2 |y_i|), a fast exp's relative error.
// A wrong element, stride, sum or formula is off by O(|dy|), far outside.
inline BackwardCase backward_case(kgen_dtype_t d, int64_t outer, int64_t axis, int64_t inner, bool log) {
  const size_t n = static_cast<size_t>(outer * axis * inner);
  const HostTensor x = random_tensor(d, n);
  BackwardCase c{to_tensor(d, softmax_reference(values(x), outer, axis, inner, log)),
         uniform_tensor(d, n, -1.0, 1.0), {}, {}};
  rnd::BackwardRef ref = rnd::backward_ref(values(c.y), values(c.dy), outer, axis, inner, log, compute_eps(d));
  c.want = std::move(ref.want);
  c.slack = std::move(ref.slack);
  return c;
}

// The tiers of the softmax and softmax_backward families (one parameter space).
enum class Tier { warp, smem, uncached, block, cluster, split, tile, strided, strided_uncached, column, generic, span, grid };

struct VariantFacts {
  const char* name;
  Tier tier;
  int pack_size, cols_per_thread, group_width, padding, col_lanes, axis_per_thread;
  bool backward;  // of the softmax_backward family
  int block_size;

  // row tiers run inner == 1 only; the strided ones, generic and the split
  // any inner
  bool row() const {
    return tier == Tier::warp || tier == Tier::smem || tier == Tier::uncached || tier == Tier::block ||
           tier == Tier::cluster || tier == Tier::span;
  }
  // the tiers of a dim that is not the last only (no fused mask)
  bool strided() const { return tier == Tier::strided || tier == Tier::strided_uncached || tier == Tier::column; }
  // the tiers that read a mask (rules.cpp supports_as): the block, cluster,
  // split, tile, span and grid tiers and the strided ones take none
  bool fuses_mask() const {
    return tier == Tier::warp || tier == Tier::smem || tier == Tier::uncached || tier == Tier::generic;
  }
  // the longest row of a warp-tier variant
  int64_t warp_reach() const { return int64_t{cols_per_thread} * group_width; }
  // the longest axis of a strided (register) variant: a block of up to
  // strided_max_warps warps (fewer backward), each 32 / col_lanes axis rows
  // of axis_per_thread values
  int64_t strided_reach() const { return kgen::softmax::strided_reach(col_lanes, axis_per_thread, backward); }
};

template <class Params>
VariantFacts facts_of(const kgen::VariantInfo* v) {
  const Params& p = *static_cast<const Params*>(v->params);
  using T = decltype(p.tier);
  Tier tier = Tier::generic;
  switch (p.tier) {
    case T::warp: tier = Tier::warp; break;
    case T::smem: tier = Tier::smem; break;
    case T::uncached: tier = Tier::uncached; break;
    case T::block: tier = Tier::block; break;
    case T::cluster: tier = Tier::cluster; break;
    case T::split: tier = Tier::split; break;
    case T::tile: tier = Tier::tile; break;
    case T::strided: tier = Tier::strided; break;
    case T::strided_uncached: tier = Tier::strided_uncached; break;
    case T::column: tier = Tier::column; break;
    case T::generic: tier = Tier::generic; break;
    case T::span: tier = Tier::span; break;
    case T::grid: tier = Tier::grid; break;
  }
  return {v->name,       tier,      p.pack_size,   p.cols_per_thread,
          p.group_width, p.padding, p.col_lanes,   p.axis_per_thread,
          std::is_same<Params, kgen::gen::SoftmaxBackwardParams>::value, p.block_size};
}

// Every compiled variant of the family (softmax or softmax_backward) and dtype.
inline std::vector<VariantFacts> family_variants(kgen::Family f, kgen_dtype_t d) {
  std::vector<VariantFacts> out;
  for (const kgen::VariantInfo* v : kgen::Registry::of(f, d))
    out.push_back(f == kgen::Family::softmax_backward ? facts_of<kgen::gen::SoftmaxBackwardParams>(v)
                                                      : facts_of<kgen::gen::SoftmaxParams>(v));
  return out;
}

inline VariantFacts find_facts(kgen::Family f, const char* name) {
  const kgen::VariantInfo* v = kgen::Registry::find(name);
  REQUIRE(v != nullptr);
  REQUIRE(v->family == f);
  return f == kgen::Family::softmax_backward ? facts_of<kgen::gen::SoftmaxBackwardParams>(v)
                                             : facts_of<kgen::gen::SoftmaxParams>(v);
}

// The exact reach of every compiled warp variant of the family, and one pack
// short of it, so that variants without padding run too.
inline std::vector<int64_t> warp_reaches(kgen::Family f, kgen_dtype_t d) {
  std::vector<int64_t> out;
  for (const VariantFacts& v : family_variants(f, d)) {
    if (v.tier != Tier::warp) continue;
    out.push_back(v.warp_reach());
    if (v.warp_reach() > v.pack_size) out.push_back(v.warp_reach() - v.pack_size);
  }
  return out;
}

// A tensor seen as (outer, axis, inner) around one of its dims.
struct DimCase {
  std::string text;
  int64_t outer, axis, inner;
  size_t size() const { return static_cast<size_t>(outer * axis * inner); }
};

inline DimCase dim_case(const std::vector<int64_t>& shape, int dim) {
  DimCase c{"(", 1, shape[dim], 1};
  for (int k = 0; k < static_cast<int>(shape.size()); ++k) {
    c.text += (k ? "," : "") + std::to_string(shape[k]);
    if (k < dim) c.outer *= shape[k];
    if (k > dim) c.inner *= shape[k];
  }
  c.text += ") dim " + std::to_string(dim);
  return c;
}

inline DimCase oai_case(int64_t outer, int64_t axis, int64_t inner) {
  return dim_case({outer, axis, inner}, 1);
}

// Dims 0, 1 and the last of tensors of rank 2 to 4: odd inner extents
// (pack 1 only) and even ones, axis 1, outer 1, a long strided axis; rows at
// the reach of every compiled warp variant of the family; and for every
// compiled strided variant, its reach and one past it (over an inner extent
// of a partial column tile), which the others run.
inline std::vector<DimCase> dim_cases(kgen::Family f, kgen_dtype_t d) {
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 5},       {1, 7},         {33, 64},       {2, 1000},     {300, 2},
      {2, 1000, 3}, {64, 33, 17},   {8, 1, 16},     {5, 300, 2},   {2, 96, 256},
      {4, 256, 8, 8}, {2, 3, 2049, 2}, {2, 5, 7, 9}, {1, 4, 33, 8},
  };
  std::vector<DimCase> out;
  std::vector<std::string> seen;
  auto add = [&](const DimCase& c) {
    const std::string key = std::to_string(c.outer) + "," + std::to_string(c.axis) + "," + std::to_string(c.inner);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
    seen.push_back(key);
    out.push_back(c);
  };
  for (const auto& s : shapes) {
    const int rank = static_cast<int>(s.size());
    for (int dim : {0, 1, rank - 1}) add(dim_case(s, dim));
  }
  add(oai_case(1, 5000, 24));  // past every strided variant's registers
  add(oai_case(3, 20000, 1));  // a long row through the dim entry point
  // rows at every warp variant's reach (the last dim: inner 1)
  for (int64_t reach : warp_reaches(f, d)) add(oai_case(3, reach, 1));
  for (const VariantFacts& v : family_variants(f, d)) {
    if (v.tier == Tier::column) {
      // the whole axis a thread holds, a partial last tile crossing an outer
      // position; an axis under it over packs of odd count
      const int64_t per_tile = int64_t{v.cols_per_thread} * kgen::softmax::kColumnBlock;
      add(oai_case(2, v.axis_per_thread, per_tile + v.pack_size));
      add(oai_case(3, v.axis_per_thread / 2 + 1, int64_t{v.pack_size} * 5));
      continue;
    }
    if (v.tier != Tier::strided) continue;
    const int64_t inner = int64_t{v.pack_size} * (v.col_lanes + 1);
    add(oai_case(1, v.strided_reach(), inner));
    add(oai_case(1, v.strided_reach() + 1, inner));
  }
  return out;
}

// The row tiers' alignment checks, forward: `variant` on x stored 0, 1 and
// 3 elements into its buffer, into y congruent to x and one element off,
// both modes, y poisoned with `poison_byte` first; then in place one element
// in.  A variant may refuse (KGEN_ERROR_UNSUPPORTED) only when `may_refuse`.
// inner > 1: over dim 1 of (rows, cols, inner) (kgen_softmax_dim_variant).
// Returns the out-of-place runs.
inline int check_forward_offsets(const char* variant, kgen_dtype_t d, int64_t rows, int64_t cols, const HostTensor& x,
                                 const std::vector<double> (&want)[2], unsigned char poison_byte, bool may_refuse,
                                 int64_t inner = 1) {
  const size_t e = elem_size(d), n = static_cast<size_t>(rows * cols * inner);
  auto run = [&](int log, const void* in, void* out) {
    return inner == 1 ? kgen_softmax_variant(variant, log, d, rows, cols, in, out, nullptr)
                      : kgen_softmax_dim_variant(variant, log, d, rows, cols, inner, in, out, nullptr);
  };
  DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
  int ran = 0;
  for (size_t x_off : {size_t(0), e, 3 * e})
    for (size_t y_off : {size_t(0), e}) {
      upload(dx, x, x_off);
      for (int log = 0; log < 2; ++log) {
        poison(dy.ptr, dy.bytes, nullptr, poison_byte);
        const kgen_status_t st = run(log, dx.at(x_off), dy.at(y_off));
        if (st == KGEN_ERROR_UNSUPPORTED && may_refuse) continue;
        INFO(variant << " log=" << log << " rows=" << rows << " cols=" << cols << " inner=" << inner << " x+" << x_off
                     << " y+" << y_off << ": " << kgen_last_error());
        REQUIRE(st == KGEN_OK);
        CUDA_REQUIRE(cudaDeviceSynchronize());
        check_matches(download(dy, d, n, y_off), want[log], tolerance(d));
        ++ran;
      }
    }
  for (int log = 0; log < 2; ++log) {
    upload(dx, x, e);
    KGEN_REQUIRE(run(log, dx.at(e), dx.at(e)));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    INFO(variant << " in place log=" << log << " rows=" << rows << " cols=" << cols << " inner=" << inner);
    check_matches(download(dx, d, n, e), want[log], tolerance(d));
  }
  return ran;
}

// The same for the backward: y at 0 or one element in, dy and dx congruent
// to y or one element off, dx poisoned first; inner > 1: over dim 1 of
// (rows, cols, inner).  Returns the runs.
inline int check_backward_offsets(const char* variant, kgen_dtype_t d, int64_t rows, int64_t cols, bool log,
                                  const BackwardCase& c, bool may_refuse, int64_t inner = 1) {
  const size_t e = elem_size(d), n = c.y.bytes.size() / e;
  DeviceBuffer y(c.y.bytes.size() + 64), dy(c.y.bytes.size() + 64), dx(c.y.bytes.size() + 64);
  int ran = 0;
  // dx at dy's offset, at the other offset (dx apart from dy), or in dy's
  // place (in place: dx == dy, y's offset or not)
  enum { kWithDy, kApart, kInPlace };
  for (size_t off : {size_t(0), e})
    for (size_t other : {size_t(0), e})
      for (int place : {kWithDy, kApart, kInPlace}) {
        const size_t at = place == kApart ? e - other : other;
        DeviceBuffer& out = place == kInPlace ? dy : dx;
        upload(y, c.y, off);
        upload(dy, c.dy, other);
        if (place != kInPlace) poison(dx.ptr, dx.bytes, nullptr, kOutsideByte);
        const kgen_status_t st = kgen_softmax_backward_variant(variant, log, d, rows, cols, inner, y.at(off),
                                                               dy.at(other), out.at(at), nullptr);
        if (st == KGEN_ERROR_UNSUPPORTED && may_refuse) continue;
        INFO(variant << " log=" << log << " cols=" << cols << " inner=" << inner << " y+" << off << " dy+" << other
                     << " dx+" << at << (place == kInPlace ? " (dx == dy)" : "") << ": " << kgen_last_error());
        REQUIRE(st == KGEN_OK);
        CUDA_REQUIRE(cudaDeviceSynchronize());
        check_matches(download(out, d, n, at), c.want, backward_tolerance(d), &c.slack);
        ++ran;
      }
  return ran;
}

// Rows of special values on top of random data (rows 0-4 of x, when it has
// 5): all -inf, a NaN, +inf, -inf mixed with finite values, huge magnitudes.
inline void add_special_rows(HostTensor& x, int64_t rows, int64_t cols) {
  const double inf = std::numeric_limits<double>::infinity();
  if (rows < 5) return;
  for (int64_t c = 0; c < cols; ++c) x.set(c, -inf);
  x.set(cols + cols / 2, NAN);
  x.set(2 * cols + cols / 3, inf);
  for (int64_t c = 0; c < cols; c += 2) x.set(3 * cols + c, -inf);
  for (int64_t c = 0; c < cols; ++c) x.set(4 * cols + c, x.get(4 * cols + c) * 3000.0);
}

// log_softmax of x (rows x cols, uploaded one element into dx) by the
// selected variant, which must be of `tier`: checked against the reference,
// then the same bits on three more runs; returns the first result.
inline HostTensor check_selected_repeatable(kgen_dtype_t d, int64_t rows, int64_t cols, Tier tier,
                                            const HostTensor& x, DeviceBuffer& dx, DeviceBuffer& dy) {
  const size_t n = static_cast<size_t>(rows * cols), e = elem_size(d);
  upload(dx, x, e);
  const char* name = nullptr;
  KGEN_REQUIRE(kgen_softmax_selected(1, d, rows, cols, dx.at(e), dy.ptr, &name));
  INFO(name);
  CHECK(find_facts(kgen::Family::softmax, name).tier == tier);
  KGEN_REQUIRE(kgen_log_softmax(d, rows, cols, dx.at(e), dy.ptr, nullptr));
  const HostTensor first = download(dy, d, n);
  check_matches(first, softmax_reference(values(x), rows, cols, 1, true), tolerance(d));
  for (int rep = 0; rep < 3; ++rep) {
    poison(dy.ptr, dy.bytes);
    KGEN_REQUIRE(kgen_log_softmax(d, rows, cols, dx.at(e), dy.ptr, nullptr));
    CHECK(download(dy, d, n).bytes == first.bytes);
  }
  return first;
}

}  // namespace test
