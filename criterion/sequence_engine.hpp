#pragma once

/// @file
/// Forward-backward and Viterbi over a `wfsa` with per-frame scores, in
/// double and log space: what the sequence-discriminative criteria
/// (sequence_criterion.hpp) are made of. The recursions are documented in
/// sequence_engine.cpp.

#include <cstdint>
#include <optional>
#include <vector>

#include "common/span.hpp"
#include "criterion/matrix_views.hpp"
#include "criterion/wfsa.hpp"

namespace sprintrt::criterion {

/// Runs the recursions of one graph over one segment's scores and keeps
/// their results (forward and backward scores, and for `expect_accuracy` the
/// expected accuracies) for the queries that follow. Holds its workspace, so
/// that one engine computes segment after segment without allocating once
/// warm: keep one per worker. Not thread-safe.
///
/// Every function takes `scores` [T, D] with T >= 1; the graph must pass
/// `check` and emit only columns below D (the caller checks both). Scores
/// may be -inf (probability zero), never NaN or +inf.
class sequence_engine {
public:
  /// Whether `sequence_loss` warns about a skipped segment (as Sprint's own
  /// log says it) or logs it at debug level, for a caller that reports the
  /// skips of a batch itself (in-process workers: the pool does).
  void set_warn_on_skip(bool warn) noexcept { warn_on_skip_ = warn; }

  /// Returns the setting of `set_warn_on_skip` (true unless changed).
  bool warn_on_skip() const noexcept { return warn_on_skip_; }

  /// Runs forward and backward over every path of `graph` scored with
  /// `scores` (file comment of wfsa.hpp), and returns log Z, the logsumexp of
  /// all path scores: -inf when no path of T frames has a finite score. The
  /// graph must outlive the queries about this run.
  double run(const wfsa& graph, const row_matrix_d& scores);

  /// After a `run` with finite log Z: adds `factor` times the occupancy to
  /// `out` [T, D]: out[t, k] += factor * P(the edge at frame t emits k).
  void add_occupancy(double factor, row_matrix_d& out) const;

  /// After a `run` with finite log Z: the expected accuracy E[A] of the
  /// paths against `reference` (T emissions), A(pi) the number of frames t
  /// at which pi emits reference[t]; adds `factor` times its covariance
  /// with the occupancy to `out` [T, D]:
  /// out[t, k] += factor * sum over paths pi with e_t = k of P(pi) (A(pi) - E[A]),
  /// which is dE[A]/dscores[t, k]. Returns E[A].
  double expect_accuracy(span<const uint32_t> reference, double factor, row_matrix_d& out);

  /// Returns the emissions of a path of maximum score (T values), or none
  /// when no path has a finite score. Ties: each state keeps the first of
  /// its best incoming edges in the graph's edge order; the path ends in the
  /// best final state of lowest id and is traced back from there.
  std::optional<std::vector<uint32_t>> best_path(const wfsa& graph, const row_matrix_d& scores);

  /// Like `best_path`, but writes the path's edges (T indices into
  /// `graph.edges`) into `edges` and returns its score (initial cost, edge
  /// weights and final cost subtracted from the scores it emits); -inf, and
  /// `edges` empty, when no path has a finite score.
  double best_edges(const wfsa& graph, const row_matrix_d& scores, std::vector<uint32_t>& edges);

private:
  // The graph's edges grouped by target (`incoming_`) and by source
  // (`outgoing_`), each group in edge order: offsets into the edge lists.
  void index(const wfsa& graph);

  bool warn_on_skip_ = true;
  const wfsa* graph_ = nullptr;
  const row_matrix_d* scores_ = nullptr;
  double log_z_ = 0;
  std::vector<uint32_t> incoming_;
  std::vector<uint32_t> incoming_begin_;
  std::vector<uint32_t> outgoing_;
  std::vector<uint32_t> outgoing_begin_;
  // Forward and backward log scores, [T+1, S].
  row_matrix_d alpha_;
  row_matrix_d beta_;
  // Expected accuracy of the prefixes ending (suffixes starting) in a state
  // at a frame boundary, [T+1, S].
  row_matrix_d alpha_accuracy_;
  row_matrix_d beta_accuracy_;
  // Viterbi: best incoming edge per frame and state, [T, S].
  Eigen::Matrix<uint32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> best_edge_;
  std::vector<double> scratch_;
};

} // namespace sprintrt::criterion
