// Reduce family without a GPU: argument validation through the C API, and
// capability, selection and launch plans on a described device.  Written
// against properties (tier, pack width, splits), not names, so it holds at
// every build level.
#include <random>
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "dtype.hpp"
#include "kgen/kgen.h"
#include "kgen_params.gen.hpp"
#include "reduce/problem.hpp"
#include "registry.hpp"
#include "select.hpp"

using kgen::gen::ReduceParams;
using kgen::gen::ReduceTier;

namespace {

void expect_error(kgen_status_t got, kgen_status_t want, const std::string& name) {
  CHECK(got == want);
  CHECK(std::string(kgen_last_error()).rfind(name, 0) == 0);  // the message starts with the name
}

struct Buffers {
  std::vector<float> x = std::vector<float>(64, 1.5f);
  std::vector<int64_t> out = std::vector<int64_t>(16, -7);  // poison: must survive every failure
  bool untouched() const {
    for (int64_t v : out)
      if (v != -7) return false;
    return true;
  }
};

const void* addr(uintptr_t offset_bytes) {
  return reinterpret_cast<const void*>(uintptr_t{1} << 32 | offset_bytes);
}

struct Picked {
  const kgen::VariantInfo* v;
  ReduceParams p;
  kgen::reduce::Plan plan;
};

Picked pick(kgen_dtype_t d, int64_t outer, int64_t reduce, int64_t inner,
            kgen_reduce_op_t op = KGEN_REDUCE_SUM, uintptr_t x_off = 0) {
  static const kgen::DeviceInfo dev;  // defaults describe an H100 SXM
  kgen::reduce::Problem p{op, d, outer, reduce, inner, addr(x_off), const_cast<void*>(addr(1u << 30)),
                          nullptr, 0, &dev};
  auto sel = kgen::select_variant(kgen::Family::reduce, d, dev, &p, &kgen::reduce::heuristic);
  REQUIRE(sel.variant != nullptr);
  REQUIRE(sel.variant->supports(*sel.variant, &p));
  return {sel.variant, *static_cast<const ReduceParams*>(sel.variant->params), kgen::reduce::plan_for(*sel.variant, p)};
}

int elem(kgen_dtype_t d) { return d == KGEN_FLOAT64 ? 8 : d == KGEN_FLOAT16 || d == KGEN_BFLOAT16 ? 2 : 4; }

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64, KGEN_INT32};

}  // namespace

TEST_CASE("reduce rejects bad arguments, naming them and writing nothing", "[reduce][validation]") {
  Buffers b;
  float* x = b.x.data();
  int64_t* out = b.out.data();
  expect_error(kgen_reduce(static_cast<kgen_reduce_op_t>(9), KGEN_FLOAT32, 2, 4, 1, x, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "op:");
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, static_cast<kgen_dtype_t>(11), 2, 4, 1, x, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "dtype:");
  expect_error(kgen_reduce(KGEN_REDUCE_MEAN, KGEN_INT32, 2, 4, 1, x, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "dtype:");
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, -1, 4, 1, x, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "outer:");
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, -4, 1, x, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "reduce:");
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, 4, -1, x, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "inner:");
  for (kgen_reduce_op_t op : {KGEN_REDUCE_MAX, KGEN_REDUCE_MIN, KGEN_REDUCE_ARGMAX, KGEN_REDUCE_ARGMIN})
    expect_error(kgen_reduce(op, KGEN_FLOAT32, 2, 0, 3, x, out, nullptr), KGEN_ERROR_INVALID_ARGUMENT,
                 "reduce:");
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, 4, 1, nullptr, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "x:");
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, 4, 1, x, nullptr, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "out:");
  // int64 indices need 8-byte alignment
  expect_error(kgen_reduce(KGEN_REDUCE_ARGMAX, KGEN_FLOAT32, 2, 4, 1, x,
                           reinterpret_cast<char*>(out) + 4, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "out:");
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT16, 2, 4, 1, reinterpret_cast<char*>(x) + 1, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "x:");
  // out inside x
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, 16, 1, x, x + 8, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "out:");
  expect_error(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, int64_t{1} << 40, int64_t{1} << 30, 1, x, out, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "outer x reduce");
  expect_error(kgen_reduce_variant("softmax_generic_f32", KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, 4, 1, x, out,
                                   nullptr, 0, nullptr),
               KGEN_ERROR_UNSUPPORTED, "variant:");
  expect_error(kgen_reduce_variant("reduce_generic_f16", KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, 4, 1, x, out,
                                   nullptr, 0, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "variant:");
  const char* name = nullptr;
  expect_error(kgen_reduce_selected(KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, 4, 1, x, out, &name, nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "workspace_bytes:");
  CHECK(b.untouched());
  // no outputs: a no-op before any pointer is looked at
  CHECK(kgen_reduce(KGEN_REDUCE_MAX, KGEN_FLOAT32, 0, 4, 3, nullptr, nullptr, nullptr) == KGEN_OK);
  CHECK(kgen_reduce(KGEN_REDUCE_SUM, KGEN_INT32, 5, 4, 0, nullptr, nullptr, nullptr) == KGEN_OK);
  // softmax is floating point only
  expect_error(kgen_softmax(KGEN_INT32, 2, 4, x, x + 8, nullptr), KGEN_ERROR_INVALID_ARGUMENT, "dtype:");
}

TEST_CASE("every dtype has a compiled generic reduce variant", "[reduce][registry]") {
  for (kgen_dtype_t d : kDtypes) {
    int generic = 0;
    for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::reduce, d)) generic += v->generic;
    CHECK(generic == 1);
  }
}

