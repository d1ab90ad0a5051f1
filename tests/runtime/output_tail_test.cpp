// A child's output: the last lines for error messages, escaped so that
// control sequences and broken UTF-8 reach no terminal.

#include "runtime/output_tail.hpp"

#include <catch2/catch.hpp>

#include <string>

using sprintrt::runtime::last_lines;
using sprintrt::runtime::output_tail;

TEST_CASE("last_lines keeps the last lines without trailing newlines") {
  CHECK(last_lines("a\nb\nc\n\n", 2) == "b\nc");
  CHECK(last_lines("a\nb\nc", 5) == "a\nb\nc");
  CHECK(last_lines("", 3).empty());
}

TEST_CASE("a child's output is escaped: controls and broken UTF-8 as \\xNN, UTF-8 kept") {
  // ESC [2J (clear screen), a carriage return, CSI in UTF-8 (C2 9B), a lone
  // continuation byte, a backslash, and well-formed German text with a tab.
  const std::string output = "\x1b[2Jdone\rfake\n\xc2\x9bx \x80 a\\b\nGr\xc3\xb6\xc3\x9f"
                             "e\t1\n";
  CHECK(last_lines(output, 3) ==
        "\\x1b[2Jdone\\x0dfake\n\\xc2\\x9bx \\x80 a\\\\b\nGr\xc3\xb6\xc3\x9f"
        "e\t1");
}

TEST_CASE("the tail keeps the last 64 KiB") {
  output_tail tail{"child"};
  tail.append(std::string(output_tail::capacity, 'x'));
  tail.append("end\n");
  auto text = tail.text();
  CHECK(text.size() == output_tail::capacity);
  CHECK(text.substr(text.size() - 4) == "end\n");
}
