#include "actors/worker/sim_worker_actor.hpp"

#include <chrono>
#include <deque>
#include <optional>
#include <random>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/worker/worker_requests.hpp"
#include "sim/corpus_criterion.hpp"
#include "sim/sprint_service.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::detail {

namespace {

/// The delay of the request at the head of the queue is over.
using serve_atom = caf::atom_constant<caf::atom("simserve")>;

/// The worker's full interface: the public one plus its own timer.
using sim_worker_impl = sprint_worker_actor::extend<caf::reacts_to<serve_atom, uint64_t>>;

using clock = std::chrono::steady_clock;

/// A request the worker took from its mailbox.
struct queued_request : segment_request {
  /// 1-based arrival number (what `fail_request` counts).
  size_t number = 0;
};

struct sim_worker_state {
  static inline const char* name = "sim_worker";

  std::shared_ptr<const sim_worker_setup> setup;
  /// Computes every command as `sprint-sim` would.
  std::optional<sim::sprint_service> service;
  std::string label;
  /// Draws the delays, seeded with `behavior.seed` + slot.
  std::mt19937_64 random;
  std::deque<queued_request> queue;
  /// The request being served (waiting for its delay to pass).
  std::optional<queued_request> in_flight;
  clock::time_point served_since;
  /// Numbers the delayed serve messages, so that one is never mistaken for
  /// another's.
  uint64_t serial = 0;
  /// Compute and FSA requests received so far.
  size_t received = 0;
  worker_stats stats;

  ~sim_worker_state() {
    // The worker normally ends with nothing pending (stop and die answer or
    // hand back everything); if it ended otherwise, nobody may wait forever.
    fail_pending(in_flight, queue, make_error(errc::cancelled, label + " terminated"));
  }
};

using sim_worker_pointer = sim_worker_impl::stateful_pointer<sim_worker_state>;

/// The injected failure for `req`, if any.
caf::error injected_failure(const sim_worker_state& st, const queued_request& req) {
  const auto& behavior = st.setup->behavior;
  if (behavior.fail_request != 0 && req.number == behavior.fail_request)
    return request_error(errc::child_failed, st.label, req,
                         "request " + std::to_string(req.number) +
                             " fails on purpose (sim_worker_behavior::fail_request)");
  if (!behavior.fail_segment.empty() && req.text() == behavior.fail_segment)
    return request_error(errc::child_failed, st.label, req,
                         "the segment fails on purpose (sim_worker_behavior::fail_segment)");
  return {};
}

void serve_next(sim_worker_pointer self);

/// Answers the request in flight: its delay is over.
void finish_in_flight(sim_worker_pointer self) {
  auto& st = self->state;
  auto req = std::move(*st.in_flight);
  st.in_flight.reset();
  auto fail = [&](const caf::error& err) {
    ++st.stats.requests_failed;
    logger().warn("{}", render(err));
    req.fail(err);
  };
  if (auto err = injected_failure(st, req)) {
    fail(err);
  } else {
    std::visit(
        [&](auto& request) {
          auto result = st.service->answer(request.work);
          if (!result) {
            fail(request_error(st.label, req, result.error()));
          } else {
            ++st.stats.requests_served;
            request.promise.deliver(std::move(*result));
          }
        },
        req.what);
  }
  st.stats.busy_ns +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - st.served_since).count();
  serve_next(self);
}

/// Draws the next delay from [min_delay, max_delay].
std::chrono::microseconds next_delay(sim_worker_state& st) {
  const auto& behavior = st.setup->behavior;
  if (behavior.max_delay <= behavior.min_delay)
    return behavior.min_delay;
  std::uniform_int_distribution<int64_t> draw{behavior.min_delay.count(),
                                              behavior.max_delay.count()};
  return std::chrono::microseconds{draw(st.random)};
}

/// Starts serving the head of the queue if the worker is idle.
void serve_next(sim_worker_pointer self) {
  auto& st = self->state;
  if (st.in_flight || st.queue.empty())
    return;
  st.in_flight = std::move(st.queue.front());
  st.queue.pop_front();
  st.served_since = clock::now();
  auto delay = next_delay(st);
  if (delay.count() <= 0) {
    finish_in_flight(self);
    return;
  }
  self->delayed_send(self, delay, serve_atom::value, ++st.serial);
}

/// What a request to a worker that terminated gets.
caf::error worker_gone() {
  return caf::sec::request_receiver_down;
}

/// Takes one of the source's deaths if `max_deaths` leaves one; the count
/// is shared by workers on other threads, hence atomic.
bool claim_death(const sim_worker_setup& setup) {
  const auto limit = setup.behavior.max_deaths;
  if (limit == 0)
    return true;
  auto taken = setup.deaths.load();
  do {
    if (taken >= limit)
      return false;
  } while (!setup.deaths.compare_exchange_weak(taken, taken + 1));
  return true;
}

