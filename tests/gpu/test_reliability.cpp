// The contracts of DESIGN.md ("Contracts") under load and at the edges of
// the number line, through the C API only:
//   [concurrency]  host threads, each on its own stream, run every family at
//                  once and compare every output with the bytes of a run
//                  checked against a CPU reference; each thread's errors and
//                  kgen_last_error() stay its own
//   [determinism]  every family run twice into outputs poisoned differently:
//                  bitwise the same (split reductions and top-k ties included)
//   [multi_gpu]    the same on two GPUs at once, threads on each (skipped
//                  with one); a tensor of the other device is refused
//   [huge]         where past 2^31 elements
//   [numerics]     softmax and log_softmax on huge magnitudes, -inf, NaN and
//                  +inf against PyTorch's semantics; half-precision sums over
//                  2^27 elements within a stated bound
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpu_util.hpp"
#include "reference.hpp"
#include "softmax_util.hpp"

using namespace test;

namespace {

using Bytes = std::vector<unsigned char>;
using Shape = std::vector<int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();
const kgen_dtype_t kFloats[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64};

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int rank_of(const Shape& s) { return static_cast<int>(s.size()); }

HostTensor tensor_of(kgen_dtype_t d, const Bytes& bytes) {
  HostTensor t(d, bytes.size() / elem_size(d));
  t.bytes = bytes;
  return t;
}

Bytes download_bytes(const void* p, size_t bytes) {
  Bytes b(bytes);
  CUDA_REQUIRE(cudaMemcpy(b.data(), p, bytes, cudaMemcpyDeviceToHost));
  return b;
}

// Index of the first byte where a and b differ (a.size() when none).
size_t first_difference(const Bytes& a, const Bytes& b) {
  if (a.size() != b.size()) return 0;
  const auto m = std::mismatch(a.begin(), a.end(), b.begin());
  return static_cast<size_t>(m.first - a.begin());
}

// Random bytes 0..254: an element of any size is never all 0xFF (the poison).
Bytes random_bytes(size_t n) {
  Bytes b(n);
  std::uniform_int_distribution<int> dist(0, 254);
  for (auto& v : b) v = static_cast<unsigned char>(dist(rng()));
  return b;
}

// Nonzero integers in [-span, span]: sums of them are exact in every
// accumulator, whatever order a kernel adds in, and they tie often.
HostTensor small_integers(kgen_dtype_t d, size_t n, int span) {
  HostTensor t(d, n);
  std::uniform_int_distribution<int> dist(1, span);
  for (size_t i = 0; i < n; ++i) t.set(i, (rng()() & 1 ? 1 : -1) * dist(rng()));
  return t;
}

// ---- CPU references ---------------------------------------------------------

using rnd::softmax_ref;  // reference.hpp


bool is_arg(kgen_reduce_op_t op) { return op == KGEN_REDUCE_ARGMAX || op == KGEN_REDUCE_ARGMIN; }

const char* op_name(kgen_reduce_op_t op) {
  static const char* names[] = {"sum", "mean", "max", "min", "argmax", "argmin"};
  return names[op];
}

// The reduction reference (reference.hpp): values, first indices, NaN first.
rnd::ReduceRef reduce_ref(const HostTensor& x, int64_t outer, int64_t reduce, int64_t inner, kgen_reduce_op_t op) {
  return rnd::reduce_ref(values(x), outer, reduce, inner, op, x.dtype == KGEN_INT32);
}

// torch.topk's indices of every row (reference.hpp's topk_row).
std::vector<int64_t> topk_ref(const HostTensor& x, int64_t batch, int64_t n, int64_t k, bool largest,
                              bool sorted) {
  std::vector<int64_t> out;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < n; ++i) v[i] = x.get(static_cast<size_t>(b * n + i));
    const std::vector<int64_t> row = rnd::topk_row(v, k, largest, sorted);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

using rnd::broadcast_strides;  // reference.hpp
using rnd::for_each_element;

Bytes permute_ref(const Bytes& src, const Shape& shape, const std::vector<int>& perm, size_t elem) {
  const int r = rank_of(shape);
  std::vector<int64_t> src_strides(r), strides(r);
  Shape dst(r);
  int64_t s = 1;
  for (int k = r - 1; k >= 0; --k) src_strides[k] = s, s *= shape[k];
  for (int k = 0; k < r; ++k) dst[k] = shape[perm[k]], strides[k] = src_strides[perm[k]];
  Bytes out(src.size());
  for_each_element(dst, {strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    std::memcpy(&out[i * elem], &src[off[0] * elem], elem);
  });
  return out;
}

Bytes expand_ref(const Bytes& src, const Shape& src_shape, const Shape& dst, size_t elem) {
  Bytes out(static_cast<size_t>(numel(dst)) * elem);
  for_each_element(dst, {broadcast_strides(src_shape, dst)}, [&](int64_t i, const std::vector<int64_t>& off) {
    std::memcpy(&out[i * elem], &src[off[0] * elem], elem);
  });
  return out;
}

Bytes where_ref(const Bytes& cond, const Shape& cs, const Bytes& x, const Shape& xs, const Bytes& y,
                const Shape& ys, const Shape& out_shape, size_t elem) {
  Bytes out(static_cast<size_t>(numel(out_shape)) * elem);
  for_each_element(out_shape,
                   {broadcast_strides(cs, out_shape), broadcast_strides(xs, out_shape),
                    broadcast_strides(ys, out_shape)},
                   [&](int64_t i, const std::vector<int64_t>& off) {
                     const unsigned char* from = cond[off[0]] ? &x[off[1] * elem] : &y[off[2] * elem];
                     std::memcpy(&out[i * elem], from, elem);
                   });
  return out;
}

// cond bytes: about half zeros, the rest any nonzero byte (all select x)
Bytes random_cond(size_t n) {
  Bytes b(n);
  std::uniform_int_distribution<int> coin(0, 1), any(1, 255);
  for (auto& v : b) v = coin(rng()) ? static_cast<unsigned char>(any(rng())) : 0;
  return b;
}

// ---- one call of an entry point and what it must produce --------------------

struct Output {
  void* ptr;
  size_t bytes;
};

// `call` runs the entry point on a stream; `check` compares the outputs of a
// run with the CPU reference (Catch2, main thread only); `expected` then
// holds those outputs' bytes, which every later run must reproduce exactly
// (the determinism contract: same inputs, same pointers, same variant).
struct Job {
  Job(std::string n, std::function<kgen_status_t(cudaStream_t)> c, std::vector<Output> o,
      std::function<void(const std::vector<Bytes>&)> k)
      : name(std::move(n)), call(std::move(c)), outputs(std::move(o)), check(std::move(k)) {}
  std::string name;
  std::function<kgen_status_t(cudaStream_t)> call;
  std::vector<Output> outputs;
  std::function<void(const std::vector<Bytes>&)> check;
  unsigned char poison = kNanByte;  // for the checked run: no correct output holds it
  std::vector<Bytes> expected;
};

// The buffers and jobs of one worker, built on the main thread.
struct Workload {
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<Job> jobs;
  // a deliberately invalid call and the argument its message must name first
  std::function<kgen_status_t()> bad_call;
  std::string bad_argument;
  std::vector<float> host_guard;  // a host "output" the bad call must leave alone

