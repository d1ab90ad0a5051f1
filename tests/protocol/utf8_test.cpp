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

TEST_CASE("escape_for_log keeps UTF-8, tabs and newlines and escapes everything else") {
  CHECK(escape_for_log("plain\ttext\n") == "plain\ttext\n");
  CHECK(escape_for_log("\xc3\xa4\xe2\x82\xac") == "\xc3\xa4\xe2\x82\xac"); // ä€
  CHECK(escape_for_log("a\\b") == "a\\\\b");
  CHECK(escape_for_log(std::string{"\x00\x1b\x7f", 3}) == "\\x00\\x1b\\x7f");
  CHECK(escape_for_log("\xc2\x9b") == "\\xc2\\x9b");   // C1 CSI
  CHECK(escape_for_log("\xff\xc3") == "\\xff\\xc3");   // invalid, truncated
  CHECK(escape_for_log("\xe2\x82x") == "\\xe2\\x82x"); // cut-off sequence
}

TEST_CASE("python_decodable keeps UTF-8 and replaces every high byte of anything else") {
  CHECK(python_decodable("segment 'a\xc3\xa9'") == "segment 'a\xc3\xa9'");
  CHECK(python_decodable("segment a\xc3\xa9\xff.") == "segment a???.");
  CHECK(python_decodable("") == "");
}
