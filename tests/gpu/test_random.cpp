// Randomized, seeded problems for every family.  Each valid test draws a few
// hundred problems (shapes, dtypes, parameters, pointer offsets; mostly
// small, some up to a few million elements), poisons the output and the
// guard bytes around it, calls the public entry point that selects a
// variant, and compares with a CPU reference.  The invalid tests draw calls
// with one fault each, which must fail with their status, name the argument
// and write nothing.  The seed is printed once; KGEN_TEST_SEED=N repeats a
// run, and every failure reports the seed, the draw and the problem.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_util.hpp"
#include "invalid_calls.hpp"
#include "reference.hpp"

using namespace test;
using namespace test::rnd;

namespace {

const std::vector<kgen_dtype_t> kFloatDtypes = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};
const std::vector<kgen_dtype_t> kAllDtypes = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64,
                                              KGEN_INT32,   KGEN_INT64,   KGEN_BOOL,     KGEN_UINT8};

// The candidates that some variant of the family is compiled for (variant
// names carry the dtype as a token: softmax_warp_f16_p8_..., reduce_generic_i32),
// so that a build filtered to fewer dtypes runs the rest.
std::vector<kgen_dtype_t> compiled_dtypes(const std::string& family, const std::vector<kgen_dtype_t>& candidates) {
  std::vector<kgen_dtype_t> out;
  for (kgen_dtype_t d : candidates) {
    const std::string token = std::string("_") + dtype_short(d);
    bool found = false;
    for (int64_t i = 0; i < kgen_variant_count() && !found; ++i) {
      if (family != kgen_variant_family(i)) continue;
      const std::string name = kgen_variant_name(i);
      for (size_t at = name.find(token); at != std::string::npos && !found; at = name.find(token, at + 1))
        found = at + token.size() == name.size() || name[at + token.size()] == '_';
    }
    if (found) out.push_back(d);
  }
  return out;
}

// The generic variant of a family and dtype ("" if not compiled in).
std::string generic_variant(const std::string& family, kgen_dtype_t d) {
  const std::string name = family + "_generic_" + dtype_short(d);
  for (int64_t i = 0; i < kgen_variant_count(); ++i)
    if (name == kgen_variant_name(i)) return name;
  return "";
}

// ---- device memory --------------------------------------------------------------

constexpr size_t kGuard = 256;  // bytes before and after every tensor, poisoned with outputs

// A device tensor of `bytes` bytes, `shift` bytes past a 256-byte boundary
// (cudaMalloc's), between two guards.
struct Slot {
  DeviceBuffer buf;
  size_t at, bytes;
  Slot(size_t n, size_t shift) : buf(n + shift + 2 * kGuard), at(kGuard + shift), bytes(n) {}
  void* ptr() const { return buf.at(at); }
  void fill(unsigned char byte) const { CUDA_REQUIRE(cudaMemset(buf.ptr, byte, buf.bytes)); }
  void put(const std::vector<unsigned char>& host) const {
    CUDA_REQUIRE(cudaMemcpy(buf.at(at), host.data(), host.size(), cudaMemcpyHostToDevice));
  }
};

// An output slot after the call: checks that its guards still hold `byte`
// and returns the tensor's bytes.
std::vector<unsigned char> output_of(const Slot& s, unsigned char byte) {
  std::vector<unsigned char> all(s.buf.bytes);
  CUDA_REQUIRE(cudaMemcpy(all.data(), s.buf.ptr, all.size(), cudaMemcpyDeviceToHost));
  size_t damaged = 0;
  for (size_t i = 0; i < all.size(); ++i) damaged += (i < s.at || i >= s.at + s.bytes) && all[i] != byte;
  INFO(damaged << " guard bytes around the output were written");
  CHECK(damaged == 0);
  return std::vector<unsigned char>(all.begin() + static_cast<std::ptrdiff_t>(s.at),
                                    all.begin() + static_cast<std::ptrdiff_t>(s.at + s.bytes));
}

HostTensor as_tensor(kgen_dtype_t d, const std::vector<unsigned char>& bytes) {
  HostTensor t(d, bytes.size() / static_cast<size_t>(elem_size(d)));
  t.bytes = bytes;
  return t;
}

// After a call that must succeed: its status, then the launch and the kernel.
void require_ok(kgen_status_t st) {
  INFO("returned " << kgen_status_string(st) << ": " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaGetLastError());
  CUDA_REQUIRE(cudaDeviceSynchronize());
}

// A byte offset of `elements` whole elements from 0 to 7.
size_t element_shift(Rng& g, int elem) { return static_cast<size_t>(elem * uniform(g, 0, 7)); }

// ---- random data ---------------------------------------------------------------

HostTensor normal_tensor(Rng& g, kgen_dtype_t d, size_t n, double sd) {
  HostTensor t(d, n);
  std::normal_distribution<double> dist(0.0, sd);
  for (size_t i = 0; i < n; ++i) t.set(i, dist(g));
  return t;
}

// uniform in [lo, hi] as stored, never 0
HostTensor nonzero_tensor(Rng& g, kgen_dtype_t d, size_t n, double lo, double hi) {
  HostTensor t(d, n);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (size_t i = 0; i < n; ++i)
    do t.set(i, dist(g)); while (t.get(i) == 0);
  return t;
}

// Bytes of any value but 0xFF (the poison of byte-copying families); a bool
// is 0 or 1.
std::vector<unsigned char> value_bytes(Rng& g, kgen_dtype_t d, size_t n) {
  std::vector<unsigned char> b(n * static_cast<size_t>(elem_size(d)));
  std::uniform_int_distribution<int> dist(0, d == KGEN_BOOL ? 1 : 254);
  for (auto& v : b) v = static_cast<unsigned char>(dist(g));
  return b;
}

// cond bytes: about half 0, the rest any nonzero byte
std::vector<unsigned char> cond_bytes(Rng& g, size_t n) {
  std::vector<unsigned char> b(n);
  std::uniform_int_distribution<int> dist(1, 255);
  for (auto& v : b) v = chance(g, 0.5) ? 0 : static_cast<unsigned char>(dist(g));
  return b;
}