TEST_CASE("rows: short ones to thread/warp groups, few long ones split, with the widest pack",
          "[reduce][selection][default-set]") {
  for (kgen_dtype_t d : kDtypes) {
    INFO(kgen::dtype_name(d));
    // many rows of 128: a group of lanes per row, 16-byte loads
    Picked s = pick(d, 1 << 20, 128, 1);
    INFO(s.v->name);
    CHECK((s.p.tier == ReduceTier::warp || s.p.tier == ReduceTier::thread));
    CHECK(s.p.pack_size * elem(d) == 16);
    CHECK(s.plan.bytes == 0);
    // rows as short as one pack: a thread per row
    CHECK(pick(d, 1 << 20, 16 / elem(d), 1).p.tier == ReduceTier::thread);
    // 128 rows of 2^20, and the whole tensor: split across blocks, with a workspace
    for (int64_t rows : {int64_t{128}, int64_t{1}}) {
      Picked big = pick(d, rows, 1 << 20, 1);
      INFO(big.v->name);
      CHECK(big.p.tier == ReduceTier::split);
      CHECK(big.plan.splits > 1);
      CHECK(big.plan.groups == rows);
      CHECK(big.plan.bytes >= big.plan.counter_bytes + static_cast<size_t>(rows * big.plan.splits) * 4);
    }
    // argmax partials carry an index
    CHECK(pick(d, 1, 1 << 20, 1, KGEN_REDUCE_ARGMAX).plan.bytes >=
          static_cast<size_t>(pick(d, 1, 1 << 20, 1).plan.splits) * 16);
    // a misaligned row start, and rows of an odd length: still 16-byte
    // packs (each row's aligned body; head and tail an element at a time)
    Picked mis = pick(d, 4096, 1024, 1, KGEN_REDUCE_SUM, d == KGEN_FLOAT64 ? 8 : 4 + (elem(d) == 2 ? 2 : 0));
    CHECK(mis.p.pack_size * elem(d) == 16);
    for (int64_t rows : {int64_t{4096}, int64_t{1}}) {
      Picked odd = pick(d, rows, (int64_t{1} << 20) + 3, 1, KGEN_REDUCE_MAX);
      INFO(odd.v->name);
      CHECK(!odd.v->generic);
      CHECK(odd.p.pack_size * elem(d) == 16);
    }
    // rows shorter than 4 packs that a pack does not divide: pack 1 (the
    // cut costs more than the packs save); 4 packs and longer: the widest
    const int64_t wide = 16 / elem(d);
    if (wide > 2) {
      Picked shortrow = pick(d, 1 << 20, 2 * wide + 1, 1);
      INFO(shortrow.v->name);
      CHECK(shortrow.p.pack_size == 1);
    }
    CHECK(pick(d, 1 << 20, 4 * wide + 1, 1).p.pack_size == wide);
  }
}

