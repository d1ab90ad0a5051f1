// `sprintrt loss` and `sprintrt automata`: a round trip through .npy files,
// against the in-process criterion, and the errors a user gets for bad files.

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/npy_file.hpp"
#include "sim/corpus.hpp"
#include "sim/criterion.hpp"
#include "sim/ctc_topology.hpp"
#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

constexpr size_t dim = 5;

/// Writes the options file: sprint-sim on the test corpus, two workers.
std::string write_options(const test::temp_dir& dir) {
  nlohmann::json opts{{"sprintExecPath", SPRINTRT_SPRINT_SIM_PATH},
                      {"sprintConfigStr", "--*.corpus=" + test::corpus_path(dir)},
                      {"numInstances", 2}};
  auto path = dir.path() + "/options.json";
  std::ofstream{path} << opts.dump();
  return path;
}

std::string write_tags(const test::temp_dir& dir, const std::vector<std::string>& tags) {
  auto path = dir.path() + "/tags.txt";
  std::ofstream out{path};
  for (const auto& tag : tags)
    out << tag << "\n";
  return path;
}

} // namespace

TEST_CASE("sprintrt loss round-trips a batch through .npy files") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 3, dim);
  std::vector<int64_t> lengths{6, 9, 4};
  size_t frames = 9;
  // [T, B, D] with each segment's frames, padding zero.
  std::vector<float> lp(frames * 3 * dim, 0.0f);
  std::vector<std::vector<float>> per_segment;
  for (size_t b = 0; b < 3; ++b) {
    per_segment.push_back(test::random_log_posteriors(static_cast<size_t>(lengths[b]), dim, b));
    for (size_t t = 0; t < static_cast<size_t>(lengths[b]); ++t)
      for (size_t d = 0; d < dim; ++d)
        lp[(t * 3 + b) * dim + d] = per_segment[b][t * dim + d];
  }
  size_t lp_shape[] = {frames, 3, dim};
  REQUIRE_FALSE(runtime::write_npy<float>(dir.path() + "/lp.npy", lp_shape, lp));
  std::vector<int32_t> lengths32{6, 9, 4};
  size_t len_shape[] = {3};
  REQUIRE_FALSE(runtime::write_npy<int32_t>(dir.path() + "/len.npy", len_shape, lengths32));
  auto tags = write_tags(dir, {segments[0].name, segments[1].name, segments[2].name});
  auto r = test::run_cli(dir.path(), "loss --json --config " + write_options(dir) +
                                         " --log-posteriors " + dir.path() + "/lp.npy" +
                                         " --seq-lengths " + dir.path() + "/len.npy --tags " +
                                         tags + " --loss-out " + dir.path() + "/loss.npy" +
                                         " --error-signal-out " + dir.path() + "/es.npy");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["batch_size"] == 3);
  CHECK(summary["frames"] == 19);
  CHECK(summary["workers"].size() == 2);
  auto loss = runtime::read_npy_exact<float>(dir.path() + "/loss.npy");
  auto es = runtime::read_npy_exact<float>(dir.path() + "/es.npy");
  REQUIRE(loss);
  REQUIRE(es);
  CHECK(loss->shape == std::vector<size_t>{3});
  CHECK(es->shape == std::vector<size_t>{frames, 3, dim});
  for (size_t b = 0; b < 3; ++b) {
    auto expected =
        test::reference_loss(test::corpus_path(dir), segments[b].name, per_segment[b], dim);
    CHECK(loss->values[b] == static_cast<float>(expected.loss));
    CHECK(summary["segments"][b]["tag"] == segments[b].name);
    // A segment Sprint skipped (too few frames for its labels) prints as "inf".
    if (std::isinf(expected.loss))
      CHECK(summary["segments"][b]["loss"] == "inf");
    else
      CHECK(summary["segments"][b]["loss"].get<double>() == Approx(expected.loss));
    for (size_t t = 0; t < frames; ++t)
      for (size_t d = 0; d < dim; ++d)
        REQUIRE(es->values[(t * 3 + b) * dim + d] ==
                (t < static_cast<size_t>(lengths[b]) ? expected.error_signal[t * dim + d] : 0.0f));
  }
  CHECK(test::child_processes().empty());
}

