// Permute on the GPU: every compiled variant, named, on every case it can
// run, against a CPU reference on random bytes, with dst poisoned first and
// guard bytes around it; ranks 1-8, odd extents, tiles that do not divide
// the dims, element sizes 1-16, misaligned pointers; then the selected
// variant, plain copies, and one tensor past 2^31 elements.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu/gpu_util.hpp"

namespace {

constexpr int kGuard = 64;                 // poisoned bytes on each side of dst
constexpr unsigned char kPoison = 0xFF;    // random data never holds this byte

struct Case {
  std::vector<int64_t> shape;
  std::vector<int> perm;
};

// reversed dims of every rank: nothing merges, so each rank is its own problem
const std::vector<Case> kCases = {
    {{33, 65}, {1, 0}},
    {{96, 160}, {1, 0}},              // every pack divides, no tile does
    {{257, 129}, {1, 0}},
    {{1000, 3}, {1, 0}},              // narrow dst rows that follow each other
    {{3, 1000}, {1, 0}},
    {{8, 300}, {1, 0}},
    {{5, 7, 9}, {2, 1, 0}},
    {{33, 65, 7}, {2, 0, 1}},
    {{3, 300, 400}, {0, 2, 1}},       // batched transpose
    {{12, 3, 40, 36}, {0, 2, 3, 1}},  // channels last
    {{7, 9, 33}, {1, 0, 2}},          // innermost preserved: rows
    {{32, 5, 16, 12}, {0, 2, 1, 3}},
    {{6, 4, 70}, {1, 0, 2}},
    {{3, 5, 4, 7}, {3, 2, 1, 0}},
    {{3, 2, 5, 2, 3}, {4, 3, 2, 1, 0}},
    {{2, 3, 2, 3, 2, 3}, {5, 4, 3, 2, 1, 0}},
    {{4, 8, 4, 4, 4, 16}, {5, 3, 1, 4, 2, 0}},  // short dst rows: J grouped with dim 2
    {{3, 5, 7, 33}, {3, 1, 2, 0}},              // ... into 21, no tile divides it
    {{2, 3, 2, 2, 3, 2, 3}, {6, 5, 4, 3, 2, 1, 0}},
    {{2, 3, 2, 3, 2, 3, 2, 3}, {7, 6, 5, 4, 3, 2, 1, 0}},
    {{3, 2, 4, 2, 3, 2, 5, 2}, {1, 3, 5, 7, 0, 2, 4, 6}},
    {{1, 33, 1, 65}, {3, 2, 1, 0}},   // size-1 dims
    {{1, 1, 1}, {2, 1, 0}},           // one element
    {{4, 5, 6}, {0, 1, 2}},           // identity: a copy
    {{4, 1, 6}, {1, 0, 2}},           // identity once the 1 is gone
    {{1234567}, {0}},
};

// (src, dst) byte offsets from 256-byte aligned allocations
const std::pair<int, int> kOffsets[] = {{0, 0}, {0, 2}, {4, 8}, {1, 3}};

std::vector<unsigned char> random_bytes(size_t n) {
  std::vector<unsigned char> b(n);
  std::uniform_int_distribution<int> dist(0, 254);
  for (auto& v : b) v = static_cast<unsigned char>(dist(test::rng()));
  return b;
}

std::vector<unsigned char> reference(const std::vector<unsigned char>& src, const Case& c, size_t elem) {
  const int rank = static_cast<int>(c.shape.size());
  int64_t n = 1;
  for (int64_t d : c.shape) n *= d;
  std::vector<int64_t> stride(rank);
  int64_t st = 1;
  for (int k = rank - 1; k >= 0; --k) stride[k] = st, st *= c.shape[k];
  std::vector<unsigned char> dst(src.size());
  std::vector<int64_t> idx(rank, 0);  // dst multi-index
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int k = 0; k < rank; ++k) off += idx[k] * stride[c.perm[k]];
    std::memcpy(&dst[i * elem], &src[off * elem], elem);
    for (int k = rank - 1; k >= 0; --k) {
      if (++idx[k] < c.shape[c.perm[k]]) break;
      idx[k] = 0;
    }
  }
  return dst;
}

std::vector<std::string> permute_variants() {
  std::vector<std::string> names;
  for (int64_t i = 0; i < kgen_variant_count(); ++i)
    if (std::string(kgen_variant_family(i)) == "permute") names.push_back(kgen_variant_name(i));
  return names;
}

