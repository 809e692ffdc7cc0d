// CUDA failures reach the caller as a status with CUDA's own message, never
// as a crash, an abort or a false success.  A process of its own, since the
// last part ruins the CUDA context for good:
//   1. every entry point runs once on a live stream (the control: each call
//      below is valid, so an error later comes from CUDA alone), and again
//      right after a failed CUDA call of the caller's (an error CUDA keeps
//      pending until asked is not the library's)
//   2. a bad stream: one whose graph capture was invalidated (a query on it
//      while capturing, as a careless caller makes).  Every entry point
//      returns KGEN_ERROR_CUDA naming CUDA's capture error; once the capture
//      is ended the same calls succeed again (nothing stale is kept)
//   3. a kernel of this program traps, which leaves a sticky error in the
//      context: every entry point returns KGEN_ERROR_CUDA with the message of
//      the error the synchronization reported
// A destroyed stream is not among the bad streams: using one is undefined in
// CUDA itself (see check_stream in runtime/src/device.hpp).  On an H100 with
// CUDA 13 the first query on it, cudaStreamIsCapturing, died with SIGSEGV in
// some processes and returned cudaErrorContextIsDestroyed in others (which
// every entry point then reported as KGEN_ERROR_CUDA).
// `kgen-cuda-error-tests --destroyed-stream` runs every entry point on one
// anyway, to see what a given driver does.
// Prints "N checks passed" and exits 0, or lists the failures and exits 1;
// exits 77 without a device (meson: SKIP).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kgen/kgen.h"

namespace {

__global__ void trap_kernel() { __trap(); }

struct Checks {
  int passed = 0, failed = 0;
  void expect(bool ok, const std::string& what) {
    if (ok) {
      ++passed;
      return;
    }
    ++failed;
    std::printf("FAILED: %s\n", what.c_str());
  }
};

Checks checks;

bool contains(const char* text, const char* part) { return text && part && std::strstr(text, part) != nullptr; }

// Allocations of the calls below, freed at exit (never after part 3: freeing
// in a broken context would report errors of its own).
void* device_alloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  checks.expect(err == cudaSuccess, std::string("cudaMalloc: ") + cudaGetErrorString(err));
  if (err == cudaSuccess) cudaMemset(p, 0, bytes);
  return p;
}

struct Entry {
  std::string name;
  std::function<kgen_status_t(cudaStream_t)> call;
};

