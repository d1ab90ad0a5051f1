#include "actors/worker/sprint_worker.hpp"

#include "actors/worker/sprint_worker_state.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>
#include <variant>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/execution/caller_execution_unit.hpp"
#include "actors/worker/worker_requests.hpp"
#include "config/sprint_args.hpp"
#include "config/wire_format.hpp"
#include "protocol/messages.hpp"
#include "runtime/io_thread.hpp"
#include "runtime/sprint_channel.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::detail {

namespace {

// -- helpers ----------------------------------------------------------------------

/// Whether retrying cannot help: the program is missing, or speaks another
/// protocol version.
bool permanent(const caf::error& cause) {
  return cause == errc::spawn_failed || cause == errc::invalid_message || cause == errc::cancelled;
}

// -- what a child's cancelled work costs (`onCancel` "auto") ----------------------
//
// Killing a child costs the next request the start-up of a new one (as the
// last child took); keeping it costs the abandoned requests it computes
// first. Each is expected to take the child's mean time per request; the one
// it computes, once past that mean, is expected to take as long again as it
// has taken so far (a request that runs long is likely to run longer).

/// The child's mean time per answered request; zero before the first.
clock::duration mean_request_time(const worker_state& st) {
  const uint64_t answered =
      st.stats.requests_served + st.stats.requests_failed + st.abandoned_answered;
  if (answered == 0)
    return clock::duration::zero();
  return std::chrono::duration_cast<clock::duration>(
      std::chrono::nanoseconds{static_cast<int64_t>(st.stats.busy_ns / answered)});
}

/// Whether the child is kept when `target`, a request in flight, is
/// cancelled (`onCancel`): for "auto", whether what it would compute for
/// nobody (the abandoned requests and `target`) is expected to take less
/// than a new child's start-up.
bool keeps_child(const worker_state& st, const pending_request& target) {
  if (st.opts.on_cancel != cancel_policy::automatic)
    return st.opts.on_cancel == cancel_policy::keep;
  const auto mean = mean_request_time(st);
  const auto computing = clock::now() - st.in_flight.front().sent_at;
  clock::duration for_nobody = clock::duration::zero();
  for (const auto& req : st.in_flight) {
    if (!req.abandoned && &req != &target)
      continue;
    if (&req != &st.in_flight.front())
      for_nobody += mean;
    else
      for_nobody += computing < mean ? mean - computing : computing;
  }
  return for_nobody < st.start_up;
}

/// When a kept child is given up on after all (`onCancel` "auto"): once the
/// abandoned request it computes has taken a new child's start-up longer
/// than the child's mean; none while it computes a request someone waits
/// for.
std::optional<clock::time_point> give_up_point(const worker_state& st) {
  if (st.opts.on_cancel != cancel_policy::automatic || st.current != phase::ready ||
      st.in_flight.empty() || !st.in_flight.front().abandoned || st.dying)
    return std::nullopt;
  return st.in_flight.front().sent_at + mean_request_time(st) + st.start_up;
}

/// The deadline of what the worker waits for now: the init reply, or the
/// reply to the request in flight (or, sooner, the point to give up on a
/// child that computes for nobody).
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

/// Makes sure a timeout message arrives no later than `deadline`. The
/// message names the due time it was armed for, so that exactly that
/// arming is forgotten when it arrives, however early or late.
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

/// Keeps a buffer back from the channel for the next message.
void keep_buffer(worker_state& st, protocol::byte_buffer buf) {
  if (st.spares.size() < write_ahead + 1)
    st.spares.push_back(std::move(buf));
}

void start_child(worker_pointer self);

/// Sends one framed message to the current child, whose reply may take at
/// most `max_reply_size` bytes (a buffer written at once comes straight back
/// for the next message).
void send_to_child(worker_pointer self, protocol::byte_buffer message, size_t max_reply_size) {
  if (auto back = self->state.channel->send(std::move(message), max_reply_size))
    keep_buffer(self->state, std::move(*back));
}

} // namespace

void fail_request(worker_pointer self, pending_request& req, const caf::error& err) {
  ++self->state.stats.requests_failed;
  // The error names the worker, the command and the segment.
  logger().warn("{}", render(err));
  req.fail(err);
}

