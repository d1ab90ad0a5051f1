// The full-sum on the engine's scaled recursions against the log-space
// reference: equal results where the scaled recursions' checks pass (random
// CTC, HMM and arbitrary FSAs, long peaky segments as a trained model gives
// them), and the log-space recursions, with their exact values, wherever
// underflow could change them.

#include "criterion/full_sum.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "criterion/hmm_topology.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using test::unwrap;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

/// Runs `automaton` over `log_posteriors` with the automatic method and with
/// the log-space reference, checks that they agree, and returns the path the
/// automatic engine took.
full_sum_path compare_with_reference(const fsa& automaton, const row_matrix_f& log_posteriors) {
  const auto frames = log_posteriors.rows();
  const auto classes = log_posteriors.cols();
  full_sum_engine fast;
  full_sum_engine reference{full_sum_method::log_space};
  test::log_capture quiet;
  row_matrix_d fast_gamma(frames, classes);
  row_matrix_d reference_gamma(frames, classes);
  const auto a = unwrap(fast.loss_and_occupancy("seg", automaton, log_posteriors, fast_gamma));
  const auto path = fast.last_path();
  const auto b =
      unwrap(reference.loss_and_occupancy("seg", automaton, log_posteriors, reference_gamma));
  CHECK(reference.last_path() == full_sum_path::log_space);
  REQUIRE(a.skipped == b.skipped);
  if (b.skipped) {
    CHECK(path == full_sum_path::log_space);
    CHECK(a.loss == b.loss);
    return path;
  }
  // Relative 1e-12 on the loss: both are exact to rounding.
  CHECK(a.loss == Approx(b.loss).epsilon(1e-12).margin(1e-12));
  // Occupancies agree to rounding too (the checks hand back a segment
  // whose frames lost mass).
  CHECK((fast_gamma - reference_gamma).cwiseAbs().maxCoeff() <= 1e-9);
  // The error signals, both rounded to float: at most an ulp apart.
  row_matrix_f fast_signal(frames, classes);
  row_matrix_f reference_signal(frames, classes);
  unwrap(fast.loss_and_error_signal("seg", automaton, log_posteriors, fast_signal));
  CHECK(fast.last_path() == path);
  unwrap(reference.loss_and_error_signal("seg", automaton, log_posteriors, reference_signal));
  CHECK((fast_signal - reference_signal).cwiseAbs().maxCoeff() <= 1.2e-7f);
  return path;
}

/// Posteriors as a trained CTC model gives them: each frame almost sure of one
/// class (the labels in order, a few frames each, blanks between), every
/// other class 15 to 35 nats below.
row_matrix_f peaky_log_posteriors(const std::vector<uint32_t>& labels, Eigen::Index frames,
                                  Eigen::Index classes, uint32_t blank, std::mt19937& rng) {
  std::uniform_real_distribution<float> low{-35.0f, -15.0f};
  row_matrix_f result(frames, classes);
  for (Eigen::Index i = 0; i < result.size(); ++i)
    result.data()[i] = low(rng);
  const double per_label = static_cast<double>(frames) / static_cast<double>(labels.size());
  for (Eigen::Index t = 0; t < frames; ++t) {
    const auto i = static_cast<size_t>(static_cast<double>(t) / per_label);
    const double within = static_cast<double>(t) - static_cast<double>(i) * per_label;
    const bool on_label = within >= per_label / 3 && within < 2 * per_label / 3;
    result(t, on_label ? labels[i] : blank) = -0.02f;
  }
  return result;
}

hmm_topology make_hmm() {
  return unwrap(hmm_topology::make(test::distinct_hmm_costs()));
}

} // namespace

TEST_CASE("the scaled pass matches the log-space reference on CTC and HMM segments") {
  std::mt19937 rng{21};
  const auto hmm = make_hmm();
  std::uniform_int_distribution<size_t> num_labels{1, 40};
  std::uniform_int_distribution<uint32_t> num_classes{3, 30};
  for (int round = 0; round < 40; ++round) {
    const uint32_t classes = num_classes(rng);
    const auto labels = test::random_labels(num_labels(rng), classes, 0, rng);
    const Eigen::Index frames = 2 * static_cast<Eigen::Index>(labels.size()) + 1 + round * 4;
    const auto log_posteriors = test::random_log_posteriors(frames, classes, rng);
    INFO("round " << round << ": " << labels.size() << " labels, " << frames << " frames");
    CHECK(compare_with_reference(unwrap(ctc_topology{0}.build("seg", labels)), log_posteriors) ==
          full_sum_path::scaled);
    CHECK(compare_with_reference(unwrap(hmm.build("seg", labels)), log_posteriors) ==
          full_sum_path::scaled);
  }
}

