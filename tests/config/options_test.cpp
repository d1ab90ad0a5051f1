#include "sprintrt/options.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

using sprintrt::config_word;
using sprintrt::errc;
using sprintrt::sprint_options;
using sprintrt::word_piece;
using namespace std::chrono_literals;

namespace {

sprint_options parse(std::string_view json) {
  auto opts = sprintrt::parse_options(json);
  INFO(json);
  if (!opts)
    FAIL(sprintrt::render(opts.error()));
  return *opts;
}

/// The message of the `invalid_options` error that parsing `json` must give.
std::string parse_error(std::string_view json) {
  auto opts = sprintrt::parse_options(json);
  INFO(json);
  REQUIRE_FALSE(opts);
  CHECK(opts.error() == errc::invalid_options);
  return sprintrt::error_message(opts.error());
}

/// Options with every field away from its default.
constexpr std::string_view full_json = R"({
  "sprintExecPath": "/opt/rasr/nn-trainer",
  "sprintConfigStr": "--config=$DIR/a.config '--*.lit=$X' \"\" a\\$b${Y}c",
  "minPythonControlVersion": 3,
  "sprintControlConfig": {"b": 1.5, "a": true, "c": "text"},
  "usePythonSegmentOrder": false,
  "numInstances": 4,
  "pymodPath": "/src/returnn",
  "pymodName": "SprintControl",
  "framing": "raw",
  "arrayGlobalModule": "TaskSystem",
  "initTimeout": 1.5,
  "replyTimeout": 0.0001,
  "exitGrace": 2,
  "maxRetries": 0,
  "onCancel": "keep",
  "env": {"set": {"THEANO_FLAGS": "device=cpu"}, "unset": ["LANG", "HOME", "LANG"]},
  "remote": [{"host": "gpu1", "port": 7000}, {"host": "10.0.0.2", "port": 65535}],
  "childOutput": {"file": "/var/log/sprint"}
})";

/// A file in the temporary directory, removed at the end of its scope.
struct temp_file {
  std::filesystem::path path;

  temp_file(const std::string& name, std::string_view content)
      : path(std::filesystem::temp_directory_path() /
             ("sprintrt_options_test_" + std::to_string(getpid()) + "_" + name)) {
    std::ofstream{path} << content;
  }

  ~temp_file() { std::filesystem::remove(path); }
};

} // namespace

TEST_CASE("no option is required, everything has RETURNN's defaults") {
  // Without sprintExecPath: in-process workers need no program (a pool of
  // children refuses such options, see child_process_source).
  CHECK(parse("{}").sprint_exec_path.empty());
  CHECK(parse(R"({"sprintExecPath": null})").sprint_exec_path.empty());
  const auto opts = parse(R"({"sprintExecPath": "/s"})");
  CHECK(opts.sprint_exec_path == "/s");
  CHECK(opts.sprint_config.empty());
  CHECK(opts.min_python_control_version == 2);
  CHECK(opts.sprint_control_config.empty());
  CHECK(opts.use_python_segment_order);
  CHECK(opts.num_instances == 1);
  CHECK(opts.pymod_path.empty());
  CHECK(opts.pymod_name.empty()); // not given: see control_module.hpp
  CHECK(opts.framing == sprintrt::pipe_framing::length_prefixed);
  CHECK(opts.array_global_module == "returnn.util.task_system");
  CHECK(opts.init_timeout == 60s);
  CHECK(opts.reply_timeout == 600s);
  CHECK(opts.exit_grace == 5s);
  CHECK(opts.max_retries == 2);
  CHECK(opts.on_cancel == sprintrt::cancel_policy::automatic);
  CHECK(opts.env == sprintrt::environment_changes{});
  CHECK(opts.remote.empty());
  CHECK(opts.child_output == sprintrt::child_output_mode{sprintrt::child_output_mode::log, ""});
}

