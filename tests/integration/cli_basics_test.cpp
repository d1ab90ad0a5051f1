// The `sprintrt` tool's first contact: what a bare call, --help, --version
// and --log-level say, sprint-sim's --help and --version, pickle-dump's summary and its
// errors, and what doctor says about sprintConfigStr before it starts a
// child (an unset variable, and where RETURNN's Python would read it
// differently).

#include <catch2/catch.hpp>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "protocol/messages.hpp"
#include "sprintrt/version.hpp"
#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

const char* const level_list = "trace, debug, info, warning (or warn), error, critical or off";

/// Writes options running sprint-sim with `config` as sprintConfigStr.
std::string write_options(const test::temp_dir& dir, const nlohmann::json& config,
                          const nlohmann::json& env = nlohmann::json::object()) {
  nlohmann::json opts{{"sprintExecPath", SPRINTRT_SPRINT_SIM_PATH},
                      {"sprintConfigStr", config},
                      {"initTimeout", 5},
                      {"exitGrace", 2}};
  if (!env.empty())
    opts["env"] = env;
  auto path = dir.path() + "/options.json";
  std::ofstream{path} << opts.dump();
  return path;
}

} // namespace

TEST_CASE("a bare sprintrt lists its commands and fails") {
  test::temp_dir dir;
  auto r = test::run_cli(dir.path(), "");
  CHECK(r.status == 1);
  for (const char* command :
       {"automata", "demo", "doctor", "first-run", "loss", "pickle-dump", "record", "serve"})
    CHECK_THAT(r.out, Catch::Contains(std::string{"\n  "} + command + " "));
  CHECK_THAT(r.out, Catch::Contains(level_list));
}

TEST_CASE("every command's --help reads alike: capitalized descriptions, one --config text") {
  test::temp_dir dir;
  auto listing = test::run_cli(dir.path(), "").out;
  for (const char* command :
       {"automata", "demo", "doctor", "first-run", "loss", "pickle-dump", "record", "serve"}) {
    INFO(command);
    auto at = listing.find(std::string{"\n  "} + command + " ");
    REQUIRE(at != std::string::npos);
    auto description = listing.find_first_not_of(' ', at + 3 + std::strlen(command));
    CHECK(std::isupper(static_cast<unsigned char>(listing[description])));
  }
  for (const char* command : {"automata", "doctor", "loss", "serve"}) {
    INFO(command);
    auto help = test::run_cli(dir.path(), std::string{command} + " --help");
    CHECK(help.status == 0);
    CHECK_THAT(help.out, Catch::Contains("Options JSON file (RETURNN's sprint_opts"));
  }
}

TEST_CASE("the CLI's --log-level takes the Python module's names, before or after the subcommand") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 1, 5);
  auto opts = write_options(dir, "--*.corpus=" + test::corpus_path(dir));
  auto tags = dir.path() + "/tags.txt";
  std::ofstream{tags} << segments[0].name << "\n";
  auto automata = "automata --config " + opts + " --tags " + tags + " --out-dir " + dir.path();
  // The pool logs each child's start at info.
  auto before = test::run_cli(dir.path(), "--log-level info " + automata);
  INFO(before.out << before.err);
  CHECK(before.status == 0);
  CHECK_THAT(before.err, Catch::Contains(" info: "));
  auto after = test::run_cli(dir.path(), automata + " --log-level info");
  CHECK(after.status == 0);
  CHECK_THAT(after.err, Catch::Contains(" info: "));
  for (const char* quiet : {"warning", "warn", "error", "critical", "off"}) {
    INFO(quiet);
    auto r = test::run_cli(dir.path(), automata + " --log-level " + quiet);
    CHECK(r.status == 0);
    CHECK_THAT(r.err, !Catch::Contains(" info: "));
  }
  auto unknown = test::run_cli(dir.path(), automata + " --log-level verbose");
  CHECK(unknown.status != 0);
  CHECK_THAT(unknown.err, Catch::Contains("verbose not in {trace,debug,info,warning,warn,error,"
                                          "critical,off}"));
  auto help = test::run_cli(dir.path(), "--help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains(level_list));
}

TEST_CASE("sprint-sim --help lists its parameters and succeeds") {
  test::temp_dir dir;
  auto r = test::run_program(dir.path(), SPRINTRT_SPRINT_SIM_PATH, "--help");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::StartsWith("usage: sprint-sim ") && Catch::Contains("--*.corpus=FILE") &&
                        Catch::Contains("--*.delay-ms=N") && Catch::Contains("--*.fault=KIND"));
  auto wrong = test::run_program(dir.path(), SPRINTRT_SPRINT_SIM_PATH, "plain");
  CHECK(wrong.status != 0);
  CHECK_THAT(wrong.err, Catch::Contains("sprint-sim --help lists the parameters"));
}

TEST_CASE("sprintrt --version and sprint-sim --version print the project's version") {
  test::temp_dir dir;
  auto cli = test::run_cli(dir.path(), "--version");
  CHECK(cli.status == 0);
  CHECK(cli.out == std::string{"sprintrt "} + sprintrt::version + "\n");
  auto sim = test::run_program(dir.path(), SPRINTRT_SPRINT_SIM_PATH, "--version");
  CHECK(sim.status == 0);
  CHECK(sim.out == std::string{"sprint-sim "} + sprintrt::version + "\n");
}

