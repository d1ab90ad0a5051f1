#pragma once

/// @file
/// The blocking facades' one way of calling an actor: send a request, wait
/// for its reply or error. Internal to the actors library.

#include <chrono>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/caller/caller_actors.hpp"
#include "actors/caller/runtime_access.hpp"
#include "actors/execution/caller_execution_unit.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/seqtrain_interface.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/stop_token.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::detail {

/// Tells `receiver` that `self` no longer wants its request `pending_id`
/// (a pool or a worker: the cancel has no reply).
template <class Handle>
void send_cancel(caf::blocking_actor& self, const Handle& receiver, caf::message_id pending_id) {
  self.send(receiver, cancel_atom::value, request_id_of(pending_id));
}

/// The same for a scheduler, whose cancel replies with what it did: sent
/// as a request whose reply is taken here, since one sent with `send` would
/// come back as an ordinary message and stay in `self`'s mailbox (the
/// caller actors serve many calls). The cancelled request's own answer
/// comes first and stays in the mailbox for the caller.
inline void send_cancel(caf::blocking_actor& self, const seqtrain_scheduler_actor& receiver,
                        caf::message_id pending_id) {
  self.request(receiver, caf::infinite, cancel_atom::value, request_id_of(pending_id))
      .receive([](cancel_outcome) {}, [](caf::error&) {});
}

/// Waits until `self`'s mailbox holds a message (the reply), checking `stop`
/// every `stop_token::poll_interval`. When a stop is requested, sends
/// `receiver` a `(cancel, request_id)` for the request `pending_id` and
/// returns: the receiver answers that request with `cancelled` at once (or
/// with its real reply, if that was already on its way).
template <class Handle>
void await_reply(caf::blocking_actor& self, const Handle& receiver, caf::message_id pending_id,
                 const stop_token& stop) {
  if (!stop.stop_possible())
    return;
  using wait_clock = caf::blocking_actor::timeout_type::clock;
  while (!self.await_data(wait_clock::now() + stop_token::poll_interval))
    if (stop.stop_requested()) {
      send_cancel(self, receiver, pending_id);
      return;
    }
}

/// Calls `send()`, which sends requests as `self`, with the caller's thread
/// as `self`'s execution unit: it runs the first handlers of those requests
/// itself (see `caller_execution_unit`) until a message is in `self`'s
/// mailbox. Returns what `send` returns (the pending requests).
template <class Send>
auto send_running_handlers(caf::blocking_actor& self, Send&& send) {
  caller_execution_unit caller{self.home_system()};
  auto* own_context = self.context();
  self.context(&caller);
  auto pending = send();
  caller.run_until([&] { return !self.mailbox().empty(); });
  self.context(own_context);
  return pending;
}

/// The error of a call whose stop was requested before it began: nothing
/// is sent, since a reply could come before the first check of the stop.
inline caf::error stopped_before_the_call() {
  return make_error(errc::cancelled, "a stop was requested before the call");
}

/// Sends `xs` to `receiver` as `self` and waits for the reply of type `T`.
/// `caf::infinite` because the actors enforce their own timeouts (a blocking
/// actor's request timeout would leave stale timeout messages behind). Until
/// the reply comes, the caller's thread runs the first handlers of its
/// request itself (see `caller_execution_unit`). A stop requested through
/// `stop` cancels the request (see `await_reply`); the call then returns
/// the receiver's `cancelled`. A stop requested before the call sends
/// nothing and returns `cancelled` at once.
template <class T, class Handle, class... Ts>
caf::expected<T> ask_as(caf::blocking_actor& self, const Handle& receiver, const stop_token& stop,
                        Ts&&... xs) {
  if (stop.stop_requested())
    return stopped_before_the_call();
  auto pending = send_running_handlers(
      self, [&] { return self.request(receiver, caf::infinite, std::forward<Ts>(xs)...); });
  await_reply(self, receiver, pending.id(), stop);
  caf::expected<T> result = make_error(errc::cancelled, "no reply");
  std::move(pending).receive([&](T& reply) { result = std::move(reply); },
                             [&](caf::error& err) { result = std::move(err); });
  return result;
}

/// Takes the reply to `pending_id` if it is in `self`'s mailbox, handing it
/// to `on_reply` or `on_error`, without waiting for it (other messages stay
/// in the mailbox). A zero `after` because CAF's receive restarts a relative
/// timeout at every message that arrives, so that a longer one would wait
/// for as long as other replies keep coming.
template <class OnReply, class OnError>
void take_reply_if_there(caf::blocking_actor& self, caf::message_id pending_id, OnReply& on_reply,
                         OnError& on_error) {
  typename caf::blocking_actor::accept_one_cond once;
  self.varargs_receive(
      once, pending_id, on_reply, on_error, caf::after(std::chrono::milliseconds{0}) >> [] {});
}

