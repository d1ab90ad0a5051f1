#include "criterion/input_checks.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace sprintrt::criterion {

namespace {

std::string segment_prefix(std::string_view segment) {
  return "segment '" + std::string{segment} + "': ";
}

} // namespace

caf::error check_log_posteriors(std::string_view segment,
                                const log_posteriors_ref& log_posteriors) {
  if (log_posteriors.rows() == 0 || log_posteriors.cols() == 0)
    return make_error(errc::invalid_input, segment_prefix(segment) + "log-posteriors have shape [" +
                                               std::to_string(log_posteriors.rows()) + ", " +
                                               std::to_string(log_posteriors.cols()) +
                                               "] (need at least one frame and one class)");
  constexpr float inf = std::numeric_limits<float>::infinity();
  // One pass the compiler vectorizes for the common case (!(x < inf) holds
  // for NaN and +inf only; Eigen's isNaN() || == inf is evaluated element by
  // element, about ten times slower); the scan for the position runs only
  // when there is something to report.
  unsigned bad = 0;
  for (Eigen::Index t = 0; t < log_posteriors.rows(); ++t) {
    const float* row = log_posteriors.row(t).data();
    for (Eigen::Index k = 0; k < log_posteriors.cols(); ++k)
      bad |= static_cast<unsigned>(!(row[k] < inf));
  }
  if (bad == 0)
    return {};
  for (Eigen::Index t = 0; t < log_posteriors.rows(); ++t)
    for (Eigen::Index k = 0; k < log_posteriors.cols(); ++k) {
      const float x = log_posteriors(t, k);
      if (std::isnan(x) || x == inf)
        return make_error(errc::invalid_input, segment_prefix(segment) + "log-posterior at frame " +
                                                   std::to_string(t) + ", index " +
                                                   std::to_string(k) + " is " +
                                                   (std::isnan(x) ? "NaN" : "+inf") +
                                                   " (only finite values and -inf are valid)");
    }
  return {};
}

caf::error check_emissions(std::string_view segment, const fsa& automaton,
                           Eigen::Index num_classes) {
  const auto emissions = automaton.emissions();
  for (size_t e = 0; e < emissions.size(); ++e)
    if (static_cast<Eigen::Index>(emissions[e]) >= num_classes)
      return make_error(errc::invalid_input,
                        segment_prefix(segment) + "label " + std::to_string(emissions[e]) +
                            " (emitted by FSA edge " + std::to_string(e) +
                            ") is not a class of the log-posteriors, which have " +
                            std::to_string(num_classes) + " columns");
  return {};
}

caf::error check_segment_inputs(std::string_view segment, const fsa& automaton,
                                const log_posteriors_ref& log_posteriors) {
  if (auto err = check_log_posteriors(segment, log_posteriors))
    return err;
  return check_emissions(segment, automaton, log_posteriors.cols());
}

caf::error check_output_shape(std::string_view segment, const log_posteriors_ref& log_posteriors,
                              Eigen::Index rows, Eigen::Index cols) {
  if (rows == log_posteriors.rows() && cols == log_posteriors.cols())
    return {};
  return make_error(errc::invalid_input, segment_prefix(segment) + "output has shape [" +
                                             std::to_string(rows) + ", " + std::to_string(cols) +
                                             "], but the log-posteriors have shape [" +
                                             std::to_string(log_posteriors.rows()) + ", " +
                                             std::to_string(log_posteriors.cols()) + "]");
}

} // namespace sprintrt::criterion
