// Top-k keys: every element of a row becomes one unsigned key whose order is
// the order top-k selects by, so that selection is "the k largest keys".
//   key = (order bits of the value, flipped for smallest) << 32 | ~index
// The order bits are PyTorch's TopKTypeConfig: a float's sign-magnitude bits
// made monotone, every NaN mapped above +inf, -0.0 just below +0.0.  The
// inverted index in the low 32 bits makes keys distinct and puts the lower
// index first among equal values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace kgen {
namespace device {
namespace topk {

using u128 = unsigned __int128;

template <class T> struct KeyOf;

template <> struct KeyOf<float> {
  using Bits = uint32_t;
  using Key = uint64_t;
  static constexpr int kBits = 32;
  __device__ static Bits bits(float v) {
    const uint32_t u = __float_as_uint(v);
    if (v != v) return 0xffffffffu;
    return u ^ ((u & 0x80000000u) ? 0xffffffffu : 0x80000000u);
  }
  __device__ static float value(Bits b) { return __uint_as_float(b & 0x80000000u ? b ^ 0x80000000u : ~b); }
};

template <> struct KeyOf<double> {
  using Bits = uint64_t;
  using Key = u128;
  static constexpr int kBits = 64;
  __device__ static Bits bits(double v) {
    const uint64_t u = static_cast<uint64_t>(__double_as_longlong(v));
    if (v != v) return ~0ull;
    return u ^ ((u >> 63) ? ~0ull : (1ull << 63));
  }
  __device__ static double value(Bits b) {
    return __longlong_as_double(static_cast<long long>(b >> 63 ? b ^ (1ull << 63) : ~b));
  }
};

template <> struct KeyOf<int> {
  using Bits = uint32_t;
  using Key = uint64_t;
  static constexpr int kBits = 32;
  __device__ static Bits bits(int v) { return static_cast<uint32_t>(v) ^ 0x80000000u; }
  __device__ static int value(Bits b) { return static_cast<int>(b ^ 0x80000000u); }
};

// Half types: 16 order bits; NaN is an exponent of all ones and a nonzero
// mantissa.
template <uint32_t kInf> struct HalfKey {
  using Bits = uint32_t;
  using Key = uint64_t;
  static constexpr int kBits = 16;
  __device__ static Bits from_raw(uint32_t u) {
    if ((u & 0x7fffu) > kInf) return 0xffffu;
    return u ^ ((u & 0x8000u) ? 0xffffu : 0x8000u);
  }
  // from_raw of the two halves of u at once (the low element in the low
  // half), about ten 32-bit operations for the two: a half's NaN test
  // carries into its bit 15 and no further (at most 0x7fff + 0x7fff -
  // kInf), its sign bit selects 0xffff or 0x8000 to flip by.  Equal to
  // from_raw on all 65536 values in either half (checked on the CPU)
  __device__ static uint32_t from_raw2(uint32_t u) {
    const uint32_t nan = ((u & 0x7fff7fffu) + (0x7fffu - kInf) * 0x10001u) >> 15 & 0x10001u;
    return (u ^ ((u >> 15 & 0x10001u) * 0x7fffu | 0x80008000u)) | nan * 0xffffu;
  }
  __device__ static unsigned short raw(Bits b) {
    return static_cast<unsigned short>(b & 0x8000u ? b ^ 0x8000u : ~b & 0xffffu);
  }
};
template <> struct KeyOf<__half> : HalfKey<0x7c00u> {
  __device__ static Bits bits(__half v) { return from_raw(__half_as_ushort(v)); }
  __device__ static __half value(Bits b) { return __ushort_as_half(raw(b)); }
};
template <> struct KeyOf<__nv_bfloat16> : HalfKey<0x7f80u> {
  __device__ static Bits bits(__nv_bfloat16 v) { return from_raw(__bfloat16_as_ushort(v)); }
  __device__ static __nv_bfloat16 value(Bits b) { return __ushort_as_bfloat16(raw(b)); }
};

template <class T> using bits_t = typename KeyOf<T>::Bits;
template <class T> using key_t = typename KeyOf<T>::Key;
// width of a key: order bits and the 32 index bits
template <class T> constexpr int kKeyWidth = KeyOf<T>::kBits + 32;

template <class T>
__device__ __forceinline__ bits_t<T> order_bits(T v, bool largest) {
  constexpr int B = KeyOf<T>::kBits;
  const bits_t<T> b = KeyOf<T>::bits(v);
  if (largest) return b;
  constexpr bits_t<T> mask = B == sizeof(bits_t<T>) * 8 ? ~bits_t<T>(0) : ((bits_t<T>(1) << B) - 1);
  return ~b & mask;
}

// order_bits of the half types' two elements in a 32-bit word (the low
// element in the low half) at once
template <class T> __device__ __forceinline__ uint32_t order_bits2(uint32_t u, bool largest) {
  const uint32_t b = KeyOf<T>::from_raw2(u);
  return largest ? b : ~b;
}

// order_bits' inverse: the value of element e of `row` from its order bits,
// read from the row only for the bits every NaN shares (its payload kept,
// as torch.topk keeps it).
template <class T> constexpr bool kHasNaN = !std::is_integral_v<T>;
template <class T>
__device__ __forceinline__ T value_of(bits_t<T> order, bool largest, const T* row, uint32_t e) {
  constexpr int B = KeyOf<T>::kBits;
  constexpr bits_t<T> mask = B == sizeof(bits_t<T>) * 8 ? ~bits_t<T>(0) : ((bits_t<T>(1) << B) - 1);
  const bits_t<T> b = largest ? order : ~order & mask;
  if (kHasNaN<T> && b == mask) return row[e];
  return KeyOf<T>::value(b);
}

template <class T>
__device__ __forceinline__ key_t<T> make_key(bits_t<T> order, uint32_t index) {
  return (key_t<T>(order) << 32) | key_t<T>(0xffffffffu - index);
}

template <class Key> __device__ __forceinline__ uint32_t key_index(Key key) {
  return 0xffffffffu - static_cast<uint32_t>(key);
}
template <class T> __device__ __forceinline__ bits_t<T> key_order(key_t<T> key) {
  return static_cast<bits_t<T>>(key >> 32);
}

// The key of the unsorted output order: values strictly better than the
// k-th first, then the rest (equal to it), each in ascending index order.
template <class T>
__device__ __forceinline__ key_t<T> unsorted_key(key_t<T> key, bits_t<T> kth_order) {
  const key_t<T> better = key_order<T>(key) > kth_order ? 1 : 0;
  return (better << 32) | static_cast<uint32_t>(key);
}

// The digits of a key, most significant first: digit l covers bits
// [lo(l), hi(l)) of a W-bit key, R bits each (the last may be narrower).
template <int W, int R> struct Digits {
  static constexpr int kLevels = (W + R - 1) / R;
  static constexpr int kBins = 1 << R;
  __device__ static constexpr int hi(int l) { return W - l * R; }
  __device__ static constexpr int lo(int l) { return W - l * R > R ? W - l * R - R : 0; }
  __device__ static constexpr int width(int l) { return hi(l) - lo(l); }
  template <class Key> __device__ static unsigned digit(Key key, int l) {
    return static_cast<unsigned>(key >> lo(l)) & ((1u << width(l)) - 1u);
  }
  // whether the key's digits before level l are `prefix`
  template <class Key> __device__ static bool in(Key key, int l, Key prefix) {
    return l == 0 || (key >> hi(l)) == prefix;
  }
};

}  // namespace topk
}  // namespace device
}  // namespace kgen
