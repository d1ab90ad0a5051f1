#pragma once

/// @file
/// A `wfsa` laid out for the scaled forward-backward (scaled_forward_backward.hpp):
/// in probability space, with every edge into a state emitting the same
/// column, so that a frame's step is a product with one transition matrix
/// followed by an elementwise emission. The layout and its numerical
/// contract are documented in frame_graph.cpp.

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

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
/// those of the wfsa. Frame states are numbered in the order of the wfsa's
/// states, those of one state in the order their columns are first met on
/// its incoming edges. Immutable once made; share it between threads.
struct frame_graph {
  /// Frame states.
  uint32_t num_states = 0;
  /// Per frame state: the column it emits.
  std::vector<uint32_t> emission;
  /// Per frame state: the state of the wfsa it stands for.
  std::vector<uint32_t> original;
  /// Per frame state: exp(-initial cost - initial_offset), 0 if not initial.
  std::vector<double> initial;
  /// Per frame state: exp(-final cost - final_offset), 0 if not final.
  std::vector<double> final;
  /// What the scaled quantities leave out, in log space: every path's log
  /// score is its scaled log score plus initial_offset + final_offset +
  /// T * edge_offset (plus the frames' own shifts, see the engine).
  double initial_offset = 0;
  double final_offset = 0;
  double edge_offset = 0;
  /// Whether `dense` holds the transitions (else the compressed rows).
  bool is_dense = false;
  /// Dense: the S x S transition matrix, column-major: entry p + q S is the
  /// sum of exp(-weight - edge_offset) over the edges from p into q.
  std::vector<double> dense;
  /// Sparse: the transitions along a mostly filled diagonal of the
  /// transition matrix (the loops and steps of CTC and HMM topologies), as
  /// a dense run: `band_weight[begin + i]` is the transition from
  /// `first + i - offset` into `first + i`, for i < size (0 where there is
  /// none).
  struct band {
    /// target - source, the same for all of the band.
    int64_t offset = 0;
    /// The band's first target.
    uint32_t first = 0;
    /// Where its weights start in `band_weight`, and how many.
    uint32_t begin = 0;
    uint32_t size = 0;
  };
  /// Sparse: the bands; the compressed rows below hold the other transitions.
  std::vector<band> bands;
  /// Sparse: the bands' weights, one run after the other.
  std::vector<double> band_weight;
  /// Sparse, by target: the transitions into q off the bands are positions
  /// `in_begin[q]` .. `in_begin[q + 1]` of `in_source` and `in_weight`.
  std::vector<uint32_t> in_begin;
  std::vector<uint32_t> in_source;
  std::vector<double> in_weight;
  /// Sparse, by source: the transitions out of p off the bands are positions
  /// `out_begin[p]` .. `out_begin[p + 1]` of `out_target` and `out_weight`.
  std::vector<uint32_t> out_begin;
  std::vector<uint32_t> out_target;
  std::vector<double> out_weight;
  /// Sparse: the states with transitions off the bands into them
  /// (`in_rows`) and out of them (`out_rows`), ascending.
  std::vector<uint32_t> in_rows;
  std::vector<uint32_t> out_rows;
  /// The distinct columns the states emit, ascending, and the states
  /// grouped by them: those emitting `columns[i]` are positions
  /// `column_begin[i]` .. `column_begin[i + 1]` of `column_states`.
  std::vector<uint32_t> columns;
  std::vector<uint32_t> column_begin;
  std::vector<uint32_t> column_states;
  /// The number of distinct transitions (nonzero entries).
  size_t num_transitions = 0;
  /// Empty when the scaled recursions represent every path; otherwise why
  /// not (a cost so far above the others that its probability underflows),
  /// and the engine's callers take the log-space recursions for this graph.
  std::string unrepresentable;
};

/// Lays out graphs into `frame_graph`s, keeping its scratch and reusing the
/// target's buffers: a warm builder allocates nothing for graphs no larger
/// than before (one per thread that lays out a graph per segment, such as
/// a numerator's). Not thread-safe.
class frame_graph_builder {
public:
  /// Lays out `graph` (which must pass `check`) into `out`, replacing what
  /// it held. `storage` chooses the transitions' form; `automatic` takes the
  /// dense one when at least an eighth of the S x S entries are transitions
  /// and S is at most 2048.
  void lay_out(const wfsa& graph, frame_graph_storage storage, frame_graph& out);

private:
  using transition = std::tuple<uint32_t, uint32_t, double>;

  // Fills out's states grouped by the column they emit.
  void group_by_column(frame_graph& out);
  // Moves the transitions of the mostly filled diagonals into bands.
  void take_bands(frame_graph& out);
  // Fills out's compressed rows with the transitions left.
  void compress(frame_graph& out);

  // Per state of the wfsa, its frame states' columns as a list in `column_`
  // and `next_` starting at `head_` (none: `no_state`); then the first of
  // its frame states (`first_`, one more at the end).
  std::vector<uint32_t> head_, column_, next_, first_;
  std::vector<uint32_t> target_;
  std::vector<transition> transitions_;
  std::vector<uint32_t> order_;
  struct diagonal {
    uint32_t count = 0;
    uint32_t low = 0;
    uint32_t high = 0;
    int32_t band = -1;
  };
  std::vector<diagonal> diagonals_;
  std::vector<uint32_t> next_out_;
};

/// Lays out `graph` (which must pass `check`) with a fresh builder.
frame_graph lay_out(const wfsa& graph,
                    frame_graph_storage storage = frame_graph_storage::automatic);

} // namespace sprintrt::criterion
