#include "common/little_endian.hpp"

#include <catch2/catch.hpp>

#include <cstddef>

using sprintrt::byte_span;
using sprintrt::read_le;

TEST_CASE("little-endian integers are read least significant byte first") {
  const std::byte bytes[] = {std::byte{0x01}, std::byte{0x02}, std::byte{0x03}, std::byte{0x04},
                             std::byte{0xfd}, std::byte{0xfe}, std::byte{0xff}, std::byte{0x80}};
  CHECK(read_le(byte_span{}) == 0);
  CHECK(read_le(byte_span{bytes, 1}) == 0x01);
  CHECK(read_le(byte_span{bytes, 2}) == 0x0201);
  CHECK(read_le(byte_span{bytes, 4}) == 0x04030201);
  CHECK(read_le(byte_span{bytes + 4, 4}) == 0x80fffefd);
  CHECK(read_le(byte_span{bytes, 8}) == 0x80fffefd04030201u);
}
