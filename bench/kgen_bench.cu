// kgen-bench: times kgen's kernels against a device-to-device copy measured
// in the same run.
//
//   kgen-bench softmax [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]
//                      [--reps 30] [--variants] [--md FILE] [--csv FILE]
//
// Each case: warm-up, then `reps` launches each timed with CUDA events; the
// median is reported.  Inputs are at least 4x the L2 (rotated between sets of
// buffers when one set is smaller).  GB/s counts the minimum traffic (each
// input read once, each output written once); % of copy divides it by the
// GB/s of cudaMemcpyAsync device-to-device over the same bytes, timed the
// same way.  --variants also times every compiled variant that supports the
// case, so the heuristic's pick can be compared with the fastest.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "kgen/kgen.h"

namespace {

#define CUDA_OK(expr)                                                               \
  do {                                                                              \
    cudaError_t e_ = (expr);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

struct Options {
  std::vector<std::string> dtypes = {"f32", "f16", "bf16"};
  std::vector<int64_t> cols = {32, 128, 500, 1024, 2048, 4096, 8192, 32768, 131072, 1048576};
  double mib = 512;
  int reps = 30;
  bool variants = false;
  std::string md, csv;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

kgen_dtype_t parse_dtype(const std::string& s) {
  if (s == "f32") return KGEN_FLOAT32;
  if (s == "f16") return KGEN_FLOAT16;
  if (s == "bf16") return KGEN_BFLOAT16;
  if (s == "f64") return KGEN_FLOAT64;
  std::fprintf(stderr, "unknown dtype %s\n", s.c_str());
  std::exit(2);
}

// Deterministic pseudo-random fill: sums of three uniforms, about [-6, 6].

__device__ float hash_uniform(uint64_t i, uint64_t seed) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (z >> 40) * (1.0f / 16777216.0f);
}

__global__ void fill_random(void* p, int64_t n, int dtype, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const float v = (hash_uniform(i, seed) + hash_uniform(i + n, seed) + hash_uniform(i + 2 * n, seed) - 1.5f) * 4.0f;
    switch (dtype) {
      case KGEN_FLOAT32: static_cast<float*>(p)[i] = v; break;
      case KGEN_FLOAT64: static_cast<double*>(p)[i] = v; break;
      case KGEN_FLOAT16: static_cast<uint16_t*>(p)[i] = __half_as_ushort(__float2half_rn(v)); break;
      case KGEN_BFLOAT16: {
        uint32_t bits = __float_as_uint(v);
        bits += 0x7FFFu + ((bits >> 16) & 1u);
        static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(bits >> 16);
        break;
      }
    }
  }
}

// Median of `reps` event-timed runs of fn(set) after warm-up; sets rotate.
double median_us(int reps, int sets, const std::function<void(int)>& fn) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) fn(i % sets);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) {
    CUDA_OK(cudaEventRecord(a));
    fn(i % sets);
    CUDA_OK(cudaEventRecord(b));
    CUDA_OK(cudaEventSynchronize(b));
    CUDA_OK(cudaEventElapsedTime(&ms[i], a, b));
  }
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2] * 1000.0;
}

struct Row {
  std::string op, dtype, variant;
  int64_t rows, cols;
  double us, gbps, pct_copy;
};

std::string commit() {
  const char* c = std::getenv("KGEN_COMMIT");
  return c && *c ? c : "unknown";
}

