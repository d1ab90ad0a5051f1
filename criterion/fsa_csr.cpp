#include "criterion/fsa_csr.hpp"

#include <algorithm>
#include <cassert>

namespace sprintrt::criterion {

namespace {

// A stable counting sort of the positions 0..keys.size()-1 by `keys`:
// `offsets` gets num_keys + 1 group boundaries, `order` the positions grouped
// by key, in increasing position within a group (which makes ties in Viterbi
// deterministic). Linear in the size of the FSA; reuses the vectors' capacity.
void counting_sort(span<const uint32_t> keys, size_t num_keys, std::vector<uint32_t>& offsets,
                   std::vector<uint32_t>& order) {
  offsets.assign(num_keys + 1, 0);
  for (const uint32_t key : keys)
    ++offsets[key + 1];
  for (size_t k = 0; k < num_keys; ++k)
    offsets[k + 1] += offsets[k];
  order.resize(keys.size());
  // offsets[k] runs through group k's positions, ending at the start of group
  // k + 1; the shift below restores it.
  for (uint32_t i = 0; i < keys.size(); ++i)
    order[offsets[keys[i]]++] = i;
  for (size_t k = num_keys; k > 0; --k)
    offsets[k] = offsets[k - 1];
  offsets[0] = 0;
}

// Groups the edges of `automaton` by `key` (targets or sources).
void group(const fsa& automaton, span<const uint32_t> key, span<const uint32_t> other,
           fsa_csr::grouping& out) {
  counting_sort(key, automaton.num_states(), out.offsets, out.edge);
  const size_t num_edges = out.edge.size();
  out.other.resize(num_edges);
  out.emission.resize(num_edges);
  out.score.resize(num_edges);
  for (size_t pos = 0; pos < num_edges; ++pos) {
    const uint32_t e = out.edge[pos];
    out.other[pos] = other[e];
    out.emission[pos] = automaton.emissions()[e];
    out.score[pos] = -static_cast<double>(automaton.weights()[e]);
  }
}

} // namespace

void fsa_csr::assign(const fsa& automaton) {
  num_states_ = automaton.num_states();
  num_edges_ = automaton.num_edges();
  group(automaton, automaton.targets(), automaton.sources(), incoming_);
  group(automaton, automaton.sources(), automaton.targets(), outgoing_);
}

void fsa_csr::group_emissions(uint32_t num_classes) {
  assert(std::all_of(outgoing_.emission.begin(), outgoing_.emission.end(),
                     [num_classes](uint32_t k) { return k < num_classes; }));
  counting_sort(outgoing_.emission, num_classes, emission_offsets_, emission_edges_);
}

} // namespace sprintrt::criterion
