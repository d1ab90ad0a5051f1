#pragma once

/// @file
/// Encoding values as pickles in the conservative form every Python 3 reads
/// (docs/protocol.md section 3): PROTO 3, BININT*/LONG1, BINFLOAT, BINUNICODE,
/// BINBYTES, TUPLE*, no memo, and arrays as a call of RETURNN's
/// `make_numpy_ndarray_fromstring(bytes, dtype_name, shape)`.
///
/// The writer streams opcodes into a `byte_buffer`; array data is copied once,
/// straight from the caller's memory (possibly strided, e.g. one segment of a
/// time-major batch) into the message.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/span.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/dtype.hpp"
#include "protocol/pickle_globals.hpp"
#include "protocol/pickle_value.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::protocol {

/// Array data as `rows` rows of `row_bytes` bytes, `stride` bytes apart.
/// Contiguous data is one row, or rows with `stride == row_bytes`.
struct strided_bytes {
  const std::byte* first = nullptr;
  size_t rows = 0;
  size_t row_bytes = 0;
  size_t stride = 0;

  /// Views contiguous bytes.
  static strided_bytes contiguous(byte_span bytes) noexcept {
    return {bytes.data(), 1, bytes.size(), bytes.size()};
  }

  /// Returns the number of data bytes.
  size_t size() const noexcept { return rows * row_bytes; }
};

/// Appends pickle instructions to a buffer. The caller emits a well-formed
/// sequence: `begin()`, one value (built from the calls below), `end()`.
class pickle_writer {
public:
  /// Writes into `out`, after whatever it already holds.
  explicit pickle_writer(byte_buffer& out) noexcept : out_(out) {}

  /// Starts a pickle (PROTO 3).
  void begin();

  /// Ends the pickle (STOP).
  void end();

  void none();
  void boolean(bool x);
  /// An int: BININT1/BININT2/BININT when it fits, else LONG1.
  void integer(int64_t x);
  void floating(double x);
  /// A str; `text` must be UTF-8.
  void str(std::string_view text);
  void bytes(byte_span data);

  /// Opens a tuple of `n` items: the caller writes the items, then calls
  /// `end_tuple(n)` with the same `n`.
  void begin_tuple(size_t n);
  void end_tuple(size_t n);

  /// Opens a list; the caller writes the items, then calls `end_list()`.
  void begin_list();
  void end_list();

  /// Opens a dict; the caller writes key, value, key, value, ..., then
  /// calls `end_dict()`.
  void begin_dict();
  void end_dict();

  /// An array via `<module>.make_numpy_ndarray_fromstring`. `data` must hold
  /// exactly prod(shape) * item_size(type) bytes.
  void ndarray(std::string_view module, dtype type, span<const size_t> shape,
               const strided_bytes& data);

  /// A NumPy scalar, in the form NumPy's own pickling produces.
  void numpy_scalar(const protocol::numpy_scalar& x);

private:
  void opcode(uint8_t code) { out_.push_back(static_cast<std::byte>(code)); }
  void raw_le(uint64_t x, size_t n);
  /// Writes BINBYTES (or BINBYTES8 beyond 4 GiB) with the length `size`;
  /// the caller appends the bytes.
  void bytes_header(size_t size);
  void global(std::string_view module, std::string_view name);

  byte_buffer& out_;
};

/// Writes `x` with `writer`, arrays via `array_module`. Fails with
/// `invalid_message` for values that cannot be sent: pickle-machine objects
/// (globals, bare dtypes) and containers nested deeper than `value::max_depth`.
caf::error write_value(pickle_writer& writer, const value& x,
                       std::string_view array_module = default_array_module);

/// Appends one complete pickle of `x` to `out`.
caf::error write_pickle(byte_buffer& out, const value& x,
                        std::string_view array_module = default_array_module);

} // namespace sprintrt::protocol
