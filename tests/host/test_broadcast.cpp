// Broadcast family (expand, where) without a GPU: shape inference,
// simplification (table-driven), argument validation through the C API, and
// capability and selection on a described device.  Selection is checked by
// tier and parameters, not names, so it holds at every build level.
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "broadcast/problem.hpp"
#include "catch.hpp"
#include "kgen/kgen.h"
#include "kgen_params.gen.hpp"
#include "registry.hpp"
#include "select.hpp"

using kgen::broadcast::Layout;
using kgen::broadcast::Operand;
using kgen::broadcast::Route;

namespace {

using Dims = std::vector<int64_t>;

Operand op(const Dims& shape, const char* name) {
  return Operand{static_cast<int>(shape.size()), shape.data(), name};
}

std::string show(const Dims& d) {
  std::string t = "(";
  for (size_t k = 0; k < d.size(); ++k) {
    if (k) t += ",";
    t += std::to_string(d[k]);
  }
  return t + ")";
}

std::string show(const Layout& l) {
  std::string t = "dims (";
  for (int k = 0; k < l.rank; ++k) {
    if (k) t += ",";
    t += std::to_string(l.dims[k]);
  }
  t += ")";
  for (int i = 0; i < l.inputs; ++i) {
    t += " stride[" + std::to_string(i) + "] (";
    for (int k = 0; k < l.rank; ++k) {
      if (k) t += ",";
      t += std::to_string(l.stride[i][k]);
    }
    t += ")";
  }
  return t + " movement " + std::to_string(l.movement) + " route " +
         kgen::broadcast::route_name(kgen::broadcast::route(l));
}

// The message of the last failed call starts with the argument's name.
void expect_error(kgen_status_t got, const std::string& name) {
  CHECK(got == KGEN_ERROR_INVALID_ARGUMENT);
  const std::string msg = kgen_last_error();
  INFO(msg);
  CHECK(msg.rfind(name, 0) == 0);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Fake device addresses: far apart, 256-byte aligned plus an offset.
void* addr(int slot, uintptr_t offset = 0) {
  return reinterpret_cast<void*>((uintptr_t{1} << 40) * static_cast<uintptr_t>(slot + 1) + offset);
}

constexpr uintptr_t A = 1u << 20;  // 256-byte aligned (simplify_expand takes integers)

}  // namespace

// ---------------------------------------------------------------------------
// shape inference

namespace {

struct Inferred {
  kgen_status_t status;
  Dims shape;
};

Inferred broadcast_shape(const std::vector<Dims>& shapes) {
  std::vector<int> ranks;
  std::vector<const int64_t*> ptrs;
  for (const Dims& s : shapes) {
    ranks.push_back(static_cast<int>(s.size()));
    ptrs.push_back(s.data());
  }
  int rank = -7;
  int64_t out[8] = {-7, -7, -7, -7, -7, -7, -7, -7};
  const kgen_status_t st =
      kgen_broadcast_shape(static_cast<int>(shapes.size()), ranks.data(), ptrs.data(), &rank, out);
  Inferred r{st, {}};
  if (st == KGEN_OK) {
    REQUIRE(rank >= 0);
    REQUIRE(rank <= 8);
    r.shape.assign(out, out + rank);
  } else {
    // nothing is written on failure
    CHECK(rank == -7);
    CHECK(out[0] == -7);
  }
  return r;
}

}  // namespace

TEST_CASE("broadcast shape: PyTorch rules through kgen_broadcast_shape", "[broadcast]") {
  struct Row {
    std::vector<Dims> in;
    Dims out;
  };
  const std::vector<Row> rows = {
      // scalars with anything
      {{{}, {2, 3}}, {2, 3}},
      {{{2, 3}, {}}, {2, 3}},
      {{{}, {}}, {}},
      {{{}}, {}},
      {{{}, {}, {}}, {}},
      {{{}, {0}}, {0}},
      // missing leading dims count as 1
      {{{5}, {4, 3, 5}}, {4, 3, 5}},
      {{{3, 1, 5}, {4, 1}}, {3, 4, 5}},
      // 1s grow, in any operand
      {{{1, 4}, {3, 1}}, {3, 4}},
      {{{1, 1, 1}, {7}}, {1, 1, 7}},
      {{{2, 1, 1, 1}, {1, 3, 4, 1}, {1, 1, 4, 2}}, {2, 3, 4, 2}},
      // 0-sized dims: 0 with 1 gives 0
      {{{1}, {0}}, {0}},
      {{{0, 1}, {1, 5}}, {0, 5}},
      {{{2, 0}, {1, 1}}, {2, 0}},
      {{{0}, {0}, {}}, {0}},
      // rank 8
      {{{1, 2, 1, 2, 1, 2, 1, 2}, {3, 1, 3, 1, 3, 1, 3, 1}}, {3, 2, 3, 2, 3, 2, 3, 2}},
      {{{2, 2, 2, 2, 2, 2, 2, 2}, {2}, {}}, {2, 2, 2, 2, 2, 2, 2, 2}},
      // up to 8 operands
      {{{1}, {2, 1}, {1, 1, 3}, {}, {1}, {4, 1, 1, 1}, {1, 2, 3}, {1}}, {4, 1, 2, 3}},
  };
  for (const Row& r : rows) {
    std::string in;
    for (const Dims& d : r.in) in += show(d) + " ";
    INFO(in);
    const Inferred got = broadcast_shape(r.in);
    REQUIRE(got.status == KGEN_OK);
    CHECK(std::string(kgen_last_error()).empty());
    CHECK(got.shape == r.out);
  }
}

TEST_CASE("broadcast shape: kgen_broadcast_shape errors name the argument", "[broadcast]") {
  // 0 with 3 is not a broadcast
  {
    const Inferred got = broadcast_shape({{0}, {3}});
    CHECK(got.status == KGEN_ERROR_INVALID_ARGUMENT);
    const std::string msg = kgen_last_error();
    INFO(msg);
    CHECK(msg.rfind("shapes[1]", 0) == 0);
    CHECK(contains(msg, "dim 0 is 0 in shapes[0] and 3 in shapes[1]"));
  }
  {
    const Inferred got = broadcast_shape({{2, 3}, {4, 1}, {3}});
    CHECK(got.status == KGEN_ERROR_INVALID_ARGUMENT);
    const std::string msg = kgen_last_error();
    INFO(msg);
    CHECK(msg.rfind("shapes[1]", 0) == 0);
    CHECK(contains(msg, "[4,1]"));
    CHECK(contains(msg, "shapes[0] [2,3]"));
    CHECK(contains(msg, "dim 0 is 2 in shapes[0] and 4 in shapes[1]"));
  }
  // the third operand disagrees with the first one that is not 1 there
  {
    const Inferred got = broadcast_shape({{1, 3}, {2, 1}, {2, 4}});
    CHECK(got.status == KGEN_ERROR_INVALID_ARGUMENT);
    const std::string msg = kgen_last_error();
    INFO(msg);
    CHECK(msg.rfind("shapes[2]", 0) == 0);
    CHECK(contains(msg, "dim 1 is 3 in shapes[0] and 4 in shapes[2]"));
  }
  const Dims a = {2, 3}, b = {3}, neg = {2, -1};
  const int64_t* shapes[] = {a.data(), b.data()};
  const int ranks[] = {2, 1};
  int rank = 0;
  int64_t out[8];
  expect_error(kgen_broadcast_shape(0, ranks, shapes, &rank, out), "count");
  expect_error(kgen_broadcast_shape(-1, ranks, shapes, &rank, out), "count");
  expect_error(kgen_broadcast_shape(9, ranks, shapes, &rank, out), "count");
  expect_error(kgen_broadcast_shape(2, nullptr, shapes, &rank, out), "ranks");
  expect_error(kgen_broadcast_shape(2, ranks, nullptr, &rank, out), "shapes");
  expect_error(kgen_broadcast_shape(2, ranks, shapes, nullptr, out), "out_rank");
  expect_error(kgen_broadcast_shape(2, ranks, shapes, &rank, nullptr), "out_shape");
  const int nine[] = {2, 9}, minus[] = {2, -1};
  expect_error(kgen_broadcast_shape(2, nine, shapes, &rank, out), "ranks[1]");
  expect_error(kgen_broadcast_shape(2, minus, shapes, &rank, out), "ranks[1]");
  const int64_t* null_second[] = {a.data(), nullptr};
  expect_error(kgen_broadcast_shape(2, ranks, null_second, &rank, out), "shapes[1]");
  // a null shape is fine for a scalar
  const int scalar_second[] = {2, 0};
  CHECK(kgen_broadcast_shape(2, scalar_second, null_second, &rank, out) == KGEN_OK);
  CHECK(rank == 2);
  const int64_t* negative[] = {a.data(), neg.data()};
  const int two_two[] = {2, 2};
  expect_error(kgen_broadcast_shape(2, two_two, negative, &rank, out), "shapes[1][1]");
}

TEST_CASE("broadcast shape: infer_shape checks ranks, pointers and sizes by operand name", "[broadcast]") {
  using kgen::broadcast::infer_shape;
  int rank = 0;
  int64_t dims[8];
  // the example of the design: x and y disagree at dim 1
  {
    const Dims c = {2, 1, 1, 1}, x = {1, 3, 4, 1}, y = {1, 2, 4, 2};
    const Operand ops[] = {op(c, "cond"), op(x, "x"), op(y, "y")};
    CHECK(infer_shape(3, ops, &rank, dims) == KGEN_ERROR_INVALID_ARGUMENT);
    const std::string msg = kgen_last_error();
    INFO(msg);
    CHECK(msg.rfind("y:", 0) == 0);
    CHECK(contains(msg, "[1,2,4,2]"));
    CHECK(contains(msg, "x [1,3,4,1]"));
    CHECK(contains(msg, "dim 1 is 3 in x and 2 in y"));
    CHECK(!contains(msg, "cond"));
  }
  // success: the shape and rank are written
  {
    const Dims c = {2, 1, 1, 1}, x = {1, 3, 4, 1}, y = {1, 1, 4, 2};
    const Operand ops[] = {op(c, "cond"), op(x, "x"), op(y, "y")};
    REQUIRE(infer_shape(3, ops, &rank, dims) == KGEN_OK);
    REQUIRE(rank == 4);
    CHECK(Dims(dims, dims + 4) == Dims{2, 3, 4, 2});
  }
  const Dims nine = {1, 1, 1, 1, 1, 1, 1, 1, 1}, ok = {2, 3}, neg = {2, 3, -4};
  {
    const Operand ops[] = {op(ok, "cond"), op(nine, "x")};
    expect_error(infer_shape(2, ops, &rank, dims), "x_rank");
  }
  {
    const Operand ops[] = {op(ok, "cond"), Operand{-1, ok.data(), "x"}};
    expect_error(infer_shape(2, ops, &rank, dims), "x_rank");
  }
  {
    const Operand ops[] = {op(ok, "cond"), op(neg, "x")};
    expect_error(infer_shape(2, ops, &rank, dims), "x_shape[2]");
  }
  {
    const Operand ops[] = {op(ok, "cond"), Operand{2, nullptr, "x"}};
    expect_error(infer_shape(2, ops, &rank, dims), "x_shape");
  }
  // rank 8 is the most a tensor has; dims count from the output's first
  {
    const Dims eight = {1, 1, 1, 1, 1, 1, 3, 1};
    const Operand ops[] = {op(eight, "x"), op(ok, "y")};
    expect_error(infer_shape(2, ops, &rank, dims), "y");
    CHECK(contains(kgen_last_error(), "dim 6 is 3 in x and 2 in y"));
    const Dims eight_ok = {1, 1, 1, 1, 1, 1, 2, 1};
    const Operand good[] = {op(eight_ok, "x"), op(ok, "y")};
    REQUIRE(infer_shape(2, good, &rank, dims) == KGEN_OK);
    CHECK(rank == 8);
    CHECK(Dims(dims, dims + 8) == Dims{1, 1, 1, 1, 1, 1, 2, 3});
  }
}

// ---------------------------------------------------------------------------
// simplify and route

TEST_CASE("broadcast simplify: drop ones, merge dims with one pattern across every input", "[broadcast]") {
  struct Row {
    std::vector<Dims> in;
    Dims out;
    // expected
    Dims dims;
    std::vector<Dims> strides;  // per input
    Route route;
  };
  const std::vector<Row> rows = {
      // one input of the output's shape: one dim, elementwise
      {{{2, 3, 4}}, {2, 3, 4}, {24}, {{1}}, Route::elementwise},
      // ... also with size-1 dims anywhere, or leading ones the output lacks
      {{{3, 1, 4}}, {3, 1, 4}, {12}, {{1}}, Route::elementwise},
      {{{1, 5}}, {5}, {5}, {{1}}, Route::elementwise},
      {{{5}}, {1, 5}, {5}, {{1}}, Route::elementwise},
      // a broadcast innermost or outermost dim
      {{{3, 1}}, {3, 4}, {3, 4}, {{1, 0}}, Route::strided},
      {{{4}}, {3, 4}, {3, 4}, {{0, 1}}, Route::strided},
      {{{1, 4}}, {2, 3, 4}, {6, 4}, {{0, 1}}, Route::strided},
      // scalars and all-ones shapes: one value, a fill
      {{{}}, {3, 4}, {12}, {{0}}, Route::fill},
      {{{1, 1}}, {3, 4}, {12}, {{0}}, Route::fill},
      {{{}, {1}, {1, 1, 1}}, {2, 3}, {6}, {{0}, {0}, {0}}, Route::fill},
      // an all-ones output, and rank 0: no dims left
      {{{1, 1, 1}}, {1, 1, 1}, {}, {{}}, Route::elementwise},
      {{{}}, {}, {}, {{}}, Route::elementwise},
      {{{1}, {1, 1}, {}}, {1, 1}, {}, {{}, {}, {}}, Route::elementwise},
      // where: every input of out's shape (ones aside) is a plain elementwise pass
      {{{8192, 8192}, {8192, 8192}, {8192, 8192}}, {8192, 8192}, {67108864}, {{1}, {1}, {1}}, Route::elementwise},
      {{{1, 6, 5}, {6, 5}, {1, 1, 6, 5}}, {6, 5}, {30}, {{1}, {1}, {1}}, Route::elementwise},
      // a mix of whole and scalar inputs at rank 1 is neither
      {{{6, 5}, {}, {6, 5}}, {6, 5}, {30}, {{1}, {0}, {1}}, Route::strided},
      // dims merge only when every input has the same pattern there
      {{{4, 1, 1}, {4, 5, 6}, {4, 5, 6}}, {4, 5, 6}, {4, 30}, {{1, 0}, {30, 1}, {30, 1}}, Route::strided},
      {{{4, 5, 6}, {1, 5, 6}, {4, 1, 6}}, {4, 5, 6}, {4, 5, 6}, {{30, 6, 1}, {0, 6, 1}, {6, 0, 1}},
       Route::strided},
      // a size-1 dim between two others vanishes, and the rest merge around it
      {{{3, 1, 1, 4}, {3, 2, 1, 4}, {1}}, {3, 2, 1, 4}, {3, 2, 4}, {{4, 0, 1}, {8, 4, 1}, {0, 0, 0}},
       Route::strided},
      {{{5, 1, 7}, {5, 1, 7}, {}}, {5, 1, 7}, {35}, {{1}, {1}, {0}}, Route::strided},
      // the bench case: cond (64,1,1,2048), x (64,16,2048,2048), y a scalar
      {{{64, 1, 1, 2048}, {64, 16, 2048, 2048}, {}},
       {64, 16, 2048, 2048},
       {64, 32768, 2048},
       {{2048, 0, 1}, {67108864, 2048, 1}, {0, 0, 0}},
       Route::strided},
      // rank 8 that merges into two dims
      {{{2, 2, 2, 2, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2, 2, 2}, {}},
       {2, 2, 2, 2, 2, 2, 2, 2},
       {16, 16},
       {{1, 0}, {16, 1}, {0, 0}},
       Route::strided},
      // rank 8 with alternating patterns: nothing merges
      {{{2, 1, 2, 1, 2, 1, 2, 1}, {1, 3, 1, 3, 1, 3, 1, 3}, {2, 3, 2, 3, 2, 3, 2, 3}},
       {2, 3, 2, 3, 2, 3, 2, 3},
       {2, 3, 2, 3, 2, 3, 2, 3},
       {{8, 0, 4, 0, 2, 0, 1, 0}, {0, 27, 0, 9, 0, 3, 0, 1}, {648, 216, 108, 36, 18, 6, 3, 1}},
       Route::strided},
      // zero-sized dims are kept (callers return early on empty outputs)
      {{{0, 1}, {0, 5}}, {0, 5}, {0, 5}, {{1, 0}, {5, 1}}, Route::strided},
  };
  for (const Row& r : rows) {
    std::vector<Operand> ops;
    std::vector<int> unit_bytes;
    static const char* const names[] = {"cond", "x", "y"};
    std::string in;
    for (size_t i = 0; i < r.in.size(); ++i) {
      ops.push_back(op(r.in[i], names[i]));
      unit_bytes.push_back(i == 0 ? 1 : 4);
      in += show(r.in[i]) + " ";
    }
    INFO(in << "-> " << show(r.out));
    const Layout l = kgen::broadcast::simplify(static_cast<int>(ops.size()), ops.data(), unit_bytes.data(),
                                               static_cast<int>(r.out.size()), r.out.data(), 4);
    INFO(show(l));
    CHECK(l.inputs == static_cast<int>(r.in.size()));
    CHECK(l.movement == 4);
    for (size_t i = 0; i < r.in.size(); ++i) CHECK(l.unit_bytes[i] == unit_bytes[i]);
    REQUIRE(l.rank == static_cast<int>(r.dims.size()));
    CHECK(Dims(l.dims, l.dims + l.rank) == r.dims);
    for (size_t i = 0; i < r.in.size(); ++i) {
      INFO("input " << i);
      CHECK(Dims(l.stride[i], l.stride[i] + l.rank) == r.strides[i]);
    }
    CHECK(kgen::broadcast::route(l) == r.route);
    // no dim is 1 afterwards, and the units cover the output
    int64_t n = 1;
    for (int64_t d : r.out) n *= d;
    if (n > 0) CHECK(kgen::broadcast::units(l) == n);
    for (int k = 0; k < l.rank; ++k) CHECK(l.dims[k] != 1);
  }
}

TEST_CASE("broadcast route names", "[broadcast]") {
  CHECK(std::string(kgen::broadcast::route_name(Route::elementwise)) == "elementwise");
  CHECK(std::string(kgen::broadcast::route_name(Route::fill)) == "fill");
  CHECK(std::string(kgen::broadcast::route_name(Route::strided)) == "strided");
}

// ---------------------------------------------------------------------------
// simplify_expand

namespace {

struct ExpandRow {
  int elem;
  Dims src, dst;
  uintptr_t src_ptr, dst_ptr;
  int max_movement;
  // expected
  int movement;
  Dims dims;
  Dims strides;
  Route route;
};

Layout expand_layout(const ExpandRow& r) {
  return kgen::broadcast::simplify_expand(op(r.src, "src"), static_cast<int>(r.dst.size()), r.dst.data(),
                                          r.elem, r.src_ptr, r.dst_ptr, r.max_movement);
}

}  // namespace

TEST_CASE("expand simplification: the element becomes bytes, then the unit widens", "[broadcast]") {
  const std::vector<ExpandRow> rows = {
      // the bench problems
      {4, {4096, 1, 4096}, {4096, 16, 4096}, A, A, 16, 16, {4096, 16, 1024}, {1024, 0, 1}, Route::strided},
      {4, {64, 1, 1024, 1}, {64, 64, 1024, 32}, A, A, 16, 4, {64, 64, 1024, 32}, {1024, 0, 1, 0},
       Route::strided},
      {2, {1, 8192}, {32768, 8192}, A, A, 16, 16, {32768, 1024}, {0, 1}, Route::strided},
      {4, {1, 8192}, {32768, 8192}, A, A, 16, 16, {32768, 2048}, {0, 1}, Route::strided},
      // the unit is as wide as both pointers allow
      {4, {4096, 1, 4096}, {4096, 16, 4096}, A + 8, A, 16, 8, {4096, 16, 2048}, {2048, 0, 1}, Route::strided},
      {4, {4096, 1, 4096}, {4096, 16, 4096}, A, A + 4, 16, 4, {4096, 16, 4096}, {4096, 0, 1}, Route::strided},
      {8, {3, 1, 5}, {3, 4, 5}, A, A + 8, 16, 8, {3, 4, 5}, {5, 0, 1}, Route::strided},
      // ... and the innermost spanned bytes: 5 float16 = 10 bytes -> 2-byte units
      {2, {3, 1, 5}, {3, 4, 5}, A, A, 16, 2, {3, 4, 5}, {5, 0, 1}, Route::strided},
      // misaligned (odd) pointers: byte units, and an innermost broadcast gains a dim of the element's bytes
      {4, {64, 1, 1024, 1}, {64, 64, 1024, 32}, A + 1, A, 16, 1, {64, 64, 1024, 32, 4}, {4096, 0, 4, 0, 1},
       Route::strided},
      {4, {64, 1, 1024, 1}, {64, 64, 1024, 32}, A, A + 3, 16, 1, {64, 64, 1024, 32, 4}, {4096, 0, 4, 0, 1},
       Route::strided},
      {4, {64, 1, 1024, 1}, {64, 64, 1024, 32}, A + 2, A, 16, 2, {64, 64, 1024, 32, 2}, {2048, 0, 2, 0, 1},
       Route::strided},
      {4, {7, 1}, {7, 3}, A + 1, A + 1, 16, 1, {7, 3, 4}, {4, 0, 1}, Route::strided},
      // an innermost spanned dim simply merges with the bytes
      {4, {4096, 1, 4096}, {4096, 16, 4096}, A + 1, A, 16, 1, {4096, 16, 16384}, {16384, 0, 1}, Route::strided},
      // max_movement caps the unit
      {4, {4096, 1, 4096}, {4096, 16, 4096}, A, A, 8, 8, {4096, 16, 2048}, {2048, 0, 1}, Route::strided},
      {4, {4096, 1, 4096}, {4096, 16, 4096}, A, A, 4, 4, {4096, 16, 4096}, {4096, 0, 1}, Route::strided},
      {4, {4096, 1, 4096}, {4096, 16, 4096}, A, A, 1, 1, {4096, 16, 16384}, {16384, 0, 1}, Route::strided},
      {2, {1, 8192}, {32768, 8192}, A, A, 2, 2, {32768, 8192}, {0, 1}, Route::strided},
      // a scalar (or all-ones) src is a fill of whole elements
      {4, {}, {3, 4}, A, A, 16, 4, {12}, {0}, Route::fill},
      {2, {1, 1}, {7, 9}, A, A, 16, 2, {63}, {0}, Route::fill},
      {8, {1}, {2, 3, 5}, A, A, 16, 8, {30}, {0}, Route::fill},
      {16, {}, {100}, A, A, 16, 16, {100}, {0}, Route::fill},
      // ... of smaller units when a pointer is misaligned: no longer a fill
      {4, {}, {3, 4}, A + 2, A, 16, 2, {12, 2}, {0, 1}, Route::strided},
      // nothing broadcast: one run of bytes, a copy
      {4, {4, 5, 6}, {4, 5, 6}, A, A, 16, 16, {30}, {1}, Route::elementwise},
      {4, {3, 5}, {3, 5}, A, A, 16, 4, {15}, {1}, Route::elementwise},
      {4, {5}, {1, 1, 5}, A, A, 16, 4, {5}, {1}, Route::elementwise},
      {4, {1, 5}, {1, 5}, A + 1, A, 16, 1, {20}, {1}, Route::elementwise},
      {2, {3, 1, 4}, {1, 3, 1, 4}, A, A, 16, 8, {3}, {1}, Route::elementwise},
      // rank 8 with alternating broadcast dims: nothing merges ...
      {4, {2, 1, 2, 1, 2, 1, 2, 1}, {2, 3, 2, 3, 2, 3, 2, 3}, A, A, 16, 4, {2, 3, 2, 3, 2, 3, 2, 3},
       {8, 0, 4, 0, 2, 0, 1, 0}, Route::strided},
      // ... and a misaligned pointer adds a 9th dim of bytes
      {4, {2, 1, 2, 1, 2, 1, 2, 1}, {2, 3, 2, 3, 2, 3, 2, 3}, A + 1, A, 16, 1, {2, 3, 2, 3, 2, 3, 2, 3, 4},
       {32, 0, 16, 0, 8, 0, 4, 0, 1}, Route::strided},
      // rank 8 that merges into two dims
      {4, {2, 2, 2, 2, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2, 2, 2}, A, A, 16, 4, {16, 16}, {1, 0}, Route::strided},
      {4, {1, 1, 1, 1, 2, 2, 2, 2}, {2, 2, 2, 2, 2, 2, 2, 2}, A, A, 16, 16, {16, 4}, {0, 1}, Route::strided},
      // added leading dims broadcast
      {4, {8}, {3, 8}, A, A, 16, 16, {3, 2}, {0, 1}, Route::strided},
      // one-byte elements broadcast along the innermost dim: a unit is one element, src holds no wider run
      {1, {}, {16}, A, A, 16, 1, {16}, {0}, Route::fill},
      {1, {4, 1}, {4, 32}, A, A, 16, 1, {4, 32}, {1, 0}, Route::strided},
      {1, {1}, {64}, A, A, 16, 1, {64}, {0}, Route::fill},
      // one-byte elements spanned innermost still widen
      {1, {1, 64}, {8, 64}, A, A, 16, 16, {8, 4}, {0, 1}, Route::strided},
      // a single one-byte element
      {1, {}, {}, A, A, 16, 1, {}, {}, Route::elementwise},
      {1, {1, 1}, {1, 1, 1}, A, A, 16, 1, {}, {}, Route::elementwise},
      // a single wider element
      {4, {}, {}, A, A, 16, 4, {}, {}, Route::elementwise},
      {4, {1}, {1, 1}, A + 2, A, 16, 2, {2}, {1}, Route::elementwise},
  };
  for (const ExpandRow& r : rows) {
    INFO("elem " << r.elem << " " << show(r.src) << " -> " << show(r.dst) << " src +" << r.src_ptr % 256
                 << " dst +" << r.dst_ptr % 256 << " max " << r.max_movement);
    const Layout l = expand_layout(r);
    INFO(show(l));
    CHECK(l.inputs == 1);
    CHECK(l.movement == r.movement);
    CHECK(l.unit_bytes[0] == l.movement);
    // the units cover exactly the bytes of dst
    int64_t bytes = r.elem;
    for (int64_t d : r.dst) bytes *= d;
    CHECK(kgen::broadcast::units(l) * l.movement == bytes);
    // ... and src's units exactly its bytes: the last unit read ends at src's end
    int64_t src_bytes = r.elem, last = 0;
    for (int64_t d : r.src) src_bytes *= d;
    for (int k = 0; k < l.rank; ++k) last += (l.dims[k] - 1) * l.stride[0][k];
    CHECK((last + 1) * l.movement == src_bytes);
    CHECK(l.rank == static_cast<int>(r.dims.size()));
    if (l.rank != static_cast<int>(r.dims.size())) continue;
    CHECK(Dims(l.dims, l.dims + l.rank) == r.dims);
    CHECK(Dims(l.stride[0], l.stride[0] + l.rank) == r.strides);
    CHECK(kgen::broadcast::route(l) == r.route);
    for (int k = 0; k < l.rank; ++k) CHECK(l.dims[k] != 1);
  }
}

TEST_CASE("expand simplification honours the widest unit a variant moves", "[broadcast]") {
  for (int m : {1, 2, 4, 8, 16}) {
    INFO("max_movement " << m);
    const ExpandRow r{4, {4096, 1, 4096}, {4096, 16, 4096}, A, A, m, 0, {}, {}, Route::strided};
    const Layout l = expand_layout(r);
    CHECK(l.movement == m);
    REQUIRE(l.rank == 3);
    CHECK(l.dims[2] == 16384 / m);
    CHECK(l.stride[0][0] == 16384 / m);
  }
}

// ---------------------------------------------------------------------------
// argument validation through the C API

namespace {

kgen_status_t expand(kgen_dtype_t dtype, const Dims& src_shape, const Dims& dst_shape, const void* src,
                     void* dst) {
  return kgen_expand(dtype, static_cast<int>(src_shape.size()), src_shape.data(),
                     static_cast<int>(dst_shape.size()), dst_shape.data(), src, dst, nullptr);
}

kgen_status_t where(kgen_dtype_t dtype, const Dims& c, const Dims& x, const Dims& y, const void* cp,
                    const void* xp, const void* yp, void* out) {
  return kgen_where(dtype, static_cast<int>(c.size()), c.data(), static_cast<int>(x.size()), x.data(),
                    static_cast<int>(y.size()), y.data(), cp, xp, yp, out, nullptr);
}

struct Outcome {
  kgen_status_t status;
  std::string message;
};

Outcome outcome(kgen_status_t st) { return {st, kgen_last_error()}; }

std::string named(const std::string& message) { return message.substr(0, message.find(':')); }

// A call that gets past host validation ends as the reference call, a valid
// one, does: the device query (no GPU) or the device-pointer check of the
// first input (fake pointers) fails the same way for both, naming the same
// thing; never an argument error about shapes, sizes, alignment or overlap.
void expect_same(const Outcome& got, const Outcome& ref) {
  INFO("got: " << got.message);
  INFO("reference: " << ref.message);
  CHECK(got.status == ref.status);
  CHECK(named(got.message) == named(ref.message));
  CHECK(got.status != KGEN_OK);  // fake pointers never run
}

}  // namespace

TEST_CASE("expand rejects bad arguments by name before touching the GPU", "[broadcast]") {
  const void* src = addr(0);
  void* dst = addr(1);
  const Dims s = {3, 1}, d = {2, 3, 5};
  expect_error(expand(static_cast<kgen_dtype_t>(99), s, d, src, dst), "dtype");
  expect_error(expand(static_cast<kgen_dtype_t>(-1), s, d, src, dst), "dtype");
  // ranks
  const Dims nine = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  expect_error(expand(KGEN_FLOAT32, nine, nine, src, dst), "src_rank");
  expect_error(kgen_expand(KGEN_FLOAT32, -1, s.data(), 3, d.data(), src, dst, nullptr), "src_rank");
  expect_error(expand(KGEN_FLOAT32, s, nine, src, dst), "dst_rank");
  expect_error(kgen_expand(KGEN_FLOAT32, 2, s.data(), -1, d.data(), src, dst, nullptr), "dst_rank");
  expect_error(expand(KGEN_FLOAT32, {2, 3}, {6}, src, dst), "dst_rank");
  expect_error(expand(KGEN_FLOAT32, {1, 1}, {}, src, dst), "dst_rank");
  // null shapes
  expect_error(kgen_expand(KGEN_FLOAT32, 2, nullptr, 3, d.data(), src, dst, nullptr), "src_shape");
  expect_error(kgen_expand(KGEN_FLOAT32, 2, s.data(), 3, nullptr, src, dst, nullptr), "dst_shape");
  // -1 only keeps a size of src, never in an added leading dim
  expect_error(expand(KGEN_FLOAT32, s, {-1, 3, 5}, src, dst), "dst_shape[0]");
  expect_error(expand(KGEN_FLOAT32, {4}, {-1, -1}, src, dst), "dst_shape[0]");
  // negative sizes
  expect_error(expand(KGEN_FLOAT32, s, {2, 3, -2}, src, dst), "dst_shape[2]");
  expect_error(expand(KGEN_FLOAT32, s, {2, -3, 5}, src, dst), "dst_shape[1]");
  expect_error(expand(KGEN_FLOAT32, {3, -1}, d, src, dst), "src_shape[1]");
  // only a size-1 dim grows
  {
    expect_error(expand(KGEN_FLOAT32, {3, 2}, {3, 5}, src, dst), "dst_shape[1]");
    const std::string msg = kgen_last_error();
    INFO(msg);
    CHECK(contains(msg, "src dim 1"));
    CHECK(contains(msg, "size 2 to 5"));
  }
  {
    expect_error(expand(KGEN_FLOAT32, {2}, {4, 3}, src, dst), "dst_shape[1]");
    const std::string msg = kgen_last_error();
    INFO(msg);
    CHECK(contains(msg, "src dim 0"));
    CHECK(contains(msg, "size 2 to 3"));
  }
  expect_error(expand(KGEN_FLOAT32, {3, 1}, {2, 4, 1}, src, dst), "dst_shape[1]");
  // a size-0 dim is not a 1: it does not grow
  expect_error(expand(KGEN_FLOAT32, {0}, {3}, src, dst), "dst_shape[0]");
  // pointers of a non-empty dst
  expect_error(expand(KGEN_FLOAT32, s, d, nullptr, dst), "src");
  expect_error(expand(KGEN_FLOAT32, s, d, src, nullptr), "dst");
  expect_error(expand(KGEN_FLOAT32, {}, {4}, nullptr, dst), "src");
  // overlap of src and dst, including the same buffer: an expand is never in place
  expect_error(expand(KGEN_FLOAT32, s, d, src, addr(0, 8)), "dst");
  CHECK(contains(kgen_last_error(), "overlaps src"));
  expect_error(expand(KGEN_FLOAT32, s, d, src, const_cast<void*>(src)), "dst");
  expect_error(expand(KGEN_FLOAT32, s, d, addr(1, 16), dst), "dst");  // src inside dst's 120 bytes
  // ... while adjacent buffers are fine: src's 12 bytes end where dst starts
  expect_same(outcome(expand(KGEN_FLOAT32, s, d, addr(1, 256 - 12), addr(1, 256))),
              outcome(expand(KGEN_FLOAT32, s, d, src, dst)));
  // the selected-variant query validates the same way
  const char* name = nullptr;
  expect_error(kgen_expand_selected(KGEN_FLOAT32, 2, Dims{3, 2}.data(), 2, Dims{3, 5}.data(), src, dst, &name),
               "dst_shape[1]");
  expect_error(kgen_expand_selected(KGEN_FLOAT32, 2, s.data(), 3, d.data(), src, dst, nullptr), "variant");
}

TEST_CASE("expand: -1 keeps the size of an existing dim", "[broadcast]") {
  const void* src = addr(0);
  void* dst = addr(1);
  const Outcome ref = outcome(expand(KGEN_FLOAT32, {3, 1}, {2, 3, 5}, src, dst));
  expect_same(outcome(expand(KGEN_FLOAT32, {3, 1}, {2, -1, 5}, src, dst)), ref);
  expect_same(outcome(expand(KGEN_FLOAT32, {3, 1}, {2, -1, -1}, src, dst)),
              outcome(expand(KGEN_FLOAT32, {3, 1}, {2, 3, 1}, src, dst)));
  // the query: validation passes, then a device query or pointer check decides
  const char* name = nullptr;
  const Dims s = {3, 1}, d = {2, -1, 5};
  const kgen_status_t st = kgen_expand_selected(KGEN_FLOAT32, 2, s.data(), 3, d.data(), src, dst, &name);
  INFO(kgen_last_error());
  CHECK(std::string(kgen_last_error()).rfind("dst_shape", 0) != 0);
  if (st == KGEN_ERROR_INVALID_ARGUMENT) CHECK(std::string(kgen_last_error()).rfind("src:", 0) == 0);
  // -1 over a size-0 dim keeps 0: an empty dst, nothing to do
  CHECK(expand(KGEN_FLOAT32, {0, 1}, {2, -1, 5}, nullptr, nullptr) == KGEN_OK);
}

TEST_CASE("expand: an empty dst is a no-op, even with null pointers", "[broadcast]") {
  CHECK(expand(KGEN_FLOAT32, {1, 4}, {0, 4}, nullptr, nullptr) == KGEN_OK);
  CHECK(std::string(kgen_last_error()).empty());
  CHECK(expand(KGEN_FLOAT16, {0}, {3, 0}, nullptr, nullptr) == KGEN_OK);
  CHECK(expand(KGEN_UINT8, {}, {5, 0, 2}, nullptr, nullptr) == KGEN_OK);
  const char* name = "unset";
  const Dims s = {1, 4}, d = {0, 4};
  CHECK(kgen_expand_selected(KGEN_FLOAT32, 2, s.data(), 2, d.data(), nullptr, nullptr, &name) == KGEN_OK);
  REQUIRE(name != nullptr);
  CHECK(std::string(name).empty());
  // bad shapes are errors even when dst would be empty
  expect_error(expand(KGEN_FLOAT32, {2}, {0, 3}, nullptr, nullptr), "dst_shape[1]");
  expect_error(expand(KGEN_FLOAT32, {2}, {-1, 0}, nullptr, nullptr), "dst_shape[0]");
}

TEST_CASE("where rejects bad arguments by name before touching the GPU", "[broadcast]") {
  const Dims c = {4, 1}, x = {4, 4}, y = {};
  const void* cp = addr(0);
  const void* xp = addr(1);
  const void* yp = addr(2);
  void* out = addr(3);
  expect_error(where(static_cast<kgen_dtype_t>(8), c, x, y, cp, xp, yp, out), "dtype");
  expect_error(where(static_cast<kgen_dtype_t>(-3), c, x, y, cp, xp, yp, out), "dtype");
  // incompatible shapes
  {
    const kgen_status_t st = where(KGEN_FLOAT32, {2, 1, 1, 1}, {1, 3, 4, 1}, {1, 2, 4, 2}, cp, xp, yp, out);
    CHECK(st == KGEN_ERROR_INVALID_ARGUMENT);
    const std::string msg = kgen_last_error();
    INFO(msg);
    CHECK(msg.rfind("y:", 0) == 0);
    CHECK(contains(msg, "x [1,3,4,1]"));
    CHECK(contains(msg, "dim 1 is 3 in x and 2 in y"));
  }
  expect_error(where(KGEN_FLOAT32, {3}, x, y, cp, xp, yp, out), "x");
  CHECK(contains(kgen_last_error(), "dim 1 is 3 in cond and 4 in x"));
  // ranks, shape pointers and sizes name the operand
  const Dims nine = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  expect_error(where(KGEN_FLOAT32, nine, x, y, cp, xp, yp, out), "cond_rank");
  expect_error(where(KGEN_FLOAT32, c, x, nine, cp, xp, yp, out), "y_rank");
  expect_error(where(KGEN_FLOAT32, c, {4, -4}, y, cp, xp, yp, out), "x_shape[1]");
  expect_error(kgen_where(KGEN_FLOAT32, 2, c.data(), 2, nullptr, 0, nullptr, cp, xp, yp, out, nullptr),
               "x_shape");
  // null pointers
  expect_error(where(KGEN_FLOAT32, c, x, y, nullptr, xp, yp, out), "cond");
  expect_error(where(KGEN_FLOAT32, c, x, y, cp, nullptr, yp, out), "x");
  expect_error(where(KGEN_FLOAT32, c, x, y, cp, xp, nullptr, out), "y");
  expect_error(where(KGEN_FLOAT32, c, x, y, cp, xp, yp, nullptr), "out");
  // x, y and out aligned to the dtype (cond is bytes: any address)
  expect_error(where(KGEN_FLOAT32, c, x, y, cp, addr(1, 2), yp, out), "x");
  expect_error(where(KGEN_FLOAT32, c, x, y, cp, xp, addr(2, 2), out), "y");
  expect_error(where(KGEN_FLOAT32, c, x, y, cp, xp, yp, addr(3, 2)), "out");
  expect_error(where(KGEN_FLOAT64, c, x, y, cp, xp, yp, addr(3, 4)), "out");
  expect_error(where(KGEN_FLOAT16, c, x, y, cp, addr(1, 1), yp, out), "x");
  const Outcome ref = outcome(where(KGEN_FLOAT32, c, x, y, cp, xp, yp, out));
  expect_same(outcome(where(KGEN_FLOAT32, c, x, y, addr(0, 3), xp, yp, out)), ref);
  expect_same(outcome(where(KGEN_UINT8, c, x, y, cp, addr(1, 1), addr(2, 3), addr(3, 5))),
              outcome(where(KGEN_UINT8, c, x, y, cp, xp, yp, out)));
  // out (64 bytes) overlapping cond (4 bytes) or x (64 bytes) partially
  expect_error(where(KGEN_FLOAT32, c, x, y, addr(3, 60), xp, yp, out), "out");
  CHECK(contains(kgen_last_error(), "overlaps cond"));
  expect_error(where(KGEN_FLOAT32, c, x, y, cp, addr(3, 4), yp, out), "out");
  CHECK(contains(kgen_last_error(), "overlaps x"));
  expect_error(where(KGEN_FLOAT32, c, x, y, cp, xp, addr(3, 32), out), "out");
  CHECK(contains(kgen_last_error(), "overlaps y"));
  // ... or out itself being a broadcast input (smaller than out)
  expect_error(where(KGEN_FLOAT32, c, {4}, x, cp, out, yp, out), "out");
  CHECK(contains(kgen_last_error(), "overlaps x"));
  expect_error(where(KGEN_FLOAT32, c, x, {1, 4}, cp, xp, out, out), "out");
  CHECK(contains(kgen_last_error(), "overlaps y"));
  // ... or cond, whose elements are smaller than out's
  expect_error(where(KGEN_FLOAT32, x, x, y, out, xp, yp, out), "out");
  CHECK(contains(kgen_last_error(), "overlaps cond"));
  // out == x (or y) of out's shape is in place: past validation
  expect_same(outcome(where(KGEN_FLOAT32, c, x, y, cp, out, yp, out)), ref);
  expect_same(outcome(where(KGEN_FLOAT32, c, {1, 4, 4}, y, cp, out, yp, out)),
              outcome(where(KGEN_FLOAT32, c, {1, 4, 4}, y, cp, xp, yp, out)));
  expect_same(outcome(where(KGEN_FLOAT32, c, y, x, cp, yp, out, out)),
              outcome(where(KGEN_FLOAT32, c, y, x, cp, yp, xp, out)));
  // inputs may overlap each other: they are only read
  expect_same(outcome(where(KGEN_FLOAT32, c, x, x, cp, xp, xp, out)),
              outcome(where(KGEN_FLOAT32, c, x, x, cp, xp, yp, out)));
  // the query validates the same way
  const char* name = nullptr;
  const Dims two = {2};
  CHECK(kgen_where_selected(KGEN_FLOAT32, 2, c.data(), 2, x.data(), 0, y.data(), cp, xp, yp, addr(3, 2),
                            &name) == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kgen_last_error()).rfind("out", 0) == 0);
  expect_error(kgen_where_selected(KGEN_FLOAT32, 1, two.data(), 2, x.data(), 0, y.data(), cp, xp, yp, out,
                                   &name),
               "x");
  expect_error(kgen_where_selected(KGEN_FLOAT32, 2, c.data(), 2, x.data(), 0, y.data(), cp, xp, yp, out,
                                   nullptr),
               "variant");
}

