// The tests' CPU references of valid problems (softmax and its backward,
// masked softmax, reductions, top-k order, permute, expand, where), and for
// the randomized tests one seed per run and a generator of its own for every
// drawn problem.  The invalid calls they draw: invalid_calls.hpp.  Plain
// C++ over the C API, with neither CUDA nor Catch2, so that the host tests
// (no GPU) include it too.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kgen/kgen.h"

namespace test {
namespace rnd {

using Rng = std::mt19937_64;

// ---- the seed and the draws ------------------------------------------------

// KGEN_TEST_SEED if set, else the clock; printed once per process so that
// any run can be repeated.
inline uint64_t seed() {
  static const uint64_t value = [] {
    const char* env = std::getenv("KGEN_TEST_SEED");
    const uint64_t s = env && *env ? std::strtoull(env, nullptr, 10)
                                   : static_cast<uint64_t>(std::chrono::system_clock::now()
                                                               .time_since_epoch()
                                                               .count()) % 1000000000000ull;
    std::printf("random tests: seed %llu (set KGEN_TEST_SEED=%llu to repeat)\n",
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return value;
}

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The generator of draw `index` of a test: independent of every other draw,
// so that a failing draw repeats with the same seed however many draws ran
// before it, and whichever tests were selected.
inline Rng draw_rng(const std::string& test, int index) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the test's name
  for (unsigned char c : test) h = (h ^ c) * 1099511628211ull;
  return Rng(splitmix64(seed() ^ splitmix64(h + static_cast<uint64_t>(index))));
}

// What a failure reports first: enough to repeat it.
inline std::string draw_context(const std::string& test, int index) {
  return "KGEN_TEST_SEED=" + std::to_string(seed()) + ", " + test + " draw " + std::to_string(index);
}

// uniform in [lo, hi]
inline int64_t uniform(Rng& g, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(g);
}
inline bool chance(Rng& g, double p) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }

// in [lo, hi] (lo >= 1), every order of magnitude about as likely
inline int64_t log_uniform(Rng& g, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const double a = std::log(static_cast<double>(lo)), b = std::log(static_cast<double>(hi) + 1);
  const auto v = static_cast<int64_t>(std::exp(std::uniform_real_distribution<double>(a, b)(g)));
  return std::min(hi, std::max(lo, v));
}

template <class T>
const T& pick(Rng& g, const std::vector<T>& from) {
  return from[static_cast<size_t>(uniform(g, 0, static_cast<int64_t>(from.size()) - 1))];
}

// The most elements a drawn problem may have: mostly small, sometimes up to
// ~1e5, rarely a few million (keeps the whole run short).
inline int64_t size_budget(Rng& g) {
  const double r = std::uniform_real_distribution<double>(0, 1)(g);
  return r < 0.55 ? 4096 : r < 0.96 ? 100000 : 4000000;
}

// A shape of `rank` dims with at most `budget` elements, extents spread over
// orders of magnitude, some of them 1.
inline std::vector<int64_t> draw_shape(Rng& g, int rank, int64_t budget) {
  std::vector<int64_t> s(static_cast<size_t>(rank));
  const auto cap = static_cast<int64_t>(std::pow(static_cast<double>(budget), 1.0 / std::max(rank, 1)) * 3);
  for (auto& d : s) d = chance(g, 0.15) ? 1 : log_uniform(g, 1, std::max<int64_t>(2, cap));
  auto numel = [&] {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  while (numel() > budget) {
    auto it = std::max_element(s.begin(), s.end());
    *it = (*it + 1) / 2;
  }
  return s;
}

inline int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

template <class T>
std::string show(const std::vector<T>& v) {
  std::string t = "(";
  for (size_t k = 0; k < v.size(); ++k) {
    if (k) t += ',';
    t += std::to_string(v[k]);
  }
  return t + ")";
}

inline const char* dtype_text(int d) {
  switch (d) {
    case KGEN_FLOAT32: return "float32";
    case KGEN_FLOAT16: return "float16";
    case KGEN_BFLOAT16: return "bfloat16";
    case KGEN_FLOAT64: return "float64";
    case KGEN_INT32: return "int32";
    case KGEN_INT64: return "int64";
    case KGEN_BOOL: return "bool";
    case KGEN_UINT8: return "uint8";
  }
  return "invalid dtype";
}

inline const char* reduce_op_text(int op) {
  switch (op) {
    case KGEN_REDUCE_SUM: return "sum";
    case KGEN_REDUCE_MEAN: return "mean";
    case KGEN_REDUCE_MAX: return "max";
    case KGEN_REDUCE_MIN: return "min";
    case KGEN_REDUCE_ARGMAX: return "argmax";
    case KGEN_REDUCE_ARGMIN: return "argmin";
  }
  return "invalid op";
}

inline bool is_float(int d) { return d >= KGEN_FLOAT32 && d <= KGEN_FLOAT64; }

// ---- references of valid problems ---------------------------------------------

// float64 softmax (log_softmax when log) of x along the axis of a row-major
// (outer, axis, inner) tensor.  A slice holding a NaN, a +inf, or only -inf
// is NaN throughout, as in PyTorch (x - max is NaN at an infinite max).
inline std::vector<double> softmax_ref(const std::vector<double>& x, int64_t outer, int64_t axis,
                                       int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return static_cast<size_t>((o * axis + a) * inner + i); };
      double m = -INFINITY;
      bool nan = false;
      for (int64_t a = 0; a < axis; ++a) {
        nan |= std::isnan(x[at(a)]);
        m = std::max(m, x[at(a)]);
      }
      // summed in long double: a double running sum of a row of millions
      // drifts by up to n ulps, past float64's tolerance (a float64
      // log_softmax row of 3703555 values: 2e-12 off at -0.186)
      long double sum = 0;
      for (int64_t a = 0; a < axis; ++a) sum += std::exp(x[at(a)] - m);
      const double s = static_cast<double>(sum);
      for (int64_t a = 0; a < axis; ++a) {
        const double d = x[at(a)] - m;
        y[at(a)] = nan ? NAN : log ? d - std::log(s) : std::exp(d) / s;
      }
    }
  return y;
}

// The masked softmax's reference: z = scale * x (+ the additive mask), keys
// masked out (a zero bool byte, causal k > q) -inf, softmax over the keys;
// a row with no key left is NaN, or 0 with safe.  x is (batch, heads,
// queries, keys); the mask (mb, mh, mq, keys), an extent of 1 broadcast.
struct MaskedProblem {
  int64_t batch, heads, queries, keys;
  kgen_mask_kind_t kind;
  int64_t mb, mh, mq;
  bool causal, safe;
  double scale;
};

inline std::vector<double> masked_ref(const MaskedProblem& p, const std::vector<double>& x,
                                      const std::vector<double>& additive,
                                      const std::vector<unsigned char>& keep) {
  const int64_t rows = p.batch * p.heads * p.queries, k_n = p.keys;
  std::vector<double> z(x.size());
  std::vector<bool> empty(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t q = r % p.queries, h = r / p.queries % p.heads, b = r / p.queries / p.heads;
    const int64_t mrow = ((p.mb == 1 ? 0 : b) * p.mh + (p.mh == 1 ? 0 : h)) * p.mq + (p.mq == 1 ? 0 : q);
    bool all_masked = true;
    for (int64_t k = 0; k < k_n; ++k) {
      const auto xi = static_cast<size_t>(r * k_n + k), mi = static_cast<size_t>(mrow * k_n + k);
      double v = p.scale * x[xi];
      if (p.kind == KGEN_MASK_ADDITIVE) v += additive[mi];
      if (p.kind == KGEN_MASK_BOOL && keep[mi] == 0) v = -INFINITY;
      if (p.causal && k > q) v = -INFINITY;
      z[xi] = v;
      all_masked &= v == -INFINITY;
    }
    empty[static_cast<size_t>(r)] = all_masked;
  }
  std::vector<double> y = softmax_ref(z, rows, k_n, 1, false);
  for (int64_t r = 0; r < rows; ++r)
    if (empty[static_cast<size_t>(r)])
      for (int64_t k = 0; k < k_n; ++k) y[static_cast<size_t>(r * k_n + k)] = p.safe ? 0.0 : NAN;
  return y;
}

// The backward's reference dx from y (the forward's output, as stored) and
// dy, with a per-element slack for the arithmetic (u: the unit roundoff of
// the compute type).  The sums along the axis carry at most
// g * sum|terms|, g = u (16 + 2 log2(axis)), and dx subtracts them from dy,
// where a result near 0 has no relative accuracy left:
//   softmax:     dx_i = (dy_i - s) y_i,  slack_i = y_i (g sum|y dy| + 2u (|dy_i| + |s|))
//   log_softmax: dx_i = dy_i - p_i S,     slack_i = p_i (g sum|dy| + u (4 + 2|y_i|) |S|)
//                                                   + 2u (|dy_i| + p_i |S|),  p_i = exp(y_i)
// The sums are compensated so that the float64 kernels are judged against
// sums exact to float64's last bits.
struct BackwardRef {
  std::vector<double> want, slack;
};

inline BackwardRef backward_ref(const std::vector<double>& y, const std::vector<double>& dy, int64_t outer,
                                int64_t axis, int64_t inner, bool log, double u) {
  BackwardRef r{std::vector<double>(y.size()), std::vector<double>(y.size())};
  const double g = u * (16 + 2 * std::log2(static_cast<double>(axis)));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return static_cast<size_t>((o * axis + a) * inner + i); };
      double s = 0, carry = 0, s_abs = 0;
      for (int64_t a = 0; a < axis; ++a) {
        const double t = log ? dy[at(a)] : y[at(a)] * dy[at(a)], next = s + t;
        carry += std::fabs(s) >= std::fabs(t) ? (s - next) + t : (t - next) + s;
        s = next;
        s_abs += std::fabs(t);
      }
      s += carry;
      for (int64_t a = 0; a < axis; ++a) {
        const size_t k = at(a);
        if (log) {
          const double p = std::exp(y[k]);
          r.want[k] = dy[k] - p * s;
          r.slack[k] = p * (g * s_abs + u * (4 + 2 * std::fabs(y[k])) * std::fabs(s)) +
                       2 * u * (std::fabs(dy[k]) + p * std::fabs(s));
        } else {
          r.want[k] = (dy[k] - s) * y[k];
          r.slack[k] = y[k] * (g * s_abs + 2 * u * (std::fabs(dy[k]) + std::fabs(s)));
        }
      }
    }
  return r;
}

