#include "actors/remote/remote_server.hpp"

#include <deque>
#include <functional>
#include <map>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/remote/remote_handshake.hpp"
#include "actors/worker/commands.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::detail {

namespace {

struct server_state;

using server_pointer = remote_pool_actor::stateful_pointer<server_state>;

/// A command a trainer sent, waiting for its turn: what is left to do with
/// it, whatever its command.
struct queued_call {
  /// Sends it to the pool as `self`; `done()` runs once it was answered.
  std::function<void(server_pointer self, std::function<void()> done)> start;
  /// Closes what the pool could still write into (`command_entry::close`).
  std::function<void()> close;
  /// Answers the trainer with `err` instead of sending it.
  std::function<void(const caf::error& err)> drop;
};

/// One trainer's work.
struct trainer_session {
  /// Names it in logs: its node.
  std::string name;
  std::deque<queued_call> queued;
  /// What closes its commands at the pool, by call id.
  std::map<uint64_t, std::function<void()>> running;
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
  /// Commands at the pool.
  size_t running = 0;
  uint64_t next_id = 0;
};

/// The call of command `Command` for `work` (converted from what the
/// trainer sent), answered through `promise` as `remote_wire` says.
template <class Command>
queued_call make_call(typename Command::work work,
                      caf::typed_response_promise<typename remote_wire<Command>::reply> promise) {
  using wire = remote_wire<Command>;
  queued_call call;
  // A copy of the work shares what closing it closes (a job's gate).
  call.close = [work] { command_entry<Command>::close(work); };
  call.drop = [promise](const caf::error& err) mutable { promise.deliver(err); };
  call.start = [work = std::move(work), promise](server_pointer self,
                                                 std::function<void()> done) mutable {
    auto sent = work;
    self->request(self->state.pool, caf::infinite, Command::atom::value, std::move(sent))
        .then(
            [promise, work, done](typename Command::reply& reply) mutable {
              promise.deliver(wire::to_reply(std::move(reply), work));
              done();
            },
            [promise, done](caf::error& err) mutable {
              promise.deliver(err);
              done();
            });
  };
  return call;
}

void dispatch(server_pointer self);

/// Sends one queued call of `trainer` to the pool.
void run(server_pointer self, const caf::actor_addr& trainer, queued_call call) {
  auto& st = self->state;
  auto id = st.next_id++;
  st.sessions[trainer].running.emplace(id, std::move(call.close));
  ++st.running;
  call.start(self, [self, trainer, id] {
    auto& st = self->state;
    --st.running;
    if (auto session = st.sessions.find(trainer); session != st.sessions.end())
      session->second.running.erase(id);
    dispatch(self);
  });
}

/// Hands queued calls to the pool, one trainer at a time in turns, while
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
    auto call = std::move(queue.front());
    queue.pop_front();
    run(self, trainer, std::move(call));
  }
}

/// A trainer is gone: its queue is dropped, its running calls closed (their
/// workers answer `cancelled` at once).
void drop_trainer(server_pointer self, const caf::actor_addr& trainer, const caf::error& reason) {
  auto& st = self->state;
  auto session = st.sessions.find(trainer);
  if (session == st.sessions.end())
    return;
  auto& s = session->second;
  logger().info("{}: trainer {} disconnected ({}): {} queued segments dropped, {} in progress "
                "cancelled",
                st.label, s.name, render(reason), s.queued.size(), s.running.size());
  for (auto& call : s.queued)
    call.drop(make_error(errc::cancelled, st.label + ": the trainer disconnected"));
  for (auto& [id, close] : s.running)
    close();
  st.sessions.erase(session);
  st.turns.erase(std::remove(st.turns.begin(), st.turns.end(), trainer), st.turns.end());
}

/// The handler of command `Command`: queues it for the trainer that sent
/// it, converted as `remote_wire` says.
template <class Command>
auto command_handler(server_pointer self) {
  using wire = remote_wire<Command>;
  return [self](typename Command::atom,
                typename wire::work& received) -> caf::result<typename wire::reply> {
    auto& st = self->state;
    auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
    auto session = st.sessions.find(sender);
    if (session == st.sessions.end())
      return make_error(errc::invalid_request,
                        st.label + ": " + caf::to_string(Command::atom::value) + " before hello");
    auto work = wire::to_local(received);
    if (!work)
      return with_context(st.label, work.error());
    auto promise = self->template make_response_promise<typename wire::reply>();
    session->second.queued.push_back(make_call<Command>(std::move(*work), promise));
    dispatch(self);
    return promise;
  };
}

/// The server's behavior: the handshake, then one handler per command of
/// `Commands`.
template <class... Commands>
remote_pool_actor::behavior_type server_handlers(server_pointer self,
                                                 sprint_command_list<Commands...>) {
  return {
      [self](hello_atom, const std::string& interface,
             const std::string& options) -> caf::result<uint64_t> {
        auto& st = self->state;
        auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto name = to_string(sender.node());
        if (auto err = check_handshake(st.label, interface, options, st.options_key)) {
          logger().warn("{}: refused trainer {}: {}", st.label, name, render(err));
          return err;
        }
        if (st.sessions.count(sender) == 0) {
          st.sessions[sender].name = name;
          st.turns.push_back(sender);
          self->monitor(sender);
          logger().info("{}: trainer {} connected", st.label, name);
        }
        return static_cast<uint64_t>(st.capacity);
      },
      command_handler<Commands>(self)...,
  };
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
  return server_handlers(self, sprint_commands{});
}

} // namespace

remote_pool_actor spawn_remote_server(caf::actor_system& system, worker_pool_actor pool,
                                      size_t capacity, const sprint_options& opts,
                                      std::string name) {
  return system.spawn(server_behavior, std::move(pool), capacity, remote_options_key(opts),
                      std::move(name));
}

} // namespace sprintrt::detail