TEST_CASE("where: an empty out is a no-op, even with null pointers", "[broadcast]") {
  CHECK(where(KGEN_FLOAT32, {0, 3}, {1, 3}, {}, nullptr, nullptr, nullptr, nullptr) == KGEN_OK);
  CHECK(std::string(kgen_last_error()).empty());
  CHECK(where(KGEN_INT64, {}, {}, {5, 0}, nullptr, nullptr, nullptr, nullptr) == KGEN_OK);
  const char* name = "unset";
  const Dims c = {0, 3}, x = {1, 3};
  CHECK(kgen_where_selected(KGEN_BOOL, 2, c.data(), 2, x.data(), 0, nullptr, nullptr, nullptr, nullptr,
                            nullptr, &name) == KGEN_OK);
  REQUIRE(name != nullptr);
  CHECK(std::string(name).empty());
  // shapes that do not broadcast are errors even when one of them is empty
  expect_error(where(KGEN_FLOAT32, {0}, {3}, {}, nullptr, nullptr, nullptr, nullptr), "x");
}

TEST_CASE("broadcast: a named variant must be a compiled variant of the family", "[broadcast]") {
  const Dims s = {3, 1}, d = {3, 4}, c = {3, 1}, x = {3, 4}, y = {};
  const void* src = addr(0);
  void* dst = addr(1);
  const auto& permute = kgen::Registry::of(kgen::Family::permute, kgen::movement_key(4));
  const auto& expand4 = kgen::Registry::of(kgen::Family::expand, kgen::movement_key(4));
  const auto& where4 = kgen::Registry::of(kgen::Family::where, kgen::movement_key(4));
  REQUIRE(!permute.empty());
  REQUIRE(!expand4.empty());
  REQUIRE(!where4.empty());
  for (const char* name : {permute.front()->name, where4.front()->name, "expand_no_such_variant", ""}) {
    INFO(name);
    CHECK(kgen_expand_variant(name, KGEN_FLOAT32, 2, s.data(), 2, d.data(), src, dst, nullptr) ==
          KGEN_ERROR_UNSUPPORTED);
    const std::string msg = kgen_last_error();
    CHECK(msg.rfind("variant", 0) == 0);
    CHECK(contains(msg, "expand"));
  }
  for (const char* name : {permute.front()->name, expand4.front()->name, "where_no_such_variant"}) {
    INFO(name);
    CHECK(kgen_where_variant(name, KGEN_FLOAT32, 2, c.data(), 2, x.data(), 0, y.data(), addr(2), addr(3),
                             addr(4), addr(5), nullptr) == KGEN_ERROR_UNSUPPORTED);
    const std::string msg = kgen_last_error();
    CHECK(msg.rfind("variant", 0) == 0);
    CHECK(contains(msg, "where"));
  }
  // a variant of the family goes on to validate the arguments
  expect_error(kgen_expand_variant(expand4.front()->name, KGEN_FLOAT32, 2, Dims{3, 2}.data(), 2, d.data(), src,
                                   dst, nullptr),
               "dst_shape[1]");
  expect_error(kgen_where_variant(where4.front()->name, KGEN_FLOAT32, 2, c.data(), 2, x.data(), 0, y.data(),
                                  nullptr, addr(3), addr(4), addr(5), nullptr),
               "cond");
}