TEST_CASE("the scaled pass matches the log-space reference on random FSAs") {
  // Parallel edges, negative and infinite costs, mixed and unreachable states,
  // segments without paths (those go to the log-space pass).
  std::mt19937 rng{22};
  size_t scaled = 0;
  for (int round = 0; round < 200; ++round) {
    const auto automaton = test::random_fsa(2 + round % 9, 4 + round % 23, 4, rng);
    const auto log_posteriors = test::random_log_posteriors(1 + round % 17, 4, rng);
    INFO("round " << round << ": " << to_string(automaton));
    scaled += compare_with_reference(automaton, log_posteriors) == full_sum_path::scaled;
  }
  CHECK(scaled >= 50);
  // Larger ones over longer segments: many states entered with several
  // classes, long lists of edges off the bands.
  for (int round = 0; round < 12; ++round) {
    const auto automaton = test::random_fsa(20 + round * 2, 60 + round * 20, 6, rng);
    const auto log_posteriors = test::random_log_posteriors(40 + round * 10, 6, rng);
    INFO("large round " << round);
    compare_with_reference(automaton, log_posteriors);
  }
}

TEST_CASE("costs far beyond exp's range are shifted, not overflowed") {
  // A chain 0 -> 1 -> 2 with loops: every path has T edges, so a cost added to
  // every edge shifts the loss by T times it, in either direction.
  std::mt19937 rng{27};
  const auto log_posteriors = test::random_log_posteriors(9, 3, rng);
  for (const float shift : {-900.0f, 0.0f, 900.0f}) {
    INFO("shift " << shift);
    const std::vector<fsa_edge> edges = {{0, 0, 0, 0.5f + shift},
                                         {0, 1, 1, 1.0f + shift},
                                         {1, 1, 1, 0.25f + shift},
                                         {1, 2, 2, 2.0f + shift},
                                         {2, 2, 2, 0.0f + shift}};
    CHECK(compare_with_reference(unwrap(fsa::make(3, edges)), log_posteriors) ==
          full_sum_path::scaled);
  }
}

TEST_CASE("long peaky segments, as a trained model gives them, stay on the scaled pass") {
  std::mt19937 rng{23};
  for (const Eigen::Index frames : {300, 1000, 3000}) {
    const auto labels = test::random_labels(static_cast<size_t>(frames / 10), 50, 0, rng);
    const auto log_posteriors = peaky_log_posteriors(labels, frames, 50, 0, rng);
    INFO(frames << " frames, " << labels.size() << " labels");
    CHECK(compare_with_reference(unwrap(ctc_topology{0}.build("seg", labels)), log_posteriors) ==
          full_sum_path::scaled);
    CHECK(compare_with_reference(unwrap(make_hmm().build("seg", labels)), log_posteriors) ==
          full_sum_path::scaled);
  }
}

TEST_CASE("log-posteriors of -inf and infinite costs are exact zeros on the scaled pass") {
  std::mt19937 rng{24};
  const auto automaton = unwrap(ctc_topology{0}.build("seg", std::vector<uint32_t>{1, 2, 1}));
  auto log_posteriors = test::random_log_posteriors(12, 4, rng);
  log_posteriors(0, 0) = -inf;
  log_posteriors(5, 2) = -inf;
  log_posteriors.col(3).setConstant(-inf);
  CHECK(compare_with_reference(automaton, log_posteriors) == full_sum_path::scaled);
  full_sum_engine engine;
  row_matrix_d gamma(12, 4);
  unwrap(engine.loss_and_occupancy("seg", automaton, log_posteriors, gamma));
  CHECK(gamma(0, 0) == 0.0);
  CHECK(gamma(5, 2) == 0.0);
  CHECK(gamma.col(3).isZero(0.0));
}

