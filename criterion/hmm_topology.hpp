#pragma once

/// @file
/// The HMM topology: one emitting state per label with a loop and a forward
/// transition, and an optional silence (or blank) state at the start, between
/// labels and at the end. The construction is documented in hmm_topology.cpp.

#include <cstdint>
#include <optional>
#include <string_view>

#include "criterion/topology.hpp"

namespace sprintrt::criterion {

/// The transition costs (-log probabilities) and silence placement of the HMM
/// topology. The defaults make every choice a fair coin, -log(1/2); the costs
/// are not normalized per state (neither are RASR's transition models).
struct hmm_options {
  /// Cost of staying in a label's state for one more frame.
  float loop_cost = 0.6931472f;
  /// Cost of entering a label's state from the previous label's state (or from
  /// the start state, for the first label).
  float forward_cost = 0.6931472f;
  /// The silence (or blank) column; no silence state at all when empty.
  std::optional<uint32_t> silence_index;
  /// Cost of staying in a silence state for one more frame.
  float silence_loop_cost = 0.6931472f;
  /// Cost of entering a silence state (from the start or a label's state).
  float silence_entry_cost = 0.6931472f;
  /// Cost of leaving a silence state into the next label's state.
  float silence_exit_cost = 0.6931472f;
  /// Whether the segment may begin with silence (only with `silence_index`).
  bool silence_at_start = true;
  /// Whether silence may appear between two labels (only with `silence_index`).
  bool silence_between_labels = true;
  /// Whether the segment may end with silence (only with `silence_index`).
  bool silence_at_end = true;
};

/// Builds HMM FSAs from labels with the costs of `hmm_options`.
class hmm_topology final : public topology {
public:
  /// Checks the options: no cost may be NaN or -inf (an `invalid_options`
  /// error names the option); +inf forbids that transition.
  static caf::expected<hmm_topology> make(const hmm_options& options);

  /// Returns the options this topology was made with.
  const hmm_options& options() const noexcept { return options_; }

  /// Returns "hmm".
  std::string_view name() const noexcept override { return "hmm"; }

  /// Builds the FSA of `labels`. An empty label list means a silence-only
  /// segment: one silence state, which requires `silence_index` (otherwise an
  /// `invalid_input` error naming `owner`).
  caf::expected<fsa> build(std::string_view owner, span<const uint32_t> labels) const override;

  /// Refuses an empty label list when there is no silence state, naming
  /// `owner`.
  caf::error check_labels(std::string_view owner, span<const uint32_t> labels) const override;

  /// Per acceptor state q but the start a label state S(q), and the silence
  /// states the options ask for (docs/sequence-training.md). Without a
  /// silence state the empty sequence has no path.
  caf::expected<wfsa> expand(std::string_view owner, const label_acceptor& acceptor) const override;

private:
  explicit hmm_topology(const hmm_options& options) noexcept : options_(options) {}

  hmm_options options_;
};

} // namespace sprintrt::criterion
