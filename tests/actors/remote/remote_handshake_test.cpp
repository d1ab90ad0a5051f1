// What a trainer and a remote pool compare when they connect
// (remote_handshake.hpp): the interface version, and the options key, which
// leaves out what is about the local machine and process and keeps what
// decides the results; refusals name what differs with both values.

#include "actors/remote/remote_handshake.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/option_table.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/remote_interface.hpp"
#include "sprintrt/version.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

sprint_options parse(std::string_view json) {
  auto opts = parse_options(json);
  INFO(json);
  if (!opts)
    FAIL(render(opts.error()));
  return *opts;
}

std::string key_of(std::string_view json) {
  return remote_options_key(parse(json));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr std::string_view base_json =
    R"({"sprintExecPath": "/opt/rasr/nn-trainer", "sprintConfigStr": "--a=1 --b"})";

} // namespace

TEST_CASE("a trainer with this build's interface and the server's options key is accepted") {
  auto key = key_of(base_json);
  CHECK_FALSE(check_handshake("gpu1:7000", remote_interface_version, key, key));
}

TEST_CASE("the interface version is sprintrt's release") {
  CHECK(std::string{remote_interface_version} ==
        "sprintrt " + std::to_string(version_major) + "." + std::to_string(version_minor) +
            " remote pools (float32 little-endian, FSA queries)");
}

TEST_CASE("the same options written otherwise are accepted") {
  auto key = key_of(base_json);
  REQUIRE(key.front() == '{');
  auto spaced = "{ " + key.substr(1);
  CHECK_FALSE(check_handshake("gpu1:7000", remote_interface_version, spaced, key));
}

TEST_CASE("a trainer speaking another interface version is refused, naming both versions") {
  auto key = key_of(base_json);
  auto err = check_handshake("gpu1:7000", "sprintrt 0.0 remote pools", key, key);
  CHECK(err == errc::invalid_options);
  CHECK(error_message(err) == std::string{"gpu1:7000 speaks '"} + remote_interface_version +
                                  "', the trainer 'sprintrt 0.0 remote pools': run the same "
                                  "sprintrt release on both ends");
  // A peer's text is cut short in the message.
  err = check_handshake("gpu1:7000", std::string(1000, 'v'), key, key);
  CHECK(error_message(err).size() < 400);
}

TEST_CASE("options that differ in sprintConfigStr are refused, naming the key and both values") {
  auto trainer = key_of(base_json);
  auto server =
      key_of(R"({"sprintExecPath": "/opt/rasr/nn-trainer", "sprintConfigStr": "--a=2 --b"})");
  REQUIRE(trainer != server);
  auto err = check_handshake("gpu1:7000", remote_interface_version, trainer, server);
  CHECK(err == errc::invalid_options);
  auto message = error_message(err);
  CHECK(contains(message, "gpu1:7000 serves other Sprint options than the trainer's"));
  CHECK(contains(
      message, R"(  'sprintConfigStr': the trainer ["--a=1","--b"], the server ["--a=2","--b"])"));
  // Only what differs is named.
  CHECK_FALSE(contains(message, "'sprintExecPath'"));
  CHECK_FALSE(contains(message, "'pymodName'"));
}

TEST_CASE("a key that only one side has is named with the value of the side that has it") {
  auto server = key_of(base_json);
  auto trainer = server;
  REQUIRE(trainer.back() == '}');
  trainer.insert(trainer.size() - 1, R"(,"zNewOption":17)");
  auto err = check_handshake("s", remote_interface_version, trainer, server);
  CHECK(err == errc::invalid_options);
  CHECK(contains(error_message(err), "'zNewOption': the trainer 17, the server has none"));
  err = check_handshake("s", remote_interface_version, server, trainer);
  CHECK(err == errc::invalid_options);
  CHECK(contains(error_message(err), "'zNewOption': the trainer has none, the server 17"));
}

TEST_CASE("long differing values are cut short in the refusal") {
  std::string long_arg(300, 'x');
  auto trainer = key_of(R"({"sprintExecPath": "/s", "sprintConfigStr": ")" + long_arg + "\"}");
  auto server = key_of(R"({"sprintExecPath": "/s"})");
  auto err = check_handshake("s", remote_interface_version, trainer, server);
  CHECK(err == errc::invalid_options);
  auto dumped = "[\"" + long_arg + "\"]";
  CHECK(contains(error_message(err),
                 "'sprintConfigStr': the trainer " + dumped.substr(0, 200) + "..., the server []"));
  CHECK_FALSE(contains(error_message(err), dumped.substr(0, 201)));
}

