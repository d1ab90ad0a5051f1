#pragma once

/// @file
/// An FSA's edges laid out along diagonals of its transition matrix, the
/// layout in which the scaled full-sum vectorizes over states.
///
/// Two observations make the layout. First, in CTC and HMM FSAs every edge
/// into a state emits the same class (the state's label or the blank), so the
/// posterior factor of a frame depends on the target state only and can be
/// applied once per state instead of once per edge; such states are "pure".
/// Second, the edges with the same offset `to - from` (a diagonal: CTC's
/// loops, its steps to the next state and its skips; an HMM's loops and
/// forward steps) are nearly dense, so they become arrays indexed by state,
/// and a frame's step over a diagonal ("band") is one straight loop over
/// contiguous states with frame-independent weights. The rest are short
/// lists: edges into pure states off the bands (sparse diagonals, the second
/// of parallel edges), and edges into "mixed" states, whose incoming edges
/// emit different classes (a CTC or HMM FSA's final state, any state of a
/// random FSA), which carry their own emission.

#include <cstdint>
#include <vector>

#include "criterion/fsa.hpp"

namespace sprintrt::criterion {

/// The edges of one FSA as dense diagonals into pure states plus two lists.
/// Reusable: `assign` keeps the buffers, so a warmed-up instance does not
/// allocate. Not thread-safe (one per `full_sum_engine`).
class fsa_bands {
public:
  /// One dense diagonal: the edges from `s - offset` to `s` for the target
  /// states s in [`first`, `first + length`), in slots `start` to
  /// `start + length`. A slot without an edge has score -inf.
  struct band {
    /// to - from of every edge of the band.
    int64_t offset = 0;
    /// The first target state.
    uint32_t first = 0;
    /// The number of target states (slots).
    uint32_t length = 0;
    /// The band's first slot.
    uint32_t start = 0;
  };

  /// An edge off the bands.
  struct edge {
    /// Source state.
    uint32_t from = 0;
    /// Target state.
    uint32_t to = 0;
    /// The emission index (for edges into pure states, the target's class).
    uint32_t emission = 0;
    /// Where `score()` holds its log-score.
    uint32_t slot = 0;
  };

  /// Lays out the edges of `automaton`, reusing the buffers.
  void assign(const fsa& automaton);

  /// Returns the number of states of the assigned FSA.
  uint32_t num_states() const noexcept { return num_states_; }

  /// Returns the final state of the assigned FSA.
  uint32_t final_state() const noexcept { return num_states_ - 1; }

  /// Returns the dense diagonals (into pure states), by increasing offset.
  const std::vector<band>& bands() const noexcept { return bands_; }

  /// Returns the edges into pure states that are not on a band.
  const std::vector<edge>& pure_edges() const noexcept { return pure_edges_; }

  /// Returns the edges into mixed states.
  const std::vector<edge>& mixed_edges() const noexcept { return mixed_edges_; }

  /// Returns the log-score (-weight) of every slot: the bands' slots, then
  /// those of `pure_edges()` and `mixed_edges()`; -inf for a slot without an
  /// edge.
  const std::vector<double>& score() const noexcept { return score_; }

  /// Returns the largest number of edges into one state.
  uint32_t max_in_degree() const noexcept { return max_in_; }

  /// Returns the largest number of edges out of one state.
  uint32_t max_out_degree() const noexcept { return max_out_; }

  /// Checks the emissions against `num_classes` columns of posteriors (all
  /// must be less) and groups the pure states by their class for
  /// `state_class`, `class_offsets` and `class_states`.
  void group_emissions(uint32_t num_classes);

  /// Returns each state's class after `group_emissions`: the emission of all
  /// edges into a pure state, `num_classes` (one past the last column) for a
  /// mixed state or one without incoming edges.
  const std::vector<uint32_t>& state_class() const noexcept { return state_class_; }

  /// Returns, per class k < num_classes, where its pure states are in
  /// `class_states()`: positions `class_offsets()[k]` to
  /// `class_offsets()[k + 1]`. Valid after `group_emissions`.
  const std::vector<uint32_t>& class_offsets() const noexcept { return class_offsets_; }

  /// Returns the pure states, grouped by class.
  const std::vector<uint32_t>& class_states() const noexcept { return class_states_; }

private:
  uint32_t num_states_ = 1;
  uint32_t max_in_ = 0;
  uint32_t max_out_ = 0;
  std::vector<band> bands_;
  std::vector<edge> pure_edges_;
  std::vector<edge> mixed_edges_;
  std::vector<double> score_;
  /// Per state: the emission of its incoming edges, or `mixed`.
  std::vector<uint32_t> state_emission_;
  std::vector<uint32_t> state_class_;
  std::vector<uint32_t> class_offsets_;
  std::vector<uint32_t> class_states_;
  // Work arrays of `assign`: edges per diagonal (offset + S - 1), the band of
  // each diagonal (or none), edges into and out of each state, whether a band
  // slot holds an edge.
  std::vector<uint32_t> diagonal_count_;
  std::vector<uint32_t> diagonal_band_;
  std::vector<uint32_t> in_degree_;
  std::vector<uint32_t> out_degree_;
  std::vector<char> slot_taken_;
};

} // namespace sprintrt::criterion
