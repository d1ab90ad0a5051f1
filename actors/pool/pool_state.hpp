#pragma once

/// @file
/// The worker pool's state: its worker slots and what each has to do, the
/// single-segment requests waiting for a free worker, and the requests in
/// progress. Internal to the actors library; the pool actor is made of
/// `worker_pool.cpp` (behavior, stats, life cycle), `pool_dispatch.cpp`
/// (the slots, and every request's segments: placement, replies,
/// failures), and the two request shapes: `pool_singles.cpp` (one segment)
/// and `pool_batches.cpp` (batch loss and automata).
///
/// How a pool keeps count: every segment sent (or queued) to a worker holds
/// an `assignment` on the worker's load, which uncounts it exactly once when
/// released. Every request the pool answers later is registered with
/// `pool_state::track`, so that a pool that stops fails it instead of leaving
/// its caller waiting.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/pool/failure_policy.hpp"
#include "actors/pool/pool_assignment.hpp"
#include "actors/pool/segment_requests.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/worker_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt::detail {

struct pool_request;

/// A segment of a request in progress, waiting or sent: counted in its
/// worker's load while `held`.
struct queued_segment {
  /// Its index in its request.
  size_t index = 0;
  assignment held;
  retry_counts retries;
};

/// A segment waiting in the pool's queue for an idle worker.
struct waiting_segment {
  std::shared_ptr<pool_request> request;
  queued_segment segment;
};

/// One worker as the pool sees it. A worker that terminates is replaced in
/// its slot; the load stays, since every assignment counted in it is
/// released exactly once (CAF answers requests to a dead actor with an
/// error).
struct worker_slot {
  sprint_worker_actor handle;
  std::shared_ptr<worker_load> load = std::make_shared<worker_load>();
};

/// The state of one pool actor.
struct pool_state {
  /// The actor's name in CAF's logs.
  static inline const char* name = "worker_pool";

  /// Where the workers come from.
  worker_source source;
  /// Names the pool in logs and errors ("pool 1").
  std::string label;
  /// Set when the pool cannot serve anything: every request fails with it.
  caf::error refusal;
  std::vector<worker_slot> workers;
  /// Segments of single-segment requests waiting for an idle worker, in
  /// arrival order (those placed again first).
  std::deque<waiting_segment> waiting;
  pool_stats stats;
  /// Checks batches and makes their outputs off the pool actor (see
  /// `compute_batch`); started with the first batch.
  caf::actor preparer;

  /// Registers how to fail a request in progress if the pool stops (the
  /// workers' replies would not reach it then) or its caller cancels it
  /// (`origin`, if given: see `cancel_one`), and how to tell its workers to
  /// drop it when its caller cancels it (`drop_at_workers`; when the pool
  /// stops, its workers stop too). Returns the id to `untrack` it with when
  /// it completes.
  uint64_t track(std::function<void(const caf::error&)> cancel, request_origin origin = {},
                 std::function<void()> drop_at_workers = {});

  /// Forgets a request registered with `track` (it completed).
  void untrack(uint64_t id);

  /// Returns whether request `id` is still tracked (not completed or
  /// cancelled).
  bool tracked(uint64_t id) const { return in_progress_.count(id) > 0; }

  /// Fails every tracked request with `err`; forgets them and the waiting
  /// segments.
  void cancel_all(const caf::error& err);

  /// Fails the tracked request that `origin` names with `err` (its caller
  /// cancelled it) and forgets it; returns whether there was one.
  bool cancel_one(const request_origin& origin, const caf::error& err);

  /// Normally the pool stopped through an exit message, which emptied
  /// everything. If it ended otherwise (killed, an exception), nobody may
  /// wait forever and no worker may outlive it.
  ~pool_state();

private:
  struct tracked_request {
    std::function<void(const caf::error&)> cancel;
    request_origin origin;
    std::function<void()> drop_at_workers;
  };

  std::map<uint64_t, tracked_request> in_progress_;
  uint64_t next_id_ = 0;
};

/// The pool actor as its handlers see it.
using pool_pointer = worker_pool_actor::stateful_pointer<pool_state>;

} // namespace sprintrt::detail