TEST_CASE("a trainer's options key that is not a JSON object is refused") {
  auto server = key_of(base_json);
  for (std::string trainer : {"not json {", "[1, 2]", "\"text\""}) {
    INFO(trainer);
    auto err = check_handshake("gpu1:7000", remote_interface_version, trainer, server);
    CHECK(err == errc::invalid_options);
    CHECK(error_message(err) == "gpu1:7000: the trainer's options are not a JSON object");
  }
}

TEST_CASE("the options key leaves out what is about the local machine and process") {
  auto local = parse(R"({"sprintExecPath": "/opt/rasr/nn-trainer", "sprintConfigStr": "--a=1"})");
  auto other = parse(R"({
    "sprintExecPath": "/opt/rasr/nn-trainer", "sprintConfigStr": "--a=1",
    "numInstances": 8, "remote": [{"host": "gpu1", "port": 7000}],
    "initTimeout": 3, "replyTimeout": 7, "exitGrace": 0.5, "maxRetries": 0,
    "env": {"set": {"OMP_NUM_THREADS": "1"}, "unset": ["LANG"]},
    "remoteTls": {"certificate": "t.pem", "key": "t.key", "ca": "ca.pem"},
    "childOutput": "inherit"})");
  REQUIRE(to_json_string(local) != to_json_string(other));
  CHECK(remote_options_key(local) == remote_options_key(other));
  for (const char* key :
       {"\"numInstances\"", "\"remote\"", "\"initTimeout\"", "\"replyTimeout\"", "\"exitGrace\"",
        "\"maxRetries\"", "\"env\"", "\"remoteTls\"", "\"childOutput\""}) {
    INFO(key);
    CHECK_FALSE(contains(remote_options_key(other), key));
  }
  CHECK_FALSE(check_handshake("s", remote_interface_version, remote_options_key(other),
                              remote_options_key(local)));
}

TEST_CASE("the options key differs when an option that decides the results differs") {
  auto base = key_of(R"({"sprintExecPath": "/opt/rasr/nn-trainer"})");
  for (std::string_view json : {
           R"({"sprintExecPath": "/opt/rasr2/nn-trainer"})",
           R"({"sprintExecPath": "/opt/rasr/nn-trainer", "sprintConfigStr": "--x"})",
           R"({"sprintExecPath": "/opt/rasr/nn-trainer", "minPythonControlVersion": 3})",
           R"({"sprintExecPath": "/opt/rasr/nn-trainer", "sprintControlConfig": {"a": 1}})",
           R"({"sprintExecPath": "/opt/rasr/nn-trainer", "usePythonSegmentOrder": false})",
           R"({"sprintExecPath": "/opt/rasr/nn-trainer", "pymodPath": "/src/returnn"})",
           R"({"sprintExecPath": "/opt/rasr/nn-trainer", "pymodName": "SprintControl"})",
           R"({"sprintExecPath": "/opt/rasr/nn-trainer", "framing": "raw"})",
           R"({"sprintExecPath": "/opt/rasr/nn-trainer", "arrayGlobalModule": "TaskSystem"})",
       }) {
    INFO(json);
    CHECK(key_of(json) != base);
  }
  auto err = check_handshake("s", remote_interface_version,
                             key_of(R"({"sprintExecPath": "/opt/rasr2/nn-trainer"})"), base);
  CHECK(err == errc::invalid_options);
  CHECK(contains(error_message(err), R"('sprintExecPath': the trainer "/opt/rasr2/nn-trainer", )"
                                     R"(the server "/opt/rasr/nn-trainer")"));
}

TEST_CASE("the options key holds exactly the options the table declares shared") {
  const auto key = nlohmann::json::parse(key_of(base_json));
  for (const auto& option : config::option_table()) {
    INFO(option.key);
    CHECK(key.contains(std::string{option.key}) == (option.scope == config::option_scope::shared));
  }
  CHECK(key.size() == 9);
}
