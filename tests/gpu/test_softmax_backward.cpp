// Softmax and log_softmax backward: every compiled variant of the
// softmax_backward family against a float64 CPU reference, over the last dim
// (kgen_softmax_backward, kgen_log_softmax_backward) and any dim
// (kgen_softmax_backward_dim), with y a real forward output, dy random, and
// dx poisoned before each run; in place (dx == dy, dx == y) too.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};

// One backward problem and its float64 expected dx (softmax_util.hpp).
using Case = BackwardCase;

struct Buffers {
  DeviceBuffer y, dy, dx;
  explicit Buffers(const Case& c) : y(c.y.bytes.size()), dy(c.dy.bytes.size()), dx(c.dy.bytes.size()) {
    upload(y, c.y);
    upload(dy, c.dy);
  }
};

std::string describe(const char* variant, bool log, kgen_dtype_t d, const DimCase& c) {
  return std::string(variant ? variant : "auto") + (log ? " log_softmax" : " softmax") + " " +
         dtype_short(d) + " " + c.text + " (outer " + std::to_string(c.outer) + ", axis " +
         std::to_string(c.axis) + ", inner " + std::to_string(c.inner) + ")";
}

// Runs `variant` (nullptr: automatic selection) into a poisoned dx and
// compares; false if the named variant does not support the problem.
bool run_and_check(const char* variant, bool log, kgen_dtype_t d, const DimCase& c, const Buffers& b,
                   const Case& want) {
  poison(b.dx.ptr, b.dx.bytes, nullptr, kOutsideByte);
  const kgen_status_t st = kgen_softmax_backward_variant(variant, log, d, c.outer, c.axis, c.inner,
                                                         b.y.ptr, b.dy.ptr, b.dx.ptr, nullptr);
  if (st == KGEN_ERROR_UNSUPPORTED && variant) return false;
  INFO(describe(variant, log, d, c) << ": " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  check_matches(download(b.dx, d, c.size()), want.want, backward_tolerance(d), &want.slack);
  return true;
}

// kgen_softmax_backward_dim (automatic selection) into a poisoned dx,
// compared; the name kgen_softmax_backward_selected gives for the problem.
const char* run_dim_and_check(bool log, kgen_dtype_t d, const DimCase& c, const Buffers& b, const Case& want) {
  poison(b.dx.ptr, b.dx.bytes, nullptr, kOutsideByte);
  KGEN_REQUIRE(kgen_softmax_backward_dim(log, d, c.outer, c.axis, c.inner, b.y.ptr, b.dy.ptr, b.dx.ptr, nullptr));
  CUDA_REQUIRE(cudaDeviceSynchronize());
  check_matches(download(b.dx, d, c.size()), want.want, backward_tolerance(d), &want.slack);
  const char* name = nullptr;
  KGEN_REQUIRE(kgen_softmax_backward_selected(log, d, c.outer, c.axis, c.inner, b.y.ptr, b.dy.ptr, b.dx.ptr, &name));
  return name;
}

// Last-dim rows: 1 row and many, cols off every pack, around each warp
// variant's reach and the backward smem tier's limit (two rows, y and dy, in
// shared memory), rows around 48 KiB of shared memory (past it, with the
// static scratch, a launch must raise the kernel's limit first), long rows.
std::vector<DimCase> row_cases(kgen_dtype_t d) {
  const int64_t smem_cols = (227 * 1024 - 1024) / (2 * elem_size(d));
  const int64_t k48 = 48 * 1024 / (2 * elem_size(d));
  std::vector<int64_t> cols = {1,    2,    3,    7,    8,    31,   32,    33,    64,
                               127,  128,  129,  500,  513,  1000, 1024,  1025,  2048,
                               3000, 4096, 8192, 12345, 32768, smem_cols - smem_cols % 8,
                               smem_cols + 8, 131072, k48 - 256, k48 - 8, k48, k48 + 8};
  for (int64_t reach : warp_reaches(kgen::Family::softmax_backward, d)) cols.push_back(reach);
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  std::vector<DimCase> out;
  for (int64_t c : cols) {
    out.push_back(oai_case(1, c, 1));
    out.push_back(oai_case(std::min<int64_t>(513, std::max<int64_t>(3, (int64_t{1} << 15) / c) | 1), c, 1));
  }
  out.push_back(oai_case(2, (int64_t{1} << 20) + 8, 1));
  out.push_back(oai_case(1, (int64_t{1} << 20) + 3, 1));  // odd and long: pack 1 only
  return out;
}

}  // namespace

