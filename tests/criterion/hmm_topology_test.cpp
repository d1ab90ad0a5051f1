#include "criterion/hmm_topology.hpp"

#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

hmm_options costs_without_silence() {
  hmm_options options;
  options.loop_cost = 0.5f;
  options.forward_cost = 1.5f;
  return options;
}

hmm_options costs_with_silence() {
  auto options = costs_without_silence();
  options.silence_index = 0;
  options.silence_loop_cost = 0.25f;
  options.silence_entry_cost = 2.0f;
  options.silence_exit_cost = 3.0f;
  return options;
}

fsa build(const hmm_options& options, std::vector<uint32_t> labels) {
  return unwrap(unwrap(hmm_topology::make(options)).build("seg", labels));
}

} // namespace

TEST_CASE("HMM FSA without silence: a chain of label states, the last one final") {
  const auto automaton = build(costs_without_silence(), {4, 5});
  CHECK(automaton.num_states() == 3);
  const std::vector<fsa_edge> expected = {
      {0, 1, 4, 1.5f}, {1, 1, 4, 0.5f}, {1, 2, 5, 1.5f}, {2, 2, 5, 0.5f}};
  CHECK(automaton.edges() == expected);
}

TEST_CASE("HMM FSA with optional silence everywhere and a final sink") {
  const auto automaton = build(costs_with_silence(), {4, 5});
  // 0 start, 1 Q0, 2 S1, 3 Q1, 4 S2, 5 Q2, 6 final.
  CHECK(automaton.num_states() == 7);
  const std::vector<fsa_edge> expected = {
      {0, 1, 0, 2.0f}, {1, 1, 0, 0.25f},                  // Q0
      {0, 2, 4, 1.5f}, {1, 2, 4, 3.0f},  {2, 2, 4, 0.5f}, // S1
      {2, 3, 0, 2.0f}, {3, 3, 0, 0.25f},                  // Q1
      {2, 4, 5, 1.5f}, {3, 4, 5, 3.0f},  {4, 4, 5, 0.5f}, // S2
      {4, 5, 0, 2.0f}, {5, 5, 0, 0.25f},                  // Q2
      {2, 6, 5, 1.5f}, {3, 6, 5, 3.0f},  {4, 6, 5, 0.5f}, // copies into S2
      {4, 6, 0, 2.0f}, {5, 6, 0, 0.25f},                  // copies into Q2
  };
  CHECK(automaton.edges() == expected);
}

TEST_CASE("HMM FSA with leading silence only ends in the last label's state") {
  auto options = costs_with_silence();
  options.silence_between_labels = false;
  options.silence_at_end = false;
  const auto automaton = build(options, {4, 4});
  CHECK(automaton.num_states() == 4);
  const std::vector<fsa_edge> expected = {
      {0, 1, 0, 2.0f}, {1, 1, 0, 0.25f},                  // Q0
      {0, 2, 4, 1.5f}, {1, 2, 4, 3.0f},  {2, 2, 4, 0.5f}, // S1
      {2, 3, 4, 1.5f}, {3, 3, 4, 0.5f},                   // S2, final
  };
  CHECK(automaton.edges() == expected);
}

TEST_CASE("HMM FSA of no labels is one silence state, or an error without silence") {
  const auto automaton = build(costs_with_silence(), {});
  CHECK(automaton.num_states() == 2);
  const std::vector<fsa_edge> expected = {{0, 1, 0, 2.0f}, {1, 1, 0, 0.25f}};
  CHECK(automaton.edges() == expected);
  auto failed = unwrap(hmm_topology::make(costs_without_silence())).build("segment 'seg/1'", {});
  REQUIRE(!failed);
  CHECK(failed.error() == errc::invalid_input);
  CHECK(error_message(failed.error()) ==
        "segment 'seg/1' has no labels, and the HMM topology has no silence state to align it to");
}

TEST_CASE("HMM options reject NaN and -inf costs by name, and allow +inf") {
  auto options = costs_with_silence();
  options.silence_exit_cost = std::numeric_limits<float>::quiet_NaN();
  auto result = hmm_topology::make(options);
  REQUIRE(!result);
  CHECK(result.error() == errc::invalid_options);
  CHECK(error_message(result.error()).find("silence_exit_cost") != std::string::npos);
  options.silence_exit_cost = 1.0f;
  options.loop_cost = -std::numeric_limits<float>::infinity();
  CHECK(!hmm_topology::make(options));
  options.loop_cost = std::numeric_limits<float>::infinity();
  auto topology = unwrap(hmm_topology::make(options));
  CHECK(topology.name() == "hmm");
  CHECK(topology.options().loop_cost == std::numeric_limits<float>::infinity());
}
