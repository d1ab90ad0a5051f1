#pragma once

/// @file
/// How a message refers to an array in the child's shared-memory region
/// instead of carrying its bytes (docs/protocol.md section 7):
///
///   ("sprintrt_shm", offset: int, "float32", (rows: int, cols: int))
///
/// stands where the float32 [rows, cols] array would be, its first byte at
/// `offset` in the region. Only sprintrt and its own children (`sprint-sim`,
/// `sprintrt_control`) write or read such references, and only after the
/// child accepted the region in its `init` reply. The reader checks the form
/// here; whether the bytes lie inside the region is the region's check
/// (`shared_region::view`).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/pickle_value.hpp"
#include "protocol/pickle_writer.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::protocol {

/// The name of the shared-memory transfer: the tag of every reference and
/// the fourth item of an `init` reply that accepts the region.
constexpr std::string_view shared_memory_tag = "sprintrt_shm";

/// The pymod config key that offers a child sprintrt's shared region; its
/// value is the child's descriptor number of the region.
constexpr std::string_view shared_memory_config_key = "sprintrtSharedMemoryFd";

/// The only element type a reference may name.
constexpr std::string_view shared_array_dtype = "float32";

/// A float32 [rows, cols] array at `offset` in the child's region.
struct shared_array {
  uint64_t offset = 0;
  size_t rows = 0;
  size_t cols = 0;

  /// Returns the array's size in bytes (rows and cols are checked to keep
  /// it below 2^62 when read).
  uint64_t bytes() const noexcept { return uint64_t{rows} * cols * sizeof(float); }
};

/// Writes the reference to `array`.
void write_shared_array(pickle_writer& writer, const shared_array& array);

/// Returns whether `x` has the form of a reference (a tuple whose first
/// item is the tag): what tells a reference from an array on the child's
/// side, before `read_shared_array` checks the rest.
bool is_shared_array(const value& x) noexcept;

/// Reads a reference to a float32 [rows, cols] array; a `rows` or `cols` of
/// 0 takes any positive number (a command's reference, which the child
/// checks against its seg_len). Errors: `invalid_message` naming `what` and the first thing
/// wrong: not a 4-tuple with the tag, a negative offset, a dtype other than
/// float32, a shape that is not two positive ints or other than expected,
/// a size beyond 2^62 bytes.
caf::expected<shared_array> read_shared_array(const value& x, std::string_view what, size_t rows,
                                              size_t cols);

} // namespace sprintrt::protocol