TEST_CASE("the scaled pass gives up where underflow could change the result") {
  const std::vector<uint32_t> labels = {1, 2};
  const auto ctc = unwrap(ctc_topology{0}.build("seg", labels));
  full_sum_engine engine;
  full_sum_engine reference{full_sum_method::log_space};
  row_matrix_f error_signal(2, 3);
  SECTION("the only path underflows to zero") {
    row_matrix_f log_posteriors(2, 3);
    log_posteriors << 0.0f, -800.0f, 0.0f, 0.0f, 0.0f, -900.0f;
    CHECK(unwrap(engine.loss_and_error_signal("seg", ctc, log_posteriors, error_signal)).loss ==
          1700.0);
    CHECK(engine.last_path() == full_sum_path::log_space);
  }
  SECTION("the only path is subnormal") {
    // Z_lin is about e^-740 / 2: nonzero, but with few significant bits.
    row_matrix_f log_posteriors(2, 3);
    log_posteriors << 0.0f, -720.0f, 0.0f, 0.0f, 0.0f, -20.0f;
    CHECK(unwrap(engine.loss_and_error_signal("seg", ctc, log_posteriors, error_signal)).loss ==
          740.0);
    CHECK(engine.last_path() == full_sum_path::log_space);
    row_matrix_f expected(2, 3);
    expected << 1.0f, -1.0f, 1.0f, 1.0f, 1.0f, static_cast<float>(std::exp(-20.0f) - 1.0);
    CHECK(error_signal == expected);
  }
  SECTION("the only path takes an edge whose cost is beyond exp's range") {
    // 0 -> 0 costs 0, 0 -> 1 costs 800: exp(-800) underflows next to exp(0).
    const std::vector<fsa_edge> edges = {{0, 0, 0, 0.0f}, {0, 1, 1, 800.0f}};
    const auto automaton = unwrap(fsa::make(2, edges));
    row_matrix_f log_posteriors = row_matrix_f::Zero(3, 3);
    row_matrix_f out(3, 3);
    CHECK(unwrap(engine.loss_and_error_signal("seg", automaton, log_posteriors, out)).loss ==
          800.0);
    CHECK(engine.last_path() == full_sum_path::log_space);
  }
  SECTION("the probability mass of a long segment sits on paths that do not finish") {
    // Blanks are sure, labels 25 nats down: at every frame nearly all forward
    // mass is on the states before the labels, and the paths through all 40
    // labels keep under e^-700 of it.
    std::mt19937 rng{25};
    const auto many = test::random_labels(40, 5, 0, rng);
    const auto automaton = unwrap(ctc_topology{0}.build("seg", many));
    row_matrix_f log_posteriors = row_matrix_f::Constant(500, 5, -25.0f);
    log_posteriors.col(0).setZero();
    row_matrix_f fast_signal(500, 5);
    row_matrix_f reference_signal(500, 5);
    const auto a =
        unwrap(engine.loss_and_error_signal("seg", automaton, log_posteriors, fast_signal));
    CHECK(engine.last_path() == full_sum_path::log_space);
    const auto b =
        unwrap(reference.loss_and_error_signal("seg", automaton, log_posteriors, reference_signal));
    CHECK(a.loss == b.loss);
    CHECK(fast_signal == reference_signal);
    // Z itself is below the range of double.
    CHECK(a.loss > 745.0);
  }
}

TEST_CASE("skipped segments and input errors: which path ran") {
  std::mt19937 rng{26};
  const auto automaton = unwrap(ctc_topology{0}.build("seg", std::vector<uint32_t>{1, 1}));
  full_sum_engine engine;
  CHECK(engine.method() == full_sum_method::automatic);
  CHECK(engine.last_path() == full_sum_path::none);
  test::log_capture quiet;
  // Too few frames for 1 1: only the log-space pass tells why.
  row_matrix_f out(2, 3);
  CHECK(unwrap(engine.loss_and_error_signal("seg", automaton,
                                            test::random_log_posteriors(2, 3, rng), out))
            .skipped);
  CHECK(engine.last_path() == full_sum_path::log_space);
  // A frame of -inf everywhere.
  auto log_posteriors = test::random_log_posteriors(6, 3, rng);
  log_posteriors.row(2).setConstant(-inf);
  row_matrix_f six(6, 3);
  CHECK(unwrap(engine.loss_and_error_signal("seg", automaton, log_posteriors, six)).skipped);
  CHECK(engine.last_path() == full_sum_path::log_space);
  REQUIRE(quiet.messages().size() == 2);
  CHECK_THAT(quiet.messages()[1], Catch::Contains("has probability zero"));
  // An input error runs nothing.
  row_matrix_f wrong(5, 3);
  CHECK(!engine.loss_and_error_signal("seg", automaton, log_posteriors, wrong));
  CHECK(engine.last_path() == full_sum_path::none);
  // The log-space method never takes the scaled pass.
  full_sum_engine reference{full_sum_method::log_space};
  CHECK(reference.method() == full_sum_method::log_space);
  const auto fine = test::random_log_posteriors(6, 3, rng);
  unwrap(reference.loss_and_error_signal("seg", automaton, fine, six));
  CHECK(reference.last_path() == full_sum_path::log_space);
  unwrap(engine.loss_and_error_signal("seg", automaton, fine, six));
  CHECK(engine.last_path() == full_sum_path::scaled);
}
