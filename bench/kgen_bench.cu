// kgen-bench: times kgen's kernels against a device-to-device copy measured
// in the same run.
//
//   kgen-bench softmax [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench softmax_backward [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//                      (softmax and log_softmax backward over the forward's rows)
//   kgen-bench softmax_dim [--dtypes f32,f16,bf16]
//                      [--ops softmax,log_softmax,softmax_backward,log_softmax_backward]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//                      (over dim 1 of (N, C, H*W) tensors)
//   kgen-bench softmax_masked [--dtypes f16,bf16,f32] [--ops bool,additive,causal]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//                      (attention shapes: batch 8, heads 16, S 1024 and 2048)
//   kgen-bench reduce  [--dtypes f32,f16] [--ops sum,max,argmax|all]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench permute [--dtypes f32,f16] (only the element size matters)
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench expand  [--dtypes f32,f16] [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench where   [--dtypes f32,f16] [--reps 30] [--variants] [--md FILE] [--csv FILE]
//   kgen-bench topk    [--dtypes f32,f16] [--torch TIMES.csv] [--reps 30] [--variants] [--md FILE] [--csv FILE]
//                      (--torch: PyTorch's times on the same cases, from bench/topk_torch.py,
//                      for the speedup column)
//
// Each case: warm-up, then `reps` launches each timed with CUDA events; the
// median is reported.  Inputs are at least 4x the L2 (rotated between sets of
// buffers when one set is smaller).  GB/s counts the minimum traffic (each
// input read once, each output written once); % of copy divides it by the
// GB/s of cudaMemcpyAsync device-to-device over the same bytes, timed the
// same way (a copy reads and writes: its GB/s counts both).  --variants also times every compiled variant that supports the
// case, so the heuristic's pick can be compared with the fastest.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "harness.cuh"
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

// A case's reference: times the copy of its `bytes`, prints that row and
// returns the copy's GB/s.
double copy_row(Run& run, const Options& o, const std::string& dname, const std::string& shape, size_t bytes,
                kgen_dtype_t d) {
  const double copy = copy_gbps(run, o.reps, bytes, d);
  run.add({"copy", dname, shape, "cudaMemcpyAsync", 2.0 * bytes / copy / 1e3, copy, 100.0}, true);
  return copy;
}

// The --dtypes given, else the family's default.
std::vector<std::string> dtypes_or(const Options& o, std::vector<std::string> fallback) {
  return o.dtypes.empty() ? fallback : o.dtypes;
}

// The compiled variants of a family and dtype (any dtype when dname is empty:
// permute names carry a movement size instead), the selected one first.
std::vector<std::string> candidates(const char* selected, const char* family, const std::string& dname,
                                    bool all) {
  std::vector<std::string> names = {selected};
  const std::string mid = "_" + dname + "_", end = "_" + dname;
  if (all)
    for (int64_t i = 0; i < kgen_variant_count(); ++i) {
      const std::string n = kgen_variant_name(i);
      const bool of_dtype = dname.empty() || n.find(mid) != std::string::npos ||
                            (n.size() > end.size() && n.compare(n.size() - end.size(), end.size(), end) == 0);
      if (n != selected && of_dtype && std::string(kgen_variant_family(i)) == family) names.push_back(n);
    }
  return names;
}

// Times each candidate (run(name, set) launches it); the first is the
// selected one.  Returns false on an error.
// `hopeless` names variants not worth a single run on this case.
bool time_candidates(Run& run, const Options& o, Row base, double copy, int sets,
                     const std::vector<std::string>& names, double bytes,
                     const std::function<kgen_status_t(const char*, int)>& launch,
                     const std::function<bool(const std::string&)>& hopeless = nullptr) {
  double best_us = 1e30, selected_us = 0;
  std::string best;
  int timed = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    const char* v = names[k].c_str();
    if (k > 0 && hopeless && hopeless(names[k])) continue;
    const kgen_status_t st = launch(v, 0);
    if (st == KGEN_ERROR_UNSUPPORTED && k > 0) continue;
    if (st != KGEN_OK) {
      std::fprintf(stderr, "%s failed: %s\n", v, kgen_last_error());
      return false;
    }
    auto once = [&](int s) {
      if (launch(v, s) != KGEN_OK) {
        std::fprintf(stderr, "%s failed: %s\n", v, kgen_last_error());
        std::exit(1);
      }
    };
    // a variant 8x slower than the selected one in a single run is reported
    // from that run: its median would cost minutes and change no conclusion
    const double single = k > 0 ? median_us(1, sets, once) : 0;
    const bool slow = k > 0 && single > 8 * selected_us;
    const double us = slow ? single : median_us(o.reps, sets, once);
    if (k == 0) selected_us = us;
    ++timed;
    Row r = base;
    r.variant = v;
    r.us = us;
    r.gbps = bytes / us / 1e3;
    r.pct_copy = 100.0 * r.gbps / copy;
    if (k == 0) run.add(r, true, " (selected)");
    else if (o.variants) run.add(r, false, slow ? " (1 run)" : "");
    if (us < best_us) best_us = us, best = v;
  }
  if (o.variants) {
    Row r = base;
    r.variant = best;
    r.us = best_us;
    r.gbps = bytes / best_us / 1e3;
    r.pct_copy = 100.0 * r.gbps / copy;
    run.add(r, false, " (fastest of " + std::to_string(timed) + ")");
  }
  return true;
}

