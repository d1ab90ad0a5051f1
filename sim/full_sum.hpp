#pragma once

/// @file
/// Full-sum (Baum-Welch) training criterion of one segment: the loss
/// -log sum over all paths of its FSA, and the error signal softmax - gamma with
/// respect to the pre-softmax activations. The recursions are documented in
/// full_sum.cpp.

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/fsa.hpp"
#include "sim/fsa_csr.hpp"
#include "sim/matrix_views.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::sim {

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

/// Computes full-sum losses, error signals and occupancies. Holds the
/// workspace (the FSA in CSR form, forward scores, per-frame buffers), so that
/// a warmed-up engine computes segment after segment without allocating: keep
/// one per worker thread. Not thread-safe.
class full_sum_engine {
public:
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
  // Checks the output's shape, runs forward, then backward with `write_row`
  // taking each frame's gamma, or zeroes `output` for a skipped segment.
  template <class Output, class WriteRow>
  caf::expected<full_sum_result> run(std::string_view segment, const fsa& automaton,
                                     const log_posteriors_ref& log_posteriors, Output& output,
                                     WriteRow&& write_row);

  // Checks the input and fills alpha_; warns and flags segments without paths.
  caf::expected<full_sum_result> forward(std::string_view segment, const fsa& automaton,
                                         const log_posteriors_ref& log_posteriors);

  // Runs the backward recursion from the last frame down, calling
  // write_row(t, gamma_t) with D occupancies per frame.
  template <class WriteRow>
  void backward(const log_posteriors_ref& log_posteriors, double log_total, WriteRow&& write_row);

  // One frame of either recursion (see full_sum.cpp).
  void log_sum_step(const fsa_csr::grouping& edges, const double* source, const float* lp_row,
                    double* target);

  // Whether any path of exactly `num_frames` edges exists, ignoring scores.
  bool has_path(Eigen::Index num_frames) const;

  fsa_csr csr_;
  /// Forward scores, (T + 1) x S row-major: alpha_[t * S + s] is the log-sum
  /// over paths of t edges from the start state to s.
  std::vector<double> alpha_;
  /// Backward scores of two neighbouring frames.
  std::vector<double> beta_current_;
  std::vector<double> beta_next_;
  /// Per edge: scores, then their exp relative to the state maximum, then
  /// (backward) occupancies.
  std::vector<double> edge_values_;
  /// Per state: the maximum edge score of the last step.
  std::vector<double> state_max_;
  /// One frame of gamma, D values.
  std::vector<double> gamma_row_;
};

} // namespace sprintrt::sim
