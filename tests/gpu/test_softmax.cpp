// Every compiled softmax variant against a float64 CPU reference, on random
// inputs over edge shapes, with the output poisoned before each run.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "registry.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};

std::vector<double> reference(const HostTensor& x, int64_t rows, int64_t cols, bool log) {
  return softmax_reference(values(x), rows, cols, 1, log);
}

struct Shape {
  int64_t rows, cols;
};

// Edge shapes: 1 row, odd rows, cols 1, cols off every pack, cols just past
// each warp reach and the shared-memory limit, rows around 48 KiB of shared
// memory (past it, with the static scratch, a launch must raise the
// kernel's limit first), long rows.
std::vector<Shape> shapes(kgen_dtype_t d) {
  const int64_t smem_cols = (227 * 1024 - 1024) / elem_size(d);  // smem tier's last row length on H100/H200
  const int64_t k48 = 48 * 1024 / elem_size(d);
  std::vector<int64_t> cols = {1, 2, 3, 4, 5, 6, 7, 8, 16, 31, 32, 33, 64, 96, 127, 128, 129, 255,
                               256, 500, 512, 513, 768, 1000, 1024, 1025, 2048, 3000, 4096,
                               8192, 12345, 32768, smem_cols - smem_cols % 8, smem_cols + 8,
                               131072, k48 - 256, k48 - 8, k48, k48 + 8};
  for (int64_t reach : warp_reaches(kgen::Family::softmax, d)) cols.push_back(reach);
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  std::vector<Shape> out;
  for (int64_t c : cols) {
    out.push_back({1, c});
    const int64_t rows = std::max<int64_t>(3, (int64_t{1} << 17) / c) | 1;  // odd
    out.push_back({std::min<int64_t>(rows, 1001), c});
  }
  out.push_back({2, (int64_t{1} << 22) + 8});  // a long row, 4M+ columns
  out.push_back({1, (int64_t{1} << 22) + 3});  // odd and long: pack 1 only
  return out;
}

struct Case {
  HostTensor x;
  std::vector<double> want[2];  // [log]
};

std::vector<const char*> softmax_variants(kgen_dtype_t d) {
  std::vector<const char*> out;
  for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::softmax, d)) out.push_back(v->name);
  return out;
}

// Runs `variant` (nullptr: automatic selection) and compares; false if the
// variant does not support the problem.
bool run_and_check(const char* variant, bool log, kgen_dtype_t d, Shape s, const DeviceBuffer& x,
                   size_t x_off, const DeviceBuffer& y, size_t y_off, const std::vector<double>& want,
                   unsigned char poison_byte) {
  const size_t bytes = static_cast<size_t>(s.rows * s.cols) * elem_size(d);
  CUDA_REQUIRE(cudaMemset(y.at(y_off), poison_byte, bytes));
  kgen_status_t st = kgen_softmax_variant(variant, log, d, s.rows, s.cols, x.at(x_off), y.at(y_off), nullptr);
  if (st == KGEN_ERROR_UNSUPPORTED && variant) return false;
  INFO((variant ? variant : "auto") << " log=" << log << " rows=" << s.rows << " cols=" << s.cols
                                    << ": " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  HostTensor got(d, static_cast<size_t>(s.rows * s.cols));
  CUDA_REQUIRE(cudaMemcpy(got.bytes.data(), y.at(y_off), bytes, cudaMemcpyDeviceToHost));
  std::string first;
  const size_t bad = count_mismatches(got, want, tolerance(d), &first);
  INFO(first);
  CHECK(bad == 0);
  return true;
}

}  // namespace

