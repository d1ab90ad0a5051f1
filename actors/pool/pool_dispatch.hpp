#pragma once

/// @file
/// The pool's dispatcher. Every request the pool serves, a single segment
/// as well as a batch's losses or automata, is a `pool_request`: data (its
/// items of one command, one reply or failure per item) and how its caller
/// is answered. All go through the same code: their items are placed on the
/// workers (counted in their loads), sent, answered, and after a worker
/// failure rerouted, resent or failed by one policy (`failure_policy.hpp`).
/// What differs per command is its `command_entry`; what differs per shape
/// is how items wait for workers (`request_shape`, a parameter of
/// `start_request`) and how the caller is answered (`request_answer`, made
/// in `pool_requests`). Internal to the actors library.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include <caf/error.hpp>

#include "actors/pool/pool_slots.hpp"
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

/// The items of a request of command `Command`: what each one's worker is
/// asked with, and its reply once answered.
template <class Command>
struct command_items {
  using command_type = Command;

  std::vector<typename Command::work> work;
  /// One per item: set when its worker answered it.
  std::vector<std::optional<typename Command::reply>> replies;

  /// Items of `work`, none answered yet.
  explicit command_items(std::vector<typename Command::work> items = {})
      : work(std::move(items)), replies(work.size()) {}
};

/// An item that failed.
struct item_failure {
  caf::error error;
  /// The error is the pool's own (no worker can take it, its workers kept
  /// terminating), not a worker's answer.
  bool from_pool = false;
};

struct pool_request;

/// How a request's caller is answered: the one thing that differs between
/// a single segment, a batch's losses and a batch's automata.
struct request_answer {
  /// Once every item is answered or failed (`pool_request::failures`).
  std::function<void(pool_pointer self, pool_request& req)> done;
  /// At once with `err`: the caller cancelled, or the pool stops. What a
  /// worker could still write into is closed first (`command_entry::close`).
  std::function<void(const caf::error& err)> cancelled;
};

/// A request in progress: its items, where they are, what came back and
/// what is still to come. Made by `pool_requests`, `enroll`ed with the
/// pool and `start_request`ed.
struct pool_request {
  /// A request of `items`, answered through `answer`.
  pool_request(sprint_commands::variant<command_items> items, request_answer answer)
      : items(std::move(items)), answer(std::move(answer)) {}

  /// Returns its number of items.
  size_t size() const {
    return std::visit([](const auto& of) { return of.work.size(); }, items);
  }

  /// Stops the request and answers its caller with `err`: nothing more of
  /// it is sent (its items in lists are dropped, those in the pool's queue
  /// skipped when reached), and answers to what was sent only release
  /// their workers.
  void cancel(const caf::error& err);

  /// Its items; a batch's are made once it was checked (`start_request`
  /// finds them there).
  sprint_commands::variant<command_items> items;
  /// The failed items' errors by index: in item order, whatever order they
  /// arrived in.
  std::map<size_t, item_failure> failures;
  request_answer answer;
  /// How its items wait for workers (set by `start_request`).
  request_shape shape = request_shape::single;
  /// Each worker's items not sent yet (batch shape), in sending order.
  std::vector<std::deque<placed_item>> lists;
  /// Items sent to each worker and not answered yet.
  std::vector<size_t> outstanding;
  /// The same by the id of the request to the worker, for telling the
  /// workers to drop them when the caller cancels.
  std::map<uint64_t, sprint_worker_actor> at_workers;
  /// Items not done yet.
  size_t pending = 0;
  /// The caller cancelled it (or the pool stopped).
  bool abandoned = false;
  /// Its id in the pool's registry.
  uint64_t id = 0;
  /// Who asked (what a `(cancel, id)` names).
  request_origin origin;
};

/// Places an enrolled request's items as `shape` says: spread over the
/// workers by LPT and streamed, or queued for idle workers.
void start_request(pool_pointer self, const std::shared_ptr<pool_request>& req,
                   request_shape shape);

/// Cancels `req` for its caller (`pool_request::cancel`) and tells its
/// workers to drop what they hold of it.
void cancel_request(pool_pointer self, const std::shared_ptr<pool_request>& req,
                    const caf::error& err);

/// Hands queued items to idle workers, creating workers while fewer
/// than the source's capacity exist; parks them (or fails them, without a
/// `slot_wait`) if no worker can take any.
void serve_waiting(pool_pointer self);

/// The `slot_check_atom` timer: places the parked segments again if a slot
/// came back, fails those whose `slot_wait` ran out, and checks again
/// later while any remain.
void check_parked(pool_pointer self);

} // namespace sprintrt::detail
