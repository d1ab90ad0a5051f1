// `sprintrt loss` and `sprintrt automata`: a round trip through .npy files,
// against the in-process criterion, and the errors a user gets for bad files.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "sim/corpus_criterion.hpp"
#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"
#include "tools/sprintrt/npy_file.hpp"

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
  REQUIRE_FALSE(cli::write_npy<float>(dir.path() + "/lp.npy", lp_shape, lp));
  std::vector<int32_t> lengths32{6, 9, 4};
  size_t len_shape[] = {3};
  REQUIRE_FALSE(cli::write_npy<int32_t>(dir.path() + "/len.npy", len_shape, lengths32));
  auto tags = write_tags(dir, {segments[0].name, segments[1].name, segments[2].name});
  auto r = test::run_cli(dir.path(), "loss --json --config " + write_options(dir) +
                                         " --log-posteriors " + dir.path() + "/lp.npy" +
                                         " --seq-lengths " + dir.path() + "/len.npy --tags " +
                                         tags + " --loss-out " + dir.path() + "/loss.npy" +
                                         " --error-signal-out " + dir.path() + "/es.npy");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["ok"] == true);
  CHECK(summary["batch_size"] == 3);
  CHECK(summary["frames"] == 19);
  CHECK(summary["workers"].size() == 2);
  auto loss = cli::read_npy_exact<float>(dir.path() + "/loss.npy");
  auto es = cli::read_npy_exact<float>(dir.path() + "/es.npy");
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
  REQUIRE_FALSE(cli::write_npy<double>(dir.path() + "/lp64.npy", lp_shape, lp64));
  std::vector<float> lp(4 * 2 * dim, std::log(0.2f));
  REQUIRE_FALSE(cli::write_npy<float>(dir.path() + "/lp.npy", lp_shape, lp));
  size_t len_shape[] = {2};
  std::vector<int64_t> lengths{4, 5};
  REQUIRE_FALSE(cli::write_npy<int64_t>(dir.path() + "/len.npy", len_shape, lengths));
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
  std::vector<int32_t> lp32(4 * 2 * dim, -1);
  REQUIRE_FALSE(cli::write_npy<int32_t>(dir.path() + "/lpint.npy", lp_shape, lp32));
  auto wrong_dtype = run(dir.path() + "/lpint.npy", tags);
  CHECK(wrong_dtype.status == 1);
  CHECK_THAT(wrong_dtype.err, Catch::Contains("lpint.npy': has dtype int32, expected float32"));
  auto no_tags = run(dir.path() + "/lp.npy", dir.path() + "/missing/tags.txt");
  CHECK(no_tags.status == 1);
  CHECK_THAT(no_tags.err, Catch::Contains("tags file '" + dir.path() +
                                          "/missing/tags.txt' cannot be opened: No such file or "
                                          "directory"));
  auto wrong_tags = run(dir.path() + "/lp.npy", one_tag);
  CHECK(wrong_tags.status == 1);
  CHECK_THAT(wrong_tags.err, Catch::Contains("has 1 tags, the batch has B = 2"));
  auto too_long = run(dir.path() + "/lp.npy", tags);
  CHECK(too_long.status == 1);
  CHECK_THAT(too_long.err, Catch::Contains("seq_length 5 is not in 1..4"));
  // The two sequences as [B, T, D] = [2, 4, D]: the two lengths match its
  // first axis, and the error says so.
  size_t batch_major_shape[] = {2, 4, dim};
  REQUIRE_FALSE(cli::write_npy<float>(dir.path() + "/batch_major.npy", batch_major_shape, lp));
  auto batch_major = run(dir.path() + "/batch_major.npy", tags);
  CHECK(batch_major.status == 1);
  CHECK_THAT(
      batch_major.err,
      Catch::Contains("len.npy': sequence lengths must be [B] = [4], got (2,); "
                      "the first axis of log_posteriors, T = 2, matches instead: did you pass a "
                      "batch-major (B, T, D) array? [T, B, D] (time-major) is due"));
}