// A reduction of a (outer, reduce, inner) tensor: values (sum, mean, max,
// min; int32 sums wrap) or the first index (argmax, argmin); NaN propagates
// and the first NaN is the arg of its row; sum|x| (mean: / reduce) per output,
// for the accuracy bound of real-valued sums.
struct ReduceRef {
  std::vector<double> value, magnitude;
  std::vector<int64_t> index;
};

inline ReduceRef reduce_ref(const std::vector<double>& x, int64_t outer, int64_t reduce, int64_t inner,
                            int op, bool int32) {
  const auto outs = static_cast<size_t>(outer * inner);
  ReduceRef ref{std::vector<double>(outs), std::vector<double>(outs), std::vector<int64_t>(outs)};
  const bool sum = op == KGEN_REDUCE_SUM || op == KGEN_REDUCE_MEAN;
  const bool want_max = op == KGEN_REDUCE_MAX || op == KGEN_REDUCE_ARGMAX;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = sum ? 0.0 : want_max ? -INFINITY : INFINITY, mag = 0;
      int64_t at = 0;
      bool nan = false;
      for (int64_t r = 0; r < reduce; ++r) {
        const double v = x[static_cast<size_t>((o * reduce + r) * inner + i)];
        mag += std::fabs(v);
        if (sum) {
          acc += v;
        } else if (!nan && std::isnan(v)) {
          nan = true, acc = v, at = r;
        } else if (!nan && (want_max ? v > acc : v < acc)) {
          acc = v, at = r;
        }
      }
      if (op == KGEN_REDUCE_MEAN) acc /= static_cast<double>(reduce), mag /= static_cast<double>(reduce);
      if (op == KGEN_REDUCE_SUM && int32)
        acc = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(acc)));
      const auto k = static_cast<size_t>(o * inner + i);
      ref.value[k] = acc;
      ref.magnitude[k] = mag;
      ref.index[k] = at;
    }
  return ref;
}

