// Permute family without a GPU: simplification (table-driven), argument
// validation through the C API, and capability and selection on a described
// device.  Selection is checked by tier and parameters, not names, so it
// holds at every build level.
#include <cstdint>
#include <algorithm>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "kgen/kgen.h"
#include "kgen_params.gen.hpp"
#include "permute/problem.hpp"
#include "registry.hpp"
#include "select.hpp"

using kgen::gen::PermuteParams;
using kgen::gen::PermuteTier;
using kgen::permute::Shape;

namespace {

struct Case {
  std::vector<int64_t> shape;
  std::vector<int> perm;
  int64_t elem;
  uintptr_t src, dst;  // addresses: their alignment decides the unit
  // expected
  std::vector<int64_t> dims;
  std::vector<int> out_perm;
  int movement;
};

std::string show(const Shape& s) {
  std::string t = "dims (";
  for (int k = 0; k < s.rank; ++k) t += (k ? "," : "") + std::to_string(s.dims[k]);
  t += ") perm (";
  for (int k = 0; k < s.rank; ++k) t += (k ? "," : "") + std::to_string(s.perm[k]);
  return t + ") movement " + std::to_string(s.movement);
}

constexpr uintptr_t A = 1u << 20;  // 16-byte aligned

}  // namespace

TEST_CASE("permute simplification: drop ones, merge, widen, merge again", "[permute]") {
  const std::vector<Case> cases = {
      // plain transposes keep the element as the unit
      {{8192, 8192}, {1, 0}, 4, A, A, {8192, 8192}, {1, 0}, 4},
      {{8192, 8192}, {1, 0}, 2, A, A, {8192, 8192}, {1, 0}, 2},
      {{33, 65}, {1, 0}, 1, A, A, {33, 65}, {1, 0}, 1},
      // (64,64,128,128)->(2,3,0,1) is a (4096, 16384) transpose
      {{64, 64, 128, 128}, {2, 3, 0, 1}, 4, A, A, {4096, 16384}, {1, 0}, 4},
      // a preserved innermost dim becomes 16-byte units: 128 floats = 32 units
      {{32, 512, 16, 128}, {0, 2, 1, 3}, 4, A, A, {32, 512, 16, 32}, {0, 2, 1, 3}, 16},
      // ... as wide as the pointers allow
      {{32, 512, 16, 128}, {0, 2, 1, 3}, 4, A + 8, A, {32, 512, 16, 64}, {0, 2, 1, 3}, 8},
      {{32, 512, 16, 128}, {0, 2, 1, 3}, 4, A, A + 4, {32, 512, 16, 128}, {0, 2, 1, 3}, 4},
      // ... and the bytes of the row: 3 floats = 12 bytes -> 4-byte units
      {{5, 7, 3}, {1, 0, 2}, 4, A, A, {5, 7, 3}, {1, 0, 2}, 4},
      // misaligned below the element: the element splits into units (an extra dim)
      {{5, 7}, {1, 0}, 4, A + 2, A, {5, 7, 2}, {1, 0, 2}, 2},
      {{5, 7}, {1, 0}, 8, A + 1, A, {5, 7, 8}, {1, 0, 2}, 1},
      // 16-byte elements, aligned: one unit each
      {{6, 10}, {1, 0}, 16, A, A, {6, 10}, {1, 0}, 16},
      // rank 6 with nothing to merge
      {{8, 16, 16, 16, 16, 64}, {5, 3, 1, 4, 2, 0}, 4, A, A, {8, 16, 16, 16, 16, 64}, {5, 3, 1, 4, 2, 0}, 4},
      // (256,3,512,512)->(0,2,3,1): the two 512s merge
      {{256, 3, 512, 512}, {0, 2, 3, 1}, 2, A, A, {256, 3, 262144}, {0, 2, 1}, 2},
      // size-1 dims vanish wherever they are
      {{1, 33, 1, 65}, {3, 2, 1, 0}, 4, A, A, {33, 65}, {1, 0}, 4},
      {{33, 1, 65, 1}, {2, 3, 1, 0}, 4, A, A, {33, 65}, {1, 0}, 4},
      // identities, however written, are one run of bytes: a copy
      {{4, 5, 6}, {0, 1, 2}, 4, A, A, {30}, {0}, 16},
      {{4, 1, 6}, {1, 0, 2}, 2, A, A, {3}, {0}, 16},
      {{4, 1, 6}, {1, 0, 2}, 2, A + 2, A, {24}, {0}, 2},
      {{3, 1, 1}, {2, 1, 0}, 1, A + 1, A, {3}, {0}, 1},
      // all ones, and rank 0: a single element
      {{1, 1, 1}, {2, 1, 0}, 4, A, A, {}, {}, 4},
      {{}, {}, 8, A, A, {}, {}, 8},
      {{}, {}, 8, A + 4, A, {2}, {0}, 4},
      // dims that stay adjacent in order merge even when others move around them
      {{2, 3, 4, 5, 6}, {3, 4, 0, 1, 2}, 4, A, A, {24, 30}, {1, 0}, 4},
      {{2, 3, 4, 5}, {2, 0, 1, 3}, 4, A, A, {6, 4, 5}, {1, 0, 2}, 4},
      // rank 8 reversed: nothing merges
      {{2, 3, 2, 3, 2, 3, 2, 3}, {7, 6, 5, 4, 3, 2, 1, 0}, 4, A, A, {2, 3, 2, 3, 2, 3, 2, 3},
       {7, 6, 5, 4, 3, 2, 1, 0}, 4},
      // ... which a misaligned pointer turns into 9 dims of 2-byte units
      {{2, 3, 2, 3, 2, 3, 2, 3}, {7, 6, 5, 4, 3, 2, 1, 0}, 4, A, A + 2, {2, 3, 2, 3, 2, 3, 2, 3, 2},
       {7, 6, 5, 4, 3, 2, 1, 0, 8}, 2},
  };
  for (const Case& c : cases) {
    const Shape s = kgen::permute::simplify(static_cast<int>(c.shape.size()), c.shape.data(),
                                            c.perm.data(), c.elem, c.src, c.dst, 16);
    INFO(show(s));
    REQUIRE(s.rank == static_cast<int>(c.dims.size()));
    CHECK(s.movement == c.movement);
    for (int k = 0; k < s.rank; ++k) {
      CHECK(s.dims[k] == c.dims[k]);
      CHECK(s.perm[k] == c.out_perm[k]);
    }
  }
}

