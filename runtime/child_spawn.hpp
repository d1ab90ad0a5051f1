#pragma once

/// @file
/// Starting a Sprint child process exactly as PROTOCOL.md section 1 says.
///
/// The child gets exactly five file descriptors: 0 is /dev/null, 1 and 2 go
/// into one pipe the parent reads (Sprint logs to stdout; both streams are
/// "the child's output" for diagnostics), 3 is the write end of the
/// child-to-parent pipe and 4 the read end of the parent-to-child pipe.
/// Every other descriptor is closed in the child (`closefrom`), whatever flags
/// the rest of the process (CAF, Asio, the trainer) gave its own. The child
/// starts with default signal dispositions and an empty signal mask, in the
/// environment of the options, without a shell (`posix_spawn`).

#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/unique_fd.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::runtime {

/// The child's descriptor number of the child-to-parent pipe (`c2p_fd`).
constexpr int child_c2p_fd = 3;

/// The child's descriptor number of the parent-to-child pipe (`p2c_fd`).
constexpr int child_p2c_fd = 4;

/// The size both protocol pipes get (`F_SETPIPE_SZ`): large messages move
/// in fewer, larger chunks (measured: ~2 GB/s instead of ~1.3 GB/s).
constexpr int pipe_buffer_size = 1 << 20;

/// The parent's side of a freshly started child. All descriptors are
/// non-blocking and close-on-exec.
struct spawned_child {
  /// The child's process id; the caller must reap it.
  pid_t pid = -1;
  /// Write end of the parent-to-child pipe.
  unique_fd to_child;
  /// Read end of the child-to-parent pipe.
  unique_fd from_child;
  /// Read end of the child's stdout and stderr.
  unique_fd output;
  /// The exact argument list the child was started with.
  std::vector<std::string> argv;
};

/// Checks that `path` names an executable regular file. Fails with
/// `spawn_failed` saying which of the three it is not.
caf::error check_executable(const std::string& path);

/// Starts the Sprint child for `opts`, with environment variables in the
/// Sprint arguments expanded against `parent_environ` changed by `opts.env`.
/// Fails with `spawn_failed` (missing or non-executable program, or a failing
/// system call, named with its errno text); nothing is left open then.
caf::expected<spawned_child> spawn_sprint_child(const sprint_options& opts,
                                                const char* const* parent_environ);

} // namespace sprintrt::runtime
