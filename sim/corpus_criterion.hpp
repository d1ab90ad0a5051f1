#pragma once

/// @file
/// The simulated Sprint's criterion: what a Sprint child computes for the
/// protocol's `get_loss_and_error_signal` and
/// `export_allophone_state_fsa_by_segment_name` commands, from a corpus and a
/// topology.
///
/// Thread safety: none; a criterion caches FSAs and holds the full-sum's
/// workspace, so keep one per worker (thread or actor).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "criterion/corpus.hpp"
#include "criterion/denominator.hpp"
#include "criterion/fsa.hpp"
#include "criterion/full_sum.hpp"
#include "criterion/matrix_views.hpp"
#include "criterion/sequence_criterion.hpp"
#include "criterion/topology.hpp"
#include "criterion/viterbi.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/fsa_query.hpp"
#include "sprintrt/segment_fsa.hpp"

namespace sprintrt::sim {

/// What `get_loss_and_error_signal` computes (`--*.criterion=`).
enum class criterion_kind : uint8_t {
  /// `full-sum`: the segment's full-sum loss and error signal (the default).
  full_sum,
  /// `zero`: loss 0 and an all-zero error signal of the posteriors' shape, for
  /// transport-only benchmarks. The posteriors are still checked (shape, NaN,
  /// +inf) and the reply still has full size, but no FSA is built or run, so
  /// the segment is not looked up: an unknown segment gets loss 0 too. FSA
  /// exports and alignments still use the corpus and topology as usual.
  zero,
  /// `mmi`, `bmmi`, `smbr`: the sequence-discriminative criteria of
  /// docs/sequence-training.md over the segment's denominator.
  mmi,
  bmmi,
  smbr,
};

/// Returns the parameter value of `kind`: "full-sum", "zero", "mmi", "bmmi"
/// or "smbr".
std::string_view to_string(criterion_kind kind) noexcept;

/// Parses what `to_string` writes (exactly).
std::optional<criterion_kind> parse_criterion_kind(std::string_view text) noexcept;

/// Returns the sequence-discriminative criterion `kind` is, or none for
/// `full_sum` and `zero`.
std::optional<criterion::sequence_kind> to_sequence_kind(criterion_kind kind) noexcept;

/// What loss requests compute: the kind and, for `mmi`, `bmmi` and `smbr`,
/// their scales and denominator.
struct criterion_spec {
  /// `full_sum` unless said otherwise.
  criterion_spec(criterion_kind kind = criterion_kind::full_sum) : kind(kind) {}

  /// What loss requests compute.
  criterion_kind kind;
  /// KAPPA, LAMBDA and B (sequence-discriminative kinds only).
  criterion::sequence_scales scales;
  /// The competing hypotheses, shared by the workers of one source; required
  /// by the sequence-discriminative kinds.
  std::shared_ptr<const criterion::denominator> competitors;
};

/// Looks segments up in a corpus, builds their FSAs with a topology (once per
/// segment: FSAs are cached) and runs the full-sum or Viterbi on them. One per
/// simulated worker; not thread-safe.
class corpus_criterion {
public:
  /// A criterion over `segments` whose FSAs `automaton_topology` builds; it
  /// must not be null. `spec` selects what loss requests compute; a
  /// sequence-discriminative kind needs its denominator.
  corpus_criterion(criterion::corpus segments,
                   std::shared_ptr<const criterion::topology> automaton_topology,
                   criterion_spec spec = {});

  /// Returns what loss requests compute.
  criterion_kind kind() const noexcept { return spec_.kind; }

  /// Returns what loss requests compute, with the scales and denominator.
  const criterion_spec& spec() const noexcept { return spec_; }

  /// Returns the corpus.
  const criterion::corpus& segments() const noexcept { return corpus_; }

  /// Returns the topology.
  const criterion::topology& fsa_topology() const noexcept { return *topology_; }

  /// The protocol's `get_loss_and_error_signal`: the full-sum loss of
  /// `segment` over `log_posteriors` [T, D], its error signal written into
  /// `error_signal` [T, D]. Errors: `unknown_segment`, the topology's errors
  /// and the full-sum's (`full_sum_engine::loss_and_error_signal`). With
  /// `criterion_kind::zero`: loss 0 and zeros for any segment, known or not,
  /// after the posteriors' and the output's checks (`invalid_input`). With a
  /// sequence-discriminative kind: `sequence_loss`'s loss and error signal,
  /// and its errors.
  caf::expected<criterion::full_sum_result>
  loss_and_error_signal(std::string_view segment,
                        const criterion::log_posteriors_ref& log_posteriors,
                        criterion::error_signal_ref error_signal);

  /// The protocol's `export_allophone_state_fsa_by_segment_name`: the FSA of
  /// `segment` (a copy of the cached one).
  caf::expected<criterion::fsa> segment_fsa(std::string_view segment);

  /// The protocol's `export_allophone_state_fsa_by_orthography`, as a
  /// simulated Sprint reads an orthography: the label sequence written as in
  /// the corpus file ("3 17 5"), built by the topology (not cached: any text
  /// may come). Errors, each naming the orthography: `invalid_input` for a
  /// token that is no label, the topology's errors.
  caf::expected<criterion::fsa> orthography_fsa(std::string_view orthography) const;

  /// Returns the FSA a request by `source` for `text` exports: the cached
  /// one of segment `text` (see `cached_fsa`), or orthography `text`'s built
  /// into `built` (see `orthography_fsa`). The pointer is valid while both
  /// the criterion and `built` are. Errors as theirs.
  caf::expected<const criterion::fsa*> exported_fsa(fsa_source source, std::string_view text,
                                                    std::optional<criterion::fsa>& built);

  /// Returns the cached FSA of `segment`, building it on first use: what
  /// `segment_fsa` copies, without the copy (a server exports it straight from
  /// here). The pointer stays valid for the criterion's lifetime (map nodes do
  /// not move). Errors as `segment_fsa`.
  caf::expected<const criterion::fsa*> cached_fsa(std::string_view segment);

  /// Whether a skipped segment is warned about (the default: a Sprint
  /// child's log says it) or logged at debug level (in-process workers,
  /// whose pool names a batch's skips in one warning).
  void set_warn_on_skip(bool warn) noexcept {
    engine_.set_warn_on_skip(warn);
    sequences_.set_warn_on_skip(warn);
  }

  /// The Viterbi alignment of `segment` over `log_posteriors` [T, D].
  caf::expected<criterion::viterbi_alignment>
  align(std::string_view segment, const criterion::log_posteriors_ref& log_posteriors);

private:
  criterion::corpus corpus_;
  std::shared_ptr<const criterion::topology> topology_;
  criterion_spec spec_;
  std::map<std::string, criterion::fsa, std::less<>> fsas_;
  criterion::full_sum_engine engine_;
  criterion::sequence_workspace sequences_;
  criterion::viterbi_aligner aligner_;
};

} // namespace sprintrt::sim
