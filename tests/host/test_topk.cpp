// Top-k without a GPU: argument validation through the C API, and
// capability, selection and workspace plans on a described device.  Written
// against properties (tier, capacity, pack), not names, so it holds at every
// build level.
#include <algorithm>
#include <random>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "kgen/kgen.h"
#include "kgen_params.gen.hpp"
#include "registry.hpp"
#include "select.hpp"
#include "topk/problem.hpp"

using kgen::gen::TopkParams;
using kgen::gen::TopkTier;

namespace {

void expect_error(kgen_status_t got, kgen_status_t want, const std::string& name) {
  CHECK(got == want);
  INFO(kgen_last_error());
  CHECK(std::string(kgen_last_error()).rfind(name, 0) == 0);  // the message starts with the name
}

const void* addr(uintptr_t offset_bytes) {
  return reinterpret_cast<const void*>(uintptr_t{1} << 32 | offset_bytes);
}

struct Picked {
  const kgen::VariantInfo* v;
  TopkParams p;
  kgen::topk::Plan plan;
};

const kgen::DeviceInfo& h100() {
  static const kgen::DeviceInfo dev;  // defaults describe an H100 SXM
  return dev;
}

kgen::topk::Problem problem(kgen_dtype_t d, int64_t batch, int64_t n, int64_t k, uintptr_t x_off = 0,
                            bool sorted = true) {
  return kgen::topk::Problem{d, batch, n, k, true, sorted, addr(x_off), const_cast<void*>(addr(1u << 30)),
                             reinterpret_cast<int64_t*>(const_cast<void*>(addr(1u << 31))),
                             nullptr, 0, &h100()};
}

Picked pick(kgen_dtype_t d, int64_t batch, int64_t n, int64_t k, uintptr_t x_off = 0, bool sorted = true) {
  const kgen::topk::Problem p = problem(d, batch, n, k, x_off, sorted);
  auto sel = kgen::select_variant(kgen::Family::topk, d, h100(), &p, &kgen::topk::heuristic);
  REQUIRE(sel.variant != nullptr);
  REQUIRE(sel.variant->supports(*sel.variant, &p));
  return {sel.variant, *static_cast<const TopkParams*>(sel.variant->params),
          kgen::topk::plan_for(*sel.variant, p)};
}

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64, KGEN_INT32};

}  // namespace

