// Workspaces the library allocates on a call's path (a caller may give its
// own instead): stream-ordered, from a memory pool of the library's own on
// each device.  The device's default pool gives its memory back at every
// synchronization (release threshold 0), so an allocation after one maps
// memory again: a split softmax of 2 MiB took 77-177 us a call, 15-20 us
// with the memory kept (H100, kgen-bench with a synchronization each run).
// This pool keeps what it holds up to kWorkspaceKeepBytes.  Inside a stream
// capture the allocation becomes a node of the graph, owned by the graph.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "status.hpp"
#include "variant.hpp"

namespace kgen {

constexpr std::size_t kWorkspaceKeepBytes = std::size_t{64} << 20;

// cudaMallocFromPoolAsync from the library's pool on `device` (created on
// first use); the CUDA status of the first call that failed.
cudaError_t allocate_workspace(const DeviceInfo& device, std::size_t bytes, cudaStream_t stream, void** out);

// Launches v on `problem` with *slot pointing at its workspace of `bytes`
// (none when 0): the caller's `given` (checked by the family) or, when
// null, one from the pool freed on the stream after the launch.  An error
// an earlier CUDA call left pending is dropped first (drop_earlier_error).
kgen_status_t launch_with_workspace(const VariantInfo& v, void* problem, void** slot, std::size_t bytes, void* given,
                                    const DeviceInfo& device, cudaStream_t stream);

}  // namespace kgen
