#include "criterion/viterbi.hpp"

#include <limits>

#include "criterion/input_checks.hpp"

namespace sprintrt::criterion {

caf::expected<viterbi_alignment> viterbi_aligner::align(std::string_view segment,
                                                        const fsa& automaton,
                                                        const log_posteriors_ref& log_posteriors) {
  if (auto err = check_segment_inputs(segment, automaton, log_posteriors))
    return err;
  to_wfsa(automaton, 0, graph_);
  scores_ = log_posteriors.cast<double>();
  viterbi_alignment result;
  const double best = engine_.best_edges(graph_, scores_, result.edges);
  if (best == -std::numeric_limits<double>::infinity()) {
    result.cost = std::numeric_limits<double>::infinity();
    result.skipped = true;
    return result;
  }
  result.cost = -best;
  result.emissions.reserve(result.edges.size());
  result.states.reserve(result.edges.size());
  for (const uint32_t e : result.edges) {
    result.emissions.push_back(graph_.edges[e].emission);
    result.states.push_back(graph_.edges[e].to);
  }
  return result;
}

} // namespace sprintrt::criterion