TEST_CASE("every softmax_backward variant matches the float64 reference over the last dim and any dim",
          "[softmax_backward][variants]") {
  for (kgen_dtype_t d : kDtypes) {
    const auto variants = family_variants(kgen::Family::softmax_backward, d);
    REQUIRE(!variants.empty());
    std::vector<DimCase> cases = row_cases(d);
    for (const DimCase& c : dim_cases(kgen::Family::softmax_backward, d)) cases.push_back(c);
    std::map<std::string, int> runs;
    for (const DimCase& c : cases) {
      for (int log = 0; log < 2; ++log) {
        const Case want = backward_case(d, c.outer, c.axis, c.inner, log);
        const Buffers b(want);
        for (const VariantFacts& v : variants)
          if (run_and_check(v.name, log, d, c, b, want)) {
            runs[v.name]++;
            INFO(v.name << " ran " << c.text);
            CHECK((!v.row() || c.inner == 1));  // row tiers run the last dim only
          }
        run_and_check(nullptr, log, d, c, b, want);
      }
    }
    // every variant ran somewhere: none is dead weight or untested
    for (const VariantFacts& v : variants) {
      INFO(v.name);
      CHECK(runs[v.name] > 0);
    }
  }
}

TEST_CASE("the backward over an axis of one with inner > 1 runs as rows of one value",
          "[softmax_backward][entry]") {
  for (kgen_dtype_t d : kDtypes) {
    for (const DimCase& c : {oai_case(6, 1, 3), oai_case(1000, 1, 77), oai_case(1, 1, 100003)}) {
      for (int log = 0; log < 2; ++log) {
        const Case want = backward_case(d, c.outer, c.axis, c.inner, log);
        const Buffers b(want);
        INFO(describe(nullptr, log, d, c));
        const char* name = run_dim_and_check(log, d, c, b, want);
        INFO(name);
        CHECK(find_facts(kgen::Family::softmax_backward, name).row());
      }
    }
  }
}

TEST_CASE("kgen_softmax_backward, kgen_log_softmax_backward and kgen_softmax_backward_dim",
          "[softmax_backward][entry]") {
  for (kgen_dtype_t d : kDtypes) {
    for (const DimCase& c : {oai_case(1000, 128, 1), oai_case(33, 4096, 1), oai_case(3, 70000, 1),
                             oai_case(8, 64, 1000), oai_case(2, 3000, 17)}) {
      for (int log = 0; log < 2; ++log) {
        const Case want = backward_case(d, c.outer, c.axis, c.inner, log);
        const Buffers b(want);
        INFO(describe(nullptr, log, d, c));
        if (c.inner == 1) {
          poison(b.dx.ptr, b.dx.bytes, nullptr, kOutsideByte);
          KGEN_REQUIRE((log ? kgen_log_softmax_backward : kgen_softmax_backward)(
              d, c.outer, c.axis, b.y.ptr, b.dy.ptr, b.dx.ptr, nullptr));
          CUDA_REQUIRE(cudaDeviceSynchronize());
          check_matches(download(b.dx, d, c.size()), want.want, backward_tolerance(d), &want.slack);
        }
        // the selected variant can run the problem
        const char* name = run_dim_and_check(log, d, c, b, want);
        REQUIRE(name != nullptr);
        INFO(name);
        CHECK((c.inner == 1 || !find_facts(kgen::Family::softmax_backward, name).row()));
      }
    }
  }
}

