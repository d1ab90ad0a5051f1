#include "sim/wfsa.hpp"

#include <cmath>

namespace sprintrt::sim {

namespace {

bool valid_cost(double cost) {
  return !std::isnan(cost) && cost != -std::numeric_limits<double>::infinity();
}

} // namespace

uint32_t wfsa::add_state(double initial_cost, double final_cost) {
  initial.push_back(initial_cost);
  final.push_back(final_cost);
  return static_cast<uint32_t>(initial.size() - 1);
}

std::string check(const wfsa& graph) {
  if (graph.initial.size() != graph.final.size())
    return "the graph has " + std::to_string(graph.initial.size()) + " initial and " +
           std::to_string(graph.final.size()) + " final costs (one of each per state)";
  const auto num_states = graph.num_states();
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const auto& edge = graph.edges[e];
    if (edge.from >= num_states || edge.to >= num_states)
      return "edge " + std::to_string(e) + " goes from state " + std::to_string(edge.from) +
             " to state " + std::to_string(edge.to) + ", but the graph has only " +
             std::to_string(num_states) + " states";
    if (!valid_cost(edge.weight))
      return "edge " + std::to_string(e) + " has weight " + std::to_string(edge.weight) +
             " (costs must not be NaN or -inf)";
  }
  for (uint32_t q = 0; q < num_states; ++q)
    if (!valid_cost(graph.initial[q]) || !valid_cost(graph.final[q]))
      return "state " + std::to_string(q) + " has initial cost " +
             std::to_string(graph.initial[q]) + " and final cost " +
             std::to_string(graph.final[q]) + " (costs must not be NaN or -inf)";
  return {};
}

wfsa to_wfsa(const fsa& automaton, double start_cost) {
  wfsa graph;
  graph.initial.assign(automaton.num_states(), wfsa::none);
  graph.final.assign(automaton.num_states(), wfsa::none);
  graph.initial[fsa::start_state] = start_cost;
  graph.final[automaton.final_state()] = 0;
  graph.edges.reserve(automaton.num_edges());
  for (uint32_t e = 0; e < automaton.num_edges(); ++e) {
    const auto edge = automaton.edge(e);
    graph.edges.push_back({edge.from, edge.to, edge.emission, static_cast<double>(edge.weight)});
  }
  return graph;
}

} // namespace sprintrt::sim