TEST_CASE("topk rejects bad arguments, naming them", "[topk][validation]") {
  std::vector<float> x(64, 1.5f), values(16, -7.0f);
  std::vector<int64_t> indices(16, -7);
  float* v = values.data();
  int64_t* i = indices.data();
  expect_error(kgen_topk(static_cast<kgen_dtype_t>(11), 2, 8, 2, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "dtype:");
  expect_error(kgen_topk(KGEN_INT64, 2, 8, 2, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "dtype:");
  expect_error(kgen_topk(KGEN_FLOAT32, -1, 8, 2, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "batch:");
  expect_error(kgen_topk(KGEN_FLOAT32, 2, -8, 2, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "n:");
  expect_error(kgen_topk(KGEN_FLOAT32, 2, 8, -1, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "k:");
  expect_error(kgen_topk(KGEN_FLOAT32, 2, 8, 9, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "k:");
  // k > n is an error even when there are no rows, as in PyTorch
  expect_error(kgen_topk(KGEN_FLOAT32, 0, 8, 9, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "k:");
  expect_error(kgen_topk(KGEN_FLOAT32, 1, int64_t{1} << 32, 2, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_UNSUPPORTED, "n:");
  expect_error(kgen_topk(KGEN_FLOAT32, 2, 8, 2, 1, 1, nullptr, v, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "x:");
  expect_error(kgen_topk(KGEN_FLOAT32, 2, 8, 2, 1, 1, x.data(), nullptr, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "values:");
  expect_error(kgen_topk(KGEN_FLOAT32, 2, 8, 2, 1, 1, x.data(), v, nullptr, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "indices:");
  expect_error(kgen_topk(KGEN_FLOAT32, 2, 8, 2, 1, 1, x.data(), reinterpret_cast<char*>(v) + 1, i,
                         nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "values:");
  expect_error(kgen_topk(KGEN_FLOAT32, 2, 8, 2, 1, 1, x.data(), x.data() + 4, i, nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "values:");  // overlaps x
  expect_error(kgen_topk(KGEN_FLOAT32, 2, 8, 2, 1, 1, x.data(), v, reinterpret_cast<int64_t*>(v), nullptr,
                         0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "indices:");  // overlaps values
  expect_error(kgen_topk_variant("topk_nope", KGEN_FLOAT32, 2, 8, 2, 1, 1, x.data(), v, i, nullptr, 0, nullptr),
               KGEN_ERROR_UNSUPPORTED, "variant:");
  size_t bytes = 0;
  expect_error(kgen_topk_workspace_size(nullptr, KGEN_FLOAT32, 2, 8, 9, 1, 1, x.data(), &bytes),
               KGEN_ERROR_INVALID_ARGUMENT, "k:");
  expect_error(kgen_topk_workspace_size(nullptr, KGEN_FLOAT32, 2, 8, 2, 1, 1, x.data(), nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "bytes:");
  for (float f : values) CHECK(f == -7.0f);
  for (int64_t j : indices) CHECK(j == -7);
}

TEST_CASE("k == 0 and batch == 0 are no-ops that need no GPU and no workspace", "[topk][validation]") {
  std::vector<float> x(64, 1.5f);
  CHECK(kgen_topk(KGEN_FLOAT32, 4, 16, 0, 1, 1, x.data(), nullptr, nullptr, nullptr, 0, nullptr) == KGEN_OK);
  CHECK(kgen_topk(KGEN_FLOAT32, 0, 16, 3, 1, 1, nullptr, nullptr, nullptr, nullptr, 0, nullptr) == KGEN_OK);
  size_t bytes = 99;
  const char* name = nullptr;
  CHECK(kgen_topk_workspace_size(nullptr, KGEN_FLOAT32, 4, 16, 0, 1, 1, x.data(), &bytes) == KGEN_OK);
  CHECK(bytes == 0);
  CHECK(kgen_topk_selected(KGEN_FLOAT32, 0, 16, 3, 1, 1, nullptr, &name) == KGEN_OK);
  CHECK(std::string(name).empty());
}

TEST_CASE("every dtype has a generic topk variant", "[topk][registry]") {
  for (kgen_dtype_t d : kDtypes) {
    int generic = 0;
    for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::topk, d)) generic += v->generic;
    CHECK(generic == 1);
  }
}

TEST_CASE("capability: queue holds k <= 32 x capacity, block and tourney rows up to their size (any k), cluster "
          "rows up to 8 blocks' size with k <= 128, stream any row with k up to its buffer / (2 x items) (128 "
          "at most with 4096 keys, 1024 with 16384), packs need alignment but the stream tier's",
          "[topk][supports]") {
  for (kgen_dtype_t d : kDtypes) {
    for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::topk, d)) {
      const auto& q = *static_cast<const TopkParams*>(v->params);
      INFO(v->name);
      const int64_t cap = q.tier == TopkTier::block     ? int64_t{q.block_size} * q.items
                          : q.tier == TopkTier::tourney ? 32 * int64_t{q.items}
                          : q.tier == TopkTier::cluster ? 8 * int64_t{q.block_size} * q.items
                                                        : 1 << 20;
      const int64_t kmax = q.tier == TopkTier::queue     ? 32 * q.capacity
                           : q.tier == TopkTier::tourney ? cap
                           : q.tier == TopkTier::cluster ? 128
                           : q.tier == TopkTier::stream  ? std::min<int64_t>(q.buffer > 4096 ? 1024 : 128,
                                                                            q.buffer / (2 * q.items))
                                                         : 1000;
      auto p = problem(d, 7, cap, kmax);
      CHECK(v->supports(*v, &p));
      if (q.tier == TopkTier::block || q.tier == TopkTier::tourney || q.tier == TopkTier::cluster) {
        p = problem(d, 7, cap + q.pack_size, 8);
        CHECK_FALSE(v->supports(*v, &p));
      }
      if (q.tier == TopkTier::cluster || q.tier == TopkTier::stream) {
        p = problem(d, 7, cap, kmax + 1);
        CHECK_FALSE(v->supports(*v, &p));
      }
      if (q.tier == TopkTier::queue) {
        p = problem(d, 7, 4096, kmax + 1);
        CHECK_FALSE(v->supports(*v, &p));
      }
      if (q.pack_size > 1 && !v->generic) {
        // the stream and cluster tiers read a row in the packs of its
        // aligned span: a row off the alignment may start up to pack - 1
        // elements into its first pack, so a cluster takes such rows of up
        // to cap - (pack - 1)
        const bool stream = q.tier == TopkTier::stream, cluster = q.tier == TopkTier::cluster;
        p = problem(d, 7, cap, 8, kgen_dtype_size(d));  // x one element off
        CHECK(v->supports(*v, &p) == stream);
        p = problem(d, 7, cap - (q.pack_size - 1), 8);  // rows not a multiple of the pack
        CHECK(v->supports(*v, &p) == (stream || cluster));
        if (q.tier == TopkTier::cluster) {
          p = problem(d, 7, cap - (q.pack_size - 1), 8, kgen_dtype_size(d));
          CHECK(v->supports(*v, &p));
          p = problem(d, 7, cap - (q.pack_size - 1) + 1, 8, kgen_dtype_size(d));
          CHECK_FALSE(v->supports(*v, &p));
        }
      }
      p = problem(d == KGEN_FLOAT32 ? KGEN_FLOAT16 : KGEN_FLOAT32, 7, 64, 8);
      CHECK_FALSE(v->supports(*v, &p));  // another dtype's variant
    }
  }
}

TEST_CASE("selection: few long rows go to the stream tier's slices, aligned or not", "[topk][select]") {
  for (kgen_dtype_t d : kDtypes) {
    const Picked one = pick(d, 1, int64_t{1} << 24, 64);
    // past a cluster's 8 x 1024 x 32: the stream tier's slices, a CTA an SM
    if (d != KGEN_FLOAT64) CHECK(one.p.tier == TopkTier::stream);
    else CHECK((one.p.tier == TopkTier::multi || one.p.tier == TopkTier::generic));
    CHECK(one.plan.bytes > 0);
    // misaligned: the stream tier's widest pack over the aligned span; pack
    // 1 for float64 (no stream tier)
    const Picked odd = pick(d, 1, (int64_t{1} << 20) + 1, 64);
    const Picked off = pick(d, 1, int64_t{1} << 20, 64, kgen_dtype_size(d));
    for (const Picked& m : {odd, off}) {
      INFO(m.v->name);
      if (d != KGEN_FLOAT64) CHECK((m.p.tier == TopkTier::stream && m.p.pack_size * kgen_dtype_size(d) == 16));
      else CHECK(m.p.pack_size == 1);
    }
  }
}

TEST_CASE("selection among the default set: a block a row for few rows a block holds, any length",
          "[topk][select][default-set]") {
  for (kgen_dtype_t d : kDtypes) {
    // float64 rows in registers stop at 16384
    const int64_t most = d == KGEN_FLOAT64 ? 16384 : 32768;
    for (int64_t batch : {1, 4, 49})
      for (int64_t n : {int64_t{1}, int64_t{11}, int64_t{67}, int64_t{4096}, int64_t{5461}, int64_t{8191},
                        int64_t{16384}, most - 1, most}) {
        const Picked few = pick(d, batch, n, std::min<int64_t>(n, 3));
        INFO(few.v->name << " batch " << batch << " n " << n);
        // rows of up to 256: a warp's registers (the tourney; not float64);
        // past 16384, rows whose clusters fit one wave: a cluster's CTAs
        // at the widest pack, rows off its alignment too (not float64)
        const bool spread = n > 16384 && batch * 8 <= h100().sm_count && d != KGEN_FLOAT64;
        const TopkTier tier = n <= 256 && d != KGEN_FLOAT64 ? TopkTier::tourney
                              : spread                      ? TopkTier::cluster
                                                            : TopkTier::block;
        CHECK(few.p.tier == tier);
        CHECK(few.plan.bytes == 0);
        const Picked off = pick(d, batch, n, std::min<int64_t>(n, 3), kgen_dtype_size(d));
        CHECK(off.p.tier == tier);
        CHECK(off.p.pack_size * kgen_dtype_size(d) == (spread ? 16 : kgen_dtype_size(d)));
      }
    // past a block's row, few rows go to a cluster a row; more, off the
    // packs' alignment and past the clusters' waves, a block a row of the
    // stream tier (the half types' clusters hold two waves; float64: the
    // multi-block select, generic its pack-1 form)
    if (d != KGEN_FLOAT64) CHECK(pick(d, 4, most + 8, 3).p.tier == TopkTier::cluster);
    const TopkTier t = pick(d, 49, most + 1, 3).p.tier;
    if (d == KGEN_FLOAT64) CHECK((t == TopkTier::multi || t == TopkTier::generic));
    else CHECK(t == (kgen_dtype_size(d) == 2 ? TopkTier::cluster : TopkTier::stream));
  }
}

TEST_CASE("selection among the default set: the rows of sampling to a cluster a row while they fit one wave, "
          "the half types' two but for nearly full second waves",
          "[topk][select][default-set]") {
  // bench/NOTES.md topk v31, v40, v49
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    const Picked one = pick(d, 1, 128256, 50);
    CHECK(one.p.tier == TopkTier::cluster);
    CHECK(int64_t{8} * one.p.block_size * one.p.items >= 128256);
    CHECK(one.p.items == 16);  // 32 a thread at 1024 threads ran slower
    CHECK(one.plan.bytes == 0);
    const Picked short_row = pick(d, 1, 32000, 50);
    CHECK(short_row.p.tier == TopkTier::cluster);
    CHECK(int64_t{short_row.p.block_size} * short_row.p.items == 8192);  // the smallest CTA that holds it
    CHECK(pick(d, 1, 262144, 100).p.tier == TopkTier::cluster);
    CHECK(pick(d, 16, 128256, 50).p.tier == TopkTier::cluster);  // 16 x 8 CTAs: one wave
    // past one wave, the half types: 32 x 5 CTAs of 1024 x 32, 1.2 waves
    // (1024 x 16 would take 8 a row, 1.9 waves: past 1.875 since topk
    // v49); float32 past one wave: a block a row of the stream tier (topk
    // v47)
    const bool half = d == KGEN_BFLOAT16;
    const Picked two = pick(d, 32, 128256, 50);
    INFO(two.v->name);
    CHECK(two.p.tier == (half ? TopkTier::cluster : TopkTier::stream));
    if (half) CHECK(two.p.items == 32);
    // 61 x 4 CTAs of 1024 x 32: 1.85 waves (1024 x 16 would take 3.7)
    const Picked wide = pick(d, 61, 128256, 50);
    CHECK(wide.p.tier == (half ? TopkTier::cluster : TopkTier::stream));
    if (half) CHECK(wide.p.items == 32);
    // past 1.875 waves, rows the stream tier splits (2 x batch <= SMs):
    // the stream tier (topk v49): 62 and 64 x 4 CTAs of 1024 x 32, 32 x 8
    // of them; 66 rows, in two slices each since topk v50
    CHECK(pick(d, 62, 128256, 50).p.tier == TopkTier::stream);
    CHECK(pick(d, 64, 128256, 50).p.tier == TopkTier::stream);
    CHECK(pick(d, 32, 262144, 8).p.tier == TopkTier::stream);
    const Picked half_sms = pick(d, 66, 128256, 50);
    CHECK(half_sms.p.tier == TopkTier::stream);
    CHECK(half_sms.plan.bytes > 0);  // the slices' keys in the workspace
    CHECK(pick(d, 67, 128256, 50).plan.bytes == 0);  // past half the SMs: a block a row
    // rows of 65536 or fewer, and rows off the packs' alignment, are not
    // tested so (not measured): the clusters as before
    if (half) {
      const Picked short_rows = pick(d, 62, 65536, 50);
      INFO(short_rows.v->name);
      CHECK(short_rows.p.tier == TopkTier::cluster);
      CHECK(short_rows.p.block_size == 512);
      CHECK(pick(d, 64, 128256, 50, kgen_dtype_size(d)).p.tier == TopkTier::cluster);  // x one element off
    }
    // past two waves, 128 rows: the stream tier
    CHECK(pick(d, 128, 128256, 50).p.tier == TopkTier::stream);
    // past the clusters' waves: the stream tier, not the multi tier (v47)
    CHECK(pick(d, 48, 262144, 50).p.tier == TopkTier::stream);  // 48 x 8 CTAs of 1024 x 32: three waves
    CHECK(pick(d, 17, 128256, 50).p.tier == (half ? TopkTier::cluster : TopkTier::stream));
    // rows a block holds, past one wave: the block
    CHECK(pick(d, 256, 32000, 50).p.tier == TopkTier::block);
    CHECK(pick(d, 1, 128256, 129).p.tier == TopkTier::multi);  // k past the first CTA's warp
    CHECK(pick(d, 1, 262152, 50).p.tier != TopkTier::cluster);  // aligned, past 8 CTAs of 1024 x 32
    CHECK(pick(d, 1, 16384, 50).p.tier == TopkTier::block);
    // off the packs' alignment: the cluster as for aligned rows
    for (const Picked& m : {pick(d, 1, 128257, 50), pick(d, 8, 128256, 50, kgen_dtype_size(d)),
                            pick(d, 16, 100001, 10)}) {
      INFO(m.v->name);
      CHECK(m.p.tier == TopkTier::cluster);
      CHECK(m.p.pack_size * kgen_dtype_size(d) == 16);
    }
  }
}

TEST_CASE("selection among the default set: the rows of sampling in batches of half the SMs or more to a "
          "block a row that streams it",
          "[topk][select][default-set]") {
  // bench/NOTES.md topk v39
  const int64_t half = (h100().sm_count + 1) / 2;
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    const Picked many = pick(d, 2 * half, 128256, 50);  // 4 waves of clusters
    INFO(many.v->name);
    CHECK(many.p.tier == TopkTier::stream);
    CHECK(many.p.block_size == 1024);
    CHECK(many.p.items == (d == KGEN_BFLOAT16 ? 16 : 8));  // 32 bytes a thread
    CHECK(many.plan.bytes == 0);
    CHECK(pick(d, 256, 152064, 100).p.tier == TopkTier::stream);
    CHECK(pick(d, half - 1, 262144, 50).p.tier == TopkTier::stream);  // clusters past 2 waves (v47)
    CHECK(pick(d, 256, 32768, 50).p.tier != TopkTier::stream);  // a block holds the row
  }
}

TEST_CASE("selection among the default set: k past 128 to the stream tier's buffer of 16384 keys a block a "
          "row or in slices over 7/8 of the SMs",
          "[topk][select][default-set]") {
  // bench/NOTES.md topk v51-v53: a block a row from 8 rows (the half types'
  // from one row), or slices over 7/8 of the SMs
  const int64_t sms = h100().sm_count;
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    struct Shape {
      int64_t batch, n, k;
    };
    for (const Shape& sh : {Shape{256, 128256, 129}, Shape{128, 131072, 1000}, Shape{sms / 2, 40000, 300},
                            Shape{21, 633160, 640}, Shape{32, 262144, 256}}) {
      const Picked big = pick(d, sh.batch, sh.n, sh.k);
      INFO(big.v->name);
      CHECK(big.p.tier == TopkTier::stream);
      CHECK(big.p.buffer == 16384);
      // items 16 for the half types up to k 512 (topk v52)
      CHECK(big.p.items == (d == KGEN_BFLOAT16 && sh.k <= 512 ? 16 : 8));
    }
    CHECK(pick(d, 256, 128256, 128).p.buffer == 4096);  // k 128: the buffer of 4096
    CHECK(pick(d, 21, 633161, 640).p.tier == TopkTier::stream);  // rows off the packs' alignment too
    CHECK(pick(d, 21, 633160, 640).plan.bytes > 0);              // 6 slices a row: 126 CTAs
    // fewer CTAs: the multi tier (one row of 2^24, k 256: 64 slices; 4 x
    // 2^21, k 700: 92 CTAs; the 4-byte types' rows of 40000 below 8 rows)
    CHECK(pick(d, 1, int64_t{1} << 24, 256).p.tier == TopkTier::multi);
    CHECK(pick(d, 4, int64_t{1} << 21, 700).p.tier == TopkTier::multi);
    // a block a row from 8 rows (topk v52), for the half types from one (v53)
    const TopkTier few_rows = d == KGEN_FLOAT32 ? TopkTier::multi : TopkTier::stream;
    CHECK(pick(d, 1, 34312, 179).p.tier == few_rows);
    CHECK(pick(d, 7, 40000, 300).p.tier == few_rows);
    CHECK(pick(d, 8, 40000, 300).p.tier == TopkTier::stream);
    CHECK(pick(d, sms / 2 - 2, 40000, 300).p.tier == TopkTier::stream);
    CHECK(pick(d, 256, 128256, 1025).p.tier != TopkTier::stream);  // past 1024
    // pack 1 (not measured): no such variant in the default set; the rule's test is "the stream tier:
    // measured at the widest pack only"
  }
}

TEST_CASE("selection among the default set: k 1 over many elements to the stream tier's running best",
          "[topk][select][default-set]") {
  // bench/NOTES.md topk v47: past 8 x 1024 x 16 a row, or 12 x 2^17
  // elements a batch, the stream tier; the cluster keeps fewer
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    for (int64_t batch : {1, 8}) {
      INFO(batch);
      CHECK(pick(d, batch, 262144, 1).p.tier == TopkTier::stream);
      CHECK(pick(d, batch, 128256, 1).p.tier == TopkTier::cluster);
      CHECK(pick(d, batch, 262144, 2).p.tier == TopkTier::cluster);  // k 2: the buffer
    }
    for (int64_t batch : {16, 32, 64, 256}) {
      INFO(batch);
      CHECK(pick(d, batch, 128256, 1).p.tier == TopkTier::stream);
      CHECK(pick(d, batch, 262144, 1).p.tier == TopkTier::stream);
    }
    CHECK(pick(d, 1, 1 << 24, 1).p.tier == TopkTier::stream);
    CHECK(pick(d, 64, 32768, 1).p.tier != TopkTier::stream);  // a block holds the row
  }
}

TEST_CASE("selection among the default set: queue or block for many short rows", "[topk][select][default-set]") {
  for (kgen_dtype_t d : kDtypes) {
    const Picked many = pick(d, 16384, 1024, 8);
    if (kgen_dtype_size(d) == 2) CHECK((many.p.tier == TopkTier::tourney && many.p.items == 32));
    else CHECK((many.p.tier == TopkTier::queue || many.p.tier == TopkTier::block));
    CHECK(many.plan.bytes == 0);
    // rows of any length or alignment: a warp a row (pack 1), not a block
    for (int64_t n : {1, 2, 7, 1001}) {
      const int64_t warp_row = kgen_dtype_size(d) == 2 ? 1024 : d != KGEN_FLOAT64 ? 256 : 0;  // topk v42
      const TopkTier tier = n <= warp_row ? TopkTier::tourney : TopkTier::queue;
      CHECK(pick(d, 100000, n, 1).p.tier == tier);
      CHECK(pick(d, 100000, n, 1, kgen_dtype_size(d)).p.tier == tier);
    }
    // past 1024, a misaligned row's pack-1 rounds are faster in a block
    CHECK(pick(d, 100000, 3119, 4, kgen_dtype_size(d)).p.tier == TopkTier::block);
    if (d == KGEN_FLOAT64) continue;  // float64 rows in registers stop at 16384
    const Picked rows = pick(d, 1024, 32768, 64);
    CHECK(rows.p.tier == TopkTier::block);
    CHECK(int64_t{rows.p.block_size} * rows.p.items >= 32768);
  }
}

// A made-up variant of the given tier and dtype, ranked by the heuristic
// directly: rules about variants the default set may not compile.
struct Made {
  TopkParams params;
  kgen::VariantInfo info;
  Made(kgen_dtype_t d, TopkParams q)
      : params(q), info{"made", kgen::Family::topk, d, &params, false, 0, &kgen::topk::supports, nullptr} {}
  bool ranked(int64_t batch, int64_t n, int64_t k, bool sorted = true) const {
    const kgen::topk::Problem p = problem(static_cast<kgen_dtype_t>(info.element), batch, n, k, 0, sorted);
    return !kgen::topk::heuristic(info, &p).rejected();
  }
};

TEST_CASE("the tourney's items 32: the half types only, an unsorted k past 32 only in rows that fill the warps",
          "[topk][select]") {
  // bench/NOTES.md topk v42
  for (kgen_dtype_t d : {KGEN_FLOAT16, KGEN_BFLOAT16}) {
    const Made t32(d, TopkParams{TopkTier::tourney, 0, 1, 128, 32, 0});
    CHECK(t32.ranked(27584, 529, 193));
    CHECK(t32.ranked(27584, 529, 193, false));
    CHECK(t32.ranked(1, 1000, 500));
    CHECK(t32.ranked(1, 1000, 8, false));    // k up to 32: the rounds
    CHECK_FALSE(t32.ranked(1, 1000, 500, false));
    CHECK_FALSE(t32.ranked(90, 577, 511, false));
    // in the default set
    const Picked many = pick(d, 27584, 529, 193, 0, false);
    CHECK((many.p.tier == TopkTier::tourney && many.p.items == 32));
    CHECK(pick(d, 1, 1000, 500, 0, false).p.tier == TopkTier::block);
    CHECK(pick(d, 1, 1000, 500).p.tier == TopkTier::tourney);
    CHECK(pick(d, 1, 1025, 500).p.tier == TopkTier::block);  // past 32 x 32
  }
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_INT32}) {
    const Made t32(d, TopkParams{TopkTier::tourney, 0, 1, 128, 32, 0});
    CHECK_FALSE(t32.ranked(27584, 529, 193));
    CHECK_FALSE(t32.ranked(65536, 1000, 8));
  }
}

TEST_CASE("the stream tier: measured at the widest pack only", "[topk][select]") {
  // bench/NOTES.md topk v39: pack 1 was not measured
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
    const int widest = 16 / static_cast<int>(kgen_dtype_size(d));
    const Made wide(d, TopkParams{TopkTier::stream, 0, widest, 1024, 8, 0});
    const Made one(d, TopkParams{TopkTier::stream, 0, 1, 1024, 8, 0});
    CHECK(wide.ranked(256, 128256, 50));
    CHECK_FALSE(one.ranked(256, 128256, 50));
    CHECK_FALSE(wide.ranked(256, 32768, 50));  // a block holds the row
    // fewer rows than half the SMs: aligned ones rank (below a cluster
    // that takes them); off the alignment, split over a third of the SMs
    // or less (3 slices a row), not
    CHECK(wide.ranked(8, 128256, 50));
    CHECK_FALSE(wide.ranked(8, 128257, 50));
  }
}

TEST_CASE("selection among the default set: int32 rows past 16384 with k past 1024 to the multi-block select",
          "[topk][select][default-set]") {
  // the block's 1024 x 32 spills there for int32 (bench/NOTES.md topk v30)
  const TopkTier wide = pick(KGEN_INT32, 133, 25939, 1065).p.tier;
  CHECK((wide == TopkTier::multi || wide == TopkTier::generic));
  CHECK(pick(KGEN_INT32, 133, 25939, 1024).p.tier == TopkTier::block);  // k up to 1024 stays
  CHECK(pick(KGEN_INT32, 133, 16384, 1065).p.tier == TopkTier::block);  // a 1024 x 16 row stays
  CHECK(pick(KGEN_FLOAT16, 39, 32768, 1107).p.tier == TopkTier::block);  // the half types stay
  CHECK(pick(KGEN_BFLOAT16, 52, 25057, 1432).p.tier == TopkTier::block);
}

TEST_CASE("selection among the default set: the 4-byte types' unsorted k past 2k > block at pack 1 to the "
          "multi-block select", "[topk][select][default-set]") {
  // the block's write in index order loses there (bench/NOTES.md topk v31)
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_INT32}) {
    for (int64_t k : {520, 700, 1024}) {
      INFO(k);
      const TopkTier wide = pick(d, 133, 25939, k, 0, false).p.tier;
      CHECK((wide == TopkTier::multi || wide == TopkTier::generic));
      CHECK(pick(d, 133, 25939, k).p.tier == TopkTier::block);  // sorted stays
      CHECK(pick(d, 133, 26000, k, 0, false).p.tier == TopkTier::block);  // pack 4 stays
    }
    CHECK(pick(d, 133, 25939, 500, 0, false).p.tier == TopkTier::block);  // 2k <= 1024: the bound path
  }
  CHECK(pick(KGEN_FLOAT16, 133, 25939, 700, 0, false).p.tier == TopkTier::block);  // the half types stay
}

TEST_CASE("the bound's offers: k over one block's warps where that is more, up to 4 a warp, 16 folded", "[topk][plan]") {
  auto offers = [](int64_t batch, int64_t n, int64_t k, int block) {
    const kgen::topk::Plan pl = kgen::topk::plan_multi(problem(KGEN_BFLOAT16, batch, n, k), block, 1, 11);
    const int64_t warps = pl.blocks_per_row * (block / 32);
    return std::make_pair(pl.offers_per_warp, (k + warps - 1) / warps);  // (offers, k over the row's warps)
  };
  // a reversed row's best 24 in one block's share: 3 a warp of 8 warps
  auto [t, t_row] = offers(2, 4752221, 24, 256);
  CHECK(t_row == 1);
  CHECK(t == 3);
  std::tie(t, t_row) = offers(140, 77367, 11, 256);
  CHECK(t == 2);
  // past 4 a warp the row's share stays where the bound kernel reads the
  // offers (k over half the block: the extra reads cost random rows)
  std::tie(t, t_row) = offers(10, 280308, 182, 256);
  CHECK(t == t_row);
  CHECK(t < (182 + 7) / 8);
  // folded offers (k at most half the block) go up to 16 a warp
  std::tie(t, t_row) = offers(10, 280308, 182, 512);
  CHECK(t_row < 12);
  CHECK(t == 12);
  std::tie(t, t_row) = offers(1, 13455485, 65, 256);
  CHECK(t == 9);
  std::tie(t, t_row) = offers(1, 13455485, 128, 256);  // 16 a warp
  CHECK(t == 16);
  std::tie(t, t_row) = offers(1, 13455485, 129, 256);  // past half the block: the bound kernel's rule
  CHECK(t == t_row);
  // one row of 2^24 over a wave of blocks, k 64: a k of at most half the
  // block is bounded by the offer kernel, past the bound kernel's 16384
  // offers (4 a warp of the row's warps)
  const kgen::topk::Plan one = kgen::topk::plan_multi(problem(KGEN_FLOAT32, 1, 1 << 24, 64), 512, 4, 11);
  CHECK(one.blocks_per_row * 16 * 4 > 16384);
  CHECK(one.offers_per_warp == 4);
  // past half the block the bound kernel's limit holds
  const kgen::topk::Plan big_k = kgen::topk::plan_multi(problem(KGEN_FLOAT32, 1, 1 << 24, 300), 512, 4, 11);
  CHECK(big_k.blocks_per_row * (512 / 32) * big_k.offers_per_warp <= 16384);
}

TEST_CASE("the global sort: the batch at once, a few rows of millions one by one", "[topk][plan]") {
  using kgen::topk::sorts_row_by_row;
  CHECK_FALSE(sorts_row_by_row(5000, 1));  // one row: the batch sort is that row's sort
  CHECK_FALSE(sorts_row_by_row(2 * 564232, 2));
  CHECK(sorts_row_by_row(2 * 1216471, 2));
  CHECK(sorts_row_by_row(3 * 2507799, 3));
  CHECK_FALSE(sorts_row_by_row(6 * 1560237, 6));
  CHECK_FALSE(sorts_row_by_row(34 * 93125, 34));
}

TEST_CASE("the global sort's keys: the order bits, the row's rank above them for a batch at once", "[topk][plan]") {
  using kgen::topk::pair_sort;
  // half types: 16 order bits and 6 row bits for 34 rows: 4-byte keys
  auto s = pair_sort(problem(KGEN_BFLOAT16, 34, 93125, 65761), 65761);
  CHECK(s.fold);
  CHECK(s.bits == 22);
  CHECK(s.key_bytes == 4);
  CHECK(s.rows == 34);
  CHECK(s.per_row == 65761);
  s = pair_sort(problem(KGEN_FLOAT16, 1, 9000000, 5000000), 9000000);  // one row: nothing folded
  CHECK_FALSE(s.fold);
  CHECK(s.bits == 16);
  CHECK(s.key_bytes == 4);
  s = pair_sort(problem(KGEN_FLOAT32, 34, 93125, 65761), 65761);  // 32 + 6 bits
  CHECK(s.fold);
  CHECK(s.bits == 38);
  CHECK(s.key_bytes == 8);
  s = pair_sort(problem(KGEN_INT32, 2, 2000000, 1500000), 1500000);  // rows of millions one by one
  CHECK_FALSE(s.fold);
  CHECK(s.bits == 32);
  CHECK(s.key_bytes == 4);
  s = pair_sort(problem(KGEN_FLOAT64, 34, 93125, 65761), 65761);  // 64 order bits leave no room: row by row
  CHECK_FALSE(s.fold);
  CHECK(s.bits == 64);
  CHECK(s.key_bytes == 8);
}

TEST_CASE("a sorted k of half the row or more: every element's pair sorted, no select regions", "[topk][plan]") {
  for (kgen_dtype_t d : kDtypes) {
    auto p = problem(d, 3, 20000, 10000);
    REQUIRE(kgen::topk::sorts_all(p));
    const kgen::topk::Plan pl = kgen::topk::plan_multi(p, 512, 1, 11);
    const auto s = kgen::topk::pair_sort(p, 20000);
    CHECK(pl.pair_keys == 2 * kgen::topk::round_up(std::size_t{3} * 20000 * s.key_bytes));
    CHECK(pl.pair_indices == 2 * kgen::topk::round_up(std::size_t{3} * 20000 * 4));
    CHECK(pl.selected == 0);
    CHECK(pl.state == 0);
    CHECK(pl.cand == 0);
    CHECK(pl.bytes >= pl.pair_keys + pl.pair_indices + pl.sort_temp);
    p.sorted = false;  // unsorted output keeps the select: its order needs the k-th
    CHECK_FALSE(kgen::topk::sorts_all(p));
    CHECK_FALSE(kgen::topk::sorts_all(problem(d, 3, 20001, 10000)));
    CHECK_FALSE(kgen::topk::sorts_all(problem(d, 3, 2000, 1000)));  // the block's sort holds it
  }
}

TEST_CASE("a k past one block's sort: pairs for a sorted output, none for an unsorted one", "[topk][plan]") {
  for (kgen_dtype_t d : kDtypes) {
    auto p = problem(d, 3, 200000, 9000);  // k under half the row: the select first
    REQUIRE_FALSE(kgen::topk::sorts_in_block(p));
    kgen::topk::Plan pl = kgen::topk::plan_multi(p, 512, 1, 11);
    CHECK(pl.selected == 0);  // no keys collected: digit passes over the order bits, then the writes
    CHECK(pl.cand == 0);
    CHECK(pl.hist == std::size_t{3} * 2048 * sizeof(unsigned));
    CHECK(pl.ties == static_cast<size_t>(2 * 3 * pl.blocks_per_row) * sizeof(unsigned));
    CHECK(pl.pair_keys == 2 * kgen::topk::round_up(std::size_t{3} * 9000 * kgen::topk::pair_sort(p, 9000).key_bytes));
    CHECK(pl.pair_indices == 2 * kgen::topk::round_up(std::size_t{3} * 9000 * 4));
    CHECK(pl.pair_keys_at >= pl.ties_at + pl.ties);
    CHECK(pl.zeroed == pl.hist_at + pl.hist);  // the row states and digit counts
    CHECK(pl.bytes >= pl.sort_temp_at + pl.sort_temp);
    p.sorted = false;  // written in index order, no sort
    pl = kgen::topk::plan_multi(p, 512, 1, 11);
    CHECK(pl.pair_keys == 0);
    CHECK(pl.pair_indices == 0);
    CHECK(pl.sort_temp == 0);
    CHECK(pl.bytes == pl.ties_at + kgen::topk::round_up(pl.ties));
  }
}

TEST_CASE("the multi-block plan: aligned, disjoint regions sized for the batch", "[topk][plan]") {
  auto p = problem(KGEN_FLOAT32, 3, 1 << 20, 100);
  const kgen::topk::Plan pl = kgen::topk::plan_multi(p, 512, 4, 11);
  CHECK(pl.blocks_per_row >= 1);
  CHECK(pl.state >= 3 * sizeof(kgen::topk::RowState));
  CHECK(pl.hist == 3 * 2048 * sizeof(unsigned));
  CHECK(pl.selected == 3 * 100 * 8);
  CHECK(pl.cand == static_cast<size_t>(2 * 3 * pl.candidates * 8));  // two lists a row
  CHECK(pl.candidates == 65536);
  CHECK(pl.ties == static_cast<size_t>(2 * 3 * pl.blocks_per_row) * sizeof(unsigned));  // two counts a block
  const size_t at[] = {pl.state_at, pl.hist_at, pl.tops_at, pl.selected_at, pl.cand_at, pl.ties_at};
  const size_t size[] = {pl.state, pl.hist, pl.tops, pl.selected, pl.cand, pl.ties};
  for (int i = 0; i < 6; ++i) {
    CHECK(at[i] % 256 == 0);
    if (i > 0) CHECK(at[i] >= at[i - 1] + size[i - 1]);
  }
  CHECK(pl.bytes >= pl.ties_at + pl.ties);
  // k 100 <= 256: the offers folded into 512 slots a row, zeroed with the states and counts
  CHECK(pl.offers_per_warp > 0);
  CHECK(pl.tops == 3 * 512 * 8);
  CHECK(pl.zeroed == pl.tops_at + pl.tops);
  // k past half the block: every offer kept (not zeroed), for the bound kernel
  const kgen::topk::Plan big = kgen::topk::plan_multi(problem(KGEN_FLOAT32, 3, 1 << 20, 300), 512, 4, 11);
  CHECK(big.offers_per_warp > 0);
  CHECK(big.tops == static_cast<size_t>(3 * big.blocks_per_row * 16 * big.offers_per_warp * 8));
  CHECK(big.zeroed == big.hist_at + big.hist);
  // short rows: a candidate list of the whole row at most
  CHECK(kgen::topk::multi_candidates(problem(KGEN_FLOAT32, 1, 1000, 10)) == 1000);
}

TEST_CASE("the top-k selection cache gives what selection gives", "[topk][select][cache]") {
  std::mt19937_64 g(13);
  auto one_of = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + g() % xs.size()); };
  for (int i = 0; i < 3000; ++i) {
    const kgen_dtype_t d = kDtypes[g() % (sizeof(kDtypes) / sizeof(kDtypes[0]))];
    const int64_t n = one_of({1, 11, 64, 1024, 4096, 32768, 1 << 20});
    kgen::topk::Problem p = problem(d, one_of({1, 4, 64, 16384}), n, std::min<int64_t>(n, one_of({1, 8, 100, 2048})),
                                    kgen_dtype_size(d) * (g() % 3));
    p.largest = g() % 2;
    p.sorted = g() % 2;
    const auto fresh = kgen::select_variant(kgen::Family::topk, d, h100(), &p, &kgen::topk::heuristic);
    for (int again = 0; again < 2; ++again) {
      const auto cached =
          kgen::select_cached(kgen::Family::topk, d, h100(), &p, &kgen::topk::heuristic, &kgen::topk::selection_key);
      INFO("problem " << i << ": " << (fresh.variant ? fresh.variant->name : "none"));
      CHECK(cached.variant == fresh.variant);
    }
  }
}