// Special values along a few (outer, inner) slices: all -inf, one NaN, one
// +inf, every other -inf, huge magnitudes.
void add_special_slices(Rng& g, HostTensor& x, int64_t outer, int64_t axis, int64_t inner) {
  const int64_t slices = uniform(g, 1, 4);
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t o = uniform(g, 0, outer - 1), i = uniform(g, 0, inner - 1);
    auto at = [&](int64_t a) { return static_cast<size_t>((o * axis + a) * inner + i); };
    switch (uniform(g, 0, 4)) {
      case 0: for (int64_t a = 0; a < axis; ++a) x.set(at(a), -INFINITY); break;
      case 1: x.set(at(uniform(g, 0, axis - 1)), NAN); break;
      case 2: x.set(at(uniform(g, 0, axis - 1)), INFINITY); break;
      case 3: for (int64_t a = 0; a < axis; a += 2) x.set(at(a), -INFINITY); break;
      default: for (int64_t a = 0; a < axis; ++a) x.set(at(a), x.get(at(a)) * 3000.0); break;
    }
  }
}

// ---- softmax forward -------------------------------------------------------------

// One softmax problem over the last dim (dim: any dim, through
// kgen_softmax_dim), in place or not.
void softmax_draw(const std::string& test, int index, const std::vector<kgen_dtype_t>& dtypes, bool dim) {
  Rng g = draw_rng(test, index);
  const kgen_dtype_t d = pick(g, dtypes);
  const int e = elem_size(d);
  const int64_t budget = size_budget(g);
  const int64_t axis = log_uniform(g, 1, std::min<int64_t>(budget, int64_t{1} << 22));
  const int64_t inner = dim && chance(g, 0.8) ? log_uniform(g, 1, std::max<int64_t>(1, budget / axis)) : 1;
  const int64_t outer = log_uniform(g, 1, std::max<int64_t>(1, budget / (axis * inner)));
  const bool log = chance(g, 0.5), in_place = chance(g, 0.1), special = chance(g, 0.15);
  const double sd = pick(g, std::vector<double>{1.0, 3.0, 10.0});
  const size_t x_shift = element_shift(g, e), y_shift = element_shift(g, e);
  std::ostringstream text;
  text << (log ? "log_softmax " : "softmax ") << dtype_short(d) << " outer " << outer << " axis " << axis
       << " inner " << inner << " sd " << sd << (special ? " with special values" : "")
       << (in_place ? " in place" : "") << ", byte offsets x " << x_shift << " y " << y_shift;
  INFO(draw_context(test, index) << ": " << text.str());

  const auto n = static_cast<size_t>(outer * axis * inner);
  HostTensor x = normal_tensor(g, d, n, sd);
  if (special) add_special_slices(g, x, outer, axis, inner);
  const std::vector<double> want = softmax_ref(values(x), outer, axis, inner, log);
  // the poison lies outside every softmax and log_softmax value and is no NaN
  Slot xs(x.bytes.size(), x_shift), ys(x.bytes.size(), in_place ? x_shift : y_shift);
  const Slot& out = in_place ? xs : ys;
  out.fill(kOutsideByte);
  xs.put(x.bytes);
  const kgen_status_t st = dim ? kgen_softmax_dim(log, d, outer, axis, inner, xs.ptr(), out.ptr(), nullptr)
                           : log ? kgen_log_softmax(d, outer, axis, xs.ptr(), out.ptr(), nullptr)
                                 : kgen_softmax(d, outer, axis, xs.ptr(), out.ptr(), nullptr);
  require_ok(st);
  check_matches(as_tensor(d, output_of(out, kOutsideByte)), want, tolerance(d));
}

// ---- softmax backward ------------------------------------------------------------

// tolerance(d)'s relative part (the rounding of dx) with an absolute part
// for dx's underflow only; the reference's slack covers the arithmetic
Tolerance backward_tolerance(kgen_dtype_t d) {
  const double atol = d == KGEN_FLOAT16 ? 0x1p-24 : d == KGEN_FLOAT64 ? 0x1p-1022 : 0x1p-126;
  return {atol, tolerance(d).rtol};
}

void backward_draw(const std::string& test, int index, const std::vector<kgen_dtype_t>& dtypes) {
  Rng g = draw_rng(test, index);
  const kgen_dtype_t d = pick(g, dtypes);
  const int e = elem_size(d);
  const int64_t budget = size_budget(g);
  const int64_t axis = log_uniform(g, 1, std::min<int64_t>(budget, int64_t{1} << 21));
  const int64_t inner = chance(g, 0.5) ? 1 : log_uniform(g, 1, std::max<int64_t>(1, budget / axis));
  const int64_t outer = log_uniform(g, 1, std::max<int64_t>(1, budget / (axis * inner)));
  const bool log = chance(g, 0.5), two_d = inner == 1 && chance(g, 0.5);
  const int in_place = chance(g, 0.15) ? static_cast<int>(uniform(g, 1, 2)) : 0;  // 1: dx == y, 2: dx == dy
  const size_t shifts[3] = {element_shift(g, e), element_shift(g, e), element_shift(g, e)};
  std::ostringstream text;
  text << (two_d ? (log ? "kgen_log_softmax_backward " : "kgen_softmax_backward ")
                 : (log ? "kgen_softmax_backward_dim log " : "kgen_softmax_backward_dim "))
       << dtype_short(d) << " outer " << outer << " axis " << axis << " inner " << inner
       << (in_place == 1 ? " dx == y" : in_place == 2 ? " dx == dy" : "") << ", byte offsets y " << shifts[0]
       << " dy " << shifts[1] << " dx " << shifts[2];
  INFO(draw_context(test, index) << ": " << text.str());

  // y as a forward pass hands it over (rounded to the dtype), dy in [-1, 1]
  const auto n = static_cast<size_t>(outer * axis * inner);
  const HostTensor y = to_tensor(d, softmax_ref(values(normal_tensor(g, d, n, 3.0)), outer, axis, inner, log));
  const HostTensor dy = nonzero_tensor(g, d, n, -1.0, 1.0);
  const BackwardRef ref = backward_ref(values(y), values(dy), outer, axis, inner, log,
                                       d == KGEN_FLOAT64 ? 0x1p-53 : 0x1p-24);
  Slot ys(y.bytes.size(), shifts[0]), dys(dy.bytes.size(), shifts[1]), dxs(y.bytes.size(), shifts[2]);
  const Slot& out = in_place == 1 ? ys : in_place == 2 ? dys : dxs;
  out.fill(kOutsideByte);
  ys.put(y.bytes);
  dys.put(dy.bytes);
  const kgen_status_t st =
      two_d ? (log ? kgen_log_softmax_backward : kgen_softmax_backward)(d, outer, axis, ys.ptr(), dys.ptr(),
                                                                         out.ptr(), nullptr)
            : kgen_softmax_backward_dim(log, d, outer, axis, inner, ys.ptr(), dys.ptr(), out.ptr(), nullptr);
  require_ok(st);
  check_matches(as_tensor(d, output_of(out, kOutsideByte)), ref.want, backward_tolerance(d), &ref.slack);
}

