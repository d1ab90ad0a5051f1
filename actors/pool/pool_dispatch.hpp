#pragma once

/// @file
/// The pool's dispatcher. Every request the pool serves, a single segment
/// (a request of one segment) as well as a batch's losses or automata, is a
/// `pool_request` of one command with one or more segments, and goes
/// through the same code: its segments are placed on the workers (counted
/// in their loads), sent, answered, and after a worker failure rerouted,
/// resent or failed by one policy (`failure_policy.hpp`). What differs per
/// command is its `command_entry`; what differs per shape (what a segment's
/// worker is asked with, where its reply goes, how the caller is answered)
/// is in the request's overrides, in `pool_requests.cpp`. Internal to the
/// actors library.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <caf/error.hpp>

#include "actors/pool/worker_pool.hpp"
#include "actors/worker/commands.hpp"
#include "actors/worker/worker_requests.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::detail {

/// The two shapes of request, which wait differently for their workers.
enum class request_shape {
  /// One segment: it waits in the pool's queue, in arrival order, until a
  /// worker is idle (a worker busy with a batch's list does not take one).
  single,
  /// A batch's segments: spread over the workers by LPT when the request
  /// starts, counting what they hold already; each worker's list is
  /// streamed.
  batch,
};

/// A request in progress: its segments, where they are, and what is still
/// to come. Made by a request shape, then `enroll`ed with the pool and
/// `start_request`ed; the dispatcher calls the overrides.
struct pool_request : std::enable_shared_from_this<pool_request> {
  /// A request of `segments` segments of shape `shape`.
  pool_request(request_shape shape, size_t segments) : shape(shape), size(segments) {}

  virtual ~pool_request() = default;

  /// Sends segment `segment` (assigned to worker `w`) to worker `w`.
  virtual void send(pool_pointer self, size_t w, request_segment segment) = 0;

  /// Returns segment `index`'s weight in its worker's load.
  virtual int64_t weight(size_t index) const = 0;

  /// Counts segment `index` as failed with `err` and keeps the failure;
  /// `from_pool`: the error is the pool's own (no worker can take it, its
  /// workers kept terminating), not a worker's answer.
  virtual void segment_failed(pool_pointer self, size_t index, const caf::error& err,
                              bool from_pool) = 0;

  /// Answers the caller once every segment is done (and completes it in the
  /// registry).
  virtual void finish(pool_pointer self) = 0;

  /// Answers the caller with `err` at once (it cancelled, or the pool
  /// stops), first closing whatever a worker could still write into.
  virtual void answer_cancelled(const caf::error& err) = 0;

  /// Stops the request and answers its caller with `err`: nothing more of
  /// it is sent (its segments in lists are dropped, those in the pool's
  /// queue skipped when reached), and answers to what was sent only
  /// release their workers.
  void cancel(const caf::error& err);

  const request_shape shape;
  /// Its number of segments.
  const size_t size;
  /// Each worker's segments not sent yet (batch shape), in sending order.
  std::vector<std::deque<request_segment>> lists;
  /// Segments sent to each worker and not answered yet.
  std::vector<size_t> outstanding;
  /// The same by the id of the request to the worker, for telling the
  /// workers to drop them when the caller cancels.
  std::map<uint64_t, sprint_worker_actor> at_workers;
  /// Segments not done yet.
  size_t pending = 0;
  /// The caller cancelled it (or the pool stopped).
  bool abandoned = false;
  /// Its id in the pool's registry.
  uint64_t id = 0;
  /// Who asked (what a `(cancel, id)` names).
  request_origin origin;
};

/// Handles an answer to segment `sent` of `req`, sent to worker `w` as
/// `worker_request`, if the request was abandoned meanwhile: it only frees
/// its worker (counting what it `computed` into its measured speed).
/// Returns whether it was abandoned.
bool drop_if_abandoned(pool_pointer self, pool_request& req, size_t w, request_segment& sent,
                       uint64_t worker_request, bool computed);

/// Ends segment `sent` of `req` (answered or failed): frees its worker,
/// then finishes the request if it was the last, or sends worker `w` the
/// next of its list.
void segment_done(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w,
                  request_segment& sent);

