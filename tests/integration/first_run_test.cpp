// README.md's "First run": the example files under docs/first-run are
// shown in the README verbatim, and the sprint-sim one passes doctor from
// the repository's root as the README says (with this build's sprint-sim).

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string source_dir = SPRINTRT_SOURCE_DIR;

} // namespace

TEST_CASE("the README's first-run files are in the README verbatim") {
  auto readme = read_file(source_dir + "/README.md");
  for (const char* name : {"sprint-sim.json", "corpus.txt", "rasr.json"}) {
    INFO(name);
    CHECK_THAT(readme, Catch::Contains(read_file(source_dir + "/docs/first-run/" + name)));
  }
}

TEST_CASE("the README's first run with sprint-sim passes doctor") {
  test::temp_dir dir;
  auto opts = nlohmann::json::parse(read_file(source_dir + "/docs/first-run/sprint-sim.json"));
  // The README's path is that of build/; this build may be elsewhere.
  CHECK(opts["sprintExecPath"] == "build/tools/sprint-sim/sprint-sim");
  opts["sprintExecPath"] = SPRINTRT_SPRINT_SIM_PATH;
  auto path = dir.path() + "/first-run.json";
  std::ofstream{path} << opts.dump();
  auto r =
      test::run_program(dir.path(), "cd " + source_dir + " && " + SPRINTRT_CLI_PATH,
                        "doctor --config " + path + " --segment first/seg-1 --frames 20 --dim 10");
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("handshake ok: child 'sprint-sim'") &&
                        Catch::Contains("segment 'first/seg-1' (20 x 10, uniform posteriors)") &&
                        Catch::Contains("exit ok"));
  CHECK(test::child_processes().empty());
}

TEST_CASE("the README's RASR example is valid options that doctor reads") {
  test::temp_dir dir;
  auto r = test::run_cli(dir.path(), "doctor --config " + source_dir + "/docs/first-run/rasr.json");
  // No RASR here: doctor gets as far as looking for the program.
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("FAILED at program: spawn_failed: sprintExecPath "
                                    "'/opt/rasr/arch/linux-x86_64-standard/"));
}