// ---- masked softmax --------------------------------------------------------------

void masked_draw(const std::string& test, int index, const std::vector<kgen_dtype_t>& dtypes) {
  Rng g = draw_rng(test, index);
  const kgen_dtype_t d = pick(g, dtypes);
  const int e = elem_size(d);
  const int64_t budget = size_budget(g);
  MaskedProblem p{};
  p.keys = log_uniform(g, 1, std::min<int64_t>(budget, int64_t{1} << 20));
  const int64_t rows = std::max<int64_t>(1, budget / p.keys);
  p.queries = log_uniform(g, 1, rows);
  p.heads = log_uniform(g, 1, std::min<int64_t>(16, std::max<int64_t>(1, rows / p.queries)));
  p.batch = log_uniform(g, 1, std::min<int64_t>(8, std::max<int64_t>(1, rows / (p.queries * p.heads))));
  p.kind = static_cast<kgen_mask_kind_t>(uniform(g, 0, 2));
  p.mb = chance(g, 0.5) ? p.batch : 1;
  p.mh = chance(g, 0.5) ? p.heads : 1;
  p.mq = chance(g, 0.5) ? p.queries : 1;
  p.causal = chance(g, 0.5);
  p.safe = chance(g, 0.5);
  p.scale = chance(g, 0.4) ? 1.0 : chance(g, 0.5) ? 0.125 : std::uniform_real_distribution<double>(-2, 2)(g);
  if (p.scale == 0) p.scale = 0.5;
  const double masked_share = pick(g, std::vector<double>{0.05, 0.3, 0.9});
  const int mask_e = p.kind == KGEN_MASK_ADDITIVE ? e : 1;
  const size_t x_shift = element_shift(g, e), y_shift = element_shift(g, e), mask_shift = element_shift(g, mask_e);
  const char* kinds[] = {"none", "bool", "additive"};
  std::ostringstream text;
  text << "kgen_softmax_masked " << dtype_short(d) << " x " << show(std::vector<int64_t>{p.batch, p.heads, p.queries, p.keys})
       << " mask " << kinds[p.kind] << " " << show(std::vector<int64_t>{p.mb, p.mh, p.mq, p.keys}) << " masking about "
       << masked_share << (p.causal ? " causal" : "") << (p.safe ? " safe" : "") << " scale " << p.scale
       << ", byte offsets x " << x_shift << " y " << y_shift << " mask " << mask_shift;
  INFO(draw_context(test, index) << ": " << text.str());

  const auto n = static_cast<size_t>(p.batch * p.heads * p.queries * p.keys);
  const auto mask_n = static_cast<size_t>(p.mb * p.mh * p.mq * p.keys);
  const HostTensor x = normal_tensor(g, d, n, 3.0);
  HostTensor additive(d, p.kind == KGEN_MASK_ADDITIVE ? mask_n : 0);
  std::vector<unsigned char> keep(p.kind == KGEN_MASK_BOOL ? mask_n : 0);
  if (p.kind == KGEN_MASK_ADDITIVE) {
    additive = normal_tensor(g, d, mask_n, 3.0);
    for (size_t i = 0; i < mask_n; ++i)
      if (chance(g, masked_share)) additive.set(i, -INFINITY);
  }
  std::uniform_int_distribution<int> nonzero(1, 255);
  for (auto& b : keep) b = chance(g, masked_share) ? 0 : static_cast<unsigned char>(nonzero(g));
  const std::vector<double> want = masked_ref(p, values(x), values(additive), keep);

  Slot xs(x.bytes.size(), x_shift), ys(x.bytes.size(), y_shift),
      ms(p.kind == KGEN_MASK_ADDITIVE ? additive.bytes.size() : keep.size(), mask_shift);
  ys.fill(kOutsideByte);
  xs.put(x.bytes);
  ms.put(p.kind == KGEN_MASK_ADDITIVE ? additive.bytes : keep);
  const kgen_softmax_mask_t m{p.scale, p.kind, p.kind == KGEN_MASK_NONE ? nullptr : ms.ptr(), p.mb, p.mh, p.mq,
                              p.causal ? 1 : 0, p.safe ? 1 : 0};
  require_ok(kgen_softmax_masked(d, p.batch, p.heads, p.queries, p.keys, xs.ptr(), &m, ys.ptr(), nullptr));
  check_matches(as_tensor(d, output_of(ys, kOutsideByte)), want, tolerance(d));
}

// ---- reduce ------------------------------------------------------------------

