#pragma once

/// @file
/// A `wfsa` laid out for the scaled forward-backward (scaled_forward_backward.hpp):
/// in probability space, with every edge into a state emitting the same
/// column, so that a frame's step is a product with one transition matrix
/// followed by an elementwise emission. The layout and its numerical
/// contract are documented in frame_graph.cpp.

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "criterion/wfsa.hpp"

namespace sprintrt::criterion {

/// How a `frame_graph` stores its transitions.
enum class frame_graph_storage : uint8_t {
  /// Dense where the graph is dense enough, sparse otherwise (the default).
  automatic,
  /// A dense S x S matrix (one matrix product per frame).
  dense,
  /// Compressed rows by target and by source (a product with a sparse matrix).
  sparse,
};

/// A `wfsa` in probability space, each state emitting one column.
///
/// States of the layout ("frame states") are pairs (state of the wfsa,
/// column): one per distinct column the edges into a wfsa state emit, plus
/// one for an initial state that no edge enters. An edge p -> q emitting k
/// becomes a transition from every frame state of p to the frame state
/// (q, k). Paths, and their scores up to the constant offsets below, are
/// those of the wfsa. Immutable once made; share it between threads.
struct frame_graph {
  /// Frame states.
  uint32_t num_states = 0;
  /// Per frame state: the column it emits.
  std::vector<uint32_t> emission;
  /// Per frame state: the state of the wfsa it stands for.
  std::vector<uint32_t> original;
  /// Per frame state: exp(-initial cost - initial_offset), 0 if not initial.
  Eigen::VectorXd initial;
  /// Per frame state: exp(-final cost - final_offset), 0 if not final.
  Eigen::VectorXd final;
  /// What the scaled quantities leave out, in log space: every path's log
  /// score is its scaled log score plus initial_offset + final_offset +
  /// T * edge_offset (plus the frames' own shifts, see the engine).
  double initial_offset = 0;
  double final_offset = 0;
  double edge_offset = 0;
  /// Whether `dense` holds the transitions (else the compressed rows).
  bool is_dense = false;
  /// Dense: transition(p, q) = sum of exp(-weight - edge_offset) over the
  /// edges from p into q.
  Eigen::MatrixXd dense;
  /// Sparse, by target: the transitions into q are positions
  /// `in_begin[q]` .. `in_begin[q + 1]` of `in_source` and `in_weight`.
  std::vector<uint32_t> in_begin;
  std::vector<uint32_t> in_source;
  std::vector<double> in_weight;
  /// Sparse, by source: the transitions out of p are positions
  /// `out_begin[p]` .. `out_begin[p + 1]` of `out_target` and `out_weight`.
  std::vector<uint32_t> out_begin;
  std::vector<uint32_t> out_target;
  std::vector<double> out_weight;
  /// The number of distinct transitions (nonzero entries).
  size_t num_transitions = 0;
  /// Empty when the scaled recursions represent every path; otherwise why
  /// not (a cost so far above the others that its probability underflows),
  /// and the engine's callers take the log-space recursions for this graph.
  std::string unrepresentable;
};

/// Lays out `graph` (which must pass `check`). `storage` chooses the
/// transitions' form; `automatic` takes the dense one when at least an
/// eighth of the S x S entries are transitions and S is at most 2048.
frame_graph lay_out(const wfsa& graph,
                    frame_graph_storage storage = frame_graph_storage::automatic);

} // namespace sprintrt::criterion
