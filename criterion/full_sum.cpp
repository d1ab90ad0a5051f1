#include "criterion/full_sum.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "criterion/frame_graph.hpp"
#include "criterion/input_checks.hpp"
#include "criterion/vector_exp.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::criterion {

// The engine checks the inputs once, turns the FSA into a `wfsa` (start 0,
// its final state final, the edges' costs as they are) and runs the scaled
// forward-backward over a block of this one segment; a segment the scaled
// recursions hand back (see scaled_forward_backward.cpp), or every segment
// when the method says so, takes the log-space recursions, which also tell
// the skipped segments apart.
//
// Error signal: the loss depends on the pre-softmax activations z through
// y = log_softmax(z). dLoss/dy[t, k] = -gamma[t, k], and
// dy[t, k]/dz[t, j] = [k = j] - softmax(z)[t, j], so
//           dLoss/dz[t, j] = -gamma[t, j] + softmax(z)[t, j] * sum_k gamma[t, k]
//                          = exp(y[t, j]) - gamma[t, j].
// (exp(y) is the softmax whenever y is normalized; we use exp(y) as given, as
// RASR does, which is the gradient for the normalized case.) exp(y) is rounded
// to float before gamma is subtracted, whichever recursions ran.

namespace {

// Whether any path of exactly `num_frames` edges leads from the start to the
// final state, ignoring scores: tells "too few frames" from "probability
// zero" in the skip warning. Runs only for skipped segments.
bool has_path(const fsa& automaton, Eigen::Index num_frames) {
  std::vector<char> reached(automaton.num_states(), 0);
  std::vector<char> next(automaton.num_states(), 0);
  reached[fsa::start_state] = 1;
  for (Eigen::Index t = 0; t < num_frames; ++t) {
    std::fill(next.begin(), next.end(), 0);
    for (uint32_t e = 0; e < automaton.num_edges(); ++e) {
      const auto edge = automaton.edge(e);
      if (reached[edge.from] && edge.weight != std::numeric_limits<float>::infinity())
        next[edge.to] = 1;
    }
    reached.swap(next);
  }
  return reached[automaton.final_state()] != 0;
}

} // namespace

template <class Output, class Write>
caf::expected<full_sum_result> full_sum_engine::run(std::string_view segment, const fsa& automaton,
                                                    const log_posteriors_ref& log_posteriors,
                                                    Output& output, Write write) {
  last_path_ = full_sum_path::none;
  if (auto err = check_output_shape(segment, log_posteriors, output.rows(), output.cols()))
    return err;
  if (auto err = check_segment_inputs(segment, automaton, log_posteriors))
    return err;
  const Eigen::Index frames = log_posteriors.rows();
  const Eigen::Index classes = log_posteriors.cols();
  const auto size = static_cast<size_t>(frames * classes);
  to_wfsa(automaton, 0, graph_);
  scores_.resize(std::max(scores_.size(), size));
  occupancy_.resize(std::max(occupancy_.size(), size));
  Eigen::Map<row_matrix_d> scores{scores_.data(), frames, classes};
  Eigen::Map<row_matrix_d> occupancy{occupancy_.data(), frames, classes};
  scores = log_posteriors.cast<double>();
  occupancy.setZero();
  if (method_ == full_sum_method::automatic) {
    builder_.lay_out(graph_, frame_graph_storage::automatic, layout_);
    if (layout_.unrepresentable.empty()) {
      const scaled_sequence sequence{scores_.data(), frames, classes, {}, occupancy_.data()};
      scaled_outcome outcome;
      scaled_.run(layout_, {&sequence, 1}, true, 1.0, {&outcome, 1});
      if (outcome.exact) {
        last_path_ = full_sum_path::scaled;
        write(occupancy);
        return full_sum_result{-outcome.log_z, false};
      }
      occupancy.setZero();
    }
  }
  // The log-space recursions: rare (extreme inputs, skipped segments), so
  // they may allocate.
  last_path_ = full_sum_path::log_space;
  const row_matrix_d log_space_scores = scores;
  const double log_total = log_space_.run(graph_, log_space_scores);
  if (log_total == -std::numeric_limits<double>::infinity()) {
    warn_skipped(segment, automaton, frames);
    output.setZero();
    return full_sum_result{std::numeric_limits<double>::infinity(), true};
  }
  row_matrix_d log_space_occupancy = row_matrix_d::Zero(frames, classes);
  log_space_.add_occupancy(1.0, log_space_occupancy);
  occupancy = log_space_occupancy;
  write(occupancy);
  return full_sum_result{-log_total, false};
}

void full_sum_engine::warn_skipped(std::string_view segment, const fsa& automaton,
                                   Eigen::Index num_frames) const {
  const std::string frames = std::to_string(num_frames) + (num_frames == 1 ? " frame" : " frames");
  logger().log(warn_on_skip_ ? spdlog::level::warn : spdlog::level::debug,
               "segment '{}' skipped: {}; loss is inf, error signal zero", segment,
               has_path(automaton, num_frames)
                   ? "every path of " + frames +
                         " has probability zero (-inf log-posteriors or infinite costs)"
                   : "its FSA has no path of exactly " + frames + " (too few for its labels)");
}

caf::expected<full_sum_result>
full_sum_engine::loss_and_error_signal(std::string_view segment, const fsa& automaton,
                                       const log_posteriors_ref& log_posteriors,
                                       error_signal_ref error_signal) {
  const auto write = [&](const Eigen::Map<row_matrix_d>& gamma) {
    const Eigen::Index num_classes = log_posteriors.cols();
    exponents_.resize(static_cast<size_t>(num_classes));
    exps_.resize(static_cast<size_t>(num_classes));
    for (Eigen::Index t = 0; t < log_posteriors.rows(); ++t) {
      // exp(y) as exp(y - m) exp(m), m <= 0 the row's maximum: the vector
      // exp takes nonpositive arguments only.
      const float* y = log_posteriors.row(t).data();
      const double top = *std::max_element(y, y + num_classes);
      float* out = error_signal.row(t).data();
      if (top == -std::numeric_limits<double>::infinity()) {
        for (Eigen::Index k = 0; k < num_classes; ++k)
          out[k] = static_cast<float>(-gamma(t, k));
        continue;
      }
      if (top > 0) {
        // Scores above 0 (not log-probabilities) are rare enough for libm.
        for (Eigen::Index k = 0; k < num_classes; ++k)
          out[k] = static_cast<float>(static_cast<float>(std::exp(static_cast<double>(y[k]))) -
                                      gamma(t, k));
        continue;
      }
      for (Eigen::Index k = 0; k < num_classes; ++k)
        exponents_[k] = static_cast<double>(y[k]) - top;
      exp_nonpositive(exponents_.data(), exps_.data(), exps_.size());
      const double scale = std::exp(top);
      for (Eigen::Index k = 0; k < num_classes; ++k)
        out[k] = static_cast<float>(static_cast<float>(exps_[k] * scale) - gamma(t, k));
    }
  };
  return run(segment, automaton, log_posteriors, error_signal, write);
}

caf::expected<full_sum_result>
full_sum_engine::loss_and_occupancy(std::string_view segment, const fsa& automaton,
                                    const log_posteriors_ref& log_posteriors,
                                    occupancy_ref occupancy) {
  return run(segment, automaton, log_posteriors, occupancy,
             [&](const Eigen::Map<row_matrix_d>& gamma) { occupancy = gamma; });
}

} // namespace sprintrt::criterion