void reduce_draw(const std::string& test, int index, const std::vector<kgen_dtype_t>& dtypes) {
  Rng g = draw_rng(test, index);
  const kgen_dtype_t d = pick(g, dtypes);
  std::vector<int64_t> ops = {KGEN_REDUCE_SUM, KGEN_REDUCE_MAX, KGEN_REDUCE_MIN, KGEN_REDUCE_ARGMAX, KGEN_REDUCE_ARGMIN};
  if (is_float(d)) ops.push_back(KGEN_REDUCE_MEAN);
  const auto op = static_cast<kgen_reduce_op_t>(pick(g, ops));
  const bool arg = op == KGEN_REDUCE_ARGMAX || op == KGEN_REDUCE_ARGMIN;
  const int e = elem_size(d), oe = arg ? 8 : e;
  const int64_t budget = size_budget(g);
  int64_t outer = 1, reduce = 1, inner = 1;
  const char* layout = pick(g, std::vector<const char*>{"last dim", "middle axis", "everything", "any"});
  if (layout[0] == 'l') {
    reduce = log_uniform(g, 1, std::min<int64_t>(budget, int64_t{1} << 22));
    outer = log_uniform(g, 1, std::max<int64_t>(1, budget / reduce));
  } else if (layout[0] == 'm') {
    inner = log_uniform(g, 2, std::max<int64_t>(2, std::min<int64_t>(budget / 2, 4096)));
    reduce = log_uniform(g, 1, std::max<int64_t>(1, budget / inner));
    outer = log_uniform(g, 1, std::max<int64_t>(1, budget / (inner * reduce)));
  } else if (layout[0] == 'e') {
    reduce = log_uniform(g, 1, budget);
  } else {
    const std::vector<int64_t> s = draw_shape(g, 3, budget);
    outer = s[0], reduce = s[1], inner = s[2];
  }
  if ((op == KGEN_REDUCE_SUM || op == KGEN_REDUCE_MEAN) && chance(g, 0.03)) reduce = 0;  // sum 0, mean NaN
  // integers: sums exact in every accumulator, many ties for argmax/argmin;
  // real values: sums judged against the accumulator's rounding
  const bool integers = !is_float(d) || chance(g, 0.6);
  const bool wide = d == KGEN_INT32 && chance(g, 0.2);  // int32 sums that wrap
  const bool special = is_float(d) && integers && chance(g, 0.25);
  const size_t x_shift = element_shift(g, e), out_shift = element_shift(g, oe);
  std::ostringstream text;
  text << "kgen_reduce " << reduce_op_text(op) << " " << dtype_short(d) << " " << layout << " (outer " << outer
       << ", reduce " << reduce << ", inner " << inner << ") "
       << (integers ? (wide ? "wide integers" : "small integers") : "real values")
       << (special ? " with NaN and infinities" : "") << ", byte offsets x " << x_shift << " out " << out_shift;
  INFO(draw_context(test, index) << ": " << text.str());

  const auto n = static_cast<size_t>(outer * reduce * inner), outs = static_cast<size_t>(outer * inner);
  HostTensor x(d, n);
  if (integers) {
    const int64_t span = wide ? int64_t{1} << 30 : d == KGEN_INT32 ? 50 : 8;
    for (size_t i = 0; i < n; ++i) x.set(i, static_cast<double>((g() & 1 ? 1 : -1) * uniform(g, 1, span)));
  } else {
    x = normal_tensor(g, d, n, 3.0);
  }
  if (special && n > 0)
    for (int64_t s = uniform(g, 1, 6); s > 0; --s)
      x.set(static_cast<size_t>(uniform(g, 0, static_cast<int64_t>(n) - 1)),
            pick(g, std::vector<double>{NAN, INFINITY, -INFINITY}));
  const ReduceRef ref = reduce_ref(values(x), outer, reduce, inner, op, d == KGEN_INT32);
  // poison no correct output equals: -1 for indices, about -2.1e9 for int32
  // (inputs stay within +-2^30), NaN for floats unless NaN is expected, then
  // a value far past every output (integer draws alone hold NaN)
  const bool nan_expected = std::any_of(ref.value.begin(), ref.value.end(), [](double v) { return std::isnan(v); });
  const unsigned char byte = arg ? 0xFF : d == KGEN_INT32 ? 0x80 : nan_expected ? kOutsideByte : kNanByte;

  Slot xs(n * static_cast<size_t>(e), x_shift), os(outs * static_cast<size_t>(oe), out_shift);
  os.fill(byte);
  xs.put(x.bytes);
  require_ok(kgen_reduce(op, d, outer, reduce, inner, xs.ptr(), os.ptr(), nullptr));
  const std::vector<unsigned char> got = output_of(os, byte);
  if (arg) {
    std::vector<int64_t> idx(outs);
    std::memcpy(idx.data(), got.data(), got.size());
    size_t bad = 0;
    std::string first;
    for (size_t k = 0; k < outs; ++k)
      if (idx[k] != ref.index[k] && bad++ < 3)
        first += "[" + std::to_string(k) + "] got " + std::to_string(idx[k]) + " want " + std::to_string(ref.index[k]) + "; ";
    INFO(bad << " wrong indices: " << first);
    CHECK(bad == 0);
  } else {
    // real-valued sums: the accumulator's epsilon times the sum of
    // magnitudes, times 64 for the longest chain of additions
    std::vector<double> slack(outs, 0.0);
    if (!integers && (op == KGEN_REDUCE_SUM || op == KGEN_REDUCE_MEAN))
      for (size_t k = 0; k < outs; ++k) slack[k] = 64 * (d == KGEN_FLOAT64 ? 0x1p-52 : 0x1p-23) * ref.magnitude[k];
    check_matches(as_tensor(d, got), ref.value, tolerance(d), &slack);
  }
}

// ---- permute -------------------------------------------------------------------

void permute_draw(const std::string& test, int index) {
  Rng g = draw_rng(test, index);
  const size_t elem = static_cast<size_t>(chance(g, 0.9) ? pick(g, std::vector<int64_t>{1, 2, 4, 8, 16})
                                                        : pick(g, std::vector<int64_t>{3, 5, 6, 12, 24}));
  const int rank = chance(g, 0.03) ? 0 : static_cast<int>(uniform(g, 1, 6));
  const std::vector<int64_t> shape = draw_shape(g, rank, std::max<int64_t>(1, size_budget(g) * 4 / static_cast<int64_t>(elem)));
  std::vector<int> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  if (!chance(g, 0.1)) std::shuffle(perm.begin(), perm.end(), g);
  // any alignment works: whole elements mostly, any byte sometimes
  auto shift = [&] { return chance(g, 0.7) ? elem * static_cast<size_t>(uniform(g, 0, 3)) : static_cast<size_t>(uniform(g, 0, 31)); };
  const size_t src_shift = shift(), dst_shift = shift();
  std::ostringstream text;
  text << "kgen_permute elem " << elem << " shape " << show(shape) << " perm " << show(perm) << ", byte offsets src "
       << src_shift << " dst " << dst_shift;
  INFO(draw_context(test, index) << ": " << text.str());

  std::vector<unsigned char> src(static_cast<size_t>(numel(shape)) * elem);
  std::uniform_int_distribution<int> dist(0, 254);
  for (auto& b : src) b = static_cast<unsigned char>(dist(g));
  const std::vector<unsigned char> want = permute_ref(src, shape, perm, elem);
  Slot ss(src.size(), src_shift), ds(src.size(), dst_shift);
  ds.fill(kNanByte);
  ss.put(src);
  require_ok(kgen_permute(elem, rank, shape.data(), perm.data(), ss.ptr(), ds.ptr(), nullptr));
  CHECK(output_of(ds, kNanByte) == want);
}

// ---- expand and where ----------------------------------------------------------

// An output shape of rank 0 to 6, now and then with a 0 in it (a no-op).
std::vector<int64_t> broadcast_out_shape(Rng& g) {
  std::vector<int64_t> out = draw_shape(g, static_cast<int>(uniform(g, 0, 6)), size_budget(g));
  if (!out.empty() && chance(g, 0.04)) out[static_cast<size_t>(uniform(g, 0, static_cast<int64_t>(out.size()) - 1))] = 0;
  return out;
}

