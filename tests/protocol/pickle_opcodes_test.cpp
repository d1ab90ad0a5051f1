#include "protocol/pickle_opcodes.hpp"

#include <catch2/catch.hpp>

#include <limits>

#include "tests/support/golden_vectors.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::render;
using sprintrt::test::bytes;

namespace {

caf::expected<instruction> measure(const std::vector<std::byte>& data, size_t offset = 0,
                                   size_t max = std::numeric_limits<size_t>::max()) {
  return measure_instruction({data.data(), data.size()}, offset, max);
}

} // namespace

TEST_CASE("the opcode table holds exactly the subset of docs/protocol.md section 3") {
  size_t known = 0;
  for (int code = 0; code < 256; ++code)
    if (find_opcode(static_cast<uint8_t>(code)))
      ++known;
  CHECK(known == 46);
  CHECK(std::string{find_opcode(op::binunicode)->name} == "BINUNICODE");
  CHECK_FALSE(find_opcode('S')); // STRING (protocol 0) is not accepted
  CHECK(describe_opcode(0xfe) == "opcode 0xfe");
  CHECK(describe_opcode(op::stop) == "STOP");
}

TEST_CASE("instructions are measured by their argument format") {
  auto fixed = measure(bytes({'J', 1, 2, 3, 4, 'N'}));
  REQUIRE(fixed);
  CHECK(fixed->complete);
  CHECK(fixed->end == 5);
  CHECK(fixed->arg.size() == 4);
  auto prefixed = measure(bytes({'N', 'C', 2, 'x', 'y'}), 1);
  REQUIRE(prefixed);
  CHECK(prefixed->complete);
  CHECK(prefixed->arg.size() == 2);
  CHECK(prefixed->end == 5);
  auto lines = measure(bytes("cmod\nname\nN"));
  REQUIRE(lines);
  CHECK(lines->complete);
  CHECK(lines->end == 10);
  CHECK(lines->arg.size() == 8); // "mod\nname"
}

TEST_CASE("incomplete instructions say how much they need when it is known") {
  auto short_arg = measure(bytes({'B', 10, 0, 0, 0, 'a'}));
  REQUIRE(short_arg);
  CHECK_FALSE(short_arg->complete);
  CHECK(short_arg->needed == 15);
  auto short_prefix = measure(bytes({'B', 10, 0}));
  REQUIRE(short_prefix);
  CHECK_FALSE(short_prefix->complete);
  CHECK(short_prefix->needed == 0);
  auto open_line = measure(bytes("I12"));
  REQUIRE(open_line);
  CHECK_FALSE(open_line->complete);
}

TEST_CASE("declared lengths beyond the maximum message size are refused at once") {
  auto x = measure(bytes({0x8e, 0, 0, 0, 0, 0, 0, 0, 0x10}), 0, 1000);
  REQUIRE_FALSE(x);
  CHECK(x.error() == errc::message_too_large);
  CHECK(render(x.error()).find("BINBYTES8 at offset 0 declares 1152921504606846976 bytes") !=
        std::string::npos);
}
