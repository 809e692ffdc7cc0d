// The grid tier (a few rows over every SM in one cooperative launch, the
// rows' partials exchanged through the workspace across a grid barrier):
// every compiled variant at every alignment, odd lengths, rows near what
// the grid holds, special rows, in place; selection, determinism, the
// caller's workspace and graph capture.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gpu_util.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16};

// The longest row the variant holds for `rows` rows on this device, less 3
// (the head and tail of a misaligned row take one pack more).
int64_t grid_reach(const VariantFacts& v, int64_t rows) {
  int device = 0, sms = 0;
  CUDA_REQUIRE(cudaGetDevice(&device));
  CUDA_REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t parts = int64_t{sms} * (v.block_size <= 256 ? 2 : 1) / rows;
  return (parts * v.block_size * (v.cols_per_thread / v.pack_size) - 1) * v.pack_size - 3;
}

}  // namespace

TEST_CASE("grid softmax variants at every alignment, odd lengths, rows near their reach, special rows, in place",
          "[softmax][grid]") {
  for (kgen_dtype_t d : kDtypes) {
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax, d)) {
      if (v.tier != Tier::grid) continue;
      struct Shape { int64_t rows, cols; };
      // 7 rows at their reach only where the registers hold the slice: the
      // held packs take the same path in one row at its reach, and 7 rows of
      // 34 MB a variant ran [grid],[split],[selection] past 240 s (H100)
      const bool held = v.cols_per_thread / v.pack_size > 8;
      for (const Shape& c : {Shape{1, 37}, Shape{3, 100003}, Shape{5, 20011}, Shape{1, grid_reach(v, 1)},
                             Shape{7, held ? 20011 : grid_reach(v, 7)}}) {
        HostTensor x = random_tensor(d, static_cast<size_t>(c.rows * c.cols));
        add_special_rows(x, c.rows, c.cols);
        const std::vector<double> want[2] = {softmax_reference(values(x), c.rows, c.cols, 1, false),
                                             softmax_reference(values(x), c.rows, c.cols, 1, true)};
        ran += check_forward_offsets(v.name, d, c.rows, c.cols, x, want, c.rows >= 5 ? kOutsideByte : kNanByte,
                                     false);
      }
      // past its reach: refused, nothing written
      const int64_t over = grid_reach(v, 1) + 3 + 2 * v.pack_size;
      DeviceBuffer dx(over * elem_size(d)), dy(dx.bytes);
      poison(dy.ptr, dy.bytes, nullptr, kOutsideByte);
      INFO(v.name);
      CHECK(kgen_softmax_variant(v.name, 0, d, 1, over, dx.ptr, dy.ptr, nullptr) == KGEN_ERROR_UNSUPPORTED);
      CUDA_REQUIRE(cudaDeviceSynchronize());
      CHECK(count_bytes(dy, kOutsideByte) == dy.bytes);
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

TEST_CASE("a few rows no cluster takes select the grid tier: the same bits on every run, through the caller's "
          "workspace",
          "[softmax][grid]") {
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    const int64_t rows = 2, cols = (int64_t{1} << 20) + 3;
    const size_t n = static_cast<size_t>(rows * cols), e = elem_size(d);
    HostTensor x = random_tensor(d, n);
    DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
    const HostTensor first = check_selected_repeatable(d, rows, cols, Tier::grid, x, dx, dy);
    size_t need = 0;
    KGEN_REQUIRE(kgen_softmax_workspace_size(nullptr, 1, d, rows, cols, 1, dx.at(e), dy.ptr, &need));
    REQUIRE(need > 0);
    DeviceBuffer ws(need);
    poison(ws.ptr, ws.bytes);
    poison(dy.ptr, dy.bytes);
    KGEN_REQUIRE(kgen_softmax_dim_workspace(nullptr, 1, d, rows, cols, 1, dx.at(e), dy.ptr, ws.ptr, need, nullptr));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    CHECK(download(dy, d, n).bytes == first.bytes);
  }
}

TEST_CASE("the grid tier in a CUDA graph (its workspace allocated in the graph)", "[softmax][grid][graph]") {
  const int64_t rows = 3, cols = (int64_t{1} << 20) + 3;
  HostTensor x = random_tensor(KGEN_FLOAT16, rows * cols);
  const std::vector<double> want = softmax_reference(values(x), rows, cols, 1, false);
  DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
  upload(dx, x);
  const char* name = nullptr;
  KGEN_REQUIRE(kgen_softmax_selected(0, KGEN_FLOAT16, rows, cols, dx.ptr, dy.ptr, &name));
  INFO(name);
  CHECK(find_facts(kgen::Family::softmax, name).tier == Tier::grid);
  capture_and_replay(
      [&](cudaStream_t st) { return kgen_softmax(KGEN_FLOAT16, rows, cols, dx.ptr, dy.ptr, st); }, dy.ptr, dy.bytes,
      [&] { check_matches(download(dy, KGEN_FLOAT16, rows * cols), want, tolerance(KGEN_FLOAT16)); });
}