namespace {

/// Kills the current child for `cause`; nothing more is written to it.
void kill_child(worker_pointer self, caf::error cause) {
  self->state.dying = true;
  self->state.channel->kill(std::move(cause));
}

/// Kills the child because it computes for nobody (`onCancel`, `why`):
/// whatever it still sends would be taken as the answer to the request
/// behind it, so from now on it is ignored, also from a child that is being
/// killed already (its down report then handles the rest); what else it
/// held goes to the next child uncharged.
void kill_for_cancel(worker_pointer self, const std::string& why) {
  auto& st = self->state;
  st.broken = true;
  if (st.dying)
    return;
  st.killed_for_cancel = true;
  kill_child(self, make_error(errc::cancelled, why));
}

} // namespace

void condemn_child(worker_pointer self, caf::error cause) {
  self->state.broken = true;
  kill_child(self, std::move(cause));
}

namespace {

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
runtime::channel_events make_events(worker_pointer self, uint64_t generation) {
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
  runtime::channel_events events;
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
  events.down = [send, generation](runtime::child_down down) {
    send(down_atom::value, generation, std::move(down));
  };
  return events;
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
      runtime::sprint_channel::open(*st.io, st.opts, st.label, make_events(self, st.generation),
                                    st.shared ? st.shared->region() : nullptr);
  auto init = take_buffer(st);
  if (auto err = protocol::encode_init_command(init, st.format)) {
    condemn_child(self, err);
    return;
  }
  send_to_child(self, std::move(init), protocol::max_init_reply_size);
  arm_timer(self, *current_deadline(st));
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

/// Handles a child that is down while the worker still needs it: retries or
/// fails what it was doing, and starts another child if there is work.
void on_child_lost(worker_pointer self, const runtime::child_down& down) {
  auto& st = self->state;
  bool was_starting = st.current == phase::starting;
  st.current = phase::down;
  st.channel.reset();
  // The region is the dead child's; the next child gets its own, and
  // dispatch drops the slots of what goes back to the queue.
  st.shared.reset();
  st.stats.pid = -1;
  caf::error cause = down.cause ? down.cause : make_error(errc::child_failed, "");
  auto what = describe_down(down);
  auto error_for = [&](const pending_request& req) {
    return make_error(cause == errc::timeout ? errc::timeout : errc::child_failed,
                      request_context(st.label, req) + ": " + what);
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
    auto cause_key = failure_cause_key(describe_down(own_end));
    const bool new_cause = cause_key != st.last_start_failure;
    st.last_start_failure = std::move(cause_key);
    if (st.start_failures > st.opts.max_retries || permanent(cause)) {
      // Nothing works without a child: fail everything that waits. Each
      // caller gets the cause; it was logged at the first attempt.
      auto failed = make_error(cause == errc::timeout ? errc::timeout : errc::child_failed,
                               st.label + ": the Sprint child could not be started: " + what);
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

/// Answers the request that `origin` names with `cancelled`, if the worker
/// still holds it. One already written to the child cannot be taken back:
/// the child computes it and its reply is dropped (the child is still
/// killed if it misses its replyTimeout), or the child is killed at once
/// (its replies are ignored from now on) and the others written to it go to
/// the next child: `keeps_child` decides.
void abandon(worker_pointer self, const request_origin& origin) {
  auto& st = self->state;
  auto cancel = [&](pending_request& req) {
    req.cancel(make_error(errc::cancelled, request_context(st.label, req) + ": cancelled"));
  };
  if (auto req = take_request(st.queue, origin)) {
    cancel(*req);
    return;
  }
  auto held = std::find_if(st.in_flight.begin(), st.in_flight.end(),
                           [&](const auto& req) { return !req.abandoned && req.origin == origin; });
  if (held == st.in_flight.end())
    return;
  if (keeps_child(st, *held)) {
    cancel(*held);
    held->abandoned = true;
    if (auto deadline = current_deadline(st))
      arm_timer(self, *deadline);
    return;
  }
  auto req = std::move(*held);
  st.in_flight.erase(held);
  cancel(req);
  kill_for_cancel(self, "stopped: it held a request its caller cancelled");
}

} // namespace

void dispatch(worker_pointer self) {
  auto& st = self->state;
  // The request at the front may have changed (a reply came): its deadline,
  // or its give-up point, may be sooner than the timer.
  if (st.channel && !st.dying)
    if (auto deadline = current_deadline(st))
      arm_timer(self, *deadline);
  if (st.queue.empty())
    return;
  if (st.current == phase::down) {
    // After a failure the scheduled restart starts the next child (backoff).
    if (!st.restart_pending)
      start_child(self);
    return;
  }
  if (st.current != phase::ready || st.dying || st.in_flight.size() >= write_ahead)
    return;
  // Ready: `shared` is set only if the child accepted its region.
  const bool shared = st.shared && st.queue.front().shared_bytes() > 0 &&
                      st.queue.front().shared_bytes() >= st.opts.shared_memory_threshold;
  if (shared && st.shared->in_use() >= shared_write_ahead)
    return; // its turn comes with the next reply
  auto req = std::move(st.queue.front());
  st.queue.pop_front();
  // A request back from a dead child may hold a slot of its freed region.
  req.slot.reset();
  if (shared) {
    if (auto slot = st.shared->acquire(req.shared_bytes()))
      req.slot = *slot;
    else
      logger().warn("{}: {}; {} goes through the pipe", st.label, render(slot.error()),
                    req.subject());
  }
  auto message = take_buffer(st);
  caf::error err;
  size_t max_reply_size = 0;
  std::visit(
      [&](const auto& kind_req) {
        err = kind_req.encode(message, st.format, req.slot ? &*req.slot : nullptr);
        // Through the region the reply is a reference: a few bytes.
        max_reply_size = req.slot ? protocol::reply_margin : kind_req.max_reply_size(st.format);
      },
      req.what);
  if (err) {
    if (req.slot && st.shared)
      st.shared->release(req.slot->offset);
    fail_request(self, req, with_context(st.label + ": " + req.subject(), err));
    keep_buffer(st, std::move(message));
    dispatch(self);
    return;
  }
  req.sent_at = clock::now();
  st.in_flight.push_back(std::move(req));
  arm_timer(self, *current_deadline(st));
  send_to_child(self, std::move(message), max_reply_size);
  dispatch(self);
}

namespace {

/// Begins a graceful stop: fails waiting requests, sends `exit`.
void begin_stop(worker_pointer self, caf::error reason) {
  auto& st = self->state;
  if (st.current == phase::stopping)
    return;
  st.exit_reason = std::move(reason);
  // A child still holding requests (all answered `cancelled` below, or
  // abandoned before) would read `exit` only after computing them, for
  // nobody: it gets no grace.
  const bool busy_for_nobody = !st.in_flight.empty();
  fail_pending(st.in_flight, st.queue,
               make_error(errc::cancelled, st.label + " stopped before serving the request"));
  if (!st.channel || st.current == phase::down) {
    for (auto& promise : st.stop_promises)
      promise.deliver(int32_t{0});
    st.current = phase::down;
    self->quit(st.exit_reason);
    return;
  }
  st.current = phase::stopping;
  auto exit = take_buffer(st);
  if (protocol::encode_exit_command(exit, st.format))
    exit.clear(); // cannot happen for a 1-tuple; the pipe still closes
  st.channel->stop(busy_for_nobody ? std::chrono::milliseconds{0} : st.opts.exit_grace,
                   std::move(exit));
}

/// How a Sprint worker takes requests (see `command_handler`): queued in
/// arrival order, unless it is stopping.
struct sprint_worker_commands {
  static caf::error invalid(worker_pointer, caf::error err) { return err; }

  static caf::error refusal(worker_pointer self) {
    auto& st = self->state;
    if (st.current == phase::stopping)
      return make_error(errc::cancelled, st.label + " is stopping");
    return {};
  }

  static void take(worker_pointer self, segment_request req) {
    auto& st = self->state;
    st.queue.push_back(pending_request{std::move(req), 0, st.next_serial++, {}, std::nullopt});
    dispatch(self);
  }
};

/// The worker's behavior. Spawned as a function with arguments: CAF 0.17
/// dereferences a null argument tuple when a lambda is spawned without any.
worker_impl::behavior_type worker_behavior(worker_pointer self, sprint_options opts,
                                           std::string name, runtime::io_thread* io) {
  auto& st = self->state;
  st.opts = std::move(opts);
  st.io = io;
  st.label = std::move(name);
  st.format = config::wire_format_of(st.opts);
  self->set_exit_handler([self](caf::exit_msg& msg) { begin_stop(self, msg.reason); });
  start_child(self);
  return std::apply(
      [self](auto... commands) -> worker_impl::behavior_type {
        return {
            commands...,
            [self](stats_atom) { return self->state.stats; },
            [self](cancel_atom, uint64_t id) {
              abandon(self, {caf::actor_cast<caf::actor_addr>(self->current_sender()), id});
            },
            [self](stop_atom) -> caf::result<int32_t> {
              auto promise = self->make_response_promise<int32_t>();
              self->state.stop_promises.push_back(promise);
              begin_stop(self, caf::exit_reason::normal);
              return promise;
            },
            [self](started_atom, uint64_t generation, int32_t pid) {
              if (generation != self->state.generation)
                return;
              if (self->state.generation > 1)
                ++self->state.stats.restarts;
              self->state.stats.pid = pid;
            },
            [self](received_atom, uint64_t generation, message_buffer& buffer) {
              on_child_message(self, generation, buffer);
            },
            [self](sent_atom, uint64_t, message_buffer& buffer) {
              if (buffer.use_count() == 1)
                keep_buffer(self->state, std::move(*buffer));
            },
            [self](down_atom, uint64_t generation, runtime::child_down& down) {
              auto& st = self->state;
              if (generation != st.generation)
                return;
              if (st.current == phase::stopping) {
                if (!down.clean_exit())
                  logger().warn("{}: {}", st.label, describe_down(down));
                for (auto& promise : st.stop_promises)
                  promise.deliver(static_cast<int32_t>(down.exit_code()));
                st.current = phase::down;
                st.channel.reset();
                self->quit(st.exit_reason);
                return;
              }
              on_child_lost(self, down);
            },
            [self](timeout_atom, int64_t due) {
              auto& st = self->state;
              auto now = clock::now();
              if (st.timer_due && st.timer_due->time_since_epoch().count() == due)
                st.timer_due.reset();
              auto deadline = current_deadline(st);
              if (!deadline || !st.channel)
                return;
              if (now < *deadline) {
                arm_timer(self, *deadline);
              } else if (auto give_up = give_up_point(st); give_up && now >= *give_up) {
                // Kept when its work was cancelled, it still computes it:
                // a new child would have been ready by now.
                kill_for_cancel(self, "stopped: it computed requests their callers had "
                                      "cancelled for longer than a new child takes to start");
              } else if (st.current == phase::starting) {
                kill_child(self, make_error(errc::timeout,
                                            "no reply to init within " +
                                                std::to_string(st.opts.init_timeout.count()) +
                                                " ms (initTimeout)"));
              } else {
                // A late reply still counts (it answers the request it is for).
                st.timed_out = st.in_flight.front().serial;
                kill_child(self, make_error(errc::timeout,
                                            "no reply within " +
                                                std::to_string(st.opts.reply_timeout.count()) +
                                                " ms (replyTimeout)"));
              }
            },
            [self](restart_atom, uint64_t generation) {
              auto& st = self->state;
              if (generation != st.generation)
                return;
              st.restart_pending = false;
              if (st.current == phase::down)
                dispatch(self);
            },
        };
      },
      command_handlers<sprint_worker_commands>(self));
}

} // namespace

} // namespace sprintrt::detail

namespace sprintrt {

sprint_worker_actor spawn_sprint_worker(caf::actor_system& system, runtime::io_thread& io,
                                        sprint_options opts, std::string name) {
  auto impl = system.spawn(detail::worker_behavior, std::move(opts), std::move(name), &io);
  return caf::actor_cast<sprint_worker_actor>(impl);
}

} // namespace sprintrt
