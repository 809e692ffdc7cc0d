#include "workspace.hpp"

#include <cstdint>
#include <mutex>

#include "device.hpp"

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

kgen_status_t launch_with_workspace(const VariantInfo& v, void* problem, void** slot, std::size_t bytes, void* given,
                                    const DeviceInfo& device, cudaStream_t stream) {
  auto failure = [&](const char* what, cudaError_t err) {
    return fail(KGEN_ERROR_CUDA, "stream: %s %s failed: %s: %s", what, v.name, cudaGetErrorName(err),
                cudaGetErrorString(err));
  };
  drop_earlier_error();
  const bool owned = bytes > 0 && !given;
  if (bytes > 0) *slot = given;
  if (owned) {
    const cudaError_t err = allocate_workspace(device, bytes, stream, slot);
    if (err != cudaSuccess) return failure("allocating the workspace of", err);
  }
  const cudaError_t err = v.launch(problem, stream);
  const cudaError_t freed = owned ? cudaFreeAsync(*slot, stream) : cudaSuccess;
  if (err != cudaSuccess) return failure("launching", err);
  if (freed != cudaSuccess) return failure("freeing the workspace of", freed);
  return succeed();
}

}  // namespace kgen
