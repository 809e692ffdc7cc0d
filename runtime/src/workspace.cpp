#include "workspace.hpp"

#include <cstdint>
#include <mutex>

namespace kgen {
namespace {

constexpr int kMaxDevices = 64;

struct Pool {
  std::once_flag once;
  cudaMemPool_t pool = nullptr;
  cudaError_t status = cudaSuccess;
};

void create(Pool& p, int ordinal) {
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ordinal;
  p.status = cudaMemPoolCreate(&p.pool, &props);
  if (p.status != cudaSuccess) return;
  uint64_t keep = kWorkspaceKeepBytes;
  p.status = cudaMemPoolSetAttribute(p.pool, cudaMemPoolAttrReleaseThreshold, &keep);
}

}  // namespace

cudaError_t allocate_workspace(const DeviceInfo& device, std::size_t bytes, cudaStream_t stream, void** out) {
  static Pool pools[kMaxDevices];
  if (device.ordinal < 0 || device.ordinal >= kMaxDevices) return cudaErrorInvalidDevice;
  Pool& p = pools[device.ordinal];
  std::call_once(p.once, [&] { create(p, device.ordinal); });
  if (p.status != cudaSuccess) return p.status;
  return cudaMallocFromPoolAsync(out, bytes, p.pool, stream);
}

}  // namespace kgen
