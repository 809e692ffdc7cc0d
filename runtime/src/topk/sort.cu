// The segmented sort of the selected keys when k is too large for one
// block's shared-memory sort: CUB's segmented radix sort, descending, on the
// distinct keys of runtime/src/topk/problem.hpp (8 or 16 bytes).
#include <cub/device/device_segmented_radix_sort.cuh>

#include "topk/problem.hpp"

namespace kgen {
namespace topk {
namespace {

template <class Key>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, const void* in, void* out, int64_t items,
                      int64_t segments, const int* offsets, cudaStream_t stream) {
  return cub::DeviceSegmentedRadixSort::SortKeysDescending(
      temp, temp_bytes, static_cast<const Key*>(in), static_cast<Key*>(out), static_cast<int>(items),
      static_cast<int>(segments), offsets, offsets + 1, 0, static_cast<int>(sizeof(Key) * 8), stream);
}

cudaError_t dispatch(int key_bytes, void* temp, std::size_t& temp_bytes, const void* in, void* out,
                     int64_t items, int64_t segments, const int* offsets, cudaStream_t stream) {
  if (key_bytes == 16)
    return sort_keys<unsigned __int128>(temp, temp_bytes, in, out, items, segments, offsets, stream);
  return sort_keys<unsigned long long>(temp, temp_bytes, in, out, items, segments, offsets, stream);
}

}  // namespace

std::size_t segmented_sort_bytes(int key_bytes, int64_t items, int64_t segments) {
  std::size_t bytes = 0;
  if (dispatch(key_bytes, nullptr, bytes, nullptr, nullptr, items, segments, nullptr, nullptr) !=
      cudaSuccess)
    return 0;
  return bytes;
}

cudaError_t segmented_sort(int key_bytes, const void* in, void* out, int64_t items, int64_t segments,
                           const int* offsets, void* temp, std::size_t temp_bytes,
                           cudaStream_t stream) {
  return dispatch(key_bytes, temp, temp_bytes, in, out, items, segments, offsets, stream);
}

}  // namespace topk
}  // namespace kgen
