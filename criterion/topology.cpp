#include "criterion/topology.hpp"

#include <algorithm>

namespace sprintrt::criterion {

topology::~topology() = default;

void add_final_state(std::vector<fsa_edge>& edges, std::initializer_list<uint32_t> end_states,
                     uint32_t final_state) {
  // Index-based: push_back may reallocate, and the copies must not be copied again.
  const size_t num_original = edges.size();
  for (size_t e = 0; e < num_original; ++e) {
    if (std::find(end_states.begin(), end_states.end(), edges[e].to) != end_states.end()) {
      fsa_edge copy = edges[e];
      copy.to = final_state;
      edges.push_back(copy);
    }
  }
}

} // namespace sprintrt::criterion
