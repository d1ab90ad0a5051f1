#include "sim/corpus_criterion.hpp"

#include <cassert>
#include <utility>

#include "criterion/input_checks.hpp"

namespace sprintrt::sim {

namespace {

constexpr std::pair<criterion_kind, std::string_view> criterion_names[] = {
    {criterion_kind::full_sum, "full-sum"}, {criterion_kind::zero, "zero"},
    {criterion_kind::mmi, "mmi"},           {criterion_kind::bmmi, "bmmi"},
    {criterion_kind::smbr, "smbr"},
};

} // namespace

std::string_view to_string(criterion_kind kind) noexcept {
  for (const auto& [k, name] : criterion_names)
    if (k == kind)
      return name;
  return "?";
}

std::optional<criterion_kind> parse_criterion_kind(std::string_view text) noexcept {
  for (const auto& [kind, name] : criterion_names)
    if (name == text)
      return kind;
  return std::nullopt;
}

std::optional<criterion::sequence_kind> to_sequence_kind(criterion_kind kind) noexcept {
  switch (kind) {
  case criterion_kind::mmi:
    return criterion::sequence_kind::mmi;
  case criterion_kind::bmmi:
    return criterion::sequence_kind::bmmi;
  case criterion_kind::smbr:
    return criterion::sequence_kind::smbr;
  default:
    return std::nullopt;
  }
}

corpus_criterion::corpus_criterion(criterion::corpus segments,
                                   std::shared_ptr<const criterion::topology> automaton_topology,
                                   criterion_spec spec)
    : corpus_(std::move(segments)), topology_(std::move(automaton_topology)),
      spec_(std::move(spec)) {
  assert(topology_ != nullptr);
  assert(!to_sequence_kind(spec_.kind) || spec_.competitors != nullptr);
}

caf::expected<const criterion::fsa*> corpus_criterion::cached_fsa(std::string_view segment) {
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

caf::expected<criterion::fsa>
corpus_criterion::orthography_fsa(std::string_view orthography) const {
  std::vector<uint32_t> labels;
  const std::string owner = "orthography '" + std::string{orthography} + "'";
  if (auto problem = criterion::append_labels(orthography, owner, labels); !problem.empty())
    return make_error(errc::invalid_input, problem);
  return topology_->build(owner, labels);
}

caf::expected<const criterion::fsa*>
corpus_criterion::exported_fsa(fsa_source source, std::string_view text,
                               std::optional<criterion::fsa>& built) {
  if (source != fsa_source::orthography)
    return cached_fsa(text);
  auto automaton = orthography_fsa(text);
  if (!automaton)
    return std::move(automaton.error());
  return &built.emplace(std::move(*automaton));
}

caf::expected<criterion::full_sum_result>
corpus_criterion::loss_and_error_signal(std::string_view segment,
                                        const criterion::log_posteriors_ref& log_posteriors,
                                        criterion::error_signal_ref error_signal) {
  if (spec_.kind == criterion_kind::zero) {
    // The same input checks as the full-sum's, minus those that need the FSA.
    if (auto err = criterion::check_log_posteriors(segment, log_posteriors))
      return err;
    if (auto err = criterion::check_output_shape(segment, log_posteriors, error_signal.rows(),
                                                 error_signal.cols()))
      return err;
    error_signal.setZero();
    return criterion::full_sum_result{0.0, false};
  }
  auto automaton = cached_fsa(segment);
  if (!automaton)
    return std::move(automaton.error());
  const auto sequence = to_sequence_kind(spec_.kind);
  if (!sequence)
    return engine_.loss_and_error_signal(segment, **automaton, log_posteriors, error_signal);
  auto competitors = spec_.competitors->lookup(segment);
  if (!competitors)
    return std::move(competitors.error());
  const criterion::sequence_segment inputs{segment,
                                           *automaton,
                                           competitors->graph,
                                           competitors->max_emission,
                                           competitors->reference_cost,
                                           competitors->layout};
  return criterion::sequence_loss(*sequence, spec_.scales, inputs, log_posteriors, error_signal,
                                  sequences_);
}

caf::expected<criterion::fsa> corpus_criterion::segment_fsa(std::string_view segment) {
  auto automaton = cached_fsa(segment);
  if (!automaton)
    return std::move(automaton.error());
  return **automaton;
}

caf::expected<criterion::viterbi_alignment>
corpus_criterion::align(std::string_view segment,
                        const criterion::log_posteriors_ref& log_posteriors) {
  auto automaton = cached_fsa(segment);
  if (!automaton)
    return std::move(automaton.error());
  return aligner_.align(segment, **automaton, log_posteriors);
}

} // namespace sprintrt::sim
