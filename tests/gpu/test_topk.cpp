// Every compiled top-k variant against a CPU reference (a stable sort by
// PyTorch's order) on fresh random rows over edge shapes, with the outputs
// poisoned before each run: random values, many duplicates, all-equal rows,
// rows with NaN, +-inf and +-0, and rows of ten values with a few planted
// above and below them (fewer than k better than the k-th's many ties).  Indices must equal the reference's and
// values must be the input's bytes at those indices.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "reference.hpp"
#include "kgen_params.gen.hpp"
#include "registry.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64, KGEN_INT32};

struct Shape {
  int64_t batch, n, k;
};

std::ostream& operator<<(std::ostream& os, Shape s) {
  return os << "(batch " << s.batch << ", n " << s.n << ", k " << s.k << ")";
}

// The expected indices of one row (reference.hpp): PyTorch's order of
// values, ties to the lower index.
using rnd::topk_row;

enum class Data { random, duplicates, equal, special, planted };
const char* data_name(Data d) {
  switch (d) {
    case Data::random: return "random";
    case Data::duplicates: return "duplicates";
    case Data::equal: return "all-equal";
    case Data::special: return "NaN/inf/zeros";
    case Data::planted: return "ten values, a few planted";
  }
  return "?";
}

HostTensor make_data(kgen_dtype_t d, size_t count, Data kind) {
  HostTensor t = random_tensor(d, count);
  std::uniform_int_distribution<int> small(-3, 3), pick(0, 9), plant(0, 999);
  const bool fp = d != KGEN_INT32;
  for (size_t i = 0; i < count; ++i) {
    switch (kind) {
      case Data::random:
        if (d == KGEN_INT32) t.set(i, static_cast<double>(static_cast<int32_t>(rng()())));
        break;
      case Data::duplicates: t.set(i, small(rng())); break;
      case Data::equal: t.set(i, 1.5); break;
      case Data::planted: {
        const int u = plant(rng());
        t.set(i, u == 0 ? 100.0 : u == 1 ? -100.0 : pick(rng()));
        break;
      }
      case Data::special: {
        const int r = pick(rng());
        if (!fp) {
          if (r < 2) t.set(i, r == 0 ? 2147483647.0 : -2147483648.0);
          break;
        }
        if (r == 0) t.set(i, NAN);
        else if (r == 1) t.set(i, INFINITY);
        else if (r == 2) t.set(i, -INFINITY);
        else if (r == 3) t.set(i, 0.0);
        else if (r == 4) t.set(i, -0.0);
        break;
      }
    }
  }
  return t;
}

std::vector<Shape> shapes() {
  return {{1, 1, 1},        {3, 1, 1},        {1, 7, 3},        {5, 100, 1},     {4, 1000, 17},
          {2, 1000, 1000},  {7, 1023, 64},    {3, 4096, 32},    {2, 4097, 256},  {33, 5000, 100},
          {64, 1024, 8},    {3, 8193, 250},   {2, 32768, 64},   {1, 32769, 5},   {1, 40000, 300},
          {2, 100000, 2048}, {3, 9000, 4097}, {1, 70000, 9000}, {300, 33, 20},   {2, 65536, 1},
          // routing rows (tokens x 256 experts, k 8) and a round a lane (k 32)
          {64, 256, 8},     {9, 512, 32},
          // short rows sorted whole by a warp (the tourney past k 32)
          {5, 256, 200},    {3, 481, 77},     {6, 64, 64},
          // short rows a group of lanes each (rows a warp; the last warp partly empty)
          {1000, 8, 2},     {77, 64, 3},      {35, 5, 5},      {9, 130, 17},
          // a block's finish by radix sort: 2048 and 4096 candidates of a row (and
          // 1024: {2, 1000, 1000}); a k past 8 a thread of the smaller blocks by bitonic
          {5, 3000, 2000},  {3, 3500, 3100},
          // k past one block's sort: the whole batch sorted at once (topk/sort.cu), or a
          // row at a time for a few rows of millions; sorted and k >= n / 2: every key
          // sorted (sorts_all)
          {2, 70001, 66000}, {3, 20000, 19999}, {40, 5000, 4500}, {2, 1048577, 600000},
          // a row over a cluster's CTAs (the k-th's ties split between CTAs in the
          // data of few values), its most CTAs and k
          {1, 150000, 128}, {4, 40000, 50}, {2, 262144, 100},
          // a row over the stream tier's slices, the last ones short or empty
          {1, 139264, 7}, {3, 294920, 64},
          // the stream tier's large buffer: a k past kStreamK sorted by the block, in
          // one block a row or over slices (merged to a floor of 2k, then cut to k),
          // and its k of 1024 (its chunk's threads never past the buffer's half)
          {1, 190000, 900}, {3, 70001, 1024}, {2, 40000, 129}};
}

