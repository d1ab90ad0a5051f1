// `sprintrt doctor` against sprint-sim: a working set-up passes every step;
// broken ones end with a diagnosis and a non-zero status.

#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

/// Writes an options file running sprint-sim with extra parameters.
std::string write_options(const test::temp_dir& dir, const std::string& extra,
                          const std::string& exec = SPRINTRT_SPRINT_SIM_PATH) {
  nlohmann::json opts{{"sprintExecPath", exec},
                      {"sprintConfigStr", "--*.corpus=" + test::corpus_path(dir) + " " + extra},
                      {"initTimeout", 2},
                      {"exitGrace", 2}};
  auto path = dir.path() + "/options.json";
  std::ofstream{path} << opts.dump();
  return path;
}

} // namespace

TEST_CASE("doctor passes a working set-up step by step") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 2, 5);
  auto opts = write_options(dir, "--*.topology=ctc");
  auto r = test::run_cli(dir.path(), "doctor --config " + opts + " --segment " + segments[1].name +
                                         " --frames 12 --dim 5");
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("'--*.pymod-config=c2p_fd:3,p2c_fd:4,minPythonControlVersion:2,"
                                    "sprintrtSharedMemoryFd:5'") &&
                        Catch::Contains("handshake ok: child 'sprint-sim', protocol version 1") &&
                        Catch::Contains("shared memory: accepted") &&
                        Catch::Contains("segment '" + segments[1].name +
                                        "' (12 x 5, uniform posteriors): loss ") &&
                        Catch::Contains("exit ok: the child exited with status 0"));
  CHECK(test::child_processes().empty());
}

TEST_CASE("doctor --json gives a machine-readable summary") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 1, 5);
  auto opts = write_options(dir, "");
  auto r = test::run_cli(dir.path(), "doctor --json --config " + opts + " --segment " +
                                         segments[0].name + " --frames 10 --dim 5");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["ok"] == true);
  CHECK(summary["child_name"] == "sprint-sim");
  CHECK(summary["exit_code"] == 0);
  CHECK(summary["argv"].size() == 11);
  CHECK(summary["segment"]["loss"].get<double>() > 0);
  CHECK(summary["options"]["initTimeout"] == 2.0);
}

TEST_CASE("doctor diagnoses a missing program, a dying child and a silent one") {
  test::temp_dir dir;
  test::write_corpus(dir, 1, 5);
  auto missing =
      test::run_cli(dir.path(), "doctor --config " + write_options(dir, "", dir.path() + "/nope"));
  CHECK(missing.status == 1);
  CHECK_THAT(missing.out, Catch::Contains("FAILED at program: spawn_failed: sprintExecPath '") &&
                              Catch::Contains("/nope' does not exist"));
  auto dying =
      test::run_cli(dir.path(), "doctor --config " + write_options(dir, "--*.fault=exit-at-start"));
  CHECK(dying.status == 1);
  CHECK_THAT(dying.out, Catch::Contains("FAILED at init") &&
                            Catch::Contains("the child exited with status 2") &&
                            Catch::Contains("its output ended with:") &&
                            Catch::Contains("exiting with status 2 at start"));
  auto silent =
      test::run_cli(dir.path(), "doctor --config " + write_options(dir, "--*.fault=no-init-reply"));
  CHECK(silent.status == 1);
  CHECK_THAT(silent.out,
             Catch::Contains("FAILED at init: timeout: no reply to init within 2000 ms") &&
                 Catch::Contains("killed by signal 9"));
  auto bad_options = test::run_cli(dir.path(), "doctor --config " + dir.path() + "/none.json");
  CHECK(bad_options.status == 1);
  CHECK_THAT(bad_options.out, Catch::Contains("FAILED at options: io_error"));
  CHECK(test::child_processes().empty());
}

TEST_CASE("doctor shows the options given, and lists every option without --config") {
  test::temp_dir dir;
  test::write_corpus(dir, 1, 3);
  auto r = test::run_cli(dir.path(), "doctor --config " + write_options(dir, "--*.topology=ctc"));
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("options (the others have their defaults):\n"
                                    "    sprintExecPath \"") &&
                        Catch::Contains("\n    initTimeout 2.0\n    exitGrace 2.0\n") &&
                        !Catch::Contains("    numInstances"));
  auto list = test::run_cli(dir.path(), "doctor --list-options");
  CHECK(list.status == 0);
  CHECK_THAT(list.out, Catch::StartsWith("sprintExecPath (default none)\n") &&
                           Catch::Contains("\nmaxRetries (default `2`; a remote pool has its "
                                           "own)\n    how often a request is resent"));
  auto markdown = test::run_cli(dir.path(), "doctor --list-options --markdown");
  CHECK(markdown.status == 0);
  CHECK_THAT(markdown.out, Catch::StartsWith("| key | default | on a remote pool | meaning |\n") &&
                               Catch::Contains("| `numInstances` | `1` | its own | "));
  auto neither = test::run_cli(dir.path(), "doctor");
  CHECK(neither.status != 0);
  CHECK_THAT(neither.err, Catch::Contains("--config is required"));
}
