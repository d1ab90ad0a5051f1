#include "criterion/sequence_criterion.hpp"

#include <algorithm>
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

namespace {

// The criterion over `scores` [T, D] (already scaled by KAPPA) in log space:
// the reference. Returns the loss, or the graph ("reference",
// "denominator") without a path of finite score.
struct log_space_result {
  double loss = 0;
  const char* pathless = nullptr;
};

log_space_result log_space_loss(sequence_kind kind, const sequence_scales& scales,
                                const sequence_segment& segment, const wfsa& numerator,
                                const std::optional<std::vector<uint32_t>>& best,
                                const row_matrix_d& scores, const row_matrix_d& boosted,
                                sequence_engine& engine, row_matrix_d& gradient) {
  double log_numerator = 0;
  if (kind != sequence_kind::smbr) {
    log_numerator = engine.run(numerator, scores);
    if (!std::isfinite(log_numerator))
      return {0, "reference"};
    engine.add_occupancy(-scales.am, gradient);
  }
  // A denominator holds the reference's paths when the corpus builds it;
  // one given by a caller (sprintrt.torch.fsa_loss) may miss them all.
  if (kind == sequence_kind::smbr) {
    if (!std::isfinite(engine.run(*segment.denominator, scores)))
      return {0, "denominator"};
    return {-engine.expect_accuracy(*best, -scales.am, gradient), nullptr};
  }
  const double log_denominator =
      engine.run(*segment.denominator, kind == sequence_kind::bmmi ? boosted : scores);
  if (!std::isfinite(log_denominator))
    return {0, "denominator"};
  engine.add_occupancy(scales.am, gradient);
  return {log_denominator - log_numerator, nullptr};
}

} // namespace

// Runs a block of jobs: the checks, the numerators' best paths and scaled
// forward-backward per job, the denominators per group of jobs sharing one
// layout, and the log-space reference for each job the scaled recursions
// hand back. A friend of the workspace, whose buffers it uses.
struct sequence_block {
  enum class state : uint8_t { pending, done, log_space };

  sequence_kind kind;
  const sequence_scales& scales;
  span<const sequence_job> jobs;
  span<full_sum_result> results;
  sequence_workspace& ws;
  std::vector<state> states;
  std::vector<double> log_numerator;

  caf::error run();
  caf::error start(size_t i);
  void run_denominators();
  void run_log_space(size_t i);
  void skip(size_t i, const char* graph);
  void finish(size_t i, double loss);
};

caf::error sequence_block::run() {
  const size_t n = jobs.size();
  ws.scores_.resize(n);
  ws.boosted_.resize(n);
  ws.gradient_.resize(n);
  ws.best_.resize(n);
  states.assign(n, state::pending);
  log_numerator.assign(n, 0);
  caf::error first;
  for (size_t i = 0; i < n; ++i)
    if (auto err = start(i); err && !first)
      first = std::move(err);
  run_denominators();
  for (size_t i = 0; i < n; ++i)
    if (states[i] == state::log_space)
      run_log_space(i);
  return first;
}

caf::error sequence_block::start(size_t i) {
  const auto& job = jobs[i];
  const auto& segment = job.segment;
  const Eigen::Map<const row_matrix_f, 0, Eigen::OuterStride<>> log_posteriors{
      job.log_posteriors, job.frames, job.classes, Eigen::OuterStride<>{job.input_stride}};
  auto check = check_segment_inputs(segment.name, *segment.numerator, log_posteriors);
  if (!check)
    check = check_denominator(segment, job.classes);
  if (check) {
    states[i] = state::done;
    return check;
  }
  auto& scores = ws.scores_[i];
  scores = scales.am * log_posteriors.cast<double>();
  ws.gradient_[i].setZero(job.frames, job.classes);
  // The numerator as a `wfsa`, for Viterbi and the engine.
  auto& numerator = ws.numerator_;
  to_wfsa(*segment.numerator, segment.reference_cost, numerator);
  // The numerator's best path (bmmi, smbr): missing exactly when no
  // numerator path has a finite score. Viterbi needs no scaling.
  if (kind != sequence_kind::mmi) {
    auto best = ws.log_space_.best_path(numerator, scores);
    if (!best) {
      skip(i, "reference");
      return {};
    }
    ws.best_[i] = std::move(*best);
  }
  // bmmi: every denominator path pays B per frame on which it agrees with
  // the best path, i.e. B at each frame's best-path column.
  if (kind == sequence_kind::bmmi) {
    ws.boosted_[i] = scores;
    for (Eigen::Index t = 0; t < job.frames; ++t)
      ws.boosted_[i](t, ws.best_[i][static_cast<size_t>(t)]) -= scales.boost;
  }
  if (kind != sequence_kind::smbr) {
    auto& layout = ws.numerator_layout_;
    ws.builder_.lay_out(numerator, frame_graph_storage::automatic, layout);
    scaled_outcome outcome;
    if (layout.unrepresentable.empty()) {
      const auto sequence = scaled_sequence::of(scores, &ws.gradient_[i]);
      ws.scaled_.run(layout, {&sequence, 1}, true, -scales.am, {&outcome, 1});
    }
    if (!outcome.exact) {
      if (layout.unrepresentable.empty())
        logger().debug("segment '{}', numerator: {} (frame {}); computed in log space",
                       segment.name, outcome.why, outcome.frame);
      states[i] = state::log_space;
      return {};
    }
    log_numerator[i] = outcome.log_z;
  }
  return {};
}

