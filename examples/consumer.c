/* A program that uses kgen as any consumer would: built against the installed
 * library with nothing but `pkg-config --cflags --libs kgen` (see Makefile). */
#include <math.h>
#include <stdio.h>

#include <cuda_runtime_api.h>
#include <kgen/kgen.h>

enum { ROWS = 4, COLS = 10 };

int main(void) {
  printf("kgen %s (%s, level %s): %lld variants compiled in\n", kgen_version(), kgen_build_arch(),
         kgen_build_level(), (long long)kgen_variant_count());

  /* Bad input is a status and a message naming the argument, never a crash. */
  kgen_status_t s = kgen_softmax(KGEN_FLOAT32, -1, COLS, NULL, NULL, NULL);
  printf("softmax with rows = -1: %s: %s\n", kgen_status_string(s), kgen_last_error());

  float host[ROWS * COLS], out[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; ++i) host[i] = (float)((i * 37) % 11) - 5.0f;
  float *x = NULL, *y = NULL;
  cudaError_t err = cudaMalloc((void**)&x, sizeof host);
  if (err != cudaSuccess) {
    printf("no usable GPU (%s): the demo stops here\n", cudaGetErrorString(err));
    return 0;
  }
  if (cudaMalloc((void**)&y, sizeof host) != cudaSuccess ||
      cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice) != cudaSuccess) {
    printf("CUDA setup failed\n");
    return 1;
  }
  const char* variant = "";
  kgen_softmax_selected(0, KGEN_FLOAT32, ROWS, COLS, x, y, &variant);
  s = kgen_softmax(KGEN_FLOAT32, ROWS, COLS, x, y, NULL);
  if (s != KGEN_OK || cudaMemcpy(out, y, sizeof out, cudaMemcpyDeviceToHost) != cudaSuccess) {
    printf("softmax failed: %s\n", kgen_last_error());
    return 1;
  }
  printf("softmax of a %dx%d float32 matrix with %s:\n", ROWS, COLS, variant);
  int ok = 1;
  for (int r = 0; r < ROWS; ++r) {
    double sum = 0, max = -INFINITY, ref_sum = 0;
    for (int c = 0; c < COLS; ++c) max = fmax(max, host[r * COLS + c]);
    for (int c = 0; c < COLS; ++c) ref_sum += exp(host[r * COLS + c] - max);
    for (int c = 0; c < COLS; ++c) {
      const double ref = exp(host[r * COLS + c] - max) / ref_sum;
      ok &= fabs(out[r * COLS + c] - ref) < 1e-6;
      sum += out[r * COLS + c];
      printf(" %.4f", out[r * COLS + c]);
    }
    printf("   (row sum %.6f)\n", sum);
  }
  /* argmax over each row: int64 indices, the first maximum on ties */
  int64_t idx[ROWS];
  s = kgen_reduce(KGEN_REDUCE_ARGMAX, KGEN_FLOAT32, ROWS, COLS, 1, x, y, NULL);
  if (s != KGEN_OK || cudaMemcpy(idx, y, sizeof idx, cudaMemcpyDeviceToHost) != cudaSuccess) {
    printf("argmax failed: %s\n", kgen_last_error());
    return 1;
  }
  printf("argmax of each row:");
  for (int r = 0; r < ROWS; ++r) {
    int first = 0;
    for (int c = 1; c < COLS; ++c)
      if (host[r * COLS + c] > host[r * COLS + first]) first = c;
    ok &= idx[r] == first;
    printf(" %lld", (long long)idx[r]);
  }
  printf("\n");
  /* transpose: (ROWS, COLS) -> (COLS, ROWS) */
  const int64_t shape[2] = {ROWS, COLS};
  const int perm[2] = {1, 0};
  s = kgen_permute(sizeof(float), 2, shape, perm, x, y, NULL);
  if (s != KGEN_OK || cudaMemcpy(out, y, sizeof out, cudaMemcpyDeviceToHost) != cudaSuccess) {
    printf("permute failed: %s\n", kgen_last_error());
    return 1;
  }
  int transposed = 1;
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c) transposed &= out[c * ROWS + r] == host[r * COLS + c];
  ok &= transposed;
  printf("transpose of the matrix: %s\n", transposed ? "exact" : "WRONG");
  /* where(keep, x, 0): rows whose keep byte is 0 become 0; keep is (ROWS, 1), 0 a scalar */
  const unsigned char keep[ROWS] = {1, 0, 1, 0};
  const float zero = 0.0f;
  const int64_t keep_shape[2] = {ROWS, 1};
  unsigned char* keep_dev = NULL;
  float* zero_dev = NULL;
  if (cudaMalloc((void**)&keep_dev, sizeof keep) != cudaSuccess ||
      cudaMalloc((void**)&zero_dev, sizeof zero) != cudaSuccess ||
      cudaMemcpy(keep_dev, keep, sizeof keep, cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemcpy(zero_dev, &zero, sizeof zero, cudaMemcpyHostToDevice) != cudaSuccess) {
    printf("cuda setup failed\n");
    return 1;
  }
  s = kgen_where(KGEN_FLOAT32, 2, keep_shape, 2, shape, 0, NULL, keep_dev, x, zero_dev, y, NULL);
  if (s != KGEN_OK || cudaMemcpy(out, y, sizeof out, cudaMemcpyDeviceToHost) != cudaSuccess) {
    printf("where failed: %s\n", kgen_last_error());
    return 1;
  }
  int masked = 1;
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c) masked &= out[r * COLS + c] == (keep[r] ? host[r * COLS + c] : 0.0f);
  ok &= masked;
  printf("where(keep rows 0 and 2, x, 0): %s\n", masked ? "exact" : "WRONG");
  cudaFree(keep_dev);
  cudaFree(zero_dev);
  cudaFree(x);
  cudaFree(y);
  printf("%s\n", ok ? "matches the CPU reference" : "MISMATCH against the CPU reference");
  return ok ? 0 : 1;
}
