#pragma once

/// @file
/// The two framings of docs/protocol.md section 2, for both directions.
///
/// Encoding wraps one pickle written into a `byte_buffer`. Decoding is
/// incremental, for bytes arriving from a non-blocking pipe in pieces of any
/// size: `prepare()` says where the next bytes should go, `commit(n)` says
/// how many arrived, and complete messages come out of `next()` in order.
///
/// The decoder never allocates what the peer merely claims: a message buffer
/// grows with the bytes that actually arrived (at most doubling), up to the
/// configured maximum message size, which is checked before anything grows.
/// Large messages are received in place: once a length prefix is known, the
/// pipe is read straight into the message's own buffer, and in `raw` framing
/// the receive buffer itself becomes the message. Finished message buffers
/// can be handed back with `recycle()` so that steady traffic does not
/// allocate (the page faults of a fresh large buffer cost more than the copy).

#include <cstddef>
#include <deque>
#include <optional>
#include <string_view>

#include "common/span.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/pickle_scanner.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::protocol {

/// How messages are delimited on a pipe.
enum class framing : uint8_t {
  /// A little-endian int32 byte count N > 0, then N bytes of one pickle
  /// (current RETURNN).
  length_prefixed,
  /// Pickles back to back; each ends at its STOP opcode (before 2023).
  raw,
};

/// Returns "length_prefixed" or "raw".
const char* to_string(framing f) noexcept;

/// Parses "length_prefixed" or "raw".
std::optional<framing> parse_framing(std::string_view name) noexcept;

/// The largest message the int32 length prefix can describe: 2 GiB - 1.
constexpr size_t default_max_message_size = 2147483647;

/// Starts a framed message at the end of `out`: reserves the length prefix
/// when `f` needs one. Returns the offset to pass to `end_frame`.
size_t begin_frame(byte_buffer& out, framing f);

/// Completes the message started at `start`: fills in the length prefix.
/// Fails with `message_too_large` (and removes the message from `out`) if the
/// pickle exceeds `max_message_size`.
caf::error end_frame(byte_buffer& out, framing f, size_t start,
                     size_t max_message_size = default_max_message_size);

/// Splits an incoming byte stream into messages.
class frame_decoder {
public:
  /// A decoder for `f` accepting messages up to `max_message_size` bytes.
  explicit frame_decoder(framing f, size_t max_message_size = default_max_message_size);

  /// Declares that one more message will come, of at most `max_size` bytes
  /// (and at most the decoder's maximum): a reply to a request whose size
  /// the request bounds. Limits apply in order, one per message, to the
  /// messages not yet begun; messages beyond the declared ones get the
  /// decoder's maximum. A length prefix (or raw pickle) beyond its limit
  /// fails with `message_too_large` as soon as it is seen, before the body
  /// arrives.
  void expect(size_t max_size);

  /// Returns writable space for the next bytes from the stream: at least one
  /// byte, usually `hint` bytes or more, and exactly the rest of the current
  /// message body when a length prefix announced it (so large bodies are read
  /// in place). Invalidated by any other call.
  mutable_byte_span prepare(size_t hint = 64 * 1024);

  /// Declares that the first `n` bytes of the last `prepare()` span were
  /// filled. Completes and queues messages; fails with `protocol_error`
  /// (bad length prefix, unknown opcode in raw framing) or
  /// `message_too_large`. After an error the stream cannot be resynchronized:
  /// the decoder stays failed.
  caf::error commit(size_t n);

  /// Copies `bytes` in through `prepare()`/`commit()`: for tests and tools.
  caf::error feed(byte_span bytes);

  /// Removes and returns the oldest complete message (just the pickle, without
  /// its length prefix), if any.
  std::optional<byte_buffer> next();

  /// Returns the number of complete messages waiting in `next()`.
  size_t pending() const noexcept { return complete_.size(); }

  /// Returns the number of bytes received of a message not yet complete: at
  /// end of stream, a non-zero value means the peer stopped mid-message.
  size_t partial_bytes() const noexcept;

  /// Hands back a buffer from `next()` for reuse by later messages.
  void recycle(byte_buffer&& buffer);

  /// Returns the framing.
  framing mode() const noexcept { return framing_; }

private:
  /// The size limit of the message being received or next to begin.
  size_t current_limit() const noexcept;

  /// A message is complete: its declared limit, if any, is used up.
  void limit_used() noexcept;

  caf::error commit_length_prefixed(size_t n);
  caf::error commit_raw(size_t n);
  caf::error fail(caf::error err);

  framing framing_;
  size_t max_size_;
  caf::error failed_;
  /// length_prefixed: the prefix so far, and the announced body size.
  std::byte header_[4];
  size_t header_size_ = 0;
  std::optional<size_t> body_size_;
  /// length_prefixed: bytes received past the current message's end by a
  /// `prepare(hint)` read; raw: the receive buffer, i.e. the current message.
  byte_buffer staging_;
  /// length_prefixed: the current message's body.
  byte_buffer body_;
  /// raw: finds the end of the message at the start of `staging_`.
  pickle_scanner scanner_;
  /// Whether the last prepare() pointed into `body_` rather than `staging_`.
  bool prepared_body_ = false;
  std::deque<byte_buffer> complete_;
  /// The limits declared by `expect`, for the messages to come in order.
  std::deque<size_t> limits_;
  /// A buffer handed back by `recycle` for the next body (moved out, it is
  /// empty again).
  byte_buffer spare_;
};

} // namespace sprintrt::protocol