TEST_CASE("permute simplification honours the widest unit a variant moves", "[permute]") {
  const int64_t shape[] = {32, 512, 16, 128};
  const int perm[] = {0, 2, 1, 3};
  for (int m : {1, 2, 4, 8, 16}) {
    const Shape s = kgen::permute::simplify(4, shape, perm, 4, A, A, m);
    CHECK(s.movement == m);
    CHECK(s.dims[3] == 512 / m);
  }
}

TEST_CASE("permute tile view: the contiguous dims of src and dst and the batch", "[permute]") {
  // (8,16,16,16,16,64)->(5,3,1,4,2,0): I = dim 5 (64); dst's rows (dim 0, 8
  // units of 4 bytes) are short, so J groups dims 0 and 2 (dst's two innermost)
  const int64_t shape[] = {8, 16, 16, 16, 16, 64};
  const int perm[] = {5, 3, 1, 4, 2, 0};
  Shape s = kgen::permute::simplify(6, shape, perm, 4, A, A, 16);
  kgen::permute::TileView t = kgen::permute::tile_view(s);
  CHECK(t.ni == 64);
  CHECK(t.nj1 == 8);
  CHECK(t.nj == 8 * 16);
  CHECK(t.src_stride_j == 16 * 16 * 16 * 16 * 64);
  CHECK(t.src_stride_j2 == 16 * 16 * 64);
  CHECK(t.dst_stride_i == 16 * 16 * 16 * 16 * 8);
  REQUIRE(t.batch_rank == 3);
  CHECK(t.batches == 16 * 16 * 16);
  // batch dims from src's innermost out: dims 4, 3, 1
  CHECK(t.batch_src[0] == 64);
  CHECK(t.batch_src[1] == 16 * 64);
  CHECK(t.batch_src[2] == 16 * 16 * 16 * 64);
  // dst order (5,3,1,4,2,0): dim 4 has dst stride 16*8, dim 3 16^3*8, dim 1 16*16*8
  CHECK(t.batch_dst[0] == 16 * 8);
  CHECK(t.batch_dst[1] == 16 * 16 * 16 * 8);
  CHECK(t.batch_dst[2] == 16 * 16 * 8);
  // 16-byte rows are long enough: no group
  s = kgen::permute::simplify(6, shape, perm, 8, A, A, 16);
  t = kgen::permute::tile_view(s);
  CHECK(t.nj == 8);
  CHECK(t.src_stride_j2 == 0);
  CHECK(t.batch_rank == 4);
  // a plain transpose has nothing to group
  const int64_t square[] = {300, 400};
  const int swap[] = {1, 0};
  t = kgen::permute::tile_view(kgen::permute::simplify(2, square, swap, 2, A, A, 16));
  CHECK(t.ni == 400);
  CHECK(t.nj == 300);
  CHECK(t.src_stride_j2 == 0);
  CHECK(t.batch_rank == 0);
}