// An operand of `out`: rank 0 to out's, each size out's or 1.
std::vector<int64_t> operand_of(Rng& g, const std::vector<int64_t>& out) {
  const auto r = static_cast<size_t>(chance(g, 0.15) ? 0 : uniform(g, 0, static_cast<int64_t>(out.size())));
  std::vector<int64_t> s(out.end() - static_cast<std::ptrdiff_t>(r), out.end());
  for (auto& d : s)
    if (chance(g, 0.4)) d = 1;
  return s;
}

void expand_draw(const std::string& test, int index) {
  Rng g = draw_rng(test, index);
  const kgen_dtype_t d = pick(g, kAllDtypes);
  const size_t e = static_cast<size_t>(elem_size(d));
  const std::vector<int64_t> out = broadcast_out_shape(g);
  const std::vector<int64_t> src_shape = operand_of(g, out);
  std::vector<int64_t> dst_arg = out;  // -1 keeps a size of src
  const size_t added = out.size() - src_shape.size();
  for (size_t k = added; k < out.size(); ++k)
    if (src_shape[k - added] == out[k] && chance(g, 0.2)) dst_arg[k] = -1;
  const size_t src_shift = static_cast<size_t>(uniform(g, 0, 31)), dst_shift = static_cast<size_t>(uniform(g, 0, 31));
  std::ostringstream text;
  text << "kgen_expand " << dtype_short(d) << " " << show(src_shape) << " -> " << show(dst_arg) << ", byte offsets src "
       << src_shift << " dst " << dst_shift;
  INFO(draw_context(test, index) << ": " << text.str());

  const std::vector<unsigned char> src = value_bytes(g, d, static_cast<size_t>(numel(src_shape)));
  const std::vector<unsigned char> want = expand_ref(src, src_shape, out, e);
  Slot ss(src.size(), src_shift), ds(want.size(), dst_shift);
  ds.fill(kNanByte);
  ss.put(src);
  require_ok(kgen_expand(d, static_cast<int>(src_shape.size()), src_shape.data(), static_cast<int>(dst_arg.size()),
                         dst_arg.data(), ss.ptr(), ds.ptr(), nullptr));
  CHECK(output_of(ds, kNanByte) == want);
}

void where_draw(const std::string& test, int index) {
  Rng g = draw_rng(test, index);
  const kgen_dtype_t d = pick(g, kAllDtypes);
  const int e = elem_size(d);
  const std::vector<int64_t> drawn = broadcast_out_shape(g);
  const std::vector<int64_t> cond_shape = operand_of(g, drawn), x_shape = operand_of(g, drawn),
                             y_shape = operand_of(g, drawn);
  const std::vector<int64_t> out = broadcast_of({&cond_shape, &x_shape, &y_shape});
  // out may be x or y itself when that input has out's shape
  int in_place = 0;  // 1: out == x, 2: out == y
  if (chance(g, 0.15)) {
    if (numel(x_shape) == numel(out)) in_place = 1;
    else if (numel(y_shape) == numel(out)) in_place = 2;
  }
  const size_t cond_shift = static_cast<size_t>(uniform(g, 0, 31));  // cond: any byte
  const size_t x_shift = element_shift(g, e), y_shift = element_shift(g, e), out_shift = element_shift(g, e);
  std::ostringstream text;
  text << "kgen_where " << dtype_short(d) << " cond " << show(cond_shape) << " x " << show(x_shape) << " y "
       << show(y_shape) << (in_place == 1 ? " out == x" : in_place == 2 ? " out == y" : "") << ", byte offsets cond "
       << cond_shift << " x " << x_shift << " y " << y_shift << " out " << out_shift;
  INFO(draw_context(test, index) << ": " << text.str());

  {  // the library's broadcast agrees
    const int ranks[] = {static_cast<int>(cond_shape.size()), static_cast<int>(x_shape.size()),
                         static_cast<int>(y_shape.size())};
    const int64_t* shapes[] = {cond_shape.data(), x_shape.data(), y_shape.data()};
    int out_rank = -1;
    int64_t out_dims[8];
    KGEN_REQUIRE(kgen_broadcast_shape(3, ranks, shapes, &out_rank, out_dims));
    CHECK(std::vector<int64_t>(out_dims, out_dims + out_rank) == out);
  }
  const std::vector<unsigned char> cond = cond_bytes(g, static_cast<size_t>(numel(cond_shape)));
  const std::vector<unsigned char> x = value_bytes(g, d, static_cast<size_t>(numel(x_shape)));
  const std::vector<unsigned char> y = value_bytes(g, d, static_cast<size_t>(numel(y_shape)));
  const std::vector<unsigned char> want = where_ref(cond, x, y, cond_shape, x_shape, y_shape, out, static_cast<size_t>(e));
  Slot cs(cond.size(), cond_shift), xs(x.size(), x_shift), ys(y.size(), y_shift),
      os(want.size(), in_place == 1 ? x_shift : in_place == 2 ? y_shift : out_shift);
  const Slot& o = in_place == 1 ? xs : in_place == 2 ? ys : os;
  o.fill(kNanByte);
  cs.put(cond);
  xs.put(x);
  ys.put(y);
  require_ok(kgen_where(d, static_cast<int>(cond_shape.size()), cond_shape.data(), static_cast<int>(x_shape.size()),
                        x_shape.data(), static_cast<int>(y_shape.size()), y_shape.data(), cs.ptr(), xs.ptr(), ys.ptr(),
                        o.ptr(), nullptr));
  CHECK(output_of(o, kNanByte) == want);
}

// ---- top-k ------------------------------------------------------------------

