/// @file
/// The pool actor: its behavior, life cycle, stats and registry of
/// requests (see the header).

#include "actors/pool/worker_pool.hpp"
#include "sprintrt/logging.hpp"

#include <memory>
#include <tuple>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/pool/pool_dispatch.hpp"
#include "actors/pool/pool_requests.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

// -- the registry -------------------------------------------------------------------

void pool_state::enroll(const std::shared_ptr<pool_request>& req, request_origin origin) {
  req->id = next_id_++;
  req->origin = std::move(origin);
  requests_.emplace(req->id, req);
}

void pool_state::complete(uint64_t id) {
  requests_.erase(id);
}

std::shared_ptr<pool_request> pool_state::take(const request_origin& origin) {
  for (auto i = requests_.begin(); i != requests_.end(); ++i)
    if (i->second->origin == origin) {
      auto req = std::move(i->second);
      requests_.erase(i);
      return req;
    }
  return nullptr;
}

std::shared_ptr<pool_request> pool_state::take(uint64_t id) {
  auto i = requests_.find(id);
  if (i == requests_.end())
    return nullptr;
  auto req = std::move(i->second);
  requests_.erase(i);
  return req;
}

uint64_t pool_state::enroll_stats(caf::typed_response_promise<pool_stats> promise) {
  auto id = next_id_++;
  stats_requests_.emplace(id, std::move(promise));
  return id;
}

void pool_state::complete_stats(uint64_t id, pool_stats collected) {
  auto i = stats_requests_.find(id);
  if (i == stats_requests_.end())
    return;
  auto promise = std::move(i->second);
  stats_requests_.erase(i);
  promise.deliver(std::move(collected));
}

void pool_state::cancel_all(const caf::error& err) {
  // Taken out first: cancelling may release assignments, never add. Every
  // waiting segment's request is registered: it fails below.
  waiting.clear();
  parked.clear();
  auto requests = std::move(requests_);
  requests_.clear();
  for (auto& [id, req] : requests)
    req->cancel(err);
  auto stats_requests = std::move(stats_requests_);
  stats_requests_.clear();
  for (auto& [id, promise] : stats_requests)
    promise.deliver(err);
}

pool_state::~pool_state() {
  cancel_all(make_error(errc::cancelled, label + " terminated"));
  for (auto& slot : workers)
    caf::anon_send_exit(slot.handle, caf::exit_reason::user_shutdown);
  if (preparer)
    caf::anon_send_exit(preparer, caf::exit_reason::user_shutdown);
}

namespace {

/// A slot's counters: its current worker's own `current` plus what the
/// workers it replaced counted (`worker_slot::replaced`).
worker_stats slot_counters(const worker_slot& slot, worker_stats current) {
  current.requests_served += slot.replaced.requests_served;
  current.requests_failed += slot.replaced.requests_failed;
  current.restarts += slot.replaced.restarts;
  return current;
}

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
  auto id = st.enroll_stats(promise);
  for (size_t w = 0; w < st.workers.size(); ++w) {
    auto done = [self, collected, pending, id]() mutable {
      if (--*pending == 0)
        self->state.complete_stats(id, *collected);
    };
    // The slot as it is now: a worker replaced before its answer comes was
    // already folded into `replaced`.
    auto slot = st.workers[w];
    self->request(slot.handle, caf::infinite, stats_atom::value)
        .then(
            [collected, w, slot, done](worker_stats& s) mutable {
              collected->workers[w] = slot_counters(slot, s);
              done();
            },
            [collected, w, slot, done](caf::error&) mutable {
              // The worker is gone: what the pool saw of it is all there is.
              collected->workers[w] = slot_counters(slot, slot.seen);
              done();
            });
  }
  return promise;
}

/// Stops the pool: every waiting and in-progress request fails with
/// `cancelled`, every worker gets the exit (and stops its child gracefully).
void stop_pool(pool_pointer self, const caf::error& reason) {
  auto& st = self->state;
  st.cancel_all(make_error(errc::cancelled, st.label + " stopped"));
  for (auto& slot : st.workers)
    self->send_exit(slot.handle, reason);
  if (st.preparer)
    self->send_exit(st.preparer, reason);
  self->quit(reason);
}

/// The pool's handler of a single request of `Command` (see `serve_single`).
template <class Command>
auto single_handler(pool_pointer self) {
  using reply = typename Command::reply;
  return [self](typename Command::atom, typename Command::work& work) -> caf::result<reply> {
    auto& st = self->state;
    if (st.refusal)
      return st.refusal;
    if (auto err = command_entry<Command>::admit(work))
      return with_context(st.label, err);
    return serve_single<Command>(self, std::move(work));
  };
}

/// The single-request handlers of every command, as a tuple.
template <class... Commands>
auto single_handlers(pool_pointer self, sprint_command_list<Commands...>) {
  return std::make_tuple(single_handler<Commands>(self)...);
}

/// The pool's behavior, spawned as a function with arguments (CAF 0.17
/// dereferences a null argument tuple when a lambda is spawned without any).
pool_impl::behavior_type pool_behavior(pool_pointer self, worker_source source, std::string name) {
  auto& st = self->state;
  st.source = std::move(source);
  st.label = std::move(name);
  st.stats.capacity = st.source.capacity;
  if (st.source.unavailable)
    st.refusal = with_context(st.label, st.source.unavailable);
  else if (st.source.capacity == 0 || !st.source.make)
    st.refusal = make_error(errc::invalid_options,
                            st.label + ": its worker source ('" + st.source.description +
                                "') cannot make workers (capacity 0 or no make function)");
  // Workers that come and go (remote pools) start at once, to connect.
  if (!st.refusal && st.source.slot_state)
    ensure_workers(self, st.source.capacity);
  self->set_exit_handler([self](caf::exit_msg& msg) { stop_pool(self, msg.reason); });
  self->set_down_handler([self](caf::down_msg& msg) {
    // Workers end only when stopped; one that terminated otherwise (killed,
    // an exception) failed its requests, whose callbacks already ran or will
    // run. Its slot gets a new worker (unless a request found it gone first).
    auto& st = self->state;
    for (size_t i = 0; i < st.workers.size(); ++i)
      if (st.workers[i].handle.address() == msg.source) {
        logger().warn("{}: worker {} terminated ({}); starting a new one", st.label, i,
                      render(msg.reason));
        start_worker(self, i);
      }
  });
  return std::apply(
      [self](auto... singles) -> pool_impl::behavior_type {
        return {
            singles...,
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
            [self](stats_atom) { return collect_stats(self); },
            [self](time_limit_atom, uint64_t id, int64_t limit_ms) {
              auto& st = self->state;
              if (auto req = st.take(id))
                cancel_request(self, req,
                               make_error(errc::timeout, st.label + ": the batch's time limit (" +
                                                             std::to_string(limit_ms) +
                                                             " ms) ran out"));
            },
            [self](slot_check_atom) { check_parked(self); },
            [self](cancel_atom, uint64_t id) {
              auto& st = self->state;
              if (auto req =
                      st.take({caf::actor_cast<caf::actor_addr>(self->current_sender()), id}))
                cancel_request(self, req,
                               make_error(errc::cancelled, st.label + ": cancelled by its caller"));
            },
        };
      },
      single_handlers(self, sprint_commands{}));
}

} // namespace

worker_pool_actor spawn_worker_pool(caf::actor_system& system, worker_source source,
                                    std::string name) {
  return caf::actor_cast<worker_pool_actor>(
      system.spawn(detail::pool_behavior, std::move(source), std::move(name)));
}

} // namespace sprintrt::detail
