// Masked softmax (kgen_softmax_masked): y = softmax(scale * x + mask) over
// the keys of x seen as (batch, heads, queries, keys), every row-tier and
// generic variant of the forward family against a float64 CPU reference:
// bool, additive and no mask, broadcast over batch, heads and queries or
// not, causal with queries == keys and !=, scale != 1, rows with no key
// left with and without `safe`, and key lengths that reach every row tier.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

const kgen_dtype_t kDtypes[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};
const double kInf = std::numeric_limits<double>::infinity();

struct Shape {
  int64_t batch, heads, queries, keys;
  size_t size() const { return static_cast<size_t>(batch * heads * queries * keys); }
  std::string text() const {
    return "(" + std::to_string(batch) + "," + std::to_string(heads) + "," + std::to_string(queries) + "," +
           std::to_string(keys) + ")";
  }
};

// How a case masks: the kind, which of the mask's leading extents are x's
// (the others 1), causal, scale and safe.
struct Config {
  kgen_mask_kind_t kind;
  bool full_batch, full_heads, full_queries;
  int causal, safe;
  double scale;
};

std::string describe(const Config& c) {
  const char* kind = c.kind == KGEN_MASK_BOOL ? "bool" : c.kind == KGEN_MASK_ADDITIVE ? "additive" : "none";
  std::string t = std::string(kind);
  if (c.kind != KGEN_MASK_NONE)
    t += std::string(" [") + (c.full_batch ? "B," : "1,") + (c.full_heads ? "H," : "1,") +
         (c.full_queries ? "S," : "1,") + "S]";
  return t + (c.causal ? " causal" : "") + (c.safe ? " safe" : "") + " scale " + std::to_string(c.scale);
}

// Every kind, the broadcast patterns of attention ([B,1,S,S], [B,1,1,S],
// [1,1,S,S], [B,H,S,S], [1,H,1,S]), causal or not, scales of 1 and not
// (negative too), safe or not.
const Config kConfigs[] = {
    {KGEN_MASK_NONE, false, false, false, 0, 0, 1.0},
    {KGEN_MASK_NONE, false, false, false, 1, 1, 0.125},
    {KGEN_MASK_BOOL, true, false, true, 0, 0, 0.3},
    {KGEN_MASK_BOOL, true, false, false, 1, 1, 1.0},
    {KGEN_MASK_BOOL, false, false, true, 0, 1, -0.5},
    {KGEN_MASK_BOOL, true, true, true, 1, 0, 2.0},
    {KGEN_MASK_ADDITIVE, true, false, true, 0, 1, 0.125},
    {KGEN_MASK_ADDITIVE, true, true, true, 0, 0, 1.0},
    {KGEN_MASK_ADDITIVE, false, false, true, 1, 0, 0.3},
    {KGEN_MASK_ADDITIVE, false, true, false, 1, 1, 1.0},
};

// One masked problem: x, the mask (bytes for bool, x's dtype for additive),
// the argument struct (its pointer set at run time) and the expected y.
struct Case {
  HostTensor x, mask;
  kgen_softmax_mask_t args;
  std::vector<double> want;
};