  void* alloc(size_t bytes) {
    buffers.push_back(std::make_unique<DeviceBuffer>(bytes));
    return buffers.back()->ptr;
  }
  void* put(const Bytes& b) {
    void* p = alloc(b.size());
    CUDA_REQUIRE(cudaMemcpy(p, b.data(), b.size(), cudaMemcpyHostToDevice));
    return p;
  }
};

// Checks a float output against a float64 reference within tolerance(d).
std::function<void(const std::vector<Bytes>&)> close_to(kgen_dtype_t d, std::vector<double> want, Tolerance tol,
                                                        std::vector<double> slack = {}) {
  return [d, want, tol, slack](const std::vector<Bytes>& got) {
    check_matches(tensor_of(d, got[0]), want, tol, slack.empty() ? nullptr : &slack);
  };
}

std::function<void(const std::vector<Bytes>&)> equal_to(Bytes want) {
  return [want](const std::vector<Bytes>& got) {
    const size_t at = first_difference(got[0], want);
    INFO("first wrong byte " << at << " of " << want.size());
    CHECK(at == want.size());
  };
}

// Runs a job once on the legacy stream into poisoned outputs, checks it
// against the reference and keeps its bytes as the expected output.
void run_checked(Job& job) {
  for (const Output& o : job.outputs) CUDA_REQUIRE(cudaMemset(o.ptr, job.poison, o.bytes));
  const kgen_status_t st = job.call(nullptr);
  INFO(job.name << ": " << kgen_last_error());
  REQUIRE(st == KGEN_OK);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  job.expected.clear();
  for (const Output& o : job.outputs) job.expected.push_back(download_bytes(o.ptr, o.bytes));
  job.check(job.expected);
}

std::string tag(const char* family, int t, kgen_dtype_t d) {
  return std::string(family) + " (thread " + std::to_string(t) + ", " + dtype_short(d) + ")";
}

// ---- the families, with shapes that differ from thread to thread ------------

void add_softmax(Workload& w, int t) {
  const kgen_dtype_t d = kFloats[t % 4];
  const int64_t rows = 37 + 11 * t, cols = t % 3 == 2 ? 9000 + 7 * t : 700 + 129 * t;
  const HostTensor x = random_tensor(d, static_cast<size_t>(rows * cols));
  const void* dx = w.put(x.bytes);
  for (int log = 0; log < 2; ++log) {
    void* dy = w.alloc(x.bytes.size());
    Job j{tag(log ? "log_softmax" : "softmax", t, d),
          [=](cudaStream_t s) {
            return log ? kgen_log_softmax(d, rows, cols, dx, dy, s) : kgen_softmax(d, rows, cols, dx, dy, s);
          },
          {{dy, x.bytes.size()}},
          close_to(d, softmax_ref(values(x), rows, cols, 1, log), tolerance(d))};
    w.jobs.push_back(std::move(j));
  }
}

void add_softmax_dim(Workload& w, int t) {
  const kgen_dtype_t d = kFloats[(t + 1) % 4];
  const int64_t outer = 3 + t % 4, axis = 200 + 17 * t, inner = 5 + 3 * t;
  const int log = t & 1;
  const HostTensor x = random_tensor(d, static_cast<size_t>(outer * axis * inner));
  const void* dx = w.put(x.bytes);
  void* dy = w.alloc(x.bytes.size());
  w.jobs.push_back({tag("softmax_dim", t, d),
                    [=](cudaStream_t s) { return kgen_softmax_dim(log, d, outer, axis, inner, dx, dy, s); },
                    {{dy, x.bytes.size()}},
                    close_to(d, softmax_ref(values(x), outer, axis, inner, log), tolerance(d))});
}

void add_backward(Workload& w, int t) {
  const kgen_dtype_t d = kFloats[(t + 2) % 4];
  const bool last_dim = t % 2 == 0;
  const int log = (t >> 1) & 1;
  const int64_t outer = last_dim ? 29 + t : 4, axis = last_dim ? 1000 + 50 * t : 300 + t, inner = last_dim ? 1 : 3;
  const BackwardCase c = backward_case(d, outer, axis, inner, log);
  const void* y = w.put(c.y.bytes);
  const void* dy = w.put(c.dy.bytes);
  void* dx = w.alloc(c.y.bytes.size());
  w.jobs.push_back({tag(log ? "log_softmax_backward" : "softmax_backward", t, d),
                    [=](cudaStream_t s) {
                      if (!last_dim) return kgen_softmax_backward_dim(log, d, outer, axis, inner, y, dy, dx, s);
                      return log ? kgen_log_softmax_backward(d, outer, axis, y, dy, dx, s)
                                 : kgen_softmax_backward(d, outer, axis, y, dy, dx, s);
                    },
                    {{dx, c.y.bytes.size()}},
                    close_to(d, c.want, backward_tolerance(d), c.slack)});
}

// A [B,1,S,K] bool mask with causal attention, scale 0.7 and `safe`: the
// first query of batch 0 keeps no key (its row is 0 everywhere).
void add_masked(Workload& w, int t) {
  const kgen_dtype_t d = kFloats[(t + 3) % 4];
  const int64_t batch = 2, heads = 2 + t % 3, queries = 33 + t, keys = 120 + 13 * t;
  const size_t n = static_cast<size_t>(batch * heads * queries * keys);
  const HostTensor x = random_tensor(d, n);
  Bytes mask(static_cast<size_t>(batch * queries * keys));
  std::uniform_int_distribution<int> pct(0, 99);
  for (auto& m : mask) m = pct(rng()) < 25 ? 0 : 1;
  for (int64_t k = 0; k < keys; ++k) mask[static_cast<size_t>(k)] = 0;
  const double scale = 0.7;
  std::vector<double> z(n);
  std::vector<bool> empty(n / keys);
  for (size_t row = 0; row < n / keys; ++row) {
    const int64_t q = static_cast<int64_t>(row) % queries, b = static_cast<int64_t>(row) / (queries * heads);
    bool none = true;
    for (int64_t k = 0; k < keys; ++k) {
      const size_t i = row * keys + k;
      const bool keep = mask[static_cast<size_t>((b * queries + q) * keys + k)] != 0 && k <= q;
      z[i] = keep ? scale * x.get(i) : -kInf;
      none &= !keep;
    }
    empty[row] = none;
  }
  std::vector<double> want = softmax_ref(z, static_cast<int64_t>(n / keys), keys, 1, false);
  for (size_t row = 0; row < n / keys; ++row)
    if (empty[row]) std::fill(want.begin() + row * keys, want.begin() + (row + 1) * keys, 0.0);
  const void* dx = w.put(x.bytes);
  const void* dm = w.put(mask);
  void* dy = w.alloc(x.bytes.size());
  const kgen_softmax_mask_t args{scale, KGEN_MASK_BOOL, dm, batch, 1, queries, 1, 1};
  w.jobs.push_back({tag("softmax_masked", t, d),
                    [=](cudaStream_t s) {
                      return kgen_softmax_masked(d, batch, heads, queries, keys, dx, &args, dy, s);
                    },
                    {{dy, x.bytes.size()}},
                    close_to(d, want, tolerance(d))});
}

// Every op over rows, a middle axis, or two long rows (split across blocks,
// with a workspace from the stream-ordered allocator).
void add_reduce(Workload& w, int t) {
  static const kgen_dtype_t types[] = {KGEN_FLOAT32, KGEN_FLOAT16, KGEN_BFLOAT16, KGEN_FLOAT64, KGEN_INT32};
  const kgen_dtype_t d = types[t % 5];
  int64_t outer = 5 + t, reduce = 40000 + 1000 * t, inner = 1;
  if (t % 3 == 1) outer = 3, reduce = 2000 + 100 * t, inner = 64 + t;
  if (t % 3 == 2) outer = 2, reduce = (int64_t{1} << 20) + 1000 * t, inner = 1;
  const HostTensor x = small_integers(d, static_cast<size_t>(outer * reduce * inner), d == KGEN_INT32 ? 50 : 8);
  const void* dx = w.put(x.bytes);
  const size_t outs = static_cast<size_t>(outer * inner);
  for (kgen_reduce_op_t op : {KGEN_REDUCE_SUM, KGEN_REDUCE_MEAN, KGEN_REDUCE_MAX, KGEN_REDUCE_MIN,
                              KGEN_REDUCE_ARGMAX, KGEN_REDUCE_ARGMIN}) {
    if (op == KGEN_REDUCE_MEAN && d == KGEN_INT32) continue;
    const size_t bytes = outs * (is_arg(op) ? 8 : elem_size(d));
    void* out = w.alloc(bytes);
    const rnd::ReduceRef ref = reduce_ref(x, outer, reduce, inner, op);
    Job j{tag("reduce", t, d) + " " + op_name(op),
          [=](cudaStream_t s) { return kgen_reduce(op, d, outer, reduce, inner, dx, out, s); },
          {{out, bytes}},
          [=](const std::vector<Bytes>& got) {
            if (is_arg(op)) {
              std::vector<int64_t> idx(outs);
              std::memcpy(idx.data(), got[0].data(), bytes);
              CHECK(idx == ref.index);
            } else {
              check_matches(tensor_of(d, got[0]), ref.value, tolerance(d));
            }
          }};
    // int32 sums of -50..50 can be -1 (all bytes 0xFF); 0x80808080 they never reach
    if (d == KGEN_INT32 && !is_arg(op)) j.poison = 0x80;
    w.jobs.push_back(std::move(j));
  }
}

void add_permute(Workload& w, int t) {
  static const size_t sizes[] = {4, 2, 8, 1};
  const size_t e = sizes[t % 4];
  const Shape shape = t % 2 ? Shape{13 + t, 64 + 3 * t, 37} : Shape{6, 5 + t, 7, 9 + 2 * t};
  const std::vector<int> perm = t % 2 ? std::vector<int>{2, 0, 1} : std::vector<int>{3, 1, 0, 2};
  const Bytes src = random_bytes(static_cast<size_t>(numel(shape)) * e);
  const void* ds = w.put(src);
  void* dd = w.alloc(src.size());
  w.jobs.push_back({"permute (thread " + std::to_string(t) + ", " + std::to_string(e) + " bytes)",
                    [=](cudaStream_t s) {
                      return kgen_permute(e, rank_of(shape), shape.data(), perm.data(), ds, dd, s);
                    },
                    {{dd, src.size()}},
                    equal_to(permute_ref(src, shape, perm, e))});
}

void add_expand(Workload& w, int t) {
  static const kgen_dtype_t types[] = {KGEN_FLOAT16, KGEN_FLOAT32, KGEN_UINT8, KGEN_FLOAT64};
  const kgen_dtype_t d = types[t % 4];
  const size_t e = elem_size(d);
  const Shape src_shape{5 + t, 1, 96}, dst_shape{5 + t, 40 + t, 96};
  const Bytes src = random_bytes(static_cast<size_t>(numel(src_shape)) * e);
  const void* ds = w.put(src);
  const size_t bytes = static_cast<size_t>(numel(dst_shape)) * e;
  void* dd = w.alloc(bytes);
  w.jobs.push_back({tag("expand", t, d),
                    [=](cudaStream_t s) {
                      return kgen_expand(d, 3, src_shape.data(), 3, dst_shape.data(), ds, dd, s);
                    },
                    {{dd, bytes}},
                    equal_to(expand_ref(src, src_shape, dst_shape, e))});
}

void add_where(Workload& w, int t) {
  static const kgen_dtype_t types[] = {KGEN_FLOAT32, KGEN_BFLOAT16, KGEN_INT64, KGEN_UINT8};
  const kgen_dtype_t d = types[t % 4];
  const size_t e = elem_size(d);
  const Shape cs{33 + t, 1, 64}, xs{1, 17, 64}, ys{}, out_shape{33 + t, 17, 64};
  const Bytes cond = random_cond(static_cast<size_t>(numel(cs)));
  const Bytes x = random_bytes(static_cast<size_t>(numel(xs)) * e), y = random_bytes(e);
  const void* dc = w.put(cond);
  const void* dx = w.put(x);
  const void* dy = w.put(y);
  const size_t bytes = static_cast<size_t>(numel(out_shape)) * e;
  void* out = w.alloc(bytes);
  w.jobs.push_back({tag("where", t, d),
                    [=](cudaStream_t s) {
                      return kgen_where(d, 3, cs.data(), 3, xs.data(), 0, ys.data(), dc, dx, dy, out, s);
                    },
                    {{out, bytes}},
                    equal_to(where_ref(cond, cs, x, xs, y, ys, out_shape, e))});
}

// Values drawn from -2..2: ties everywhere, so the lower-index rule decides.
HostTensor tied_values(kgen_dtype_t d, size_t n) {
  HostTensor x(d, n);
  std::uniform_int_distribution<int> small(-2, 2);
  for (size_t i = 0; i < n; ++i) x.set(i, small(rng()));
  return x;
}

void add_topk(Workload& w, int t) {
  const kgen_dtype_t d = t % 2 ? KGEN_FLOAT16 : KGEN_FLOAT32;
  int64_t batch = 4 + t, n = 20000 + 1000 * t, k = 50 + 7 * t;
  if (t % 4 == 3) batch = 2, n = int64_t{1} << 20, k = 1000 + t;  // long rows: the multi-block select
  const int largest = t & 1, sorted = (t >> 1) & 1;
  const HostTensor x = tied_values(d, static_cast<size_t>(batch * n));
  const void* dx = w.put(x.bytes);
  const size_t outs = static_cast<size_t>(batch * k), e = elem_size(d);
  void* values_out = w.alloc(outs * e);
  int64_t* indices = static_cast<int64_t*>(w.alloc(outs * 8));
  size_t ws = 0;
  KGEN_REQUIRE(kgen_topk_workspace_size(nullptr, d, batch, n, k, largest, sorted, dx, &ws));
  void* work = ws ? w.alloc(ws) : nullptr;
  const std::vector<int64_t> want = topk_ref(x, batch, n, k, largest, sorted);
  w.jobs.push_back({tag("topk", t, d),
                    [=](cudaStream_t s) {
                      return kgen_topk(d, batch, n, k, largest, sorted, dx, values_out, indices, work, ws, s);
                    },
                    {{values_out, outs * e}, {indices, outs * 8}},
                    [=](const std::vector<Bytes>& got) {
                      std::vector<int64_t> idx(outs);
                      std::memcpy(idx.data(), got[1].data(), outs * 8);
                      CHECK(idx == want);
                      size_t wrong_values = 0;
                      for (size_t i = 0; i < outs; ++i) {
                        const size_t row = i / static_cast<size_t>(k);
                        wrong_values += std::memcmp(&got[0][i * e], &x.bytes[(row * n + want[i]) * e], e) != 0;
                      }
                      CHECK(wrong_values == 0);
                    }});
  // this thread's deliberate error, when it is the top-k kind: k < 0
  if (t % 3 == 0) {
    w.bad_call = [=] { return kgen_topk(d, batch, n, -1, largest, sorted, dx, values_out, indices, work, ws, nullptr); };
    w.bad_argument = "k";
  }
}

// The other two kinds of deliberate error: an ordinary host pointer as y
// (validation must read nothing into it), and an empty argmax.
void add_bad_call(Workload& w, int t) {
  if (t % 3 == 1) {
    w.host_guard.assign(64, 1.0f);
    const void* x = w.alloc(64 * 4);
    float* host = w.host_guard.data();
    w.bad_call = [=] { return kgen_softmax(KGEN_FLOAT32, 4, 16, x, host, nullptr); };
    w.bad_argument = "y";
  } else if (t % 3 == 2) {
    void* out = w.alloc(64);
    w.bad_call = [=] { return kgen_reduce(KGEN_REDUCE_ARGMAX, KGEN_FLOAT32, 4, 0, 3, out, out, nullptr); };
    w.bad_argument = "reduce";
  }
}

Workload make_workload(int t) {
  Workload w;
  add_softmax(w, t);
  add_softmax_dim(w, t);
  add_backward(w, t);
  add_masked(w, t);
  add_reduce(w, t);
  add_permute(w, t);
  add_expand(w, t);
  add_where(w, t);
  add_topk(w, t);
  add_bad_call(w, t);
  return w;
}

// ---- the worker thread: no Catch2 here (it is not thread-safe) ----------------

struct Record {
  int64_t iterations = 0, calls = 0, bad_calls = 0;
  size_t failures = 0;
  std::vector<std::string> first;  // the first few failures, reported after join
  void fail(std::string what) {
    if (failures++ < 8) first.push_back(std::move(what));
  }
};

std::string cuda_text(cudaError_t err) { return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err); }

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

