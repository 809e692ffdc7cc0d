// GPU test binary: exits 77 (meson's SKIP) when no CUDA device is present.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "catch.hpp"

int main(int argc, char** argv) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("no CUDA device (%s): skipping the GPU tests\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 77;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    std::printf("GPU: %s, %d SMs, sm_%d%d\n", prop.name, prop.multiProcessorCount, prop.major,
                prop.minor);
  return kgen_catch_run(argc, argv);
}