TEST_CASE("a few hundred rows: a warp a row up to 8 packs a lane, then a block the row fills",
          "[reduce][selection][default-set]") {
  // 854 rows of 778 float32 (194 packs): a warp of 32 lanes (a block of 512 took 1.6x as long)
  Picked w = pick(KGEN_FLOAT32, 854, 778, 1, KGEN_REDUCE_MAX);
  INFO(w.v->name);
  CHECK(w.p.tier == ReduceTier::warp);
  // 400 rows of 3000 (750 packs): a block of at most 256 threads, not one of 1024
  Picked b = pick(KGEN_FLOAT32, 400, 3000, 1, KGEN_REDUCE_MAX);
  INFO(b.v->name);
  CHECK(b.p.tier == ReduceTier::block);
  CHECK(b.p.block_size <= 256);
  // fewer than two rows an SM: a block a row where the rows are at most one
  // an SM and of 16-256 KB (128 KB for argmax), else split
  CHECK(pick(KGEN_FLOAT32, 64, 50257, 1, KGEN_REDUCE_MAX).p.tier == ReduceTier::block);
  CHECK(pick(KGEN_FLOAT16, 1, 65537, 1, KGEN_REDUCE_SUM).p.tier == ReduceTier::block);
  CHECK(pick(KGEN_FLOAT32, 1, 131072, 1, KGEN_REDUCE_MAX).p.tier == ReduceTier::split);
  CHECK(pick(KGEN_FLOAT32, 1, 65536, 1, KGEN_REDUCE_ARGMAX).p.tier == ReduceTier::split);
  CHECK(pick(KGEN_FLOAT16, 1, 65536, 1, KGEN_REDUCE_ARGMAX).p.tier == ReduceTier::block);
  CHECK(pick(KGEN_FLOAT32, 200, 20000, 1, KGEN_REDUCE_MAX).p.tier == ReduceTier::split);
  CHECK(pick(KGEN_FLOAT32, 1, 3407, 1, KGEN_REDUCE_MAX).p.tier == ReduceTier::split);
}

TEST_CASE("a narrow inner goes to slabs only where a block's part of a slab is large",
          "[reduce][selection][default-set]") {
  // 44 KB slabs of 10 values a row (H100: 125 -> 49.5 us); 115 KB a block
  // of 8 slabs split along 1272973 rows of 3
  Picked big = pick(KGEN_FLOAT16, 1247, 2237, 10, KGEN_REDUCE_ARGMAX);
  INFO(big.v->name);
  CHECK(big.p.tier == ReduceTier::slab);
  CHECK(big.plan.splits == 1);
  Picked tall = pick(KGEN_INT32, 8, 1272973, 3, KGEN_REDUCE_ARGMAX);
  INFO(tall.v->name);
  CHECK(tall.p.tier == ReduceTier::slab);
  CHECK(tall.plan.splits > 1);
  CHECK(tall.plan.bytes > 0);
  // small slabs, one pack a row, split parts under 64 KB, passes of 2 rows
  for (Picked s : {pick(KGEN_FLOAT32, 79 * 5 * 10, 7, 29, KGEN_REDUCE_MAX),
                   pick(KGEN_FLOAT16, 923 * 3 * 2, 929, 8, KGEN_REDUCE_ARGMIN),
                   pick(KGEN_INT32, 1, 358031, 29, KGEN_REDUCE_MAX),
                   pick(KGEN_FLOAT16, 631, 641, 97, KGEN_REDUCE_ARGMAX)}) {
    INFO(s.v->name);
    CHECK(s.p.tier != ReduceTier::slab);
  }
}

TEST_CASE("a middle axis goes to the col tier, lanes across inner", "[reduce][selection][default-set]") {
  for (kgen_dtype_t d : kDtypes) {
    Picked s = pick(d, 64, 4096, 512);
    INFO(s.v->name);
    CHECK(s.p.tier == ReduceTier::col);
    CHECK(s.p.pack_size * elem(d) == 16);
    CHECK(int64_t{s.p.lanes} * s.p.pack_size <= 512);
    // 64 outputs cannot fill an H100: the reduced axis is split too (in
    // slabs where the inner run of 64 values is under 256 bytes)
    Picked few = pick(d, 1, 1 << 20, 64);
    INFO(few.v->name);
    CHECK(few.p.tier == (64 * elem(d) < 256 ? ReduceTier::slab : ReduceTier::col));
    CHECK(few.plan.splits > 1);
    CHECK(few.plan.bytes > 0);
    // inner 3, 137: no wider pack divides it; it stays in the col tier at
    // pack 1 (the generic kernel ran such axes at 0.1-0.2x torch, H100
    // random sweep, bench/NOTES.md sweep v1)
    for (int64_t inner : {3, 137}) {
      Picked odd = pick(d, 8, 1000, inner);
      INFO(odd.v->name);
      CHECK(odd.p.pack_size == 1);
      CHECK(odd.p.tier == ReduceTier::col);
    }
  }
}

