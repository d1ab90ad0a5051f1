#pragma once

/// @file
/// Reading and writing NumPy `.npy` files (format versions 1.0, 2.0 and 3.0)
/// for the `sprintrt loss` and `sprintrt automata` commands.
///
/// Only what those commands need is supported: C-order arrays of the element
/// types of `protocol::dtype`, stored little-endian (descr `<f4`, `<f8`, `<i4`,
/// `<u4`, `<i8`, `|u1`; `=` counts as little-endian, `|` ("not applicable") is
/// accepted for the 1-byte type only, `>` is refused but for the 1-byte type,
/// where it makes no difference). Every other file is refused with an error
/// that names the file and says exactly what is wrong with it.
///
/// Reading never allocates more than the file holds: the header's shape is
/// checked against the file size before any buffer is made, and the data is
/// read straight into its final buffer (`read_npy_exact` gives it as a
/// `std::vector<T>` that `sprintrt::tensor::from_vector` adopts without a copy).
///
/// Writing produces the bytes `numpy.save` produces (NumPy 1.24): version 1.0
/// unless the header needs more than 65535 bytes (then 2.0), the header dict
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }`, NumPy's spare
/// spaces for growing the first axis, and padding so the data starts at a
/// multiple of 64 bytes.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/span.hpp"
#include "protocol/dtype.hpp"
#include "protocol/ndarray_access.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::cli {

/// An array read from or written to an `.npy` file, of any supported dtype.
struct npy_array {
  /// The element type.
  protocol::dtype type = protocol::dtype::float32;
  /// The extent of each dimension (empty for a 0-d array, which has one
  /// element).
  std::vector<size_t> shape;
  /// The elements in C order, little-endian: `num_elements() *
  /// item_size(type)` bytes.
  std::vector<std::byte> data;

  /// Returns the product of the shape (1 for a 0-d array). The product must
  /// fit in `size_t`, as it does for every array `read_npy` returns.
  size_t num_elements() const noexcept;
};

/// An array whose element type is fixed at compile time (see `read_npy_exact`).
template <class T>
struct npy_typed_array {
  /// The extent of each dimension (empty for a 0-d array).
  std::vector<size_t> shape;
  /// The elements in C order.
  std::vector<T> values;
};

/// Reads the `.npy` file at `path`. Fails with `io_error` if the file cannot
/// be opened, examined or read (or is not a regular file), and with
/// `invalid_input` for anything wrong with its contents: a missing magic
/// string, an unsupported version, a truncated or unparseable header, a
/// Fortran-order or big-endian array, an unsupported dtype, a shape whose size
/// overflows, or data shorter or longer than the shape says. Every message
/// starts with "npy file '<path>': ".
caf::expected<npy_array> read_npy(const std::string& path);

/// Reads the `.npy` file at `path`, whose dtype must be exactly
/// `protocol::dtype_of<T>()`, straight into a `std::vector<T>`: no conversion
/// and no copy (for float32 log-posteriors that become a `tensor`). Fails like
/// `read_npy`, and with `invalid_input` if the dtype differs ("has dtype
/// float64, expected float32"). `T` is one of float, double, int32_t, uint32_t,
/// int64_t and uint8_t.
template <class T>
caf::expected<npy_typed_array<T>> read_npy_exact(const std::string& path);

/// Returns the dtype of the `.npy` file at `path` from its header, without
/// reading its data. Fails like `read_npy` for a file that cannot be opened or
/// whose header is wrong.
caf::expected<protocol::dtype> read_npy_dtype(const std::string& path);

/// Writes `data`, the C-order elements of an array of dtype `type` and shape
/// `shape`, as an `.npy` file at `path`, byte for byte as `numpy.save` would.
/// The file is written to a temporary file next to `path`, flushed to disk,
/// then renamed over `path`, so that readers see either the old file or the
/// complete new one. Fails with `invalid_input` if the size of `data` does not
/// match the shape, and with `io_error` naming the file if any file operation
/// fails (the temporary file is removed then).
caf::error write_npy(const std::string& path, protocol::dtype type, span<const size_t> shape,
                     byte_span data);

/// Writes `array` like `write_npy(path, array.type, array.shape, array.data)`.
caf::error write_npy(const std::string& path, const npy_array& array);

