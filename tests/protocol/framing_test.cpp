#include "protocol/framing.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

#include "protocol/pickle_reader.hpp"
#include "tests/support/golden_vectors.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::render;
using sprintrt::test::bytes;
using sprintrt::test::bytes_of;
using sprintrt::test::concat;
using sprintrt::test::golden_vector;
using sprintrt::test::golden_vectors;

namespace {

std::vector<const golden_vector*> vectors_with(framing f, size_t max_size) {
  std::vector<const golden_vector*> result;
  for (const auto& v : golden_vectors())
    if (v.framing == f && v.wire.size() <= max_size)
      result.push_back(&v);
  return result;
}

/// Concatenates the wire bytes of `vs`: a stream of back-to-back messages.
std::vector<std::byte> stream_of(const std::vector<const golden_vector*>& vs) {
  std::vector<std::byte> result;
  for (auto v : vs)
    result.insert(result.end(), v->wire.begin(), v->wire.end());
  return result;
}

/// Feeds `stream` in chunks of `chunk` bytes through prepare()/commit() and
/// checks that exactly the pickles of `vs` come out, in order.
void check_chunked(framing f, const std::vector<const golden_vector*>& vs,
                   const std::vector<std::byte>& stream, size_t chunk) {
  INFO("chunk size " << chunk);
  frame_decoder decoder{f};
  std::vector<byte_buffer> out;
  size_t pos = 0;
  while (pos < stream.size()) {
    auto room = decoder.prepare(chunk);
    REQUIRE(room.size() > 0);
    size_t n = std::min({room.size(), chunk, stream.size() - pos});
    std::memcpy(room.data(), stream.data() + pos, n);
    REQUIRE_FALSE(decoder.commit(n));
    pos += n;
    while (auto msg = decoder.next())
      out.push_back(std::move(*msg));
  }
  CHECK(decoder.partial_bytes() == 0);
  REQUIRE(out.size() == vs.size());
  for (size_t i = 0; i < vs.size(); ++i) {
    auto expected = vs[i]->pickle();
    REQUIRE(out[i].size() == expected.size());
    CHECK(std::equal(expected.begin(), expected.end(), out[i].data()));
  }
}

} // namespace

TEST_CASE("framing names parse and print") {
  CHECK(parse_framing("raw") == framing::raw);
  CHECK(parse_framing("length_prefixed") == framing::length_prefixed);
  CHECK_FALSE(parse_framing("lengthprefixed"));
  CHECK(std::string{to_string(framing::raw)} == "raw");
}

TEST_CASE("back-to-back messages arrive whole and in order for every chunk size") {
  for (auto f : {framing::length_prefixed, framing::raw}) {
    // Every chunk size over the small vectors...
    auto small = vectors_with(f, 10000);
    REQUIRE(small.size() >= 3);
    auto stream = stream_of(small);
    for (size_t chunk = 1; chunk <= stream.size(); ++chunk)
      check_chunked(f, small, stream, chunk);
    // ...and a selection over all of them, the 422 kB vector included.
    auto all = vectors_with(f, SIZE_MAX);
    auto big_stream = stream_of(all);
    for (size_t chunk :
         {size_t{1}, size_t{7}, size_t{4096}, size_t{65536}, size_t{100003}, big_stream.size()})
      check_chunked(f, all, big_stream, chunk);
  }
}

TEST_CASE("every proper prefix of a message is incomplete, never an error") {
  for (const auto& v : golden_vectors()) {
    INFO(v.name);
    frame_decoder decoder{v.framing};
    for (size_t i = 0; i + 1 < v.wire.size(); ++i) {
      REQUIRE_FALSE(decoder.feed({v.wire.data() + i, 1}));
      REQUIRE(decoder.pending() == 0);
      REQUIRE(decoder.partial_bytes() == i + 1);
    }
    REQUIRE_FALSE(decoder.feed({v.wire.data() + v.wire.size() - 1, 1}));
    CHECK(decoder.pending() == 1);
    CHECK(decoder.partial_bytes() == 0);
  }
}

