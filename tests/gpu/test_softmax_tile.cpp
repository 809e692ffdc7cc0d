// The tile tier (whole short rows, or the (axis x inner) slabs of a short
// axis, staged through shared memory in 16-byte vectors): every compiled
// variant, forward and backward, rows and slabs of odd lengths at every
// alignment, y congruent to x or not, in place, a partial last tile, a unit
// as long as the tile, special values; and selection.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};

bool is_tile(const VariantFacts& v) { return v.tier == Tier::tile; }

int64_t capacity_of(const char* name) {
  const auto& q = *static_cast<const kgen::gen::SoftmaxParams*>(kgen::Registry::find(name)->params);
  return int64_t{q.block_size} * q.cols_per_thread;
}

// Whether a tile of `cap` elements runs (outer, axis, inner): whole units,
// or slabs cut along inner into segments of at least
// kTileMinSegmentPacks packs (and a pack of slack) each.
bool tile_holds(const DimCase& c, int64_t cap, kgen_dtype_t d) {
  const int64_t p = 16 / static_cast<int64_t>(elem_size(d));
  return c.axis * c.inner <= cap || (c.inner > 1 && c.axis * (kgen::softmax::kTileMinSegmentPacks + 1) * p <= cap + p);
}

// (outer, axis, inner) shapes a tile variant of `cap` elements runs: rows
// (inner 1) of one value, of a few in one lane, of a group of lanes, of a
// whole warp, the longest unit, with a partial last tile; slabs of a short
// axis over an odd inner extent, of an axis of one, of an axis that takes
// a group of lanes, and one as long as the tile; slabs longer than the
// tile, cut along inner (segments with a partial last one, an axis of 40).
std::vector<DimCase> tile_cases(int64_t cap, kgen_dtype_t d) {
  std::vector<DimCase> out = {
      oai_case(37, 1, 1),        oai_case(cap / 5 + 3, 5, 1), oai_case(cap / 29 * 2 + 1, 29, 1),
      oai_case(5, std::min<int64_t>(673, cap / 2 - 1), 1), oai_case(3, cap - 1, 1),
      oai_case(cap / 843 * 3 + 2, 3, 281), oai_case(9, 1, 13), oai_case(4, 40, 3),
      oai_case(2, 2, cap / 2 - 1), oai_case(2, 3, 2 * cap + 5), oai_case(1, 2, 5 * cap + 3),
      oai_case(2, 40, cap / 2 + 3),
  };
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const DimCase& c) { return c.outer < 1 || !tile_holds(c, cap, d); }),
            out.end());
  return out;
}
// All -inf, a NaN, +inf, half -inf, huge magnitudes in the first five units.
// (Fewer units over an inner of 4 or more: the first four columns of the
// first unit, which segments cut along inner hold.)
void add_special_units(HostTensor& x, const DimCase& c) {
  const int64_t unit = c.axis * c.inner;
  const double inf = std::numeric_limits<double>::infinity();
  if (c.outer < 5) {
    if (c.inner < 4) return;
    for (int64_t a = 0; a < c.axis; ++a) x.set(a * c.inner, -inf);
    x.set(c.axis / 2 * c.inner + 1, NAN);
    x.set(2, inf);
    for (int64_t a = 0; a < c.axis; ++a) x.set(a * c.inner + 3, x.get(a * c.inner + 3) * 3000.0);
    return;
  }
  for (int64_t k = 0; k < unit; ++k) x.set(k, -inf);
  x.set(unit + unit / 2, NAN);
  x.set(2 * unit + unit / 3, inf);
  for (int64_t k = 0; k < unit; k += 2) x.set(3 * unit + k, -inf);
  for (int64_t k = 0; k < unit; ++k) x.set(4 * unit + k, x.get(4 * unit + k) * 3000.0);
}

// The backward in place over (outer, axis, inner): dx over dy, one element in.
void check_backward_in_place(const char* variant, kgen_dtype_t d, const DimCase& c, bool log, const BackwardCase& bc) {
  const size_t e = elem_size(d);
  DeviceBuffer y(bc.y.bytes.size()), dy(bc.y.bytes.size() + 64);
  upload(y, bc.y, 0);
  upload(dy, bc.dy, e);
  KGEN_REQUIRE(
      kgen_softmax_backward_variant(variant, log, d, c.outer, c.axis, c.inner, y.ptr, dy.at(e), dy.at(e), nullptr));
  CUDA_REQUIRE(cudaDeviceSynchronize());
  INFO(variant << " in place " << c.text << " log=" << log);
  check_matches(download(dy, d, c.size(), e), bc.want, backward_tolerance(d), &bc.slack);
}

}  // namespace