/// Writes `values` as an array of shape `shape` and dtype `dtype_of<T>()`, e.g.
/// `write_npy<float>(path, shape, error_signal)`.
template <class T>
caf::error write_npy(const std::string& path, span<const size_t> shape, span<const T> values) {
  return write_npy(path, protocol::dtype_of<T>(), shape, as_bytes(values));
}

/// Renders a shape as NumPy prints it: "()", "(3,)", "(3, 4)".
std::string npy_shape_string(span<const size_t> shape);

namespace detail {

/// Returns NumPy's name of the arithmetic type `T`, e.g. "uint32".
template <class T>
std::string npy_type_name() {
  if constexpr (std::is_floating_point_v<T>)
    return "float" + std::to_string(sizeof(T) * 8);
  else
    return (std::is_signed_v<T> ? "int" : "uint") + std::to_string(sizeof(T) * 8);
}

/// Returns the error for converting `array` to elements named `to_name` (of
/// `to_size` bytes, floating or not) that `values_as` refuses before looking at
/// any value, or no error.
caf::error check_npy_conversion(const npy_array& array, bool to_floating, size_t to_size,
                                const std::string& to_name);

/// Returns the error for element `index` of `array` not fitting in `to_name`.
caf::error npy_value_out_of_range(const npy_array& array, size_t index, const std::string& to_name);

/// Returns whether the integer `x` is representable as a `To`.
template <class To, class From>
constexpr bool fits_in(From x) noexcept {
  if constexpr (std::is_signed_v<From>) {
    if (x < 0)
      return std::is_signed_v<To> &&
             static_cast<intmax_t>(x) >= static_cast<intmax_t>(std::numeric_limits<To>::min());
  }
  return static_cast<uintmax_t>(x) <= static_cast<uintmax_t>(std::numeric_limits<To>::max());
}

/// Converts `count` little-endian `From` values at `src` into `dst`. Returns
/// the index of the first integer that does not fit in `To`, or `count`.
template <class From, class To>
size_t convert_npy_values(const std::byte* src, size_t count, To* dst) noexcept {
  for (size_t i = 0; i < count; ++i) {
    From x;
    std::memcpy(&x, src + i * sizeof(From), sizeof(From));
    if constexpr (std::is_integral_v<To>) {
      if (!fits_in<To>(x))
        return i;
    }
    dst[i] = static_cast<To>(x);
  }
  return count;
}

} // namespace detail

/// Returns the elements of `array` as `T` values. Integer arrays (int32,
/// uint32, int64, uint8) convert to any integer `T`, every value checked: one
/// that does not fit fails with `invalid_input` ("element 1 of the int64 array
/// is -3, which does not fit in uint32"). Floating-point arrays convert to a
/// floating-point `T` that is at least as wide (float32 to double, not the
/// reverse). Conversions between integers and floating point are refused. The
/// messages do not know the file: put its name in front with `with_context`.
template <class T>
caf::expected<std::vector<T>> values_as(const npy_array& array) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool> &&
                    !std::is_same_v<T, long double>,
                "values_as converts to integer types, float and double");
  const auto to_name = detail::npy_type_name<T>();
  if (auto err =
          detail::check_npy_conversion(array, std::is_floating_point_v<T>, sizeof(T), to_name))
    return err;
  const size_t count = array.num_elements();
  std::vector<T> result(count);
  const std::byte* src = array.data.data();
  size_t done = count;
  using protocol::dtype;
  if constexpr (std::is_floating_point_v<T>) {
    if (array.type == dtype::float32)
      done = detail::convert_npy_values<float>(src, count, result.data());
    else
      done = detail::convert_npy_values<double>(src, count, result.data());
  } else {
    switch (array.type) {
    case dtype::int32:
      done = detail::convert_npy_values<int32_t>(src, count, result.data());
      break;
    case dtype::uint32:
      done = detail::convert_npy_values<uint32_t>(src, count, result.data());
      break;
    case dtype::int64:
      done = detail::convert_npy_values<int64_t>(src, count, result.data());
      break;
    default:
      done = detail::convert_npy_values<uint8_t>(src, count, result.data());
      break;
    }
  }
  if (done != count)
    return detail::npy_value_out_of_range(array, done, to_name);
  return result;
}

} // namespace sprintrt::cli