TEST_CASE("broadcast dtypes: int64, bool and uint8", "[broadcast]") {
  CHECK(kgen_dtype_size(KGEN_INT64) == 8);
  CHECK(kgen_dtype_size(KGEN_BOOL) == 1);
  CHECK(kgen_dtype_size(KGEN_UINT8) == 1);
  CHECK(kgen_dtype_size(KGEN_INT32) == 4);
  CHECK(kgen_dtype_size(static_cast<kgen_dtype_t>(8)) == 0);
  // other families do not take them
  const void* x = addr(0);
  void* out = addr(1);
  for (kgen_dtype_t d : {KGEN_INT64, KGEN_BOOL, KGEN_UINT8}) {
    INFO("dtype " << static_cast<int>(d));
    for (kgen_reduce_op_t o : {KGEN_REDUCE_SUM, KGEN_REDUCE_MAX, KGEN_REDUCE_ARGMAX}) {
      expect_error(kgen_reduce(o, d, 1, 4, 1, x, out, nullptr), "dtype");
    }
    expect_error(kgen_softmax(d, 1, 4, x, out, nullptr), "dtype");
  }
  // broadcast takes them: these fail for the pointers, not the dtype
  expect_error(expand(KGEN_INT64, {3, 1}, {3, 4}, nullptr, out), "src");
  expect_error(where(KGEN_BOOL, {3, 1}, {3, 4}, {}, x, nullptr, x, out), "x");
  expect_error(where(KGEN_INT64, {3, 1}, {3, 4}, {}, x, addr(2, 4), x, out), "x");
}

