// Broadcast (expand, where) on the GPU: every compiled variant, named, on
// every case it can run, against a CPU reference on random bytes, with the
// output poisoned first and guard bytes around it: dst ranks 0-8, scalars,
// added leading dims, size-1 dims everywhere, alternating broadcast patterns
// that do not merge (every elem rank), odd extents, element sizes 1-8,
// misaligned pointers; then the selected path on every dtype, bad arguments,
// graph capture, where in place, and one expand past 2^31 elements.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gpu/gpu_util.hpp"
#include "gpu/reference.hpp"

namespace {

constexpr int kGuard = 64;               // poisoned bytes on each side of an output
constexpr unsigned char kPoison = 0xFF;  // no element of the inputs is all poison bytes

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int rank_of(const Shape& s) { return static_cast<int>(s.size()); }

std::string show(const Shape& s) {
  std::string t = "(";
  for (size_t k = 0; k < s.size(); ++k) t += (k ? "," : "") + std::to_string(s[k]);
  return t + ")";
}

std::vector<unsigned char> random_bytes(size_t n) {
  std::vector<unsigned char> b(n);
  std::uniform_int_distribution<int> dist(0, 254);
  for (auto& v : b) v = static_cast<unsigned char>(dist(test::rng()));
  return b;
}

// cond bytes: about half zeros, the rest 1, 2, 0x80, 0xFE or any nonzero byte
std::vector<unsigned char> random_cond(size_t n) {
  static const unsigned char kNonzero[] = {1, 2, 0x80, 0xFE};
  std::vector<unsigned char> b(n);
  std::uniform_int_distribution<int> pick(0, 9), any(1, 255);
  for (auto& v : b) {
    const int k = pick(test::rng());
    v = k < 5 ? 0 : k < 9 ? kNonzero[k - 5] : static_cast<unsigned char>(any(test::rng()));
  }
  return b;
}

// Values of a dtype, as its bytes: floats spread like activations; integers
// over most of their bits but never -1 (all bytes 0xFF, the poison); bool 0
// or 1; uint8 0-254.
std::vector<unsigned char> random_values(kgen_dtype_t d, size_t n) {
  if (d == KGEN_FLOAT32 || d == KGEN_FLOAT16 || d == KGEN_BFLOAT16 || d == KGEN_FLOAT64)
    return test::random_tensor(d, n).bytes;
  test::HostTensor t(d, n);
  const int64_t range = d == KGEN_INT64 ? int64_t{1} << 40 : d == KGEN_INT32 ? int64_t{1} << 30
                        : d == KGEN_BOOL ? 1 : 254;
  std::uniform_int_distribution<int64_t> dist(d == KGEN_BOOL || d == KGEN_UINT8 ? 0 : -range, range);
  for (size_t i = 0; i < n; ++i) {
    int64_t v = dist(test::rng());
    if (v == -1) v = 7;
    t.set(i, static_cast<double>(v));
  }
  return t.bytes;
}

using test::rnd::broadcast_strides;  // reference.hpp
using test::rnd::for_each_element;

// Copies a device buffer back and checks that bytes [at, at + want.size())
// hold want and that every other byte still holds the poison.
void check_output(const test::DeviceBuffer& buf, size_t at, const std::vector<unsigned char>& want) {
  std::vector<unsigned char> got(buf.bytes);
  CUDA_REQUIRE(cudaMemcpy(got.data(), buf.ptr, buf.bytes, cudaMemcpyDeviceToHost));
  size_t bad = 0, first = SIZE_MAX, guards = 0, first_guard = SIZE_MAX;
  for (size_t i = 0; i < got.size(); ++i) {
    if (i >= at && i < at + want.size()) {
      if (got[i] != want[i - at] && bad++ == 0) first = i - at;
    } else if (got[i] != kPoison && guards++ == 0) {
      first_guard = i;
    }
  }
  INFO("wrong bytes: " << bad << " of " << want.size() << " (first at byte " << first
                       << "), guard bytes written: " << guards << " (first at buffer byte "
                       << first_guard << ", the output starts at " << at << ")");
  CHECK(bad == 0);
  CHECK(guards == 0);
}

std::vector<std::string> variants_of(const std::string& family) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < kgen_variant_count(); ++i)
    if (family == kgen_variant_family(i)) names.push_back(kgen_variant_name(i));
  return names;
}

// bytes of p[0, n) other than v
size_t count_not(const unsigned char* p, size_t n, unsigned char v) {
  size_t c = 0;
  for (size_t i = 0; i < n; ++i) c += p[i] != v;
  return c;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The element sizes of the named-variant tests: 1, 2, 4 and 8 bytes
const kgen_dtype_t kByteDtypes[] = {KGEN_UINT8, KGEN_FLOAT16, KGEN_FLOAT32, KGEN_FLOAT64};
const kgen_dtype_t kAllDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64,
                                   KGEN_INT32,   KGEN_INT64,   KGEN_BOOL,     KGEN_UINT8};

// ---- expand ------------------------------------------------------------------

struct ExpandCase {
  Shape src, dst;  // dst may hold -1 (keep src's size)
};

// dst's shape with every -1 replaced by src's size
Shape resolve(const ExpandCase& c) {
  Shape out = c.dst;
  const int added = rank_of(c.dst) - rank_of(c.src);
  for (int k = 0; k < rank_of(out); ++k)
    if (out[k] == -1) out[k] = c.src[k - added];
  return out;
}

// The last r dims of a shape
Shape suffix(const Shape& s, int r) { return Shape(s.end() - r, s.end()); }

