// The block and cluster tiers (a row held in the registers of one block or
// of a thread-block cluster): every compiled variant at every alignment of
// its tensors, with odd lengths that put elements in the unaligned head and
// tail, rows near the variant's reach, in place, forward and backward.
#include <algorithm>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};

bool slice_tier(const VariantFacts& v) { return v.tier == Tier::block || v.tier == Tier::cluster; }

// Three short of the longest row the variant holds, and a short odd row
// (1001, or half the reach and one for blocks that hold less) (the two
// families' params structs share the forward's layout).
std::vector<int64_t> slice_cols(const char* name) {
  const auto& q = *static_cast<const kgen::gen::SoftmaxParams*>(kgen::Registry::find(name)->params);
  const int64_t reach = int64_t{q.cluster_size} * q.block_size * q.cols_per_thread;
  return {reach - 3, reach > 1001 ? 1001 : reach / 2 + 1};
}

}  // namespace

TEST_CASE("block and cluster softmax variants at every alignment, odd lengths and in place",
          "[softmax][slice]") {
  for (kgen_dtype_t d : kDtypes) {
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax, d)) {
      if (!slice_tier(v)) continue;
      for (int64_t cols : slice_cols(v.name)) {
        const int64_t rows = 3;
        HostTensor x = random_tensor(d, static_cast<size_t>(rows * cols));
        const std::vector<double> want[2] = {softmax_reference(values(x), rows, cols, 1, false),
                                             softmax_reference(values(x), rows, cols, 1, true)};
        ran += check_forward_offsets(v.name, d, rows, cols, x, want, kNanByte, true);
      }
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

TEST_CASE("block and cluster softmax_backward variants at every alignment", "[softmax_backward][slice]") {
  for (kgen_dtype_t d : kDtypes) {
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) {
      if (!slice_tier(v)) continue;
      for (int64_t cols : slice_cols(v.name))
        for (int log = 0; log < 2; ++log)
          ran += check_backward_offsets(v.name, d, 2, cols, log, backward_case(d, 2, cols, 1, log), true);
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}
