#pragma once

/// @file
/// One request to a worker, apart from the actor mechanics: what a worker
/// queues, who asked (what the pool and the workers cancel by), the command
/// handler every worker kind shares, and describing how a child ended for
/// error messages.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <caf/actor_addr.hpp>
#include <caf/local_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/worker/commands.hpp"
#include "process/sprint_channel.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_value.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::detail {

/// Who made a request, and its id as the sender knows it: what a later
/// `(cancel, request_id)` from the same sender names.
struct request_origin {
  caf::actor_addr sender;
  uint64_t id = 0;

  /// The origin of the message `self` is handling now.
  static request_origin current(caf::local_actor* self) {
    return {caf::actor_cast<caf::actor_addr>(self->current_sender()),
            request_id_of(self->current_message_id())};
  }

  /// Returns whether it is `other` (a sender without an address never is).
  bool operator==(const request_origin& other) const noexcept {
    return sender && sender == other.sender && id == other.id;
  }
};

/// A request of command `Command`: its work and the promise that answers
/// it. What differs per command is its `command_entry`, which the workers
/// call on the work (`entry_of`).
template <class Command>
struct command_request {
  using command_type = Command;

  typename Command::work work;
  caf::typed_response_promise<typename Command::reply> promise;

  /// Answers it with `err`.
  void fail(const caf::error& err) { promise.deliver(err); }

  /// Closes what a worker could still write into (`command_entry::close`),
  /// then answers it with `err`: for a caller answered while a worker may
  /// still hold the work.
  void cancel(const caf::error& err) {
    command_entry<Command>::close(work);
    fail(err);
  }
};

/// The `command_entry` of anything of one command (`command_type`): a
/// `command_request`, a pool's `command_items`.
template <class Request>
using entry_of = command_entry<typename std::decay_t<Request>::command_type>;

/// One request of any command, as a worker queues them in arrival order
/// until they are answered. Code that differs per command visits `what`
/// and calls its entry (`entry_of`); the rest uses the accessors below,
/// which do the same.
struct segment_request {
  sprint_commands::variant<command_request> what;
  /// Whose request it answers (what a `(cancel, id)` names).
  request_origin origin{};

  /// Returns the text it names: a segment's name, or an export's
  /// orthography (`command_entry::text`).
  const std::string& text() const noexcept;

  /// Returns how errors name it (`command_entry::subject`).
  std::string subject() const;

  /// Returns the protocol command that serves it (`command_entry::name`).
  std::string_view command() const noexcept;

  /// Returns the bytes it would move through a child's shared region
  /// (`command_entry::shared_bytes`).
  uint64_t shared_bytes() const noexcept;

  /// Answers it with `err`.
  void fail(const caf::error& err);

  /// Answers it with `err`, first closing what a worker could still write
  /// into.
  void cancel(const caf::error& err);
};

/// The handler of `Command` that every worker kind shares: it checks the
/// work (`command_entry::check`; a failed check is answered with
/// `Worker::invalid(self, err)`), answers `Worker::refusal(self)` if the
/// worker takes no requests now, and else hands the request to
/// `Worker::take(self, request)`, which answers it later through its
/// promise.
template <class Worker, class Command, class Self>
auto command_handler(Self self) {
  using reply = typename Command::reply;
  return [self](typename Command::atom, typename Command::work& work) -> caf::result<reply> {
    if (auto err = command_entry<Command>::check(work))
      return Worker::invalid(self, std::move(err));
    if (auto err = Worker::refusal(self))
      return err;
    // The origin first: making the promise takes the sender out of the message.
    auto origin = request_origin::current(self);
    auto promise = self->template make_response_promise<reply>();
    Worker::take(self, segment_request{command_request<Command>{std::move(work), promise}, origin});
    return promise;
  };
}

/// The handlers of every command of `Commands` (see `command_handler`), as
/// a tuple to spread into a behavior.
template <class Worker, class Self, class... Commands>
auto command_handlers(Self self, sprint_command_list<Commands...>) {
  return std::make_tuple(command_handler<Worker, Commands>(self)...);
}

/// The handlers of every command of `sprint_commands`.
template <class Worker, class Self>
auto command_handlers(Self self) {
  return command_handlers<Worker>(self, sprint_commands{});
}

/// What a worker is doing when it serves `req` (anything with `command()`
/// and `subject()`), as its errors say: "get_loss_and_error_signal of
/// segment 'x'".
template <class Request>
std::string request_doing(const Request& req) {
  return std::string{req.command()} + " of " + req.subject();
}

/// `err` as met by the worker labelled `worker` while serving `req`:
/// "worker 2: get_loss_and_error_signal of segment 'x': <message>".
template <class Request>
caf::error request_error(const std::string& worker, const Request& req, const caf::error& err) {
  return with_worker(worker, request_doing(req), err);
}

/// A new error of `code` that the worker labelled `worker` met while
/// serving `req`, because of `cause`.
template <class Request>
caf::error request_error(errc code, const std::string& worker, const Request& req,
                         std::string cause) {
  failure what;
  what.worker = worker;
  what.inner = request_doing(req);
  what.cause = std::move(cause);
  return make_error(code, std::move(what));
}

/// Fails the requests in flight (an optional one, or a deque of those
/// written ahead) and every queued one with `err`, and forgets them: how a
/// worker that stops or ends answers what it holds.
template <class InFlight, class Request>
void fail_pending(InFlight& in_flight, std::deque<Request>& queue, const caf::error& err) {
  if constexpr (std::is_same_v<InFlight, std::optional<Request>>) {
    if (in_flight)
      in_flight->fail(err);
    in_flight.reset();
  } else {
    for (auto& req : in_flight)
      req.fail(err);
    in_flight.clear();
  }
  for (auto& req : queue)
    req.fail(err);
  queue.clear();
}

/// Takes the request that `origin` names out of `queue`, if it is there.
template <class Request>
std::optional<Request> take_request(std::deque<Request>& queue, const request_origin& origin) {
  for (auto i = queue.begin(); i != queue.end(); ++i)
    if (i->origin == origin) {
      auto req = std::move(*i);
      queue.erase(i);
      return req;
    }
  return std::nullopt;
}

/// How a child ended, as the fields of a failure: the cause, pid, exit
/// status or signal, and the last 20 lines of its output.
failure child_failure(const process::child_down& down);

/// The text of `child_failure(down)`, for the log.
std::string describe_down(const process::child_down& down);

} // namespace sprintrt::detail
