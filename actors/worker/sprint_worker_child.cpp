/// @file
/// A Sprint worker's child (see `sprint_worker_state.hpp`): starting it,
/// the messages written to it and the buffers they reuse, its deadlines
/// (init, reply, and when a child kept computing for nobody is given up on,
/// `cancel_policy.hpp`), killing it, and what becomes of its requests when
/// it is down.

#include "actors/worker/sprint_worker_state.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/execution/caller_execution_unit.hpp"
#include "actors/worker/cancel_policy.hpp"
#include "actors/worker/worker_requests.hpp"
#include "config/sprint_args.hpp"
#include "process/sprint_channel.hpp"
#include "protocol/messages.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::detail {

namespace {

// -- helpers ----------------------------------------------------------------------

/// Whether retrying cannot help: the program is missing, or speaks another
/// protocol version.
bool permanent(const caf::error& cause) {
  return cause == errc::spawn_failed || cause == errc::invalid_message || cause == errc::cancelled;
}

// -- what a child's cancelled work costs (`onCancel` "auto", cancel_policy.hpp) ----

/// What the cost model knows of the worker's current child.
child_timing timing_of(const worker_state& st) {
  const uint64_t answered =
      st.stats.requests_served + st.stats.requests_failed + st.abandoned_answered;
  return {mean_request_time(answered, st.stats.busy_ns), st.start_up};
}

/// Replies up to this size are handled on the io thread that read them (see
/// `detail::send_and_run`): decoding one and copying its error signal takes
/// microseconds. Larger ones go to a scheduler thread, so that the io thread
/// keeps serving the other children's pipes meanwhile.
constexpr size_t inline_reply_bytes = 64 * 1024;

/// Returns whether a child's message names the shared region (its tag
/// appears in the pickle; a false positive only costs a thread hand-off).
bool references_region(const protocol::byte_buffer& msg) {
  const auto bytes = msg.bytes();
  const auto* begin = reinterpret_cast<const char*>(bytes.data());
  return std::string_view{begin, bytes.size()}.find(protocol::shared_memory_tag) !=
         std::string_view::npos;
}

/// Channel events become messages to the worker; the worker may be gone by
/// the time they are sent, so only a weak handle is kept.
process::channel_events make_events(worker_pointer self, uint64_t generation) {
  auto weak = caf::actor_cast<caf::weak_actor_ptr>(self);
  auto send = [weak](auto&&... xs) {
    if (auto strong = weak.lock())
      caf::anon_send(caf::actor_cast<caf::actor>(strong), std::forward<decltype(xs)>(xs)...);
  };
  // A small reply, or a buffer coming back, is handled right here.
  auto send_and_run = [weak](auto&&... xs) {
    if (auto strong = weak.lock())
      detail::send_and_run(strong, caf::make_message(std::forward<decltype(xs)>(xs)...));
  };
  process::channel_events events;
  events.started = [send, generation](pid_t pid, const std::vector<std::string>&) {
    send(started_atom::value, generation, static_cast<int32_t>(pid));
  };
  events.message = [send, send_and_run, generation](protocol::byte_buffer msg) {
    // A reply that references the shared region is small but means copying
    // the whole error signal out of it: not on the io thread.
    const bool small = msg.size() <= inline_reply_bytes && !references_region(msg);
    auto shared = std::make_shared<protocol::byte_buffer>(std::move(msg));
    if (small)
      send_and_run(received_atom::value, generation, std::move(shared));
    else
      send(received_atom::value, generation, std::move(shared));
  };
  events.sent = [send_and_run, generation](protocol::byte_buffer buf) {
    send_and_run(sent_atom::value, generation,
                 std::make_shared<protocol::byte_buffer>(std::move(buf)));
  };
  events.down = [send, generation](process::child_down down) {
    send(down_atom::value, generation, std::move(down));
  };
  return events;
}

/// Puts the requests still in flight back at the front of the queue, in
/// their order, uncharged; drops those whose callers were answered already
/// (`abandoned`).
void requeue_in_flight(worker_state& st) {
  while (!st.in_flight.empty()) {
    if (!st.in_flight.back().abandoned)
      st.queue.push_front(std::move(st.in_flight.back()));
    st.in_flight.pop_back();
  }
}

} // namespace

