#pragma once

/// @file
/// A finite-state acceptor in the layout of the Sprint protocol's
/// `export_allophone_state_fsa_by_segment_name` reply (docs/protocol.md section 4):
/// start state 0, one final state `num_states - 1`, and per edge a source, a
/// target, an emission index and a weight in -log space.
///
/// Semantics (as in RASR/RETURNN's fast Baum-Welch): every edge consumes exactly
/// one frame. A path for a segment of T frames is a sequence of exactly T edges
/// from state 0 to the final state; its score is the sum over frames t of
/// `-weight(e_t) + log_posteriors[t, emission(e_t)]`.

#include <cstdint>
#include <string>
#include <vector>

#include "common/span.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// One edge of an FSA.
struct fsa_edge {
  /// Source state.
  uint32_t from = 0;
  /// Target state.
  uint32_t to = 0;
  /// The column of the log-posteriors this edge emits.
  uint32_t emission = 0;
  /// Cost in -log space: 0 is probability one, +inf forbids the edge.
  float weight = 0;

  /// Edges are equal when all four fields are (weights compared exactly).
  friend bool operator==(const fsa_edge& x, const fsa_edge& y) noexcept {
    return x.from == y.from && x.to == y.to && x.emission == y.emission && x.weight == y.weight;
  }

  /// Negation of `==`.
  friend bool operator!=(const fsa_edge& x, const fsa_edge& y) noexcept { return !(x == y); }
};

/// An immutable, validated FSA stored exactly as the protocol sends it, so that
/// exporting it costs no conversion: `flat_edges()` is all sources, then all
/// targets, then all emissions (3*E values) and `weights()` holds E costs.
class fsa {
public:
  /// The start state of every FSA.
  static constexpr uint32_t start_state = 0;

  /// One state, no edges: accepts nothing (there is no path of length T > 0).
  fsa() = default;

  /// Validates and stores `edges`: `num_states` must be at least 1, every state
  /// id less than `num_states`, no weight NaN or -inf (an edge of infinite
  /// probability makes no sense). Emissions are checked later, against the
  /// posteriors' width.
  static caf::expected<fsa> make(uint32_t num_states, span<const fsa_edge> edges);

  /// Like `make`, from the protocol's flat layout: `flat_edges` must hold
  /// exactly 3 values per weight.
  static caf::expected<fsa> from_flat(uint32_t num_states, span<const uint32_t> flat_edges,
                                      span<const float> weights);

  /// Returns the number of states, at least 1.
  uint32_t num_states() const noexcept { return num_states_; }

  /// Returns the number of edges E.
  uint32_t num_edges() const noexcept { return static_cast<uint32_t>(weights_.size()); }

  /// Returns the single final state, `num_states() - 1`.
  uint32_t final_state() const noexcept { return num_states_ - 1; }

  /// Returns edge `e`; `e` must be less than `num_edges()`.
  fsa_edge edge(uint32_t e) const noexcept;

  /// Returns all edges in their stored order (a copy, for tests and tools).
  std::vector<fsa_edge> edges() const;

  /// Returns the source state of every edge (E values).
  span<const uint32_t> sources() const noexcept { return flat_part(0); }

  /// Returns the target state of every edge (E values).
  span<const uint32_t> targets() const noexcept { return flat_part(1); }

  /// Returns the emission index of every edge (E values).
  span<const uint32_t> emissions() const noexcept { return flat_part(2); }

  /// Returns the protocol's `edges` array: sources, then targets, then
  /// emissions (3*E values).
  span<const uint32_t> flat_edges() const noexcept { return flat_edges_; }

  /// Returns the protocol's `weights` array: the -log cost of every edge.
  span<const float> weights() const noexcept { return weights_; }

private:
  fsa(uint32_t num_states, std::vector<uint32_t> flat_edges, std::vector<float> weights) noexcept;

  span<const uint32_t> flat_part(size_t which) const noexcept {
    return span<const uint32_t>{flat_edges_}.subspan(which * weights_.size(), weights_.size());
  }

  uint32_t num_states_ = 1;
  std::vector<uint32_t> flat_edges_;
  std::vector<float> weights_;
};

/// Renders an FSA for humans and test failures, one edge per line:
/// "fsa: 4 states, 2 edges\n  0 -> 1 emits 2 weight 0.5\n...".
std::string to_string(const fsa& automaton);

/// Renders one edge: "0 -> 1 emits 2 weight 0.5".
std::string to_string(const fsa_edge& edge);

} // namespace sprintrt::criterion
