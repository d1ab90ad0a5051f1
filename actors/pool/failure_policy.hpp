#pragma once

/// @file
/// The pool's one answer to a worker that failed a segment: place it again
/// on any worker (`reroute`), send it again to the worker that replaces the
/// one that terminated (`resend`), or let it fail (`fail`). Pure: the pool's
/// dispatcher (`pool_dispatch.cpp`) applies the verdict. Internal to the
/// actors library.

#include <cstddef>

#include <caf/error.hpp>

namespace sprintrt::detail {

/// How often the pool placed a segment again after its worker failed it.
struct retry_counts {
  /// Sent again after its worker terminated (bounded by
  /// `worker_source::max_resends`).
  size_t resends = 0;
  /// Sent elsewhere because its worker was unavailable (bounded by the
  /// pool's reroute limit, so that workers that keep coming and going do
  /// not pass a segment around for ever).
  size_t reroutes = 0;
};

/// What becomes of a segment whose worker answered with an error.
enum class after_failure {
  /// The worker was unavailable and did not compute it: it goes to any
  /// worker that can take it.
  reroute,
  /// The worker terminated under it: a batch's segment goes again to the
  /// worker that replaces it, a single segment to the front of the pool's
  /// queue.
  resend,
  /// It fails.
  fail,
};

/// The limits of `retry_counts` that a pool allows.
struct retry_limits {
  size_t max_reroutes = 0;
  size_t max_resends = 0;
};

/// The verdict on one failure.
struct failure_verdict {
  after_failure action = after_failure::fail;
  /// With `fail`: its workers terminated under it once more than
  /// `max_resends` allows; it fails with an error that says so, not with
  /// the worker's.
  bool kept_terminating = false;
};

/// Decides what becomes of a segment whose worker answered `err` after
/// `counts` retries, and counts a reroute or resend into `counts`. An
/// unavailable worker (`worker_unavailable`) reroutes, a terminated one
/// (`request_receiver_down`) resends, each while its limit allows; any
/// other error fails the segment with that error.
failure_verdict decide_after_failure(const caf::error& err, retry_counts& counts,
                                     const retry_limits& limits);

} // namespace sprintrt::detail
