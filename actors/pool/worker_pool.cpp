/// @file
/// The pool actor: its behavior, stats and life cycle. State and
/// bookkeeping are in `pool_state`, the requests' segments in
/// `pool_dispatch.cpp`, single requests in `pool_singles.cpp`, batch
/// requests in `pool_batches.cpp`.

#include "actors/pool/worker_pool.hpp"

#include <memory>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/pool/pool_batches.hpp"
#include "actors/pool/pool_dispatch.hpp"
#include "actors/pool/pool_kinds.hpp"
#include "actors/pool/pool_singles.hpp"
#include "actors/pool/pool_state.hpp"
#include "actors/pool/segment_requests.hpp"
#include "sprintrt/error.hpp"

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
  auto id = st.track([promise](const caf::error& err) mutable { promise.deliver(err); });
  for (size_t w = 0; w < st.workers.size(); ++w) {
    auto done = [self, collected, pending, promise, id]() mutable {
      if (--*pending == 0) {
        self->state.untrack(id);
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
  st.cancel_all(make_error(errc::cancelled, st.label + " stopped"));
  for (auto& slot : st.workers)
    self->send_exit(slot.handle, reason);
  if (st.preparer)
    self->send_exit(st.preparer, reason);
  self->quit(reason);
}

/// The pool's behavior, spawned as a function with arguments (CAF 0.17
/// dereferences a null argument tuple when a lambda is spawned without any).
worker_pool_actor::behavior_type pool_behavior(pool_pointer self, worker_source source,
                                               std::string name) {
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
        // The pool may answer `cancelled` while a worker holds the job.
        if (!job.gate)
          job.gate = std::make_shared<output_gate>();
        return serve_single<loss_kind>(self, std::move(job));
      },
      [self](fsa_atom, fsa_query& query) -> caf::result<segment_fsa> {
        if (self->state.refusal)
          return self->state.refusal;
        if (auto err = check_query(query))
          return with_context(self->state.label, err);
        return serve_single<fsa_kind>(self, std::move(query));
      },
      [self](stats_atom) { return collect_stats(self); },
      [self](cancel_atom, uint64_t id) {
        auto& st = self->state;
        st.cancel_one({caf::actor_cast<caf::actor_addr>(self->current_sender()), id},
                      make_error(errc::cancelled, st.label + ": cancelled by its caller"));
      },
  };
}

} // namespace

worker_pool_actor spawn_worker_pool(caf::actor_system& system, worker_source source,
                                    std::string name) {
  return system.spawn(pool_behavior, std::move(source), std::move(name));
}

} // namespace sprintrt
