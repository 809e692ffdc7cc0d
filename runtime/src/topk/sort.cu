// The global sort of a sorted k past one block's sort (problem.hpp's
// PairSort): (key, index) pairs through CUB's device-wide radix sort,
// descending by key and stable, over the key's significant bits only: the
// order bits, with the row's rank above them when the batch goes at once.
//
// CUB's segmented sort gives a row one block, at about 16 ns a key (H200:
// one row of 9124882 float32 keys 160 ms); the device-wide sort takes the
// whole GPU for any batch.  A few rows of millions go one after another.
#include <cub/device/device_radix_sort.cuh>

#include "topk/problem.hpp"

namespace kgen {
namespace topk {
namespace {

template <class Key>
cudaError_t sort_pairs(const PairSort& s, void* const keys[2], unsigned* const indices[2], void* temp,
                       std::size_t& temp_bytes, cudaStream_t stream, bool* in_second) {
  const bool one_by_one = s.rows > 1 && !s.fold;
  const int64_t items = one_by_one ? s.per_row : s.rows * s.per_row;
  const int64_t sorts = one_by_one ? s.rows : 1;
  Key* k0 = static_cast<Key*>(keys ? keys[0] : nullptr);
  Key* k1 = static_cast<Key*>(keys ? keys[1] : nullptr);
  unsigned* i0 = indices ? indices[0] : nullptr;
  unsigned* i1 = indices ? indices[1] : nullptr;
  for (int64_t r = 0; r < sorts; ++r) {
    const int64_t at = r * items;
    cub::DoubleBuffer<Key> k(k0 ? k0 + at : nullptr, k1 ? k1 + at : nullptr);
    cub::DoubleBuffer<unsigned> i(i0 ? i0 + at : nullptr, i1 ? i1 + at : nullptr);
    const cudaError_t err = cub::DeviceRadixSort::SortPairsDescending(temp, temp_bytes, k, i, items, 0, s.bits,
                                                                      stream);
    if (err != cudaSuccess || !temp) return err;
    *in_second = k.selector != 0;  // the same passes for every row: the same buffer
  }
  return cudaSuccess;
}

cudaError_t dispatch(const PairSort& s, void* const keys[2], unsigned* const indices[2], void* temp,
                     std::size_t& temp_bytes, cudaStream_t stream, bool* in_second) {
  if (s.key_bytes == 4) return sort_pairs<unsigned>(s, keys, indices, temp, temp_bytes, stream, in_second);
  return sort_pairs<unsigned long long>(s, keys, indices, temp, temp_bytes, stream, in_second);
}

}  // namespace

std::size_t global_sort_bytes(const PairSort& s) {
  std::size_t bytes = 0;
  bool second = false;
  if (dispatch(s, nullptr, nullptr, nullptr, bytes, nullptr, &second) != cudaSuccess) return 0;
  return bytes;
}

cudaError_t global_sort(const PairSort& s, void* const keys[2], unsigned* const indices[2], void* temp,
                        std::size_t temp_bytes, cudaStream_t stream, bool* in_second) {
  return dispatch(s, keys, indices, temp, temp_bytes, stream, in_second);
}

}  // namespace topk
}  // namespace kgen