TEST_CASE("softmax_backward in place (dx == dy and dx == y) for every variant",
          "[softmax_backward][inplace]") {
  for (kgen_dtype_t d : kDtypes) {
    for (const DimCase& c : {oai_case(37, 32, 1), oai_case(5, 1000, 1), oai_case(3, 8192, 1),
                             oai_case(2, 100000, 1), oai_case(3, 257, 24), oai_case(4, 3000, 8),
                             oai_case(5, 33, 17), oai_case(4, 3, 1037)}) {
      for (int log = 0; log < 2; ++log) {
        const Case want = backward_case(d, c.outer, c.axis, c.inner, log);
        DeviceBuffer y(want.y.bytes.size()), dy(want.dy.bytes.size());
        for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) {
          for (int into_dy = 0; into_dy < 2; ++into_dy) {
            upload(y, want.y);
            upload(dy, want.dy);
            const DeviceBuffer& dx = into_dy ? dy : y;
            const kgen_status_t st = kgen_softmax_backward_variant(v.name, log, d, c.outer, c.axis, c.inner,
                                                                   y.ptr, dy.ptr, dx.ptr, nullptr);
            if (st == KGEN_ERROR_UNSUPPORTED) continue;
            INFO(describe(v.name, log, d, c) << (into_dy ? " dx == dy" : " dx == y") << ": "
                                             << kgen_last_error());
            REQUIRE(st == KGEN_OK);
            check_matches(download(dx, d, c.size()), want.want, backward_tolerance(d), &want.slack);
          }
        }
      }
    }
  }
}

TEST_CASE("misaligned pointers in the backward are handled by automatic selection",
          "[softmax_backward][alignment]") {
  for (kgen_dtype_t d : kDtypes) {
    const int e = elem_size(d);
    for (const DimCase& c : {oai_case(33, 64, 1), oai_case(5, 4096, 1), oai_case(3, 100, 64)}) {
      const Case want = backward_case(d, c.outer, c.axis, c.inner, false);
      const size_t bytes = want.y.bytes.size();
      DeviceBuffer y(bytes + 64), dy(bytes + 64), dx(bytes + 64);
      for (size_t off : {size_t(0), size_t(e), size_t(3 * e)}) {
        const size_t dy_off = off == 0 ? 2 * e : 0;
        upload(y, want.y, off);
        upload(dy, want.dy, dy_off);
        poison(dx.ptr, dx.bytes, nullptr, kOutsideByte);
        INFO(describe(nullptr, false, d, c) << " byte offsets y " << off << ", dy " << dy_off << ", dx " << e);
        KGEN_REQUIRE(kgen_softmax_backward_dim(0, d, c.outer, c.axis, c.inner, y.at(off), dy.at(dy_off),
                                               dx.at(e), nullptr));
        CUDA_REQUIRE(cudaDeviceSynchronize());
        check_matches(download(dx, d, c.size(), e), want.want, backward_tolerance(d), &want.slack);
      }
    }
  }
}