TEST_CASE("a large body grows with what arrives, then is received in place") {
  const auto& v = sprintrt::test::golden("c2p_loss_reply_large");
  size_t body = v.wire.size() - 4;
  frame_decoder decoder{framing::length_prefixed};
  REQUIRE_FALSE(decoder.feed({v.wire.data(), 4}));
  // Without a recycled buffer the decoder offers the reader's hint, not the
  // 422 kB the prefix announced, and at most doubles per read.
  auto room = decoder.prepare(65536);
  CHECK(room.size() == 65536);
  size_t pos = 4;
  while (decoder.pending() == 0) {
    room = decoder.prepare(65536);
    CHECK(room.size() <= std::max<size_t>(65536, pos - 4));
    size_t n = std::min(room.size(), v.wire.size() - pos);
    std::memcpy(room.data(), v.wire.data() + pos, n);
    REQUIRE_FALSE(decoder.commit(n));
    pos += n;
  }
  auto msg = decoder.next();
  REQUIRE(msg);
  REQUIRE(msg->size() == body);
  // Recycled, the buffer takes the whole next body in one read, in place.
  const auto* storage = msg->data();
  decoder.recycle(std::move(*msg));
  REQUIRE_FALSE(decoder.feed({v.wire.data(), 4}));
  room = decoder.prepare(65536);
  CHECK(room.data() == storage);
  REQUIRE(room.size() == body);
  std::memcpy(room.data(), v.wire.data() + 4, body);
  REQUIRE_FALSE(decoder.commit(body));
  auto again = decoder.next();
  REQUIRE(again);
  CHECK(again->data() == storage);
  CHECK(std::equal(v.wire.begin() + 4, v.wire.end(), again->data()));
}

TEST_CASE("a body arriving a byte at a time is reallocated only logarithmically often") {
  const auto& v = sprintrt::test::golden("c2p_loss_reply_large");
  frame_decoder decoder{framing::length_prefixed};
  REQUIRE_FALSE(decoder.feed({v.wire.data(), 4}));
  const std::byte* base = nullptr;
  size_t reallocations = 0;
  for (size_t pos = 4; pos < v.wire.size(); ++pos) {
    auto room = decoder.prepare(1);
    // room starts where the body received so far ends.
    const std::byte* room_base = room.data() - (pos - 4);
    if (room_base != base) {
      ++reallocations;
      base = room_base;
    }
    room[0] = v.wire[pos];
    REQUIRE_FALSE(decoder.commit(1));
  }
  CHECK(decoder.pending() == 1);
  CHECK(reallocations <= 20); // log2(422120) ~ 19 doublings
}

TEST_CASE("the decoder never allocates what a length prefix merely claims") {
  frame_decoder decoder{framing::length_prefixed};
  // Announce 2 GiB - 1 bytes, then send 3.
  REQUIRE_FALSE(decoder.feed(bytes({0xff, 0xff, 0xff, 0x7f, 1, 2, 3})));
  auto room = decoder.prepare(16);
  CHECK(room.size() <= 64);
  CHECK(decoder.partial_bytes() == 7);
}

TEST_CASE("corrupt length prefixes are errors, and the decoder stays failed") {
  for (auto prefix :
       {bytes({0, 0, 0, 0}), bytes({0xff, 0xff, 0xff, 0xff}), bytes({0, 0, 0, 0x80})}) {
    frame_decoder decoder{framing::length_prefixed};
    auto err = decoder.feed(bytes_of(prefix));
    REQUIRE(err == errc::protocol_error);
    CHECK(render(err).find("is not positive") != std::string::npos);
    CHECK(decoder.feed(bytes({1})) == errc::protocol_error);
  }
  frame_decoder limited{framing::length_prefixed, 100};
  auto err = limited.feed(bytes({101, 0, 0, 0}));
  CHECK(err == errc::message_too_large);
  CHECK(render(err).find("announces 101 bytes") != std::string::npos);
}

TEST_CASE("raw framing enforces the maximum size while scanning") {
  frame_decoder decoder{framing::raw, 64};
  // BINBYTES announcing 1000 bytes: known too large before they arrive.
  auto err = decoder.feed(bytes({0x80, 3, 'B', 0xe8, 3, 0, 0}));
  CHECK(err == errc::message_too_large);
  frame_decoder garbage{framing::raw};
  CHECK(garbage.feed(bytes({0x80, 3, 0xff})) == errc::protocol_error);
}

