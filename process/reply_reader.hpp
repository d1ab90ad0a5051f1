#pragma once

/// @file
/// The child's replies: its byte stream split into messages on the io
/// thread, with what other threads hand over for them. Internal to
/// `sprint_channel`.
///
/// Two things come from the threads that send requests and consume replies,
/// without waking the io thread: the size limit of each request's reply
/// (`expect`, before the request is written, so a reply never arrives before
/// its limit), and message buffers given back for reuse (`recycle`). The io
/// thread takes both over before it reads the next bytes.

#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

#include "protocol/byte_buffer.hpp"
#include "protocol/framing.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::process {

/// Splits a child's replies into messages, bounding each by its request.
class reply_reader {
public:
  /// Receives each complete message (the pickle, without framing).
  using message_handler = std::function<void(protocol::byte_buffer message)>;

  /// A reader for replies in framing `f`.
  explicit reply_reader(protocol::framing f) : decoder_(f) {}

  /// Any thread: one more reply will come, of at most `max_size` bytes (a
  /// larger announced reply fails the stream as soon as it is seen, instead
  /// of waiting for bytes that never come).
  void expect(size_t max_size);

  /// Any thread: hands back a buffer from a message for reuse.
  void recycle(protocol::byte_buffer buffer);

  /// io thread: space for the next bytes read from the pipe (see
  /// `frame_decoder::prepare`).
  mutable_byte_span prepare(size_t hint) { return decoder_.prepare(hint); }

  /// io thread: `n` bytes were read into the last `prepare` span. Passes
  /// each message they complete to `on_message`, in order, even those before
  /// a framing error; returns the framing error, after which the stream
  /// cannot be trusted.
  caf::error commit(size_t n, const message_handler& on_message);

  /// io thread: as `commit`, for bytes read elsewhere (a dead child's pipe
  /// drained at the end).
  caf::error feed(byte_span bytes, const message_handler& on_message);

  /// Returns the bytes received of a message not yet complete.
  size_t partial_bytes() const noexcept { return decoder_.partial_bytes(); }

private:
  /// Gives the decoder the limits and buffers handed over since last time.
  void adopt_handoffs();

  /// Passes on the complete messages, then returns `framing_error`.
  caf::error deliver(caf::error framing_error, const message_handler& on_message);

  protocol::frame_decoder decoder_;
  /// Guards `recycled_` and `limits_`.
  std::mutex handoff_mutex_;
  std::vector<protocol::byte_buffer> recycled_;
  std::vector<size_t> limits_;
};

} // namespace sprintrt::process