// ---------------------------------------------------------------------------
// capability and selection on a described device

namespace {

struct Knobs {
  int tier;  // 0 flat, 1 elem, 2 generic (ExpandTier and WhereTier agree)
  int pack, rank, index;
};

Knobs knobs(const kgen::VariantInfo& v) {
  if (v.family == kgen::Family::expand) {
    const auto& q = *static_cast<const kgen::gen::ExpandParams*>(v.params);
    return {static_cast<int>(q.tier), q.pack, q.rank, q.index};
  }
  const auto& q = *static_cast<const kgen::gen::WhereParams*>(v.params);
  return {static_cast<int>(q.tier), q.pack, q.rank, q.index};
}

constexpr int kFlat = static_cast<int>(kgen::gen::ExpandTier::flat);
constexpr int kElem = static_cast<int>(kgen::gen::ExpandTier::elem);
constexpr int kGeneric = static_cast<int>(kgen::gen::ExpandTier::generic);
static_assert(kFlat == static_cast<int>(kgen::gen::WhereTier::flat) &&
                  kElem == static_cast<int>(kgen::gen::WhereTier::elem) &&
                  kGeneric == static_cast<int>(kgen::gen::WhereTier::generic),
              "expand and where share their tiers");

const kgen::DeviceInfo& device() {
  static const kgen::DeviceInfo dev;  // defaults describe an H100 SXM
  return dev;
}

struct Built {
  kgen::Family family;
  kgen::broadcast::Problem p;
};

// As api.cpp: expand simplified with its unit widened, 256-byte aligned pointers.
Built expand_problem(int elem, const Dims& src, const Dims& dst, uintptr_t src_off = 0,
                     uintptr_t dst_off = 0) {
  Built b{kgen::Family::expand, {}};
  b.p.in[0] = addr(0, src_off);
  b.p.out = addr(1, dst_off);
  b.p.device = &device();
  b.p.layout = kgen::broadcast::simplify_expand(op(src, "src"), static_cast<int>(dst.size()), dst.data(), elem,
                                                reinterpret_cast<uintptr_t>(b.p.in[0]),
                                                reinterpret_cast<uintptr_t>(b.p.out), 16);
  return b;
}

// As api.cpp: where's cond in bytes, x, y and out in elements.
Built where_problem(int elem, const Dims& c, const Dims& x, const Dims& y, uintptr_t out_off = 0,
                    uintptr_t cond_off = 0, uintptr_t x_off = 0, uintptr_t y_off = 0) {
  Built b{kgen::Family::where, {}};
  const Operand ops[] = {op(c, "cond"), op(x, "x"), op(y, "y")};
  int rank = 0;
  int64_t dims[8];
  REQUIRE(kgen::broadcast::infer_shape(3, ops, &rank, dims) == KGEN_OK);
  const int unit_bytes[] = {1, elem, elem};
  b.p.in[0] = addr(0, cond_off);
  b.p.in[1] = addr(1, x_off);
  b.p.in[2] = addr(2, y_off);
  b.p.out = addr(3, out_off);
  b.p.device = &device();
  b.p.layout = kgen::broadcast::simplify(3, ops, unit_bytes, rank, dims, elem);
  return b;
}

const std::vector<const kgen::VariantInfo*>& variants_of(const Built& b) {
  return kgen::Registry::of(b.family, kgen::movement_key(b.p.layout.movement));
}

const kgen::VariantInfo* generic_of(const Built& b) {
  for (const kgen::VariantInfo* v : variants_of(b))
    if (v->generic) return v;
  return nullptr;
}

// A compiled variant with these knobs (index -1: any), or null.
const kgen::VariantInfo* find_variant(const Built& b, int tier, int rank, int pack, int index) {
  for (const kgen::VariantInfo* v : variants_of(b)) {
    const Knobs q = knobs(*v);
    if (q.tier == tier && (tier != kElem || q.rank == rank) && q.pack == pack && (index < 0 || q.index == index))
      return v;
  }
  return nullptr;
}

bool runs(const kgen::VariantInfo* v, const Built& b) { return v->supports(*v, &b.p); }

Knobs pick(const Built& b, const kgen::VariantInfo** chosen = nullptr) {
  const kgen::Selection sel =
      kgen::select_variant(b.family, kgen::movement_key(b.p.layout.movement), device(), &b.p,
                           &kgen::broadcast::heuristic);
  REQUIRE(sel.variant != nullptr);
  INFO(sel.variant->name);
  CHECK(sel.variant->family == b.family);
  CHECK(sel.variant->element == kgen::movement_key(b.p.layout.movement));
  CHECK(sel.variant->supports(*sel.variant, &b.p));
  if (chosen) *chosen = sel.variant;
  return knobs(*sel.variant);
}

}  // namespace

