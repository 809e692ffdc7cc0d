// Argument validation of the C API, without a GPU: every bad argument gets
// its status and a message naming it, and the output is not touched.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kgen/kgen.h"
#include "kgen/kgen.hpp"

namespace {

using SoftmaxFn = kgen_status_t (*)(kgen_dtype_t, int64_t, int64_t, const void*, void*, kgen_stream_t);

struct Buffers {
  std::vector<float> x = std::vector<float>(64, 1.5f);
  std::vector<float> y = std::vector<float>(64, -7.0f);  // poison: must survive every failure
  bool y_untouched() const {
    for (float v : y)
      if (v != -7.0f) return false;
    return true;
  }
};

std::string last_error() { return kgen_last_error(); }

void expect_error(kgen_status_t got, kgen_status_t want, const std::string& names) {
  CHECK(got == want);
  CHECK(last_error().rfind(names, 0) == 0);  // the message starts with the argument's name
}

}  // namespace

TEST_CASE("softmax rejects bad arguments, naming them and writing nothing", "[validation]") {
  for (SoftmaxFn fn : {&kgen_softmax, &kgen_log_softmax}) {
    Buffers b;
    expect_error(fn(static_cast<kgen_dtype_t>(7), 2, 4, b.x.data(), b.y.data(), nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "dtype");
    expect_error(fn(static_cast<kgen_dtype_t>(-1), 2, 4, b.x.data(), b.y.data(), nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "dtype");
    expect_error(fn(KGEN_FLOAT32, -1, 4, b.x.data(), b.y.data(), nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "rows");
    expect_error(fn(KGEN_FLOAT32, 2, -4, b.x.data(), b.y.data(), nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "cols");
    expect_error(fn(KGEN_FLOAT32, 2, 4, nullptr, b.y.data(), nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "x");
    expect_error(fn(KGEN_FLOAT32, 2, 4, b.x.data(), nullptr, nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "y");
    expect_error(fn(KGEN_FLOAT32, INT64_MAX / 2, 4, b.x.data(), b.y.data(), nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "rows x cols");
    expect_error(fn(KGEN_FLOAT32, 2, 4, reinterpret_cast<char*>(b.x.data()) + 2, b.y.data(), nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "x");
    expect_error(fn(KGEN_FLOAT16, 2, 4, b.x.data(), reinterpret_cast<char*>(b.y.data()) + 1, nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "y");
    // partial overlap of x and y (exact aliasing is in-place and allowed)
    expect_error(fn(KGEN_FLOAT32, 2, 4, b.y.data(), b.y.data() + 3, nullptr),
                 KGEN_ERROR_INVALID_ARGUMENT, "y");
    CHECK(b.y_untouched());
  }
}

TEST_CASE("empty softmax problems are no-ops that need no pointers", "[validation]") {
  Buffers b;
  CHECK(kgen_softmax(KGEN_FLOAT32, 0, 4, nullptr, nullptr, nullptr) == KGEN_OK);
  CHECK(kgen_softmax(KGEN_FLOAT16, 5, 0, nullptr, nullptr, nullptr) == KGEN_OK);
  CHECK(kgen_log_softmax(KGEN_FLOAT64, 0, 0, b.x.data(), b.y.data(), nullptr) == KGEN_OK);
  CHECK(last_error().empty());
  CHECK(b.y_untouched());
}

TEST_CASE("a named variant must exist, be softmax, and match the dtype", "[validation]") {
  Buffers b;
  expect_error(kgen_softmax_variant("softmax_warp_f32_nonsense", 0, KGEN_FLOAT32, 2, 4, b.x.data(),
                                    b.y.data(), nullptr),
               KGEN_ERROR_UNSUPPORTED, "variant");
  expect_error(kgen_softmax_variant("softmax_generic_f16", 0, KGEN_FLOAT32, 2, 4, b.x.data(),
                                    b.y.data(), nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "variant");
  CHECK(b.y_untouched());
  expect_error(kgen_softmax_selected(0, KGEN_FLOAT32, 1, 1, b.x.data(), b.y.data(), nullptr),
               KGEN_ERROR_INVALID_ARGUMENT, "variant");
}

TEST_CASE("host memory is refused, and a missing GPU is a CUDA status, never a crash",
          "[validation]") {
  Buffers b;
  kgen_status_t s = kgen_softmax(KGEN_FLOAT32, 2, 4, b.x.data(), b.y.data(), nullptr);
  CHECK(s != KGEN_OK);
  // with a GPU: host pointers are named; without one: the device is
  const std::string msg = last_error();
  CHECK((msg.rfind("x:", 0) == 0 || msg.rfind("device:", 0) == 0));
  CHECK(b.y_untouched());
}

TEST_CASE("status strings, dtype sizes and version", "[api]") {
  CHECK(std::string(kgen_status_string(KGEN_OK)) == "KGEN_OK");
  CHECK(std::string(kgen_status_string(KGEN_ERROR_CUDA)) == "KGEN_ERROR_CUDA");
  CHECK(std::string(kgen_status_string(static_cast<kgen_status_t>(99))) == "KGEN_UNKNOWN_STATUS");
  CHECK(kgen_dtype_size(KGEN_FLOAT32) == 4);
  CHECK(kgen_dtype_size(KGEN_FLOAT16) == 2);
  CHECK(kgen_dtype_size(KGEN_BFLOAT16) == 2);
  CHECK(kgen_dtype_size(KGEN_FLOAT64) == 8);
  CHECK(kgen_dtype_size(static_cast<kgen_dtype_t>(9)) == 0);
  CHECK(std::string(kgen_version()) == KGEN_VERSION);
}

TEST_CASE("the C++ API throws kgen::Error carrying the status and message", "[api]") {
  Buffers b;
  try {
    kgen::softmax(KGEN_FLOAT32, -3, 4, b.x.data(), b.y.data());
    FAIL("no exception");
  } catch (const kgen::Error& e) {
    CHECK(e.status() == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).rfind("rows", 0) == 0);
  }
  CHECK_NOTHROW(kgen::log_softmax<float>(0, 4, nullptr, nullptr));
}
