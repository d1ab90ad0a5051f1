#pragma once

/// @file
/// One request for one segment, apart from the actor mechanics: what a
/// worker queues, who asked (what the pool and the workers cancel by),
/// checking a job before it is sent, turning the child's reply into the
/// result (the error signal copied into the job's output slice), and
/// describing how a child ended for error messages.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <caf/actor_addr.hpp>
#include <caf/local_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "protocol/byte_buffer.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_value.hpp"
#include "runtime/sprint_channel.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/segment.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt {

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

/// A loss request: the job and the promise that answers it with the loss.
struct loss_request {
  segment_job job;
  caf::typed_response_promise<double> promise;

  /// Returns the segment's name.
  const std::string& segment() const noexcept { return job.segment; }

  /// Returns how errors name it: "segment 'x'".
  std::string subject() const { return "segment '" + job.segment + "'"; }

  /// Returns the protocol command that serves it.
  std::string_view command() const noexcept;

  /// Appends its command, the job's log-posteriors, to `out`.
  caf::error encode(protocol::byte_buffer& out, const protocol::wire_format& format) const;

  /// Returns the largest reply its command allows (its error signal's size
  /// is known).
  size_t max_reply_size(const protocol::wire_format& format) const noexcept;

  /// Decodes the child's `reply` into the loss, its error signal written
  /// into the job's output (see `store_loss_reply`).
  caf::expected<double> reply_from(const protocol::value& reply) const;

  /// Answers it with `err`.
  void fail(const caf::error& err) { promise.deliver(err); }

  /// Closes its job's output gate (see `output_gate`), then answers it with
  /// `err`: for a caller answered while a worker may still hold the job.
  void cancel(const caf::error& err) {
    if (job.gate)
      job.gate->close();
    fail(err);
  }
};

/// An FSA export request: the segment name or orthography, and the promise
/// that answers it with the automaton.
struct fsa_request {
  fsa_query query;
  caf::typed_response_promise<segment_fsa> promise;

  /// Returns the segment's name or the orthography.
  const std::string& segment() const noexcept { return query.text; }

  /// Returns how errors name it: "segment 'x'" or "orthography 'x'".
  std::string subject() const { return describe(query); }

  /// Returns the protocol command that serves it.
  std::string_view command() const noexcept;

  /// Appends its command to `out`.
  caf::error encode(protocol::byte_buffer& out, const protocol::wire_format& format) const;

  /// Returns the largest reply its command allows: an automaton's size is
  /// not known from its request, so the configured maximum.
  size_t max_reply_size(const protocol::wire_format& format) const noexcept;

  /// Decodes the child's `reply` into the automaton (see `fsa_from_reply`).
  caf::expected<segment_fsa> reply_from(const protocol::value& reply) const;

  /// Answers it with `err`.
  void fail(const caf::error& err) { promise.deliver(err); }

  /// Answers it with `err` (an export writes into nothing of the caller's).
  void cancel(const caf::error& err) { fail(err); }
};

/// One request for one segment of either kind, as a worker queues them in
/// arrival order until they are answered. What differs per kind is in the
/// alternatives' members (`loss_request`, `fsa_request`), which code that
/// differs per kind visits; the rest uses the accessors below. (The pool
/// keeps its requests apart by kind with `pool_kinds.hpp` instead.)
struct segment_request {
  std::variant<loss_request, fsa_request> what;
  /// Whose request it answers (what a `(cancel, id)` names).
  request_origin origin{};

  /// Returns the segment's name (or an export's orthography).
  const std::string& segment() const noexcept;

  /// Returns how errors name it (see `loss_request::subject`, `fsa_request::subject`).
  std::string subject() const;

  /// Returns the protocol command that serves it.
  std::string_view command() const noexcept;

  /// Answers it with `err`.
  void fail(const caf::error& err);

  /// Answers it with `err`, first closing the output gate of a loss job.
  void cancel(const caf::error& err);
};

/// How a worker named `worker` names a request (anything with `command()`
/// and `subject()`) in front of its errors: "worker 2:
/// get_loss_and_error_signal of segment 'x'".
template <class Request>
std::string request_context(const std::string& worker, const Request& req) {
  return worker + ": " + std::string{req.command()} + " of " + req.subject();
}

/// Checks an FSA query before it is queued: a known source and a non-empty
/// text. Errors are `invalid_input` naming what is wrong.
caf::error check_query(const fsa_query& query);

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

/// Runs `write` (which writes into `job.error_signal`) unless the job's
/// output gate is closed; returns whether it ran. A job without a gate is
/// always written.
template <class Write>
bool write_output(const segment_job& job, Write&& write) {
  if (job.gate)
    return job.gate->write_if_open(std::forward<Write>(write));
  write();
  return true;
}

/// Checks that a job names a segment and that its slices are valid and of
/// the same shape. Errors are `invalid_input` naming the segment.
caf::error check_job(const segment_job& job);

/// Decodes the reply to a loss command for `job`, writes its error signal
/// into `job.error_signal` (through its gate, if it has one) and returns the
/// loss. Errors (nothing written): `child_exception` for an exception reply,
/// `invalid_message` for a reply of the wrong form or shape, `cancelled` if
/// the job's gate is closed (the reply itself was valid).
caf::expected<double> store_loss_reply(const protocol::value& reply, const segment_job& job);

/// Decodes the reply to an FSA export of `source` into a `segment_fsa` (a
/// copy: the reply's arrays live in the message buffer).
caf::expected<segment_fsa> fsa_from_reply(const protocol::value& reply,
                                          fsa_source source = fsa_source::segment_name);

/// Describes how a child ended: the cause, pid, exit status or signal, and
/// the last 20 lines of its output.
std::string describe_down(const runtime::child_down& down);

/// The part of a failure's text that says why, without what differs from
/// child to child when every child fails alike: the pid and the output's
/// tail of `describe_down` (whose lines carry pids and times). Failures
/// with equal keys have the same cause.
std::string failure_cause_key(const std::string& text);

} // namespace sprintrt
