#pragma once

/// @file
/// How the channel to one Sprint child ended: its one `down` report.

#include <sys/types.h>

#include <string>

#include "sprintrt/error.hpp"

namespace sprintrt::process {

/// How a child's channel ended.
struct child_down {
  /// Why: none when the child exited by itself or after `stop`; otherwise the
  /// first failure (spawn error, pipe error, framing error, unexpected end of
  /// the pipe, or the cause passed to `kill`).
  caf::error cause;
  /// The child's pid; -1 if it was never started.
  pid_t pid = -1;
  /// The status from waitpid; meaningless if the child was never started;
  /// `reaped_elsewhere` or `not_reaped` (child_reaper.hpp) if there is none.
  int wait_status = 0;
  /// The last 64 KiB of the child's output (stdout and stderr).
  std::string output;

  /// Returns whether the child exited with status 0.
  bool clean_exit() const noexcept;

  /// Returns the exit status if the child exited, or minus the signal that
  /// killed it (-9 for one given up on after SIGKILL, though it did not end
  /// by it); 0 if it was never started or reaped elsewhere.
  int exit_code() const noexcept;

  /// Describes the end: "exited with status 3", "was killed by signal 9
  /// (Killed)", "was never started".
  std::string describe() const;
};

} // namespace sprintrt::process
