// `sprintrt record`: a recording wrapper used as sprintExecPath is
// transparent (doctor and a pool work through it, with the same results and
// the child's own exit status), and what it records decodes with
// pickle-dump.

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"
#include "tools/sprintrt/npy_file.hpp"

using namespace sprintrt;
namespace fs = std::filesystem;

namespace {

constexpr size_t dim = 5;

/// Writes the wrapper script the README shows: record into `capture`.
std::string write_wrapper(const test::temp_dir& dir, const std::string& capture) {
  auto path = dir.path() + "/recording-sprint.sh";
  std::ofstream{path} << "#!/bin/sh\nexec " << SPRINTRT_CLI_PATH << " record --dir " << capture
                      << " -- " << SPRINTRT_SPRINT_SIM_PATH << " \"$@\"\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

std::string write_options(const test::temp_dir& dir, const std::string& exec,
                          const std::string& extra = "", int instances = 1) {
  nlohmann::json opts{{"sprintExecPath", exec},
                      {"sprintConfigStr", "--*.corpus=" + test::corpus_path(dir) + extra},
                      {"numInstances", instances},
                      {"initTimeout", 5},
                      {"exitGrace", 2}};
  auto path =
      dir.path() + "/options-" + std::to_string(std::hash<std::string>{}(exec + extra)) + ".json";
  std::ofstream{path} << opts.dump();
  return path;
}

/// Decodes a recording into one JSON value per message.
std::vector<nlohmann::json> dump(const test::temp_dir& dir, const std::string& file) {
  auto r = test::run_cli(dir.path(), "pickle-dump --summary " + file);
  INFO(file << "\n" << r.err);
  REQUIRE(r.status == 0);
  std::vector<nlohmann::json> messages;
  std::istringstream lines{r.out};
  for (std::string line; std::getline(lines, line);)
    messages.push_back(nlohmann::json::parse(line));
  return messages;
}

/// The first item of a message tuple (its command or status).
std::string head(const nlohmann::json& message) {
  return message["tuple"][0]["str"].get<std::string>();
}

} // namespace

TEST_CASE("doctor through sprintrt record works and its traffic decodes with pickle-dump") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 1, dim);
  auto capture = dir.path() + "/capture";
  auto opts = write_options(dir, write_wrapper(dir, capture));
  auto r = test::run_cli(dir.path(), "doctor --json --config " + opts + " --segment " +
                                         segments[0].name + " --frames 8 --dim 5");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["child_name"] == "sprint-sim");
  CHECK(summary["exit_code"] == 0);
  // The recordings are named by the pid the parent started (the real child).
  auto base = capture + "/" + std::to_string(summary["pid"].get<int>());
  auto requests = dump(dir, base + ".p2c");
  auto replies = dump(dir, base + ".c2p");
  REQUIRE(requests.size() == 3);
  CHECK(head(requests[0]) == "init");
  CHECK(head(requests[1]) == "get_loss_and_error_signal");
  CHECK(requests[1]["tuple"][1]["str"] == segments[0].name);
  CHECK(requests[1]["tuple"][3]["ndarray_summary"]["shape"] == nlohmann::json::parse("[8, 5]"));
  CHECK(head(requests[2]) == "exit");
  REQUIRE(replies.size() == 2);
  CHECK(head(replies[0]) == "ok");
  CHECK(head(replies[1]) == "ok");
  CHECK(test::child_processes().empty());
}

TEST_CASE("a pool computes through sprintrt record exactly as without it") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 4, dim);
  auto tags = dir.path() + "/tags.txt";
  {
    std::ofstream out{tags};
    for (const auto& s : segments)
      out << s.name << "\n";
  }
  std::vector<float> lp(7 * 4 * dim);
  for (size_t i = 0; i < lp.size(); ++i)
    lp[i] = -1.0f - static_cast<float>(i % 5) * 0.3f;
  size_t lp_shape[] = {7, 4, dim};
  REQUIRE_FALSE(cli::write_npy<float>(dir.path() + "/lp.npy", lp_shape, lp));
  std::vector<int32_t> lengths{7, 5, 6, 7};
  size_t len_shape[] = {4};
  REQUIRE_FALSE(cli::write_npy<int32_t>(dir.path() + "/len.npy", len_shape, lengths));
  auto loss = [&](const std::string& opts, const std::string& name) {
    auto r = test::run_cli(dir.path(), "loss --config " + opts + " --log-posteriors " + dir.path() +
                                           "/lp.npy --seq-lengths " + dir.path() +
                                           "/len.npy --tags " + tags + " --loss-out " + dir.path() +
                                           "/" + name + "-loss.npy --error-signal-out " +
                                           dir.path() + "/" + name + "-es.npy");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    auto es = cli::read_npy_exact<float>(dir.path() + "/" + name + "-es.npy");
    REQUIRE(es);
    return es->values;
  };
  auto capture = dir.path() + "/capture";
  auto direct = loss(write_options(dir, SPRINTRT_SPRINT_SIM_PATH, "", 2), "direct");
  auto recorded = loss(write_options(dir, write_wrapper(dir, capture), "", 2), "recorded");
  CHECK(recorded == direct);
  // Two children, each with both directions; every request answered.
  size_t files = 0, loss_requests = 0, replies = 0;
  for (const auto& entry : fs::directory_iterator{capture}) {
    ++files;
    auto messages = dump(dir, entry.path().string());
    if (entry.path().extension() == ".p2c") {
      for (const auto& m : messages)
        loss_requests += head(m) == "get_loss_and_error_signal";
    } else {
      replies += messages.size();
    }
  }
  CHECK(files == 4);
  CHECK(loss_requests == 4);
  CHECK(replies == 4 + 2); // the losses and two init replies
  CHECK(test::child_processes().empty());
}

TEST_CASE("sprintrt record keeps the child's exit status and says what is wrong") {
  test::temp_dir dir;
  test::write_corpus(dir, 1, dim);
  auto capture = dir.path() + "/capture";
  auto dying =
      test::run_cli(dir.path(), "doctor --config " + write_options(dir, write_wrapper(dir, capture),
                                                                   " --*.fault=exit-at-start"));
  CHECK(dying.status == 1);
  CHECK_THAT(dying.out, Catch::Contains("the child exited with status 2"));
  auto bare = test::run_cli(dir.path(), "record --dir " + capture + " -- /bin/true");
  CHECK(bare.status == 1);
  CHECK_THAT(bare.err, Catch::Contains("no --*.pymod-config=c2p_fd:C,p2c_fd:P argument"));
}
