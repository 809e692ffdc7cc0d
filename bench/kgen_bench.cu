// kgen-bench: times kgen's kernels against a device-to-device copy measured
// in the same run.
//
//   kgen-bench softmax [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]
//                      [--offset 0] [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench softmax_backward [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]
//                      [--offset 0] [--reps 30] [--variants] [--md FILE] [--csv FILE]
//                      (softmax and log_softmax backward over the forward's rows;
//                      --offset E: the inputs E elements into their storage, the
//                      output at its own start)
//   kgen-bench softmax_dim [--dtypes f32,f16,bf16] [--shapes OUTERxAXISxINNER,...]
//                      [--ops softmax,log_softmax,softmax_backward,log_softmax_backward]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//                      (over dim 1 of (N, C, H*W) tensors, or of the shapes given)
//   kgen-bench softmax_masked [--dtypes f16,bf16,f32] [--ops bool,additive,causal]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//                      (attention shapes: batch 8, heads 16, S 1024 and 2048)
//   kgen-bench reduce  [--dtypes f32,f16] [--ops sum,max,argmax|all]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench permute [--dtypes f32,f16] (only the element size matters)
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench expand  [--dtypes f32,f16] [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench where   [--dtypes f32,f16] [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench topk    [--dtypes f32,f16] [--shapes BATCHxNxK,...] [--torch TIMES.csv] [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench host    [--calls 256] [--batches 201] [--md FILE]
//                      (host time a call of each family on a tiny tensor, beside
//                      an empty kernel launch and a cudaMemsetAsync; bench/host_cost.cu)
//                      (--torch: PyTorch's times on the same cases, from bench/topk_torch.py,
//                      for the speedup column)
//
// Each problem is a case of bench/cases.hpp, as kgen-tune's are: the same
// buffers, launches and traffic.  Each case: warm-up, then `reps` launches
// each timed with CUDA events; the median is reported.  The buffers are at
// least 4x the L2 (rotated between sets of buffers when one set is smaller).
// GB/s counts the minimum traffic (each input read once, each output written
// once); % of copy divides it by the GB/s of cudaMemcpyAsync device-to-device
// over the same bytes, timed the same way (a copy reads and writes: its GB/s
// counts both).  --variants also times every compiled variant that supports
// the case, so the heuristic's pick can be compared with the fastest.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "cases.hpp"
#include "harness.cuh"
#include "host_cost.hpp"
#include "kgen/kgen.h"

namespace {

struct Options {
  std::vector<std::string> dtypes;  // per family default when empty
  std::vector<std::string> ops;
  std::vector<int64_t> cols = {32, 128, 500, 1024, 2048, 4096, 8192, 32768, 131072, 1048576};
  double mib = 512;
  int reps = 30;
  bool variants = false;
  std::string md, csv;
  std::string torch;  // topk: a CSV of PyTorch's times (bench/topk_torch.py)
  std::string shapes;  // softmax_dim: OUTERxAXISxINNER,... in place of the built-in list
  int64_t offset = 0;  // softmax, softmax_backward: the inputs this many elements into their storage
  int calls = 256, batches = 201;  // host
};

// One measured line: the family's op, its shape, and the numbers.
struct Row {
  std::string op, dtype, shape, variant;
  double us, gbps, pct_copy;
  double torch_us = 0;  // PyTorch's time on the case, when given (--torch)
};

// The run's facts, printed first and repeated in the files.
struct Run {
  cudaDeviceProp prop;
  char date[32];
  std::string family, traffic;
  std::vector<Row> rows;

  Run(const std::string& fam, const std::string& what) : family(fam), traffic(what) {
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    std::printf("# kgen-bench %s\n# GPU: %s (%d SMs, L2 %d MiB), %s, commit %s, kgen %s %s level %s\n",
                family.c_str(), prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, date,
                commit().c_str(), kgen_version(), kgen_build_arch(), kgen_build_level());
    std::printf("# GB/s over %s; %% of copy: that over a D2D copy's GB/s (read + write) in the same run\n",
                traffic.c_str());
    std::printf("%-20s %-5s %-30s %10s %8s %7s  %s\n", "op", "dtype", "shape", "us", "GB/s", "%copy", "variant");
  }

  // Sets of buffers that together exceed 4x the L2.
  int sets_for(size_t bytes) const {
    return sets_past_l2(static_cast<size_t>(prop.l2CacheSize), bytes);
  }

  void add(const Row& r, bool keep, const std::string& note = "") {
    if (keep) rows.push_back(r);
    std::printf("%-20s %-5s %-30s %10.1f %8.0f %6.1f%%  %s%s", r.op.c_str(), r.dtype.c_str(), r.shape.c_str(),
                r.us, r.gbps, r.pct_copy, r.variant.c_str(), note.c_str());
    if (r.torch_us > 0 && r.op != "copy")
      std::printf("  [torch %.1f us, %.1fx]", r.torch_us, r.torch_us / r.us);
    std::printf("\n");
  }

  bool with_torch() const {
    for (const Row& r : rows)
      if (r.torch_us > 0) return true;
    return false;
  }
  static std::string torch_text(const Row& r, bool speedup) {
    if (r.torch_us <= 0 || r.op == "copy") return "";
    char t[32];
    std::snprintf(t, sizeof t, speedup ? "%.1fx" : "%.1f", speedup ? r.torch_us / r.us : r.torch_us);
    return t;
  }

  int write(const Options& o) const {
    if (!o.md.empty()) {
      FILE* f = std::fopen(o.md.c_str(), "w");
      if (!f) { std::perror(o.md.c_str()); return 1; }
      std::fprintf(f, "# kgen-bench %s\n\nGPU: %s (%d SMs), %s, commit %s, kgen %s, %s, level %s.\n"
                   "Median of %d event-timed runs; GB/s over %s;\n"
                   "%% of copy = that over the GB/s (read + write) of a cudaMemcpyAsync device-to-device copy in the same run.\n\n",
                   family.c_str(), prop.name, prop.multiProcessorCount, date, commit().c_str(), kgen_version(),
                   kgen_build_arch(), kgen_build_level(), o.reps, traffic.c_str());
      if (with_torch()) {
        std::fprintf(f, "| op | dtype | shape | us | GB/s | %% of copy | torch us | speedup | variant |\n"
                        "|---|---|---|---:|---:|---:|---:|---:|---|\n");
        for (const Row& r : rows)
          std::fprintf(f, "| %s | %s | %s | %.1f | %.0f | %.1f | %s | %s | %s |\n", r.op.c_str(),
                       r.dtype.c_str(), r.shape.c_str(), r.us, r.gbps, r.pct_copy, torch_text(r, false).c_str(),
                       torch_text(r, true).c_str(), r.variant.c_str());
      } else {
        std::fprintf(f, "| op | dtype | shape | us | GB/s | %% of copy | variant |\n|---|---|---|---:|---:|---:|---|\n");
        for (const Row& r : rows)
          std::fprintf(f, "| %s | %s | %s | %.1f | %.0f | %.1f | %s |\n", r.op.c_str(), r.dtype.c_str(),
                       r.shape.c_str(), r.us, r.gbps, r.pct_copy, r.variant.c_str());
      }
      std::fclose(f);
    }
    if (!o.csv.empty()) {
      FILE* f = std::fopen(o.csv.c_str(), "w");
      if (!f) { std::perror(o.csv.c_str()); return 1; }
      std::fprintf(f, "gpu,commit,op,dtype,shape,us,gbps,pct_copy,variant%s\n", with_torch() ? ",torch_us" : "");
      for (const Row& r : rows) {
        std::fprintf(f, "%s,%s,%s,%s,\"%s\",%.2f,%.1f,%.2f,%s", prop.name, commit().c_str(), r.op.c_str(),
                     r.dtype.c_str(), r.shape.c_str(), r.us, r.gbps, r.pct_copy, r.variant.c_str());
        if (with_torch()) std::fprintf(f, ",%.2f", r.torch_us);
        std::fprintf(f, "\n");
      }
      std::fclose(f);
    }
    return 0;
  }
};

// Input buffers filled with random values, and as many outputs.
struct Buffers {
  std::vector<void*> xs, ys;
  Buffers(int sets, size_t in_bytes, size_t out_bytes, int64_t n, kgen_dtype_t d) : xs(sets), ys(sets) {
    for (int s = 0; s < sets; ++s) {
      CUDA_OK(cudaMalloc(&xs[s], in_bytes));
      CUDA_OK(cudaMalloc(&ys[s], std::max<size_t>(out_bytes, 1)));
      fill_random<<<1024, 256>>>(xs[s], n, d, 1234 + s);
      CUDA_OK(cudaGetLastError());
    }
  }
  ~Buffers() {
    for (void* p : xs) cudaFree(p);
    for (void* p : ys) cudaFree(p);
  }
};

// GB/s of a device-to-device copy of `bytes` (read + write counted).
double copy_gbps(const Run& run, int reps, size_t bytes, kgen_dtype_t d) {
  const int sets = run.sets_for(bytes);
  Buffers b(sets, bytes, bytes, static_cast<int64_t>(bytes / kgen_dtype_size(d)), d);
  const double us = median_us(reps, sets, [&](int s) {
    CUDA_OK(cudaMemcpyAsync(b.ys[s], b.xs[s], bytes, cudaMemcpyDeviceToDevice));
  });
  return 2.0 * bytes / us / 1e3;
}

// A case's reference: times a copy of as many bytes as the case moves (half
// its traffic: a copy reads and writes them; all of it for reduce and topk,
// whose traffic counts only the input read), prints that row and returns
// the copy's GB/s.
double copy_row(Run& run, const Options& o, const std::string& shape, const cases::Case& c) {
  const size_t traffic = static_cast<size_t>(c.traffic);
  const size_t bytes = c.family == "reduce" || c.family == "topk" ? traffic : traffic / 2;
  const double copy = copy_gbps(run, o.reps, bytes, parse_dtype(c.dtype));
  run.add({"copy", c.dtype, shape, "cudaMemcpyAsync", 2.0 * bytes / copy / 1e3, copy, 100.0}, true);
  return copy;
}

// The case of a line of words (cases.hpp) in dtype `dname` (an unknown
// dtype ends the run).
std::unique_ptr<cases::Case> make(const Run& run, const std::string& family, const std::string& dname,
                                  const std::string& line) {
  parse_dtype(dname);
  cases::Words words;
  std::string error;
  std::unique_ptr<cases::Case> c;
  if (cases::parse_line(line, &words, &error)) c = cases::make_case(family, dname, words, run.prop, &error);
  if (!c) {
    std::fprintf(stderr, "kgen-bench: %s %s: %s\n", family.c_str(), line.c_str(), error.c_str());
    std::exit(1);
  }
  return c;
}

// The --dtypes given, else the family's default.
std::vector<std::string> dtypes_or(const Options& o, std::vector<std::string> fallback) {
  return o.dtypes.empty() ? fallback : o.dtypes;
}

// Is `name` among the --ops given (every op when none is)?
bool wanted(const Options& o, const std::string& name) {
  return o.ops.empty() || std::find(o.ops.begin(), o.ops.end(), name) != o.ops.end();
}

// Are all of `ops` among `known`?  Names the first that is not.
bool known_ops(const std::vector<std::string>& ops, const std::vector<std::string>& known) {
  for (const std::string& name : ops)
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::fprintf(stderr, "unknown op %s\n", name.c_str());
      return false;
    }
  return true;
}

// The compiled variants of the case's family and dtype (of any dtype for
// the byte movers: their names carry a movement size instead), the selected
// one first.
std::vector<std::string> candidates(const char* selected, const cases::Case& c, bool all) {
  std::vector<std::string> names = {selected};
  const bool any_dtype = c.family == "permute" || c.family == "expand" || c.family == "where";
  const std::string mid = "_" + c.dtype + "_", end = "_" + c.dtype;
  if (all)
    for (int64_t i = 0; i < kgen_variant_count(); ++i) {
      const std::string n = kgen_variant_name(i);
      const bool of_dtype = any_dtype || n.find(mid) != std::string::npos ||
                            (n.size() > end.size() && n.compare(n.size() - end.size(), end.size(), end) == 0);
      if (n != selected && of_dtype && c.family == kgen_variant_family(i)) names.push_back(n);
    }
  return names;
}

// Times the variant the library selects for the case and, with --variants,
// every other candidate that supports it (the others answer
// KGEN_ERROR_UNSUPPORTED), as rows like `base`: GB/s over the case's
// traffic, % of copy against `copy`.  Returns false on an error.
bool time_case(Run& run, const Options& o, Row base, double copy, cases::Case& c) {
  c.prepare();
  const char* selected = nullptr;
  if (c.selected(&selected) != KGEN_OK) {
    std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
    return false;
  }
  const std::vector<std::string> names = candidates(selected, c, o.variants);
  auto row = [&](const std::string& variant, double us) {
    Row r = base;
    r.variant = variant;
    r.us = us;
    r.gbps = c.traffic / us / 1e3;
    r.pct_copy = 100.0 * r.gbps / copy;
    return r;
  };
  double best_us = 1e30, selected_us = 0;
  std::string best;
  int timed = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string& name = names[k];
    // "copy" (an identity after simplification) is no compiled variant:
    // it runs through the selecting call
    const char* v = name == "copy" ? nullptr : name.c_str();
    if (k > 0 && c.hopeless(name)) continue;
    const kgen_status_t st = c.run(v, 0);
    if (st == KGEN_ERROR_UNSUPPORTED && k > 0) continue;
    if (st != KGEN_OK) {
      std::fprintf(stderr, "%s failed: %s\n", name.c_str(), kgen_last_error());
      return false;
    }
    auto once = [&](int s) {
      if (c.run(v, s) != KGEN_OK) {
        std::fprintf(stderr, "%s failed: %s\n", name.c_str(), kgen_last_error());
        std::exit(1);
      }
    };
    // a variant 8x slower than the selected one in a single run is reported
    // from that run: its median would cost minutes and change no conclusion
    const double single = k > 0 ? median_us(1, c.sets, once) : 0;
    const bool slow = k > 0 && single > 8 * selected_us;
    const double us = slow ? single : median_us(o.reps, c.sets, once);
    if (k == 0) selected_us = us;
    ++timed;
    if (k == 0) run.add(row(name, us), true, " (selected)");
    else if (o.variants) run.add(row(name, us), false, slow ? " (1 run)" : "");
    if (us < best_us) best_us = us, best = name;
  }
  if (o.variants) run.add(row(best, best_us), false, " (fastest of " + std::to_string(timed) + ")");
  return true;
}

// softmax and log_softmax, or their backward (dx from y and dy), over the
// last dim of rows of --cols columns, --mib a tensor.  The backward's inputs
// are random rather than a forward's output: the kernels' time does not
// depend on the values.
int bench_rows(const Options& o, const std::string& family) {
  const bool backward = family == "softmax_backward";
  Run run(family, backward ? "3 x tensor bytes (read y, read dy, write dx)" : "2 x tensor bytes (read x, write y)");
  for (const std::string& dname : dtypes_or(o, {"f32", "f16", "bf16"})) {
    const int e = kgen_dtype_size(parse_dtype(dname));
    for (int64_t cols : o.cols) {
      const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(o.mib * 1048576.0 / (cols * e)));
      const std::string shape =
          std::to_string(rows) + "x" + std::to_string(cols) + (o.offset ? "+" + std::to_string(o.offset) : "");
      double copy = 0;
      for (int log = 0; log < 2; ++log) {
        const auto c = make(run, family, dname,
                            "outer=" + std::to_string(rows) + " axis=" + std::to_string(cols) +
                                " log=" + std::to_string(log) + " offset=" + std::to_string(o.offset));
        if (log == 0) copy = copy_row(run, o, shape, *c);
        if (!time_case(run, o, {(log ? "log_" : "") + family, dname, shape}, copy, *c)) return 1;
      }
    }
  }
  return run.write(o);
}

// Softmax over dim 1 of (N, C, H*W) activations: channels of images and
// segmentation logits (inner > 1: the strided tiers), as (outer, axis, inner).
struct DimShape {
  int64_t outer, axis, inner;
};
const DimShape kDimShapes[] = {
    {64, 1024, 64 * 64}, {256, 64, 56 * 56}, {128, 512, 28 * 28},
    {256, 2048, 7 * 7},  {16, 19, 512 * 512}, {8, 8192, 64},
};

// --shapes: comma-separated AxBxC triples of positive integers, each made
// into a shape by `make`; false (after a message naming the bad one) if any
// is malformed.
template <class Shape, class Make>
bool parse_triples(const std::string& list, const char* form, std::vector<Shape>& out, Make make) {
  out.clear();
  for (const std::string& t : split(list)) {
    long long v[3];
    if (std::sscanf(t.c_str(), "%lldx%lldx%lld", &v[0], &v[1], &v[2]) != 3 || v[0] < 1 || v[1] < 1 || v[2] < 1) {
      std::fprintf(stderr, "--shapes: %s is not %s\n", t.c_str(), form);
      return false;
    }
    const int64_t w[3] = {v[0], v[1], v[2]};
    out.push_back(make(w));
  }
  return true;
}

// ops: softmax, log_softmax (read x, write y) and softmax_backward,
// log_softmax_backward (read y and dy, write dx) over dim 1.
int bench_softmax_dim(const Options& o) {
  Run run("softmax_dim", "2 (forward: read x, write y) or 3 (backward: read y, read dy, write dx) x tensor bytes");
  const std::vector<std::string> ops = {"softmax", "log_softmax", "softmax_backward", "log_softmax_backward"};
  if (!known_ops(o.ops, ops)) return 2;
  std::vector<DimShape> shapes(std::begin(kDimShapes), std::end(kDimShapes));
  if (!o.shapes.empty() && !parse_triples(o.shapes, "OUTERxAXISxINNER", shapes, [](const int64_t* v) {
        return DimShape{v[0], v[1], v[2]};
      }))
    return 2;
  for (const std::string& dname : dtypes_or(o, {"f32", "f16", "bf16"}))
    for (const DimShape& s : shapes) {
      const std::string dims = std::to_string(s.outer) + "," + std::to_string(s.axis) + "," + std::to_string(s.inner);
      const std::string shape = "(" + dims + ") dim 1";
      for (int backward = 0; backward < 2; ++backward) {
        double copy = -1;  // the copy row before the direction's first op
        for (int log = 0; log < 2; ++log) {
          const std::string& op = ops[2 * backward + log];
          if (!wanted(o, op)) continue;
          const auto c = make(run, backward ? "softmax_backward" : "softmax", dname,
                              "outer=" + std::to_string(s.outer) + " axis=" + std::to_string(s.axis) +
                                  " inner=" + std::to_string(s.inner) + " log=" + std::to_string(log));
          if (copy < 0) copy = copy_row(run, o, shape, *c);
          if (!time_case(run, o, {op, dname, shape}, copy, *c)) return 1;
        }
      }
    }
  return run.write(o);
}

// Attention's softmax(scale * QK^T + mask) over (batch, heads, S, S), scale
// 1/sqrt(64), with ops:
//   bool      a bool mask [B,1,S,S] (one byte an element, about half kept)
//   additive  an additive mask [1,1,S,S] of x's dtype
//   causal    no mask tensor, causal
int bench_softmax_masked(const Options& o) {
  Run run("softmax_masked", "the minimum traffic (read x, read the broadcast mask once, write y)");
  const int64_t batch = 8, heads = 16;
  struct Mask {
    std::string op, words, shape;
  };
  const std::vector<Mask> masks = {{"bool", "mask=bool mask_batch=" + std::to_string(batch), " mask [B,1,S,S]"},
                                   {"additive", "mask=additive", " mask [1,1,S,S]"},
                                   {"causal", "mask=none causal=1", ""}};
  if (!known_ops(o.ops, {"bool", "additive", "causal"})) return 2;
  for (const std::string& dname : dtypes_or(o, {"f16", "bf16", "f32"}))
    for (int64_t seq : {int64_t{1024}, int64_t{2048}}) {
      const std::string s = std::to_string(seq);
      const std::string dims = std::to_string(batch) + "x" + std::to_string(heads) + "x" + s + "x" + s;
      for (const Mask& m : masks) {
        if (!wanted(o, m.op)) continue;
        const auto c = make(run, "softmax", dname,
                            "batch=" + std::to_string(batch) + " heads=" + std::to_string(heads) + " outer=" + s +
                                " axis=" + s + " " + m.words);
        const double copy = copy_row(run, o, dims + m.shape, *c);
        if (!time_case(run, o, {"masked_" + m.op, dname, dims + m.shape}, copy, *c)) return 1;
      }
    }
  return run.write(o);
}

// The shapes of the reduce family's targets, as (outer, reduce, inner).
struct ReduceShape {
  const char* what;
  int64_t outer, reduce, inner;
};
const ReduceShape kReduceShapes[] = {
    {"last dim", 16384, 8192, 1},     {"last dim", 1048576, 128, 1}, {"last dim", 128, 1048576, 1},
    {"whole", 1, int64_t{1} << 28, 1}, {"middle", 64, 4096, 512},
};

int bench_reduce(const Options& o) {
  Run run("reduce", "the input bytes (read x once; the outputs are small)");
  const std::vector<std::string> all = {"sum", "mean", "max", "min", "argmax", "argmin"};
  std::vector<std::string> ops = o.ops.empty() ? std::vector<std::string>{"sum", "max", "argmax"} : o.ops;
  if (ops.size() == 1 && ops[0] == "all") ops = all;
  if (!known_ops(ops, all)) return 2;
  for (const std::string& dname : dtypes_or(o, {"f32", "f16"}))
    for (const ReduceShape& s : kReduceShapes) {
      const std::string dims = std::to_string(s.outer) + "," + std::to_string(s.reduce) + "," + std::to_string(s.inner);
      const std::string words = "outer=" + std::to_string(s.outer) + " reduce=" + std::to_string(s.reduce) +
                                " inner=" + std::to_string(s.inner);
      const std::string shape = "(" + dims + ")";
      // the traffic is the input's whatever the op
      const double copy = copy_row(run, o, shape, *make(run, "reduce", dname, words));
      for (const std::string& op : ops) {
        if (op == "mean" && dname == "i32") continue;
        if (!time_case(run, o, {op, dname, shape}, copy, *make(run, "reduce", dname, words + " op=" + op))) return 1;
      }
    }
  return run.write(o);
}

// The targets of the permute family (dst = src.permute(perm).contiguous())
// and of the broadcast ones (expand: src; where: cond, x, y), as the values
// of the case's words: the inputs' shapes, then the output's shape (permute:
// the permutation).
struct Shapes {
  std::vector<std::string> in;
  std::string out;
};
const std::vector<Shapes> kPermuteShapes = {
    {{"8192x8192"}, "1,0"},
    {{"64x1024x1024"}, "0,2,1"},
    {{"32x512x16x128"}, "0,2,1,3"},
    {{"64x64x128x128"}, "2,3,0,1"},
    {{"8x16x16x16x16x64"}, "5,3,1,4,2,0"},
    {{"256x3x512x512"}, "0,2,3,1"},
};
const std::vector<Shapes> kExpandShapes = {
    {{"4096x1x4096"}, "4096x16x4096"},
    {{"1x8192"}, "32768x8192"},
    {{"64x1x1024x1"}, "64x64x1024x32"},
};
const std::vector<Shapes> kWhereShapes = {
    {{"8192x8192", "8192x8192", "8192x8192"}, "8192x8192"},
    {{"64x1x1x2048", "64x16x2048x2048", "()"}, "64x16x2048x2048"},
};

// permute (only the element size matters; the dtype fills the inputs),
// expand and where: GB/s over the minimum traffic.
int bench_movers(const Options& o, const std::string& family) {
  const bool permute = family == "permute", where = family == "where";
  Run run(family, permute ? "2 x tensor bytes (read src once, write dst once)"
                          : "the minimum traffic (each input read once, the output written once)");
  const std::vector<Shapes>& shapes = permute ? kPermuteShapes : where ? kWhereShapes : kExpandShapes;
  const std::vector<std::string> keys = permute ? std::vector<std::string>{"shape", "perm"}
                                        : where ? std::vector<std::string>{"cond", "x", "y"}
                                                : std::vector<std::string>{"src", "dst"};
  for (const std::string& dname : dtypes_or(o, {"f32", "f16"}))
    for (const Shapes& s : shapes) {
      std::string words, shape;
      for (size_t i = 0; i < s.in.size(); ++i) {
        words += keys[i] + "=" + s.in[i] + " ";
        shape += (i ? "," : "") + s.in[i];
      }
      if (!where) words += keys.back() + "=" + s.out;
      shape += "->" + s.out;
      const auto c = make(run, family, dname, words);
      const double copy = copy_row(run, o, shape, *c);
      if (!time_case(run, o, {family, dname, shape}, copy, *c)) return 1;
    }
  return run.write(o);
}

// The top-k family's targets: (batch, n, k) rows of the last dim.
struct TopkShape {
  int64_t batch, n, k;
};
const TopkShape kTopkShapes[] = {
    {1, int64_t{1} << 24, 1}, {1, int64_t{1} << 24, 64}, {1, int64_t{1} << 24, 2048}, {1024, 32768, 64},
    {4096, 4096, 32},         {64, 262144, 256},         {16384, 1024, 8},
};

// PyTorch's times from bench/topk_torch.py: lines "dtype,batch,n,k,us".
double torch_time(const std::string& file, const std::string& dname, const TopkShape& c) {
  if (file.empty()) return 0;
  FILE* f = std::fopen(file.c_str(), "r");
  if (!f) return 0;
  char d[16];
  long long b, n, k;
  double us, found = 0;
  while (std::fscanf(f, "%15[^,],%lld,%lld,%lld,%lf\n", d, &b, &n, &k, &us) == 5)
    if (dname == d && b == c.batch && n == c.n && k == c.k) found = us;
  std::fclose(f);
  return found;
}

int bench_topk(const Options& o) {
  Run run("topk", "the input bytes (read x once; sorted=True, largest=True)");
  std::vector<TopkShape> shapes(std::begin(kTopkShapes), std::end(kTopkShapes));
  if (!o.shapes.empty() &&
      !parse_triples(o.shapes, "BATCHxNxK", shapes, [](const int64_t* v) { return TopkShape{v[0], v[1], v[2]}; }))
    return 2;
  for (const std::string& dname : dtypes_or(o, {"f32", "f16"}))
    for (const TopkShape& s : shapes) {
      const std::string shape =
          "(" + std::to_string(s.batch) + "," + std::to_string(s.n) + "," + std::to_string(s.k) + ")";
      const auto c = make(run, "topk", dname,
                          "batch=" + std::to_string(s.batch) + " n=" + std::to_string(s.n) + " k=" +
                              std::to_string(s.k));
      const double copy = copy_row(run, o, shape, *c);
      Row base{"topk", dname, shape};
      base.torch_us = torch_time(o.torch, dname, s);
      if (!time_case(run, o, base, copy, *c)) return 1;
    }
  return run.write(o);
}

int usage() {
  std::fprintf(stderr,
               "usage: kgen-bench softmax [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]\n"
               "                          [--offset 0] [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench softmax_backward [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]\n"
               "                          [--offset 0] [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench softmax_dim [--dtypes f32,f16,bf16] [--shapes OUTERxAXISxINNER,...]\n"
               "                          [--ops softmax,log_softmax,softmax_backward,log_softmax_backward]\n"
               "                          [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench softmax_masked [--dtypes f16,bf16,f32] [--ops bool,additive,causal]\n"
               "                          [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench reduce  [--dtypes f32,f16] [--ops sum,max,argmax|all]\n"
               "                          [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench permute [--dtypes f32,f16] (only the element size matters)\n"
               "                          [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench expand  [--dtypes f32,f16] [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench where   [--dtypes f32,f16] [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench topk    [--dtypes f32,f16] [--shapes BATCHxNxK,...] [--torch TIMES.csv]\n"
               "                          [--reps 30] [--variants]\n"
               "                          [--md FILE] [--csv FILE]\n"
               "       kgen-bench host    [--calls 256] [--batches 201] [--md FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string family = argv[1];
  if (family != "softmax" && family != "softmax_backward" && family != "softmax_dim" &&
      family != "softmax_masked" && family != "reduce" && family != "permute" && family != "expand" &&
      family != "where" && family != "topk" && family != "host")
    return usage();
  Options o;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { usage(); std::exit(2); }
      return argv[++i];
    };
    if (a == "--dtypes") o.dtypes = split(next());
    else if (a == "--ops") o.ops = split(next());
    else if (a == "--cols") { o.cols.clear(); for (auto& c : split(next())) o.cols.push_back(std::atoll(c.c_str())); }
    else if (a == "--mib") o.mib = std::atof(next().c_str());
    else if (a == "--offset") o.offset = std::max<int64_t>(0, std::atoll(next().c_str()));
    else if (a == "--reps") o.reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--variants") o.variants = true;
    else if (a == "--md") o.md = next();
    else if (a == "--csv") o.csv = next();
    else if (a == "--torch") o.torch = next();
    else if (a == "--shapes") o.shapes = next();
    else if (a == "--calls") o.calls = std::max(1, std::atoi(next().c_str()));
    else if (a == "--batches") o.batches = std::max(1, std::atoi(next().c_str()));
    else return usage();
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "kgen-bench: no CUDA device\n");
    return 77;
  }
  if (family == "host") return bench_host(o.calls, o.batches, o.md);
  if (family == "softmax" || family == "softmax_backward") return bench_rows(o, family);
  if (family == "softmax_dim") return bench_softmax_dim(o);
  if (family == "softmax_masked") return bench_softmax_masked(o);
  if (family == "reduce") return bench_reduce(o);
  if (family == "topk") return bench_topk(o);
  return bench_movers(o, family);
}