TEST_CASE("sprintrt loss explains bad input files") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 2, dim);
  auto opts = write_options(dir);
  size_t lp_shape[] = {4, 2, dim};
  std::vector<double> lp64(4 * 2 * dim, -1.0);
  REQUIRE_FALSE(runtime::write_npy<double>(dir.path() + "/lp64.npy", lp_shape, lp64));
  std::vector<float> lp(4 * 2 * dim, std::log(0.2f));
  REQUIRE_FALSE(runtime::write_npy<float>(dir.path() + "/lp.npy", lp_shape, lp));
  size_t len_shape[] = {2};
  std::vector<int64_t> lengths{4, 5};
  REQUIRE_FALSE(runtime::write_npy<int64_t>(dir.path() + "/len.npy", len_shape, lengths));
  auto tags = write_tags(dir, {segments[0].name, segments[1].name});
  auto one_tag = dir.path() + "/one.txt";
  std::ofstream{one_tag} << segments[0].name << "\n";
  auto outputs =
      " --loss-out " + dir.path() + "/loss.npy --error-signal-out " + dir.path() + "/es.npy";
  auto run = [&](const std::string& lp_file, const std::string& tags_file) {
    return test::run_cli(dir.path(), "loss --config " + opts + " --log-posteriors " + lp_file +
                                         " --seq-lengths " + dir.path() + "/len.npy --tags " +
                                         tags_file + outputs);
  };
  auto wrong_dtype = run(dir.path() + "/lp64.npy", tags);
  CHECK(wrong_dtype.status == 1);
  CHECK_THAT(wrong_dtype.err, Catch::Contains("lp64.npy': has dtype float64, expected float32"));
  auto wrong_tags = run(dir.path() + "/lp.npy", one_tag);
  CHECK(wrong_tags.status == 1);
  CHECK_THAT(wrong_tags.err, Catch::Contains("has 1 tags, the batch has B = 2"));
  auto too_long = run(dir.path() + "/lp.npy", tags);
  CHECK(too_long.status == 1);
  CHECK_THAT(too_long.err, Catch::Contains("seq_length 5 is not in 1..4"));
}

TEST_CASE("sprintrt automata writes the merged automata as .npy files") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 3, dim);
  auto tags = write_tags(dir, {segments[2].name, segments[0].name});
  auto r = test::run_cli(dir.path(), "automata --config " + write_options(dir) + " --tags " + tags +
                                         " --out-dir " + dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto edges = runtime::read_npy_exact<uint32_t>(dir.path() + "/edges.npy");
  auto weights = runtime::read_npy_exact<float>(dir.path() + "/weights.npy");
  auto states = runtime::read_npy_exact<uint32_t>(dir.path() + "/start_end_states.npy");
  REQUIRE(edges);
  REQUIRE(weights);
  REQUIRE(states);
  auto corpus = sim::corpus::from_file(test::corpus_path(dir));
  REQUIRE(corpus);
  sim::criterion crit{std::move(*corpus), std::make_shared<sim::ctc_topology>(0)};
  auto first = crit.segment_fsa(segments[2].name);
  auto second = crit.segment_fsa(segments[0].name);
  REQUIRE(first);
  REQUIRE(second);
  size_t e = first->num_edges() + second->num_edges();
  CHECK(edges->shape == std::vector<size_t>{4, e});
  CHECK(weights->shape == std::vector<size_t>{e});
  CHECK(states->shape == std::vector<size_t>{2, 2});
  uint32_t n0 = first->num_states();
  CHECK(states->values == std::vector<uint32_t>{0, n0, n0 - 1, n0 + second->num_states() - 1});
  // The second segment's first edge: shifted states, its own emission, seq index 1.
  size_t column = first->num_edges();
  CHECK(edges->values[column] == second->sources()[0] + n0);
  CHECK(edges->values[e + column] == second->targets()[0] + n0);
  CHECK(edges->values[2 * e + column] == second->emissions()[0]);
  CHECK(edges->values[3 * e + column] == 1);
  CHECK(test::child_processes().empty());
}
