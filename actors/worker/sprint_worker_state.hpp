#pragma once

/// @file
/// The state of a `sprint_worker` actor and what its parts share:
/// `sprint_worker.cpp` takes requests and writes them to the child, and
/// stops; `sprint_worker_child.cpp` runs the child's life (start, deadlines,
/// kills, restarts, what a lost child's requests become);
/// `sprint_worker_replies.cpp` handles what the child sends back; what a
/// cancelled request's child costs is the pure `cancel_policy.hpp`.
/// Internal to the actors library.

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

#include "actors/worker/array_sink.hpp"
#include "actors/worker/shared_slots.hpp"
#include "actors/worker/worker_requests.hpp"
#include "config/wire_format.hpp"
#include "process/sprint_channel.hpp"
#include "protocol/byte_buffer.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::process {
class io_thread;
} // namespace sprintrt::process

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
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::process::child_down)

namespace sprintrt::detail {

/// The worker's full interface: the public one plus the internal reports.
using worker_impl =
    sprint_worker_actor::extend<caf::reacts_to<started_atom, uint64_t, int32_t>,
                                caf::reacts_to<received_atom, uint64_t, message_buffer>,
                                caf::reacts_to<sent_atom, uint64_t, message_buffer>,
                                caf::reacts_to<down_atom, uint64_t, process::child_down>,
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

  /// Returns how its arrays go: through its slot, if it has one, else in
  /// the pipe.
  array_sink sink() const { return slot ? array_sink{*slot} : array_sink{}; }

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
  process::io_thread* io = nullptr;
  std::string label;
  protocol::wire_format format;
  std::optional<process::sprint_channel> channel;
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
  /// Why the last child failed to start, until one starts: the same cause
  /// again (`same_cause`; each request of a batch tries anew) is logged at
  /// info, not warned about once per request.
  std::optional<failure> last_start_failure;
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

// -- the child (sprint_worker_child.cpp) ----------------------------------------------

/// Whether the child is kept when `target`, a request in flight, is
/// cancelled (`onCancel`).
bool keeps_child(const worker_state& st, const pending_request& target);

/// When a kept child is given up on after all: none while it computes a
/// request someone waits for.
std::optional<clock::time_point> give_up_point(const worker_state& st);

/// The deadline of what the worker waits for now: the init reply, or the
/// reply to the request in flight (or, sooner, the point to give up on a
/// child that computes for nobody).
std::optional<clock::time_point> current_deadline(const worker_state& st);

/// Makes sure a timeout message arrives no later than `deadline`. The
/// message names the due time it was armed for, so that exactly that
/// arming is forgotten when it arrives, however early or late.
void arm_timer(worker_pointer self, clock::time_point deadline);

/// Takes a spare buffer for a message to the child (or a new one).
protocol::byte_buffer take_buffer(worker_state& st);

/// Keeps a buffer back from the channel for the next message.
void keep_buffer(worker_state& st, protocol::byte_buffer buf);

/// Sends one framed message to the current child, whose reply may take at
/// most `max_reply_size` bytes (a buffer written at once comes straight back
/// for the next message).
void send_to_child(worker_pointer self, protocol::byte_buffer message, size_t max_reply_size);

/// Kills the current child for `cause`; nothing more is written to it.
void kill_child(worker_pointer self, caf::error cause);

/// Kills the child because it computes for nobody (`onCancel`, `why`):
/// whatever it still sends would be taken as the answer to the request
/// behind it, so from now on it is ignored, also from a child that is being
/// killed already (its down report then handles the rest); what else it
/// held goes to the next child uncharged.
void kill_for_cancel(worker_pointer self, const std::string& why);

/// Starts a new child (the next generation): opens its channel, with a
/// shared region of its own if the options offer one, and writes `init`.
void start_child(worker_pointer self);

/// Handles a child that is down while the worker still needs it: retries or
/// fails what it was doing, and starts another child if there is work.
void on_child_lost(worker_pointer self, const process::child_down& down);

/// Kills the current child because it broke the protocol (`cause`): what it
/// still sends is ignored too, and its down report charges the request it
/// was serving and resends the ones written behind it.
void condemn_child(worker_pointer self, caf::error cause);

// -- requests (sprint_worker.cpp) and replies (sprint_worker_replies.cpp) -----------

/// Writes queued requests to the child while fewer than `write_ahead` are
/// in flight; starts a child if there is none.
void dispatch(worker_pointer self);

/// Ends a request with an error, counting it.
void fail_request(worker_pointer self, pending_request& req, const caf::error& err);

/// Handles a message from the child of `generation` (ignored if that child
/// was replaced): the init reply, the reply to the oldest request in
/// flight, or a protocol failure. Hands the buffer back to the channel.
void on_child_message(worker_pointer self, uint64_t generation, message_buffer& buffer);

} // namespace sprintrt::detail
