#pragma once

/// @file
/// The NumPy element types that may cross the wire.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sprintrt::protocol {

/// An array or scalar element type. All data on the wire is little-endian.
enum class dtype : uint8_t {
  float32,
  float64,
  int32,
  uint32,
  int64,
  uint8,
};

/// Returns NumPy's name of `type`, e.g. "float32" (what `str(array.dtype)`
/// gives and what RETURNN passes to `make_numpy_ndarray_fromstring`).
const char* to_string(dtype type) noexcept;

/// Returns NumPy's type code of `type` without byte order, e.g. "f4" (what a
/// pickled `numpy.dtype` is constructed from).
const char* type_code(dtype type) noexcept;

/// Returns the size of one element in bytes.
size_t item_size(dtype type) noexcept;

/// Returns whether `type` is a floating-point type.
bool is_floating(dtype type) noexcept;

/// Parses a NumPy name ("float32") or a type code with optional little-endian
/// or native byte order marker ("f4", "<f4", "=f4", "|u1").
std::optional<dtype> parse_dtype(std::string_view name) noexcept;

} // namespace sprintrt::protocol