namespace {

void expect_error(kgen_status_t got, const std::string& name) {
  CHECK(got == KGEN_ERROR_INVALID_ARGUMENT);
  const std::string msg = kgen_last_error();
  INFO(msg);
  CHECK(msg.rfind(name, 0) == 0);  // the message starts with the argument's name
}

const void* addr(uintptr_t offset) { return reinterpret_cast<const void*>(uintptr_t{1} << 32 | offset); }

}  // namespace

TEST_CASE("permute rejects bad arguments by name before touching the GPU", "[permute]") {
  const int64_t shape[] = {4, 5, 6};
  const int perm[] = {2, 0, 1};
  const void* src = addr(0);
  void* dst = const_cast<void*>(addr(1 << 20));
  const int64_t neg[] = {4, -1, 6};
  const int repeat[] = {2, 0, 2}, out_of_range[] = {0, 1, 3}, negative[] = {0, -1, 1};
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int perm9[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40};
  const int swap[] = {1, 0};
  expect_error(kgen_permute(4, 3, shape, repeat, src, dst, nullptr), "perm");
  expect_error(kgen_permute(4, 3, shape, out_of_range, src, dst, nullptr), "perm");
  expect_error(kgen_permute(4, 3, shape, negative, src, dst, nullptr), "perm");
  expect_error(kgen_permute(4, 9, nine, perm9, src, dst, nullptr), "rank");
  expect_error(kgen_permute(4, -1, shape, perm, src, dst, nullptr), "rank");
  expect_error(kgen_permute(4, 3, neg, perm, src, dst, nullptr), "shape[1]");
  expect_error(kgen_permute(4, 3, nullptr, perm, src, dst, nullptr), "shape");
  expect_error(kgen_permute(4, 3, shape, nullptr, src, dst, nullptr), "perm");
  expect_error(kgen_permute(0, 3, shape, perm, src, dst, nullptr), "elem_size");
  expect_error(kgen_permute(4, 3, shape, perm, nullptr, dst, nullptr), "src");
  expect_error(kgen_permute(4, 3, shape, perm, src, nullptr, nullptr), "dst");
  expect_error(kgen_permute(4, 2, huge, swap, src, dst, nullptr), "shape");
  // overlapping buffers, including the same buffer: a permute is never in place
  expect_error(kgen_permute(4, 3, shape, perm, src, const_cast<void*>(addr(4)), nullptr), "dst");
  expect_error(kgen_permute(4, 3, shape, perm, src, const_cast<void*>(src), nullptr), "dst");
  // a bad perm is an error even for an empty tensor
  const int64_t empty[] = {4, 0, 6};
  expect_error(kgen_permute(4, 3, empty, repeat, src, dst, nullptr), "perm");
  const char* name = nullptr;
  expect_error(kgen_permute_selected(4, 3, shape, repeat, src, dst, &name), "perm");
  CHECK(kgen_permute_variant("softmax_generic_f32", 4, 3, shape, perm, src, dst, nullptr) ==
        KGEN_ERROR_UNSUPPORTED);
  CHECK(std::string(kgen_last_error()).rfind("variant", 0) == 0);
}

TEST_CASE("permute: empty tensors are no-ops, even with null pointers", "[permute]") {
  const int64_t shape[] = {4, 0, 6};
  const int perm[] = {2, 0, 1};
  CHECK(kgen_permute(4, 3, shape, perm, nullptr, nullptr, nullptr) == KGEN_OK);
  const char* name = nullptr;
  CHECK(kgen_permute_selected(4, 3, shape, perm, nullptr, nullptr, &name) == KGEN_OK);
  CHECK(std::string(name).empty());
}

TEST_CASE("every permute movement size has exactly one generic variant", "[permute][registry]") {
  for (int m : {1, 2, 4, 8, 16}) {
    int generic = 0;
    for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::permute, kgen::movement_key(m))) {
      CHECK(v->family == kgen::Family::permute);
      CHECK(v->element == kgen::movement_key(m));
      generic += v->generic;
    }
    CHECK(generic == 1);
  }
}

