#include "device.hpp"

#include <cstring>
#include <mutex>

#include "registry.hpp"

namespace kgen {
namespace {

constexpr int kMaxDevices = 64;
DeviceInfo infos[kMaxDevices];
std::once_flag once[kMaxDevices];
cudaError_t read_error[kMaxDevices];

cudaError_t read_device(int ordinal, DeviceInfo& info) {
  cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties(&prop, ordinal);
  if (err != cudaSuccess) return err;
  info.ordinal = ordinal;
  info.major = prop.major;
  info.minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  info.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
  info.smem_per_sm = prop.sharedMemPerMultiprocessor;
  info.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  std::strncpy(info.name, prop.name, sizeof info.name - 1);
  info.code_arch = code_arch_for(prop.major, prop.minor, gen::kCodeArches, gen::kCodeArchCount);
  return cudaSuccess;
}

}  // namespace

int code_arch_for(int major, int minor, const int* arches, std::size_t count) {
  const int device = 10 * major + minor;
  int sass = 0;
  for (std::size_t k = 0; k < count; ++k)
    if (arches[k] / 10 == major && arches[k] <= device && arches[k] > sass) sass = arches[k];
  if (sass) return sass;
  return count > 0 && arches[count - 1] <= device ? arches[count - 1] : 0;
}

kgen_status_t current_device(const DeviceInfo** info) {
  int ordinal = -1;
  cudaError_t err = cudaGetDevice(&ordinal);
  if (err != cudaSuccess) return fail_cuda(err, "device");
  if (ordinal < 0 || ordinal >= kMaxDevices)
    return fail(KGEN_ERROR_UNSUPPORTED, "device: ordinal %d is past the %d devices kgen tracks",
                ordinal, kMaxDevices);
  std::call_once(once[ordinal], [&] { read_error[ordinal] = read_device(ordinal, infos[ordinal]); });
  if (read_error[ordinal] != cudaSuccess) return fail_cuda(read_error[ordinal], "device");
  const DeviceInfo& d = infos[ordinal];
  if (d.code_arch == 0)
    return fail(KGEN_ERROR_UNSUPPORTED,
                "device: %s (device %d) is sm_%d%d, but this library was built for %s (PTX for the "
                "last): rebuild with sm_%d%d in -Darch",
                d.name, ordinal, d.major, d.minor, gen::kBuildArch, d.major, d.minor);
  *info = &d;
  return KGEN_OK;
}

kgen_status_t check_device_pointer(const void* p, const DeviceInfo& device, const char* what) {
  cudaPointerAttributes attr;
  cudaError_t err = cudaPointerGetAttributes(&attr, p);
  if (err != cudaSuccess) return fail_cuda(err, what);
  switch (attr.type) {
    case cudaMemoryTypeDevice:
      if (attr.device != device.ordinal)
        return fail(KGEN_ERROR_INVALID_ARGUMENT,
                    "%s: memory of device %d, but the current device is %d", what, attr.device,
                    device.ordinal);
      return KGEN_OK;
    case cudaMemoryTypeManaged:
      return KGEN_OK;
    case cudaMemoryTypeHost:
      if (attr.devicePointer != nullptr) return KGEN_OK;
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "%s: page-locked host memory that is not mapped",
                  what);
    default:
      return fail(KGEN_ERROR_INVALID_ARGUMENT,
                  "%s: %p is not device memory (an ordinary host pointer?)", what, p);
  }
}

kgen_status_t check_stream(cudaStream_t stream, bool* capturing) {
  // cudaStreamIsCapturing is legal during graph capture (a query such as
  // cudaStreamQuery is not, and would invalidate the capture).
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(stream, &status);
  if (err != cudaSuccess) return fail_cuda(err, "stream");
  *capturing = status != cudaStreamCaptureStatusNone;
  return KGEN_OK;
}

}  // namespace kgen
