#include "criterion/viterbi.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "criterion/hmm_topology.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using test::unwrap;

namespace {

// Compares the alignment with the best enumerated path, and checks that it is
// a chain from the start to the final state whose cost adds up.
void check_against_enumeration(viterbi_aligner& aligner, const fsa& automaton,
                               const row_matrix_f& log_posteriors) {
  INFO(to_string(automaton));
  INFO("log_posteriors:\n" << log_posteriors);
  const auto expected = test::enumerate_paths(automaton, log_posteriors);
  const auto result = unwrap(aligner.align("seg", automaton, log_posteriors));
  REQUIRE(result.skipped == (expected.num_paths == 0 ||
                             expected.best_score == -std::numeric_limits<double>::infinity()));
  if (result.skipped) {
    CHECK(result.cost == std::numeric_limits<double>::infinity());
    CHECK(result.edges.empty());
    return;
  }
  CHECK(result.cost == Approx(-expected.best_score).epsilon(1e-12).margin(1e-12));
  CHECK(result.edges == expected.best_edges);
  const auto frames = static_cast<size_t>(log_posteriors.rows());
  REQUIRE(result.edges.size() == frames);
  REQUIRE(result.emissions.size() == frames);
  REQUIRE(result.states.size() == frames);
  uint32_t state = fsa::start_state;
  double cost = 0;
  for (size_t t = 0; t < frames; ++t) {
    const auto edge = automaton.edge(result.edges[t]);
    CHECK(edge.from == state);
    CHECK(edge.to == result.states[t]);
    CHECK(edge.emission == result.emissions[t]);
    cost += double{edge.weight} - log_posteriors(static_cast<Eigen::Index>(t), edge.emission);
    state = edge.to;
  }
  CHECK(state == automaton.final_state());
  CHECK(result.cost == Approx(cost).epsilon(1e-12));
}

} // namespace

TEST_CASE("Viterbi finds the best enumerated path on CTC, HMM and random FSAs") {
  std::mt19937 rng{21};
  viterbi_aligner aligner;
  for (const auto& labels : std::vector<std::vector<uint32_t>>{{1}, {1, 1}, {1, 2, 1}})
    for (Eigen::Index frames = 1; frames <= 6; ++frames)
      check_against_enumeration(aligner, unwrap(ctc_topology{}.build("seg", labels)),
                                test::random_log_posteriors(frames, 3, rng));
  hmm_options options;
  options.silence_index = 0;
  options.loop_cost = 0.2f;
  const auto hmm = unwrap(hmm_topology::make(options));
  for (Eigen::Index frames = 2; frames <= 6; ++frames)
    check_against_enumeration(aligner, unwrap(hmm.build("seg", std::vector<uint32_t>{1, 2})),
                              test::random_log_posteriors(frames, 3, rng));
  for (int round = 0; round < 40; ++round)
    check_against_enumeration(aligner, test::random_fsa(2 + round % 4, 4 + round % 7, 3, rng),
                              test::random_log_posteriors(1 + round % 5, 3, rng));
}

TEST_CASE("Viterbi breaks ties towards the edge that comes first") {
  // CTC of one label over 2 frames with uniform posteriors: "b l", "l l" and
  // "l b" are equally good; the edge 0 -> 3 (blank loop's successor, edge 5)
  // precedes 1 -> 3 (edges 6 and 7) among the edges into the final state.
  viterbi_aligner aligner;
  const auto automaton = unwrap(ctc_topology{}.build("seg", std::vector<uint32_t>{1}));
  const row_matrix_f log_posteriors = row_matrix_f::Constant(2, 2, std::log(0.5f));
  const auto result = unwrap(aligner.align("seg", automaton, log_posteriors));
  CHECK(result.edges == std::vector<uint32_t>{0, 5});
  CHECK(result.emissions == std::vector<uint32_t>{0, 1});
  CHECK(result.states == std::vector<uint32_t>{0, 3});
  CHECK(result.cost == Approx(-2 * std::log(0.5f)));
}

TEST_CASE("Viterbi marks unalignable segments as skipped, without warning") {
  viterbi_aligner aligner;
  const auto automaton = unwrap(ctc_topology{}.build("seg", std::vector<uint32_t>{1, 1}));
  std::mt19937 rng{22};
  test::log_capture capture;
  const auto result =
      unwrap(aligner.align("seg", automaton, test::random_log_posteriors(2, 2, rng)));
  CHECK(result.skipped);
  CHECK(result.cost == std::numeric_limits<double>::infinity());
  CHECK(result.edges.empty());
  CHECK(result.emissions.empty());
  CHECK(result.states.empty());
  CHECK(capture.messages().empty());
}

TEST_CASE("Viterbi checks its input like the full-sum") {
  viterbi_aligner aligner;
  const auto automaton = unwrap(ctc_topology{}.build("seg", std::vector<uint32_t>{1}));
  row_matrix_f log_posteriors = row_matrix_f::Zero(2, 2);
  log_posteriors(1, 1) = std::numeric_limits<float>::quiet_NaN();
  auto result = aligner.align("seg", automaton, log_posteriors);
  REQUIRE(!result);
  CHECK(result.error() == errc::invalid_input);
  auto narrow = aligner.align("seg", automaton, row_matrix_f::Zero(2, 1));
  REQUIRE(!narrow);
  CHECK(narrow.error() == errc::invalid_input);
}