int bench_softmax(const Options& o) {
  Run run("softmax", "2 x tensor bytes (read x, write y)");
  for (const std::string& dname : dtypes_or(o, {"f32", "f16", "bf16"})) {
    const kgen_dtype_t d = parse_dtype(dname);
    const int e = kgen_dtype_size(d);
    for (int64_t cols : o.cols) {
      const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(o.mib * 1048576.0 / (cols * e)));
      const size_t bytes = static_cast<size_t>(rows * cols * e);
      const int sets = run.sets_for(bytes);
      const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
      const double copy = copy_row(run, o, dname, shape, bytes, d);
      Buffers b(sets, bytes, bytes, rows * cols, d);
      for (int log = 0; log < 2; ++log) {
        const char* selected = nullptr;
        if (kgen_softmax_selected(log, d, rows, cols, b.xs[0], b.ys[0], &selected) != KGEN_OK) {
          std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
          return 1;
        }
        const Row base{log ? "log_softmax" : "softmax", dname, shape, "", 0, 0, 0};
        if (!time_candidates(run, o, base, copy, sets, candidates(selected, "softmax", dname, o.variants),
                             2.0 * bytes, [&](const char* v, int s) {
                               return kgen_softmax_variant(v, log, d, rows, cols, b.xs[s], b.ys[s], nullptr);
                             }))
          return 1;
      }
    }
  }
  return run.write(o);
}

// Is `name` among the --ops given (every op when none is)?
bool wanted(const Options& o, const std::string& name) {
  return o.ops.empty() || std::find(o.ops.begin(), o.ops.end(), name) != o.ops.end();
}