TEST_CASE("a short reduced axis takes a thread an output; among col tiles the fewest idle rows",
          "[reduce][selection]") {
  // (2, 402944) bfloat16 over dim 0 (the sweep's 2x787x8x64): 8 lanes x 64
  // rows of threads leave 62 rows idle; 32 lanes x 4 rows ran 12x faster
  static const kgen::DeviceInfo dev;
  for (kgen_dtype_t d : kDtypes) {
    for (int64_t reduce : {2, 3, 5}) {
      kgen::reduce::Problem p{KGEN_REDUCE_MAX, d, 1, reduce, 402944, addr(0), const_cast<void*>(addr(1u << 30)),
                              nullptr, 0, &dev};
      auto sel = kgen::select_variant(kgen::Family::reduce, d, dev, &p, &kgen::reduce::heuristic);
      REQUIRE(sel.variant != nullptr);
      INFO(sel.variant->name << " over " << reduce);
      CHECK(static_cast<const ReduceParams*>(sel.variant->params)->tier == ReduceTier::col_thread);
      // the col tile the heuristic ranks first has no more rows of threads
      // than the fewest any compiled col tile of its pack has, or the axis
      const kgen::VariantInfo* best = nullptr;
      kgen::Score best_score;
      for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::reduce, d)) {
        const auto o = *static_cast<const ReduceParams*>(v->params);
        if (o.tier != ReduceTier::col || !v->supports(*v, &p)) continue;
        const kgen::Score sc = kgen::reduce::heuristic(*v, &p);
        if (!best || best_score < sc) best = v, best_score = sc;
      }
      REQUIRE(best != nullptr);
      const auto q = *static_cast<const ReduceParams*>(best->params);
      int64_t fewest = INT64_MAX;
      for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::reduce, d)) {
        const auto o = *static_cast<const ReduceParams*>(v->params);
        if (o.tier == ReduceTier::col && o.pack_size == q.pack_size && v->supports(*v, &p))
          fewest = std::min<int64_t>(fewest, o.block_size / o.lanes);
      }
      INFO("best col tile " << best->name);
      CHECK(q.block_size / q.lanes <= std::max(fewest, reduce));
    }
  }
}

TEST_CASE("a narrow inner at pack 1 takes lanes it keeps busy", "[reduce][selection][default-set]") {
  // float32 (1048576, 7) over dim 0, one element into its storage: 32 lanes
  // a tile kept 7 busy (0.43x torch, H100 random sweep)
  for (kgen_dtype_t d : kDtypes) {
    for (int64_t inner : {3, 7}) {
      Picked s = pick(d, 1, 1 << 20, inner, KGEN_REDUCE_MAX, elem(d));
      INFO(s.v->name << " inner " << inner);
      CHECK(s.p.tier == ReduceTier::col);
      CHECK(s.p.pack_size == 1);
      CHECK(s.p.lanes <= 16);
    }
  }
  // an odd inner extent at pack 1: 8 loads in flight a thread (bfloat16
  // 6595 x 5381 over dim 0 at about 30% of copy with 4)
  Picked odd = pick(KGEN_BFLOAT16, 1, 6595, 5381, KGEN_REDUCE_SUM);
  INFO(odd.v->name);
  CHECK(odd.p.tier == ReduceTier::col);
  CHECK(odd.p.pack_size == 1);
  CHECK(odd.p.fold == 8);
  // 16 bytes a thread: float32 and int32 stay at fold 4 (int32 argmin over
  // dim 1 of 2705 x 71 x 25 took 1.4x as long at fold 8), and so does a
  // half type whose threads have fewer than 8 rows each
  for (kgen_dtype_t dt : {KGEN_FLOAT32, KGEN_INT32}) {
    Picked four = pick(dt, 1, 6595, 5381, KGEN_REDUCE_SUM);
    INFO(four.v->name);
    CHECK(four.p.tier == ReduceTier::col);
    CHECK(four.p.fold == 4);
  }
  Picked short_axis = pick(KGEN_BFLOAT16, 711, 9, 5, KGEN_REDUCE_MAX);
  INFO(short_axis.v->name);
  CHECK(short_axis.p.tier == ReduceTier::col);
  CHECK(short_axis.p.fold == 4);
}