TEST_CASE("sprintrt loss --json prints a JSON error object on failure") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 2, dim);
  size_t lp_shape[] = {4, 2, dim};
  std::vector<float> lp(4 * 2 * dim, std::log(0.2f));
  REQUIRE_FALSE(cli::write_npy<float>(dir.path() + "/lp.npy", lp_shape, lp));
  size_t len_shape[] = {2};
  std::vector<int64_t> lengths{4, 4};
  REQUIRE_FALSE(cli::write_npy<int64_t>(dir.path() + "/len.npy", len_shape, lengths));
  auto one_tag = write_tags(dir, {segments[0].name});
  auto run = [&](const std::string& config) {
    return test::run_cli(dir.path(), "loss --json --config " + config + " --log-posteriors " +
                                         dir.path() + "/lp.npy --seq-lengths " + dir.path() +
                                         "/len.npy --tags " + one_tag + " --loss-out " +
                                         dir.path() + "/loss.npy --error-signal-out " + dir.path() +
                                         "/es.npy");
  };
  // Each failure: exit 1, the message on stderr, and on stdout only the
  // object, whose "error" is that message, beginning with its code.
  auto check_failure = [](const test::command_result& r, const std::string& step,
                          const std::string& says) {
    INFO(r.out << r.err);
    CHECK(r.status == 1);
    auto object = nlohmann::json::parse(r.out);
    CHECK(object["ok"] == false);
    CHECK(object["failed_step"] == step);
    auto error = object["error"].get<std::string>();
    CHECK_THAT(error, Catch::Contains(says));
    CHECK(error.rfind(object["error_code"].get<std::string>() + ": ", 0) == 0);
    CHECK_THAT(r.err, Catch::Contains(error));
  };
  check_failure(run(dir.path() + "/missing.json"), "options", "missing.json");
  check_failure(run(write_options(dir)), "input", "has 1 tags, the batch has B = 2");
  CHECK_FALSE(std::ifstream{dir.path() + "/loss.npy"}.good());
}

TEST_CASE("sprintrt automata writes the merged automata as .npy files") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 3, dim);
  auto tags = write_tags(dir, {segments[2].name, segments[0].name});
  auto r = test::run_cli(dir.path(), "automata --config " + write_options(dir) + " --tags " + tags +
                                         " --out-dir " + dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto edges = cli::read_npy_exact<uint32_t>(dir.path() + "/edges.npy");
  auto weights = cli::read_npy_exact<float>(dir.path() + "/weights.npy");
  auto states = cli::read_npy_exact<uint32_t>(dir.path() + "/start_end_states.npy");
  REQUIRE(edges);
  REQUIRE(weights);
  REQUIRE(states);
  auto corpus = criterion::corpus::from_file(test::corpus_path(dir));
  REQUIRE(corpus);
  sim::corpus_criterion crit{std::move(*corpus), std::make_shared<criterion::ctc_topology>(0)};
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

namespace {

/// Writes a [T, B, D] batch of random log-posteriors for `lengths` as .npy
/// files lp.npy (float32, or float64 with `wide`) and len.npy into `dir`.
std::vector<float> write_batch(const test::temp_dir& dir, const std::vector<int32_t>& lengths,
                               size_t frames, bool wide = false) {
  size_t batch = lengths.size();
  std::vector<float> lp(frames * batch * dim, 0.0f);
  for (size_t b = 0; b < batch; ++b) {
    auto rows = test::random_log_posteriors(static_cast<size_t>(lengths[b]), dim, b + 3);
    for (size_t t = 0; t < static_cast<size_t>(lengths[b]); ++t)
      for (size_t d = 0; d < dim; ++d)
        lp[(t * batch + b) * dim + d] = rows[t * dim + d];
  }
  size_t lp_shape[] = {frames, batch, dim};
  if (wide) {
    std::vector<double> lp64(lp.begin(), lp.end());
    REQUIRE_FALSE(cli::write_npy<double>(dir.path() + "/lp.npy", lp_shape, lp64));
  } else {
    REQUIRE_FALSE(cli::write_npy<float>(dir.path() + "/lp.npy", lp_shape, lp));
  }
  size_t len_shape[] = {batch};
  REQUIRE_FALSE(cli::write_npy<int32_t>(dir.path() + "/len.npy", len_shape, lengths));
  return lp;
}

std::string loss_args(const test::temp_dir& dir, const std::string& opts, const std::string& tags) {
  return "loss --config " + opts + " --log-posteriors " + dir.path() + "/lp.npy --seq-lengths " +
         dir.path() + "/len.npy --tags " + tags + " --loss-out " + dir.path() +
         "/loss.npy --error-signal-out " + dir.path() + "/es.npy";
}

} // namespace

TEST_CASE("sprintrt loss names and counts the segments without a path") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 2, dim);
  // Eight labels cannot be aligned to three frames: Sprint skips it.
  std::ofstream{test::corpus_path(dir), std::ios::app} << "too_long\t1 2 3 4 1 2 3 4\n";
  write_batch(dir, {3, 3, 3}, 3);
  auto tags = write_tags(dir, {segments[0].name, "too_long", segments[1].name});
  auto args = loss_args(dir, write_options(dir), tags);
  auto text = test::run_cli(dir.path(), args);
  INFO(text.out << text.err);
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains(" over 2; 1 without a path (loss inf, error signal zero): "
                                       "too_long; wrote "));
  // The pool's warning names it once, with the batch's count.
  CHECK_THAT(text.err, Catch::Contains("pool 0: batch: 1 of 3 segments without a path (loss inf, "
                                       "error signal zero): segment 1 ('too_long')"));
  auto json = test::run_cli(dir.path(), args + " --json");
  REQUIRE(json.status == 0);
  auto summary = nlohmann::json::parse(json.out);
  CHECK(summary["skipped"] == nlohmann::json::parse(R"([{"index": 1, "tag": "too_long"}])"));
  CHECK(summary["skipped_segments"] == 1);
  auto loss = cli::read_npy_exact<float>(dir.path() + "/loss.npy");
  REQUIRE(loss);
  CHECK(std::isinf(loss->values[1]));
  CHECK(summary["loss_sum"].get<double>() ==
        Approx(static_cast<double>(loss->values[0]) + loss->values[2]));
  CHECK(test::child_processes().empty());
}