TEST_CASE("every expand and where unit size has exactly one generic variant", "[broadcast][registry][default-set]") {
  for (kgen::Family f : {kgen::Family::expand, kgen::Family::where}) {
    for (int m : {1, 2, 4, 8, 16}) {
      INFO(kgen::family_name(f) << " unit " << m);
      int generic = 0, flat = 0, elem = 0;
      for (const kgen::VariantInfo* v : kgen::Registry::of(f, kgen::movement_key(m))) {
        CHECK(v->family == f);
        CHECK(v->element == kgen::movement_key(m));
        const Knobs q = knobs(*v);
        CHECK(v->generic == (q.tier == kGeneric));
        CHECK(q.pack * m <= 16);
        generic += v->generic;
        flat += q.tier == kFlat;
        if (q.tier == kElem) {
          ++elem;
          CHECK(q.rank >= 2);
          CHECK(q.rank <= 8);
        }
      }
      // where moves elements of 1 to 8 bytes; expand also 16-byte units
      const bool compiled = f == kgen::Family::expand || m <= 8;
      CHECK(generic == (compiled ? 1 : 0));
      if (compiled) {
        CHECK(flat >= 1);
        CHECK(elem >= 1);
      }
    }
  }
}

TEST_CASE("broadcast selection on the bench problems: widest pack, tier by rank", "[broadcast][default-set]") {
  struct Bench {
    const char* what;
    Built b;
  };
  const std::vector<Bench> benches = {
      {"expand f32 (4096,1,4096)->(4096,16,4096)", expand_problem(4, {4096, 1, 4096}, {4096, 16, 4096})},
      {"expand f32 (1,8192)->(32768,8192)", expand_problem(4, {1, 8192}, {32768, 8192})},
      {"expand f16 (1,8192)->(32768,8192)", expand_problem(2, {1, 8192}, {32768, 8192})},
      {"expand f32 (64,1,1024,1)->(64,64,1024,32)", expand_problem(4, {64, 1, 1024, 1}, {64, 64, 1024, 32})},
      {"where f32 (8192,8192) x3", where_problem(4, {8192, 8192}, {8192, 8192}, {8192, 8192})},
      {"where f32 (64,1,1,2048) (64,16,2048,2048) ()", where_problem(4, {64, 1, 1, 2048}, {64, 16, 2048, 2048}, {})},
      {"where f16 (64,1,1,2048) (64,16,2048,2048) ()", where_problem(2, {64, 1, 1, 2048}, {64, 16, 2048, 2048}, {})},
      {"where u8 (64,1,1,2048) (64,16,2048,2048) ()", where_problem(1, {64, 1, 1, 2048}, {64, 16, 2048, 2048}, {})},
  };
  const int expected_movement[] = {16, 16, 16, 4, 4, 4, 2, 1};
  const int expected_rank[] = {3, 2, 2, 4, 1, 3, 3, 3};
  for (size_t i = 0; i < benches.size(); ++i) {
    const Built& b = benches[i].b;
    INFO(benches[i].what << ": " << show(b.p.layout));
    REQUIRE(b.p.layout.movement == expected_movement[i]);
    REQUIRE(b.p.layout.rank == expected_rank[i]);
    const kgen::VariantInfo* v = nullptr;
    const Knobs q = pick(b, &v);
    INFO(v->name);
    const int rank = b.p.layout.rank;
    const int widest = 16 / b.p.layout.movement;
    CHECK(q.tier == (rank <= 1 ? kFlat : kElem));
    if (q.tier == kElem) {
      CHECK(q.rank == rank);
      CHECK(q.index == 0);  // int32 indices: fewer than 2^31 packs
    }
    if (find_variant(b, rank <= 1 ? kFlat : kElem, rank, widest, rank <= 1 ? -1 : 0)) {
      CHECK(q.pack == widest);
      CHECK(q.pack * b.p.layout.movement == 16);
    } else {
      CHECK(q.pack * b.p.layout.movement <= 16);
    }
    // at the default level the widest pack is compiled for ranks 2-4
    if (rank <= 4) CHECK(find_variant(b, rank <= 1 ? kFlat : kElem, rank, widest, rank <= 1 ? -1 : 0) != nullptr);
    // the generic variant of the unit size runs it too, but is never preferred
    const kgen::VariantInfo* g = generic_of(b);
    REQUIRE(g != nullptr);
    CHECK(runs(g, b));
    CHECK(kgen::broadcast::heuristic(*g, &b.p).rejected());
    CHECK(!v->generic);
  }
}

