/// @file
/// A Sprint worker's requests (see `sprint_worker_state.hpp`): taking them,
/// writing them to the child, cancelling them, and stopping.

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

#include "actors/worker/worker_requests.hpp"
#include "config/wire_format.hpp"
#include "process/io_thread.hpp"
#include "process/sprint_channel.hpp"
#include "protocol/messages.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::detail {

void fail_request(worker_pointer self, pending_request& req, const caf::error& err) {
  ++self->state.stats.requests_failed;
  // The error names the worker, the command and the segment.
  logger().warn("{}", render(err));
  req.fail(err);
}

namespace {

/// Answers the request that `origin` names with `cancelled`, if the worker
/// still holds it. One already written to the child cannot be taken back:
/// the child computes it and its reply is dropped (the child is still
/// killed if it misses its replyTimeout), or the child is killed at once
/// (its replies are ignored from now on) and the others written to it go to
/// the next child: `keeps_child` decides.
void abandon(worker_pointer self, const request_origin& origin) {
  auto& st = self->state;
  auto cancel = [&](pending_request& req) {
    req.cancel(request_error(errc::cancelled, st.label, req, "cancelled"));
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
        using entry = entry_of<decltype(kind_req)>;
        err = entry::encode(message, st.format, kind_req.work, req.sink());
        // Through the region the reply is a reference: a few bytes.
        max_reply_size =
            req.slot ? protocol::reply_margin : entry::max_reply_size(st.format, kind_req.work);
      },
      req.what);
  if (err) {
    if (req.slot && st.shared)
      st.shared->release(req.slot->offset);
    fail_request(self, req, with_worker(st.label, req.subject(), err));
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
                                           std::string name, process::io_thread* io) {
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
            [self](down_atom, uint64_t generation, process::child_down& down) {
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

sprint_worker_actor spawn_sprint_worker(caf::actor_system& system, process::io_thread& io,
                                        sprint_options opts, std::string name) {
  auto impl = system.spawn(detail::worker_behavior, std::move(opts), std::move(name), &io);
  return caf::actor_cast<sprint_worker_actor>(impl);
}

} // namespace sprintrt::detail
