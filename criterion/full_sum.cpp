#include "criterion/full_sum.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "criterion/input_checks.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::criterion {

// The engine checks the inputs once, regroups the FSA's edges (fsa_csr), and
// runs the scaled linear-space pass; if that cannot certify its result (see
// full_sum_scaled.cpp), or the method says so, it runs the log-space pass
// (full_sum_log_space.cpp), which also tells the skipped segments apart. Both
// hand each frame's gamma to a sink that writes the caller's output.
//
// Error signal: the loss depends on the pre-softmax activations z through
// y = log_softmax(z). dLoss/dy[t, k] = -gamma[t, k], and
// dy[t, k]/dz[t, j] = [k = j] - softmax(z)[t, j], so
//           dLoss/dz[t, j] = -gamma[t, j] + softmax(z)[t, j] * sum_k gamma[t, k]
//                          = exp(y[t, j]) - gamma[t, j].
// (exp(y) is the softmax whenever y is normalized; we use exp(y) as given, as
// RASR does, which is the gradient for the normalized case.) exp(y) is rounded
// to float before gamma is subtracted, by either pass.

namespace {

/// Writes exp(log_posteriors) - gamma, row by row.
class error_signal_sink final : public full_sum_row_sink {
public:
  error_signal_sink(const log_posteriors_ref& log_posteriors, error_signal_ref& out)
      : log_posteriors_(log_posteriors), out_(out) {}

  void row(Eigen::Index t, const double* gamma, const double* exp_log_posteriors) override {
    const float* lp = log_posteriors_.row(t).data();
    float* out = out_.row(t).data();
    const Eigen::Index num_classes = log_posteriors_.cols();
    if (exp_log_posteriors != nullptr) {
      for (Eigen::Index k = 0; k < num_classes; ++k)
        out[k] = static_cast<float>(static_cast<float>(exp_log_posteriors[k]) - gamma[k]);
    } else {
      for (Eigen::Index k = 0; k < num_classes; ++k)
        out[k] = static_cast<float>(std::exp(lp[k]) - gamma[k]);
    }
  }

private:
  const log_posteriors_ref& log_posteriors_;
  error_signal_ref& out_;
};

/// Writes gamma itself.
class occupancy_sink final : public full_sum_row_sink {
public:
  explicit occupancy_sink(occupancy_ref& out) : out_(out) {}

  void row(Eigen::Index t, const double* gamma, const double*) override {
    out_.row(t) = Eigen::Map<const Eigen::RowVectorXd>{gamma, out_.cols()};
  }

private:
  occupancy_ref& out_;
};

} // namespace

template <class Output>
caf::expected<full_sum_result> full_sum_engine::run(std::string_view segment, const fsa& automaton,
                                                    const log_posteriors_ref& log_posteriors,
                                                    Output& output, full_sum_row_sink& sink) {
  last_path_ = full_sum_path::none;
  if (auto err = check_output_shape(segment, log_posteriors, output.rows(), output.cols()))
    return err;
  if (auto err = check_segment_inputs(segment, automaton, log_posteriors))
    return err;
  const auto num_classes = static_cast<uint32_t>(log_posteriors.cols());
  if (method_ == full_sum_method::automatic) {
    bands_.assign(automaton);
    bands_.group_emissions(num_classes);
    if (auto log_total = scaled_.forward(bands_, log_posteriors);
        log_total && scaled_.backward(bands_, log_posteriors, sink)) {
      last_path_ = full_sum_path::scaled;
      return full_sum_result{-*log_total, false};
    }
  }
  csr_.assign(automaton);
  csr_.group_emissions(num_classes);
  last_path_ = full_sum_path::log_space;
  const double log_total = log_space_.forward(csr_, log_posteriors);
  if (log_total == -std::numeric_limits<double>::infinity()) {
    warn_skipped(segment, log_posteriors.rows());
    output.setZero();
    return full_sum_result{std::numeric_limits<double>::infinity(), true};
  }
  log_space_.backward(csr_, log_posteriors, log_total, sink);
  return full_sum_result{-log_total, false};
}

void full_sum_engine::warn_skipped(std::string_view segment, Eigen::Index num_frames) const {
  const std::string frames = std::to_string(num_frames) + (num_frames == 1 ? " frame" : " frames");
  logger().log(warn_on_skip_ ? spdlog::level::warn : spdlog::level::debug,
               "segment '{}' skipped: {}; loss is inf, error signal zero", segment,
               has_path(num_frames)
                   ? "every path of " + frames +
                         " has probability zero (-inf log-posteriors or infinite costs)"
                   : "its FSA has no path of exactly " + frames + " (too few for its labels)");
}

// Whether the FSA has any path of exactly `num_frames` edges, ignoring scores:
// tells "too few frames" from "probability zero" in the skip warning. Runs only
// for skipped segments, so it may allocate.
bool full_sum_engine::has_path(Eigen::Index num_frames) const {
  const auto& in = csr_.incoming();
  std::vector<char> reached(csr_.num_states(), 0);
  std::vector<char> next(csr_.num_states(), 0);
  reached[fsa::start_state] = 1;
  for (Eigen::Index t = 0; t < num_frames; ++t) {
    for (uint32_t s = 0; s < csr_.num_states(); ++s) {
      next[s] = 0;
      for (uint32_t e = in.offsets[s]; e < in.offsets[s + 1]; ++e)
        next[s] = next[s] || reached[in.other[e]];
    }
    reached.swap(next);
  }
  return reached[csr_.final_state()] != 0;
}

caf::expected<full_sum_result>
full_sum_engine::loss_and_error_signal(std::string_view segment, const fsa& automaton,
                                       const log_posteriors_ref& log_posteriors,
                                       error_signal_ref error_signal) {
  error_signal_sink sink{log_posteriors, error_signal};
  return run(segment, automaton, log_posteriors, error_signal, sink);
}

caf::expected<full_sum_result>
full_sum_engine::loss_and_occupancy(std::string_view segment, const fsa& automaton,
                                    const log_posteriors_ref& log_posteriors,
                                    occupancy_ref occupancy) {
  occupancy_sink sink{occupancy};
  return run(segment, automaton, log_posteriors, occupancy, sink);
}

} // namespace sprintrt::criterion