/// Counts a request that just arrived; returns whether the worker dies of it
/// (`die_at_request`, while `max_deaths` allows). Then the caller answers it
/// with `worker_gone()`.
bool dies_at_arrival(sim_worker_pointer self) {
  auto& st = self->state;
  if (++st.received != st.setup->behavior.die_at_request || !claim_death(*st.setup))
    return false;
  // CAF answers the messages left in a terminated actor's mailbox with
  // request_receiver_down. This one and those already taken out get the
  // same answer from the worker itself, so that their senders, like the
  // pool, see a worker that is gone. (Skipping this one instead would leave
  // the actor unfinished until another message arrived: CAF 0.17 finalizes
  // a quitting actor only after it consumed a message.)
  fail_pending(st.in_flight, st.queue, worker_gone());
  auto reason = make_error(errc::child_failed, st.label + " died at its request " +
                                                   std::to_string(st.received) +
                                                   " (sim_worker_behavior::die_at_request)");
  logger().warn("{}", render(reason));
  self->quit(reason);
  return true;
}

/// Queues a request that arrived (numbered by `dies_at_arrival`).
void enqueue(sim_worker_pointer self, segment_request request) {
  auto& st = self->state;
  st.queue.push_back(queued_request{std::move(request), st.received});
  serve_next(self);
}

/// Answers the request that `origin` names with `cancelled`, if the worker
/// still holds it; one being served is dropped (its pending serve message
/// no longer matches), and the next one starts.
void abandon(sim_worker_pointer self, const request_origin& origin) {
  auto& st = self->state;
  auto cancelled = [&](const queued_request& req) {
    return request_error(errc::cancelled, st.label, req, "cancelled");
  };
  if (st.in_flight && st.in_flight->origin == origin) {
    st.in_flight->cancel(cancelled(*st.in_flight));
    st.in_flight.reset();
    ++st.serial;
    serve_next(self);
    return;
  }
  for (auto i = st.queue.begin(); i != st.queue.end(); ++i)
    if (i->origin == origin) {
      i->cancel(cancelled(*i));
      st.queue.erase(i);
      return;
    }
}

/// Fails everything pending with `cancelled` and terminates.
void stop(sim_worker_pointer self, const caf::error& reason) {
  auto& st = self->state;
  fail_pending(st.in_flight, st.queue,
               make_error(errc::cancelled, st.label + " stopped before serving the request"));
  self->quit(reason);
}

/// How a simulated worker takes requests (see `command_handler`): queued,
/// unless it dies at this arrival (`sim_worker_behavior::die_at_request`).
struct sim_worker_commands {
  static caf::error invalid(sim_worker_pointer, caf::error err) { return err; }

  static caf::error refusal(sim_worker_pointer self) {
    return dies_at_arrival(self) ? worker_gone() : caf::error{};
  }

  static void take(sim_worker_pointer self, segment_request req) { enqueue(self, std::move(req)); }
};

/// The worker's behavior. Spawned as a function with arguments: CAF 0.17
/// dereferences a null argument tuple when a lambda is spawned without any.
sim_worker_impl::behavior_type
sim_worker_behavior_fun(sim_worker_pointer self, std::shared_ptr<const sim_worker_setup> setup,
                        size_t slot, std::string name) {
  auto& st = self->state;
  st.setup = std::move(setup);
  sim::corpus_criterion criterion{*st.setup->segments, st.setup->automaton_topology,
                                  st.setup->criterion};
  criterion.set_warn_on_skip(false); // the pool names a batch's skips once
  sim::service_options options;
  options.loss_encoding = st.setup->loss_encoding;
  st.service.emplace(std::move(criterion), std::move(options));

  st.label = std::move(name);
  st.random.seed(st.setup->behavior.seed + slot);
  self->set_exit_handler([self](caf::exit_msg& msg) { stop(self, msg.reason); });
  return std::apply(
      [self](auto... commands) -> sim_worker_impl::behavior_type {
        return {
            commands...,
            [self](stats_atom) { return self->state.stats; },
            [self](cancel_atom, uint64_t id) {
              abandon(self, {caf::actor_cast<caf::actor_addr>(self->current_sender()), id});
            },
            [self](stop_atom) -> int32_t {
              stop(self, caf::exit_reason::normal);
              return 0;
            },
            [self](serve_atom, uint64_t serial) {
              if (serial == self->state.serial && self->state.in_flight)
                finish_in_flight(self);
            },
        };
      },
      command_handlers<sim_worker_commands>(self));
}

} // namespace

sprint_worker_actor spawn_sim_worker(caf::actor_system& system,
                                     std::shared_ptr<const sim_worker_setup> setup, size_t slot,
                                     std::string name) {
  auto impl = system.spawn(sim_worker_behavior_fun, std::move(setup), slot, std::move(name));
  return caf::actor_cast<sprint_worker_actor>(impl);
}

} // namespace sprintrt::detail
