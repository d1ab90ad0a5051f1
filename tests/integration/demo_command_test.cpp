// `sprintrt demo`, the main job on a fresh machine: it must train, i.e. the
// loss and the label error rate must fall, with every loss from the workers.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

TEST_CASE("the demo trains: loss and label error rate fall") {
  test::temp_dir dir;
  auto r = test::run_cli(dir.path(), std::string{"demo --json --epochs 6 --segments 64 "} +
                                         "--sprint-sim " + SPRINTRT_SPRINT_SIM_PATH);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto report = nlohmann::json::parse(r.out);
  const auto& epochs = report["epochs"];
  REQUIRE(epochs.size() == 6);
  double first = epochs.front()["loss_per_frame"];
  double last = epochs.back()["loss_per_frame"];
  CHECK(last < 0.5 * first);
  CHECK(epochs.back()["label_error_rate"].get<double>() <
        epochs.front()["label_error_rate"].get<double>());
  CHECK(report["segments_computed"] == 6 * 64);
  CHECK(report["restarts"] == 0);
  CHECK(test::child_processes().empty());
}

TEST_CASE("the demo finds sprint-sim next to itself in the build tree") {
  test::temp_dir dir;
  auto r = test::run_cli(dir.path(), "demo --epochs 1 --segments 8");
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("epoch  1: loss per frame"));
}
