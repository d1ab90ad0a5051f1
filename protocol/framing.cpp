#include "protocol/framing.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/little_endian.hpp"

namespace sprintrt::protocol {

const char* to_string(framing f) noexcept {
  return f == framing::raw ? "raw" : "length_prefixed";
}

std::optional<framing> parse_framing(std::string_view name) noexcept {
  if (name == "length_prefixed")
    return framing::length_prefixed;
  if (name == "raw")
    return framing::raw;
  return std::nullopt;
}

// -- encoding -------------------------------------------------------------------

size_t begin_frame(byte_buffer& out, framing f) {
  size_t start = out.size();
  if (f == framing::length_prefixed) {
    out.reserve_extra(4);
    out.set_size(start + 4);
  }
  return start;
}

caf::error end_frame(byte_buffer& out, framing f, size_t start, size_t max_message_size) {
  size_t header = f == framing::length_prefixed ? 4 : 0;
  size_t size = out.size() - start - header;
  if (size > max_message_size || size > default_max_message_size) {
    out.set_size(start);
    return make_error(errc::message_too_large,
                      "message of " + std::to_string(size) +
                          " bytes exceeds the maximum message size of " +
                          std::to_string(std::min(max_message_size, default_max_message_size)));
  }
  for (size_t i = 0; i < header; ++i)
    out.data()[start + i] = static_cast<std::byte>((size >> (8 * i)) & 0xff);
  return {};
}

// -- decoding -------------------------------------------------------------------

frame_decoder::frame_decoder(framing f, size_t max_message_size)
    : framing_(f), max_size_(max_message_size), scanner_(max_message_size) {
  // nop
}

mutable_byte_span frame_decoder::prepare(size_t hint) {
  hint = std::max<size_t>(hint, 1);
  prepared_body_ = false;
  if (framing_ == framing::length_prefixed && body_size_) {
    // Read the body in place. Grow with what has arrived (at most doubling),
    // never to the peer's announced size up front, unless a recycled buffer
    // already has the room.
    size_t have = body_.size();
    size_t remaining = *body_size_ - have;
    if (body_.spare().empty())
      body_.reserve(have + std::min(remaining, std::max(hint, have)));
    prepared_body_ = true;
    auto room = body_.spare();
    return room.subspan(0, std::min(room.size(), remaining));
  }
  staging_.reserve_extra(hint);
  return staging_.spare();
}

caf::error frame_decoder::commit(size_t n) {
  if (failed_)
    return failed_;
  if (framing_ == framing::raw)
    return commit_raw(n);
  return commit_length_prefixed(n);
}

caf::error frame_decoder::feed(byte_span bytes) {
  while (!bytes.empty()) {
    auto room = prepare(bytes.size());
    size_t n = std::min(room.size(), bytes.size());
    std::memcpy(room.data(), bytes.data(), n);
    if (auto err = commit(n))
      return err;
    bytes = bytes.subspan(n);
  }
  return {};
}

std::optional<byte_buffer> frame_decoder::next() {
  if (complete_.empty())
    return std::nullopt;
  auto result = std::move(complete_.front());
  complete_.pop_front();
  return result;
}

size_t frame_decoder::partial_bytes() const noexcept {
  if (framing_ == framing::raw)
    return staging_.size();
  return header_size_ + body_.size();
}

void frame_decoder::recycle(byte_buffer&& buffer) {
  // One spare is enough: a Sprint pipe carries one message at a time.
  if (spare_.capacity() < buffer.capacity()) {
    buffer.clear();
    spare_ = std::move(buffer);
  }
}

void frame_decoder::expect(size_t max_size) {
  limits_.push_back(max_size);
}

size_t frame_decoder::current_limit() const noexcept {
  return limits_.empty() ? max_size_ : std::min(max_size_, limits_.front());
}

void frame_decoder::limit_used() noexcept {
  if (!limits_.empty())
    limits_.pop_front();
}

caf::error frame_decoder::fail(caf::error err) {
  failed_ = err;
  return err;
}

caf::error frame_decoder::commit_length_prefixed(size_t n) {
  auto finish_message = [this] {
    limit_used();
    complete_.push_back(std::move(body_));
    body_ = byte_buffer{};
    body_size_.reset();
    header_size_ = 0;
  };
  if (prepared_body_) {
    body_.set_size(body_.size() + n);
    if (body_.size() == *body_size_)
      finish_message();
    return {};
  }
  // Bytes arrived in `staging_`: split them into prefixes and bodies.
  staging_.set_size(staging_.size() + n);
  auto bytes = staging_.bytes();
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (!body_size_) {
      size_t take = std::min(size_t{4} - header_size_, bytes.size() - pos);
      std::memcpy(header_ + header_size_, bytes.data() + pos, take);
      header_size_ += take;
      pos += take;
      if (header_size_ < 4)
        break;
      auto bits = static_cast<uint32_t>(read_le(byte_span{header_, 4}));
      auto size = static_cast<int32_t>(bits);
      if (size <= 0)
        return fail(make_error(errc::protocol_error,
                               "length prefix " + std::to_string(size) + " is not positive"));
      const size_t limit = current_limit();
      if (static_cast<size_t>(size) > limit)
        return fail(make_error(
            errc::message_too_large,
            "length prefix announces " + std::to_string(size) + " bytes, more than " +
                (limit < max_size_
                     ? "the " + std::to_string(limit) + " bytes a reply to its request can take"
                     : "the maximum message size " + std::to_string(max_size_))));
      body_size_ = static_cast<size_t>(size);
      body_ = std::move(spare_);
      continue;
    }
    size_t take = std::min(*body_size_ - body_.size(), bytes.size() - pos);
    body_.append(bytes.data() + pos, take);
    pos += take;
    if (body_.size() == *body_size_)
      finish_message();
  }
  staging_.clear();
  return {};
}

caf::error frame_decoder::commit_raw(size_t n) {
  staging_.set_size(staging_.size() + n);
  // Where the message being scanned begins in `staging_`. Each complete
  // message costs one copy of at most its own size, and what is left is
  // moved to the front once per commit: linear in the bytes received, however
  // many messages one read brings (copying the rest after every message made
  // a burst of tiny pickles quadratic, and each kept the whole receive
  // buffer's capacity).
  size_t start = 0;
  for (;;) {
    scanner_.set_max_size(current_limit());
    auto end = scanner_.scan(staging_.bytes().subspan(start));
    if (!end)
      return fail(std::move(end.error()));
    if (!*end)
      break;
    const size_t stop = start + **end;
    const size_t rest = staging_.size() - stop;
    scanner_.reset();
    limit_used();
    if (start == 0 && rest <= stop) {
      // The message is most of the buffer (a large message received in
      // place): the buffer becomes the message, and the rest, no larger,
      // moves to a fresh receive buffer.
      auto next = std::move(spare_);
      next.append(staging_.bytes().subspan(stop));
      staging_.set_size(stop);
      complete_.push_back(std::move(staging_));
      staging_ = std::move(next);
      if (staging_.empty())
        return {};
      continue;
    }
    byte_buffer message{stop - start};
    message.append(staging_.bytes().subspan(start, stop - start));
    complete_.push_back(std::move(message));
    start = stop;
  }
  if (start > 0) {
    const size_t left = staging_.size() - start;
    std::memmove(staging_.data(), staging_.data() + start, left);
    staging_.set_size(left);
  }
  return {};
}

} // namespace sprintrt::protocol