std::vector<ExpandCase> expand_cases() {
  std::vector<ExpandCase> cases = {
      {{}, {}},                            // one element: a copy
      {{1, 1}, {1, 1, 1}},                 // one element, size-1 dims only
      {{}, {1001}},                        // scalar: a fill
      {{}, {64}},
      {{}, {3, 5, 7}},
      {{1}, {33}},
      {{1001}, {1001}},                    // no broadcast: copies
      {{33, 65}, {33, 65}},
      {{2, 3, 4, 5, 6}, {2, 3, 4, 5, 6}},
      {{4, 1, 6}, {4, 1, 6}},
      {{3, 1, 65}, {-1, 7, -1}},           // -1 keeps src's size
      {{1, 7}, {4, -1, -1}},               // -1 on a leading dim that src has, size 1
      {{65}, {33, 65}},                    // added leading dim
      {{1, 65}, {33, 65}},
      {{1, 1, 5}, {2, 3, 4, 5}},           // added leading dims and size-1 dims
      {{3, 1}, {3, 32}},                   // innermost broadcast
      {{33, 1}, {33, 65}},
      {{7, 1}, {7, 1001}},
      {{3, 1, 1, 1, 1, 1, 1, 1}, {3, 1, 1, 1, 1, 1, 1, 32}},
      {{1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 33}},
      {{5, 1, 64}, {5, 7, 64}},            // innermost kept
      {{7, 1, 1}, {7, 33, 9}},
      {{1, 5, 1}, {3, 5, 7}},
      {{1, 5, 1, 1, 7, 1}, {1, 5, 3, 1, 7, 2}},  // size-1 dims everywhere
      {{4, 1, 1, 16}, {4, 3, 16, 16}},
      {{3, 1}, {3, 0}},                    // empty dst: a no-op
      {{0, 1}, {0, 5}},
      {{2, 1}, {0, 2, 5}},
  };
  // Alternating patterns that never merge, for every dst rank 1-8: innermost
  // kept (its 32 elements let every pack divide it) or innermost broadcast.
  const Shape kept_src = {1, 3, 1, 2, 1, 3, 1, 32}, kept_dst = {2, 3, 2, 2, 2, 3, 2, 32};
  const Shape bcast_src = {2, 1, 3, 1, 2, 1, 3, 1}, bcast_dst = {2, 2, 3, 2, 2, 3, 3, 2};
  for (int r = 1; r <= 8; ++r) {
    cases.push_back({suffix(kept_src, r), suffix(kept_dst, r)});
    cases.push_back({suffix(bcast_src, r), suffix(bcast_dst, r)});
  }
  // ... with a size-1 dim and an added leading dim among them
  cases.push_back({{3, 1, 1, 2, 1, 7}, {4, 3, 5, 1, 2, 3, 7}});
  cases.push_back({{1, 2, 1, 1, 3, 1, 16}, {5, 3, 2, 1, 3, 3, 2, 16}});
  return cases;
}

// (src, dst) byte offsets from 256-byte aligned allocations (dst past its guard)
const std::pair<int, int> kExpandOffsets[] = {{0, 0}, {0, 4}, {2, 6}, {1, 3}, {8, 8}};

std::vector<unsigned char> expand_reference(const std::vector<unsigned char>& src, const Shape& src_shape,
                                            const Shape& out, size_t elem) {
  std::vector<unsigned char> dst(static_cast<size_t>(numel(out)) * elem);
  for_each_element(out, {broadcast_strides(src_shape, out)},
                   [&](int64_t i, const std::vector<int64_t>& off) {
                     std::memcpy(&dst[i * elem], &src[off[0] * elem], elem);
                   });
  return dst;
}

std::string describe(const ExpandCase& c, kgen_dtype_t d, std::pair<int, int> off) {
  return "expand " + show(c.src) + " -> " + show(c.dst) + " " + test::dtype_short(d) + " offsets " +
         std::to_string(off.first) + "," + std::to_string(off.second);
}

// One expand (variant null: kgen_expand) from src.at(src_off) into dst at
// kGuard + dst_off, dst poisoned first; checks dst and its guards.  Returns
// false when the named variant cannot run the problem.
bool run_expand(const char* variant, kgen_dtype_t dtype, const ExpandCase& c, const test::DeviceBuffer& src,
                int src_off, const test::DeviceBuffer& dst, int dst_off,
                const std::vector<unsigned char>& want) {
  CUDA_REQUIRE(cudaMemset(dst.ptr, kPoison, dst.bytes));
  void* out = dst.at(kGuard + dst_off);
  const kgen_status_t st =
      variant ? kgen_expand_variant(variant, dtype, rank_of(c.src), c.src.data(), rank_of(c.dst),
                                    c.dst.data(), src.at(src_off), out, nullptr)
              : kgen_expand(dtype, rank_of(c.src), c.src.data(), rank_of(c.dst), c.dst.data(),
                            src.at(src_off), out, nullptr);
  if (variant && st == KGEN_ERROR_UNSUPPORTED) return false;
  INFO((variant ? variant : "selected") << ": " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaGetLastError());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  check_output(dst, kGuard + dst_off, want);
  return true;
}

// ---- where -------------------------------------------------------------------

struct WhereCase {
  Shape cond, x, y;
};

// The broadcast shape of a where, by the PyTorch rules
Shape where_shape(const WhereCase& c) {
  int r = 0;
  for (const Shape* s : {&c.cond, &c.x, &c.y}) r = std::max(r, rank_of(*s));
  Shape out(r, 1);
  for (const Shape* s : {&c.cond, &c.x, &c.y})
    for (int k = 0; k < rank_of(*s); ++k) {
      const int64_t d = (*s)[k];
      int64_t& o = out[r - rank_of(*s) + k];
      if (d != 1) o = d;  // the cases broadcast: every size here is o or 1
    }
  return out;
}

