#pragma once

/// @file
/// Where a pool's workers come from. Everything above the worker speaks only
/// `sprint_worker_actor`; a worker source says how to make such actors: Sprint
/// child processes from the options (the default), in-process simulated
/// workers (`sprintrt/sim_worker.hpp`), or anything else that speaks the
/// interface. One pool implementation serves them all.

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include "sprintrt/worker_interface.hpp"

namespace sprintrt {

/// What a pool needs to know about a worker slot whose worker is not simply
/// one Sprint child that is always there (see `worker_source::slot_state`).
struct worker_slot_state {
  /// How many requests the slot's worker computes at once: 1 for a Sprint
  /// child, a remote pool's number of workers for a remote pool.
  size_t parallelism = 1;
  /// Why the worker cannot take requests now ("127.0.0.1:7001: connection
  /// refused; reconnecting in 2 s"); empty when it can.
  std::string unavailable;
  /// Whether waiting will not make it available: the server refused this
  /// trainer (other options or release, TLS), as opposed to being away
  /// (restarting, unreachable), which `worker_source::slot_wait` waits out.
  bool lasting = false;
};

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
  /// For sources whose workers differ or come and go (remote pools, with or
  /// without local children): the current state of slot `index`. Called on
  /// the pool's actor thread, often: it must be cheap and must not block.
  /// A pool over such a source makes all its workers at once (so that
  /// remote ones connect), spreads batches by each slot's measured speed,
  /// and sends a slot's work elsewhere when its worker answers
  /// `worker_unavailable`. Unset: every slot computes one request at a time
  /// and is always there, and batches are spread exactly as RETURNN did.
  std::function<worker_slot_state(size_t index)> slot_state;
  /// With `slot_state`: how long segments that no slot can take (every slot
  /// unavailable) wait for one to become available before they fail; they
  /// fail at once when every unavailable slot's cause is `lasting`, or with
  /// a zero wait.
  std::chrono::milliseconds slot_wait{0};
  /// Set when the source cannot make workers at all (e.g. options asking for
  /// remote pools, not supported yet): a pool refuses every request with it.
  caf::error unavailable;
};

} // namespace sprintrt
