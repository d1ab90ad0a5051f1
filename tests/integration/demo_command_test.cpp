// `sprintrt demo`, the main job on a fresh machine: it must train through the
// sequence-training scheduler (the loss falls, every loss from the workers),
// reproducibly whatever the workers are, and write its report.

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

/// A small, fast training run: three epochs over 128 utterances.
const std::string small_run =
    "demo --json --epochs 3 --segments 128 --heldout 32 --seed 7 --forward-delay 48 ";

nlohmann::json run_json(const std::string& dir, const std::string& args) {
  auto r = test::run_cli(dir, args);
  INFO(args << "\n" << r.out << r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in{path};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace

TEST_CASE("the demo trains the same with child processes and in-process workers") {
  test::temp_dir dir;
  auto children =
      run_json(dir.path(), small_run + "--workers 1 --sprint-sim " + SPRINTRT_SPRINT_SIM_PATH);
  auto in_process = run_json(dir.path(), small_run + "--workers 2 --in-process");
  const auto& a = children["epochs"];
  const auto& b = in_process["epochs"];
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("epoch " << i + 1);
    // Bit-identical: nothing in the trainer depends on timing or workers.
    CHECK(a[i]["loss_per_frame"].get<double>() == b[i]["loss_per_frame"].get<double>());
    CHECK(a[i]["label_error_rate"].get<double>() == b[i]["label_error_rate"].get<double>());
    CHECK(a[i]["sequences_computed"] == 128);
    CHECK(b[i]["sequences_computed"] == 128);
    CHECK(a[i]["skipped_sequences"] == 0);
    for (const char* key : {"seqs_per_second", "trainer_wait_fraction", "worker_utilization"})
      CHECK(a[i][key].get<double>() > 0);
  }
  CHECK(a.back()["loss_per_frame"].get<double>() < a.front()["loss_per_frame"].get<double>());
  CHECK(children["forward_delay"] == 48);
  CHECK(test::child_processes().empty());
}

TEST_CASE("the demo writes its report: JSON and two SVG figures") {
  test::temp_dir dir;
  auto report_dir = std::filesystem::path{dir.path()} / "report";
  auto printed = run_json(dir.path(), "demo --json --epochs 2 --segments 48 --heldout 16 "
                                      "--in-process --report " +
                                          report_dir.string());
  auto written = nlohmann::json::parse(read_file(report_dir / "report.json"));
  CHECK(written == printed);
  CHECK(written["epochs"].size() == 2);
  for (const char* name : {"learning_curves.svg", "timeline.svg"}) {
    INFO(name);
    auto svg = read_file(report_dir / name);
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK_THAT(svg, Catch::EndsWith("</svg>\n"));
  }
  // The timeline shows the trainer's and both workers' lanes.
  auto timeline = read_file(report_dir / "timeline.svg");
  CHECK_THAT(timeline, Catch::Contains(">trainer<") && Catch::Contains(">worker 1<"));
}

TEST_CASE("the demo finds sprint-sim next to itself in the build tree") {
  test::temp_dir dir;
  auto r = test::run_cli(dir.path(), "demo --epochs 1 --segments 8 --heldout 4");
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("epoch  1: loss/frame"));
  CHECK(test::child_processes().empty());
}

TEST_CASE("the demo's --require-improvement fails a run that did not improve") {
  test::temp_dir dir;
  // One epoch cannot be better than itself.
  auto r = test::run_cli(dir.path(), "demo --epochs 1 --segments 8 --heldout 4 --in-process "
                                     "--require-improvement");
  INFO(r.out << r.err);
  CHECK(r.status == 3);
  CHECK_THAT(r.err, Catch::Contains("not both below"));
}

TEST_CASE("the demo refuses a forward delay that cannot admit a batch") {
  test::temp_dir dir;
  auto r = test::run_cli(
      dir.path(), "demo --epochs 1 --segments 8 --batch-size 4 --forward-delay 4 --in-process");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("--forward-delay must exceed --batch-size"));
}

TEST_CASE("the demo checks that it can write its report before training") {
  test::temp_dir dir;
  std::ofstream{dir.path() + "/plain"} << "x";
  auto r = test::run_cli(dir.path(), "demo --epochs 1 --segments 8 --heldout 4 --in-process "
                                     "--report " +
                                         dir.path() + "/plain/report");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot create directory '" + dir.path() + "/plain/report'"));
  CHECK_THAT(r.out, !Catch::Contains("epoch"));
}

TEST_CASE("the demo fine-tunes with a sequence-discriminative criterion after its CTC epochs") {
  test::temp_dir dir;
  const std::string run = "demo --json --epochs 4 --ctc-epochs 2 --segments 64 --heldout 16 "
                          "--seed 7 --forward-delay 48 ";
  auto ctc = run_json(dir.path(), run + "--in-process");
  for (const std::string criterion : {"mmi", "bmmi", "smbr"})
    for (const std::string denominator : {"confusable", "label-lm"}) {
      INFO(criterion << " over " << denominator);
      const auto args = "--criterion " + criterion + " --denominator " + denominator;
      auto children = run_json(dir.path(), run + args + " --workers 1 --sprint-sim " +
                                               SPRINTRT_SPRINT_SIM_PATH);
      auto in_process = run_json(dir.path(), run + args + " --workers 2 --in-process");
      CHECK(children["criterion"] == criterion);
      CHECK(children["denominator"] == denominator);
      CHECK(children["ctc_epochs"] == 2);
      const auto& epochs = children["epochs"];
      REQUIRE(epochs.size() == 4);
      for (size_t i = 0; i < epochs.size(); ++i) {
        INFO("epoch " << i + 1);
        CHECK(epochs[i]["criterion"] == (i < 2 ? "ctc" : criterion));
        CHECK(epochs[i]["sequences_computed"] == 64);
        CHECK(epochs[i]["skipped_sequences"] == 0);
        // Children and in-process workers agree bit for bit; the CTC epochs
        // are those of a CTC-only run.
        CHECK(epochs[i]["loss_per_frame"].get<double>() ==
              in_process["epochs"][i]["loss_per_frame"].get<double>());
        if (i < 2)
          CHECK(epochs[i]["loss_per_frame"].get<double>() ==
                ctc["epochs"][i]["loss_per_frame"].get<double>());
      }
      // MMI's loss is never negative, sMBR's is minus the expected frame
      // accuracy (per frame, in [-1, 0]).
      const double last = epochs[3]["loss_per_frame"].get<double>();
      if (criterion == "mmi")
        CHECK(last >= 0);
      if (criterion == "smbr") {
        CHECK(last <= 0);
        CHECK(last >= -1);
      }
    }
  CHECK(test::child_processes().empty());
}

TEST_CASE("the demo refuses more CTC epochs than epochs") {
  test::temp_dir dir;
  auto r = test::run_cli(dir.path(), "demo --epochs 2 --ctc-epochs 3 --criterion mmi --in-process");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("--ctc-epochs (3) exceeds --epochs (2)"));
}
