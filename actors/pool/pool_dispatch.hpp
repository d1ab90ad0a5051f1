#pragma once

/// @file
/// The pool's dispatcher. Every request the pool serves, a single segment
/// (a batch of one) as well as a batch's losses or automata, is a
/// `pool_request` of one kind with one or more segments, and goes through
/// the same code: its segments are placed on the workers (counted in their
/// loads), sent, answered, and after a worker failure rerouted, resent or
/// failed by one policy (`failure_policy.hpp`). What differs per kind is in
/// `pool_kinds.hpp`; what differs per shape (what a segment's worker is
/// asked with, where its reply goes, how the caller is answered) in the
/// request's overrides, in `pool_singles.cpp` and `pool_batches.cpp`.
/// Internal to the actors library.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include <caf/error.hpp>

#include "actors/pool/pool_kinds.hpp"
#include "actors/pool/pool_state.hpp"
#include "actors/pool/segment_requests.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::detail {

/// Where a request's segments wait until a worker takes them.
enum class placement {
  /// Spread over the workers by LPT when the request starts, counting what
  /// they hold already; each worker's list is streamed (batches).
  lpt,
  /// In the pool's queue, in arrival order, until a worker is idle (single
  /// segments: a worker busy with a batch's list does not take one).
  when_idle,
};

/// A request in progress: its segments, where they are, and what is still
/// to come. Made by a request shape, then `track_request`ed and
/// `start_request`ed; the dispatcher calls the overrides.
struct pool_request : std::enable_shared_from_this<pool_request> {
  /// A request of `segments` segments, placed `where`.
  pool_request(placement where, size_t segments) : where(where), size(segments) {}

  virtual ~pool_request() = default;

  // -- what each kind does (`kind_request`) -----------------------------------------

  /// Sends segment `segment` (assigned to worker `w`) to worker `w`.
  virtual void send(pool_pointer self, size_t w, queued_segment segment) = 0;

  /// Returns segment `index`'s weight in its worker's load.
  virtual int64_t weight(size_t index) const = 0;

  /// Counts segment `index` as failed and records the failure.
  virtual void segment_failed(pool_pointer self, size_t index, const caf::error& err,
                              bool from_pool) = 0;

  // -- what each shape does ---------------------------------------------------------

  /// Records that segment `index` failed with `err`; `from_pool`: the error
  /// is the pool's own (no worker can take it, its workers kept
  /// terminating), not a worker's answer.
  virtual void record_failure(size_t index, const caf::error& err, bool from_pool) = 0;

  /// Answers the caller once every segment is done (and untracks it).
  virtual void finish(pool_pointer self) = 0;

  /// Answers the caller with `err` at once (it cancelled, or the pool
  /// stops), first closing whatever a worker could still write into.
  virtual void answer_cancelled(const caf::error& err) = 0;

  // -- the dispatcher's bookkeeping -------------------------------------------------

  const placement where;
  /// Its number of segments.
  const size_t size;
  /// Each worker's segments not sent yet (LPT placement), in sending order.
  std::vector<std::deque<queued_segment>> lists;
  /// Segments sent to each worker and not answered yet.
  std::vector<size_t> outstanding;
  /// The same by the id of the request to the worker, for telling the
  /// workers to drop them when the caller cancels.
  std::map<uint64_t, sprint_worker_actor> at_workers;
  /// Segments not done yet.
  size_t pending = 0;
  /// The caller cancelled it (or the pool stopped): nothing more is sent,
  /// and answers to what was sent only release their workers.
  bool abandoned = false;
  /// Its id in the pool's tracked requests.
  uint64_t id = 0;
};

/// A request of one kind: how its segments are sent and weighed. Its shape
/// says what a segment's worker is asked with (`work`) and where the reply
/// goes (`store`).
template <class Kind>
struct kind_request : pool_request {
  using pool_request::pool_request;

  /// What segment `index`'s worker is asked with.
  virtual typename Kind::work work(size_t index) const = 0;

  /// Keeps segment `index`'s reply.
  virtual void store(size_t index, typename Kind::reply_type reply) = 0;

  void send(pool_pointer self, size_t w, queued_segment segment) override;

  int64_t weight(size_t index) const override { return Kind::weight(work(index)); }

  void segment_failed(pool_pointer self, size_t index, const caf::error& err,
                      bool from_pool) override {
    Kind::count_failed(self->state.stats);
    record_failure(index, err, from_pool);
  }
};

extern template struct kind_request<loss_kind>;
extern template struct kind_request<fsa_kind>;

/// Makes the worker of slot `index` from the source (first use, or replacing
/// one that terminated; the slot's load stays). The pool monitors it.
void start_worker(pool_pointer self, size_t index);

/// Creates workers until there are `count` (at most the source's capacity).
void ensure_workers(pool_pointer self, size_t count);

/// Registers `req` with the pool, as the request of `origin` (the message
/// being handled): a stopping pool or its cancelling caller fails it
/// (`answer_cancelled`), nothing more of it is sent, and its workers are
/// told to drop what they hold of it.
void track_request(pool_pointer self, const std::shared_ptr<pool_request>& req,
                   request_origin origin);

/// Places a tracked request's segments: spread over the workers by LPT and
/// streamed, or queued for idle workers (see `placement`).
void start_request(pool_pointer self, const std::shared_ptr<pool_request>& req);

/// Hands queued segments to idle workers, creating workers while fewer
/// than the source's capacity exist; fails them if no worker can take any.
void serve_waiting(pool_pointer self);

} // namespace sprintrt::detail
