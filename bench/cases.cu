#include "cases.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "harness.cuh"

namespace cases {

Case::~Case() { release(); }

void Case::release() {
  for (auto& set : buffers)
    for (void* p : set) cudaFree(p);
  buffers.clear();
  released();
}

namespace {

void* allocate(size_t bytes, int fill, uint64_t seed) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
  if (fill >= 0) {
    const int64_t n = static_cast<int64_t>(bytes / std::max(1, kgen_dtype_size(static_cast<kgen_dtype_t>(fill))));
    fill_random<<<1024, 256>>>(p, n, fill, seed);
    CUDA_OK(cudaGetLastError());
  }
  return p;
}

}  // namespace

// As many sets of the tensors as make 4x the L2 (the inputs of one set are
// not in the L2 when it runs again).
void Case::prepare() {
  const std::vector<size_t>& bytes = tensor_bytes;
  const std::vector<int>& fill = tensor_fill;
  int device = 0;
  CUDA_OK(cudaGetDevice(&device));
  int l2 = 0;
  CUDA_OK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  size_t total = 0;
  for (size_t b : bytes) total += b;
  sets = sets_past_l2(static_cast<size_t>(l2), total);
  buffers.assign(sets, {});
  for (int s = 0; s < sets; ++s)
    for (size_t t = 0; t < bytes.size(); ++t) buffers[s].push_back(allocate(bytes[t], fill[t], 1000 + 10 * s + t));
  prepared();
}


bool parse_line(const std::string& line, Words* words, std::string* error) {
  words->clear();
  std::istringstream in(line.substr(0, line.find('#')));
  std::string w;
  while (in >> w) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == w.size()) {
      *error = "'" + w + "' is not key=value";
      return false;
    }
    (*words)[w.substr(0, eq)] = w.substr(eq + 1);
  }
  return true;
}

std::vector<std::string> line_dtypes(const Words& words, const std::vector<std::string>& wanted) {
  auto it = words.find("dtypes");
  if (it == words.end()) return wanted;
  std::vector<std::string> out;
  for (const std::string& d : split(it->second))
    if (std::find(wanted.begin(), wanted.end(), d) != wanted.end()) out.push_back(d);
  return out;
}

namespace {

// Reads the words of a line, remembering the first problem.
struct Reader {
  const Words& words;
  std::string error;

  int64_t integer(const char* key, int64_t fallback = -1) {
    auto it = words.find(key);
    if (it == words.end()) {
      if (fallback < 0 && error.empty()) error = std::string("no ") + key + "=";
      return fallback < 0 ? 1 : fallback;
    }
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (*end || v < 0) {
      if (error.empty()) error = std::string(key) + "=" + it->second + " is not a count";
      return 1;
    }
    return v;
  }
  std::string text(const char* key, const char* fallback) {
    auto it = words.find(key);
    return it == words.end() ? fallback : it->second;
  }
  std::vector<int64_t> list(const char* key, char sep) {
    std::vector<int64_t> out;
    auto it = words.find(key);
    if (it == words.end()) {
      if (error.empty()) error = std::string("no ") + key + "=";
      return out;
    }
    std::string s = it->second;
    if (s == "()") return out;  // a scalar
    for (char& c : s) if (c == sep) c = ',';
    for (const std::string& part : split(s)) out.push_back(std::atoll(part.c_str()));
    return out;
  }
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A CTA (or cluster) a row on many short rows: tens of thousands of CTAs
// each holding a few values, 5-300x the warp and tile tiers' time (H200,
// kgen-bench softmax_dim --variants, 497681 rows of 3: the block tier 307
// us, the tile 13), and each run of a cluster variant there takes up to a
// quarter second; the heuristic never picks them.  Both directions' names.
bool softmax_row_per_cta_hopeless(const std::string& v, int64_t rows, int64_t cols, int64_t inner) {
  if (inner != 1 || cols > 256 || rows < 65536) return false;
  for (const char* tier : {"block_", "cluster_", "smem_", "uncached_", "split_"})
    if (v.find(std::string("softmax_") + tier) == 0 || v.find(std::string("softmax_backward_") + tier) == 0)
      return true;
  return false;
}

// offset=E (softmax and its backward): the inputs lie E elements into
// their storage and the output at its allocation's start, so that x (or y
// and dy) and the output are apart modulo 16 bytes for odd E (bench/sweep.py's
// misaligned problems).
char* at_offset(void* p, int64_t elements, kgen_dtype_t d) {
  return static_cast<char*>(p) + elements * kgen_dtype_size(d);
}

struct SoftmaxCase : Case {
  kgen_dtype_t d;
  int64_t batch = 1, heads = 1, outer, axis, inner, offset;
  int log;
  kgen_softmax_mask_t mask{};
  bool masked = false;

