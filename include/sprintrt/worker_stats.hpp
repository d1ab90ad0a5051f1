#pragma once

/// @file
/// The counters of one worker.

#include <cstdint>

namespace sprintrt {

/// Counters of one worker (one Sprint child and its restarts).
struct worker_stats {
  /// Requests answered successfully.
  uint64_t requests_served = 0;
  /// Requests that ended in an error.
  uint64_t requests_failed = 0;
  /// Time with a request in flight, in nanoseconds.
  int64_t busy_ns = 0;
  /// Children started after the first one (after failures); in a pool's
  /// stats, also the workers that replaced terminated ones in the slot.
  uint32_t restarts = 0;
  /// The current child's pid, or -1.
  int32_t pid = -1;
  /// Requests answered through the child's shared region instead of the
  /// pipes (`sharedMemory`, docs/protocol.md section 7).
  uint64_t shared_memory_requests = 0;
};

/// CAF inspection of `worker_stats`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_stats& x) {
  return f(x.requests_served, x.requests_failed, x.busy_ns, x.restarts, x.pid,
           x.shared_memory_requests);
}

} // namespace sprintrt
