#pragma once

/// @file
/// The pipes to one Sprint child, driven on the io thread.
///
/// A channel starts the child, writes messages to it, splits what it sends
/// back into messages (`frame_decoder`), forwards its output to the log, and
/// reaps it. Everything it learns it reports through callbacks that run on
/// the io thread (the worker actor turns them into messages to itself). Its
/// life ends in exactly one `down` report, after the child was reaped and
/// every descriptor closed: whether the child exited by itself, was stopped
/// with `exit`, or was killed after a failure. A child that has not exited
/// `kill_wait` after SIGKILL is given up on instead of reaped (its report
/// says `not_reaped`); the reaper still reaps it whenever it exits.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "process/child_down.hpp"
#include "protocol/byte_buffer.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt {
class shared_region;
} // namespace sprintrt

namespace sprintrt::process {

class io_thread;

/// What a channel reports, on the io thread.
struct channel_events {
  /// The child runs, with this pid and argument list.
  std::function<void(pid_t pid, const std::vector<std::string>& argv)> started;
  /// A complete message from the child (the pickle, without framing).
  std::function<void(protocol::byte_buffer message)> message;
  /// A message was written; its buffer comes back for reuse.
  std::function<void(protocol::byte_buffer buffer)> sent;
  /// The channel ended (see `child_down`); nothing follows.
  std::function<void(child_down)> down;
};

/// A handle to the channel of one Sprint child. Every member function may be
/// called from any thread: it posts its work to the io thread (`send` writes
/// to an idle pipe itself, `recycle` only leaves the buffer for the io
/// thread). Dropping the
/// handle neither stops nor kills the child; `io_thread::stop` does, at the
/// latest.
class sprint_channel {
public:
  /// Starts a child for `opts` on `io`'s thread; `name` labels its log lines.
  /// A failure to start is reported as `down` with an `spawn_failed` cause.
  /// With `shared_memory`, the child gets that region (child_spawn.hpp); the
  /// channel holds it until the child is started.
  static sprint_channel open(io_thread& io, sprint_options opts, std::string name,
                             channel_events events,
                             std::shared_ptr<const shared_region> shared_memory = nullptr);

  /// Writes `message` (framed) after the ones before it; the child answers
  /// it with one message of at most `max_reply_size` bytes, or breaks the
  /// protocol (a larger length prefix fails the channel as soon as it is
  /// read, like garbage). When nothing is
  /// queued before it and the pipe takes all of it at once, it is written
  /// right here, on the caller's thread (a non-blocking write, no hand-off
  /// to the io thread and no wake-up of it: half of the hand-offs of a small
  /// request), and the buffer comes straight back for reuse. Otherwise the
  /// io thread writes what is left and `events.sent` returns the buffer.
  [[nodiscard]] std::optional<protocol::byte_buffer> send(protocol::byte_buffer message,
                                                          size_t max_reply_size) const;

  /// Hands a buffer from `events.message` back for reuse by the next
  /// messages (kept for the io thread, which is not woken for it).
  void recycle(protocol::byte_buffer buffer) const;

  /// Kills the child now (SIGKILL); `cause` becomes the down report's cause
  /// unless a failure came first. The report follows the child's exit, or
  /// `kill_wait` at the latest.
  void kill(caf::error cause) const;

  /// Stops the child gracefully: writes `exit_message` after any queued
  /// messages, closes the pipe to the child, and kills the child if it has
  /// not exited after `grace`. Messages the child still sends are reported.
  void stop(std::chrono::milliseconds grace, protocol::byte_buffer exit_message) const;

private:
  struct impl;
  explicit sprint_channel(std::shared_ptr<impl> p) : impl_(std::move(p)) {}
  std::shared_ptr<impl> impl_;
};

} // namespace sprintrt::process
