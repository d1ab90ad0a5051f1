#include "criterion/scaled_forward_backward.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "criterion/frame_graph.hpp"
#include "criterion/hmm_topology.hpp"
#include "criterion/sequence_engine.hpp"
#include "criterion/wfsa.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// A random wfsa: several initial and final states with costs, edges into a
// state emitting different columns, some +inf weights, self-loops.
wfsa random_wfsa(uint32_t states, uint32_t edges, uint32_t classes, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> state(0, states - 1), column(0, classes - 1);
  std::uniform_real_distribution<double> cost(-1.0, 3.0);
  wfsa graph;
  for (uint32_t q = 0; q < states; ++q)
    graph.add_state(q % 3 == 0 ? cost(rng) : wfsa::none, q % 2 == 1 ? cost(rng) : wfsa::none);
  graph.final.back() = 0.5;
  for (uint32_t e = 0; e < edges; ++e)
    graph.edges.push_back({state(rng), state(rng), column(rng), e % 11 == 10 ? inf : cost(rng)});
  return graph;
}

// A dense graph like a label bigram: every state reaches every state, the
// edges into state q emit column q % classes, every state initial and final.
wfsa bigram_like(uint32_t states, uint32_t classes, std::mt19937& rng) {
  std::uniform_real_distribution<double> cost(0.0, 6.0);
  wfsa graph;
  for (uint32_t q = 0; q < states; ++q)
    graph.add_state(q == 0 ? 0.0 : wfsa::none, 0.0);
  for (uint32_t p = 0; p < states; ++p)
    for (uint32_t q = 0; q < states; ++q)
      graph.edges.push_back({p, q, q % classes, cost(rng)});
  return graph;
}

row_matrix_d random_scores(Eigen::Index frames, Eigen::Index classes, double spread, double scale,
                           std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, spread);
  row_matrix_d logits(frames, classes);
  for (Eigen::Index t = 0; t < frames; ++t)
    for (Eigen::Index k = 0; k < classes; ++k)
      logits(t, k) = normal(rng);
  // log_softmax, then the acoustic scale.
  for (Eigen::Index t = 0; t < frames; ++t) {
    const double top = logits.row(t).maxCoeff();
    const double norm = top + std::log((logits.row(t).array() - top).exp().sum());
    logits.row(t).array() -= norm;
  }
  return scale * logits;
}

struct reference_result {
  double log_z;
  row_matrix_d gradient;
  double expected_accuracy = 0;
};

reference_result log_space(const wfsa& graph, const row_matrix_d& scores,
                           const std::vector<uint32_t>& reference = {}) {
  sequence_engine engine;
  reference_result out{engine.run(graph, scores), row_matrix_d::Zero(scores.rows(), scores.cols())};
  if (!std::isfinite(out.log_z))
    return out;
  if (reference.empty())
    engine.add_occupancy(1.0, out.gradient);
  else
    out.expected_accuracy =
        engine.expect_accuracy({reference.data(), reference.size()}, 1.0, out.gradient);
  return out;
}

std::vector<uint32_t> random_reference(Eigen::Index frames, uint32_t classes, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> column(0, classes - 1);
  std::vector<uint32_t> out(static_cast<size_t>(frames));
  for (auto& k : out)
    k = column(rng);
  return out;
}

