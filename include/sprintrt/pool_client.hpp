#pragma once

/// @file
/// The blocking facade for trainers that are not actor-based: one call per
/// batch, from any thread (several threads may call at once).

#include <string>
#include <vector>

#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/stop_token.hpp"

namespace sprintrt {

class sprint_runtime;

/// Calls one worker pool and waits for the answer. Copyable and cheap; the
/// runtime must outlive it.
///
/// A call given a `stop_token` returns `cancelled` within
/// `stop_token::poll_interval` of a stop requested through it (from any
/// thread, or by the source's poll hook): the pool computes nothing more of
/// it; a Sprint child that was computing part of it finishes that part
/// for nobody or is killed and restarted when next needed, as the option
/// `onCancel` decides (see `worker_pool_actor`). A reply that was
/// already on its way when the stop came is returned as it is. A call whose
/// stop was requested before it began sends nothing and returns `cancelled`.
class pool_client {
public:
  /// A client of the pool `rt` keeps for `opts`.
  pool_client(sprint_runtime& rt, const sprint_options& opts);

  /// A client of `pool`, e.g. `rt.pool(source)` for workers from another
  /// source.
  pool_client(sprint_runtime& rt, worker_pool_actor pool);

  /// Loss [B] and error signal [T, B, D] of a batch (see `worker_pool_actor`):
  /// all or nothing, or with `b.partial` the segments that succeeded and
  /// one `segment_failure` per failed one (see `batch::partial`).
  caf::expected<batch_result> compute(batch b, const stop_token& stop = {}) const;

  /// The merged automata of the segments `tags`.
  caf::expected<batch_automata> automata(std::vector<std::string> tags,
                                         const stop_token& stop = {}) const;

  /// The automata of `queries` (segment names or orthographies), one result
  /// per query in order: the segment's FSA, or the error of that query
  /// alone (naming the segment or orthography and the cause). All requests
  /// are sent at once, so the pool hands each to the next idle worker: a
  /// batch is spread over the workers as they become free. A stop cancels
  /// every request not answered yet; those results are `cancelled`.
  std::vector<caf::expected<segment_fsa>> fsas(std::vector<fsa_query> queries,
                                               const stop_token& stop = {}) const;

  /// The loss of one segment; its error signal goes into `job.error_signal`
  /// (nothing is written there once the call returned).
  caf::expected<double> compute_segment(segment_job job, const stop_token& stop = {}) const;

  /// The reply to one request of `Command` (any of `sprint_commands`) for
  /// `work`, e.g. `ask<export_fsa_command>(query)`: the one call every
  /// command has, typed calls above or not. A stop cancels it as it does
  /// `compute_segment`.
  template <class Command>
  caf::expected<typename Command::reply> ask(typename Command::work work,
                                             const stop_token& stop = {}) const;

  /// Counters of the pool and its workers.
  caf::expected<pool_stats> stats() const;

  /// Returns the pool's actor handle.
  const worker_pool_actor& pool() const noexcept { return pool_; }

private:
  sprint_runtime* runtime_;
  worker_pool_actor pool_;
};

} // namespace sprintrt