void topk_draw(const std::string& test, int index, const std::vector<kgen_dtype_t>& dtypes) {
  Rng g = draw_rng(test, index);
  const kgen_dtype_t d = pick(g, dtypes);
  const int e = elem_size(d);
  const int64_t budget = size_budget(g);
  const int64_t n = log_uniform(g, 1, std::min<int64_t>(budget, int64_t{1} << 22));
  int64_t batch = log_uniform(g, 1, std::max<int64_t>(1, budget / n));
  const double r = std::uniform_real_distribution<double>(0, 1)(g);
  int64_t k = r < 0.15 ? n : r < 0.3 ? 1 : r < 0.7 ? uniform(g, 1, std::min<int64_t>(n, 64)) : log_uniform(g, 1, n);
  if (chance(g, 0.03)) (chance(g, 0.5) ? k : batch) = 0;  // a no-op
  const bool largest = chance(g, 0.5), sorted = chance(g, 0.5);
  const char* data = pick(g, std::vector<const char*>{"random", "random", "duplicates", "equal", "special"});
  const size_t x_shift = element_shift(g, e), v_shift = element_shift(g, e),
               i_shift = 8 * static_cast<size_t>(uniform(g, 0, 3));
  std::ostringstream text;
  text << "kgen_topk " << dtype_short(d) << " batch " << batch << " n " << n << " k " << k
       << (largest ? " largest" : " smallest") << (sorted ? " sorted" : " unsorted") << ", " << data
       << " data, byte offsets x " << x_shift << " values " << v_shift << " indices " << i_shift;
  INFO(draw_context(test, index) << ": " << text.str());

  const auto count = static_cast<size_t>(batch * n), outs = static_cast<size_t>(batch * k);
  HostTensor x = normal_tensor(g, d, count, 3.0);
  for (size_t i = 0; i < count; ++i) {
    switch (data[0]) {
      case 'r':
        if (d == KGEN_INT32) x.set(i, static_cast<double>(static_cast<int32_t>(g())));
        break;
      case 'd': x.set(i, static_cast<double>(uniform(g, -3, 3))); break;
      case 'e': x.set(i, 1.5); break;
      default: {
        const int64_t s = uniform(g, 0, 9);
        if (d == KGEN_INT32) {
          if (s < 2) x.set(i, s == 0 ? 2147483647.0 : -2147483648.0);
        } else if (s < 5) {
          x.set(i, pick(g, std::vector<double>{NAN, INFINITY, -INFINITY, 0.0, -0.0}));
        }
      }
    }
  }
  std::vector<int64_t> want;
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t b = 0; b < batch && k > 0; ++b) {
    for (int64_t i = 0; i < n; ++i) row[static_cast<size_t>(i)] = x.get(static_cast<size_t>(b * n + i));
    const std::vector<int64_t> w = topk_row(row, k, largest, sorted);
    want.insert(want.end(), w.begin(), w.end());
  }

  Slot xs(x.bytes.size(), x_shift), vs(outs * static_cast<size_t>(e), v_shift), is(outs * 8, i_shift);
  // no input holds these bytes: NaN with the sign set, and for int32 a value
  // that random rows hold with a chance of 2^-32 an element
  const unsigned char v_byte = d == KGEN_INT32 ? kOutsideByte : kNanByte;
  vs.fill(v_byte);
  is.fill(kNanByte);
  xs.put(x.bytes);
  size_t ws = 0;
  KGEN_REQUIRE(kgen_topk_workspace_size(nullptr, d, batch, n, k, largest, sorted, xs.ptr(), &ws));
  INFO("workspace " << ws << " bytes");
  DeviceBuffer work(ws);
  CUDA_REQUIRE(cudaMemset(work.ptr, 0xA5, work.bytes));  // any content
  require_ok(kgen_topk(d, batch, n, k, largest, sorted, xs.ptr(), vs.ptr(), static_cast<int64_t*>(is.ptr()),
                       (ws > 0 || chance(g, 0.5)) ? work.ptr : nullptr, ws, nullptr));
  const std::vector<unsigned char> got_v = output_of(vs, v_byte), got_i = output_of(is, kNanByte);
  std::vector<int64_t> got(outs);
  std::memcpy(got.data(), got_i.data(), got_i.size());
  size_t bad = 0;
  std::string first;
  for (size_t o = 0; o < outs; ++o) {
    const auto b = static_cast<size_t>(static_cast<int64_t>(o) / k);
    const size_t at = (b * static_cast<size_t>(n) + static_cast<size_t>(want[o])) * static_cast<size_t>(e);
    const bool idx_ok = got[o] == want[o];
    const bool val_ok = std::memcmp(&got_v[o * static_cast<size_t>(e)], &x.bytes[at], static_cast<size_t>(e)) == 0;
    if (!(idx_ok && val_ok) && bad++ < 3)
      first += "[" + std::to_string(o) + "] index " + std::to_string(got[o]) + " want " + std::to_string(want[o]) +
               (val_ok ? "" : " (value differs from x there)") + "; ";
  }
  INFO(bad << " wrong outputs: " << first);
  CHECK(bad == 0);
}

// ---- invalid calls -------------------------------------------------------------

// Random bytes, eight from each draw of the generator (arenas reach tens of MB).
std::vector<unsigned char> pattern(Rng& g, size_t n) {
  std::vector<unsigned char> b(n);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t word = g();
    std::memcpy(&b[i], &word, std::min<size_t>(8, n - i));
  }
  return b;
}

// Draws invalid calls of a family with device memory: each must fail as
// expected, launch nothing, and leave every byte of its memory (inputs,
// outputs, the guards between them, and host memory passed for device
// memory) as it was.
void invalid_draws(Family f, int draws) {
  const std::string test = std::string("invalid ") + family_text(f);
  for (int index = 0; index < draws; ++index) {
    Rng g = draw_rng(test, index);
    const InvalidCall c = draw_invalid(f, g, true);
    INFO(draw_context(test, index) << ": " << c.problem << ", " << c.fault << "; expect "
                                   << kgen_status_string(c.expect.status) << " naming " << c.expect.name);
    const std::vector<unsigned char> before = pattern(g, c.arena_bytes);
    std::vector<unsigned char> host = pattern(g, c.arena_bytes);
    const std::vector<unsigned char> host_before = host;
    DeviceBuffer arena(c.arena_bytes);
    CUDA_REQUIRE(cudaMemcpy(arena.ptr, before.data(), before.size(), cudaMemcpyHostToDevice));
    const kgen_status_t st = c.call({arena.at<unsigned char>(), host.data()});
    const std::string message = kgen_last_error();
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    INFO("returned " << kgen_status_string(st) << ": " << message);
    CHECK(st == c.expect.status);
    CHECK(message_names(message, c.expect.name));
    std::vector<unsigned char> after(c.arena_bytes);
    CUDA_REQUIRE(cudaMemcpy(after.data(), arena.ptr, after.size(), cudaMemcpyDeviceToHost));
    size_t first = 0;
    const size_t changed = changed_bytes(before, after, &first), host_changed = changed_bytes(host_before, host, &first);
    INFO(changed << " device bytes and " << host_changed << " host bytes changed");
    CHECK(changed == 0);
    CHECK(host_changed == 0);
  }
}

// A call that needs a workspace, with its tensors (inputs and outputs).
struct WorkspaceCall {
  std::string problem;
  std::vector<size_t> bytes, shifts;  // of each tensor
  std::vector<std::string> names;
  // the workspace the call needs with its tensors at these pointers
  std::function<size_t(const std::vector<void*>&)> need;
  std::function<kgen_status_t(const std::vector<void*>&, void* ws, size_t ws_bytes)> call;
};

