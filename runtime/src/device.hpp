#pragma once

#include "status.hpp"
#include "variant.hpp"

namespace kgen {

// Facts of the current device, read once per device and immutable after.
// On failure returns the CUDA status (no device, broken driver) with a message.
kgen_status_t current_device(const DeviceInfo** info);

// Checks that p can be read by kernels on `device`: device or managed memory
// of that device, or mapped host memory.  `what` names the argument.
kgen_status_t check_device_pointer(const void* p, const DeviceInfo& device, const char* what);

// Checks that a stream handle is one the runtime knows (a handle already
// destroyed is undefined behaviour in CUDA itself and cannot be detected).
// *capturing tells whether the stream is being captured into a graph, when
// only capture-safe calls may be made.
kgen_status_t check_stream(cudaStream_t stream, bool* capturing);

}  // namespace kgen
