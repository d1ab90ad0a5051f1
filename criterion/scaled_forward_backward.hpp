#pragma once

/// @file
/// The forward-backward of the sequence criteria in probability space, over
/// a block of sequences that share one graph: per frame one product of the
/// block's forward (backward) vectors with the graph's transitions, the
/// batch innermost, each sequence rescaled per frame with its log-scales
/// summed in double. It checks itself, as Kaldi's chain denominator does,
/// and says which sequences it cannot compute exactly; callers run those
/// through the log-space reference (sequence_engine.hpp). The recursions,
/// the scaling and the checks are documented in scaled_forward_backward.cpp.

#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "common/span.hpp"
#include "criterion/frame_graph.hpp"
#include "criterion/matrix_views.hpp"

namespace sprintrt::criterion {

/// One sequence of a block: pointers into the caller's matrices, which must
/// outlive the run (and keep their storage: a matrix assigned anew may have
/// moved).
struct scaled_sequence {
  /// Its scores [frames, classes], row-major and contiguous (log space, any
  /// finite or -inf values).
  const double* scores = nullptr;
  /// T >= 1.
  Eigen::Index frames = 0;
  /// D, the same for every sequence of a block.
  Eigen::Index classes = 0;
  /// sMBR only: the reference's column per frame (T values); empty otherwise.
  span<const uint32_t> reference;
  /// With `want_gradient`: where factor times the occupancy (or, with a
  /// reference, the accuracy's covariance) is added, [frames, classes]
  /// row-major and contiguous.
  double* gradient = nullptr;

  /// The sequence of `scores`, adding to `gradient` (of the same shape, or
  /// null without a gradient).
  static scaled_sequence of(const row_matrix_d& scores, row_matrix_d* gradient,
                            span<const uint32_t> reference = {});
};

/// What the engine found for one sequence.
struct scaled_outcome {
  /// Whether the engine computed the sequence; when false, nothing was
  /// added to its gradient and the caller runs the log-space recursions
  /// (which also tell a sequence without any path apart).
  bool exact = false;
  /// Why not, when not exact: "a frame's scores span more than double's
  /// range", "the forward mass vanished at frame t", "frame t's occupancies
  /// sum to x, not 1", ...
  const char* why = "";
  /// The frame the reason names (0 if none).
  Eigen::Index frame = 0;
  /// log Z, the logsumexp of all path scores (when exact).
  double log_z = 0;
  /// sMBR: the expected accuracy E[A] of the paths (when exact).
  double expected_accuracy = 0;
};

/// Runs the scaled recursions. Holds the workspace (O(T x S x B) for the
/// forward tables, the backward rolling) in buffers that only grow, so that
/// a warmed-up engine allocates nothing: keep one per thread. Not
/// thread-safe.
class scaled_forward_backward {
public:
  /// The largest deviation from 1 of a frame's occupancy sum that passes
  /// the self-check.
  static constexpr double max_occupancy_error = 1e-6;

  /// Runs forward, and with `want_gradient` backward, over `graph` for every
  /// sequence of `block` (all of the same width D, every emission of the
  /// graph below D; a `graph` with `unrepresentable` set is not allowed).
  /// Writes one outcome per sequence into `outcomes` (its size). With
  /// references (all or none), computes the expected accuracy and adds
  /// `factor` times d E[A] / d scores; otherwise adds `factor` times the
  /// occupancy (d log Z / d scores).
  void run(const frame_graph& graph, span<const scaled_sequence> block, bool want_gradient,
           double factor, span<scaled_outcome> outcomes);

private:
  using block_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;
  // [nb, S] or [nb, D] views of the workspace's buffers: column q holds the
  // block's values of state (column) q, the batch innermost.
  using block_map = Eigen::Map<block_matrix>;
  using const_block_map = Eigen::Ref<const block_matrix>;

  void prepare(const frame_graph& graph, span<const scaled_sequence> block,
               span<scaled_outcome> outcomes);
  void forward(const frame_graph& graph, span<const scaled_sequence> block, bool accuracy,
               span<scaled_outcome> outcomes);
  void backward(const frame_graph& graph, span<const scaled_sequence> block, bool accuracy,
                double factor, span<scaled_outcome> outcomes);

  // A [rows, cols] view of `buffer`, which grows (never shrinks) to hold it:
  // a warm engine reshapes without allocating.
  static block_map shaped(std::vector<double>& buffer, Eigen::Index rows, Eigen::Index cols);

  // Frame `t`'s [nb, cols] view of a table of frames shaped before.
  block_map frame(std::vector<double>& buffer, Eigen::Index t, Eigen::Index cols) const;

  // The product of a block's vectors `in` [nb, S] with the transitions
  // (`transpose`: their transpose, for the backward pass) into `out`.
  static void step(const frame_graph& graph, const_block_map in, block_map out, bool transpose);

  // out(b, q) = in(b, q) times q's emission `e`(b, k(q)) (`e` [nb, D]).
  static void emit(const frame_graph& graph, const_block_map e, const_block_map in, block_map out);

  // Adds to `sums`(b, k) [nb, D] the sum of `mass`(b, q) over the states q
  // emitting k.
  static void sum_by_column(const frame_graph& graph, const_block_map mass, block_map sums);

  // Divides each sequence's row of `mass` (frame `t`'s forward or backward
  // vectors) by its largest entry and hands that entry's log to
  // `add_log_scale(b, log_top)`; a row that is all zero within the
  // sequence's frames ends its exactness with `vanished` at `frame`.
  template <class AddLogScale>
  void rescale(block_map mass, Eigen::Index t, const char* vanished, Eigen::Index frame,
               span<scaled_outcome> outcomes, AddLogScale add_log_scale);

  Eigen::Index frames_ = 0;
  Eigen::Index classes_ = 0;
  Eigen::Index width_ = 0;
  std::vector<Eigen::Index> lengths_;
  // Per column the graph emits: a frame's shifted score and its exp.
  std::vector<double> shifted_, exps_;
  // Per frame: exp(scores - the frame's maximum) as [nb, D]; the maxima's
  // sum per sequence.
  std::vector<double> emissions_;
  std::vector<double> shift_;
  // Forward tables per frame 0..T, [nb, S] (normalized), and with the
  // accuracy their conditional expected accuracies.
  std::vector<double> alpha_;
  std::vector<double> alpha_accuracy_;
  // Per frame and sequence ([nb, T + 1]): the sum of the forward pass's log
  // scales so far.
  std::vector<double> log_alpha_scale_;
  // log of the scaled total per sequence (scaled units).
  std::vector<double> log_total_;
  // The backward pass's rolling vectors and scratch, [nb, S] or [nb, D].
  std::vector<double> beta_, beta_next_, beta_accuracy_, beta_accuracy_next_;
  std::vector<double> weighted_, weighted_accuracy_, product_, accuracy_product_;
  std::vector<double> column_sums_;
  std::vector<double> log_beta_scale_;
  // The log of the largest entry of each sequence's backward vector of the
  // current frame before its rescaling (0 where it started).
  std::vector<double> log_beta_top_;
  // Per sequence of the block: a frame's maxima, scales or sums.
  std::vector<double> tops_, sums_;
};

} // namespace sprintrt::criterion
