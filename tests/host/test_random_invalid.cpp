// Randomized invalid calls of every family, without a GPU.  Each drawn call
// is a small valid problem with one fault put in (a bad dtype, op, size,
// rank, perm or shape; a null, misaligned or overlapping pointer; sizes past
// 64 bits; k past n) and must fail with its status, name the argument first
// in kgen_last_error(), and leave every byte of its memory as it was: the
// inputs, the outputs and the guard bytes around them.  Validation catches
// all of these before it asks for the device, so they hold with no GPU.
// The seed is printed once; KGEN_TEST_SEED=N repeats a run, and every
// failure reports the seed, the draw, the problem and the fault.
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "gpu/invalid_calls.hpp"
#include "gpu/reference.hpp"
#include "kgen/kgen.h"

using namespace test::rnd;

namespace {

constexpr int kDraws = 400;

// Host memory aligned as cudaMalloc aligns it (256 bytes), filled with a
// pattern of the draw.
class Arena {
 public:
  Arena(size_t bytes, Rng& g) : storage_(bytes + 256) {
    const auto misalignment = reinterpret_cast<uintptr_t>(storage_.data()) % 256;
    base_ = storage_.data() + (misalignment ? 256 - misalignment : 0);
    for (size_t i = 0; i < bytes; ++i) base_[i] = static_cast<unsigned char>(g());
    bytes_ = bytes;
  }
  unsigned char* base() { return base_; }
  std::vector<unsigned char> contents() const { return std::vector<unsigned char>(base_, base_ + bytes_); }

 private:
  std::vector<unsigned char> storage_;
  unsigned char* base_;
  size_t bytes_;
};

void invalid_draws(Family f) {
  const std::string test = std::string("invalid ") + family_text(f) + " (host)";
  for (int index = 0; index < kDraws; ++index) {
    Rng g = draw_rng(test, index);
    const InvalidCall c = draw_invalid(f, g, false);
    INFO(draw_context(test, index) << ": " << c.problem << ", " << c.fault << "; expect "
                                   << kgen_status_string(c.expect.status) << " naming " << c.expect.name);
    Arena arena(c.arena_bytes, g);
    const std::vector<unsigned char> before = arena.contents();
    // no fault drawn here points into host memory standing in for device memory
    const kgen_status_t st = c.call({arena.base(), nullptr});
    const std::string message = kgen_last_error();
    INFO("returned " << kgen_status_string(st) << ": " << message);
    CHECK(st == c.expect.status);
    CHECK(message_names(message, c.expect.name));
    size_t first = 0;
    const size_t changed = changed_bytes(before, arena.contents(), &first);
    INFO(changed << " bytes changed, the first at arena byte " << first);
    CHECK(changed == 0);
  }
}

}  // namespace

TEST_CASE("random invalid softmax calls fail naming the argument and write nothing",
          "[random][validation][softmax]") {
  invalid_draws(Family::softmax);
}

TEST_CASE("random invalid softmax backward calls fail naming the argument and write nothing",
          "[random][validation][softmax_backward]") {
  invalid_draws(Family::softmax_backward);
}

TEST_CASE("random invalid masked softmax calls fail naming the argument and write nothing",
          "[random][validation][softmax_masked]") {
  invalid_draws(Family::softmax_masked);
}

TEST_CASE("random invalid reductions fail naming the argument and write nothing", "[random][validation][reduce]") {
  invalid_draws(Family::reduce);
}

TEST_CASE("random invalid permutations fail naming the argument and write nothing",
          "[random][validation][permute]") {
  invalid_draws(Family::permute);
}

TEST_CASE("random invalid expands fail naming the argument and write nothing",
          "[random][validation][broadcast]") {
  invalid_draws(Family::expand);
}

TEST_CASE("random invalid wheres fail naming the argument and write nothing", "[random][validation][broadcast]") {
  invalid_draws(Family::where);
}

TEST_CASE("random invalid top-k calls fail naming the argument and write nothing", "[random][validation][topk]") {
  invalid_draws(Family::topk);
}