TEST_CASE("every option is read") {
  const auto opts = parse(full_json);
  CHECK(opts.sprint_exec_path == "/opt/rasr/nn-trainer");
  using w = word_piece;
  CHECK(opts.sprint_config ==
        std::vector<config_word>{
            {{w::literal, "--config="}, {w::variable, "DIR"}, {w::literal, "/a.config"}},
            {{w::literal, "--*.lit=$X"}},
            {},
            {{w::literal, "a$b"}, {w::variable, "Y"}, {w::literal, "c"}}});
  CHECK(opts.min_python_control_version == 3);
  CHECK(opts.sprint_control_config ==
        std::map<std::string, std::string>{{"a", "True"}, {"b", "1.5"}, {"c", "text"}});
  CHECK_FALSE(opts.use_python_segment_order);
  CHECK(opts.num_instances == 4);
  CHECK(opts.pymod_path == "/src/returnn");
  CHECK(opts.pymod_name == "SprintControl");
  CHECK(opts.framing == sprintrt::pipe_framing::raw);
  CHECK(opts.array_global_module == "TaskSystem");
  CHECK(opts.init_timeout == 1500ms);
  CHECK(opts.reply_timeout == 1ms);
  CHECK(opts.exit_grace == 2s);
  CHECK(opts.max_retries == 0);
  CHECK(opts.on_cancel == sprintrt::cancel_policy::keep);
  CHECK(opts.env.set == std::map<std::string, std::string>{{"THEANO_FLAGS", "device=cpu"}});
  CHECK(opts.env.unset == std::vector<std::string>{"HOME", "LANG"});
  CHECK(opts.remote == std::vector<sprintrt::remote_endpoint>{{"gpu1", 7000}, {"10.0.0.2", 65535}});
  CHECK(opts.child_output ==
        sprintrt::child_output_mode{sprintrt::child_output_mode::file, "/var/log/sprint"});
}

TEST_CASE("childOutput is \"log\", \"inherit\" or {\"file\": DIR}") {
  using mode = sprintrt::child_output_mode;
  CHECK(parse(R"({"sprintExecPath": "/s", "childOutput": "log"})").child_output ==
        mode{mode::log, ""});
  CHECK(parse(R"({"sprintExecPath": "/s", "childOutput": "inherit"})").child_output ==
        mode{mode::inherit, ""});
  CHECK(parse(R"({"sprintExecPath": "/s", "childOutput": {"file": "logs"}})").child_output ==
        mode{mode::file, "logs"});
  const std::string expected = R"("log", "inherit" or {"file": "DIR"})";
  CHECK(parse_error(R"({"sprintExecPath": "/s", "childOutput": "stdout"})") ==
        R"(option 'childOutput' must be )" + expected + R"(, got "stdout")");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "childOutput": 1})") ==
        "option 'childOutput' must be " + expected + ", got 1");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "childOutput": {}})") ==
        "option 'childOutput.file' is required");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "childOutput": {"file": ""}})") ==
        R"(option 'childOutput.file' must be a non-empty string, got "")");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "childOutput": {"file": "d", "mode": 1}})") ==
        "option 'childOutput': unknown key 'mode' (allowed: 'file')");
}

TEST_CASE("null means the default for every optional key") {
  const auto opts = parse(R"({"sprintExecPath": "/s", "sprintConfigStr": null,
    "minPythonControlVersion": null, "sprintControlConfig": null,
    "usePythonSegmentOrder": null, "numInstances": null, "pymodPath": null, "pymodName": null,
    "framing": null, "arrayGlobalModule": null, "initTimeout": null, "replyTimeout": null,
    "exitGrace": null, "maxRetries": null, "env": null, "remote": null, "childOutput": null})");
  CHECK(opts == parse(R"({"sprintExecPath": "/s"})"));
  CHECK(parse(R"({"sprintExecPath": "/s", "env": {"set": null, "unset": null}})") ==
        parse(R"({"sprintExecPath": "/s"})"));
}

TEST_CASE("timeouts are seconds, kept as milliseconds rounded up") {
  const auto timeout = [](const std::string& seconds) {
    return parse(R"({"sprintExecPath": "/s", "initTimeout": )" + seconds + "}").init_timeout;
  };
  CHECK(timeout("1.1") == 1100ms);
  CHECK(timeout("2.007") == 2007ms); // 2.007 * 1e6 is 2007000.0000000002

  CHECK(timeout("2.5") == 2500ms);
  CHECK(timeout("1.0005") == 1001ms);
  CHECK(timeout("0.0001") == 1ms);
  CHECK(timeout("1e-9") == 1ms);
  CHECK(timeout("86400") == 86'400'000ms);
}