// Softmax and log_softmax backward over the last dim, on the forward's rows
// (--cols, --mib): dx from y and dy.  The inputs are random rather than a
// forward's output: the kernels' time does not depend on the values.
int bench_softmax_backward(const Options& o) {
  Run run("softmax_backward", "3 x tensor bytes (read y, read dy, write dx)");
  for (const std::string& dname : dtypes_or(o, {"f32", "f16", "bf16"})) {
    const kgen_dtype_t d = parse_dtype(dname);
    const int e = kgen_dtype_size(d);
    for (int64_t cols : o.cols) {
      const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(o.mib * 1048576.0 / (cols * e)));
      const size_t bytes = static_cast<size_t>(rows * cols * e);
      const int sets = run.sets_for(2 * bytes);
      const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
      // a copy of half the traffic moves as many bytes
      const double copy = copy_row(run, o, dname, shape, 3 * bytes / 2, d);
      Buffers y_dx(sets, bytes, bytes, rows * cols, d), dy(sets, bytes, 0, rows * cols, d);
      for (int log = 0; log < 2; ++log) {
        const char* selected = nullptr;
        if (kgen_softmax_backward_selected(log, d, rows, cols, 1, y_dx.xs[0], dy.xs[0], y_dx.ys[0], &selected) !=
            KGEN_OK) {
          std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
          return 1;
        }
        const Row base{log ? "log_softmax_backward" : "softmax_backward", dname, shape, "", 0, 0, 0};
        if (!time_candidates(run, o, base, copy, sets, candidates(selected, "softmax_backward", dname, o.variants),
                             3.0 * bytes, [&](const char* v, int s) {
                               return kgen_softmax_backward_variant(v, log, d, rows, cols, 1, y_dx.xs[s], dy.xs[s],
                                                                    y_dx.ys[s], nullptr);
                             }))
          return 1;
      }
    }
  }
  return run.write(o);
}

// Softmax over dim 1 of (N, C, H*W) activations: channels of images and
// segmentation logits (inner > 1: the strided tiers), as (outer, axis, inner).
struct DimBenchCase {
  int64_t outer, axis, inner;
};
const DimBenchCase kDimCases[] = {
    {64, 1024, 64 * 64}, {256, 64, 56 * 56}, {128, 512, 28 * 28},
    {256, 2048, 7 * 7},  {16, 19, 512 * 512}, {8, 8192, 64},
};

