// Softmax capability and selection on a described device, without a GPU.
// Written against properties (tier, pack width, fit), not names, so it holds
// at every build level.
#include <algorithm>
#include <random>
#include <vector>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "catch.hpp"
#include "kgen_params.gen.hpp"
#include "registry.hpp"
#include "select.hpp"
#include "softmax/problem.hpp"

using kgen::gen::SoftmaxParams;
using kgen::gen::SoftmaxTier;
using kgen::gen::SoftmaxBackwardParams;
using kgen::gen::SoftmaxBackwardTier;

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
            uintptr_t y_off = 0, const kgen::DeviceInfo& dev = h100(), bool log = false) {
  kgen::softmax::Problem prob{dtype, log, rows, cols, addr(x_off),
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

TEST_CASE("rows of 1025-2048: the forward's half types in long-row warp variants, the rest in a block",
          "[selection][default-set]") {
  kgen::DeviceInfo dev = h100();
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    Picked s = pick(d, 4096, 2048);
    INFO(s.v->name);
    if (d == KGEN_FLOAT32) {
      CHECK(s.p.tier == SoftmaxTier::block);
    } else {
      CHECK(s.p.tier == SoftmaxTier::warp);
      CHECK(s.p.cols_per_thread * s.p.group_width == 2048);
    }
    kgen::softmax::Problem bwd{d, false, 4096, 2048, addr(0), const_cast<void*>(addr(1u << 20)), &dev};
    bwd.dy = addr(2u << 20);
    auto b = kgen::select_variant(kgen::Family::softmax_backward, d, dev, &bwd, &kgen::softmax::heuristic);
    REQUIRE(b.variant != nullptr);
    CHECK(static_cast<const SoftmaxParams*>(b.variant->params)->tier == SoftmaxTier::block);
  }
}

// A device that runs sm_80 code: no thread-block clusters.
kgen::DeviceInfo no_clusters() {
  kgen::DeviceInfo d = h100();
  d.code_arch = 80;
  return d;
}

TEST_CASE("longer rows go to a block, then a cluster, then the uncached tier", "[selection][default-set]") {
  CHECK(pick(KGEN_FLOAT32, 1000, 4096).p.tier == SoftmaxTier::block);
  CHECK(pick(KGEN_FLOAT16, 1000, 32768).p.tier == SoftmaxTier::block);    // 512 threads x 64 values
  CHECK(pick(KGEN_FLOAT16, 1000, 131072).p.tier == SoftmaxTier::cluster);  // past 512 threads x 128 values
  // odd and misaligned rows alike: the aligned body in 16-byte packs
  for (int64_t cols : {50257, 100003}) {
    Picked odd = pick(KGEN_BFLOAT16, 1000, cols, 2, 2);
    CHECK(odd.p.tier == (cols < 65536 ? SoftmaxTier::block : SoftmaxTier::cluster));
    CHECK(odd.p.pack_size == 8);
  }
  // past a cluster of 16 x 1024 threads x 32 float32 values in registers:
  // 16 packs a thread, half of them in shared memory, up to rows of 1M
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    INFO(elem(d));
    const Picked held = pick(d, 1000, 1 << 20);
    CHECK(held.p.tier == SoftmaxTier::cluster);
    CHECK(held.p.cluster_size == 16);
    CHECK(held.p.cols_per_thread / held.p.pack_size == 16);
    CHECK(pick(d, 1000, (1 << 20) - 5, 6, 6).p.tier == SoftmaxTier::cluster);
    CHECK(pick(d, 1000, (1 << 20) + 8).p.tier == SoftmaxTier::uncached);
    // rows no 16-byte pack covers: the split reads their aligned body in
    // packs, the uncached tier an element at a time; with y off x's offset
    // the split stores shifted packs
    CHECK(pick(d, 200, 3000008).p.tier == SoftmaxTier::uncached);
    CHECK(pick(d, 200, 3000001).p.tier == SoftmaxTier::split);
    CHECK(pick(d, 200, 3000008, elem(d), elem(d)).p.tier == SoftmaxTier::split);
    CHECK(pick(d, 200, 3000001, elem(d), 0).p.tier == SoftmaxTier::split);
  }
  // while a cluster a row gives every SM a CTA (9 rows and more)
  CHECK(pick(KGEN_FLOAT32, 60, 1 << 20).p.tier == SoftmaxTier::cluster);
  CHECK(pick(KGEN_FLOAT32, h100().sm_count / 16 + 1, 1 << 20).p.tier == SoftmaxTier::cluster);
  // fewer rows, or rows past 1M (at most half as many rows as SMs): each
  // row over many CTAs
  CHECK(pick(KGEN_FLOAT32, h100().sm_count / 16, 1 << 20).p.tier == SoftmaxTier::grid);
  CHECK(pick(KGEN_FLOAT32, h100().sm_count / 16, 1 << 21).p.tier == SoftmaxTier::split);
  // ... but where the whole tensor fits the grid tier (every SM's
  // registers), in one launch that reads x once
  CHECK(pick(KGEN_FLOAT16, 1, 3000001, 2, 2).p.tier == SoftmaxTier::grid);
  CHECK(pick(KGEN_FLOAT32, 2, 1 << 20).p.tier == SoftmaxTier::grid);
  // with packs past 8 a thread in shared memory: 34.6 MB on 132 SMs
  CHECK(pick(KGEN_FLOAT32, 2, 3000001).p.tier == SoftmaxTier::grid);
  CHECK(pick(KGEN_FLOAT32, 1, 8000001).p.tier == SoftmaxTier::grid);
  CHECK(pick(KGEN_FLOAT32, 2, 5000001).p.tier == SoftmaxTier::split);
  CHECK(pick(KGEN_BFLOAT16, 2, 8000001).p.tier == SoftmaxTier::grid);
  CHECK(pick(KGEN_BFLOAT16, 2, 9000001).p.tier == SoftmaxTier::split);
  CHECK(pick(KGEN_FLOAT32, h100().sm_count / 2, (1 << 20) + 8).p.tier == SoftmaxTier::split);
  CHECK(pick(KGEN_FLOAT32, h100().sm_count / 2 + 1, (1 << 20) + 8).p.tier == SoftmaxTier::uncached);
  CHECK(pick(KGEN_FLOAT32, 100, (1 << 19) - 3, 4).p.tier == SoftmaxTier::cluster);
  // few rows: clusters wide enough to give every SM a CTA (32 float32 rows
  // of 32768: 87% of copy in clusters of 8, 83% in clusters of 2; H100)
  Picked few = pick(KGEN_FLOAT32, 32, 32768);
  CHECK(few.p.tier == SoftmaxTier::cluster);
  CHECK(32 * few.p.cluster_size >= h100().sm_count);
  // without clusters: rows past a block go to shared memory, then to the
  // uncached tier, just past what one block's shared memory holds (rows
  // kept in their dtype); a few such rows to the split tier
  const kgen::DeviceInfo old = no_clusters();
  CHECK(pick(KGEN_FLOAT16, 1000, 32768, 0, 0, old).p.tier == SoftmaxTier::block);  // 512 threads x 64 values
  CHECK(pick(KGEN_FLOAT16, 1000, 80000, 0, 0, old).p.tier == SoftmaxTier::smem);   // 160 KB: opt-in
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_FLOAT64}) {
    const int64_t limit = (227 * 1024 - kgen::softmax::kSmemReserve) / elem(d);
    CHECK(pick(d, 200, limit - limit % 8, 0, 0, old).p.tier == SoftmaxTier::smem);
    CHECK(pick(d, 200, limit - limit % 8 + 8, 0, 0, old).p.tier == SoftmaxTier::uncached);
    // (the grid tier holds them in registers; not for float64)
    CHECK(pick(d, 8, limit - limit % 8, 0, 0, old).p.tier ==
          (d == KGEN_FLOAT64 ? SoftmaxTier::split : SoftmaxTier::grid));
  }
  // a device with less shared memory moves the boundary
  kgen::DeviceInfo small = old;
  small.smem_per_block_optin = 48 * 1024;
  CHECK(pick(KGEN_FLOAT32, 200, 40000, 0, 0, small).p.tier == SoftmaxTier::uncached);
}

