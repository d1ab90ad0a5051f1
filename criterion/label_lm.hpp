#pragma once

/// @file
/// The label n-gram of the lattice-free denominator (`--*.denominator=
/// label-lm`): maximum likelihood with add-DELTA smoothing over the corpus'
/// label sequences, sentence begin and end included, no backoff. The exact
/// estimate is defined in docs/sequence-training.md ("A label n-gram"); the
/// PyTorch side builds the same one.

#include <cstdint>
#include <map>
#include <vector>

#include "common/span.hpp"
#include "criterion/corpus.hpp"
#include "criterion/label_acceptor.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// The order and smoothing of a label n-gram.
struct label_lm_options {
  /// N: 1 (unigram) to 3 (trigram).
  uint32_t order = 2;
  /// DELTA, added to every count (finite, >= 0).
  double smoothing = 1;
};

/// A label n-gram estimated from a corpus. Immutable.
class label_lm {
public:
  /// Estimates the n-gram of `segments`' label sequences. Errors
  /// (`invalid_options`): an order outside 1..3, a smoothing that is negative
  /// or not finite.
  static caf::expected<label_lm> estimate(const corpus& segments, label_lm_options options);

  /// Returns the options it was estimated with.
  const label_lm_options& options() const noexcept { return options_; }

  /// Returns V: the labels of the corpus, ascending.
  const std::vector<uint32_t>& vocabulary() const noexcept { return vocabulary_; }

  /// Returns -log P_LM(labels), the end symbol included; +inf for a sequence
  /// of probability 0 (a label outside V, or an unseen event with DELTA 0).
  double cost(span<const uint32_t> labels) const;

  /// Returns the n-gram as an acceptor over labels, its costs multiplied by
  /// `scale`: states are the last max(N-1, 1) tokens (the start is all
  /// `<s>`), reachable from the start through events of nonzero probability;
  /// states are numbered breadth first, arcs added in vocabulary order.
  label_acceptor acceptor(double scale) const;

private:
  // Tokens are indices into V; `end_token()` is </s>, `begin_token()` <s>.
  using history = std::vector<uint32_t>;

  label_lm(label_lm_options options, std::vector<uint32_t> vocabulary,
           std::map<history, std::map<uint32_t, double>> counts);

  uint32_t end_token() const noexcept { return static_cast<uint32_t>(vocabulary_.size()); }
  uint32_t begin_token() const noexcept { return end_token() + 1; }

  // -log P(token | the last N-1 tokens of `context`).
  double token_cost(const history& context, uint32_t token) const;

  label_lm_options options_;
  std::vector<uint32_t> vocabulary_;
  // c(h, w) per history h of N-1 tokens.
  std::map<history, std::map<uint32_t, double>> counts_;
};

} // namespace sprintrt::criterion