std::string describe(const Case& c, size_t elem, std::pair<int, int> off) {
  std::string s = "shape (";
  for (size_t k = 0; k < c.shape.size(); ++k) s += (k ? "," : "") + std::to_string(c.shape[k]);
  s += ") perm (";
  for (size_t k = 0; k < c.perm.size(); ++k) s += (k ? "," : "") + std::to_string(c.perm[k]);
  return s + ") elem " + std::to_string(elem) + " offsets " + std::to_string(off.first) + "," +
         std::to_string(off.second);
}

// Runs one call (variant null: kgen_permute) into poisoned dst and checks the
// bytes and the guards.  Returns false when the named variant cannot run it.
bool run_and_check(const char* variant, const Case& c, size_t elem, const test::DeviceBuffer& src,
                   int src_off, const test::DeviceBuffer& dst, int dst_off,
                   const std::vector<unsigned char>& want) {
  const size_t bytes = want.size();
  CUDA_REQUIRE(cudaMemset(dst.ptr, kPoison, dst.bytes));
  const int rank = static_cast<int>(c.shape.size());
  void* out = dst.at(kGuard + dst_off);
  const kgen_status_t st =
      variant ? kgen_permute_variant(variant, elem, rank, c.shape.data(), c.perm.data(),
                                     src.at(src_off), out, nullptr)
              : kgen_permute(elem, rank, c.shape.data(), c.perm.data(), src.at(src_off), out, nullptr);
  if (variant && st == KGEN_ERROR_UNSUPPORTED) return false;
  INFO((variant ? variant : "selected") << ": " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaGetLastError());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  std::vector<unsigned char> got(dst.bytes);
  CUDA_REQUIRE(cudaMemcpy(got.data(), dst.ptr, dst.bytes, cudaMemcpyDeviceToHost));
  size_t bad = 0, first = SIZE_MAX;
  for (size_t i = 0; i < bytes; ++i)
    if (got[kGuard + dst_off + i] != want[i] && bad++ == 0) first = i;
  size_t guards = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if ((i < kGuard + static_cast<size_t>(dst_off) || i >= kGuard + dst_off + bytes) && got[i] != kPoison) ++guards;
  INFO("wrong bytes: " << bad << " (first at byte " << first << "), guard bytes written: " << guards);
  CHECK(bad == 0);
  CHECK(guards == 0);
  return true;
}

}  // namespace

TEST_CASE("every permute variant matches the CPU reference", "[permute]") {
  const std::vector<std::string> variants = permute_variants();
  REQUIRE(!variants.empty());
  std::map<std::string, int> runs;
  for (const Case& c : kCases) {
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    for (size_t elem : {1, 2, 4, 8, 16}) {
      const size_t bytes = static_cast<size_t>(n) * elem;
      if (bytes > (size_t{16} << 20)) continue;
      const std::vector<unsigned char> host = random_bytes(bytes);
      const std::vector<unsigned char> want = reference(host, c, elem);
      test::DeviceBuffer src(bytes + 16), dst(bytes + 16 + 2 * kGuard);
      for (auto off : kOffsets) {
        INFO(describe(c, elem, off));
        CUDA_REQUIRE(cudaMemcpy(src.at(off.first), host.data(), bytes, cudaMemcpyHostToDevice));
        for (const std::string& v : variants)
          if (run_and_check(v.c_str(), c, elem, src, off.first, dst, off.second, want)) ++runs[v];
        run_and_check(nullptr, c, elem, src, off.first, dst, off.second, want);
      }
    }
  }
  for (const std::string& v : variants) {
    INFO(v << " ran on no case");
    CHECK(runs[v] > 0);
  }
}

TEST_CASE("permute selection: identities are copies, the rest kernels", "[permute]") {
  const int64_t shape[] = {4, 1, 6};
  const int same[] = {1, 0, 2}, moved[] = {2, 1, 0};
  test::DeviceBuffer src(4 * 6 * 4), dst(4 * 6 * 4);
  const char* name = nullptr;
  KGEN_REQUIRE(kgen_permute_selected(4, 3, shape, same, src.ptr, dst.ptr, &name));
  CHECK(std::string(name) == "copy");
  KGEN_REQUIRE(kgen_permute_selected(4, 3, shape, moved, src.ptr, dst.ptr, &name));
  CHECK(std::string(name).rfind("permute_", 0) == 0);
}