// Rows no 8-pack cluster fills 7/8 of (float32: 3/4) take 16 packs a thread
// in blocks of 256, in the smallest cluster that holds them, any size up to
// 16 (bench/NOTES.md slice v9); fuller rows and small problems keep 8 packs.
TEST_CASE("forward clusters of 16 packs a thread for rows 8-pack clusters leave idle", "[selection][default-set]") {
  struct Case {
    kgen_dtype_t d;
    int64_t rows, cols;
    int packs, block, cluster;
  };
  const Case cases[] = {
      {KGEN_FLOAT16, 882, 152064, 16, 256, 5},    // 8 packs: 58% of a cluster of 16
      {KGEN_BFLOAT16, 671, 200019, 16, 256, 7},   // 76% of 16
      {KGEN_FLOAT16, 1338, 100277, 16, 256, 4},   // 76% of 8
      {KGEN_FLOAT32, 441, 152064, 16, 256, 10},   // past 16 x 256 x 8 packs
      {KGEN_FLOAT32, 335, 200019, 16, 256, 14},   // 13 CTAs' worth: the next size compiled
      {KGEN_FLOAT32, 669, 100277, 8, 256, 16},    // float32 3/4 full: 8 packs
      {KGEN_FLOAT16, 1046, 128256, 8, 256, 8},    // 98% full: 8 packs
      {KGEN_FLOAT32, 128, 524288, 16, 512, 16},   // past 16 x 256 x 16 packs
      {KGEN_FLOAT16, 8, 152064, 8, 256, 16},      // a small problem keeps its CTAs
      {KGEN_FLOAT16, 32, 152064, 8, 256, 16},     // (5 x 256 x 16 packs would give every SM a CTA)
  };
  for (const Case& c : cases) {
    for (bool log : {false, true}) {
      const Picked s = pick(c.d, c.rows, c.cols, 0, 0, h100(), log);
      INFO(s.v->name);
      CHECK(s.p.tier == SoftmaxTier::cluster);
      CHECK(s.p.cols_per_thread / s.p.pack_size == c.packs);
      CHECK(s.p.block_size == c.block);
      CHECK(s.p.cluster_size == c.cluster);
    }
  }
  // the backward keeps 8 packs and clusters of a power of two
  kgen::DeviceInfo dev = h100();
  kgen::softmax::Problem bwd{KGEN_FLOAT32, false, 441, 152064, addr(0), const_cast<void*>(addr(1u << 20)), &dev};
  bwd.dy = addr(2u << 20);
  auto b = kgen::select_variant(kgen::Family::softmax_backward, KGEN_FLOAT32, dev, &bwd, &kgen::softmax::heuristic);
  REQUIRE(b.variant != nullptr);
  const auto& bp = *static_cast<const SoftmaxParams*>(b.variant->params);
  INFO(b.variant->name);
  CHECK((bp.cluster_size & (bp.cluster_size - 1)) == 0);
}

// Masked rows (which the block and cluster tiers do not take) past the
// warp tier go to the smem tier.
Picked pick_masked(kgen_dtype_t dtype, int64_t rows, int64_t cols) {
  static const kgen::DeviceInfo dev = h100();
  static const kgen::softmax::Mask none{KGEN_MASK_NONE, nullptr, 1.0, 1, 1, 0, 0, 0, false, false};
  kgen::softmax::Problem prob{dtype, false, rows, cols, addr(0), const_cast<void*>(addr(1u << 20)), &dev};
  prob.mask = &none;
  auto sel = kgen::select_variant(kgen::Family::softmax, dtype, dev, &prob, &kgen::softmax::heuristic);
  REQUIRE(sel.variant != nullptr);
  return {sel.variant, *static_cast<const SoftmaxParams*>(sel.variant->params), sel.source};
}

TEST_CASE("smem tier: 4-byte packs, most resident warps, then the smallest block", "[selection][default-set]") {
  Picked s = pick_masked(KGEN_FLOAT32, 1000, 3072);  // 12 KB rows: 2048 threads fit any block size
  REQUIRE(s.p.tier == SoftmaxTier::smem);
  CHECK(s.p.pack_size == 1);
  CHECK(pick_masked(KGEN_FLOAT16, 1000, 4096).p.pack_size == 2);
  CHECK(pick_masked(KGEN_BFLOAT16, 1000, 4096).p.pack_size == 2);
  int smallest = 1 << 30;
  for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::softmax, KGEN_FLOAT32)) {
    const auto& p = *static_cast<const SoftmaxParams*>(v->params);
    if (p.tier == SoftmaxTier::smem && p.pack_size == s.p.pack_size) smallest = std::min(smallest, p.block_size);
  }
  CHECK(s.p.block_size == smallest);
  Picked big = pick_masked(KGEN_FLOAT32, 1000, 32768);  // 128 KB rows: one block per SM, so the largest
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
  INFO(odd.v->name);
  // pack 1 in the warp and smem tiers; a block takes the row's aligned body
  // in 16-byte packs and its ends an element a thread
  CHECK((odd.p.pack_size == 1 || odd.p.tier == SoftmaxTier::block));
  // a block holds a row at any alignment, its aligned body in 16-byte
  // packs, y as well where it lies apart from x (next tests)
  for (uintptr_t y_off : {4, 0}) {
    Picked misaligned = pick(KGEN_FLOAT32, 64, 4096, 4, y_off);
    INFO(misaligned.v->name << " y " << y_off);
    CHECK(misaligned.p.tier == SoftmaxTier::block);
    CHECK(misaligned.p.pack_size == 4);
  }
}

TEST_CASE("rows no wide pack covers stay in registers at pack 1", "[selection][default-set]") {
  // odd lengths and tensors one element into their storage (H100 random
  // sweep: 2.8M rows of 26 float32 went a block a row to the smem tier,
  // 0.13x torch; bench/NOTES.md sweep v1)
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64}) {
    // (rows of 3-40 go to the tile tier, 3-64 backward: the next test; odd rows of 640 to
    // 2048 to blocks of one or two warps; of 13-1031 to the span tier but
    // float64's: span_rows below)
    for (int64_t cols : {1, 333}) {
      if (cols == 333 && d != KGEN_FLOAT64) continue;
      Picked s = pick(d, 100000, cols);
      INFO(s.v->name << " cols " << cols);
      CHECK(s.p.tier == SoftmaxTier::warp);
      CHECK(s.p.cols_per_thread * s.p.group_width >= cols);
      CHECK(s.p.cols_per_thread * s.p.group_width <= std::max<int64_t>(2 * cols, 2));
    }
    // a wider pack that fits only a variant many times the row is not
    // worth its idle lanes (float16 rows of 4: the pack-4 variants hold 512)
    // (rows of 2-6 a thread a row where a column variant is compiled: the
    // default level has none of float64)
    for (int64_t cols : {4}) {
      Picked s = pick(d, 678000, cols);
      INFO(s.v->name << " cols " << cols);
      if (d != KGEN_FLOAT64) {
        CHECK(s.p.tier == SoftmaxTier::column);
        continue;
      }
      CHECK(s.p.tier == SoftmaxTier::warp);
      CHECK(s.p.cols_per_thread * s.p.group_width < 4 * cols);
    }
    // x one element in, y aligned: the span tier's aligned body (y
    // through shared memory in its own packs), float64's warp at pack 1
    Picked shifted = pick(d, 100000, 512, elem(d), 0);
    INFO(shifted.v->name);
    if (d == KGEN_FLOAT64) {
      CHECK(shifted.p.tier == SoftmaxTier::warp);
      CHECK(shifted.p.pack_size == 1);
    } else {
      CHECK(shifted.p.tier == SoftmaxTier::span);
      CHECK(shifted.p.pack_size * elem(d) == 16);
    }
  }
}

TEST_CASE("forward rows no 16-byte pack covers go to the span tier, y apart from x in larger float32 tensors",
          "[selection][default-set]") {
  // H200, kgen-bench softmax --variants (bench/NOTES.md span v1): rows of
  // 13-511 (float32) and 29-1001 (half types) at 87-105% and 68-104% of
  // copy, against 35-100% in the warp, tile and small-block tiers
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    const int64_t pack = 16 / elem(d);
    for (int64_t cols : {int64_t{41}, int64_t{77}, int64_t{333}, int64_t{511}, int64_t{513}, 130 * pack - 9}) {
      for (bool log : {false, true}) {
        Picked s = pick(d, 100000, cols, 0, 0, h100(), log);
        INFO(s.v->name << " cols " << cols << " log " << log);
        CHECK(s.p.tier == SoftmaxTier::span);
        const int64_t packs = int64_t{s.p.group_width} * (s.p.cols_per_thread / s.p.pack_size);
        CHECK(packs >= cols / pack);
        CHECK(packs < 2 * (cols / pack));  // the fewest idle packs
        // x and y at the same offset into a 16-byte line
        CHECK(pick(d, 100000, cols, elem(d), elem(d), h100(), log).p.tier == SoftmaxTier::span);
      }
    }
    // the fewest idle packs: half-type rows of 333 hold 41 body packs, 48
    // slots at 3 packs a lane in 16 lanes against 64 at 4 (float32 keeps 4
    // packs a lane); where the counts tie (64 body packs), the fewest lanes
    CHECK(pick(d, 100000, 333).p.cols_per_thread == (elem(d) == 2 ? 3 : 4) * pack);
    // 3 packs a lane only in groups of 8 or more: half-type rows of 89 (11
    // body packs) take 4 lanes x 4 packs, not 4 x 3
    CHECK(pick(d, 100000, 89).p.cols_per_thread == 4 * pack);
    CHECK(pick(d, 100000, 64 * pack + 1).p.cols_per_thread == 4 * pack);
    // y off x's alignment: stored through shared memory in its own packs
    // (bench/NOTES.md span v3), float32 from 4 MiB (a float32 tensor of 1 MB
    // ran 0.3 us slower than in the warp tier)
    CHECK(pick(d, 100000, 333, elem(d), 0).p.tier == SoftmaxTier::span);
    CHECK(pick(d, 100000, 333, 0, elem(d)).p.tier == SoftmaxTier::span);
    CHECK((pick(d, 2000, 333, elem(d), 0).p.tier == SoftmaxTier::span) == (elem(d) == 2));
    CHECK(pick(d, 2000, 333).p.tier == SoftmaxTier::span);
    // small tensors, rows a 16-byte pack covers, and rows past a group of
    // 32 lanes x 4 packs keep their tiers
    CHECK(pick(d, 300, 333).p.tier != SoftmaxTier::span);
    CHECK(pick(d, 100000, 320).p.tier == SoftmaxTier::warp);
    CHECK(pick(d, 100000, 128 * pack + pack + 1).p.tier == SoftmaxTier::block);
  }
}