// Runs a block of sequences of the given lengths over `graph` and compares
// each exact outcome with the log-space engine; returns how many were exact.
size_t compare_block(const wfsa& graph, frame_graph_storage storage,
                     const std::vector<Eigen::Index>& lengths, uint32_t classes, double spread,
                     double scale, bool accuracy, std::mt19937& rng, double tolerance) {
  const frame_graph layout = lay_out(graph, storage);
  REQUIRE(layout.unrepresentable.empty());
  const size_t count = lengths.size();
  std::vector<row_matrix_d> scores, gradients;
  std::vector<std::vector<uint32_t>> references;
  for (const auto length : lengths) {
    scores.push_back(random_scores(length, classes, spread, scale, rng));
    gradients.push_back(row_matrix_d::Zero(length, classes));
    references.push_back(accuracy ? random_reference(length, classes, rng)
                                  : std::vector<uint32_t>{});
  }
  std::vector<scaled_sequence> block;
  for (size_t b = 0; b < count; ++b)
    block.push_back(scaled_sequence::of(scores[b], &gradients[b],
                                        {references[b].data(), references[b].size()}));
  std::vector<scaled_outcome> outcomes(count);
  scaled_forward_backward engine;
  engine.run(layout, {block.data(), count}, true, 1.0, {outcomes.data(), count});
  size_t exact = 0;
  for (size_t b = 0; b < count; ++b) {
    const auto want = log_space(graph, scores[b], references[b]);
    INFO("sequence " << b << " of " << lengths[b] << " frames, why " << outcomes[b].why);
    if (!std::isfinite(want.log_z)) {
      CHECK_FALSE(outcomes[b].exact);
      continue;
    }
    if (!outcomes[b].exact)
      continue;
    ++exact;
    CHECK(outcomes[b].log_z == Approx(want.log_z).epsilon(1e-12).margin(1e-9));
    if (accuracy)
      CHECK(outcomes[b].expected_accuracy == Approx(want.expected_accuracy).epsilon(1e-9));
    CHECK((gradients[b] - want.gradient).cwiseAbs().maxCoeff() <= tolerance);
  }
  return exact;
}

// The transition matrix of a layout, column-major S x S, from whichever
// storage it has: the dense one, or the bands, the rows by target and the
// rows by source (which must agree, each transition held once).
std::vector<double> transitions_of(const frame_graph& layout) {
  const size_t n = layout.num_states;
  if (layout.is_dense)
    return layout.dense;
  std::vector<double> by_target(n * n, 0.0), by_source(n * n, 0.0);
  for (const auto& band : layout.bands)
    for (uint32_t i = 0; i < band.size; ++i) {
      const int64_t to = int64_t{band.first} + i;
      const int64_t from = to - band.offset;
      REQUIRE(from >= 0);
      REQUIRE(from < static_cast<int64_t>(n));
      const double w = layout.band_weight[band.begin + i];
      by_target[static_cast<size_t>(from) + static_cast<size_t>(to) * n] += w;
      by_source[static_cast<size_t>(from) + static_cast<size_t>(to) * n] += w;
    }
  for (uint32_t q = 0; q < n; ++q) {
    for (uint32_t i = layout.in_begin[q]; i < layout.in_begin[q + 1]; ++i)
      by_target[layout.in_source[i] + size_t{q} * n] += layout.in_weight[i];
    for (uint32_t i = layout.out_begin[q]; i < layout.out_begin[q + 1]; ++i)
      by_source[q + size_t{layout.out_target[i]} * n] += layout.out_weight[i];
  }
  CHECK(by_target == by_source);
  return by_target;
}

// CTC and HMM numerators of `labels` over `classes` columns, as wfsa.
std::vector<wfsa> topology_graphs(const std::vector<uint32_t>& labels) {
  hmm_options hmm;
  hmm.silence_index = 0;
  return {to_wfsa(test::unwrap(ctc_topology{0}.build("seg", labels))),
          to_wfsa(test::unwrap(test::unwrap(hmm_topology::make(hmm)).build("seg", labels)))};
}

} // namespace