namespace {

struct Picked {
  const kgen::VariantInfo* v;
  PermuteParams p;
  Shape s;
};

Picked pick(std::vector<int64_t> shape, std::vector<int> perm, int64_t elem, uintptr_t src_off = 0) {
  static const kgen::DeviceInfo dev;  // defaults describe an H100 SXM
  kgen::permute::Problem p{};
  p.src = addr(src_off);
  p.dst = const_cast<void*>(addr(uintptr_t{1} << 31));
  p.device = &dev;
  p.shape = kgen::permute::simplify(static_cast<int>(shape.size()), shape.data(), perm.data(), elem,
                                    reinterpret_cast<uintptr_t>(p.src),
                                    reinterpret_cast<uintptr_t>(p.dst), 16);
  auto sel = kgen::select_variant(kgen::Family::permute, kgen::movement_key(p.shape.movement), dev, &p,
                                  &kgen::permute::heuristic);
  REQUIRE(sel.variant != nullptr);
  REQUIRE(sel.variant->supports(*sel.variant, &p));
  return {sel.variant, *static_cast<const PermuteParams*>(sel.variant->params), p.shape};
}

}  // namespace

TEST_CASE("permute selection: rows when the innermost dim stays, tiles when it moves", "[permute][default-set]") {
  {
    auto k = pick({32, 512, 16, 128}, {0, 2, 1, 3}, 4);
    CHECK(k.s.movement == 16);
    CHECK(k.p.tier == PermuteTier::row);
  }
  for (int64_t e : {2, 4}) {
    INFO("elem " << e);
    auto t = pick({8192, 8192}, {1, 0}, e);
    CHECK(t.p.tier == PermuteTier::tile);
    CHECK(t.p.pack * e >= 4);  // at least 4-byte accesses, 8192 divides every pack
    auto b = pick({64, 1024, 1024}, {0, 2, 1}, e);
    CHECK(b.p.tier == PermuteTier::tile);
    // dst rows of 3 units follow each other: per-unit index math writes them whole
    auto n = pick({256, 3, 512, 512}, {0, 2, 3, 1}, e);
    CHECK(n.p.tier == PermuteTier::elem);
    // short dst rows grouped with the next dst dim: square tiles again
    auto r6 = pick({8, 16, 16, 16, 16, 64}, {5, 3, 1, 4, 2, 0}, e);
    CHECK(r6.p.tier == PermuteTier::tile);
    CHECK(r6.p.tj >= 32);
    CHECK(r6.p.ti >= 32);
  }
  // odd extents: no pack but 1 divides them; still tiles
  auto odd = pick({33, 65, 37}, {2, 0, 1}, 2);
  CHECK(odd.p.tier == PermuteTier::tile);
  CHECK(odd.p.pack == 1);
  // src rows of 7 units (28 bytes) that join up, in a plane of 60 KB:
  // per-unit index math (bench/NOTES.md permute v2)
  auto narrow = pick({33, 65, 7}, {2, 0, 1}, 4);
  CHECK(narrow.p.tier == PermuteTier::elem);
  // rows of 7 units that do not join (a dim of 3 between them in src): tiles
  auto apart = pick({5, 64, 3, 7}, {2, 0, 3, 1}, 4);
  CHECK(apart.p.tier == PermuteTier::tile);
  // rows under 256 bytes: per-unit index math (H100: 2.1-2.4x faster than
  // a group a row on rows of 10-18 bytes)
  auto short_rows = pick({35, 6011, 32, 5}, {2, 0, 1, 3}, 2);
  CHECK(short_rows.p.tier == PermuteTier::elem);
  auto long_rows = pick({700, 700, 100}, {1, 0, 2}, 4);
  CHECK(long_rows.p.tier == PermuteTier::row);
  // ranks 5-8 after simplification: elem of that rank, not the generic kernel
  auto r8 = pick({7, 5, 23, 37, 32, 3, 7, 2}, {2, 5, 3, 4, 6, 7, 1, 0}, 4);
  CHECK(r8.s.rank >= 5);
  CHECK(r8.p.tier == PermuteTier::elem);
  CHECK(r8.p.rank == r8.s.rank);
  // rows of 3 bytes: per-unit index math (rank 3 is compiled at every level)
  auto tiny = pick({100, 200, 3}, {1, 0, 2}, 1);
  CHECK(tiny.s.movement == 1);
  CHECK(tiny.p.tier == PermuteTier::elem);
  CHECK(tiny.p.index == 0);
}