// ops: softmax, log_softmax (read x, write y) and softmax_backward,
// log_softmax_backward (read y and dy, write dx) over dim 1.
int bench_softmax_dim(const Options& o) {
  Run run("softmax_dim", "2 (forward: read x, write y) or 3 (backward: read y, read dy, write dx) x tensor bytes");
  const char* const ops[] = {"softmax", "log_softmax", "softmax_backward", "log_softmax_backward"};
  for (const std::string& name : o.ops)
    if (std::find(std::begin(ops), std::end(ops), name) == std::end(ops)) {
      std::fprintf(stderr, "unknown op %s\n", name.c_str());
      return 2;
    }
  for (const std::string& dname : dtypes_or(o, {"f32", "f16", "bf16"})) {
    const kgen_dtype_t d = parse_dtype(dname);
    const int e = kgen_dtype_size(d);
    for (const DimBenchCase& c : kDimCases) {
      const int64_t n = c.outer * c.axis * c.inner;
      const size_t bytes = static_cast<size_t>(n) * e;
      const int sets = run.sets_for(2 * bytes);
      const std::string shape = "(" + std::to_string(c.outer) + "," + std::to_string(c.axis) + "," +
                                std::to_string(c.inner) + ") dim 1";
      Buffers x_y(sets, bytes, bytes, n, d), dy(sets, bytes, 0, n, d);
      for (int backward = 0; backward < 2; ++backward) {
        if (!wanted(o, ops[2 * backward]) && !wanted(o, ops[2 * backward + 1])) continue;
        const int tensors = backward ? 3 : 2;
        const double copy = copy_row(run, o, dname, shape, tensors * bytes / 2, d);
        for (int log = 0; log < 2; ++log) {
          const char* op = ops[2 * backward + log];
          if (!wanted(o, op)) continue;
          const char* selected = nullptr;
          const kgen_status_t st =
              backward ? kgen_softmax_backward_selected(log, d, c.outer, c.axis, c.inner, x_y.xs[0], dy.xs[0],
                                                        x_y.ys[0], &selected)
                       : kgen_softmax_dim_selected(log, d, c.outer, c.axis, c.inner, x_y.xs[0], x_y.ys[0], &selected);
          if (st != KGEN_OK) {
            std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
            return 1;
          }
          const Row base{op, dname, shape, "", 0, 0, 0};
          auto launch = [&](const char* v, int s) {
            return backward ? kgen_softmax_backward_variant(v, log, d, c.outer, c.axis, c.inner, x_y.xs[s],
                                                            dy.xs[s], x_y.ys[s], nullptr)
                            : kgen_softmax_dim_variant(v, log, d, c.outer, c.axis, c.inner, x_y.xs[s], x_y.ys[s],
                                                       nullptr);
          };
          if (!time_candidates(run, o, base, copy, sets,
                               candidates(selected, backward ? "softmax_backward" : "softmax", dname, o.variants),
                               static_cast<double>(tensors) * bytes, launch))
            return 1;
        }
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
  const char* const ops[] = {"bool", "additive", "causal"};
  for (const std::string& name : o.ops)
    if (std::find(std::begin(ops), std::end(ops), name) == std::end(ops)) {
      std::fprintf(stderr, "unknown op %s\n", name.c_str());
      return 2;
    }
  const int64_t batch = 8, heads = 16;
  for (const std::string& dname : dtypes_or(o, {"f16", "bf16", "f32"})) {
    const kgen_dtype_t d = parse_dtype(dname);
    const int e = kgen_dtype_size(d);
    for (int64_t seq : {int64_t{1024}, int64_t{2048}}) {
      const int64_t n = batch * heads * seq * seq;
      const size_t bytes = static_cast<size_t>(n) * e;
      const int sets = run.sets_for(2 * bytes);
      const std::string dims = std::to_string(batch) + "x" + std::to_string(heads) + "x" + std::to_string(seq) +
                               "x" + std::to_string(seq);
      Buffers x_y(sets, bytes, bytes, n, d);
      for (const char* op : ops) {
        if (!wanted(o, op)) continue;
        kgen_softmax_mask_t m{0.125, KGEN_MASK_NONE, nullptr, 1, 1, 1, 0, 0};
        int64_t mask_n = 0;
        int mask_dtype = d;
        std::string shape = dims;
        if (std::strcmp(op, "bool") == 0) {
          m.kind = KGEN_MASK_BOOL;
          m.mask_batch = batch;
          m.mask_queries = seq;
          mask_n = batch * seq * seq;
          mask_dtype = KGEN_BOOL;
          shape += " mask [B,1,S,S]";
        } else if (std::strcmp(op, "additive") == 0) {
          m.kind = KGEN_MASK_ADDITIVE;
          m.mask_queries = seq;
          mask_n = seq * seq;
          shape += " mask [1,1,S,S]";
        } else {
          m.causal = 1;
        }
        const size_t mask_bytes = static_cast<size_t>(mask_n) * (mask_dtype == KGEN_BOOL ? 1 : e);
        const size_t traffic = 2 * bytes + mask_bytes;
        const double copy = copy_row(run, o, dname, shape, traffic / 2, d);
        Buffers mask(sets, std::max<size_t>(mask_bytes, 1), 0, mask_n, static_cast<kgen_dtype_t>(mask_dtype));
        // the mask of set s
        auto with_mask = [&](int s) {
          kgen_softmax_mask_t ms = m;
          if (mask_n) ms.mask = mask.xs[s];
          return ms;
        };
        const kgen_softmax_mask_t m0 = with_mask(0);
        const char* selected = nullptr;
        if (kgen_softmax_masked_selected(d, batch, heads, seq, seq, x_y.xs[0], &m0, x_y.ys[0], &selected) != KGEN_OK) {
          std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
          return 1;
        }
        const Row base{std::string("masked_") + op, dname, shape, "", 0, 0, 0};
        if (!time_candidates(run, o, base, copy, sets, candidates(selected, "softmax", dname, o.variants),
                             static_cast<double>(traffic), [&](const char* v, int s) {
                               const kgen_softmax_mask_t ms = with_mask(s);
                               return kgen_softmax_masked_variant(v, d, batch, heads, seq, seq, x_y.xs[s], &ms,
                                                                  x_y.ys[s], nullptr);
                             }))
          return 1;
      }
    }
  }
  return run.write(o);
}

// The shapes of the reduce family's targets, as (outer, reduce, inner).
struct ReduceCase {
  const char* what;
  int64_t outer, reduce, inner;
};
const ReduceCase kReduceCases[] = {
    {"last dim", 16384, 8192, 1},     {"last dim", 1048576, 128, 1}, {"last dim", 128, 1048576, 1},
    {"whole", 1, int64_t{1} << 28, 1}, {"middle", 64, 4096, 512},
};

int bench_reduce(const Options& o) {
  Run run("reduce", "the input bytes (read x once; the outputs are small)");
  const std::vector<std::string> all = {"sum", "mean", "max", "min", "argmax", "argmin"};
  std::vector<std::string> ops = o.ops.empty() ? std::vector<std::string>{"sum", "max", "argmax"} : o.ops;
  if (ops.size() == 1 && ops[0] == "all") ops = all;
  // a workspace large enough for any variant's split plan on these shapes
  const size_t ws_bytes = size_t{64} << 20;
  void* ws = nullptr;
  CUDA_OK(cudaMalloc(&ws, ws_bytes));
  for (const std::string& dname : dtypes_or(o, {"f32", "f16"})) {
    const kgen_dtype_t d = parse_dtype(dname);
    const int e = kgen_dtype_size(d);
    for (const ReduceCase& c : kReduceCases) {
      const int64_t n = c.outer * c.reduce * c.inner;
      const size_t bytes = static_cast<size_t>(n) * e, out_bytes = static_cast<size_t>(c.outer * c.inner) * 8;
      const int sets = run.sets_for(bytes);
      const std::string shape = "(" + std::to_string(c.outer) + "," + std::to_string(c.reduce) + "," +
                                std::to_string(c.inner) + ")";
      const double copy = copy_row(run, o, dname, shape, bytes, d);
      Buffers b(sets, bytes, out_bytes, n, d);
      for (const std::string& opname : ops) {
        const auto it = std::find(all.begin(), all.end(), opname);
        if (it == all.end()) {
          std::fprintf(stderr, "unknown op %s\n", opname.c_str());
          return 2;
        }
        const auto op = static_cast<kgen_reduce_op_t>(it - all.begin());
        if (op == KGEN_REDUCE_MEAN && d == KGEN_INT32) continue;
        const char* selected = nullptr;
        size_t need = 0;
        if (kgen_reduce_selected(op, d, c.outer, c.reduce, c.inner, b.xs[0], b.ys[0], &selected, &need) != KGEN_OK) {
          std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
          return 1;
        }
        const Row base{opname, dname, shape, "", 0, 0, 0};
        auto hopeless = [&](const std::string& n) {
          return reduce_hopeless(n, c.outer, run.prop.multiProcessorCount);
        };
        if (!time_candidates(run, o, base, copy, sets, candidates(selected, "reduce", dname, o.variants),
                             static_cast<double>(bytes), [&](const char* v, int s) {
                               return kgen_reduce_variant(v, op, d, c.outer, c.reduce, c.inner, b.xs[s],
                                                          b.ys[s], ws, ws_bytes, nullptr);
                             }, hopeless))
          return 1;
      }
    }
  }
  CUDA_OK(cudaFree(ws));
  return run.write(o);
}

// The permute family's targets: dst = src.permute(perm).contiguous().
struct PermuteCase {
  std::vector<int64_t> shape;
  std::vector<int> perm;
};
const PermuteCase kPermuteCases[] = {
    {{8192, 8192}, {1, 0}},
    {{64, 1024, 1024}, {0, 2, 1}},
    {{32, 512, 16, 128}, {0, 2, 1, 3}},
    {{64, 64, 128, 128}, {2, 3, 0, 1}},
    {{8, 16, 16, 16, 16, 64}, {5, 3, 1, 4, 2, 0}},
    {{256, 3, 512, 512}, {0, 2, 3, 1}},
};

int bench_permute(const Options& o) {
  Run run("permute", "2 x tensor bytes (read src once, write dst once)");
  // only the element size matters; the dtype fills the inputs
  for (const std::string& dname : dtypes_or(o, {"f32", "f16"})) {
    const kgen_dtype_t d = parse_dtype(dname);
    const size_t e = static_cast<size_t>(kgen_dtype_size(d));
    for (const PermuteCase& c : kPermuteCases) {
      const int rank = static_cast<int>(c.shape.size());
      int64_t n = 1;
      std::string dims, perm;
      for (int k = 0; k < rank; ++k) {
        n *= c.shape[k];
        dims += (k ? "x" : "") + std::to_string(c.shape[k]);
        perm += (k ? "," : "") + std::to_string(c.perm[k]);
      }
      const size_t bytes = static_cast<size_t>(n) * e;
      const int sets = run.sets_for(bytes);
      const std::string shape = dims + "->" + perm;
      const double copy = copy_row(run, o, dname, shape, bytes, d);
      Buffers b(sets, bytes, bytes, n, d);
      const char* selected = nullptr;
      if (kgen_permute_selected(e, rank, c.shape.data(), c.perm.data(), b.xs[0], b.ys[0], &selected) != KGEN_OK) {
        std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
        return 1;
      }
      const Row base{"permute", dname, shape, "", 0, 0, 0};
      // "copy" (an identity after simplification) is no compiled variant:
      // time it through the selecting call
      if (!time_candidates(run, o, base, copy, sets, candidates(selected, "permute", "", o.variants),
                           2.0 * bytes, [&](const char* v, int s) {
                             return kgen_permute_variant(std::strcmp(v, "copy") == 0 ? nullptr : v, e, rank,
                                                         c.shape.data(), c.perm.data(), b.xs[s], b.ys[s],
                                                         nullptr);
                           }))
        return 1;
    }
  }
  return run.write(o);
}

// The broadcast family's targets: expand (one input: src) and where (cond,
// x, y), each input's shape and the output's.
struct BroadcastCase {
  std::vector<std::vector<int64_t>> in;
  std::vector<int64_t> out;
};
const BroadcastCase kExpandCases[] = {
    {{{4096, 1, 4096}}, {4096, 16, 4096}},
    {{{1, 8192}}, {32768, 8192}},
    {{{64, 1, 1024, 1}}, {64, 64, 1024, 32}},
};
const BroadcastCase kWhereCases[] = {
    {{{8192, 8192}, {8192, 8192}, {8192, 8192}}, {8192, 8192}},
    {{{64, 1, 1, 2048}, {64, 16, 2048, 2048}, {}}, {64, 16, 2048, 2048}},
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string dims_text(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "()";
  std::string t;
  for (size_t k = 0; k < shape.size(); ++k) t += (k ? "x" : "") + std::to_string(shape[k]);
  return t;
}

// expand and where: GB/s over the minimum traffic, against a copy of half
// of it (so that the copy moves as many bytes).
int bench_broadcast(const Options& o, const std::string& family) {
  const bool where = family == "where";
  Run run(family, "the minimum traffic (each input read once, the output written once)");
  for (const std::string& dname : dtypes_or(o, {"f32", "f16"})) {
    const kgen_dtype_t d = parse_dtype(dname);
    const size_t e = static_cast<size_t>(kgen_dtype_size(d));
    const auto& cases = where ? std::vector<BroadcastCase>(std::begin(kWhereCases), std::end(kWhereCases))
                              : std::vector<BroadcastCase>(std::begin(kExpandCases), std::end(kExpandCases));
    for (const BroadcastCase& c : cases) {
      const int inputs = static_cast<int>(c.in.size());
      std::vector<size_t> in_bytes(inputs);
      size_t traffic = numel(c.out) * e;
      std::string shape;
      for (int i = 0; i < inputs; ++i) {
        in_bytes[i] = numel(c.in[i]) * (where && i == 0 ? 1 : e);  // cond: one byte an element
        traffic += in_bytes[i];
        shape += (i ? "," : "") + dims_text(c.in[i]);
      }
      shape += "->" + dims_text(c.out);
      const size_t out_bytes = numel(c.out) * e;
      const int sets = run.sets_for(traffic);
      const double copy = copy_row(run, o, dname, shape, traffic / 2, d);
      // per set: the inputs, then the output
      std::vector<std::vector<void*>> buf(sets, std::vector<void*>(inputs + 1));
      for (int s = 0; s < sets; ++s) {
        for (int i = 0; i < inputs; ++i) {
          CUDA_OK(cudaMalloc(&buf[s][i], std::max<size_t>(in_bytes[i], 1)));
          fill_random<<<1024, 256>>>(buf[s][i], numel(c.in[i]), where && i == 0 ? KGEN_BOOL : d, 99 + 7 * s + i);
          CUDA_OK(cudaGetLastError());
        }
        CUDA_OK(cudaMalloc(&buf[s][inputs], out_bytes));
      }
      const int out_rank = static_cast<int>(c.out.size());
      auto rank = [&](int i) { return static_cast<int>(c.in[i].size()); };
      auto launch = [&](const char* v, int s) {
        const auto& b = buf[s];
        if (!where)
          return kgen_expand_variant(std::strcmp(v, "copy") == 0 ? nullptr : v, d, rank(0), c.in[0].data(),
                                     out_rank, c.out.data(), b[0], b[1], nullptr);
        return kgen_where_variant(v, d, rank(0), c.in[0].data(), rank(1), c.in[1].data(), rank(2),
                                  c.in[2].data(), b[0], b[1], b[2], b[3], nullptr);
      };
      const char* selected = nullptr;
      const kgen_status_t st =
          where ? kgen_where_selected(d, rank(0), c.in[0].data(), rank(1), c.in[1].data(), rank(2),
                                      c.in[2].data(), buf[0][0], buf[0][1], buf[0][2], buf[0][3], &selected)
                : kgen_expand_selected(d, rank(0), c.in[0].data(), out_rank, c.out.data(), buf[0][0],
                                       buf[0][1], &selected);
      if (st != KGEN_OK) {
        std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
        return 1;
      }
      const Row base{family, dname, shape, "", 0, 0, 0};
      const bool ok = time_candidates(run, o, base, copy, sets, candidates(selected, family.c_str(), "", o.variants),
                                      static_cast<double>(traffic), launch);
      for (auto& set : buf)
        for (void* p : set) cudaFree(p);
      if (!ok) return 1;
    }
  }
  return run.write(o);
}

// The top-k family's targets: (batch, n, k) rows of the last dim.
struct TopkCase {
  int64_t batch, n, k;
};
const TopkCase kTopkCases[] = {
    {1, int64_t{1} << 24, 1}, {1, int64_t{1} << 24, 64}, {1, int64_t{1} << 24, 2048}, {1024, 32768, 64},
    {4096, 4096, 32},         {64, 262144, 256},         {16384, 1024, 8},
};

std::string topk_shape(const TopkCase& c) {
  return "(" + std::to_string(c.batch) + "," + std::to_string(c.n) + "," + std::to_string(c.k) + ")";
}

// PyTorch's times from bench/topk_torch.py: lines "dtype,batch,n,k,us".
double torch_time(const std::string& file, const std::string& dname, const TopkCase& c) {
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
  for (const std::string& dname : dtypes_or(o, {"f32", "f16"})) {
    const kgen_dtype_t d = parse_dtype(dname);
    const int e = kgen_dtype_size(d);
    for (const TopkCase& c : kTopkCases) {
      const int64_t n = c.batch * c.n;
      const size_t bytes = static_cast<size_t>(n) * e;
      // values, then the indices from the next 256-byte boundary
      const size_t idx_at = (static_cast<size_t>(c.batch * c.k) * e + 255) / 256 * 256;
      const size_t out_bytes = idx_at + static_cast<size_t>(c.batch * c.k) * 8;
      const int sets = run.sets_for(bytes);
      const std::string shape = topk_shape(c);
      const double copy = copy_row(run, o, dname, shape, bytes, d);
      Buffers b(sets, bytes, out_bytes, n, d);
      const char* selected = nullptr;
      if (kgen_topk_selected(d, c.batch, c.n, c.k, 1, 1, b.xs[0], &selected) != KGEN_OK) {
        std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
        return 1;
      }
      // one workspace, the largest any variant needs here
      size_t ws_bytes = 0;
      for (const std::string& v : candidates(selected, "topk", dname, true)) {
        size_t need = 0;
        if (kgen_topk_workspace_size(v.c_str(), d, c.batch, c.n, c.k, 1, 1, b.xs[0], &need) == KGEN_OK)
          ws_bytes = std::max(ws_bytes, need);
      }
      void* ws = nullptr;
      CUDA_OK(cudaMalloc(&ws, std::max<size_t>(ws_bytes, 1)));
      Row base{"topk", dname, shape, "", 0, 0, 0};
      base.torch_us = torch_time(o.torch, dname, c);
      auto hopeless = [&](const std::string& v) { return topk_hopeless(v, c.batch, c.n); };
      const bool ok = time_candidates(
          run, o, base, copy, sets, candidates(selected, "topk", dname, o.variants), static_cast<double>(bytes),
          [&](const char* v, int s) {
            return kgen_topk_variant(v, d, c.batch, c.n, c.k, 1, 1, b.xs[s], b.ys[s],
                                     reinterpret_cast<int64_t*>(static_cast<char*>(b.ys[s]) + idx_at),
                                     ws, ws_bytes, nullptr);
          },
          hopeless);
      CUDA_OK(cudaFree(ws));
      if (!ok) return 1;
    }
  }
  return run.write(o);
}

int usage() {
  std::fprintf(stderr,
               "usage: kgen-bench softmax [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]\n"
               "                          [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench softmax_backward [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]\n"
               "                          [--reps 30] [--variants] [--md FILE] [--csv FILE]\n"
               "       kgen-bench softmax_dim [--dtypes f32,f16,bf16]\n"
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
               "       kgen-bench topk    [--dtypes f32,f16] [--torch TIMES.csv] [--reps 30] [--variants]\n"
               "                          [--md FILE] [--csv FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string family = argv[1];
  if (family != "softmax" && family != "softmax_backward" && family != "softmax_dim" &&
      family != "softmax_masked" && family != "reduce" && family != "permute" && family != "expand" &&
      family != "where" && family != "topk")
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
    else if (a == "--reps") o.reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--variants") o.variants = true;
    else if (a == "--md") o.md = next();
    else if (a == "--csv") o.csv = next();
    else if (a == "--torch") o.torch = next();
    else return usage();
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "kgen-bench: no CUDA device\n");
    return 77;
  }
  if (family == "softmax") return bench_softmax(o);
  if (family == "softmax_backward") return bench_softmax_backward(o);
  if (family == "softmax_dim") return bench_softmax_dim(o);
  if (family == "softmax_masked") return bench_softmax_masked(o);
  if (family == "reduce") return bench_reduce(o);
  if (family == "permute") return bench_permute(o);
  if (family == "topk") return bench_topk(o);
  return bench_broadcast(o, family);
}
