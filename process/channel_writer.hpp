#pragma once

/// @file
/// The pipe to one Sprint child: messages written whole and in order, by
/// whichever thread finds the pipe idle, else by the io thread. Internal to
/// `sprint_channel`.
///
/// Half of the thread hand-offs of a small request are its write: so `send`,
/// called on the sender's thread, writes a message itself when nothing is
/// queued or being written and the non-blocking pipe takes all of it at once.
/// Everything else is queued for the io thread, which `pump`s the queue in
/// order with Asio. Both happen under one mutex, and the pipe is closed only
/// under it, so a direct write never races an Asio write or a close.

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/system/error_code.hpp>

#include "protocol/byte_buffer.hpp"

namespace sprintrt::process {

/// Writes framed messages to a child's pipe, in order, never blocking.
class channel_writer {
public:
  /// What became of a message given to `send`.
  struct sent {
    /// The message's buffer, when it was written at once (for reuse).
    std::optional<protocol::byte_buffer> written;
    /// The message waits in the queue: the io thread must `pump`.
    bool queued = false;
  };

  /// Called on the io thread when a queued message was written (its buffer,
  /// for reuse) or its write failed (`error` set; the buffer is dropped).
  using written_handler =
      std::function<void(const boost::system::error_code& error, protocol::byte_buffer buffer)>;

  /// Adopts the pipe `fd` (io thread) and makes it non-blocking: `send`
  /// writes to it from other threads and must never block there.
  void open(boost::asio::io_context& context, int fd);

  /// Any thread: writes `message` now if the pipe is idle and takes it whole,
  /// else queues what is left of it. After `close`, drops it (neither
  /// written nor queued).
  sent send(protocol::byte_buffer message);

  /// io thread: queues `message` after the others without writing it here.
  void enqueue(protocol::byte_buffer message);

  /// io thread: closes the pipe once the queue is empty (the end of input
  /// tells a child that ignores the exit message that we are done).
  void close_when_drained() { close_when_drained_ = true; }

  /// io thread: starts writing the oldest queued message unless a write is
  /// under way or the pipe is closed; `on_written` runs when it completes.
  /// The caller pumps again after each completion. The pending write refers
  /// to this writer: `on_written` must keep it alive (the channel's handler
  /// holds the channel, which owns the writer), or the io context must be
  /// destroyed without running handlers before the writer is.
  void pump(written_handler on_written);

  /// io thread: closes the pipe for good and drops what is queued; later
  /// `send`s drop their message.
  void close();

private:
  /// Guards every member below except `close_when_drained_`.
  std::mutex mutex_;
  /// The pipe while it is open.
  std::optional<boost::asio::posix::stream_descriptor> pipe_;
  std::deque<protocol::byte_buffer> queue_;
  /// Bytes of `queue_.front()` that `send` already wrote itself.
  size_t front_written_ = 0;
  /// An Asio write of `queue_.front()` is under way.
  bool writing_ = false;
  /// `close` was called: messages are dropped.
  bool closed_ = false;
  /// Only the io thread reads or sets it.
  bool close_when_drained_ = false;
};

} // namespace sprintrt::process