void worker(const Workload& w, int device, double seconds, std::atomic<int>& waiting, Record& rec) {
  cudaError_t err = cudaSetDevice(device);
  cudaStream_t s = nullptr;
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  // pinned copies of every output, so that the copies back are asynchronous
  std::vector<std::vector<unsigned char*>> host(w.jobs.size());
  for (size_t j = 0; j < w.jobs.size() && err == cudaSuccess; ++j)
    for (const Output& o : w.jobs[j].outputs) {
      void* p = nullptr;
      if ((err = cudaMallocHost(&p, o.bytes)) != cudaSuccess) break;
      host[j].push_back(static_cast<unsigned char*>(p));
    }
  if (err != cudaSuccess) rec.fail("setup: " + cuda_text(err));
  // start together, so that the threads' calls overlap from the first
  waiting.fetch_sub(1);
  while (waiting.load() > 0) std::this_thread::yield();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (err == cudaSuccess) {
    // two poisons: an element that is never written differs from the
    // expected bytes under at least one of them
    const unsigned char poison = rec.iterations % 2 ? 0x5A : 0xFF;
    const std::string iteration = " (iteration " + std::to_string(rec.iterations) + ")";
    for (size_t j = 0; j < w.jobs.size(); ++j) {
      const Job& job = w.jobs[j];
      for (const Output& o : job.outputs)
        if ((err = cudaMemsetAsync(o.ptr, poison, o.bytes, s)) != cudaSuccess) break;
      if (err != cudaSuccess) break;
      const kgen_status_t st = job.call(s);
      ++rec.calls;
      const std::string message = kgen_last_error();
      if (st != KGEN_OK) rec.fail(job.name + ": " + kgen_status_string(st) + ": " + message + iteration);
      else if (!message.empty())  // another thread's message, or a stale one
        rec.fail(job.name + " succeeded but kgen_last_error() says '" + message + "'" + iteration);
      // this thread's own error, between its successes
      if (j == w.jobs.size() / 2 && w.bad_call) {
        const kgen_status_t bad = w.bad_call();
        ++rec.bad_calls;
        const std::string text = kgen_last_error();
        if (bad != KGEN_ERROR_INVALID_ARGUMENT || !starts_with(text, w.bad_argument + ":"))
          rec.fail("the invalid call gave " + std::string(kgen_status_string(bad)) + " '" + text +
                   "', expected an error naming " + w.bad_argument + iteration);
      }
      for (size_t k = 0; k < job.outputs.size() && err == cudaSuccess; ++k)
        err = cudaMemcpyAsync(host[j][k], job.outputs[k].ptr, job.outputs[k].bytes, cudaMemcpyDeviceToHost, s);
      if (err != cudaSuccess) break;
    }
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    if (err != cudaSuccess) {
      rec.fail("CUDA: " + cuda_text(err) + iteration);
      break;
    }
    for (size_t j = 0; j < w.jobs.size(); ++j)
      for (size_t k = 0; k < w.jobs[j].outputs.size(); ++k) {
        const Bytes& want = w.jobs[j].expected[k];
        const auto m = std::mismatch(want.begin(), want.end(), host[j][k]);
        if (m.first != want.end())
          rec.fail(w.jobs[j].name + ": output " + std::to_string(k) + " differs from the checked run at byte " +
                   std::to_string(m.first - want.begin()) + " of " + std::to_string(want.size()) + iteration);
      }
    for (float v : w.host_guard)
      if (v != 1.0f) {
        rec.fail("the invalid call wrote into its host pointer" + iteration);
        break;
      }
    ++rec.iterations;
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  for (auto& outs : host)
    for (unsigned char* p : outs) cudaFreeHost(p);
  if (s) cudaStreamDestroy(s);
}

double concurrency_seconds() {
  const char* env = std::getenv("KGEN_CONCURRENCY_SECONDS");
  const double v = env ? std::atof(env) : 0.0;
  return v > 0 ? v : 3.0;
}

}  // namespace

