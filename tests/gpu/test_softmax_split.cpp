// The split tier (few long rows, or a long axis over a few columns, cut
// into chunks over the whole GPU, two kernels and a workspace of partials):
// every compiled variant, forward and backward, at every alignment, odd
// lengths, rows shorter than a chunk, special values, in place; the
// caller's workspace; selection, determinism, graph capture and a row past
// 2^31 elements.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};

// Rows a variant sees: shorter than a pack a thread (one chunk), a few
// chunks, and many chunks, odd so that misaligned rows have a head and a tail.
std::vector<int64_t> split_cols(const char* name, kgen_dtype_t d) {
  const auto& q = *static_cast<const kgen::gen::SoftmaxParams*>(kgen::Registry::find(name)->params);
  const int64_t p = 16 / static_cast<int64_t>(elem_size(d));
  return {37, p * q.block_size * 5 + 3, 300007};
}

bool is_split(const VariantFacts& v) { return v.tier == Tier::split; }

}  // namespace

TEST_CASE("split softmax variants at every alignment, odd lengths, special rows and in place",
          "[softmax][split]") {
  for (kgen_dtype_t d : kDtypes) {
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax, d)) {
      if (!is_split(v)) continue;
      for (int64_t cols : split_cols(v.name, d))
        for (int64_t rows : {int64_t{1}, int64_t{3}, int64_t{5}}) {
          HostTensor x = random_tensor(d, static_cast<size_t>(rows * cols));
          add_special_rows(x, rows, cols);
          const std::vector<double> want[2] = {softmax_reference(values(x), rows, cols, 1, false),
                                               softmax_reference(values(x), rows, cols, 1, true)};
          // special rows expect NaN: poison with a finite value there
          ran += check_forward_offsets(v.name, d, rows, cols, x, want, rows == 5 ? kOutsideByte : kNanByte, false);
        }
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

// Over dim 1 of (outer, axis, inner): a short inner (2 up to a quarter of
// the block, and odd), axes shorter than a chunk and of many chunks,
// special columns (all -inf, a NaN, +inf, half -inf, huge magnitudes), every
// alignment, in place; an inner past a quarter of the block refused.
TEST_CASE("split softmax variants over a dim that is not the last: short inner, special columns, in place",
          "[softmax][split][softmax_dim]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (kgen_dtype_t d : kDtypes) {
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax, d)) {
      if (!is_split(v)) continue;
      const int64_t most = v.block_size / 4;  // the widest inner a block holds
      struct Shape { int64_t outer, axis, inner; };
      // (600, 300, 3): one CTA a slab (split_parts 1), as selection runs a
      // narrow inner over many slabs
      for (const Shape& c : {Shape{1, 37, 2}, Shape{3, 300, 6}, Shape{2, 20011, 3}, Shape{1, 4786, 23},
                             Shape{2, 999, most}, Shape{600, 300, 3}}) {
        const size_t n = static_cast<size_t>(c.outer * c.axis * c.inner);
        HostTensor x = random_tensor(d, n);
        auto at = [&](int64_t o, int64_t a, int64_t i) { return static_cast<size_t>((o * c.axis + a) * c.inner + i); };
        const bool special = c.inner == 6;
        if (special) {
          for (int64_t a = 0; a < c.axis; ++a) x.set(at(0, a, 0), -inf);
          x.set(at(0, c.axis / 2, 1), NAN);
          x.set(at(1, c.axis / 3, 2), inf);
          for (int64_t a = 0; a < c.axis; a += 2) x.set(at(1, a, 3), -inf);
          for (int64_t a = 0; a < c.axis; ++a) x.set(at(2, a, 4), x.get(at(2, a, 4)) * 3000.0);
        }
        const std::vector<double> want[2] = {softmax_reference(values(x), c.outer, c.axis, c.inner, false),
                                             softmax_reference(values(x), c.outer, c.axis, c.inner, true)};
        ran += check_forward_offsets(v.name, d, c.outer, c.axis, x, want, special ? kOutsideByte : kNanByte, false,
                                     c.inner);
      }
      // an inner past a quarter of the block: refused, nothing written
      DeviceBuffer dx(64 * (most + 1) * elem_size(d)), dy(dx.bytes);
      poison(dy.ptr, dy.bytes, nullptr, kOutsideByte);
      INFO(v.name);
      CHECK(kgen_softmax_dim_variant(v.name, 0, d, 1, 64, most + 1, dx.ptr, dy.ptr, nullptr) ==
            KGEN_ERROR_UNSUPPORTED);
      CUDA_REQUIRE(cudaDeviceSynchronize());
      CHECK(count_bytes(dy, kOutsideByte) == dy.bytes);
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

TEST_CASE("split softmax_backward variants over a dim that is not the last: short inner, every alignment",
          "[softmax_backward][split][softmax_dim]") {
  for (kgen_dtype_t d : kDtypes) {
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) {
      if (!is_split(v)) continue;
      const int64_t most = v.block_size / 4;  // the widest inner a block holds
      struct Shape { int64_t outer, axis, inner; };
      for (const Shape& c :
           {Shape{1, 37, 2}, Shape{2, 20011, 3}, Shape{1, 4786, 23}, Shape{2, 999, most}, Shape{600, 300, 3}})
        for (int log = 0; log < 2; ++log) {
          const BackwardCase bc = backward_case(d, c.outer, c.axis, c.inner, log);
          ran += check_backward_offsets(v.name, d, c.outer, c.axis, log, bc, false, c.inner);
        }
      // an inner past a quarter of the block: refused, nothing written
      DeviceBuffer y(64 * (most + 1) * elem_size(d)), dx(y.bytes);
      poison(dx.ptr, dx.bytes, nullptr, kOutsideByte);
      INFO(v.name);
      CHECK(kgen_softmax_backward_variant(v.name, 0, d, 1, 64, most + 1, y.ptr, y.ptr, dx.ptr, nullptr) ==
            KGEN_ERROR_UNSUPPORTED);
      CUDA_REQUIRE(cudaDeviceSynchronize());
      CHECK(count_bytes(dx, kOutsideByte) == dx.bytes);
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

TEST_CASE("a long axis over a few columns selects the split tier; the same bits on every run",
          "[softmax][softmax_backward][split][softmax_dim]") {
  // (1, 120281, 9): nine columns, which the strided tiers ran on one SM
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16}) {
    const int64_t outer = 1, axis = 120281, inner = 9;
    const size_t n = static_cast<size_t>(outer * axis * inner), e = elem_size(d);
    HostTensor x = random_tensor(d, n);
    DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
    upload(dx, x, e);
    const char* name = nullptr;
    KGEN_REQUIRE(kgen_softmax_dim_selected(1, d, outer, axis, inner, dx.at(e), dy.ptr, &name));
    INFO(name);
    CHECK(find_facts(kgen::Family::softmax, name).tier == Tier::split);
    KGEN_REQUIRE(kgen_softmax_dim(1, d, outer, axis, inner, dx.at(e), dy.ptr, nullptr));
    const HostTensor first = download(dy, d, n);
    check_matches(first, softmax_reference(values(x), outer, axis, inner, true), tolerance(d));
    for (int rep = 0; rep < 3; ++rep) {
      poison(dy.ptr, dy.bytes);
      KGEN_REQUIRE(kgen_softmax_dim(1, d, outer, axis, inner, dx.at(e), dy.ptr, nullptr));
      CHECK(download(dy, d, n).bytes == first.bytes);
    }
    // through the caller's workspace
    size_t need = 0;
    KGEN_REQUIRE(kgen_softmax_workspace_size(nullptr, 1, d, outer, axis, inner, dx.at(e), dy.ptr, &need));
    REQUIRE(need > 0);
    DeviceBuffer ws(need);
    poison(ws.ptr, ws.bytes);
    poison(dy.ptr, dy.bytes);
    KGEN_REQUIRE(kgen_softmax_dim_workspace(nullptr, 1, d, outer, axis, inner, dx.at(e), dy.ptr, ws.ptr, need,
                                            nullptr));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    CHECK(download(dy, d, n).bytes == first.bytes);
    // the backward: the split tier too, the same bits on every run
    const BackwardCase bc = backward_case(d, outer, axis, inner, true);
    DeviceBuffer y(bc.y.bytes.size()), g(bc.y.bytes.size()), gx(bc.y.bytes.size());
    upload(y, bc.y);
    upload(g, bc.dy);
    KGEN_REQUIRE(kgen_softmax_backward_selected(1, d, outer, axis, inner, y.ptr, g.ptr, gx.ptr, &name));
    INFO(name);
    CHECK(find_facts(kgen::Family::softmax_backward, name).tier == Tier::split);
    KGEN_REQUIRE(kgen_softmax_backward_dim(1, d, outer, axis, inner, y.ptr, g.ptr, gx.ptr, nullptr));
    const HostTensor grad = download(gx, d, n);
    check_matches(grad, bc.want, backward_tolerance(d), &bc.slack);
    poison(gx.ptr, gx.bytes);
    KGEN_REQUIRE(kgen_softmax_backward_dim(1, d, outer, axis, inner, y.ptr, g.ptr, gx.ptr, nullptr));
    CHECK(download(gx, d, n).bytes == grad.bytes);
  }
}

TEST_CASE("split softmax_backward variants at every alignment and in place", "[softmax_backward][split]") {
  for (kgen_dtype_t d : kDtypes) {
    const size_t e = elem_size(d);
    int ran = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) {
      if (!is_split(v)) continue;
      for (int64_t cols : split_cols(v.name, d))
        for (int log = 0; log < 2; ++log) {
          const int64_t rows = 3;
          const BackwardCase c = backward_case(d, rows, cols, 1, log);
          ran += check_backward_offsets(v.name, d, rows, cols, log, c, false);
          // in place: dx over dy
          const size_t n = c.y.bytes.size() / e;
          DeviceBuffer y(c.y.bytes.size()), dy(c.y.bytes.size() + 64);
          upload(y, c.y, 0);
          upload(dy, c.dy, e);
          KGEN_REQUIRE(kgen_softmax_backward_variant(v.name, log, d, rows, cols, 1, y.ptr, dy.at(e), dy.at(e),
                                                     nullptr));
          CUDA_REQUIRE(cudaDeviceSynchronize());
          INFO(v.name << " in place log=" << log << " cols=" << cols);
          check_matches(download(dy, d, n, e), c.want, backward_tolerance(d), &c.slack);
        }
    }
    INFO(dtype_short(d));
    CHECK(ran > 0);
  }
}

