#pragma once

/// @file
/// The scaled linear-space full-sum forward-backward: the fast path of
/// `full_sum_engine`. Per frame, the forward and backward vectors are kept in
/// linear space and normalized, with the logs of the scales accumulated; no
/// exp or log per edge. It certifies its own result and gives up (the engine
/// then runs the log-space reference) when underflow could have changed it;
/// the math, the error bounds and the certificate are in full_sum_scaled.cpp.

#include <cstdint>
#include <optional>
#include <vector>

#include "criterion/fsa_bands.hpp"
#include "criterion/full_sum_rows.hpp"
#include "criterion/matrix_views.hpp"

namespace sprintrt::criterion {

/// The scaled recursions over an FSA laid out in bands. Holds the workspace, so
/// that a warmed-up instance does not allocate. Not thread-safe.
class scaled_full_sum {
public:
  /// The certificate's bound on the relative error of Z from underflow (see
  /// full_sum_scaled.cpp).
  static constexpr double max_underflow_error = 0x1p-60;

  /// The certificate's bound on each frame's |log R_t + log C_t + log D_{t+1}
  /// - log Z_lin|, the log of the frame's occupancy sum relative to what it
  /// should be: what underflow and the backward floors may add to or take
  /// from a frame's occupancies, plus rounding.
  static constexpr double max_frame_mismatch = 1e-10;

  /// Runs the forward pass over `log_posteriors` [T, D] (checked by the
  /// caller: T, D > 0, no NaN or +inf, every emission < D) and returns log Z,
  /// which holds only if `backward` then certifies it. Returns nothing when
  /// the pass cannot even compute it: no finite edge weight, or a frame whose
  /// forward mass or the final forward value is zero (which includes every
  /// segment without a path of nonzero probability: the log-space pass tells
  /// those apart).
  std::optional<double> forward(const fsa_bands& automaton,
                                const log_posteriors_ref& log_posteriors);

  /// Runs the backward pass after a successful `forward` (same `automaton`,
  /// with `automaton.group_emissions(D)` done, and `log_posteriors`), handing
  /// `sink` each frame's gamma and exp(log_posteriors) from frame T-1 down to
  /// 0, and checks the certificate. Returns false as soon as it fails: the
  /// rows handed out so far are then not to be trusted, and the caller reruns
  /// the segment in log space.
  bool backward(const fsa_bands& automaton, const log_posteriors_ref& log_posteriors,
                full_sum_row_sink& sink);

private:
  // Fills probs_ and row_max_ for frame t.
  void frame_probabilities(const log_posteriors_ref& log_posteriors, Eigen::Index t);

  /// exp(log_posteriors[t, k] - row_max_[t]), T x (D + 1) row-major; column
  /// D is 1, the factor of mixed states.
  std::vector<double> probs_;
  /// The arguments of one call of `exp_nonpositive`.
  std::vector<double> exponents_;
  /// Each frame's maximum log-posterior (0 for a row of -inf).
  std::vector<double> row_max_;
  /// exp(row_max_) for the rows whose maximum is at most 0.
  std::vector<double> row_scale_;
  /// exp(score - max score) per slot of the bands layout (0 for no edge).
  std::vector<double> weights_;
  /// Normalized forward vectors, (T + 1) x S row-major (each row sums to 1).
  std::vector<double> alpha_;
  /// c_t, frame t's forward scale, and its log (t = 1..T).
  std::vector<double> scale_;
  std::vector<double> log_scale_;
  /// Backward vectors of two neighbouring frames (normalized, floored).
  std::vector<double> beta_current_;
  std::vector<double> beta_next_;
  /// Per state: the unnormalized backward value of the current frame, P b of
  /// the next frame, and the occupancy of the edges into it (pure states).
  std::vector<double> state_values_;
  std::vector<double> weighted_beta_;
  std::vector<double> occupancy_;
  /// Per edge into a mixed state: its occupancy before normalization.
  std::vector<double> mixed_values_;
  /// One frame of gamma and of exp(log_posteriors), D values each.
  std::vector<double> gamma_row_;
  std::vector<double> exp_row_;
  /// log of the last forward row's final entry.
  double log_final_ = 0;
};

} // namespace sprintrt::criterion