const std::vector<const kgen::VariantInfo*>& variants(kgen_dtype_t d) {
  return kgen::Registry::of(kgen::Family::topk, d);
}

struct Run {
  Shape s;
  const HostTensor* x;
  DeviceBuffer* dx;
  bool largest, sorted;
};

// Runs one variant (null: the selection) and checks it; false when the
// variant does not support the problem.
bool run_and_check(const char* variant, const Run& r, const std::vector<int64_t>& want) {
  const int e = elem_size(r.x->dtype);
  const size_t outs = static_cast<size_t>(r.s.batch * r.s.k);
  size_t ws = 0;
  const kgen_status_t q = kgen_topk_workspace_size(variant, r.x->dtype, r.s.batch, r.s.n, r.s.k,
                                                   r.largest, r.sorted, r.dx->ptr, &ws);
  if (q == KGEN_ERROR_UNSUPPORTED) return false;
  INFO(kgen_last_error());
  REQUIRE(q == KGEN_OK);
  DeviceBuffer values(outs * e), indices(outs * 8), work(ws);
  poison(values.ptr, values.bytes);
  poison(indices.ptr, indices.bytes);
  poison(work.ptr, work.bytes);
  KGEN_REQUIRE(kgen_topk_variant(variant, r.x->dtype, r.s.batch, r.s.n, r.s.k, r.largest, r.sorted,
                                 r.dx->ptr, values.ptr, indices.at<int64_t>(), ws ? work.ptr : nullptr,
                                 ws, nullptr));
  CUDA_REQUIRE(cudaGetLastError());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  std::vector<int64_t> got_idx(outs);
  std::vector<unsigned char> got_val(outs * e);
  CUDA_REQUIRE(cudaMemcpy(got_idx.data(), indices.ptr, outs * 8, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(got_val.data(), values.ptr, outs * e, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < outs; ++i) {
    const int64_t row = static_cast<int64_t>(i) / r.s.k;
    const int64_t w = want[i];
    const bool idx_ok = got_idx[i] == w;
    const bool val_ok = std::memcmp(&got_val[i * e], &r.x->bytes[(row * r.s.n + w) * e], e) == 0;
    if (!(idx_ok && val_ok) && bad++ < 3)
      first += "[" + std::to_string(i) + "] index " + std::to_string(got_idx[i]) + " want " +
               std::to_string(w) + (val_ok ? "" : " (value differs)") + "; ";
  }
  INFO((variant ? variant : "selected") << " " << r.s << " " << dtype_short(r.x->dtype)
                                       << (r.largest ? " largest" : " smallest")
                                       << (r.sorted ? " sorted" : " unsorted") << ": " << first);
  REQUIRE(bad == 0);
  return true;
}

std::vector<int64_t> expected(const HostTensor& x, Shape s, bool largest, bool sorted) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(s.batch * s.k));
  std::vector<double> row(static_cast<size_t>(s.n));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t i = 0; i < s.n; ++i) row[i] = x.get(static_cast<size_t>(b * s.n + i));
    const auto r = topk_row(row, s.k, largest, sorted);
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

}  // namespace