// Random x and mask; rows with no key left on purpose: the mask's first row
// masks every key (bool 0, additive -inf), its second only the keys that
// causal keeps for query 1, and without a mask x's first row is all -inf.
// Without a mask the last row holds a NaN at key 0, which causal keeps: a
// NaN row whatever safe says, as in PyTorch, whose safe softmax zeroes only
// rows that are all -inf (with one query or one key, causal leaves the NaN
// the row's only key).  Bool mask bytes that keep a key are any nonzero
// value.
Case make_case(kgen_dtype_t d, const Shape& s, const Config& cfg) {
  const int64_t mb = cfg.full_batch ? s.batch : 1, mh = cfg.full_heads ? s.heads : 1,
                mq = cfg.full_queries ? s.queries : 1, k_n = s.keys;
  const bool additive = cfg.kind == KGEN_MASK_ADDITIVE, boolean = cfg.kind == KGEN_MASK_BOOL;
  const size_t mask_n = cfg.kind == KGEN_MASK_NONE ? 0 : static_cast<size_t>(mb * mh * mq * k_n);
  Case c{random_tensor(d, s.size()), HostTensor(additive ? d : KGEN_UINT8, mask_n),
         kgen_softmax_mask_t{cfg.scale, cfg.kind, nullptr, mb, mh, mq, cfg.causal, cfg.safe}, {}};
  if (additive) {
    c.mask = random_tensor(d, mask_n);
    std::uniform_int_distribution<int> pct(0, 99);
    for (size_t i = 0; i < mask_n; ++i)
      if (pct(rng()) < 10) c.mask.set(i, -kInf);
  } else if (boolean) {
    std::uniform_int_distribution<int> byte(0, 255 * 4 / 3);
    for (size_t i = 0; i < mask_n; ++i) c.mask.bytes[i] = static_cast<unsigned char>(std::max(0, byte(rng()) - 85));
  }
  auto mask_out = [&](size_t i) {
    if (additive) c.mask.set(i, -kInf);
    else c.mask.bytes[i] = 0;
  };
  if (mask_n) {
    for (int64_t k = 0; k < k_n; ++k) mask_out(static_cast<size_t>(k));
    if (cfg.causal && mq > 1)
      for (int64_t k = 0; k <= std::min<int64_t>(1, k_n - 1); ++k) mask_out(static_cast<size_t>(k_n + k));
  } else {
    REQUIRE(cfg.scale > 0);  // -inf stays -inf
    for (int64_t k = 0; k < k_n; ++k) c.x.set(static_cast<size_t>(k), -kInf);
    if (s.size() / k_n >= 2) c.x.set(s.size() - k_n, NAN);
  }
  // z = scale * x (+ mask), masked keys -inf, then softmax over the keys
  const int64_t rows = static_cast<int64_t>(s.size()) / k_n;
  std::vector<double> z(s.size());
  std::vector<bool> empty(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t q = r % s.queries, h = r / s.queries % s.heads, b = r / s.queries / s.heads;
    const int64_t mrow = ((mb == 1 ? 0 : b) * mh + (mh == 1 ? 0 : h)) * mq + (mq == 1 ? 0 : q);
    bool all_masked = true;
    for (int64_t k = 0; k < k_n; ++k) {
      const size_t xi = static_cast<size_t>(r * k_n + k), mi = static_cast<size_t>(mrow * k_n + k);
      double v = cfg.scale * c.x.get(xi);
      if (additive) v += c.mask.get(mi);
      if (boolean && c.mask.bytes[mi] == 0) v = -kInf;
      if (cfg.causal && k > q) v = -kInf;
      z[xi] = v;
      all_masked &= v == -kInf;
    }
    empty[r] = all_masked;
  }
  c.want = softmax_reference(z, rows, k_n, 1, false);
  for (int64_t r = 0; r < rows; ++r)
    if (empty[r])
      for (int64_t k = 0; k < k_n; ++k) c.want[static_cast<size_t>(r * k_n + k)] = cfg.safe ? 0.0 : NAN;
  return c;
}

struct Buffers {
  DeviceBuffer x, mask, y;
  kgen_softmax_mask_t args;
  explicit Buffers(const Case& c)
      : x(c.x.bytes.size()), mask(c.mask.bytes.size()), y(c.x.bytes.size()), args(c.args) {
    upload(x, c.x);
    if (!c.mask.bytes.empty()) {
      upload(mask, c.mask);
      args.mask = mask.ptr;
    }
  }
};

// Runs `variant` (nullptr: automatic selection) into a poisoned y and
// compares; false if the named variant does not support the problem.
bool run_and_check(const char* variant, kgen_dtype_t d, const Shape& s, const Config& cfg, const Buffers& b,
                   const Case& c) {
  poison(b.y.ptr, b.y.bytes, nullptr, kOutsideByte);
  const kgen_status_t st = kgen_softmax_masked_variant(variant, d, s.batch, s.heads, s.queries, s.keys,
                                                       b.x.ptr, &b.args, b.y.ptr, nullptr);
  if (st == KGEN_ERROR_UNSUPPORTED && variant) return false;
  INFO((variant ? variant : "auto") << " " << dtype_short(d) << " " << s.text() << " " << describe(cfg)
                                    << ": " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  check_matches(download(b.y, d, s.size()), c.want, tolerance(d));
  return true;
}

// Key lengths for every row tier (registers, shared memory, two passes),
// queries == keys and queries != keys (fewer and more), one query.
const Shape kShapes[] = {
    {2, 3, 5, 1},    {2, 3, 7, 7},     {2, 2, 33, 33},     {3, 2, 20, 100},  {2, 3, 130, 64},
    {1, 1, 256, 256}, {2, 2, 1, 500},  {1, 2, 64, 1000},   {2, 2, 16, 4096}, {1, 2, 4, 20000},
    {1, 2, 3, 100000},
};

}  // namespace

