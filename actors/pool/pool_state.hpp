#pragma once

/// @file
/// The worker pool's state: its worker slots and what each has to do, the
/// single-segment requests waiting for a free worker, and the requests in
/// progress. Internal to the actors library; the pool actor is made of
/// `worker_pool.cpp` (behavior, stats, life cycle), `pool_singles.cpp`
/// (single segments) and `pool_batches.cpp` (batch loss and automata).
///
/// How a pool keeps count: every request sent (or queued) to a worker holds
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
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/pool/pool_assignment.hpp"
#include "actors/pool/segment_requests.hpp"
#include "common/span.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/worker_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt::detail {

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
  /// Single-segment requests waiting for a free worker, in arrival order.
  std::deque<segment_request> waiting;
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

  /// Fails every waiting and tracked request with `err`; forgets them.
  void cancel_all(const caf::error& err);

  /// Fails the waiting or tracked request that `origin` names with `err`
  /// (its caller cancelled it) and forgets it; returns whether there was
  /// one.
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

/// Makes the worker of slot `index` from the source (first use, or replacing
/// one that terminated; the slot's load stays). The pool monitors it.
void start_worker(pool_pointer self, size_t index);

/// Creates workers until there are `count` (at most the source's capacity).
void ensure_workers(pool_pointer self, size_t count);

/// Returns an idle worker (the lowest index), creating one while fewer than
/// the source's capacity exist; none if all are busy. With slot states, a
/// worker is idle while it holds fewer requests than its parallelism, and
/// an unavailable one never is.
std::optional<size_t> idle_worker(pool_pointer self);

/// Returns slot `index`'s state (see `worker_source::slot_state`; the
/// default for sources without).
worker_slot_state slot_state(pool_pointer self, size_t index);

/// Returns whether some worker can take requests now.
bool any_worker_available(pool_pointer self);

/// The error of a request that no worker can take: each unavailable slot
/// and why.
caf::error no_worker_available(pool_pointer self);

/// Whether `err` says that the worker was unavailable and did not compute
/// the request, which should go to another worker.
bool worker_was_unavailable(const caf::error& err);

/// How often a request may go to another worker because its worker was
/// unavailable, before it fails (workers that keep coming and going must
/// not pass a request around for ever).
size_t max_reroutes(pool_pointer self);

/// Whether `err` says that `used`, the worker a request went to, was gone.
/// Then the slot gets a new worker (unless the down message did that
/// already), and the request should be sent again.
bool worker_was_gone(pool_pointer self, size_t index, const sprint_worker_actor& used,
                     const caf::error& err);

/// The error of a request whose worker terminated under it once more after
/// `resends` resends (the source's `max_resends`).
caf::error workers_kept_terminating(pool_pointer self, size_t resends);

/// Counts a request of `frames` frames into worker `index`'s load.
assignment assign(pool_pointer self, size_t index, int64_t frames);

/// Spreads segments of `lengths` frames over the workers by LPT, counting
/// what they have assigned already; creates workers as needed. With slot
/// states, by estimated finish time over the available workers (see
/// `slot_rates`). Returns each worker's list of segment indices (not
/// assigned yet); all empty if no worker is available.
std::vector<std::vector<size_t>> lpt_lists(pool_pointer self, span<const int64_t> lengths);

} // namespace sprintrt::detail
