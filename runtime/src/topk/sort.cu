// The sort of the selected keys when k is too large for one block's
// shared-memory sort, descending, on the distinct keys of
// runtime/src/topk/problem.hpp (8 or 16 bytes), over their significant bits
// only (48 for the half types).
//
// CUB's segmented radix sort gives each segment one block.  That is right
// for many rows, but a few long ones each sort at one SM's pace: H200, one
// row of 9124882 float32 keys took 160 ms, six of 1560237 float16 32 ms
// (torch.topk: 0.9 and 0.6 ms), about 16 ns a key in one block.  The
// device-wide radix sort of one row costs some 25 us at least, so when a
// row holds at least kBlockSortedKeys keys for each row of the batch
// (problem.hpp's row_by_row), the rows are sorted one after another with
// it, each over the whole GPU.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "topk/problem.hpp"

namespace kgen {
namespace topk {
namespace {

template <class Key>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, const void* in, void* out, int64_t items,
                      int64_t segments, const int* offsets, int key_bits, cudaStream_t stream) {
  const Key* keys_in = static_cast<const Key*>(in);
  Key* keys_out = static_cast<Key*>(out);
  if (!row_by_row(items, segments))
    return cub::DeviceSegmentedRadixSort::SortKeysDescending(
        temp, temp_bytes, keys_in, keys_out, static_cast<int>(items), static_cast<int>(segments), offsets,
        offsets + 1, 0, key_bits, stream);
  const int64_t per = items / segments;  // rows have k keys each
  if (!temp) return cub::DeviceRadixSort::SortKeysDescending(temp, temp_bytes, keys_in, keys_out,
                                                             static_cast<int>(per), 0, key_bits, stream);
  for (int64_t s = 0; s < segments; ++s) {
    const cudaError_t err = cub::DeviceRadixSort::SortKeysDescending(
        temp, temp_bytes, keys_in + s * per, keys_out + s * per, static_cast<int>(per), 0, key_bits, stream);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

cudaError_t dispatch(int key_bytes, void* temp, std::size_t& temp_bytes, const void* in, void* out,
                     int64_t items, int64_t segments, const int* offsets, int key_bits, cudaStream_t stream) {
  if (key_bytes == 16)
    return sort_keys<unsigned __int128>(temp, temp_bytes, in, out, items, segments, offsets, key_bits, stream);
  return sort_keys<unsigned long long>(temp, temp_bytes, in, out, items, segments, offsets, key_bits, stream);
}

}  // namespace

std::size_t segmented_sort_bytes(int key_bytes, int key_bits, int64_t items, int64_t segments) {
  std::size_t bytes = 0;
  if (dispatch(key_bytes, nullptr, bytes, nullptr, nullptr, items, segments, nullptr, key_bits, nullptr) !=
      cudaSuccess)
    return 0;
  return bytes;
}

cudaError_t segmented_sort(int key_bytes, int key_bits, const void* in, void* out, int64_t items,
                           int64_t segments, const int* offsets, void* temp, std::size_t temp_bytes,
                           cudaStream_t stream) {
  return dispatch(key_bytes, temp, temp_bytes, in, out, items, segments, offsets, key_bits, stream);
}

}  // namespace topk
}  // namespace kgen
