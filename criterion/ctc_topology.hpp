#pragma once

/// @file
/// The CTC topology: blanks between labels, optional blanks at both ends, a
/// blank required between two equal consecutive labels. Its full-sum equals the
/// standard CTC criterion (the construction and its proof are in
/// ctc_topology.cpp).

#include <cstdint>
#include <string_view>

#include "criterion/topology.hpp"

namespace sprintrt::criterion {

/// Builds CTC FSAs with a configurable blank index. All edge weights are 0: CTC
/// has no transition costs.
class ctc_topology final : public topology {
public:
  /// A CTC topology whose blank is column `blank_index` of the posteriors
  /// (0 by default, as RETURNN's CTC; D-1 as TensorFlow's).
  explicit ctc_topology(uint32_t blank_index = 0) noexcept : blank_index_(blank_index) {}

  /// Returns the blank's column.
  uint32_t blank_index() const noexcept { return blank_index_; }

  /// Returns "ctc".
  std::string_view name() const noexcept override { return "ctc"; }

  /// Builds the FSA of `labels`: 2L+2 states for L labels. An empty label list
  /// is valid and means "blanks only". A label equal to the blank index is an
  /// `invalid_input` error naming `owner` and the label's position (counted
  /// from 1): "segment 'a': label number 3 is 0, the CTC blank index".
  caf::expected<fsa> build(std::string_view owner, span<const uint32_t> labels) const override;

  /// Refuses a label equal to the blank index, naming `owner` and the
  /// label's position.
  caf::error check_labels(std::string_view owner, span<const uint32_t> labels) const override;

  /// Per acceptor state q a blank state B(q) and, but for the start, a label
  /// state L(q) emitting q's last label (docs/sequence-training.md).
  caf::expected<wfsa> expand(std::string_view owner, const label_acceptor& acceptor) const override;

private:
  uint32_t blank_index_;
};

} // namespace sprintrt::criterion