TEST_CASE("every option's wrong value is an error naming the key") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"({"sprintExecPath": ""})",
       R"(option 'sprintExecPath' must be a non-empty string, got "")"},
      {R"({"sprintExecPath": "/s", "sprintConfigStr": 3})",
       "option 'sprintConfigStr' must be a string or a list of strings, got 3"},
      {R"({"sprintExecPath": "/s", "minPythonControlVersion": -1})",
       "option 'minPythonControlVersion' must be an integer >= 0, got -1"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": [1]})",
       "option 'sprintControlConfig' must be an object, got [1]"},
      {R"({"sprintExecPath": "/s", "usePythonSegmentOrder": "yes"})",
       R"(option 'usePythonSegmentOrder' must be true or false, got "yes")"},
      {R"({"sprintExecPath": "/s", "numInstances": "two"})",
       R"(option 'numInstances' must be an integer >= 0, got "two")"},
      {R"({"sprintExecPath": "/s", "pymodPath": 1})", "option 'pymodPath' must be a string, got 1"},
      {R"({"sprintExecPath": "/s", "pymodName": ""})",
       R"(option 'pymodName' must be a non-empty string, got "")"},
      {R"({"sprintExecPath": "/s", "framing": "lines"})",
       R"(option 'framing' must be "length_prefixed" or "raw", got "lines")"},
      {R"({"sprintExecPath": "/s", "arrayGlobalModule": 5})",
       "option 'arrayGlobalModule' must be a non-empty string, got 5"},
      {R"({"sprintExecPath": "/s", "initTimeout": 0})",
       "option 'initTimeout' must be a number of seconds > 0 (at most 1e9), got 0"},
      {R"({"sprintExecPath": "/s", "replyTimeout": -1.5})",
       "option 'replyTimeout' must be a number of seconds > 0 (at most 1e9), got -1.5"},
      {R"({"sprintExecPath": "/s", "exitGrace": "5"})",
       R"(option 'exitGrace' must be a number of seconds > 0 (at most 1e9), got "5")"},
      {R"({"sprintExecPath": "/s", "maxRetries": -1})",
       "option 'maxRetries' must be an integer >= 0, got -1"},
      {R"({"sprintExecPath": "/s", "env": []})",
       R"(option 'env' must be an object with "set" and "unset", got [])"},
      {R"({"sprintExecPath": "/s", "remote": {}})",
       R"(option 'remote' must be a list of "host:port" strings or {"host": ..., "port": ...} objects, got {})"},
  };
  for (const auto& [json, message] : cases)
    CHECK(parse_error(json) == message);
}