TEST_CASE("a declared reply limit fails a larger length prefix before its body arrives") {
  frame_decoder decoder{framing::length_prefixed};
  decoder.expect(8);
  decoder.expect(4);
  // The first reply may take 8 bytes: 8 arrive.
  REQUIRE_FALSE(decoder.feed(bytes({8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})));
  CHECK(decoder.pending() == 1);
  // The second may take 4: a prefix of 5 is refused at once.
  auto err = decoder.feed(bytes({5, 0, 0, 0}));
  CHECK(err == errc::message_too_large);
  CHECK(render(err).find("announces 5 bytes, more than the 4 bytes a reply to its request can "
                         "take") != std::string::npos);
  // A 2 GiB prefix without a declared limit still meets the maximum only.
  frame_decoder unbounded{framing::length_prefixed, 100};
  unbounded.expect(1000);
  CHECK(render(unbounded.feed(bytes({101, 0, 0, 0}))).find("maximum message size 100") !=
        std::string::npos);
}

TEST_CASE("declared limits apply to raw pickles too, one per message") {
  frame_decoder decoder{framing::raw};
  decoder.expect(4);
  decoder.expect(4);
  // Two 4-byte pickles pass, each within its limit.
  REQUIRE_FALSE(decoder.feed(bytes({0x80, 2, 'N', '.', 0x80, 2, 'N', '.'})));
  CHECK(decoder.pending() == 2);
  // The third has no declared limit: the maximum applies.
  REQUIRE_FALSE(decoder.feed(bytes({0x80, 2, 'N', 'N', '0', '.'})));
  CHECK(decoder.pending() == 3);
  frame_decoder strict{framing::raw};
  strict.expect(4);
  CHECK(strict.feed(bytes({0x80, 2, 'N', 'N', '0', '.'})) == errc::message_too_large);
}

TEST_CASE("a burst of tiny raw pickles in one read costs memory and time linear in its size") {
  // PROTO 2, NONE, STOP: 4 bytes each, 5000 of them (20 KB) in one feed.
  const size_t count = 5000;
  std::vector<std::byte> burst;
  for (size_t i = 0; i < count; ++i)
    for (auto b : bytes({0x80, 2, 'N', '.'}))
      burst.push_back(b);
  frame_decoder decoder{framing::raw};
  REQUIRE_FALSE(decoder.feed(sprintrt::byte_span{burst.data(), burst.size()}));
  REQUIRE(decoder.pending() == count);
  size_t held = 0;
  size_t messages = 0;
  while (auto message = decoder.next()) {
    CHECK(message->size() == 4);
    held += message->capacity();
    ++messages;
  }
  CHECK(messages == count);
  // Each message holds its own bytes, not the rest of the receive buffer
  // (which made this 5000 x 20 KB).
  CHECK(held <= 64 * count);
  CHECK(decoder.partial_bytes() == 0);
}

TEST_CASE("raw framing keeps the start of the next message after a burst") {
  // Two whole pickles and the first 2 bytes of a third, then the rest of it.
  frame_decoder decoder{framing::raw};
  REQUIRE_FALSE(decoder.feed(bytes({0x80, 2, 'N', '.', 0x80, 2, 'N', '.', 0x80, 2})));
  CHECK(decoder.pending() == 2);
  CHECK(decoder.partial_bytes() == 2);
  REQUIRE_FALSE(decoder.feed(bytes({'N', '.'})));
  CHECK(decoder.pending() == 3);
  CHECK(decoder.partial_bytes() == 0);
  decoder.next();
  decoder.next();
  auto third = decoder.next();
  REQUIRE(third);
  CHECK(std::vector<std::byte>(third->data(), third->data() + third->size()) ==
        bytes({0x80, 2, 'N', '.'}));
}

TEST_CASE("framed encoding writes the little-endian length prefix") {
  byte_buffer out;
  out.append("x", 1);
  auto start = begin_frame(out, framing::length_prefixed);
  out.append("abc", 3);
  REQUIRE_FALSE(end_frame(out, framing::length_prefixed, start));
  CHECK(std::vector<std::byte>(out.data(), out.data() + out.size()) ==
        concat({bytes("x"), bytes({3, 0, 0, 0}), bytes("abc")}));
  byte_buffer raw;
  start = begin_frame(raw, framing::raw);
  raw.append("abc", 3);
  REQUIRE_FALSE(end_frame(raw, framing::raw, start));
  CHECK(raw.size() == 3);
  byte_buffer big;
  start = begin_frame(big, framing::length_prefixed);
  big.append(std::string(101, 'a').data(), 101);
  CHECK(end_frame(big, framing::length_prefixed, start, 100) == errc::message_too_large);
  CHECK(big.size() == 0);
}
