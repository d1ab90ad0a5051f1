#include "actors/remote/remote_worker.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <variant>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/remote/remote_tls.hpp"
#include "actors/worker/worker_requests.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/logging.hpp"
#include "sprintrt/remote_interface.hpp"

namespace sprintrt::detail {

namespace {

/// Connect again (after a backoff).
using reconnect_atom = caf::atom_constant<caf::atom("reconnect")>;

using remote_worker_actor = sprint_worker_actor::extend<caf::reacts_to<reconnect_atom>>;

struct remote_worker_state {
  static inline const char* name = "remote_worker";

  remote_worker_settings settings;
  std::shared_ptr<remote_slot> slot;
  /// "host:port", in front of its errors.
  std::string endpoint;
  std::string label;
  /// Set while connected.
  remote_pool_actor remote;
  /// Set while not connected, after a failure: why, for the requests it
  /// fails.
  std::string down_reason;
  /// The cause of the last failure to connect (logged once at warn).
  std::string last_failure;
  /// Requests kept while connecting.
  std::deque<segment_request> waiting;
  /// Requests sent, by id: answered once, by the reply or by a loss of the
  /// connection, whichever comes first.
  std::map<uint64_t, segment_request> sent;
  uint64_t next_id = 0;
  std::chrono::milliseconds backoff{0};
  worker_stats stats;
};

using worker_pointer = remote_worker_actor::stateful_pointer<remote_worker_state>;

/// The error of a request this worker could not send: the pool sends it
/// elsewhere.
caf::error unavailable(worker_pointer self) {
  return make_error(errc::worker_unavailable, self->state.down_reason);
}

/// Takes request `id` out of `sent` (none if it was answered already).
std::optional<segment_request> take(worker_pointer self, uint64_t id) {
  auto& sent = self->state.sent;
  auto found = sent.find(id);
  if (found == sent.end())
    return std::nullopt;
  auto req = std::move(found->second);
  sent.erase(found);
  return req;
}

void go_down(worker_pointer self, const std::string& why, bool lasting = false);

/// Why `err`, a request's failure, means that the connection (or the
/// server's session for this trainer) is broken; empty if it does not. Then
/// the request was not computed, and neither will the others sent be.
std::string connection_broken(const caf::error& err) {
  if (err == caf::sec::request_receiver_down)
    return "the remote pool is gone";
  if (err == caf::sec::request_timeout)
    return "a request got no answer in time (the connection may be dead)";
  if (err == errc::invalid_request)
    return "the server lost this trainer's session (" + render(err) + ")";
  return {};
}

/// What a request's failure at the remote end becomes here: the remote
/// pool's error (a Sprint exception, a child that kept failing), prefixed
/// with the endpoint. The far worker that met it stays its worker, with
/// the far pool as its pool (`in_pool`, which that pool applied).
caf::error remote_error(worker_pointer self, const caf::error& err) {
  return with_context(self->state.endpoint, err);
}

/// Sends a request to the connected remote pool.
void send(worker_pointer self, segment_request req) {
  auto& st = self->state;
  auto id = st.next_id++;
  auto failed = [self, id](caf::error& err) {
    auto req = take(self, id);
    if (!req)
      return;
    ++self->state.stats.requests_failed;
    if (auto why = connection_broken(err); !why.empty()) {
      // The others it holds fail with it, and it connects again.
      go_down(self, why);
      req->fail(unavailable(self));
      return;
    }
    req->fail(remote_error(self, err));
  };
  std::visit(
      [&](auto& sent_request) {
        using request_type = std::decay_t<decltype(sent_request)>;
        using remote = remote_wire<typename request_type::command_type>;
        using remote_reply = typename remote::reply;
        auto remote_work = remote::to_remote(sent_request.work);
        using atom = typename request_type::command_type::atom;
        st.sent.emplace(id, std::move(req));
        self->request(st.remote, st.settings.reply_deadline, atom::value, std::move(remote_work))
            .then(
                [self, id](remote_reply& answer) {
                  auto req = take(self, id);
                  if (!req)
                    return;
                  auto& request = std::get<request_type>(req->what);
                  auto& st = self->state;
                  auto result = remote::from_remote(answer, request.work);
                  if (!result) {
                    // A closed gate is the caller's doing; a wrong reply the server's.
                    if (result.error() == errc::cancelled) {
                      request.fail(with_worker(st.label, "", result.error()));
                      return;
                    }
                    ++st.stats.requests_failed;
                    request.fail(with_context(st.endpoint, result.error()));
                    return;
                  }
                  ++st.stats.requests_served;
                  request.promise.deliver(std::move(*result));
                },
                failed);
      },
      req.what);
}

/// Serves a request: sends it when connected, keeps it while connecting,
/// fails it while down.
void serve(worker_pointer self, segment_request req) {
  auto& st = self->state;
  if (st.remote)
    send(self, std::move(req));
  else if (st.down_reason.empty())
    st.waiting.push_back(std::move(req));
  else
    req.fail(unavailable(self));
}

/// Answers the request that `origin` names with `cancelled`, if the worker
/// still holds it. One sent already is forgotten: the remote pool computes
/// it, and its reply is discarded (`take` finds nothing).
void abandon(worker_pointer self, const request_origin& origin) {
  auto& st = self->state;
  auto cancelled = [&](const segment_request& req) {
    return request_error(errc::cancelled, st.label, req, "cancelled");
  };
  if (auto req = take_request(st.waiting, origin)) {
    req->cancel(cancelled(*req));
    return;
  }
  for (auto i = st.sent.begin(); i != st.sent.end(); ++i)
    if (i->second.origin == origin) {
      auto req = std::move(i->second);
      st.sent.erase(i);
      req.cancel(cancelled(req));
      return;
    }
}

/// Connecting failed or the connection was lost: the slot is unavailable
/// (`lasting` if the server refused this trainer: waiting will not help),
/// every request held fails with `worker_unavailable`, and a reconnect is
/// scheduled.
void go_down(worker_pointer self, const std::string& why, bool lasting) {
  auto& st = self->state;
  if (st.remote)
    self->demonitor(st.remote.address());
  st.remote = remote_pool_actor{};
  st.backoff = st.backoff.count() == 0 ? st.settings.first_backoff
                                       : std::min(st.backoff * 2, st.settings.max_backoff);
  st.down_reason = st.endpoint + ": " + why + "; connecting again in " +
                   std::to_string(st.backoff.count()) + " ms";
  // Once per cause at warn, not at every attempt of a server that stays
  // away (every 8 s).
  if (why != st.last_failure)
    logger().warn("{}: {}", st.label, st.down_reason);
  else
    logger().debug("{}: {}", st.label, st.down_reason);
  st.last_failure = why;
  // The slot first: the pool must not pick this worker for what fails here.
  st.slot->set({1, st.down_reason, lasting});
  auto err = unavailable(self);
  auto sent = std::move(st.sent);
  st.sent.clear();
  auto waiting = std::move(st.waiting);
  st.waiting.clear();
  st.stats.requests_failed += sent.size() + waiting.size();
  for (auto& [id, req] : sent)
    req.fail(err);
  for (auto& req : waiting)
    req.fail(err);
  self->delayed_send(self, st.backoff, reconnect_atom::value);
}

/// Connected and greeted: the slot takes `capacity` requests at once.
void go_up(worker_pointer self, remote_pool_actor remote, uint64_t capacity) {
  auto& st = self->state;
  if (st.backoff.count() > 0)
    ++st.stats.restarts;
  st.remote = std::move(remote);
  st.down_reason.clear();
  st.last_failure.clear();
  st.backoff = std::chrono::milliseconds{0};
  self->monitor(st.remote);
  logger().info("{}: connected to {}, a pool of {} workers", st.label, st.endpoint, capacity);
  st.slot->set({static_cast<size_t>(std::max<uint64_t>(capacity, 1)), ""});
  auto waiting = std::move(st.waiting);
  st.waiting.clear();
  for (auto& req : waiting)
    send(self, std::move(req));
}

/// Connects through the middleman's actor, checks the interface, says hello.
void connect(worker_pointer self) {
  auto& st = self->state;
  // The first time, requests wait here while it connects (a pool just made
  // has nowhere else to send them). After a failure, the slot stays
  // unavailable until connected: a host that does not answer would hold
  // requests for the whole connect timeout.
  auto& tls = st.settings.tls;
  if (auto problem = tls_problem(self->system(), tls); !problem.empty()) {
    go_down(self, problem, true);
    return;
  }
  auto connector = tls.empty() ? self->system().middleman().actor_handle()
                               : self->system().openssl_manager().actor_handle();
  self->request(connector, st.settings.connect_timeout, caf::connect_atom::value,
                st.settings.endpoint.host, st.settings.endpoint.port)
      .then(
          [self](const caf::node_id&, caf::strong_actor_ptr& ptr,
                 const std::set<std::string>& interface) {
            auto& st = self->state;
            if (!ptr) {
              go_down(self, "no actor is published there");
              return;
            }
            if (interface != self->system().message_types<remote_pool_actor>()) {
              go_down(self,
                      "what is published there is not a sprintrt remote pool of this "
                      "version (its messaging interface differs)",
                      true);
              return;
            }
            auto remote = caf::actor_cast<remote_pool_actor>(ptr);
            self->request(remote, st.settings.connect_timeout, hello_atom::value,
                          std::string{remote_interface_version}, st.settings.options_key)
                .then([self, remote](uint64_t capacity) { go_up(self, remote, capacity); },
                      [self](caf::error& err) {
                        // A refusal (other options or release) stays.
                        const bool refused = err != caf::sec::request_timeout;
                        go_down(self,
                                refused ? "refused: " + render(err)
                                        : "no answer to the handshake in time",
                                refused);
                      });
          },
          [self](caf::error& err) {
            // A server that closes the connection before CAF's handshake
            // expects TLS: waiting will not change that.
            go_down(self,
                    "cannot connect" +
                        std::string{self->state.settings.tls.empty() ? "" : " over TLS"} + ": " +
                        render(err) + connect_failure_hint(self->state.settings.tls, err),
                    err == caf::sec::disconnect_during_handshake);
          });
}

/// Answers everything held with `err` (the worker stops).
void fail_all(worker_pointer self, const caf::error& err) {
  auto& st = self->state;
  for (auto& [id, req] : st.sent)
    req.fail(err);
  st.sent.clear();
  for (auto& req : st.waiting)
    req.fail(err);
  st.waiting.clear();
}

/// How a remote worker takes requests (see `command_handler`): sent when
/// connected, kept while connecting, failed while down.
struct remote_worker_commands {
  static caf::error invalid(worker_pointer self, const caf::error& err) {
    return with_context(self->state.label, err);
  }

