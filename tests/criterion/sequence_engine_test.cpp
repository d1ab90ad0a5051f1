#include "criterion/sequence_engine.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "sequence_reference.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using test::unwrap;

TEST_CASE("the engine's log Z, occupancy and best path equal path enumeration") {
  std::mt19937 rng{31};
  sequence_engine engine;
  for (int round = 0; round < 40; ++round) {
    const auto automaton = test::random_fsa(4, 9, 3, rng);
    const auto frames = static_cast<Eigen::Index>(1 + round % 5);
    const auto log_posteriors = test::random_log_posteriors(frames, 3, rng);
    const auto want = test::enumerate_paths(automaton, log_posteriors);
    const row_matrix_d scores = log_posteriors.cast<double>();
    const auto graph = to_wfsa(automaton);
    const double log_z = engine.run(graph, scores);
    INFO(to_string(automaton) << "T = " << frames);
    if (want.log_total == -std::numeric_limits<double>::infinity()) {
      CHECK(log_z == want.log_total);
      CHECK_FALSE(engine.best_path(graph, scores));
      continue;
    }
    CHECK(log_z == Approx(want.log_total).epsilon(1e-12));
    row_matrix_d gamma = row_matrix_d::Zero(frames, 3);
    engine.add_occupancy(1.0, gamma);
    CHECK((gamma - want.gamma).cwiseAbs().maxCoeff() <= 1e-12);
    const auto best = engine.best_path(graph, scores);
    REQUIRE(best);
    // The enumeration's best path's emissions (random scores have no ties).
    std::vector<uint32_t> emissions;
    for (auto e : want.best_edges)
      emissions.push_back(automaton.edge(e).emission);
    CHECK(*best == emissions);
  }
}

TEST_CASE("expected accuracy and its gradient equal path enumeration") {
  std::mt19937 rng{32};
  sequence_engine engine;
  for (int round = 0; round < 30; ++round) {
    const auto automaton = test::random_fsa(4, 10, 3, rng);
    const Eigen::Index frames = 4;
    const row_matrix_d scores = test::random_log_posteriors(frames, 3, rng).cast<double>();
    const std::vector<uint32_t> reference = {0, 2, 1, 1};
    const auto graph = to_wfsa(automaton);
    const double log_z = engine.run(graph, scores);
    if (!std::isfinite(log_z))
      continue;
    double expected = 0;
    const auto paths = test::all_paths(automaton, frames);
    std::vector<double> probability;
    std::vector<double> accuracy;
    for (const auto& p : paths) {
      double s = -p.weight;
      double a = 0;
      for (Eigen::Index t = 0; t < frames; ++t) {
        s += scores(t, p.emissions[t]);
        a += p.emissions[t] == reference[t];
      }
      probability.push_back(std::exp(s - log_z));
      accuracy.push_back(a);
      expected += probability.back() * a;
    }
    row_matrix_d want = row_matrix_d::Zero(frames, 3);
    for (size_t i = 0; i < paths.size(); ++i)
      for (Eigen::Index t = 0; t < frames; ++t)
        want(t, paths[i].emissions[t]) += 2.0 * probability[i] * (accuracy[i] - expected);
    row_matrix_d got = row_matrix_d::Zero(frames, 3);
    CHECK(engine.expect_accuracy(reference, 2.0, got) == Approx(expected).epsilon(1e-12));
    CHECK((got - want).cwiseAbs().maxCoeff() <= 1e-12);
  }
}

TEST_CASE("initial and final costs enter every path's score") {
  // Two states, both initial and final at different costs, one edge each way
  // and loops: the enumeration by hand.
  wfsa graph;
  graph.add_state(0.5, 1.0);
  graph.add_state(2.0, 0.25);
  graph.edges = {{0, 0, 0, 0.1}, {0, 1, 1, 0.2}, {1, 1, 1, 0.3}};
  row_matrix_d scores(1, 2);
  scores << -0.7, -1.1;
  sequence_engine engine;
  // Paths of one frame: 0->0 (0.5 + 0.1 + 1.0 - 0.7), 0->1 (0.5 + 0.2 + 0.25
  // - 1.1), 1->1 (2.0 + 0.3 + 0.25 - 1.1).
  const double want =
      std::log(std::exp(-0.5 - 0.1 - 1.0 - 0.7) + std::exp(-0.5 - 0.2 - 0.25 - 1.1) +
               std::exp(-2.0 - 0.3 - 0.25 - 1.1));
  CHECK(engine.run(graph, scores) == Approx(want).epsilon(1e-14));
  CHECK(check(graph).empty());
  graph.final.pop_back();
  CHECK(check(graph) == "the graph has 2 initial and 1 final costs (one of each per state)");
}