TEST_CASE("every top-k variant matches the reference on every shape and data it supports",
          "[topk][variants]") {
  for (kgen_dtype_t d : kDtypes) {
    std::vector<int> ran(variants(d).size(), 0);
    for (Shape s : shapes()) {
      for (Data kind : {Data::random, Data::duplicates, Data::equal, Data::special, Data::planted}) {
        if (kind != Data::random && s.n * s.batch > 200000) continue;
        const HostTensor x = make_data(d, static_cast<size_t>(s.batch * s.n), kind);
        DeviceBuffer dx(x.bytes.size());
        CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
        for (bool largest : {true, false})
          for (bool sorted : {true, false}) {
            INFO(data_name(kind));
            const auto want = expected(x, s, largest, sorted);
            const Run r{s, &x, &dx, largest, sorted};
            run_and_check(nullptr, r, want);
            for (size_t i = 0; i < variants(d).size(); ++i)
              ran[i] += run_and_check(variants(d)[i]->name, r, want);
          }
      }
    }
    for (size_t i = 0; i < variants(d).size(); ++i) {
      INFO(variants(d)[i]->name << " ran on no case");
      CHECK(ran[i] > 0);
    }
  }
}

TEST_CASE("a row of 2^24 elements, k from 1 to 4096, every variant that supports it", "[topk][long]") {
  const Shape base{1, int64_t{1} << 24, 1};
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16}) {
    const HostTensor x = make_data(d, static_cast<size_t>(base.n), Data::random);
    DeviceBuffer dx(x.bytes.size());
    CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
    for (int64_t k : {1, 64, 1000, 2048, 4096}) {
      const Shape s{1, base.n, k};
      const auto want = expected(x, s, true, true);
      const Run r{s, &x, &dx, true, true};
      run_and_check(nullptr, r, want);
      for (const kgen::VariantInfo* v : variants(d)) run_and_check(v->name, r, want);
    }
  }
}

// Rows of few values split over many blocks: the k-th's ties fill the
// gather's stages, and the ones better than it (planted) are fewer than k or
// none; vocabulary-sized rows a few at a time, and one long row.
TEST_CASE("rows of few distinct values over many blocks, every variant that supports them", "[topk][ties]") {
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    for (Shape base : {Shape{3, 128256, 1}, Shape{1, int64_t{1} << 21, 1}}) {
      for (Data kind : {Data::duplicates, Data::planted, Data::equal}) {
        const HostTensor x = make_data(d, static_cast<size_t>(base.batch * base.n), kind);
        DeviceBuffer dx(x.bytes.size());
        CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
        for (int64_t k : {1, 50, 700, 2048})
          for (bool largest : {true, false}) {
            const Shape s{base.batch, base.n, k};
            const bool sorted = k != 50 && k != 700;  // k 50 and 700 unsorted (index order), the others sorted
            INFO(data_name(kind));
            const auto want = expected(x, s, largest, sorted);
            const Run r{s, &x, &dx, largest, sorted};
            run_and_check(nullptr, r, want);
            for (const kgen::VariantInfo* v : variants(d)) run_and_check(v->name, r, want);
          }
      }
    }
  }
}

