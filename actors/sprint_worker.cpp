#include "actors/sprint_worker.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <variant>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/caller_execution_unit.hpp"
#include "actors/segment_requests.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "protocol/pickle_repr.hpp"
#include "runtime/io_thread.hpp"
#include "runtime/sprint_channel.hpp"
#include "runtime/wire_format.hpp"

namespace sprintrt {

namespace {

// -- internal messages ------------------------------------------------------------
//
// The channel reports on the io thread; these messages carry its reports to
// the worker. Each carries the generation (the how-many-th child) it is
// about, so that reports of a child that was already replaced are ignored.

using started_atom = caf::atom_constant<caf::atom("started")>;
using received_atom = caf::atom_constant<caf::atom("received")>;
using sent_atom = caf::atom_constant<caf::atom("sent")>;
using down_atom = caf::atom_constant<caf::atom("down")>;
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;
using restart_atom = caf::atom_constant<caf::atom("restart")>;

/// A message buffer moving between the io thread and the worker (CAF message
/// elements must be copyable; the pointer is, the megabytes are not copied).
using message_buffer = std::shared_ptr<protocol::byte_buffer>;

} // namespace

} // namespace sprintrt

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::message_buffer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::runtime::child_down)

namespace sprintrt {

namespace {

/// The worker's full interface: the public one plus the internal reports.
using worker_impl =
    sprint_worker_actor::extend<caf::reacts_to<started_atom, uint64_t, int32_t>,
                                caf::reacts_to<received_atom, uint64_t, message_buffer>,
                                caf::reacts_to<sent_atom, uint64_t, message_buffer>,
                                caf::reacts_to<down_atom, uint64_t, runtime::child_down>,
                                caf::reacts_to<timeout_atom, int64_t>,
                                caf::reacts_to<restart_atom, uint64_t>>;

using clock = std::chrono::steady_clock;

/// A request waiting for, or being served by, the child.
struct pending_request : segment_request {
  /// How many children failed while serving it.
  size_t failures = 0;
  /// Its number in the worker's arrival order (names it across moves).
  uint64_t serial = 0;
  /// When the child began it: when it was written, or when the reply to the
  /// request before it arrived, whichever was later. Its reply deadline and
  /// the busy time count from here.
  clock::time_point sent_at;
};

/// How many requests the worker keeps written to the child at once. A
/// Sprint child serves one request at a time, strictly in order; the next
/// one waiting in the pipe lets it start the next segment the moment it
/// wrote a reply, instead of after the parent's wake-ups (io thread, actor,
/// io thread again) that a reply and the next write cost. The child cannot
/// tell the difference: it reads each message when it wants the next one.
/// More than one waiting lets the parent take several replies per wake-up
/// when it falls behind: 4 measured 10-20% faster per small segment than 2
/// on a quiet 2-core machine, more under load.
constexpr size_t write_ahead = 4;

/// Where a worker is in a child's life.
enum class phase {
  /// No child: the next request starts one.
  down,
  /// The child was started; its `init` reply is pending.
  starting,
  /// The child runs and answered `init`: requests may be written
  /// (`in_flight` holds those written and not answered yet).
  ready,
  /// `exit` was sent; the worker ends when the child is down.
  stopping,
};

struct worker_state {
  static inline const char* name = "sprint_worker";