TEST_CASE("pickle-dump --summary prints arrays as dtype, shape, min and max") {
  test::temp_dir dir;
  protocol::wire_format fmt;
  protocol::byte_buffer traffic;
  REQUIRE_FALSE(protocol::encode_init_command(traffic, fmt));
  std::vector<float> lp(300 * 4);
  for (size_t i = 0; i < lp.size(); ++i)
    lp[i] = -static_cast<float>(i % 7) - 0.5f;
  REQUIRE_FALSE(protocol::encode_loss_command(traffic, fmt, "corpus/seg/1", 300, 4, lp.data(), 4));
  auto path = dir.path() + "/traffic.p2c";
  std::ofstream{path, std::ios::binary}.write(reinterpret_cast<const char*>(traffic.data()),
                                              static_cast<std::streamsize>(traffic.size()));
  auto full = test::run_cli(dir.path(), "pickle-dump " + path);
  auto summary = test::run_cli(dir.path(), "pickle-dump --summary " + path);
  INFO(summary.out << summary.err);
  REQUIRE(summary.status == 0);
  REQUIRE(full.status == 0);
  CHECK_THAT(summary.out, Catch::Contains(R"({"ndarray_summary":{"dtype":"float32","max":-0.5,)"
                                          R"("min":-6.5,"shape":[300,4]}})") &&
                              Catch::Contains(R"({"str":"corpus/seg/1"})"));
  CHECK(summary.out.size() * 20 < full.out.size());
  // The first message, without arrays, is the same either way.
  CHECK(summary.out.substr(0, summary.out.find('\n')) == full.out.substr(0, full.out.find('\n')));
  auto missing = test::run_cli(dir.path(), "pickle-dump " + dir.path() + "/none.p2c");
  CHECK(missing.status == 1);
  CHECK_THAT(missing.err,
             Catch::Contains("cannot open " + dir.path() + "/none.p2c: No such file or directory"));
}

TEST_CASE("doctor names an unset variable of sprintConfigStr before starting a child") {
  test::temp_dir dir;
  test::write_corpus(dir, 1, 5);
  ::unsetenv("SPRINTRT_TEST_UNSET_CORPUS");
  auto r =
      test::run_cli(dir.path(), "doctor --config " +
                                    write_options(dir, "--*.corpus=$SPRINTRT_TEST_UNSET_CORPUS"));
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("FAILED at arguments: spawn_failed: sprintConfigStr: "
                                    "environment variable SPRINTRT_TEST_UNSET_CORPUS is not set "
                                    "(in '--*.corpus=$SPRINTRT_TEST_UNSET_CORPUS')"));
  CHECK_THAT(r.out, !Catch::Contains("started pid"));
  // Set by the options' env, it is fine.
  auto set = test::run_cli(
      dir.path(),
      "doctor --config " +
          write_options(dir, "--*.corpus=$SPRINTRT_TEST_UNSET_CORPUS",
                        {{"set", {{"SPRINTRT_TEST_UNSET_CORPUS", test::corpus_path(dir)}}}}));
  INFO(set.out << set.err);
  CHECK(set.status == 0);
  CHECK(test::child_processes().empty());
}

TEST_CASE("doctor warns where RETURNN's Python would read sprintConfigStr differently") {
  test::temp_dir dir;
  test::write_corpus(dir, 1, 5);
  auto corpus = test::corpus_path(dir);
  nlohmann::json env{{"set", {{"SIM_CORPUS", corpus}, {"SIM_ARGS", "--*.name=a b"}}}};
  // Agreeing: plain arguments and one that is exactly $NAME of one word.
  auto same = test::run_cli(
      dir.path(), "doctor --json --config " +
                      write_options(dir, "$SIM_CORPUS_ARG --*.name=x",
                                    {{"set", {{"SIM_CORPUS_ARG", "--*.corpus=" + corpus}}}}));
  INFO(same.out << same.err);
  REQUIRE(same.status == 0);
  CHECK(nlohmann::json::parse(same.out)["warnings"].empty());
  // Differing: a variable inside an argument, ${NAME}, a value Python
  // would split.
  auto differ = test::run_cli(
      dir.path(),
      "doctor --config " +
          write_options(dir, "--*.corpus=$SIM_CORPUS $SIM_ARGS --*.a=${SIM_CORPUS}", env));
  INFO(differ.out << differ.err);
  CHECK(differ.status == 0);
  CHECK_THAT(differ.out,
             Catch::Contains("warning: argument '--*.corpus=$SIM_CORPUS': the JSON options expand "
                             "the variable in it; RETURNN's Python replaces only an argument that "
                             "is exactly $NAME and would pass it with the $ as it is") &&
                 Catch::Contains("warning: argument '$SIM_ARGS': SIM_ARGS is '--*.name=a b'; the "
                                 "JSON options pass it as one argument, RETURNN's Python splits "
                                 "it like a shell into several") &&
                 Catch::Contains("warning: sprintConfigStr uses ${NAME}"));
  // A literal $ at the start (sprint-sim then refuses the argument: the
  // warning comes before the child starts).
  auto literal = test::run_cli(
      dir.path(), "doctor --config " + write_options(dir, "--*.corpus=" + corpus + " '$literal'"));
  CHECK_THAT(literal.out, Catch::Contains("warning: argument '$literal': the JSON options pass it "
                                          "as it is; RETURNN's Python reads an argument starting "
                                          "with $ as an environment variable"));
  CHECK(test::child_processes().empty());
}