TEST_CASE("threads on their own streams run every family at once: right results, their own errors",
          "[reliability][concurrency]") {
  constexpr int kThreads = 8;
  int device = 0;
  CUDA_REQUIRE(cudaGetDevice(&device));
  // every job's output checked against the CPU reference once, here
  std::vector<Workload> work;
  for (int t = 0; t < kThreads; ++t) {
    work.push_back(make_workload(t));
    for (Job& job : work.back().jobs) run_checked(job);
    REQUIRE(work.back().bad_call);
  }
  std::vector<Record> records(kThreads);
  std::atomic<int> waiting{kThreads};
  const double seconds = concurrency_seconds();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(worker, std::cref(work[t]), device, seconds, std::ref(waiting), std::ref(records[t]));
  for (std::thread& th : threads) th.join();
  CUDA_REQUIRE(cudaDeviceSynchronize());
  for (int t = 0; t < kThreads; ++t) {
    const Record& r = records[t];
    std::string text;
    for (const std::string& f : r.first) text += "\n  " + f;
    INFO("thread " << t << ": " << r.iterations << " iterations, " << r.calls << " calls, " << r.bad_calls
                   << " invalid calls, " << r.failures << " failures" << text);
    CHECK(r.failures == 0);
    CHECK(r.iterations >= 1);
    CHECK(r.bad_calls == r.iterations);
  }
}

// ---- several GPUs ------------------------------------------------------------------

