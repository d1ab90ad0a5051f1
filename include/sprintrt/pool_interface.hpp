#pragma once

/// @file
/// The typed message interface of a worker pool: up to `numInstances` Sprint
/// workers behind one actor, for trainers that talk to actors directly (the
/// blocking `pool_client` wraps the same messages).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "sprintrt/batch.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt {

/// Export and merge the automata of a batch.
using automata_atom = caf::atom_constant<caf::atom("automata")>;

/// Counters of a pool and its workers.
struct pool_stats {
  /// The most workers the pool keeps (its worker source's capacity).
  uint64_t capacity = 0;
  /// Batches answered (successfully or not).
  uint64_t batches = 0;
  /// Segments computed successfully, in batches or alone.
  uint64_t segments = 0;
  /// Segments that failed.
  uint64_t failed_segments = 0;
  /// Segments of batches computed without a path (loss inf, error signal
  /// zero: too few frames, an unreachable end, an all -inf frame), counted
  /// among `segments` too.
  uint64_t skipped_segments = 0;
  /// Automata requests answered.
  uint64_t automata = 0;
  /// Segment FSAs exported successfully, for automata or alone.
  uint64_t fsa_exports = 0;
  /// One entry per worker slot, in creation order: the counters of the
  /// slot's current worker plus those of every worker it replaced (a worker
  /// that terminated, e.g. a simulated one's `die_at_request`), so that
  /// their `requests_served` and `requests_failed` add up to what the slot's
  /// workers answered. A replaced worker's counts are its answers as the
  /// pool saw them; its busy time, pid and shared-memory count are not kept.
  /// `restarts` counts each replacement as one restart, for every kind of
  /// worker, on top of a Sprint worker's own child restarts.
  std::vector<worker_stats> workers;
};

/// CAF inspection of `pool_stats`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_stats& x) {
  return f(x.capacity, x.batches, x.segments, x.failed_segments, x.skipped_segments, x.automata,
           x.fsa_exports, x.workers);
}

/// CAF inspection of `batch_automata`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_automata& x) {
  return f(x.edges, x.weights, x.start_end_states);
}

/// A pool of Sprint workers for one options value.
///
/// - `(compute, batch) -> batch_result`: the batch is checked first (shapes,
///   lengths, tags, NaN/+inf; the scan and the zeroed output happen on a
///   helper actor, so the pool serves other requests meanwhile), then its
///   segments go longest first to the least loaded worker; each worker
///   serves its list in order (holding four segments at a time), writing
///   error signals straight into the result. If segments fail, the request
///   fails after all segments are done, with an error listing each failed
///   segment (grouped by cause); its code is that of the failed segment
///   first in batch order (e.g. `unknown_segment` for a batch whose
///   segment 1 is unknown and whose segment 3 made its child fail). A
///   `batch::partial` batch instead answers with every segment's outcome:
///   the failed ones in `batch_result::failures` (code, index, tag,
///   message), their loss NaN and their error signal zero.
/// - `(automata, tags) -> batch_automata`: exports each segment's FSA (spread
///   over the workers) and merges them.
/// - `(compute, segment_job) -> loss`: one segment on a free worker (waits
///   for one if all are busy). The error signal is written straight into
///   the job's slice; a pool that stops answers `cancelled` only after
///   closing the job's `output_gate`, so nothing writes into it after the
///   call returned. (A batch's output needs no gate: it is the pool's own,
///   or the `reuse_error_signal` the caller gave away, until the result is
///   delivered.)
/// - `(fsa, query) -> segment_fsa`: the FSA of one segment or orthography
///   (see `fsa_query`), likewise; errors name the query.
/// - `(stats) -> pool_stats`.
/// - `(cancel, request_id)`: the sender no longer wants its request of that
///   id (`request_id_of` its message id); the pool answers it with
///   `cancelled` at once and computes nothing more of it: segments not yet
///   sent are dropped, and workers drop those they hold (a Sprint child
///   computing one finishes it for nobody or is killed, as `onCancel`
///   decides; see `sprint_worker_actor`). Nothing is
///   written into a single request's output after that; a batch's output
///   is the pool's own and is never delivered. Unknown or answered ids are
///   ignored.
///
/// Workers are created when first needed, up to `numInstances`.
using worker_pool_actor = sprint_commands::typed_actor<
    caf::replies_to<compute_atom, batch>::with<batch_result>,
    caf::replies_to<automata_atom, std::vector<std::string>>::with<batch_automata>,
    caf::replies_to<stats_atom>::with<pool_stats>, caf::reacts_to<cancel_atom, uint64_t>>;

} // namespace sprintrt

// Batches share their tensors' storage: they are for actors in one process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::batch_result)