TEST_CASE("every softmax variant matches the float64 reference on every shape it supports",
          "[softmax][variants]") {
  for (kgen_dtype_t d : kDtypes) {
    const auto variants = softmax_variants(d);
    REQUIRE(!variants.empty());
    std::map<std::string, int> runs;
    for (Shape s : shapes(d)) {
      const size_t n = static_cast<size_t>(s.rows * s.cols);
      for (int special = 0; special < 2; ++special) {
        if (special && s.rows < 5) continue;
        HostTensor x = random_tensor(d, n);
        if (special) add_special_rows(x, s.rows, s.cols);
        const std::vector<double> want[2] = {reference(x, s.rows, s.cols, false),
                                             reference(x, s.rows, s.cols, true)};
        DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
        CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
        // special rows expect NaN: poison with zeros there, NaN elsewhere
        const unsigned char poison_byte = special ? 0x00 : 0xFF;
        for (const char* v : variants)
          for (int log = 0; log < 2; ++log)
            if (run_and_check(v, log, d, s, dx, 0, dy, 0, want[log], poison_byte)) runs[v]++;
        for (int log = 0; log < 2; ++log)
          run_and_check(nullptr, log, d, s, dx, 0, dy, 0, want[log], poison_byte);
      }
    }
    // every row-tier and generic variant ran somewhere: none is dead weight
    // or untested (the strided tiers, whose packs run along inner > 1, are
    // test_softmax_dim.cpp's)
    for (const VariantFacts& v : family_variants(kgen::Family::softmax, d)) {
      if (!v.row() && v.tier != Tier::generic) continue;
      INFO(v.name);
      CHECK(runs[v.name] > 0);
    }
  }
}