// Rows sorted ascending or descending (bfloat16 rounds them into runs of
// ties): a row's best lie in one block's share of the multi tier, more keys
// at or above the bound than 1024 in that block's gather (~1540 at 3 x
// 128256 k 50), within one sort in all or past it (k 200 of 2^21).
TEST_CASE("sorted and reversed rows, every variant that supports them", "[topk][sorted_rows]") {
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    for (Shape s : {Shape{3, 128256, 50}, Shape{1, int64_t{1} << 21, 64}, Shape{2, int64_t{1} << 21, 200}}) {
      for (bool ascending : {true, false}) {
        HostTensor x = random_tensor(d, static_cast<size_t>(s.batch * s.n));
        for (int64_t i = 0; i < s.batch * s.n; ++i)
          x.set(static_cast<size_t>(i), static_cast<double>(ascending ? i % s.n : s.n - 1 - i % s.n));
        DeviceBuffer dx(x.bytes.size());
        CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
        for (bool largest : {true, false}) {
          const bool sorted = s.k != 64;  // k 64 unsorted (index order), the others sorted
          INFO((ascending ? "ascending" : "descending"));
          const auto want = expected(x, s, largest, sorted);
          const Run r{s, &x, &dx, largest, sorted};
          run_and_check(nullptr, r, want);
          for (const kgen::VariantInfo* v : variants(d)) run_and_check(v->name, r, want);
        }
      }
    }
  }
}

