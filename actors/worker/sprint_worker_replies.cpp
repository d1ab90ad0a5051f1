// The worker's replies half: what the child sends back, decoded in place,
// checked against the request it answers, and delivered, or taken as a
// protocol failure (kill, restart, resend).

#include "actors/worker/sprint_worker_state.hpp"
#include "sprintrt/logging.hpp"

#include <type_traits>
#include <variant>

#include <spdlog/spdlog.h>

#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "protocol/pickle_repr.hpp"

namespace sprintrt::detail {

namespace {

/// Handles the reply to `init`.
void on_init_reply(worker_pointer self, const protocol::value& msg) {
  auto& st = self->state;
  // Killed for its initTimeout: a late answer does not make it ready (its
  // down report counts a start failure).
  if (st.dying)
    return;
  auto reply = protocol::decode_init_reply(msg);
  if (!reply) {
    condemn_child(self,
                  make_error(errc::child_failed, "bad reply to init: " + render(reply.error())));
    return;
  }
  if (auto err = protocol::check_protocol_version(*reply)) {
    condemn_child(self, err);
    return;
  }
  if (reply->shared_memory && !st.shared) {
    condemn_child(self, make_error(errc::child_failed,
                                   "bad reply to init: it accepts a shared region that it was "
                                   "not offered"));
    return;
  }
  if (!reply->shared_memory)
    st.shared.reset(); // declined (another module): pipes only
  st.start_up = clock::now() - st.started_at;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(st.start_up);
  logger().info("{}: Sprint child '{}' pid {} ready after {} ms", st.label, reply->child_name,
                st.stats.pid, ms.count());
  if (reply->shared_memory)
    logger().debug("{}: the child accepted its shared region: large segments go through it",
                   st.label);
  st.current = phase::ready;
  st.start_failures = 0;
  st.last_start_failure.reset();
  dispatch(self);
}

/// Whether a reply that decoded as a pickle but not as the answer to its
/// request means the child is broken (wrong shape, types or arity: kill,
/// restart, resend, like garbage) rather than that it failed this segment
/// (an ("exception", message) reply, `unknown_segment` for one saying so)
/// or that the caller no longer wants it.
bool broken_reply(const caf::error& err) {
  // `cancelled`: the reply was valid, but its caller had stopped waiting.
  return err != errc::child_exception && err != errc::unknown_segment && err != errc::cancelled;
}

/// Kills the child because its reply `bytes` to the front request is no
/// valid answer (`err`); the front request stays in flight, so the child's
/// death charges it and it is resent, up to maxRetries.
void kill_for_invalid_reply(worker_pointer self, const caf::error& err, byte_span bytes) {
  // The charged request's name is put in front of this when it fails.
  condemn_child(self, make_error(errc::child_failed,
                                 "the child's reply is not a valid answer: " + render(err) +
                                     "; the reply began with " + protocol::excerpt(bytes)));
}

/// Takes the request the child answered out of `in_flight`, counting its
/// time; the next one written begins now.
pending_request take_answered(worker_state& st) {
  auto req = std::move(st.in_flight.front());
  st.in_flight.pop_front();
  if (req.slot && st.shared) {
    st.shared->release(req.slot->offset);
    ++st.stats.shared_memory_requests;
  }
  req.slot.reset();
  auto now = clock::now();
  st.stats.busy_ns +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - req.sent_at).count();
  if (!st.in_flight.empty())
    st.in_flight.front().sent_at = std::max(st.in_flight.front().sent_at, now);
  return req;
}

/// Ends the request the child answered with `result`: delivered through the
/// promise `promise_of(request)` returns, or failed with the child's
/// exception. A reply that is no valid answer (`broken_reply`; `bytes` is
/// the reply as it arrived) instead condemns the child while the request is
/// still in flight, so that the child's death charges it.
template <class T, class PromiseOf>
void answer(worker_pointer self, caf::expected<T> result, byte_span bytes, PromiseOf promise_of) {
  auto& st = self->state;
  if (!result && broken_reply(result.error())) {
    kill_for_invalid_reply(self, result.error(), bytes);
    return;
  }
  auto req = take_answered(st);
  if (!result) {
    fail_request(self, req, request_error(st.label, req, result.error()));
    return;
  }
  ++st.stats.requests_served;
  promise_of(req).deliver(std::move(*result));
}

/// Handles the reply to the request in flight; `bytes` is the reply as it
/// arrived.
void on_request_reply(worker_pointer self, const protocol::value& msg, byte_span bytes) {
  auto& st = self->state;
  if (st.in_flight.front().abandoned) {
    // Its caller was answered when it cancelled: the reply is dropped
    // unread (its output gate is closed too).
    take_answered(st);
    ++st.abandoned_answered;
    dispatch(self);
    return;
  }
  // `answer` takes the request out of `in_flight`: `kind_req` is not used
  // after it.
  const auto& front = st.in_flight.front();
  std::visit(
      [&](const auto& kind_req) {
        using request_type = std::decay_t<decltype(kind_req)>;
        auto reply = entry_of<request_type>::decode(msg, kind_req.work, front.sink());
        answer(
            self, std::move(reply), bytes, [](pending_request & req) -> auto& {
              return std::get<request_type>(req.what).promise;
            });
      },
      front.what);
  dispatch(self); // nothing is written to a condemned child
}

} // namespace

void on_child_message(worker_pointer self, uint64_t generation, message_buffer& buffer) {
  auto& st = self->state;
  if (generation != st.generation)
    return;
  {
    // Decode in place: arrays point into the buffer, shared, not copied.
    auto msg = protocol::read_pickle(std::shared_ptr<const protocol::byte_buffer>{buffer});
    if (st.broken) {
      // Condemned: nothing it sends counts any more.
    } else if (!msg) {
      if (st.current != phase::stopping)
        condemn_child(self,
                      make_error(errc::child_failed,
                                 "the child sent a malformed message: " + render(msg.error()) +
                                     "; it began with " + protocol::excerpt(buffer->bytes())));
    } else if (st.current == phase::starting) {
      on_init_reply(self, *msg);
    } else if (st.current == phase::ready && !st.in_flight.empty()) {
      on_request_reply(self, *msg, buffer->bytes());
    } else if (st.current != phase::stopping) {
      condemn_child(self,
                    make_error(errc::child_failed, "the child sent a message nobody asked for: " +
                                                       protocol::repr(*msg)));
    }
  }
  // Nothing refers to the buffer any more: the channel may reuse it.
  if (buffer.use_count() == 1 && st.channel)
    st.channel->recycle(std::move(*buffer));
}

} // namespace sprintrt::detail
