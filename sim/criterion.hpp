#pragma once

/// @file
/// The simulated Sprint's criterion: what a Sprint child computes for the
/// protocol's `get_loss_and_error_signal` and
/// `export_allophone_state_fsa_by_segment_name` commands, from a corpus and a
/// topology.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "sim/corpus.hpp"
#include "sim/fsa.hpp"
#include "sim/full_sum.hpp"
#include "sim/matrix_views.hpp"
#include "sim/topology.hpp"
#include "sim/viterbi.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::sim {

/// Looks segments up in a corpus, builds their FSAs with a topology (once per
/// segment: FSAs are cached) and runs the full-sum or Viterbi on them. One per
/// simulated worker; not thread-safe.
class criterion {
public:
  /// A criterion over `segments` whose FSAs `automaton_topology` builds; it
  /// must not be null.
  criterion(corpus segments, std::shared_ptr<const topology> automaton_topology);

  /// Returns the corpus.
  const corpus& segments() const noexcept { return corpus_; }

  /// Returns the topology.
  const topology& fsa_topology() const noexcept { return *topology_; }

  /// The protocol's `get_loss_and_error_signal`: the full-sum loss of
  /// `segment` over `log_posteriors` [T, D], its error signal written into
  /// `error_signal` [T, D]. Errors: `unknown_segment`, the topology's errors
  /// and the full-sum's (`full_sum_engine::loss_and_error_signal`).
  caf::expected<full_sum_result> loss_and_error_signal(std::string_view segment,
                                                       const log_posteriors_ref& log_posteriors,
                                                       error_signal_ref error_signal);

  /// The protocol's `export_allophone_state_fsa_by_segment_name`: the FSA of
  /// `segment` (a copy of the cached one).
  caf::expected<fsa> segment_fsa(std::string_view segment);

  /// Returns the cached FSA of `segment`, building it on first use: what
  /// `segment_fsa` copies, without the copy (a server exports it straight from
  /// here). The pointer stays valid for the criterion's lifetime (map nodes do
  /// not move). Errors as `segment_fsa`.
  caf::expected<const fsa*> cached_fsa(std::string_view segment);

  /// The Viterbi alignment of `segment` over `log_posteriors` [T, D].
  caf::expected<viterbi_alignment> align(std::string_view segment,
                                         const log_posteriors_ref& log_posteriors);

private:
  corpus corpus_;
  std::shared_ptr<const topology> topology_;
  std::map<std::string, fsa, std::less<>> fsas_;
  full_sum_engine engine_;
  viterbi_aligner aligner_;
};

} // namespace sprintrt::sim
