#include "actors/remote/remote_server.hpp"

#include <deque>
#include <map>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/remote/remote_handshake.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/output_gate.hpp"

namespace sprintrt {

namespace {

/// A segment a trainer sent, waiting for its turn.
struct queued_segment {
  remote_segment segment;
  caf::typed_response_promise<remote_loss> promise;
};

/// One trainer's work.
struct trainer_session {
  /// Names it in logs: its node.
  std::string name;
  std::deque<queued_segment> queued;
  /// The output gates of its segments at the pool, by request id.
  std::map<uint64_t, std::shared_ptr<output_gate>> running;
};

struct server_state {
  static inline const char* name = "remote_server";

  worker_pool_actor pool;
  size_t capacity = 1;
  std::string options_key;
  std::string label;
  std::map<caf::actor_addr, trainer_session> sessions;
  /// Trainers in the order they get their next turn.
  std::deque<caf::actor_addr> turns;
  /// Segments at the pool.
  size_t running = 0;
  uint64_t next_id = 0;
};

using server_pointer = remote_pool_actor::stateful_pointer<server_state>;

void dispatch(server_pointer self);

/// Sends one queued segment of `trainer` to the pool.
void run(server_pointer self, const caf::actor_addr& trainer, queued_segment item) {
  auto& st = self->state;
  auto id = st.next_id++;
  auto gate = std::make_shared<output_gate>();
  st.sessions[trainer].running.emplace(id, gate);
  ++st.running;
  auto& in = item.segment.log_posteriors;
  auto out = std::make_shared<float_rows>(float_rows{in.rows, in.cols, nullptr});
  out->values = make_float_storage(in.rows * in.cols);
  segment_job job{std::move(item.segment.segment), in.slice(), out->slice(), gate};
  auto done = [self, trainer, id] {
    auto& st = self->state;
    --st.running;
    if (auto session = st.sessions.find(trainer); session != st.sessions.end())
      session->second.running.erase(id);
    dispatch(self);
  };
  auto promise = std::move(item.promise);
  self->request(st.pool, caf::infinite, compute_atom::value, std::move(job))
      .then(
          [promise, out, done](double loss) mutable {
            promise.deliver(remote_loss{loss, std::move(*out)});
            done();
          },
          [promise, done](caf::error& err) mutable {
            promise.deliver(err);
            done();
          });
}

/// Hands queued segments to the pool, one trainer at a time in turns, while
/// fewer than two per worker are there.
void dispatch(server_pointer self) {
  auto& st = self->state;
  size_t idle_turns = 0;
  while (st.running < 2 * st.capacity && !st.turns.empty() && idle_turns < st.turns.size()) {
    auto trainer = st.turns.front();
    st.turns.pop_front();
    st.turns.push_back(trainer);
    auto& queue = st.sessions[trainer].queued;
    if (queue.empty()) {
      ++idle_turns;
      continue;
    }
    idle_turns = 0;
    auto item = std::move(queue.front());
    queue.pop_front();
    run(self, trainer, std::move(item));
  }
}

/// A trainer is gone: its queue is dropped, its running segments' gates
/// closed (their workers answer `cancelled` at once).
void drop_trainer(server_pointer self, const caf::actor_addr& trainer, const caf::error& reason) {
  auto& st = self->state;
  auto session = st.sessions.find(trainer);
  if (session == st.sessions.end())
    return;
  auto& s = session->second;
  spdlog::info("{}: trainer {} disconnected ({}): {} queued segments dropped, {} in progress "
               "cancelled",
               st.label, s.name, render(reason), s.queued.size(), s.running.size());
  for (auto& item : s.queued)
    item.promise.deliver(make_error(errc::cancelled, st.label + ": the trainer disconnected"));
  for (auto& [id, gate] : s.running)
    gate->close();
  st.sessions.erase(session);
  st.turns.erase(std::remove(st.turns.begin(), st.turns.end(), trainer), st.turns.end());
}

remote_pool_actor::behavior_type server_behavior(server_pointer self, worker_pool_actor pool,
                                                 size_t capacity, std::string options_key,
                                                 std::string label) {
  auto& st = self->state;
  st.pool = std::move(pool);
  st.capacity = capacity;
  st.options_key = std::move(options_key);
  st.label = std::move(label);
  self->set_down_handler(
      [self](caf::down_msg& msg) { drop_trainer(self, msg.source, msg.reason); });
  return {
      [self](hello_atom, const std::string& interface,
             const std::string& options) -> caf::result<uint64_t> {
        auto& st = self->state;
        auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto name = to_string(sender.node());
        if (auto err = check_handshake(st.label, interface, options, st.options_key)) {
          spdlog::warn("{}: refused trainer {}: {}", st.label, name, render(err));
          return err;
        }
        if (st.sessions.count(sender) == 0) {
          st.sessions[sender].name = name;
          st.turns.push_back(sender);
          self->monitor(sender);
          spdlog::info("{}: trainer {} connected", st.label, name);
        }
        return static_cast<uint64_t>(st.capacity);
      },
      [self](compute_atom, remote_segment& segment) -> caf::result<remote_loss> {
        auto& st = self->state;
        auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto session = st.sessions.find(sender);
        if (session == st.sessions.end())
          return make_error(errc::invalid_request, st.label + ": compute before hello");
        auto& lp = segment.log_posteriors;
        if (lp.rows == 0 || lp.cols == 0 || !lp.values)
          return make_error(errc::invalid_input,
                            st.label + ": segment '" + segment.segment + "' has no frames");
        auto promise = self->make_response_promise<remote_loss>();
        session->second.queued.push_back({std::move(segment), promise});
        dispatch(self);
        return promise;
      },
      [self](fsa_atom, fsa_query& query) -> caf::result<remote_fsa> {
        auto promise = self->make_response_promise<remote_fsa>();
        self->request(self->state.pool, caf::infinite, fsa_atom::value, std::move(query))
            .then([promise](
                      segment_fsa& fsa) mutable { promise.deliver(remote_fsa{std::move(fsa)}); },
                  [promise](caf::error& err) mutable { promise.deliver(err); });
        return promise;
      },
  };
}

} // namespace

remote_pool_actor spawn_remote_server(caf::actor_system& system, worker_pool_actor pool,
                                      size_t capacity, const sprint_options& opts,
                                      std::string name) {
  return system.spawn(server_behavior, std::move(pool), capacity, remote_options_key(opts),
                      std::move(name));
}

} // namespace sprintrt
