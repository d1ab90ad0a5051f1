#pragma once

/// @file
/// Where a pool's workers come from. Everything above the worker speaks only
/// `sprint_worker_actor`; a worker source says how to make such actors: Sprint
/// child processes from the options (the default), in-process simulated
/// workers (`sprintrt/sim_worker.hpp`), or anything else that speaks the
/// interface. One pool implementation serves them all.

#include <cstddef>
#include <functional>
#include <string>

#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include "sprintrt/worker_interface.hpp"

namespace sprintrt {

/// Makes the workers of one pool.
struct worker_source {
  /// Says what the workers are, for logs ("Sprint children of /usr/bin/rasr").
  std::string description;
  /// The most workers a pool keeps at once (numInstances for children).
  size_t capacity = 1;
  /// Makes the worker of slot `index` (0-based; also called again for a slot
  /// whose worker terminated), labelled `name` in its logs and errors. Runs
  /// on the pool's actor thread: it must not block.
  std::function<sprint_worker_actor(caf::actor_system& system, size_t index,
                                    const std::string& name)>
      make;
  /// How often a request is sent again after the worker serving it
  /// terminated (to the worker that replaces it). One more termination fails
  /// the request with `child_failed`, so that a request that kills every
  /// worker ends as an error, never as an endless loop of replacements.
  size_t max_resends = 2;
  /// Set when the source cannot make workers at all (e.g. options asking for
  /// remote pools, not supported yet): a pool refuses every request with it.
  caf::error unavailable;
};

} // namespace sprintrt
