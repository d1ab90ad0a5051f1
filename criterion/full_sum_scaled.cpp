#include "criterion/full_sum_scaled.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "criterion/vector_exp.hpp"

namespace sprintrt::criterion {

// Scaled linear-space forward-backward
// ====================================
//
// Notation as in full_sum_log_space.cpp: T frames, D classes, y[t, k] the
// log-posteriors, an FSA with S states (start 0, final F) and edges e = (from,
// to, k_e, w_e). The log-space pass pays one exp per edge and frame in each
// direction and one log per state; this pass pays one exp per class and frame
// (which the error signal needs anyway) and otherwise only multiplications and
// additions. It is the classic scaled forward-backward of HMMs (Rabiner 1989)
// with two additions that keep it exact: shifts that bound every factor by 1,
// and a certificate, computed alongside, that the result equals the log-space
// one to double precision; when the certificate fails, the engine reruns the
// segment in log space.
//
// Factors. With m_t = max_k y[t, k] and s_max = max_e -w_e over finite weights:
//
//   P[t, k] = exp(y[t, k] - m_t),   W_e = exp(-w_e - s_max),   f_e(t) = W_e P[t, k_e],
//
// all in [0, 1] (exactly 0 for y = -inf or w = +inf). Every path has exactly T
// edges, so its probability is prod_t f_{e_t}(t) times exp(sum_t m_t + T s_max),
// and log Z = log Z_lin + sum_t m_t + T s_max, Z_lin = sum over paths of
// prod_t f_{e_t}(t). With M_t the S x S matrix M_t[to, from] = sum of f_e(t)
// over the edges from -> to, the forward vectors are A_0 = e_0,
// A_{t+1} = M_t A_t, and the backward ones B_T = e_F, B_t = M_t^T B_{t+1};
// Z_lin = B_t . A_t for every t.
//
// Scaling. The pass keeps a_t = A_t / C_t with C_t = c_1 ... c_t and c_{t+1}
// the sum of M_t a_t, so every a_t sums to 1 and nothing overflows; log C_T is
// accumulated (as a mantissa and a power of two, exact to rounding) and
// log Z_lin = log C_T + log a_T(F). The backward pass keeps b_t = B_t / D_t
// normalized the same way with its own scales d_t (D_t = d_t ... d_{T-1}).
// The occupancy of edge e at frame t is a_t(from) f_e(t) b_{t+1}(to), divided
// by the frame's sum R_t of these products (R_t = Z_lin / (C_t D_{t+1})).
//
// Why not always: rounding is harmless (all terms are nonnegative, so every
// result carries a relative error of at most a few ulps per frame, O(T u) in
// all), but underflow is not. An entry of a_t far below the frame's largest,
// under about 2^-1022, is lost or inexact; if the paths through it later carry
// the probability mass (the mass elsewhere dies out), Z is wrong. The classic
// case: two frames, CTC labels 1 2, y[0] = (0, -800, 0), y[1] = (0, 0, -900).
// The only path has probability e^-1700, a_1 holds e^-800 for it next to 1 for
// the blank, and the scaled pass gets Z_lin = 0.
//
// Error bound. Write the computed forward as exact steps plus a perturbation:
// a_{t+1} = M_t a_t / c_{t+1} + delta_{t+1}, with relative rounding treated
// apart. Each entry's absolute error from underflow is at most
// eta_t = 4 (in-degree + 1) 2^-1074 / min(c_t, 1) (per product term: the
// subnormal rounding of a_t(from) W_e, of times P, and the errors of W and P
// themselves when subnormal, each below 2^-1074 with all factors <= 1; plus
// the rounding of the scaled result). Since the recursion is linear,
//
//   Z_lin(computed) - Z_lin = sum_t C_t delta_t . B_t,
//
// so the relative error of Z is at most eps_Z = sum_{t=1..T} C_t eta_t
// |B_t|_1 / Z_lin. That needs an upper bound on the true backward vectors, and
// the computed ones underflow too. So the backward pass floors its entries:
// b_t = max(v_t / d_t, floor_t) with v_t the computed M_t^T b_{t+1}. The
// absolute error of v_t / d_t is below 4 (out-degree + 1) 2^-1074 / d_t, and
// floor_t = max(2^-1000, (out-degree + 1) 2^-1019 / min(d_t, 1)) is 2^52 times
// that, so by induction B_t <= D_t b_t (1 + 2^-52)^(T - t): b_t is an upper
// bound (to rounding) wherever underflow struck. Then
//
//   eps_Z <= sum_{t=1..T} eta_t |b_t|_1 exp(log C_t + log D_t - log Z_lin),
//
// computed as the backward pass goes (|b_t|_1 is 1 plus the floors, at most
// 2; t = T has b_T = e_F, exact, and the term eta_T / a_T(F)). The pass
// requires each of the T terms to be at most 2^-60 / T, checked in logs (the
// log scales are at hand, so no exp is needed), hence eps_Z <= 2^-60.
//
// In words: exp(log Z_lin - log C_t - log D_t) is the overlap of the
// normalized forward and backward vectors of frame t, about 1 / S when both
// concentrate on the same states, as they do for real segments (a trained
// model's peaky posteriors included: the forward mass on states far from the
// alignment underflows, but their backward weight is tiny too). Only when the
// overlap falls below about 2^-1000 (the forward mass of frame t almost all on
// states whose paths do not finish, as in the example) can underflow matter,
// and only then does the pass fail.
//
// Occupancies. The floors make b_t an upper bound, so the computed numerator
// of edge e at frame t, N_t(e) = a_t(from) f_e(t) b_{t+1}(to) C_t D_{t+1}, is
// the true a_t(from) f_e(t) B_{t+1}(to) plus the forward's underflow error
// (summed over a frame's edges, at most eps_Z Z_lin, by the same argument)
// plus a nonnegative "floor mass" F_t. Summing over the frame's edges,
// sum_e N_t(e) = R_t C_t D_{t+1} = Z_lin + (forward error) + F_t, so
//
//   |log R_t + log C_t + log D_{t+1} - log Z_lin| <= delta
//
// bounds F_t by (delta + 2 eps_Z) Z_lin, and the L1 error of the frame's
// normalized occupancies by about 2 delta + 4 eps_Z. The pass checks this on
// every frame with delta = 1e-10, which also absorbs the rounding drift
// between the forward and backward scales (O(T u), 1e-10 only at T ~ 1e5).
// With floors of 2^-1000 the floor mass of a usual segment is ~1e-300.
//
// So a segment the pass completes has a loss within about O(T u) + 2^-60 of
// the exact one (relative to Z, i.e. absolute on the loss) and occupancies
// within about 2e-10 (L1 per frame) of the exact ones; a segment without a
// path of nonzero probability always fails here (Z_lin = 0) and gets the log
// space pass's diagnosis. The log scales in the certificate are carried as
// per-frame differences log c_t - log d_t, which stay small, so the check is
// as accurate as the pass itself.
//
// Layout and cost. The recursions run over `fsa_bands`: in CTC and HMM FSAs
// all edges into a state emit its class, so M_t = diag(P[t, class]) W with W
// fixed; a forward step is u = W a_t (one vectorized multiply-add per band,
// i.e. per diagonal of W), then a_{t+1} = P[t, class] u / c_{t+1}, and a
// backward step is v = W^T (P[t+1, class] b_{t+1}). The occupancy of the edges
// into a state s at frame t is then c_{t+1} a_{t+1}(s) b_{t+1}(s): no
// per-edge work at all. Edges into states entered with several classes (the
// final state of CTC and HMM FSAs, any state of an arbitrary FSA) take their
// own P per edge. Per frame that is a few vector passes over the states, one
// gather of P per state, D exps (`exp_nonpositive`, reused for the error
// signal: exp(y) = P exp(m_t)) and three logs.

namespace {

/// 2^-1074, the smallest subnormal double.
constexpr double min_subnormal = 0x1p-1074;

/// Keeps `mantissa` * 2^`exponent` in range after a multiplication.
void renormalize(double& mantissa, long& exponent) {
  if (mantissa < 0x1p-500 || mantissa > 0x1p500) {
    int shift = 0;
    mantissa = std::frexp(mantissa, &shift);
    exponent += shift;
  }
}

/// out[i] += x[i] * y[i]: one band's step, in vector instructions.
void multiply_add(double* __restrict out, const double* __restrict x, const double* __restrict y,
                  uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    out[i] += x[i] * y[i];
}

} // namespace

void scaled_full_sum::frame_probabilities(const log_posteriors_ref& log_posteriors,
                                          Eigen::Index t) {
  const float* lp = log_posteriors.row(t).data();
  const auto num_classes = log_posteriors.cols();
  float max = lp[0];
  for (Eigen::Index k = 1; k < num_classes; ++k)
    max = std::max(max, lp[k]);
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  double* p = probs_.data() + t * (num_classes + 1);
  // The extra column is the factor of mixed states: 1.
  p[num_classes] = 1;
  if (max == neg_inf) {
    std::fill(p, p + num_classes, 0.0);
    row_max_[t] = 0;
    return;
  }
  const double shift = max;
  // -inf stays -inf, whose exp is 0.
  double* x = exponents_.data();
  for (Eigen::Index k = 0; k < num_classes; ++k)
    x[k] = static_cast<double>(lp[k]) - shift;
  exp_nonpositive(x, p, static_cast<size_t>(num_classes));
  row_max_[t] = shift;
}

std::optional<double> scaled_full_sum::forward(const fsa_bands& automaton,
                                               const log_posteriors_ref& log_posteriors) {
  const Eigen::Index num_frames = log_posteriors.rows();
  const Eigen::Index row_size = log_posteriors.cols() + 1;
  const uint32_t num_states = automaton.num_states();
  const auto& scores = automaton.score();
  constexpr double neg_inf = -std::numeric_limits<double>::infinity();
  double max_score = neg_inf;
  for (const double score : scores)
    max_score = std::max(max_score, score);
  if (max_score == neg_inf)
    return std::nullopt;
  weights_.resize(scores.size());
  exponents_.resize(std::max<size_t>(scores.size(), log_posteriors.cols()));
  for (size_t i = 0; i < scores.size(); ++i)
    exponents_[i] = scores[i] - max_score;
  exp_nonpositive(exponents_.data(), weights_.data(), weights_.size());
  probs_.resize(num_frames * row_size);
  row_max_.resize(num_frames);
  alpha_.resize((num_frames + 1) * num_states);
  scale_.resize(num_frames + 1);
  log_scale_.resize(num_frames + 1);
  std::fill(alpha_.begin(), alpha_.begin() + num_states, 0.0);
  alpha_[fsa::start_state] = 1;
  scale_[0] = 1;
  log_scale_[0] = 0;
  double scale_mantissa = 1;
  long scale_exponent = 0;
  double sum_row_max = 0;
  const uint32_t* state_class = automaton.state_class().data();
  const double* weight = weights_.data();
  for (Eigen::Index t = 0; t < num_frames; ++t) {
    frame_probabilities(log_posteriors, t);
    sum_row_max += row_max_[t];
    const double* p = probs_.data() + t * row_size;
    const double* a = alpha_.data() + t * num_states;
    double* next = alpha_.data() + (t + 1) * num_states;
    std::fill(next, next + num_states, 0.0);
    // Pure states: the sum of a[from] W over the incoming edges, times the
    // state's P; mixed states (factor 1) take their edges' P one by one.
    for (const auto& band : automaton.bands())
      multiply_add(next + band.first, a + (band.first - band.offset), weight + band.start,
                   band.length);
    for (const auto& e : automaton.pure_edges())
      next[e.to] += a[e.from] * weight[e.slot];
    for (uint32_t s = 0; s < num_states; ++s)
      next[s] *= p[state_class[s]];
    for (const auto& e : automaton.mixed_edges())
      next[e.to] += a[e.from] * weight[e.slot] * p[e.emission];
    double sum = 0;
    for (uint32_t s = 0; s < num_states; ++s)
      sum += next[s];
    if (!(sum > 0))
      return std::nullopt;
    const double inverse = 1 / sum;
    for (uint32_t s = 0; s < num_states; ++s)
      next[s] *= inverse;
    scale_[t + 1] = sum;
    log_scale_[t + 1] = std::log(sum);
    scale_mantissa *= sum;
    renormalize(scale_mantissa, scale_exponent);
  }
  const double final_value = alpha_[num_frames * num_states + automaton.final_state()];
  if (!(final_value > 0))
    return std::nullopt;
  log_final_ = std::log(final_value);
  return std::log(scale_mantissa) + static_cast<double>(scale_exponent) * std::log(2.0) +
         log_final_ + sum_row_max + static_cast<double>(num_frames) * max_score;
}

bool scaled_full_sum::backward(const fsa_bands& automaton, const log_posteriors_ref& log_posteriors,
                               full_sum_row_sink& sink) {
  const Eigen::Index num_frames = log_posteriors.rows();
  const Eigen::Index num_classes = log_posteriors.cols();
  const Eigen::Index row_size = num_classes + 1;
  const uint32_t num_states = automaton.num_states();
  const uint32_t* state_class = automaton.state_class().data();
  const double* weight = weights_.data();
  const uint32_t* class_offsets = automaton.class_offsets().data();
  const uint32_t* class_states = automaton.class_states().data();
  const auto& mixed_edges = automaton.mixed_edges();
  beta_current_.resize(num_states);
  beta_next_.assign(num_states, 0.0);
  beta_next_[automaton.final_state()] = 1;
  state_values_.resize(num_states);
  weighted_beta_.resize(num_states);
  occupancy_.resize(num_states);
  mixed_values_.resize(mixed_edges.size());
  gamma_row_.resize(num_classes);
  exp_row_.resize(num_classes);
  // eps_Z <= 2^-60 holds when each of its T terms is at most 2^-60 / T; in
  // logs, with log eta_t = log(4 (in-degree + 1) 2^-1074) - min(log c_t, 0).
  const double log_budget = std::log(max_underflow_error / static_cast<double>(num_frames));
  const double log_error_per_term =
      std::log(4.0 * (automaton.max_in_degree() + 1)) + std::log(min_subnormal);
  const auto log_eta = [&](Eigen::Index t) {
    return log_error_per_term - std::min(log_scale_[t], 0.0);
  };
  // The term of frame T: b_T = e_F is exact, |b_T|_1 = 1.
  if (!(log_eta(num_frames) - log_final_ <= log_budget))
    return false;
  // exp(m_t), to turn P back into exp(log_posteriors) for the error signal.
  row_scale_.resize(num_frames);
  exponents_.resize(std::max<size_t>(exponents_.size(), num_frames));
  for (Eigen::Index t = 0; t < num_frames; ++t)
    exponents_[t] = std::min(row_max_[t], 0.0);
  exp_nonpositive(exponents_.data(), row_scale_.data(), static_cast<size_t>(num_frames));
  // K_t = sum_{tau > t} log c_tau - log D_{t+1}, so that the frame check reads
  // log R_t - K_t - log a_T(F) = 0 and eps_Z's term is exp(log d_t - K_t - ...).
  double k = log_scale_[num_frames];
  const double floor_numerator = (automaton.max_out_degree() + 1) * 0x1p-1019;
  for (Eigen::Index t = num_frames - 1; t >= 0; --t) {
    const double* p = probs_.data() + t * row_size;
    const double* a = alpha_.data() + t * num_states;
    const double* a_next = alpha_.data() + (t + 1) * num_states;
    const double* b = beta_next_.data();
    double* v = state_values_.data();
    double* pb = weighted_beta_.data();
    // Pure states: the occupancy of the edges into s is c_{t+1} a_{t+1}(s)
    // b_{t+1}(s), and the backward sums take P b once per state.
    const double c = scale_[t + 1];
    double frame_sum = 0;
    for (uint32_t s = 0; s < num_states; ++s) {
      pb[s] = p[state_class[s]] * b[s];
      occupancy_[s] = c * a_next[s] * b[s];
      v[s] = 0;
    }
    for (const auto& band : automaton.bands())
      multiply_add(v + (band.first - band.offset), weight + band.start, pb + band.first,
                   band.length);
    for (const auto& e : automaton.pure_edges())
      v[e.from] += weight[e.slot] * pb[e.to];
    for (size_t j = 0; j < mixed_edges.size(); ++j) {
      const auto& e = mixed_edges[j];
      const double x = weight[e.slot] * p[e.emission] * b[e.to];
      v[e.from] += x;
      mixed_values_[j] = x * a[e.from];
      frame_sum += mixed_values_[j];
    }
    for (Eigen::Index cls = 0; cls < num_classes; ++cls) {
      double sum = 0;
      for (uint32_t i = class_offsets[cls]; i < class_offsets[cls + 1]; ++i)
        sum += occupancy_[class_states[i]];
      gamma_row_[cls] = sum;
      frame_sum += sum;
    }
    for (size_t j = 0; j < mixed_edges.size(); ++j)
      gamma_row_[mixed_edges[j].emission] += mixed_values_[j];
    if (!(std::abs(std::log(frame_sum) - k - log_final_) <= max_frame_mismatch))
      return false;
    const double inverse = 1 / frame_sum;
    for (Eigen::Index cls = 0; cls < num_classes; ++cls)
      gamma_row_[cls] *= inverse;
    const double row_max = row_max_[t];
    if (std::abs(row_max) <= 300) {
      const double scale = row_max <= 0 ? row_scale_[t] : std::exp(row_max);
      for (Eigen::Index cls = 0; cls < num_classes; ++cls)
        exp_row_[cls] = p[cls] * scale;
    } else {
      const float* lp = log_posteriors.row(t).data();
      for (Eigen::Index cls = 0; cls < num_classes; ++cls)
        exp_row_[cls] = std::exp(static_cast<double>(lp[cls]));
    }
    sink.row(t, gamma_row_.data(), exp_row_.data());
    if (t == 0)
      break;
    // b_t, floored, and eps_Z's term of frame t.
    double d = 0;
    for (uint32_t s = 0; s < num_states; ++s)
      d += v[s];
    if (!(d > 0))
      return false;
    const double floor = std::max(0x1p-1000, floor_numerator / std::min(d, 1.0));
    const double d_inverse = 1 / d;
    double norm = 0;
    for (uint32_t s = 0; s < num_states; ++s) {
      beta_current_[s] = std::max(v[s] * d_inverse, floor);
      norm += beta_current_[s];
    }
    // eps_Z's term of frame t, with |b_t|_1 <= 2.
    const double log_d = std::log(d);
    if (!(norm <= 2 && log_eta(t) + std::log(2.0) + log_d - k - log_final_ <= log_budget))
      return false;
    k += log_scale_[t] - log_d;
    beta_current_.swap(beta_next_);
  }
  return true;
}

} // namespace sprintrt::criterion
