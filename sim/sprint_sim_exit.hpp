#pragma once

/// @file
/// The exit statuses of `sprint-sim`, the simulated Sprint executable: what a
/// parent sees from `waitpid`, and what its tests check.

namespace sprintrt::sim {

/// The exit statuses of `sprint-sim`: what a parent sees from `waitpid`.
enum class sprint_sim_exit : int {
  /// The parent sent `exit`.
  ok = 0,
  /// Bad arguments, a corpus or pipe that cannot be used, end of input
  /// without `exit`, or a failing read or write on a pipe.
  failure = 1,
  /// `fault=exit-at-start`.
  exit_at_start = 2,
  /// `fault=crash` or `crash-segment=NAME`.
  crash = 3,
  /// The bytes on the request pipe are not framed messages (a bad length
  /// prefix, an unknown opcode in raw framing, a message too large).
  framing_error = 4,
};

} // namespace sprintrt::sim
