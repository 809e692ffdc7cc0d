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
// (the two families' params structs share the forward's layout).
std::vector<int64_t> slice_cols(const char* name) {
  const auto& q = *static_cast<const kgen::gen::SoftmaxParams*>(kgen::Registry::find(name)->params);
  const int64_t reach = int64_t{q.cluster_size} * q.block_size * q.cols_per_thread;
  return {reach - 3, 1001};
}

}  // namespace

TEST_CASE("block and cluster softmax variants at every alignment, odd lengths and in place",
          "[softmax][slice]") {
  for (kgen_dtype_t d : kDtypes) {
    const size_t e = elem_size(d);
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax, d)) {
      if (!slice_tier(v)) continue;
      for (int64_t cols : slice_cols(v.name)) {
        const int64_t rows = 3;
        const size_t n = static_cast<size_t>(rows * cols);
        HostTensor x = random_tensor(d, n);
        const std::vector<double> want[2] = {softmax_reference(values(x), rows, cols, 1, false),
                                             softmax_reference(values(x), rows, cols, 1, true)};
        DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
        // x one and three elements into its storage; y congruent to x and not
        for (size_t x_off : {size_t(0), e, 3 * e})
          for (size_t y_off : {size_t(0), e}) {
            upload(dx, x, x_off);
            for (int log = 0; log < 2; ++log) {
              poison(dy.ptr, dy.bytes);
              const kgen_status_t st = kgen_softmax_variant(v.name, log, d, rows, cols, dx.at(x_off),
                                                            dy.at(y_off), nullptr);
              if (st == KGEN_ERROR_UNSUPPORTED) continue;
              INFO(v.name << " log=" << log << " cols=" << cols << " x+" << x_off << " y+" << y_off << ": "
                          << kgen_last_error());
              REQUIRE(st == KGEN_OK);
              CUDA_REQUIRE(cudaDeviceSynchronize());
              check_matches(download(dy, d, n, y_off), want[log], tolerance(d));
              ++ran;
            }
          }
        // in place, one element into the storage
        for (int log = 0; log < 2; ++log) {
          upload(dx, x, e);
          KGEN_REQUIRE(kgen_softmax_variant(v.name, log, d, rows, cols, dx.at(e), dx.at(e), nullptr));
          CUDA_REQUIRE(cudaDeviceSynchronize());
          INFO(v.name << " in place log=" << log << " cols=" << cols);
          check_matches(download(dx, d, n, e), want[log], tolerance(d));
        }
      }
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

TEST_CASE("block and cluster softmax_backward variants at every alignment", "[softmax_backward][slice]") {
  for (kgen_dtype_t d : kDtypes) {
    const size_t e = elem_size(d);
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) {
      if (!slice_tier(v)) continue;
      for (int64_t cols : slice_cols(v.name)) {
        for (int log = 0; log < 2; ++log) {
          const BackwardCase c = backward_case(d, 2, cols, 1, log);
          const size_t n = c.y.bytes.size() / e;
          DeviceBuffer y(c.y.bytes.size() + 64), dy(c.y.bytes.size() + 64), dx(c.y.bytes.size() + 64);
          // y at 0 or one element in; dy and dx congruent to y or not
          for (size_t off : {size_t(0), e})
            for (size_t other : {size_t(0), e}) {
              upload(y, c.y, off);
              upload(dy, c.dy, other);
              poison(dx.ptr, dx.bytes, nullptr, kOutsideByte);
              const kgen_status_t st = kgen_softmax_backward_variant(v.name, log, d, 2, cols, 1, y.at(off),
                                                                     dy.at(other), dx.at(other), nullptr);
              if (st == KGEN_ERROR_UNSUPPORTED) continue;
              INFO(v.name << " log=" << log << " cols=" << cols << " y+" << off << " dy,dx+" << other << ": "
                          << kgen_last_error());
              REQUIRE(st == KGEN_OK);
              CUDA_REQUIRE(cudaDeviceSynchronize());
              check_matches(download(dx, d, n, other), c.want, backward_tolerance(d), &c.slack);
              ++ran;
            }
        }
      }
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}
