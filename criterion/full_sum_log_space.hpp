#pragma once

/// @file
/// The log-space full-sum forward-backward: the reference the scaled
/// linear-space pass (`full_sum_scaled.hpp`) is checked against and falls back
/// to. Exact over the whole range of double log-scores; documented in
/// full_sum_log_space.cpp.

#include <vector>

#include "criterion/fsa_csr.hpp"
#include "criterion/full_sum_rows.hpp"
#include "criterion/matrix_views.hpp"

namespace sprintrt::criterion {

/// The log-space recursions over an FSA in CSR form. Holds the workspace, so
/// that a warmed-up instance does not allocate. Not thread-safe.
class log_space_full_sum {
public:
  /// Runs the forward recursion over `log_posteriors` [T, D] (checked by the
  /// caller: T, D > 0, no NaN or +inf, every emission < D) and returns
  /// log Z, the log-sum over all paths: -inf when no path has nonzero
  /// probability.
  double forward(const fsa_csr& csr, const log_posteriors_ref& log_posteriors);

  /// Runs the backward recursion after `forward` (same `csr` and
  /// `log_posteriors`, `csr.group_emissions(D)` done, `log_total` the finite
  /// log Z that `forward` returned), handing `sink` each frame's gamma from
  /// frame T-1 down to 0 (without exp(log_posteriors)).
  void backward(const fsa_csr& csr, const log_posteriors_ref& log_posteriors, double log_total,
                full_sum_row_sink& sink);

private:
  // One frame of either recursion (see full_sum_log_space.cpp).
  void log_sum_step(const fsa_csr& csr, const fsa_csr::grouping& edges, const double* source,
                    const float* lp_row, double* target);

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

} // namespace sprintrt::criterion