void sequence_block::run_denominators() {
  std::vector<size_t> members;
  std::vector<scaled_sequence> sequences;
  std::vector<scaled_outcome> outcomes;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (states[i] != state::pending)
      continue;
    // Job i and the later pending ones with the same layout.
    std::optional<frame_graph> own;
    const frame_graph* layout = jobs[i].segment.denominator_layout;
    members.assign(1, i);
    if (layout == nullptr) {
      layout = &own.emplace(lay_out(*jobs[i].segment.denominator));
    } else {
      for (size_t j = i + 1; j < jobs.size(); ++j)
        if (states[j] == state::pending && jobs[j].segment.denominator_layout == layout)
          members.push_back(j);
    }
    if (!layout->unrepresentable.empty()) {
      for (const size_t m : members)
        states[m] = state::log_space;
      continue;
    }
    sequences.clear();
    for (const size_t m : members) {
      span<const uint32_t> reference;
      if (kind == sequence_kind::smbr)
        reference = {ws.best_[m].data(), ws.best_[m].size()};
      sequences.push_back(
          scaled_sequence::of(kind == sequence_kind::bmmi ? ws.boosted_[m] : ws.scores_[m],
                              &ws.gradient_[m], reference));
    }
    outcomes.resize(members.size());
    const double factor = kind == sequence_kind::smbr ? -scales.am : scales.am;
    ws.scaled_.run(*layout, {sequences.data(), sequences.size()}, true, factor,
                   {outcomes.data(), outcomes.size()});
    for (size_t k = 0; k < members.size(); ++k) {
      const size_t m = members[k];
      if (!outcomes[k].exact) {
        logger().debug("segment '{}', denominator: {} (frame {}); computed in log space",
                       jobs[m].segment.name, outcomes[k].why, outcomes[k].frame);
        states[m] = state::log_space;
        continue;
      }
      ++ws.stats_.scaled;
      finish(m, kind == sequence_kind::smbr ? -outcomes[k].expected_accuracy
                                            : outcomes[k].log_z - log_numerator[m]);
    }
  }
}

void sequence_block::run_log_space(size_t i) {
  ++ws.stats_.log_space;
  const auto& segment = jobs[i].segment;
  auto& gradient = ws.gradient_[i];
  gradient.setZero();
  std::optional<std::vector<uint32_t>> best;
  if (kind != sequence_kind::mmi)
    best = ws.best_[i];
  const auto result =
      log_space_loss(kind, scales, segment, to_wfsa(*segment.numerator, segment.reference_cost),
                     best, ws.scores_[i], ws.boosted_[i], ws.log_space_, gradient);
  if (result.pathless != nullptr)
    skip(i, result.pathless);
  else
    finish(i, result.loss);
}

void sequence_block::skip(size_t i, const char* graph) {
  const auto& job = jobs[i];
  ++ws.stats_.skipped;
  logger().log(ws.warn_on_skip_ ? spdlog::level::warn : spdlog::level::debug,
               "segment '{}' skipped: its {} has no path of {} frames with nonzero "
               "probability; loss is inf, error signal zero",
               job.segment.name, graph, job.frames);
  for (Eigen::Index t = 0; t < job.frames; ++t)
    std::fill_n(job.error_signal + t * job.output_stride, job.classes, 0.0f);
  results[i] = full_sum_result{std::numeric_limits<double>::infinity(), true};
  states[i] = state::done;
}

void sequence_block::finish(size_t i, double loss) {
  const auto& job = jobs[i];
  const auto& gradient = ws.gradient_[i];
  for (Eigen::Index t = 0; t < job.frames; ++t) {
    float* row = job.error_signal + t * job.output_stride;
    for (Eigen::Index k = 0; k < job.classes; ++k)
      row[k] = static_cast<float>(gradient(t, k));
  }
  results[i] = full_sum_result{loss, false};
  states[i] = state::done;
}

caf::error sequence_loss_block(sequence_kind kind, const sequence_scales& scales,
                               span<const sequence_job> jobs, span<full_sum_result> results,
                               sequence_workspace& workspace) {
  return sequence_block{kind, scales, jobs, results, workspace, {}, {}}.run();
}

caf::expected<full_sum_result> sequence_loss(sequence_kind kind, const sequence_scales& scales,
                                             const sequence_segment& segment,
                                             const log_posteriors_ref& log_posteriors,
                                             error_signal_ref error_signal,
                                             sequence_workspace& workspace) {
  if (auto err = check_output_shape(segment.name, log_posteriors, error_signal.rows(),
                                    error_signal.cols()))
    return err;
  const sequence_job job{segment,
                         log_posteriors.data(),
                         log_posteriors.rows(),
                         log_posteriors.cols(),
                         log_posteriors.outerStride(),
                         error_signal.data(),
                         error_signal.outerStride()};
  full_sum_result result;
  if (auto err = sequence_loss_block(kind, scales, {&job, 1}, {&result, 1}, workspace))
    return err;
  return result;
}

} // namespace sprintrt::criterion
