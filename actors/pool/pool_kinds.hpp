#pragma once

/// @file
/// What differs between the pool's kinds of segment work, in one place: what
/// a worker is asked with and how, what it replies, what a segment weighs in
/// its worker's load, which counters an answer moves, and what answering a
/// cancelled request must close first. The dispatcher (`pool_dispatch.hpp`)
/// and both request shapes (single segments, batches) use these entries and
/// never branch on the kind: a new kind is a new entry here, instantiated
/// in `pool_dispatch.cpp`. Internal to the actors library.

#include <cstdint>
#include <string>
#include <utility>

#include <caf/event_based_actor.hpp>

#include "actors/pool/pool_state.hpp"
#include "sprintrt/segment.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::detail {

/// Loss segments: `(compute, job) -> loss`, the error signal written into
/// the job's output slice.
struct loss_kind {
  /// What a worker is asked with.
  using work = segment_job;
  using reply_type = double;

  /// A loss segment weighs its frames: the unit of the workers' loads and
  /// of their measured speed.
  static int64_t weight(const work& job) { return static_cast<int64_t>(job.log_posteriors.rows); }

  /// Returns how errors name the job: "segment 'x'".
  static std::string subject(const work& job) { return "segment '" + job.segment + "'"; }

  /// Asks `worker` for `job`'s loss.
  static auto ask(pool_pointer self, const sprint_worker_actor& worker, work job) {
    return self->request(worker, caf::infinite, compute_atom::value, std::move(job));
  }

  static void count_served(pool_stats& stats) { ++stats.segments; }

  static void count_failed(pool_stats& stats) { ++stats.failed_segments; }

  /// Closes the job's output gate (see `output_gate`): its caller is
  /// answered while a worker may still hold the job.
  static void close(const work& job) {
    if (job.gate)
      job.gate->close();
  }
};

/// FSA exports: `(fsa, query) -> segment_fsa`.
struct fsa_kind {
  /// What a worker is asked with: a segment name or an orthography.
  using work = fsa_query;
  using reply_type = segment_fsa;

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

  /// Asks `worker` for the automaton of `query`.
  static auto ask(pool_pointer self, const sprint_worker_actor& worker, work query) {
    return self->request(worker, caf::infinite, fsa_atom::value, std::move(query));
  }

  static void count_served(pool_stats& stats) { ++stats.fsa_exports; }

  /// Failed exports have no counter of their own (`failed_segments` counts
  /// loss segments only).
  static void count_failed(pool_stats&) {}

  /// An export writes into nothing of the caller's.
  static void close(const work&) {}
};

} // namespace sprintrt::detail