TEST_CASE("permute can be captured into a CUDA graph and replayed", "[permute][graph]") {
  for (const Case& c : {Case{{64, 1024, 96}, {0, 2, 1}}, Case{{4, 5, 6}, {0, 1, 2}}}) {
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    const size_t bytes = static_cast<size_t>(n) * 4;
    const std::vector<unsigned char> host = random_bytes(bytes);
    const std::vector<unsigned char> want = reference(host, c, 4);
    test::DeviceBuffer src(bytes), dst(bytes);
    CUDA_REQUIRE(cudaMemcpy(src.ptr, host.data(), bytes, cudaMemcpyHostToDevice));
    test::capture_and_replay(
        [&](cudaStream_t st) {
          return kgen_permute(4, 3, c.shape.data(), c.perm.data(), src.ptr, dst.ptr, st);
        },
        dst.ptr, bytes, [&] {
          std::vector<unsigned char> got(bytes);
          CUDA_REQUIRE(cudaMemcpy(got.data(), dst.ptr, bytes, cudaMemcpyDeviceToHost));
          CHECK(got == want);
        });
  }
}

TEST_CASE("permute: bad arguments write nothing", "[permute]") {
  const int64_t shape[] = {8, 16, 4};
  const int repeat[] = {2, 0, 2}, perm[] = {2, 0, 1};
  const int64_t negative[] = {8, -16, 4};
  const size_t bytes = 8 * 16 * 4 * 4;
  test::DeviceBuffer src(2 * bytes), dst(bytes);
  CUDA_REQUIRE(cudaMemset(src.ptr, 0x11, src.bytes));
  CUDA_REQUIRE(cudaMemset(dst.ptr, kPoison, dst.bytes));
  CHECK(kgen_permute(4, 3, shape, repeat, src.ptr, dst.ptr, nullptr) == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(kgen_permute(4, 3, negative, perm, src.ptr, dst.ptr, nullptr) == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(kgen_permute(4, 3, shape, perm, src.ptr, nullptr, nullptr) == KGEN_ERROR_INVALID_ARGUMENT);
  // dst inside src: the overlap is refused, and src (the would-be dst) keeps its bytes
  CHECK(kgen_permute(4, 3, shape, perm, src.ptr, src.at(bytes / 2), nullptr) == KGEN_ERROR_INVALID_ARGUMENT);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  std::vector<unsigned char> got(dst.bytes), in(src.bytes);
  CUDA_REQUIRE(cudaMemcpy(got.data(), dst.ptr, dst.bytes, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(in.data(), src.ptr, src.bytes, cudaMemcpyDeviceToHost));
  size_t changed = 0;
  for (unsigned char b : got) changed += b != kPoison;
  for (unsigned char b : in) changed += b != 0x11;
  CHECK(changed == 0);
}

TEST_CASE("permute past 2^31 elements (int64 offsets)", "[permute][huge]") {
  // (2, 2^30 + 1) bytes -> (1, 0): 2^31 + 2 elements
  const int64_t cols = (int64_t{1} << 30) + 1;
  const Case c{{2, cols}, {1, 0}};
  const size_t bytes = static_cast<size_t>(2 * cols);
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < 2 * bytes + (size_t{1} << 30)) {
    WARN("skipped: not enough device memory");
    return;
  }
  std::vector<unsigned char> host(bytes);
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>((i * 2654435761u >> 7) % 255);
  std::vector<unsigned char> want(bytes);
  for (int64_t i = 0; i < cols; ++i) {
    want[2 * i] = host[i];
    want[2 * i + 1] = host[cols + i];
  }
  test::DeviceBuffer src(bytes), dst(bytes + 2 * kGuard);
  CUDA_REQUIRE(cudaMemcpy(src.ptr, host.data(), bytes, cudaMemcpyHostToDevice));
  const char* name = nullptr;
  KGEN_REQUIRE(kgen_permute_selected(1, 2, c.shape.data(), c.perm.data(), src.ptr, dst.at(kGuard), &name));
  INFO("selected " << name);
  CHECK(std::string(name).find("_i32") == std::string::npos);
  run_and_check(nullptr, c, 1, src, 0, dst, 0, want);
  CHECK(run_and_check("permute_generic_b1", c, 1, src, 0, dst, 0, want));
}
