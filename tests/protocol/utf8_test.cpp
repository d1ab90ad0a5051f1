#include "protocol/utf8.hpp"

#include <catch2/catch.hpp>

using namespace sprintrt::protocol;

TEST_CASE("valid UTF-8 is accepted, including encoded surrogates") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("corpus/rec/seg-1"));
  CHECK(is_valid_utf8("\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80")); // ä € 😀
  CHECK(is_valid_utf8("\xed\xa0\x80"));                         // U+D800, "surrogatepass"
}

TEST_CASE("malformed UTF-8 is rejected") {
  CHECK_FALSE(is_valid_utf8("\xff"));
  CHECK_FALSE(is_valid_utf8("\xc3"));             // cut off
  CHECK_FALSE(is_valid_utf8("\xc3\x28"));         // bad continuation
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));         // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80")); // above U+10FFFF
  CHECK_FALSE(is_valid_utf8("\x80"));             // lone continuation
}

TEST_CASE("utf8_to_latin1 maps code points up to 0xFF to single bytes") {
  auto bytes = utf8_to_latin1("a\xc3\xbf\xc2\x80");
  REQUIRE(bytes);
  REQUIRE(bytes->size() == 3);
  CHECK((*bytes)[0] == std::byte{'a'});
  CHECK((*bytes)[1] == std::byte{0xff});
  CHECK((*bytes)[2] == std::byte{0x80});
  CHECK_FALSE(utf8_to_latin1("\xe2\x82\xac")); // € is not latin-1
  CHECK_FALSE(utf8_to_latin1("\xc3"));
}