TEST_CASE("the layout keeps every path: split states, offsets, dense and sparse") {
  std::mt19937 rng{71};
  for (int round = 0; round < 30; ++round) {
    const auto graph = random_wfsa(2 + round % 6, 4 + round % 20, 4, rng);
    REQUIRE(check(graph).empty());
    const auto dense = lay_out(graph, frame_graph_storage::dense);
    const auto sparse = lay_out(graph, frame_graph_storage::sparse);
    CHECK(dense.is_dense);
    CHECK_FALSE(sparse.is_dense);
    CHECK(dense.num_states == sparse.num_states);
    CHECK(dense.num_transitions == sparse.num_transitions);
    // Every frame state's incoming transitions come from edges emitting its
    // column (checked through the sparse rows against the edges).
    for (uint32_t q = 0; q < sparse.num_states; ++q)
      for (uint32_t i = sparse.in_begin[q]; i < sparse.in_begin[q + 1]; ++i) {
        bool found = false;
        for (const auto& edge : graph.edges)
          found = found || (edge.from == sparse.original[sparse.in_source[i]] &&
                            edge.to == sparse.original[q] && edge.emission == sparse.emission[q] &&
                            std::isfinite(edge.weight));
        CHECK(found);
      }
    // Both storages hold the same transitions, each once.
    CHECK(transitions_of(dense) == transitions_of(sparse));
  }
}

