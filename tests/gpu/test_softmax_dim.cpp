// Softmax over any dim (kgen_softmax_dim): every compiled variant of the
// forward family against a float64 CPU reference on random inputs, over dims
// 0, 1 and the last of tensors of rank 2 to 4 and past every strided
// variant's reach, with the output poisoned before each run.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};

// Runs `variant` (nullptr: automatic selection) on x -> y after poisoning y
// and compares; false if the named variant does not support the problem.
bool run_and_check(const char* variant, bool log, kgen_dtype_t d, const DimCase& c,
                   const DeviceBuffer& x, size_t x_off, const DeviceBuffer& y, size_t y_off,
                   const std::vector<double>& want) {
  const size_t bytes = c.size() * elem_size(d);
  poison(y.at(y_off), bytes, nullptr, kOutsideByte);
  const kgen_status_t st = kgen_softmax_dim_variant(variant, log, d, c.outer, c.axis, c.inner,
                                                    x.at(x_off), y.at(y_off), nullptr);
  if (st == KGEN_ERROR_UNSUPPORTED && variant) return false;
  INFO((variant ? variant : "auto") << " log=" << log << " " << dtype_short(d) << " " << c.text
                                    << " (outer " << c.outer << ", axis " << c.axis << ", inner "
                                    << c.inner << "): " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  check_matches(download(y, d, c.size(), y_off), want, tolerance(d));
  return true;
}

// Slices of special values on top of random data (for outer >= 2 and
// inner >= 5): all -inf, a NaN, a +inf, -inf mixed with finite values, huge
// magnitudes.
void add_special_slices(HostTensor& x, const DimCase& c) {
  const double inf = std::numeric_limits<double>::infinity();
  auto at = [&](int64_t o, int64_t a, int64_t i) { return static_cast<size_t>((o * c.axis + a) * c.inner + i); };
  for (int64_t a = 0; a < c.axis; ++a) x.set(at(0, a, 0), -inf);
  x.set(at(0, c.axis / 2, 1), NAN);
  x.set(at(1, c.axis / 3, 2), inf);
  for (int64_t a = 0; a < c.axis; a += 2) x.set(at(1, a, 3), -inf);
  for (int64_t a = 0; a < c.axis; ++a) x.set(at(0, a, 4), x.get(at(0, a, 4)) * 3000.0);
}

}  // namespace

TEST_CASE("every softmax variant matches the float64 reference over any dim",
          "[softmax_dim][variants]") {
  for (kgen_dtype_t d : kDtypes) {
    const auto variants = family_variants(kgen::Family::softmax, d);
    REQUIRE(!variants.empty());
    std::vector<DimCase> cases = dim_cases(kgen::Family::softmax, d);
    cases.push_back(oai_case(3, 300, 6));  // holds the special slices
    std::map<std::string, int> runs;
    for (const DimCase& c : cases) {
      const bool special = c.outer == 3 && c.axis == 300 && c.inner == 6;
      HostTensor x = random_tensor(d, c.size());
      if (special) add_special_slices(x, c);
      const std::vector<double> want[2] = {softmax_reference(values(x), c.outer, c.axis, c.inner, false),
                                           softmax_reference(values(x), c.outer, c.axis, c.inner, true)};
      DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
      upload(dx, x);
      for (const VariantFacts& v : variants)
        for (int log = 0; log < 2; ++log)
          if (run_and_check(v.name, log, d, c, dx, 0, dy, 0, want[log])) {
            runs[v.name]++;
            // row tiers run the last dim only
            INFO(v.name << " ran " << c.text);
            CHECK((!v.row() || c.inner == 1));
          }
      for (int log = 0; log < 2; ++log) run_and_check(nullptr, log, d, c, dx, 0, dy, 0, want[log]);
    }
    // every variant ran somewhere: none is dead weight or untested
    for (const VariantFacts& v : variants) {
      INFO(v.name);
      CHECK(runs[v.name] > 0);
    }
  }
}