// The stream and cluster tiers read such rows in the packs of their
// aligned span: a row in the stream's slices, rows that fill the SMs, and
// a row whose span fills a cluster of 8 x 1024 x 32 (16-byte packs), each
// off the alignment.
TEST_CASE("misaligned rows and x: narrower packs, or the aligned span of the stream and cluster tiers",
          "[topk][alignment]") {
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16}) {
    const int e = elem_size(d);
    for (Shape s : {Shape{5, 1001, 10}, Shape{4, 4096, 32}, Shape{2, 50001, 100}, Shape{1, 139267, 7},
                    Shape{70, 40003, 50}, Shape{1, 262130, 50}, Shape{1, 139267, 1}, Shape{70, 40003, 1},
                    Shape{2, 300001, 700}}) {
      const HostTensor x = make_data(d, static_cast<size_t>(s.batch * s.n), Data::random);
      DeviceBuffer buf(x.bytes.size() + 16);
      CUDA_REQUIRE(cudaMemcpy(buf.at(e), x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
      DeviceBuffer view(0);  // x one element past a 16-byte boundary
      void* keep = view.ptr;
      view.ptr = buf.at(e);
      const auto want = expected(x, s, true, true);
      run_and_check(nullptr, Run{s, &x, &view, true, true}, want);
      for (const kgen::VariantInfo* v : variants(d)) run_and_check(v->name, Run{s, &x, &view, true, true}, want);
      view.ptr = keep;
    }
  }
}

TEST_CASE("results are bitwise the same run to run", "[topk][determinism]") {
  for (Shape s : {Shape{1, int64_t{1} << 22, 1000}, Shape{256, 4096, 50}, Shape{2, 300000, 5000}}) {
    const HostTensor x = make_data(KGEN_FLOAT16, static_cast<size_t>(s.batch * s.n), Data::duplicates);
    DeviceBuffer dx(x.bytes.size());
    CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
    const size_t outs = static_cast<size_t>(s.batch * s.k);
    size_t ws = 0;
    KGEN_REQUIRE(kgen_topk_workspace_size(nullptr, KGEN_FLOAT16, s.batch, s.n, s.k, 1, 0, dx.ptr, &ws));
    DeviceBuffer work(ws), values(outs * 2), indices(outs * 8);
    std::vector<unsigned char> first, again;
    for (int rep = 0; rep < 3; ++rep) {
      poison(values.ptr, values.bytes);
      poison(indices.ptr, indices.bytes);
      KGEN_REQUIRE(kgen_topk(KGEN_FLOAT16, s.batch, s.n, s.k, 1, 0, dx.ptr, values.ptr,
                             indices.at<int64_t>(), work.ptr, ws, nullptr));
      CUDA_REQUIRE(cudaDeviceSynchronize());
      std::vector<unsigned char> out(values.bytes + indices.bytes);
      CUDA_REQUIRE(cudaMemcpy(out.data(), values.ptr, values.bytes, cudaMemcpyDeviceToHost));
      CUDA_REQUIRE(cudaMemcpy(out.data() + values.bytes, indices.ptr, indices.bytes, cudaMemcpyDeviceToHost));
      (rep == 0 ? first : again) = out;
      if (rep > 0) REQUIRE(again == first);
    }
  }
}

TEST_CASE("k == 0 and batch == 0 are no-ops; bad k, outputs and workspace are errors naming them",
          "[topk][errors]") {
  const Shape s{4, 100000, 64};
  const HostTensor x = make_data(KGEN_FLOAT32, static_cast<size_t>(s.batch * s.n), Data::random);
  DeviceBuffer dx(x.bytes.size()), values(s.batch * s.k * 4), indices(s.batch * s.k * 8);
  CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
  poison(values.ptr, values.bytes);
  poison(indices.ptr, indices.bytes);
  std::vector<unsigned char> before(values.bytes);
  CUDA_REQUIRE(cudaMemcpy(before.data(), values.ptr, values.bytes, cudaMemcpyDeviceToHost));
  int64_t* ind = indices.at<int64_t>();
  REQUIRE(kgen_topk(KGEN_FLOAT32, s.batch, s.n, 0, 1, 1, dx.ptr, values.ptr, ind, nullptr, 0, nullptr) == KGEN_OK);
  REQUIRE(kgen_topk(KGEN_FLOAT32, 0, s.n, 5, 1, 1, dx.ptr, values.ptr, ind, nullptr, 0, nullptr) == KGEN_OK);
  auto expect_error = [&](kgen_status_t st, const char* name) {
    REQUIRE(st != KGEN_OK);
    INFO(kgen_last_error());
    REQUIRE(std::string(kgen_last_error()).rfind(name, 0) == 0);
  };
  expect_error(kgen_topk(KGEN_FLOAT32, s.batch, s.n, -1, 1, 1, dx.ptr, values.ptr, ind, nullptr, 0, nullptr), "k:");
  expect_error(kgen_topk(KGEN_FLOAT32, s.batch, s.n, s.n + 1, 1, 1, dx.ptr, values.ptr, ind, nullptr, 0, nullptr), "k:");
  expect_error(kgen_topk(KGEN_FLOAT32, s.batch, s.n, s.k, 1, 1, dx.ptr, nullptr, ind, nullptr, 0, nullptr), "values:");
  expect_error(kgen_topk(KGEN_FLOAT32, s.batch, s.n, s.k, 1, 1, dx.ptr, values.ptr, nullptr, nullptr, 0, nullptr), "indices:");
  expect_error(kgen_topk(KGEN_FLOAT32, s.batch, s.n, s.k, 1, 1, dx.ptr, dx.ptr, ind, nullptr, 0, nullptr), "values:");
  // the multi-block select needs a workspace: none, or one too short
  const char* multi = nullptr;
  for (const kgen::VariantInfo* v : variants(KGEN_FLOAT32))
    if (std::string(v->name).find("generic") != std::string::npos) multi = v->name;
  REQUIRE(multi != nullptr);
  size_t ws = 0;
  KGEN_REQUIRE(kgen_topk_workspace_size(multi, KGEN_FLOAT32, s.batch, s.n, s.k, 1, 1, dx.ptr, &ws));
  REQUIRE(ws > 0);
  DeviceBuffer work(ws);
  expect_error(kgen_topk_variant(multi, KGEN_FLOAT32, s.batch, s.n, s.k, 1, 1, dx.ptr, values.ptr, ind,
                                 nullptr, 0, nullptr), "workspace:");
  expect_error(kgen_topk_variant(multi, KGEN_FLOAT32, s.batch, s.n, s.k, 1, 1, dx.ptr, values.ptr, ind,
                                 work.ptr, ws - 1, nullptr), "workspace:");
  expect_error(kgen_topk_variant(multi, KGEN_FLOAT32, s.batch, s.n, s.k, 1, 1, dx.ptr, values.ptr, ind,
                                 dx.ptr, ws, nullptr), "workspace:");
  CUDA_REQUIRE(cudaDeviceSynchronize());
  std::vector<unsigned char> after(values.bytes);
  CUDA_REQUIRE(cudaMemcpy(after.data(), values.ptr, values.bytes, cudaMemcpyDeviceToHost));
  REQUIRE(after == before);  // nothing written by any failed or empty call
}

TEST_CASE("the multi-block select can be captured into a CUDA graph and replayed", "[topk][graph]") {
  const Shape s{2, 1 << 20, 3000};
  const HostTensor x = make_data(KGEN_FLOAT32, static_cast<size_t>(s.batch * s.n), Data::random);
  DeviceBuffer dx(x.bytes.size()), values(s.batch * s.k * 4), indices(s.batch * s.k * 8);
  CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.bytes.data(), x.bytes.size(), cudaMemcpyHostToDevice));
  size_t ws = 0;
  KGEN_REQUIRE(kgen_topk_workspace_size(nullptr, KGEN_FLOAT32, s.batch, s.n, s.k, 0, 1, dx.ptr, &ws));
  DeviceBuffer work(ws);
  const auto want = expected(x, s, false, true);
  capture_and_replay(
      [&](cudaStream_t st) {
        return kgen_topk(KGEN_FLOAT32, s.batch, s.n, s.k, 0, 1, dx.ptr, values.ptr, indices.at<int64_t>(),
                         work.ptr, ws, st);
      },
      indices.ptr, indices.bytes, [&] {
        std::vector<int64_t> got(want.size());
        CUDA_REQUIRE(cudaMemcpy(got.data(), indices.ptr, indices.bytes, cudaMemcpyDeviceToHost));
        REQUIRE(got == want);
      });
}