TEST_CASE("the loops and steps of CTC and HMM topologies become bands") {
  std::mt19937 rng{76};
  const auto labels = test::random_labels(40, 30, 0, rng);
  for (const auto& graph : topology_graphs(labels)) {
    const auto sparse = lay_out(graph, frame_graph_storage::sparse);
    const auto dense = lay_out(graph, frame_graph_storage::dense);
    // Frame states follow the graph's states.
    CHECK(std::is_sorted(sparse.original.begin(), sparse.original.end()));
    // Loops and steps are bands; few transitions are left to the rows.
    CHECK(sparse.bands.size() >= 2);
    CHECK(sparse.in_source.size() * 4 < sparse.num_transitions);
    CHECK(transitions_of(sparse) == transitions_of(dense));
    // The states grouped by column: each once, under the column it emits.
    std::vector<int> seen(sparse.num_states, 0);
    for (size_t i = 0; i < sparse.columns.size(); ++i)
      for (uint32_t j = sparse.column_begin[i]; j < sparse.column_begin[i + 1]; ++j) {
        CHECK(sparse.emission[sparse.column_states[j]] == sparse.columns[i]);
        ++seen[sparse.column_states[j]];
      }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}

TEST_CASE("a builder lays out graph after graph as a fresh one does, without allocating") {
  std::mt19937 rng{77};
  const auto big = topology_graphs(test::random_labels(30, 20, 0, rng));
  const auto small = topology_graphs(test::random_labels(3, 20, 0, rng));
  const auto bigram = bigram_like(12, 6, rng);
  frame_graph_builder builder;
  frame_graph reused;
  const auto same = [](const frame_graph& a, const frame_graph& b) {
    CHECK(a.num_states == b.num_states);
    CHECK(a.emission == b.emission);
    CHECK(a.original == b.original);
    CHECK(a.initial == b.initial);
    CHECK(a.final == b.final);
    CHECK(a.is_dense == b.is_dense);
    CHECK(a.edge_offset == b.edge_offset);
    CHECK(a.columns == b.columns);
    CHECK(a.column_states == b.column_states);
    CHECK(transitions_of(a) == transitions_of(b));
  };
  for (const wfsa* graph : {&big[0], &small[1], &bigram, &big[1], &small[0]}) {
    builder.lay_out(*graph, frame_graph_storage::automatic, reused);
    same(reused, lay_out(*graph));
  }
  // Warm: the largest graphs have been laid out before.
  const size_t before = test::allocation_count();
  builder.lay_out(small[0], frame_graph_storage::automatic, reused);
  builder.lay_out(big[0], frame_graph_storage::automatic, reused);
  builder.lay_out(bigram, frame_graph_storage::automatic, reused);
  CHECK(test::allocation_count() == before);
}

TEST_CASE("banded graphs, in blocks of one and of several, equal the log-space engine") {
  std::mt19937 rng{78};
  for (int round = 0; round < 6; ++round) {
    const auto labels = test::random_labels(5 + 7 * round, 9, 0, rng);
    for (const auto& graph : topology_graphs(labels)) {
      INFO("round " << round);
      const Eigen::Index frames = 2 * static_cast<Eigen::Index>(labels.size()) + 3;
      CHECK(compare_block(graph, frame_graph_storage::sparse, {frames}, 9, 1.5, 1.0, false, rng,
                          1e-12) == 1);
      CHECK(compare_block(graph, frame_graph_storage::sparse, {frames + 40, frames, frames + 7}, 9,
                          1.5, 1.0, round % 2 == 1, rng, 1e-10) == 3);
    }
  }
}

TEST_CASE("scaled log Z and occupancies equal the log-space engine on random graphs") {
  std::mt19937 rng{72};
  size_t exact = 0, total = 0;
  for (int round = 0; round < 60; ++round) {
    const auto graph = random_wfsa(2 + round % 7, 6 + round % 25, 5, rng);
    const auto storage = round % 2 ? frame_graph_storage::dense : frame_graph_storage::sparse;
    const std::vector<Eigen::Index> lengths = {1 + round % 4, 7, 3, 1, 12};
    INFO("round " << round);
    exact += compare_block(graph, storage, lengths, 5, 1.5, 1.0, false, rng, 1e-12);
    total += lengths.size();
  }
  // Pathless sequences are handed back; most random ones have paths.
  CHECK(exact > total / 2);
}

TEST_CASE("the scaled expected accuracy and its gradient equal the log-space engine") {
  std::mt19937 rng{73};
  size_t exact = 0;
  for (int round = 0; round < 40; ++round) {
    const auto graph = random_wfsa(2 + round % 6, 8 + round % 20, 4, rng);
    const auto storage = round % 2 ? frame_graph_storage::dense : frame_graph_storage::sparse;
    INFO("round " << round);
    exact += compare_block(graph, storage, {5, 9, 2}, 4, 1.0, 1.0, true, rng, 1e-10);
  }
  CHECK(exact > 40);
}

TEST_CASE("long segments, peaked posteriors and extreme acoustic scales stay exact") {
  std::mt19937 rng{74};
  const auto graph = bigram_like(24, 12, rng);
  for (const auto storage : {frame_graph_storage::dense, frame_graph_storage::sparse}) {
    // T = 3000; logits of N(0, 8) (peaked); am-scale 0.1, 1 and 10.
    for (const double scale : {0.1, 1.0, 10.0}) {
      INFO("am-scale " << scale);
      const size_t exact =
          compare_block(graph, storage, {3000, 2500, 17}, 12, 8.0, scale, false, rng, 1e-9);
      CHECK(exact == 3);
    }
    CHECK(compare_block(graph, storage, {3000, 40}, 12, 8.0, 1.0, true, rng, 1e-8) == 2);
  }
}

TEST_CASE("what the scaled recursions cannot represent is handed back, not guessed") {
  std::mt19937 rng{75};
  const auto graph = bigram_like(6, 6, rng);
  const auto layout = lay_out(graph);
  row_matrix_d scores = random_scores(20, 6, 1.0, 1.0, rng);
  // A log-probability of -1e4 beside 0 at a column the graph emits.
  scores(7, 2) = -1e4;
  row_matrix_d gradient = row_matrix_d::Zero(20, 6);
  const auto sequence = scaled_sequence::of(scores, &gradient);
  scaled_outcome outcome;
  scaled_forward_backward engine;
  engine.run(layout, {&sequence, 1}, true, 1.0, {&outcome, 1});
  CHECK_FALSE(outcome.exact);
  CHECK(outcome.frame == 8);
  CHECK(std::string{outcome.why} == "a frame's scores span more than double's range");

  // A frame whose every score is -inf: no path, handed back.
  scores = random_scores(20, 6, 1.0, 1.0, rng);
  scores.row(4).setConstant(-inf);
  gradient.setZero();
  // A new matrix: the sequence points at its data.
  const auto again = scaled_sequence::of(scores, &gradient);
  engine.run(layout, {&again, 1}, true, 1.0, {&outcome, 1});
  CHECK_FALSE(outcome.exact);

  // A cost 1000 above the others underflows: the layout says so.
  wfsa costly = graph;
  costly.edges[3].weight = 1000;
  CHECK_FALSE(lay_out(costly).unrepresentable.empty());
}

TEST_CASE("a path lost to underflow in one pass is handed back") {
  // Two branches from the start: A (state 1) is 749 nats worse at frame 1
  // (699 from its score, 50 from its edge), flushed from the forward vector;
  // then B (state 2) loses 30 nats per frame for 30 frames, so that A's
  // paths end up the most probable, which the backward pass sees (and B's
  // it flushes). No score spans more than 700 within a frame.
  wfsa graph;
  graph.add_state(0, wfsa::none);
  graph.add_state(wfsa::none, 0);
  graph.add_state(wfsa::none, 0);
  graph.edges = {{0, 1, 0, 50}, {0, 2, 1, 0}, {1, 1, 0, 0}, {2, 2, 1, 0}};
  const Eigen::Index frames = 31;
  row_matrix_d scores(frames, 2);
  scores.row(0) << -699, 0;
  for (Eigen::Index t = 1; t < frames; ++t)
    scores.row(t) << 0, -30;
  const auto layout = lay_out(graph);
  REQUIRE(layout.unrepresentable.empty());
  row_matrix_d gradient = row_matrix_d::Zero(frames, 2);
  const auto sequence = scaled_sequence::of(scores, &gradient);
  scaled_outcome outcome;
  scaled_forward_backward engine;
  engine.run(layout, {&sequence, 1}, true, 1.0, {&outcome, 1});
  CHECK_FALSE(outcome.exact);
  // The passes put their mass on different branches: the overlap check
  // sees it at the frame the occupancy check would.
  CHECK(std::string{outcome.why} == "the forward and backward passes barely overlap");
  // The log-space engine has A's paths.
  CHECK(log_space(graph, scores).log_z == Approx(-749.0).epsilon(1e-12));
}

TEST_CASE("a path lost to underflow in both passes is handed back") {
  // Two branches to the end and a dead end: scores 700 apart make the
  // forward pass lose branch A (state 1) where the dead end (state 4) leads
  // and the backward pass lose it where branch B (state 2) leads. Both lose
  // the same paths, so the frames' occupancy sums agree with Z; only the
  // overlap of the two passes' vectors shows the loss.
  wfsa graph;
  graph.add_state(0, wfsa::none);
  for (int q = 1; q < 4; ++q)
    graph.add_state(wfsa::none, q == 3 ? 0 : wfsa::none);
  graph.add_state(wfsa::none, wfsa::none);
  graph.edges = {{0, 1, 0, 0}, {1, 1, 0, 0}, {1, 3, 0, 0}, {0, 2, 1, 0},
                 {2, 2, 1, 0}, {2, 3, 1, 0}, {0, 4, 2, 0}, {4, 4, 2, 0}};
  const Eigen::Index frames = 6;
  row_matrix_d scores(frames, 3);
  scores << -50, 0, -700, -700, -700, 0, 0, -700, -700, 0, -700, -700, -700, -700, 0, -50, 0, -700;
  const auto layout = lay_out(graph);
  REQUIRE(layout.unrepresentable.empty());
  row_matrix_d gradient = row_matrix_d::Zero(frames, 3);
  const auto sequence = scaled_sequence::of(scores, &gradient);
  scaled_outcome outcome;
  scaled_forward_backward engine;
  engine.run(layout, {&sequence, 1}, true, 1.0, {&outcome, 1});
  CHECK_FALSE(outcome.exact);
  CHECK(std::string{outcome.why} == "the forward and backward passes barely overlap");
}