TEST_CASE("sprintrt loss converts float64 log-posteriors to float32, as the Python module does") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 2, dim);
  auto opts = write_options(dir);
  auto tags = write_tags(dir, {segments[0].name, segments[1].name});
  write_batch(dir, {5, 4}, 5);
  auto narrow = test::run_cli(dir.path(), loss_args(dir, opts, tags));
  REQUIRE(narrow.status == 0);
  auto want = cli::read_npy_exact<float>(dir.path() + "/es.npy");
  REQUIRE(want);
  write_batch(dir, {5, 4}, 5, /*wide*/ true);
  auto wide = test::run_cli(dir.path(), "--log-level info " + loss_args(dir, opts, tags));
  INFO(wide.out << wide.err);
  REQUIRE(wide.status == 0);
  CHECK_THAT(wide.err, Catch::Contains("lp.npy': float64 log-posteriors converted to float32"));
  auto got = cli::read_npy_exact<float>(dir.path() + "/es.npy");
  REQUIRE(got);
  CHECK(got->values == want->values);
}

TEST_CASE("sprintrt loss names an unset variable of sprintConfigStr and its argument") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 1, dim);
  ::unsetenv("SPRINTRT_TEST_UNSET_CORPUS");
  nlohmann::json opts{{"sprintExecPath", SPRINTRT_SPRINT_SIM_PATH},
                      {"sprintConfigStr", "--*.corpus=$SPRINTRT_TEST_UNSET_CORPUS"}};
  auto path = dir.path() + "/unset.json";
  std::ofstream{path} << opts.dump();
  write_batch(dir, {4}, 4);
  auto r = test::run_cli(dir.path(), loss_args(dir, path, write_tags(dir, {segments[0].name})));
  INFO(r.out << r.err);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("environment variable SPRINTRT_TEST_UNSET_CORPUS is not set "
                                    "(in '--*.corpus=$SPRINTRT_TEST_UNSET_CORPUS')"));
  CHECK(test::child_processes().empty());
}

TEST_CASE("sprintrt automata makes its output directory, parents too") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 2, dim);
  auto tags = write_tags(dir, {segments[0].name});
  auto out = dir.path() + "/new/deeper";
  auto r = test::run_cli(dir.path(), "automata --config " + write_options(dir) + " --tags " + tags +
                                         " --out-dir " + out);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(cli::read_npy_exact<uint32_t>(out + "/edges.npy"));
  // A directory that cannot be made fails before any child starts.
  std::ofstream{dir.path() + "/plain"} << "x";
  auto bad = test::run_cli(dir.path(), "automata --config " + write_options(dir) + " --tags " +
                                           tags + " --out-dir " + dir.path() + "/plain/sub");
  CHECK(bad.status == 1);
  CHECK_THAT(bad.err, Catch::Contains("cannot create directory '" + dir.path() + "/plain/sub': ") &&
                          Catch::Contains("Not a directory"));
}

TEST_CASE("sprintrt loss ends its progress bar's line before the summary on a terminal") {
  test::temp_dir dir;
  // Eight segments: the bar draws from eight on, and only on a terminal,
  // which util-linux's `script` gives the tool (stdout and stderr alike).
  auto segments = test::write_corpus(dir, 8, dim);
  write_batch(dir, std::vector<int32_t>(8, 6), 6);
  std::vector<std::string> names;
  for (const auto& segment : segments)
    names.push_back(segment.name);
  auto command = std::string{SPRINTRT_CLI_PATH} + " " +
                 loss_args(dir, write_options(dir), write_tags(dir, names));
  auto r = test::run_program(dir.path(), "script", "-qec '" + command + "' /dev/null");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto bar = r.out.find("8/8 segments");
  auto summary = r.out.find("computed 8 segments");
  REQUIRE(bar != std::string::npos);
  REQUIRE(summary != std::string::npos);
  CHECK(bar < summary);
  CHECK(r.out[summary - 1] == '\n');
}