TEST_CASE("broadcast capability: unit size, rank, pack and index limits", "[broadcast][default-set]") {
  // a variant of another unit size never runs a problem
  {
    const Built b = expand_problem(4, {4096, 1, 4096}, {4096, 16, 4096});  // 16-byte units, rank 3
    REQUIRE(b.p.layout.movement == 16);
    int checked = 0;
    for (int m : {1, 2, 4, 8}) {
      for (const kgen::VariantInfo* v : kgen::Registry::of(kgen::Family::expand, kgen::movement_key(m))) {
        INFO(v->name);
        CHECK(!runs(v, b));
        ++checked;
      }
    }
    CHECK(checked > 0);
    // of the right unit size: only elem variants of rank 3 (and the generic one)
    for (const kgen::VariantInfo* v : variants_of(b)) {
      INFO(v->name);
      const Knobs q = knobs(*v);
      if (q.tier == kFlat || (q.tier == kElem && q.rank != 3)) CHECK(!runs(v, b));
      if (q.tier == kElem && q.rank == 3) CHECK(runs(v, b));
      if (q.tier == kGeneric) CHECK(runs(v, b));
    }
  }
  // flat variants take rank <= 1 only
  {
    const Built b = where_problem(4, {8192, 8192}, {8192, 8192}, {8192, 8192});
    REQUIRE(b.p.layout.rank == 1);
    for (const kgen::VariantInfo* v : variants_of(b)) {
      INFO(v->name);
      const Knobs q = knobs(*v);
      if (q.tier == kElem) CHECK(!runs(v, b));
      if (q.tier == kFlat) CHECK(runs(v, b));  // 2^26 elements divide every pack
    }
    // a single element (rank 0) and a fill (rank 1, src a scalar) are flat too
    const Built one = where_problem(4, {1}, {}, {1, 1});
    REQUIRE(one.p.layout.rank == 0);
    CHECK(pick(one).tier == kFlat);
    const Built wide_fill = expand_problem(4, {}, {1000});
    REQUIRE(wide_fill.p.layout.rank == 1);
    CHECK(pick(wide_fill).tier == kFlat);
  }
  // the pack must divide the innermost dim
  {
    const Built b = where_problem(4, {3, 1}, {3, 6}, {3, 6});  // dims (3,6)
    REQUIRE(b.p.layout.rank == 2);
    REQUIRE(b.p.layout.dims[1] == 6);
    const kgen::VariantInfo* v4 = find_variant(b, kElem, 2, 4, 0);
    const kgen::VariantInfo* v1 = find_variant(b, kElem, 2, 1, 0);
    REQUIRE(v1 != nullptr);
    CHECK(runs(v1, b));
    if (v4) CHECK(!runs(v4, b));
    const kgen::VariantInfo* v2 = find_variant(b, kElem, 2, 2, 0);
    if (v2) CHECK(runs(v2, b));  // only compiled at the full level
    const Knobs q = pick(b);
    CHECK(q.tier == kElem);
    CHECK(6 % q.pack == 0);
    CHECK(q.pack < 4);
  }
  // ... and out and every input spanning the innermost dim be aligned to it
  {
    const Built aligned = where_problem(4, {3, 1}, {3, 8}, {});  // dims (3,8), y a scalar
    const kgen::VariantInfo* v4 = find_variant(aligned, kElem, 2, 4, 0);
    const kgen::VariantInfo* v1 = find_variant(aligned, kElem, 2, 1, 0);
    REQUIRE(v1 != nullptr);
    REQUIRE(v4 != nullptr);  // the widest pack is compiled at every level
    CHECK(runs(v4, aligned));
    CHECK(pick(aligned).pack == 4);
    // out at 4 mod 16
    const Built out4 = where_problem(4, {3, 1}, {3, 8}, {}, 4, 0, 0, 0);
    CHECK(!runs(v4, out4));
    CHECK(runs(v1, out4));
    CHECK(pick(out4).pack < 4);
    // x spans the innermost dim: at 8 mod 16 it cannot be read in 16-byte packs
    const Built x8 = where_problem(4, {3, 1}, {3, 8}, {}, 0, 0, 8, 0);
    CHECK(!runs(v4, x8));
    CHECK(runs(v1, x8));
    // cond spans it too, in bytes: a pack of 4 needs 4-byte alignment
    const Built c4 = where_problem(4, {3, 8}, {3, 8}, {3, 1}, 0, 4, 0, 0);
    REQUIRE(c4.p.layout.rank == 2);
    CHECK(runs(v4, c4));
    const Built c2 = where_problem(4, {3, 8}, {3, 8}, {3, 1}, 0, 2, 0, 0);
    CHECK(!runs(v4, c2));
    CHECK(runs(v1, c2));
    // cond (3,1) does not span it: any address
    const Built c1 = where_problem(4, {3, 1}, {3, 8}, {}, 0, 1, 0, 0);
    CHECK(runs(v4, c1));
    // y is a scalar, read one unit at a time: only element alignment matters
    const Built y4 = where_problem(4, {3, 1}, {3, 8}, {}, 0, 0, 0, 4);
    CHECK(runs(v4, y4));
  }
  // int32 indices need fewer than 2^31 packs: 2^33 elements at pack 1
  {
    const int64_t n = int64_t{1} << 17, m = int64_t{1} << 16;
    const Built b = where_problem(4, {n, 1}, {n, m}, {});
    REQUIRE(b.p.layout.rank == 2);
    REQUIRE(kgen::broadcast::units(b.p.layout) == int64_t{1} << 33);
    int i32 = 0;
    for (const kgen::VariantInfo* v : variants_of(b)) {
      INFO(v->name);
      const Knobs q = knobs(*v);
      if (q.tier == kElem && q.index == 0) {
        CHECK(!runs(v, b));  // 2^33 / pack >= 2^31 for every pack up to 4
        ++i32;
      }
      if (q.tier == kElem && q.index == 1 && q.rank == 2) CHECK(runs(v, b));
    }
    CHECK(i32 > 0);
    CHECK(runs(generic_of(b), b));
    const Knobs q = pick(b);
    CHECK(q.index == 1);  // int64: an elem variant at the full level, else the generic one
  }
  // ... and every dim below 2^31: 2 x 2^31 bytes at pack 16 is only 2^28 packs
  {
    const int64_t big = int64_t{1} << 31;
    const Built b = where_problem(1, {2, 1}, {2, big}, {});
    REQUIRE(b.p.layout.rank == 2);
    REQUIRE(b.p.layout.dims[1] == big);
    const kgen::VariantInfo* v16 = find_variant(b, kElem, 2, 16, 0);
    REQUIRE(v16 != nullptr);
    CHECK(!runs(v16, b));
    CHECK(runs(generic_of(b), b));
    CHECK(pick(b).index == 1);
    // one below: int32 indices work
    const Built ok = where_problem(1, {2, 1}, {2, big - 16}, {});
    CHECK(runs(v16, ok));
    CHECK(pick(ok).index == 0);
  }
  // a 9-dim expand (rank 8, misaligned) has no elem variant: the generic one runs it
  {
    const Built b = expand_problem(4, {2, 1, 2, 1, 2, 1, 2, 1}, {2, 3, 2, 3, 2, 3, 2, 3}, 1, 0);
    REQUIRE(b.p.layout.rank == 9);
    REQUIRE(b.p.layout.movement == 1);
    for (const kgen::VariantInfo* v : variants_of(b)) {
      INFO(v->name);
      CHECK(runs(v, b) == v->generic);
    }
    CHECK(pick(b).tier == kGeneric);
  }
}

