#include "config/control_module.hpp"

#include <fstream>

#include <catch2/catch.hpp>

#include "config/child_environment.hpp"
#include "process/temp_directory.hpp"

using namespace sprintrt::config;

namespace {

sprintrt::sprint_options options(std::string_view json) {
  auto opts = sprintrt::parse_options(json);
  REQUIRE(opts);
  return *opts;
}

bool has_module(const std::string& dir) {
  return std::ifstream{dir + "/sprintrt_control.py"}.good();
}

} // namespace

TEST_CASE("SPRINTRT_CONTROL_DIR names the module's directory") {
  auto dir = sprintrt::process::temp_directory::make("control-module");
  REQUIRE(dir);
  const auto path = dir->path();
  const auto lookup = environment_lookup({"SPRINTRT_CONTROL_DIR=" + path});
  // Without the file the variable is refused, with it chosen.
  CHECK_FALSE(find_control_module_dir(lookup));
  std::ofstream{path + "/sprintrt_control.py"} << "\n";
  auto found = find_control_module_dir(lookup);
  REQUIRE(found);
  CHECK(*found == path);
  auto chosen = choose_pymod(options(R"({"sprintExecPath": "/s"})"), lookup);
  REQUIRE(chosen);
  CHECK(chosen->path == path);
  CHECK(chosen->name == "sprintrt_control");
}

TEST_CASE("without SPRINTRT_CONTROL_DIR the first candidate with the module is chosen") {
  const auto candidates = control_module_candidates();
  REQUIRE(candidates.size() == 2);
  CHECK(candidates[0].find("python") != std::string::npos);
  CHECK(candidates[1].find("dist-packages") != std::string::npos);
  std::string expected;
  for (const auto& dir : candidates)
    if (expected.empty() && has_module(dir))
      expected = dir;
  auto found = find_control_module_dir(environment_lookup({}));
  REQUIRE(found);
  CHECK(*found == expected);
}

TEST_CASE("the module choice follows which of pymodPath and pymodName are given") {
  const auto lookup =
      environment_lookup({"SPRINTRT_CONTROL_DIR=" SPRINTRT_TEST_DATA "/../../python/child"});
  const auto choice = [&](std::string_view json) {
    auto chosen = choose_pymod(options(json), lookup);
    REQUIRE(chosen);
    return chosen->path + " " + chosen->name;
  };
  CHECK(choice(R"({"sprintExecPath": "/s"})") == SPRINTRT_TEST_DATA
        "/../../python/child sprintrt_control");
  CHECK(choice(R"({"sprintExecPath": "/s", "pymodPath": ""})") == SPRINTRT_TEST_DATA
        "/../../python/child sprintrt_control");
  CHECK(choice(R"({"sprintExecPath": "/s", "pymodName": "sprintrt_control"})") == SPRINTRT_TEST_DATA
        "/../../python/child sprintrt_control");
  CHECK(choice(R"({"sprintExecPath": "/s", "pymodPath": "/r"})") == "/r returnn.sprint.control");
  CHECK(choice(R"({"sprintExecPath": "/s", "pymodName": "SprintControl"})") == " SprintControl");
  CHECK(choice(R"({"sprintExecPath": "/s", "pymodPath": "/r", "pymodName": "SprintControl"})") ==
        "/r SprintControl");
}