TEST_CASE("wrong values inside options are named by their path") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"({"sprintExecPath": "/s\u0000x"})",
       "option 'sprintExecPath': must not contain a NUL character"},
      {R"({"sprintExecPath": "/s", "sprintConfigStr": ["a", 1]})",
       "option 'sprintConfigStr[1]' must be a string, got 1"},
      {R"({"sprintExecPath": "/s", "sprintConfigStr": "a 'b"})",
       "option 'sprintConfigStr': unterminated single quote opened at offset 2"},
      {R"({"sprintExecPath": "/s", "sprintConfigStr": "--a=x\u0000y --b"})",
       "option 'sprintConfigStr': must not contain a NUL character"},
      {R"({"sprintExecPath": "/s", "minPythonControlVersion": 2.5})",
       "option 'minPythonControlVersion' must be an integer >= 0, got 2.5"},
      {R"({"sprintExecPath": "/s", "minPythonControlVersion": 2147483648})",
       "option 'minPythonControlVersion' must be an integer >= 0, got 2147483648"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": {"a": "x,y"}})",
       R"(option 'sprintControlConfig.a' must be a value without ',', got "x,y")"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": {"a:b": 1}})",
       "option 'sprintControlConfig': key 'a:b' must be non-empty without ',' or ':'"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": {"a,b": 1}})",
       "option 'sprintControlConfig': key 'a,b' must be non-empty without ',' or ':'"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": {"a\u0000b": 1}})",
       "option 'sprintControlConfig': a key must not contain a NUL character"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": {"c2p_fd": 3}})",
       "option 'sprintControlConfig': key 'c2p_fd' is set by sprintrt itself"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": {"sprintrtSharedMemoryFd": 5}})",
       "option 'sprintControlConfig': key 'sprintrtSharedMemoryFd' is set by sprintrt itself"},
      {R"({"sprintExecPath": "/s", "sharedMemory": "on"})",
       R"(option 'sharedMemory' must be "auto" or "off", got "on")"},
      {R"({"sprintExecPath": "/s", "sharedMemoryThreshold": -1})",
       "option 'sharedMemoryThreshold' must be an integer >= 0, got -1"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": {"a": [1]}})",
       "option 'sprintControlConfig.a' must be a string, number or bool, got [1]"},
      {R"({"sprintExecPath": "/s", "sprintControlConfig": {"a": null}})",
       "option 'sprintControlConfig.a' must be a string, number or bool, got null"},
      {R"({"sprintExecPath": "/s", "numInstances": 0})",
       "option 'numInstances' must be at least 1 unless 'remote' names pools on other machines, "
       "got 0"},
      {R"({"sprintExecPath": "/s", "initTimeout": 1e10})",
       "option 'initTimeout' must be a number of seconds > 0 (at most 1e9), got 10000000000.0"},
      {R"({"sprintExecPath": "/s", "env": {"sett": {}}})",
       "option 'env': unknown key 'sett' (allowed: 'set', 'unset')"},
      {R"({"sprintExecPath": "/s", "env": {"set": []}})",
       "option 'env.set' must be an object of variable names to strings, got []"},
      {R"({"sprintExecPath": "/s", "env": {"set": {"A=B": "x"}}})",
       R"(option 'env.set': invalid variable name "A=B" (must be non-empty, without '='))"},
      {R"({"sprintExecPath": "/s", "env": {"set": {"A": 1}}})",
       "option 'env.set.A' must be a string, got 1"},
      {R"({"sprintExecPath": "/s", "env": {"unset": "A"}})",
       R"(option 'env.unset' must be a list of variable names, got "A")"},
      {R"({"sprintExecPath": "/s", "env": {"unset": [""]}})",
       R"(option 'env.unset': invalid variable name "" (must be non-empty, without '='))"},
      {R"({"sprintExecPath": "/s", "env": {"unset": [1]}})",
       "option 'env.unset[0]' must be a string, got 1"},
      {R"({"sprintExecPath": "/s", "env": {"set": {"A": "1"}, "unset": ["A"]}})",
       "option 'env': variable 'A' is both set and unset"},
      {R"({"sprintExecPath": "/s", "remote": [{"host": "h"}]})",
       "option 'remote[0].port' is required"},
      {R"({"sprintExecPath": "/s", "remote": [{"host": "h", "port": 1}, {"port": 1}]})",
       "option 'remote[1].host' is required"},
      {R"({"sprintExecPath": "/s", "remote": [{"host": "h", "port": 0}]})",
       "option 'remote[0].port' must be an integer from 1 to 65535, got 0"},
      {R"({"sprintExecPath": "/s", "remote": [{"host": "h", "port": 65536}]})",
       "option 'remote[0].port' must be an integer from 1 to 65535, got 65536"},
      {R"({"sprintExecPath": "/s", "remote": [{"host": "", "port": 1}]})",
       R"(option 'remote[0].host' must be a non-empty string, got "")"},
      {R"({"sprintExecPath": "/s", "remote": [{"host": "h", "port": 1, "x": 2}]})",
       "option 'remote[0]': unknown key 'x' (allowed: 'host', 'port')"},
      {R"({"sprintExecPath": "/s", "remote": [3]})",
       R"(option 'remote[0]' must be "host:port" or an object with "host" and "port", got 3)"},
      {R"({"sprintExecPath": "/s", "remote": ["g\u0000pu1:7000"]})",
       "option 'remote[0]': must not contain a NUL character"},
      {R"({"sprintExecPath": "/s", "remote": ["h"]})",
       R"(option 'remote[0]' must be "host:port" with a port from 1 to 65535, got "h")"},
      {R"({"sprintExecPath": "/s", "remote": ["h:0"]})",
       R"(option 'remote[0]' must be "host:port" with a port from 1 to 65535, got "h:0")"},
      {R"({"sprintExecPath": "/s", "remote": [":7000"]})",
       R"(option 'remote[0]' must be "host:port" with a port from 1 to 65535, got ":7000")"},
      {R"({"sprintExecPath": "/s", "remote": ["h:70000"]})",
       R"(option 'remote[0]' must be "host:port" with a port from 1 to 65535, got "h:70000")"},
  };
  for (const auto& [json, message] : cases)
    CHECK(parse_error(json) == message);
}

