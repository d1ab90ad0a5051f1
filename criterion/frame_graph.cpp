#include "criterion/frame_graph.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>
#include <unordered_map>

namespace sprintrt::criterion {

// Why frame states
// ================
//
// In probability space a frame's forward step is
//   alpha_t(q) = sum over edges e into q of alpha_{t-1}(from(e)) w(e) p_t(emission(e)),
// which is a matrix product only when the emission factor can leave the sum:
// when every edge into q emits the same column. Splitting q by the columns
// of its incoming edges makes it so, and the frame states of q each inherit
// all of q's outgoing edges, so every path of the wfsa is one path of the
// layout and back. A label n-gram composed with CTC or HMM topologies is
// mostly of this form already (a state is entered by its label); a lattice's
// arcs may need a split per label.
//
// Scaling. Costs become probabilities relative to the most probable edge
// (and initial, final state): w(e) = exp(-weight(e) - edge_offset) <= 1,
// with edge_offset = max(-weight). A path of T edges then loses exactly
// T * edge_offset, which log Z adds back. A cost whose probability relative
// to the best would fall below `min_log_ratio` (near double's smallest
// normal number) makes the graph unrepresentable: the callers take the
// log-space recursions, which keep every path.

namespace {

constexpr double min_log_ratio = -700;

std::string describe(const char* what, size_t index, double cost, double offset) {
  char text[160];
  std::snprintf(text, sizeof(text), "%s %zu costs %g, %g above the least costly", what, index, cost,
                cost + offset);
  return text;
}

// max(-cost) over the finite costs, 0 if none.
template <class Costs>
double offset_of(const Costs& costs) {
  double top = -std::numeric_limits<double>::infinity();
  for (const double cost : costs)
    if (std::isfinite(cost))
      top = std::max(top, -cost);
  return std::isfinite(top) ? top : 0;
}

} // namespace

frame_graph lay_out(const wfsa& graph, frame_graph_storage storage) {
  assert(check(graph).empty());
  frame_graph out;
  const uint32_t num_states = graph.num_states();
  // Frame states, in the order their (state, column) is first met.
  std::unordered_map<uint64_t, uint32_t> frame_state;
  std::vector<std::vector<uint32_t>> of_state(num_states);
  const auto add_state = [&](uint32_t state, uint32_t column) {
    const uint64_t key = (uint64_t{state} << 32) | column;
    const auto [it, inserted] = frame_state.try_emplace(key, out.num_states);
    if (inserted) {
      ++out.num_states;
      out.original.push_back(state);
      out.emission.push_back(column);
      of_state[state].push_back(it->second);
    }
    return it->second;
  };
  std::vector<uint32_t> target(graph.edges.size());
  for (size_t e = 0; e < graph.edges.size(); ++e)
    if (std::isfinite(graph.edges[e].weight))
      target[e] = add_state(graph.edges[e].to, graph.edges[e].emission);
  for (uint32_t q = 0; q < num_states; ++q)
    if (graph.initial[q] != wfsa::none && of_state[q].empty())
      add_state(q, 0);

  std::vector<double> edge_costs;
  for (const auto& edge : graph.edges)
    edge_costs.push_back(edge.weight);
  out.edge_offset = offset_of(edge_costs);
  out.initial_offset = offset_of(graph.initial);
  out.final_offset = offset_of(graph.final);
  const auto probability = [&](double cost, double offset, const char* what, size_t index) {
    if (!std::isfinite(cost))
      return 0.0;
    const double log_ratio = -cost - offset;
    if (log_ratio < min_log_ratio && out.unrepresentable.empty())
      out.unrepresentable = describe(what, index, cost, offset);
    return std::exp(log_ratio);
  };

  // The initial mass of a state goes to its first frame state only: all of
  // its frame states have the same outgoing transitions.
  out.initial = Eigen::VectorXd::Zero(out.num_states);
  out.final = Eigen::VectorXd::Zero(out.num_states);
  for (uint32_t q = 0; q < num_states; ++q)
    if (!of_state[q].empty())
      out.initial[of_state[q].front()] =
          probability(graph.initial[q], out.initial_offset, "initial state", q);
  for (uint32_t s = 0; s < out.num_states; ++s)
    out.final[s] =
        probability(graph.final[out.original[s]], out.final_offset, "final state", out.original[s]);

  // Transitions (source frame state, target frame state, probability),
  // merged where several edges connect the same pair.
  std::vector<std::tuple<uint32_t, uint32_t, double>> transitions;
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const auto& edge = graph.edges[e];
    if (!std::isfinite(edge.weight))
      continue;
    const double w = probability(edge.weight, out.edge_offset, "edge", e);
    for (const uint32_t source : of_state[edge.from])
      transitions.emplace_back(source, target[e], w);
  }
  std::sort(transitions.begin(), transitions.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<1>(x), std::get<0>(x)) < std::tie(std::get<1>(y), std::get<0>(y));
  });
  size_t merged = 0;
  for (size_t i = 0; i < transitions.size(); ++i) {
    if (merged > 0 && std::get<0>(transitions[merged - 1]) == std::get<0>(transitions[i]) &&
        std::get<1>(transitions[merged - 1]) == std::get<1>(transitions[i]))
      std::get<2>(transitions[merged - 1]) += std::get<2>(transitions[i]);
    else
      transitions[merged++] = transitions[i];
  }
  transitions.resize(merged);
  out.num_transitions = merged;

  const double states = out.num_states;
  out.is_dense = storage == frame_graph_storage::dense ||
                 (storage == frame_graph_storage::automatic && out.num_states <= 2048 &&
                  8.0 * static_cast<double>(merged) >= states * states);
  if (out.is_dense) {
    out.dense = Eigen::MatrixXd::Zero(out.num_states, out.num_states);
    for (const auto& [from, to, w] : transitions)
      out.dense(from, to) = w;
    return out;
  }
  // By target: `transitions` is sorted so.
  out.in_begin.assign(out.num_states + 1, 0);
  out.out_begin.assign(out.num_states + 1, 0);
  for (const auto& [from, to, w] : transitions) {
    ++out.in_begin[to + 1];
    ++out.out_begin[from + 1];
    out.in_source.push_back(from);
    out.in_weight.push_back(w);
  }
  for (uint32_t s = 0; s < out.num_states; ++s) {
    out.in_begin[s + 1] += out.in_begin[s];
    out.out_begin[s + 1] += out.out_begin[s];
  }
  out.out_target.resize(merged);
  out.out_weight.resize(merged);
  std::vector<uint32_t> next(out.out_begin.begin(), out.out_begin.end() - 1);
  for (const auto& [from, to, w] : transitions) {
    const uint32_t i = next[from]++;
    out.out_target[i] = to;
    out.out_weight[i] = w;
  }
  return out;
}

} // namespace sprintrt::criterion
