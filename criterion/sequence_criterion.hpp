#pragma once

/// @file
/// The sequence-discriminative criteria of one segment: MMI, boosted MMI and
/// sMBR over a numerator FSA and a denominator graph, exactly as
/// docs/sequence-training.md defines them (its names are used here).

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/span.hpp"
#include "criterion/frame_graph.hpp"
#include "criterion/fsa.hpp"
#include "criterion/full_sum.hpp"
#include "criterion/matrix_views.hpp"
#include "criterion/scaled_forward_backward.hpp"
#include "criterion/sequence_engine.hpp"
#include "criterion/wfsa.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// Which sequence-discriminative criterion.
enum class sequence_kind : uint8_t { mmi, bmmi, smbr };

/// The scales of the criteria (`--*.am-scale`, `--*.lm-scale`, `--*.boost`).
struct sequence_scales {
  /// KAPPA: multiplies the log-posteriors (finite, > 0).
  double am = 1;
  /// LAMBDA: multiplies hypothesis and LM costs (finite, >= 0).
  double lm = 1;
  /// B: the boost of `bmmi` (finite, >= 0).
  double boost = 0;
};

/// Returns what is wrong with `scales` for `kind` ("am-scale 0 is not a
/// finite number > 0", a boost for a criterion other than `bmmi`), or "".
std::string check_scales(sequence_kind kind, const sequence_scales& scales);

/// One segment's inputs to a criterion.
struct sequence_segment {
  /// The segment's name, for messages.
  std::string_view name;
  /// The reference's FSA, as the topology builds (and exports) it.
  const fsa* numerator = nullptr;
  /// Every hypothesis of the segment, the reference included.
  const wfsa* denominator = nullptr;
  /// The highest column `denominator` emits.
  uint32_t denominator_max_emission = 0;
  /// LAMBDA times the reference's cost, paid by the numerator's paths.
  double reference_cost = 0;
  /// `denominator` laid out for the scaled recursions, when the caller keeps
  /// one (a denominator shared by many segments); null: laid out per call.
  const frame_graph* denominator_layout = nullptr;
};

/// How `sequence_loss` computed the segments so far.
struct sequence_stats {
  /// Segments computed in probability space (scaled_forward_backward.hpp).
  uint64_t scaled = 0;
  /// Segments the scaled recursions handed back, computed in log space.
  uint64_t log_space = 0;
  /// Segments skipped: no path of nonzero probability (loss inf).
  uint64_t skipped = 0;
};

/// What `sequence_loss` keeps between segments: the workspaces of the scaled
/// recursions and of the log-space reference, and the counts. Keep one per
/// worker thread. Not thread-safe.
class sequence_workspace {
public:
  /// Whether a skipped segment is warned about (as Sprint's own log says
  /// it; the default) or logged at debug level, for a caller that reports
  /// the skips of a batch itself (in-process workers, `fsa_loss`).
  void set_warn_on_skip(bool warn) noexcept { warn_on_skip_ = warn; }

  /// Returns the setting of `set_warn_on_skip`.
  bool warn_on_skip() const noexcept { return warn_on_skip_; }

  /// Returns the counts so far.
  const sequence_stats& stats() const noexcept { return stats_; }

private:
  friend struct sequence_block;

  bool warn_on_skip_ = true;
  sequence_stats stats_;
  scaled_forward_backward scaled_;
  sequence_engine log_space_;
  // The numerators as wfsa and laid out.
  wfsa numerator_;
  frame_graph_builder builder_;
  frame_graph numerator_layout_;
  // Per job of a block: scores (KAPPA times the log-posteriors), the boosted
  // scores of bmmi, the gradient, the numerator's best path.
  std::vector<row_matrix_d> scores_;
  std::vector<row_matrix_d> boosted_;
  std::vector<row_matrix_d> gradient_;
  std::vector<std::vector<uint32_t>> best_;
};

/// One segment of a block for `sequence_loss_block`: its inputs, and its
/// log-posteriors [T, D] and error signal [T, D] as rows at a stride (a
/// sequence of a [T, B, D] batch, read and written in place).
struct sequence_job {
  /// The segment's graphs.
  sequence_segment segment;
  /// Row t of the log-posteriors starts at log_posteriors + t * input_stride.
  const float* log_posteriors = nullptr;
  Eigen::Index frames = 0;
  Eigen::Index classes = 0;
  Eigen::Index input_stride = 0;
  /// Row t of the error signal starts at error_signal + t * output_stride.
  float* error_signal = nullptr;
  Eigen::Index output_stride = 0;
};

/// Computes `kind`'s loss of `segment` over `log_posteriors` [T, D] and
/// writes its error signal into `error_signal` [T, D]. A numerator without a
/// path of T frames skips the segment (loss +inf, zeros, a warning naming
/// it), as the full-sum does. Errors (`invalid_input`, nothing written): NaN
/// or +inf log-posteriors, T == 0 or D == 0, an emission of the numerator or
/// the denominator >= D, a wrongly shaped output. The scaled recursions
/// compute it; a segment they hand back is computed in log space (both
/// exact, see docs/sequence-training.md).
caf::expected<full_sum_result> sequence_loss(sequence_kind kind, const sequence_scales& scales,
                                             const sequence_segment& segment,
                                             const log_posteriors_ref& log_posteriors,
                                             error_signal_ref error_signal,
                                             sequence_workspace& workspace);

/// `sequence_loss` of every job into `results` (its size): the jobs whose
/// denominators are the same graph (with a layout) run the scaled
/// recursions together, one product per frame for all of them. Returns the
/// first job's error (nothing of that job written, the others computed).
caf::error sequence_loss_block(sequence_kind kind, const sequence_scales& scales,
                               span<const sequence_job> jobs, span<full_sum_result> results,
                               sequence_workspace& workspace);

} // namespace sprintrt::criterion
