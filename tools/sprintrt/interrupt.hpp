#pragma once

/// @file
/// Ctrl-C for the commands that wait on Sprint work (`loss`, `automata`,
/// `demo`): the first SIGINT or SIGTERM stops the call in progress through
/// its stop token, the command then leaves through its normal path (the
/// runtime stops its children, no output file is left behind) and exits
/// with 128 + the signal's number (130 for SIGINT), as a shell reports a
/// process ended by it. A second signal ends the process at once, should
/// stopping hang.

#include <string>
#include <vector>

#include "sprintrt/stop_token.hpp"

namespace sprintrt::cli {

/// Catches SIGINT and SIGTERM while it lives. The handler only stores the
/// signal's number in an atomic (async-signal-safe); the waiting thread
/// reads it through the stop source's poll hook. One at a time.
class interrupt_guard {
public:
  /// Installs the handlers (SA_RESETHAND: the second signal is deadly).
  interrupt_guard();

  /// Restores the dispositions found at construction.
  ~interrupt_guard();

  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;

  /// A token that asks to stop once a signal arrived (checked on the
  /// waiting thread every `stop_token::poll_interval`).
  stop_token token() const { return source_.get_token(); }

  /// Returns whether a signal arrived.
  bool interrupted() const;

  /// The exit status for the signal that arrived: 128 + its number.
  int exit_status() const;

private:
  stop_source source_;
};

/// Removes the files in `paths` that exist (outputs of an interrupted
/// command); errors are ignored, as the command is failing already.
void remove_outputs(const std::vector<std::string>& paths);

} // namespace sprintrt::cli