TEST_CASE("outputs that fill the GPU alone take a thread an output pack", "[reduce][selection][default-set]") {
  // the random sweep's pack-1 col tiles at 3-12% of copy (H100)
  struct Case {
    int64_t outer, reduce, inner;
    uintptr_t x_off;
  };
  for (kgen_dtype_t d : kDtypes) {
    for (Case c : {Case{108495, 2, 13, 1}, Case{1, 11, 5697563, 0}, Case{148975, 3, 19, 1}, Case{4443 * 11, 3, 3, 0},
                   Case{64, 7, 65536, 0}}) {
      Picked s = pick(d, c.outer, c.reduce, c.inner, KGEN_REDUCE_ARGMAX, c.x_off * elem(d));
      INFO(s.v->name << " for " << c.outer << "x" << c.reduce << "x" << c.inner);
      CHECK(s.p.tier == ReduceTier::col_thread);
      if (c.inner % (16 / elem(d)) == 0 && c.x_off == 0) CHECK(s.p.pack_size * elem(d) == 16);
    }
    // 32768 outputs (64 x 512) leave most of an H100 idle: col tiles, split
    CHECK(pick(d, 64, 4096, 512).p.tier == ReduceTier::col);
  }
}

TEST_CASE("split plans fill one wave and keep each block a batch long (two from 4 MiB)", "[reduce][plan]") {
  const kgen::DeviceInfo dev;
  kgen::reduce::Problem p{KGEN_REDUCE_SUM, KGEN_FLOAT32, 1, int64_t{1} << 28, 1, addr(0),
                          const_cast<void*>(addr(1 << 20)), nullptr, 0, &dev};
  const auto pl = kgen::reduce::plan_rows(p, 512, 4, 4, true);
  CHECK(pl.splits == kgen::reduce::one_wave(dev, 512));  // 132 SMs x 4 blocks of 512
  CHECK(pl.counter_bytes == 256);
  CHECK(pl.bytes == 256 + static_cast<size_t>(pl.splits) * 4);
  p.reduce = 4 * 512 * 4 * 3;  // three batches of 512 threads: a block each
  CHECK(kgen::reduce::plan_rows(p, 512, 4, 4, true).splits == 3);
  p.reduce = int64_t{1} << 21;  // 8 MiB: two batches a block, 2^19 packs in 128 blocks of 4096
  CHECK(kgen::reduce::plan_rows(p, 512, 4, 4, true).splits == 128);
  p.reduce = (int64_t{1} << 20) - 4;  // under 4 MiB: one batch a block (2^18 - 1 packs: 127, not 63)
  CHECK(kgen::reduce::plan_rows(p, 512, 4, 4, true).splits == 127);
  p.reduce = 4 * 512 * 4 * 2;  // two batches or fewer: one block, no combine
  CHECK(kgen::reduce::plan_rows(p, 512, 4, 4, true).splits == 1);
  CHECK(kgen::reduce::plan_rows(p, 512, 4, 4, true).bytes == 0);
  p.outer = 100000;  // rows fill the GPU on their own
  p.reduce = 1 << 20;
  CHECK(kgen::reduce::plan_rows(p, 512, 4, 4, true).splits == 1);
  CHECK(kgen::reduce::plan_rows(p, 512, 4, 4, false).splits == 1);
}