bool keeps_child(const worker_state& st, const pending_request& target) {
  unwanted_work work;
  work.computing = clock::now() - st.in_flight.front().sent_at;
  for (const auto& req : st.in_flight) {
    if (!req.abandoned && &req != &target)
      continue;
    if (&req == &st.in_flight.front())
      work.current = true;
    else
      ++work.queued;
  }
  return keeps_child(st.opts.on_cancel, timing_of(st), work);
}

std::optional<clock::time_point> give_up_point(const worker_state& st) {
  if (st.current != phase::ready || st.in_flight.empty() || !st.in_flight.front().abandoned ||
      st.dying)
    return std::nullopt;
  return give_up_point(st.opts.on_cancel, timing_of(st), st.in_flight.front().sent_at);
}

std::optional<clock::time_point> current_deadline(const worker_state& st) {
  if (st.current == phase::starting)
    return st.started_at + st.opts.init_timeout;
  if (st.current == phase::ready && !st.in_flight.empty()) {
    const auto reply_deadline = st.in_flight.front().sent_at + st.opts.reply_timeout;
    const auto give_up = give_up_point(st);
    return give_up ? std::min(*give_up, reply_deadline) : reply_deadline;
  }
  return std::nullopt;
}

void arm_timer(worker_pointer self, clock::time_point deadline) {
  auto& st = self->state;
  if (st.timer_due && *st.timer_due <= deadline)
    return;
  st.timer_due = deadline;
  auto delay = std::chrono::ceil<std::chrono::microseconds>(deadline - clock::now());
  self->delayed_send(self, std::max(delay, std::chrono::microseconds{0}), timeout_atom::value,
                     static_cast<int64_t>(deadline.time_since_epoch().count()));
}

protocol::byte_buffer take_buffer(worker_state& st) {
  if (st.spares.empty())
    return {};
  auto buf = std::move(st.spares.back());
  st.spares.pop_back();
  buf.clear();
  return buf;
}

void keep_buffer(worker_state& st, protocol::byte_buffer buf) {
  if (st.spares.size() < write_ahead + 1)
    st.spares.push_back(std::move(buf));
}

void send_to_child(worker_pointer self, protocol::byte_buffer message, size_t max_reply_size) {
  if (auto back = self->state.channel->send(std::move(message), max_reply_size))
    keep_buffer(self->state, std::move(*back));
}

void kill_child(worker_pointer self, caf::error cause) {
  self->state.dying = true;
  self->state.channel->kill(std::move(cause));
}

void kill_for_cancel(worker_pointer self, const std::string& why) {
  auto& st = self->state;
  st.broken = true;
  if (st.dying)
    return;
  st.killed_for_cancel = true;
  kill_child(self, make_error(errc::cancelled, why));
}

void condemn_child(worker_pointer self, caf::error cause) {
  self->state.broken = true;
  kill_child(self, std::move(cause));
}

void start_child(worker_pointer self) {
  auto& st = self->state;
  ++st.generation;
  st.timed_out.reset();
  st.dying = false;
  st.broken = false;
  st.killed_for_cancel = false;
  st.current = phase::starting;
  st.started_at = clock::now();
  st.shared.reset();
  if (config::offers_shared_memory(st.opts)) {
    // A region of its own for each child, gone with it.
    if (auto region = shared_region::create(st.label.c_str()))
      st.shared.emplace(std::move(*region));
    else
      logger().warn("{}: no shared region for the child, pipes only: {}", st.label,
                    render(region.error()));
  }
  st.channel =
      process::sprint_channel::open(*st.io, st.opts, st.label, make_events(self, st.generation),
                                    st.shared ? st.shared->region() : nullptr);
  auto init = take_buffer(st);
  if (auto err = protocol::encode_init_command(init, st.format)) {
    condemn_child(self, err);
    return;
  }
  send_to_child(self, std::move(init), protocol::max_init_reply_size);
  arm_timer(self, *current_deadline(st));
}

