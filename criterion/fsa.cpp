#include "criterion/fsa.hpp"

#include <cmath>
#include <limits>
#include <sstream>

namespace sprintrt::criterion {

namespace {

// One check for both constructors, on the flat layout they share: an FSA that
// passes it can be walked by the recursions without bounds checks on states.
caf::error validate(uint32_t num_states, span<const uint32_t> flat, span<const float> weights) {
  if (num_states == 0)
    return make_error(errc::invalid_input, "FSA has 0 states (needs at least the start state)");
  const size_t num_edges = weights.size();
  for (size_t e = 0; e < num_edges; ++e) {
    const uint32_t from = flat[e];
    const uint32_t to = flat[num_edges + e];
    if (from >= num_states || to >= num_states)
      return make_error(errc::invalid_input, "FSA edge " + std::to_string(e) + " goes from state " +
                                                 std::to_string(from) + " to state " +
                                                 std::to_string(to) + ", but the FSA has only " +
                                                 std::to_string(num_states) + " states");
    if (std::isnan(weights[e]) || weights[e] == -std::numeric_limits<float>::infinity())
      return make_error(errc::invalid_input, "FSA edge " + std::to_string(e) + " has weight " +
                                                 std::to_string(weights[e]) +
                                                 " (costs must not be NaN or -inf)");
  }
  return {};
}

} // namespace

fsa::fsa(uint32_t num_states, std::vector<uint32_t> flat_edges, std::vector<float> weights) noexcept
    : num_states_(num_states), flat_edges_(std::move(flat_edges)), weights_(std::move(weights)) {
  // nop
}

caf::expected<fsa> fsa::make(uint32_t num_states, span<const fsa_edge> edges) {
  if (edges.size() > std::numeric_limits<uint32_t>::max())
    return make_error(errc::invalid_input, "FSA has more than 2^32-1 edges");
  const size_t num_edges = edges.size();
  std::vector<uint32_t> flat(3 * num_edges);
  std::vector<float> weights(num_edges);
  for (size_t e = 0; e < num_edges; ++e) {
    flat[e] = edges[e].from;
    flat[num_edges + e] = edges[e].to;
    flat[2 * num_edges + e] = edges[e].emission;
    weights[e] = edges[e].weight;
  }
  if (auto err = validate(num_states, flat, weights))
    return err;
  return fsa{num_states, std::move(flat), std::move(weights)};
}

caf::expected<fsa> fsa::from_flat(uint32_t num_states, span<const uint32_t> flat_edges,
                                  span<const float> weights) {
  if (flat_edges.size() != 3 * weights.size())
    return make_error(errc::invalid_input,
                      "FSA has " + std::to_string(flat_edges.size()) + " edge values for " +
                          std::to_string(weights.size()) + " weights (expected 3 per edge)");
  if (weights.size() > std::numeric_limits<uint32_t>::max())
    return make_error(errc::invalid_input, "FSA has more than 2^32-1 edges");
  if (auto err = validate(num_states, flat_edges, weights))
    return err;
  return fsa{num_states, std::vector<uint32_t>(flat_edges.begin(), flat_edges.end()),
             std::vector<float>(weights.begin(), weights.end())};
}

fsa_edge fsa::edge(uint32_t e) const noexcept {
  return {sources()[e], targets()[e], emissions()[e], weights_[e]};
}

std::vector<fsa_edge> fsa::edges() const {
  std::vector<fsa_edge> result;
  result.reserve(num_edges());
  for (uint32_t e = 0; e < num_edges(); ++e)
    result.push_back(edge(e));
  return result;
}

std::string to_string(const fsa_edge& edge) {
  std::ostringstream out;
  out << edge.from << " -> " << edge.to << " emits " << edge.emission << " weight " << edge.weight;
  return out.str();
}

std::string to_string(const fsa& automaton) {
  std::string result = "fsa: " + std::to_string(automaton.num_states()) + " states, " +
                       std::to_string(automaton.num_edges()) + " edges";
  for (const auto& edge : automaton.edges()) {
    result += "\n  ";
    result += to_string(edge);
  }
  return result;
}

} // namespace sprintrt::criterion
