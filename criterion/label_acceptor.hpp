#pragma once

/// @file
/// A weighted acceptor over label sequences: the hypotheses of a denominator
/// (one chain per hypothesis) or a label n-gram. A topology expands it into a
/// `wfsa` over frames (`topology::expand`).
///
/// The one structural requirement, which every topology's expansion relies
/// on: every arc into a state carries the same label, its `last_label`
/// (the start state has none and no arc into it). A CTC state then knows
/// which label a repetition must be separated from, an HMM state which label
/// it emits.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/span.hpp"

namespace sprintrt::criterion {

/// One arc: from `from` to `to`, reading `label`, at cost `weight`.
struct label_arc {
  /// Source state.
  uint32_t from = 0;
  /// Target state.
  uint32_t to = 0;
  /// The label read.
  uint32_t label = 0;
  /// Cost in -log space (finite).
  double weight = 0;
};

/// An acceptor over labels with start state 0; see the file comment.
class label_acceptor {
public:
  /// The start state.
  static constexpr uint32_t start_state = 0;

  /// Only the start state, which is not final: accepts nothing.
  label_acceptor();

  /// Adds a state entered by arcs reading `last_label`; returns its id.
  uint32_t add_state(uint32_t last_label);

  /// Adds an arc into `to` (which must not be the start state and reads its
  /// `last_label`) from `from`, at cost `weight`.
  void add_arc(uint32_t from, uint32_t to, double weight);

  /// Makes `state` final at cost `weight`.
  void set_final(uint32_t state, double weight);

  /// Returns the number of states.
  uint32_t num_states() const noexcept { return static_cast<uint32_t>(last_labels_.size()); }

  /// Returns every arc, in the order they were added.
  const std::vector<label_arc>& arcs() const noexcept { return arcs_; }

  /// Returns the label on the arcs into `state`, or none for the start state.
  std::optional<uint32_t> last_label(uint32_t state) const;

  /// Returns the final cost of `state`, or none if it is not final.
  std::optional<double> final_weight(uint32_t state) const;

private:
  static constexpr uint32_t no_label = UINT32_MAX;

  std::vector<uint32_t> last_labels_;
  std::vector<std::optional<double>> finals_;
  std::vector<label_arc> arcs_;
};

/// One hypothesis: a label sequence and its cost.
struct hypothesis {
  /// The labels.
  std::vector<uint32_t> labels;
  /// The cost (in -log space, before any scale).
  double cost = 0;
};

/// Returns the acceptor of `hypotheses`: one chain of states per hypothesis
/// from the shared start state, its cost scaled by `scale` on the chain's
/// first arc (or, for the empty hypothesis, as the start state's final cost).
/// The hypotheses must be distinct sequences.
label_acceptor hypotheses_acceptor(span<const hypothesis> hypotheses, double scale);

} // namespace sprintrt::criterion