// PyTorch's order of top-k values: NaN above everything (all NaNs equal),
// -0.0 below +0.0, else by value.  -1, 0, 1.
inline int topk_compare(double a, double b) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  if (a == 0 && b == 0) return std::signbit(a) == std::signbit(b) ? 0 : (std::signbit(a) ? -1 : 1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

// The indices top-k must give for one row: the k best, equal values by the
// lower index; sorted: best first; unsorted: those strictly better than the
// k-th first, then those equal to it, each by ascending index.
inline std::vector<int64_t> topk_row(const std::vector<double>& v, int64_t k, bool largest, bool sorted) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  auto better = [&](int64_t a, int64_t b) {
    const int c = topk_compare(v[static_cast<size_t>(a)], v[static_cast<size_t>(b)]);
    return largest ? c > 0 : c < 0;
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
    if (better(a, b)) return true;
    return !better(b, a) && a < b;
  });
  idx.resize(static_cast<size_t>(k));
  if (!sorted && k > 0) {
    const int64_t kth = idx.back();
    std::vector<int64_t> above, equal;
    for (int64_t i : idx) (better(i, kth) ? above : equal).push_back(i);
    std::sort(above.begin(), above.end());
    std::sort(equal.begin(), equal.end());
    idx = above;
    idx.insert(idx.end(), equal.begin(), equal.end());
  }
  return idx;
}

