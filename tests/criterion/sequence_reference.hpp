#pragma once

/// @file
/// The sequence-discriminative criteria by their definitions
/// (docs/sequence-training.md), over explicitly enumerated paths: every
/// hypothesis' FSA as its topology builds it, every path of exactly T edges,
/// each scored in double. Exponential; for T up to about 6 and a few
/// hypotheses. What criterion/sequence_criterion.cpp must equal.

#include <cstdint>
#include <vector>

#include "criterion/fsa.hpp"
#include "criterion/label_acceptor.hpp"
#include "criterion/matrix_views.hpp"
#include "criterion/sequence_criterion.hpp"
#include "criterion/topology.hpp"

namespace sprintrt::criterion::test {

/// One path: its emissions and the sum of its edges' weights.
struct path_emissions {
  std::vector<uint32_t> emissions;
  double weight = 0;
};

/// Every path of exactly `frames` edges from the start to the final state of
/// `automaton`, in depth-first order of the edges.
std::vector<path_emissions> all_paths(const fsa& automaton, Eigen::Index frames);

/// What the definitions give for one segment.
struct sequence_reference {
  /// The loss; +inf when the numerator has no path of finite score.
  double loss = 0;
  /// The error signal [T, D] (zeros when skipped).
  row_matrix_d error_signal;
  /// log Z_num and log Z_den (for MMI, unboosted).
  double log_numerator = 0;
  double log_denominator = 0;
  /// The numerator's best path's emissions.
  std::vector<uint32_t> best;
};

/// The criterion `kind` with `scales` for reference `reference` (cost
/// `reference_cost`, unscaled) against `hypotheses` (their costs unscaled;
/// the reference must be among them), every label sequence built by
/// `automaton_topology`, over `log_posteriors` [T, D].
sequence_reference sequence_by_definition(sequence_kind kind, const sequence_scales& scales,
                                          const topology& automaton_topology,
                                          const hypothesis& reference,
                                          const std::vector<hypothesis>& hypotheses,
                                          const row_matrix_f& log_posteriors);

} // namespace sprintrt::criterion::test