TEST_CASE("few long rows select the split tier; results are the same bits on every run", "[softmax][split]") {
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    // past what a cluster or the grid tier holds (34.6 MB on 132 SMs)
    const int64_t rows = 2, cols = (d == KGEN_FLOAT32 ? int64_t{1} << 23 : int64_t{1} << 24) + 5;
    HostTensor x = random_tensor(d, static_cast<size_t>(rows * cols));
    DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
    check_selected_repeatable(d, rows, cols, Tier::split, x, dx, dy);
  }
}

TEST_CASE("many odd rows past the clusters select the split tier, dx apart from y too, but not dy apart",
          "[softmax_backward][split][selection]") {
  // the half types' log backward past 65536 leaves clusters; an odd row is
  // the split's (16-byte packs), not the uncached tier's (single elements)
  for (kgen_dtype_t d : {KGEN_FLOAT16, KGEN_BFLOAT16}) {
    const int64_t rows = 200, cols = 65537;
    const size_t n = static_cast<size_t>(rows * cols), e = elem_size(d);
    const BackwardCase bc = backward_case(d, rows, cols, 1, true);
    DeviceBuffer y(bc.y.bytes.size() + 64), g(bc.y.bytes.size() + 64), gx(bc.y.bytes.size() + 64);
    upload(y, bc.y);
    upload(g, bc.dy);
    const char* name = nullptr;
    KGEN_REQUIRE(kgen_softmax_backward_selected(1, d, rows, cols, 1, y.ptr, g.ptr, gx.ptr, &name));
    INFO(name);
    CHECK(find_facts(kgen::Family::softmax_backward, name).tier == Tier::split);
    poison(gx.ptr, gx.bytes);
    KGEN_REQUIRE(kgen_softmax_backward_dim(1, d, rows, cols, 1, y.ptr, g.ptr, gx.ptr, nullptr));
    const HostTensor grad = download(gx, d, n);
    check_matches(grad, bc.want, backward_tolerance(d), &bc.slack);
    poison(gx.ptr, gx.bytes);
    KGEN_REQUIRE(kgen_softmax_backward_dim(1, d, rows, cols, 1, y.ptr, g.ptr, gx.ptr, nullptr));
    CHECK(download(gx, d, n).bytes == grad.bytes);
    // y and dy one element in, dx at the start of its buffer: the split's
    // shifted stores
    upload(y, bc.y, e);
    upload(g, bc.dy, e);
    KGEN_REQUIRE(kgen_softmax_backward_selected(1, d, rows, cols, 1, y.at(e), g.at(e), gx.ptr, &name));
    INFO(name);
    CHECK(find_facts(kgen::Family::softmax_backward, name).tier == Tier::split);
    poison(gx.ptr, gx.bytes);
    KGEN_REQUIRE(kgen_softmax_backward_dim(1, d, rows, cols, 1, y.at(e), g.at(e), gx.ptr, nullptr));
    check_matches(download(gx, d, n), bc.want, backward_tolerance(d), &bc.slack);
    // dy apart from y (read an element at a time in the split): the
    // uncached tier keeps it
    upload(g, bc.dy, 0);
    KGEN_REQUIRE(kgen_softmax_backward_selected(1, d, rows, cols, 1, y.at(e), g.ptr, gx.ptr, &name));
    INFO(name);
    CHECK(find_facts(kgen::Family::softmax_backward, name).tier == Tier::uncached);
    poison(gx.ptr, gx.bytes);
    KGEN_REQUIRE(kgen_softmax_backward_dim(1, d, rows, cols, 1, y.at(e), g.ptr, gx.ptr, nullptr));
    check_matches(download(gx, d, n), bc.want, backward_tolerance(d), &bc.slack);
  }
}

