#include "criterion/full_sum.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "criterion/hmm_topology.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

// Runs the full-sum for occupancies and compares with path enumeration.
void check_against_enumeration(full_sum_engine& engine, const fsa& automaton,
                               const row_matrix_f& log_posteriors) {
  INFO(to_string(automaton));
  INFO("log_posteriors:\n" << log_posteriors);
  const auto expected = test::enumerate_paths(automaton, log_posteriors);
  row_matrix_d gamma(log_posteriors.rows(), log_posteriors.cols());
  test::log_capture quiet;
  const auto result = unwrap(engine.loss_and_occupancy("seg", automaton, log_posteriors, gamma));
  const bool no_path = expected.log_total == -std::numeric_limits<double>::infinity();
  REQUIRE(result.skipped == no_path);
  if (no_path) {
    CHECK(result.loss == std::numeric_limits<double>::infinity());
    CHECK(gamma.isZero(0.0));
    return;
  }
  CHECK(result.loss == Approx(-expected.log_total).epsilon(1e-5).margin(1e-5));
  CHECK((gamma - expected.gamma).cwiseAbs().maxCoeff() <= 1e-5);
  CHECK((gamma.rowwise().sum().array() - 1.0).abs().maxCoeff() <= 1e-9);
}

hmm_topology make_hmm(bool silence) {
  hmm_options options;
  options.loop_cost = 0.3f;
  options.forward_cost = 1.1f;
  if (silence) {
    options.silence_index = 0;
    options.silence_loop_cost = 0.2f;
    options.silence_entry_cost = 0.9f;
    options.silence_exit_cost = 0.4f;
  }
  return unwrap(hmm_topology::make(options));
}

// The loss as a function of pre-softmax activations.
double loss_of_logits(full_sum_engine& engine, const fsa& automaton, const row_matrix_d& logits) {
  const auto log_posteriors = test::log_softmax(logits);
  row_matrix_f error_signal(logits.rows(), logits.cols());
  return unwrap(engine.loss_and_error_signal("seg", automaton, log_posteriors, error_signal)).loss;
}

// Compares the error signal with a 5-point central difference of the loss with
// respect to each logit.
void check_against_finite_differences(const fsa& automaton, Eigen::Index frames,
                                      Eigen::Index classes, std::mt19937& rng) {
  INFO(to_string(automaton));
  full_sum_engine engine;
  const auto logits = test::random_logits(frames, classes, rng);
  const auto log_posteriors = test::log_softmax(logits);
  row_matrix_f error_signal(frames, classes);
  REQUIRE(!unwrap(engine.loss_and_error_signal("seg", automaton, log_posteriors, error_signal))
               .skipped);
  const double h = 0.05;
  for (Eigen::Index t = 0; t < frames; ++t)
    for (Eigen::Index k = 0; k < classes; ++k) {
      const auto at = [&](double offset) {
        auto shifted = logits;
        shifted(t, k) += offset;
        return loss_of_logits(engine, automaton, shifted);
      };
      const double derivative = (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h);
      const double relative = std::abs(derivative - error_signal(t, k)) /
                              std::max(std::abs(derivative), std::abs(double{error_signal(t, k)}));
      INFO("frame " << t << ", class " << k << ": finite difference " << derivative
                    << ", error signal " << error_signal(t, k));
      CHECK(relative <= 1e-3);
    }
}

} // namespace

TEST_CASE("full-sum matches path enumeration on CTC FSAs") {
  std::mt19937 rng{1};
  full_sum_engine engine;
  const std::vector<std::vector<uint32_t>> label_sets = {{}, {1}, {1, 1}, {1, 2}, {2, 1, 2}};
  for (const uint32_t blank : {0u, 3u}) {
    for (auto labels : label_sets) {
      for (auto& label : labels)
        label = blank == 0 ? label : label - 1;
      const auto automaton = unwrap(ctc_topology{blank}.build("seg", labels));
      for (Eigen::Index frames = 1; frames <= 6; ++frames)
        check_against_enumeration(engine, automaton, test::random_log_posteriors(frames, 4, rng));
    }
  }
}

TEST_CASE("full-sum matches path enumeration on HMM FSAs") {
  std::mt19937 rng{2};
  full_sum_engine engine;
  for (const bool silence : {false, true}) {
    const auto hmm = make_hmm(silence);
    for (const auto& labels : std::vector<std::vector<uint32_t>>{{1}, {1, 2}, {2, 2}, {1, 2, 1}}) {
      const auto automaton = unwrap(hmm.build("seg", labels));
      for (Eigen::Index frames = 1; frames <= 6; ++frames)
        check_against_enumeration(engine, automaton, test::random_log_posteriors(frames, 3, rng));
    }
  }
}