TEST_CASE("every masked softmax variant matches the float64 reference", "[softmax_masked][variants]") {
  for (kgen_dtype_t d : kDtypes) {
    const auto variants = family_variants(kgen::Family::softmax, d);
    REQUIRE(!variants.empty());
    std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
    // the exact reach of every warp variant (and one pack short)
    std::vector<int64_t> reaches = warp_reaches(kgen::Family::softmax, d);
    std::sort(reaches.begin(), reaches.end());
    reaches.erase(std::unique(reaches.begin(), reaches.end()), reaches.end());
    const size_t fixed = shapes.size();
    for (int64_t r : reaches) shapes.push_back({2, 2, 3, r});
    std::map<std::string, int> runs;
    const size_t configs = std::size(kConfigs);
    for (size_t si = 0; si < shapes.size(); ++si) {
      const Shape& s = shapes[si];
      for (size_t ci = 0; ci < configs; ++ci) {
        // large shapes and the reach shapes take a share of the configs each
        if (si >= fixed ? (si + ci) % 5 != 0 : s.size() > 100000 && (si + ci) % 2 != 0) continue;
        const Config& cfg = kConfigs[ci];
        const Case c = make_case(d, s, cfg);
        const Buffers b(c);
        for (const VariantFacts& v : variants)
          if (run_and_check(v.name, d, s, cfg, b, c)) {
            runs[v.name]++;
            INFO(v.name);
            CHECK(v.fuses_mask());
          }
        run_and_check(nullptr, d, s, cfg, b, c);
      }
    }
    // every row-tier variant that fuses the mask, and the generic one, ran somewhere
    for (const VariantFacts& v : variants) {
      if (!v.fuses_mask()) continue;
      INFO(v.name);
      CHECK(runs[v.name] > 0);
    }
  }
}

TEST_CASE("kgen_softmax_masked selects a variant that runs the problem", "[softmax_masked][entry]") {
  for (kgen_dtype_t d : kDtypes) {
    for (const Shape& s : {Shape{2, 4, 128, 128}, Shape{1, 2, 16, 4096}, Shape{1, 1, 2, 150000}}) {
      for (size_t ci : {size_t(0), size_t(3), size_t(7)}) {
        const Config& cfg = kConfigs[ci];
        const Case c = make_case(d, s, cfg);
        const Buffers b(c);
        INFO(dtype_short(d) << " " << s.text() << " " << describe(cfg));
        poison(b.y.ptr, b.y.bytes, nullptr, kOutsideByte);
        KGEN_REQUIRE(kgen_softmax_masked(d, s.batch, s.heads, s.queries, s.keys, b.x.ptr, &b.args, b.y.ptr, nullptr));
        CUDA_REQUIRE(cudaDeviceSynchronize());
        check_matches(download(b.y, d, s.size()), c.want, tolerance(d));
        const char* name = nullptr;
        KGEN_REQUIRE(kgen_softmax_masked_selected(d, s.batch, s.heads, s.queries, s.keys, b.x.ptr, &b.args,
                                                  b.y.ptr, &name));
        REQUIRE(name != nullptr);
        const VariantFacts v = find_facts(kgen::Family::softmax, name);
        INFO(name);
        CHECK(!v.strided());
      }
    }
  }
}

TEST_CASE("a key-padding mask with causal attention, as a decoder uses it", "[softmax_masked][padding]") {
  // batch b attends to its first len[b] keys: a [B,1,1,S] bool mask
  const Shape s{3, 4, 96, 96};
  const int64_t len[3] = {96, 50, 1};
  for (kgen_dtype_t d : {KGEN_FLOAT16, KGEN_BFLOAT16}) {
    for (int safe = 0; safe < 2; ++safe) {
      Case c{random_tensor(d, s.size()), HostTensor(KGEN_UINT8, static_cast<size_t>(s.batch * s.keys)),
             kgen_softmax_mask_t{0.125, KGEN_MASK_BOOL, nullptr, s.batch, 1, 1, 1, safe}, {}};
      std::vector<double> z(s.size());
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t k = 0; k < s.keys; ++k) c.mask.bytes[static_cast<size_t>(b * s.keys + k)] = k < len[b];
      // every query keeps keys 0..q: none is left without a key
      for (size_t i = 0; i < s.size(); ++i) {
        const int64_t k = static_cast<int64_t>(i) % s.keys, q = static_cast<int64_t>(i) / s.keys % s.queries;
        const int64_t b = static_cast<int64_t>(i) / (s.keys * s.queries * s.heads);
        z[i] = k <= q && k < len[b] ? 0.125 * c.x.get(i) : -kInf;
      }
      c.want = softmax_reference(z, static_cast<int64_t>(s.size()) / s.keys, s.keys, 1, false);
      const Buffers buf(c);
      poison(buf.y.ptr, buf.y.bytes, nullptr, kOutsideByte);
      KGEN_REQUIRE(kgen_softmax_masked(d, s.batch, s.heads, s.queries, s.keys, buf.x.ptr, &buf.args, buf.y.ptr,
                                       nullptr));
      CUDA_REQUIRE(cudaDeviceSynchronize());
      INFO(dtype_short(d) << " safe=" << safe);
      check_matches(download(buf.y, d, s.size()), c.want, tolerance(d));
    }
  }
}