TEST_CASE("odd rows of 3-48 values and odd slabs of short axes go to the tile tier when they fill the GPU",
          "[selection][default-set]") {
  // H100 (bench/NOTES.md tile v1): 1.3-1.8x the pack-1 warp and strided
  // variants on rows of 5-29 and slabs of (3, 281); slower on rows of 333
  // and longer, and on tensors of a few tiles; H200 (tile v4): forward rows
  // up to 48 (float32) and 40 (others)
  auto pick_dim = [](kgen_dtype_t d, int64_t outer, int64_t axis, int64_t inner, uintptr_t off) {
    const kgen::DeviceInfo dev = h100();
    kgen::softmax::Problem prob{d, false, outer, axis, addr(off), const_cast<void*>(addr(1u << 20 | off)), &dev,
                                inner};
    auto sel = kgen::select_variant(kgen::Family::softmax, d, dev, &prob, &kgen::softmax::heuristic);
    REQUIRE(sel.variant != nullptr);
    REQUIRE(sel.variant->supports(*sel.variant, &prob));
    return *static_cast<const SoftmaxParams*>(sel.variant->params);
  };
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64}) {
    INFO(elem(d));
    // rows from span_first_row on (float32 13, half types 33) go to the
    // span tier ahead of the tile (span v1); float64 has no span variant
    const bool f64 = elem(d) == 8;
    const int64_t span_from = f64 ? 1000 : elem(d) == 4 ? 13 : 33;
    for (int64_t cols : {5, 11, 17, 27, 29, 39}) {
      INFO("cols " << cols);
      CHECK(pick_dim(d, 2000000, cols, 1, 0).tier == (cols < span_from ? SoftmaxTier::tile : SoftmaxTier::span));
    }
    // (rows of 2-4 a thread a row: the next test; float64 has no column variant)
    CHECK(pick_dim(d, 2000000, 3, 1, 0).tier == (f64 ? SoftmaxTier::tile : SoftmaxTier::column));
    // forward rows past 48 (float32) or 40 in a warp at pack 1 (tile v4),
    // in a span but float64's
    const int64_t past = elem(d) == 4 ? 49 : 41;
    for (int64_t cols : {past, past + 14}) {
      const SoftmaxParams q = pick_dim(d, 2000000, cols, 1, 0);
      CHECK(q.tier == (f64 ? SoftmaxTier::warp : SoftmaxTier::span));
      CHECK(q.cols_per_thread * q.group_width >= cols - 2 * q.pack_size);
    }
    CHECK(pick_dim(d, 2000000, past - 2, 1, 0).tier == (f64 ? SoftmaxTier::tile : SoftmaxTier::span));
    // misaligned rows of a length a pack divides
    CHECK(pick_dim(d, 2000000, 32, 1, elem(d)).tier == (elem(d) == 4 ? SoftmaxTier::span : SoftmaxTier::tile));
    CHECK(pick_dim(d, 2000000, 40, 1, elem(d)).tier == (f64 ? SoftmaxTier::tile : SoftmaxTier::span));
    // aligned ones keep their wide-pack warp variants
    CHECK(pick_dim(d, 2000000, 32, 1, 0).tier == SoftmaxTier::warp);
    // rows of 2 and of 333, and a few tiles' worth, keep the warp tier
    for (int64_t cols : {2, 333}) CHECK(pick_dim(d, 2000000, cols, 1, 0).tier != SoftmaxTier::tile);
    CHECK(pick_dim(d, 100, 29, 1, 0).tier == SoftmaxTier::warp);
    // a few tiles an SM: the span tier, where it holds the row, above the
    // warp tier's element loads (H200 sweep: log_softmax 3x157x17x5x19
    // float16 8.5 -> 5.7 us)
    if (elem(d) == 2) CHECK(pick_dim(d, 20681, 23, 1, elem(d)).tier == SoftmaxTier::span);
    // a short axis over an odd inner extent or an aligned one: a thread a
    // column (float64, which the default level gives no column variant:
    // the tile and the strided tile)
    CHECK(pick_dim(d, 8192, 3, 281, 0).tier == (f64 ? SoftmaxTier::tile : SoftmaxTier::column));
    CHECK(pick_dim(d, 8192, 3, 256, 0).tier == (f64 ? SoftmaxTier::strided : SoftmaxTier::column));
  }
}

TEST_CASE("odd rows of 513-2048 go to blocks of one or two warps that they fill to half at least",
          "[selection][default-set]") {
  // H100 (bench/NOTES.md tile v2): odd rows of 673, 1001 and 1999 at
  // 88-104% of copy in the block of least padding (32 x 32 values for 673
  // and 1001), against 78-86% (plain) and 52-61% (log) for the half types in
  // the warp and smem tiers; rows of 547 (53% of 32 x 32 values) bfloat16
  // 87-90% against 81-82% in the warp tier (warp v1).  Even rows that no
  // wide pack covers take the pack-1 warp variant in both modes: its log
  // mode, below the smem tier while its loads waited one behind another,
  // ran odd rows of 547-777 at 81-103% against 43-96% in smem (warp v1;
  // even rows of this class, such as 630, were not timed).
  // Since, rows that a span's 32 lanes x 4 packs hold (up to 1031 half
  // values, 515 float32) go to the span tier (span v1; the test above).
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    const int64_t span_last = 128 * (16 / elem(d)) + 16 / elem(d) - 1;
    // (513: a block of 512 values holds it, the 513th in its unaligned end)
    for (int64_t cols : {513, 673, 777, 1001, 1023, 1999}) {
      for (bool log : {false, true}) {
        Picked s = pick(d, 20000, cols, 0, 0, h100(), log);
        INFO(s.v->name << " cols " << cols << " log " << log);
        if (cols <= span_last) {
          CHECK(s.p.tier == SoftmaxTier::span);
          continue;
        }
        CHECK(s.p.tier == SoftmaxTier::block);
        CHECK(int64_t{s.p.block_size} * s.p.cols_per_thread < 2 * cols);
        if (cols > 1024) continue;  // 1999: 64 x 32 values, or 128 x 16 where it holds the row too
        CHECK(s.p.block_size < 128);
        // of 32 x 32 and 64 x 16 values, 64 bytes a thread
        if (cols > 600) CHECK(s.p.cols_per_thread * elem(d) == 64);
      }
    }
    for (int64_t cols : {547, 601}) {
      for (bool log : {false, true}) {
        Picked s = pick(d, 20000, cols, 0, 0, h100(), log);
        INFO(s.v->name << " cols " << cols << " log " << log);
        CHECK(s.p.tier == (cols <= span_last ? SoftmaxTier::span : SoftmaxTier::block));
        if (cols > span_last) CHECK(int64_t{s.p.block_size} * s.p.cols_per_thread < 2 * cols);
      }
    }
    for (bool log : {false, true}) {
      Picked s = pick(d, 20000, 630, 0, 0, h100(), log);
      INFO(s.v->name << " cols 630 log " << log);
      CHECK(s.p.tier == (630 <= span_last ? SoftmaxTier::span : SoftmaxTier::warp));
      if (630 > span_last) CHECK(s.p.pack_size == 1);
    }
    // even rows keep their wide-pack warp variants
    Picked even = pick(d, 20000, 1024, 0, 0, h100(), true);
    INFO(even.v->name);
    CHECK(even.p.tier == SoftmaxTier::warp);
    CHECK(even.p.pack_size > 1);
  }
}

TEST_CASE("a row never goes to a strided tier's one-column-a-warp plan", "[selection]") {
  // rows of 0.3-57M elements ran at 0.01x torch in strided_uncached (H100)
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    for (int64_t cols : {int64_t{300597}, int64_t{9697981}, int64_t{1} << 24}) {
      for (uintptr_t off : {0, 2}) {
        Picked s = pick(d, 1, cols, off, 0);
        INFO(s.v->name);
        CHECK(s.p.tier != SoftmaxTier::strided_uncached);
      }
    }
  }
}