// One valid call of every family's entry point, covering the paths that
// reach CUDA differently: kernels of each tier, a plain copy (permute and
// expand without movement), a reduction split across blocks (a workspace from
// cudaMallocAsync) and the multi-block top-k (a caller's workspace).
std::vector<Entry> entries() {
  const int64_t rows = 64, cols = 1024, n = rows * cols;
  const int64_t outer = 4, axis = 100, inner = 16;
  const int64_t long_row = int64_t{1} << 20;
  void* x = device_alloc(n * 4);
  void* y = device_alloc(n * 4);
  void* dy = device_alloc(n * 4);
  void* dx = device_alloc(n * 4);
  void* cond = device_alloc(n);
  void* out = device_alloc(n * 8);
  void* big = device_alloc(2 * long_row * 4);  // two long rows
  static kgen_softmax_mask_t mask{};
  mask = kgen_softmax_mask_t{0.5, KGEN_MASK_BOOL, cond, 1, 1, 32, 1, 0};
  static const int64_t shape2[] = {rows, cols}, column[] = {rows, 1}, shape3[] = {rows, 1, cols};
  static const int transpose[] = {1, 0}, identity3[] = {0, 1, 2};
  static size_t topk_ws = 0, topk_big_ws = 0;
  kgen_topk_workspace_size(nullptr, KGEN_FLOAT32, 4, 10000, 10, 1, 1, x, &topk_ws);
  kgen_topk_workspace_size(nullptr, KGEN_FLOAT32, 2, long_row, 1000, 1, 1, big, &topk_big_ws);
  void* ws = device_alloc(topk_ws + 16);
  void* big_ws = device_alloc(topk_big_ws + 16);
  int64_t* idx = static_cast<int64_t*>(device_alloc(2 * 1000 * 8));
  return {
      {"kgen_softmax", [=](cudaStream_t s) { return kgen_softmax(KGEN_FLOAT32, rows, cols, x, y, s); }},
      {"kgen_log_softmax", [=](cudaStream_t s) { return kgen_log_softmax(KGEN_FLOAT16, rows, cols, x, y, s); }},
      {"kgen_softmax_variant",
       [=](cudaStream_t s) { return kgen_softmax_variant(nullptr, 0, KGEN_BFLOAT16, rows, cols, x, y, s); }},
      {"kgen_softmax_dim",
       [=](cudaStream_t s) { return kgen_softmax_dim(1, KGEN_FLOAT32, outer, axis, inner, x, y, s); }},
      {"kgen_softmax_backward",
       [=](cudaStream_t s) { return kgen_softmax_backward(KGEN_FLOAT32, rows, cols, y, dy, dx, s); }},
      {"kgen_log_softmax_backward",
       [=](cudaStream_t s) { return kgen_log_softmax_backward(KGEN_FLOAT64, rows / 2, cols, y, dy, dx, s); }},
      {"kgen_softmax_backward_dim",
       [=](cudaStream_t s) {
         return kgen_softmax_backward_dim(0, KGEN_FLOAT32, outer, axis, inner, y, dy, dx, s);
       }},
      {"kgen_softmax_masked",
       [=](cudaStream_t s) { return kgen_softmax_masked(KGEN_FLOAT32, 1, 2, 32, 64, x, &mask, y, s); }},
      {"kgen_reduce (rows)",
       [=](cudaStream_t s) { return kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, rows, cols, 1, x, out, s); }},
      {"kgen_reduce (a middle axis)",
       [=](cudaStream_t s) { return kgen_reduce(KGEN_REDUCE_ARGMAX, KGEN_FLOAT16, outer, axis, inner, x, out, s); }},
      {"kgen_softmax (two long rows in place: split, workspace from the library's pool)",
       [=](cudaStream_t s) { return kgen_softmax(KGEN_FLOAT32, 2, long_row, big, big, s); }},
      {"kgen_reduce (two long rows: split, workspace from the library's pool)",
       [=](cudaStream_t s) { return kgen_reduce(KGEN_REDUCE_SUM, KGEN_FLOAT32, 2, long_row, 1, big, out, s); }},
      {"kgen_permute (transpose)",
       [=](cudaStream_t s) { return kgen_permute(4, 2, shape2, transpose, x, y, s); }},
      {"kgen_permute (identity: a copy)",
       [=](cudaStream_t s) { return kgen_permute(4, 3, shape3, identity3, x, y, s); }},
      {"kgen_expand (a broadcast)",
       [=](cudaStream_t s) { return kgen_expand(KGEN_FLOAT32, 2, column, 2, shape2, x, y, s); }},
      {"kgen_expand (no broadcast: a copy)",
       [=](cudaStream_t s) { return kgen_expand(KGEN_FLOAT16, 2, shape2, 2, shape2, x, y, s); }},
      {"kgen_where",
       [=](cudaStream_t s) {
         return kgen_where(KGEN_FLOAT32, 2, column, 2, shape2, 0, nullptr, cond, x, dy, y, s);
       }},
      {"kgen_topk",
       [=](cudaStream_t s) {
         return kgen_topk(KGEN_FLOAT32, 4, 10000, 10, 1, 1, x, y, idx, topk_ws ? ws : nullptr, topk_ws, s);
       }},
      {"kgen_topk (long rows: multi-block)",
       [=](cudaStream_t s) {
         return kgen_topk(KGEN_FLOAT32, 2, long_row, 1000, 1, 1, big, out, idx, topk_big_ws ? big_ws : nullptr,
                          topk_big_ws, s);
       }},
  };
}

std::string describe(const Entry& e, kgen_status_t st) {
  return e.name + ": " + kgen_status_string(st) + " '" + kgen_last_error() + "'";
}

