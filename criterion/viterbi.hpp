#pragma once

/// @file
/// Viterbi (best path) alignment of a segment's log-posteriors to its FSA: the
/// single path the full-sum is dominated by, for the demo and for checking.
/// The sequence criteria's Viterbi (`sequence_engine::best_edges`) computes
/// it.

#include <cstdint>
#include <string_view>
#include <vector>

#include "criterion/fsa.hpp"
#include "criterion/matrix_views.hpp"
#include "criterion/sequence_engine.hpp"
#include "criterion/wfsa.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// The best path of one segment, frame by frame.
struct viterbi_alignment {
  /// -(best path score): the sum of the path's edge weights minus the sum of
  /// its log-posteriors. +inf when skipped.
  double cost = 0;
  /// True when no path of T frames has nonzero probability; the vectors are
  /// then empty.
  bool skipped = false;
  /// The edge taken at each frame (T values, indices into the FSA's edges).
  std::vector<uint32_t> edges;
  /// The emission of each frame's edge: the frame-to-label alignment.
  std::vector<uint32_t> emissions;
  /// The state reached after each frame; the last one is the final state.
  std::vector<uint32_t> states;
};

/// Computes Viterbi alignments, with a reusable workspace. Not thread-safe.
class viterbi_aligner {
public:
  /// Aligns `log_posteriors` [T, D] of `segment` (named in messages) to
  /// `automaton`. Ties are broken deterministically, reading the path
  /// backwards from the last frame: at each frame and state the edge that
  /// comes first in the FSA among the equally good ones wins. The same input
  /// errors as the full-sum: NaN or +inf log-posteriors, T == 0 or D == 0, an
  /// emission index >= D. Unlike the full-sum it does not warn when it skips:
  /// it is a diagnostic, and `skipped` says so.
  caf::expected<viterbi_alignment> align(std::string_view segment, const fsa& automaton,
                                         const log_posteriors_ref& log_posteriors);

private:
  // The FSA as a wfsa, the scores in double, and the engine whose Viterbi
  // (max-sum in log space) all criteria share.
  wfsa graph_;
  row_matrix_d scores_;
  sequence_engine engine_;
};

} // namespace sprintrt::criterion