TEST_CASE("a row past 2^31 elements (int64 indices)", "[topk][huge]") {
  // float16: a constant row with planted values, some past index 2^31
  const int64_t n = (int64_t{1} << 31) + 11, k = 6;
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < static_cast<size_t>(n) * 2 + (size_t{1} << 30)) {
    WARN("skipped: not enough device memory for a row past 2^31 elements");
    return;
  }
  DeviceBuffer dx(static_cast<size_t>(n) * 2);
  CUDA_REQUIRE(cudaMemset(dx.ptr, 0x11, dx.bytes));  // every element 0x1111 (a small positive)
  const int64_t planted[] = {5, (int64_t{1} << 31) + 3, (int64_t{1} << 31) + 10, 1000000};
  const float planted_values[] = {2.0f, 8.0f, 2.0f, -1.0f};
  for (int i = 0; i < 4; ++i) {
    const __half h = __float2half(planted_values[i]);
    CUDA_REQUIRE(cudaMemcpy(dx.at<char>(static_cast<size_t>(planted[i]) * 2), &h, 2, cudaMemcpyHostToDevice));
  }
  DeviceBuffer values(k * 2), indices(k * 8);
  for (bool largest : {true, false}) {
    size_t ws = 0;
    KGEN_REQUIRE(kgen_topk_workspace_size(nullptr, KGEN_FLOAT16, 1, n, k, largest, 1, dx.ptr, &ws));
    DeviceBuffer work(ws);
    poison(indices.ptr, indices.bytes);
    KGEN_REQUIRE(kgen_topk(KGEN_FLOAT16, 1, n, k, largest, 1, dx.ptr, values.ptr, indices.at<int64_t>(),
                           work.ptr, ws, nullptr));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    std::vector<int64_t> got(k);
    CUDA_REQUIRE(cudaMemcpy(got.data(), indices.ptr, k * 8, cudaMemcpyDeviceToHost));
    const std::vector<int64_t> want =
        largest ? std::vector<int64_t>{(int64_t{1} << 31) + 3, 5, (int64_t{1} << 31) + 10, 0, 1, 2}
                : std::vector<int64_t>{1000000, 0, 1, 2, 3, 4};
    REQUIRE(got == want);
  }
}