  static caf::error refusal(worker_pointer) { return {}; }

  static void take(worker_pointer self, segment_request req) { serve(self, std::move(req)); }
};

remote_worker_actor::behavior_type remote_worker(worker_pointer self,
                                                 remote_worker_settings settings,
                                                 std::shared_ptr<remote_slot> slot,
                                                 std::string name) {
  auto& st = self->state;
  st.endpoint = settings.endpoint.host + ":" + std::to_string(settings.endpoint.port);
  st.settings = std::move(settings);
  st.slot = std::move(slot);
  st.label = std::move(name);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (st.remote && msg.source == st.remote.address())
      go_down(self, "the connection was lost (" + render(msg.reason) + ")");
  });
  self->set_exit_handler([self](caf::exit_msg& msg) {
    fail_all(self, make_error(errc::cancelled, self->state.label + " stopped"));
    self->quit(msg.reason);
  });
  connect(self);
  return std::apply(
      [self](auto... commands) -> remote_worker_actor::behavior_type {
        return {
            commands...,
            [self](stats_atom) { return self->state.stats; },
            [self](cancel_atom, uint64_t id) {
              abandon(self, {caf::actor_cast<caf::actor_addr>(self->current_sender()), id});
            },
            [self](stop_atom) -> int32_t {
              fail_all(self, make_error(errc::cancelled, self->state.label + " stopped"));
              self->quit();
              return 0;
            },
            [self](reconnect_atom) {
              if (!self->state.remote)
                connect(self);
            },
        };
      },
      command_handlers<remote_worker_commands>(self));
}

} // namespace

sprint_worker_actor spawn_remote_worker(caf::actor_system& system, remote_worker_settings settings,
                                        std::shared_ptr<remote_slot> slot, std::string name) {
  auto worker = system.spawn(remote_worker, std::move(settings), std::move(slot), std::move(name));
  return caf::actor_cast<sprint_worker_actor>(worker);
}

} // namespace sprintrt::detail