// Every call succeeds on a live stream, and the stream then holds no error.
void expect_all_succeed(const std::vector<Entry>& calls, cudaStream_t s, const char* when) {
  for (const Entry& e : calls) {
    const kgen_status_t st = e.call(s);
    checks.expect(st == KGEN_OK && kgen_last_error()[0] == '\0', std::string(when) + ": " + describe(e, st));
  }
  const cudaError_t err = cudaStreamSynchronize(s);
  checks.expect(err == cudaSuccess, std::string(when) + ": the calls' kernels: " + cudaGetErrorString(err));
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a crash still leaves the lines before it
  int count = 0;
  const cudaError_t probe = cudaGetDeviceCount(&count);
  if (probe != cudaSuccess || count == 0) {
    std::printf("no CUDA device (%s): skipping the CUDA error tests\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return 77;
  }
  cudaStream_t live = nullptr;
  if (cudaStreamCreateWithFlags(&live, cudaStreamNonBlocking) != cudaSuccess) {
    std::printf("FAILED: cannot create a stream\n");
    return 1;
  }
  const std::vector<Entry> calls = entries();
  if (argc > 1 && std::strcmp(argv[1], "--destroyed-stream") == 0) {
    // what the driver does with a destroyed stream: undefined in CUDA, reported only
    cudaStream_t dead = nullptr;
    cudaStreamCreateWithFlags(&dead, cudaStreamNonBlocking);
    cudaStreamDestroy(dead);
    for (const Entry& e : calls) {
      std::printf("%s on a destroyed stream: ", e.name.c_str());
      std::fflush(stdout);  // the call may crash
      const kgen_status_t st = e.call(dead);
      std::printf("%s '%s'\n", kgen_status_string(st), kgen_last_error());
    }
    return 0;
  }

  // 1. the control
  expect_all_succeed(calls, live, "on a live stream");
  expect_all_succeed(calls, nullptr, "on the legacy default stream");
  for (const Entry& e : calls) {
    void* p = nullptr;
    const cudaError_t failed = cudaMalloc(&p, ~size_t{0} / 2);  // the caller's error, left pending
    checks.expect(failed != cudaSuccess, "a cudaMalloc of half the address space fails");
    const kgen_status_t st = e.call(live);
    checks.expect(st == KGEN_OK, "after a failed cudaMalloc of the caller's: " + describe(e, st));
  }
  checks.expect(cudaStreamSynchronize(live) == cudaSuccess, "after the caller's failed calls: the kernels");

  // 2. a stream whose capture is invalidated
  cudaStream_t capture = nullptr;
  checks.expect(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking) == cudaSuccess, "a second stream");
  checks.expect(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal) == cudaSuccess, "begin capture");
  checks.expect(cudaStreamQuery(capture) != cudaSuccess, "a query while capturing is refused");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(capture, &status);
  checks.expect(status == cudaStreamCaptureStatusInvalidated, "the query invalidated the capture");
  for (const Entry& e : calls) {
    const kgen_status_t st = e.call(capture);
    checks.expect(st == KGEN_ERROR_CUDA && contains(kgen_last_error(), "cudaErrorStreamCapture"),
                  "invalidated capture: " + describe(e, st));
  }
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(capture, &graph);  // fails: the capture was invalidated
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // the capture's errors are not sticky
  expect_all_succeed(calls, capture, "on the stream once its capture ended");
  expect_all_succeed(calls, live, "on a live stream after the invalidated capture");

  // 3. a sticky error
  trap_kernel<<<1, 1, 0, live>>>();
  const cudaError_t sticky = cudaStreamSynchronize(live);
  std::printf("the trap gave %s: %s\n", cudaGetErrorName(sticky), cudaGetErrorString(sticky));
  checks.expect(sticky != cudaSuccess, "the trapping kernel reported no error");
  if (sticky != cudaSuccess) {
    const char* text = cudaGetErrorString(sticky);
    for (cudaStream_t s : {live, static_cast<cudaStream_t>(nullptr)})
      for (const Entry& e : calls) {
        const kgen_status_t st = e.call(s);
        const std::string where = s ? "after the trap, live stream: " : "after the trap, default stream: ";
        checks.expect(st == KGEN_ERROR_CUDA && contains(kgen_last_error(), text), where + describe(e, st));
      }
  }

  if (checks.failed) {
    std::printf("%d of %d checks failed\n", checks.failed, checks.passed + checks.failed);
    return 1;
  }
  std::printf("%d checks passed\n", checks.passed);
  return 0;
}
