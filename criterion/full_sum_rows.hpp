#pragma once

/// @file
/// How the full-sum recursions hand out their per-frame results: one row of
/// occupancies (gamma) at a time, from the last frame down to the first.

#include <Eigen/Core>

namespace sprintrt::criterion {

/// Receives the occupancy row of each frame from a backward pass. Rows arrive
/// from frame T-1 down to 0, each exactly once per successful pass; a scaled
/// pass that gives up part-way (`scaled_full_sum::backward`) may have handed
/// out some rows, which the log-space pass then hands out again.
class full_sum_row_sink {
public:
  /// Destroys the sink.
  virtual ~full_sum_row_sink() = default;

  /// Takes frame `t`'s occupancies `gamma` (D values, summing to 1) and, when
  /// the pass has them at hand, `exp_log_posteriors`: exp(log_posteriors[t, k])
  /// for every k, in double (null otherwise: compute them if needed).
  virtual void row(Eigen::Index t, const double* gamma, const double* exp_log_posteriors) = 0;
};

} // namespace sprintrt::criterion
