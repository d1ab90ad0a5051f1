#include "actors/pool/automata_merge.hpp"

#include <cstdint>
#include <limits>
#include <string>

namespace sprintrt::detail {

caf::expected<batch_automata> merge_automata(const std::vector<segment_fsa>& automata) {
  size_t batch_size = automata.size();
  size_t total_edges = 0;
  uint64_t total_states = 0;
  for (size_t b = 0; b < batch_size; ++b) {
    const auto& fsa = automata[b];
    auto where = "automaton of segment " + std::to_string(b);
    if (fsa.num_states == 0)
      return make_error(errc::invalid_message, where + " has no states");
    if (fsa.edges.size() != 3 * fsa.num_edges())
      return make_error(errc::invalid_message, where + " has " + std::to_string(fsa.edges.size()) +
                                                   " edge values for " +
                                                   std::to_string(fsa.num_edges()) + " weights");
    for (size_t i = 0; i < 2 * fsa.num_edges(); ++i)
      if (fsa.edges[i] >= fsa.num_states)
        return make_error(errc::invalid_message,
                          where + ": edge " + std::to_string(i % fsa.num_edges()) +
                              " names state " + std::to_string(fsa.edges[i]) + " of " +
                              std::to_string(fsa.num_states));
    total_edges += fsa.num_edges();
    // Each count is checked before adding, so the sum cannot wrap.
    if (fsa.num_states > std::numeric_limits<uint32_t>::max() ||
        total_states > std::numeric_limits<uint32_t>::max())
      return make_error(errc::invalid_message, where + " has " + std::to_string(fsa.num_states) +
                                                   " states, more than uint32 state ids allow");
    total_states += fsa.num_states;
  }
  if (total_states > std::numeric_limits<uint32_t>::max())
    return make_error(errc::invalid_message, "the batch's automata have " +
                                                 std::to_string(total_states) +
                                                 " states, more than uint32 state ids allow");
  batch_automata merged;
  merged.edges.resize(4 * total_edges);
  merged.weights.reserve(total_edges);
  merged.start_end_states.resize(2 * batch_size);
  uint32_t offset = 0;
  size_t column = 0;
  for (size_t b = 0; b < batch_size; ++b) {
    const auto& fsa = automata[b];
    size_t e_count = fsa.num_edges();
    for (size_t e = 0; e < e_count; ++e, ++column) {
      merged.edges[column] = fsa.edges[e] + offset;                         // from
      merged.edges[total_edges + column] = fsa.edges[e_count + e] + offset; // to
      merged.edges[2 * total_edges + column] = fsa.edges[2 * e_count + e];  // emission
      merged.edges[3 * total_edges + column] = static_cast<uint32_t>(b);    // segment
    }
    merged.weights.insert(merged.weights.end(), fsa.weights.begin(), fsa.weights.end());
    auto states = static_cast<uint32_t>(fsa.num_states);
    merged.start_end_states[b] = offset;
    merged.start_end_states[batch_size + b] = offset + states - 1;
    offset += states;
  }
  return merged;
}

} // namespace sprintrt::detail
