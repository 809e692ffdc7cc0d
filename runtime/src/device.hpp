#pragma once

#include <cstddef>

#include "status.hpp"
#include "variant.hpp"

namespace kgen {

// Facts of the current device, read once per device and immutable after.
// On failure returns the CUDA status (no device, broken driver) with a
// message; KGEN_ERROR_UNSUPPORTED, naming the archs, when this library holds
// no code the device can run.
kgen_status_t current_device(const DeviceInfo** info);

// The arch of the code a device of compute capability major.minor runs from
// a build with SASS for `arches` (x 10, oldest first) and PTX for the last:
// the SASS of the device's major version with the newest minor not above
// the device's (sm_100 code runs on a 10.3 device, sm_90 code not on 10.0),
// else the PTX, compiled by the driver, when it is not newer than the
// device; 0 when neither.
int code_arch_for(int major, int minor, const int* arches, std::size_t count);

// Checks that p can be read by kernels on `device`: device or managed memory
// of that device, or mapped host memory.  `what` names the argument.
kgen_status_t check_device_pointer(const void* p, const DeviceInfo& device, const char* what);

// Checks that a stream handle is one the runtime knows (a handle already
// destroyed is undefined behaviour in CUDA itself and cannot be detected).
// *capturing tells whether the stream is being captured into a graph, when
// only capture-safe calls may be made.
kgen_status_t check_stream(cudaStream_t stream, bool* capturing);

// Drops an error that an earlier CUDA call of this thread left pending (the
// caller's, not this library's) before a launch, so that the check after
// the launch reports the kernel's own: a caller's failed cudaMemcpy made the
// next softmax report "launching softmax_warp_... failed: invalid argument".
// A sticky error stays and fails the launch itself.
inline void drop_earlier_error() { (void)cudaGetLastError(); }

}  // namespace kgen