TEST_CASE("long values are cut short in messages") {
  const std::string long_name(100, 'x');
  CHECK(parse_error(R"({"sprintExecPath": "/s", "numInstances": ")" + long_name + "\"}") ==
        "option 'numInstances' must be an integer >= 0, got \"" + std::string(59, 'x') + "...");
}

TEST_CASE("config:NAME takes the value of another top-level key") {
  const auto opts = parse(R"({"sprintExecPath": "/s", "sprintConfigStr": "config:sprint_args",
    "numInstances": "config:n", "sprint_args": "--a=1 --b=2", "n": 3})");
  CHECK(opts.num_instances == 3);
  CHECK(opts.sprint_config == parse(R"({"sprintExecPath": "/s", "sprintConfigStr": ["--a=1",
                                         "--b=2"]})")
                                  .sprint_config);
  // Two options may refer to the same key, and to another option.
  const auto shared = parse(R"({"sprintExecPath": "config:exe", "pymodPath": "config:exe",
                                "exe": "/x", "maxRetries": 5, "numInstances": "config:maxRetries"})");
  CHECK(shared.sprint_exec_path == "/x");
  CHECK(shared.pymod_path == "/x");
  CHECK(shared.num_instances == 5);
}

TEST_CASE("config: references are validated as the option that refers to them") {
  CHECK(parse_error(R"({"sprintExecPath": "/s", "numInstances": "config:n", "n": "two"})") ==
        R"(option 'numInstances' (from 'config:n') must be an integer >= 0, got "two")");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "env": "config:e", "e": {"set": {"A": 1}}})") ==
        "option 'env.set.A' (from 'config:e') must be a string, got 1");
}

TEST_CASE("config: references must exist and must not chain") {
  CHECK(parse_error(R"({"sprintExecPath": "/s", "sprintConfigStr": "config:args"})") ==
        "option 'sprintConfigStr' refers to 'config:args', but the document has no top-level "
        "key 'args'");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "numInstances": "config:a", "a": "config:b",
                        "b": 2})") ==
        "option 'numInstances' refers to 'config:a', which is \"config:b\", another reference "
        "(config: references do not chain)");
}

TEST_CASE("unreferenced unknown keys are refused, with a suggestion when close") {
  CHECK(parse_error(R"({"sprintExecPath": "/s", "numInstance": 2})") ==
        "unknown option 'numInstance' (did you mean 'numInstances'?)");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "sprintexecpath": "/t"})") ==
        "unknown option 'sprintexecpath' (did you mean 'sprintExecPath'?)");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "sprint_args": "--a"})") ==
        "unknown option 'sprint_args'");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "numInstnce": 2})") ==
        "unknown option 'numInstnce' (did you mean 'numInstances'?)");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "MAXRETRIES": 2})") ==
        "unknown option 'MAXRETRIES' (did you mean 'maxRetries'?)");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "n": 3, "numInstances": "config:n",
                        "unused": 1})") == "unknown option 'unused'");
}

