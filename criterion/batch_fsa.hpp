#pragma once

/// @file
/// A batch FSA in the WeightedFsa layout as the CPU kernels read it: the
/// caller's arrays (edges [4, E] = from, to, emission, sequence; weights [E];
/// start_end_states [2, N]), checked once and grouped by sequence, so that
/// each thread can cut out its sequences without touching the others. Read by
/// `batch_loss` (batch_loss.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "criterion/fsa.hpp"
#include "criterion/wfsa.hpp"

namespace sprintrt::criterion {

/// Read-only views of one batch FSA's arrays and the grouping of its edges.
struct batch_fsa {
  /// The argument's name in messages: "fsa", "den_fsa".
  std::string name;
  /// edges [4, E], row-major.
  const int64_t* edges = nullptr;
  /// E.
  int64_t num_edges = 0;
  /// weights [E] (costs, -log space).
  const double* weights = nullptr;
  /// start_end_states [2, N], row-major.
  const int64_t* start_end = nullptr;
  /// N: the number of sequences.
  int64_t sequences = 0;
  /// The total number of states.
  int64_t num_states = 0;
  /// Sequence b's edges are order[offsets[b]] .. order[offsets[b + 1] - 1],
  /// in edge order.
  std::vector<int64_t> offsets;
  /// Edge ids grouped by sequence.
  std::vector<int64_t> order;

  /// Returns sequence b's start state.
  int64_t start(int64_t b) const noexcept { return start_end[b]; }

  /// Returns sequence b's final state.
  int64_t end(int64_t b) const noexcept { return start_end[sequences + b]; }

  /// Returns sequence b's number of edges.
  int64_t edge_count(int64_t b) const noexcept { return offsets[b + 1] - offsets[b]; }
};

/// Checks `fsa` against `classes` columns (the messages of fsa_loss.py's
/// `_check_fsa_values`, prefixed with `fsa.name`): every sequence's states
/// the range start..end below num_states, the ranges disjoint, weights
/// finite or +inf, every edge within its sequence's states and emitting a
/// column below `classes`. Then fills `offsets` and `order`. Errors:
/// `invalid_input`, naming the first problem.
caf::error check_and_group(batch_fsa& fsa, int64_t classes);

/// Returns sequence b of `fsa` as an `fsa` (states renumbered from its
/// start state, edges in order), using `edges` as the workspace; or the
/// error of `fsa::make`. Its weights are the float32 values the
/// caller's float32 weights held.
caf::expected<fsa> sequence_fsa(const batch_fsa& fsa, int64_t b, std::vector<fsa_edge>& edges);

/// Returns sequence b of `fsa` as a `wfsa` (states renumbered from its
/// start state, initial there and final at its end state, both at cost 0;
/// weights in double). `graph` is reused.
void sequence_wfsa(const batch_fsa& fsa, int64_t b, wfsa& graph);

} // namespace sprintrt::criterion
