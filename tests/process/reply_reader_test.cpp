// The child's replies split into messages: whole and in order however the
// bytes arrive, each bounded by the limit its request declared (from another
// thread, before the request is written), buffers handed back reused.

#include "process/reply_reader.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace sprintrt;
using namespace sprintrt::process;
using protocol::byte_buffer;
using protocol::framing;

namespace {

/// `payload` framed with a length prefix.
byte_buffer framed(const std::string& payload) {
  byte_buffer out;
  size_t start = protocol::begin_frame(out, framing::length_prefixed);
  out.append(payload.data(), payload.size());
  REQUIRE_FALSE(protocol::end_frame(out, framing::length_prefixed, start));
  return out;
}

std::string text(const byte_buffer& message) {
  return {reinterpret_cast<const char*>(message.data()), message.size()};
}

/// Feeds `bytes` through prepare/commit in chunks of `chunk` bytes; returns
/// the first error.
caf::error read_in_chunks(reply_reader& reader, const byte_buffer& bytes, size_t chunk,
                          const reply_reader::message_handler& on_message) {
  for (size_t at = 0; at < bytes.size();) {
    auto room = reader.prepare(chunk);
    size_t n = std::min({chunk, room.size(), bytes.size() - at});
    std::memcpy(room.data(), bytes.data() + at, n);
    at += n;
    if (auto err = reader.commit(n, on_message))
      return err;
  }
  return {};
}

} // namespace

TEST_CASE("replies split across reads arrive whole and in order") {
  reply_reader reader{framing::length_prefixed};
  byte_buffer stream = framed("first reply");
  auto second = framed(std::string(1000, 'x'));
  stream.append(second.data(), second.size());
  std::vector<std::string> got;
  auto keep = [&](byte_buffer m) { got.push_back(text(m)); };
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, size_t{4096}}) {
    got.clear();
    reply_reader fresh{framing::length_prefixed};
    REQUIRE_FALSE(read_in_chunks(fresh, stream, chunk, keep));
    REQUIRE(got == std::vector<std::string>{"first reply", std::string(1000, 'x')});
    REQUIRE(fresh.partial_bytes() == 0);
  }
  // Half a message: nothing delivered, its bytes counted.
  auto half = framed("cut short");
  got.clear();
  auto room = reader.prepare(6);
  std::memcpy(room.data(), half.data(), 6);
  REQUIRE_FALSE(reader.commit(6, keep));
  REQUIRE(got.empty());
  REQUIRE(reader.partial_bytes() == 6);
}

TEST_CASE("a reply announced larger than its request's limit fails at its prefix, after the "
          "replies before it") {
  reply_reader reader{framing::length_prefixed};
  // Declared on another thread, as the worker does before writing.
  std::thread sender{[&] {
    reader.expect(100);
    reader.expect(10);
  }};
  sender.join();
  auto ok = framed(std::string(50, 'a'));
  auto too_large = framed(std::string(20, 'b'));
  byte_buffer stream;
  stream.append(ok.data(), ok.size());
  // Only the prefix of the second reply: the failure must not wait for its body.
  stream.append(too_large.data(), 4);
  std::vector<std::string> got;
  auto err = read_in_chunks(reader, stream, 4096, [&](byte_buffer m) { got.push_back(text(m)); });
  REQUIRE(got == std::vector<std::string>{std::string(50, 'a')});
  REQUIRE(err);
  REQUIRE(err == errc::message_too_large);
}

TEST_CASE("a buffer handed back holds the next reply") {
  reply_reader reader{framing::length_prefixed};
  std::vector<byte_buffer> got;
  auto keep = [&](byte_buffer m) { got.push_back(std::move(m)); };
  auto reply = framed(std::string(200000, 'r'));
  REQUIRE_FALSE(reader.feed(reply.bytes(), keep));
  REQUIRE(got.size() == 1);
  const std::byte* storage = got[0].data();
  std::thread consumer{[&] { reader.recycle(std::move(got[0])); }};
  consumer.join();
  got.clear();
  REQUIRE_FALSE(reader.feed(reply.bytes(), keep));
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].data() == storage);
  REQUIRE(text(got[0]) == std::string(200000, 'r'));
}