TEST_CASE("broadcast capability: every problem runs on the generic variant of its unit size", "[broadcast][default-set]") {
  const std::vector<Built> problems = {
      expand_problem(4, {4096, 1, 4096}, {4096, 16, 4096}),
      expand_problem(4, {4096, 1, 4096}, {4096, 16, 4096}, 1, 0),
      expand_problem(4, {4096, 1, 4096}, {4096, 16, 4096}, 2, 8),
      expand_problem(2, {1, 8192}, {32768, 8192}),
      expand_problem(4, {64, 1, 1024, 1}, {64, 64, 1024, 32}),
      expand_problem(4, {64, 1, 1024, 1}, {64, 64, 1024, 32}, 3, 0),
      expand_problem(8, {}, {3, 5, 7}),
      expand_problem(16, {5, 1, 3, 1, 2}, {5, 4, 3, 2, 2}),
      expand_problem(4, {2, 1, 2, 1, 2, 1, 2, 1}, {2, 3, 2, 3, 2, 3, 2, 3}),
      expand_problem(4, {2, 1, 2, 1, 2, 1, 2, 1}, {2, 3, 2, 3, 2, 3, 2, 3}, 1, 0),
      where_problem(4, {8192, 8192}, {8192, 8192}, {8192, 8192}),
      where_problem(4, {64, 1, 1, 2048}, {64, 16, 2048, 2048}, {}),
      where_problem(8, {2, 1, 2, 1, 2, 1, 2, 1}, {1, 3, 1, 3, 1, 3, 1, 3}, {2, 3, 2, 3, 2, 3, 2, 3}),
      where_problem(2, {5, 1, 7}, {1, 3, 1}, {}, 2, 1, 6, 4),
      where_problem(1, {1}, {}, {}),
      where_problem(4, {int64_t{1} << 17, 1}, {int64_t{1} << 17, int64_t{1} << 16}, {}),
  };
  for (const Built& b : problems) {
    INFO(kgen::family_name(b.family) << ": " << show(b.p.layout));
    const kgen::VariantInfo* g = generic_of(b);
    REQUIRE(g != nullptr);
    CHECK(runs(g, b));
    // and selection always finds something that supports it
    const kgen::VariantInfo* v = nullptr;
    pick(b, &v);
    REQUIRE(v != nullptr);
    const Knobs q = knobs(*v);
    if (b.p.layout.rank <= 1) CHECK(q.tier == kFlat);
    if (q.tier == kElem) CHECK(q.rank == b.p.layout.rank);
  }
}

