#pragma once

/// @file
/// The one thread that does all of sprintrt's I/O.
///
/// Every pipe, signal and timer of every Sprint child lives on one Boost.Asio
/// io_context that runs on its own thread. Actors never block on I/O: they
/// post work here, and completions come back to them as messages. Objects
/// bound to the io_context (descriptors, timers, the child reaper) are touched
/// only on this thread.

#include <chrono>
#include <memory>

namespace boost::asio {
class io_context;
} // namespace boost::asio

namespace sprintrt::process {

class child_reaper;

/// Runs an io_context on a dedicated thread. Constructing one also makes the
/// process ignore SIGPIPE: a write to a pipe whose reader died must fail with
/// EPIPE, not kill the trainer (Asio only avoids SIGPIPE on sockets).
class io_thread {
public:
  /// Starts the thread.
  io_thread();

  /// Stops (see `stop`) and joins.
  ~io_thread();

  io_thread(const io_thread&) = delete;
  io_thread& operator=(const io_thread&) = delete;

  /// Returns the io_context, to bind Asio objects to it.
  boost::asio::io_context& context() noexcept;

  /// Returns the reaper of this thread's children; use it on the io thread only.
  child_reaper& reaper() noexcept;

  /// Returns whether `stop` was called: no child may be started any more
  /// (the reaper stops listening), and work posted from now on may not run.
  bool stopped() const noexcept;

  /// Waits up to `grace` for children that are still exiting (e.g. after
  /// `exit` was sent), then kills and reaps the rest, stops the io_context
  /// and joins the thread. Afterwards no child of this thread is left running
  /// or unreaped. Idempotent; must not be called on the io thread.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds{0});

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sprintrt::process
