// kgen_permute and friends: validate, simplify, select, launch (or copy).
#include <cstdio>

#include "device.hpp"
#include "permute/problem.hpp"
#include "registry.hpp"
#include "validate.hpp"

namespace kgen {
namespace permute {
namespace {

const char* const kCopy = "copy";

struct Request {
  int64_t bytes = 0;  // of src (and of dst)
  Problem problem{};
};

// Host-only checks (no CUDA call); *req gets the byte count, and the
// simplified problem unless the tensor is empty (bytes == 0).
kgen_status_t validate_host(size_t elem_size, int rank, const int64_t* shape, const int* perm,
                            const void* src, const void* dst, int max_movement, Request* req) {
  if (elem_size == 0 || elem_size > (size_t{1} << 30))
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "elem_size: must be 1 to 2^30 bytes, got %zu", elem_size);
  if (rank < 0 || rank > kMaxRank)
    return fail(KGEN_ERROR_INVALID_ARGUMENT, "rank: must be 0 to %d, got %d", kMaxRank, rank);
  if (rank > 0 && !shape) return fail(KGEN_ERROR_INVALID_ARGUMENT, "shape: null pointer for rank %d", rank);
  if (rank > 0 && !perm) return fail(KGEN_ERROR_INVALID_ARGUMENT, "perm: null pointer for rank %d", rank);
  int64_t elements = 1;
  for (int k = 0; k < rank; ++k) {
    if (shape[k] < 0)
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "shape[%d]: must be >= 0, got %lld", k,
                  static_cast<long long>(shape[k]));
  }
  bool seen[kMaxRank] = {};
  for (int k = 0; k < rank; ++k) {
    if (perm[k] < 0 || perm[k] >= rank)
      return fail(KGEN_ERROR_INVALID_ARGUMENT, "perm: perm[%d] = %d is not a dim of a rank-%d tensor",
                  k, perm[k], rank);
    if (seen[perm[k]])
      return fail(KGEN_ERROR_INVALID_ARGUMENT,
                  "perm: not a permutation of 0..%d (perm[%d] = %d repeats)", rank - 1, k, perm[k]);
    seen[perm[k]] = true;
  }
  for (int k = 0; k < rank; ++k)
    KGEN_TRY(checked_elements(elements, shape[k], static_cast<int>(elem_size), "shape", &elements));
  int64_t bytes = 0;
  KGEN_TRY(checked_elements(elements, static_cast<int64_t>(elem_size), 1, "shape x elem_size", &bytes));
  req->bytes = bytes;
  if (bytes == 0) return KGEN_OK;
  KGEN_TRY(check_pointer(src, elements, "src"));
  KGEN_TRY(check_pointer(dst, elements, "dst"));
  KGEN_TRY(check_disjoint(src, bytes, dst, bytes, "src", "dst"));
  Problem& p = req->problem;
  p.shape = simplify(rank, shape, perm, static_cast<int64_t>(elem_size),
                     reinterpret_cast<uintptr_t>(src), reinterpret_cast<uintptr_t>(dst), max_movement);
  p.src = src;
  p.dst = const_cast<void*>(dst);
  return KGEN_OK;
}

void describe(const void* problem, char* text, int size) {
  const Shape& s = static_cast<const Problem*>(problem)->shape;
  std::snprintf(text, size,
                "this permutation (rank %d in %d-byte units once simplified) with these pointers",
                s.rank, s.movement);
}

// With p->device set: checks the pointers (not while capturing), then takes
// the named variant if it supports the problem, or selects one; *chosen is
// null for a plain copy.
kgen_status_t choose(const VariantInfo* named, bool check_pointers, Problem* p,
                     const VariantInfo** chosen) {
  if (check_pointers) {
    KGEN_TRY(check_device_pointer(p->src, *p->device, "src"));
    KGEN_TRY(check_device_pointer(p->dst, *p->device, "dst"));
  }
  *chosen = nullptr;
  if (!named && is_copy(p->shape)) return KGEN_OK;
  return choose_variant(named, Family::permute, movement_key(p->shape.movement), *p->device, p,
                        &heuristic, &describe, chosen, &selection_key);
}

kgen_status_t run(const char* variant, size_t elem_size, int rank, const int64_t* shape,
                  const int* perm, const void* src, void* dst, kgen_stream_t stream) {
  const VariantInfo *named = nullptr, *v = nullptr;
  int max_movement = kMaxMovement;
  Request req;
  bool capturing = false;
  KGEN_TRY(find_named_mover(variant, Family::permute, &named, &max_movement));
  KGEN_TRY(validate_host(elem_size, rank, shape, perm, src, dst, max_movement, &req));
  if (req.bytes == 0) return succeed();
  Problem& p = req.problem;
  KGEN_TRY(current_device(&p.device));
  KGEN_TRY(check_stream(stream, &capturing));
  KGEN_TRY(choose(named, !capturing, &p, &v));
  return launch_chosen(v, &p, stream, PlainCopy{dst, src, req.bytes});
}

}  // namespace
}  // namespace permute
}  // namespace kgen

extern "C" {

kgen_status_t kgen_permute(size_t elem_size, int rank, const int64_t* shape, const int* perm,
                           const void* src, void* dst, kgen_stream_t stream) {
  KGEN_GUARD(return kgen::permute::run(nullptr, elem_size, rank, shape, perm, src, dst, stream);)
}

kgen_status_t kgen_permute_variant(const char* variant, size_t elem_size, int rank,
                                   const int64_t* shape, const int* perm, const void* src, void* dst,
                                   kgen_stream_t stream) {
  KGEN_GUARD(return kgen::permute::run(variant, elem_size, rank, shape, perm, src, dst, stream);)
}

kgen_status_t kgen_permute_selected(size_t elem_size, int rank, const int64_t* shape,
                                    const int* perm, const void* src, const void* dst,
                                    const char** variant) {
  KGEN_GUARD({
    if (!variant) return kgen::fail(KGEN_ERROR_INVALID_ARGUMENT, "variant: null output pointer");
    kgen::permute::Request req;
    KGEN_TRY(kgen::permute::validate_host(elem_size, rank, shape, perm, src, dst,
                                          kgen::kMaxMovement, &req));
    const kgen::VariantInfo* v = nullptr;
    if (req.bytes > 0) {
      KGEN_TRY(kgen::current_device(&req.problem.device));
      KGEN_TRY(kgen::permute::choose(nullptr, true, &req.problem, &v));
    }
    *variant = req.bytes == 0 ? "" : v ? v->name : kgen::permute::kCopy;
    return kgen::succeed();
  })
}

}  // extern "C"
