#pragma once

/// @file
/// Getting numbers out of a decoded `ndarray` without needless copies.
///
/// Array data sits wherever the pickle put it inside the message buffer, so
/// it may not be aligned for its element type. Aligned float data can be
/// mapped directly (e.g. with `Eigen::Map`); otherwise, and whenever the data
/// goes into a strided destination (one segment of a time-major batch), it is
/// copied with `memcpy`, which is as fast as a load loop and never performs a
/// misaligned access.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "protocol/pickle_value.hpp"

namespace sprintrt::protocol {

/// The dtype of a C++ element type.
template <class T>
constexpr dtype dtype_of() noexcept {
  if constexpr (std::is_same_v<T, float>)
    return dtype::float32;
  else if constexpr (std::is_same_v<T, double>)
    return dtype::float64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return dtype::int32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return dtype::uint32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return dtype::int64;
  else {
    static_assert(std::is_same_v<T, uint8_t>, "no dtype for this element type");
    return dtype::uint8;
  }
}

/// Returns the elements of `a` in place if they have type `T` and are aligned
/// for it, else null (then use `copy_rows`).
template <class T>
const T* aligned_data(const ndarray& a) noexcept {
  if (a.type != dtype_of<T>())
    return nullptr;
  auto address = reinterpret_cast<uintptr_t>(a.data.data());
  return address % alignof(T) == 0 ? reinterpret_cast<const T*>(a.data.data()) : nullptr;
}

/// Copies the elements of `a`, which must have type `T`, as rows of its last
/// dimension into `dst`, advancing `dst_row_stride` elements per row. A 0-d or
/// 1-d array is one row. Returns false (copying nothing) on a dtype mismatch.
template <class T>
bool copy_rows(const ndarray& a, T* dst, size_t dst_row_stride) noexcept {
  if (a.type != dtype_of<T>())
    return false;
  size_t row = a.shape.empty() ? 1 : a.shape.back();
  size_t rows = row == 0 ? 0 : a.num_elements() / row;
  const std::byte* src = a.data.data();
  if (dst_row_stride == row) {
    if (rows * row > 0)
      std::memcpy(dst, src, rows * row * sizeof(T));
    return true;
  }
  for (size_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_row_stride, src + r * row * sizeof(T), row * sizeof(T));
  return true;
}

/// Reads element `i` of `a`, which must have type `T`.
template <class T>
T element(const ndarray& a, size_t i) noexcept {
  T x;
  std::memcpy(&x, a.data.data() + i * sizeof(T), sizeof(T));
  return x;
}

} // namespace sprintrt::protocol
