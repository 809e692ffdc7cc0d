// Entry points that belong to no family: statuses, version, introspection.
#include "dtype.hpp"
#include "device.hpp"
#include "registry.hpp"
#include "tuning/db.hpp"

#ifndef KGEN_VERSION
#define KGEN_VERSION "0.0.0"
#endif

extern "C" {

const char* kgen_status_string(kgen_status_t status) {
  switch (status) {
    case KGEN_OK: return "KGEN_OK";
    case KGEN_ERROR_INVALID_ARGUMENT: return "KGEN_ERROR_INVALID_ARGUMENT";
    case KGEN_ERROR_UNSUPPORTED: return "KGEN_ERROR_UNSUPPORTED";
    case KGEN_ERROR_CUDA: return "KGEN_ERROR_CUDA";
    case KGEN_ERROR_INTERNAL: return "KGEN_ERROR_INTERNAL";
  }
  return "KGEN_UNKNOWN_STATUS";
}

const char* kgen_version(void) { return KGEN_VERSION; }

int kgen_dtype_size(kgen_dtype_t dtype) {
  return kgen::valid_dtype(dtype) ? kgen::dtype_size(dtype) : 0;
}

int64_t kgen_variant_count(void) {
  return static_cast<int64_t>(kgen::Registry::all().size());
}

const char* kgen_variant_name(int64_t index) {
  const auto& all = kgen::Registry::all();
  return index >= 0 && index < static_cast<int64_t>(all.size()) ? all[index]->name : nullptr;
}

const char* kgen_variant_family(int64_t index) {
  const auto& all = kgen::Registry::all();
  return index >= 0 && index < static_cast<int64_t>(all.size())
             ? kgen::family_name(all[index]->family)
             : nullptr;
}

const char* kgen_build_arch(void) { return kgen::gen::kBuildArch; }
const char* kgen_build_level(void) { return kgen::gen::kBuildLevel; }
const char* kgen_generator_hash(void) { return kgen::gen::kGeneratorHash; }

const char* kgen_tuning_database(void) {
  try {
    const kgen::DeviceInfo* device = nullptr;
    if (kgen::current_device(&device) != KGEN_OK) return "";
    const kgen::tuning::Database* db = kgen::tuning::database_for(*device);
    return db ? db->description.c_str() : "";
  } catch (...) {
    return "";
  }
}

}  // extern "C"
