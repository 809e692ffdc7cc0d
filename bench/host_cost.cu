// kgen-bench host: the host (CPU) time of one call of each family's C entry
// point on a tiny tensor, beside the launch floor measured in the same run:
// an empty kernel launch and a cudaMemsetAsync.  Each call is enqueued on
// one stream `calls` times in a row, timed by the wall clock, the stream
// synchronized after the batch (untimed); the median of `batches` batches
// is reported, in us a call.  A batch stays under the launch queue's depth
// (about a thousand launches): in batches of 20000 the host waited for the
// GPU to retire tiny kernels, and the empty launch measured 4.4 us a call
// against 1.2 for a cudaMemsetAsync (H200), the GPU's rate, not the host's.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "harness.cuh"
#include "host_cost.hpp"
#include "kgen/kgen.h"

namespace {

__global__ void empty_kernel() {}

struct Cost {
  std::string what;
  double us;        // median host time a call
  kgen_status_t status;  // of the first call (KGEN_OK for the floor)
  std::string error;     // kgen_last_error() after a first call that failed
};

// Median us a call of `call` over `batches` batches of `calls` calls.
double time_calls(const std::function<int()>& call, cudaStream_t stream, int calls, int batches, int* first) {
  *first = call();
  CUDA_OK(cudaStreamSynchronize(stream));
  for (int i = 0; i < 100; ++i) call();  // warm: selection caches, pools, the driver
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<double> per;
  for (int b = 0; b < batches; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    CUDA_OK(cudaStreamSynchronize(stream));
    per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

}  // namespace

int bench_host(int calls, int batches, const std::string& md) {
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const auto stream = reinterpret_cast<kgen_stream_t>(st);
  // tiny tensors: 4 x 64 float32 (1 KB), a bool mask, int64 indices
  void *x, *y, *dy, *dx, *mask, *out, *topk_ws = nullptr;
  int64_t* idx;
  CUDA_OK(cudaMalloc(&x, 1 << 16));
  CUDA_OK(cudaMalloc(&y, 1 << 16));
  CUDA_OK(cudaMalloc(&dy, 1 << 16));
  CUDA_OK(cudaMalloc(&dx, 1 << 16));
  CUDA_OK(cudaMalloc(&mask, 1 << 16));
  CUDA_OK(cudaMalloc(&out, 1 << 16));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&idx), 1 << 16));
  fill_random<<<8, 256>>>(x, 256, KGEN_FLOAT32, 1);
  fill_random<<<8, 256>>>(dy, 256, KGEN_FLOAT32, 2);
  CUDA_OK(cudaMemset(mask, 1, 1 << 16));
  CUDA_OK(cudaDeviceSynchronize());
  // top-k's workspace, sized once as a caller would
  size_t topk_bytes = 0;
  if (kgen_topk_workspace_size(nullptr, KGEN_FLOAT32, 4, 64, 4, 1, 1, x, &topk_bytes) != KGEN_OK) {
    std::fprintf(stderr, "kgen_topk_workspace_size: %s\n", kgen_last_error());
    return 1;
  }
  if (topk_bytes) CUDA_OK(cudaMalloc(&topk_ws, topk_bytes));

  const int64_t shape2[2] = {16, 16}, shape_row[2] = {1, 16}, shape4[4] = {2, 2, 8, 8};
  const int perm2[2] = {1, 0};
  kgen_softmax_mask_t m{};
  m.scale = 0.5;
  m.kind = KGEN_MASK_BOOL;
  m.mask = mask;
  m.mask_batch = 1;
  m.mask_heads = 1;
  m.mask_queries = 8;
  const std::vector<std::pair<std::string, std::function<int()>>> cases = {
      {"empty kernel launch", [&] { empty_kernel<<<1, 32, 0, st>>>(); return static_cast<int>(cudaGetLastError()); }},
      {"cudaMemsetAsync 1 KB", [&] { return static_cast<int>(cudaMemsetAsync(out, 0, 1024, st)); }},
      {"softmax 4x64 f32", [&] { return static_cast<int>(kgen_softmax(KGEN_FLOAT32, 4, 64, x, y, stream)); }},
      {"log_softmax dim 1 of 4x8x8 f32",
       [&] { return static_cast<int>(kgen_softmax_dim(1, KGEN_FLOAT32, 4, 8, 8, x, y, stream)); }},
      {"softmax_backward 4x64 f32",
       [&] { return static_cast<int>(kgen_softmax_backward(KGEN_FLOAT32, 4, 64, x, dy, dx, stream)); }},
      {"softmax_masked 2x2x8x8 f32 bool",
       [&] { return static_cast<int>(kgen_softmax_masked(KGEN_FLOAT32, 2, 2, 8, 8, x, &m, y, stream)); }},
      {"reduce sum 4x64 f32",
       [&] { return static_cast<int>(kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, 4, 64, 1, x, out, stream)); }},
      {"reduce argmax 4x64 f32",
       [&] { return static_cast<int>(kgen_reduce(KGEN_REDUCE_ARGMAX, KGEN_FLOAT32, 4, 64, 1, x, out, stream)); }},
      {"topk k 4 of 4x64 f32", [&] {
         return static_cast<int>(kgen_topk(KGEN_FLOAT32, 4, 64, 4, 1, 1, x, y, idx, topk_ws, topk_bytes, stream));
       }},
      {"permute 16x16 f32 (1, 0)",
       [&] { return static_cast<int>(kgen_permute(4, 2, shape2, perm2, x, y, stream)); }},
      {"expand 1x16 -> 16x16 f32",
       [&] { return static_cast<int>(kgen_expand(KGEN_FLOAT32, 2, shape_row, 2, shape2, x, y, stream)); }},
      {"where 2x2x8x8 f32", [&] {
         return static_cast<int>(kgen_where(KGEN_FLOAT32, 4, shape4, 4, shape4, 4, shape4, mask, x, dy, y, stream));
       }},
  };
  std::vector<Cost> costs;
  for (const auto& c : cases) {
    int first = 0;
    const double us = time_calls(c.second, st, calls, batches, &first);
    costs.push_back(Cost{c.first, us, static_cast<kgen_status_t>(first), first ? kgen_last_error() : ""});
  }
  const double floor = costs[0].us;
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::string text = "# kgen-bench host\n\nGPU: " + std::string(prop.name) + "; " + std::to_string(calls) +
                     " calls a batch, median of " + std::to_string(batches) +
                     " batches; host wall time a call (us), and above an empty kernel launch.\n\n"
                     "| call | us | above the empty launch | status |\n|---|---:|---:|---|\n";
  int failed = 0;
  for (const Cost& c : costs) {
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %.2f | %+.2f | %s |\n", c.what.c_str(), c.us, c.us - floor,
                  c.status == KGEN_OK ? "ok" : kgen_status_string(c.status));
    text += line;
    failed += c.status != KGEN_OK;
    if (c.status != KGEN_OK) std::fprintf(stderr, "%s: %s\n", c.what.c_str(), c.error.c_str());
  }
  std::fputs(text.c_str(), stdout);
  if (!md.empty()) {
    if (FILE* f = std::fopen(md.c_str(), "w")) {
      std::fputs(text.c_str(), f);
      std::fclose(f);
    }
  }
  for (void* p : {x, y, dy, dx, mask, out, static_cast<void*>(idx), topk_ws}) CUDA_OK(cudaFree(p));
  CUDA_OK(cudaStreamDestroy(st));
  return failed ? 1 : 0;
}