// Puts one workspace fault into the call: a workspace too small (or none,
// when null_is_fault: kgen_topk allocates nothing, kgen_reduce_variant
// allocates one itself), one that overlaps a tensor, or one in host
// memory.  Each is an error naming the workspace that writes nothing.
// Returns false, checking nothing, when the problem needs no workspace
// with the variant that is selected.
bool workspace_fault(Rng& g, const WorkspaceCall& w, bool null_is_fault) {
  Placer pl;
  std::vector<size_t> at;
  for (size_t t = 0; t < w.bytes.size(); ++t) at.push_back(pl.place(w.bytes[t], w.shifts[t]));
  auto pointers = [&](const DeviceBuffer& arena) {
    std::vector<void*> p;
    for (size_t a : at) p.push_back(arena.at(a));
    return p;
  };
  size_t need = 0;
  {
    const DeviceBuffer probe(pl.total());
    need = w.need(pointers(probe));
  }
  if (need == 0) return false;
  // the workspace after the tensors; the alignments of the tensors are
  // those of the probe, so is the need
  const size_t ws_at = pl.total(), arena_bytes = ws_at + need + 256;
  const DeviceBuffer arena(arena_bytes);
  const std::vector<void*> p = pointers(arena);
  REQUIRE(w.need(p) == need);
  const std::vector<unsigned char> before = pattern(g, arena_bytes);
  std::vector<unsigned char> host = pattern(g, need);
  const std::vector<unsigned char> host_before = host;
  CUDA_REQUIRE(cudaMemcpy(arena.ptr, before.data(), before.size(), cudaMemcpyHostToDevice));

  void* ws = arena.at(ws_at);
  size_t ws_bytes = need;
  std::string fault;
  switch (uniform(g, null_is_fault ? 0 : 1, 3)) {
    case 0: ws = nullptr, fault = "no workspace"; break;
    case 1:
      ws_bytes = need - static_cast<size_t>(uniform(g, 1, static_cast<int64_t>(need)));
      fault = "a workspace of " + std::to_string(ws_bytes) + " bytes";
      break;
    case 2: {
      const auto t = static_cast<size_t>(uniform(g, 0, static_cast<int64_t>(at.size()) - 1));
      ws = arena.at(overlapping(g, at[t], w.bytes[t], need, 1, false));  // no alignment asked of it
      fault = "a workspace overlapping " + w.names[t];
      break;
    }
    default: ws = host.data(), fault = "a workspace in host memory"; break;
  }
  INFO(w.problem << " needs a workspace of " << need << " bytes; given " << fault);
  const kgen_status_t st = w.call(p, ws, ws_bytes);
  const std::string message = kgen_last_error();
  CUDA_REQUIRE(cudaGetLastError());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  INFO("returned " << kgen_status_string(st) << ": " << message);
  CHECK(st == KGEN_ERROR_INVALID_ARGUMENT);
  CHECK(message_names(message, "workspace"));
  std::vector<unsigned char> after(arena_bytes);
  CUDA_REQUIRE(cudaMemcpy(after.data(), arena.ptr, after.size(), cudaMemcpyDeviceToHost));
  size_t first = 0;
  const size_t changed = changed_bytes(before, after, &first), host_changed = changed_bytes(host_before, host, &first);
  INFO(changed << " device bytes and " << host_changed << " host bytes changed");
  CHECK(changed == 0);
  CHECK(host_changed == 0);
  return true;
}

// Long rows in few batches, where top-k selects across blocks (the generic
// variant always does), through kgen_topk or kgen_topk_variant.
WorkspaceCall topk_workspace_call(Rng& g, const std::vector<kgen_dtype_t>& dtypes) {
  const kgen_dtype_t d = pick(g, dtypes);
  const int e = elem_size(d);
  const std::string generic = generic_variant("topk", d);
  const std::string variant = chance(g, 0.5) ? generic : "";
  const int64_t batch = uniform(g, 1, 2), n = log_uniform(g, int64_t{1} << 12, int64_t{1} << 19);
  const int64_t k = log_uniform(g, 1, std::min<int64_t>(n, 4096));
  const int largest = static_cast<int>(uniform(g, 0, 1)), sorted = static_cast<int>(uniform(g, 0, 1));
  WorkspaceCall w;
  w.problem = std::string(variant.empty() ? "kgen_topk " : "kgen_topk_variant " + variant + " ") + dtype_short(d) +
              " batch " + std::to_string(batch) + " n " + std::to_string(n) + " k " + std::to_string(k) +
              (largest ? " largest" : " smallest") + (sorted ? " sorted" : " unsorted");
  w.bytes = {static_cast<size_t>(batch * n * e), static_cast<size_t>(batch * k * e), static_cast<size_t>(batch * k * 8)};
  w.shifts = {element_shift(g, e), element_shift(g, e), 8 * static_cast<size_t>(uniform(g, 0, 3))};
  w.names = {"x", "values", "indices"};
  // the lambdas own their copy of the name (nullptr: the selection)
  w.need = [=](const std::vector<void*>& p) {
    size_t bytes = 0;
    KGEN_REQUIRE(kgen_topk_workspace_size(variant.empty() ? nullptr : variant.c_str(), d, batch, n, k, largest,
                                          sorted, p[0], &bytes));
    return bytes;
  };
  w.call = [=](const std::vector<void*>& p, void* ws, size_t ws_bytes) {
    return kgen_topk_variant(variant.empty() ? nullptr : variant.c_str(), d, batch, n, k, largest, sorted, p[0], p[1],
                             static_cast<int64_t*>(p[2]), ws, ws_bytes, nullptr);
  };
  return w;
}