TEST_CASE("supports() decides capability from extents and alignment", "[selection]") {
  kgen::DeviceInfo dev = h100();
  for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::softmax, KGEN_FLOAT32)) {
    const auto& p = *static_cast<const SoftmaxParams*>(v->params);
    INFO(v->name);
    if (p.tier == SoftmaxTier::strided || p.tier == SoftmaxTier::strided_uncached || p.tier == SoftmaxTier::column)
      continue;  // below
    for (int64_t cols : {1, 3, 4, 32, 33, 1024, 1025, 70000}) {
      kgen::softmax::Problem prob{KGEN_FLOAT32, false, 7, cols, addr(0), const_cast<void*>(addr(64)), &dev};
      if (p.tier == SoftmaxTier::block || p.tier == SoftmaxTier::cluster) {
        // any length and alignment: the aligned body's packs split over the
        // cluster within each CTA's registers
        const int64_t per_cta = (cols / p.pack_size + p.cluster_size - 1) / p.cluster_size;
        const bool fits = per_cta * p.pack_size <= int64_t{p.block_size} * p.cols_per_thread;
        CHECK(v->supports(*v, &prob) == fits);
        kgen::softmax::Problem shifted = prob;
        shifted.x = addr(4);
        CHECK(v->supports(*v, &shifted) == fits);
        continue;
      }
      if (p.tier == SoftmaxTier::split) {  // any row (last dim, no mask) and alignment
        CHECK(v->supports(*v, &prob));
        kgen::softmax::Problem shifted = prob;
        shifted.x = addr(4);
        CHECK(v->supports(*v, &shifted));
        continue;
      }
      if (p.tier == SoftmaxTier::span) {  // a body pack at least, at most a group's packs, any alignment
        const int64_t packs = int64_t{p.group_width} * (p.cols_per_thread / p.pack_size);
        const bool fits = cols >= 2 * p.pack_size - 1 && cols / p.pack_size <= packs;
        CHECK(v->supports(*v, &prob) == fits);
        kgen::softmax::Problem shifted = prob;
        shifted.x = addr(4);
        CHECK(v->supports(*v, &shifted) == fits);
        continue;
      }
      if (p.tier == SoftmaxTier::grid) {  // the 7 rows' slices, one a resident CTA, any alignment
        const int64_t parts = int64_t{dev.sm_count} * (p.block_size <= 256 ? 2 : 1) / 7;
        const int64_t per_cta = (cols / p.pack_size + 1 + parts - 1) / parts;
        const bool fits = per_cta * p.pack_size <= int64_t{p.block_size} * p.cols_per_thread;
        CHECK(v->supports(*v, &prob) == fits);
        kgen::softmax::Problem shifted = prob;
        shifted.x = addr(4);
        CHECK(v->supports(*v, &shifted) == fits);
        kgen::softmax::Problem many = prob;
        many.rows = int64_t{dev.sm_count} * 2 + 1;  // more rows than resident CTAs
        CHECK_FALSE(v->supports(*v, &many));
        continue;
      }
      if (p.tier == SoftmaxTier::tile) {  // a whole row in the tile, any alignment
        const bool fits = cols <= int64_t{p.block_size} * p.cols_per_thread;
        CHECK(v->supports(*v, &prob) == fits);
        kgen::softmax::Problem shifted = prob;
        shifted.x = addr(4);
        CHECK(v->supports(*v, &shifted) == fits);
        continue;
      }
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

TEST_CASE("clusters holding packs in shared memory need that memory on the device", "[selection]") {
  kgen::DeviceInfo dev = h100(), small = h100();
  small.smem_per_block_optin = 48 * 1024;
  int held = 0;
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64})
    for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::softmax, d)) {
      const auto& p = *static_cast<const SoftmaxParams*>(v->params);
      if (p.tier != SoftmaxTier::cluster || p.cols_per_thread / p.pack_size <= 8) continue;
      INFO(v->name);
      const int64_t bytes = int64_t{16} * p.block_size * (p.cols_per_thread / p.pack_size - 8);
      const int64_t cols = int64_t{p.block_size} * p.cols_per_thread * p.cluster_size - 3;
      kgen::softmax::Problem prob{d, false, 200, cols, addr(0), const_cast<void*>(addr(64)), &dev};
      CHECK(v->supports(*v, &prob));
      prob.device = &small;
      CHECK(v->supports(*v, &prob) == (bytes + 1024 <= 48 * 1024));
      ++held;
    }
  CHECK(held > 0);
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

namespace {

// A problem over (outer, axis, inner) for either family; dy set for backward.
kgen::softmax::Problem dim_problem(kgen_dtype_t d, int64_t outer, int64_t axis, int64_t inner, bool backward,
                                   const kgen::DeviceInfo& dev, uintptr_t x_off = 0) {
  kgen::softmax::Problem p{d, false, outer, axis, addr(x_off), const_cast<void*>(addr(1u << 20)), &dev};
  p.inner = inner;
  if (backward) p.dy = addr(2u << 20);
  return p;
}

template <class Params>
Params params_of(const kgen::VariantInfo* v) {
  return *static_cast<const Params*>(v->params);
}

// The heuristic's pick for a problem, which must support it; `what` names
// the problem in a failure's message.
template <class Params>
Params heuristic_pick(kgen::Family family, kgen_dtype_t d, const kgen::DeviceInfo& dev,
                      const kgen::softmax::Problem& prob, const std::string& what) {
  auto sel = kgen::select_variant(family, d, dev, &prob, &kgen::softmax::heuristic);
  REQUIRE(sel.variant != nullptr);
  INFO(sel.variant->name << " for " << what);
  CHECK(sel.variant->supports(*sel.variant, &prob));
  return params_of<Params>(sel.variant);
}

// A problem over a dim: its extents, dtype and x's offset in bytes.
struct DimShape {
  kgen_dtype_t d;
  int64_t outer, axis, inner;
  uintptr_t x_off;
};

std::string text_of(const DimShape& sh, bool bwd) {
  return std::to_string(sh.outer) + "x" + std::to_string(sh.axis) + "x" + std::to_string(sh.inner) + " +" +
         std::to_string(sh.x_off) + (bwd ? " backward" : "");
}

// The heuristic's pick for sh in either family (their params structs share
// one layout).
SoftmaxParams pick_dim(const DimShape& sh, bool bwd, const kgen::DeviceInfo& dev) {
  const kgen::softmax::Problem prob = dim_problem(sh.d, sh.outer, sh.axis, sh.inner, bwd, dev, sh.x_off);
  return heuristic_pick<SoftmaxParams>(bwd ? kgen::Family::softmax_backward : kgen::Family::softmax, sh.d, dev,
                                       prob, text_of(sh, bwd));
}

}  // namespace

TEST_CASE("forward rows of 2-4 a thread a row; of 5-6 where the tile does not fill the GPU",
          "[selection][default-set]") {
  // H200, bench/variants.py (bench/NOTES.md column v2)
  const kgen::DeviceInfo dev = h100();
  auto pick_row = [&](kgen_dtype_t d, int64_t rows, int64_t cols, uintptr_t off, bool bwd) {
    const kgen::softmax::Problem prob = dim_problem(d, rows, cols, 1, bwd, dev, off);
    return heuristic_pick<SoftmaxParams>(bwd ? kgen::Family::softmax_backward : kgen::Family::softmax, d, dev, prob,
                                         std::to_string(rows) + "x" + std::to_string(cols) + (bwd ? " backward" : ""));
  };
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    INFO(elem(d));
    for (int64_t cols : {2, 3, 4})
      for (int64_t rows : {int64_t{100}, int64_t{120000}, int64_t{3000000}})
        for (uintptr_t off : {uintptr_t{0}, uintptr_t(elem(d))}) {
          const SoftmaxParams q = pick_row(d, rows, cols, off, false);
          CHECK(q.tier == SoftmaxTier::column);
          CHECK(q.axis_per_thread == 4);  // the fewest slots past the row
        }
    // many rows: a thread's columns fill its block; few: one a thread
    CHECK(pick_row(d, 3000000, 3, 0, false).cols_per_thread == 8);
    CHECK(pick_row(d, 100, 3, 0, false).cols_per_thread == 1);
    // rows of 5-6: columns where the tile is short of its waves, the tile
    // where it fills them
    for (int64_t cols : {5, 6}) {
      CHECK(pick_row(d, 79133, cols, 0, false).tier == SoftmaxTier::column);
      CHECK(pick_row(d, 2000000, cols, 0, false).tier == SoftmaxTier::tile);
    }
    // rows of 1 and of 7 keep their tiers
    for (int64_t cols : {1, 7}) CHECK(pick_row(d, 79133, cols, 0, false).tier != SoftmaxTier::column);
    // the backward: the half types' rows of 2-3 (of 3 in tensors of up to
    // 16 MB; H100, bench/NOTES.md tile v5), not rows of 4 nor float32's
    for (int64_t rows : {int64_t{100}, int64_t{2000000}})
      for (uintptr_t off : {uintptr_t{0}, uintptr_t(elem(d))}) {
        for (int64_t cols : {2, 3}) {
          const SoftmaxParams q = pick_row(d, rows, cols, off, true);
          CHECK((q.tier == SoftmaxTier::column) == (elem(d) == 2));
          if (q.tier == SoftmaxTier::column) CHECK(q.axis_per_thread == 4);
        }
        CHECK(pick_row(d, rows, 4, off, true).tier != SoftmaxTier::column);
      }
    if (elem(d) == 2) CHECK(pick_row(d, 2000000, 3, 0, true).cols_per_thread == 4);
    for (uintptr_t off : {uintptr_t{0}, uintptr_t(elem(d))}) {
      CHECK(pick_row(d, 4000000, 3, off, true).tier != SoftmaxTier::column);
      CHECK((pick_row(d, 8000000, 2, off, true).tier == SoftmaxTier::column) == (elem(d) == 2));
    }
  }
}

