#pragma once

/// @file
/// How a request's one large array reaches its child and its answer comes
/// back: in the pipe, or through a slot of the child's shared region
/// (docs/protocol.md section 7). A command writes and reads its arrays
/// through an `array_sink` and never sees the region or its slots. Internal
/// to the actors library.

#include <optional>

#include <caf/expected.hpp>

#include "actors/worker/shared_slots.hpp"
#include "protocol/shared_array.hpp"
#include "sprintrt/matrix_slice.hpp"

namespace sprintrt::detail {

/// The way one request's arrays go: the pipe (the default), or a slot.
class array_sink {
public:
  /// Arrays go in the pipe, inside the messages.
  array_sink() = default;

  /// Arrays go through `slot` of a child's region.
  explicit array_sink(shared_slot slot) : slot_(slot) {}

  /// Returns whether arrays go through the region (then a command sends
  /// references instead of arrays).
  bool shared() const noexcept { return slot_.has_value(); }

  /// Copies `array` into the slot, rows contiguous, and returns the
  /// reference the command sends in its place. Only when `shared()`.
  /// Errors: the region's, if the slot does not lie inside it.
  caf::expected<protocol::shared_array> put(const matrix_slice& array) const;

  /// Returns the `reference`d array of a reply, checked before a byte is
  /// read: inside the region, and in the slot (where the request's array
  /// was, which the child overwrites with its answer); `invalid_message`
  /// naming `what` otherwise. Only when `shared()`. The child may still
  /// write there: what the caller copies out is the answer.
  caf::expected<const float*> get(const protocol::shared_array& reference, const char* what) const;

private:
  std::optional<shared_slot> slot_;
};

} // namespace sprintrt::detail
