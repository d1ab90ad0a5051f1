#pragma once

/// @file
/// The state of a `sprint_worker` actor and what its two halves share:
/// `sprint_worker.cpp` runs the child's life (start, writing requests,
/// deadlines, restarts, stop), `sprint_worker_replies.cpp` handles what the
/// child sends back. Internal to the actors library.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/worker/shared_slots.hpp"
#include "actors/worker/worker_requests.hpp"
#include "config/wire_format.hpp"
#include "protocol/byte_buffer.hpp"
#include "runtime/sprint_channel.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::runtime {
class io_thread;
} // namespace sprintrt::runtime

namespace sprintrt::detail {

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

} // namespace sprintrt::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::detail::message_buffer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::runtime::child_down)

namespace sprintrt::detail {

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
  /// Its place in the child's shared region while it is in flight through
  /// it (a request back in the queue from a dead child may still hold one:
  /// dispatch drops it before anything uses it).
  std::optional<shared_slot> slot;
  /// Its caller cancelled it while the child computed it, and was answered
  /// (`onCancel`, `keeps_child`): the child's reply is read and dropped, and it
  /// is never resent or charged. It still counts for the replyTimeout.
  bool abandoned = false;
};

/// How many requests the worker keeps written to the child at once. A
/// Sprint child serves one request at a time, strictly in order; the next
/// one waiting in the pipe lets it start the next segment the moment it
/// wrote a reply, instead of after the parent's wake-ups (io thread, actor,
/// io thread again) that a reply and the next write cost. The child cannot
/// tell the difference: it reads each message when it wants the next one.
/// More than one waiting lets the parent take several replies per wake-up
/// when it falls behind, which matters most under load (BENCHMARKS.md,
/// "Figures behind the design").
constexpr size_t write_ahead = 4;

/// How many requests a child's shared region holds at once: the one the
/// child computes and the one the parent wrote behind it while it did
/// (more would only grow the region: the child takes one at a time).
constexpr size_t shared_write_ahead = 2;

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
  /// The current child's shared region with its slots (`sharedMemory`,
  /// docs/protocol.md section 7): made when the child is started and
  /// offered to it, kept once its `init` reply accepted it, dropped if it
  /// declined and when the child is gone; a new one per child.
  std::optional<shared_slots> shared;
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
  /// The current child is killed because it held a request its caller
  /// cancelled (`onCancel`): what else it held goes back uncharged, and
  /// the next child starts at once (it is no failure).
  bool killed_for_cancel = false;
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
  /// Why the last child failed to start (`failure_cause_key`), until one
  /// starts: the same cause again (each request of a batch tries anew) is
  /// logged at info, not warned about once per request.
  std::string last_start_failure;
  /// A restart is scheduled (backoff): requests wait for it.
  bool restart_pending = false;
  clock::time_point started_at;
  /// How long the last child took from its start to its `init` reply: what
  /// killing a child costs the next request (`onCancel` "auto").
  clock::duration start_up{};
  /// Replies to abandoned requests read and dropped: with the served and
  /// failed ones, what the busy time is spread over.
  uint64_t abandoned_answered = 0;
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

// -- shared by both halves ----------------------------------------------------------

/// Writes queued requests to the child while fewer than `write_ahead` are
/// in flight; starts a child if there is none.
void dispatch(worker_pointer self);

/// Ends a request with an error, counting it.
void fail_request(worker_pointer self, pending_request& req, const caf::error& err);

/// Kills the current child because it broke the protocol (`cause`): what it
/// still sends is ignored too, and its down report charges the request it
/// was serving and resends the ones written behind it.
void condemn_child(worker_pointer self, caf::error cause);

/// Handles a message from the child of `generation` (ignored if that child
/// was replaced): the init reply, the reply to the oldest request in
/// flight, or a protocol failure. Hands the buffer back to the channel.
void on_child_message(worker_pointer self, uint64_t generation, message_buffer& buffer);

} // namespace sprintrt::detail