// Few long rows, which a reduction splits across blocks (when the
// selection prefers that), through kgen_reduce_variant with the caller's
// workspace.
WorkspaceCall reduce_workspace_call(Rng& g, const std::vector<kgen_dtype_t>& dtypes) {
  const kgen_dtype_t d = pick(g, dtypes);
  std::vector<int64_t> ops = {KGEN_REDUCE_SUM, KGEN_REDUCE_MAX, KGEN_REDUCE_MIN, KGEN_REDUCE_ARGMAX, KGEN_REDUCE_ARGMIN};
  if (is_float(d)) ops.push_back(KGEN_REDUCE_MEAN);
  const auto op = static_cast<kgen_reduce_op_t>(pick(g, ops));
  const int e = elem_size(d), oe = op == KGEN_REDUCE_ARGMAX || op == KGEN_REDUCE_ARGMIN ? 8 : e;
  const int64_t outer = uniform(g, 1, 4), inner = chance(g, 0.7) ? 1 : uniform(g, 2, 8);
  const int64_t reduce = log_uniform(g, int64_t{1} << 16, (int64_t{1} << 21) / inner);
  WorkspaceCall w;
  w.problem = std::string("kgen_reduce_variant ") + reduce_op_text(op) + " " + dtype_short(d) + " (outer " +
              std::to_string(outer) + ", reduce " + std::to_string(reduce) + ", inner " + std::to_string(inner) + ")";
  w.bytes = {static_cast<size_t>(outer * reduce * inner * e), static_cast<size_t>(outer * inner * oe)};
  w.shifts = {element_shift(g, e), element_shift(g, oe)};
  w.names = {"x", "out"};
  w.need = [=](const std::vector<void*>& p) {
    const char* name = nullptr;
    size_t bytes = 0;
    KGEN_REQUIRE(kgen_reduce_selected(op, d, outer, reduce, inner, p[0], p[1], &name, &bytes));
    return bytes;
  };
  w.call = [=](const std::vector<void*>& p, void* ws, size_t ws_bytes) {
    return kgen_reduce_variant(nullptr, op, d, outer, reduce, inner, p[0], p[1], ws, ws_bytes, nullptr);
  };
  return w;
}

}  // namespace

TEST_CASE("random softmax and log_softmax problems over the last dim match the float64 reference",
          "[random][softmax]") {
  const auto dtypes = compiled_dtypes("softmax", kFloatDtypes);
  REQUIRE(!dtypes.empty());
  for (int i = 0; i < 250; ++i) softmax_draw("softmax", i, dtypes, false);
}

TEST_CASE("random softmax problems over any dim match the float64 reference", "[random][softmax_dim]") {
  const auto dtypes = compiled_dtypes("softmax", kFloatDtypes);
  REQUIRE(!dtypes.empty());
  for (int i = 0; i < 200; ++i) softmax_draw("softmax_dim", i, dtypes, true);
}

TEST_CASE("random softmax backward problems match the float64 reference", "[random][softmax_backward]") {
  const auto dtypes = compiled_dtypes("softmax_backward", kFloatDtypes);
  REQUIRE(!dtypes.empty());
  for (int i = 0; i < 200; ++i) backward_draw("softmax_backward", i, dtypes);
}

TEST_CASE("random masked softmax problems match the float64 reference", "[random][softmax_masked]") {
  const auto dtypes = compiled_dtypes("softmax", kFloatDtypes);
  REQUIRE(!dtypes.empty());
  for (int i = 0; i < 200; ++i) masked_draw("softmax_masked", i, dtypes);
}

TEST_CASE("random reductions of every op and layout match the reference", "[random][reduce]") {
  const auto dtypes = compiled_dtypes("reduce", {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64, KGEN_INT32});
  REQUIRE(!dtypes.empty());
  for (int i = 0; i < 300; ++i) reduce_draw("reduce", i, dtypes);
}

TEST_CASE("random permutations match the reference bytes", "[random][permute]") {
  for (int i = 0; i < 300; ++i) permute_draw("permute", i);
}

TEST_CASE("random expands match the reference bytes", "[random][broadcast][expand]") {
  for (int i = 0; i < 250; ++i) expand_draw("expand", i);
}

TEST_CASE("random wheres with broadcasting match the reference bytes", "[random][broadcast][where]") {
  for (int i = 0; i < 250; ++i) where_draw("where", i);
}

TEST_CASE("random top-k problems match the reference", "[random][topk]") {
  const auto dtypes = compiled_dtypes("topk", {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64, KGEN_INT32});
  REQUIRE(!dtypes.empty());
  for (int i = 0; i < 250; ++i) topk_draw("topk", i, dtypes);
}

// Invalid calls: every fault that host-side validation catches (as the
// host tests draw them), plus inputs and outputs in host memory.
TEST_CASE("random invalid softmax calls fail naming the argument and write nothing", "[random][errors][softmax]") {
  invalid_draws(Family::softmax, 150);
}

TEST_CASE("random invalid softmax backward calls fail naming the argument and write nothing",
          "[random][errors][softmax_backward]") {
  invalid_draws(Family::softmax_backward, 150);
}

TEST_CASE("random invalid masked softmax calls fail naming the argument and write nothing",
          "[random][errors][softmax_masked]") {
  invalid_draws(Family::softmax_masked, 150);
}

TEST_CASE("random invalid reductions fail naming the argument and write nothing", "[random][errors][reduce]") {
  invalid_draws(Family::reduce, 150);
}

TEST_CASE("random invalid permutations fail naming the argument and write nothing", "[random][errors][permute]") {
  invalid_draws(Family::permute, 150);
}

TEST_CASE("random invalid expands fail naming the argument and write nothing",
          "[random][errors][broadcast][expand]") {
  invalid_draws(Family::expand, 150);
}

TEST_CASE("random invalid wheres fail naming the argument and write nothing", "[random][errors][broadcast][where]") {
  invalid_draws(Family::where, 150);
}

TEST_CASE("random invalid top-k calls fail naming the argument and write nothing", "[random][errors][topk]") {
  invalid_draws(Family::topk, 150);
}

TEST_CASE("random top-k and reductions with a bad workspace fail naming it and write nothing",
          "[random][errors][topk][reduce]") {
  const auto topk_dtypes = compiled_dtypes("topk", {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64, KGEN_INT32});
  const auto reduce_dtypes =
      compiled_dtypes("reduce", {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64, KGEN_INT32});
  REQUIRE(!topk_dtypes.empty());
  REQUIRE(!reduce_dtypes.empty());
  int topk_checked = 0, reduce_checked = 0;
  for (int i = 0; i < 40; ++i) {
    Rng g = draw_rng("topk workspace", i);
    const WorkspaceCall w = topk_workspace_call(g, topk_dtypes);
    INFO(draw_context("topk workspace", i) << ": " << w.problem);
    topk_checked += workspace_fault(g, w, true);
  }
  for (int i = 0; i < 40; ++i) {
    Rng g = draw_rng("reduce workspace", i);
    const WorkspaceCall w = reduce_workspace_call(g, reduce_dtypes);
    INFO(draw_context("reduce workspace", i) << ": " << w.problem);
    reduce_checked += workspace_fault(g, w, false);
  }
  // the generic top-k selects across blocks with a workspace whenever the
  // drawn rows are long, half the draws name it
  CHECK(topk_checked > 0);
  // whether a reduction splits is the selection's preference (a tuning
  // database may prefer a block a row)
  if (reduce_checked == 0) WARN("no drawn reduction needed a workspace: its faults went unchecked");
}
