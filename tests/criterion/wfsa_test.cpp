#include "criterion/wfsa.hpp"

#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "criterion/sequence_engine.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;

namespace {

/// A random graph over `classes` columns: several initial and final states
/// with random costs (some states both), edges anywhere, self-loops included.
wfsa random_wfsa(uint32_t num_states, uint32_t num_edges, uint32_t classes, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> state(0, num_states - 1);
  std::uniform_int_distribution<uint32_t> column(0, classes - 1);
  std::uniform_real_distribution<double> cost(0.0, 2.0);
  std::bernoulli_distribution half(0.5);
  wfsa graph;
  for (uint32_t q = 0; q < num_states; ++q)
    graph.add_state(half(rng) ? cost(rng) : wfsa::none, half(rng) ? cost(rng) : wfsa::none);
  graph.initial[state(rng)] = cost(rng);
  graph.final[state(rng)] = cost(rng);
  for (uint32_t e = 0; e < num_edges; ++e)
    graph.edges.push_back({state(rng), state(rng), column(rng), cost(rng)});
  return graph;
}

/// Checks the layout `single_ended` promises: state 0 the only initial and
/// the last the only final state, both at cost 0, nothing entering the start
/// or leaving the end.
void check_single_ended(const wfsa& graph) {
  REQUIRE(check(graph).empty());
  const uint32_t end = graph.num_states() - 1;
  for (uint32_t q = 0; q < graph.num_states(); ++q) {
    CHECK(graph.initial[q] == (q == 0 ? 0.0 : wfsa::none));
    CHECK(graph.final[q] == (q == end ? 0.0 : wfsa::none));
  }
  for (const auto& edge : graph.edges) {
    CHECK(edge.to != 0);
    CHECK(edge.from != end);
  }
}

} // namespace

TEST_CASE("single_ended keeps log Z and the occupancy of every path of T >= 1 frames") {
  std::mt19937 rng{41};
  sequence_engine engine;
  for (int round = 0; round < 60; ++round) {
    const auto graph = random_wfsa(1 + round % 5, 2 + round % 9, 3, rng);
    const auto single = single_ended(graph);
    check_single_ended(single);
    for (Eigen::Index frames = 1; frames <= 4; ++frames) {
      INFO("round " << round << ", T = " << frames);
      const row_matrix_d scores = test::random_log_posteriors(frames, 3, rng).cast<double>();
      const double want = engine.run(graph, scores);
      row_matrix_d want_gamma = row_matrix_d::Zero(frames, 3);
      if (std::isfinite(want))
        engine.add_occupancy(1.0, want_gamma);
      const double got = engine.run(single, scores);
      if (!std::isfinite(want)) {
        CHECK(got == want);
        continue;
      }
      CHECK(got == Approx(want).epsilon(1e-12));
      row_matrix_d got_gamma = row_matrix_d::Zero(frames, 3);
      engine.add_occupancy(1.0, got_gamma);
      CHECK((got_gamma - want_gamma).cwiseAbs().maxCoeff() <= 1e-12);
    }
  }
}

TEST_CASE("single_ended keeps a graph that already has one start and one end as it is") {
  // 0 -> 1 -> 2 with a loop on 1: the start and end states only move to
  // the first and last ids, no edge is added.
  wfsa graph;
  graph.add_state();
  graph.add_state(wfsa::none, 0);
  graph.add_state(0);
  graph.edges = {{2, 0, 1, 0.5}, {0, 0, 2, 0.25}, {0, 1, 0, 0.125}};
  const auto single = single_ended(graph);
  check_single_ended(single);
  REQUIRE(single.num_states() == 3);
  REQUIRE(single.edges.size() == 3);
  CHECK(single.edges[0].from == 0);
  CHECK(single.edges[0].to == 1);
  CHECK(single.edges[1].from == 1);
  CHECK(single.edges[1].to == 1);
  CHECK(single.edges[2].from == 1);
  CHECK(single.edges[2].to == 2);
  CHECK(single.edges[2].weight == 0.125);
}

TEST_CASE("single_ended adds a start and an end where the graph's are costed or entered") {
  // One state, initial at 0.5 and final at 0.25, with a loop: the new start
  // and end each get a copy of the loop, and a third copy joins them.
  wfsa graph;
  graph.add_state(0.5, 0.25);
  graph.edges = {{0, 0, 1, 1.0}};
  const auto single = single_ended(graph);
  check_single_ended(single);
  REQUIRE(single.num_states() == 3);
  REQUIRE(single.edges.size() == 4);
  CHECK(single.edges[1].weight == 1.5);  // start -> old state
  CHECK(single.edges[2].weight == 1.25); // old state -> end
  CHECK(single.edges[3].weight == 1.75); // start -> end
  CHECK(single.edges[3].from == 0);
  CHECK(single.edges[3].to == 2);
}
