// Division by a divisor fixed for the whole launch (a dim size), as a
// multiply-high and a shift instead of the ~20-instruction integer division:
// the round-up method with a 33-bit magic split into `mul` and the implicit
// 2^32 (q = (umulhi(n, mul) + n) >> shift).  Exact for n < 2^31 and
// 1 <= d < 2^31; the magic is computed once on the host by the launcher.
#pragma once

#include <cstdint>

namespace kgen {
namespace device {

struct FastDiv {
  uint32_t d = 1, mul = 1, shift = 0;

  FastDiv() = default;
  __host__ explicit FastDiv(uint32_t divisor) : d(divisor) {
    shift = 0;
    while (shift < 31 && (uint32_t{1} << shift) < d) ++shift;
    const uint64_t one = 1;
    mul = static_cast<uint32_t>(((one << 32) * ((one << shift) - d)) / d + 1);
  }

  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, mul) + n) >> shift; }
  // q = n / d and r = n - q * d
  __device__ __forceinline__ uint32_t divmod(uint32_t n, uint32_t* r) const {
    const uint32_t q = div(n);
    *r = n - q * d;
    return q;
  }
};

}  // namespace device
}  // namespace kgen