TEST_CASE("the caller's workspace for the split tier: sized, used, checked", "[softmax][split][workspace]") {
  const kgen_dtype_t d = KGEN_FLOAT16;
  const int64_t rows = 3, cols = (int64_t{1} << 20) + 3;
  const size_t n = static_cast<size_t>(rows * cols);
  HostTensor x = random_tensor(d, n);
  const std::vector<double> want = softmax_reference(values(x), rows, cols, 1, false);
  DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
  upload(dx, x);
  size_t need = 0;
  KGEN_REQUIRE(kgen_softmax_workspace_size(nullptr, 0, d, rows, cols, 1, dx.ptr, dy.ptr, &need));
  CHECK(need > 0);
  // a short row needs none
  size_t none = 1;
  KGEN_REQUIRE(kgen_softmax_workspace_size(nullptr, 0, d, rows, 1000, 1, dx.ptr, dy.ptr, &none));
  CHECK(none == 0);
  DeviceBuffer ws(need + 16);
  SECTION("any content") {
    poison(ws.ptr, ws.bytes);
    poison(dy.ptr, dy.bytes);
    KGEN_REQUIRE(kgen_softmax_dim_workspace(nullptr, 0, d, rows, cols, 1, dx.ptr, dy.ptr, ws.ptr, need, nullptr));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    check_matches(download(dy, d, n), want, tolerance(d));
  }
  SECTION("too small, misaligned or overlapping: an error naming it, nothing written") {
    poison(dy.ptr, dy.bytes, nullptr, kOutsideByte);
    CHECK(kgen_softmax_dim_workspace(nullptr, 0, d, rows, cols, 1, dx.ptr, dy.ptr, ws.ptr, need - 16, nullptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_names("workspace"));
    CHECK(kgen_softmax_dim_workspace(nullptr, 0, d, rows, cols, 1, dx.ptr, dy.ptr, ws.at(8), need, nullptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_names("workspace"));
    CHECK(kgen_softmax_dim_workspace(nullptr, 0, d, rows, cols, 1, dx.ptr, dy.ptr, dy.ptr, need, nullptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_names("workspace"));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    CHECK(count_bytes(dy, kOutsideByte) == dy.bytes);
  }
  SECTION("backward") {
    const BackwardCase c = backward_case(d, rows, cols, 1, false);
    DeviceBuffer y(c.y.bytes.size()), g(c.y.bytes.size()), gx(c.y.bytes.size());
    upload(y, c.y);
    upload(g, c.dy);
    size_t bneed = 0;
    KGEN_REQUIRE(kgen_softmax_backward_workspace_size(nullptr, 0, d, rows, cols, 1, y.ptr, g.ptr, gx.ptr, &bneed));
    REQUIRE(bneed > 0);
    // the backward's own size (its split may take more parts than the forward's)
    DeviceBuffer bws(bneed);
    poison(bws.ptr, bws.bytes);
    poison(gx.ptr, gx.bytes);
    KGEN_REQUIRE(kgen_softmax_backward_dim_workspace(nullptr, 0, d, rows, cols, 1, y.ptr, g.ptr, gx.ptr, bws.ptr,
                                                     bneed, nullptr));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    check_matches(download(gx, d, n), c.want, backward_tolerance(d), &c.slack);
  }
}

TEST_CASE("the split tier in a CUDA graph (its workspace allocated in the graph)", "[softmax][split][graph]") {
  const int64_t rows = 2, cols = 5000001;  // past the grid tier's 34.6 MB
  HostTensor x = random_tensor(KGEN_FLOAT32, rows * cols);
  const std::vector<double> want = softmax_reference(values(x), rows, cols, 1, false);
  DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
  upload(dx, x);
  capture_and_replay(
      [&](cudaStream_t st) { return kgen_softmax(KGEN_FLOAT32, rows, cols, dx.ptr, dy.ptr, st); }, dy.ptr, dy.bytes,
      [&] { check_matches(download(dy, KGEN_FLOAT32, rows * cols), want, tolerance(KGEN_FLOAT32)); });
}

TEST_CASE("one row past 2^31 elements in the split tier", "[softmax][split][huge]") {
  // float16 log_softmax of a row that repeats a random tile: its max and sum
  // follow from the tile's, so the reference needs no pass over 2^31 values
  const int64_t tile = 1 << 20, cols = (int64_t{1} << 31) + 7;
  const size_t bytes = static_cast<size_t>(cols) * 2;
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < 2 * bytes + (size_t{1} << 30)) {
    WARN("skipped: needs " << 2 * bytes / (1 << 20) << " MiB of device memory");
    return;
  }
  HostTensor t = random_tensor(KGEN_FLOAT16, tile);
  DeviceBuffer x(bytes), y(bytes);
  for (int64_t c = 0; c < cols; c += tile)
    CUDA_REQUIRE(cudaMemcpy(x.at(c * 2), t.bytes.data(), std::min(tile, cols - c) * 2, cudaMemcpyHostToDevice));
  const std::vector<double> tv = values(t);
  const double mx = *std::max_element(tv.begin(), tv.end());
  double tile_sum = 0, rest = 0;
  for (int64_t i = 0; i < tile; ++i) tile_sum += std::exp(tv[i] - mx);
  for (int64_t i = 0; i < cols % tile; ++i) rest += std::exp(tv[i] - mx);
  const double log_sum = std::log(tile_sum * static_cast<double>(cols / tile) + rest);
  const char* name = nullptr;
  KGEN_REQUIRE(kgen_softmax_selected(1, KGEN_FLOAT16, 1, cols, x.ptr, y.ptr, &name));
  INFO(name);
  CHECK(find_facts(kgen::Family::softmax, name).tier == Tier::split);
  poison(y.ptr, bytes);
  KGEN_REQUIRE(kgen_log_softmax(KGEN_FLOAT16, 1, cols, x.ptr, y.ptr, nullptr));
  CUDA_REQUIRE(cudaDeviceSynchronize());
  // windows at the start, up to element 2^31 and at the end (past it)
  const int64_t window = 4096;
  for (int64_t at : {int64_t{0}, (int64_t{1} << 31) - window, cols - window}) {
    INFO("from column " << at);
    HostTensor got(KGEN_FLOAT16, static_cast<size_t>(window));
    const char* from = static_cast<const char*>(y.ptr) + at * 2;
    CUDA_REQUIRE(cudaMemcpy(got.bytes.data(), from, got.bytes.size(), cudaMemcpyDeviceToHost));
    std::vector<double> want(static_cast<size_t>(window));
    for (int64_t i = 0; i < window; ++i) want[i] = tv[(at + i) % tile] - mx - log_sum;
    check_matches(got, want, tolerance(KGEN_FLOAT16));
  }
}
