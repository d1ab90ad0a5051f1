#pragma once

/// @file
/// The worker pool's state and bookkeeping, shared by the files that make up
/// the pool actor: `worker_pool.cpp` (single segments, stats, life cycle),
/// `pool_batches.cpp` (batch loss and batch automata). Internal to the
/// actors library.
///
/// How a pool keeps count: each worker slot knows what it was assigned and
/// has not answered yet (frames for LPT, requests for "is it idle"). Every
/// request sent to a worker is counted with `assign` and uncounted exactly
/// once with `worker_done` (or, when the worker was gone before reading it,
/// uncounted and sent again). Every request the pool answers later is
/// registered with `track`, so that a pool that stops fails it instead of
/// leaving its caller waiting.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/segment_requests.hpp"
#include "common/span.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::runtime {
class io_thread;
} // namespace sprintrt::runtime

namespace sprintrt::detail {

/// One worker as the pool sees it. A worker that terminates is replaced in
/// its slot; the counters stay, since every request counted in them is
/// answered exactly once (CAF answers requests to a dead actor with an
/// error).
struct worker_slot {
  sprint_worker_actor handle;
  /// Frames of segments assigned to it and not answered yet (its LPT load).
  int64_t queued_frames = 0;
  /// Requests of any kind assigned to it and not answered yet.
  size_t queued_requests = 0;
};

/// What batch and automata requests have in common: each worker's list of
/// segment indices (streamed: the next is sent when the previous is
/// answered), the count still to come, and the failures so far.
struct segment_lists {
  std::vector<std::deque<size_t>> lists;
  std::vector<std::string> tags;
  size_t pending = 0;
  std::vector<std::string> failures;
  caf::error first_error;
  uint64_t id = 0;

  /// Notes that segment `index` failed with `err`.
  void record_failure(size_t index, const caf::error& err);
};

/// The state of one pool actor.
struct pool_state {
  /// The actor's name in CAF's logs.
  static inline const char* name = "worker_pool";

  sprint_options opts;
  runtime::io_thread* io = nullptr;
  /// Names the pool in logs and errors ("pool 1").
  std::string label;
  std::vector<worker_slot> workers;
  /// Single-segment requests waiting for a free worker.
  std::deque<segment_request> waiting;
  pool_stats stats;
  /// Requests in progress, by id: how to fail each if the pool stops first
  /// (the workers' replies would not reach it then).
  std::map<uint64_t, std::function<void(const caf::error&)>> in_progress;
  uint64_t next_id = 0;
  /// Set when the pool cannot serve anything (e.g. remote pools requested).
  caf::error refusal;

  /// Normally `stop_pool` emptied everything. If the pool ended otherwise
  /// (killed, an exception), nobody may wait forever and no worker may
  /// outlive it.
  ~pool_state();
};

/// The pool actor as its handlers see it.
using pool_pointer = worker_pool_actor::stateful_pointer<pool_state>;

/// Registers how to fail a request in progress if the pool stops; returns
/// the id to `untrack` it with when it completes.
uint64_t track(pool_pointer self, std::function<void(const caf::error&)> cancel);

/// Forgets a request registered with `track` (it completed).
void untrack(pool_pointer self, uint64_t id);

/// Starts a worker in slot `index` (first use, or replacing one that
/// terminated; the slot's counters stay). The pool monitors it.
void start_worker(pool_pointer self, size_t index);

/// Creates workers until there are `count` (at most numInstances).
void ensure_workers(pool_pointer self, size_t count);

/// Whether `err` says that `used`, the worker a request went to, was gone.
/// Then the slot gets a new worker (unless the down message did that
/// already), and the request should be sent again.
bool worker_was_gone(pool_pointer self, size_t index, const sprint_worker_actor& used,
                     const caf::error& err);

/// Counts a request of `frames` frames as assigned to worker `index`.
void assign(pool_pointer self, size_t index, int64_t frames);

/// Uncounts a request assigned to worker `index` without serving waiting
/// requests (the caller decides what happens next).
void unassign(pool_pointer self, size_t index, int64_t frames);

/// Counts a request as answered by worker `index`, then hands waiting
/// single-segment requests to workers that became idle.
void worker_done(pool_pointer self, size_t index, int64_t frames);

/// Hands waiting single-segment requests to idle workers, creating workers
/// while fewer than numInstances exist (in `worker_pool.cpp`).
void serve_waiting(pool_pointer self);

/// Assigns segments of `lengths` frames to the workers by LPT, counting what
/// they have queued already; creates workers as needed. Returns each
/// worker's list of segment indices.
std::vector<std::deque<size_t>> assign_lists(pool_pointer self, span<const int64_t> lengths);

/// The error a request fails with when some of its segments failed: every
/// failure listed, the code of the first one kept.
caf::error combined_error(const std::string& what, const segment_lists& progress);

/// Starts a batch loss request (in `pool_batches.cpp`).
caf::result<batch_result> compute_batch(pool_pointer self, batch& b);

/// Starts a batch automata request (in `pool_batches.cpp`).
caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags);

} // namespace sprintrt::detail