TEST_CASE("tile softmax variants: odd rows and slabs at every alignment, special values, in place",
          "[softmax][tile]") {
  for (kgen_dtype_t d : kDtypes) {
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax, d)) {
      if (!is_tile(v)) continue;
      for (const DimCase& c : tile_cases(capacity_of(v.name), d)) {
        HostTensor x = random_tensor(d, c.size());
        add_special_units(x, c);
        const std::vector<double> want[2] = {softmax_reference(values(x), c.outer, c.axis, c.inner, false),
                                             softmax_reference(values(x), c.outer, c.axis, c.inner, true)};
        ran += check_forward_offsets(v.name, d, c.outer, c.axis, x, want, kOutsideByte, false, c.inner);
      }
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

TEST_CASE("tile softmax_backward variants: odd rows and slabs at every alignment, in place",
          "[softmax_backward][tile]") {
  for (kgen_dtype_t d : kDtypes) {
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) {
      if (!is_tile(v)) continue;
      for (const DimCase& c : tile_cases(capacity_of(v.name), d))
        for (int log = 0; log < 2; ++log) {
          const BackwardCase bc = backward_case(d, c.outer, c.axis, c.inner, log);
          ran += check_backward_offsets(v.name, d, c.outer, c.axis, log, bc, false, c.inner);
          check_backward_in_place(v.name, d, c, log, bc);
        }
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

TEST_CASE("a unit longer than the tile is refused; nothing is written", "[softmax][tile]") {
  for (const VariantFacts& v : family_variants(kgen::Family::softmax, KGEN_FLOAT32)) {
    if (!is_tile(v)) continue;
    const int64_t cols = capacity_of(v.name) + 1;
    DeviceBuffer x(cols * 4), y(cols * 4);
    poison(x.ptr, x.bytes);
    poison(y.ptr, y.bytes, nullptr, kOutsideByte);
    INFO(v.name);
    CHECK(kgen_softmax_variant(v.name, 0, KGEN_FLOAT32, 1, cols, x.ptr, y.ptr, nullptr) == KGEN_ERROR_UNSUPPORTED);
    CUDA_REQUIRE(cudaDeviceSynchronize());
    CHECK(count_bytes(y, kOutsideByte) == y.bytes);
  }
}

TEST_CASE("odd rows of 5-48 and odd slabs of short axes select the tile tier, others do not",
          "[softmax][softmax_backward][tile][selection]") {
  struct Want {
    kgen_dtype_t d;
    int64_t outer, axis, inner;
    size_t x_off;
    bool tile;
    bool span_forward = false;  // the forward in the span tier instead (float32 rows from 13)
    // the backward in another tier (bench/NOTES.md tile v5: the half types'
    // rows from 21 in spans, float32 rows of 2-8 in tensors of up to 16 MB
    // in the warp tier; warp v5: float32 rows past 16 there too)
    bool other_backward = false;
  };
  const Want cases[] = {
      {KGEN_FLOAT16, 587 * 307, 29, 1, 0, true, false, true},
      {KGEN_BFLOAT16, 91127, 17, 1, 0, true},      {KGEN_FLOAT32, 65536, 32, 1, 4, true, true, true},
      {KGEN_FLOAT16, 8192, 3, 281, 0, false},      {KGEN_FLOAT32, 957497, 5, 1, 0, true},
      {KGEN_FLOAT32, 300000, 5, 1, 0, true, false, true},
      {KGEN_FLOAT16, 65536, 32, 1, 0, false},      {KGEN_FLOAT32, 957497, 11, 1, 0, true},
      {KGEN_BFLOAT16, 8265, 673, 1, 0, false},     {KGEN_FLOAT16, 1024, 3001, 1, 0, false},
      {KGEN_FLOAT32, 64, 1000, 64, 0, false},      {KGEN_FLOAT16, 100, 29, 1, 0, false},
  };
  for (const Want& w : cases) {
    const size_t n = static_cast<size_t>(w.outer * w.axis * w.inner) * elem_size(w.d);
    DeviceBuffer x(n + 64), y(n + 64), dy(n + 64);
    const char* fwd = nullptr;
    const char* bwd = nullptr;
    KGEN_REQUIRE(kgen_softmax_dim_selected(0, w.d, w.outer, w.axis, w.inner, x.at(w.x_off), y.at(w.x_off), &fwd));
    KGEN_REQUIRE(kgen_softmax_backward_selected(0, w.d, w.outer, w.axis, w.inner, x.at(w.x_off), dy.at(w.x_off),
                                                y.at(w.x_off), &bwd));
    INFO(dtype_short(w.d) << " (" << w.outer << ", " << w.axis << ", " << w.inner << ") +" << w.x_off << ": " << fwd
                          << ", " << bwd);
    const Tier forward = find_facts(kgen::Family::softmax, fwd).tier;
    CHECK((w.span_forward ? forward == Tier::span : (forward == Tier::tile) == w.tile));
    // the backward takes the same tiles (whole slabs too; segments are
    // forward only and none of these needs them) but for its own rows
    CHECK((find_facts(kgen::Family::softmax_backward, bwd).tier == Tier::tile) == (w.tile && !w.other_backward));
  }
}
