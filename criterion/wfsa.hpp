#pragma once

/// @file
/// A weighted acceptor over frames for sequence-discriminative criteria: like
/// `fsa` (every edge consumes one frame and emits one column), but with
/// double weights, any number of initial and final states, each with a cost.
/// Numerators, denominators built from hypotheses and lattice-free
/// denominators (a label n-gram composed with a topology) are all `wfsa`s, so
/// one forward-backward (sequence_engine.hpp) serves every criterion.
///
/// Semantics: a path for a segment of T frames is a sequence of exactly T
/// edges from an initial state q0 to a final state qT; its score is
/// -initial(q0) + sum_t (scores[t, emission(e_t)] - weight(e_t)) - final(qT).

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "criterion/fsa.hpp"

namespace sprintrt::criterion {

/// One edge of a `wfsa`.
struct wfsa_edge {
  /// Source state.
  uint32_t from = 0;
  /// Target state.
  uint32_t to = 0;
  /// The column of the scores this edge emits.
  uint32_t emission = 0;
  /// Cost in -log space (finite or +inf).
  double weight = 0;
};

/// A weighted acceptor over frames; a plain aggregate, checked by `check`.
struct wfsa {
  /// No cost: a state with this initial (final) cost is not initial (final).
  static constexpr double none = std::numeric_limits<double>::infinity();

  /// Every edge.
  std::vector<wfsa_edge> edges;
  /// Per state: the cost of starting there, or `none`.
  std::vector<double> initial;
  /// Per state: the cost of ending there, or `none`.
  std::vector<double> final;

  /// Returns the number of states (the size of `initial` and `final`).
  uint32_t num_states() const noexcept { return static_cast<uint32_t>(initial.size()); }

  /// Adds a state with the given costs and returns its id.
  uint32_t add_state(double initial_cost = none, double final_cost = none);
};

/// Returns what is wrong with `graph` (states out of range, `initial` and
/// `final` of different sizes, a NaN or -inf cost), or an empty string.
std::string check(const wfsa& graph);

/// Returns the highest column an edge of `graph` emits (0 without edges).
uint32_t max_emission(const wfsa& graph);

/// Returns `automaton` as a `wfsa`: its single start state initial with cost
/// `start_cost`, its single final state final with cost 0, the edges and
/// weights unchanged (each float weight exactly as a double).
wfsa to_wfsa(const fsa& automaton, double start_cost = 0);

/// Like `to_wfsa`, into `out`, reusing its buffers.
void to_wfsa(const fsa& automaton, double start_cost, wfsa& out);

/// Returns `graph` with one initial state, 0, and one final state, the
/// highest, both of cost 0: the layout of one sequence of a batch FSA
/// (`WeightedFsa`). Every path of T >= 1 frames keeps its score: when `graph`
/// has other initial states (or costs), a new start state gets a copy of
/// every edge out of an initial state q, weighted with initial(q) added; a new
/// final state likewise gets a copy of every edge into a final state (with
/// final(q) added), and an edge from an initial into a final state gets a
/// third copy between the two new states. Neither new state has edges into
/// (out of) it, so no path passes through it in between and none is counted
/// twice. Paths of 0 frames are not kept. The old states keep their order
/// after the start state.
wfsa single_ended(const wfsa& graph);

} // namespace sprintrt::criterion