std::vector<WhereCase> where_cases() {
  std::vector<WhereCase> cases = {
      {{}, {}, {}},                               // all scalars: a fill
      {{1001}, {1001}, {1001}},                   // all equal: elementwise
      {{33, 65}, {33, 65}, {33, 65}},
      {{4, 1, 1, 16}, {4, 3, 16, 16}, {}},        // a mask over heads, a scalar fill value
      {{}, {33, 65}, {33, 65}},                   // one of them a scalar
      {{33, 65}, {}, {33, 65}},
      {{33, 65}, {33, 65}, {}},
      {{33, 65}, {}, {}},
      {{}, {}, {1001}},
      {{}, {65}, {}},
      {{1001}, {}, {1001}},
      {{33, 65}, {65}, {33, 1}},                  // every input broadcast differently
      {{1, 65}, {33, 1}, {33, 65}},
      {{7, 1, 9}, {1, 5, 9}, {7, 5, 1}},
      {{7, 1}, {1, 1001}, {7, 1001}},             // odd sizes
      {{65, 1}, {1, 33}, {}},
      {{1, 5, 1, 1}, {3, 1, 1, 7}, {1, 1, 1, 1}}, // size-1 dims
      {{1, 1, 1, 1, 1, 1, 1, 1}, {1}, {1, 1}},    // one element, rank 8
      {{2, 1, 3, 1, 2, 1, 3, 1}, {1, 2, 1, 2, 1, 3, 1, 2}, {2, 2, 3, 2, 2, 3, 3, 2}},
      {{1, 2, 1, 1, 3, 1, 5}, {4, 1, 3, 1, 1, 2, 5}, {1, 1}},  // with a size-1 dim
      {{3, 0}, {3, 1}, {}},                       // empty out: a no-op
      {{0, 1}, {1, 5}, {}},
  };
  // Alternating patterns that never merge, for every rank 2-8: the innermost
  // dim (16) is read whole by cond and x and broadcast for y.
  const Shape cond = {1, 3, 1, 2, 1, 3, 1, 16}, x = {2, 1, 2, 1, 2, 1, 2, 16},
              y = {2, 3, 2, 2, 2, 3, 2, 1};
  for (int r = 2; r <= 8; ++r) cases.push_back({suffix(cond, r), suffix(x, r), suffix(y, r)});
  return cases;
}

// Byte offset of cond, element offsets of x, y and out (x, y and out must be
// aligned to their elements; cond takes any byte)
struct WhereOffsets {
  int cond, x, y, out;
};
const WhereOffsets kWhereOffsets[] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {3, 0, 1, 0}, {2, 1, 0, 1}, {0, 0, 0, 1}};

std::vector<unsigned char> where_reference(const std::vector<unsigned char>& cond,
                                           const std::vector<unsigned char>& x,
                                           const std::vector<unsigned char>& y, const WhereCase& c,
                                           const Shape& out, size_t elem) {
  std::vector<unsigned char> want(static_cast<size_t>(numel(out)) * elem);
  for_each_element(out, {broadcast_strides(c.cond, out), broadcast_strides(c.x, out), broadcast_strides(c.y, out)},
                   [&](int64_t i, const std::vector<int64_t>& off) {
                     const unsigned char* from = cond[off[0]] ? &x[off[1] * elem] : &y[off[2] * elem];
                     std::memcpy(&want[i * elem], from, elem);
                   });
  return want;
}

std::string describe(const WhereCase& c, kgen_dtype_t d, const WhereOffsets& o) {
  return "where cond " + show(c.cond) + " x " + show(c.x) + " y " + show(c.y) + " " + test::dtype_short(d) +
         " offsets cond " + std::to_string(o.cond) + " bytes, x " + std::to_string(o.x) + " y " +
         std::to_string(o.y) + " out " + std::to_string(o.out) + " elements";
}

// The device side of one where case: inputs at their offsets, out at
// kGuard + its offset in a buffer of poison around it.
struct WhereBuffers {
  test::DeviceBuffer cond, x, y, out;
  WhereBuffers(const WhereCase& c, const Shape& out_shape, size_t elem)
      : cond(static_cast<size_t>(numel(c.cond)) + 16),
        x((static_cast<size_t>(numel(c.x)) + 2) * elem),
        y((static_cast<size_t>(numel(c.y)) + 2) * elem),
        out((static_cast<size_t>(numel(out_shape)) + 2) * elem + 2 * kGuard) {}
};

bool run_where(const char* variant, kgen_dtype_t dtype, const WhereCase& c, const WhereBuffers& b,
               const WhereOffsets& o, const std::vector<unsigned char>& want) {
  const size_t e = test::elem_size(dtype);
  CUDA_REQUIRE(cudaMemset(b.out.ptr, kPoison, b.out.bytes));
  const void* cond = b.cond.at(o.cond);
  const void* x = b.x.at(o.x * e);
  const void* y = b.y.at(o.y * e);
  void* out = b.out.at(kGuard + o.out * e);
  const kgen_status_t st =
      variant ? kgen_where_variant(variant, dtype, rank_of(c.cond), c.cond.data(), rank_of(c.x), c.x.data(),
                                   rank_of(c.y), c.y.data(), cond, x, y, out, nullptr)
              : kgen_where(dtype, rank_of(c.cond), c.cond.data(), rank_of(c.x), c.x.data(), rank_of(c.y),
                           c.y.data(), cond, x, y, out, nullptr);
  if (variant && st == KGEN_ERROR_UNSUPPORTED) return false;
  INFO((variant ? variant : "selected") << ": " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaGetLastError());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  check_output(b.out, kGuard + o.out * e, want);
  return true;
}

