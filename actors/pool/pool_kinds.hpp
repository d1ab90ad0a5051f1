#pragma once

/// @file
/// What differs between the pool's two kinds of segment work, in one place:
/// how a worker is asked, what it replies, and which counters an answer
/// moves. Single requests and batches (loss) as well as automata (FSA
/// exports) use these instead of branching on the kind. Internal to the
/// actors library.

#include <string>
#include <type_traits>
#include <utility>

#include <caf/event_based_actor.hpp>

#include "actors/pool/pool_state.hpp"
#include "actors/pool/segment_requests.hpp"

namespace sprintrt::detail {

/// Loss segments: `(compute, job) -> loss`.
struct loss_kind {
  using reply_type = double;

  /// Asks `worker` for `job`'s loss; the error signal goes into the job's
  /// output slice.
  static auto ask(pool_pointer self, const sprint_worker_actor& worker, segment_job job) {
    return self->request(worker, caf::infinite, compute_atom::value, std::move(job));
  }

  /// Asks `worker` to serve a single loss request.
  static auto ask(pool_pointer self, const sprint_worker_actor& worker, const loss_request& req) {
    return ask(self, worker, req.job);
  }

  static void count_served(pool_stats& stats) { ++stats.segments; }

  static void count_failed(pool_stats& stats) { ++stats.failed_segments; }
};

/// FSA exports: `(fsa, segment) -> segment_fsa`.
struct fsa_kind {
  using reply_type = segment_fsa;

  /// Asks `worker` for the automaton of segment `name`.
  static auto ask(pool_pointer self, const sprint_worker_actor& worker, std::string name) {
    return self->request(worker, caf::infinite, fsa_atom::value, std::move(name));
  }

  /// Asks `worker` to serve a single export request.
  static auto ask(pool_pointer self, const sprint_worker_actor& worker, const fsa_request& req) {
    return ask(self, worker, req.name);
  }

  static void count_served(pool_stats& stats) { ++stats.fsa_exports; }

  /// Failed exports have no counter of their own (`failed_segments` counts
  /// loss segments only).
  static void count_failed(pool_stats&) {}
};

/// The kind of a single request type (`loss_request` or `fsa_request`).
template <class Request>
using kind_of = std::conditional_t<std::is_same_v<Request, loss_request>, loss_kind, fsa_kind>;

} // namespace sprintrt::detail
