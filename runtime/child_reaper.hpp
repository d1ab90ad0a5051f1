#pragma once

/// @file
/// Reaping sprintrt's own child processes, and only those.
///
/// A SIGCHLD handler (an Asio signal_set, so it runs on the io thread, not in
/// signal context) checks each watched pid with `waitpid(pid, WNOHANG)`.
/// It never calls `waitpid(-1)`: that would steal the exit status of children
/// that other code in the process (the trainer, Boost.Process) started.
/// SIGCHLDs coalesce, so every watched pid is checked on every signal.

#include <sys/types.h>

#include <functional>
#include <map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

namespace sprintrt::runtime {

/// The status reported for a child that someone else reaped (its real
/// status is lost): not a valid wait status.
constexpr int reaped_elsewhere = -1;

/// Watches child processes and reaps them when they exit. All member
/// functions run on the io thread.
class child_reaper {
public:
  /// Starts listening for SIGCHLD on `io`.
  explicit child_reaper(boost::asio::io_context& io);

  /// Calls `on_exit(wait_status)` once `pid` has exited and was reaped
  /// (`reaped_elsewhere` if another waitpid got it first). Checks at once,
  /// in case the child died before it was watched.
  void watch(pid_t pid, std::function<void(int)> on_exit);

  /// Sends SIGKILL to `pid` if it is watched (and not yet reaped). The reap
  /// itself follows through the SIGCHLD handler.
  void kill(pid_t pid);

  /// Returns the number of children not yet reaped.
  size_t watched() const noexcept { return watched_.size(); }

  /// Kills every watched child, waits for each (blocking, but SIGKILL makes
  /// it immediate) and calls its callback; stops listening. For shutdown.
  void kill_all();

private:
  void arm();
  void poll();

  boost::asio::signal_set signals_;
  std::map<pid_t, std::function<void(int)>> watched_;
};

} // namespace sprintrt::runtime