int bench_softmax(const Options& o) {
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("# kgen-bench softmax\n# GPU: %s (%d SMs, L2 %d MiB), %s, commit %s, kgen %s %s level %s\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, date, commit().c_str(),
              kgen_version(), kgen_build_arch(), kgen_build_level());
  std::printf("# median of %d runs; GB/s over 2 x tensor bytes (read x, write y); %% of a D2D copy of the same bytes\n",
              o.reps);
  std::printf("%-12s %-5s %9s %8s %10s %8s %7s  %s\n", "op", "dtype", "rows", "cols", "us", "GB/s",
              "%copy", "variant");
  std::vector<Row> results;
  for (const std::string& dname : o.dtypes) {
    const kgen_dtype_t d = parse_dtype(dname);
    const int e = kgen_dtype_size(d);
    for (int64_t cols : o.cols) {
      const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(o.mib * 1048576.0 / (cols * e)));
      const size_t bytes = static_cast<size_t>(rows * cols * e);
      const int sets = static_cast<int>(std::max<size_t>(1, (4 * static_cast<size_t>(prop.l2CacheSize) + bytes - 1) / bytes));
      std::vector<void*> xs(sets), ys(sets);
      for (int s = 0; s < sets; ++s) {
        CUDA_OK(cudaMalloc(&xs[s], bytes));
        CUDA_OK(cudaMalloc(&ys[s], bytes));
        fill_random<<<1024, 256>>>(xs[s], rows * cols, d, 1234 + s);
        CUDA_OK(cudaGetLastError());
      }
      const double copy_us = median_us(o.reps, sets, [&](int s) {
        CUDA_OK(cudaMemcpyAsync(ys[s], xs[s], bytes, cudaMemcpyDeviceToDevice));
      });
      const double copy_gbps = 2.0 * bytes / copy_us / 1e3;
      results.push_back({"copy", dname, "cudaMemcpyAsync", rows, cols, copy_us, copy_gbps, 100.0});
      std::printf("%-12s %-5s %9lld %8lld %10.1f %8.0f %6.1f%%  %s\n", "copy", dname.c_str(),
                  (long long)rows, (long long)cols, copy_us, copy_gbps, 100.0, "cudaMemcpyAsync");
      for (int log = 0; log < 2; ++log) {
        const char* op = log ? "log_softmax" : "softmax";
        std::vector<std::string> names;
        const char* selected = nullptr;
        if (kgen_softmax_selected(log, d, rows, cols, xs[0], ys[0], &selected) != KGEN_OK) {
          std::fprintf(stderr, "selection failed: %s\n", kgen_last_error());
          return 1;
        }
        names.push_back(selected);
        if (o.variants)
          for (int64_t i = 0; i < kgen_variant_count(); ++i) {
            const std::string n = kgen_variant_name(i);
            if (n != selected && n.find(std::string("_") + dname + "_") != std::string::npos &&
                std::string(kgen_variant_family(i)) == "softmax")
              names.push_back(n);
          }
        double best_us = 1e30;
        std::string best;
        for (size_t k = 0; k < names.size(); ++k) {
          const char* v = names[k].c_str();
          kgen_status_t st = kgen_softmax_variant(v, log, d, rows, cols, xs[0], ys[0], nullptr);
          if (st == KGEN_ERROR_UNSUPPORTED) continue;
          if (st != KGEN_OK) {
            std::fprintf(stderr, "%s failed: %s\n", v, kgen_last_error());
            return 1;
          }
          const double us = median_us(o.reps, sets, [&](int s) {
            if (kgen_softmax_variant(v, log, d, rows, cols, xs[s], ys[s], nullptr) != KGEN_OK) {
              std::fprintf(stderr, "%s failed: %s\n", v, kgen_last_error());
              std::exit(1);
            }
          });
          const double gbps = 2.0 * bytes / us / 1e3;
          const std::string label = k == 0 ? std::string(v) + " (selected)" : std::string(v);
          if (k == 0 || o.variants) {
            if (k == 0) results.push_back({op, dname, v, rows, cols, us, gbps, 100.0 * gbps / copy_gbps});
            if (k == 0 || !o.variants)
              std::printf("%-12s %-5s %9lld %8lld %10.1f %8.0f %6.1f%%  %s\n", op, dname.c_str(),
                          (long long)rows, (long long)cols, us, gbps, 100.0 * gbps / copy_gbps, label.c_str());
          }
          if (us < best_us) best_us = us, best = v;
        }
        if (o.variants)
          std::printf("%-12s %-5s %9lld %8lld %10.1f %8.0f %6.1f%%  %s (fastest of %zu)\n", op,
                      dname.c_str(), (long long)rows, (long long)cols, best_us,
                      2.0 * bytes / best_us / 1e3, 100.0 * (2.0 * bytes / best_us / 1e3) / copy_gbps,
                      best.c_str(), names.size());
      }
      for (int s = 0; s < sets; ++s) {
        CUDA_OK(cudaFree(xs[s]));
        CUDA_OK(cudaFree(ys[s]));
      }
    }
  }
  if (!o.md.empty()) {
    FILE* f = std::fopen(o.md.c_str(), "w");
    if (!f) { std::perror(o.md.c_str()); return 1; }
    std::fprintf(f, "# kgen-bench softmax\n\nGPU: %s (%d SMs), %s, commit %s, kgen %s, %s, level %s.\n"
                 "Median of %d event-timed runs; GB/s over the minimum traffic (read x + write y);\n"
                 "%% of copy = that over a cudaMemcpyAsync device-to-device copy of the same bytes in the same run.\n\n",
                 prop.name, prop.multiProcessorCount, date, commit().c_str(), kgen_version(),
                 kgen_build_arch(), kgen_build_level(), o.reps);
    std::fprintf(f, "| op | dtype | rows | cols | us | GB/s | %% of copy | variant |\n|---|---|---:|---:|---:|---:|---:|---|\n");
    for (const Row& r : results)
      std::fprintf(f, "| %s | %s | %lld | %lld | %.1f | %.0f | %.1f | %s |\n", r.op.c_str(), r.dtype.c_str(),
                   (long long)r.rows, (long long)r.cols, r.us, r.gbps, r.pct_copy, r.variant.c_str());
    std::fclose(f);
  }
  if (!o.csv.empty()) {
    FILE* f = std::fopen(o.csv.c_str(), "w");
    if (!f) { std::perror(o.csv.c_str()); return 1; }
    std::fprintf(f, "gpu,commit,op,dtype,rows,cols,us,gbps,pct_copy,variant\n");
    for (const Row& r : results)
      std::fprintf(f, "%s,%s,%s,%s,%lld,%lld,%.2f,%.1f,%.2f,%s\n", prop.name, commit().c_str(), r.op.c_str(),
                   r.dtype.c_str(), (long long)r.rows, (long long)r.cols, r.us, r.gbps, r.pct_copy, r.variant.c_str());
    std::fclose(f);
  }
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: kgen-bench softmax [--dtypes f32,f16,bf16] [--cols 32,128,...] [--mib 512]\n"
               "                          [--reps 30] [--variants] [--md FILE] [--csv FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "softmax") return usage();
  Options o;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { usage(); std::exit(2); }
      return argv[++i];
    };
    if (a == "--dtypes") o.dtypes = split(next());
    else if (a == "--cols") { o.cols.clear(); for (auto& c : split(next())) o.cols.push_back(std::atoll(c.c_str())); }
    else if (a == "--mib") o.mib = std::atof(next().c_str());
    else if (a == "--reps") o.reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--variants") o.variants = true;
    else if (a == "--md") o.md = next();
    else if (a == "--csv") o.csv = next();
    else return usage();
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "kgen-bench: no CUDA device\n");
    return 77;
  }
  return bench_softmax(o);
}
