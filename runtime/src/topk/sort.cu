// The sort of the selected keys when k is too large for one block's
// shared-memory sort, descending, on the distinct keys of
// runtime/src/topk/problem.hpp (8 or 16 bytes), over their significant bits
// only (48 for the half types).
//
// Every key of the batch goes through CUB's device-wide radix sort carrying
// its row, then a stable sort by row (LSD radix sorts are stable) brings
// each row's keys together, still descending: two sorts over the whole GPU
// whatever the batch.  CUB's segmented sort gives a row one block, at about
// 16 ns a key (H200: one row of 9124882 float32 keys 160 ms); sorting the
// rows one after another costs a device-wide sort's fixed ~80 us a row (34
// rows of 93125: 2.85 ms), and is kept for a few rows of millions, where
// it saves the row pass (problem.hpp's sorts_row_by_row).
#include <cub/device/device_radix_sort.cuh>

#include "topk/problem.hpp"

namespace kgen {
namespace topk {
namespace {

using Row = unsigned;

int bits_for(int64_t values) {  // bits that hold 0 .. values - 1, at least 1
  int b = 1;
  while (b < 62 && (int64_t{1} << b) < values) ++b;
  return b;
}

__global__ void row_of_kernel(Row* rows, int64_t items, int64_t per_row) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < items;
       i += int64_t{gridDim.x} * blockDim.x)
    rows[i] = static_cast<Row>(i / per_row);
}

// Rows one after another, each over the whole GPU.  A row's keys move
// between `in` and `out` alike for every row (same length, same passes).
template <class Key>
cudaError_t sort_rows(void* temp, std::size_t& temp_bytes, Key* in, Key* out, int64_t per_row, int64_t segments,
                      int key_bits, cudaStream_t stream, const void** result) {
  const int n = static_cast<int>(per_row);
  for (int64_t s = 0; s < segments; ++s) {
    cub::DoubleBuffer<Key> keys(in + s * per_row, out + s * per_row);
    const cudaError_t err =
        cub::DeviceRadixSort::SortKeysDescending(temp, temp_bytes, keys, n, 0, key_bits, stream);
    if (err != cudaSuccess || !temp) return err;
    if (s == 0) *result = keys.Current() == in ? static_cast<const void*>(in) : out;
  }
  return cudaSuccess;
}

// The whole batch at once.  Scratch: two arrays of row numbers, then CUB's.
template <class Key>
cudaError_t sort_batch(void* temp, std::size_t& temp_bytes, Key* in, Key* out, int64_t items, int64_t segments,
                       int key_bits, cudaStream_t stream, const void** result) {
  const int n = static_cast<int>(items);
  const int row_bits = bits_for(segments);
  const std::size_t rows_bytes = round_up(static_cast<std::size_t>(items) * sizeof(Row));
  char* base = static_cast<char*>(temp);
  cub::DoubleBuffer<Key> keys(in, out);
  cub::DoubleBuffer<Row> rows(temp ? reinterpret_cast<Row*>(base) : nullptr,
                              temp ? reinterpret_cast<Row*>(base + rows_bytes) : nullptr);
  if (!temp) {
    std::size_t by_key = 0, by_row = 0;
    cudaError_t err = cub::DeviceRadixSort::SortPairsDescending(nullptr, by_key, keys, rows, n, 0, key_bits);
    if (err == cudaSuccess) err = cub::DeviceRadixSort::SortPairs(nullptr, by_row, rows, keys, n, 0, row_bits);
    temp_bytes = 2 * rows_bytes + (by_key > by_row ? by_key : by_row);
    return err;
  }
  void* cub_temp = base + 2 * rows_bytes;
  std::size_t cub_bytes = temp_bytes - 2 * rows_bytes;
  const int64_t blocks = (items + 255) / 256;
  row_of_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(rows.Current(), items,
                                                                                         items / segments);
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess)
    err = cub::DeviceRadixSort::SortPairsDescending(cub_temp, cub_bytes, keys, rows, n, 0, key_bits, stream);
  if (err == cudaSuccess)
    err = cub::DeviceRadixSort::SortPairs(cub_temp, cub_bytes, rows, keys, n, 0, row_bits, stream);
  *result = keys.Current();
  return err;
}

template <class Key>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, void* in, void* out, int64_t items, int64_t segments,
                      int key_bits, cudaStream_t stream, const void** result) {
  if (segments == 1 || sorts_row_by_row(items, segments))
    return sort_rows<Key>(temp, temp_bytes, static_cast<Key*>(in), static_cast<Key*>(out), items / segments,
                          segments, key_bits, stream, result);
  return sort_batch<Key>(temp, temp_bytes, static_cast<Key*>(in), static_cast<Key*>(out), items, segments, key_bits,
                         stream, result);
}

cudaError_t dispatch(int key_bytes, void* temp, std::size_t& temp_bytes, void* in, void* out, int64_t items,
                     int64_t segments, int key_bits, cudaStream_t stream, const void** result) {
  if (key_bytes == 16)
    return sort_keys<unsigned __int128>(temp, temp_bytes, in, out, items, segments, key_bits, stream, result);
  return sort_keys<unsigned long long>(temp, temp_bytes, in, out, items, segments, key_bits, stream, result);
}

}  // namespace

std::size_t global_sort_bytes(int key_bytes, int key_bits, int64_t items, int64_t segments) {
  std::size_t bytes = 0;
  if (dispatch(key_bytes, nullptr, bytes, nullptr, nullptr, items, segments, key_bits, nullptr, nullptr) !=
      cudaSuccess)
    return 0;
  return bytes;
}

cudaError_t global_sort(int key_bytes, int key_bits, void* in, void* out, int64_t items, int64_t segments,
                        void* temp, std::size_t temp_bytes, cudaStream_t stream, const void** result) {
  return dispatch(key_bytes, temp, temp_bytes, in, out, items, segments, key_bits, stream, result);
}

}  // namespace topk
}  // namespace kgen
