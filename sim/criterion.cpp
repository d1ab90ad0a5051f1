#include "sim/criterion.hpp"

#include <cassert>
#include <utility>

namespace sprintrt::sim {

criterion::criterion(corpus segments, std::shared_ptr<const topology> automaton_topology)
    : corpus_(std::move(segments)), topology_(std::move(automaton_topology)) {
  assert(topology_ != nullptr);
}

caf::expected<const fsa*> criterion::cached_fsa(std::string_view segment) {
  if (auto i = fsas_.find(segment); i != fsas_.end())
    return &i->second;
  auto labels = corpus_.labels(segment);
  if (!labels)
    return std::move(labels.error());
  auto automaton = topology_->build(segment, *labels);
  if (!automaton)
    return std::move(automaton.error());
  return &fsas_.emplace(std::string{segment}, std::move(*automaton)).first->second;
}

caf::expected<full_sum_result>
criterion::loss_and_error_signal(std::string_view segment, const log_posteriors_ref& log_posteriors,
                                 error_signal_ref error_signal) {
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
