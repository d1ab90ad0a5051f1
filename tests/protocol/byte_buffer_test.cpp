#include "protocol/byte_buffer.hpp"

#include <catch2/catch.hpp>

using sprintrt::protocol::byte_buffer;

TEST_CASE("byte_buffer appends, grows and keeps its contents") {
  byte_buffer buf;
  CHECK(buf.empty());
  CHECK(buf.capacity() == 0);
  for (int i = 0; i < 1000; ++i)
    buf.push_back(static_cast<std::byte>(i & 0xff));
  REQUIRE(buf.size() == 1000);
  CHECK(buf.capacity() >= 1000);
  for (int i = 0; i < 1000; ++i)
    CHECK(buf.data()[i] == static_cast<std::byte>(i & 0xff));
  const char text[] = "abc";
  buf.append(text, 3);
  CHECK(buf.size() == 1003);
  CHECK(buf.data()[1002] == std::byte{'c'});
}

TEST_CASE("byte_buffer grows at least geometrically") {
  byte_buffer buf{16};
  buf.set_size(16);
  buf.reserve_extra(1);
  CHECK(buf.capacity() == 32);
  buf.reserve_extra(100);
  CHECK(buf.capacity() == 116);
}

TEST_CASE("byte_buffer clear keeps storage, consume_front shifts the rest") {
  byte_buffer buf;
  buf.append("hello world", 11);
  auto cap = buf.capacity();
  buf.consume_front(6);
  REQUIRE(buf.size() == 5);
  CHECK(std::string(reinterpret_cast<const char*>(buf.data()), 5) == "world");
  buf.consume_front(10);
  CHECK(buf.empty());
  buf.append("x", 1);
  buf.clear();
  CHECK(buf.empty());
  CHECK(buf.capacity() == cap);
}

TEST_CASE("byte_buffer moves without copying and leaves the source empty") {
  byte_buffer a;
  a.append("data", 4);
  const auto* storage = a.data();
  byte_buffer b{std::move(a)};
  CHECK(b.data() == storage);
  CHECK(b.size() == 4);
  CHECK(a.size() == 0); // NOLINT(bugprone-use-after-move): documented state
  CHECK(a.capacity() == 0);
  byte_buffer c;
  c = std::move(b);
  CHECK(c.data() == storage);
  CHECK(c.spare().size() == c.capacity() - 4);
}