TEST_CASE("two GPUs in one process: threads on each run every family, each device its own memory and selection",
          "[reliability][multi_gpu]") {
  int count = 0;
  CUDA_REQUIRE(cudaGetDeviceCount(&count));
  if (count < 2) {
    WARN("skipped: needs two GPUs, this machine has " << count);
    return;
  }
  constexpr int kDevices = 2, kPerDevice = 4;
  int original = 0;
  CUDA_REQUIRE(cudaGetDevice(&original));
  // each device's workloads, allocated and checked against the CPU reference there
  std::vector<std::vector<Workload>> work(kDevices);
  for (int dev = 0; dev < kDevices; ++dev) {
    CUDA_REQUIRE(cudaSetDevice(dev));
    for (int t = 0; t < kPerDevice; ++t) {
      work[dev].push_back(make_workload(dev * kPerDevice + t));
      for (Job& job : work[dev].back().jobs) run_checked(job);
      REQUIRE(work[dev].back().bad_call);
    }
  }
  // a tensor of the other device is refused, naming the argument and the device
  {
    CUDA_REQUIRE(cudaSetDevice(1));
    auto x1 = std::make_unique<DeviceBuffer>(64 * 4);
    CUDA_REQUIRE(cudaSetDevice(0));
    auto y0 = std::make_unique<DeviceBuffer>(64 * 4);
    poison(y0->ptr, y0->bytes);
    CUDA_REQUIRE(cudaDeviceSynchronize());
    const kgen_status_t st = kgen_softmax(KGEN_FLOAT32, 4, 16, x1->ptr, y0->ptr, nullptr);
    const std::string msg = kgen_last_error();
    INFO(msg);
    CHECK(st == KGEN_ERROR_INVALID_ARGUMENT);
    CHECK(msg.rfind("x:", 0) == 0);
    CHECK(msg.find("device 1") != std::string::npos);
    CHECK(count_bytes(*y0, kNanByte) == y0->bytes);  // nothing written
    CUDA_REQUIRE(cudaSetDevice(1));
    x1.reset();
    CUDA_REQUIRE(cudaSetDevice(0));
  }
  // selection runs on each device's own facts: GPUs of one model choose alike
  {
    cudaDeviceProp props[kDevices];
    std::string chosen[kDevices];
    for (int dev = 0; dev < kDevices; ++dev) {
      CUDA_REQUIRE(cudaSetDevice(dev));
      CUDA_REQUIRE(cudaGetDeviceProperties(&props[dev], dev));
      const char* name = nullptr;
      const DeviceBuffer x(size_t{8} * 50257 * 2);
      REQUIRE(kgen_softmax_selected(0, KGEN_FLOAT16, 8, 50257, x.ptr, x.ptr, &name) == KGEN_OK);
      REQUIRE(name != nullptr);
      chosen[dev] = name;
    }
    if (std::string(props[0].name) == props[1].name && props[0].multiProcessorCount == props[1].multiProcessorCount)
      CHECK(chosen[0] == chosen[1]);
  }
  std::vector<Record> records(kDevices * kPerDevice);
  std::atomic<int> waiting{kDevices * kPerDevice};
  const double seconds = concurrency_seconds();
  std::vector<std::thread> threads;
  for (int dev = 0; dev < kDevices; ++dev)
    for (int t = 0; t < kPerDevice; ++t)
      threads.emplace_back(worker, std::cref(work[dev][t]), dev, seconds, std::ref(waiting),
                           std::ref(records[dev * kPerDevice + t]));
  for (std::thread& th : threads) th.join();
  for (int dev = 0; dev < kDevices; ++dev) {
    CUDA_REQUIRE(cudaSetDevice(dev));
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  for (int i = 0; i < kDevices * kPerDevice; ++i) {
    const Record& r = records[i];
    std::string text;
    for (const std::string& f : r.first) text += "\n  " + f;
    INFO("device " << i / kPerDevice << ", thread " << i % kPerDevice << ": " << r.iterations << " iterations, "
                   << r.calls << " calls, " << r.failures << " failures" << text);
    CHECK(r.failures == 0);
    CHECK(r.iterations >= 1);
    CHECK(r.bad_calls == r.iterations);
  }
  // each device's buffers freed with it current
  for (int dev = 0; dev < kDevices; ++dev) {
    CUDA_REQUIRE(cudaSetDevice(dev));
    work[dev].clear();
  }
  CUDA_REQUIRE(cudaSetDevice(original));
}

// ---- determinism ---------------------------------------------------------------

namespace {

// Runs `call` twice, each time into outputs poisoned with a different byte,
// and requires the outputs to be bitwise the same: an accumulation order that
// changes from run to run, a race, or an element that is not written shows.
void check_same_twice(const std::string& what, const std::function<kgen_status_t()>& call,
                      const std::vector<Output>& outs) {
  std::vector<Bytes> first;
  for (unsigned char p : {static_cast<unsigned char>(0xFF), static_cast<unsigned char>(0x00)}) {
    for (const Output& o : outs) CUDA_REQUIRE(cudaMemset(o.ptr, p, o.bytes));
    const kgen_status_t st = call();
    INFO(what << ": " << kgen_last_error());
    REQUIRE(st == KGEN_OK);
    CUDA_REQUIRE(cudaDeviceSynchronize());
    std::vector<Bytes> got;
    for (const Output& o : outs) got.push_back(download_bytes(o.ptr, o.bytes));
    if (first.empty()) {
      first = std::move(got);
      continue;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const size_t at = first_difference(first[k], got[k]);
      INFO(what << ", output " << k << ": first difference at byte " << at << " of " << first[k].size());
      CHECK(at == first[k].size());
    }
  }
}

DeviceBuffer upload_bytes(const Bytes& b) {
  DeviceBuffer d(b.size());
  CUDA_REQUIRE(cudaMemcpy(d.ptr, b.data(), b.size(), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

TEST_CASE("softmax, log_softmax, backward and masked are bitwise the same run to run",
          "[reliability][determinism][softmax]") {
  struct DimShape {
    kgen_dtype_t d;
    int64_t outer, axis, inner;
  };
  // rows of every tier (registers, shared memory, two passes) and middle dims
  for (DimShape c : {DimShape{KGEN_FLOAT32, 4096, 1000, 1}, DimShape{KGEN_FLOAT16, 2, (1 << 20) + 8, 1},
                     DimShape{KGEN_BFLOAT16, 64, 12345, 1}, DimShape{KGEN_FLOAT32, 4, 5000, 24},
                     DimShape{KGEN_FLOAT16, 2, 1000, 3}, DimShape{KGEN_FLOAT64, 8, 300, 128}}) {
    const size_t n = static_cast<size_t>(c.outer * c.axis * c.inner), bytes = n * elem_size(c.d);
    const HostTensor x = random_tensor(c.d, n);
    DeviceBuffer dx = upload_bytes(x.bytes), y(bytes), dy = upload_bytes(uniform_tensor(c.d, n, -1, 1).bytes),
                 dx_grad(bytes);
    for (int log = 0; log < 2; ++log) {
      const std::string what = std::string(log ? "log_softmax " : "softmax ") + dtype_short(c.d) + " (" +
                               std::to_string(c.outer) + ", " + std::to_string(c.axis) + ", " +
                               std::to_string(c.inner) + ")";
      if (c.inner == 1)
        check_same_twice(what, [&] {
          return log ? kgen_log_softmax(c.d, c.outer, c.axis, dx.ptr, y.ptr, nullptr)
                     : kgen_softmax(c.d, c.outer, c.axis, dx.ptr, y.ptr, nullptr);
        }, {{y.ptr, bytes}});
      else
        check_same_twice(what, [&] {
          return kgen_softmax_dim(log, c.d, c.outer, c.axis, c.inner, dx.ptr, y.ptr, nullptr);
        }, {{y.ptr, bytes}});
      // the backward from this forward output
      check_same_twice(what + " backward", [&] {
        return kgen_softmax_backward_dim(log, c.d, c.outer, c.axis, c.inner, y.ptr, dy.ptr, dx_grad.ptr, nullptr);
      }, {{dx_grad.ptr, bytes}});
    }
  }
  struct MaskShape {
    kgen_dtype_t d;
    int64_t batch, heads, queries, keys;
    kgen_mask_kind_t kind;
  };
  for (MaskShape m : {MaskShape{KGEN_FLOAT16, 2, 8, 256, 256, KGEN_MASK_BOOL},
                      MaskShape{KGEN_BFLOAT16, 1, 2, 8, 30000, KGEN_MASK_ADDITIVE}}) {
    const size_t n = static_cast<size_t>(m.batch * m.heads * m.queries * m.keys), bytes = n * elem_size(m.d);
    const size_t mask_n = static_cast<size_t>(m.batch * m.queries * m.keys);
    DeviceBuffer dx = upload_bytes(random_tensor(m.d, n).bytes), y(bytes);
    Bytes mask = m.kind == KGEN_MASK_BOOL ? random_cond(mask_n) : random_tensor(m.d, mask_n).bytes;
    DeviceBuffer dm = upload_bytes(mask);
    const kgen_softmax_mask_t args{0.125, m.kind, dm.ptr, m.batch, 1, m.queries, 1, 0};
    check_same_twice(std::string("masked softmax ") + dtype_short(m.d), [&] {
      return kgen_softmax_masked(m.d, m.batch, m.heads, m.queries, m.keys, dx.ptr, &args, y.ptr, nullptr);
    }, {{y.ptr, bytes}});
  }
}

TEST_CASE("every reduce op is bitwise the same run to run (split rows, whole tensors, middle axes)",
          "[reliability][determinism][reduce]") {
  struct Case {
    kgen_dtype_t d;
    int64_t outer, reduce, inner;
  };
  // real-valued data: any change of the order of additions changes bits
  for (Case c : {Case{KGEN_FLOAT32, 2, int64_t{1} << 22, 1}, Case{KGEN_BFLOAT16, 2, int64_t{1} << 22, 1},
                 Case{KGEN_FLOAT32, 1, int64_t{1} << 24, 1}, Case{KGEN_FLOAT16, 1, int64_t{1} << 23, 1},
                 Case{KGEN_FLOAT32, 4, int64_t{1} << 16, 64}, Case{KGEN_BFLOAT16, 1, int64_t{1} << 20, 8},
                 Case{KGEN_FLOAT64, 3, 1 << 20, 1}, Case{KGEN_FLOAT32, 1000, 3000, 1}}) {
    const size_t n = static_cast<size_t>(c.outer * c.reduce * c.inner), outs = static_cast<size_t>(c.outer * c.inner);
    DeviceBuffer dx = upload_bytes(random_tensor(c.d, n).bytes), out(outs * 8);
    for (kgen_reduce_op_t op : {KGEN_REDUCE_SUM, KGEN_REDUCE_MEAN, KGEN_REDUCE_MAX, KGEN_REDUCE_MIN,
                                KGEN_REDUCE_ARGMAX, KGEN_REDUCE_ARGMIN}) {
      const size_t bytes = outs * (is_arg(op) ? 8 : elem_size(c.d));
      check_same_twice(std::string(op_name(op)) + " " + dtype_short(c.d) + " (" + std::to_string(c.outer) + ", " +
                           std::to_string(c.reduce) + ", " + std::to_string(c.inner) + ")",
                       [&] { return kgen_reduce(op, c.d, c.outer, c.reduce, c.inner, dx.ptr, out.ptr, nullptr); },
                       {{out.ptr, bytes}});
    }
  }
}

TEST_CASE("permute, expand and where are bitwise the same run to run", "[reliability][determinism][broadcast]") {
  {
    const Shape shape{64, 1000, 37};
    const std::vector<int> perm{2, 0, 1};
    const size_t bytes = static_cast<size_t>(numel(shape)) * 4;
    DeviceBuffer src = upload_bytes(random_bytes(bytes)), dst(bytes);
    check_same_twice("permute (64, 1000, 37) 4 bytes", [&] {
      return kgen_permute(4, 3, shape.data(), perm.data(), src.ptr, dst.ptr, nullptr);
    }, {{dst.ptr, bytes}});
    const Shape shape4{8, 16, 32, 64};
    const std::vector<int> perm4{3, 1, 0, 2};
    const size_t bytes4 = static_cast<size_t>(numel(shape4)) * 2;
    check_same_twice("permute (8, 16, 32, 64) 2 bytes", [&] {
      return kgen_permute(2, 4, shape4.data(), perm4.data(), src.ptr, dst.ptr, nullptr);
    }, {{dst.ptr, bytes4}});
  }
  {
    const Shape s{64, 1, 96}, d{64, 128, 96};
    DeviceBuffer src = upload_bytes(random_bytes(static_cast<size_t>(numel(s)) * 2));
    DeviceBuffer dst(static_cast<size_t>(numel(d)) * 2);
    check_same_twice("expand (64,1,96) -> (64,128,96) f16", [&] {
      return kgen_expand(KGEN_FLOAT16, 3, s.data(), 3, d.data(), src.ptr, dst.ptr, nullptr);
    }, {{dst.ptr, dst.bytes}});
  }
  {
    const Shape cs{256, 1, 1024}, xs{256, 64, 1024}, ys{1024};
    const size_t n = static_cast<size_t>(numel(xs));
    DeviceBuffer cond = upload_bytes(random_cond(static_cast<size_t>(numel(cs))));
    DeviceBuffer x = upload_bytes(random_bytes(n * 2)), y = upload_bytes(random_bytes(1024 * 2)), out(n * 2);
    check_same_twice("where (256,1,1024) (256,64,1024) (1024) bf16", [&] {
      return kgen_where(KGEN_BFLOAT16, 3, cs.data(), 3, xs.data(), 1, ys.data(), cond.ptr, x.ptr, y.ptr, out.ptr,
                        nullptr);
    }, {{out.ptr, out.bytes}});
  }
}

TEST_CASE("top-k with many ties is bitwise the same run to run (values and indices)",
          "[reliability][determinism][topk]") {
  struct Case {
    kgen_dtype_t d;
    int64_t batch, n, k;
  };
  for (Case c : {Case{KGEN_FLOAT32, 1, int64_t{1} << 22, 1000}, Case{KGEN_FLOAT16, 256, 4096, 50},
                 Case{KGEN_FLOAT32, 8, 300000, 5000}, Case{KGEN_BFLOAT16, 2, int64_t{1} << 20, 3}}) {
    const HostTensor x = tied_values(c.d, static_cast<size_t>(c.batch * c.n));
    DeviceBuffer dx = upload_bytes(x.bytes);
    const size_t outs = static_cast<size_t>(c.batch * c.k);
    DeviceBuffer values_out(outs * elem_size(c.d)), indices(outs * 8);
    for (int largest = 0; largest < 2; ++largest)
      for (int sorted = 0; sorted < 2; ++sorted) {
        size_t ws = 0;
        KGEN_REQUIRE(kgen_topk_workspace_size(nullptr, c.d, c.batch, c.n, c.k, largest, sorted, dx.ptr, &ws));
        DeviceBuffer work(ws);
        check_same_twice(std::string("topk ") + dtype_short(c.d) + " batch " + std::to_string(c.batch) + " n " +
                             std::to_string(c.n) + " k " + std::to_string(c.k) + (largest ? " largest" : " smallest") +
                             (sorted ? " sorted" : " unsorted"),
                         [&] {
                           return kgen_topk(c.d, c.batch, c.n, c.k, largest, sorted, dx.ptr, values_out.ptr,
                                            indices.at<int64_t>(), ws ? work.ptr : nullptr, ws, nullptr);
                         },
                         {{values_out.ptr, values_out.bytes}, {indices.ptr, indices.bytes}});
      }
  }
}

// ---- where past 2^31 elements ------------------------------------------------

namespace {

// A pattern that does not repeat at any power of two: an index off by 2^31
// or 2^32 (an int32 wrap) reads a different value.
constexpr int64_t kTile = 999983;  // prime

uint64_t mix(uint64_t v) {  // splitmix64's finalizer
  v += 0x9E3779B97F4A7C15ull;
  v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
  v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
  return v ^ (v >> 31);
}

// Uploads tile[i % kTile] into the first `count` elements of dst.
void upload_tiled(void* dst, const Bytes& tile, size_t elem, int64_t count) {
  for (int64_t i = 0; i < count; i += kTile) {
    const int64_t n = std::min(kTile, count - i);
    CUDA_REQUIRE(cudaMemcpy(static_cast<char*>(dst) + i * elem, tile.data(), static_cast<size_t>(n) * elem,
                            cudaMemcpyHostToDevice));
  }
}

}  // namespace

TEST_CASE("where past 2^31 elements (int64 indexing): cond and y along the columns, x along the rows",
          "[reliability][huge][where]") {
  // out (2, C) 16-bit = where(cond (1, C), x (2, 1), y (1, C)), C just past
  // 2^30: 2^31 + 6 (odd columns: narrow packs) or 2^31 + 16 elements
  const int64_t c_max = (int64_t{1} << 30) + 8;
  const size_t out_bytes = static_cast<size_t>(2 * c_max) * 2;
  size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  const size_t need = out_bytes + static_cast<size_t>(c_max) * 3 + (size_t{1} << 30);
  if (free_bytes < need) {
    WARN("skipped: needs " << need / (1 << 20) << " MiB of device memory");
    return;
  }
  Bytes cond_tile(kTile), y_tile(kTile * 2);
  for (int64_t i = 0; i < kTile; ++i) {
    const uint64_t h = mix(static_cast<uint64_t>(i));
    cond_tile[i] = h & 1 ? static_cast<unsigned char>(1 + (h >> 8) % 255) : 0;  // any nonzero byte selects x
    const uint16_t v = static_cast<uint16_t>((h >> 16) % 0xFFFF);  // never 0xFFFF, the poison
    std::memcpy(&y_tile[i * 2], &v, 2);
  }
  const uint16_t x_rows[2] = {0x1234, 0xBEEF};
  DeviceBuffer cond(static_cast<size_t>(c_max)), y(static_cast<size_t>(c_max) * 2), x(4), out(out_bytes);
  upload_tiled(cond.ptr, cond_tile, 1, c_max);
  upload_tiled(y.ptr, y_tile, 2, c_max);
  CUDA_REQUIRE(cudaMemcpy(x.ptr, x_rows, 4, cudaMemcpyHostToDevice));

  auto expected = [&](int64_t i, int64_t cols) {
    const int64_t r = i / cols, c = i % cols, k = c % kTile;
    uint16_t v;
    if (cond_tile[k]) v = x_rows[r];
    else std::memcpy(&v, &y_tile[k * 2], 2);
    return v;
  };

  // the generic variant of 2-byte units (int64 indices, pack 1) besides the selection
  std::string generic;
  for (int64_t i = 0; i < kgen_variant_count(); ++i) {
    const std::string name = kgen_variant_name(i);
    if (std::string(kgen_variant_family(i)) == "where" && name.find("generic") != std::string::npos &&
        name.find("_b2") != std::string::npos)
      generic = name;
  }
  REQUIRE(!generic.empty());

  for (int64_t cols : {(int64_t{1} << 30) + 3, c_max}) {
    const int64_t n = 2 * cols;
    const int64_t cs[] = {1, cols}, xs[] = {2, 1};
    for (const char* variant : {static_cast<const char*>(nullptr), generic.c_str()}) {
      INFO("cols " << cols << ", " << (variant ? variant : "selected"));
      CUDA_REQUIRE(cudaMemset(out.ptr, 0xFF, out.bytes));
      const kgen_status_t st =
          kgen_where_variant(variant, KGEN_FLOAT16, 2, cs, 2, xs, 2, cs, cond.ptr, x.ptr, y.ptr, out.ptr, nullptr);
      INFO(kgen_last_error());
      REQUIRE(st == KGEN_OK);
      CUDA_REQUIRE(cudaDeviceSynchronize());
      // windows at the start, across the row boundary, across element 2^31
      // (byte 2^32), at the end, and past the end (must stay poison)
      const int64_t w = 1 << 16;
      const int64_t starts[] = {0, cols - w, (int64_t{1} << 31) - w, n - w};
      size_t wrong = 0, past = 0;
      std::string first;
      std::vector<uint16_t> got(2 * w);
      for (int64_t s : starts) {
        const int64_t count = std::min<int64_t>(2 * w, n - s);
        CUDA_REQUIRE(cudaMemcpy(got.data(), out.at(static_cast<size_t>(s) * 2), static_cast<size_t>(count) * 2,
                                cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < count; ++i)
          if (got[i] != expected(s + i, cols) && wrong++ < 3)
            first += "[" + std::to_string(s + i) + "] got " + std::to_string(got[i]) + " want " +
                     std::to_string(expected(s + i, cols)) + "; ";
      }
      // random places in between
      std::mt19937_64 pick(static_cast<uint64_t>(cols));
      for (int probe = 0; probe < 256; ++probe) {
        const int64_t s = static_cast<int64_t>(pick() % static_cast<uint64_t>(n - 64));
        CUDA_REQUIRE(cudaMemcpy(got.data(), out.at(static_cast<size_t>(s) * 2), 64 * 2, cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < 64; ++i)
          if (got[i] != expected(s + i, cols) && wrong++ < 3)
            first += "[" + std::to_string(s + i) + "] got " + std::to_string(got[i]) + "; ";
      }
      const int64_t tail = 2 * c_max - n;
      if (tail > 0) {
        CUDA_REQUIRE(cudaMemcpy(got.data(), out.at(static_cast<size_t>(n) * 2), static_cast<size_t>(tail) * 2,
                                cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < tail; ++i) past += got[i] != 0xFFFF;
      }
      INFO(wrong << " wrong elements: " << first << past << " elements written past the end");
      CHECK(wrong == 0);
      CHECK(past == 0);
    }
  }
}

// ---- numerics: softmax at the edges of the number line -------------------------

namespace {

// Rows that stress softmax's arithmetic (values before rounding to d), and
// what PyTorch gives for them:
//   0  1e4 + N(0, 3)              exp(x) overflows: only exp(x - max) is finite
//   1  -1e4 + N(0, 3)             exp(x) underflows to 0 everywhere
//   2  +-1e4 alternating          one-hot-like; log_softmax near -2e4
//   3  all 1e4                    uniform
//   4  +-0.9 of the dtype's max   x - max overflows to -inf: exp 0, log -inf
//   5  all -inf                   NaN (-inf - -inf)
//   6  one NaN                    NaN throughout
//   7  one +inf                   NaN throughout (+inf - +inf at the max)
//   8  +inf and -inf              NaN throughout
//   9  every other -inf           0 (log: -inf) there, a softmax of the rest
//  10  -inf but one finite value  1 there (log 0), 0 (log -inf) elsewhere
//  11  all +inf                   NaN throughout
constexpr int kSpecialRows = 12;
const int kNanRows[] = {5, 6, 7, 8, 11};

double dtype_max(kgen_dtype_t d) {
  switch (d) {
    case KGEN_FLOAT16: return 65504.0;
    case KGEN_BFLOAT16: return 3.3895313892515355e38;
    case KGEN_FLOAT32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
  }
}

HostTensor special_rows(kgen_dtype_t d, int64_t cols) {
  HostTensor x(d, static_cast<size_t>(kSpecialRows * cols));
  std::normal_distribution<double> noise(0.0, 3.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto at = [&](int row, int64_t c) { return static_cast<size_t>(row * cols + c); };
  const double big = 0.9 * dtype_max(d);
  for (int64_t c = 0; c < cols; ++c) {
    const double sign = c % 2 ? -1.0 : 1.0;
    x.set(at(0, c), 1e4 + noise(rng()));
    x.set(at(1, c), -1e4 + noise(rng()));
    x.set(at(2, c), sign * 1e4 * (1 + 0.01 * unit(rng())));
    x.set(at(3, c), 1e4);
    x.set(at(4, c), sign * big * (1 + 0.05 * unit(rng())));
    x.set(at(5, c), -kInf);
    x.set(at(6, c), noise(rng()));
    x.set(at(7, c), noise(rng()));
    x.set(at(8, c), c % 2 ? -kInf : noise(rng()));
    x.set(at(9, c), c % 2 ? -kInf : noise(rng()));
    x.set(at(10, c), -kInf);
    x.set(at(11, c), kInf);
  }
  x.set(at(6, cols / 2), NAN);
  x.set(at(7, cols / 3), kInf);
  x.set(at(8, (cols / 2) & ~int64_t{1}), kInf);  // an even column: +inf among finite values and -inf
  x.set(at(10, cols - 1), 2.5);
  return x;
}

// The rows laid out as slices along the middle dim of (2, cols, kSpecialRows):
// x[o, a, i] = row i, column a (both outer halves the same).
HostTensor as_middle_dim(const HostTensor& rows, int64_t cols) {
  HostTensor x(rows.dtype, rows.size() * 2);
  const size_t e = static_cast<size_t>(elem_size(rows.dtype));
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t a = 0; a < cols; ++a)
      for (int64_t i = 0; i < kSpecialRows; ++i)
        std::memcpy(&x.bytes[static_cast<size_t>((o * cols + a) * kSpecialRows + i) * e],
                    &rows.bytes[static_cast<size_t>(i * cols + a) * e], e);
  return x;
}

}  // namespace

TEST_CASE("softmax and log_softmax follow PyTorch on huge magnitudes, -inf, NaN and +inf",
          "[reliability][numerics][softmax]") {
  for (kgen_dtype_t d : kFloats) {
    for (int64_t cols : {33, 1000, 5000, 40000}) {
      const HostTensor rows = special_rows(d, cols);
      const HostTensor dim = as_middle_dim(rows, cols);
      DeviceBuffer x_rows = upload_bytes(rows.bytes), x_dim = upload_bytes(dim.bytes), y(dim.bytes.size());
      for (int log = 0; log < 2; ++log) {
        struct Entry {
          const char* name;
          const HostTensor* x;
          int64_t outer, axis, inner;
          std::function<kgen_status_t()> call;
        };
        const Entry entries[] = {
            {"kgen_softmax", &rows, kSpecialRows, cols, 1,
             [&] {
               return log ? kgen_log_softmax(d, kSpecialRows, cols, x_rows.ptr, y.ptr, nullptr)
                          : kgen_softmax(d, kSpecialRows, cols, x_rows.ptr, y.ptr, nullptr);
             }},
            {"kgen_softmax_dim, last dim", &rows, kSpecialRows, cols, 1,
             [&] { return kgen_softmax_dim(log, d, kSpecialRows, cols, 1, x_rows.ptr, y.ptr, nullptr); }},
            {"kgen_softmax_dim, middle dim", &dim, 2, cols, kSpecialRows,
             [&] { return kgen_softmax_dim(log, d, 2, cols, kSpecialRows, x_dim.ptr, y.ptr, nullptr); }},
        };
        for (const Entry& e : entries) {
          INFO(e.name << (log ? " log_softmax " : " softmax ") << dtype_short(d) << ", " << cols << " columns");
          const size_t n = e.x->size();
          poison(y.ptr, n * elem_size(d), nullptr, kOutsideByte);  // finite, neither 0 nor NaN
          const kgen_status_t st = e.call();
          INFO(kgen_last_error());
          REQUIRE(st == KGEN_OK);
          CUDA_REQUIRE(cudaDeviceSynchronize());
          const HostTensor got = download(y, d, n);
          check_matches(got, softmax_ref(values(*e.x), e.outer, e.axis, e.inner, log), tolerance(d));
          // the NaN rows, said outright: every element of them is NaN
          size_t not_nan = 0;
          for (int row : kNanRows)
            for (int64_t o = 0; o < e.outer / (e.inner == 1 ? kSpecialRows : 1); ++o)
              for (int64_t a = 0; a < cols; ++a) {
                const size_t k = e.inner == 1 ? static_cast<size_t>(row * cols + a)
                                              : static_cast<size_t>((o * cols + a) * kSpecialRows + row);
                not_nan += !std::isnan(got.get(k));
              }
          CHECK(not_nan == 0);
        }
      }
    }
  }
}

// ---- numerics: half-precision sums over 2^27 elements ----------------------------

namespace {

// 2^27 values of a half type, uniform in [0, scale) rounded to the type,
// and the float64 sums of their two halves.  A float64 sum of n values errs
// by at most n 2^-53 sum (2^-26 relative here), far below the bound tested.
struct HalfData {
  Bytes bytes;
  double half_sums[2] = {0, 0};
};

HalfData uniform_half(kgen_dtype_t d, int64_t n, double scale) {
  HalfData h{Bytes(static_cast<size_t>(n) * 2)};
  // in parts on threads: 2^27 conversions take seconds on one core; each
  // part lies within one half
  constexpr int kParts = 16;
  std::vector<double> sums(kParts, 0.0);
  std::vector<std::thread> pool;
  for (int part = 0; part < kParts; ++part)
    pool.emplace_back([&h, &sums, d, n, scale, part] {
      const int64_t begin = n / kParts * part, end = begin + n / kParts;
      double sum = 0;
      for (int64_t i = begin; i < end; ++i) {
        const float u = static_cast<float>((mix(static_cast<uint64_t>(i)) >> 40) * 0x1p-24 * scale);
        unsigned char* at = &h.bytes[static_cast<size_t>(i) * 2];
        if (d == KGEN_FLOAT16) {
          const __half b = __float2half_rn(u);
          std::memcpy(at, &b, 2);
          sum += __half2float(b);
        } else {
          const __nv_bfloat16 b = __float2bfloat16_rn(u);
          std::memcpy(at, &b, 2);
          sum += __bfloat162float(b);
        }
      }
      sums[part] = sum;
    });
  for (std::thread& t : pool) t.join();
  for (int part = 0; part < kParts; ++part) h.half_sums[part < kParts / 2 ? 0 : 1] += sums[part];
  return h;
}

}  // namespace

// The bound.  A float32 accumulation over n values, however it is split
// between threads, blocks and a tree across them, errs by about L * u32 *
// sum|x| at worst, L the longest chain of additions; with round to nearest
// on random data the errors take both signs and grow like sqrt(L) u32.
// 4 log2(n) u32 sum|x| (108 * 2^-24 = 6.4e-6 relative for n = 2^27) is
// above that for any chain up to 11664 additions, and 100 times below what
// a half-precision accumulator loses (it stops growing once the sum is 2^8
// (bfloat16) or 2^11 (float16) times the values).  The result is then
// rounded once to the half type: 2^-8 relative (bfloat16), 2^-11 (float16).
TEST_CASE("half sums and means over 2^27 elements: error within 4 log2(n) 2^-24 sum "
          "plus one rounding (2^-8 bf16, 2^-11 f16)",
          "[reliability][numerics][reduce]") {
  const int64_t n = int64_t{1} << 27;
  const double u32 = 0x1p-24, chain = 4 * std::log2(static_cast<double>(n));
  struct DataSet {
    kgen_dtype_t d;
    double scale;  // values in [0, scale)
    std::vector<kgen_reduce_op_t> ops;
  };
  // bfloat16 sums of [0, 1) reach 6.7e7; float16's largest finite value is
  // 65504: its sums take values below 2^-12 (sum about 16384), its means
  // any; a float16 sum past 65504 is +inf, as PyTorch's
  const DataSet sets[] = {{KGEN_BFLOAT16, 1.0, {KGEN_REDUCE_SUM, KGEN_REDUCE_MEAN}},
                          {KGEN_FLOAT16, 0x1p-12, {KGEN_REDUCE_SUM, KGEN_REDUCE_MEAN}},
                          {KGEN_FLOAT16, 1.0, {KGEN_REDUCE_MEAN, KGEN_REDUCE_SUM}}};
  DeviceBuffer x(static_cast<size_t>(n) * 2), out(16);
  for (const DataSet& set : sets) {
    const HalfData h = uniform_half(set.d, n, set.scale);
    CUDA_REQUIRE(cudaMemcpy(x.ptr, h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice));
    const double out_u = set.d == KGEN_BFLOAT16 ? 0x1p-8 : 0x1p-11;
    for (kgen_reduce_op_t op : set.ops)
      // one row of 2^27, and two rows of 2^26 (each split across blocks)
      for (int rows : {1, 2}) {
        poison(out.ptr, out.bytes);
        const int64_t per_row = n / rows;
        const kgen_status_t st = kgen_reduce(op, set.d, rows, per_row, 1, x.ptr, out.ptr, nullptr);
        INFO(dtype_short(set.d) << " " << op_name(op) << " of " << rows << " x " << per_row << " values in [0, "
                                << set.scale << "): " << kgen_last_error());
        REQUIRE(st == KGEN_OK);
        CUDA_REQUIRE(cudaDeviceSynchronize());
        const HostTensor got = download(out, set.d, static_cast<size_t>(rows));
        for (int r = 0; r < rows; ++r) {
          // values >= 0: sum|x| is the sum itself
          double want = rows == 1 ? h.half_sums[0] + h.half_sums[1] : h.half_sums[r];
          if (op == KGEN_REDUCE_MEAN) want /= static_cast<double>(per_row);
          const double g = got.get(static_cast<size_t>(r));
          INFO("row " << r << ": got " << g << ", float64 " << want);
          if (set.d == KGEN_FLOAT16 && op == KGEN_REDUCE_SUM && want >= 65520.0) {
            CHECK(g == kInf);  // past float16's largest value and half its ulp
            continue;
          }
          const double bound = chain * u32 * want + out_u * want;
          INFO("error " << std::fabs(g - want) << ", bound " << bound);
          CHECK(std::fabs(g - want) <= bound);
        }
      }
  }
}
