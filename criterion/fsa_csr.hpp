#pragma once

/// @file
/// An FSA's edges regrouped per state in compressed sparse row form, the layout
/// the forward and backward recursions walk: all edges into a state (or out of
/// it) are contiguous, so a frame's step is a few linear passes over arrays with
/// no lookups and no allocation.

#include <cstdint>
#include <vector>

#include "criterion/fsa.hpp"

namespace sprintrt::criterion {

/// The edges of one FSA grouped by target state (`incoming`, for forward
/// recursions) and by source state (`outgoing`, for backward ones). Reusable:
/// `assign` keeps the buffers, so a warmed-up instance does not allocate.
class fsa_csr {
public:
  /// The edges grouped by one endpoint. The edges of state s are the positions
  /// `offsets[s]` to `offsets[s + 1]` of the other arrays, in increasing
  /// original edge index.
  struct grouping {
    /// num_states + 1 positions.
    std::vector<uint32_t> offsets;
    /// The original index of each edge in the FSA.
    std::vector<uint32_t> edge;
    /// The state at the other end: the source for `incoming`, the target for
    /// `outgoing`.
    std::vector<uint32_t> other;
    /// The emission index.
    std::vector<uint32_t> emission;
    /// The edge's log-score, -weight, in double as the recursions add it.
    std::vector<double> score;
  };

  /// Regroups the edges of `automaton`, reusing the buffers.
  void assign(const fsa& automaton);

  /// Returns the number of states of the assigned FSA.
  uint32_t num_states() const noexcept { return num_states_; }

  /// Returns the number of edges of the assigned FSA.
  uint32_t num_edges() const noexcept { return num_edges_; }

  /// Returns the final state of the assigned FSA.
  uint32_t final_state() const noexcept { return num_states_ - 1; }

  /// Returns the edges grouped by target state.
  const grouping& incoming() const noexcept { return incoming_; }

  /// Returns the edges grouped by source state.
  const grouping& outgoing() const noexcept { return outgoing_; }

  /// Groups the outgoing edges by emission index for `emission_offsets` and
  /// `emission_edges`; every emission must be less than `num_classes` (the
  /// callers check the FSA against the posteriors' width first).
  void group_emissions(uint32_t num_classes);

  /// Returns, per emission index k < num_classes, where its edges are: the
  /// positions `emission_offsets()[k]` to `emission_offsets()[k + 1]` of
  /// `emission_edges()`. Valid after `group_emissions`.
  const std::vector<uint32_t>& emission_offsets() const noexcept { return emission_offsets_; }

  /// Returns the positions in `outgoing()` of the edges of each emission
  /// index, grouped as `emission_offsets()` says. Summing per emission this
  /// way keeps each class's sum in a register, where scattering per edge would
  /// chain loads and stores on the classes many edges emit (the blank).
  const std::vector<uint32_t>& emission_edges() const noexcept { return emission_edges_; }

private:
  uint32_t num_states_ = 1;
  uint32_t num_edges_ = 0;
  grouping incoming_;
  grouping outgoing_;
  std::vector<uint32_t> emission_offsets_;
  std::vector<uint32_t> emission_edges_;
};

} // namespace sprintrt::criterion
