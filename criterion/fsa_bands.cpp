#include "criterion/fsa_bands.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

namespace sprintrt::criterion {

namespace {

constexpr uint32_t none = std::numeric_limits<uint32_t>::max();
/// A state's emission marker when its incoming edges emit different classes.
constexpr uint32_t mixed = none - 1;

// A diagonal becomes a dense band when at least a quarter of its slots hold
// edges (and at least two): a band costs one multiply-add per slot and frame
// in straight vector code, an edge off the bands a few scattered loads and
// stores.
bool is_dense(uint32_t count, uint32_t length) {
  return count >= 2 && 4 * static_cast<uint64_t>(count) >= length;
}

} // namespace

void fsa_bands::assign(const fsa& automaton) {
  num_states_ = automaton.num_states();
  const uint32_t num_states = num_states_;
  const auto sources = automaton.sources();
  const auto targets = automaton.targets();
  const auto emissions = automaton.emissions();
  const auto weights = automaton.weights();
  const size_t num_edges = weights.size();
  in_degree_.assign(num_states, 0);
  out_degree_.assign(num_states, 0);
  state_emission_.assign(num_states, none);
  for (size_t e = 0; e < num_edges; ++e) {
    ++in_degree_[targets[e]];
    ++out_degree_[sources[e]];
    uint32_t& emission = state_emission_[targets[e]];
    emission = emission == none || emission == emissions[e] ? emissions[e] : mixed;
  }
  max_in_ = *std::max_element(in_degree_.begin(), in_degree_.end());
  max_out_ = *std::max_element(out_degree_.begin(), out_degree_.end());
  // Diagonals of the edges into pure states.
  const size_t num_diagonals = 2 * static_cast<size_t>(num_states) - 1;
  const auto diagonal = [&](size_t e) {
    return static_cast<size_t>(int64_t{targets[e]} - int64_t{sources[e]} + num_states - 1);
  };
  diagonal_count_.assign(num_diagonals, 0);
  for (size_t e = 0; e < num_edges; ++e)
    if (state_emission_[targets[e]] != mixed)
      ++diagonal_count_[diagonal(e)];
  bands_.clear();
  diagonal_band_.assign(num_diagonals, none);
  uint32_t slots = 0;
  for (size_t i = 0; i < num_diagonals; ++i) {
    const int64_t offset = static_cast<int64_t>(i) - (num_states - 1);
    const auto length = static_cast<uint32_t>(num_states - (offset < 0 ? -offset : offset));
    if (!is_dense(diagonal_count_[i], length))
      continue;
    diagonal_band_[i] = static_cast<uint32_t>(bands_.size());
    bands_.push_back({offset, static_cast<uint32_t>(std::max<int64_t>(offset, 0)), length, slots});
    slots += length;
  }
  score_.assign(slots, -std::numeric_limits<double>::infinity());
  slot_taken_.assign(slots, 0);
  pure_edges_.clear();
  mixed_edges_.clear();
  for (size_t e = 0; e < num_edges; ++e) {
    const double score = -static_cast<double>(weights[e]);
    const edge off_band{sources[e], targets[e], emissions[e], static_cast<uint32_t>(score_.size())};
    if (state_emission_[targets[e]] == mixed) {
      mixed_edges_.push_back(off_band);
      score_.push_back(score);
      continue;
    }
    const uint32_t b = diagonal_band_[diagonal(e)];
    if (b != none) {
      const uint32_t slot = bands_[b].start + (targets[e] - bands_[b].first);
      // The second of parallel edges goes to the list.
      if (slot_taken_[slot] == 0) {
        score_[slot] = score;
        slot_taken_[slot] = 1;
        continue;
      }
    }
    pure_edges_.push_back(off_band);
    score_.push_back(score);
  }
}

void fsa_bands::group_emissions(uint32_t num_classes) {
  const uint32_t num_states = num_states_;
  state_class_.resize(num_states);
  class_offsets_.assign(num_classes + 1, 0);
  for (uint32_t s = 0; s < num_states; ++s) {
    const uint32_t emission = state_emission_[s];
    const bool pure = emission != none && emission != mixed;
    assert(!pure || emission < num_classes);
    state_class_[s] = pure ? emission : num_classes;
    if (pure)
      ++class_offsets_[emission + 1];
  }
  assert(std::all_of(mixed_edges_.begin(), mixed_edges_.end(),
                     [num_classes](const edge& e) { return e.emission < num_classes; }));
  for (uint32_t k = 0; k < num_classes; ++k)
    class_offsets_[k + 1] += class_offsets_[k];
  class_states_.resize(class_offsets_[num_classes]);
  // class_offsets_[k] runs through class k's positions; the shift restores it.
  for (uint32_t s = 0; s < num_states; ++s)
    if (state_class_[s] < num_classes)
      class_states_[class_offsets_[state_class_[s]]++] = s;
  for (uint32_t k = num_classes; k > 0; --k)
    class_offsets_[k] = class_offsets_[k - 1];
  class_offsets_[0] = 0;
}

} // namespace sprintrt::criterion
