// Softmax capability and selection on a described device, without a GPU.
// Written against properties (tier, pack width, fit), not names, so it holds
// at every build level.
#include <algorithm>
#include <cstdint>
#include <string>

#include "catch.hpp"
#include "kgen_params.gen.hpp"
#include "registry.hpp"
#include "select.hpp"
#include "softmax/problem.hpp"

using kgen::gen::SoftmaxParams;
using kgen::gen::SoftmaxTier;

namespace {

kgen::DeviceInfo h100() {
  kgen::DeviceInfo d;  // defaults describe an H100 SXM
  return d;
}

// Fake device addresses: only their alignment matters to selection.
const void* addr(uintptr_t offset_bytes) {
  return reinterpret_cast<const void*>(uintptr_t{1} << 32 | offset_bytes);
}

struct Picked {
  const kgen::VariantInfo* v;
  SoftmaxParams p;
  kgen::Source source;
};

Picked pick(kgen_dtype_t dtype, int64_t rows, int64_t cols, uintptr_t x_off = 0,
            uintptr_t y_off = 0, const kgen::DeviceInfo& dev = h100()) {
  kgen::softmax::Problem prob{dtype, false, rows, cols, addr(x_off),
                              const_cast<void*>(addr(1u << 20 | y_off)), &dev};
  auto sel = kgen::select_variant(kgen::Family::softmax, dtype, dev, &prob, &kgen::softmax::heuristic);
  REQUIRE(sel.variant != nullptr);
  REQUIRE(sel.variant->supports(*sel.variant, &prob));
  return {sel.variant, *static_cast<const SoftmaxParams*>(sel.variant->params), sel.source};
}

int elem(kgen_dtype_t d) { return d == KGEN_FLOAT64 ? 8 : d == KGEN_FLOAT32 ? 4 : 2; }

}  // namespace

TEST_CASE("rows that fit registers go to the warp tier with the widest pack", "[selection][default-set]") {
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64}) {
    for (int64_t cols : {16, 32, 128, 512, 1024}) {
      if (d == KGEN_FLOAT64 && cols > 512) continue;  // float64 rows of 1024 exceed the registers
      Picked s = pick(d, 4096, cols);
      INFO(s.v->name);
      CHECK(s.source == kgen::Source::heuristic);
      CHECK(s.p.tier == SoftmaxTier::warp);
      CHECK(s.p.pack_size * elem(d) == 16);
      // the tightest fit among the compiled warp variants: no more than twice the row
      CHECK(s.p.cols_per_thread * s.p.group_width >= cols);
      CHECK(s.p.cols_per_thread * s.p.group_width <= std::max<int64_t>(2 * cols, 16 / elem(d)));
    }
  }
}

TEST_CASE("longer rows go to shared memory, then to the uncached tier", "[selection][default-set]") {
  CHECK(pick(KGEN_FLOAT32, 1000, 4096).p.tier == SoftmaxTier::smem);
  CHECK(pick(KGEN_FLOAT16, 1000, 32768).p.tier == SoftmaxTier::smem);  // 64 KB: opt-in
  CHECK(pick(KGEN_FLOAT32, 100, 1 << 20).p.tier == SoftmaxTier::uncached);
  // just past what one block's shared memory holds (rows kept in their dtype)
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_FLOAT64}) {
    const int64_t limit = (227 * 1024 - kgen::softmax::kSmemReserve) / elem(d);
    CHECK(pick(d, 8, limit - limit % 8).p.tier == SoftmaxTier::smem);
    CHECK(pick(d, 8, limit - limit % 8 + 8).p.tier == SoftmaxTier::uncached);
  }
  // a device with less shared memory moves the boundary
  kgen::DeviceInfo small = h100();
  small.smem_per_block_optin = 48 * 1024;
  CHECK(pick(KGEN_FLOAT32, 8, 16384, 0, 0, small).p.tier == SoftmaxTier::uncached);
}

TEST_CASE("smem tier: 4-byte packs, most resident warps, then the smallest block", "[selection][default-set]") {
  Picked s = pick(KGEN_FLOAT32, 1000, 2048);  // 8 KB rows: 2048 threads fit any block size
  REQUIRE(s.p.tier == SoftmaxTier::smem);
  CHECK(s.p.pack_size == 1);
  CHECK(pick(KGEN_FLOAT16, 1000, 4096).p.pack_size == 2);
  CHECK(pick(KGEN_BFLOAT16, 1000, 4096).p.pack_size == 2);
  int smallest = 1 << 30;
  for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::softmax, KGEN_FLOAT32)) {
    const auto& p = *static_cast<const SoftmaxParams*>(v->params);
    if (p.tier == SoftmaxTier::smem && p.pack_size == s.p.pack_size) smallest = std::min(smallest, p.block_size);
  }
  CHECK(s.p.block_size == smallest);
  Picked big = pick(KGEN_FLOAT32, 1000, 32768);  // 128 KB rows: one block per SM, so the largest
  REQUIRE(big.p.tier == SoftmaxTier::smem);
  CHECK(big.p.block_size == 1024);
}

TEST_CASE("misaligned pointers and odd cols get narrower packs, never a wrong one",
          "[selection]") {
  for (uintptr_t off : {2, 4, 8}) {
    Picked s = pick(KGEN_FLOAT16, 64, 256, off, 0);
    INFO(s.v->name);
    CHECK(s.p.pack_size * 2 <= static_cast<int>(off));
  }
  Picked odd = pick(KGEN_FLOAT32, 64, 1001);
  CHECK(odd.p.pack_size == 1);
  Picked misaligned_y = pick(KGEN_FLOAT32, 64, 4096, 0, 4);
  CHECK(misaligned_y.p.pack_size == 1);
}

TEST_CASE("supports() decides capability from extents and alignment", "[selection]") {
  kgen::DeviceInfo dev = h100();
  for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::softmax, KGEN_FLOAT32)) {
    const auto& p = *static_cast<const SoftmaxParams*>(v->params);
    INFO(v->name);
    for (int64_t cols : {1, 3, 4, 32, 33, 1024, 1025, 70000}) {
      kgen::softmax::Problem prob{KGEN_FLOAT32, false, 7, cols, addr(0), const_cast<void*>(addr(64)), &dev};
      bool expected = cols % p.pack_size == 0;
      if (p.tier == SoftmaxTier::warp) {
        const int64_t reach = int64_t{p.cols_per_thread} * p.group_width;
        expected = expected && (p.padding ? cols <= reach : cols == reach);
      } else if (p.tier == SoftmaxTier::smem) {
        expected = expected && cols * 4 + kgen::softmax::kSmemReserve <= int64_t(dev.smem_per_block_optin);
      }
      CHECK(v->supports(*v, &prob) == expected);
      kgen::softmax::Problem shifted = prob;
      shifted.x = addr(4);
      CHECK(v->supports(*v, &shifted) == (expected && p.pack_size == 1));
    }
  }
}

TEST_CASE("the generic variant supports every valid problem", "[selection]") {
  kgen::DeviceInfo dev = h100();
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64}) {
    for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::softmax, d)) {
      if (!v->generic) continue;
      for (int64_t cols : {int64_t{1}, int64_t{7}, int64_t{1} << 33})
        for (uintptr_t elems : {0, 1, 3}) {
          const uintptr_t off = elems * elem(d);
          kgen::softmax::Problem prob{d, true, 3, cols, addr(off), const_cast<void*>(addr(off + elem(d))), &dev};
          CHECK(v->supports(*v, &prob));
        }
    }
  }
}