TEST_CASE("selection among the default set: rows of up to 512 (the half types' 1024) go to the tourney",
          "[topk][select][default-set]") {
  for (kgen_dtype_t d : kDtypes) {
    if (d == KGEN_FLOAT64) continue;  // 64-bit keys hold no float64
    for (int64_t batch : {1, 16384})
      for (int64_t n : {1, 64, 200, 256}) {
        const Picked t = pick(d, batch, n, std::min<int64_t>(n, 32));
        CHECK(pick(d, batch, n, n).p.tier == TopkTier::tourney);  // the row sorted whole
        INFO(t.v->name << " batch " << batch << " n " << n);
        CHECK(t.p.tier == TopkTier::tourney);
        CHECK(t.p.items == 8);
        CHECK(t.plan.bytes == 0);
        CHECK(pick(d, batch, n, 1, kgen_dtype_size(d)).p.tier == TopkTier::tourney);
      }
    const bool narrow = kgen_dtype_size(d) == 2;  // 32-bit keys
    const Picked wide = pick(d, 16384, 257, 24);  // past 8 keys a lane: 16
    CHECK(wide.p.tier == TopkTier::tourney);
    CHECK(wide.p.items == 16);
    // rows past 256 with k <= 16: the tourney's 16 keys a lane (32-bit
    // order bits for 4-byte types), not the queue's fast path
    CHECK(pick(d, 16384, 384, 8).p.tier == TopkTier::tourney);
    CHECK(pick(d, 16384, 512, 100).p.tier == TopkTier::tourney);
    // past 512: the half types' 32 keys a lane (topk v42), up to 1024
    const Picked past = pick(d, 16384, 513, 8);
    CHECK((narrow ? past.p.tier == TopkTier::tourney && past.p.items == 32 : past.p.tier != TopkTier::tourney));
    CHECK(pick(d, 16384, 1025, 8).p.tier != TopkTier::tourney);
    // few 4-byte rows past 256 sorted whole: a block each
    CHECK(pick(d, 4, 512, 100).p.tier == (narrow ? TopkTier::tourney : TopkTier::block));
    CHECK(pick(d, 30505, 64, 61).p.pack_size == 1);  // sorted whole: the fewest registers
  }
}