// dst = src.permute(perm).contiguous(), bytewise.
inline std::vector<unsigned char> permute_ref(const std::vector<unsigned char>& src,
                                              const std::vector<int64_t>& shape, const std::vector<int>& perm,
                                              size_t elem) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> stride(shape.size());
  int64_t st = 1;
  for (int k = rank - 1; k >= 0; --k) stride[k] = st, st *= shape[k];
  std::vector<unsigned char> dst(src.size());
  std::vector<int64_t> idx(shape.size(), 0);  // dst's multi-index
  const int64_t n = numel(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int k = 0; k < rank; ++k) off += idx[k] * stride[perm[k]];
    std::memcpy(&dst[static_cast<size_t>(i) * elem], &src[static_cast<size_t>(off) * elem], elem);
    for (int k = rank - 1; k >= 0; --k) {
      if (++idx[k] < shape[perm[k]]) break;
      idx[k] = 0;
    }
  }
  return dst;
}

// Element strides of a contiguous tensor of shape `in` read as `out`:
// right-aligned, 0 along added leading dims and size-1 dims.
inline std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const int r = static_cast<int>(out.size()), added = r - static_cast<int>(in.size());
  std::vector<int64_t> st(out.size(), 0);
  int64_t s = 1;
  for (int k = r - 1; k >= added; --k) {
    const int64_t d = in[k - added];
    st[k] = d == 1 ? 0 : s;
    s *= d;
  }
  return st;
}

// Calls f(i, offsets) for each element i of `out` in row-major order, with
// each input's element offset (strides from broadcast_strides), updated
// incrementally as the index advances.
template <class F>
void for_each_element(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& strides, F f) {
  const int r = static_cast<int>(out.size());
  const int64_t n = numel(out);
  std::vector<int64_t> idx(out.size(), 0), off(strides.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (int k = r - 1; k >= 0; --k) {
      if (++idx[k] < out[k]) {
        for (size_t j = 0; j < strides.size(); ++j) off[j] += strides[j][k];
        break;
      }
      for (size_t j = 0; j < strides.size(); ++j) off[j] -= strides[j][k] * (out[k] - 1);
      idx[k] = 0;
    }
  }
}

inline std::vector<unsigned char> expand_ref(const std::vector<unsigned char>& src, const std::vector<int64_t>& src_shape,
                                             const std::vector<int64_t>& out, size_t elem) {
  std::vector<unsigned char> dst(static_cast<size_t>(numel(out)) * elem);
  for_each_element(out, {broadcast_strides(src_shape, out)}, [&](int64_t i, const std::vector<int64_t>& off) {
    std::memcpy(&dst[static_cast<size_t>(i) * elem], &src[static_cast<size_t>(off[0]) * elem], elem);
  });
  return dst;
}

inline std::vector<unsigned char> where_ref(const std::vector<unsigned char>& cond, const std::vector<unsigned char>& x,
                                            const std::vector<unsigned char>& y, const std::vector<int64_t>& cond_shape,
                                            const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape,
                                            const std::vector<int64_t>& out, size_t elem) {
  std::vector<unsigned char> want(static_cast<size_t>(numel(out)) * elem);
  for_each_element(out,
                   {broadcast_strides(cond_shape, out), broadcast_strides(x_shape, out),
                    broadcast_strides(y_shape, out)},
                   [&](int64_t i, const std::vector<int64_t>& off) {
                     const unsigned char* from = cond[static_cast<size_t>(off[0])]
                                                     ? &x[static_cast<size_t>(off[1]) * elem]
                                                     : &y[static_cast<size_t>(off[2]) * elem];
                     std::memcpy(&want[static_cast<size_t>(i) * elem], from, elem);
                   });
  return want;
}

// The broadcast of shapes that are known to broadcast (each size 1 or the result's).
inline std::vector<int64_t> broadcast_of(const std::vector<const std::vector<int64_t>*>& shapes) {
  size_t r = 0;
  for (auto* s : shapes) r = std::max(r, s->size());
  std::vector<int64_t> out(r, 1);
  for (auto* s : shapes)
    for (size_t k = 0; k < s->size(); ++k)
      if ((*s)[k] != 1) out[r - s->size() + k] = (*s)[k];
  return out;
}

}  // namespace rnd
}  // namespace test