TEST_CASE("backward rows no 16-byte pack covers: the tile, float32's past 16 values and the half types' spans past 20 "
          "in other tiers",
          "[selection][default-set]") {
  const kgen::DeviceInfo dev = h100();
  auto pick_bwd = [&](kgen_dtype_t d, int64_t rows, int64_t cols, uintptr_t dy_off) {
    kgen::softmax::Problem prob = dim_problem(d, rows, cols, 1, true, dev);
    prob.dy = addr((2u << 20) + dy_off);
    return heuristic_pick<SoftmaxBackwardParams>(
        kgen::Family::softmax_backward, d, dev, prob,
        std::to_string(rows) + "x" + std::to_string(cols) + " dy +" + std::to_string(dy_off));
  };
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    INFO(elem(d));
    const bool half = elem(d) == 2;
    // the tile for float32 rows of 9-16 and the half types' rows up to 20
    // (H100, bench/variants.py; bench/NOTES.md tile v5, warp v5)
    for (int64_t cols : {9, 17, 23, 31})
      CHECK((pick_bwd(d, 2000000, cols, 0).tier == SoftmaxBackwardTier::tile) == (half ? cols < 21 : cols <= 16));
    // float32 rows of 17-32: full warps, two rows an access where the rows
    // fill a wave of warps, one under it (warp v5)
    if (!half)
      for (int64_t cols : {17, 23, 31}) {
        const SoftmaxBackwardParams many = pick_bwd(d, 2000000, cols, 0), few = pick_bwd(d, 1000, cols, 0);
        CHECK((many.tier == SoftmaxBackwardTier::warp && many.group_width == 32 && many.rows_per_access == 2));
        CHECK((few.tier == SoftmaxBackwardTier::warp && few.group_width == 32 && few.rows_per_access == 1));
      }
    for (int64_t cols : {3, 7})
      CHECK((pick_bwd(d, 500000, cols, 0).tier == SoftmaxBackwardTier::tile) == (half && cols > 3));
    // in tensors past 16 MB the tile keeps float32's short rows
    CHECK(pick_bwd(d, 8000000, 5, 0).tier == SoftmaxBackwardTier::tile);
    // float32 rows of 33-64 and of 2-8: the warp tier; the half types'
    // rows from 21: spans of 4 lanes
    for (int64_t cols : {37, 41, 63}) {
      const SoftmaxBackwardParams q = pick_bwd(d, 2000000, cols, 0);
      CHECK(q.tier == (half ? SoftmaxBackwardTier::span : SoftmaxBackwardTier::warp));
      if (half) CHECK(q.group_width == 4);
    }
    // float32 keeps the warp tier (at copy speed there)
    for (int64_t cols : {77, 255, 511})
      CHECK((pick_bwd(d, 200000, cols, 0).tier == SoftmaxBackwardTier::span) == (elem(d) == 2));
    CHECK(pick_bwd(d, 200000, 77, elem(d)).tier != SoftmaxBackwardTier::span);
    // rows of 77 and 127 (9 and 15 body packs): 8 lanes x 3 packs, not 4 x 4
    if (elem(d) == 2)
      for (int64_t cols : {77, 127}) {
        const SoftmaxBackwardParams q = pick_bwd(d, 200000, cols, 0);
        CHECK((q.group_width == 8 && q.cols_per_thread == 3 * q.pack_size));
      }
  }
}

TEST_CASE("backward with dx apart from y: half-type spans and blocks, float32 as before", "[selection][default-set]") {
  // H200 and H100, y and dy one element in, dx fresh (bench/NOTES.md slice
  // v11): the half types' spans stage dx into its own packs (from rows of
  // 127) and their blocks shift y and dy across lanes; float32 keeps its
  // tiers
  const kgen::DeviceInfo dev = h100();
  auto pick_apart = [&](kgen_dtype_t d, int64_t rows, int64_t cols, bool apart) {
    const uintptr_t e = elem(d);
    kgen::softmax::Problem prob = dim_problem(d, rows, cols, 1, true, dev, e);
    prob.dy = addr((2u << 20) + e);
    prob.y = const_cast<void*>(addr((1u << 20) + (apart ? 0 : e)));
    return heuristic_pick<SoftmaxBackwardParams>(
        kgen::Family::softmax_backward, d, dev, prob,
        std::to_string(rows) + "x" + std::to_string(cols) + (apart ? " dx apart" : ""));
  };
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    INFO(elem(d));
    const bool half = elem(d) == 2;
    for (int64_t cols : {127, 333, 673, 1001}) {
      CHECK((pick_apart(d, 200000, cols, true).tier == SoftmaxBackwardTier::span) == half);
      CHECK(pick_apart(d, 200000, cols, true).tier == pick_apart(d, 200000, cols, false).tier);
    }
    // rows of 77: the warp tier (spans with dx apart 65-69% of copy, the
    // warp tier 75-76%, H200)
    CHECK(pick_apart(d, 2000000, 77, true).tier == SoftmaxBackwardTier::warp);
    // rows of 21-64: the half types' spans of 4 lanes, dx apart or not
    // (H100, bench/NOTES.md tile v5); float32 rows the warp tier (of 33-64
    // since tile v5, of 17-32 since warp v5)
    for (int64_t cols : {23, 31, 52}) {
      const SoftmaxBackwardParams q = pick_apart(d, 1000000, cols, true);
      const SoftmaxBackwardTier want = half ? SoftmaxBackwardTier::span : SoftmaxBackwardTier::warp;
      CHECK(q.tier == want);
      CHECK(pick_apart(d, 1000000, cols, false).tier == q.tier);
      if (half) CHECK(q.group_width == 4);
    }
    // rows of 4-8 with dx apart: the warp tier; congruent half-type rows
    // of 5 the tile
    for (int64_t cols : {4, 7}) CHECK(pick_apart(d, 500000, cols, true).tier == SoftmaxBackwardTier::warp);
    CHECK((pick_apart(d, 500000, 5, false).tier == SoftmaxBackwardTier::tile) == half);
    for (int64_t cols : {2048, 8192})
      CHECK(pick_apart(d, 20000, cols, true).tier == SoftmaxBackwardTier::block);
    // odd rows past the clusters: the split, dx apart too (its shifted
    // stores, split v6)
    for (bool apart : {true, false}) CHECK(pick_apart(d, 200, 1000003, apart).tier == SoftmaxBackwardTier::split);
  }
}

TEST_CASE("short-axis slabs: a thread a column up to an axis of 16, the tile past it over an odd inner",
          "[selection][default-set]") {
  // H100, kgen-bench softmax_dim (bench/NOTES.md tile v2); H200 (column v1)
  const kgen::DeviceInfo dev = h100();
  auto pick_slab = [&](kgen_dtype_t d, int64_t outer, int64_t axis, int64_t inner, bool bwd) {
    kgen::softmax::Problem prob = dim_problem(d, outer, axis, inner, bwd, dev);
    const kgen::Family family = bwd ? kgen::Family::softmax_backward : kgen::Family::softmax;
    auto sel = kgen::select_variant(family, d, dev, &prob, &kgen::softmax::heuristic);
    REQUIRE(sel.variant != nullptr);
    INFO(sel.variant->name << " for " << outer << "x" << axis << "x" << inner << (bwd ? " backward" : ""));
    CHECK(sel.variant->supports(*sel.variant, &prob));
    const auto p = params_of<SoftmaxParams>(sel.variant);
    return std::make_pair(p, kgen::softmax::tile_shape(prob, int64_t{p.block_size} * p.cols_per_thread, elem(d)));
  };
  // forward rows in the tile up to 48 values (float32) and 40 (half
  // types) but from 13 (float32) and 33 (half types) on, where the span
  // tier leads (bench/NOTES.md tile v4, span v1); the backward's float32
  // rows of 9-16 (9-32 in tile v5, past 16 the warp tier since warp v5)
  // and half-type rows of 4-20 (tile v5)
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    INFO(elem(d));
    const bool half = elem(d) == 2;
    for (int64_t cols : {int64_t{7}, half ? int64_t{27} : int64_t{11}})
      CHECK(pick_slab(d, 2000000, cols, 1, false).first.tier == SoftmaxTier::tile);
    for (int64_t cols : {int64_t{33}, half ? int64_t{39} : int64_t{47}})
      CHECK(pick_slab(d, 2000000, cols, 1, false).first.tier == SoftmaxTier::span);
    for (int64_t cols : {11, 19})
      CHECK((pick_slab(d, 2000000, cols, 1, true).first.tier == SoftmaxTier::tile) == (half || cols <= 16));
    for (int64_t cols : {41, 65}) CHECK(pick_slab(d, 2000000, cols, 1, true).first.tier != SoftmaxTier::tile);
  }
  for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}) {
    INFO(elem(d));
    for (bool bwd : {false, true}) {
      // an axis of at most 16, odd inner or aligned: a thread a column,
      // both directions, at the widest pack inner takes (bench/NOTES.md
      // column v1); 8-byte packs for the half types' (3, 860)
      for (auto [outer, axis, inner] : {std::tuple<int64_t, int64_t, int64_t>{8192, 3, 281}, {16320, 3, 860},
                                        {16, 5, 838861}}) {
        const SoftmaxParams q = pick_slab(d, outer, axis, inner, bwd).first;
        CHECK(q.tier == SoftmaxTier::column);
        CHECK(q.pack_size == (inner == 860 ? 4 : 1));
        CHECK(axis <= q.axis_per_thread);
      }
      // a longer axis over a short odd inner: whole slabs in the tile
      CHECK(pick_slab(d, 100000, 20, 7, bwd).first.tier == SoftmaxTier::tile);
      // an inner extent of under 16 bytes: a warp's column loads would
      // scatter over 32 outer positions
      CHECK(pick_slab(d, 34304, 9, 2, bwd).first.tier != SoftmaxTier::column);
      // a short inner extent that a wider pack than the column variants'
      // divides keeps that pack (the half types' 16-byte packs over an axis of 5)
      if (elem(d) == 2) CHECK(pick_slab(d, 11509, 5, 16, bwd).first.tier != SoftmaxTier::column);
    }
  }
}

