#pragma once

/// @file
/// Finding where a pickle ends in a byte stream, without decoding it.
///
/// The legacy `raw` framing writes pickles back to back with no length, so a
/// reader on a non-blocking pipe must tell from the bytes received so far
/// whether a whole message is there. The scanner walks instruction by
/// instruction (skipping arguments by their declared sizes) until STOP, and
/// remembers where it stopped, so feeding a message in many small chunks costs
/// O(message size) in total.

#include <cstddef>
#include <optional>

#include "common/span.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::protocol {

/// Incrementally finds the end of the pickle at the start of a growing buffer.
class pickle_scanner {
public:
  /// A scanner for messages of at most `max_message_size` bytes.
  explicit pickle_scanner(size_t max_message_size) noexcept : max_size_(max_message_size) {}

  /// Scans `data`, the bytes received so far of the current message (a
  /// superset of what the previous call saw). Returns the size of the pickle
  /// (the offset just after STOP) once complete, nothing while more bytes are
  /// needed, or an error for an unknown opcode (`protocol_error`) or a message
  /// exceeding the maximum size (`message_too_large`).
  caf::expected<std::optional<size_t>> scan(byte_span data);

  /// Sets the largest message size accepted from now on.
  void set_max_size(size_t max_message_size) noexcept { max_size_ = max_message_size; }

  /// Forgets the current message, to scan the next one from its start.
  void reset() noexcept { position_ = 0; }

  /// Returns the offset of the first instruction not yet known to be complete.
  size_t position() const noexcept { return position_; }

private:
  size_t max_size_;
  size_t position_ = 0;
};

} // namespace sprintrt::protocol
