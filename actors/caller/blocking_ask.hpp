#pragma once

/// @file
/// The blocking facades' one way of calling an actor: send a request, wait
/// for its reply or error. Internal to the actors library.

#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/caller/caller_actors.hpp"
#include "actors/caller/caller_execution_unit.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/stop_token.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::detail {

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
      self.send(receiver, cancel_atom::value, request_id_of(pending_id));
      return;
    }
}

/// Sends `xs` to `receiver` as `self` and waits for the reply of type `T`.
/// `caf::infinite` because the actors enforce their own timeouts (a blocking
/// actor's request timeout would leave stale timeout messages behind). Until
/// the reply comes, the caller's thread runs the first handlers of its
/// request itself (see `caller_execution_unit`). A stop requested through
/// `stop` cancels the request (see `await_reply`); the call then returns
/// the receiver's `cancelled`.
template <class T, class Handle, class... Ts>
caf::expected<T> ask_as(caf::blocking_actor& self, const Handle& receiver, const stop_token& stop,
                        Ts&&... xs) {
  caller_execution_unit caller{self.home_system()};
  auto* own_context = self.context();
  self.context(&caller);
  auto pending = self.request(receiver, caf::infinite, std::forward<Ts>(xs)...);
  caller.run_until([&] { return !self.mailbox().empty(); });
  self.context(own_context);
  await_reply(self, receiver, pending.id(), stop);
  caf::expected<T> result = make_error(errc::cancelled, "no reply");
  std::move(pending).receive([&](T& reply) { result = std::move(reply); },
                             [&](caf::error& err) { result = std::move(err); });
  return result;
}

/// Sends `receiver` one request `(atom, argument)` per element of
/// `arguments`, all at once, as `self`, and waits for every reply: result i
/// is the reply of type `T` (or the error) to argument i. The caller's
/// thread runs the first handlers of its requests itself, as in `ask_as`.
/// A stop requested through `stop` (polled every `stop_token::poll_interval`
/// while a reply is missing) sends a `(cancel, request_id)` for every
/// request not answered yet; the receiver answers those with `cancelled`
/// (or with their real replies, if those were already on their way).
template <class T, class Handle, class Atom, class Argument>
std::vector<caf::expected<T>> ask_each_as(caf::blocking_actor& self, const Handle& receiver,
                                          const stop_token& stop, Atom atom,
                                          std::vector<Argument> arguments) {
  using pending_type = decltype(self.request(receiver, caf::infinite, atom, arguments.front()));
  std::vector<pending_type> pending;
  pending.reserve(arguments.size());
  {
    caller_execution_unit caller{self.home_system()};
    auto* own_context = self.context();
    self.context(&caller);
    for (auto& argument : arguments)
      pending.push_back(self.request(receiver, caf::infinite, atom, std::move(argument)));
    caller.run_until([&] { return !self.mailbox().empty(); });
    self.context(own_context);
  }
  std::vector<caf::expected<T>> results;
  results.reserve(pending.size());
  bool cancelled = false;
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
    while (!answered) {
      if (cancelled || !stop.stop_possible()) {
        pending[i].receive(on_reply, on_error);
        break;
      }
      // Waits for reply i at most one poll interval (replies that came
      // first stay in the mailbox for their turn).
      typename caf::blocking_actor::accept_one_cond once;
      self.varargs_receive(
          once, pending[i].id(), on_reply, on_error,
          caf::after(stop_token::poll_interval) >> [] {});
      if (!answered && stop.stop_requested()) {
        for (size_t j = i; j < pending.size(); ++j)
          self.send(receiver, cancel_atom::value, request_id_of(pending[j].id()));
        cancelled = true;
      }
    }
    results.push_back(std::move(result));
  }
  return results;
}

/// `ask_as` through the calling thread's actor of `rt` (see
/// `caller_actors`): the facades' way.
template <class T, class Handle, class... Ts>
caf::expected<T> blocking_ask(sprint_runtime& rt, const Handle& receiver, Ts&&... xs) {
  return ask_as<T>(rt.callers().of_this_thread(), receiver, stop_token{}, std::forward<Ts>(xs)...);
}

/// `blocking_ask` that `stop` can cancel (see `ask_as`).
template <class T, class Handle, class... Ts>
caf::expected<T> stoppable_ask(sprint_runtime& rt, const stop_token& stop, const Handle& receiver,
                               Ts&&... xs) {
  return ask_as<T>(rt.callers().of_this_thread(), receiver, stop, std::forward<Ts>(xs)...);
}

/// `ask_as` through a scoped actor of its own, for callers without a
/// runtime (tests); it is gone when the call returns.
template <class T, class Handle, class... Ts>
caf::expected<T> blocking_ask(caf::actor_system& system, const Handle& receiver, Ts&&... xs) {
  caf::scoped_actor self{system};
  return ask_as<T>(*self, receiver, stop_token{}, std::forward<Ts>(xs)...);
}

} // namespace sprintrt::detail
