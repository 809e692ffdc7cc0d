// Argument validation of softmax over any dim, the backward and the masked
// softmax, without a GPU: every bad argument is KGEN_ERROR_INVALID_ARGUMENT
// with a message naming it, before any memory is touched (the pointers are
// host buffers that must keep their poison), and empty problems are no-ops.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kgen/kgen.h"

namespace {

struct Buffers {
  std::vector<float> x = std::vector<float>(256, 0.25f), dy = std::vector<float>(256, 0.5f);
  std::vector<float> y = std::vector<float>(256, -7.0f);  // poison: must survive every failure
  std::vector<unsigned char> mask = std::vector<unsigned char>(256, 1);
  bool untouched() const {
    for (float v : y)
      if (v != -7.0f) return false;
    for (float v : x)
      if (v != 0.25f) return false;
    for (float v : dy)
      if (v != 0.5f) return false;
    return true;
  }
};

// The status, and a message that names `arg` first ("arg: ...").
void expect_invalid(kgen_status_t got, const std::string& arg) {
  const std::string msg = kgen_last_error();
  INFO(arg << " <- " << msg);
  CHECK(got == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(msg.rfind(arg + ":", 0) == 0);
}

void expect_noop(kgen_status_t got) {
  INFO(kgen_last_error());
  CHECK(got == KGEN_OK);
  CHECK(std::string(kgen_last_error()).empty());
}

const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("softmax over a dim rejects bad arguments, naming them and writing nothing",
          "[validation][softmax_dim]") {
  Buffers b;
  for (int log = 0; log < 2; ++log) {
    expect_invalid(kgen_softmax_dim(log, KGEN_FLOAT32, -1, 4, 2, b.x.data(), b.y.data(), nullptr), "outer");
    expect_invalid(kgen_softmax_dim(log, KGEN_FLOAT32, 2, -4, 2, b.x.data(), b.y.data(), nullptr), "axis");
    expect_invalid(kgen_softmax_dim(log, KGEN_FLOAT32, 2, 4, -2, b.x.data(), b.y.data(), nullptr), "inner");
    expect_invalid(kgen_softmax_dim(log, KGEN_INT32, 2, 4, 2, b.x.data(), b.y.data(), nullptr), "dtype");
    expect_invalid(kgen_softmax_dim(log, static_cast<kgen_dtype_t>(11), 2, 4, 2, b.x.data(), b.y.data(), nullptr),
                   "dtype");
    expect_invalid(kgen_softmax_dim(log, KGEN_FLOAT32, 2, 4, 2, nullptr, b.y.data(), nullptr), "x");
    expect_invalid(kgen_softmax_dim(log, KGEN_FLOAT32, 2, 4, 2, b.x.data(), nullptr, nullptr), "y");
    expect_invalid(kgen_softmax_dim_variant(nullptr, log, KGEN_FLOAT16, 2, 4, 2, b.x.data(),
                                            reinterpret_cast<char*>(b.y.data()) + 1, nullptr),
                   "y");
    // partial overlap of x and y (x == y is in place and allowed)
    expect_invalid(kgen_softmax_dim(log, KGEN_FLOAT32, 2, 4, 2, b.y.data(), b.y.data() + 3, nullptr), "y");
    // extents whose byte count overflows 64 bits
    CHECK(kgen_softmax_dim(log, KGEN_FLOAT32, INT64_MAX / 4, 4, 4, b.x.data(), b.y.data(), nullptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_softmax_dim(log, KGEN_FLOAT32, 4, INT64_MAX / 8, 4, b.x.data(), b.y.data(), nullptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
  }
  const char* name = "unchanged";
  expect_invalid(kgen_softmax_dim_selected(0, KGEN_FLOAT32, 2, 4, 2, b.x.data(), b.y.data(), nullptr),
                 "variant");
  expect_invalid(kgen_softmax_dim_selected(0, KGEN_FLOAT32, -2, 4, 2, b.x.data(), b.y.data(), &name), "outer");
  CHECK(std::string(name) == "unchanged");
  CHECK(b.untouched());
}

TEST_CASE("empty softmax over a dim is a no-op that needs no pointers", "[validation][softmax_dim]") {
  Buffers b;
  expect_noop(kgen_softmax_dim(0, KGEN_FLOAT32, 0, 4, 2, nullptr, nullptr, nullptr));
  expect_noop(kgen_softmax_dim(1, KGEN_FLOAT16, 3, 4, 0, nullptr, nullptr, nullptr));
  expect_noop(kgen_softmax_dim(0, KGEN_BFLOAT16, 3, 0, 5, nullptr, nullptr, nullptr));
  expect_noop(kgen_softmax_dim_variant(nullptr, 1, KGEN_FLOAT64, 0, 0, 0, b.x.data(), b.y.data(), nullptr));
  const char* name = nullptr;
  expect_noop(kgen_softmax_dim_selected(0, KGEN_FLOAT32, 0, 4, 2, nullptr, nullptr, &name));
  REQUIRE(name != nullptr);
  CHECK(std::string(name).empty());
  CHECK(b.untouched());
}

TEST_CASE("softmax backward rejects bad arguments, naming them and writing nothing",
          "[validation][softmax_backward]") {
  Buffers b;
  using RowsFn = kgen_status_t (*)(kgen_dtype_t, int64_t, int64_t, const void*, const void*, void*, kgen_stream_t);
  for (RowsFn fn : {&kgen_softmax_backward, &kgen_log_softmax_backward}) {
    expect_invalid(fn(KGEN_FLOAT32, -1, 4, b.x.data(), b.dy.data(), b.y.data(), nullptr), "rows");
    expect_invalid(fn(KGEN_FLOAT32, 2, -4, b.x.data(), b.dy.data(), b.y.data(), nullptr), "cols");
    expect_invalid(fn(KGEN_INT32, 2, 4, b.x.data(), b.dy.data(), b.y.data(), nullptr), "dtype");
    expect_invalid(fn(KGEN_FLOAT32, 2, 4, nullptr, b.dy.data(), b.y.data(), nullptr), "y");
    expect_invalid(fn(KGEN_FLOAT32, 2, 4, b.x.data(), nullptr, b.y.data(), nullptr), "dy");
    expect_invalid(fn(KGEN_FLOAT32, 2, 4, b.x.data(), b.dy.data(), nullptr, nullptr), "dx");
    expect_invalid(fn(KGEN_FLOAT16, 2, 4, b.x.data(), reinterpret_cast<char*>(b.dy.data()) + 1, b.y.data(), nullptr),
                   "dy");
    // dx partly over dy, then partly over y (dx == dy or dx == y is in place)
    expect_invalid(fn(KGEN_FLOAT32, 2, 4, b.x.data(), b.y.data(), b.y.data() + 3, nullptr), "dx");
    expect_invalid(fn(KGEN_FLOAT32, 2, 4, b.y.data(), b.dy.data(), b.y.data() + 5, nullptr), "dx");
  }
  for (int log = 0; log < 2; ++log) {
    expect_invalid(kgen_softmax_backward_dim(log, KGEN_FLOAT32, -3, 4, 2, b.x.data(), b.dy.data(), b.y.data(), nullptr),
                   "outer");
    expect_invalid(kgen_softmax_backward_dim(log, KGEN_FLOAT32, 3, -4, 2, b.x.data(), b.dy.data(), b.y.data(), nullptr),
                   "axis");
    expect_invalid(kgen_softmax_backward_dim(log, KGEN_FLOAT32, 3, 4, -2, b.x.data(), b.dy.data(), b.y.data(), nullptr),
                   "inner");
    expect_invalid(kgen_softmax_backward_variant(nullptr, log, KGEN_FLOAT32, 3, 4, 2, b.x.data(), b.dy.data(),
                                                 b.dy.data() + 5, nullptr),
                   "dx");
    expect_invalid(kgen_softmax_backward_variant(nullptr, log, KGEN_FLOAT64, 3, 4, 2, b.x.data(), b.dy.data(),
                                                 reinterpret_cast<char*>(b.y.data()) + 4, nullptr),
                   "dx");
  }
  const char* name = "unchanged";
  expect_invalid(kgen_softmax_backward_selected(0, KGEN_FLOAT32, 3, 4, 2, b.x.data(), b.dy.data(), b.y.data(),
                                                nullptr),
                 "variant");
  expect_invalid(kgen_softmax_backward_selected(1, KGEN_FLOAT32, 3, 4, -1, b.x.data(), b.dy.data(), b.y.data(),
                                                &name),
                 "inner");
  CHECK(std::string(name) == "unchanged");
  CHECK(b.untouched());
}

TEST_CASE("a named backward variant must be of the backward family and the dtype",
          "[validation][softmax_backward]") {
  Buffers b;
  // a forward variant is not a backward one
  CHECK(kgen_softmax_backward_variant("softmax_generic_f32", 0, KGEN_FLOAT32, 2, 4, 1, b.x.data(), b.dy.data(),
                                      b.y.data(), nullptr) == KGEN_ERROR_UNSUPPORTED);
  CHECK(std::string(kgen_last_error()).rfind("variant:", 0) == 0);
  CHECK(kgen_softmax_backward_variant("softmax_backward_nonsense_f32", 0, KGEN_FLOAT32, 2, 4, 1, b.x.data(),
                                      b.dy.data(), b.y.data(), nullptr) == KGEN_ERROR_UNSUPPORTED);
  // a compiled backward variant of another dtype (none in a float32-only build)
  for (int64_t i = 0; i < kgen_variant_count(); ++i) {
    const std::string name = kgen_variant_name(i);
    if (name.rfind("softmax_backward_generic_", 0) != 0 || name == "softmax_backward_generic_f32") continue;
    expect_invalid(kgen_softmax_backward_variant(name.c_str(), 1, KGEN_FLOAT32, 2, 4, 1, b.x.data(), b.dy.data(),
                                                 b.y.data(), nullptr),
                   "variant");
  }
  // and a backward variant is not a forward one
  CHECK(kgen_softmax_dim_variant("softmax_backward_generic_f32", 0, KGEN_FLOAT32, 2, 4, 1, b.x.data(), b.y.data(),
                                 nullptr) == KGEN_ERROR_UNSUPPORTED);
  CHECK(b.untouched());
}

TEST_CASE("empty softmax backward problems are no-ops that need no pointers",
          "[validation][softmax_backward]") {
  Buffers b;
  expect_noop(kgen_softmax_backward(KGEN_FLOAT32, 0, 4, nullptr, nullptr, nullptr, nullptr));
  expect_noop(kgen_log_softmax_backward(KGEN_FLOAT16, 4, 0, nullptr, nullptr, nullptr, nullptr));
  expect_noop(kgen_softmax_backward_dim(0, KGEN_BFLOAT16, 3, 4, 0, nullptr, nullptr, nullptr, nullptr));
  expect_noop(kgen_softmax_backward_variant(nullptr, 1, KGEN_FLOAT64, 0, 4, 2, b.x.data(), b.dy.data(),
                                            b.y.data(), nullptr));
  CHECK(b.untouched());
}

TEST_CASE("masked softmax rejects bad arguments, naming them and writing nothing",
          "[validation][softmax_masked]") {
  Buffers b;
  // x: (2, 4, 2, 8) float32 = 128 elements; a bool [B,1,S,S] mask
  const int64_t batch = 2, heads = 4, queries = 2, keys = 8;
  const kgen_softmax_mask_t good{0.125, KGEN_MASK_BOOL, b.mask.data(), batch, 1, queries, 0, 0};
  auto call = [&](const kgen_softmax_mask_t& m) {
    return kgen_softmax_masked(KGEN_FLOAT32, batch, heads, queries, keys, b.x.data(), &m, b.y.data(), nullptr);
  };
  auto bad = [&](kgen_softmax_mask_t m, const char* arg) {
    INFO(arg);
    expect_invalid(call(m), arg);
    expect_invalid(kgen_softmax_masked_variant(nullptr, KGEN_FLOAT32, batch, heads, queries, keys, b.x.data(), &m,
                                               b.y.data(), nullptr),
                   arg);
  };
  // the argument struct itself
  expect_invalid(kgen_softmax_masked(KGEN_FLOAT32, batch, heads, queries, keys, b.x.data(), nullptr, b.y.data(),
                                     nullptr),
                 "mask");
  kgen_softmax_mask_t m = good;
  m.mask = nullptr;  // a bool mask needs its tensor
  bad(m, "mask");
  m.kind = KGEN_MASK_ADDITIVE;
  bad(m, "mask");
  m = good;
  m.kind = static_cast<kgen_mask_kind_t>(3);
  bad(m, "kind");
  m = good;
  m.mask_batch = 3;  // neither 1 nor batch
  bad(m, "mask_batch");
  m.mask_batch = 0;
  bad(m, "mask_batch");
  m.mask_batch = -2;
  bad(m, "mask_batch");
  m = good;
  m.mask_heads = 2;  // neither 1 nor heads
  bad(m, "mask_heads");
  m.mask_heads = 0;
  bad(m, "mask_heads");
  m = good;
  m.mask_queries = 3;
  bad(m, "mask_queries");
  m.mask_queries = -1;
  bad(m, "mask_queries");
  m = good;
  m.scale = std::nan("");
  bad(m, "scale");
  m.scale = kInf;
  bad(m, "scale");
  m.scale = -kInf;
  bad(m, "scale");
  // an additive mask holds x's dtype: it must be aligned to its elements
  m = good;
  m.kind = KGEN_MASK_ADDITIVE;
  m.mask = b.mask.data() + 1;
  bad(m, "mask");

  expect_invalid(kgen_softmax_masked(KGEN_FLOAT32, -1, heads, queries, keys, b.x.data(), &good, b.y.data(), nullptr),
                 "batch");
  expect_invalid(kgen_softmax_masked(KGEN_FLOAT32, batch, -4, queries, keys, b.x.data(), &good, b.y.data(), nullptr),
                 "heads");
  expect_invalid(kgen_softmax_masked(KGEN_FLOAT32, batch, heads, -2, keys, b.x.data(), &good, b.y.data(), nullptr),
                 "queries");
  expect_invalid(kgen_softmax_masked(KGEN_FLOAT32, batch, heads, queries, -8, b.x.data(), &good, b.y.data(), nullptr),
                 "keys");
  expect_invalid(kgen_softmax_masked(KGEN_INT32, batch, heads, queries, keys, b.x.data(), &good, b.y.data(), nullptr),
                 "dtype");
  expect_invalid(kgen_softmax_masked(KGEN_FLOAT32, batch, heads, queries, keys, nullptr, &good, b.y.data(), nullptr),
                 "x");
  expect_invalid(kgen_softmax_masked(KGEN_FLOAT32, batch, heads, queries, keys, b.x.data(), &good, nullptr, nullptr),
                 "y");
  // y partly over x
  expect_invalid(kgen_softmax_masked(KGEN_FLOAT32, batch, heads, queries, keys, b.y.data(), &good, b.y.data() + 7,
                                     nullptr),
                 "y");
  const char* name = "unchanged";
  expect_invalid(kgen_softmax_masked_selected(KGEN_FLOAT32, batch, heads, queries, keys, b.x.data(), &good,
                                              b.y.data(), nullptr),
                 "variant");
  m = good;
  m.mask_heads = 3;
  expect_invalid(kgen_softmax_masked_selected(KGEN_FLOAT32, batch, heads, queries, keys, b.x.data(), &m, b.y.data(),
                                              &name),
                 "mask_heads");
  CHECK(std::string(name) == "unchanged");
  CHECK(b.untouched());
}

TEST_CASE("mask extents of 1 or x's are all accepted up to the device check", "[validation][softmax_masked]") {
  Buffers b;
  const int64_t batch = 2, heads = 4, queries = 2, keys = 8;
  for (int64_t mb : {int64_t{1}, batch})
    for (int64_t mh : {int64_t{1}, heads})
      for (int64_t mq : {int64_t{1}, queries}) {
        const kgen_softmax_mask_t m{1.0, KGEN_MASK_BOOL, b.mask.data(), mb, mh, mq, 1, 1};
        const kgen_status_t st =
            kgen_softmax_masked(KGEN_FLOAT32, batch, heads, queries, keys, b.x.data(), &m, b.y.data(), nullptr);
        // host buffers: past argument validation, the device (or, with a
        // GPU, the host pointers) is what fails
        const std::string msg = kgen_last_error();
        INFO(mb << "," << mh << "," << mq << ": " << msg);
        CHECK(st != KGEN_OK);
        CHECK(msg.rfind("mask_", 0) != 0);
        CHECK(msg.rfind("scale", 0) != 0);
      }
  CHECK(b.untouched());
}

TEST_CASE("empty masked softmax problems are no-ops that need no pointers", "[validation][softmax_masked]") {
  Buffers b;
  const kgen_softmax_mask_t none{1.0, KGEN_MASK_NONE, nullptr, 1, 1, 1, 1, 0};
  expect_noop(kgen_softmax_masked(KGEN_FLOAT32, 0, 4, 8, 8, nullptr, &none, nullptr, nullptr));
  expect_noop(kgen_softmax_masked(KGEN_FLOAT16, 2, 0, 8, 8, nullptr, &none, nullptr, nullptr));
  expect_noop(kgen_softmax_masked(KGEN_BFLOAT16, 2, 4, 0, 8, nullptr, &none, nullptr, nullptr));
  expect_noop(kgen_softmax_masked(KGEN_FLOAT64, 2, 4, 8, 0, nullptr, &none, nullptr, nullptr));
  const kgen_softmax_mask_t boolean{0.5, KGEN_MASK_BOOL, b.mask.data(), 1, 1, 1, 0, 1};
  expect_noop(kgen_softmax_masked_variant(nullptr, KGEN_FLOAT32, 0, 4, 8, 8, b.x.data(), &boolean, b.y.data(),
                                          nullptr));
  CHECK(b.untouched());
}

TEST_CASE("the softmax workspace calls check their arguments like the others", "[validation][softmax_dim]") {
  Buffers b;
  size_t bytes = 7;
  // the size query: a null output, bad extents and pointers named
  expect_invalid(kgen_softmax_workspace_size(nullptr, 0, KGEN_FLOAT32, 2, 4, 1, b.x.data(), b.y.data(), nullptr),
                 "workspace_bytes");
  expect_invalid(kgen_softmax_workspace_size(nullptr, 0, KGEN_FLOAT32, 2, -4, 1, b.x.data(), b.y.data(), &bytes),
                 "axis");
  expect_invalid(kgen_softmax_backward_workspace_size(nullptr, 1, KGEN_FLOAT32, 2, 4, 1, b.y.data(), nullptr,
                                                      b.x.data(), &bytes),
                 "dy");
  CHECK(bytes == 7);
  // an empty problem needs none
  expect_noop(kgen_softmax_workspace_size(nullptr, 1, KGEN_FLOAT16, 0, 4, 1, b.x.data(), b.y.data(), &bytes));
  CHECK(bytes == 0);
  // the calls that take one validate before they touch anything
  void* ws = b.mask.data();
  expect_invalid(kgen_softmax_dim_workspace(nullptr, 0, KGEN_FLOAT32, 2, 4, 1, b.x.data(), nullptr, ws, 64, nullptr),
                 "y");
  expect_invalid(kgen_softmax_backward_dim_workspace(nullptr, 0, KGEN_FLOAT32, 2, 4, 1, b.y.data(), b.dy.data(),
                                                     b.y.data() + 1, ws, 64, nullptr),
                 "dx");
  expect_noop(kgen_softmax_dim_workspace(nullptr, 0, KGEN_FLOAT32, 2, 0, 0, b.x.data(), b.y.data(), ws, 64, nullptr));
  CHECK(b.untouched());
}