TEST_CASE("softmax in place (x == y) for every variant", "[softmax][inplace]") {
  for (kgen_dtype_t d : kDtypes) {
    for (Shape s : {Shape{37, 32}, Shape{5, 1000}, Shape{3, 8192}, Shape{2, 100000}}) {
      const size_t n = static_cast<size_t>(s.rows * s.cols);
      HostTensor x = random_tensor(d, n);
      const std::vector<double> want[2] = {reference(x, s.rows, s.cols, false),
                                           reference(x, s.rows, s.cols, true)};
      DeviceBuffer buf(x.bytes.size());
      for (const char* v : softmax_variants(d)) {
        for (int log = 0; log < 2; ++log) {
          CUDA_REQUIRE(cudaMemcpy(buf.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
          kgen_status_t st = kgen_softmax_variant(v, log, d, s.rows, s.cols, buf.ptr, buf.ptr, nullptr);
          if (st == KGEN_ERROR_UNSUPPORTED) continue;
          INFO(v << " rows=" << s.rows << " cols=" << s.cols << ": " << kgen_last_error());
          REQUIRE(st == KGEN_OK);
          HostTensor got(d, n);
          CUDA_REQUIRE(cudaMemcpy(got.bytes.data(), buf.ptr, x.bytes.size(), cudaMemcpyDeviceToHost));
          std::string first;
          CHECK(count_mismatches(got, want[log], tolerance(d), &first) == 0);
        }
      }
    }
  }
}

TEST_CASE("misaligned pointers are handled by automatic selection", "[softmax][alignment]") {
  for (kgen_dtype_t d : kDtypes) {
    const int e = elem_size(d);
    for (Shape s : {Shape{1001, 3}, Shape{4099, 5}, Shape{33, 64}, Shape{9, 1024}, Shape{5, 4096}, Shape{2, 70000}}) {
      const size_t n = static_cast<size_t>(s.rows * s.cols);
      HostTensor x = random_tensor(d, n);
      const std::vector<double> want = reference(x, s.rows, s.cols, false);
      DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
      for (size_t x_off : {size_t(0), size_t(e), size_t(3 * e)})
        for (size_t y_off : {size_t(0), size_t(e)}) {
          CUDA_REQUIRE(cudaMemcpy(dx.at(x_off), x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
          run_and_check(nullptr, false, d, s, dx, x_off, dy, y_off, want, 0xFF);
        }
    }
  }
}

TEST_CASE("every tile and span variant on misaligned rows, x and y apart", "[softmax][alignment]") {
  // whole rows of up to 256 values are computed on their way out of the
  // tile (softmax.cuh tile_rows): the edge elements one at a time, packs
  // a row crosses, rows shorter than a pack, y not congruent to x; the
  // span tier holds a row's aligned body from its first 16-byte boundary
  // and the head and tail an element a lane, whatever the row's offset
  for (kgen_dtype_t d : kDtypes) {
    const int e = elem_size(d);
    std::map<Tier, int> ran;
    for (Shape s : {Shape{1001, 2}, Shape{999, 7}, Shape{513, 12}, Shape{257, 33}, Shape{129, 127}, Shape{65, 255},
                    Shape{37, 41}, Shape{33, 333}, Shape{17, 1001}}) {
      const size_t n = static_cast<size_t>(s.rows * s.cols);
      HostTensor x = random_tensor(d, n);
      const std::vector<double> want[2] = {reference(x, s.rows, s.cols, false), reference(x, s.rows, s.cols, true)};
      DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
      for (size_t x_off : {size_t(0), size_t(e), size_t(3 * e)}) {
        CUDA_REQUIRE(cudaMemcpy(dx.at(x_off), x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
        for (size_t y_off : {size_t(0), size_t(e)})
          for (const VariantFacts& v : family_variants(kgen::Family::softmax, d))
            if (v.tier == Tier::tile || v.tier == Tier::span)
              for (int log = 0; log < 2; ++log)
                ran[v.tier] += run_and_check(v.name, log, d, s, dx, x_off, dy, y_off, want[log], 0xFF);
      }
    }
    INFO(elem_size(d));
    CHECK(ran[Tier::tile] >= 6 * 3 * 2 * 2);  // a tile variant at least, every shape, offset and mode
    if (d != KGEN_FLOAT64) CHECK(ran[Tier::span] >= 6 * 3 * 2 * 2);  // a span variant on every shape of 15 values or more (none for float64)
  }
}

TEST_CASE("rows = 0 and cols = 0 launch nothing and touch nothing", "[softmax][empty]") {
  DeviceBuffer y(64);
  CUDA_REQUIRE(cudaMemset(y.ptr, 0x5A, 64));
  KGEN_REQUIRE(kgen_softmax(KGEN_FLOAT32, 0, 16, y.ptr, y.ptr, nullptr));
  KGEN_REQUIRE(kgen_log_softmax(KGEN_FLOAT16, 16, 0, y.ptr, y.ptr, nullptr));
  unsigned char host[64];
  CUDA_REQUIRE(cudaMemcpy(host, y.ptr, 64, cudaMemcpyDeviceToHost));
  CHECK(std::count(host, host + 64, 0x5A) == 64);
}

TEST_CASE("host pointers are errors naming them, nothing written",
          "[softmax][errors]") {
  const int64_t rows = 4, cols = 256;
  DeviceBuffer x(rows * cols * 4), y(rows * cols * 4);
  HostTensor hx = random_tensor(KGEN_FLOAT32, rows * cols);
  CUDA_REQUIRE(cudaMemcpy(x.ptr, hx.bytes.data(), hx.bytes.size(), cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemset(y.ptr, 0x5A, y.bytes));
  std::vector<float> host(rows * cols, 1.0f);

  CHECK(kgen_softmax(KGEN_FLOAT32, rows, cols, host.data(), y.ptr, nullptr) == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kgen_last_error()).rfind("x:", 0) == 0);
  CHECK(kgen_softmax(KGEN_FLOAT32, rows, cols, x.ptr, host.data(), nullptr) == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kgen_last_error()).rfind("y:", 0) == 0);
  CHECK(std::all_of(host.begin(), host.end(), [](float v) { return v == 1.0f; }));

  std::vector<unsigned char> after(y.bytes);
  CUDA_REQUIRE(cudaMemcpy(after.data(), y.ptr, y.bytes, cudaMemcpyDeviceToHost));
  CHECK(std::count(after.begin(), after.end(), 0x5A) == static_cast<long>(y.bytes));
}

TEST_CASE("softmax on a stream is ordered with the stream's other work", "[softmax][stream]") {
  const int64_t rows = 513, cols = 777;
  HostTensor x = random_tensor(KGEN_BFLOAT16, rows * cols);
  const std::vector<double> want = reference(x, rows, cols, true);
  DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
  cudaStream_t s;
  CUDA_REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  HostTensor got(KGEN_BFLOAT16, rows * cols);
  CUDA_REQUIRE(cudaMemcpyAsync(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice, s));
  poison(dy.ptr, dy.bytes, s);
  KGEN_REQUIRE(kgen_log_softmax(KGEN_BFLOAT16, rows, cols, dx.ptr, dy.ptr, s));
  CUDA_REQUIRE(cudaMemcpyAsync(got.bytes.data(), dy.ptr, dy.bytes, cudaMemcpyDeviceToHost, s));
  CUDA_REQUIRE(cudaStreamSynchronize(s));
  CUDA_REQUIRE(cudaStreamDestroy(s));
  std::string first;
  CHECK(count_mismatches(got, want, tolerance(KGEN_BFLOAT16), &first) == 0);
}

TEST_CASE("softmax can be captured into a CUDA graph and replayed", "[softmax][graph]") {
  for (Shape s : {Shape{1000, 128}, Shape{64, 4096}, Shape{4, 300000}}) {
    HostTensor x = random_tensor(KGEN_FLOAT32, s.rows * s.cols);
    const std::vector<double> want = reference(x, s.rows, s.cols, false);
    DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
    CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
    capture_and_replay(
        [&](cudaStream_t st) { return kgen_softmax(KGEN_FLOAT32, s.rows, s.cols, dx.ptr, dy.ptr, st); },
        dy.ptr, dy.bytes, [&] {
          HostTensor got(KGEN_FLOAT32, s.rows * s.cols);
          CUDA_REQUIRE(cudaMemcpy(got.bytes.data(), dy.ptr, dy.bytes, cudaMemcpyDeviceToHost));
          std::string first;
          CHECK(count_mismatches(got, want, tolerance(KGEN_FLOAT32), &first) == 0);
        });
  }
}

TEST_CASE("a tensor past 2^31 elements (int64 indexing)", "[softmax][huge]") {
  const int64_t cols = 1024, rows = (int64_t{1} << 21) + 3;  // 2^31 + 3072 elements of float16
  const size_t n = static_cast<size_t>(rows * cols), bytes = n * 2;
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < 2 * bytes + (size_t{1} << 30)) {
    WARN("skipped: needs " << 2 * bytes / (1 << 20) << " MiB of device memory");
    return;
  }
  const int64_t tile_rows = 16384;  // the input repeats a random tile
  HostTensor tile = random_tensor(KGEN_FLOAT16, static_cast<size_t>(tile_rows * cols));
  DeviceBuffer x(bytes), y(bytes);
  for (int64_t r = 0; r < rows; r += tile_rows) {
    const int64_t count = std::min(tile_rows, rows - r);
    CUDA_REQUIRE(cudaMemcpy(x.at(r * cols * 2), tile.bytes.data(), count * cols * 2, cudaMemcpyHostToDevice));
  }
  for (int log = 0; log < 2; ++log) {
    poison(y.ptr, bytes);
    KGEN_REQUIRE(kgen_softmax_variant(nullptr, log, KGEN_FLOAT16, rows, cols, x.ptr, y.ptr, nullptr));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    // rows around element 2^31 and at both ends
    for (int64_t r : {int64_t{0}, int64_t{1} << 21, (int64_t{1} << 21) - 1, rows - 1, rows - 2}) {
      HostTensor got(KGEN_FLOAT16, cols), in(KGEN_FLOAT16, cols);
      CUDA_REQUIRE(cudaMemcpy(got.bytes.data(), y.at(r * cols * 2), cols * 2, cudaMemcpyDeviceToHost));
      CUDA_REQUIRE(cudaMemcpy(in.bytes.data(), x.at(r * cols * 2), cols * 2, cudaMemcpyDeviceToHost));
      std::string first;
      INFO("row " << r << " log=" << log);
      CHECK(count_mismatches(got, reference(in, 1, cols, log), tolerance(KGEN_FLOAT16), &first) == 0);
    }
  }
}
