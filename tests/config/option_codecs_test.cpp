// The codecs of the option values (config/option_codecs.hpp), one by one:
// what each reads, what it refuses (named by the field's path and where it
// came from), and the canonical form each writes. parse_options, which
// drives them, is tested in options_test.cpp.

#include "config/option_codecs.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <limits>

using namespace sprintrt;
using namespace sprintrt::config;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

/// Reads `value` with `Codec` into a T, which must fail; returns the message.
template <class Codec, class T>
std::string read_error(const json& value, const std::string& via = "") {
  T out{};
  auto err = Codec::read(option_field{"k", via, value}, out);
  REQUIRE(err);
  CHECK(err == errc::invalid_options);
  return error_message(err);
}

template <class Codec, class T>
T read_ok(const json& value) {
  T out{};
  auto err = Codec::read(option_field{"k", "", value}, out);
  if (err)
    FAIL(render(err));
  return out;
}

} // namespace

TEST_CASE("a field is named by its path and the reference it came through") {
  const json value = 3;
  const option_field f{"env", "e", value};
  CHECK(f.name() == "option 'env' (from 'config:e')");
  CHECK(f.child(".set.A", value).name() == "option 'env.set.A' (from 'config:e')");
  CHECK(error_message(f.missing()) == "option 'env' (from 'config:e') is required");
  CHECK(error_message(f.fail("an object")) == "option 'env' (from 'config:e') must be an "
                                              "object, got 3");
  CHECK(error_message(option_field{"x", "", value}.problem("bad")) == "option 'x': bad");
}

TEST_CASE("counts fit the member's type") {
  CHECK(read_ok<count_codec, int>(json(std::numeric_limits<int>::max())) ==
        std::numeric_limits<int>::max());
  CHECK(read_error<count_codec, int>(json(int64_t{std::numeric_limits<int>::max()} + 1)) ==
        "option 'k' must be an integer >= 0, got 2147483648");
  CHECK(read_ok<count_codec, size_t>(json(uint64_t{1} << 40)) == size_t{1} << 40);
  CHECK(read_error<count_codec, size_t>(json(-1)) == "option 'k' must be an integer >= 0, got -1");
  CHECK(count_codec::write(size_t{7}) == json(7));
}

TEST_CASE("seconds are written as fractional seconds and read back exactly") {
  CHECK(seconds_codec::write(1500ms) == json(1.5));
  CHECK(read_ok<seconds_codec, std::chrono::milliseconds>(seconds_codec::write(1501ms)) == 1501ms);
  CHECK(read_error<seconds_codec, std::chrono::milliseconds>(json(0), "t") ==
        "option 'k' (from 'config:t') must be a number of seconds > 0 (at most 1e9), got 0");
}

TEST_CASE("an absent module name and absent TLS files are written as null") {
  CHECK(optional_name_codec::write("").is_null());
  CHECK(optional_name_codec::write("m") == json("m"));
  CHECK(read_error<optional_name_codec, std::string>(json("")) ==
        R"(option 'k' must be a non-empty string, got "")");
  CHECK(tls_codec::write(tls_files{}).is_null());
  CHECK(tls_codec::write(tls_files{"c", "k", "a"}) ==
        json{{"certificate", "c"}, {"key", "k"}, {"ca", "a"}});
}

TEST_CASE("remote pools are written as objects whichever form was read") {
  const auto endpoints = read_ok<remote_codec, std::vector<remote_endpoint>>(
      json::parse(R"(["h:1", {"host": "g", "port": 2}])"));
  CHECK(endpoints == std::vector<remote_endpoint>{{"h", 1}, {"g", 2}});
  CHECK(remote_codec::write(endpoints) ==
        json::parse(R"([{"host": "h", "port": 1}, {"host": "g", "port": 2}])"));
}

TEST_CASE("child output, framing and the environment are written in their canonical form") {
  CHECK(child_output_codec::write({child_output_mode::log, ""}) == json("log"));
  CHECK(child_output_codec::write({child_output_mode::inherit, ""}) == json("inherit"));
  CHECK(child_output_codec::write({child_output_mode::file, "d"}) == json{{"file", "d"}});
  CHECK(framing_codec::write(pipe_framing::raw) == json("raw"));
  CHECK(read_ok<framing_codec, pipe_framing>(json("length_prefixed")) ==
        pipe_framing::length_prefixed);
  const auto env =
      read_ok<environment_codec, environment_changes>(json::parse(R"({"unset": ["B", "A", "B"]})"));
  CHECK(env.unset == std::vector<std::string>{"A", "B"});
  CHECK(environment_codec::write(env) == json::parse(R"({"set": {}, "unset": ["A", "B"]})"));
}