TEST_CASE("remote pools are named as host:port or as objects, and allow numInstances 0") {
  auto opts = parse(R"({"sprintExecPath": "/s", "numInstances": 0,
                        "remote": ["gpu1:7000", "[::1]:7001", {"host": "h", "port": 2}]})");
  CHECK(opts.num_instances == 0);
  CHECK(opts.remote ==
        std::vector<sprintrt::remote_endpoint>{{"gpu1", 7000}, {"::1", 7001}, {"h", 2}});
}

TEST_CASE("remote TLS names three PEM files that are all required") {
  auto opts = parse(R"({"sprintExecPath": "/s", "remote": ["h:1"],
                        "remoteTls": {"certificate": "c.pem", "key": "k.pem", "ca": "ca.pem"}})");
  CHECK(opts.remote_tls == sprintrt::tls_files{"c.pem", "k.pem", "ca.pem"});
  CHECK(parse(R"({"sprintExecPath": "/s"})").remote_tls.empty());
  CHECK(parse_error(R"({"sprintExecPath": "/s", "remoteTls": {"certificate": "c", "key": "k"}})") ==
        "option 'remoteTls.ca' is required");
  CHECK(parse_error(R"({"sprintExecPath": "/s",
                        "remoteTls": {"certificate": "", "key": "k", "ca": "a"}})") ==
        R"(option 'remoteTls.certificate' must be a non-empty string, got "")");
  CHECK(
      parse_error(R"({"sprintExecPath": "/s", "remoteTls": "tls.pem"})") ==
      R"(option 'remoteTls' must be an object with "certificate", "key" and "ca", got "tls.pem")");
}

TEST_CASE("malformed documents are invalid_options errors") {
  CHECK(parse_error(R"({"sprintExecPath": "/s",})")
            .rfind("malformed JSON: parse error at line 1, column 25:", 0) == 0);
  CHECK(parse_error(R"(["/s"])") == "the options must be a JSON object, got array");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "numInstances": 1, "numInstances": 2})") ==
        "duplicate key 'numInstances' in the options");
  CHECK(parse_error(R"({"sprintExecPath": "/s", "env": {"set": {"A": "1", "A": "2"}}})") ==
        "duplicate key 'A' in the options");
  // The same key in different objects is fine.
  CHECK(parse(R"({"sprintExecPath": "/s", "remote": [{"host": "a", "port": 1},
                 {"host": "b", "port": 2}]})")
            .remote.size() == 2);
}

TEST_CASE("load_options reads a file and names it in errors") {
  temp_file good{"good.json", R"({"sprintExecPath": "/s", "numInstances": 2})"};
  auto opts = sprintrt::load_options(good.path.string());
  REQUIRE(opts);
  CHECK(opts->num_instances == 2);

  temp_file bad{"bad.json", R"({"sprintExecPath": "/s", "numInstances": 0})"};
  auto err = sprintrt::load_options(bad.path.string());
  REQUIRE_FALSE(err);
  CHECK(err.error() == errc::invalid_options);
  CHECK(sprintrt::error_message(err.error()) ==
        "options file '" + bad.path.string() +
            "': option 'numInstances' must be at least 1 unless 'remote' names pools on other "
            "machines, got 0");

  temp_file empty{"empty.json", ""};
  auto empty_err = sprintrt::load_options(empty.path.string());
  REQUIRE_FALSE(empty_err);
  CHECK(empty_err.error() == errc::invalid_options);
}

TEST_CASE("an unreadable options file is an io_error naming it") {
  const std::string missing = "/nonexistent/sprintrt/options.json";
  auto opts = sprintrt::load_options(missing);
  REQUIRE_FALSE(opts);
  CHECK(opts.error() == errc::io_error);
  CHECK(sprintrt::error_message(opts.error()) ==
        "cannot read options file '" + missing + "': No such file or directory");
  auto dir = sprintrt::load_options(std::filesystem::temp_directory_path().string());
  REQUIRE_FALSE(dir);
  CHECK(dir.error() == errc::io_error);
}

