// README.md's "First run": `sprintrt first-run` writes a corpus and options
// for this build's sprint-sim, wherever it is run, and the doctor command it
// prints passes there; the README shows what it writes; the README's RASR
// example (docs/first-run/rasr.json) is in the README verbatim and is valid
// options.

#include <catch2/catch.hpp>

#include <filesystem>
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

/// Runs `command` (a program and its arguments) in `dir`, as a user there would.
test::command_result run_in(const test::temp_dir& dir, const std::string& command) {
  return test::run_program(dir.path(), "cd " + dir.path() + " &&", command);
}

/// Runs `sprintrt` with `args` in `dir`.
test::command_result run_cli_in(const test::temp_dir& dir, const std::string& args) {
  return run_in(dir, std::string{SPRINTRT_CLI_PATH} + " " + args);
}

/// The last line of `text` without its newline.
std::string last_line(const std::string& text) {
  auto end = text.find_last_not_of('\n');
  auto begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end - begin);
}

} // namespace

TEST_CASE("first-run writes a corpus and options for this build's sprint-sim, and the doctor "
          "command it prints passes where it was run") {
  test::temp_dir dir;
  auto r = run_cli_in(dir, "first-run");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto written = dir.path() + "/sprintrt-first-run";
  auto opts = nlohmann::json::parse(read_file(written + "/sprint-sim.json"));
  CHECK(std::filesystem::equivalent(opts["sprintExecPath"].get<std::string>(),
                                    SPRINTRT_SPRINT_SIM_PATH));
  CHECK(opts["sprintConfigStr"] ==
        nlohmann::json::array({"--*.corpus=" + written + "/corpus.txt", "--*.topology=ctc"}));
  CHECK(opts["numInstances"] == 1);
  CHECK(read_file(written + "/corpus.txt") == "first/seg-1\t3 1 4 1 5\nfirst/seg-2\t9 2 6\n");
  auto doctor = last_line(r.out);
  CHECK(doctor == std::string{"  "} + SPRINTRT_CLI_PATH +
                      " doctor --config sprintrt-first-run/sprint-sim.json --segment first/seg-1 "
                      "--frames 20 --dim 10");
  auto checked = run_in(dir, doctor);
  INFO(checked.out << checked.err);
  CHECK(checked.status == 0);
  CHECK_THAT(checked.out,
             Catch::Contains("handshake ok: child 'sprint-sim'") &&
                 Catch::Contains("segment 'first/seg-1' (20 x 10, uniform posteriors)") &&
                 Catch::Contains("exit ok"));
  CHECK(test::child_processes().empty());
}

TEST_CASE("first-run's options keep a directory with a space and a $ in it one argument, and "
          "the doctor command it prints works there") {
  test::temp_dir dir;
  auto first = run_cli_in(dir, "first-run --dir 'my $HOME dir'");
  REQUIRE(first.status == 0);
  auto written = dir.path() + "/my $HOME dir";
  auto doctor = last_line(first.out);
  CHECK_THAT(doctor, Catch::Contains(" doctor --config 'my $HOME dir/sprint-sim.json' "));
  auto r = run_in(dir, doctor);
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("--*.corpus=" + written + "/corpus.txt") &&
                        Catch::Contains("exit ok"));
  CHECK(test::child_processes().empty());
}

TEST_CASE("first-run keeps files it finds unless --force, and writes where --dir says") {
  test::temp_dir dir;
  REQUIRE(run_cli_in(dir, "first-run --dir mine").status == 0);
  std::ofstream{dir.path() + "/mine/corpus.txt"} << "my own\n";
  auto again = run_cli_in(dir, "first-run --dir mine");
  CHECK(again.status == 1);
  CHECK_THAT(again.err, Catch::Contains("sprintrt first-run: '" + dir.path() +
                                        "/mine/corpus.txt' exists; --force overwrites it"));
  CHECK(read_file(dir.path() + "/mine/corpus.txt") == "my own\n");
  CHECK(run_cli_in(dir, "first-run --dir mine --force").status == 0);
  CHECK(read_file(dir.path() + "/mine/corpus.txt") ==
        "first/seg-1\t3 1 4 1 5\nfirst/seg-2\t9 2 6\n");
}

TEST_CASE("the README's first run is first-run's: its corpus verbatim, its doctor command") {
  test::temp_dir dir;
  REQUIRE(run_cli_in(dir, "first-run").status == 0);
  auto readme = read_file(source_dir + "/README.md");
  CHECK_THAT(readme, Catch::Contains(read_file(dir.path() + "/sprintrt-first-run/corpus.txt")));
  CHECK_THAT(readme, Catch::Contains("sprintrt doctor --config sprintrt-first-run/sprint-sim.json "
                                     "--segment first/seg-1 --frames 20 --dim 10"));
  CHECK_THAT(readme, Catch::Contains(read_file(source_dir + "/docs/first-run/rasr.json")));
}

TEST_CASE("the README's RASR example is valid options that doctor reads") {
  test::temp_dir dir;
  auto r = test::run_cli(dir.path(), "doctor --config " + source_dir + "/docs/first-run/rasr.json");
  // No RASR here: doctor gets as far as looking for the program.
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("FAILED at program: spawn_failed: sprintExecPath "
                                    "'/opt/rasr/arch/linux-x86_64-standard/"));
}
