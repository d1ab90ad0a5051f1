#include "criterion/topology.hpp"

#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;

TEST_CASE("add_final_state copies every edge into an end state to the final state") {
  std::vector<fsa_edge> edges = {
      {0, 1, 1, 0.1f}, {1, 1, 1, 0.2f}, {1, 2, 0, 0.3f}, {2, 2, 0, 0.4f}, {0, 0, 0, 0.5f}};
  add_final_state(edges, {1, 2}, 3);
  const std::vector<fsa_edge> expected = {{0, 1, 1, 0.1f}, {1, 1, 1, 0.2f}, {1, 2, 0, 0.3f},
                                          {2, 2, 0, 0.4f}, {0, 0, 0, 0.5f}, {0, 3, 1, 0.1f},
                                          {1, 3, 1, 0.2f}, {1, 3, 0, 0.3f}, {2, 3, 0, 0.4f}};
  CHECK(edges == expected);
}

TEST_CASE("add_final_state keeps the paths into the end states, one to one") {
  // Paths of T edges into {1, 2} of the original automaton must be exactly the
  // paths into the new final state 3, with the same scores.
  std::mt19937 rng{11};
  const std::vector<fsa_edge> edges = {{0, 0, 0, 0.3f}, {0, 1, 1, 0.7f}, {1, 1, 1, 0.2f},
                                       {1, 2, 0, 0.1f}, {2, 2, 0, 0.9f}, {2, 1, 1, 0.4f}};
  auto with_final = edges;
  add_final_state(with_final, {1, 2}, 3);
  const auto merged = test::unwrap(fsa::make(4, with_final));
  for (Eigen::Index frames = 1; frames <= 5; ++frames) {
    const auto log_posteriors = test::random_log_posteriors(frames, 2, rng);
    // The original automaton as an FSA whose final state is 2, and the same
    // automaton with states 1 and 2 renumbered, whose final state 2 is the
    // original 1.
    const auto end_in_2 = test::unwrap(fsa::make(3, edges));
    std::vector<fsa_edge> swapped = edges;
    for (auto& edge : swapped) {
      edge.from = edge.from == 0 ? 0 : 3 - edge.from;
      edge.to = edge.to == 0 ? 0 : 3 - edge.to;
    }
    const auto end_in_1 = test::unwrap(fsa::make(3, swapped));
    const auto expected_2 = test::enumerate_paths(end_in_2, log_posteriors);
    const auto expected_1 = test::enumerate_paths(end_in_1, log_posteriors);
    const auto actual = test::enumerate_paths(merged, log_posteriors);
    CHECK(actual.num_paths == expected_1.num_paths + expected_2.num_paths);
    CHECK(std::exp(actual.log_total) ==
          Approx(std::exp(expected_1.log_total) + std::exp(expected_2.log_total)).epsilon(1e-12));
  }
}