/// Handles worker `w`'s (`used`'s) error `err` for segment `sent` of `req`
/// by the failure policy: the segment is resent, rerouted or failed.
void segment_error(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w,
                   request_segment sent, const sprint_worker_actor& used, caf::error err);

/// Counts an answer of worker `used`, in slot `w`, into what the pool saw of
/// the slot's workers (`worker_slot::seen`, or `replaced` for a late answer
/// of a worker replaced meanwhile): served if `err` is null, else failed,
/// unless `err` says the worker was gone (the request is resent) or that
/// the request was cancelled (neither kind of worker counts those).
void count_answer(pool_pointer self, size_t w, const sprint_worker_actor& used,
                  const caf::error* err);

/// A request of command `Command`: how its segments are sent, weighed and
/// counted. Its shape says what a segment's worker is asked with (`work`),
/// where the reply goes (`store`) and what a failure means for its caller
/// (`record_failure`).
template <class Command>
struct command_pool_request : pool_request {
  using entry = command_entry<Command>;
  using pool_request::pool_request;

  /// What segment `index`'s worker is asked with.
  virtual typename Command::work work(size_t index) const = 0;

  /// Keeps segment `index`'s reply.
  virtual void store(size_t index, typename Command::reply reply) = 0;

  /// Keeps that segment `index` failed with `err` (see `segment_failed`).
  virtual void record_failure(size_t index, const caf::error& err, bool from_pool) = 0;

  int64_t weight(size_t index) const override { return entry::weight(work(index)); }

  void segment_failed(pool_pointer self, size_t index, const caf::error& err,
                      bool from_pool) override {
    entry::count_failed(self->state.stats);
    record_failure(index, err, from_pool);
  }

  void send(pool_pointer self, size_t w, request_segment segment) override {
    auto req = std::static_pointer_cast<command_pool_request>(shared_from_this());
    // Kept until answered, so that it can be placed again.
    auto sent = std::make_shared<request_segment>(std::move(segment));
    ++outstanding[w];
    auto used = self->state.workers[w].handle;
    auto asked = self->request(used, caf::infinite, Command::atom::value, work(sent->index));
    auto worker_request = request_id_of(asked.id());
    at_workers.emplace(worker_request, used);
    asked.then(
        [self, req, w, sent, used, worker_request](typename Command::reply& reply) {
          count_answer(self, w, used, nullptr);
          if (drop_if_abandoned(self, *req, w, *sent, worker_request, true))
            return;
          req->store(sent->index, std::move(reply));
          entry::count_served(self->state.stats);
          segment_done(self, req, w, *sent);
        },
        [self, req, w, sent, used, worker_request](caf::error& err) {
          count_answer(self, w, used, &err);
          if (drop_if_abandoned(self, *req, w, *sent, worker_request, false))
            return;
          segment_error(self, req, w, std::move(*sent), used, std::move(err));
        });
  }
};

/// Makes the worker of slot `index` from the source (first use, or replacing
/// one that terminated; the slot's load stays, and what the pool saw of the
/// old worker moves into the slot's `replaced` counters, with one restart).
/// The pool monitors it.
void start_worker(pool_pointer self, size_t index);

/// Creates workers until there are `count` (at most the source's capacity).
void ensure_workers(pool_pointer self, size_t count);

/// Places an enrolled request's segments: spread over the workers by LPT
/// and streamed, or queued for idle workers (see `request_shape`).
void start_request(pool_pointer self, const std::shared_ptr<pool_request>& req);

/// Cancels `req` for its caller (`pool_request::cancel`) and tells its
/// workers to drop what they hold of it.
void cancel_request(pool_pointer self, const std::shared_ptr<pool_request>& req,
                    const caf::error& err);

/// Hands queued segments to idle workers, creating workers while fewer
/// than the source's capacity exist; parks them (or fails them, without a
/// `slot_wait`) if no worker can take any.
void serve_waiting(pool_pointer self);

/// The `slot_check_atom` timer: places the parked segments again if a slot
/// came back, fails those whose `slot_wait` ran out, and checks again
/// later while any remain.
void check_parked(pool_pointer self);

} // namespace sprintrt::detail