TEST_CASE("a long axis over a narrow inner sums to the reference in every two-pass variant",
          "[softmax_dim][long-axis]") {
  // one thread folds about 10^5 values of the axis one after another: a
  // plain float32 sum drifted 1.3e-4 from the reference (random test,
  // float32 (1, 777738, 5) one element into its storage); the sum is
  // compensated
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT64}) {
    const int e = elem_size(d);
    const DimCase c = oai_case(1, 777738, 5);
    HostTensor x = random_tensor(d, c.size());
    const std::vector<double> want[2] = {softmax_reference(values(x), c.outer, c.axis, c.inner, false),
                                         softmax_reference(values(x), c.outer, c.axis, c.inner, true)};
    DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
    int ran = 0;
    for (size_t x_off : {size_t(0), size_t(7 * e)}) {
      upload(dx, x, x_off);
      for (int log = 0; log < 2; ++log) {
        run_and_check(nullptr, log, d, c, dx, x_off, dy, 3 * e, want[log]);
        for (const VariantFacts& v : family_variants(kgen::Family::softmax, d))
          if ((v.tier == Tier::generic || v.tier == Tier::strided_uncached) &&
              run_and_check(v.name, log, d, c, dx, x_off, dy, 3 * e, want[log]))
            ++ran;
      }
    }
    CHECK(ran >= 4);  // the generic variant at least, both modes, both offsets
  }
}

TEST_CASE("the last dim through kgen_softmax_dim matches kgen_softmax_variant",
          "[softmax_dim][consistency]") {
  for (kgen_dtype_t d : kDtypes) {
    const DimCase c = oai_case(37, 1000, 1);
    HostTensor x = random_tensor(d, c.size());
    DeviceBuffer dx(x.bytes.size()), a(x.bytes.size()), b(x.bytes.size());
    upload(dx, x);
    for (int log = 0; log < 2; ++log) {
      poison(a.ptr, a.bytes, nullptr, kOutsideByte);
      poison(b.ptr, b.bytes, nullptr, kOutsideByte);
      KGEN_REQUIRE(kgen_softmax_dim(log, d, c.outer, c.axis, 1, dx.ptr, a.ptr, nullptr));
      KGEN_REQUIRE(kgen_softmax_variant(nullptr, log, d, c.outer, c.axis, dx.ptr, b.ptr, nullptr));
      const std::vector<double> want = softmax_reference(values(x), c.outer, c.axis, 1, log);
      INFO(dtype_short(d) << " log=" << log);
      check_matches(download(a, d, c.size()), want, tolerance(d));
      check_matches(download(b, d, c.size()), want, tolerance(d));
    }
  }
}

TEST_CASE("softmax over a dim in place (x == y) for every variant", "[softmax_dim][inplace]") {
  for (kgen_dtype_t d : kDtypes) {
    for (const DimCase& c : {oai_case(3, 257, 24), oai_case(2, 64, 1000), oai_case(4, 3000, 8),
                             oai_case(5, 33, 17), oai_case(17, 512, 1), oai_case(4, 3, 1037)}) {
      HostTensor x = random_tensor(d, c.size());
      const std::vector<double> want[2] = {softmax_reference(values(x), c.outer, c.axis, c.inner, false),
                                           softmax_reference(values(x), c.outer, c.axis, c.inner, true)};
      DeviceBuffer buf(x.bytes.size());
      for (const VariantFacts& v : family_variants(kgen::Family::softmax, d)) {
        for (int log = 0; log < 2; ++log) {
          upload(buf, x);
          const kgen_status_t st =
              kgen_softmax_dim_variant(v.name, log, d, c.outer, c.axis, c.inner, buf.ptr, buf.ptr, nullptr);
          if (st == KGEN_ERROR_UNSUPPORTED) continue;
          INFO(v.name << " " << c.text << ": " << kgen_last_error());
          REQUIRE(st == KGEN_OK);
          check_matches(download(buf, d, c.size()), want[log], tolerance(d));
        }
      }
    }
  }
}

TEST_CASE("misaligned pointers over a dim are handled by automatic selection",
          "[softmax_dim][alignment]") {
  for (kgen_dtype_t d : kDtypes) {
    const int e = elem_size(d);
    for (const DimCase& c : {oai_case(3, 100, 64), oai_case(2, 3000, 16), oai_case(4, 9, 1024), oai_case(3, 5, 301)}) {
      HostTensor x = random_tensor(d, c.size());
      const std::vector<double> want = softmax_reference(values(x), c.outer, c.axis, c.inner, false);
      DeviceBuffer dx(x.bytes.size() + 64), dy(x.bytes.size() + 64);
      for (size_t x_off : {size_t(0), size_t(e), size_t(3 * e)})
        for (size_t y_off : {size_t(0), size_t(e)}) {
          upload(dx, x, x_off);
          run_and_check(nullptr, false, d, c, dx, x_off, dy, y_off, want);
        }
    }
  }
}

