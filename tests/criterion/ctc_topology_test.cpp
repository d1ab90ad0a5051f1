#include "criterion/ctc_topology.hpp"

#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/full_sum.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

fsa build(const ctc_topology& ctc, std::vector<uint32_t> labels) {
  return unwrap(ctc.build("seg", labels));
}

// The full-sum loss of `labels` under CTC, with a fresh error-signal buffer.
full_sum_result ctc_loss(const ctc_topology& ctc, const std::vector<uint32_t>& labels,
                         const row_matrix_f& log_posteriors) {
  full_sum_engine engine;
  row_matrix_f error_signal(log_posteriors.rows(), log_posteriors.cols());
  return unwrap(
      engine.loss_and_error_signal("seg", build(ctc, labels), log_posteriors, error_signal));
}

} // namespace

TEST_CASE("CTC FSA of two distinct labels") {
  const ctc_topology ctc;
  CHECK(ctc.name() == "ctc");
  CHECK(ctc.blank_index() == 0);
  const auto automaton = build(ctc, {1, 2});
  CHECK(automaton.num_states() == 6);
  const std::vector<fsa_edge> expected = {
      {0, 0, 0, 0}, {0, 1, 1, 0},                                           // B0
      {1, 1, 1, 0}, {1, 2, 0, 0}, {1, 3, 2, 0}, {2, 2, 0, 0}, {2, 3, 2, 0}, // L1, B1
      {3, 3, 2, 0}, {3, 4, 0, 0}, {4, 4, 0, 0},                             // L2, B2
      {1, 5, 2, 0}, {2, 5, 2, 0}, {3, 5, 2, 0}, {3, 5, 0, 0}, {4, 5, 0, 0}, // into final
  };
  CHECK(automaton.edges() == expected);
}

TEST_CASE("CTC FSA of a repeated label has no direct edge between the occurrences") {
  const auto automaton = build(ctc_topology{}, {1, 1});
  CHECK(automaton.num_states() == 6);
  const std::vector<fsa_edge> expected = {
      {0, 0, 0, 0}, {0, 1, 1, 0},                             // B0
      {1, 1, 1, 0}, {1, 2, 0, 0}, {2, 2, 0, 0}, {2, 3, 1, 0}, // L1, B1: no 1 -> 3
      {3, 3, 1, 0}, {3, 4, 0, 0}, {4, 4, 0, 0},               // L2, B2
      {2, 5, 1, 0}, {3, 5, 1, 0}, {3, 5, 0, 0}, {4, 5, 0, 0}, // into final
  };
  CHECK(automaton.edges() == expected);
}

TEST_CASE("CTC FSA with the blank at D-1 and a single label") {
  const ctc_topology ctc{3};
  CHECK(ctc.blank_index() == 3);
  const auto automaton = build(ctc, {2});
  CHECK(automaton.num_states() == 4);
  const std::vector<fsa_edge> expected = {
      {0, 0, 3, 0}, {0, 1, 2, 0}, {1, 1, 2, 0}, {1, 2, 3, 0}, {2, 2, 3, 0},
      {0, 3, 2, 0}, {1, 3, 2, 0}, {1, 3, 3, 0}, {2, 3, 3, 0},
  };
  CHECK(automaton.edges() == expected);
}

TEST_CASE("CTC FSA of no labels accepts blanks only") {
  const auto automaton = build(ctc_topology{}, {});
  CHECK(automaton.num_states() == 2);
  const std::vector<fsa_edge> expected = {{0, 0, 0, 0}, {0, 1, 0, 0}};
  CHECK(automaton.edges() == expected);
}

TEST_CASE("a label equal to the CTC blank is an error naming its owner and position") {
  const std::vector<uint32_t> labels = {1, 2, 3};
  auto result = ctc_topology{3}.build("segment 'corpus/rec/7'", labels);
  REQUIRE(!result);
  CHECK(result.error() == errc::invalid_input);
  CHECK(error_message(result.error()) ==
        "segment 'corpus/rec/7': label number 3 is 3, the CTC blank index");
}

TEST_CASE("CTC full-sum equals the CTC definition, summed over all symbol sequences") {
  std::mt19937 rng{2024};
  const uint32_t num_classes = 4;
  const std::vector<std::vector<uint32_t>> label_sets = {{},     {1},       {2, 2},
                                                         {1, 2}, {1, 2, 1}, {2, 2, 2}};
  test::log_capture quiet; // skipped segments warn
  for (const uint32_t blank : {0u, num_classes - 1}) {
    const ctc_topology ctc{blank};
    for (auto labels : label_sets) {
      // Shift labels off the blank for blank = D-1.
      for (auto& label : labels)
        label = blank == 0 ? label : label - 1;
      for (Eigen::Index frames = 1; frames <= 6; ++frames) {
        INFO("blank " << blank << ", " << labels.size() << " labels, T = " << frames);
        const auto log_posteriors = test::random_log_posteriors(frames, num_classes, rng);
        const double expected = test::ctc_by_definition(labels, blank, log_posteriors);
        const auto result = ctc_loss(ctc, labels, log_posteriors);
        CHECK(result.skipped == std::isinf(expected));
        if (std::isinf(expected))
          CHECK(std::isinf(result.loss));
        else
          CHECK(result.loss == Approx(expected).epsilon(1e-9));
      }
    }
  }
}

TEST_CASE("CTC at exactly the minimum length has the single path of labels and needed blanks") {
  std::mt19937 rng{5};
  // 1 1 2 needs a blank between the two 1s: 4 frames, path 1 0 1 2.
  const auto log_posteriors = test::random_log_posteriors(4, 3, rng);
  const auto result = ctc_loss(ctc_topology{}, {1, 1, 2}, log_posteriors);
  const double expected = -(double{log_posteriors(0, 1)} + log_posteriors(1, 0) +
                            log_posteriors(2, 1) + log_posteriors(3, 2));
  CHECK(!result.skipped);
  CHECK(result.loss == Approx(expected).epsilon(1e-12));
}

TEST_CASE("CTC below the minimum length is skipped with infinite loss") {
  std::mt19937 rng{6};
  const auto log_posteriors = test::random_log_posteriors(3, 3, rng);
  test::log_capture quiet;
  // Repeated labels need 4 frames for 1 1 2, and 2 labels can never fit 1 frame.
  CHECK(ctc_loss(ctc_topology{}, {1, 1, 2}, log_posteriors).skipped);
  CHECK(ctc_loss(ctc_topology{}, {1, 2, 1, 2}, log_posteriors).skipped);
  CHECK(std::isinf(ctc_loss(ctc_topology{}, {1, 1, 2}, log_posteriors).loss));
  // Without the repetition, 3 frames are enough for 3 labels.
  CHECK(!ctc_loss(ctc_topology{}, {1, 2, 1}, log_posteriors).skipped);
}