TEST_CASE("every backward span variant on misaligned rows, dx apart", "[softmax_backward][alignment]") {
  // y and dy at the same offset into a 16-byte line (the span reads dy in
  // y's packs; supports() refuses others), dx congruent or not
  for (kgen_dtype_t d : kDtypes) {
    const int e = elem_size(d);
    int ran = 0;
    for (const DimCase& c : {oai_case(257, 33, 1), oai_case(129, 127, 1), oai_case(37, 41, 1), oai_case(17, 1001, 1)}) {
      for (int log = 0; log < 2; ++log) {
        const Case want = backward_case(d, c.outer, c.axis, c.inner, log);
        const size_t bytes = want.y.bytes.size();
        DeviceBuffer y(bytes + 64), dy(bytes + 64), dx(bytes + 64);
        for (size_t off : {size_t(0), size_t(e), size_t(3 * e)}) {
          upload(y, want.y, off);
          upload(dy, want.dy, off);
          for (size_t dx_off : {off, off + e}) {
            for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) {
              if (v.tier != Tier::span) continue;
              poison(dx.ptr, dx.bytes, nullptr, kOutsideByte);
              const kgen_status_t st = kgen_softmax_backward_variant(v.name, log, d, c.outer, c.axis, c.inner,
                                                                     y.at(off), dy.at(off), dx.at(dx_off), nullptr);
              if (st == KGEN_ERROR_UNSUPPORTED) continue;
              INFO(describe(v.name, log, d, c) << " y and dy " << off << " bytes in, dx " << dx_off << ": "
                                               << kgen_last_error());
              REQUIRE(st == KGEN_OK);
              CUDA_REQUIRE(cudaDeviceSynchronize());
              check_matches(download(dx, d, c.size(), dx_off), want.want, backward_tolerance(d), &want.slack);
              ++ran;
            }
          }
        }
      }
    }
    INFO(elem_size(d));
    // a span variant at least, every shape, mode and offset: the default
    // level builds them for the half types (float32 and float64 only at the
    // full level, float64 never)
    int spans = 0;
    for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) spans += v.tier == Tier::span;
    if (elem_size(d) == 2 || spans > 0) CHECK(ran >= 4 * 2 * 3 * 2);
    // dy off y's 16-byte offset: refused, nothing written
    for (const VariantFacts& v : family_variants(kgen::Family::softmax_backward, d)) {
      if (v.tier != Tier::span) continue;
      DeviceBuffer y(4096), dy(4096), dx(4096);
      poison(dx.ptr, dx.bytes, nullptr, kOutsideByte);
      INFO(v.name);
      CHECK(kgen_softmax_backward_variant(v.name, 0, d, 3, 41, 1, y.ptr, dy.at(e), dx.ptr, nullptr) ==
            KGEN_ERROR_UNSUPPORTED);
      CUDA_REQUIRE(cudaDeviceSynchronize());
      CHECK(count_bytes(dx, kOutsideByte) == dx.bytes);
    }
  }
}

TEST_CASE("empty backward problems launch nothing and touch nothing", "[softmax_backward][empty]") {
  DeviceBuffer buf(64);
  poison(buf.ptr, 64, nullptr, kOutsideByte);
  KGEN_REQUIRE(kgen_softmax_backward(KGEN_FLOAT32, 0, 16, buf.ptr, buf.ptr, buf.ptr, nullptr));
  KGEN_REQUIRE(kgen_log_softmax_backward(KGEN_FLOAT16, 16, 0, buf.ptr, buf.ptr, buf.ptr, nullptr));
  KGEN_REQUIRE(kgen_softmax_backward_dim(1, KGEN_FLOAT64, 4, 16, 0, buf.ptr, buf.ptr, buf.ptr, nullptr));
  CHECK(count_bytes(buf, kOutsideByte) == 64);
}

