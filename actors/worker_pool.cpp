/// @file
/// The pool actor: its behavior, single-segment requests, stats and life
/// cycle. State and bookkeeping are in `pool_state`, batch requests in
/// `pool_batches.cpp`.

#include "actors/worker_pool.hpp"

#include <memory>
#include <variant>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/pool_state.hpp"
#include "runtime/io_thread.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

namespace {

/// Sends one single-segment request to worker `index`. If that worker turns
/// out to be gone, the request waits again for a (replaced) worker.
void send_single(pool_pointer self, size_t index, segment_request req) {
  auto used = self->state.workers[index].handle;
  auto frames = req.frames();
  assign(self, index, frames);
  // The request is kept (as the cancel hook) until answered, so that a
  // worker gone before reading it can be given the same request again.
  auto kept = std::make_shared<segment_request>(std::move(req));
  auto id = track(self, [kept](const caf::error& err) { kept->fail(err); });
  auto retry_or = [self, index, used, frames, id, kept](const caf::error& err, auto fail) {
    untrack(self, id);
    if (worker_was_gone(self, index, used, err)) {
      unassign(self, index, frames);
      self->state.waiting.push_front(std::move(*kept));
      serve_waiting(self);
      return;
    }
    fail();
    worker_done(self, index, frames);
  };
  if (auto* job = std::get_if<segment_job>(&kept->what)) {
    self->request(used, caf::infinite, compute_atom::value, *job)
        .then(
            [self, index, frames, id, kept](double loss) {
              ++self->state.stats.segments;
              kept->loss_promise.deliver(loss);
              untrack(self, id);
              worker_done(self, index, frames);
            },
            [self, kept, retry_or](caf::error& err) {
              retry_or(err, [&] {
                ++self->state.stats.failed_segments;
                kept->loss_promise.deliver(err);
              });
            });
    return;
  }
  self->request(used, caf::infinite, fsa_atom::value, std::get<std::string>(kept->what))
      .then(
          [self, index, id, kept](segment_fsa& fsa) {
            ++self->state.stats.fsa_exports;
            kept->fsa_promise.deliver(std::move(fsa));
            untrack(self, id);
            worker_done(self, index, 0);
          },
          [kept, retry_or](caf::error& err) {
            retry_or(err, [&] { kept->fsa_promise.deliver(err); });
          });
}

} // namespace

void serve_waiting(pool_pointer self) {
  auto& st = self->state;
  while (!st.waiting.empty()) {
    size_t idle = st.workers.size();
    for (size_t i = 0; i < st.workers.size(); ++i)
      if (st.workers[i].queued_requests == 0) {
        idle = i;
        break;
      }
    if (idle == st.workers.size()) {
      if (st.workers.size() >= st.opts.num_instances)
        return;
      ensure_workers(self, st.workers.size() + 1);
    }
    auto req = std::move(st.waiting.front());
    st.waiting.pop_front();
    send_single(self, idle, std::move(req));
  }
}

} // namespace sprintrt::detail

namespace sprintrt {

namespace {

using namespace detail;

caf::result<pool_stats> collect_stats(pool_pointer self) {
  auto& st = self->state;
  auto promise = self->make_response_promise<pool_stats>();
  if (st.workers.empty()) {
    promise.deliver(st.stats);
    return promise;
  }
  auto collected = std::make_shared<pool_stats>(st.stats);
  collected->workers.resize(st.workers.size());
  auto pending = std::make_shared<size_t>(st.workers.size());
  auto id = track(self, [promise](const caf::error& err) mutable { promise.deliver(err); });
  for (size_t w = 0; w < st.workers.size(); ++w) {
    auto done = [self, collected, pending, promise, id]() mutable {
      if (--*pending == 0) {
        untrack(self, id);
        promise.deliver(*collected);
      }
    };
    self->request(st.workers[w].handle, caf::infinite, stats_atom::value)
        .then(
            [collected, w, done](worker_stats& s) mutable {
              collected->workers[w] = s;
              done();
            },
            [done](caf::error&) mutable { done(); });
  }
  return promise;
}

/// Stops the pool: every waiting and in-progress request fails with
/// `cancelled`, every worker gets the exit (and stops its child gracefully).
void stop_pool(pool_pointer self, const caf::error& reason) {
  auto& st = self->state;
  auto cancelled = make_error(errc::cancelled, st.label + " stopped");
  for (auto& req : st.waiting)
    req.fail(cancelled);
  st.waiting.clear();
  for (auto& [id, cancel] : st.in_progress)
    cancel(cancelled);
  st.in_progress.clear();
  for (auto& slot : st.workers)
    self->send_exit(slot.handle, reason);
  self->quit(reason);
}

/// The pool's behavior, spawned as a function with arguments (CAF 0.17
/// dereferences a null argument tuple when a lambda is spawned without any).
worker_pool_actor::behavior_type pool_behavior(pool_pointer self, sprint_options opts,
                                               std::string name, runtime::io_thread* io) {
  auto& st = self->state;
  st.opts = std::move(opts);
  st.io = io;
  st.label = std::move(name);
  if (!st.opts.remote.empty())
    st.refusal = make_error(errc::invalid_options,
                            st.label + ": the 'remote' option (pools on other machines) is not "
                                       "supported yet; remove it to run local children");
  self->set_exit_handler([self](caf::exit_msg& msg) { stop_pool(self, msg.reason); });
  self->set_down_handler([self](caf::down_msg& msg) {
    // Workers end only when stopped; one that terminated otherwise (killed,
    // an exception) failed its requests, whose callbacks already ran or will
    // run. Its slot gets a new worker (unless a request found it gone first).
    auto& st = self->state;
    for (size_t i = 0; i < st.workers.size(); ++i)
      if (st.workers[i].handle.address() == msg.source) {
        spdlog::warn("{}: worker {} terminated ({}); starting a new one", st.label, i,
                     render(msg.reason));
        start_worker(self, i);
      }
  });
  return {
      [self](compute_atom, batch& b) -> caf::result<batch_result> {
        if (self->state.refusal)
          return self->state.refusal;
        return compute_batch(self, b);
      },
      [self](automata_atom, std::vector<std::string>& tags) -> caf::result<batch_automata> {
        if (self->state.refusal)
          return self->state.refusal;
        return compute_automata(self, tags);
      },
      [self](compute_atom, segment_job& job) -> caf::result<double> {
        if (self->state.refusal)
          return self->state.refusal;
        segment_request req;
        req.what = std::move(job);
        req.loss_promise = self->make_response_promise<double>();
        auto promise = req.loss_promise;
        self->state.waiting.push_back(std::move(req));
        serve_waiting(self);
        return promise;
      },
      [self](fsa_atom, std::string& segment) -> caf::result<segment_fsa> {
        if (self->state.refusal)
          return self->state.refusal;
        segment_request req;
        req.what = std::move(segment);
        req.fsa_promise = self->make_response_promise<segment_fsa>();
        auto promise = req.fsa_promise;
        self->state.waiting.push_back(std::move(req));
        serve_waiting(self);
        return promise;
      },
      [self](stats_atom) { return collect_stats(self); },
  };
}

} // namespace

worker_pool_actor spawn_worker_pool(caf::actor_system& system, runtime::io_thread& io,
                                    sprint_options opts, std::string name) {
  return system.spawn(pool_behavior, std::move(opts), std::move(name), &io);
}

} // namespace sprintrt
