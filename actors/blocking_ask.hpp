#pragma once

/// @file
/// The blocking facades' one way of calling an actor: send a request, wait
/// for its reply or error. Internal to the actors library.

#include <utility>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "sprintrt/error.hpp"

namespace sprintrt::detail {

/// Sends `xs` to `receiver` and waits for the reply of type `T`. A scoped
/// actor per call keeps concurrent callers apart (and none outlives its
/// call, so none holds up the actor system's shutdown); `caf::infinite`
/// because the actors enforce their own timeouts (a blocking actor's request
/// timeout would leave stale timeout messages behind).
template <class T, class Handle, class... Ts>
caf::expected<T> blocking_ask(caf::actor_system& system, const Handle& receiver, Ts&&... xs) {
  caf::scoped_actor self{system};
  caf::expected<T> result = make_error(errc::cancelled, "no reply");
  self->request(receiver, caf::infinite, std::forward<Ts>(xs)...)
      .receive([&](T& reply) { result = std::move(reply); },
               [&](caf::error& err) { result = std::move(err); });
  return result;
}

} // namespace sprintrt::detail