  SoftmaxCase(kgen_dtype_t dt, Reader& r) : d(dt) {
    outer = r.integer("outer");
    axis = r.integer("axis");
    inner = r.integer("inner", 1);
    log = static_cast<int>(r.integer("log", 0));
    offset = r.integer("offset", 0);
    const std::string kind = r.text("mask", "");
    const size_t e = kgen_dtype_size(d);
    if (!kind.empty()) {
      masked = true;
      batch = r.integer("batch", 1);
      heads = r.integer("heads", 1);
      mask.scale = 0.125;
      mask.causal = static_cast<int>(r.integer("causal", 0));
      mask.mask_batch = r.integer("mask_batch", 1);
      mask.mask_heads = r.integer("mask_heads", 1);
      mask.mask_queries = r.integer("mask_queries", outer);
      if (kind == "bool") mask.kind = KGEN_MASK_BOOL;
      else if (kind == "additive") mask.kind = KGEN_MASK_ADDITIVE;
      else if (kind == "none") mask.kind = KGEN_MASK_NONE;
      else r.error = "mask=" + kind + " is not bool, additive or none";
    } else {
      for (const char* key : {"batch", "heads", "causal", "mask_batch", "mask_heads", "mask_queries"})
        if (r.words.count(key) && r.error.empty()) r.error = std::string(key) + "= needs mask=";
    }
    const size_t n = static_cast<size_t>(batch * heads * outer * axis * inner);
    tensor_bytes = {(n + offset) * e, n * e};
    tensor_fill = {d, -1};
    if (masked && mask.kind != KGEN_MASK_NONE) {
      const bool bytes = mask.kind == KGEN_MASK_BOOL;  // one byte an element
      tensor_bytes.push_back(static_cast<size_t>(mask.mask_batch * mask.mask_heads * mask.mask_queries * axis) *
                             (bytes ? 1 : e));
      tensor_fill.push_back(bytes ? KGEN_BOOL : d);
    }
    for (size_t b : tensor_bytes) traffic += static_cast<double>(b);
    traffic -= static_cast<double>(offset * e);
  }
  // the mask of set s
  kgen_softmax_mask_t mask_of(int s) const {
    kgen_softmax_mask_t m = mask;
    m.mask = buffers[s].size() > 2 ? buffers[s][2] : nullptr;
    return m;
  }
  kgen_status_t run(const char* v, int s) override {
    auto& b = buffers[s];
    if (masked) {
      const kgen_softmax_mask_t m = mask_of(s);
      return kgen_softmax_masked_variant(v, d, batch, heads, outer, axis, at_offset(b[0], offset, d), &m, b[1],
                                         nullptr);
    }
    return kgen_softmax_dim_variant(v, log, d, outer, axis, inner, at_offset(b[0], offset, d), b[1], nullptr);
  }
  kgen_status_t selected(const char** v) override {
    auto& b = buffers[0];
    if (masked) {
      const kgen_softmax_mask_t m = mask_of(0);
      return kgen_softmax_masked_selected(d, batch, heads, outer, axis, at_offset(b[0], offset, d), &m, b[1], v);
    }
    return kgen_softmax_dim_selected(log, d, outer, axis, inner, at_offset(b[0], offset, d), b[1], v);
  }
  bool hopeless(const std::string& v) const override {
    return softmax_row_per_cta_hopeless(v, batch * heads * outer, axis, inner);
  }
};

struct SoftmaxBackwardCase : Case {
  kgen_dtype_t d;
  int64_t outer, axis, inner, offset;
  int log;
  SoftmaxBackwardCase(kgen_dtype_t dt, Reader& r) : d(dt) {
    outer = r.integer("outer");
    axis = r.integer("axis");
    inner = r.integer("inner", 1);
    log = static_cast<int>(r.integer("log", 0));
    offset = r.integer("offset", 0);
    const size_t bytes = static_cast<size_t>(outer * axis * inner) * kgen_dtype_size(d);
    const size_t in = bytes + static_cast<size_t>(offset) * kgen_dtype_size(d);
    traffic = 3.0 * bytes;
    tensor_bytes = {in, in, bytes};
    tensor_fill = {d, d, -1};
  }
  kgen_status_t run(const char* v, int s) override {
    auto& b = buffers[s];
    return kgen_softmax_backward_variant(v, log, d, outer, axis, inner, at_offset(b[0], offset, d),
                                         at_offset(b[1], offset, d), b[2], nullptr);
  }
  kgen_status_t selected(const char** v) override {
    auto& b = buffers[0];
    return kgen_softmax_backward_selected(log, d, outer, axis, inner, at_offset(b[0], offset, d),
                                          at_offset(b[1], offset, d), b[2], v);
  }
  bool hopeless(const std::string& v) const override { return softmax_row_per_cta_hopeless(v, outer, axis, inner); }
};

struct ReduceCase : Case {
  kgen_dtype_t d;
  kgen_reduce_op_t op = KGEN_REDUCE_SUM;
  int64_t outer, reduce, inner;
  int sm_count;
  void* ws = nullptr;
  size_t ws_bytes = size_t{64} << 20;  // more than any split plan of these shapes needs
  ReduceCase(kgen_dtype_t dt, Reader& r, int sms) : d(dt), sm_count(sms) {
    outer = r.integer("outer");
    reduce = r.integer("reduce");
    inner = r.integer("inner", 1);
    const char* ops[] = {"sum", "mean", "max", "min", "argmax", "argmin"};
    const std::string name = r.text("op", "sum");
    int k = 0;
    while (k < 6 && name != ops[k]) ++k;
    if (k == 6) r.error = "op=" + name + " is not a reduction";
    else op = static_cast<kgen_reduce_op_t>(k);
    const size_t bytes = static_cast<size_t>(outer * reduce * inner) * kgen_dtype_size(d);
    traffic = static_cast<double>(bytes);
    tensor_bytes = {bytes, static_cast<size_t>(outer * inner) * 8};
    tensor_fill = {d, -1};
  }
  ~ReduceCase() override { release(); }
  void prepared() override { CUDA_OK(cudaMalloc(&ws, ws_bytes)); }
  void released() override { cudaFree(ws), ws = nullptr; }
  kgen_status_t run(const char* v, int s) override {
    auto& b = buffers[s];
    return kgen_reduce_variant(v, op, d, outer, reduce, inner, b[0], b[1], ws, ws_bytes, nullptr);
  }
  kgen_status_t selected(const char** v) override {
    size_t need = 0;
    return kgen_reduce_selected(op, d, outer, reduce, inner, buffers[0][0], buffers[0][1], v, &need);
  }
  // a thread or a group of lanes per row with fewer than two warps of rows
  // per SM (one thread summing 2^28 elements); the heuristic never picks them
  bool hopeless(const std::string& v) const override {
    int lanes = 0;
    if (v.rfind("reduce_thread_", 0) == 0) lanes = 1;
    else if (v.rfind("reduce_warp_", 0) == 0) lanes = std::atoi(v.c_str() + v.find("_g") + 2);
    return lanes > 0 && outer * lanes < int64_t{sm_count} * 64;
  }
};

struct PermuteCase : Case {
  size_t e;
  std::vector<int64_t> shape;
  std::vector<int> perm;
  PermuteCase(kgen_dtype_t d, Reader& r) : e(kgen_dtype_size(d)) {
    shape = r.list("shape", 'x');
    for (int64_t p : r.list("perm", ',')) perm.push_back(static_cast<int>(p));
    if (perm.size() != shape.size() && r.error.empty()) r.error = "perm= and shape= differ in rank";
    const size_t bytes = static_cast<size_t>(numel(shape)) * e;
    traffic = 2.0 * bytes;
    tensor_bytes = {bytes, bytes};
    tensor_fill = {d, -1};
  }
  kgen_status_t run(const char* v, int s) override {
    auto& b = buffers[s];
    return kgen_permute_variant(v, e, static_cast<int>(shape.size()), shape.data(), perm.data(), b[0], b[1],
                                nullptr);
  }
  kgen_status_t selected(const char** v) override {
    return kgen_permute_selected(e, static_cast<int>(shape.size()), shape.data(), perm.data(), buffers[0][0],
                                 buffers[0][1], v);
  }
};

struct ExpandCase : Case {
  kgen_dtype_t d;
  std::vector<int64_t> src, dst;
  ExpandCase(kgen_dtype_t dt, Reader& r) : d(dt) {
    src = r.list("src", 'x');
    dst = r.list("dst", 'x');
    const size_t e = kgen_dtype_size(d), in = numel(src) * e, out = numel(dst) * e;
    traffic = static_cast<double>(in + out);
    tensor_bytes = {in, out};
    tensor_fill = {d, -1};
  }
  kgen_status_t run(const char* v, int s) override {
    auto& b = buffers[s];
    return kgen_expand_variant(v, d, static_cast<int>(src.size()), src.data(), static_cast<int>(dst.size()),
                               dst.data(), b[0], b[1], nullptr);
  }
  kgen_status_t selected(const char** v) override {
    return kgen_expand_selected(d, static_cast<int>(src.size()), src.data(), static_cast<int>(dst.size()),
                                dst.data(), buffers[0][0], buffers[0][1], v);
  }
};

struct WhereCase : Case {
  kgen_dtype_t d;
  std::vector<int64_t> shape[3];  // cond, x, y
  WhereCase(kgen_dtype_t dt, Reader& r) : d(dt) {
    const char* keys[] = {"cond", "x", "y"};
    for (int i = 0; i < 3; ++i) shape[i] = r.list(keys[i], 'x');
    int ranks[3];
    const int64_t* shapes[3];
    for (int i = 0; i < 3; ++i) ranks[i] = static_cast<int>(shape[i].size()), shapes[i] = shape[i].data();
    int out_rank = 0;
    int64_t out_shape[8];
    if (r.error.empty() && kgen_broadcast_shape(3, ranks, shapes, &out_rank, out_shape) != KGEN_OK)
      r.error = kgen_last_error();
    const size_t e = kgen_dtype_size(d);
    const size_t out = static_cast<size_t>(numel(std::vector<int64_t>(out_shape, out_shape + out_rank))) * e;
    const std::vector<size_t> bytes = {static_cast<size_t>(numel(shape[0])), numel(shape[1]) * e,
                                       numel(shape[2]) * e, out};
    for (size_t b : bytes) traffic += static_cast<double>(b);
    tensor_bytes = bytes;
    tensor_fill = {KGEN_BOOL, d, d, -1};
  }
  kgen_status_t run(const char* v, int s) override {
    auto& b = buffers[s];
    return kgen_where_variant(v, d, static_cast<int>(shape[0].size()), shape[0].data(),
                              static_cast<int>(shape[1].size()), shape[1].data(),
                              static_cast<int>(shape[2].size()), shape[2].data(), b[0], b[1], b[2], b[3],
                              nullptr);
  }
  kgen_status_t selected(const char** v) override {
    auto& b = buffers[0];
    return kgen_where_selected(d, static_cast<int>(shape[0].size()), shape[0].data(),
                               static_cast<int>(shape[1].size()), shape[1].data(),
                               static_cast<int>(shape[2].size()), shape[2].data(), b[0], b[1], b[2], b[3], v);
  }
};

struct TopkCase : Case {
  kgen_dtype_t d;
  int64_t batch, n, k;
  size_t idx_at = 0;
  void* ws = nullptr;
  size_t ws_bytes = 0;
  TopkCase(kgen_dtype_t dt, Reader& r) : d(dt) {
    batch = r.integer("batch");
    n = r.integer("n");
    k = r.integer("k");
    const size_t e = kgen_dtype_size(d), bytes = static_cast<size_t>(batch * n) * e;
    // values, then the indices from the next 256-byte boundary
    idx_at = (static_cast<size_t>(batch * k) * e + 255) / 256 * 256;
    traffic = static_cast<double>(bytes);
    tensor_bytes = {bytes, idx_at + static_cast<size_t>(batch * k) * 8};
    tensor_fill = {d, -1};
  }
  ~TopkCase() override { release(); }
  void prepared() override {
    // one workspace, the largest any compiled variant needs here
    for (int64_t i = 0; i < kgen_variant_count(); ++i) {
      size_t need = 0;
      if (std::strcmp(kgen_variant_family(i), "topk") == 0 &&
          kgen_topk_workspace_size(kgen_variant_name(i), d, batch, n, k, 1, 1, buffers[0][0], &need) == KGEN_OK)
        ws_bytes = std::max(ws_bytes, need);
    }
    CUDA_OK(cudaMalloc(&ws, std::max<size_t>(ws_bytes, 1)));
  }
  void released() override { cudaFree(ws), ws = nullptr; }
  kgen_status_t run(const char* v, int s) override {
    auto& b = buffers[s];
    return kgen_topk_variant(v, d, batch, n, k, 1, 1, b[0], b[1],
                             reinterpret_cast<int64_t*>(static_cast<char*>(b[1]) + idx_at), ws, ws_bytes, nullptr);
  }
  kgen_status_t selected(const char** v) override { return kgen_topk_selected(d, batch, n, k, 1, 1, buffers[0][0], v); }
  // a warp per row with fewer rows than warps on one SM, on long rows; the
  // heuristic never picks them
  bool hopeless(const std::string& v) const override {
    return v.rfind("topk_queue_", 0) == 0 && batch < 64 && n > 65536;
  }
};

}  // namespace

std::unique_ptr<Case> make_case(const std::string& family, const std::string& dtype, const Words& words,
                                const cudaDeviceProp& prop, std::string* error) {
  Words rest = words;
  rest.erase("dtypes");
  Reader r{rest};
  const kgen_dtype_t d = dtype_from_name(dtype);
  std::unique_ptr<Case> c;
  if (static_cast<int>(d) < 0) r.error = "unknown dtype " + dtype;
  else if (family == "softmax") c.reset(new SoftmaxCase(d, r));
  else if (family == "softmax_backward") c.reset(new SoftmaxBackwardCase(d, r));
  else if (family == "reduce") c.reset(new ReduceCase(d, r, prop.multiProcessorCount));
  else if (family == "permute") c.reset(new PermuteCase(d, r));
  else if (family == "expand") c.reset(new ExpandCase(d, r));
  else if (family == "where") c.reset(new WhereCase(d, r));
  else if (family == "topk") c.reset(new TopkCase(d, r));
  else r.error = "unknown family " + family;
  if (!r.error.empty()) {
    *error = r.error;
    return nullptr;
  }
  c->family = family;
  c->dtype = dtype;
  for (const auto& kv : rest) c->text += (c->text.empty() ? "" : " ") + kv.first + "=" + kv.second;
  return c;
}

}  // namespace cases
