// The record every generated variant provides, and the device facts that
// capability checks and launch configuration read.  Shared by the runtime and
// the generated translation units.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kgen/kgen.h"

namespace kgen {

enum class Family : int {
  softmax = 0, reduce = 1, permute = 2, expand = 3, where = 4, topk = 5, softmax_backward = 6
};
constexpr int kFamilies = 7;
const char* family_name(Family f);

// What a variant is compiled for: a kgen_dtype_t for the typed families;
// for those that only move bytes (permute, expand, where),
// movement_key(bytes per unit).
constexpr int movement_key(int bytes) { return 16 + bytes; }  // past every kgen_dtype_t
constexpr int kElementKeys = movement_key(16) + 1;
constexpr int kMaxMovement = 16;  // the widest unit a byte mover moves

// Read once per device (runtime/src/device.cpp); fake ones in host tests.
struct DeviceInfo {
  int ordinal = 0;
  int major = 9, minor = 0;
  int sm_count = 132;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  std::size_t smem_per_sm = 228 * 1024;           // shared memory of one SM
  std::size_t smem_per_block_optin = 227 * 1024;  // one block, after opting in
  std::size_t l2_bytes = 50u << 20;
  // the arch (compute capability x 10) of the code of this library the
  // device runs: the build's SASS of its major version (the newest minor not
  // above its own), else the build's PTX through the driver's JIT when that
  // is not newer than the device; 0 when the build holds nothing it can run
  // (code_arch_for in device.cpp)
  int code_arch = 90;
  char name[128] = "";
};

struct VariantInfo {
  const char* name;          // the canonical variant name
  Family family;
  int element;               // kgen_dtype_t, or movement_key(bytes) for byte movers
  const void* params;        // the family's generated params struct
  bool generic;              // supports every valid problem of its dtype
  int min_arch;              // runs only where the device runs code of this arch or later (0: any)
  // capability, decided from the real problem (pointers, extents, device)
  bool (*supports)(const VariantInfo& self, const void* problem);
  // launches on the stream; returns the launch's error state
  cudaError_t (*launch)(const void* problem, cudaStream_t stream);
  // ranked by the heuristic: a variant of the default level's own set (or
  // of a tuned-level build).  One compiled only as a tuning database's
  // winner (or at the full level) is taken through a database entry or by
  // name, never by the heuristic (select.cpp best_of).
  bool ranked = true;
};

// Whether the device runs code in which this variant's kernels exist (a
// tier that needs sm_90 features compiles to nothing for older archs).
// Selection skips a variant for which this is false; naming it is an error.
inline bool runs_on(const VariantInfo& v, const DeviceInfo& d) { return d.code_arch >= v.min_arch; }

}  // namespace kgen