  sprint_options opts;
  runtime::io_thread* io = nullptr;
  std::string label;
  protocol::wire_format format;
  std::optional<runtime::sprint_channel> channel;
  /// The how-many-th child this is.
  uint64_t generation = 0;
  /// The serial the next request gets.
  uint64_t next_serial = 0;
  /// The request whose replyTimeout killed the current child, if one did.
  /// Its reply may still arrive before the kill takes effect; then the
  /// request written behind it is at the front when the child is down, and
  /// must not be charged for a timeout that was not its own.
  std::optional<uint64_t> timed_out;
  /// The current child is being killed: nothing more is written to it (its
  /// down report resends what waits).
  bool dying = false;
  /// The current child broke the protocol: what it still sends is ignored.
  /// (With requests written ahead, the replies behind a broken one would
  /// otherwise be taken as answers to the request the broken one was for.)
  bool broken = false;
  phase current = phase::down;
  std::deque<pending_request> queue;
  /// Requests written to the child, oldest (the one it serves) first; at
  /// most `write_ahead`.
  std::deque<pending_request> in_flight;
  /// Write buffers back from the channel, reused for the next messages (as
  /// many as can be in flight, so that large messages never fault in fresh
  /// pages).
  std::vector<protocol::byte_buffer> spares;
  /// Consecutive children that failed before answering `init`.
  size_t start_failures = 0;
  /// A restart is scheduled (backoff): requests wait for it.
  bool restart_pending = false;
  clock::time_point started_at;
  /// When the earliest pending timeout message arrives, if one is pending.
  /// One timer message at a time serves every deadline (init and replies),
  /// instead of one per request that would linger for replyTimeout.
  std::optional<clock::time_point> timer_due;
  worker_stats stats;
  std::vector<caf::typed_response_promise<int32_t>> stop_promises;
  caf::error exit_reason;