TEST_CASE("the selected variant over a dim can run the problem", "[softmax_dim][selection]") {
  for (kgen_dtype_t d : kDtypes) {
    const std::vector<DimCase> cases = {oai_case(64, 33, 17), oai_case(8, 256, 64), oai_case(2, 5000, 24),
                                        oai_case(1000, 128, 1), oai_case(4, 100000, 1)};
    size_t most = 0;
    for (const DimCase& c : cases) most = std::max(most, c.size());
    DeviceBuffer x(most * elem_size(d)), y(most * elem_size(d));
    for (const DimCase& c : cases) {
      const char* name = nullptr;
      KGEN_REQUIRE(kgen_softmax_dim_selected(0, d, c.outer, c.axis, c.inner, x.ptr, y.ptr, &name));
      REQUIRE(name != nullptr);
      const VariantFacts v = find_facts(kgen::Family::softmax, name);
      INFO(name << " for " << c.text);
      CHECK((c.inner == 1 || !v.row()));
    }
    // a short axis over any inner: a thread a column pack (the default
    // level compiles no float64 column variant)
    for (const DimCase& c : {oai_case(1, 3, 2049), oai_case(5, 16, 64)}) {
      if (d == KGEN_FLOAT64) break;
      const char* name = nullptr;
      KGEN_REQUIRE(kgen_softmax_dim_selected(0, d, c.outer, c.axis, c.inner, x.ptr, y.ptr, &name));
      INFO(name << " for " << c.text);
      CHECK(find_facts(kgen::Family::softmax, name).tier == Tier::column);
    }
    const char* name = nullptr;
    KGEN_REQUIRE(kgen_softmax_dim_selected(1, d, 0, 7, 5, x.ptr, y.ptr, &name));
    CHECK(std::string(name).empty());
  }
}

TEST_CASE("an axis of one over inner > 1 runs as rows of one value", "[softmax_dim][selection]") {
  for (kgen_dtype_t d : kDtypes) {
    for (const DimCase& c : {oai_case(6, 1, 3), oai_case(1000, 1, 77), oai_case(1, 1, 100003)}) {
      HostTensor x = random_tensor(d, c.size());
      x.set(0, NAN);
      x.set(1, std::numeric_limits<double>::infinity());
      x.set(2, -std::numeric_limits<double>::infinity());
      DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
      upload(dx, x, 0);
      for (int log = 0; log < 2; ++log) {
        const std::vector<double> want = softmax_reference(values(x), c.outer, c.axis, c.inner, log != 0);
        run_and_check(nullptr, log != 0, d, c, dx, 0, dy, 0, want);
        const char* name = nullptr;
        KGEN_REQUIRE(kgen_softmax_dim_selected(log, d, c.outer, c.axis, c.inner, dx.ptr, dy.ptr, &name));
        INFO(name << " for " << c.text);
        CHECK(find_facts(kgen::Family::softmax, name).row());
      }
    }
  }
}

TEST_CASE("empty problems over a dim launch nothing and touch nothing", "[softmax_dim][empty]") {
  DeviceBuffer y(64);
  poison(y.ptr, 64, nullptr, kOutsideByte);
  KGEN_REQUIRE(kgen_softmax_dim(0, KGEN_FLOAT32, 0, 16, 4, y.ptr, y.ptr, nullptr));
  KGEN_REQUIRE(kgen_softmax_dim(1, KGEN_FLOAT16, 4, 16, 0, y.ptr, y.ptr, nullptr));
  KGEN_REQUIRE(kgen_softmax_dim_variant(nullptr, 0, KGEN_FLOAT64, 0, 0, 0, y.ptr, y.ptr, nullptr));
  CHECK(count_bytes(y, kOutsideByte) == 64);
}

