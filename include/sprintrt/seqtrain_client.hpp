#pragma once

/// @file
/// The blocking facade of the sequence-training scheduler, for trainers that
/// are not actor-based (actor-based ones spawn the scheduler themselves:
/// `sprintrt/seqtrain_scheduler.hpp`).
///
/// A trainer's loop, per epoch (`sprintrt demo` does exactly this):
///
/// ```cpp
/// sched.start_epoch(epoch);
/// size_t next = 0;                        // the next batch to forward
/// for (size_t i = 0; i < batches.size(); ++i) {
///   if (next == i)                        // the batch to train must be there
///     sched.forward(forward_with_current_model(batches[next++]));
///   auto r = sched.train({layout_of(batches[i])});  // waits for its loss data
///   // The reply dropped everything before batch i: look ahead now, so that
///   // the workers compute upcoming batches while this one trains.
///   while (next < batches.size() && *sched.have_space(batches[next].size()))
///     sched.forward(forward_with_current_model(batches[next++]));
///   auto dz = seqtrain_error_signal(log_posteriors_now, r->hat_y, lengths);
///   backprop(dz); update();
/// }
/// auto stats = sched.finish_epoch();
/// ```
///
/// Every decision in it depends only on `have_space`, which never depends on
/// worker timing, so the run is reproducible; the look-ahead is bounded by
/// `forward_seq_delay` (a batch of B sequences can be kept next to the
/// current one once `2 B < forward_seq_delay`).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/seqtrain_error_signal.hpp"
#include "sprintrt/seqtrain_interface.hpp"
#include "sprintrt/stop_token.hpp"

namespace sprintrt {

class sprint_runtime;

/// Owns one scheduler actor over a pool (`spawn_seqtrain_scheduler`) and
/// calls it, waiting for each answer. Not copyable; the runtime must outlive
/// it. Calls may come from any thread, but a training run is one sequence of
/// calls. The scheduler ends with the client, or earlier with its pool (at
/// the runtime's shutdown at the latest).
class seqtrain_client {
public:
  /// A scheduler over `pool` (e.g. `rt.pool(opts)` or `rt.pool(source)`).
  /// `options.max_in_flight` bounds the sequences computed at once; 0 (the
  /// default): the pool's capacity, one per worker.
  seqtrain_client(sprint_runtime& rt, worker_pool_actor pool, seqtrain_options options);

  /// Stops the scheduler.
  ~seqtrain_client();

  seqtrain_client(const seqtrain_client&) = delete;
  seqtrain_client& operator=(const seqtrain_client&) = delete;

  // Each call is one message of `seqtrain_scheduler_actor`, whose comment
  // gives the details and every error.

  /// Starts epoch `epoch` with empty queues.
  caf::error start_epoch(uint64_t epoch);

  /// Ends the epoch; its statistics, or an error naming what was left.
  caf::expected<seqtrain_stats> finish_epoch();

  /// Whether `num_seqs` more sequences may be forwarded now.
  caf::expected<bool> have_space(uint64_t num_seqs);

  /// Queues forwarded sequences for computation.
  caf::error forward(forward_sequences sequences);

  /// Declares the current batches; waits for and returns their loss and
  /// hat_y. A stop requested through `stop` ends the wait with `cancelled`
  /// within `stop_token::poll_interval`; the sequences stay forwarded, so
  /// the same call may be made again.
  caf::expected<seqtrain_result> train(std::vector<seqtrain_batch> batches,
                                       const stop_token& stop = {});

  /// The scheduler's counters and queue depths now.
  caf::expected<seqtrain_stats> stats();

  /// Returns the scheduler's actor handle, for messages the facade has no
  /// call for. It is valid while this client lives (the client stops the
  /// scheduler when destroyed); for a scheduler with a lifetime of its own,
  /// use `spawn_seqtrain_scheduler`.
  const seqtrain_scheduler_actor& scheduler() const noexcept { return scheduler_; }

private:
  // A blocking actor per call (as `pool_client`): one kept for the client's
  // lifetime would count as running and hold up the runtime's shutdown (CAF
  // 0.17 counts hidden scoped actors too).
  sprint_runtime* runtime_;
  seqtrain_scheduler_actor scheduler_;
};

} // namespace sprintrt