TEST_CASE("bad backward arguments are errors naming them, nothing written",
          "[softmax_backward][errors]") {
  const int64_t rows = 4, cols = 256, n = rows * cols;
  DeviceBuffer y(n * 4), dy(n * 4 + 64), dx(n * 4);
  const Case want = backward_case(KGEN_FLOAT32, rows, cols, 1, false);
  upload(y, want.y);
  upload(dy, want.dy);
  poison(dx.ptr, dx.bytes, nullptr, kOutsideByte);
  std::vector<float> host(n, 1.0f);
  CHECK(kgen_softmax_backward(KGEN_FLOAT32, rows, cols, host.data(), dy.ptr, dx.ptr, nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("y"));
  CHECK(kgen_softmax_backward(KGEN_FLOAT32, rows, cols, y.ptr, host.data(), dx.ptr, nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("dy"));
  CHECK(kgen_log_softmax_backward(KGEN_FLOAT32, rows, cols, y.ptr, dy.ptr, host.data(), nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("dx"));
  CHECK(std::all_of(host.begin(), host.end(), [](float v) { return v == 1.0f; }));
  // dx overlapping dy without being dy
  CHECK(kgen_softmax_backward_dim(0, KGEN_FLOAT32, rows, cols, 1, y.ptr, dy.ptr, dy.at(4 * 16), nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("dx"));
  CHECK(count_bytes(dx, kOutsideByte) == dx.bytes);
}

TEST_CASE("softmax_backward can be captured into a CUDA graph and replayed",
          "[softmax_backward][graph]") {
  for (const DimCase& c : {oai_case(1000, 128, 1), oai_case(4, 300000, 1), oai_case(16, 512, 64)}) {
    const Case want = backward_case(KGEN_FLOAT32, c.outer, c.axis, c.inner, true);
    const Buffers b(want);
    capture_and_replay(
        [&](cudaStream_t st) {
          return kgen_softmax_backward_dim(1, KGEN_FLOAT32, c.outer, c.axis, c.inner, b.y.ptr, b.dy.ptr,
                                           b.dx.ptr, st);
        },
        b.dx.ptr, b.dx.bytes, [&] {
          check_matches(download(b.dx, KGEN_FLOAT32, c.size()), want.want, backward_tolerance(KGEN_FLOAT32), &want.slack);
        });
  }
}

namespace {

// Fills rows [period, rows) of b (rows of row_bytes) with copies of its
// first `period` rows, doubling the filled part each time: row r holds row
// r % period, in about log2(rows / period) copies.
void tile_rows(const DeviceBuffer& b, size_t row_bytes, int64_t period, int64_t rows) {
  for (int64_t done = period; done < rows; done *= 2) {
    const int64_t n = std::min(done, rows - done);
    CUDA_REQUIRE(cudaMemcpy(b.at(static_cast<size_t>(done) * row_bytes), b.ptr, static_cast<size_t>(n) * row_bytes,
                            cudaMemcpyDeviceToDevice));
  }
}

}  // namespace

TEST_CASE("softmax_backward past 2^31 elements (int64 indexing)", "[softmax_backward][huge]") {
  // (2^19 + 3) rows of 4096 float16 columns: 2^31 + 12288 elements, so that
  // the last rows' offsets pass 2^31 elements and 2^32 bytes
  const int64_t cols = 4096, rows = (int64_t{1} << 19) + 3, period = 16;
  const size_t row_bytes = static_cast<size_t>(cols) * 2, bytes = static_cast<size_t>(rows) * row_bytes;
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < 3 * bytes + (size_t{1} << 30)) {
    WARN("skipped: needs " << 3 * bytes / (1 << 20) << " MiB of device memory");
    return;
  }
  DeviceBuffer y(bytes), dy(bytes), dx(bytes);
  for (int log = 0; log < 2; ++log) {
    // every row r is tile row r % period, whose expected dx the tile's case knows
    const Case tile = backward_case(KGEN_FLOAT16, period, cols, 1, log != 0);
    upload(y, tile.y);
    upload(dy, tile.dy);
    tile_rows(y, row_bytes, period, rows);
    tile_rows(dy, row_bytes, period, rows);
    poison(dx.ptr, bytes, nullptr, kOutsideByte);
    KGEN_REQUIRE(log ? kgen_log_softmax_backward(KGEN_FLOAT16, rows, cols, y.ptr, dy.ptr, dx.ptr, nullptr)
                     : kgen_softmax_backward(KGEN_FLOAT16, rows, cols, y.ptr, dy.ptr, dx.ptr, nullptr));
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    const int64_t boundary = (int64_t{1} << 31) / cols;  // the first row past 2^31 elements
    for (int64_t r : {int64_t{0}, boundary - 1, boundary, rows - 1}) {
      const size_t t = static_cast<size_t>((r % period) * cols);
      const std::vector<double> want(tile.want.begin() + t, tile.want.begin() + t + cols);
      const std::vector<double> slack(tile.slack.begin() + t, tile.slack.begin() + t + cols);
      INFO("row " << r << " log=" << log);
      check_matches(download(dx, KGEN_FLOAT16, static_cast<size_t>(cols), static_cast<size_t>(r) * row_bytes), want,
                    backward_tolerance(KGEN_FLOAT16), &slack);
    }
  }
}
