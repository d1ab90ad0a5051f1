#include "criterion/sequence_criterion.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "criterion/input_checks.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::criterion {

namespace {

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", x);
  return text;
}

caf::error check_denominator(const sequence_segment& segment, Eigen::Index num_classes) {
  if (static_cast<Eigen::Index>(segment.denominator_max_emission) < num_classes)
    return {};
  return make_error(errc::invalid_input,
                    "segment '" + std::string{segment.name} + "': the denominator emits label " +
                        std::to_string(segment.denominator_max_emission) +
                        ", which is not a class of the log-posteriors (they have " +
                        std::to_string(num_classes) + " columns)");
}

} // namespace

std::string check_scales(sequence_kind kind, const sequence_scales& scales) {
  if (!std::isfinite(scales.am) || scales.am <= 0)
    return "am-scale " + number(scales.am) + " is not a finite number > 0";
  if (!std::isfinite(scales.lm) || scales.lm < 0)
    return "lm-scale " + number(scales.lm) + " is not a finite number >= 0";
  if (!std::isfinite(scales.boost) || scales.boost < 0)
    return "boost " + number(scales.boost) + " is not a finite number >= 0";
  if (scales.boost != 0 && kind != sequence_kind::bmmi)
    return "boost applies to criterion bmmi only";
  return {};
}

caf::expected<full_sum_result> sequence_loss(sequence_kind kind, const sequence_scales& scales,
                                             const sequence_segment& segment,
                                             const log_posteriors_ref& log_posteriors,
                                             error_signal_ref error_signal,
                                             sequence_engine& engine) {
  if (auto err = check_segment_inputs(segment.name, *segment.numerator, log_posteriors))
    return err;
  if (auto err = check_denominator(segment, log_posteriors.cols()))
    return err;
  if (auto err = check_output_shape(segment.name, log_posteriors, error_signal.rows(),
                                    error_signal.cols()))
    return err;
  const auto frames = log_posteriors.rows();
  const row_matrix_d scores = scales.am * log_posteriors.cast<double>();
  row_matrix_d gradient = row_matrix_d::Zero(frames, log_posteriors.cols());
  const wfsa numerator = to_wfsa(*segment.numerator, segment.reference_cost);
  // The numerator's best path (bmmi, smbr) and log Z_num (mmi, bmmi); either
  // is missing exactly when no numerator path has a finite score.
  std::optional<std::vector<uint32_t>> best;
  if (kind != sequence_kind::mmi)
    best = engine.best_path(numerator, scores);
  double log_numerator = 0;
  if (kind != sequence_kind::smbr) {
    log_numerator = engine.run(numerator, scores);
    if (std::isfinite(log_numerator))
      engine.add_occupancy(-scales.am, gradient);
  }
  const auto skip = [&](const char* graph) {
    logger().log(engine.warn_on_skip() ? spdlog::level::warn : spdlog::level::debug,
                 "segment '{}' skipped: its {} has no path of {} frames with nonzero "
                 "probability; loss is inf, error signal zero",
                 segment.name, graph, frames);
    error_signal.setZero();
    return full_sum_result{std::numeric_limits<double>::infinity(), true};
  };
  if ((kind != sequence_kind::mmi && !best) || !std::isfinite(log_numerator))
    return skip("reference");
  // A denominator holds the reference's paths when the corpus builds it;
  // one given by a caller (sprintrt.torch.fsa_loss) may miss them all.
  double loss = 0;
  if (kind == sequence_kind::smbr) {
    if (!std::isfinite(engine.run(*segment.denominator, scores)))
      return skip("denominator");
    loss = -engine.expect_accuracy(*best, -scales.am, gradient);
  } else {
    // bmmi: every denominator path pays B per frame on which it agrees with
    // the best path, i.e. B at each frame's best-path column.
    row_matrix_d boosted;
    if (kind == sequence_kind::bmmi) {
      boosted = scores;
      for (Eigen::Index t = 0; t < frames; ++t)
        boosted(t, (*best)[static_cast<size_t>(t)]) -= scales.boost;
    }
    const double log_denominator =
        engine.run(*segment.denominator, kind == sequence_kind::bmmi ? boosted : scores);
    if (!std::isfinite(log_denominator))
      return skip("denominator");
    loss = log_denominator - log_numerator;
    engine.add_occupancy(scales.am, gradient);
  }
  error_signal = gradient.cast<float>();
  return full_sum_result{loss, false};
}

} // namespace sprintrt::criterion