void on_child_lost(worker_pointer self, const process::child_down& down) {
  auto& st = self->state;
  bool was_starting = st.current == phase::starting;
  st.current = phase::down;
  st.channel.reset();
  // The region is the dead child's; the next child gets its own, and
  // dispatch drops the slots of what goes back to the queue.
  st.shared.reset();
  st.stats.pid = -1;
  caf::error cause = down.cause ? down.cause : make_error(errc::child_failed, "");
  const auto code = cause == errc::timeout ? errc::timeout : errc::child_failed;
  auto ending = child_failure(down);
  auto what = to_string(ending);
  auto error_for = [&](const pending_request& req) {
    return request_error(st.label, req, make_error(code, ending));
  };
  if (st.killed_for_cancel) {
    // Killed on purpose (see `abandon`): nothing it held is to blame.
    logger().info("{}: {}; resending the {} other request(s) written to it", st.label, what,
                  st.in_flight.size());
    requeue_in_flight(st);
    dispatch(self);
    return;
  }
  if (!st.in_flight.empty() && st.timed_out && *st.timed_out != st.in_flight.front().serial) {
    // Killed for a request that was answered before the kill took effect:
    // what is in flight now was not late; it goes back, unharmed.
    logger().warn("{}: {}; resending {} request(s) written to it", st.label, what,
                  st.in_flight.size());
    requeue_in_flight(st);
  } else if (!st.in_flight.empty()) {
    // Only the request the child was serving is charged with its end; those
    // written behind it were never begun and go back, in order, unharmed.
    auto req = std::move(st.in_flight.front());
    st.in_flight.pop_front();
    requeue_in_flight(st);
    if (req.abandoned) {
      // Its caller was answered when it cancelled; nobody waits for it.
      logger().warn("{}: {} (while computing {}, which its caller had cancelled)", st.label, what,
                    req.subject());
    } else if (++req.failures > st.opts.max_retries || permanent(cause)) {
      fail_request(self, req, error_for(req));
    } else {
      logger().warn("{}: {}; resending {} (attempt {} of {})", st.label, what, req.subject(),
                    req.failures + 1, st.opts.max_retries + 1);
      st.queue.push_front(std::move(req));
    }
  } else if (was_starting) {
    ++st.start_failures;
    // Warned about once per cause (each child's pid and output differ); the
    // retries and repeats only count. A child that exited with a status of
    // its own is the cause: a write to it that failed meanwhile (its pipe
    // closed as it exited, a race with its start) adds nothing new.
    auto own_end = down;
    if (down.exit_code() > 0)
      own_end.cause = caf::error{};
    auto start_failure = child_failure(own_end);
    const bool new_cause =
        !st.last_start_failure || !same_cause(start_failure, *st.last_start_failure);
    st.last_start_failure = std::move(start_failure);
    if (st.start_failures > st.opts.max_retries || permanent(cause)) {
      // Nothing works without a child: fail everything that waits. Each
      // caller gets the cause; it was logged at the first attempt.
      auto failed =
          with_worker(st.label, "the Sprint child could not be started", make_error(code, ending));
      if (new_cause)
        logger().warn("{}", render(failed));
      else
        logger().info("{}: the Sprint child failed to start {} times; failing {} request(s)",
                      st.label, st.start_failures, st.queue.size());
      st.stats.requests_failed += st.queue.size();
      for (auto& req : st.queue)
        req.fail(failed);
      st.queue.clear();
      st.start_failures = 0;
      return;
    }
    // Said once, with the child's output; the retries only count.
    if (new_cause)
      logger().warn("{}: the Sprint child failed to start: {}; trying again ({} more attempt(s))",
                    st.label, what, st.opts.max_retries);
    else
      logger().info("{}: the Sprint child failed to start again (attempt {} of {})", st.label,
                    st.start_failures, st.opts.max_retries + 1);
  } else {
    logger().warn("{}: {}", st.label, what);
  }
  if (st.queue.empty())
    return;
  // Back off 100 ms, 200 ms, 400 ms, ... up to 5 s after consecutive failures.
  size_t failures = std::max<size_t>({1, st.start_failures, st.queue.front().failures});
  auto delay = std::chrono::milliseconds{
      std::min<int64_t>(5000, int64_t{100} << std::min<size_t>(failures - 1, 6))};
  st.restart_pending = true;
  self->delayed_send(self, delay, restart_atom::value, st.generation);
}

} // namespace sprintrt::detail
