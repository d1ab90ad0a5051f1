#include "criterion/corpus.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

std::vector<uint32_t> labels_of(const corpus& c, std::string_view name) {
  const auto labels = unwrap(c.labels(name));
  return {labels.begin(), labels.end()};
}

// The message of the error that parsing `text` fails with.
std::string parse_error(const std::string& text) {
  auto result = corpus::from_string(text, "train.corpus");
  if (result)
    FAIL("parsing succeeded: " << text);
  CHECK(result.error() == errc::invalid_input);
  return error_message(result.error());
}

// A corpus file in the temporary directory, removed at the end of the test.
class temp_file {
public:
  explicit temp_file(const std::string& contents)
      : path_("/tmp/sprintrt_corpus_test_" + std::to_string(::getpid()) + ".txt") {
    std::ofstream{path_} << contents;
  }
  ~temp_file() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

} // namespace

TEST_CASE("a corpus maps names to labels in file order") {
  const auto c = unwrap(corpus::from_string("# a comment\n"
                                            "rec/1\t3 1 2\n"
                                            "\n"
                                            "   \t \n"
                                            "rec/2\t  7\t8   9 \r\n"
                                            "silence/1\t\n"
                                            "rec/3\t4294967295\n",
                                            "train.corpus"));
  CHECK(c.size() == 4);
  CHECK(c.source() == "train.corpus");
  CHECK(c.segment_names() == std::vector<std::string>{"rec/1", "rec/2", "silence/1", "rec/3"});
  CHECK(labels_of(c, "rec/1") == std::vector<uint32_t>{3, 1, 2});
  CHECK(labels_of(c, "rec/2") == std::vector<uint32_t>{7, 8, 9});
  CHECK(labels_of(c, "silence/1").empty());
  CHECK(labels_of(c, "rec/3") == std::vector<uint32_t>{4294967295u});
  CHECK(c.contains("rec/2"));
  CHECK(!c.contains("rec/4"));
  CHECK(!c.contains("# a comment"));
}

TEST_CASE("unknown segments are errors naming the segment and the corpus") {
  const auto c = unwrap(corpus::from_string("a\t1\n", "train.corpus"));
  auto result = c.labels("b");
  REQUIRE(!result);
  CHECK(result.error() == errc::unknown_segment);
  CHECK(error_message(result.error()) ==
        "unknown segment 'b': not in corpus 'train.corpus' (1 segments)");
  CHECK(!corpus{}.labels("a"));
}

TEST_CASE("malformed corpus lines are errors naming source, line and problem") {
  CHECK(parse_error("a\t1\nb 1 2\n") ==
        "train.corpus:2: no TAB between the segment name and the labels (expected "
        "NAME<TAB>LABELS)");
  CHECK(parse_error("\t1 2\n") == "train.corpus:1: empty segment name before the TAB");
  CHECK(parse_error("a b\t1\n") == "train.corpus:1: segment name 'a b' contains a space (the name "
                                   "and the labels must be separated by a TAB)");
  CHECK(parse_error("# x\n\na\t1 x2 3\n") ==
        "train.corpus:3: label number 2 of segment 'a' is 'x2', not a non-negative integer");
  CHECK(parse_error("a\t-1\n") ==
        "train.corpus:1: label number 1 of segment 'a' is '-1', not a non-negative integer");
  CHECK(parse_error("a\t+1\n").find("'+1', not a non-negative integer") != std::string::npos);
  CHECK(parse_error("a\t1.5\n").find("'1.5', not a non-negative integer") != std::string::npos);
  CHECK(parse_error("a\t1 4294967296\n") ==
        "train.corpus:1: label number 2 of segment 'a' is 4294967296, larger than 4294967295");
}

TEST_CASE("a duplicate segment name is an error naming both lines") {
  CHECK(parse_error("a\t1\n# c\nb\t2\na\t3\n") ==
        "train.corpus:4: duplicate segment 'a', first defined on line 1");
}

TEST_CASE("a corpus file is read, and its errors name the file") {
  SECTION("a good file") {
    const temp_file file{"x\t1 2\ny\t3\n"};
    const auto c = unwrap(corpus::from_file(file.path()));
    CHECK(c.source() == file.path());
    CHECK(c.segment_names() == std::vector<std::string>{"x", "y"});
    CHECK(labels_of(c, "y") == std::vector<uint32_t>{3});
  }
  SECTION("a bad line") {
    const temp_file file{"x\t1 2\ny\tthree\n"};
    auto result = corpus::from_file(file.path());
    REQUIRE(!result);
    CHECK(error_message(result.error()) ==
          file.path() + ":2: label number 1 of segment 'y' is 'three', not a non-negative integer");
  }
  SECTION("a missing file") {
    auto result = corpus::from_file("/nonexistent/sprintrt/corpus.txt");
    REQUIRE(!result);
    CHECK(result.error() == errc::io_error);
    CHECK(error_message(result.error()) ==
          "cannot open corpus file '/nonexistent/sprintrt/corpus.txt': No such file or directory");
  }
}

TEST_CASE("a corpus is read from any stream") {
  std::istringstream in{"s1\t5\n"};
  const auto c = unwrap(corpus::from_stream(in, "stdin"));
  CHECK(labels_of(c, "s1") == std::vector<uint32_t>{5});
  CHECK(c.source() == "stdin");
}

TEST_CASE("a written corpus file reads back as the same segments") {
  const temp_file file{""};
  const std::vector<corpus_entry> entries{{"rec/1", {3, 1, 2}}, {"silence/1", {}}, {"rec/2", {7}}};
  REQUIRE(!write_corpus_file(file.path(), entries));
  std::ifstream in{file.path()};
  CHECK(std::string{std::istreambuf_iterator<char>{in}, {}} ==
        "rec/1\t3 1 2\nsilence/1\t\nrec/2\t7\n");
  const auto c = unwrap(corpus::from_file(file.path()));
  CHECK(c.segment_names() == std::vector<std::string>{"rec/1", "silence/1", "rec/2"});
  CHECK(labels_of(c, "rec/1") == std::vector<uint32_t>{3, 1, 2});
  CHECK(labels_of(c, "silence/1").empty());

  auto err = write_corpus_file("/nonexistent/sprintrt/corpus.txt", entries);
  CHECK(err == errc::io_error);
  CHECK(error_message(err) ==
        "cannot write corpus file '/nonexistent/sprintrt/corpus.txt': No such file or directory");
}
