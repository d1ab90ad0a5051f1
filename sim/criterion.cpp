#include "sim/criterion.hpp"

#include <cassert>
#include <utility>

#include "sim/input_checks.hpp"

namespace sprintrt::sim {

std::string_view to_string(criterion_kind kind) noexcept {
  return kind == criterion_kind::zero ? "zero" : "full-sum";
}

std::optional<criterion_kind> parse_criterion_kind(std::string_view text) noexcept {
  if (text == "full-sum")
    return criterion_kind::full_sum;
  if (text == "zero")
    return criterion_kind::zero;
  return std::nullopt;
}

criterion::criterion(corpus segments, std::shared_ptr<const topology> automaton_topology,
                     criterion_kind kind)
    : corpus_(std::move(segments)), topology_(std::move(automaton_topology)), kind_(kind) {
  assert(topology_ != nullptr);
}

caf::expected<const fsa*> criterion::cached_fsa(std::string_view segment) {
  if (auto i = fsas_.find(segment); i != fsas_.end())
    return &i->second;
  auto labels = corpus_.labels(segment);
  if (!labels)
    return std::move(labels.error());
  auto automaton = topology_->build("segment '" + std::string{segment} + "'", *labels);
  if (!automaton)
    return std::move(automaton.error());
  return &fsas_.emplace(std::string{segment}, std::move(*automaton)).first->second;
}

caf::expected<fsa> criterion::orthography_fsa(std::string_view orthography) const {
  std::vector<uint32_t> labels;
  const std::string owner = "orthography '" + std::string{orthography} + "'";
  if (auto problem = append_labels(orthography, owner, labels); !problem.empty())
    return make_error(errc::invalid_input, problem);
  return topology_->build(owner, labels);
}

caf::expected<const fsa*> criterion::exported_fsa(fsa_source source, std::string_view text,
                                                  std::optional<fsa>& built) {
  if (source != fsa_source::orthography)
    return cached_fsa(text);
  auto automaton = orthography_fsa(text);
  if (!automaton)
    return std::move(automaton.error());
  return &built.emplace(std::move(*automaton));
}

caf::expected<full_sum_result>
criterion::loss_and_error_signal(std::string_view segment, const log_posteriors_ref& log_posteriors,
                                 error_signal_ref error_signal) {
  if (kind_ == criterion_kind::zero) {
    // The same input checks as the full-sum's, minus those that need the FSA.
    if (auto err = check_log_posteriors(segment, log_posteriors))
      return err;
    if (auto err =
            check_output_shape(segment, log_posteriors, error_signal.rows(), error_signal.cols()))
      return err;
    error_signal.setZero();
    return full_sum_result{0.0, false};
  }
  auto automaton = cached_fsa(segment);
  if (!automaton)
    return std::move(automaton.error());
  return engine_.loss_and_error_signal(segment, **automaton, log_posteriors, error_signal);
}

caf::expected<fsa> criterion::segment_fsa(std::string_view segment) {
  auto automaton = cached_fsa(segment);
  if (!automaton)
    return std::move(automaton.error());
  return **automaton;
}

caf::expected<viterbi_alignment> criterion::align(std::string_view segment,
                                                  const log_posteriors_ref& log_posteriors) {
  auto automaton = cached_fsa(segment);
  if (!automaton)
    return std::move(automaton.error());
  return aligner_.align(segment, **automaton, log_posteriors);
}

} // namespace sprintrt::sim