TEST_CASE("permute transposes: short dst rows by elem, long writes before square tiles", "[permute][default-set]") {
  // dst rows under 320 bytes (a few dozen src rows) in pack-1 tiles: elem
  // took 0.3-0.8x the best tile's time (H100, bench/NOTES.md sweep v2)
  for (auto c : {std::pair<int64_t, int64_t>{77, 2}, {41, 2}, {37, 8}, {60, 4}, {5, 8}}) {
    INFO(c.first << " rows of " << c.second << "-byte elements");
    auto t = pick({c.first, 1000003}, {1, 0}, c.second);
    CHECK(t.p.tier == PermuteTier::elem);
  }
  // from 120 float32 / 200 float16 rows tiles win, the 8 x 128 ones (short
  // reads, long writes) over 128 x 8 and 32 x 32 (200x1000003 float16: 640
  // against 1755 us; 4097x4099 float32: 60 against 74 us)
  for (auto c : {std::pair<int64_t, int64_t>{200, 2}, {120, 4}, {4097, 4}, {4097, 2}}) {
    INFO(c.first << " rows of " << c.second << "-byte elements");
    auto t = pick({c.first, c.first == 4097 ? 4099 : 1000003}, {1, 0}, c.second);
    CHECK(t.p.tier == PermuteTier::tile);
    CHECK(t.p.pack == 1);
    CHECK(t.p.ti == 8);
    CHECK(t.p.tj == 128);
  }
  // extents a wide pack divides keep the square packed tiles (float16
  // 128x1048576: 64 x 64 at pack 4 197 us, 8 x 128 at pack 1 372 us)
  auto even = pick({128, 1 << 20}, {1, 0}, 2);
  CHECK(even.p.tier == PermuteTier::tile);
  CHECK(even.p.pack * 2 >= 8);
  CHECK(even.p.ti == even.p.tj);
}

TEST_CASE("the permute selection cache gives what selection gives", "[permute][select][cache]") {
  std::mt19937_64 g(13);
  static const kgen::DeviceInfo dev;
  const int64_t extents[] = {1, 2, 3, 7, 16, 64, 129, 1000, 4096};
  for (int i = 0; i < 3000; ++i) {
    const int rank = 1 + static_cast<int>(g() % 6);
    std::vector<int64_t> shape(rank);
    std::vector<int> perm(rank);
    for (int k = 0; k < rank; ++k) shape[k] = extents[g() % 9], perm[k] = k;
    std::shuffle(perm.begin(), perm.end(), g);
    const int64_t elem = int64_t{1} << (g() % 4);
    kgen::permute::Problem p{};
    p.src = addr(elem * (g() % 4));
    p.dst = const_cast<void*>(addr((uintptr_t{1} << 31) + 16 * (g() % 2)));
    p.device = &dev;
    p.shape = kgen::permute::simplify(rank, shape.data(), perm.data(), elem, reinterpret_cast<uintptr_t>(p.src),
                                      reinterpret_cast<uintptr_t>(p.dst), 16);
    if (kgen::permute::is_copy(p.shape)) continue;
    const int key = kgen::movement_key(p.shape.movement);
    const auto fresh = kgen::select_variant(kgen::Family::permute, key, dev, &p, &kgen::permute::heuristic);
    for (int again = 0; again < 2; ++again) {
      const auto cached = kgen::select_cached(kgen::Family::permute, key, dev, &p, &kgen::permute::heuristic,
                                              &kgen::permute::selection_key);
      INFO("problem " << i << ": " << (fresh.variant ? fresh.variant->name : "none"));
      CHECK(cached.variant == fresh.variant);
    }
  }
}

TEST_CASE("permute tuning buckets keep tensors under 4 MiB apart", "[permute][tuning]") {
  static const kgen::DeviceInfo dev;
  auto bucket = [](std::vector<int64_t> shape, std::vector<int> perm, int64_t elem) {
    kgen::permute::Problem p{kgen::permute::simplify(static_cast<int>(shape.size()), shape.data(), perm.data(), elem,
                                                     A, A, 16),
                             nullptr, nullptr, &dev};
    char b[64];
    kgen::permute::bucket(&p, b, sizeof b);
    return std::string(b);
  };
  // the same tile classes: 78 MB against 285 KB (the sweep's pair, float16)
  CHECK(bucket({29, 26, 73, 55, 13}, {4, 3, 1, 0, 2}, 2).rfind("tile_", 0) == 0);
  CHECK(bucket({29, 26, 73, 55, 13}, {4, 3, 1, 0, 2}, 2).find("_s") == std::string::npos);
  CHECK(bucket({11, 48, 9, 3, 10}, {4, 2, 1, 3, 0}, 2).substr(bucket({11, 48, 9, 3, 10}, {4, 2, 1, 3, 0}, 2).size() - 2) ==
        "_s");
  CHECK(bucket({1024, 1024, 32}, {1, 0, 2}, 2) == "row_r3_l1");
  CHECK(bucket({64, 64, 32}, {1, 0, 2}, 2) == "row_r3_l1_s");
  CHECK(bucket({1 << 20}, {0}, 4) == "copy");
}