TEST_CASE("full-sum matches path enumeration on random FSAs") {
  // Parallel edges, negative and infinite costs, unreachable states, no paths.
  std::mt19937 rng{3};
  full_sum_engine engine;
  for (int round = 0; round < 60; ++round) {
    const auto automaton = test::random_fsa(2 + round % 4, 4 + round % 7, 3, rng);
    check_against_enumeration(engine, automaton,
                              test::random_log_posteriors(1 + round % 5, 3, rng));
  }
}

TEST_CASE("the error signal matches finite differences of the loss in the logits") {
  std::mt19937 rng{4};
  const std::vector<uint32_t> labels = {1, 2, 2};
  check_against_finite_differences(unwrap(ctc_topology{0}.build("seg", labels)), 6, 4, rng);
  check_against_finite_differences(unwrap(ctc_topology{3}.build("seg", {})), 3, 4, rng);
  check_against_finite_differences(unwrap(make_hmm(true).build("seg", labels)), 6, 4, rng);
  check_against_finite_differences(unwrap(make_hmm(false).build("seg", labels)), 5, 3, rng);
}

TEST_CASE("the error signal is exp(log_posteriors) minus the occupancy") {
  std::mt19937 rng{5};
  full_sum_engine engine;
  const auto automaton = unwrap(make_hmm(true).build("seg", std::vector<uint32_t>{1, 2, 1}));
  const auto log_posteriors = test::random_log_posteriors(20, 3, rng);
  row_matrix_f error_signal(20, 3);
  row_matrix_d gamma(20, 3);
  const auto first =
      unwrap(engine.loss_and_error_signal("seg", automaton, log_posteriors, error_signal));
  const auto second = unwrap(engine.loss_and_occupancy("seg", automaton, log_posteriors, gamma));
  CHECK(first.loss == second.loss);
  const row_matrix_d expected = log_posteriors.cast<double>().array().exp().matrix() - gamma;
  CHECK((error_signal.cast<double>() - expected).cwiseAbs().maxCoeff() <= 1e-7);
}

TEST_CASE("log-posteriors of -inf are probability zero") {
  std::mt19937 rng{6};
  full_sum_engine engine;
  const std::vector<uint32_t> labels = {1, 2};
  const auto automaton = unwrap(ctc_topology{}.build("seg", labels));
  SECTION("paths through them drop out") {
    auto log_posteriors = test::random_log_posteriors(5, 3, rng);
    log_posteriors(0, 0) = -inf; // no leading blank
    log_posteriors(4, 2) = -inf; // the last frame is not label 2
    check_against_enumeration(engine, automaton, log_posteriors);
    row_matrix_f error_signal(5, 3);
    row_matrix_d gamma(5, 3);
    unwrap(engine.loss_and_occupancy("seg", automaton, log_posteriors, gamma));
    CHECK(gamma(0, 0) <= 1e-300);
    CHECK(gamma(4, 2) <= 1e-300);
    unwrap(engine.loss_and_error_signal("seg", automaton, log_posteriors, error_signal));
    CHECK(error_signal(0, 0) == 0.0f);
    CHECK(error_signal(4, 2) == 0.0f);
  }
  SECTION("a label that is impossible everywhere skips the segment") {
    auto log_posteriors = test::random_log_posteriors(5, 3, rng);
    log_posteriors.col(2).setConstant(-inf);
    row_matrix_f error_signal = row_matrix_f::Constant(5, 3, 7.0f);
    test::log_capture capture;
    const auto result = unwrap(
        engine.loss_and_error_signal("corpus/rec/3", automaton, log_posteriors, error_signal));
    CHECK(result.skipped);
    CHECK(result.loss == std::numeric_limits<double>::infinity());
    CHECK(error_signal.isZero(0.0f));
    REQUIRE(capture.messages().size() == 1);
    CHECK_THAT(capture.messages()[0],
               Catch::StartsWith("warning: segment 'corpus/rec/3' skipped: every path of 5 "
                                 "frames has probability zero"));
  }
}