TEST_CASE("bad arguments over a dim are errors naming them, nothing written",
          "[softmax_dim][errors]") {
  const DimCase c = oai_case(4, 64, 8);
  DeviceBuffer x(c.size() * 4 + 64), y(c.size() * 4);
  upload(x, random_tensor(KGEN_FLOAT32, c.size()));
  poison(y.ptr, y.bytes, nullptr, kOutsideByte);
  std::vector<float> host(c.size(), 1.0f);
  CHECK(kgen_softmax_dim(0, KGEN_FLOAT32, c.outer, c.axis, c.inner, host.data(), y.ptr, nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("x"));
  CHECK(kgen_softmax_dim(0, KGEN_FLOAT32, c.outer, c.axis, c.inner, x.ptr, host.data(), nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("y"));
  CHECK(std::all_of(host.begin(), host.end(), [](float v) { return v == 1.0f; }));
  CHECK(kgen_softmax_dim(0, KGEN_FLOAT32, c.outer, -1, c.inner, x.ptr, y.ptr, nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("axis"));
  CHECK(kgen_softmax_dim(0, KGEN_FLOAT32, c.outer, c.axis, -2, x.ptr, y.ptr, nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("inner"));
  // y overlapping x without being x
  CHECK(kgen_softmax_dim(0, KGEN_FLOAT32, c.outer, c.axis, c.inner, x.ptr, x.at(4 * 8), nullptr) ==
        KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("y"));
  CHECK(count_bytes(y, kOutsideByte) == y.bytes);
}

TEST_CASE("softmax over a dim can be captured into a CUDA graph and replayed",
          "[softmax_dim][graph]") {
  for (const DimCase& c : {oai_case(16, 512, 64), oai_case(2, 20000, 8)}) {
    HostTensor x = random_tensor(KGEN_FLOAT16, c.size());
    const std::vector<double> want = softmax_reference(values(x), c.outer, c.axis, c.inner, true);
    DeviceBuffer dx(x.bytes.size()), dy(x.bytes.size());
    upload(dx, x);
    capture_and_replay(
        [&](cudaStream_t st) {
          return kgen_softmax_dim(1, KGEN_FLOAT16, c.outer, c.axis, c.inner, dx.ptr, dy.ptr, st);
        },
        dy.ptr, dy.bytes, [&] {
          check_matches(download(dy, KGEN_FLOAT16, c.size()), want, tolerance(KGEN_FLOAT16));
        });
  }
}

TEST_CASE("softmax over a middle dim past 2^31 elements (int64 indexing)", "[softmax_dim][huge]") {
  // (outer, axis, inner) = (3, 1024, 2^20 + 8) float16: 3.2e9 elements, so
  // that the offsets of the last slices pass 2^31 (and 2^32 bytes)
  const int64_t outer = 3, axis = 1024, inner = (int64_t{1} << 20) + 8, period = 8;
  const size_t n = static_cast<size_t>(outer * axis * inner), bytes = n * 2, row_bytes = inner * 2;
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < 2 * bytes + (size_t{1} << 30)) {
    WARN("skipped: needs " << 2 * bytes / (1 << 20) << " MiB of device memory");
    return;
  }
  // x[o, a, :] = tile[a % period]: slice (o, :, i) cycles through the
  // period's values of column i, so its softmax is known per column
  const HostTensor tile = random_tensor(KGEN_FLOAT16, static_cast<size_t>(period * inner));
  DeviceBuffer x(bytes), y(bytes), dtile(tile.bytes.size());
  upload(dtile, tile);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < axis; ++a)
      CUDA_REQUIRE(cudaMemcpy(x.at((o * axis + a) * row_bytes), dtile.at((a % period) * row_bytes), row_bytes,
                              cudaMemcpyDeviceToDevice));
  std::vector<double> max(inner, -INFINITY), sum(inner, 0.0);
  for (int64_t t = 0; t < period; ++t)
    for (int64_t i = 0; i < inner; ++i) max[i] = std::max(max[i], tile.get(t * inner + i));
  for (int64_t t = 0; t < period; ++t)
    for (int64_t i = 0; i < inner; ++i) sum[i] += (axis / period) * std::exp(tile.get(t * inner + i) - max[i]);
  for (int log = 0; log < 2; ++log) {
    poison(y.ptr, bytes, nullptr, kOutsideByte);
    KGEN_REQUIRE(kgen_softmax_dim(log, KGEN_FLOAT16, outer, axis, inner, x.ptr, y.ptr, nullptr));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    for (int64_t o : {int64_t{0}, outer - 1})
      for (int64_t a : {int64_t{0}, axis / 2 + 3, axis - 1}) {
        std::vector<double> want(static_cast<size_t>(inner));
        for (int64_t i = 0; i < inner; ++i) {
          const double dlt = tile.get((a % period) * inner + i) - max[i];
          want[i] = log ? dlt - std::log(sum[i]) : std::exp(dlt) / sum[i];
        }
        const HostTensor got = download(y, KGEN_FLOAT16, static_cast<size_t>(inner), (o * axis + a) * row_bytes);
        INFO("o=" << o << " a=" << a << " log=" << log);
        check_matches(got, want, tolerance(KGEN_FLOAT16));
      }
  }
}

TEST_CASE("a short axis past 2^31 column packs in the column tier (int64 offsets)", "[softmax_dim][huge]") {
  // (1, 2, 2^31 + 1) float16: an odd inner extent, so pack 1 and more packs
  // than an int32 holds (the column tier's offsets by int64 division there)
  const int64_t axis = 2, inner = (int64_t{1} << 31) + 1, period = 4096;
  const size_t row_bytes = static_cast<size_t>(inner) * 2, bytes = axis * row_bytes;
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < 2 * bytes + (size_t{1} << 30)) {
    WARN("skipped: needs " << 2 * bytes / (1 << 20) << " MiB of device memory");
    return;
  }
  // x[a, i] = tile[a, i % period], filled by doubling copies within each row
  const HostTensor tile = random_tensor(KGEN_FLOAT16, static_cast<size_t>(axis * period));
  DeviceBuffer x(bytes), y(bytes);
  for (int64_t a = 0; a < axis; ++a) {
    char* row = x.at<char>(a * row_bytes);
    CUDA_REQUIRE(cudaMemcpy(row, tile.bytes.data() + a * period * 2, period * 2, cudaMemcpyHostToDevice));
    for (int64_t filled = period; filled < inner;) {
      const int64_t n = std::min(filled, inner - filled);
      CUDA_REQUIRE(cudaMemcpy(row + filled * 2, row, n * 2, cudaMemcpyDeviceToDevice));
      filled += n;
    }
  }
  std::vector<const char*> names = {nullptr};
  for (const VariantFacts& v : family_variants(kgen::Family::softmax, KGEN_FLOAT16))
    if (v.tier == Tier::column && v.pack_size == 1) names.push_back(v.name);
  int ran = 0;
  for (const char* name : names)
    for (int log = 0; log < 2; ++log) {
      poison(y.ptr, bytes, nullptr, kOutsideByte);
      const kgen_status_t st =
          kgen_softmax_dim_variant(name, log, KGEN_FLOAT16, 1, axis, inner, x.ptr, y.ptr, nullptr);
      if (st == KGEN_ERROR_UNSUPPORTED && name) continue;
      INFO((name ? name : "auto") << " log=" << log << ": " << kgen_last_error());
      REQUIRE(st == KGEN_OK);
      CUDA_REQUIRE(cudaDeviceSynchronize());
      ++ran;
      // windows at the start, past 2^31 / 2 and at the end of each row
      for (int64_t start : {int64_t{0}, inner / 2 - 7, inner - 3 * period})
        for (int64_t a = 0; a < axis; ++a) {
          const int64_t len = start == 0 ? period : 3 * period;
          std::vector<double> want(static_cast<size_t>(len));
          for (int64_t k = 0; k < len; ++k) {
            const int64_t c = (start + k) % period;
            const double v0 = tile.get(c), v1 = tile.get(period + c), mx = std::max(v0, v1);
            const double s = std::exp(v0 - mx) + std::exp(v1 - mx), v = a == 0 ? v0 : v1;
            want[static_cast<size_t>(k)] = log ? v - mx - std::log(s) : std::exp(v - mx) / s;
          }
          INFO("a=" << a << " columns from " << start);
          check_matches(download(y, KGEN_FLOAT16, static_cast<size_t>(len), a * row_bytes + start * 2), want,
                        tolerance(KGEN_FLOAT16));
        }
    }
  CHECK(ran >= 2 + 2 * 3);  // selection and the pack-1 column variants of the default level, both modes
}