TEST_CASE("empty masked problems launch nothing and touch nothing", "[softmax_masked][empty]") {
  DeviceBuffer buf(64);
  poison(buf.ptr, 64, nullptr, kOutsideByte);
  const kgen_softmax_mask_t m{1.0, KGEN_MASK_BOOL, buf.ptr, 1, 1, 1, 1, 0};
  KGEN_REQUIRE(kgen_softmax_masked(KGEN_FLOAT32, 0, 4, 8, 8, buf.ptr, &m, buf.ptr, nullptr));
  KGEN_REQUIRE(kgen_softmax_masked(KGEN_FLOAT16, 2, 4, 8, 0, buf.ptr, &m, buf.ptr, nullptr));
  KGEN_REQUIRE(kgen_softmax_masked_variant(nullptr, KGEN_FLOAT64, 2, 0, 8, 8, buf.ptr, &m, buf.ptr, nullptr));
  CHECK(count_bytes(buf, kOutsideByte) == 64);
}

TEST_CASE("bad masked arguments are errors naming them, nothing written", "[softmax_masked][errors]") {
  const Shape s{2, 4, 8, 64};
  const Case c = make_case(KGEN_FLOAT32, s, kConfigs[5]);  // bool [B,H,S,S]
  const Buffers b(c);
  poison(b.y.ptr, b.y.bytes, nullptr, kOutsideByte);
  auto call = [&](const kgen_softmax_mask_t& m, const void* x, void* y) {
    return kgen_softmax_masked(KGEN_FLOAT32, s.batch, s.heads, s.queries, s.keys, x, &m, y, nullptr);
  };
  auto expect = [&](kgen_softmax_mask_t m, const char* arg) {
    INFO(arg);
    CHECK(call(m, b.x.ptr, b.y.ptr) == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_names(arg));
  };
  kgen_softmax_mask_t m = b.args;
  m.mask_heads = 2;  // neither 1 nor heads
  expect(m, "mask_heads");
  m = b.args;
  m.mask_batch = 3;
  expect(m, "mask_batch");
  m = b.args;
  m.mask_queries = 4;
  expect(m, "mask_queries");
  m = b.args;
  m.mask_batch = 0;
  expect(m, "mask_batch");
  m = b.args;
  m.mask = nullptr;
  expect(m, "mask");
  m = b.args;
  m.scale = NAN;
  expect(m, "scale");
  m.scale = kInf;
  expect(m, "scale");
  m = b.args;
  m.kind = static_cast<kgen_mask_kind_t>(3);
  expect(m, "kind");
  std::vector<unsigned char> host_mask(c.mask.bytes);
  m = b.args;
  m.mask = host_mask.data();
  expect(m, "mask");
  std::vector<float> host(s.size(), 1.0f);
  CHECK(call(b.args, host.data(), b.y.ptr) == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("x"));
  CHECK(call(b.args, b.x.ptr, host.data()) == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(last_error_names("y"));
  CHECK(std::all_of(host.begin(), host.end(), [](float v) { return v == 1.0f; }));
  CHECK(count_bytes(b.y, kOutsideByte) == b.y.bytes);
}

TEST_CASE("masked softmax can be captured into a CUDA graph and replayed", "[softmax_masked][graph]") {
  for (const Shape& s : {Shape{4, 8, 64, 64}, Shape{1, 2, 8, 30000}}) {
    const Config& cfg = kConfigs[6];  // additive [B,1,S,S], safe
    const Case c = make_case(KGEN_BFLOAT16, s, cfg);
    const Buffers b(c);
    capture_and_replay(
        [&](cudaStream_t st) {
          return kgen_softmax_masked(KGEN_BFLOAT16, s.batch, s.heads, s.queries, s.keys, b.x.ptr, &b.args, b.y.ptr,
                                     st);
        },
        b.y.ptr, b.y.bytes, [&] { check_matches(download(b.y, KGEN_BFLOAT16, s.size()), c.want, tolerance(KGEN_BFLOAT16)); });
  }
}