TEST_CASE("to_json_string is canonical JSON with every option") {
  CHECK(sprintrt::to_json_string(parse(R"({"sprintExecPath": "/s"})")) ==
        R"({"arrayGlobalModule":"returnn.util.task_system","childOutput":"log",)"
        R"("env":{"set":{},"unset":[]},)"
        R"("exitGrace":5.0,"framing":"length_prefixed","initTimeout":60.0,"maxRetries":2,)"
        R"("minPythonControlVersion":2,"numInstances":1,"onCancel":"auto","pymodName":null,)"
        R"("pymodPath":"","remote":[],"remoteTls":null,"remoteWait":60.0,"replyTimeout":600.0,)"
        R"("sharedMemory":"auto","sharedMemoryThreshold":65536,"sprintConfigStr":[],)"
        R"("sprintControlConfig":{},"sprintExecPath":"/s","usePythonSegmentOrder":true})");
  CHECK(sprintrt::to_json_string(parse(R"({"sprintExecPath": "/s", "sprintConfigStr":
                                           "a$$ \"$X\"b '$Y'"})"))
            .find(R"("sprintConfigStr":["a$$$$","${X}b","$$Y"])") != std::string::npos);
}

TEST_CASE("to_json_string reads back to equal options") {
  for (const auto json : {std::string_view{R"({"sprintExecPath": "/s"})"}, full_json}) {
    const auto opts = parse(json);
    const auto text = sprintrt::to_json_string(opts);
    INFO(text);
    const auto again = parse(text);
    CHECK(again == opts);
    CHECK(sprintrt::to_json_string(again) == text);
  }
}

TEST_CASE("equal options give equal strings, whatever their spelling") {
  const auto a = parse(R"({"sprintExecPath": "/s", "sprintConfigStr": "--a=1 '--b=2'",
                           "env": {"unset": ["B", "A"]}, "initTimeout": 60})");
  const auto b = parse(R"({"initTimeout": 60.0, "env": {"unset": ["A", "B", "A"], "set": {}},
                           "sprintConfigStr": ["--a=1", "--b=2"], "sprintExecPath": "/s",
                           "numInstances": null})");
  CHECK(a == b);
  CHECK(sprintrt::to_json_string(a) == sprintrt::to_json_string(b));
}

TEST_CASE("options differing in any field are unequal and print differently") {
  const auto base = parse(full_json);
  const std::vector<std::function<void(sprint_options&)>> changes{
      [](auto& o) { o.sprint_exec_path = "/other"; },
      [](auto& o) { o.sprint_config.pop_back(); },
      [](auto& o) { o.sprint_config[0][1].kind = word_piece::literal; },
      [](auto& o) { o.min_python_control_version = 2; },
      [](auto& o) { o.sprint_control_config["a"] = "False"; },
      [](auto& o) { o.use_python_segment_order = true; },
      [](auto& o) { o.num_instances = 5; },
      [](auto& o) { o.pymod_path = "/other"; },
      [](auto& o) { o.pymod_name = "Other"; },
      [](auto& o) { o.framing = sprintrt::pipe_framing::length_prefixed; },
      [](auto& o) { o.array_global_module = "other"; },
      [](auto& o) { o.init_timeout = 1501ms; },
      [](auto& o) { o.reply_timeout = 2ms; },
      [](auto& o) { o.exit_grace = 3s; },
      [](auto& o) { o.max_retries = 1; },
      [](auto& o) { o.env.set["X"] = "1"; },
      [](auto& o) { o.env.unset.push_back("X"); },
      [](auto& o) { o.remote[1].port = 1; },
      [](auto& o) { o.remote[0].host = "gpu2"; },
      [](auto& o) {
        o.remote_tls = {"c.pem", "k.pem", "ca.pem"};
      },
      [](auto& o) { o.child_output.directory = "/other"; },
      [](auto& o) {
        o.child_output = {sprintrt::child_output_mode::inherit, ""};
      },
  };
  const auto base_text = sprintrt::to_json_string(base);
  for (size_t i = 0; i < changes.size(); ++i) {
    INFO("change " << i);
    auto changed = base;
    CHECK(changed == base);
    changes[i](changed);
    CHECK(changed != base);
    CHECK_FALSE(changed == base);
    CHECK(sprintrt::to_json_string(changed) != base_text);
  }
}