/// Sends `receiver` one request `(atom, argument)` per element of
/// `arguments`, all at once, as `self`, and waits for every reply: result i
/// is the reply of type `T` (or the error) to argument i; all `cancelled`,
/// with nothing sent, when a stop was requested before the call. The caller's
/// thread runs the first handlers of its requests itself, as in `ask_as`.
/// While a reply is missing, `stop` is checked at once and then every
/// `stop_token::poll_interval` against an absolute deadline, however many
/// other replies arrive meanwhile (and not at every reply: a Python token's
/// check takes the GIL). A stop sends a `(cancel, request_id)` for every
/// request not answered yet; the receiver answers those with `cancelled`
/// (or with their real replies, if those were already on their way).
/// Replies already in the mailbox are taken as they are.
template <class T, class Handle, class Atom, class Argument>
std::vector<caf::expected<T>> ask_each_as(caf::blocking_actor& self, const Handle& receiver,
                                          const stop_token& stop, Atom atom,
                                          std::vector<Argument> arguments) {
  if (stop.stop_requested())
    return std::vector<caf::expected<T>>(arguments.size(), stopped_before_the_call());
  using pending_type = decltype(self.request(receiver, caf::infinite, atom, arguments.front()));
  using wait_clock = caf::blocking_actor::timeout_type::clock;
  auto pending = send_running_handlers(self, [&] {
    std::vector<pending_type> requests;
    requests.reserve(arguments.size());
    for (auto& argument : arguments)
      requests.push_back(self.request(receiver, caf::infinite, atom, std::move(argument)));
    return requests;
  });
  std::vector<caf::expected<T>> results;
  results.reserve(pending.size());
  // Set once nothing can stop the call any more (no stop possible, or the
  // cancels sent): from then on, each reply is simply waited for.
  bool wait_unchecked = !stop.stop_possible();
  // The next check of `stop`; now, so that a stop requested before the call
  // is seen at the first missing reply.
  auto next_check = wait_clock::now();
  for (size_t i = 0; i < pending.size(); ++i) {
    caf::expected<T> result = make_error(errc::cancelled, "no reply");
    bool answered = false;
    auto on_reply = [&](T& reply) {
      result = std::move(reply);
      answered = true;
    };
    auto on_error = [&](caf::error& err) {
      result = std::move(err);
      answered = true;
    };
    while (!wait_unchecked && !answered) {
      take_reply_if_there(self, pending[i].id(), on_reply, on_error);
      if (answered)
        break;
      if (wait_clock::now() >= next_check) {
        if (stop.stop_requested()) {
          for (size_t j = i; j < pending.size(); ++j)
            send_cancel(self, receiver, pending[j].id());
          wait_unchecked = true;
          break;
        }
        next_check = wait_clock::now() + stop_token::poll_interval;
      }
      // Wakes at any message or at the deadline, which arrivals do not move.
      self.await_data(next_check);
    }
    if (!answered)
      pending[i].receive(on_reply, on_error);
    results.push_back(std::move(result));
  }
  return results;
}

/// `ask_as` through the calling thread's actor of `rt` (see
/// `caller_actors`): the facades' way.
template <class T, class Handle, class... Ts>
caf::expected<T> blocking_ask(sprint_runtime& rt, const Handle& receiver, Ts&&... xs) {
  return ask_as<T>(runtime_access::callers(rt).of_this_thread(), receiver, stop_token{},
                   std::forward<Ts>(xs)...);
}

/// `blocking_ask` that `stop` can cancel (see `ask_as`).
template <class T, class Handle, class... Ts>
caf::expected<T> stoppable_ask(sprint_runtime& rt, const stop_token& stop, const Handle& receiver,
                               Ts&&... xs) {
  return ask_as<T>(runtime_access::callers(rt).of_this_thread(), receiver, stop,
                   std::forward<Ts>(xs)...);
}

/// `ask_as` through a scoped actor of its own, for callers without a
/// runtime (tests); it is gone when the call returns.
template <class T, class Handle, class... Ts>
caf::expected<T> blocking_ask(caf::actor_system& system, const Handle& receiver, Ts&&... xs) {
  caf::scoped_actor self{system};
  return ask_as<T>(*self, receiver, stop_token{}, std::forward<Ts>(xs)...);
}

} // namespace sprintrt::detail
