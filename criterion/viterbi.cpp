#include "criterion/viterbi.hpp"

#include <algorithm>
#include <limits>

#include "criterion/input_checks.hpp"

namespace sprintrt::criterion {

// The full-sum's forward recursion with max in place of logsumexp, plus a
// back-pointer per frame and state:
//   best_{t+1}(s) = max over e with to(e) = s of best_t(from(e)) + s_e(t),
// then the path is read backwards from the final state at frame T.
caf::expected<viterbi_alignment> viterbi_aligner::align(std::string_view segment,
                                                        const fsa& automaton,
                                                        const log_posteriors_ref& log_posteriors) {
  if (auto err = check_segment_inputs(segment, automaton, log_posteriors))
    return err;
  constexpr double neg_inf = -std::numeric_limits<double>::infinity();
  constexpr uint32_t none = std::numeric_limits<uint32_t>::max();
  csr_.assign(automaton);
  const auto& in = csr_.incoming();
  const Eigen::Index num_frames = log_posteriors.rows();
  const size_t num_states = csr_.num_states();
  best_.resize((num_frames + 1) * num_states);
  back_.resize(num_frames * num_states);
  std::fill(best_.begin(), best_.begin() + num_states, neg_inf);
  best_[fsa::start_state] = 0;
  for (Eigen::Index t = 0; t < num_frames; ++t) {
    const float* lp_row = log_posteriors.row(t).data();
    const double* previous = best_.data() + t * num_states;
    double* current = best_.data() + (t + 1) * num_states;
    uint32_t* back = back_.data() + t * num_states;
    for (uint32_t s = 0; s < num_states; ++s) {
      double best = neg_inf;
      uint32_t arg = none;
      // Strictly greater: the first of equal candidates wins.
      for (uint32_t e = in.offsets[s]; e < in.offsets[s + 1]; ++e) {
        const double value = previous[in.other[e]] + in.score[e] + lp_row[in.emission[e]];
        if (value > best) {
          best = value;
          arg = e;
        }
      }
      current[s] = best;
      back[s] = arg;
    }
  }
  viterbi_alignment result;
  const double best_total = best_[num_frames * num_states + csr_.final_state()];
  if (best_total == neg_inf) {
    result.cost = std::numeric_limits<double>::infinity();
    result.skipped = true;
    return result;
  }
  result.cost = -best_total;
  result.edges.resize(num_frames);
  result.emissions.resize(num_frames);
  result.states.resize(num_frames);
  uint32_t state = csr_.final_state();
  for (Eigen::Index t = num_frames - 1; t >= 0; --t) {
    const uint32_t pos = back_[t * num_states + state];
    result.edges[t] = in.edge[pos];
    result.emissions[t] = in.emission[pos];
    result.states[t] = state;
    state = in.other[pos];
  }
  return result;
}

} // namespace sprintrt::criterion
