#pragma once

/// @file
/// Full-sum (Baum-Welch) training criterion of one segment: the loss
/// -log sum over all paths of its FSA, and the error signal softmax - gamma with
/// respect to the pre-softmax activations. Computed by the engine of every
/// criterion: the scaled forward-backward (scaled_forward_backward.hpp) over
/// a block of one, which checks itself, and the log-space recursions
/// (sequence_engine.hpp) for a segment it hands back.

#include <cstdint>
#include <string_view>
#include <vector>

#include "criterion/frame_graph.hpp"
#include "criterion/fsa.hpp"
#include "criterion/matrix_views.hpp"
#include "criterion/scaled_forward_backward.hpp"
#include "criterion/sequence_engine.hpp"
#include "criterion/wfsa.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// The outcome of one segment's full-sum.
struct full_sum_result {
  /// -log of the total probability of the segment's paths; +inf when skipped.
  double loss = 0;
  /// True when no path of T frames has nonzero probability (too few frames for
  /// the labels, or zero posteriors on every path): the loss is +inf, the
  /// outputs are all zero, and a warning names the segment, as real Sprint does
  /// for segments it skips.
  bool skipped = false;
};

/// Which recursions a `full_sum_engine` may use.
enum class full_sum_method : uint8_t {
  /// The scaled forward-backward, falling back to log space for the segments
  /// it cannot compute exactly (the default).
  automatic,
  /// Always the log-space reference (for comparisons and benchmarks).
  log_space,
};

/// Which recursions computed a segment.
enum class full_sum_path : uint8_t {
  /// Nothing computed yet, or the last call failed its input checks.
  none,
  /// The scaled forward-backward, its checks passed.
  scaled,
  /// The log-space recursions (by method, or because the scaled ones could
  /// not compute the segment exactly, e.g. for extreme log-posteriors or
  /// skipped segments).
  log_space,
};

/// Computes full-sum losses, error signals and occupancies. Holds the
/// workspace (the FSA's layout, the recursions' tables, per-frame buffers), so
/// that a warmed-up engine computes segment after segment with few
/// allocations: keep one per worker thread. Not thread-safe.
class full_sum_engine {
public:
  /// An engine using `method`.
  explicit full_sum_engine(full_sum_method method = full_sum_method::automatic) noexcept
      : method_(method) {}

  /// Returns the method the engine was made with.
  full_sum_method method() const noexcept { return method_; }

  /// Whether a skipped segment (loss inf) is logged as a warning, as
  /// Sprint's own log says it (the default: sprint-sim's children), or at
  /// debug level, for a caller that reports the skips of a batch itself
  /// (`fsa_loss`).
  void set_warn_on_skip(bool warn) noexcept { warn_on_skip_ = warn; }

  /// Returns which recursions computed the last segment.
  full_sum_path last_path() const noexcept { return last_path_; }

  /// Computes the loss of `segment` (named in messages only) with FSA
  /// `automaton` over `log_posteriors` [T, D], and writes the error signal
  /// exp(log_posteriors) - gamma into `error_signal`, which must be [T, D] too.
  /// Errors (`invalid_input`, nothing written): NaN or +inf log-posteriors,
  /// T == 0 or D == 0, an emission index >= D, a wrongly shaped output.
  caf::expected<full_sum_result> loss_and_error_signal(std::string_view segment,
                                                       const fsa& automaton,
                                                       const log_posteriors_ref& log_posteriors,
                                                       error_signal_ref error_signal);

  /// Like `loss_and_error_signal`, but writes the occupancy gamma [T, D] itself
  /// in double: gamma[t, k] is the posterior probability that the edge taken
  /// at frame t emits k. Each row sums to 1 (all zero when skipped).
  caf::expected<full_sum_result> loss_and_occupancy(std::string_view segment, const fsa& automaton,
                                                    const log_posteriors_ref& log_posteriors,
                                                    occupancy_ref occupancy);

private:
  // Checks the inputs and the output's shape, computes the occupancy into
  // `occupancy_`, and hands it to `write(occupancy)` (a [T, D] row-major
  // map), or zeroes `output` for a skipped segment.
  template <class Output, class Write>
  caf::expected<full_sum_result> run(std::string_view segment, const fsa& automaton,
                                     const log_posteriors_ref& log_posteriors, Output& output,
                                     Write write);

  // Warns that `segment` is skipped, saying why.
  void warn_skipped(std::string_view segment, const fsa& automaton, Eigen::Index num_frames) const;

  full_sum_method method_;
  bool warn_on_skip_ = true;
  full_sum_path last_path_ = full_sum_path::none;
  // The segment's FSA as a wfsa and laid out, its scores in double and its
  // occupancy [T, D] (row-major, in buffers that only grow).
  wfsa graph_;
  frame_graph_builder builder_;
  frame_graph layout_;
  std::vector<double> scores_;
  std::vector<double> occupancy_;
  // One row's arguments and results of the vector exp.
  std::vector<double> exponents_;
  std::vector<double> exps_;
  scaled_forward_backward scaled_;
  sequence_engine log_space_;
};

} // namespace sprintrt::criterion
