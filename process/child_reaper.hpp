#pragma once

/// @file
/// Reaping sprintrt's own child processes, and only those, without touching
/// any process-wide state.
///
/// Each watched child gets a pidfd (`pidfd_open`, Linux 5.3+), which becomes
/// readable when the child exits; the io thread waits for it like for any
/// pipe and then reaps exactly that pid with `waitpid(pid, WNOHANG)`. No
/// SIGCHLD handler is installed, so a trainer's own handler keeps working
/// and is the same after sprintrt stops, and `waitpid(-1)` is never called
/// (it would steal the exit status of children that other code in the
/// process started). Where `pidfd_open` is not available, the watched pids
/// are polled every 10 ms instead. Kills go through the pidfd too
/// (`pidfd_send_signal`), so a pid reused after a reap can never be hit.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace sprintrt::process {

/// The status reported for a child that someone else reaped (its real
/// status is lost): not a valid wait status.
constexpr int reaped_elsewhere = -1;

/// The status reported for a child that was given up on: it did not exit
/// within `kill_wait` of SIGKILL. Not a valid wait status.
constexpr int not_reaped = -2;

/// How long a killed child may take to exit before it is given up on.
/// SIGKILL ends a process at once unless it sleeps uninterruptibly in the
/// kernel (a hung NFS or FUSE mount, a stuck driver) or is still unmapping
/// tens of GB; such a child must not hold its requests, or a `stop`, for
/// longer than this. It is still reaped if it ever exits.
constexpr std::chrono::milliseconds kill_wait{1000};

/// Watches child processes and reaps them when they exit. All member
/// functions run on the io thread.
class child_reaper {
public:
  /// A reaper whose waits run on `io`.
  explicit child_reaper(boost::asio::io_context& io);

  /// Calls `on_exit(wait_status)` once `pid` has exited and was reaped
  /// (`reaped_elsewhere` if another waitpid got it first). Checks at once,
  /// in case the child died before it was watched.
  void watch(pid_t pid, std::function<void(int)> on_exit);

  /// Sends SIGKILL to `pid` if it is watched (and not yet reaped). The reap
  /// itself follows when its pidfd becomes readable.
  void kill(pid_t pid);

  /// Marks `pid` as given up on (it did not exit after SIGKILL): it is
  /// still reaped if it exits, but a shutdown neither waits for it nor
  /// kills it again (`kill_all` hands it to its background reaper at once).
  void abandon(pid_t pid);

  /// Returns the number of children not yet reaped, leaving out those
  /// given up on.
  size_t watched() const noexcept;

  /// Kills every watched child, waits for them (blocking) up to `kill_wait`
  /// in all and calls each one's callback. For shutdown: a child still there
  /// after that (see `kill_wait`) is reported as `not_reaped` and left to a
  /// detached thread that reaps it whenever it exits, so it never stays a
  /// zombie.
  void kill_all();

  /// For tests only: kills send `signal` instead of SIGKILL. 0 sends none,
  /// which makes every child behave like one stuck in the kernel.
  void set_kill_signal_for_tests(int signal) noexcept { kill_signal_ = signal; }

private:
  /// One watched child: its pidfd (none where pidfd_open is missing) and
  /// what to call when it is reaped.
  struct child {
    std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd;
    std::function<void(int)> on_exit;
    /// Checked by the poll timer: it has no pidfd, or its pidfd became
    /// readable before `waitpid` could reap it (a traced child), and the
    /// edge-triggered wait would not fire again.
    bool polled = false;
    /// Given up on (see `abandon`).
    bool abandoned = false;
  };

  /// Waits for `pid`'s pidfd to become readable, then tries to reap it.
  void wait_for(pid_t pid);

  /// Reaps `pid` if it has exited and calls its callback; returns whether
  /// it did.
  bool try_reap(pid_t pid);

  /// Polls the `polled` children every 10 ms while there are any.
  void poll_later();

  /// Sends the kill signal to `pid`, whose entry is `entry`.
  void send_kill(pid_t pid, const child& entry) const;

  /// Closes `entry`'s pidfd and calls its callback with `status`.
  static void report(child& entry, int status);

  /// Reports `pid` as `not_reaped` and leaves it to a detached thread that
  /// reaps it whenever it exits.
  static void give_up(pid_t pid, child& entry);

  boost::asio::io_context& io_;
  boost::asio::steady_timer poll_timer_;
  bool polling_ = false;
  int kill_signal_;
  std::map<pid_t, child> watched_;
};

} // namespace sprintrt::process
