// Ctrl-C in the `sprintrt` tool: `loss`, `automata` and `demo` stop on the
// first SIGINT in the middle of slow Sprint work, end their children, leave
// no output file and exit with 130.

#include <signal.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"
#include "tools/sprintrt/npy_file.hpp"

using namespace sprintrt;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr size_t dim = 5;

/// Options: two sprint-sim children taking `delay_ms` per request.
std::string write_options(const test::temp_dir& dir, int delay_ms) {
  nlohmann::json opts{{"sprintExecPath", SPRINTRT_SPRINT_SIM_PATH},
                      {"sprintConfigStr", "--*.corpus=" + test::corpus_path(dir) +
                                              " --*.delay-ms=" + std::to_string(delay_ms)},
                      {"numInstances", 2}};
  auto path = dir.path() + "/options.json";
  std::ofstream{path} << opts.dump();
  return path;
}

std::string write_tags(const test::temp_dir& dir, const std::vector<test::test_segment>& segments) {
  auto path = dir.path() + "/tags.txt";
  std::ofstream out{path};
  for (const auto& s : segments)
    out << s.name << "\n";
  return path;
}

/// Waits until `cli` has `count` children, then `busy` longer; returns them.
std::vector<pid_t> wait_for_children(const test::background_cli& cli, size_t count,
                                     std::chrono::milliseconds busy) {
  auto deadline = clock_type::now() + std::chrono::seconds{10};
  std::vector<pid_t> children;
  while ((children = test::children_of(cli.pid)).size() < count && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  std::this_thread::sleep_for(busy);
  return test::children_of(cli.pid);
}

/// Sends SIGINT to `cli` and checks that it exits with 130 within 1.5 s
/// and that `children` are gone soon after; returns what it printed.
test::command_result interrupt(const test::background_cli& cli,
                               const std::vector<pid_t>& children) {
  REQUIRE(children.size() >= 2);
  REQUIRE(::kill(cli.pid, SIGINT) == 0);
  auto sent = clock_type::now();
  auto result = test::wait_cli(cli, std::chrono::milliseconds{1500});
  REQUIRE(result);
  INFO(result->out << result->err);
  CHECK(clock_type::now() - sent < std::chrono::milliseconds{1500});
  CHECK(result->status == 130);
  CHECK_THAT(result->err, Catch::Contains("interrupted"));
  // The children were stopped, not abandoned (their pids gone, none a
  // zombie).
  auto deadline = clock_type::now() + std::chrono::seconds{1};
  auto alive = [&] {
    for (pid_t pid : children)
      if (test::process_alive(pid))
        return true;
    return false;
  };
  while (alive() && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  CHECK_FALSE(alive());
  CHECK(test::child_processes().empty());
  return *result;
}

} // namespace

TEST_CASE("SIGINT stops sprintrt loss mid-batch: exit 130, no output files") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 8, dim);
  // 8 segments of 1 s on two children: 4 s uninterrupted.
  std::vector<float> lp(6 * 8 * dim, std::log(1.0f / dim));
  size_t lp_shape[] = {6, 8, dim};
  REQUIRE_FALSE(cli::write_npy<float>(dir.path() + "/lp.npy", lp_shape, lp));
  std::vector<int32_t> lengths(8, 6);
  size_t len_shape[] = {8};
  REQUIRE_FALSE(cli::write_npy<int32_t>(dir.path() + "/len.npy", len_shape, lengths));
  auto cli = test::start_cli(
      dir.path(),
      {"loss", "--config", write_options(dir, 1000), "--log-posteriors", dir.path() + "/lp.npy",
       "--seq-lengths", dir.path() + "/len.npy", "--tags", write_tags(dir, segments), "--loss-out",
       dir.path() + "/loss.npy", "--error-signal-out", dir.path() + "/es.npy"});
  REQUIRE(cli.pid > 0);
  auto children = wait_for_children(cli, 2, std::chrono::milliseconds{500});
  interrupt(cli, children);
  CHECK_FALSE(fs::exists(dir.path() + "/loss.npy"));
  CHECK_FALSE(fs::exists(dir.path() + "/es.npy"));
}

TEST_CASE("SIGINT stops sprintrt automata: exit 130, no output files") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 8, dim);
  auto out = dir.path() + "/fsa";
  auto cli = test::start_cli(dir.path(), {"automata", "--config", write_options(dir, 1000),
                                          "--tags", write_tags(dir, segments), "--out-dir", out});
  REQUIRE(cli.pid > 0);
  auto children = wait_for_children(cli, 2, std::chrono::milliseconds{500});
  interrupt(cli, children);
  CHECK(fs::is_empty(out));
}

TEST_CASE("SIGINT stops sprintrt demo: exit 130, no report") {
  test::temp_dir dir;
  auto report = dir.path() + "/report";
  // Minutes of training uninterrupted.
  auto cli =
      test::start_cli(dir.path(), {"demo", "--epochs", "1000", "--workers", "2", "--sprint-sim",
                                   SPRINTRT_SPRINT_SIM_PATH, "--report", report});
  REQUIRE(cli.pid > 0);
  auto children = wait_for_children(cli, 2, std::chrono::milliseconds{700});
  auto result = interrupt(cli, children);
  CHECK_THAT(result.out, Catch::StartsWith("sprintrt demo: CTC training"));
  CHECK(fs::is_empty(report));
}
