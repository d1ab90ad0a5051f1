#pragma once

/// @file
/// A segment's automaton as a worker exports it.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sprintrt {

/// A segment's automaton in the protocol's layout (docs/protocol.md section 4).
struct segment_fsa {
  /// State 0 is the start, num_states - 1 the single final state.
  uint64_t num_states = 0;
  /// 3 * E values: all `from` states, then all `to` states, then all emission
  /// indices.
  std::vector<uint32_t> edges;
  /// E costs in -log space.
  std::vector<float> weights;

  /// Returns the number of edges.
  size_t num_edges() const noexcept { return weights.size(); }
};

/// CAF inspection (serialization, rendering) of `segment_fsa`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, segment_fsa& x) {
  return f(x.num_states, x.edges, x.weights);
}

} // namespace sprintrt