  ~worker_state() {
    // Normally the worker ends after its child is down and every request
    // was answered. If it ended otherwise (an untrappable exit, an
    // exception), nobody may wait forever and the child must not outlive it.
    auto gone = make_error(errc::cancelled, label + " terminated");
    fail_pending(in_flight, queue, gone);
    for (auto& promise : stop_promises)
      promise.deliver(gone);
    if (channel && current != phase::down)
      channel->kill(gone);
  }
};

using worker_pointer = worker_impl::stateful_pointer<worker_state>;

// -- helpers ----------------------------------------------------------------------

/// Whether retrying cannot help: the program is missing, or speaks another
/// protocol version.
bool permanent(const caf::error& cause) {
  return cause == errc::spawn_failed || cause == errc::invalid_message || cause == errc::cancelled;
}

/// The deadline of what the worker waits for now: the init reply, or the
/// reply to the request in flight.
std::optional<clock::time_point> current_deadline(const worker_state& st) {
  if (st.current == phase::starting)
    return st.started_at + st.opts.init_timeout;
  if (st.current == phase::ready && !st.in_flight.empty())
    return st.in_flight.front().sent_at + st.opts.reply_timeout;
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
void dispatch(worker_pointer self);

/// Sends one framed message to the current child, whose reply may take at
/// most `max_reply_size` bytes (a buffer written at once comes straight back
/// for the next message).
void send_to_child(worker_pointer self, protocol::byte_buffer message, size_t max_reply_size) {
  if (auto back = self->state.channel->send(std::move(message), max_reply_size))
    keep_buffer(self->state, std::move(*back));
}

/// Ends a request with an error, counting it.
void fail_request(worker_pointer self, pending_request& req, const caf::error& err) {
  ++self->state.stats.requests_failed;
  // The error names the worker, the command and the segment.
  spdlog::warn("{}", render(err));
  req.fail(err);
}

/// Kills the current child for `cause`; nothing more is written to it.
void kill_child(worker_pointer self, caf::error cause) {
  self->state.dying = true;
  self->state.channel->kill(std::move(cause));
}

/// Kills the current child because it broke the protocol (`cause`): what it
/// still sends is ignored too, and its down report charges the request it
/// was serving and resends the ones written behind it.
void condemn_child(worker_pointer self, caf::error cause) {
  self->state.broken = true;
  kill_child(self, std::move(cause));
}

/// Replies up to this size are handled on the io thread that read them (see
/// `detail::send_and_run`): decoding one and copying its error signal takes
/// microseconds. Larger ones go to a scheduler thread, so that the io thread
/// keeps serving the other children's pipes meanwhile.
constexpr size_t inline_reply_bytes = 64 * 1024;

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
    const bool small = msg.size() <= inline_reply_bytes;
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
  st.current = phase::starting;
  st.started_at = clock::now();
  st.channel =
      runtime::sprint_channel::open(*st.io, st.opts, st.label, make_events(self, st.generation));
  auto init = take_buffer(st);
  if (auto err = protocol::encode_init_command(init, st.format)) {
    condemn_child(self, err);
    return;
  }
  send_to_child(self, std::move(init), protocol::max_init_reply_size);
  arm_timer(self, *current_deadline(st));
}

/// Puts the requests still in flight back at the front of the queue, in
/// their order, uncharged.
void requeue_in_flight(worker_state& st) {
  while (!st.in_flight.empty()) {
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
  st.stats.pid = -1;
  caf::error cause = down.cause ? down.cause : make_error(errc::child_failed, "");
  auto what = describe_down(down);
  auto error_for = [&](const pending_request& req) {
    return make_error(cause == errc::timeout ? errc::timeout : errc::child_failed,
                      request_context(st.label, req) + ": " + what);
  };
  if (!st.in_flight.empty() && st.timed_out && *st.timed_out != st.in_flight.front().serial) {
    // Killed for a request that was answered before the kill took effect:
    // what is in flight now was not late; it goes back, unharmed.
    spdlog::warn("{}: {}; resending {} request(s) written to it", st.label, what,
                 st.in_flight.size());
    requeue_in_flight(st);
  } else if (!st.in_flight.empty()) {
    // Only the request the child was serving is charged with its end; those
    // written behind it were never begun and go back, in order, unharmed.
    auto req = std::move(st.in_flight.front());
    st.in_flight.pop_front();
    requeue_in_flight(st);
    if (++req.failures > st.opts.max_retries || permanent(cause)) {
      fail_request(self, req, error_for(req));
    } else {
      spdlog::warn("{}: {}; resending segment '{}' (attempt {} of {})", st.label, what,
                   req.segment(), req.failures + 1, st.opts.max_retries + 1);
      st.queue.push_front(std::move(req));
    }
  } else if (was_starting) {
    ++st.start_failures;
    if (st.start_failures > st.opts.max_retries || permanent(cause)) {
      // Nothing works without a child: fail everything that waits.
      auto failed = make_error(cause == errc::timeout ? errc::timeout : errc::child_failed,
                               st.label + ": the Sprint child could not be started: " + what);
      spdlog::error("{}", render(failed));
      for (auto& req : st.queue)
        fail_request(self, req, failed);
      st.queue.clear();
      st.start_failures = 0;
      return;
    }
    spdlog::warn("{}: the Sprint child failed to start: {}", st.label, what);
  } else {
    spdlog::warn("{}: {}", st.label, what);
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
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - st.started_at);
  spdlog::info("{}: Sprint child '{}' pid {} ready after {} ms", st.label, reply->child_name,
               st.stats.pid, ms.count());
  st.current = phase::ready;
  st.start_failures = 0;
  dispatch(self);
}

/// Whether a reply that decoded as a pickle but not as the answer to its
/// request means the child is broken (wrong shape, types or arity: kill,
/// restart, resend, like garbage) rather than that it failed this segment
/// (an ("exception", message) reply) or that the caller no longer wants it.
bool broken_reply(const caf::error& err) {
  // `cancelled`: the reply was valid, but its caller had stopped waiting.
  return err != errc::child_exception && err != errc::cancelled;
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
    fail_request(self, req, with_context(request_context(st.label, req), result.error()));
    return;
  }
  ++st.stats.requests_served;
  promise_of(req).deliver(std::move(*result));
}

/// Handles the reply to the request in flight; `bytes` is the reply as it
/// arrived.
void on_request_reply(worker_pointer self, const protocol::value& msg, byte_span bytes) {
  auto& front = self->state.in_flight.front();
  if (front.is_loss())
    answer(
        self, store_loss_reply(msg, std::get<loss_request>(front.what).job), bytes,
        [](pending_request & req) -> auto& { return std::get<loss_request>(req.what).promise; });
  else
    answer(
        self, fsa_from_reply(msg), bytes,
        [](pending_request & req) -> auto& { return std::get<fsa_request>(req.what).promise; });
  dispatch(self); // nothing is written to a condemned child
}

/// Writes queued requests to the child while fewer than `write_ahead` are
/// in flight; starts a child if there is none.
void dispatch(worker_pointer self) {
  auto& st = self->state;
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
  auto req = std::move(st.queue.front());
  st.queue.pop_front();
  auto message = take_buffer(st);
  caf::error err;
  // An FSA's size is not known from its request: the configured maximum.
  size_t max_reply_size = st.format.max_message_size;
  if (req.is_loss()) {
    const auto& in = std::get<loss_request>(req.what).job.log_posteriors;
    err = protocol::encode_loss_command(message, st.format, req.segment(), in.rows, in.cols,
                                        in.row(0), in.row_stride);
    max_reply_size = protocol::max_loss_reply_size(in.rows, in.cols);
  } else {
    err = protocol::encode_fsa_command(message, st.format, req.segment());
  }
  if (err) {
    fail_request(self, req, with_context(st.label + ": segment '" + req.segment() + "'", err));
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

/// Begins a graceful stop: fails waiting requests, sends `exit`.
void begin_stop(worker_pointer self, caf::error reason) {
  auto& st = self->state;
  if (st.current == phase::stopping)
    return;
  st.exit_reason = std::move(reason);
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
  st.channel->stop(st.opts.exit_grace, std::move(exit));
}

} // namespace

namespace {

/// The worker's behavior. Spawned as a function with arguments: CAF 0.17
/// dereferences a null argument tuple when a lambda is spawned without any.
worker_impl::behavior_type worker_behavior(worker_pointer self, sprint_options opts,
                                           std::string name, runtime::io_thread* io) {
  auto& st = self->state;
  st.opts = std::move(opts);
  st.io = io;
  st.label = std::move(name);
  st.format = runtime::wire_format_of(st.opts);
  self->set_exit_handler([self](caf::exit_msg& msg) { begin_stop(self, msg.reason); });
  start_child(self);
  return {
      [self](compute_atom, segment_job& job) -> caf::result<double> {
        auto& st = self->state;
        if (auto err = check_job(job))
          return err;
        if (st.current == phase::stopping)
          return make_error(errc::cancelled, st.label + " is stopping");
        pending_request req;
        req.serial = st.next_serial++;
        auto promise = self->make_response_promise<double>();
        req.what = loss_request{std::move(job), promise};
        st.queue.push_back(std::move(req));
        dispatch(self);
        return promise;
      },
      [self](fsa_atom, std::string& segment) -> caf::result<segment_fsa> {
        auto& st = self->state;
        if (segment.empty())
          return make_error(errc::invalid_input, "segment name is empty");
        if (st.current == phase::stopping)
          return make_error(errc::cancelled, st.label + " is stopping");
        pending_request req;
        req.serial = st.next_serial++;
        auto promise = self->make_response_promise<segment_fsa>();
        req.what = fsa_request{std::move(segment), promise};
        st.queue.push_back(std::move(req));
        dispatch(self);
        return promise;
      },
      [self](stats_atom) { return self->state.stats; },
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
              condemn_child(
                  self, make_error(errc::child_failed,
                                   "the child sent a malformed message: " + render(msg.error()) +
                                       "; it began with " + protocol::excerpt(buffer->bytes())));
          } else if (st.current == phase::starting) {
            on_init_reply(self, *msg);
          } else if (st.current == phase::ready && !st.in_flight.empty()) {
            on_request_reply(self, *msg, buffer->bytes());
          } else if (st.current != phase::stopping) {
            condemn_child(
                self, make_error(errc::child_failed, "the child sent a message nobody asked for: " +
                                                         protocol::repr(*msg)));
          }
        }
        // Nothing refers to the buffer any more: the channel may reuse it.
        if (buffer.use_count() == 1 && st.channel)
          st.channel->recycle(std::move(*buffer));
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
            spdlog::warn("{}: {}", st.label, describe_down(down));
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
        } else if (st.current == phase::starting) {
          kill_child(self,
                     make_error(errc::timeout, "no reply to init within " +
                                                   std::to_string(st.opts.init_timeout.count()) +
                                                   " ms (initTimeout)"));
        } else {
          // A late reply still counts (it answers the request it is for).
          st.timed_out = st.in_flight.front().serial;
          kill_child(self,
                     make_error(errc::timeout, "no reply within " +
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
}

} // namespace

sprint_worker_actor spawn_sprint_worker(caf::actor_system& system, runtime::io_thread& io,
                                        sprint_options opts, std::string name) {
  auto impl = system.spawn(worker_behavior, std::move(opts), std::move(name), &io);
  return caf::actor_cast<sprint_worker_actor>(impl);
}

} // namespace sprintrt