TEST_CASE("a dim that is not the last goes to the strided tiers of both families", "[selection][default-set]") {
  kgen::DeviceInfo dev = h100();
  for (bool bwd : {false, true}) {
    const kgen::Family family = bwd ? kgen::Family::softmax_backward : kgen::Family::softmax;
    for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_FLOAT64}) {
      // (64, 1024, 64 * 64): the register tile reaches 1024 along the axis
      kgen::softmax::Problem fits = dim_problem(d, 64, 1024, 4096, bwd, dev);
      auto sel = kgen::select_variant(family, d, dev, &fits, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      INFO(sel.variant->name);
      const auto p = params_of<SoftmaxParams>(sel.variant);  // same layout in both families
      // every dtype's default register tiles reach 1024 in both directions,
      // in packs of 8 bytes or more
      CHECK(p.tier == SoftmaxTier::strided);
      CHECK(p.pack_size * elem(d) >= 8);
      CHECK(p.col_lanes * p.pack_size * elem(d) >= 32);
      // an axis past every register tile: the two-pass kernel
      kgen::softmax::Problem long_axis = dim_problem(d, 64, 100000, 64, bwd, dev);
      sel = kgen::select_variant(family, d, dev, &long_axis, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      CHECK(params_of<SoftmaxParams>(sel.variant).tier == SoftmaxTier::strided_uncached);
      // ... over so few columns that the strided tiers leave most SMs idle:
      // the split tier
      kgen::softmax::Problem few = dim_problem(d, 2, 100000, 64, bwd, dev);
      sel = kgen::select_variant(family, d, dev, &few, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      CHECK(params_of<SoftmaxParams>(sel.variant).tier == SoftmaxTier::split);
      // an odd inner: pack 1 only, whatever tier
      kgen::softmax::Problem odd = dim_problem(d, 3, 100, 7, bwd, dev);
      sel = kgen::select_variant(family, d, dev, &odd, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      CHECK(params_of<SoftmaxParams>(sel.variant).pack_size == 1);
      CHECK(sel.variant->supports(*sel.variant, &odd));
      // the last dim never goes to a strided tier
      kgen::softmax::Problem rows = dim_problem(d, 1000, 4096, 1, bwd, dev);
      sel = kgen::select_variant(family, d, dev, &rows, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      const auto t = params_of<SoftmaxParams>(sel.variant).tier;
      CHECK((t != SoftmaxTier::strided && t != SoftmaxTier::strided_uncached));
    }
  }
}

TEST_CASE("a long axis over an inner of under 32 bytes goes to the split, never a two-pass column plan",
          "[selection][default-set]") {
  // H100, bench/variants.py (bench/NOTES.md tile v5): (117, 6421, 3)
  // bfloat16 172 us in strided_uncached and 404 (backward) in the generic
  // variant, 23-25 in the split; (381, 56556, 2) 2929 and 6604 against
  // 150-201
  kgen::DeviceInfo dev = h100();
  const DimShape shapes[] = {{KGEN_BFLOAT16, 117, 6421, 3, 0}, {KGEN_BFLOAT16, 381, 56556, 2, 2},
                             {KGEN_FLOAT16, 50, 20000, 5, 2},  {KGEN_FLOAT32, 50, 20000, 5, 0},
                             {KGEN_FLOAT16, 4000, 30000, 8, 0}, {KGEN_FLOAT32, 127, 100000, 7, 4}};
  for (bool bwd : {false, true}) {
    for (const DimShape& sh : shapes) {
      INFO(text_of(sh, bwd));
      CHECK(pick_dim(sh, bwd, dev).tier == SoftmaxTier::split);
    }
    // an inner of 32 bytes keeps its tiers (the two-pass plan's 16 lanes
    // span a sector of each outer position)
    CHECK(pick_dim({KGEN_FLOAT16, 4000, 30000, 16, 0}, bwd, dev).tier != SoftmaxTier::split);
  }
}

TEST_CASE("float32 strided tiles take warp segments of 64 bytes or more", "[selection][default-set]") {
  // kgen-tune sweeps, default variants: (1024, 128, 196) in 2 lanes x 4
  // values (32 bytes) 1.8x the time of 16 lanes; the half types keep 32
  kgen::DeviceInfo dev = h100();
  for (bool bwd : {false, true}) {
    const kgen::Family family = bwd ? kgen::Family::softmax_backward : kgen::Family::softmax;
    for (auto [outer, axis, inner] : {std::tuple<int64_t, int64_t, int64_t>{1024, 128, 196}, {64, 1024, 4096},
                                      {128, 256, 1024}}) {
      kgen::softmax::Problem prob = dim_problem(KGEN_FLOAT32, outer, axis, inner, bwd, dev);
      auto sel = kgen::select_variant(family, KGEN_FLOAT32, dev, &prob, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      INFO(sel.variant->name);
      const auto p = params_of<SoftmaxParams>(sel.variant);
      CHECK(p.tier == SoftmaxTier::strided);
      CHECK(p.col_lanes * p.pack_size * 4 >= 64);
    }
  }
}

TEST_CASE("the backward's 32-lane pack-1 strided tile reaches an axis of 256", "[selection][default-set]") {
  // H200, bench/variants.py: bfloat16 (1, 256, 254950) backward in 8 lanes
  // x 32 values 404.8 us (0.51x torch), in 32 lanes x 16 values 254.4
  kgen::DeviceInfo dev = h100();
  for (kgen_dtype_t d : {KGEN_BFLOAT16, KGEN_FLOAT16}) {
    const SoftmaxParams p = pick_dim({d, 1, 256, 254950, 0}, true, dev);
    CHECK(p.tier == SoftmaxTier::strided);
    CHECK(p.col_lanes * p.pack_size == 32);
  }
}

TEST_CASE("a short axis over a wide inner takes a warp across 32 columns or the generic variant",
          "[selection][default-set]") {
  kgen::DeviceInfo dev = h100();
  // the sweep's worst pack-1 problems (odd inner, or one element into the
  // storage) and aligned ones of the same layout
  const DimShape shapes[] = {{KGEN_FLOAT16, 8192, 3, 281, 0},   {KGEN_BFLOAT16, 16320, 3, 860, 2},
                             {KGEN_FLOAT16, 8, 5, 530302, 0},   {KGEN_FLOAT16, 9, 11, 17647, 0},
                             {KGEN_FLOAT32, 64, 7, 4096, 0},    {KGEN_FLOAT16, 64, 7, 4096, 0},
                             {KGEN_FLOAT32, 1000, 2, 1001, 4}, {KGEN_BFLOAT16, 32, 31, 65536, 0}};
  for (bool bwd : {false, true}) {
    for (const DimShape& sh : shapes) {
      INFO(text_of(sh, bwd));
      const SoftmaxParams p = pick_dim(sh, bwd, dev);
      // a short axis over an odd inner: the tile tier (whole slabs or
      // segments along inner), full-width accesses
      if (p.tier == SoftmaxTier::tile)
        CHECK(sh.axis * (kgen::softmax::kTileMinSegmentPacks + 1) * 16 / elem(sh.d) <=
              int64_t{p.block_size} * p.cols_per_thread + 16 / elem(sh.d));
      else if (p.tier == SoftmaxTier::strided || p.tier == SoftmaxTier::strided_uncached)
        CHECK(p.col_lanes * p.pack_size >= 32);
      else if (p.tier == SoftmaxTier::column)  // a thread a column, the whole axis
        CHECK(sh.axis <= p.axis_per_thread);
      else
        CHECK(p.tier == SoftmaxTier::generic);
    }
  }
}

TEST_CASE("strided supports(): inner packs, alignment, the tile's axis reach, no mask", "[selection]") {
  kgen::DeviceInfo dev = h100();
  kgen::softmax::Mask mask{};
  for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::softmax, KGEN_FLOAT32)) {
    const auto p = params_of<SoftmaxParams>(v);
    INFO(v->name);
    const bool strided = p.tier == SoftmaxTier::strided || p.tier == SoftmaxTier::strided_uncached ||
                         p.tier == SoftmaxTier::column;
    for (int64_t inner : {1, 2, 3, 8, 4096})
      for (int64_t axis : {1, 3, 16, 100, 1024, 5000}) {
        kgen::softmax::Problem prob = dim_problem(KGEN_FLOAT32, 5, axis, inner, false, dev);
        bool expected;
        if (p.tier == SoftmaxTier::generic) {
          expected = true;
        } else if (p.tier == SoftmaxTier::tile) {
          // whole (axis x inner) slabs that fit the tile, or longer ones cut
          // along inner into segments of at least kTileMinSegmentPacks packs
          const int64_t cap = int64_t{p.block_size} * p.cols_per_thread, pk = 4;
          expected = axis * inner <= cap ||
                     (inner > 1 && axis * (kgen::softmax::kTileMinSegmentPacks + 1) * pk <= cap + pk);
        } else if (p.tier == SoftmaxTier::split) {
          // the last dim, or an inner of at most a quarter of the block
          expected = inner == 1 || inner * 4 <= p.block_size;
        } else if (!strided) {
          expected = inner == 1 && v->supports(*v, &prob);  // row tiers: the last dim only
          if (inner != 1) CHECK_FALSE(v->supports(*v, &prob));
          continue;
        } else {
          expected = inner % p.pack_size == 0;
          if (p.tier == SoftmaxTier::strided)
            expected = expected && axis <= kgen::softmax::strided_reach(p.col_lanes, p.axis_per_thread, false);
          if (p.tier == SoftmaxTier::column) expected = expected && axis <= p.axis_per_thread;
        }
        CHECK(v->supports(*v, &prob) == expected);
        kgen::softmax::Problem masked = prob;
        masked.mask = &mask;
        if (strided) CHECK_FALSE(v->supports(*v, &masked));
        kgen::softmax::Problem shifted = prob;
        shifted.x = addr(4);
        if (strided) CHECK(v->supports(*v, &shifted) == (expected && p.pack_size == 1));
      }
  }
}

TEST_CASE("backward rows keep y and dy in shared memory: half the reach of the forward", "[selection][default-set]") {
  kgen::DeviceInfo dev = no_clusters();
  // 40000 float32: 160 KB, one copy fits a block's shared memory, two do
  // not (past a block's registers; no clusters on this device)
  kgen::softmax::Problem fwd = dim_problem(KGEN_FLOAT32, 200, 40000, 1, false, dev);
  kgen::softmax::Problem bwd = dim_problem(KGEN_FLOAT32, 200, 40000, 1, true, dev);
  auto f = kgen::select_variant(kgen::Family::softmax, KGEN_FLOAT32, dev, &fwd, &kgen::softmax::heuristic);
  auto b = kgen::select_variant(kgen::Family::softmax_backward, KGEN_FLOAT32, dev, &bwd, &kgen::softmax::heuristic);
  REQUIRE(f.variant != nullptr);
  REQUIRE(b.variant != nullptr);
  CHECK(params_of<SoftmaxParams>(f.variant).tier == SoftmaxTier::smem);
  CHECK(params_of<SoftmaxParams>(b.variant).tier == SoftmaxTier::uncached);
  CHECK(std::string(b.variant->name).rfind("softmax_backward_", 0) == 0);
  // 12000 float32: both fit (past the backward's blocks of 512 x 16 values)
  kgen::softmax::Problem bwd8k = dim_problem(KGEN_FLOAT32, 200, 12000, 1, true, dev);
  b = kgen::select_variant(kgen::Family::softmax_backward, KGEN_FLOAT32, dev, &bwd8k, &kgen::softmax::heuristic);
  REQUIRE(b.variant != nullptr);
  CHECK(params_of<SoftmaxParams>(b.variant).tier == SoftmaxTier::smem);
}

TEST_CASE("masked rows: row tiers only, the mask's alignment narrows the pack", "[selection][default-set]") {
  kgen::DeviceInfo dev = h100();
  for (kgen_mask_kind_t kind : {KGEN_MASK_BOOL, KGEN_MASK_ADDITIVE}) {
    kgen::softmax::Mask mask{kind, addr(3u << 20), 0.5, 4, 1024, 0, 0, 1024, false, true};
    kgen::softmax::Problem prob = dim_problem(KGEN_FLOAT16, 4096, 1024, 1, false, dev);
    prob.mask = &mask;
    auto sel = kgen::select_variant(kgen::Family::softmax, KGEN_FLOAT16, dev, &prob, &kgen::softmax::heuristic);
    REQUIRE(sel.variant != nullptr);
    CHECK(params_of<SoftmaxParams>(sel.variant).tier == SoftmaxTier::warp);
    CHECK(params_of<SoftmaxParams>(sel.variant).pack_size == 8);
    mask.data = addr((3u << 20) + 2);  // bool: 2-byte aligned; additive: one float16 off
    sel = kgen::select_variant(kgen::Family::softmax, KGEN_FLOAT16, dev, &prob, &kgen::softmax::heuristic);
    REQUIRE(sel.variant != nullptr);
    INFO(sel.variant->name);
    CHECK(params_of<SoftmaxParams>(sel.variant).pack_size <= (kind == KGEN_MASK_BOOL ? 2 : 1));
    // the row still fits registers: pack 1 keeps it in the warp tier
    CHECK(params_of<SoftmaxParams>(sel.variant).tier == SoftmaxTier::warp);
  }
}

TEST_CASE("backward rows: in blocks then clusters, the half types' log mode past 65536 uncached",
          "[selection][default-set]") {
  kgen::DeviceInfo dev = h100();
  auto tier_of = [&](kgen_dtype_t d, int64_t rows, int64_t cols) {
    kgen::softmax::Problem p = dim_problem(d, rows, cols, 1, true, dev);
    auto sel = kgen::select_variant(kgen::Family::softmax_backward, d, dev, &p, &kgen::softmax::heuristic);
    REQUIRE(sel.variant != nullptr);
    return params_of<SoftmaxParams>(sel.variant).tier;
  };
  CHECK(tier_of(KGEN_FLOAT32, 4096, 4096) == SoftmaxTier::block);
  CHECK(tier_of(KGEN_FLOAT32, 2048, 32768) == SoftmaxTier::cluster);
  CHECK(tier_of(KGEN_FLOAT32, 512, 131072) == SoftmaxTier::cluster);
  CHECK(tier_of(KGEN_BFLOAT16, 4096, 4096) == SoftmaxTier::block);
  // half-type rows of 16384 in clusters, not one block of 1024 x 16 values
  // (--variants, H200 / H100: clusters 98-102% / 101.8-102% of copy, the
  // block 93-95% / 101.2-101.5%; bench/NOTES.md slice v7)
  CHECK(tier_of(KGEN_FLOAT16, 8192, 16384) == SoftmaxTier::cluster);
  CHECK(tier_of(KGEN_BFLOAT16, 8192, 16384) == SoftmaxTier::cluster);
  // half-type clusters of 256 threads: float16 32768 88 / 95% of copy on an
  // H100 against 80 / 75% in the smem tier, 79 / 87% on an H200 against 64
  // / 60% (plain / log)
  for (kgen_dtype_t d : {KGEN_FLOAT16, KGEN_BFLOAT16})
    for (bool log : {false, true}) {
      kgen::softmax::Problem p = dim_problem(d, 4096, 32768, 1, true, dev);
      p.log = log;
      auto sel = kgen::select_variant(kgen::Family::softmax_backward, d, dev, &p, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      CHECK(params_of<SoftmaxParams>(sel.variant).tier == SoftmaxTier::cluster);
      CHECK(params_of<SoftmaxParams>(sel.variant).block_size == 256);
      // past 65536 the log mode's uncached first pass reads dy alone (H200:
      // 131072 75% of copy uncached, 65% in clusters of 16 x 512)
      p.cols = 131072;
      sel = kgen::select_variant(kgen::Family::softmax_backward, d, dev, &p, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      CHECK((params_of<SoftmaxParams>(sel.variant).tier == SoftmaxTier::cluster) == !log);
      // an odd row in the log mode: the split's 16-byte packs, not the
      // uncached tier's single elements (H200: 3x61x2x79595 bfloat16 68.5 us
      // against 106.7)
      p.cols = 131073;
      sel = kgen::select_variant(kgen::Family::softmax_backward, d, dev, &p, &kgen::softmax::heuristic);
      REQUIRE(sel.variant != nullptr);
      CHECK(params_of<SoftmaxParams>(sel.variant).tier == (log ? SoftmaxTier::split : SoftmaxTier::cluster));
    }
  // unless the rows leave most SMs idle (one float16 row of 340885 forward:
  // 11 us in a cluster, 97 us a block a row; H100 sweep)
  CHECK(pick(KGEN_FLOAT16, 1, 340885, 0, 0, h100(), true).p.tier == SoftmaxTier::cluster);
}

TEST_CASE("forward clusters: the half types' log_softmax too, blocks of 256 threads first",
          "[selection][default-set]") {
  // float16 and bfloat16 log_softmax of 32768-262144 in clusters 77-89% of
  // copy, 64-80% in the smem and uncached tiers; among clusters, blocks of
  // 256 threads (H100, bench/NOTES.md slice v2)
  for (kgen_dtype_t d : {KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT32})
    for (int64_t cols : {50257, 131072, 262144}) {
      if (d != KGEN_FLOAT32 && cols < 65536) continue;  // a block's (below)
      if (d == KGEN_FLOAT32 && cols > 131072) continue;  // past 16 x 256 x 32 values
      for (bool log : {false, true}) {
        Picked s = pick(d, 1000, cols, 0, 0, h100(), log);
        INFO(s.v->name << " cols " << cols << " log " << log);
        CHECK(s.p.tier == SoftmaxTier::cluster);
        CHECK(s.p.block_size == 256);
      }
    }
}

TEST_CASE("forward rows one block holds go to the block before a cluster", "[selection][default-set]") {
  // Blocks of at most 512 threads with every pack in registers (half types
  // of 32768 in 512 x 64 values 95-98% of copy, H200 and H100), or with
  // packs in shared memory under 7/8 full (50257 in 512 x 128 values: H200
  // 90-93%, clusters 84-88%); not a block of 1024 threads nor a fuller one
  // with packs in shared memory, which clusters beat once their partials are
  // pushed (bench/NOTES.md slice v7, --variants H200 / H100: float32 32768
  // in 1024 x 32 values 94.7-95.1% / 97.5-98.2%, clusters 96.3-97.4% /
  // 99.8-99.9%; half-type 65536 in 512 x 128 values 89-92% / 95-96%,
  // clusters 94-98% / 97-99%)
  for (bool log : {false, true}) {
    Picked f = pick(KGEN_FLOAT32, 1000, 32768, 0, 0, h100(), log);
    CHECK(f.p.tier == SoftmaxTier::cluster);
    CHECK(pick(KGEN_FLOAT32, 1000, 16384, 0, 0, h100(), log).p.tier == SoftmaxTier::block);
    CHECK(pick(KGEN_FLOAT32, 1000, 65536, 0, 0, h100(), log).p.tier == SoftmaxTier::cluster);
    for (kgen_dtype_t d : {KGEN_FLOAT16, KGEN_BFLOAT16}) {
      for (int64_t cols : {int64_t{32768}, int64_t{50257}, int64_t{65536}}) {
        Picked h = pick(d, 1000, cols, 0, 0, h100(), log);
        INFO(h.v->name << " cols " << cols);
        CHECK(h.p.tier == (cols < 65536 ? SoftmaxTier::block : SoftmaxTier::cluster));
        if (cols < 65536) CHECK(h.p.block_size == 512);
        CHECK(h.p.cols_per_thread == (cols == 50257 ? 128 : 64));
      }
      CHECK(pick(d, 1000, 60000, 0, 0, h100(), log).p.tier == SoftmaxTier::cluster);  // 7/8 full or more
      // too few rows for a CTA an SM: clusters
      CHECK(pick(d, 64, 65536, 0, 0, h100(), log).p.tier == SoftmaxTier::cluster);
    }
    // a row or two past 32 KB: a cluster's CTAs read it in parallel (one
    // float32 row of 19439: 7.5 us in a block of 1024, 5.2 in a cluster of
    // 4; float16 28221: 6.5 us in a block of 512, 5.8 in a cluster of 2;
    // H200 sweep); under it one block (bfloat16 12277: 5.2 us against 6.0)
    for (int64_t rows : {1, 2}) {
      Picked a = pick(KGEN_FLOAT32, rows, 19439, 0, 0, h100(), log);
      Picked b = pick(KGEN_FLOAT16, rows, 28221, 0, 0, h100(), log);
      Picked c = pick(KGEN_BFLOAT16, rows, 12277, 0, 0, h100(), log);
      INFO(a.v->name << " " << b.v->name << " " << c.v->name);
      CHECK(a.p.cluster_size >= 4);
      CHECK(b.p.cluster_size >= 2);
      CHECK(c.p.tier == SoftmaxTier::block);
    }
  }
}

TEST_CASE("half-type forward rows that fill a block of 32 values a thread under 5/8 take 64 in half the threads",
          "[selection][default-set]") {
  // kgen-tune sweeps (H200 and H100): rows of 4600 in 128 x 64 values
  // 0.84-0.92x the time of 256 x 32; rows of 9500 in 256 x 64 0.79-0.91x
  // of 512 x 32; full rows (4096, 8192) within 2% either way
  for (bool log : {false, true}) {
    for (kgen_dtype_t d : {KGEN_FLOAT16, KGEN_BFLOAT16}) {
      for (auto [cols, block] : {std::pair<int64_t, int>{4600, 128}, {5000, 128}, {9500, 256}}) {
        Picked h = pick(d, 7000, cols, 0, 0, h100(), log);
        INFO(h.v->name << " cols " << cols);
        CHECK(h.p.tier == SoftmaxTier::block);
        CHECK(h.p.cols_per_thread == 64);
        CHECK(h.p.block_size == block);
      }
      for (int64_t cols : {int64_t{4096}, int64_t{6144}, int64_t{8192}}) {
        Picked h = pick(d, 7000, cols, 0, 0, h100(), log);
        INFO(h.v->name << " cols " << cols);
        CHECK(h.p.tier == SoftmaxTier::block);
        CHECK(h.p.cols_per_thread == 32);
      }
    }
    // few rows keep the threads (H100 sweep: 254 bfloat16 rows of 10025
    // 7.8 us at 32, 8.0 at 64; one float16 row of 8829 4.9 against 5.2)
    CHECK(pick(KGEN_BFLOAT16, 254, 10025, 0, 0, h100(), log).p.cols_per_thread == 32);
    CHECK(pick(KGEN_FLOAT16, 1, 8829, 0, 0, h100(), log).p.cols_per_thread != 64);
    // float32 stays at 32 (rows of 4600: 1.00-1.13x the time at 64)
    CHECK(pick(KGEN_FLOAT32, 7000, 4600, 0, 0, h100(), log).p.cols_per_thread == 32);
  }
}

TEST_CASE("rows a warp variant could hold go to a block below the smem tier unless y lies apart",
          "[selection][default-set]") {
  // a float16 row of 2048 one element into its storage: no pack-8 warp
  // variant.  x and y alike off 16 bytes: the smem tier (not measured since
  // the block stored y an element at a time when y lay apart)
  Picked same = pick(KGEN_FLOAT16, 5039, 2048, 2, 2);
  INFO(same.v->name);
  CHECK(same.p.tier != SoftmaxTier::block);
  // y fresh: the block's shifted packs, 64 x 32 values (17.5 / 18.1 us
  // against 19.4 / 21.4 in smem, H200 / H100)
  Picked apart = pick(KGEN_FLOAT16, 5039, 2048, 2, 0);
  INFO(apart.v->name);
  CHECK(apart.p.tier == SoftmaxTier::block);
  CHECK(apart.p.block_size == 64);
  // float32's even rows keep the warp tier (53x23x620 log_softmax one
  // element in: 5.5 us in a block of 64, 5.2 in the warp tier at pack 1)
  Picked f32 = pick(KGEN_FLOAT32, 53 * 23, 620, 4, 0, h100(), true);
  INFO(f32.v->name);
  CHECK(f32.p.tier == SoftmaxTier::warp);
}

TEST_CASE("rows whose y is off x's 16-byte alignment keep the block and cluster tiers", "[selection][default-set]") {
  // x one element into its storage, y fresh (bench/NOTES.md slice v10):
  // float32 y an element at a time, the half types' in shifted packs;
  // 1216x11027 float32 log_softmax 36.6 / 42.7 us in a block against 37.1
  // / 46.0 in smem (H200 / H100), 4000x4096 bfloat16 23.7 / 27.0 against
  // 29.0 / 31.6
  for (bool log : {false, true}) {
    for (int64_t cols : {int64_t{4096}, int64_t{11027}}) {
      for (kgen_dtype_t d : {KGEN_FLOAT32, KGEN_BFLOAT16}) {
        const int64_t rows = cols == 4096 ? 4000 : 1216;
        Picked off = pick(d, rows, cols, elem(d), 0, h100(), log);
        Picked same = pick(d, rows, cols, elem(d), elem(d), h100(), log);
        INFO(off.v->name << " " << same.v->name << " cols " << cols << " log " << log);
        CHECK((off.p.tier == SoftmaxTier::block || off.p.tier == SoftmaxTier::cluster));
        CHECK((same.p.tier == SoftmaxTier::block || same.p.tier == SoftmaxTier::cluster));
      }
    }
  }
}

TEST_CASE("the selection cache gives what selection gives, problem after problem", "[selection][cache]") {
  // random problems of few distinct classes, so that the per-thread cache
  // both hits and evicts: every answer must equal a fresh selection's
  std::mt19937_64 g(7);
  auto pick_of = [&](std::initializer_list<int64_t> xs) {
    std::vector<int64_t> v(xs);
    return v[g() % v.size()];
  };
  const kgen::DeviceInfo devices[2] = {h100(), no_clusters()};
  kgen::softmax::Mask mask{KGEN_MASK_BOOL, nullptr, 0.5, 4, 64, 0, 0, 64, false, false};
  int hits_checked = 0;
  for (int i = 0; i < 4000; ++i) {
    const kgen::DeviceInfo& dev = devices[g() % 2];
    const kgen_dtype_t d = static_cast<kgen_dtype_t>(pick_of({KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16}));
    const bool bwd = g() % 4 == 0, masked = !bwd && g() % 4 == 0;
    kgen::softmax::Problem p = dim_problem(d, pick_of({1, 3, 64, 1000}), pick_of({7, 64, 1000, 4096, 32768, 50257}),
                                           masked ? 1 : pick_of({1, 1, 3, 64}), bwd, dev, 2 * (g() % 3));
    p.log = g() % 2;
    p.y = const_cast<void*>(addr((1u << 20) + 2 * (g() % 3)));
    if (masked) {
      mask.data = addr((3u << 20) + 2 * (g() % 2));
      mask.kind = g() % 2 ? KGEN_MASK_BOOL : KGEN_MASK_ADDITIVE;
      mask.queries = p.rows;
      mask.query_stride = p.cols;
      p.mask = &mask;
    }
    const kgen::Family f = bwd ? kgen::Family::softmax_backward : kgen::Family::softmax;
    const auto fresh = kgen::select_variant(f, d, dev, &p, &kgen::softmax::heuristic);
    const auto cached = kgen::select_cached(f, d, dev, &p, &kgen::softmax::heuristic, &kgen::softmax::selection_key);
    const auto again = kgen::select_cached(f, d, dev, &p, &kgen::softmax::heuristic, &kgen::softmax::selection_key);
    INFO("problem " << i << ": " << (fresh.variant ? fresh.variant->name : "none"));
    CHECK(cached.variant == fresh.variant);
    CHECK(again.variant == fresh.variant);
    hits_checked += again.variant != nullptr;
  }
  CHECK(hits_checked > 3000);
}