TEST_CASE("col tiles: 8 rows of threads a block, then 256 threads", "[reduce][selection][default-set]") {
  // 8 lanes x 64 rows of threads took 1.2-5.9x the best tile's time on
  // eight col problems (H100, bench/NOTES.md sweep v2: argmax over dim 1 of
  // bfloat16 32x200x16384 496 us, 84-117 us in 4-8 rows)
  struct Case {
    int64_t outer, reduce, inner;
    kgen_reduce_op_t op;
  };
  for (kgen_dtype_t d : kDtypes) {
    for (Case c : {Case{32, 200, 16384, KGEN_REDUCE_ARGMAX}, Case{8, 300, 65536, KGEN_REDUCE_SUM},
                   Case{1, 349, 126208, KGEN_REDUCE_ARGMIN}, Case{1, 4096, 8192, KGEN_REDUCE_SUM}}) {
      Picked s = pick(d, c.outer, c.reduce, c.inner, c.op);
      INFO(s.v->name << " for " << c.outer << "x" << c.reduce << "x" << c.inner);
      // (or a thread an output where the outputs fill the GPU alone)
      CHECK((s.p.tier == ReduceTier::col || s.p.tier == ReduceTier::col_thread));
      if (s.p.tier == ReduceTier::col) CHECK(s.p.block_size / s.p.lanes == 8);
      CHECK(s.p.pack_size * elem(d) == 16);
    }
  }
}

TEST_CASE("the reduce selection cache gives what selection gives", "[reduce][select][cache]") {
  std::mt19937_64 g(11);
  auto one_of = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + g() % xs.size()); };
  static const kgen::DeviceInfo dev;
  const kgen_reduce_op_t ops[] = {KGEN_REDUCE_SUM, KGEN_REDUCE_MAX, KGEN_REDUCE_ARGMAX, KGEN_REDUCE_MEAN};
  for (int i = 0; i < 3000; ++i) {
    const kgen_dtype_t d = kDtypes[g() % 5];
    const kgen_reduce_op_t op = ops[g() % 4];
    if (op == KGEN_REDUCE_MEAN && d == KGEN_INT32) continue;
    kgen::reduce::Problem p{op, d, one_of({1, 3, 64, 4096}), one_of({1, 7, 512, 65536, 1 << 22}),
                            one_of({1, 1, 3, 64, 1024}), addr(4 * (g() % 4)), const_cast<void*>(addr(1u << 30)),
                            nullptr, 0, &dev};
    const auto fresh = kgen::select_variant(kgen::Family::reduce, d, dev, &p, &kgen::reduce::heuristic);
    for (int again = 0; again < 2; ++again) {
      const auto cached =
          kgen::select_cached(kgen::Family::reduce, d, dev, &p, &kgen::reduce::heuristic, &kgen::reduce::selection_key);
      INFO("problem " << i << ": " << (fresh.variant ? fresh.variant->name : "none"));
      CHECK(cached.variant == fresh.variant);
    }
  }
}

TEST_CASE("rows a 16-byte pack does not cover whole have tuning buckets of their own", "[reduce][tuning]") {
  static const kgen::DeviceInfo dev;
  auto bucket = [](int64_t outer, int64_t reduce, int64_t inner, uintptr_t x_off) {
    kgen::reduce::Problem p{KGEN_REDUCE_SUM, KGEN_FLOAT32, outer, reduce, inner, addr(x_off),
                            const_cast<void*>(addr(1u << 30)), nullptr, 0, &dev};
    char b[64];
    kgen::reduce::bucket(&p, b, sizeof b);
    return std::string(b);
  };
  CHECK(bucket(4096, 1024, 1, 0) == "val_last_r10");
  CHECK(bucket(4096, 1021, 1, 0) == "val_last_r10_cut");  // a length 4 floats do not divide
  CHECK(bucket(4096, 1024, 1, 4) == "val_last_r10_cut");  // one float into an aligned allocation
  CHECK(bucket(1, 1 << 20, 1, 0) == "val_all_r10");
  CHECK(bucket(1, (1 << 20) - 3, 1, 0) == "val_all_r10_cut");
  CHECK(bucket(64, 1024, 3, 4) == "val_mid_r5_i1_s");  // the col tier does not cut
  CHECK(bucket(1 << 20, 2, 1, 0) == "val_last_r1");      // a pack of 2 fits and divides
  CHECK(bucket(1 << 20, 2, 1, 8) == "val_last_r1");
  CHECK(bucket(1 << 20, 3, 1, 0) == "val_last_r2_cut");
  // inputs under 4 MiB apart
  CHECK(bucket(4096, 2, 1, 0) == "val_last_r1_s");
  CHECK(bucket(4096, 3, 1, 0) == "val_last_r2_cut_s");
  CHECK(bucket(64, 1024, 1 << 10, 0) == "val_mid_r5_i5");
  CHECK(bucket(1, 1 << 10, 1 << 9, 0) == "val_mid_r5_i5_s");
}