TEST_CASE("too few frames skip the segment with a warning naming it") {
  std::mt19937 rng{7};
  full_sum_engine engine;
  const std::vector<uint32_t> labels = {1, 1};
  const auto automaton = unwrap(ctc_topology{}.build("seg", labels));
  const auto log_posteriors = test::random_log_posteriors(2, 3, rng);
  row_matrix_f error_signal = row_matrix_f::Constant(2, 3, 7.0f);
  test::log_capture capture;
  const auto result =
      unwrap(engine.loss_and_error_signal("rec/1", automaton, log_posteriors, error_signal));
  CHECK(result.skipped);
  CHECK(std::isinf(result.loss));
  CHECK(error_signal.isZero(0.0f));
  REQUIRE(capture.messages().size() == 1);
  CHECK_THAT(
      capture.messages()[0],
      Catch::StartsWith("warning: segment 'rec/1' skipped: its FSA has no path of exactly "
                        "2 frames (too few for its labels); loss is inf, error signal zero"));
}

TEST_CASE("extreme log-posteriors and long segments stay exact") {
  full_sum_engine engine;
  SECTION("a single path far below exp's range") {
    // CTC 1 2 in 2 frames has one path: its probability e^-1700 underflows any
    // probability-space computation, but not the log-space one.
    row_matrix_f log_posteriors(2, 3);
    log_posteriors << 0.0f, -800.0f, 0.0f, 0.0f, 0.0f, -900.0f;
    row_matrix_f error_signal(2, 3);
    const std::vector<uint32_t> labels = {1, 2};
    const auto result = unwrap(engine.loss_and_error_signal(
        "seg", unwrap(ctc_topology{}.build("seg", labels)), log_posteriors, error_signal));
    CHECK(!result.skipped);
    CHECK(result.loss == 1700.0);
    // gamma is 1 on the path; exp(0) = 1 off it.
    row_matrix_f expected(2, 3);
    expected << 1.0f, -1.0f, 1.0f, 1.0f, 1.0f, -1.0f;
    CHECK(error_signal == expected);
  }
  SECTION("a 5000-frame single-path HMM accumulates without drift") {
    hmm_options options;
    options.loop_cost = 0.25f;
    options.forward_cost = 0.5f;
    const auto automaton =
        unwrap(unwrap(hmm_topology::make(options)).build("seg", std::vector<uint32_t>{1}));
    std::mt19937 rng{8};
    const auto log_posteriors = test::random_log_posteriors(5000, 3, rng);
    row_matrix_f error_signal(5000, 3);
    const auto result =
        unwrap(engine.loss_and_error_signal("seg", automaton, log_posteriors, error_signal));
    const double expected = 0.5 + 4999 * 0.25 - log_posteriors.col(1).cast<double>().sum();
    CHECK(result.loss == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("invalid inputs are errors that name the place, and write nothing") {
  full_sum_engine engine;
  const std::vector<uint32_t> labels = {1, 2};
  const auto automaton = unwrap(ctc_topology{}.build("seg", labels));
  row_matrix_f log_posteriors = row_matrix_f::Constant(4, 3, std::log(1.0f / 3));
  row_matrix_f error_signal = row_matrix_f::Constant(4, 3, 7.0f);
  const auto error_of = [&](const fsa& a, const row_matrix_f& lp, error_signal_ref out) {
    auto result = engine.loss_and_error_signal("rec/9", a, lp, out);
    REQUIRE(!result);
    CHECK(result.error() == errc::invalid_input);
    return error_message(result.error());
  };
  SECTION("NaN") {
    log_posteriors(2, 1) = std::numeric_limits<float>::quiet_NaN();
    CHECK(error_of(automaton, log_posteriors, error_signal) ==
          "segment 'rec/9': log-posterior at frame 2, index 1 is NaN (only finite values and "
          "-inf are valid)");
  }
  SECTION("+inf") {
    log_posteriors(3, 0) = inf;
    CHECK(error_of(automaton, log_posteriors, error_signal) ==
          "segment 'rec/9': log-posterior at frame 3, index 0 is +inf (only finite values and "
          "-inf are valid)");
  }
  SECTION("a label beyond the posteriors' width") {
    const std::vector<uint32_t> wide = {1, 5};
    CHECK(error_of(unwrap(ctc_topology{}.build("seg", wide)), log_posteriors, error_signal)
              .find("segment 'rec/9': label 5 (emitted by FSA edge") == 0);
  }
  SECTION("no frames") {
    row_matrix_f empty(0, 3);
    row_matrix_f out(0, 3);
    CHECK(error_of(automaton, empty, out) ==
          "segment 'rec/9': log-posteriors have shape [0, 3] (need at least one frame and one "
          "class)");
  }
  SECTION("a wrongly shaped output") {
    row_matrix_f out(4, 2);
    CHECK(error_of(automaton, log_posteriors, out) ==
          "segment 'rec/9': output has shape [4, 2], but the log-posteriors have shape [4, 3]");
    row_matrix_d gamma(3, 3);
    auto result = engine.loss_and_occupancy("rec/9", automaton, log_posteriors, gamma);
    REQUIRE(!result);
    CHECK(result.error() == errc::invalid_input);
  }
  CHECK((error_signal.array() == 7.0f).all());
}

TEST_CASE("segments are computed in place in a time-major batch") {
  // The trainer's batch is [T, B, D]: segment b is rows of stride B*D. The
  // engine reads and writes such strided views directly.
  std::mt19937 rng{9};
  const Eigen::Index frames = 7, batch = 3, classes = 4;
  const auto automaton = unwrap(ctc_topology{}.build("seg", std::vector<uint32_t>{1, 2}));
  std::vector<float> posteriors(frames * batch * classes);
  std::vector<float> errors(frames * batch * classes, 7.0f);
  using strided = Eigen::Map<row_matrix_f, 0, Eigen::OuterStride<>>;
  full_sum_engine engine;
  for (Eigen::Index b = 0; b < batch; ++b)
    strided{posteriors.data() + b * classes, frames, classes,
            Eigen::OuterStride<>{batch* classes}} =
        test::random_log_posteriors(frames, classes, rng);
  for (Eigen::Index b = 0; b < batch; ++b) {
    const strided lp{posteriors.data() + b * classes, frames, classes,
                     Eigen::OuterStride<>{batch * classes}};
    strided out{errors.data() + b * classes, frames, classes,
                Eigen::OuterStride<>{batch * classes}};
    const auto in_place = unwrap(engine.loss_and_error_signal("seg", automaton, lp, out));
    const row_matrix_f dense_lp = lp;
    row_matrix_f dense_out(frames, classes);
    const auto dense = unwrap(engine.loss_and_error_signal("seg", automaton, dense_lp, dense_out));
    CHECK(in_place.loss == dense.loss);
    CHECK(row_matrix_f{out} == dense_out);
  }
  CHECK(std::find(errors.begin(), errors.end(), 7.0f) == errors.end());
}

TEST_CASE("a warmed-up engine gives the results of a fresh one, segment after segment") {
  std::mt19937 rng{10};
  full_sum_engine reused;
  const std::vector<std::pair<std::vector<uint32_t>, Eigen::Index>> segments = {
      {{1, 2, 3, 1, 2}, 30}, {{2}, 3}, {{3, 3, 1, 2, 2, 1, 3}, 50}, {{1}, 1}, {{2, 1}, 12}};
  for (const auto& [labels, frames] : segments) {
    const auto automaton = unwrap(ctc_topology{}.build("seg", labels));
    const auto log_posteriors = test::random_log_posteriors(frames, 4, rng);
    row_matrix_f reused_out(frames, 4);
    row_matrix_f fresh_out(frames, 4);
    const auto a =
        unwrap(reused.loss_and_error_signal("seg", automaton, log_posteriors, reused_out));
    full_sum_engine fresh;
    const auto b = unwrap(fresh.loss_and_error_signal("seg", automaton, log_posteriors, fresh_out));
    CHECK(a.loss == b.loss);
    CHECK(reused_out == fresh_out);
  }
}

TEST_CASE("a warmed-up engine does not allocate") {
  std::mt19937 rng{11};
  full_sum_engine engine;
  const auto big = unwrap(ctc_topology{}.build("seg", std::vector<uint32_t>{1, 2, 3, 1, 2, 3}));
  const auto small = unwrap(make_hmm(true).build("seg", std::vector<uint32_t>{2, 1}));
  const auto big_lp = test::random_log_posteriors(40, 5, rng);
  const auto small_lp = test::random_log_posteriors(9, 3, rng);
  row_matrix_f big_out(40, 5);
  row_matrix_f small_out(9, 3);
  unwrap(engine.loss_and_error_signal("seg", big, big_lp, big_out));
  const size_t before = test::allocation_count();
  const auto a = engine.loss_and_error_signal("seg", small, small_lp, small_out);
  const auto b = engine.loss_and_error_signal("seg", big, big_lp, big_out);
  const size_t after = test::allocation_count();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(after == before);
  // The counter does count: building an FSA allocates.
  unwrap(ctc_topology{}.build("seg", std::vector<uint32_t>{1}));
  CHECK(test::allocation_count() > after);
}
