#pragma once

/// @file
/// Blocking I/O on the two pipe ends `sprint-sim` inherits from its parent:
/// checking them, reading what arrived, writing a whole reply. Every call
/// retries on EINTR and turns any other failure into an `io_error` naming the
/// descriptor and the system's reason.

#include <cstddef>

#include "common/span.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::sim_tool {

/// Which way a pipe end must be open.
enum class pipe_direction : unsigned char { read, write };

/// Checks that `fd` is open for `direction` and clears O_NONBLOCK on it, so
/// that reads wait for data and writes for room. `what` names it in errors
/// ("p2c_fd").
caf::error prepare_pipe_end(int fd, pipe_direction direction, const char* what);

/// Reads at most `room.size()` bytes (waiting for at least one). Returns the
/// number read; 0 means end of file.
caf::expected<size_t> read_some(int fd, mutable_byte_span room);

/// Writes all of `bytes`, however many write(2) calls that takes.
caf::error write_all(int fd, byte_span bytes);

/// Never returns: waits for a signal that ends the process (the hang faults).
[[noreturn]] void sleep_until_killed();

} // namespace sprintrt::sim_tool
