#include "config/shell_words.hpp"

#include <catch2/catch.hpp>

#include <map>

using sprintrt::config_word;
using sprintrt::errc;
using sprintrt::word_piece;
using namespace sprintrt::config;

namespace {

word_piece lit(std::string text) {
  return word_piece{word_piece::literal, std::move(text)};
}

word_piece var(std::string name) {
  return word_piece{word_piece::variable, std::move(name)};
}

/// Splits text that must be valid.
std::vector<config_word> split(std::string_view text) {
  auto words = split_shell_words(text);
  REQUIRE(words);
  return *words;
}

/// The words of variable-free text, as plain strings.
std::vector<std::string> split_plain(std::string_view text) {
  std::vector<std::string> result;
  for (const auto& word : split(text))
    result.push_back(expand_word(word, [](const std::string&) { return std::nullopt; }));
  return result;
}

/// The message of the error that splitting `text` must give.
std::string split_error(std::string_view text) {
  auto words = split_shell_words(text);
  REQUIRE_FALSE(words);
  CHECK(words.error() == errc::invalid_options);
  return sprintrt::error_message(words.error());
}

using strings = std::vector<std::string>;

} // namespace

TEST_CASE("white space separates words and is otherwise dropped") {
  CHECK(split_plain("  --a=1\t--b=2 \n --c  \r\v\f") == strings{"--a=1", "--b=2", "--c"});
  CHECK(split("").empty());
  CHECK(split(" \t\n ").empty());
}

TEST_CASE("single quotes keep everything literal") {
  CHECK(split("'a b $X ${Y} \\n \"'") == std::vector<config_word>{{lit("a b $X ${Y} \\n \"")}});
}

TEST_CASE("double quotes keep white space and allow exactly the POSIX escapes") {
  CHECK(split_plain(R"("a  b" "\" \\ \$ \` \x \n" "'q'")") ==
        strings{"a  b", R"(" \ $ ` \x \n)", "'q'"});
}

TEST_CASE("adjacent quoted and unquoted parts form one word") {
  CHECK(split_plain(R"(a'b c'"d e"f)") == strings{"ab cd ef"});
  CHECK(split(R"(a''b)") == split("ab"));
  CHECK(split(R"(a""b)") == std::vector<config_word>{{lit("ab")}});
}

TEST_CASE("empty quoted strings are empty words") {
  CHECK(split("''") == std::vector<config_word>{config_word{}});
  CHECK(split(R"("")") == std::vector<config_word>{config_word{}});
  CHECK(split_plain(R"(a '' "" b)") == strings{"a", "", "", "b"});
}

TEST_CASE("a backslash outside quotes escapes the next character") {
  CHECK(split_plain(R"(a\ b c\'d \"e\" \\ \$X)") == strings{"a b", "c'd", "\"e\"", "\\", "$X"});
}

TEST_CASE("backslash-newline continues the line") {
  CHECK(split_plain("--a=1 \\\n--b=2") == strings{"--a=1", "--b=2"});
  CHECK(split_plain("ab\\\ncd") == strings{"abcd"});
  CHECK(split_plain("\"ab\\\ncd\"") == strings{"abcd"});
  CHECK(split("\\\n").empty());
}

TEST_CASE("$NAME and ${NAME} outside single quotes are variables") {
  CHECK(split("$HOME") == std::vector<config_word>{{var("HOME")}});
  CHECK(split("--dir=${DIR}x/$A_1-post") ==
        std::vector<config_word>{{lit("--dir="), var("DIR"), lit("x/"), var("A_1"), lit("-post")}});
  CHECK(split("$A$B") == std::vector<config_word>{{var("A"), var("B")}});
  CHECK(split(R"("$A b")") == std::vector<config_word>{{var("A"), lit(" b")}});
  CHECK(split(R"('$A' \$B "\$C")") ==
        std::vector<config_word>{{lit("$A")}, {lit("$B")}, {lit("$C")}});
}

TEST_CASE("a $ not followed by a name is literal") {
  CHECK(split_plain(R"($ a$ $1 $$ $(cmd) "$" $-)") ==
        strings{"$", "a$", "$1", "$$", "$(cmd)", "$", "$-"});
}

TEST_CASE("syntax errors name their offset") {
  CHECK(split_error("ab 'cd") == "unterminated single quote opened at offset 3");
  CHECK(split_error(R"(x "y)") == "unterminated double quote opened at offset 2");
  CHECK(split_error(R"("abc\)") == "unterminated double quote opened at offset 0");
  CHECK(split_error(R"(abc\)") == "backslash at the end of the text at offset 3");
  CHECK(split_error("a ${B") == "unterminated ${ opened at offset 2");
  CHECK(split_error(R"("${B")") == "unterminated ${ opened at offset 1");
  CHECK(split_error("x ${1x}") == "invalid variable name '1x' in ${...} at offset 2");
  CHECK(split_error("${}") == "invalid variable name '' in ${...} at offset 0");
}

TEST_CASE("list elements only know $NAME, ${NAME} and $$") {
  CHECK(parse_word_with_variables("--x=$A/${B}c d 'e'") ==
        config_word{lit("--x="), var("A"), lit("/"), var("B"), lit("c d 'e'")});
  CHECK(parse_word_with_variables("$$A") == config_word{lit("$A")});
  CHECK(parse_word_with_variables("a$ $1 ${bad ${1} \\$") ==
        config_word{lit("a$ $1 ${bad ${1} \\$")});
  CHECK(parse_word_with_variables("").empty());
}

TEST_CASE("word_text reads back to the same word") {
  const std::vector<config_word> words{
      {},
      {lit("plain")},
      {lit("$A and $")},
      {lit("a$"), var("B"), lit("c")},
      {var("A"), var("B")},
      {var("A"), lit("bc")},
  };
  for (const auto& word : words) {
    INFO(word_text(word));
    CHECK(parse_word_with_variables(word_text(word)) == word);
  }
  CHECK(word_text({lit("a$"), var("B"), lit("c")}) == "a$$${B}c");
}

TEST_CASE("expansion substitutes values, unset is empty, results are not split again") {
  const std::map<std::string, std::string> vars{{"A", "x y"}, {"B", "$A"}, {"EMPTY", ""}};
  const env_lookup lookup = [&](const std::string& name) -> std::optional<std::string> {
    auto i = vars.find(name);
    if (i == vars.end())
      return std::nullopt;
    return i->second;
  };
  CHECK(expand_word({lit("-"), var("A"), lit("-")}, lookup) == "-x y-");
  CHECK(expand_word({var("B")}, lookup) == "$A");
  CHECK(expand_word({lit("a"), var("UNSET"), var("EMPTY"), lit("b")}, lookup) == "ab");
  CHECK(expand_word({var("UNSET")}, lookup).empty());
}

TEST_CASE("variable names") {
  CHECK(is_variable_name("_a1"));
  CHECK(is_variable_name("PATH"));
  CHECK_FALSE(is_variable_name(""));
  CHECK_FALSE(is_variable_name("1a"));
  CHECK_FALSE(is_variable_name("a-b"));
}
