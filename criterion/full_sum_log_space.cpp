#include "criterion/full_sum_log_space.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sprintrt::criterion {

// Full-sum forward-backward in log space
// =======================================
//
// The reference computation: exact over the whole range of double
// log-scores, used for every segment the scaled linear-space pass
// (full_sum_scaled.cpp) cannot certify, and by tests as the yardstick.
//
// Notation: T frames, D classes, y[t, k] = log_posteriors[t, k], an FSA with
// states 0..S-1 (start 0, final F = S-1) and edges e = (from, to, emission k_e,
// weight w_e); s_e(t) = -w_e + y[t, k_e] is the log-score of taking e at frame t
// (t = 0..T-1). A path is e_0..e_{T-1}, a chain from 0 to F; its log-score is
// sum_t s_{e_t}(t).
//
// Forward:  alpha_0(s) = 0 if s = 0 else -inf,
//           alpha_{t+1}(s) = logsumexp over e with to(e) = s of alpha_t(from(e)) + s_e(t),
//           so alpha_t(s) is the log-sum over all t-edge paths from 0 to s.
// Total:    log Z = alpha_T(F); loss = -log Z.
// Backward: beta_T(s) = 0 if s = F else -inf,
//           beta_t(s) = logsumexp over e with from(e) = s of s_e(t) + beta_{t+1}(to(e)).
// Occupancy of edge e at frame t (the posterior probability that the path
// takes e at frame t):
//           occ_e(t) = exp(alpha_t(from(e)) + s_e(t) + beta_{t+1}(to(e)) - log Z),
//           gamma[t, k] = sum over e with k_e = k of occ_e(t), and sum_k gamma[t, k] = 1.
//
// Error signal: the loss depends on the pre-softmax activations z through
// y = log_softmax(z). dLoss/dy[t, k] = -gamma[t, k], and
// dy[t, k]/dz[t, j] = [k = j] - softmax(z)[t, j], so
//           dLoss/dz[t, j] = -gamma[t, j] + softmax(z)[t, j] * sum_k gamma[t, k]
//                          = exp(y[t, j]) - gamma[t, j].
// (exp(y) is the softmax whenever y is normalized; we use exp(y) as given, as
// RASR does, which is the gradient for the normalized case.)
//
// Numerics: everything is accumulated in double in log space. A logsumexp of
// values v_e is m + log sum exp(v_e - m) with m = max v_e: the largest term is
// exactly exp(0) = 1, so the sum neither overflows nor underflows, and terms far
// below the maximum vanish as they should. When every v_e is -inf (a state no
// path reaches), the result is -inf; the shift is then 0 to avoid -inf - -inf.
//
// Cost per frame: one gather and one exp per edge in each direction, one log per
// state in each direction, one exp per state for occupancies, and D exps for
// the softmax; nothing is allocated. The gathers walk the CSR arrays linearly.
// The exps and logs are glibc's, in straight loops: on this project's baseline
// x86-64 build (SSE2 only) Eigen's packet exp for double takes about 5 ns per
// value against glibc's 3.6 ns (which dispatches to FMA code at run time), and
// it returns 5.6e-309 instead of 0 for -inf. Occupancies are summed per class
// over the edges grouped by emission (`fsa_csr::group_emissions`), so each
// class's sum stays in a register instead of chaining stores on the blank.
//
// Occupancies reuse the backward step: with v_e = s_e(t) + beta_{t+1}(to(e)) and
// m_s = max over the edges out of s, the backward step leaves exp(v_e - m_s) per
// edge, so occ_e(t) = exp(v_e - m_s) * exp(alpha_t(s) + m_s - log Z): one exp per
// edge and one per state, instead of two per edge. Both factors are at most
// about 1 (alpha_t(s) + m_s <= alpha_t(s) + beta_t(s) <= log Z), so the product
// is as accurate as the direct formula.

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

} // namespace