// Uploads the inputs of a where case at their offsets.
void upload(const WhereBuffers& b, const WhereOffsets& o, size_t e, const std::vector<unsigned char>& cond,
            const std::vector<unsigned char>& x, const std::vector<unsigned char>& y) {
  CUDA_REQUIRE(cudaMemcpy(b.cond.at(o.cond), cond.data(), cond.size(), cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(b.x.at(o.x * e), x.data(), x.size(), cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(b.y.at(o.y * e), y.data(), y.size(), cudaMemcpyHostToDevice));
}

std::vector<unsigned char> download(const test::DeviceBuffer& b) {
  std::vector<unsigned char> h(b.bytes);
  CUDA_REQUIRE(cudaMemcpy(h.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace

TEST_CASE("every expand variant matches the CPU reference", "[broadcast][expand]") {
  const std::vector<std::string> variants = variants_of("expand");
  REQUIRE(!variants.empty());
  std::map<std::string, int> runs;
  for (const ExpandCase& c : expand_cases()) {
    const Shape out = resolve(c);
    for (kgen_dtype_t dtype : kByteDtypes) {
      const size_t e = test::elem_size(dtype);
      const std::vector<unsigned char> host = random_bytes(static_cast<size_t>(numel(c.src)) * e);
      const std::vector<unsigned char> want = expand_reference(host, c.src, out, e);
      test::DeviceBuffer src(host.size() + 16), dst(want.size() + 16 + 2 * kGuard);
      for (auto off : kExpandOffsets) {
        INFO(describe(c, dtype, off));
        CUDA_REQUIRE(cudaMemcpy(src.at(off.first), host.data(), host.size(), cudaMemcpyHostToDevice));
        for (const std::string& v : variants)
          if (run_expand(v.c_str(), dtype, c, src, off.first, dst, off.second, want)) ++runs[v];
        run_expand(nullptr, dtype, c, src, off.first, dst, off.second, want);
      }
    }
  }
  for (const std::string& v : variants) {
    INFO(v << " ran on no case");
    CHECK(runs[v] > 0);
  }
}

TEST_CASE("every where variant matches the CPU reference", "[broadcast][where]") {
  const std::vector<std::string> variants = variants_of("where");
  REQUIRE(!variants.empty());
  std::map<std::string, int> runs;
  for (const WhereCase& c : where_cases()) {
    const Shape out = where_shape(c);
    {
      // the library's shape inference agrees with the cases' shapes
      const int ranks[] = {rank_of(c.cond), rank_of(c.x), rank_of(c.y)};
      const int64_t* shapes[] = {c.cond.data(), c.x.data(), c.y.data()};
      int out_rank = -1;
      int64_t out_shape[8];
      KGEN_REQUIRE(kgen_broadcast_shape(3, ranks, shapes, &out_rank, out_shape));
      REQUIRE(Shape(out_shape, out_shape + out_rank) == out);
    }
    for (kgen_dtype_t dtype : kByteDtypes) {
      const size_t e = test::elem_size(dtype);
      const std::vector<unsigned char> cond = random_cond(static_cast<size_t>(numel(c.cond)));
      const std::vector<unsigned char> x = random_bytes(static_cast<size_t>(numel(c.x)) * e);
      const std::vector<unsigned char> y = random_bytes(static_cast<size_t>(numel(c.y)) * e);
      const std::vector<unsigned char> want = where_reference(cond, x, y, c, out, e);
      const WhereBuffers b(c, out, e);
      for (const WhereOffsets& o : kWhereOffsets) {
        INFO(describe(c, dtype, o));
        upload(b, o, e, cond, x, y);
        for (const std::string& v : variants)
          if (run_where(v.c_str(), dtype, c, b, o, want)) ++runs[v];
        run_where(nullptr, dtype, c, b, o, want);
      }
    }
  }
  for (const std::string& v : variants) {
    INFO(v << " ran on no case");
    CHECK(runs[v] > 0);
  }
}

TEST_CASE("expand and where on every dtype, as selected", "[broadcast]") {
  for (kgen_dtype_t dtype : kAllDtypes) {
    const size_t e = test::elem_size(dtype);
    for (const ExpandCase& c : expand_cases()) {
      const Shape out = resolve(c);
      const std::vector<unsigned char> host = random_values(dtype, static_cast<size_t>(numel(c.src)));
      const std::vector<unsigned char> want = expand_reference(host, c.src, out, e);
      test::DeviceBuffer src(host.size() + 16), dst(want.size() + 16 + 2 * kGuard);
      for (auto off : {std::pair<int, int>{0, 0}, std::pair<int, int>{1, 3}}) {
        INFO(describe(c, dtype, off));
        CUDA_REQUIRE(cudaMemcpy(src.at(off.first), host.data(), host.size(), cudaMemcpyHostToDevice));
        const char* name = nullptr;
        KGEN_REQUIRE(kgen_expand_selected(dtype, rank_of(c.src), c.src.data(), rank_of(c.dst), c.dst.data(),
                                          src.at(off.first), dst.at(kGuard + off.second), &name));
        REQUIRE(name != nullptr);
        INFO("selected " << name);
        if (numel(out) == 0) CHECK(std::string(name).empty());
        else if (numel(out) == numel(c.src)) CHECK(std::string(name) == "copy");
        else CHECK(starts_with(name, "expand_"));
        run_expand(nullptr, dtype, c, src, off.first, dst, off.second, want);
      }
    }
    for (const WhereCase& c : where_cases()) {
      const Shape out = where_shape(c);
      const std::vector<unsigned char> cond = random_cond(static_cast<size_t>(numel(c.cond)));
      const std::vector<unsigned char> x = random_values(dtype, static_cast<size_t>(numel(c.x)));
      const std::vector<unsigned char> y = random_values(dtype, static_cast<size_t>(numel(c.y)));
      const std::vector<unsigned char> want = where_reference(cond, x, y, c, out, e);
      const WhereBuffers b(c, out, e);
      for (const WhereOffsets& o : {WhereOffsets{0, 0, 0, 0}, WhereOffsets{1, 1, 1, 1}}) {
        INFO(describe(c, dtype, o));
        upload(b, o, e, cond, x, y);
        const char* name = nullptr;
        KGEN_REQUIRE(kgen_where_selected(dtype, rank_of(c.cond), c.cond.data(), rank_of(c.x), c.x.data(),
                                         rank_of(c.y), c.y.data(), b.cond.at(o.cond), b.x.at(o.x * e),
                                         b.y.at(o.y * e), b.out.at(kGuard + o.out * e), &name));
        REQUIRE(name != nullptr);
        INFO("selected " << name);
        if (numel(out) == 0) CHECK(std::string(name).empty());
        else CHECK(starts_with(name, "where_"));
        run_where(nullptr, dtype, c, b, o, want);
      }
    }
  }
}

// The cases above are small: variants of packs of 8 bytes or more run them
// one pack a thread (kgen/device/broadcast.cuh kSpreadBlocksPerSm); these of
// 3M float32 values take blocks of 4 packs a thread at any pack, on GPUs of
// up to 180 SMs.
TEST_CASE("expand and where of many blocks, every variant", "[broadcast]") {
  const kgen_dtype_t dtype = KGEN_FLOAT32;
  const size_t e = test::elem_size(dtype);
  const std::vector<ExpandCase> expands = {{{1, 1000}, {3001, 1000}}, {{3001, 1}, {3001, 1000}}};
  for (const ExpandCase& c : expands) {
    const Shape out = resolve(c);
    const std::vector<unsigned char> host = random_bytes(static_cast<size_t>(numel(c.src)) * e);
    const std::vector<unsigned char> want = expand_reference(host, c.src, out, e);
    test::DeviceBuffer src(host.size() + 16), dst(want.size() + 16 + 2 * kGuard);
    for (auto off : {std::pair<int, int>{0, 0}, std::pair<int, int>{1, 3}}) {
      INFO(describe(c, dtype, off));
      CUDA_REQUIRE(cudaMemcpy(src.at(off.first), host.data(), host.size(), cudaMemcpyHostToDevice));
      int ran = 0;
      for (const std::string& v : variants_of("expand"))
        ran += run_expand(v.c_str(), dtype, c, src, off.first, dst, off.second, want);
      CHECK(ran > 0);
      run_expand(nullptr, dtype, c, src, off.first, dst, off.second, want);
    }
  }
  const std::vector<WhereCase> wheres = {{{3001, 1000}, {3001, 1000}, {3001, 1000}},
                                         {{3001, 1}, {3001, 1000}, {1, 1000}}};
  for (const WhereCase& c : wheres) {
    const Shape out = where_shape(c);
    const std::vector<unsigned char> cond = random_cond(static_cast<size_t>(numel(c.cond)));
    const std::vector<unsigned char> x = random_bytes(static_cast<size_t>(numel(c.x)) * e);
    const std::vector<unsigned char> y = random_bytes(static_cast<size_t>(numel(c.y)) * e);
    const std::vector<unsigned char> want = where_reference(cond, x, y, c, out, e);
    const WhereBuffers b(c, out, e);
    for (const WhereOffsets& o : {WhereOffsets{0, 0, 0, 0}, WhereOffsets{1, 1, 1, 1}}) {
      INFO(describe(c, dtype, o));
      upload(b, o, e, cond, x, y);
      int ran = 0;
      for (const std::string& v : variants_of("where")) ran += run_where(v.c_str(), dtype, c, b, o, want);
      CHECK(ran > 0);
      run_where(nullptr, dtype, c, b, o, want);
    }
  }
}

TEST_CASE("expand selection: no broadcast is a copy, an empty dst nothing", "[broadcast][expand]") {
  test::DeviceBuffer src(4096), dst(4096);
  const char* name = nullptr;
  const int64_t same[] = {4, 5, 6}, ones[] = {4, 1, 6}, grown[] = {4, 7, 6}, empty[] = {4, 0, 6};
  const int64_t keep[] = {-1, -1, -1};
  KGEN_REQUIRE(kgen_expand_selected(KGEN_FLOAT32, 3, same, 3, same, src.ptr, dst.ptr, &name));
  CHECK(std::string(name) == "copy");
  KGEN_REQUIRE(kgen_expand_selected(KGEN_FLOAT32, 3, same, 3, keep, src.ptr, dst.ptr, &name));
  CHECK(std::string(name) == "copy");
  KGEN_REQUIRE(kgen_expand_selected(KGEN_FLOAT32, 2, same + 1, 3, same, src.ptr, dst.ptr, &name));
  CHECK(starts_with(name, "expand_"));
  KGEN_REQUIRE(kgen_expand_selected(KGEN_FLOAT32, 3, ones, 3, grown, src.ptr, dst.ptr, &name));
  CHECK(starts_with(name, "expand_"));
  KGEN_REQUIRE(kgen_expand_selected(KGEN_FLOAT32, 3, ones, 3, empty, src.ptr, dst.ptr, &name));
  CHECK(std::string(name).empty());
  KGEN_REQUIRE(kgen_expand_selected(KGEN_FLOAT32, 0, nullptr, 3, grown, src.ptr, dst.ptr, &name));
  CHECK(starts_with(name, "expand_"));

  const int64_t cond_shape[] = {4, 1, 6}, x_shape[] = {4, 7, 6};
  KGEN_REQUIRE(kgen_where_selected(KGEN_FLOAT32, 3, cond_shape, 3, x_shape, 0, nullptr, src.ptr, dst.ptr,
                                   src.ptr, dst.at(1024), &name));
  CHECK(starts_with(name, "where_"));
  KGEN_REQUIRE(kgen_where_selected(KGEN_FLOAT32, 3, cond_shape, 3, empty, 0, nullptr, src.ptr, dst.ptr,
                                   src.ptr, dst.at(1024), &name));
  CHECK(std::string(name).empty());
}

TEST_CASE("expand and where: bad arguments write nothing", "[broadcast]") {
  // float32 buffers of known bytes: src/x 0x11, cond 0x01, y 0x22, dst/out poison
  const size_t bytes = 4096;
  test::DeviceBuffer a(bytes), cond(bytes), y(bytes), out(bytes);
  CUDA_REQUIRE(cudaMemset(a.ptr, 0x11, bytes));
  CUDA_REQUIRE(cudaMemset(cond.ptr, 0x01, bytes));
  CUDA_REQUIRE(cudaMemset(y.ptr, 0x22, bytes));
  CUDA_REQUIRE(cudaMemset(out.ptr, kPoison, bytes));
  std::vector<unsigned char> host(bytes, kPoison);  // an ordinary host pointer as the output
  const std::vector<unsigned char> a0 = download(a), cond0 = download(cond), y0 = download(y),
                                   out0 = download(out);
  const char* const absent = "expand_no_such_variant";
  const std::vector<std::string> wheres = variants_of("where"), expands = variants_of("expand");
  REQUIRE(!wheres.empty());
  REQUIRE(!expands.empty());

  SECTION("expand") {
    const int64_t src[] = {3, 4}, col[] = {3, 1};
    const int64_t wider[] = {3, 8}, fewer[] = {12}, lead[] = {-1, 3, 4}, negative[] = {3, -2},
                  nine[] = {1, 1, 1, 1, 1, 1, 1, 3, 4}, grown[] = {3, 5};
    const kgen_stream_t s = nullptr;
    // growing a dim that is not 1
    CHECK(kgen_expand(KGEN_FLOAT32, 2, src, 2, wider, a.ptr, out.ptr, s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand_variant("expand_generic_b4", KGEN_FLOAT32, 2, src, 2, wider, a.ptr, out.ptr, s) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    // fewer dims than src, -1 on an added dim, a negative size, rank 9
    CHECK(kgen_expand(KGEN_FLOAT32, 2, src, 1, fewer, a.ptr, out.ptr, s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, src, 3, lead, a.ptr, out.ptr, s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, src, 2, negative, a.ptr, out.ptr, s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, src, 9, nine, a.ptr, out.ptr, s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, col, 2, nullptr, a.ptr, out.ptr, s) == KGEN_ERROR_INVALID_ARGUMENT);
    // an unknown dtype, null pointers, a host pointer, overlapping src and dst
    CHECK(kgen_expand(static_cast<kgen_dtype_t>(99), 2, col, 2, grown, a.ptr, out.ptr, s) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, col, 2, grown, nullptr, out.ptr, s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, col, 2, grown, a.ptr, nullptr, s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, col, 2, grown, a.ptr, host.data(), s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, col, 2, grown, a.ptr, a.at(8), s) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_expand(KGEN_FLOAT32, 2, src, 2, src, a.ptr, a.at(4), s) == KGEN_ERROR_INVALID_ARGUMENT);
    // variants that are not compiled, of the other family, or of another unit:
    // (3,1) -> (3,5) float32 with dst 4 bytes past 16-byte alignment moves
    // 4-byte units at most
    CHECK(kgen_expand_variant(absent, KGEN_FLOAT32, 2, col, 2, grown, a.ptr, out.ptr, s) ==
          KGEN_ERROR_UNSUPPORTED);
    CHECK(kgen_expand_variant(wheres.front().c_str(), KGEN_FLOAT32, 2, col, 2, grown, a.ptr, out.ptr, s) ==
          KGEN_ERROR_UNSUPPORTED);
    for (const char* v : {"expand_generic_b8", "expand_generic_b16"})
      CHECK(kgen_expand_variant(v, KGEN_FLOAT32, 2, col, 2, grown, a.ptr, out.at(4), s) ==
            KGEN_ERROR_UNSUPPORTED);
    for (const std::string& v : expands) {
      // every variant of units wider than 4 bytes refuses it
      const kgen_status_t st =
          kgen_expand_variant(v.c_str(), KGEN_FLOAT32, 2, col, 2, grown, a.ptr, out.at(4), s);
      INFO(v << ": " << kgen_last_error());
      CHECK((st == KGEN_OK || st == KGEN_ERROR_UNSUPPORTED));
      if (v.find("_b8") != std::string::npos || v.find("_b16") != std::string::npos)
        CHECK(st == KGEN_ERROR_UNSUPPORTED);
      // ... which wrote into out: start again from poison
      CUDA_REQUIRE(cudaMemset(out.ptr, kPoison, bytes));
    }
  }

  SECTION("where") {
    const int64_t c_shape[] = {4, 1}, x_shape[] = {4, 5}, y_shape[] = {5};
    const int64_t bad_x[] = {3, 5}, negative[] = {4, -5}, nine[] = {1, 1, 1, 1, 1, 1, 1, 4, 1};
    const kgen_stream_t s = nullptr;
    auto where = [&](const char* v, kgen_dtype_t d, const int64_t* cs, int cr, const int64_t* xs, int xr,
                     const void* c, const void* x, const void* yp, void* o) {
      return kgen_where_variant(v, d, cr, cs, xr, xs, 1, y_shape, c, x, yp, o, s);
    };
    // shapes that do not broadcast, a negative size, rank 9
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, bad_x, 2, cond.ptr, a.ptr, y.ptr, out.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(kgen_where(KGEN_FLOAT32, 2, c_shape, 2, x_shape, 2, bad_x, cond.ptr, a.ptr, y.ptr, out.ptr, s) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, negative, 2, cond.ptr, a.ptr, y.ptr, out.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT32, nine, 9, x_shape, 2, cond.ptr, a.ptr, y.ptr, out.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, nullptr, 2, cond.ptr, a.ptr, y.ptr, out.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    // x, y or out not aligned to its elements
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.at(2), y.ptr, out.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT16, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.at(1), out.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT64, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr, out.at(4)) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    // an unknown dtype, null pointers, a host pointer
    CHECK(where(nullptr, static_cast<kgen_dtype_t>(99), c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr,
                out.ptr) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, x_shape, 2, nullptr, a.ptr, y.ptr, out.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr, nullptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr, host.data()) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    // out overlapping an input: partly, or the same buffer when that input is broadcast
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr, a.at(16)) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr, y.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(where(nullptr, KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr, cond.ptr) ==
          KGEN_ERROR_INVALID_ARGUMENT);
    // variants that are not compiled, of the other family, or of another element size
    CHECK(where("where_no_such_variant", KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr,
                out.ptr) == KGEN_ERROR_UNSUPPORTED);
    CHECK(where(expands.front().c_str(), KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr,
                out.ptr) == KGEN_ERROR_UNSUPPORTED);
    for (const std::string& v : wheres) {
      if (v.find("_b4") != std::string::npos) continue;
      INFO(v);
      CHECK(where(v.c_str(), KGEN_FLOAT32, c_shape, 2, x_shape, 2, cond.ptr, a.ptr, y.ptr, out.ptr) ==
            KGEN_ERROR_UNSUPPORTED);
    }
  }

  CUDA_REQUIRE(cudaDeviceSynchronize());
  CHECK(download(a) == a0);
  CHECK(download(cond) == cond0);
  CHECK(download(y) == y0);
  CHECK(download(out) == out0);
  size_t changed = 0;
  for (unsigned char b : host) changed += b != kPoison;
  CHECK(changed == 0);
}

TEST_CASE("expand and where can be captured into a CUDA graph and replayed", "[broadcast][graph]") {
  SECTION("expand") {
    // a kernel, a plain copy and a fill
    for (const ExpandCase& c : {ExpandCase{{64, 1, 96}, {64, 128, 96}}, ExpandCase{{4, 5, 6}, {4, 5, 6}},
                                ExpandCase{{}, {3, 1000}}}) {
      INFO(describe(c, KGEN_FLOAT32, {0, 0}));
      const Shape out = resolve(c);
      const std::vector<unsigned char> host = random_bytes(static_cast<size_t>(numel(c.src)) * 4);
      const std::vector<unsigned char> want = expand_reference(host, c.src, out, 4);
      test::DeviceBuffer src(host.size()), dst(want.size());
      CUDA_REQUIRE(cudaMemcpy(src.ptr, host.data(), host.size(), cudaMemcpyHostToDevice));
      test::capture_and_replay(
          [&](cudaStream_t st) {
            return kgen_expand(KGEN_FLOAT32, rank_of(c.src), c.src.data(), rank_of(c.dst), c.dst.data(), src.ptr,
                               dst.ptr, st);
          },
          dst.ptr, want.size(), [&] { CHECK(download(dst) == want); });
    }
  }
  SECTION("where") {
    const WhereCase c{{4, 1, 1, 16}, {4, 3, 16, 16}, {}};
    const Shape out = where_shape(c);
    const std::vector<unsigned char> cond = random_cond(static_cast<size_t>(numel(c.cond)));
    const std::vector<unsigned char> x = random_bytes(static_cast<size_t>(numel(c.x)) * 2);
    const std::vector<unsigned char> y = random_bytes(2);
    const std::vector<unsigned char> want = where_reference(cond, x, y, c, out, 2);
    test::DeviceBuffer dc(cond.size()), dx(x.size()), dy(y.size()), dout(want.size());
    CUDA_REQUIRE(cudaMemcpy(dc.ptr, cond.data(), cond.size(), cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dx.ptr, x.data(), x.size(), cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dy.ptr, y.data(), y.size(), cudaMemcpyHostToDevice));
    test::capture_and_replay(
        [&](cudaStream_t st) {
          return kgen_where(KGEN_FLOAT16, rank_of(c.cond), c.cond.data(), rank_of(c.x), c.x.data(), 0, nullptr,
                            dc.ptr, dx.ptr, dy.ptr, dout.ptr, st);
        },
        dout.ptr, want.size(), [&] { CHECK(download(dout) == want); });
  }
}

TEST_CASE("where in place: out may be x or y when it has out's shape", "[broadcast][where]") {
  // x has out's shape (33, 65); cond and y are broadcast
  const WhereCase cases[] = {{{33, 1}, {33, 65}, {65}}, {{65}, {33, 65}, {}}, {{33, 65}, {33, 65}, {33, 65}}};
  const std::vector<std::string> variants = variants_of("where");
  for (const WhereCase& c : cases) {
    const Shape out = where_shape(c);
    REQUIRE(out == c.x);
    for (kgen_dtype_t dtype : kByteDtypes) {
      const size_t e = test::elem_size(dtype);
      const std::vector<unsigned char> cond = random_cond(static_cast<size_t>(numel(c.cond)));
      const std::vector<unsigned char> x = random_bytes(static_cast<size_t>(numel(c.x)) * e);
      const std::vector<unsigned char> y = random_bytes(static_cast<size_t>(numel(c.y)) * e);
      for (bool into_y : {false, true}) {
        // out is x; or, with the two value tensors passed the other way round, out is y
        const WhereCase call = into_y ? WhereCase{c.cond, c.y, c.x} : c;
        const std::vector<unsigned char> want =
            into_y ? where_reference(cond, y, x, call, out, e) : where_reference(cond, x, y, c, out, e);
        test::DeviceBuffer dc(cond.size()), dx(x.size() + 2 * kGuard), dy(y.size());
        CUDA_REQUIRE(cudaMemcpy(dc.ptr, cond.data(), cond.size(), cudaMemcpyHostToDevice));
        CUDA_REQUIRE(cudaMemcpy(dy.ptr, y.data(), y.size(), cudaMemcpyHostToDevice));
        void* inout = dx.at(kGuard);
        std::vector<const char*> names = {nullptr};
        for (const std::string& v : variants) names.push_back(v.c_str());
        for (const char* v : names) {
          CUDA_REQUIRE(cudaMemset(dx.ptr, kPoison, dx.bytes));
          CUDA_REQUIRE(cudaMemcpy(inout, x.data(), x.size(), cudaMemcpyHostToDevice));
          const void* first = into_y ? dy.ptr : inout;   // where's x argument
          const void* second = into_y ? inout : dy.ptr;  // where's y argument
          const kgen_status_t st = kgen_where_variant(
              v, dtype, rank_of(call.cond), call.cond.data(), rank_of(call.x), call.x.data(), rank_of(call.y),
              call.y.data(), dc.ptr, first, second, inout, nullptr);
          if (v && st == KGEN_ERROR_UNSUPPORTED) continue;
          INFO(describe(call, dtype, {0, 0, 0, 0}) << (into_y ? ", out is y" : ", out is x") << ", "
                                                    << (v ? v : "selected") << ": " << kgen_last_error());
          REQUIRE(st == KGEN_OK);
          CUDA_REQUIRE(cudaDeviceSynchronize());
          check_output(dx, kGuard, want);
        }
      }
    }
  }
}

TEST_CASE("expand past 2^31 elements (int64 indices)", "[broadcast][expand][huge]") {
  // uint8 (2, 1) -> (2, 2^30 + 3): 2^31 + 6 elements; row 0 holds 0x5A, row 1 0xA5
  const int64_t cols = (int64_t{1} << 30) + 3;
  const ExpandCase c{{2, 1}, {2, cols}};
  const size_t bytes = static_cast<size_t>(2 * cols);
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < bytes + (size_t{1} << 30)) {
    WARN("skipped: not enough device memory");
    return;
  }
  const unsigned char host[2] = {0x5A, 0xA5};
  test::DeviceBuffer src(2), dst(bytes + 2 * kGuard);
  CUDA_REQUIRE(cudaMemcpy(src.ptr, host, 2, cudaMemcpyHostToDevice));
  const char* name = nullptr;
  KGEN_REQUIRE(kgen_expand_selected(KGEN_UINT8, 2, c.src.data(), 2, c.dst.data(), src.ptr, dst.at(kGuard), &name));
  INFO("selected " << name);
  const std::string selected = name;
  CHECK((selected.find("_i32") == std::string::npos || starts_with(selected, "expand_flat_")));

  std::vector<unsigned char> got(dst.bytes);
  for (const char* v : {static_cast<const char*>(nullptr), "expand_generic_b1"}) {
    INFO((v ? v : "selected"));
    CUDA_REQUIRE(cudaMemset(dst.ptr, kPoison, dst.bytes));
    const kgen_status_t st = v ? kgen_expand_variant(v, KGEN_UINT8, 2, c.src.data(), 2, c.dst.data(), src.ptr,
                                                     dst.at(kGuard), nullptr)
                               : kgen_expand(KGEN_UINT8, 2, c.src.data(), 2, c.dst.data(), src.ptr,
                                             dst.at(kGuard), nullptr);
    INFO(kgen_last_error());
    REQUIRE(st == KGEN_OK);
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    CUDA_REQUIRE(cudaMemcpy(got.data(), dst.ptr, dst.bytes, cudaMemcpyDeviceToHost));
    // every byte: the guard, row 0, row 1, the guard
    const size_t row = static_cast<size_t>(cols);
    const size_t front = count_not(got.data(), kGuard, kPoison);
    const size_t row0 = count_not(got.data() + kGuard, row, host[0]);
    const size_t row1 = count_not(got.data() + kGuard + row, row, host[1]);
    const size_t back = count_not(got.data() + kGuard + bytes, kGuard, kPoison);
    INFO("wrong bytes: row 0 " << row0 << ", row 1 " << row1 << "; guard bytes written: " << front
                               << " before, " << back << " after");
    CHECK(row0 == 0);
    CHECK(row1 == 0);
    CHECK(front + back == 0);
  }
}
