#include "criterion/wfsa.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace sprintrt::criterion {

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

wfsa single_ended(const wfsa& graph) {
  const uint32_t num_states = graph.num_states();
  std::vector<bool> entered(num_states, false);
  std::vector<bool> left(num_states, false);
  for (const auto& edge : graph.edges) {
    entered[edge.to] = true;
    left[edge.from] = true;
  }
  // A state can serve as the start (end) as it is when it is the only
  // initial (final) state, at cost 0, with no edge into (out of) it.
  const auto only = [&](const std::vector<double>& costs,
                        const std::vector<bool>& touched) -> std::optional<uint32_t> {
    std::optional<uint32_t> found;
    for (uint32_t q = 0; q < num_states; ++q) {
      if (costs[q] == wfsa::none)
        continue;
      if (found || costs[q] != 0 || touched[q])
        return std::nullopt;
      found = q;
    }
    return found;
  };
  const auto kept_start = only(graph.initial, entered);
  const auto kept_end = only(graph.final, left);
  // New ids: the start first, the end last, the other states in order.
  std::vector<uint32_t> id(num_states);
  const uint32_t start = 0;
  uint32_t next = start + 1;
  for (uint32_t q = 0; q < num_states; ++q)
    if (q != kept_start && q != kept_end)
      id[q] = next++;
  const uint32_t end = next;
  if (kept_start)
    id[*kept_start] = start;
  if (kept_end)
    id[*kept_end] = end;
  wfsa out;
  out.initial.assign(end + 1, wfsa::none);
  out.final.assign(end + 1, wfsa::none);
  out.initial[start] = 0;
  out.final[end] = 0;
  out.edges.reserve(graph.edges.size());
  for (const auto& edge : graph.edges)
    out.edges.push_back({id[edge.from], id[edge.to], edge.emission, edge.weight});
  if (!kept_start)
    for (const auto& edge : graph.edges)
      if (graph.initial[edge.from] != wfsa::none)
        out.edges.push_back(
            {start, id[edge.to], edge.emission, edge.weight + graph.initial[edge.from]});
  if (!kept_end)
    for (const auto& edge : graph.edges)
      if (graph.final[edge.to] != wfsa::none)
        out.edges.push_back(
            {id[edge.from], end, edge.emission, edge.weight + graph.final[edge.to]});
  if (!kept_start && !kept_end)
    for (const auto& edge : graph.edges)
      if (graph.initial[edge.from] != wfsa::none && graph.final[edge.to] != wfsa::none)
        out.edges.push_back({start, end, edge.emission,
                             graph.initial[edge.from] + edge.weight + graph.final[edge.to]});
  return out;
}

uint32_t max_emission(const wfsa& graph) {
  uint32_t result = 0;
  for (const auto& edge : graph.edges)
    result = std::max(result, edge.emission);
  return result;
}

wfsa to_wfsa(const fsa& automaton, double start_cost) {
  wfsa graph;
  to_wfsa(automaton, start_cost, graph);
  return graph;
}

void to_wfsa(const fsa& automaton, double start_cost, wfsa& out) {
  out.initial.assign(automaton.num_states(), wfsa::none);
  out.final.assign(automaton.num_states(), wfsa::none);
  out.initial[fsa::start_state] = start_cost;
  out.final[automaton.final_state()] = 0;
  out.edges.clear();
  for (uint32_t e = 0; e < automaton.num_edges(); ++e) {
    const auto edge = automaton.edge(e);
    out.edges.push_back({edge.from, edge.to, edge.emission, static_cast<double>(edge.weight)});
  }
}

} // namespace sprintrt::criterion
