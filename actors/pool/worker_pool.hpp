#pragma once

/// @file
/// The worker pool actor (see `worker_pool_actor` for its messages): its
/// state, its one registry of the requests in progress, and spawning it.
/// Internal to the actors library. The actor is four files:
/// `worker_pool.cpp` (behavior, life cycle, stats, the registry),
/// `pool_slots.cpp` (the worker slots, their loads and rates),
/// `pool_dispatch.cpp` (every request's items: placement, replies,
/// failures) and `pool_requests.cpp` (the requests as their callers make
/// them: single segments, batch losses and automata, each answered its
/// way; and the batch preparer). Its pure parts are `lpt_schedule`,
/// `failure_policy`, `pool_assignment`, `batch_checks` and
/// `automata_merge`.
///
/// How a pool keeps count: every segment sent (or queued) to a worker holds
/// an `assignment` on the worker's load, which uncounts it exactly once when
/// released. Every request the pool answers later is in the registry, so
/// that a pool that stops fails it instead of leaving its caller waiting.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/pool/failure_policy.hpp"
#include "actors/pool/pool_assignment.hpp"
#include "actors/worker/worker_requests.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/worker_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt::detail {

/// Spawns a pool whose workers come from `source`: at most
/// `source.capacity` of them, each made when first needed; `name` labels
/// the pool and its workers ("pool 1 worker 2"). If `source.unavailable` is
/// set (or the source cannot make any worker), every request fails with it.
/// An exit message stops the pool and, through it, every worker; requests
/// still waiting or in progress fail with `cancelled`. Whatever the workers
/// need (for child processes: the io thread) must outlive them.
worker_pool_actor spawn_worker_pool(caf::actor_system& system, worker_source source,
                                    std::string name);

struct pool_request;

/// An item of a request in progress (a segment, or an automaton's
/// export), from when it is placed until it is answered (waiting in a list
/// or queue, or sent): counted in its worker's load while `held`.
struct placed_item {
  /// Its index in its request.
  size_t index = 0;
  assignment held;
  retry_counts retries;
};

/// An item waiting in the pool's queue for an idle worker.
struct waiting_item {
  std::shared_ptr<pool_request> request;
  placed_item item;
};

/// An item that no worker could take (every slot unavailable), waiting for
/// one to come back (`worker_source::slot_wait`) since `since`.
struct parked_item {
  std::shared_ptr<pool_request> request;
  placed_item item;
  std::chrono::steady_clock::time_point since;
};

/// One worker as the pool sees it. A worker that terminates is replaced in
/// its slot; the load stays, since every assignment counted in it is
/// released exactly once (CAF answers requests to a dead actor with an
/// error).
struct worker_slot {
  sprint_worker_actor handle;
  std::shared_ptr<worker_load> load = std::make_shared<worker_load>();
  /// The current worker's requests served and failed as the pool saw its
  /// answers: a terminated worker can no longer be asked for its counters,
  /// so these are what the slot keeps of it when it is replaced.
  worker_stats seen;
  /// What the workers this slot replaced counted (their `seen`), and in
  /// `restarts` how many it replaced: added to the current worker's own
  /// counters in `pool_stats::workers`.
  worker_stats replaced;
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
  /// Items of single-segment requests waiting for an idle worker, in
  /// arrival order (those placed again first).
  std::deque<waiting_item> waiting;
  /// Items waiting for an unavailable slot to come back, in the order
  /// they were parked; checked by the pool's `slot_check_atom` timer, which
  /// runs while any are here.
  std::vector<parked_item> parked;
  bool slot_check_scheduled = false;
  pool_stats stats;
  /// Checks batches and makes their outputs off the pool actor (see
  /// `compute_batch`); started with the first batch.
  caf::actor preparer;

  // -- the registry of requests in progress ------------------------------------------

  /// Registers `req`, made for the message being handled by `origin`, and
  /// gives it its id: from now on a stopping pool fails it
  /// (`pool_request::cancel`), and so does its caller's `(cancel, id)`.
  void enroll(const std::shared_ptr<pool_request>& req, request_origin origin);

  /// Forgets request `id` (it was answered).
  void complete(uint64_t id);

  /// Returns whether request `id` is still in progress (not answered or
  /// cancelled).
  bool in_progress(uint64_t id) const { return requests_.count(id) > 0; }

  /// Takes the request that `origin` names out of the registry, if it is
  /// there.
  std::shared_ptr<pool_request> take(const request_origin& origin);

  /// Takes request `id` out of the registry, if it is there.
  std::shared_ptr<pool_request> take(uint64_t id);

  /// Registers a stats request waiting for its workers' counters; returns
  /// the id to `complete_stats` it with.
  uint64_t enroll_stats(caf::typed_response_promise<pool_stats> promise);

  /// Answers stats request `id` with `stats` and forgets it, unless it was
  /// answered already (the pool stopped).
  void complete_stats(uint64_t id, pool_stats stats);

  /// Fails every registered request with `err` (`pool_request::cancel`);
  /// forgets them and the waiting and parked segments.
  void cancel_all(const caf::error& err);

  /// Normally the pool stopped through an exit message, which emptied
  /// everything. If it ended otherwise (killed, an exception), nobody may
  /// wait forever and no worker may outlive it.
  ~pool_state();

private:
  std::map<uint64_t, std::shared_ptr<pool_request>> requests_;
  std::map<uint64_t, caf::typed_response_promise<pool_stats>> stats_requests_;
  uint64_t next_id_ = 0;
};

/// The pool's own timer: the time limit (in ms) of request `id` ran out
/// (`batch::time_limit`).
using time_limit_atom = caf::atom_constant<caf::atom("timelimit")>;

/// The pool's own timer: check whether a slot came back for the parked
/// segments, or their wait ran out (`pool_state::parked`).
using slot_check_atom = caf::atom_constant<caf::atom("slotcheck")>;

/// The pool's full interface: the public one plus its own timers.
using pool_impl = worker_pool_actor::extend<caf::reacts_to<time_limit_atom, uint64_t, int64_t>,
                                            caf::reacts_to<slot_check_atom>>;

/// The pool actor as its handlers see it.
using pool_pointer = pool_impl::stateful_pointer<pool_state>;

} // namespace sprintrt::detail
