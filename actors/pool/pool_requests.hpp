#pragma once

/// @file
/// The pool's request shapes (see `pool_dispatch.hpp`): a single segment of
/// any command, a batch's losses, and a batch's merged automata; and the
/// preparer that checks a batch off the pool actor. Internal to the actors
/// library.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/pool/pool_dispatch.hpp"
#include "actors/pool/worker_pool.hpp"
#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

/// A request of one segment: its reply or error goes to its caller as is;
/// an error of the pool's own names the segment.
template <class Command>
struct single_request final : command_pool_request<Command> {
  using entry = command_entry<Command>;
  using reply_type = typename Command::reply;

  single_request(typename Command::work work, caf::typed_response_promise<reply_type> promise)
      : command_pool_request<Command>(request_shape::single, 1), work_(std::move(work)),
        promise_(std::move(promise)) {}

  typename Command::work work(size_t) const override { return work_; }

  void store(size_t, reply_type reply) override { reply_ = std::move(reply); }

  void record_failure(size_t, const caf::error& err, bool from_pool) override {
    error_ = from_pool ? with_context(entry::subject(work_), err) : err;
  }

  void finish(pool_pointer self) override {
    self->state.complete(this->id);
    if (error_)
      promise_.deliver(error_);
    else
      promise_.deliver(std::move(*reply_));
  }

  void answer_cancelled(const caf::error& err) override {
    entry::close(work_);
    promise_.deliver(err);
  }

private:
  typename Command::work work_;
  caf::typed_response_promise<reply_type> promise_;
  std::optional<reply_type> reply_;
  caf::error error_;
};

/// Starts the single request of command `Command` that the pool is handling
/// now: `work` for one worker, answered with its reply or its error. A pool
/// that answers it `cancelled` first closes what a worker could still write
/// into (`command_entry::close`).
template <class Command>
caf::result<typename Command::reply> serve_single(pool_pointer self, typename Command::work work) {
  // The origin first: making the promise takes the sender out of the message.
  auto origin = request_origin::current(self);
  auto promise = self->template make_response_promise<typename Command::reply>();
  auto req = std::make_shared<single_request<Command>>(std::move(work), promise);
  self->state.enroll(req, std::move(origin));
  start_request(self, req);
  return promise;
}

/// Starts a batch loss request: checks the batch (on the preparer), spreads
/// its segments over the workers and answers once every segment did.
caf::result<batch_result> compute_batch(pool_pointer self, batch& b);

/// Starts a batch automata request: exports every segment's FSA over the
/// workers and answers with their merge.
caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags);

} // namespace sprintrt::detail
