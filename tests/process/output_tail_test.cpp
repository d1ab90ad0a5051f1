// A child's output: the last lines for error messages, escaped so that
// control sequences and broken UTF-8 reach no terminal.

#include "process/output_tail.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "process/output_file.hpp"
#include "process/temp_directory.hpp"

using sprintrt::process::last_lines;
using sprintrt::process::output_tail;

TEST_CASE("last_lines keeps the last lines without trailing newlines") {
  CHECK(last_lines("a\nb\nc\n\n", 2) == "b\nc");
  CHECK(last_lines("a\nb\nc", 5) == "a\nb\nc");
  CHECK(last_lines("", 3).empty());
}

TEST_CASE("last_lines leaves stack frames out, so that the message before them stays") {
  // The end of what RASR prints when its lexicon cannot be read.
  std::string output = "  <error component=\"neural-network-trainer.lexicon\">\n"
                       "    Failed to setup XML parser for \"/x/lexicon.xml\"\n"
                       "    Creating stack trace (innermost first):\n";
  for (int frame = 0; frame < 40; ++frame)
    output += "    #" + std::to_string(frame) +
              "  /rasr/nn-trainer(_ZN4Core9XmlParser5parseEv+0x33) "
              "[0x55d8de0ef7a3]\n";
  output += "  </error>\n  <critical-error component=\"neural-network-trainer.lexicon\">\n"
            "    Terminating due to previous errors\n  </critical-error>\n";
  CHECK(last_lines(output, 8) == "  <error component=\"neural-network-trainer.lexicon\">\n"
                                 "    Failed to setup XML parser for \"/x/lexicon.xml\"\n"
                                 "    Creating stack trace (innermost first):\n"
                                 "    (40 stack frame lines left out)\n"
                                 "  </error>\n"
                                 "  <critical-error component=\"neural-network-trainer.lexicon\">\n"
                                 "    Terminating due to previous errors\n"
                                 "  </critical-error>");
  // Only "#<digits> " starts a frame: a shell comment or "#include" does not.
  CHECK(last_lines("# a comment\n#include <x>\n#1 frame\nend", 5) ==
        "# a comment\n#include <x>\n    (1 stack frame line left out)\nend");
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

namespace {

/// Registers a logger named `sprintrt.child` whose records the test reads.
struct child_logger {
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(10);
  child_logger() {
    auto logger = std::make_shared<spdlog::logger>(output_tail::logger_name, sink);
    logger->set_level(spdlog::level::trace);
    logger->set_pattern("%l %v");
    spdlog::register_logger(logger);
  }
  ~child_logger() { spdlog::drop(output_tail::logger_name); }
  child_logger(const child_logger&) = delete;
  child_logger& operator=(const child_logger&) = delete;
};

} // namespace

TEST_CASE("in log mode each line is logged at info with the worker's name, escaped") {
  child_logger logged;
  output_tail tail{"pool 0 worker 1", {sprintrt::child_output_mode::log, ""}};
  tail.append("first\nsec");
  tail.append("ond \x1b[2J\nlast");
  CHECK(logged.sink->last_formatted().size() == 2);
  tail.flush();
  auto lines = logged.sink->last_formatted();
  for (auto& line : lines)
    line.erase(line.find_last_not_of("\r\n") + 1);
  CHECK(lines == std::vector<std::string>{"info [pool 0 worker 1] first",
                                          "info [pool 0 worker 1] second \\x1b[2J",
                                          "info [pool 0 worker 1] last"});
  CHECK(tail.text() == "first\nsecond \x1b[2J\nlast");
}

TEST_CASE("in file mode the bytes go unchanged to DIR/<worker>.log") {
  auto made = sprintrt::process::temp_directory::make("sprintrt-output-tail");
  REQUIRE(made);
  const auto& dir = *made;
  output_tail tail{"pool 0 worker 1/x", {sprintrt::child_output_mode::file, dir.path() + "/d"}};
  CHECK(tail.file_path() == dir.path() + "/d/pool-0-worker-1-x.log");
  REQUIRE_FALSE(tail.open());
  tail.append("one\n\x1b[2J two");
  tail.flush();
  REQUIRE(sprintrt::process::flush_output_files(std::chrono::seconds{5}));
  std::ifstream in{tail.file_path(), std::ios::binary};
  CHECK(std::string{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}} ==
        "one\n\x1b[2J two");
  CHECK(tail.text() == "one\n\x1b[2J two");
}

TEST_CASE("in file mode a file that cannot be opened is an io_error naming it") {
  auto made = sprintrt::process::temp_directory::make("sprintrt-output-tail");
  REQUIRE(made);
  const auto& dir = *made;
  output_tail tail{"w", {sprintrt::child_output_mode::file, dir.path()}};
  ::mkdir(tail.file_path().c_str(), 0755); // a directory where the file should be
  auto err = tail.open();
  CHECK(err == sprintrt::errc::io_error);
  CHECK(sprintrt::error_message(err) ==
        "childOutput: cannot open '" + tail.file_path() + "': Is a directory");
}

TEST_CASE("in inherit mode nothing is kept, and the tail says where the output went") {
  output_tail tail{"w", {sprintrt::child_output_mode::inherit, ""}};
  CHECK(tail.text() == output_tail::inherited_note);
}