// target[s] = logsumexp over the edges e of s in `edges` of
// source[other(e)] + score(e) + lp_row[emission(e)]. Leaves exp(v_e - m_s) in
// edge_values_ and m_s in state_max_ for the occupancies.
void log_space_full_sum::log_sum_step(const fsa_csr& csr, const fsa_csr::grouping& edges,
                                      const double* source, const float* lp_row, double* target) {
  const uint32_t num_states = csr.num_states();
  const uint32_t num_edges = csr.num_edges();
  const uint32_t* offsets = edges.offsets.data();
  double* values = edge_values_.data();
  for (uint32_t s = 0; s < num_states; ++s) {
    double max = neg_inf;
    for (uint32_t e = offsets[s]; e < offsets[s + 1]; ++e) {
      values[e] = source[edges.other[e]] + edges.score[e] + lp_row[edges.emission[e]];
      max = std::max(max, values[e]);
    }
    state_max_[s] = max;
  }
  // Separate passes: subtracting right after the stores above would stall on
  // store-to-load forwarding, and the exps run best as one straight loop.
  for (uint32_t s = 0; s < num_states; ++s) {
    const double shift = state_max_[s] == neg_inf ? 0.0 : state_max_[s];
    for (uint32_t e = offsets[s]; e < offsets[s + 1]; ++e)
      values[e] -= shift;
  }
  // Dead edges and states (-inf) bypass libm: its special-case paths for
  // exp(-inf) and log(0) are several times slower than the regular ones, and
  // early and late frames have many of them.
  for (uint32_t e = 0; e < num_edges; ++e)
    values[e] = values[e] == neg_inf ? 0.0 : std::exp(values[e]);
  for (uint32_t s = 0; s < num_states; ++s) {
    double sum = 0;
    for (uint32_t e = offsets[s]; e < offsets[s + 1]; ++e)
      sum += values[e];
    target[s] = state_max_[s] == neg_inf ? neg_inf : state_max_[s] + std::log(sum);
  }
}

double log_space_full_sum::forward(const fsa_csr& csr, const log_posteriors_ref& log_posteriors) {
  const Eigen::Index num_frames = log_posteriors.rows();
  const size_t num_states = csr.num_states();
  alpha_.resize((num_frames + 1) * num_states);
  edge_values_.resize(csr.num_edges());
  state_max_.resize(num_states);
  std::fill(alpha_.begin(), alpha_.begin() + num_states, neg_inf);
  alpha_[fsa::start_state] = 0;
  for (Eigen::Index t = 0; t < num_frames; ++t) {
    const double* previous = alpha_.data() + t * num_states;
    log_sum_step(csr, csr.incoming(), previous, log_posteriors.row(t).data(),
                 alpha_.data() + (t + 1) * num_states);
  }
  return alpha_[num_frames * num_states + csr.final_state()];
}

void log_space_full_sum::backward(const fsa_csr& csr, const log_posteriors_ref& log_posteriors,
                                  double log_total, full_sum_row_sink& sink) {
  const auto& out = csr.outgoing();
  const uint32_t num_states = csr.num_states();
  const auto num_classes = static_cast<uint32_t>(log_posteriors.cols());
  const uint32_t* class_offsets = csr.emission_offsets().data();
  const uint32_t* class_edges = csr.emission_edges().data();
  beta_current_.resize(num_states);
  beta_next_.assign(num_states, neg_inf);
  beta_next_[csr.final_state()] = 0;
  gamma_row_.resize(num_classes);
  double* values = edge_values_.data();
  for (Eigen::Index t = log_posteriors.rows() - 1; t >= 0; --t) {
    log_sum_step(csr, out, beta_next_.data(), log_posteriors.row(t).data(), beta_current_.data());
    // Turn exp(v_e - m_s) into the occupancy of each edge.
    const double* alpha = alpha_.data() + t * num_states;
    for (uint32_t s = 0; s < num_states; ++s) {
      const double log_factor = alpha[s] + state_max_[s] - log_total;
      const double factor = log_factor == neg_inf ? 0.0 : std::exp(log_factor);
      for (uint32_t e = out.offsets[s]; e < out.offsets[s + 1]; ++e)
        values[e] *= factor;
    }
    for (uint32_t k = 0; k < num_classes; ++k) {
      double sum = 0;
      for (uint32_t i = class_offsets[k]; i < class_offsets[k + 1]; ++i)
        sum += values[class_edges[i]];
      gamma_row_[k] = sum;
    }
    sink.row(t, gamma_row_.data(), nullptr);
    beta_current_.swap(beta_next_);
  }
}

} // namespace sprintrt::criterion