TEST_CASE("the expand and where selection cache gives what selection gives", "[broadcast][select][cache]") {
  std::mt19937_64 g(17);
  static const kgen::DeviceInfo dev;
  const int64_t extents[] = {1, 2, 3, 8, 17, 64, 1000};
  for (int i = 0; i < 3000; ++i) {
    const int rank = 1 + static_cast<int>(g() % 5);
    Dims out(rank);
    for (int64_t& d : out) d = extents[g() % 7];
    auto broadcast_of = [&] {  // out with some dims 1 and some leading dims dropped
      Dims s(out.begin() + static_cast<std::ptrdiff_t>(g() % rank), out.end());
      for (int64_t& d : s)
        if (g() % 3 == 0) d = 1;
      return s;
    };
    const int elem = 1 << (1 + g() % 3);
    kgen::broadcast::Problem p{};
    p.device = &dev;
    p.out = addr(3, elem * (g() % 2));
    kgen::Family family;
    if (g() % 2) {
      family = kgen::Family::where;
      const Dims c = broadcast_of(), x = broadcast_of(), y = broadcast_of();
      const Operand ops[] = {op(c, "cond"), op(x, "x"), op(y, "y")};
      const int units[] = {1, elem, elem};
      p.layout = kgen::broadcast::simplify(3, ops, units, rank, out.data(), elem);
      for (int k = 0; k < 3; ++k) p.in[k] = addr(k, (k ? elem : 1) * (g() % 4));
    } else {
      family = kgen::Family::expand;
      const Dims src = broadcast_of();
      p.in[0] = addr(0, elem * (g() % 4));
      p.layout = kgen::broadcast::simplify_expand(op(src, "src"), rank, out.data(), elem,
                                                  reinterpret_cast<uintptr_t>(p.in[0]),
                                                  reinterpret_cast<uintptr_t>(p.out), 16);
    }
    const int key = kgen::movement_key(p.layout.movement);
    const auto fresh = kgen::select_variant(family, key, dev, &p, &kgen::broadcast::heuristic);
    for (int again = 0; again < 2; ++again) {
      const auto cached =
          kgen::select_cached(family, key, dev, &p, &kgen::broadcast::heuristic, &kgen::broadcast::selection_key);
      INFO("problem " << i << ": " << (fresh.variant ? fresh.variant->name : "none"));
      CHECK(cached.variant == fresh.variant);
    }
  }
}
