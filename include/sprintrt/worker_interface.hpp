#pragma once

/// @file
/// The typed message interface of a Sprint worker: one actor that owns one
/// Sprint child (and restarts it when it fails).

#include <cstdint>
#include <string>
#include <variant>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/message_id.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "sprintrt/fsa_query.hpp"
#include "sprintrt/segment_fsa.hpp"
#include "sprintrt/segment_job.hpp"
#include "sprintrt/worker_stats.hpp"

namespace sprintrt {

/// Compute a segment's loss and error signal.
using compute_atom = caf::atom_constant<caf::atom("compute")>;
/// Export a segment's FSA.
using fsa_atom = caf::atom_constant<caf::atom("fsa")>;
/// Report counters.
using stats_atom = caf::atom_constant<caf::atom("stats")>;
/// Stop gracefully.
using stop_atom = caf::atom_constant<caf::atom("stop")>;
/// Abandon a request: `(cancel, request_id)` names a request the same sender
/// made earlier, by `request_id_of` its message id.
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;

/// The number that names a request in `(cancel, request_id)`: the same on
/// the sender's side (its response handle's id) and on the receiver's (the
/// request's message id).
inline uint64_t request_id_of(caf::message_id id) noexcept {
  return id.request_id().integer_value();
}

/// A Sprint command as a worker's message: `(atom, work) -> reply`. How a
/// worker serves one (its checks, weight, encoding, counters) is the
/// command's entry in the actors library (`actors/worker/commands.hpp`).
template <class Atom, class Work, class Reply>
struct sprint_command {
  using atom = Atom;
  using work = Work;
  using reply = Reply;
};

/// `get_loss_and_error_signal`: a segment's loss and error signal.
struct get_loss_command : sprint_command<compute_atom, segment_job, double> {};

/// `export_allophone_state_fsa_by_segment_name` (or `..._by_orthography`):
/// a segment's or an orthography's automaton.
struct export_fsa_command : sprint_command<fsa_atom, fsa_query, segment_fsa> {};

/// A list of Sprint commands and what is made of it: the message rows of
/// every actor that serves them, and a variant over one type per command.
template <class... Commands>
struct sprint_command_list {
  /// An actor interface that serves every command, then `Rows`.
  template <class... Rows>
  using typed_actor =
      caf::typed_actor<typename caf::replies_to<typename Commands::atom, typename Commands::work>::
                           template with<typename Commands::reply>...,
                       Rows...>;

  /// An actor interface with `Rows`, then one row per command whose message
  /// and answer are `Wire<Command>::work` and `Wire<Command>::reply` (how the
  /// command crosses a network, say).
  template <template <class> class Wire, class... Rows>
  using typed_actor_with = caf::typed_actor<
      Rows..., typename caf::replies_to<typename Commands::atom, typename Wire<Commands>::work>::
                   template with<typename Wire<Commands>::reply>...>;

  /// `std::variant<Of<Command>...>`.
  template <template <class> class Of>
  using variant = std::variant<Of<Commands>...>;

  /// Calls `f(Command{})` for each command, in order.
  template <class F>
  static void for_each(F&& f) {
    (f(Commands{}), ...);
  }
};

/// The commands every worker serves: a new command is a new entry here, and
/// its `command_entry`, `remote_wire`, encoding, simulation and bindings in
/// the files docs/contributing.md lists ("A new Sprint command").
using sprint_commands = sprint_command_list<get_loss_command, export_fsa_command>;

/// A worker owning one Sprint child.
///
/// - `(compute, job) -> loss`: sends the job's log-posteriors, writes the
///   error signal into `job.error_signal`, replies with the loss (+inf for a
///   segment Sprint skipped). Errors: `invalid_input` (bad slices),
///   `unknown_segment` (the worker does not know the segment: from every
///   worker kind, see docs/protocol.md section 4 for Sprint children),
///   `child_exception` (Sprint raised), `child_failed` / `timeout` (the child
///   failed more often than `maxRetries` allows, or could not start),
///   `cancelled` (the worker stopped first, or the job's `output_gate` was
///   closed before the reply could be written: the child is kept).
/// - `(fsa, query) -> segment_fsa`: exports the automaton of a segment
///   (`fsa_source::segment_name`) or of an orthography. Errors:
///   `invalid_input` (empty text or unknown source), the others as above
///   (`unknown_segment` for a segment's export only).
/// - `(stats) -> worker_stats`.
/// - `(cancel, request_id)`: the sender no longer wants its request of that
///   id; it is answered with `cancelled` at once (nothing is written into
///   its job's output after that). A Sprint child already computing it, or
///   holding it in its pipe, is kept to compute it for nobody (its reply is
///   dropped) or killed (what else it held is resent, uncharged, to the
///   next child), as `onCancel` decides: with "auto", whichever is expected
///   to cost less (see `cancel_policy`); a remote pool's
///   reply is discarded.
///   Unknown or answered ids are ignored.
/// - `(stop) -> exit code`: sends `exit`, waits up to `exitGrace` for the child
///   to exit (then kills it), replies with its exit status (or minus the
///   signal that killed it), and terminates. Pending requests fail with
///   `cancelled`. An exit message (e.g. at system shutdown) stops the worker
///   the same way.
///
/// Requests are served one at a time, in arrival order. A worker for a
/// Sprint child writes the next request to the child before the current
/// one is answered (at most four in the pipe), so that the child never waits
/// for the parent between segments; a reply deadline counts from when the
/// child begins the request, and a child that dies charges only the request
/// it was serving.
using sprint_worker_actor =
    sprint_commands::typed_actor<caf::replies_to<stats_atom>::with<worker_stats>,
                                 caf::reacts_to<cancel_atom, uint64_t>,
                                 caf::replies_to<stop_atom>::with<int32_t>>;

} // namespace sprintrt

// Jobs point into shared memory: they are for actors in one process. Remote
// pools move tensors as raw bytes instead.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::segment_job)
