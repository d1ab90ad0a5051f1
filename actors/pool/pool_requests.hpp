#pragma once

/// @file
/// The pool's requests as its callers make them (see `pool_dispatch.hpp`):
/// a single segment of any command, a batch's losses, and a batch's merged
/// automata, each made of its items and how its caller is answered; and the
/// preparer that checks a batch off the pool actor. Internal to the actors
/// library.

#include <string>
#include <utility>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/pool/pool_dispatch.hpp"
#include "actors/pool/worker_pool.hpp"
#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

/// How a single request of command `Command` is answered: with its item's
/// reply, or its error (an error of the pool's own names the segment); a
/// pool that answers it `cancelled` first closes what a worker could still
/// write into (`command_entry::close`).
template <class Command>
request_answer single_answer(caf::typed_response_promise<typename Command::reply> promise) {
  return {
      [promise](pool_pointer, pool_request& req) mutable {
        auto& of = std::get<command_items<Command>>(req.items);
        if (req.failures.empty()) {
          promise.deliver(std::move(*of.replies[0]));
          return;
        }
        const auto& failed = req.failures.begin()->second;
        promise.deliver(failed.from_pool ? with_context(command_entry<Command>::subject(of.work[0]),
                                                        failed.error)
                                         : failed.error);
      },
      [promise](const caf::error& err) mutable { promise.deliver(err); },
  };
}

/// Starts the single request of command `Command` that the pool is handling
/// now: `work` for one worker, answered by `single_answer`.
template <class Command>
caf::result<typename Command::reply> serve_single(pool_pointer self, typename Command::work work) {
  // The origin first: making the promise takes the sender out of the message.
  auto origin = request_origin::current(self);
  auto promise = self->template make_response_promise<typename Command::reply>();
  std::vector<typename Command::work> items;
  items.push_back(std::move(work));
  auto req = std::make_shared<pool_request>(command_items<Command>{std::move(items)},
                                            single_answer<Command>(promise));
  self->state.enroll(req, std::move(origin));
  start_request(self, req, request_shape::single);
  return promise;
}

/// Starts a batch loss request: checks the batch (on the preparer), spreads
/// its segments over the workers and answers once every segment did.
caf::result<batch_result> compute_batch(pool_pointer self, batch& b);

/// Starts a batch automata request: exports every segment's FSA over the
/// workers and answers with their merge.
caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags);

} // namespace sprintrt::detail
