#pragma once

/// @file
/// How a Sprint command is served, one entry per command of
/// `sprint_commands` (`sprintrt/worker_interface.hpp` holds its message:
/// atom, work and reply). An entry says how its work is checked, what it
/// weighs in a worker's load, how errors name it, how it is written to a
/// child and how the child's reply is read (through `protocol/messages`),
/// which pool counters an answer moves, and what answering a cancelled request must close first.
/// The workers (Sprint, simulated, remote) and the pool use these entries and never branch on the
/// command. Internal to the actors library.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/worker/array_sink.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_value.hpp"
#include "sprintrt/fsa_query.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/segment_fsa.hpp"
#include "sprintrt/segment_job.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::detail {

/// How command `Command` is served; specialized for each of
/// `sprint_commands`.
template <class Command>
struct command_entry;

template <>
struct command_entry<get_loss_command> {
  using work = segment_job;
  using reply = double;

  /// Checks that a job names a segment and that its slices are valid and of
  /// the same shape. Errors are `invalid_input` naming the segment.
  static caf::error check(const work& job);

  /// What the pool does with a single job before queuing it: gives it an
  /// output gate (see `output_gate`), since the pool may answer `cancelled`
  /// while a worker still holds the job.
  static caf::error admit(work& job);

  /// A loss segment weighs its frames: the unit of the workers' loads and
  /// of their measured speed.
  static int64_t weight(const work& job) { return static_cast<int64_t>(job.log_posteriors.rows); }

  /// Returns how errors name the job: "segment 'x'".
  static std::string subject(const work& job) { return "segment '" + job.segment + "'"; }

  /// Returns the text the job names: its segment's name.
  static const std::string& text(const work& job) noexcept { return job.segment; }

  /// Returns the protocol command that serves it.
  static std::string_view name(const work& job) noexcept;

  /// Returns the bytes the job moves through a child's shared region: its
  /// posteriors (and then its error signal, in the same place).
  static uint64_t shared_bytes(const work& job) noexcept {
    return uint64_t{job.log_posteriors.rows} * job.log_posteriors.cols * sizeof(float);
  }

  /// Appends the command to `out`: with the job's log-posteriors, or, for
  /// a `sink` through the shared region, with the reference it put them at.
  static caf::error encode(protocol::byte_buffer& out, const protocol::wire_format& format,
                           const work& job, const array_sink& sink);

  /// Returns the largest reply the command allows (its error signal's size
  /// is known).
  static size_t max_reply_size(const protocol::wire_format& format, const work& job) noexcept;

  /// Decodes the child's `reply` into the loss and writes its error signal
  /// into `job.error_signal` (through its gate, if it has one): copied from
  /// the reply, or, for a job sent through the shared region, once from
  /// where `sink` checked the reply's reference to be. Errors (nothing
  /// written): `unknown_segment` for an exception
  /// reply saying the child does not know the segment
  /// (`protocol::classify_segment_error`), `child_exception` for any other
  /// exception reply, `invalid_message` for a reply of the wrong form, shape or place,
  /// `cancelled` if the job's gate is closed (the reply itself was valid).
  static caf::expected<reply> decode(const protocol::value& reply, const work& job,
                                     const array_sink& sink);

  static void count_served(pool_stats& stats) { ++stats.segments; }

  static void count_failed(pool_stats& stats) { ++stats.failed_segments; }

  /// Closes the job's output gate: its caller is answered while a worker
  /// may still hold the job.
  static void close(const work& job) {
    if (job.gate)
      job.gate->close();
  }
};

template <>
struct command_entry<export_fsa_command> {
  /// A segment name or an orthography.
  using work = fsa_query;
  using reply = segment_fsa;

  /// Checks a query: a known source and a non-empty text. Errors are
  /// `invalid_input` naming what is wrong.
  static caf::error check(const work& query);

  /// A single query is checked at the pool already.
  static caf::error admit(work& query) { return check(query); }

  /// An export weighs one frame, in a batch and alone: exports cost about
  /// the same each and their length is not known, LPT needs a positive
  /// weight to spread them (at 0 an automata request would go to one
  /// worker), and one frame keeps their share of a worker's load
  /// negligible next to a loss segment's frames. A worker's measured speed
  /// (frames per busy second) does count an export's busy time for one
  /// frame; rates are used only for sources with slot states (remote
  /// pools), whose exports come as automata batches.
  static int64_t weight(const work&) { return 1; }

  /// Returns how errors name the query: "segment 'x'" or "orthography 'x'".
  static std::string subject(const work& query) { return describe(query); }

  /// Returns the text the query names: a segment's name or an orthography.
  static const std::string& text(const work& query) noexcept { return query.text; }

  /// Returns the protocol command that serves it (by source).
  static std::string_view name(const work& query) noexcept;

  /// An export moves nothing through a shared region.
  static uint64_t shared_bytes(const work&) noexcept { return 0; }

  /// Appends the command to `out` (it has no array for `sink`).
  static caf::error encode(protocol::byte_buffer& out, const protocol::wire_format& format,
                           const work& query, const array_sink& sink);

  /// Returns the largest reply the command allows: an automaton's size is
  /// not known from its request, so the configured maximum.
  static size_t max_reply_size(const protocol::wire_format& format, const work&) noexcept {
    return format.max_message_size;
  }

  /// Decodes the child's `reply` into an automaton (a copy: the reply's
  /// arrays live in the message buffer). An exception reply to a segment's
  /// export saying the child does not know the segment is
  /// `unknown_segment`, as for a loss.
  static caf::expected<reply> decode(const protocol::value& reply, const work& query,
                                     const array_sink& sink);

  static void count_served(pool_stats& stats) { ++stats.fsa_exports; }

  /// Failed exports have no counter of their own (`failed_segments` counts
  /// loss segments only).
  static void count_failed(pool_stats&) {}

  /// An export writes into nothing of the caller's.
  static void close(const work&) {}
};

} // namespace sprintrt::detail
